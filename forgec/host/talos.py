"""TALOS capabilities on SQLite: tasks, notes and memories (SPEC §5 inputs and results).

Each handler takes the connection and the already size-checked input, checks every field again
and returns the JSON result. Writes run in one IMMEDIATE transaction so a crash never leaves a
half-written row. Lists are newest first: by `created_at`, then by insertion order (`seq`) for
rows created in the same millisecond.

`memory.search` ranks with FTS5's `bm25`. The caller's query is never handed to FTS5's query
language (whose syntax errors and column filters a hostile input could abuse): it is split into
words, each quoted as a phrase, joined with OR, and the score is `-bm25` so higher is better.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
import sqlite3
from collections.abc import Mapping
from typing import Any

from forgec.host import validate as v
from forgec.host.db import Tx, new_id, now_iso
from forgec.runtime.talos_facts import TASK_STATUSES


def _task(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "title": row["title"],
        "notes": row["notes"],
        "due": row["due"],
        "status": row["status"],
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def _note(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "title": row["title"],
        "body": row["body"],
        "createdAt": row["created_at"],
        "updatedAt": row["updated_at"],
    }


def _memory(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "text": row["text"],
        "tags": json.loads(row["tags"]),
        "createdAt": row["created_at"],
    }


def _like(text: str) -> str:
    """A LIKE pattern matching `text` as a plain substring (escape `%`, `_`, `\\`)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _newest_first(
    conn: sqlite3.Connection,
    table: str,
    where: list[tuple[str, Any]],
    query: str | None,
    text_column: str,
    limit: int,
) -> list[sqlite3.Row]:
    """Rows of `table` (tasks or notes) newest first, passing each `where` condition and, with
    a query, holding it in the title or `text_column`. Table and column names are ours."""
    sql = f"SELECT * FROM {table} WHERE 1=1"
    args: list[Any] = []
    for condition, value in where:
        sql += f" AND {condition}"
        args.append(value)
    if query:
        # SQLite's LIKE and lower() fold ASCII only: compare Unicode-casefolded text instead
        sql += (
            " AND (forgec_casefold(title) LIKE ? ESCAPE '\\'"
            f" OR forgec_casefold({text_column}) LIKE ? ESCAPE '\\')"
        )
        pattern = _like(query.casefold())
        args += [pattern, pattern]
    sql += " ORDER BY created_at DESC, seq DESC LIMIT ?"
    args.append(limit)
    return conn.execute(sql, args).fetchall()


def _due(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError(value)
        _dt.date.fromisoformat(value)
    except ValueError:
        v.fail(f"tasks.create: `due` must be an ISO 8601 date (YYYY-MM-DD), not {value!r}")
    return value


def tasks_list(conn: sqlite3.Connection, inp: Any) -> dict[str, Any]:
    cap = "tasks.list"
    f = v.fields(cap, inp, allowed={"status", "query", "limit"})
    status = v.string(cap, f, "status", choices=TASK_STATUSES)
    query = v.string(cap, f, "query", max_len=500)
    limit = v.integer(cap, f, "limit", default=50, low=1, high=100)
    where = [("status = ?", status)] if status is not None else []
    rows = _newest_first(conn, "tasks", where, query, "notes", limit)
    return {"items": [_task(r) for r in rows]}


def tasks_create(conn: sqlite3.Connection, inp: Any) -> dict[str, Any]:
    cap = "tasks.create"
    f = v.fields(cap, inp, allowed={"title", "notes", "due", "status"}, required=("title",))
    title = v.req_string(cap, f, "title", min_len=1, max_len=200)
    notes = v.string(cap, f, "notes", default="") or ""
    due = _due(v.string(cap, f, "due"))
    status = v.string(cap, f, "status", default="open", choices=TASK_STATUSES) or "open"
    now = now_iso()
    tid = new_id("task")
    with Tx(conn):
        conn.execute(
            "INSERT INTO tasks (id, title, notes, due, status, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (tid, title, notes, due, status, now, now),
        )
    return get_task(conn, tid)


def get_task(conn: sqlite3.Connection, task_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM tasks WHERE id = ?", (task_id,)).fetchone()
    if row is None:
        v.fail(f"no task with id {task_id!r}")
    return _task(row)


def tasks_set_status(conn: sqlite3.Connection, inp: Any) -> dict[str, Any]:
    cap = "tasks.setStatus"
    f = v.fields(cap, inp, allowed={"id", "status"}, required=("id", "status"))
    tid = v.req_string(cap, f, "id", min_len=1, max_len=200)
    status = v.req_string(cap, f, "status", choices=TASK_STATUSES)
    with Tx(conn):
        row = conn.execute("SELECT status FROM tasks WHERE id = ?", (tid,)).fetchone()
        if row is None:
            v.fail(f"{cap}: no task with id {tid!r}")
        previous = row["status"]
        conn.execute(
            "UPDATE tasks SET status = ?, updated_at = ? WHERE id = ?", (status, now_iso(), tid)
        )
    task = get_task(conn, tid)
    task["previousStatus"] = previous
    return task


def notes_list(conn: sqlite3.Connection, inp: Any) -> dict[str, Any]:
    cap = "notes.list"
    f = v.fields(cap, inp, allowed={"query", "limit"})
    query = v.string(cap, f, "query", max_len=500)
    limit = v.integer(cap, f, "limit", default=50, low=1, high=100)
    rows = _newest_first(conn, "notes", [], query, "body", limit)
    return {"items": [_note(r) for r in rows]}


def notes_create(conn: sqlite3.Connection, inp: Any) -> dict[str, Any]:
    cap = "notes.create"
    f = v.fields(cap, inp, allowed={"title", "body"}, required=("title", "body"))
    title = v.req_string(cap, f, "title", min_len=1, max_len=200)
    body = v.req_string(cap, f, "body")
    now = now_iso()
    nid = new_id("note")
    with Tx(conn):
        conn.execute(
            "INSERT INTO notes (id, title, body, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
            (nid, title, body, now, now),
        )
    return get_note(conn, nid)


def get_note(conn: sqlite3.Connection, note_id: str) -> dict[str, Any]:
    row = conn.execute("SELECT * FROM notes WHERE id = ?", (note_id,)).fetchone()
    if row is None:
        v.fail(f"no note with id {note_id!r}")
    return _note(row)


def notes_update(conn: sqlite3.Connection, inp: Any) -> dict[str, Any]:
    cap = "notes.update"
    f = v.fields(cap, inp, allowed={"id", "title", "body"}, required=("id",))
    nid = v.req_string(cap, f, "id", min_len=1, max_len=200)
    title = v.string(cap, f, "title", min_len=1, max_len=200)
    body = v.string(cap, f, "body")
    with Tx(conn):
        row = conn.execute("SELECT title, body FROM notes WHERE id = ?", (nid,)).fetchone()
        if row is None:
            v.fail(f"{cap}: no note with id {nid!r}")
        previous = {"title": row["title"], "body": row["body"]}
        conn.execute(
            "UPDATE notes SET title = ?, body = ?, updated_at = ? WHERE id = ?",
            (
                title if title is not None else row["title"],
                body if body is not None else row["body"],
                now_iso(),
                nid,
            ),
        )
    note = get_note(conn, nid)
    note["previous"] = previous
    return note


_WORD = re.compile(r"\w+", re.UNICODE)


def fts_query(text: str) -> str | None:
    """A safe FTS5 MATCH expression: each word a quoted phrase, joined with OR."""
    words = _WORD.findall(text)[:32]
    if not words:
        return None
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def memory_search(conn: sqlite3.Connection, inp: Any) -> dict[str, Any]:
    cap = "memory.search"
    f = v.fields(cap, inp, allowed={"query", "limit"}, required=("query",))
    query = v.req_string(cap, f, "query", max_len=500)
    limit = v.integer(cap, f, "limit", default=10, low=1, high=50)
    match = fts_query(query)
    if match is None:
        return {"items": []}
    rows = conn.execute(
        "SELECT m.id, m.text, -bm25(memories_fts) AS score FROM memories_fts"
        " JOIN memories m ON m.seq = memories_fts.rowid"
        " WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts), m.seq DESC LIMIT ?",
        (match, limit),
    ).fetchall()
    return {"items": [{"id": r["id"], "text": r["text"], "score": float(r["score"])} for r in rows]}


def memory_create(conn: sqlite3.Connection, inp: Any) -> dict[str, Any]:
    cap = "memory.create"
    f = v.fields(cap, inp, allowed={"text", "tags"}, required=("text",))
    text = v.req_string(cap, f, "text", min_len=1)
    tags = f.get("tags")
    if tags is None:
        tags = []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        v.fail(f"{cap}: `tags` must be a list of strings")
    mid = new_id("mem")
    with Tx(conn):
        conn.execute(
            "INSERT INTO memories (id, text, tags, created_at) VALUES (?, ?, ?, ?)",
            (mid, text, json.dumps(tags, ensure_ascii=False), now_iso()),
        )
    row = conn.execute("SELECT * FROM memories WHERE id = ?", (mid,)).fetchone()
    return _memory(row)


HANDLERS = {
    "tasks.list": tasks_list,
    "tasks.create": tasks_create,
    "tasks.setStatus": tasks_set_status,
    "notes.list": notes_list,
    "notes.create": notes_create,
    "notes.update": notes_update,
    "memory.search": memory_search,
    "memory.create": memory_create,
}


def load_state(conn: sqlite3.Connection, tool_id: str) -> dict[str, Any] | None:
    row = conn.execute("SELECT state FROM tool_state WHERE tool_id = ?", (tool_id,)).fetchone()
    if row is None:
        return None
    value = json.loads(row["state"])
    return value if isinstance(value, dict) else None


def save_state(
    conn: sqlite3.Connection,
    tool_id: str,
    state: Mapping[str, Any],
    labels: Mapping[str, Any] | None = None,
) -> None:
    """The state and, in the same transaction, its fields' labels (SPEC §15)."""
    from forgec.host.labels import encode_state_labels

    text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    with Tx(conn):
        conn.execute(
            "INSERT INTO tool_state (tool_id, state, updated_at, labels) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (tool_id) DO UPDATE SET state = excluded.state,"
            " updated_at = excluded.updated_at, labels = excluded.labels",
            (tool_id, text, now_iso(), encode_state_labels(dict(labels or {}))),
        )
