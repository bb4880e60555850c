"""The MCP server's pure parts: name mapping, label grants, annotations, policy, instructions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forgec.ir.marks import Marks
from forgec.mcp.instructions import collect_instructions
from forgec.mcp.listing import (
    annotations_from_marks,
    forged_entry,
    forged_visible,
    host_entries,
    label_granted,
    writes_state,
)
from forgec.mcp.names import id_from_mcp_name, mcp_name
from forgec.mcp.policy import PolicyError, load_policy

ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=3, max_size=64)


def test_names_are_readable_and_documented_examples_hold() -> None:
    assert mcp_name("weekly.review") == "dynamic_weekly_Dreview"
    assert mcp_name("daily-plan_v2") == "dynamic_daily_Hplan_v2"
    assert id_from_mcp_name("dynamic_weekly_Dreview") == "weekly.review"
    assert id_from_mcp_name("memory_access") is None
    assert id_from_mcp_name("dynamic_ab") is None  # too short for an id
    assert id_from_mcp_name("dynamic_aXb") is None  # uppercase outside an escape
    assert id_from_mcp_name("dynamic_abc_") == "abc_"


@settings(max_examples=200, deadline=None)
@given(ids)
def test_names_round_trip_and_use_only_mcp_characters(tool_id: str) -> None:
    name = mcp_name(tool_id)
    assert all(c.isalnum() or c == "_" for c in name)
    assert id_from_mcp_name(name) == tool_id


@settings(max_examples=200, deadline=None)
@given(ids, ids)
def test_names_are_injective(a: str, b: str) -> None:
    if a != b:
        assert mcp_name(a) != mcp_name(b)


def test_label_grants() -> None:
    assert label_granted("db.query:own", ["db.query:own"])
    assert not label_granted("db.query:own", [])
    assert label_granted("channel.send:alerts", ["channel.send:*"])
    assert not label_granted("channel.send:*", ["channel.send:alerts"])
    assert not label_granted("channel.send:alerts", ["channel.send:other"])
    assert not label_granted("db.query:own", ["db.query:*"])  # only channel.send has a family
    assert not label_granted("persona.send:researcher", ["persona.send:*"])  # no such family
    assert forged_visible(Marks(), [])  # a tool needing no label is listed without labels
    assert not forged_visible(Marks(labels=("net.http:egress",)), [])
    assert forged_visible(
        Marks(labels=("net.http:egress", "db.query:own")), ["db.query:own", "net.http:egress"]
    )


def test_annotations_follow_marks() -> None:
    reader = annotations_from_marks(Marks(powers=("Read",), risk="R1"))
    assert (reader.read_only, reader.destructive, reader.idempotent, reader.open_world) == (
        True,
        False,
        True,
        False,
    )
    undoable = annotations_from_marks(Marks(powers=("Read", "Write"), risk="R2", compensated=True))
    # SPEC §17: an undo pair does not make a write harmless to the person
    assert not undoable.read_only and undoable.destructive and not undoable.idempotent
    delegate = annotations_from_marks(Marks(powers=("Delegate",), risk="R3"))
    assert delegate.open_world and delegate.destructive
    no_undo = annotations_from_marks(Marks(powers=("Write",), risk="R3", compensated=False))
    assert no_undo.destructive
    net = annotations_from_marks(
        Marks(powers=("Network",), risk="R4", network=("api.example.com",))
    )
    assert net.open_world and net.destructive and not net.read_only
    stateful = annotations_from_marks(Marks(powers=("Read",)), keeps_state=True)
    assert not stateful.read_only and not stateful.destructive


def test_forged_entry_schemas_and_wrapping() -> None:
    manifest = {
        "id": "a.b",
        "version": 2,
        "title": "T",
        "description": "D",
        "inputSchema": {"type": "string"},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "flow": {"nodes": []},
    }
    entry = forged_entry(manifest, Marks())
    assert entry is not None and entry.name == "dynamic_a_Db"
    assert entry.wraps_input and entry.input_schema["required"] == ["input"]
    assert not entry.wraps_output and entry.output_schema == manifest["outputSchema"]
    manifest2 = {**manifest, "inputSchema": {"type": "object"}, "outputSchema": {"type": "array"}}
    entry2 = forged_entry(manifest2, Marks())
    assert entry2 is not None and not entry2.wraps_input and entry2.wraps_output
    assert entry2.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "array"}},
        "required": ["result"],
    }
    assert forged_entry({**manifest, "id": "." * 64}, Marks()) is None  # name over 128 chars


def test_writes_state() -> None:
    body = [{"id": "b", "type": "set", "target": "state.count", "value": 1}]
    nodes = [{"id": "l", "type": "foreach", "body": body}]
    assert writes_state({"state": {"fields": {}}, "flow": {"nodes": nodes}})
    assert not writes_state({"flow": {"nodes": nodes}})


def test_host_tools_are_listed_by_label() -> None:
    assert host_entries([]) == []
    names = [e.name for e in host_entries(["db.query:own", "channel.send:alerts"])]
    assert names == ["channel_send", "db_query"]
    everything = [
        "schedule.manage:own",
        "channel.send:*",
        "memory.access:thread",
        "net.http:egress",
        "db.query:own",
        "subagent.invoke",
        "subagent.background",
        "persona.send:*",
    ]
    entries = {e.name: e for e in host_entries(everything)}
    assert sorted(entries) == sorted(
        [
            "schedule_manage",
            "channel_send",
            "memory_access",
            "net_http",
            "db_query",
            "subagent_invoke",
            "background_agent",
            "persona_send",
            "persona_task_status",
            "persona_list",
        ]
    )
    assert entries["db_query"].annotations.read_only
    assert entries["net_http"].annotations.open_world
    assert entries["background_agent"].internal == "subagent.background"


def test_policy_file(tmp_path: Path) -> None:
    p = tmp_path / "policy.toml"
    p.write_text(
        '[[allow]]\ntool = "dynamic_web_Dfetch"\nversion = 2\n\n[[allow]]\ntool = "net_http"\n'
    )
    policy = load_policy(p)
    assert policy.allows(("dynamic:web.fetch",), version=2)
    assert not policy.allows(("dynamic:web.fetch",), version=3)
    assert policy.allows(("net_http", "net.http"))
    assert not load_policy(None).allows(("net_http",))
    p.write_text('[[allow]]\ntool = "x"\nversoin = 2\n')
    with pytest.raises(PolicyError, match="unknown key"):
        load_policy(p)
    p.write_text('[[allow]]\ntool = "x"\nhash = "md5:1"\n')
    with pytest.raises(PolicyError, match="sha256"):
        load_policy(p)
    p.write_text("not toml [")
    with pytest.raises(PolicyError, match="not valid TOML"):
        load_policy(p)
    with pytest.raises(PolicyError, match="no such"):
        load_policy(tmp_path / "missing.toml")


def test_instructions_follow_the_heading_rule(tmp_path: Path) -> None:
    folder = tmp_path / "tool-instructions"
    folder.mkdir()
    (folder / "memory.access.md").write_text("## Memory\nUse namespaces.\n")
    (folder / "db.query.md").write_text("No heading here\n")
    (folder / "net.http.md").write_text("   \n")
    (folder / "dynamic.web.fetch.md").write_text("## Web fetch\nOnly example.com.\n")
    text, warnings = collect_instructions(
        folder, ["memory.access", "db.query", "net.http", "dynamic:web.fetch", "persona.list"]
    )
    assert text == "## Memory\nUse namespaces.\n\n## Web fetch\nOnly example.com."
    assert len(warnings) == 1 and "db.query.md" in warnings[0] and "## " in warnings[0]
    assert collect_instructions(tmp_path / "nope", ["memory.access"]) == (None, [])


def test_host_pool_reuses_hosts_but_never_one_a_call_broke() -> None:
    from forgec.mcp.server import IDLE_HOSTS, HostPool

    opened: list[Any] = []

    class FakeHost:
        closed = False

        def close(self) -> None:
            self.closed = True

    def open_host() -> Any:
        opened.append(FakeHost())
        return opened[-1]

    pool = HostPool(open_host)
    with pool.lend() as first:
        pass
    with pool.lend() as again:
        assert again is first  # reused: opening one costs as much as a small call
    with pytest.raises(RuntimeError), pool.lend() as broken:
        raise RuntimeError("the call failed")
    assert broken.closed  # a host a call raised in is closed, never lent again
    with pool.lend() as fresh:
        assert fresh is not broken
    overlapping = [pool.take() for _ in range(IDLE_HOSTS + 2)]  # calls that overlap each get one
    assert len({id(h) for h in overlapping}) == IDLE_HOSTS + 2
    for host in overlapping:
        pool.give(host)
    assert sum(h.closed for h in overlapping) == 2  # only IDLE_HOSTS stay open
    pool.close()
    assert all(h.closed for h in opened)


def test_the_listing_is_read_once_per_store_change(tmp_path: Path) -> None:
    """Scale: a listing is rebuilt only when some connection committed to the store."""
    from mcp_face_tools import build_store

    from forgec.mcp.server import ForgeServer, ServeOptions
    from forgec.store import Store

    store = build_store(tmp_path / "tools.db")
    server = ForgeServer(ServeOptions(store=store, db=tmp_path / "host.db"))
    try:
        first = server.listing()
        assert server.listing() is first and server.lookup("dynamic_greet") is not None
        with Store(store) as other:  # another connection, as another process would be
            other.disable("greet")
        second = server.listing()
        assert second is not first and server.lookup("dynamic_greet") is None
        assert server.listing() is second
        assert server.changed_since_announced() is False  # the first look sets the baseline
        with Store(store) as other:
            other.enable("later.tool", consent=True)
        assert server.changed_since_announced() is True
        assert server.changed_since_announced() is False  # announced once
    finally:
        server.close()
