"""A newcomer's first hour (issue 31), each papercut through the real command line.

Every test runs `python -m forgec` as a person would and reads what they would read.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "memory-capture.talostool"


def forgec(
    *args: str, cwd: Path | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEC_")}
    env.update(PYTHONPATH=str(ROOT), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args],
        capture_output=True, text=True, timeout=120, env=env, cwd=cwd or ROOT, input=stdin,
    )  # fmt: skip


def test_a_missing_file_is_never_no_problems(tmp_path: Path) -> None:
    proc = forgec("check", "nosuch.talostool", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "forgec: error: nosuch.talostool: no such file",
        "0 files checked: 1 not read",
    ]
    proc = forgec("check", "nosuch.talostool", str(EXAMPLE), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.splitlines()[-1] == "1 file checked: 1 not read"


@pytest.mark.parametrize("text", ['{"name": "x", "dependencies": {}}', "{}"])
def test_a_json_file_that_is_not_a_manifest_is_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "package.json"
    path.write_text(text)
    proc = forgec("check", str(path), "--format", "json")
    assert proc.returncode == 1
    found = json.loads(proc.stdout)["files"][0]["diagnostics"]
    assert [(d["code"], d["path"]) for d in found] == [("FORGE_MANIFEST_STRUCTURE", "")]
    assert "not a forged tool manifest" in found[0]["message"]
    assert "forgec schema" in found[0]["hint"]


def _commands(words: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and action of the real parser (`tools install`, `mcp serve`, …)."""
    import argparse

    from forgec.cli import build_parser

    parser = build_parser()
    for word in words:
        parser = next(
            a.choices[word] for a in parser._actions if isinstance(a, argparse._SubParsersAction)
        )
    out: list[tuple[str, ...]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name in action.choices:
                out.append((*words, name))
                out.extend(_commands((*words, name)))
    return out


def test_every_commands_help_says_what_it_does() -> None:
    # `explain --help` and `tools install --help` printed only their usage and options
    commands = _commands()
    assert ("explain",) in commands and ("tools", "install") in commands
    for words in [("explain",), ("tools", "install")]:
        proc = forgec(*words, "--help")
        description = proc.stdout.split("\n\n")[1]
        assert not description.startswith(("positional", "options")), (words, proc.stdout)
    import argparse

    from forgec.cli import build_parser

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    assert sub.description, (*words, name)
                    walk(sub, (*words, name))

    walk(build_parser(), ())


def test_an_unknown_flag_gets_its_commands_usage_and_a_guess() -> None:
    proc = forgec("check", "--fromat", "json", str(EXAMPLE))
    assert proc.returncode == 2
    assert proc.stderr.startswith("usage: forgec check ")
    assert proc.stderr.splitlines()[-1] == (
        "forgec check: error: unrecognized arguments: --fromat (did you mean `--format`?)"
    )
    proc = forgec("tools", "list", "--jsn")
    assert proc.returncode == 2 and proc.stderr.startswith("usage: forgec tools list ")


def test_run_with_db_memory_leaves_no_file(tmp_path: Path) -> None:
    # SQLite's `:memory:` means a database that vanishes; it used to become a file of that name
    tool = ROOT / "examples" / "talon-db-digest.talostool"
    proc = forgec(
        "run", str(tool), "--target", "talon", "--yes", "--db", ":memory:", "--input", "{}",
        "--format", "json", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc
    assert "output" in json.loads(proc.stdout)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", [["mcp", "serve"], ["screen", "--port", "0"]])
def test_a_server_never_serves_a_mistyped_store_silently(
    tmp_path: Path, command: list[str]
) -> None:
    typo = tmp_path / "tolls" / "tools.db"
    proc = forgec(*command, "--store", str(typo), stdin="")
    assert proc.returncode == 2, proc
    assert proc.stderr.strip().splitlines() == [
        f"forgec: error: {typo}: the folder {typo.parent} does not exist (a mistyped --store? "
        "forgec creates a store only in a folder that exists)"
    ]
    assert not typo.parent.exists()


def test_mcp_serve_says_when_its_store_is_new(tmp_path: Path) -> None:
    fresh = tmp_path / "tools.db"
    proc = forgec("mcp", "serve", "--store", str(fresh), stdin="")
    assert f"forgec: a new, empty tool store at {fresh}" in proc.stderr.splitlines(), proc


def test_check_file_reads_the_project_settings_as_check_does(tmp_path: Path) -> None:
    # `forgec.check_file` used to check every file against `talos`, whatever [tool.forgec] said
    import shutil

    import forgec
    from forgec.frontend.settings import clear_cache

    (tmp_path / "pyproject.toml").write_text(
        '[tool.forgec]\ntarget = "talos"\n[tool.forgec.targets]\n"talon-*" = "talon"\n'
    )
    talon = tmp_path / "talon-db-digest.talostool"
    shutil.copy(ROOT / "examples" / "talon-db-digest.talostool", talon)
    clear_cache()
    assert forgec.check_file(talon).ok
    assert forgec.check_file(talon).target == "talon"
    assert not forgec.check_file(talon, target="talos").ok  # an explicit target still wins
    assert forgec_check_code(talon) == 0  # and the command line agrees


def forgec_check_code(path: Path) -> int:
    return forgec("check", str(path), cwd=path.parent).returncode


def test_what_compile_dsl_compiles_lower_lowers() -> None:
    # compile_dsl defaulted to `talon` while check and lower default to `talos`
    import forgec

    talos = (ROOT / "examples" / "weekly-review.forge").read_text()
    assert forgec.lower(forgec.compile_dsl(talos)) is not None
    talon = (ROOT / "examples" / "talon-db-digest.forge").read_text()
    with pytest.raises(forgec.CheckError):
        forgec.compile_dsl(talon)
    with pytest.raises(forgec.CheckError):
        forgec.lower(talon)
    assert forgec.lower(forgec.compile_dsl(talon, target="talon"), target="talon") is not None


def test_inspect_of_a_talon_tool_outside_any_config_shows_no_false_risk(tmp_path: Path) -> None:
    # it printed `risk R1` (its host-tool steps unknown under `talos`) for an R3 tool
    import shutil

    tool = tmp_path / "digest.talostool"
    shutil.copy(ROOT / "examples" / "talon-db-digest.talostool", tool)
    proc = forgec("inspect", str(tool), cwd=tmp_path)
    assert proc.returncode == 1
    assert "risk" not in proc.stdout and "R1" not in proc.stdout
    assert "not known: the tool does not check under --target talos" in proc.stdout
    assert "it checks under --target talon" in proc.stderr
    proc = forgec("inspect", str(tool), "--target", "talon", cwd=tmp_path)
    assert proc.returncode == 0 and "  risk         R3" in proc.stdout
