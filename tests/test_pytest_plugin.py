"""The pytest plugin (SPEC §22), through pytest's own `pytester`: a temporary project with a
tool, a tests file and a syrupy snapshot — collected, passing, failing with a readable diff,
updated with `--snapshot-update` — with pytest-lsp installed alongside, as in this project."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
# The project's pytest runs in this process (pytester's `runpytest_inprocess`: a fresh config
# and plugin manager, the entry points loaded again; a pytest subprocess was 5–10 s a run; its
# pytest-asyncio, configured by nothing in the temporary project, warns about its loop scope).
# `test_items_run_beside_pytest_lsp` keeps a real pytest process: what it promises is what a
# user's pytest autoloads beside ours.

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

TEST_MODULE = """
def test_compiled_output(forge, forge_snapshot):
    assert forge.compile("task-triage.forge") == forge_snapshot
    assert forge.disasm("task-triage.forge") == forge_snapshot
    assert forge.card("task-triage.forge") == forge_snapshot


def test_a_run_with_effects(forge):
    outcome = forge.run(
        "task-triage.forge",
        {"title": "Server down", "notes": ""},
        model=[{"node": "classify", "output": {"label": "urgent"}}],
    )
    assert outcome.result.status == "ok"
    assert [e.capability for e in outcome.effects] == ["tasks.create"]
    assert outcome.effects[0].input["title"] == "URGENT: Server down"


def test_a_seeded_host(forge):
    outcome = forge.run(
        "weekly-review.forge",
        {"today": "2026-06-01"},
        host={"tasks": [{"title": "Old", "due": "2026-01-01"}]},
        model=[{"node": "summarize", "output": "late"}],
    )
    assert outcome.result.ok
    assert "late" in outcome.effects[0].input["body"]
"""


def _plugin() -> list[str]:
    """The plugin as an install gives it (entry point `pytest11`); a checkout installed before
    the entry point existed names it explicitly (never twice: pluggy refuses that)."""
    from importlib.metadata import entry_points

    found = any(ep.value == "forgec.pytest_plugin" for ep in entry_points(group="pytest11"))
    return [] if found else ["-p", "forgec.pytest_plugin"]


def test_the_entry_point_is_declared() -> None:
    import tomllib

    project = tomllib.loads((EXAMPLES.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["entry-points"]["pytest11"] == {"forgec": "forgec.pytest_plugin"}
    assert {"pytest", "syrupy"} <= {
        dep.split(">")[0].split("[")[0]
        for dep in project["project"]["optional-dependencies"]["pytest"]
    }


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    for name in ("task-triage.forge", "task-triage.tests.toml", "weekly-review.forge"):
        shutil.copy(EXAMPLES / name, pytester.path / name)
    pytester.makepyfile(test_tool=TEST_MODULE)
    return pytester


def test_cases_are_collected_one_item_per_case(project: pytest.Pytester) -> None:
    done = project.runpytest_inprocess(*_plugin(), "--collect-only", "-q", "-p", "no:cacheprovider")
    out = done.stdout.str()
    assert "task-triage.tests.toml::an urgent task is filed as urgent" in out
    assert "task-triage.tests.toml::an empty title is refused before the model is asked" in out
    assert "test_tool.py::test_compiled_output" in out


def test_the_project_passes_then_a_change_fails_readably(project: pytest.Pytester) -> None:
    first = project.runpytest_inprocess(*_plugin(), "--snapshot-update", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=6)
    written = sorted(p.name for p in (project.path / "__snapshots__" / "test_tool").iterdir())
    assert written == [
        "test_compiled_output.card.txt",
        "test_compiled_output.disasm",
        "test_compiled_output.talostool",
    ]
    stored = project.path / "__snapshots__" / "test_tool" / "test_compiled_output.talostool"
    assert stored.read_text() == (EXAMPLES / "task-triage.talostool").read_text()
    again = project.runpytest_inprocess(*_plugin(), "-p", "no:cacheprovider")
    again.assert_outcomes(passed=6)

    # the tool changes: its case fails with expected and actual, the snapshot with a diff
    tool = project.path / "task-triage.forge"
    tool.write_text(tool.read_text().replace("URGENT: ", "!! "), encoding="utf-8")
    failed = project.runpytest_inprocess(*_plugin(), "-p", "no:cacheprovider")
    failed.assert_outcomes(passed=3, failed=3)
    out = failed.stdout.str()
    assert "an urgent task is filed as urgent" in out
    assert 'expected "URGENT: Server down", got "!! Server down"' in out
    # syrupy's diff of the stored .talostool against the new text
    assert "URGENT: {{input.title}}" in out and "!! {{input.title}}" in out
    assert "Traceback" not in out

    updated = project.runpytest_inprocess(
        *_plugin(), "--snapshot-update", "-p", "no:cacheprovider", "test_tool.py"
    )
    updated.assert_outcomes(passed=2, failed=1)  # the run test still expects URGENT
    assert "!! {{input.title}}" in stored.read_text()


def test_a_bad_tests_file_is_one_failing_item_with_every_problem(
    project: pytest.Pytester,
) -> None:
    (project.path / "task-triage.tests.toml").write_text(
        '[[case]]\nname = "x"\ninput = {title = "a", notes = ""}\n'
        '[[case.mock]]\nstep = "urgnt"\nresult = 1\n[case.expect]\noutptu = 1\n',
        encoding="utf-8",
    )
    done = project.runpytest_inprocess(
        *_plugin(), "-p", "no:cacheprovider", "task-triage.tests.toml"
    )
    done.assert_outcomes(failed=1)
    out = done.stdout.str()
    assert "task-triage.tests.toml:5:8: error[FORGEC_TEST_STEP_UNKNOWN]" in out
    assert "task-triage.tests.toml:8:1: error[FORGEC_TEST_KEY]" in out


def test_items_run_beside_pytest_lsp(project: pytest.Pytester) -> None:
    # pytest-lsp 1.0.x (installed here, so autoloaded: 1.0.0 in the lower-bounds stage, the
    # newest elsewhere) fails any item without `funcargs`: ours carry an empty one, and every
    # case passes with it loaded
    done = project.runpytest_subprocess(
        *_plugin(), "-p", "no:cacheprovider", "task-triage.tests.toml"
    )
    assert re.search(r"\blsp-1\.\d", done.stdout.str()), done.stdout.str()
    done.assert_outcomes(passed=3)
