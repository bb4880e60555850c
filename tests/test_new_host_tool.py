"""docs/architecture.md: "a new host tool is a row, a shape, a handler and an instruction file".

A throwaway host tool, `probe.echo`, is added exactly so — its row (with its shape and its
undo pair) joins the rows before anything reads them, as if written in
`forgec/ir/capabilities.py`; its handler and its undo hook are one module of `forgec.host` (a
folder on the package's path plays `forgec/host/probe_echo.py`); its instruction file is
`tool-instructions/probe.echo.md` — and nothing else is touched. Then
the real CLI and the real MCP client find it everywhere: `check` accepts its valid input and
refuses one over its limit at the field's pointer, the bridge dispatches a run's call to the
handler (and refuses an over-limit computed input or a missing label before it runs), and
`forgec mcp serve` lists it under its grant label with its shape's schema, sends its
instructions and dispatches a call; a run that fails after the step undoes it through the
tool's own undo hook. Had any other file to be edited, one of these would fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

# the row and its shape: the only lines a new host tool adds to forgec/ir/capabilities.py
_PRELUDE = """
import os, sys
from forgec.ir import capabilities as rows
from forgec.ir.shapes import Shape, string

row = rows.Capability(
    "probe.echo",
    "Echo one word back (a host tool only this test adds).",
    Shape(
        {"word": string("the word to echo", min_length=1, max_length=16)},
        limit=rows.HOST_TOOL_LIMIT,
        required=("word",),
    ),
    rows.OpMarks("Read", "R1"),
    {"type": "object", "properties": {"echo": {"type": "string"}}, "required": ["echo"]},
    targets=rows.TALON,
    label="probe.echo:own",
    source="private",
    undo="probe.echo",
    mcp_name="probe_echo",
)
rows.ROWS = (*rows.ROWS, row)
rows.BY_NAME[row.name] = row

import forgec.host  # its handler: a module of forgec.host, found like every other one
forgec.host.__path__.append(os.environ["PROBE_HANDLERS"])

from forgec.cli import main
sys.argv[0] = "forgec"
raise SystemExit(main(sys.argv[1:]))
"""

_HANDLER = """
import json
import os

from forgec.host.handlers import HostCall, handles
from forgec.ir.hooks import row_hook


@handles("probe.echo")
def echo(call: HostCall) -> dict:
    with open(os.environ["PROBE_CALLS"], "a", encoding="utf-8") as calls:
        calls.write(json.dumps(dict(call.input)) + "\\n")
    return {"echo": call.input["word"]}


@row_hook("undo", "probe.echo")
def unecho(call: HostCall, result: dict) -> dict:
    with open(os.environ["PROBE_CALLS"], "a", encoding="utf-8") as calls:
        calls.write(json.dumps({"undo": dict(call.input), "result": result}) + "\\n")
    return {"unechoed": result["echo"]}
"""

LABEL = "probe.echo:own"


@pytest.fixture
def probe(tmp_path: Path) -> dict[str, Any]:
    handlers = tmp_path / "handlers"
    handlers.mkdir()
    (handlers / "probe_echo.py").write_text(_HANDLER)
    templates = tmp_path / "templates"
    (templates / "tool-instructions").mkdir(parents=True)
    (templates / "tool-instructions" / "probe.echo.md").write_text(
        "## Probe echo\nEcho one word, at most 16 characters.\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("FORGEC_")}
    env.update(
        PROBE_HANDLERS=str(handlers),
        PROBE_CALLS=str(tmp_path / "calls.jsonl"),
        PYTHONPATH=str(ROOT),
        NO_COLOR="1",
    )
    return {"env": env, "calls": tmp_path / "calls.jsonl", "templates": templates}


def _calls(probe: dict[str, Any]) -> list[Any]:
    path: Path = probe["calls"]
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _forgec(probe: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PRELUDE, *args],
        capture_output=True, text=True, timeout=60, env=probe["env"],
    )  # fmt: skip


def _tool(tmp_path: Path, word: Any, *, then_fail: bool = False) -> str:
    from manifests import probe as build
    from manifests import step

    first = step("echo", "probe.echo", {"word": word}, target="out", next="done")
    if then_fail:
        first["compensation"] = "probe.echo"
    end: dict[str, Any] = {"id": "done", "type": "return", "value": {"$ref": "out"}}
    if then_fail:
        end = {"id": "done", "type": "fail", "code": "GAVE_UP", "message": "after the echo"}
    doc = build(
        [first, end],
        tool_id="echo-probe",
        title="Echo probe",
        description="Calls the new host tool.",
        input_schema={"type": "object", "properties": {"w": {"type": "string"}}},
    )
    path = tmp_path / "echo.talostool"
    path.write_text(json.dumps(doc))
    return str(path)


def test_check_knows_the_new_tool_and_its_limit(tmp_path: Path, probe: dict[str, Any]) -> None:
    proc = _forgec(probe, "check", _tool(tmp_path, "hello"), "--target", "talon")
    assert proc.returncode == 0, proc
    proc = _forgec(
        probe, "check", _tool(tmp_path, "w" * 17), "--target", "talon", "--format", "json"
    )
    assert proc.returncode == 1, proc
    found = json.loads(proc.stdout)["files"][0]["diagnostics"]
    assert [(d["code"], d["path"]) for d in found] == [
        ("FORGEC_CAPABILITY_INPUT", "/flow/nodes/0/input/word")
    ]
    assert "at most 16" in found[0]["message"]


def test_the_bridge_dispatches_a_run_to_the_new_handler(
    tmp_path: Path, probe: dict[str, Any]
) -> None:
    path = _tool(tmp_path, {"$ref": "input.w"})
    run = ["run", path, "--target", "talon", "--yes", "--format", "json"]
    run += ["--db", str(tmp_path / "h.db")]
    proc = _forgec(probe, *run, "--persona-labels", LABEL, "--input", '{"w": "hello"}')
    assert proc.returncode == 0, proc
    assert json.loads(proc.stdout)["output"] == {"echo": "hello"}
    assert _calls(probe) == [{"word": "hello"}]
    # over its limit, or without its label: refused at the bridge, the handler never runs
    proc = _forgec(probe, *run, "--persona-labels", LABEL, "--input", json.dumps({"w": "w" * 17}))
    assert json.loads(proc.stdout)["error"]["code"] == "RUN_CAPABILITY_FAILED", proc
    proc = _forgec(probe, *run, "--persona-labels", "db.query:own", "--input", '{"w": "hi"}')
    assert json.loads(proc.stdout)["error"]["code"] == "RUN_LABEL_DENIED", proc
    assert _calls(probe) == [{"word": "hello"}]


def _over_mcp(probe: dict[str, Any], tmp_path: Path, labels: str, body: Any) -> Any:
    """`mcp serve` with the new tool's prelude, a real SDK client session
    (`tests/mcp_client.py`); BODY gets the session and the server's InitializeResult."""
    from mcp_client import run_session

    args = ["-c", _PRELUDE, "mcp", "serve", "--store", str(tmp_path / "tools.db")]
    args += ["--db", str(tmp_path / "h.db"), "--templates", str(probe["templates"])]
    args += ["--persona-labels", labels]
    started: list[Any] = []

    async def with_started(session: Any) -> Any:
        return await body(session, started[0])

    return run_session(args, with_started, env=probe["env"], python_args=True, started=started)


def test_mcp_lists_the_new_tool_under_its_label_and_dispatches_it(
    tmp_path: Path, probe: dict[str, Any]
) -> None:
    pytest.importorskip("mcp")

    async def body(session: Any, started: Any) -> Any:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        called = await session.call_tool("probe_echo", {"word": "hello"}) if tools else None
        return tools, started.instructions, called

    tools, instructions, called = _over_mcp(probe, tmp_path, LABEL, body)
    assert list(tools) == ["probe_echo"]
    schema = tools["probe_echo"].input_schema
    assert schema["properties"]["word"]["maxLength"] == 16 and schema["required"] == ["word"]
    assert instructions is not None and "## Probe echo" in instructions
    assert not called.is_error and called.structured_content == {"echo": "hello"}
    assert _calls(probe) == [{"word": "hello"}]

    # without its label it is not listed (and a call is refused)
    async def unlisted(session: Any, started: Any) -> Any:
        tools = [t.name for t in (await session.list_tools()).tools]
        return tools, await session.call_tool("probe_echo", {"word": "hello"})

    tools, refused = _over_mcp(probe, tmp_path, "db.query:own", unlisted)
    assert "probe_echo" not in tools and refused.is_error
    assert _calls(probe) == [{"word": "hello"}]


def test_a_failed_run_undoes_the_new_tool_through_its_own_hook(
    tmp_path: Path, probe: dict[str, Any]
) -> None:
    path = _tool(tmp_path, {"$ref": "input.w"}, then_fail=True)
    assert _forgec(probe, "check", path, "--target", "talon").returncode == 0
    run = ["run", path, "--target", "talon", "--yes", "--format", "json"]
    run += ["--db", str(tmp_path / "h.db"), "--persona-labels", LABEL, "--input", '{"w": "hi"}']
    proc = _forgec(probe, *run)
    answer = json.loads(proc.stdout)
    assert answer["error"]["code"] == "GAVE_UP", proc
    assert [(c["node"], c["status"]) for c in answer["compensations"]] == [("echo", "undone")]
    assert _calls(probe) == [{"word": "hi"}, {"undo": {"word": "hi"}, "result": {"echo": "hi"}}]
