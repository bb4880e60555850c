"""docs/testing.md is part of the product: each tests-file snippet in it is a real case of the
example it names, and it passes; the Python snippet of the pytest section runs under the
plugin's `forge` fixture (tests/test_pytest_plugin.py runs the same calls)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from forgec.testing import load_tests, run_case

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```toml\n(.*?)```", DOC, re.S)
# the example each snippet is taken from, in the order they appear
TOOLS = [
    ("examples/task-triage.forge", "talos"),
    ("examples/talon-status-check.forge", "talon"),
    ("examples/talon-weekly-scheduler.forge", "talon"),
]


def test_every_snippet_is_accounted_for() -> None:
    assert len(BLOCKS) == len(TOOLS)


@pytest.mark.parametrize(("block", "tool"), list(zip(BLOCKS, TOOLS, strict=True)))
def test_each_snippet_passes_against_its_example(
    tmp_path: Path, block: str, tool: tuple[str, str]
) -> None:
    path = tmp_path / "snippet.tests.toml"
    path.write_text(f'tool = "{ROOT / tool[0]}"\ntarget = "{tool[1]}"\n{block}', encoding="utf-8")
    tests = load_tests(path)
    assert tests.ok, [d.message for d in tests.diagnostics]
    assert tests.cases
    for case in tests.cases:
        result = run_case(tests.program, case)
        assert result.passed, (case.name, [f.message for f in result.failures], result.errors)
