"""`db.query`: escape and injection attempts all refused; another persona's or thread's rows
never visible; the SQLite authorizer refuses on its own even when the SQL shape checks are
switched off; limits, truncation and the time limit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from forgec.host import HostOptions, dbquery, open_host
from forgec.host.config import ChannelConfig, HostConfig
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="t", tool_version=1, node_id="q")
LABELS = ("db.query:own", "memory.access:thread", "schedule.manage:own", "channel.send:*")


def _open(db: Path, persona: str, thread: str, **config):
    cfg = HostConfig(
        persona=persona, thread=thread, channels={"general": ChannelConfig("general")}, **config
    )
    return open_host(HostOptions(db=db, config=cfg, persona_labels=LABELS))


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "h.db"
    for persona, thread in (("alice", "t1"), ("alice", "t2"), ("bob", "t1"), ("bob", "t9")):
        with _open(path, persona, thread) as h:
            h.call(
                "memory.access",
                {"operation": "write", "key": f"{persona}-{thread}", "value": "secret"},
                CTX,
            )
            h.call(
                "schedule.manage",
                {"action": "create", "cronExpr": "0 9 * * 1", "prompt": f"{persona} weekly"},
                CTX,
            )
            h.call("channel.send", {"channelId": "general", "content": f"hi from {persona}"}, CTX)
    return path


@pytest.fixture
def alice(db: Path):
    h = _open(db, "alice", "t1")
    yield h
    h.close()


def q(host, sql: str, **extra):
    return host.call("db.query", {"sql": sql, **extra}, CTX)


def test_scoped_to_the_persona_and_thread(alice) -> None:
    rows = q(alice, "SELECT key, persona, thread_id FROM memory_items")["rows"]
    assert rows == [{"key": "alice-t1", "persona": "alice", "thread_id": "t1"}]
    # scoping is injected: asking for another persona's rows gets nothing
    assert q(alice, "SELECT * FROM memory_items WHERE persona = 'bob' OR 1 = 1")["rows"] == [
        q(alice, "SELECT * FROM memory_items")["rows"][0]
    ]
    prompts = {r["prompt"] for r in q(alice, "select prompt from schedules")["rows"]}
    assert prompts == {"alice weekly"}  # the persona's schedules of every thread, no others
    assert len(q(alice, "SELECT * FROM schedules")["rows"]) == 2
    messages = q(alice, "SELECT content, thread_id FROM messages")["rows"]
    assert messages == [{"content": "hi from alice", "thread_id": "t1"}]
    threads = {r["id"] for r in q(alice, "SELECT id FROM threads")["rows"]}
    assert "t9" not in threads


def test_joins_among_allowed_tables_stay_scoped(alice) -> None:
    rows = q(
        alice,
        "SELECT m.key, t.id AS thread FROM memory_items m JOIN threads t ON t.id = m.thread_id;",
    )["rows"]
    assert rows == [{"key": "alice-t1", "thread": "t1"}]


ATTACKS = [
    "DELETE FROM memory_items",
    "UPDATE memory_items SET value = 'x'",
    "INSERT INTO memory_items (key) VALUES ('x')",
    "DROP TABLE memory_items",
    "CREATE TABLE x (a)",
    "ATTACH DATABASE '/tmp/forgec-evil.db' AS evil",
    "DETACH DATABASE main",
    "PRAGMA table_info(memory_items)",
    "PRAGMA writable_schema = 1",
    "VACUUM",
    "SELECT * FROM pragma_table_info('tasks')",
    "SELECT * FROM tasks",
    "SELECT * FROM sqlite_master",
    "SELECT * FROM sqlite_temp_master",
    "SELECT * FROM memory_items_fts",
    "SELECT * FROM main.memory_items",
    "SELECT * FROM temp.memory_items",
    "SELECT 1; DELETE FROM memory_items",
    "SELECT * FROM memory_items; DROP TABLE memory_items;",
    "SELECT * FROM memory_items -- comment\n; DELETE FROM memory_items",
    "SELECT * FROM memory_items /* ; */ ; DELETE FROM memory_items",
    "SELECT * FROM memory_items WHERE key = ''; DELETE FROM memory_items; --'",
    "SELECT key FROM memory_items UNION SELECT title FROM tasks",
    "SELECT key FROM memory_items UNION ALL SELECT key FROM memory_items",
    "SELECT key FROM memory_items EXCEPT SELECT key FROM memory_items",
    "WITH x AS (SELECT * FROM main.memory_items) SELECT * FROM x",
    "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c) SELECT * FROM c",
    "SELECT * FROM memory_items WHERE key IN (SELECT key FROM main.memory_items)",
    "SELECT (SELECT value FROM main.memory_items LIMIT 1)",
    "SELECT * FROM (SELECT * FROM main.memory_items)",
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT readfile('/etc/passwd')",
    "SELECT * FROM json_each('[1]')",
    "REPLACE INTO memory_items (key) VALUES ('x')",
    "SELECT * FROM memory_items INTO evil",
    "",
    "   ",
    "SELECT",
]


@pytest.mark.parametrize("sql", ATTACKS)
def test_attacks_are_refused(alice, db: Path, sql: str) -> None:
    before = sqlite3.connect(db).execute("SELECT COUNT(*) FROM memory_items").fetchone()[0]
    with pytest.raises(HostError) as info:
        q(alice, sql)
    assert info.value.code == "RUN_CAPABILITY_FAILED" and info.value.message
    after = sqlite3.connect(db).execute("SELECT COUNT(*) FROM memory_items").fetchone()[0]
    assert before == after == 4


AUTHORIZER_ONLY = [
    "DELETE FROM memory_items",
    "SELECT * FROM main.memory_items",
    "SELECT * FROM tasks",
    "SELECT * FROM sqlite_master",
    "PRAGMA table_info(memory_items)",
    "ATTACH DATABASE ':memory:' AS evil",
    "SELECT load_extension('/tmp/evil.so')",
    "SELECT * FROM pragma_table_info('tasks')",
    "SELECT * FROM memory_items WHERE key IN (SELECT key FROM main.memory_items)",
    "WITH x AS (SELECT * FROM main.memory_items) SELECT * FROM x",
    "CREATE TEMP TABLE x (a)",
    "DROP VIEW memory_items",
]


@pytest.mark.parametrize("sql", AUTHORIZER_ONLY)
def test_authorizer_refuses_even_without_the_shape_check(db: Path, sql: str, monkeypatch) -> None:
    monkeypatch.setattr(dbquery, "check_sql", lambda s: [])
    with pytest.raises(HostError) as info:
        dbquery.run_query(db, {"sql": sql}, persona="alice", thread="t1")
    assert info.value.code == "RUN_CAPABILITY_FAILED"
    assert sqlite3.connect(db).execute("SELECT COUNT(*) FROM memory_items").fetchone()[0] == 4


def test_without_shape_check_scoping_still_holds(db: Path, monkeypatch) -> None:
    monkeypatch.setattr(dbquery, "check_sql", lambda s: [])
    rows = dbquery.run_query(
        db,
        {"sql": "SELECT key FROM memory_items UNION SELECT key FROM memory_items"},
        persona="bob",
        thread="t9",
    )["rows"]
    assert rows == [{"key": "bob-t9"}]


def _add_alice_items(db: Path, keys: list[str]) -> None:
    """Memory items of alice's thread t1, written straight into the database."""
    raw = sqlite3.connect(db)
    raw.executemany(
        "INSERT INTO memory_items (id, persona, thread_id, key, type, value, created_at,"
        " updated_at) VALUES (?, 'alice', 't1', ?, 'note', 'v', 'now', 'now')",
        [(f"id{i}", key) for i, key in enumerate(keys)],
    )
    raw.commit()
    raw.close()


def test_params_limit_and_truncation(db: Path) -> None:
    _add_alice_items(db, [f"k{i:04d}" for i in range(1200)])
    with _open(db, "alice", "t1") as h:
        res = q(h, "SELECT key FROM memory_items ORDER BY key")
        assert len(res["rows"]) == 100 and res["truncated"] is True
        res = q(h, "SELECT key FROM memory_items", limit=5000)  # a computed limit is capped
        assert len(res["rows"]) == 1000 and res["truncated"] is True
        res = q(h, "SELECT key FROM memory_items WHERE key = ?", params=["k0007"])
        assert res == {"rows": [{"key": "k0007"}], "truncated": False}
        res = q(h, "SELECT count(*) AS n, max(key) AS top FROM memory_items")
        assert res["rows"] == [{"n": 1201, "top": "k1199"}]
        with pytest.raises(HostError):
            q(h, "SELECT key FROM memory_items WHERE key = ?", params=[{"x": 1}])
        with pytest.raises(HostError):
            q(h, "SELECT key FROM memory_items WHERE key = ?", params=[])


def test_slow_query_is_stopped(db: Path) -> None:
    _add_alice_items(db, [f"k{i}" for i in range(200)])
    with _open(db, "alice", "t1", db_query_time_ms=100) as h, pytest.raises(HostError) as info:
        q(h, "SELECT count(*) FROM memory_items a, memory_items b, memory_items c, memory_items d")
    assert "time limit of 100 ms" in info.value.message


def test_label_needed(db: Path) -> None:
    cfg = HostConfig(persona="alice", thread="t1")
    with open_host(HostOptions(db=db, config=cfg, persona_labels=())) as h:
        with pytest.raises(HostError) as info:
            q(h, "SELECT * FROM threads")
        assert info.value.code == "RUN_LABEL_DENIED"
