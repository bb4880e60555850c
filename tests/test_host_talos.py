"""The reference host's TALOS capabilities on a real SQLite file: results, order, limits,
compensations that really restore state, tool state, migrations and the default location."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forgec.host import HostOptions, open_host
from forgec.host.db import SCHEMA_VERSION, DatabaseError, connect
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="t", tool_version=1, node_id="n")


@pytest.fixture
def host(tmp_path: Path):
    h = open_host(HostOptions(db=tmp_path / "host.db"))
    yield h
    h.close()


def test_task_defaults_and_set_status(host) -> None:
    task = host.call("tasks.create", {"title": "Buy milk"}, CTX)
    assert task["notes"] == "" and task["due"] is None and task["status"] == "open"
    assert task["id"].startswith("task_")
    assert task["createdAt"].endswith("Z") and "T" in task["createdAt"]
    done = host.call("tasks.setStatus", {"id": task["id"], "status": "done"}, CTX)
    assert done["status"] == "done" and done["previousStatus"] == "open"
    assert host.call("tasks.list", {"status": "done"}, CTX)["items"][0]["id"] == task["id"]
    assert host.call("tasks.list", {"status": "open"}, CTX)["items"] == []


def test_task_list_query_is_case_insensitive_substring_of_title_or_notes(host) -> None:
    a = host.call("tasks.create", {"title": "Call the ÉCOLE", "notes": ""}, CTX)
    b = host.call("tasks.create", {"title": "Other", "notes": "remember 100% of it"}, CTX)
    host.call("tasks.create", {"title": "Unrelated"}, CTX)
    assert [t["id"] for t in host.call("tasks.list", {"query": "école"}, CTX)["items"]] == [a["id"]]
    # LIKE wildcards in the query are plain characters
    assert [t["id"] for t in host.call("tasks.list", {"query": "100%"}, CTX)["items"]] == [b["id"]]
    assert host.call("tasks.list", {"query": "_"}, CTX)["items"] == []


def test_tasks_list_newest_first_then_later_created_first(host) -> None:
    ids = [host.call("tasks.create", {"title": f"t{i}"}, CTX)["id"] for i in range(5)]
    listed = [t["id"] for t in host.call("tasks.list", {}, CTX)["items"]]
    assert listed == list(reversed(ids))  # same-millisecond rows too
    assert len(host.call("tasks.list", {"limit": 2}, CTX)["items"]) == 2


def test_bad_inputs_are_clear_run_errors(host) -> None:
    cases = [
        ("tasks.create", {"title": ""}),
        ("tasks.create", {"title": "x" * 201}),
        ("tasks.create", {"title": "x", "colour": "red"}),
        ("tasks.create", {"title": "x", "due": "tomorrow"}),
        ("tasks.create", {"title": "x", "status": "maybe"}),
        ("tasks.setStatus", {"id": "task_nope", "status": "done"}),
        ("tasks.list", {"limit": 101}),
        ("notes.update", {"id": "note_nope", "title": "x"}),
        ("memory.create", {"text": "x", "tags": "notalist"}),
        ("nope.nothing", {}),
    ]
    for capability, inp in cases:
        with pytest.raises(HostError) as info:
            host.call(capability, inp, CTX)
        assert info.value.code == "RUN_CAPABILITY_FAILED", (capability, inp)
        assert info.value.message


def test_input_size_limits(host) -> None:
    with pytest.raises(HostError) as info:
        host.call("tasks.list", {"query": "x" * 2000}, CTX)
    assert info.value.code == "RUN_CAPABILITY_FAILED" and "1024" in info.value.message
    with pytest.raises(HostError):
        host.call("tasks.create", {"title": "t", "notes": "n" * (17 * 1024)}, CTX)
    # just under the 16 KiB limit of tasks.create is fine
    host.call("tasks.create", {"title": "t", "notes": "n" * (16 * 1024 - 40)}, CTX)


def test_notes_update_returns_previous_and_compensation_restores(host) -> None:
    note = host.call("notes.create", {"title": "Plan", "body": "v1"}, CTX)
    updated = host.call("notes.update", {"id": note["id"], "body": "v2"}, CTX)
    assert updated["title"] == "Plan" and updated["body"] == "v2"
    assert updated["previous"] == {"title": "Plan", "body": "v1"}
    host.compensate("notes.update", "notes.update", {"id": note["id"], "body": "v2"}, updated, CTX)
    items = host.call("notes.list", {"query": "plan"}, CTX)["items"]
    assert [(n["title"], n["body"]) for n in items] == [("Plan", "v1")]


def test_task_compensations_restore_state(host) -> None:
    created = host.call("tasks.create", {"title": "Temp"}, CTX)
    host.compensate("tasks.setStatus", "tasks.create", {"title": "Temp"}, created, CTX)
    assert host.call("tasks.list", {"query": "temp"}, CTX)["items"][0]["status"] == "cancelled"

    other = host.call("tasks.create", {"title": "Keep"}, CTX)
    changed = host.call("tasks.setStatus", {"id": other["id"], "status": "done"}, CTX)
    host.compensate("tasks.setStatus", "tasks.setStatus", {}, changed, CTX)
    assert host.call("tasks.list", {"query": "keep"}, CTX)["items"][0]["status"] == "open"

    with pytest.raises(HostError):  # not an undo pair
        host.compensate("notes.update", "tasks.create", {}, created, CTX)


def test_memory_search_is_ranked_full_text(host) -> None:
    host.call("memory.create", {"text": "The cat sleeps on the sofa"}, CTX)
    best = host.call("memory.create", {"text": "cat food: the cat eats fish, cat loves fish"}, CTX)
    host.call("memory.create", {"text": "Dentist appointment on Monday", "tags": ["health"]}, CTX)
    items = host.call("memory.search", {"query": "cat fish"}, CTX)["items"]
    assert items[0]["id"] == best["id"]
    assert len(items) == 2 and items[0]["score"] >= items[1]["score"]
    assert set(items[0]) == {"id", "text", "score"}
    # FTS5 syntax in the query is plain text, never an error
    for hostile in ['"unclosed', "text:cat", "NEAR(", "*", "cat AND OR NOT", ")"]:
        host.call("memory.search", {"query": hostile}, CTX)
    assert host.call("memory.search", {"query": "!!!"}, CTX) == {"items": []}


def test_memory_create_tags_default(host) -> None:
    mem = host.call("memory.create", {"text": "x"}, CTX)
    assert mem["tags"] == [] and set(mem) == {"id", "text", "tags", "createdAt"}


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=80))
def test_memory_search_never_crashes(tmp_path_factory, query: str) -> None:
    db = tmp_path_factory.mktemp("fts") / "h.db"
    with open_host(HostOptions(db=db)) as h:
        h.call("memory.create", {"text": "alpha beta gamma"}, CTX)
        try:
            result = h.call("memory.search", {"query": query}, CTX)
        except HostError as exc:  # a refusal is fine (empty query); a crash is not
            assert exc.code == "RUN_CAPABILITY_FAILED" and exc.message
        else:
            assert isinstance(result["items"], list)


def test_state_round_trip_and_persists(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with open_host(HostOptions(db=db)) as h:
        assert h.load_state("tool.a") is None
        h.save_state("tool.a", {"count": 1, "names": ["é"]})
        h.save_state("tool.a", {"count": 2, "names": ["é"]})
    with open_host(HostOptions(db=db)) as h:
        assert h.load_state("tool.a") == {"count": 2, "names": ["é"]}
        assert h.load_state("tool.b") is None


def test_migrations_are_versioned_and_wal(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    conn = connect(db)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations")]
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    conn.close()
    connect(db).close()  # reopening applies nothing twice
    raw = sqlite3.connect(db)
    assert raw.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == SCHEMA_VERSION
    raw.execute("INSERT INTO schema_migrations VALUES (999, 'future')")
    raw.commit()
    raw.close()
    with pytest.raises(DatabaseError, match="newer"):
        connect(db)


def test_default_database_is_in_the_user_data_dir(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with open_host(HostOptions()) as h:
        h.call("tasks.create", {"title": "x"}, CTX)
        assert h.db_path == (tmp_path / "data" / "forgec" / "host.db").resolve()
    assert (tmp_path / "data" / "forgec" / "host.db").is_file()


def test_two_hosts_share_one_database(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with open_host(HostOptions(db=db)) as a, open_host(HostOptions(db=db)) as b:
        made = a.call("tasks.create", {"title": "shared"}, CTX)
        time.sleep(0.01)
        assert b.call("tasks.list", {}, CTX)["items"][0]["id"] == made["id"]
