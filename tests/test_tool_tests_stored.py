"""Test cases kept with a version (SPEC §22): `tools install` keeps the tests file beside the
tool; `tool_create` (a real MCP client against `forgec mcp serve`) accepts `tests`, checked
against the tool and stored with the proposal; `tools review` runs the current version's cases
on the proposal (in-memory host) and shows what differs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from test_mcp_server import _text, run_client

from forgec.store import Store

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def forgec(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "forgec", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _installed(tmp_path: Path) -> Path:
    for name in ("task-triage.forge", "task-triage.tests.toml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    store = tmp_path / "tools.db"
    done = forgec("tools", "install", str(tmp_path / "task-triage.forge"), "--store", str(store))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kept its 3 test case(s) with it" in done.stdout
    return store


def _proposal_manifest() -> dict[str, Any]:
    manifest = orjson.loads((EXAMPLES / "task-triage.talostool").read_bytes())
    text = orjson.dumps(manifest).decode().replace("URGENT: ", "Urgent: ")
    return dict(orjson.loads(text), version=2, parentVersion=1)


CASE = {
    "name": "urgent, as the model sees it",
    "input": {"title": "Server down", "notes": ""},
    "model": [{"node": "classify", "output": {"label": "urgent"}}],
    "expect": {"output": {"label": "urgent"}},
}


def test_install_keeps_the_tests_file_and_review_runs_it_on_a_proposal(tmp_path: Path) -> None:
    store = _installed(tmp_path)
    with Store(store) as s:
        current = s.get("task-triage")
        kept = s.tests_of(current)
        assert kept is not None
        assert kept[0]["name"] == "an urgent task is filed as urgent"

    async def body(session: Any) -> Any:
        return await session.call_tool(
            "tool_create",
            {"manifest": _proposal_manifest(), "target": "talos", "tests": [CASE]},
        )

    created = run_client(
        ["--store", str(store), "--db", str(tmp_path / "h.db"), "--persona-labels", "tool.create"],
        body,
    )
    assert not created.is_error, _text(created)
    with Store(store) as s:
        (number,) = s.proposals("task-triage")
        assert s.tests_of(s.get_proposal("task-triage", number)) == [CASE]

    done = forgec("tools", "review", "task-triage", "--store", str(store), "--format", "json")
    assert done.returncode == 0, done.stderr
    tests = orjson.loads(done.stdout)["tests"]
    assert tests["cases"] == 3
    (differs,) = tests["differing"]
    assert differs["case"] == "an urgent task is filed as urgent"
    (effects,) = differs["differences"]
    assert effects["old"][0]["input"]["title"] == "URGENT: Server down"
    assert effects["new"][0]["input"]["title"] == "Urgent: Server down"
    assert [o["outcome"] for o in tests["onNew"]] == ["fail", "pass", "pass"]
    assert tests["proposalCases"] == [{"case": CASE["name"], "outcome": "pass"}]
    text = forgec("tools", "review", "task-triage", "--store", str(store))
    assert "Tests: v1's 3 case(s), run on proposal 1 (in-memory host):" in text.stdout
    assert "an urgent task is filed as urgent: differs" in text.stdout


def test_tool_create_refuses_tests_that_do_not_fit_the_tool(tmp_path: Path) -> None:
    store = _installed(tmp_path)
    bad_step = dict(CASE, mock=[{"step": "clasify", "result": {}}])
    pattern = dict(CASE, expect={"output": {"label": "<re:(a+)+$>"}})

    async def body(session: Any) -> Any:
        first = await session.call_tool(
            "tool_create",
            {"manifest": _proposal_manifest(), "target": "talos", "tests": [bad_step]},
        )
        second = await session.call_tool(
            "tool_create",
            {"manifest": _proposal_manifest(), "target": "talos", "tests": [pattern]},
        )
        return first, second

    first, second = run_client(
        ["--store", str(store), "--db", str(tmp_path / "h.db"), "--persona-labels", "tool.create"],
        body,
    )
    assert first.is_error
    codes = {(d["code"], d["path"]) for d in first.structured_content["report"]["diagnostics"]}
    assert ("FORGEC_TEST_STEP_UNKNOWN", "/tests/0/mock/0/step") in codes
    assert second.is_error and "<re:...>" in _text(second)
    with Store(store) as s:
        assert s.proposals("task-triage") == []  # nothing was stored


def test_against_a_stored_version(tmp_path: Path) -> None:
    store = _installed(tmp_path)
    changed = tmp_path / "task-triage.forge"
    changed.write_text(changed.read_text().replace("URGENT: ", "Urgent: "), encoding="utf-8")
    done = forgec(
        "test", str(tmp_path / "task-triage.tests.toml"), "--against", "task-triage@1",
        "--store", str(store), "--format", "json",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    paired = orjson.loads(done.stdout)["files"][0]["against"]
    assert paired["other"] == "v1"
    assert [d["case"] for d in paired["differing"]] == ["an urgent task is filed as urgent"]
    assert paired["verdict"]["newPower"] is True
    missing = forgec("test", str(tmp_path / "task-triage.tests.toml"), "--against", "nope@3",
                     "--store", str(store))  # fmt: skip
    assert missing.returncode == 2 and "--against nope@3" in missing.stderr
