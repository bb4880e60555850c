"""The in-memory host: SPEC §5 inputs and results, checks at the bridge, undo logic, hooks."""

from __future__ import annotations

from typing import Any

import pytest

from forgec.runtime import CallContext, Host, HostError
from forgec.runtime.memory_host import MemoryHost

CTX = CallContext(tool_id="t", tool_version=1, node_id="n")


def make() -> MemoryHost:
    ticks = iter(f"2026-01-01T00:00:{i:02d}Z" for i in range(60))
    return MemoryHost(clock=lambda: next(ticks))


def test_it_implements_the_host_protocol() -> None:
    assert isinstance(MemoryHost(), Host)


def test_tasks_create_defaults_and_list_order() -> None:
    h = make()
    a = h.call("tasks.create", {"title": "Buy milk"}, CTX)
    assert a == {
        "id": "task-1",
        "title": "Buy milk",
        "notes": "",
        "due": None,
        "status": "open",
        "createdAt": "2026-01-01T00:00:00Z",
        "updatedAt": "2026-01-01T00:00:00Z",
    }
    h.call("tasks.create", {"title": "Call Ada", "notes": "about MILK", "due": "2026-02-01"}, CTX)
    h.call("tasks.create", {"title": "Done", "status": "done"}, CTX)
    listed = h.call("tasks.list", {}, CTX)["items"]
    assert [t["title"] for t in listed] == ["Done", "Call Ada", "Buy milk"]  # newest first
    found = h.call("tasks.list", {"query": "milk", "status": "open"}, CTX)["items"]
    assert [t["title"] for t in found] == ["Call Ada", "Buy milk"]  # case-insensitive, notes too
    assert len(h.call("tasks.list", {"limit": 1}, CTX)["items"]) == 1


def test_same_timestamp_lists_the_later_created_first() -> None:
    h = MemoryHost(clock=lambda: "2026-01-01T00:00:00Z")
    for title in ("a", "b", "c"):
        h.call("tasks.create", {"title": title}, CTX)
    assert [t["title"] for t in h.call("tasks.list", {}, CTX)["items"]] == ["c", "b", "a"]


@pytest.mark.parametrize(
    ("capability", "input", "words"),
    [
        ("tasks.create", {"titel": "x"}, "unknown field `titel` (did you mean `title`?)"),
        ("tasks.create", {}, "missing required field `title`"),
        ("tasks.create", {"title": ""}, "`title` must not be empty"),
        ("tasks.create", {"title": "x", "due": "tomorrow"}, "not a date"),
        ("tasks.create", {"title": "x", "status": "maybe"}, "status"),
        ("tasks.list", {"limit": 0}, "limit"),
        ("tasks.list", {"limit": True}, "must be an integer, not a boolean"),
        ("tasks.setStatus", {"id": "nope", "status": "done"}, "no task"),
        ("notes.update", {"id": "nope"}, "no note"),
        ("memory.create", {"text": "x", "tags": [1]}, "tags"),
        ("tasks.list", {"query": "x" * 1100}, "limit of 1024 bytes"),
        ("net.http", {}, "does not provide"),
        ("tasks.list", [], "must be an object"),
    ],
)
def test_inputs_are_checked_at_the_bridge(capability: str, input: Any, words: str) -> None:
    with pytest.raises(HostError) as info:
        make().call(capability, input, CTX)
    assert info.value.code == "RUN_CAPABILITY_FAILED" and words in info.value.message
    assert not info.value.transient


def test_set_status_and_note_update_report_what_they_replaced() -> None:
    h = make()
    task = h.call("tasks.create", {"title": "x"}, CTX)
    changed = h.call("tasks.setStatus", {"id": task["id"], "status": "done"}, CTX)
    assert changed["status"] == "done" and changed["previousStatus"] == "open"
    note = h.call("notes.create", {"title": "t", "body": "b"}, CTX)
    updated = h.call("notes.update", {"id": note["id"], "body": "B"}, CTX)
    assert updated["body"] == "B" and updated["previous"] == {"title": "t", "body": "b"}


def test_compensations_follow_the_undo_pairs() -> None:
    h = make()
    made = h.call("tasks.create", {"title": "x"}, CTX)
    h.compensate("tasks.setStatus", "tasks.create", {"title": "x"}, made, CTX)
    assert h.tasks[made["id"]]["status"] == "cancelled"
    changed = h.call("tasks.setStatus", {"id": made["id"], "status": "done"}, CTX)
    h.compensate("tasks.setStatus", "tasks.setStatus", {}, changed, CTX)
    assert h.tasks[made["id"]]["status"] == "cancelled"
    note = h.call("notes.create", {"title": "t", "body": "b"}, CTX)
    updated = h.call("notes.update", {"id": note["id"], "title": "T", "body": "B"}, CTX)
    h.compensate("notes.update", "notes.update", {}, updated, CTX)
    assert (h.notes[note["id"]]["title"], h.notes[note["id"]]["body"]) == ("t", "b")
    with pytest.raises(HostError, match="cannot undo"):
        h.compensate("notes.update", "tasks.create", {}, made, CTX)


def test_memory_search_ranks_by_matches() -> None:
    h = make()
    h.call("memory.create", {"text": "tea is nice"}, CTX)
    h.call("memory.create", {"text": "tea tea every day", "tags": ["drink"]}, CTX)
    h.call("memory.create", {"text": "coffee"}, CTX)
    items = h.call("memory.search", {"query": "tea"}, CTX)["items"]
    assert [i["text"] for i in items] == ["tea tea every day", "tea is nice"]
    assert items[0]["score"] > items[1]["score"]
    assert h.memories["mem-3"]["tags"] == []


def test_failure_injection_is_queued_and_counted() -> None:
    h = make()
    h.fail("tasks.list", transient=True, times=2)
    h.fail("tasks.list", code="RUN_LABEL_DENIED")
    for expected in (True, True, False):
        with pytest.raises(HostError) as info:
            h.call("tasks.list", {}, CTX)
        assert info.value.transient is expected
    assert info.value.code == "RUN_LABEL_DENIED"
    assert h.call("tasks.list", {}, CTX) == {"items": []}
    assert len(h.calls_of("tasks.list")) == 4


def test_state_and_credentials() -> None:
    h = MemoryHost(credentials=["gh"])
    assert h.has_credential("gh") and not h.has_credential("other")
    assert h.load_state("t") is None
    h.save_state("t", {"n": 1})
    loaded = h.load_state("t")
    assert loaded == {"n": 1}
    assert loaded is not None
    loaded["n"] = 2  # a copy: the host's state changes only through save_state
    assert h.states["t"] == {"n": 1}


def test_model_answers_are_scripted_and_privacy_checked() -> None:
    h = MemoryHost()
    h.script_model("first", {"second": True})
    assert h.model("generate", {}, {}, None, CTX) == "first"
    assert h.model("generate", {}, {}, None, CTX) == {"second": True}
    with pytest.raises(HostError, match="no model"):
        h.model("generate", {}, {}, None, CTX)
    remote = MemoryHost(model_is_local=False)
    remote.script_model("x")
    with pytest.raises(HostError) as info:
        remote.model("generate", {}, {"privacy": "local-only"}, None, CTX)
    assert info.value.code == "RUN_PRIVACY"
    assert remote.model("generate", {}, {"privacy": "local-preferred"}, None, CTX) == "x"
