"""TALOS capabilities on SQLite: tasks, notes and memories (SPEC §5 inputs and results).

Each handler is registered for its capability (`forgec.host.handlers`) and takes one `HostCall`
whose input the bridge has checked against the row's shape; it returns the JSON result. Writes run in one IMMEDIATE transaction so a crash never leaves a
half-written row. Lists are newest first: by `created_at`, then by insertion order (`seq`) for
rows created in the same millisecond.

`memory.search` ranks with FTS5's `bm25`. The caller's query is never handed to FTS5's query
language (whose syntax errors and column filters a hostile input could abuse): it is split into
words, each quoted as a phrase, joined with OR, and the score is `-bm25` so higher is better.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping
from typing import Any

from forgec.host import handler_errors as v
from forgec.host.db import Tx, new_id, now_iso
from forgec.host.handlers import HostCall, handles


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


@handles("tasks.list")
def tasks_list(call: HostCall) -> dict[str, Any]:
    conn, f = call.conn, call.input
    status = f.get("status")
    query = f.get("query")
    limit = v.whole(f.get("limit"), 50)
    where = [("status = ?", status)] if status is not None else []
    rows = _newest_first(conn, "tasks", where, query, "notes", limit)
    return {"items": [_task(r) for r in rows]}


@handles("tasks.create")
def tasks_create(call: HostCall) -> dict[str, Any]:
    conn, f = call.conn, call.input
    title = f["title"]
    notes = f.get("notes") or ""
    due = f.get("due")
    status = f.get("status") or "open"
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


@handles("tasks.setStatus")
def tasks_set_status(call: HostCall) -> dict[str, Any]:
    cap, conn, f = call.capability, call.conn, call.input
    tid = f["id"]
    status = f["status"]
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


@handles("notes.list")
def notes_list(call: HostCall) -> dict[str, Any]:
    conn, f = call.conn, call.input
    query = f.get("query")
    limit = v.whole(f.get("limit"), 50)
    rows = _newest_first(conn, "notes", [], query, "body", limit)
    return {"items": [_note(r) for r in rows]}


@handles("notes.create")
def notes_create(call: HostCall) -> dict[str, Any]:
    conn, f = call.conn, call.input
    title = f["title"]
    body = f["body"]
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


@handles("notes.update")
def notes_update(call: HostCall) -> dict[str, Any]:
    cap, conn, f = call.capability, call.conn, call.input
    nid = f["id"]
    title = f.get("title")
    body = f.get("body")
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


@handles("memory.search")
def memory_search(call: HostCall) -> dict[str, Any]:
    conn, f = call.conn, call.input
    query = f["query"]
    limit = v.whole(f.get("limit"), 10)
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


@handles("memory.create")
def memory_create(call: HostCall) -> dict[str, Any]:
    conn, f = call.conn, call.input
    text = f["text"]
    tags = list(f.get("tags") or [])
    mid = new_id("mem")
    with Tx(conn):
        conn.execute(
            "INSERT INTO memories (id, text, tags, created_at) VALUES (?, ?, ?, ?)",
            (mid, text, json.dumps(tags, ensure_ascii=False), now_iso()),
        )
    row = conn.execute("SELECT * FROM memories WHERE id = ?", (mid,)).fetchone()
    return _memory(row)


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
    from forgec.host.row_labels import encode_state_labels

    text = json.dumps(state, ensure_ascii=False, separators=(",", ":"))
    with Tx(conn):
        conn.execute(
            "INSERT INTO tool_state (tool_id, state, updated_at, labels) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (tool_id) DO UPDATE SET state = excluded.state,"
            " updated_at = excluded.updated_at, labels = excluded.labels",
            (tool_id, text, now_iso(), encode_state_labels(dict(labels or {}))),
        )
