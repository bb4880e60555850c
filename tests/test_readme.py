"""README is part of the product: its quick start and its API example must work as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from forgec.cli import main

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block_after(heading: str, lang: str) -> str:
    section = README.split(heading, 1)[1]
    match = re.search(rf"```{lang}\n(.*?)```", section, re.S)
    assert match, f"no {lang} block after {heading!r}"
    return match.group(1)


def test_quick_start_is_two_commands_and_the_first_checks_a_bundled_example(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    commands = [line for line in _block_after("## Quick start", "sh").splitlines() if line]
    assert len(commands) == 2
    install, check = commands[0].split(" && ")
    assert install == "pip install -e '.[all]'"
    assert check.startswith("forgec check examples/")
    assert commands[1] == "pip install -e '.[all,dev]' && python -m pytest -n auto"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'python" -m pytest' in ci and "pip\" install -q -e '.[all,dev]'" in ci
    monkeypatch.chdir(ROOT)
    assert main(check.split()[1:]) == 0


def test_python_api_example_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(ROOT)
    exec(compile(_block_after("## Python API", "python"), "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert out.startswith("True [] R2\n")
    assert "'status': 'ok'" in out


def test_the_tools_block_runs_as_written(tmp_path: Path) -> None:
    # every line of "Install, turn on, roll back", in a fresh folder with the examples, a fresh
    # default store (the user data folder), `--yes` where it asks: none ends in an error
    import os
    import shlex
    import shutil
    import subprocess
    import sys

    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEC_")}
    env.update(PYTHONPATH=str(ROOT), NO_COLOR="1", HOME=str(tmp_path))
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    block = _block_after("### Install, turn on", "sh").splitlines()
    comments = {ln.split("  #")[0].strip(): ln for ln in block}

    def raw_comment(line: str) -> str:
        return comments[line].partition("  #")[2]

    lines = [ln.split("  #")[0] for ln in block]
    assert len(lines) >= 5
    for line in filter(None, (ln.strip() for ln in lines)):
        words = shlex.split(line)
        assert words[0] == "forgec", line
        if "(or --yes)" in raw_comment(line):  # a person answers at the terminal; no terminal here
            words.append("--yes")
        proc = subprocess.run(
            [sys.executable, "-m", "forgec", *words[1:]],
            capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path, input="y\n",
        )  # fmt: skip
        assert proc.returncode == 0, (line, proc.stdout[-400:], proc.stderr[-400:])
        assert "error" not in proc.stderr, (line, proc.stderr)
