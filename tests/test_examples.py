"""Every example in `examples/`: checks clean with its target, `compile(x.forge)` is the committed
`x.talostool` byte for byte (the golden comparison), and `fmt(x.talostool)` is `x.forge` without
its comments and blank lines (a `.talostool` has none to give back).

The target of each example comes from the table in `examples/README.md` (and the `talon-` file
name prefix says the same; a test keeps the two in agreement)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from forgec.api import check
from forgec.frontend.canonical import dumps_canonical
from forgec.frontend.dsl_format import format_forge

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def uncommented(text: str) -> str:
    """TEXT as the decompiler writes it: no comment, and only the blank line before the flow."""
    from forgec.frontend.dsl_trivia import comment_texts

    for comment in comment_texts(text):
        text = text.replace(comment, "", 1)
    lines = [line.rstrip() for line in text.split("\n")]
    kept = [
        line
        for i, line in enumerate(lines)
        if line.strip() or (i + 1 < len(lines) and lines[i + 1].startswith("  flow"))
    ]
    return "\n".join(kept) + "\n"


def _forge(name: str) -> str:
    return uncommented((EXAMPLES / f"{name}.forge").read_text(encoding="utf-8"))


def _targets() -> dict[str, str]:
    table = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    return dict(re.findall(r"^\| `([a-z0-9-]+)` \| (talos|talon) \|", table, flags=re.M))


TARGETS = _targets()
NAMES = sorted(TARGETS)


def test_the_readme_table_lists_every_example_and_at_least_eight() -> None:
    on_disk = {p.stem for p in EXAMPLES.glob("*.talostool")}
    assert on_disk == {p.stem for p in EXAMPLES.glob("*.forge")}
    assert set(TARGETS) == on_disk
    assert len(on_disk) >= 8
    assert {"talos", "talon"} <= set(TARGETS.values())
    for name, target in TARGETS.items():
        assert (target == "talon") == name.startswith("talon-"), name


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("form", ["talostool", "forge"])
def test_example_checks_clean_with_its_target(name: str, form: str) -> None:
    path = EXAMPLES / f"{name}.{form}"
    report = check(path.read_bytes(), path=str(path), target=TARGETS[name])
    # FORGEC_FLOW_* warnings are statements about where data goes, not defects; every
    # example's flows are held by tests/test_flows_examples.py's snapshots instead
    problems = [d for d in report.diagnostics if not d.code.startswith("FORGEC_FLOW_")]
    assert problems == [], [(d.code, d.message) for d in problems]


@pytest.mark.parametrize("name", NAMES)
def test_compiling_the_forge_gives_the_committed_talostool(name: str) -> None:
    forge = EXAMPLES / f"{name}.forge"
    report = check(forge.read_bytes(), path=str(forge), target=TARGETS[name])
    assert report.manifest is not None
    assert dumps_canonical(report.manifest) == (EXAMPLES / f"{name}.talostool").read_text()


@pytest.mark.parametrize("name", NAMES)
def test_decompiling_the_talostool_gives_the_committed_forge(name: str) -> None:
    manifest = orjson.loads((EXAMPLES / f"{name}.talostool").read_bytes())
    assert format_forge(manifest) == _forge(name)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args], capture_output=True, text=True, check=False
    )


def test_cli_compile_fmt_round_trip(tmp_path: Path) -> None:
    name = "talon-status-check"
    out = tmp_path / "out.talostool"
    done = _cli("compile", str(EXAMPLES / f"{name}.forge"), "-o", str(out), "--target", "talon")
    assert done.returncode == 0, done.stderr
    assert out.read_text() == (EXAMPLES / f"{name}.talostool").read_text()
    done = _cli("fmt", "--to", "forge", str(out))
    assert done.returncode == 0
    assert done.stdout == _forge(name)
    assert _cli("fmt", "--check", str(EXAMPLES / f"{name}.forge")).returncode == 0


def test_cli_compile_refuses_on_errors_and_names_the_target(tmp_path: Path) -> None:
    out = tmp_path / "x.talostool"
    done = _cli(
        "compile", str(EXAMPLES / "talon-db-digest.forge"), "-o", str(out), "--target", "talos"
    )
    assert done.returncode == 1
    assert "FORGE_CAPABILITY_UNKNOWN" in done.stderr
    assert "talon-db-digest.forge:" in done.stderr
    assert not out.exists()


def test_cli_fmt_write_and_check(tmp_path: Path) -> None:
    messy = tmp_path / "m.forge"
    text = (EXAMPLES / "note-updater.forge").read_text()
    messy.write_text(text.replace("  ", "      ").replace(" -> ", "\n   ->   "))
    assert _cli("fmt", "--check", str(messy)).returncode == 1
    assert _cli("fmt", "--write", str(messy)).returncode == 0
    assert messy.read_text() == text
    assert _cli("fmt", "--check", str(messy)).returncode == 0


def test_cli_fmt_refuses_a_syntax_error(tmp_path: Path) -> None:
    bad = tmp_path / "b.forge"
    bad.write_text("tool t { flow { a: x = tasks.list {} } }\n")
    done = _cli("fmt", str(bad))
    assert done.returncode == 1
    assert "syntax error" in done.stderr and "b.forge:1:" in done.stderr


@pytest.mark.parametrize("name", ["weekly-review", "talon-status-check"])
def test_cli_fmt_prints_forge_from_either_form(name: str) -> None:
    expected = (EXAMPLES / f"{name}.forge").read_text(encoding="utf-8")
    assert _cli("fmt", str(EXAMPLES / f"{name}.talostool")).stdout == uncommented(expected)
    assert _cli("fmt", str(EXAMPLES / f"{name}.forge")).stdout == expected
    manifest = (EXAMPLES / f"{name}.talostool").read_text(encoding="utf-8")
    assert _cli("fmt", "--to", "talostool", str(EXAMPLES / f"{name}.forge")).stdout == manifest
