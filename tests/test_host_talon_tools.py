"""The Talon host tools on SQLite: schedules that survive a restart, per-thread memory items,
the channel outbox with each connector, label checks at the bridge and the listing filter,
and compensations that really restore the prior state."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from forgec.host import HostOptions, open_host
from forgec.host.bridge import grants, label_needed, visible_tools
from forgec.host.channels import render
from forgec.host.config import ChannelConfig, HostConfig
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="t", tool_version=1, node_id="n")
ALL = (
    "schedule.manage:own",
    "memory.access:thread",
    "channel.send:*",
    "db.query:own",
)


@pytest.fixture
def personas(tmp_path: Path) -> Path:
    root = tmp_path / "personas"
    (root / "assistant" / "prompts").mkdir(parents=True)
    (root / "assistant" / "persona.md").write_text("# Helpful assistant\n\nBody.\n")
    (root / "assistant" / "prompts" / "memory-grooming.md").write_text("Groom the memory.\n")
    (root / "other" / "prompts").mkdir(parents=True)
    (root / "other" / "persona.md").write_text("# Other\n")
    (root / "secret.md").write_text("outside the prompts folder")
    return root


def _open(
    tmp_path: Path,
    personas: Path | None = None,
    *,
    persona="assistant",
    thread="th-1",
    labels=ALL,
    channels=None,
):
    cfg = HostConfig(
        persona=persona,
        thread=thread,
        personas_dir=personas,
        channels=channels
        or {
            "general": ChannelConfig("general"),
            "text": ChannelConfig("text", connector="plain"),
            "web": ChannelConfig("web", connector="html"),
            "team": ChannelConfig("team", connector="slack", thread="slack-thread"),
        },
    )
    return open_host(HostOptions(db=tmp_path / "h.db", config=cfg, persona_labels=labels))


# --- schedule.manage -------------------------------------------------------------------------


def test_schedules_survive_a_restart(tmp_path: Path, personas: Path) -> None:
    with _open(tmp_path, personas) as h:
        made = h.call(
            "schedule.manage",
            {
                "action": "create",
                "cronExpr": "0  9 * * 1-5",
                "label": "standup",
                "promptFile": "memory-grooming",
            },
            CTX,
        )
    assert made["cronExpr"] == "0 9 * * 1-5" and made["enabled"] is True
    assert made["promptFile"] == "memory-grooming" and made["nextRun"].endswith("Z")
    with _open(tmp_path, personas) as h:  # a new connection and host object: a restart
        listed = h.call("schedule.manage", {"action": "list"}, CTX)["schedules"]
    assert [s["scheduleId"] for s in listed] == [made["scheduleId"]]
    assert listed[0]["label"] == "standup"


def test_cancel_disables_delete_removes_list_shows_own_only(tmp_path: Path, personas) -> None:
    with _open(tmp_path, personas) as h:
        sid = h.call(
            "schedule.manage",
            {"action": "create", "cronExpr": "*/5 * * * *", "prompt": "ping"},
            CTX,
        )["scheduleId"]
        cancelled = h.call("schedule.manage", {"action": "cancel", "scheduleId": sid}, CTX)
        assert cancelled["enabled"] is False and cancelled["previous"]["enabled"] is True
        updated = h.call(
            "schedule.manage",
            {"action": "update", "scheduleId": sid, "cronExpr": "0 * * * *", "label": "hourly"},
            CTX,
        )
        assert updated["cronExpr"] == "0 * * * *" and updated["prompt"] == "ping"
    with _open(tmp_path, personas, persona="other") as h:
        assert h.call("schedule.manage", {"action": "list"}, CTX) == {"schedules": []}
        with pytest.raises(HostError, match="no schedule"):  # not even visible to delete
            h.call("schedule.manage", {"action": "delete", "scheduleId": sid}, CTX)
    with _open(tmp_path, personas) as h:
        gone = h.call("schedule.manage", {"action": "delete", "scheduleId": sid}, CTX)
        assert gone["deleted"] is True
        assert h.call("schedule.manage", {"action": "list"}, CTX) == {"schedules": []}


@pytest.mark.parametrize(
    ("inp", "needle"),
    [
        ({"action": "create", "cronExpr": "* * * *", "prompt": "x"}, "cron"),
        ({"action": "create", "cronExpr": "* * * * * *", "prompt": "x"}, "cron"),
        ({"action": "create", "cronExpr": "61 * * * *", "prompt": "x"}, "cron"),
        ({"action": "create", "prompt": "x"}, "cronExpr"),
        (
            {"action": "create", "cronExpr": "* * * * *", "prompt": "x", "promptFile": "a"},
            "exclusive",
        ),
        ({"action": "create", "cronExpr": "* * * * *", "promptFile": "../secret"}, "promptFile"),
        ({"action": "create", "cronExpr": "* * * * *", "promptFile": "/etc/passwd"}, "promptFile"),
        ({"action": "create", "cronExpr": "* * * * *", "promptFile": "missing"}, "missing"),
        ({"action": "update"}, "scheduleId"),
        ({"action": "explode"}, "action"),
    ],
)
def test_schedule_input_errors(tmp_path: Path, personas: Path, inp, needle: str) -> None:
    with _open(tmp_path, personas) as h, pytest.raises(HostError) as info:
        h.call("schedule.manage", inp, CTX)
    assert info.value.code == "RUN_CAPABILITY_FAILED" and needle in info.value.message


def test_schedule_compensations_restore(tmp_path: Path, personas: Path) -> None:
    def listing(h):
        return h.call("schedule.manage", {"action": "list"}, CTX)["schedules"]

    with _open(tmp_path, personas) as h:
        create = {"action": "create", "cronExpr": "0 8 * * *", "prompt": "morning"}
        made = h.call("schedule.manage", create, CTX)
        h.compensate("schedule.manage", "schedule.manage", create, made, CTX)
        assert listing(h) == []

        made = h.call("schedule.manage", create, CTX)
        sid = made["scheduleId"]
        for step in (
            {"action": "update", "scheduleId": sid, "cronExpr": "0 20 * * *", "prompt": "night"},
            {"action": "cancel", "scheduleId": sid},
            {"action": "delete", "scheduleId": sid},
        ):
            before = listing(h)
            result = h.call("schedule.manage", step, CTX)
            h.compensate("schedule.manage", "schedule.manage", step, result, CTX)
            after = listing(h)
            strip = [{k: s[k] for k in s if k != "updatedAt"} for s in after]
            assert strip == [{k: s[k] for k in s if k != "updatedAt"} for s in before], step


# --- memory.access ---------------------------------------------------------------------------


def test_memory_items_are_per_thread(tmp_path: Path) -> None:
    with _open(tmp_path) as h:
        w = h.call(
            "memory.access",
            {"operation": "write", "key": "lang", "value": "fr", "namespace": "fact"},
            CTX,
        )
        assert w == {"key": "lang", "namespace": "fact"}
        auto = h.call(
            "memory.access",
            {"operation": "write", "value": {"n": [1, 2]}, "namespace": "bogus"},
            CTX,
        )
        assert auto["namespace"] == "note" and len(auto["key"]) == 36  # a UUID
        got = h.call("memory.access", {"operation": "read", "key": auto["key"]}, CTX)
        assert got == {"key": auto["key"], "namespace": "note", "value": '{"n":[1,2]}'}
        h.call(
            "memory.access",
            {"operation": "write", "key": "s", "value": 3, "namespace": "summary"},
            CTX,
        )
        facts = h.call("memory.access", {"operation": "list", "namespace": "fact"}, CTX)
        assert facts == {"items": [{"key": "lang", "namespace": "fact", "value": "fr"}]}
        assert len(h.call("memory.access", {"operation": "list"}, CTX)["items"]) == 3
    with _open(tmp_path, thread="th-2") as h:
        assert h.call("memory.access", {"operation": "list"}, CTX) == {"items": []}
        with pytest.raises(HostError, match="no memory item"):
            h.call("memory.access", {"operation": "read", "key": "lang"}, CTX)
        assert h.call("memory.access", {"operation": "delete", "key": "lang"}, CTX) == {
            "key": "lang",
            "deleted": False,
        }
    with _open(tmp_path) as h:
        assert h.call("memory.access", {"operation": "delete", "key": "lang"}, CTX) == {
            "key": "lang",
            "deleted": True,
        }


def test_memory_access_input_errors(tmp_path: Path) -> None:
    with _open(tmp_path) as h:
        for inp in (
            {"operation": "read"},
            {"operation": "delete"},
            {"operation": "write"},
            {"operation": "munch"},
            {"operation": "list", "extra": 1},
        ):
            with pytest.raises(HostError) as info:
                h.call("memory.access", inp, CTX)
            assert info.value.code == "RUN_CAPABILITY_FAILED"


def test_memory_access_compensation_restores(tmp_path: Path) -> None:
    with _open(tmp_path) as h:

        def read(key):
            return h.call("memory.access", {"operation": "read", "key": key}, CTX)["value"]

        h.call("memory.access", {"operation": "write", "key": "k", "value": "old"}, CTX)
        step = {"operation": "write", "key": "k", "value": "new"}
        ctx = CallContext(tool_id="t", tool_version=1, node_id="w")
        res = h.call("memory.access", step, ctx)
        assert read("k") == "new"
        h.compensate("memory.access", "memory.access", step, res, ctx)
        assert read("k") == "old"

        step = {"operation": "write", "key": "fresh", "value": "x"}
        res = h.call("memory.access", step, ctx)
        h.compensate("memory.access", "memory.access", step, res, ctx)
        with pytest.raises(HostError):
            read("fresh")

        step = {"operation": "delete", "key": "k"}
        res = h.call("memory.access", step, ctx)
        h.compensate("memory.access", "memory.access", step, res, ctx)
        assert read("k") == "old"


# --- channel.send ----------------------------------------------------------------------------


def test_channel_send_lands_in_the_outbox_with_its_thread(tmp_path: Path) -> None:
    md = "# Title\n\nSome **bold** and _it_ with [a link](https://example.com) & <tag>\n\n- one\n- two\n"
    with _open(tmp_path) as h:
        out = {}
        for channel in ("general", "text", "web", "team"):
            res = h.call("channel.send", {"channelId": channel, "content": md}, CTX)
            assert set(res) == {"messageId", "channelId"} and res["channelId"] == channel
            out[channel] = res["messageId"]
        with pytest.raises(HostError) as info:
            h.call("channel.send", {"channelId": "nowhere", "content": "x"}, CTX)
        assert "unknown channel" in info.value.message and "general" in info.value.message
        with pytest.raises(HostError):  # the caller cannot name the thread
            h.call("channel.send", {"channelId": "general", "content": "x", "threadId": "t"}, CTX)
    raw = sqlite3.connect(tmp_path / "h.db")
    rows = {
        r[0]: r[1:]
        for r in raw.execute(
            "SELECT channel_id, thread_id, connector, content, markdown FROM messages"
        )
    }
    assert rows["general"][:3] == ("th-1", "outbox", md)
    assert rows["team"][0] == "slack-thread"  # the channel's configured thread
    assert all(r[3] == md for r in rows.values())
    text = rows["text"][2]
    assert "**" not in text and "bold" in text and "a link (https://example.com)" in text
    assert "- one" in text
    html = rows["web"][2]
    assert "<strong>bold</strong>" in html and "&lt;tag&gt;" in html and "<tag>" not in html
    slack = rows["team"][2]
    assert "*bold*" in slack and "<https://example.com|a link>" in slack
    assert "&amp;" in slack and "&lt;tag&gt;" in slack and "*Title*" in slack


SAMPLE = """# Release *notes*

Version **1.2** is out — see [the changelog](https://example.com/log?a=1&b=2).

1. faster `db.query`
2. ~~old flag~~ removed
   - nested <b>bullet</b>

> quoted line

```
code & <stuff>
```
"""


@pytest.mark.parametrize("connector", ["outbox", "plain", "html", "slack"])
def test_connector_renderings(connector: str, snapshot) -> None:
    assert render(SAMPLE, connector) == snapshot


def test_render_connectors_directly() -> None:
    assert render("~~gone~~ `code`", "slack").strip() == "~gone~ `code`"
    assert render("1. a\n2. b", "plain").strip() == "1. a\n2. b"
    assert render("x", "outbox") == "x"


# --- labels ----------------------------------------------------------------------------------


def test_label_matching() -> None:
    assert grants({"channel.send:*"}, "channel.send:general")
    assert grants({"channel.send:general"}, "channel.send:general")
    assert not grants({"channel.send:general"}, "channel.send:other")
    assert not grants({"channel.send:general"}, "channel.send:*")
    assert label_needed("channel.send", {"channelId": "x"}) == "channel.send:x"
    assert label_needed("tasks.list", {}) is None
    assert visible_tools(()) == []
    assert visible_tools({"channel.send:general", "persona.send:*"}) == [
        "channel.send",
        "persona.send",
        "persona.task_status",
        "persona.list",
    ]
    every = {
        "schedule.manage:own",
        "channel.send:*",
        "memory.access:thread",
        "net.http:egress",
        "db.query:own",
        "subagent.invoke",
        "subagent.background",
        "persona.send:*",
    }
    assert len(visible_tools(every)) == 10


def test_labels_checked_at_the_bridge(tmp_path: Path) -> None:
    with _open(tmp_path, labels=("channel.send:general",)) as h:
        assert h.visible_tools() == ["channel.send"]
        h.call("channel.send", {"channelId": "general", "content": "ok"}, CTX)
        calls = [
            ("channel.send", {"channelId": "team", "content": "x"}),
            ("memory.access", {"operation": "list"}),
            ("schedule.manage", {"action": "list"}),
            ("db.query", {"sql": "SELECT * FROM threads"}),
            ("subagent.invoke", {"name": "memory-retriever", "input": {"query": "x"}}),
            ("subagent.background", {"action": "profiles"}),
            ("persona.list", {}),
            ("persona.send", {"target_persona": "x", "message": "y"}),
            ("persona.task_status", {"task_id": "x"}),
            ("net.http", {"method": "GET", "url": "https://example.com"}),
        ]
        for capability, inp in calls:
            with pytest.raises(HostError) as info:
                h.call(capability, inp, CTX)
            assert info.value.code == "RUN_LABEL_DENIED", capability
        # TALOS capabilities need no label
        h.call("tasks.list", {}, CTX)
    raw = sqlite3.connect(tmp_path / "h.db")
    assert [r[0] for r in raw.execute("SELECT channel_id FROM messages")] == ["general"]


def test_memory_write_of_non_string_values(tmp_path: Path) -> None:
    with _open(tmp_path) as h:
        for value, text in ((True, "true"), (None, "null"), ([1, "é"], '[1,"é"]'), (1.5, "1.5")):
            h.call("memory.access", {"operation": "write", "key": "v", "value": value}, CTX)
            got = h.call("memory.access", {"operation": "read", "key": "v"}, CTX)["value"]
            assert got == text and json.loads(got) == value
