"""A built-in sub-agent's own input, played through the real CLI (issue 19: one rule each).

Before, `subagent.invoke`'s `input` was "any object" to `check`, and each built-in sub-agent
checked its own input once it was already running. Now each has a shape beside the rows
(`forgec.ir.capabilities.SUBAGENT_SHAPES`): `forgec check` refuses a literal input the host
would refuse, at the field's pointer, and the host's bridge refuses a computed one before the
sub-agent runs. The sub-agent is played by a spy patched over the built-in in the CLI's process
(the real `forgec.cli.main` runs; the spy only records that it ran), so "before it runs" is
observed, not inferred from a message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from manifests import probe, step

# (built-in sub-agent, its function in forgec.host.delegation, an input the host refuses,
#  the pointer of the refused field under the step's input, an input it accepts)
CASES = [
    ("memory-retriever", "memory_retriever", {"query": "q" * 501}, "/input/query", {"query": "q"}),
    ("file-searcher", "file_searcher", {"query": "x", "limit": 51}, "/input/limit", {"query": "x"}),
    ("memory-groomer", "memory_groomer", {"everything": True}, "/input/everything", {}),
    ("spark-coder", "spark_coder", {"task": "x", "files": {"a.py": 1}}, "/input/files/a.py",
     {"task": "x"}),
    ("session-summarizer", "session_summarizer", {"text": 7}, "/input/text", {"text": "hi"}),
]  # fmt: skip

STEP = "/flow/nodes/0/input"

# the real CLI, with the named built-in sub-agent replaced by a spy that leaves a mark
_WITH_SPY = """
import json, sys
from pathlib import Path
from forgec.host import delegation
function, mark = sys.argv[1], Path(sys.argv[2])
def spy(inp, ctx):
    mark.write_text(json.dumps(inp))
    return {"ran": True}
setattr(delegation, function, spy)
from forgec.cli import main
sys.argv[0] = "forgec"
raise SystemExit(main(sys.argv[3:]))
"""


def _tool(payload: Any, name: str) -> dict[str, Any]:
    return probe(
        [
            step(
                "ask",
                "subagent.invoke",
                {"name": name, "input": payload},
                target="out",
                next="done",
            ),
            {"id": "done", "type": "return", "value": {"$ref": "out"}},
        ],
        tool_id="subagent-probe",
        title="Sub-agent probe",
        description="Asks one built-in sub-agent.",
    )


def _forgec(tmp_path: Path, function: str, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("FORGEC_")}
    environ["OPENAI_API_KEY"] = "sk-test-not-a-real-key"  # spark-coder's own precondition
    mark = tmp_path / "ran.json"
    return subprocess.run(
        [sys.executable, "-c", _WITH_SPY, function, str(mark), *args],
        capture_output=True, text=True, timeout=60, env=environ,
    )  # fmt: skip


def _write(tmp_path: Path, tool: dict[str, Any]) -> str:
    path = tmp_path / "probe.talostool"
    path.write_text(json.dumps(tool))
    return str(path)


@pytest.mark.parametrize(("name", "function", "refused", "where", "accepted"), CASES)
def test_check_refuses_a_literal_subagent_input_the_host_refuses(
    tmp_path: Path, name: str, function: str, refused: Any, where: str, accepted: Any
) -> None:
    path = _write(tmp_path, _tool(refused, name))
    proc = _forgec(tmp_path, function, "check", path, "--target", "talon", "--format", "json")
    assert proc.returncode == 1, proc
    found = json.loads(proc.stdout)["files"][0]["diagnostics"]
    errors = [(d["code"], d["path"]) for d in found if d["severity"] == "error"]
    assert errors == [("FORGEC_CAPABILITY_INPUT", STEP + where)], found
    # the accepted input checks clean: the refusal is the field's, not the step's
    path = _write(tmp_path, _tool(accepted, name))
    proc = _forgec(tmp_path, function, "check", path, "--target", "talon")
    assert proc.returncode == 0, proc


@pytest.mark.parametrize(("name", "function", "refused", "where", "accepted"), CASES)
def test_the_host_refuses_it_at_run_time_before_the_subagent_runs(
    tmp_path: Path, name: str, function: str, refused: Any, where: str, accepted: Any
) -> None:
    # the input comes from the tool's input: `check` cannot see it, the bridge must
    path = _write(tmp_path, _tool({"$ref": "input.ask"}, name))
    run = ["run", path, "--target", "talon", "--yes", "--format", "json"]
    run += ["--db", str(tmp_path / "h.db")]
    proc = _forgec(tmp_path, function, *run, "--input", json.dumps({"ask": refused}))
    assert proc.returncode == 1, proc
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "RUN_CAPABILITY_FAILED", error
    assert f"/input/{where.split('/')[2]}" in error["message"], error
    assert not (tmp_path / "ran.json").exists(), "the sub-agent ran on an input its shape refuses"
    # the spy is wired: an accepted input reaches it, as checked
    proc = _forgec(tmp_path, function, *run, "--input", json.dumps({"ask": accepted}))
    assert proc.returncode == 0, proc
    assert json.loads((tmp_path / "ran.json").read_text()) == accepted
