"""SPEC §21 through the bridge's call API for a model's own calls (`forgec.host.agentcall`),
on the real reference host (SQLite): the context's labels ride every call as data and control,
`[flows] deny` refuses before any effect, `untrusted->destination` reads only the destination
arguments' data, the caller's allowed flows lift a rule for one call, the rows a call writes
keep the context's labels, and a result's labels are its origin per field plus its rows'."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from forgec.host import HostOptions, open_host
from forgec.host.agentcall import AgentContext, call_as_agent
from forgec.host.config import ChannelConfig, HostConfig
from forgec.runtime.host import HostError

ALL = ("schedule.manage:own", "memory.access:thread", "channel.send:*", "db.query:own")
WEB = "external:evil.example"


def _open(tmp_path: Path, deny: tuple[str, ...]):
    cfg = HostConfig(
        thread="th-1",
        channels={"general": ChannelConfig("general"), "journal": ChannelConfig("journal")},
        flow_deny=deny,
    )
    return open_host(HostOptions(db=tmp_path / "h.db", config=cfg, persona_labels=ALL))


def _sent(tmp_path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(tmp_path / "h.db") as raw:
        return list(raw.execute("SELECT channel_id, content, labels FROM messages"))


def test_a_pin_read_in_a_turn_cannot_be_posted_under_private_egress(tmp_path: Path) -> None:
    with _open(tmp_path, ("private->egress",)) as host:
        ctx = AgentContext.start()
        call_as_agent(
            host,
            "memory.access",
            {"operation": "write", "key": "pin", "value": "4921"},
            ctx,
            caller="t",
        )
        read = call_as_agent(
            host, "memory.access", {"operation": "read", "key": "pin"}, ctx, caller="t"
        )
        assert read.labels == {"private:memory.access"}
        ctx.join(read.labels)
        with pytest.raises(HostError) as info:
            call_as_agent(
                host,
                "channel.send",
                {"channelId": "general", "content": "4921"},
                ctx,
                caller="t",
                name="channel_send",
            )
        assert info.value.code == "RUN_FLOW_DENIED"
        assert "private->egress" in info.value.message
        assert _sent(tmp_path) == []  # no effect
        # the consent policy (or a person) allows this one flow for this call: it is sent
        call_as_agent(
            host,
            "channel.send",
            {"channelId": "general", "content": "4921"},
            ctx,
            caller="t",
            allowed_flows=("private->egress",),
        )
        (row,) = _sent(tmp_path)
        assert row[:2] == ("general", "4921") and "private:memory.access" in row[2]


def test_web_text_in_the_context_picks_no_destination(tmp_path: Path) -> None:
    with _open(tmp_path, ("untrusted->destination",)) as host:
        clean = AgentContext.start()
        call_as_agent(
            host, "channel.send", {"channelId": "journal", "content": "hi"}, clean, caller="t"
        )
        steered = AgentContext.start({WEB})
        with pytest.raises(HostError) as info:
            call_as_agent(
                host, "channel.send", {"channelId": "journal", "content": "x"}, steered, caller="t"
            )
        assert info.value.code == "RUN_FLOW_DENIED"
        assert "untrusted->destination" in info.value.message and WEB in info.value.message
        # control alone is not data: only the coarse rules count what decided the call
        decided = AgentContext(data=frozenset(), control=frozenset({WEB}))
        call_as_agent(
            host, "channel.send", {"channelId": "journal", "content": "y"}, decided, caller="t"
        )
        assert [r[1] for r in _sent(tmp_path)] == ["hi", "y"]
        # a read is no sink: the rule refuses nothing there
        call_as_agent(host, "memory.access", {"operation": "list"}, steered, caller="t")


def test_written_rows_keep_the_context_and_a_later_read_carries_it(tmp_path: Path) -> None:
    with _open(tmp_path, ("untrusted->write",)) as host:
        steered = AgentContext.start({WEB})
        with pytest.raises(HostError):
            call_as_agent(
                host,
                "memory.access",
                {"operation": "write", "key": "k", "value": "v"},
                steered,
                caller="t",
            )
    with _open(tmp_path, ()) as host:
        steered = AgentContext.start({WEB})
        call_as_agent(
            host,
            "memory.access",
            {"operation": "write", "key": "k", "value": "v"},
            steered,
            caller="t",
        )
        fresh = AgentContext.start()
        read = call_as_agent(
            host, "memory.access", {"operation": "read", "key": "k"}, fresh, caller="t"
        )
        assert WEB in read.labels
