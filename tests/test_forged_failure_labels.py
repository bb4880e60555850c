"""One reading of a failed forged run's labels (issue 31, SPEC §15/§21 "failure is control"):
the daemon's turn and the MCP server's session both join
`forgec.host.agentcall.forged_output_labels`. Generated failing tools are run through both real
paths — the daemon's `Agents.call_tool` on its reference host, and `forgec mcp serve`'s server
through the SDK's client (in process) — and the labels each context gained are compared: the
same, and never fewer than the run could have read (the stored labels of a row it read, which
no static reading knows, and every source its steps have, which a run that stopped early never
held)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from manifests import manifest_with_nodes
from test_talond import write_config, write_personas

from forgec.host import HostOptions, open_host
from forgec.host.agentcall import AgentContext, call_as_agent
from forgec.host.config import load_config

WEB = "external:evil.example"  # the stored label of the note every host is seeded with
READS = ["notes.list", "tasks.list", "memory.search"]
SOURCES = {
    "notes.list": "private:notes.list",
    "tasks.list": "private:tasks.list",
    "memory.search": "private:memory.search",
}


@st.composite
def failing_tools(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A tool that reads (some of) what the host holds, then fails: at a `fail` node, or at a
    step the host refuses (a task whose title is a list). Returns it and its reads."""
    reads = draw(st.lists(st.sampled_from(READS), min_size=1, max_size=3))
    nodes: list[dict[str, Any]] = []
    for i, cap in enumerate(reads):
        input: dict[str, Any] = {"limit": draw(st.integers(1, 5))}
        if cap == "memory.search":
            input["query"] = "pin"
        nodes.append(
            {
                "id": f"r{i}",
                "type": "capability",
                "capability": cap,
                "input": input,
                "target": f"got{i}",
                "next": f"r{i + 1}",
            }
        )
    how = draw(st.sampled_from(["fail", "refused"]))
    if how == "fail":
        nodes.append({"id": f"r{len(reads)}", "type": "fail", "code": "NOPE", "message": "no"})
    else:
        nodes.append(
            {
                "id": f"r{len(reads)}",
                "type": "capability",
                "capability": "tasks.create",
                "input": {"title": {"$ref": "got0.items"}},
                "next": "done",
            }
        )
        nodes.append({"id": "done", "type": "return", "value": "ok"})
    return manifest_with_nodes(nodes, id="fails.late"), reads


def _seed(db: Path, config: Any) -> None:
    """A note written by a turn that had read web text: the row keeps that label."""
    with open_host(HostOptions(db=db, config=config)) as host:
        call_as_agent(
            host,
            "notes.create",
            {"title": "pin", "body": "4921"},
            AgentContext.start((WEB,)),
            caller="seed",
        )


def _daemon_labels(root: Path, store: Path, config: Any) -> frozenset[str]:
    from forgec.daemon.agent import Agents
    from forgec.mcp.policy import ConsentPolicy

    db = root / "daemon.db"
    _seed(db, config)
    agents = Agents(config, db_path=db, store_path=store, policy=ConsentPolicy())
    with open_host(HostOptions(db=db, config=config, persona="alpha")) as h:
        offered = agents.offered(())
        (name,) = [t for t in offered if t.startswith("dynamic_")]
        turn = AgentContext.start(())
        answer = json.loads(agents.call_tool(offered, name, json.dumps({}), h, turn))
    assert "error" in answer, answer
    return turn.labels()


def _mcp_labels(root: Path, store: Path, host_config: Path, config: Any) -> frozenset[str]:
    from mcp import Client

    from forgec.mcp.server import ForgeServer, ServeOptions, build_server

    db = root / "mcp.db"
    _seed(db, config)
    forge = ForgeServer(ServeOptions(store=store, db=db, host_config=host_config))

    async def session() -> Any:
        async with Client(build_server(forge)) as client:
            listed = await client.list_tools()
            (name,) = [t.name for t in listed.tools if t.name.startswith("dynamic_")]
            return await client.call_tool(name, {})

    try:
        result = asyncio.run(session())
        labels = forge.context(None)
        assert labels is not None
        assert result.is_error or "failed" in str(result.content), result
        return labels.labels()
    finally:
        forge.close()


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(tool=failing_tools())
def test_a_failed_forged_run_reads_the_same_through_the_daemon_and_mcp(
    tmp_path_factory: Any, tool: tuple[dict[str, Any], list[str]]
) -> None:
    from forgec.store import Store

    manifest, reads = tool
    root = tmp_path_factory.mktemp("failing")
    write_personas(root, {"alpha": ()})
    host_config = write_config(root, None)
    config = load_config(host_config)
    store = root / "tools.db"
    with Store(store) as s:
        s.install(orjson.dumps(manifest), target="talos")
        s.enable("fails.late", consent=True)
    daemon = _daemon_labels(root, store, config)
    mcp = _mcp_labels(root, store, host_config, config)
    assert daemon == mcp
    assert {SOURCES[c] for c in reads} <= daemon  # every source its steps have
    if "notes.list" in reads:
        assert WEB in daemon  # the stored label of the note it read, held when it failed
    assert "input" not in daemon
