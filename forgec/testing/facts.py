"""Snapshots of compiled output (SPEC §22): `__snapshots__/NAME.facts.json` beside a tests
file holds what the compiler says about the tool — the canonical manifest, the Program's
disassembly, the marks, the flows, the worst case and the consent card text — so a change in
any of them fails `forgec test` until `--update` accepts it.

Lines of text (disassembly, card) are stored as JSON lists of lines, so the file reads and
diffs well in review. `canonical_text` is the very text `forgec compile` writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

FORMAT = "forgec.facts.v1"


def canonical_text(manifest: dict[str, Any]) -> str:
    """The canonical `.talostool` text of MANIFEST: stable key order, 2-space indent (what
    `forgec compile` writes, byte for byte)."""
    from forgec.api import canonical_text as text

    return text(manifest)


def facts_of(report: Any, program: Any) -> dict[str, Any]:
    """The snapshot of a checked tool (REPORT: `forgec.api.Report` without errors)."""
    from forgec.backend import disassemble
    from forgec.render.consent import render_consent_card
    from forgec.render.safe import safe_text

    facts = report.facts
    manifest = report.manifest
    return {
        "format": FORMAT,
        "target": report.target,
        "manifest": manifest,
        "disassembly": safe_text(disassemble(program), keep_newlines=True).split("\n")[:-1],
        "marks": report.marks.to_json(),
        "flows": [f.to_json() for f in getattr(facts, "flows", ())],
        "worstCase": {
            "transitions": facts.worst_case_transitions,
            "path": list(facts.worst_case_path),
        },
        "card": render_consent_card(manifest, report.marks).split("\n"),
    }


def snapshot_path(tests_path: str | Path) -> Path:
    p = Path(tests_path)
    return p.parent / "__snapshots__" / (p.name.removesuffix(".tests.toml") + ".facts.json")


def dumps_facts(facts: dict[str, Any]) -> str:
    from forgec.runtime.jsontext import dumps_text

    return str(dumps_text(facts, indent=True)) + "\n"


def changed_sections(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """The keys of the two snapshots whose values differ, in the snapshot's order."""
    keys = list(new) + [k for k in old if k not in new]
    return [k for k in keys if old.get(k) != new.get(k)]


def section_diff(old: Any, new: Any, name: str, *, context: int = 1) -> list[str]:
    """A unified diff of one section, line by line (lists of lines compared as they are,
    anything else as indented JSON)."""
    import difflib

    from forgec.runtime.jsontext import dumps_text

    def lines(value: Any) -> list[str]:
        if isinstance(value, list) and all(isinstance(x, str) for x in value):
            return list(value)
        return str(dumps_text(value, indent=True)).split("\n")

    return list(
        difflib.unified_diff(
            lines(old), lines(new), f"snapshot {name}", f"now {name}", n=context, lineterm=""
        )
    )
