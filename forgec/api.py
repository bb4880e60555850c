"""The library's front door: `check`, `compile_dsl`, `format_dsl`, `lower`.

The CLI is a thin shell over these. Heavy modules (lark for `.forge`, the backend) are imported
only by the functions that need them, so `forgec check x.talostool` stays fast.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import attrs

from forgec.ir.diagnostics import Diagnostic, sort_key
from forgec.ir.marks import Marks
from forgec.ir.nodes import Manifest
from forgec.ir.readable import HashedByValue
from forgec.ir.span import SourceMap

DEFAULT_TARGET = "talos"


@attrs.frozen(slots=False, repr=False, eq=False)
class Report(HashedByValue):
    path: str | None
    form: str  # "talostool" | "forge"
    diagnostics: tuple[Diagnostic, ...]
    marks: Marks | None
    # the document as read (canonicalised lazily into `manifest`, which most callers never need)
    raw: Any = attrs.field(default=None, repr=False, eq=False)
    ir: Manifest | None = attrs.field(default=None, repr=False, eq=False)
    facts: Any = attrs.field(default=None, repr=False, eq=False)
    source_map: SourceMap | None = attrs.field(default=None, repr=False, eq=False)
    target: str = DEFAULT_TARGET

    @functools.cached_property
    def manifest(self) -> dict[str, Any] | None:
        """The canonical manifest dict when there is no error, else None."""
        if not self.ok or not isinstance(self.raw, dict):
            return None
        from forgec.frontend.canonical import canonical_manifest

        return canonical_manifest(self.raw)

    @property
    def ok(self) -> bool:
        return not any(d.is_error for d in self.diagnostics)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.is_error]

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


class CheckError(Exception):
    """Raised by `compile_dsl` and `lower` when the source has errors; carries the report."""

    def __init__(self, report: Report) -> None:
        self.report = report
        first = report.errors[0] if report.errors else None
        summary = f"{first.code}: {first.message}" if first else "check failed"
        count = len(report.errors)
        super().__init__(f"{count} error(s); first: {summary}")


def is_forge_source(source: str | bytes, path: str | None) -> bool:
    """By extension when there is a path; else sniff: a manifest starts with `{`."""
    if path is not None:
        return Path(path).suffix == ".forge"
    if isinstance(source, str):
        return not source[:64].lstrip().startswith("{")
    return not source[:64].lstrip().startswith(b"{")


def load(source: str | bytes, *, path: str | None = None) -> Any:
    """Read either form into a `Loaded` (JSON value, source map, syntax diagnostics)."""
    if is_forge_source(source, path):
        from forgec.frontend.dsl import load_forge

        return load_forge(source, path=path)
    from forgec.frontend.manifest import load_manifest

    return load_manifest(source, path=path)


def check(source: str | bytes, *, path: str | None = None, target: str = DEFAULT_TARGET) -> Report:
    """Every diagnostic of one source, with the tool's marks when it could be analysed."""
    from forgec.ir.suggest import bounded

    with bounded():  # "did you mean" within one allowance per check (SPEC §24)
        return _check(source, path=path, target=target)


def _check(source: str | bytes, *, path: str | None, target: str) -> Report:
    from forgec.catalog import get_catalog
    from forgec.passes import run_passes
    from forgec.passes.context import PassContext

    catalog = get_catalog(target)
    loaded = load(source, path=path)
    diagnostics: list[Diagnostic] = list(loaded.diagnostics)
    ir: Manifest | None = None
    facts = None
    marks: Marks | None = None
    # A document that parsed to JSON `null` has value None too, yet no load diagnostic: it
    # must reach the structure pass (which refuses anything but an object), never pass clean.
    if loaded.value is not None or not loaded.diagnostics:
        ctx = PassContext(raw=loaded.value, catalog=catalog)
        run_passes(ctx)
        diagnostics.extend(ctx.diagnostics)
        ir = ctx.manifest_or_none
        facts = ctx.facts
        marks = facts.marks
    located = [_redacted(_locate(d, loaded.source_map)) for d in diagnostics]
    located.sort(key=sort_key)
    return Report(
        path=path,
        form=loaded.form,
        diagnostics=tuple(located),
        marks=marks,
        raw=loaded.value,
        ir=ir,
        facts=facts,
        source_map=loaded.source_map,
        target=target,
    )


def check_file(path: str | Path, *, target: str | None = None) -> Report:
    """Check the file PATH, read by the one bounded reader (SPEC §24): a file that is not a
    regular one raises `forgec.frontend.reading.ReadError` (an OSError). Without `target`,
    the target is what `forgec check PATH` would use: the project settings nearest PATH
    (`[tool.forgec]` or `forgec.toml`, per-file targets included), else `talos`; unusable
    settings raise `forgec.frontend.settings.SettingsError` (a ValueError)."""
    from forgec.frontend.reading import read_tool_file

    if target is None:
        from forgec.frontend.settings import settings_for

        target = settings_for(path).target_for(Path(path))
    return check(read_tool_file(str(path)), path=str(path), target=target)


@functools.lru_cache(maxsize=4096)
def _redact(text: str) -> str:
    """`redact_text`, remembered: many diagnostics share a hint or a message."""
    from forgec.secretscan.rules import redact_text

    return redact_text(text)


def _redacted(d: Diagnostic) -> Diagnostic:
    """D with whatever looks like a secret in its message, hint or notes replaced by the
    scanner's redaction (SPEC §14: no output carries a secret — a diagnostic quotes what it
    read, a capability name, a key, a found token; every output, text, JSON, SARIF, LSP, MCP,
    prints these texts). One scan per text, linear; the common text holds no candidate."""
    message = _redact(d.message)
    hint = _redact(d.hint) if d.hint else d.hint
    notes = tuple(_redact(n) for n in d.notes)
    if message == d.message and hint == d.hint and notes == d.notes:
        return d
    return attrs.evolve(d, message=message, hint=hint, notes=notes)


def _locate(d: Diagnostic, source_map: SourceMap) -> Diagnostic:
    if d.span is not None:
        return d
    span = source_map.span(d.path, key=d.key)
    return attrs.evolve(d, span=span) if span is not None else d


def compile_dsl(
    text: str | bytes, *, path: str | None = None, target: str = DEFAULT_TARGET
) -> dict[str, Any]:
    """`.forge` text → canonical manifest dict; raises `CheckError` on any error.

    Checked against `target`, whose default is every other function's (`check`, `lower`,
    the command line: `talos`), so `lower(compile_dsl(text))` lowers what compiled; a tool
    that calls Talon host tools passes `target="talon"` to both.
    """
    report = check(text, path=path or "<forge>.forge", target=target)
    if not report.ok or report.manifest is None:
        raise CheckError(report)
    return report.manifest


def format_dsl(manifest: dict[str, Any]) -> str:
    """A manifest → canonical `.forge` text (the decompiler)."""
    from forgec.frontend.dsl_format import format_forge

    return format_forge(manifest)


def canonical_text(manifest: dict[str, Any]) -> str:
    """The canonical `.talostool` text of a manifest — stable key order, 2-space indent, a
    final newline: exactly what `forgec compile` writes (and what snapshots compare)."""
    from forgec.frontend.canonical import dumps_canonical

    return dumps_canonical(manifest)


def disassemble(program: Any) -> str:
    """A Program's readable listing, one instruction a line (what `forgec lower --disasm`
    prints). Constants appear as the tool wrote them: a text renderer (the CLI, a snapshot
    file) escapes control and bidi characters before a person reads them
    (`forgec.render.safe.safe_text(..., keep_newlines=True)`)."""
    from forgec.backend.disasm import disassemble as listing

    return listing(program)


def lower(manifest: dict[str, Any] | str | bytes, *, target: str = DEFAULT_TARGET) -> Any:
    """Check, then lower to a `forgec.runtime.Program`; raises `CheckError` on any error."""
    from forgec.backend import lower_report

    if isinstance(manifest, dict):
        import orjson

        report = check(orjson.dumps(manifest), path=None, target=target)
    else:
        report = check(manifest, path=None, target=target)
    if not report.ok:
        raise CheckError(report)
    return lower_report(report)
