"""`forgec test` (SPEC §22), through the real command line: the examples' cases pass with
coverage, every kind of expectation can fail (a test that cannot fail is a defect), bad tests
files are diagnostics with positions and exit 2, a fixture the real host could never produce is
an error, a network step without a mock is a test error, and snapshots of compiled output
fail with §14's three-part diff until `--update`."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest

from forgec.testing import Case, Mock, load_tests, run_case

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def forgec(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _project(tmp_path: Path, tests: str, tool: str = "task-triage.forge") -> Path:
    shutil.copy(EXAMPLES / tool, tmp_path / tool)
    path = tmp_path / (tool.rsplit(".", 1)[0] + ".tests.toml")
    path.write_text(tests, encoding="utf-8")
    return path


# --- the examples -----------------------------------------------------------------------------


def test_every_example_ships_a_tests_file() -> None:
    tools = sorted(EXAMPLES.glob("**/*.forge"))
    assert tools
    missing = [str(t) for t in tools if not t.with_suffix(".tests.toml").is_file()]
    assert missing == []


def test_the_examples_pass_with_coverage_over_90(tmp_path: Path) -> None:
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy)
    done = forgec(
        "test", "examples", "--coverage", "--threshold", "90", "--format", "json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    report = orjson.loads(done.stdout)
    assert report["summary"]["failed"] == report["summary"]["errors"] == 0
    assert report["summary"]["passed"] >= 16
    assert report["coverage"]["percent"] >= 90
    for entry in report["files"]:
        assert entry["snapshot"]["status"] == "same", entry["path"]  # the committed snapshots
    # a threshold above what the cases reach fails the run
    done = forgec("test", "examples", "--threshold", "100", cwd=tmp_path)
    assert done.returncode == 1
    assert "below the threshold of 100 %" in done.stdout


# --- every expectation can fail ---------------------------------------------------------------

URGENT = {"node": "classify", "output": {"label": "urgent"}}


def _triage() -> object:
    tests = load_tests(EXAMPLES / "task-triage.tests.toml")
    assert tests.ok, tests.diagnostics
    return tests.program


@pytest.mark.parametrize(
    ("expect", "what"),
    [
        ({"status": "failed"}, "status"),
        ({"error": "EMPTY_TITLE"}, "error"),
        ({"output": {"label": "routine"}}, "output"),
        ({"output": {"id": "<re:note-.*>"}}, "output"),
        ({"output": {"missing": "<any>"}}, "output"),
        ({"effects": []}, "effects"),
        (
            {"effects": [{"capability": "tasks.create", "input": {"title": "Server down"}}]},
            "effects",
        ),
        ({"no_effects": ["tasks.create"]}, "no_effects"),
        ({"compensations": [{"node": "urgent"}]}, "compensations"),
        ({"transitions": 4}, "transitions"),
        ({"transitions": {"max": 3}}, "transitions"),
        ({"flows": [{"source": "input", "sink": "egress:*"}]}, "flows"),
        ({"not_flows": [{"source": "input", "sink": "write:tasks.create"}]}, "not_flows"),
    ],
)
def test_each_kind_of_expectation_fails_when_it_is_not_met(expect: dict, what: str) -> None:
    program = _triage()
    case = Case(
        name="c", input={"title": "Server down", "notes": ""}, model=(URGENT,), expect=expect
    )
    result = run_case(program, case)
    assert result.outcome == "fail"
    assert [f.what for f in result.failures] == [what]
    # and the same case with nothing expected but success passes
    assert run_case(program, Case(name="c", input=case.input, model=(URGENT,))).passed


def test_unused_mocks_and_model_answers_fail_the_case() -> None:
    program = _triage()
    case = Case(
        name="c",
        input={"title": "", "notes": ""},
        model=(URGENT,),
        mocks=(Mock("urgent", error="transient"),),
        expect={"error": "EMPTY_TITLE"},
    )
    result = run_case(program, case)
    assert sorted(f.what for f in result.failures) == ["mocks", "model"]


def test_a_model_step_without_an_answer_is_a_test_error() -> None:
    result = run_case(_triage(), Case(name="c", input={"title": "x", "notes": ""}))
    assert result.outcome == "error"
    assert "a test never reaches a model" in result.errors[0]


def test_a_network_step_without_a_mock_is_a_test_error(tmp_path: Path) -> None:
    path = _project(
        tmp_path,
        '[[case]]\nname = "no mock"\ninput = {repo = "a/b"}\n',
        tool="talon-status-check.forge",
    )
    done = forgec("test", str(path), "--target", "talon")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "ERROR" in done.stdout
    assert "calls net.http with no [[case.mock]]" in done.stdout


def test_retries_and_compensations_are_reached_through_mocks() -> None:
    tests = load_tests(EXAMPLES / "talon-weekly-scheduler.tests.toml")
    assert tests.ok
    for case in tests.cases:
        assert run_case(tests.program, case).passed, case.name


# --- bad tests files --------------------------------------------------------------------------

BAD = """\
[[case]]
name = "one"
input = {title = "x", notes = ""}
[[case.mock]]
step = "route"
result = 1
[[case.mock]]
step = "urgnt"
result = 1
[[case.mock]]
step = "urgent"
result = {id = 1}
[case.expect]
outptu = 3
error = "EMPTY_TITEL"

[[case]]
name = "two"
input = {title = 5}
"""


def test_a_bad_tests_file_lists_every_problem_with_its_position(tmp_path: Path) -> None:
    path = _project(tmp_path, BAD)
    done = forgec("test", str(path))
    assert done.returncode == 2, done.stdout + done.stderr
    out = done.stdout
    name = str(path)
    assert f"{name}:5:8: error[FORGEC_TEST_NOT_A_CAPABILITY]" in out
    assert f"{name}:8:8: error[FORGEC_TEST_STEP_UNKNOWN]" in out
    assert "did you mean `urgent`?" in out
    assert f"{name}:12:10: error[FORGEC_TEST_FIXTURE]: tasks.create never returns this" in out
    assert f"{name}:14:1: error[FORGEC_TEST_KEY]: `outptu` is not a key of `expect`" in out
    assert "did you mean `output`?" in out
    assert "did you mean `EMPTY_TITLE`?" in out
    assert f"{name}:19:9: error[FORGEC_TEST_FIXTURE]: the tool's inputSchema refuses" in out
    assert "Traceback" not in done.stderr


def test_a_toml_error_is_one_diagnostic_with_its_position(tmp_path: Path) -> None:
    path = _project(tmp_path, '[[case]]\nname = "x"\ninput = {title = "x"\n')
    done = forgec("test", str(path), "--format", "json")
    assert done.returncode == 2
    (diag,) = orjson.loads(done.stdout)["files"][0]["diagnostics"]
    assert diag["code"] == "FORGEC_TEST_TOML"
    assert diag["span"]["line"] == 3


def test_a_missing_tool_is_named(tmp_path: Path) -> None:
    path = tmp_path / "nothing.tests.toml"
    path.write_text('[[case]]\nname = "x"\n', encoding="utf-8")
    done = forgec("test", str(path))
    assert done.returncode == 2
    assert "FORGEC_TEST_TOOL" in done.stdout


def test_a_tests_file_without_a_case_is_a_problem(tmp_path: Path) -> None:
    path = _project(tmp_path, 'target = "talos"\n')
    done = forgec("test", str(path))
    assert done.returncode == 2
    assert "error[FORGEC_TEST_KEY]: the file has no `[[case]]`" in done.stdout


def test_no_tests_found_is_bad_usage(tmp_path: Path) -> None:
    done = forgec("test", str(tmp_path))
    assert done.returncode == 2
    assert "no .tests.toml file" in done.stderr


# --- outputs ------------------------------------------------------------------------------------

FAILING = """\
[[case]]
name = "passes"
input = {title = "", notes = ""}
[case.expect]
error = "EMPTY_TITLE"

[[case]]
name = "fails"
input = {title = "", notes = ""}
[case.expect]
status = "ok"
"""


def test_junit_and_json_say_which_case_failed(tmp_path: Path) -> None:
    path = _project(tmp_path, FAILING)
    done = forgec("test", str(path), "--format", "junit")
    assert done.returncode == 1
    suite = ET.fromstring(done.stdout).find("testsuite")
    assert suite is not None and suite.get("failures") == "1" and suite.get("tests") == "2"
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == ["fails"]
    done = forgec("test", str(path), "--format", "json")
    cases = orjson.loads(done.stdout)["files"][0]["cases"]
    assert [c["outcome"] for c in cases] == ["pass", "fail"]
    assert cases[1]["failures"][0]["expected"] == "ok"


# --- snapshots ----------------------------------------------------------------------------------


def test_a_snapshot_change_fails_with_the_three_part_diff(tmp_path: Path) -> None:
    path = _project(tmp_path, FAILING.split('\n[[case]]\nname = "fails"')[0])
    first = forgec("test", str(path))
    assert first.returncode == 0, first.stdout
    snap = tmp_path / "__snapshots__" / "task-triage.facts.json"
    facts = orjson.loads(snap.read_bytes())
    assert {"manifest", "disassembly", "marks", "flows", "worstCase", "card"} <= set(facts)
    tool = tmp_path / "task-triage.forge"
    tool.write_text(
        tool.read_text().replace('title: "URGENT: {{input.title}}"', 'title: "!! {{input.title}}"'),
        encoding="utf-8",
    )
    done = forgec("test", str(path))
    assert done.returncode == 1, done.stdout
    assert "the compiled output changed: manifest, disassembly" in done.stdout
    assert "Behaviour, step by step:" in done.stdout
    assert "URGENT: {{input.title}}" in done.stdout
    assert forgec("test", str(path), "--update").returncode == 0
    assert forgec("test", str(path)).returncode == 0


# --- paired runs --------------------------------------------------------------------------------


def test_against_reports_the_cases_that_differ(tmp_path: Path) -> None:
    path = _project(tmp_path, (EXAMPLES / "task-triage.tests.toml").read_text())
    old = tmp_path / "old.forge"
    old.write_text(
        (EXAMPLES / "task-triage.forge").read_text().replace("URGENT: ", "Urgent: "),
        encoding="utf-8",
    )
    done = forgec("test", str(path), "--against", str(old), "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    paired = orjson.loads(done.stdout)["files"][0]["against"]
    assert [d["case"] for d in paired["differing"]] == ["an urgent task is filed as urgent"]
    assert paired["differing"][0]["differences"][0]["what"] == "effects"
