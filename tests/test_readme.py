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
