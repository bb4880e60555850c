"""`memory.access`: per-thread memory items of the current persona (`memory_items`).

A key is unique within (persona, thread). `namespace` maps to the item type: `fact`,
`summary` or `note`; any other value falls back to `note`, as the seed says. A write without a
key gets a fresh UUID; a non-string value is stored as its compact JSON text. `list` may be
narrowed by namespace. Results follow SPEC §13.

`snapshot` and `put_back` serve the compensation: the bridge records the item as it was before
a write or delete and, when the run fails, puts exactly that back (or removes the item a write
created).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Mapping
from typing import Any

from forgec.host import handler_errors as v
from forgec.host.db import Tx, new_id, now_iso
from forgec.host.handlers import HostCall, handles
from forgec.ir.hooks import row_hook

CAP = "memory.access"
TYPES = ("fact", "summary", "note")


def namespace_of(value: str | None) -> str:
    if value is None:
        return "note"
    lowered = value.strip().lower()
    # accept the plural spelling too ("facts", "notes", "summaries")
    plural = {"facts": "fact", "summaries": "summary", "notes": "note"}
    lowered = plural.get(lowered, lowered)
    return lowered if lowered in TYPES else "note"


def _ensure_thread(conn: sqlite3.Connection, persona: str, thread: str) -> None:
    conn.execute(
        "INSERT INTO threads (id, persona, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
        (thread, persona, now_iso()),
    )


def snapshot(
    conn: sqlite3.Connection, persona: str, thread: str, key: str
) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT key, type, value FROM memory_items WHERE persona = ? AND thread_id = ? AND key = ?",
        (persona, thread, key),
    ).fetchone()
    if row is None:
        return None
    return {"key": row["key"], "namespace": row["type"], "value": row["value"]}


def put_back(
    conn: sqlite3.Connection, persona: str, thread: str, key: str, item: dict[str, Any] | None
) -> None:
    """Make the item `key` be `item` again (None: it did not exist)."""
    with Tx(conn):
        if item is None:
            conn.execute(
                "DELETE FROM memory_items WHERE persona = ? AND thread_id = ? AND key = ?",
                (persona, thread, key),
            )
        else:
            _upsert(conn, persona, thread, key, item["namespace"], item["value"])


def _upsert(
    conn: sqlite3.Connection, persona: str, thread: str, key: str, kind: str, text: str
) -> None:
    _ensure_thread(conn, persona, thread)
    now = now_iso()
    conn.execute(
        "INSERT INTO memory_items (id, persona, thread_id, key, type, value, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (persona, thread_id, key) DO UPDATE SET type = excluded.type,"
        " value = excluded.value, updated_at = excluded.updated_at",
        (new_id("mi"), persona, thread, key, kind, text, now, now),
    )


def access(
    conn: sqlite3.Connection, inp: Mapping[str, Any], *, persona: str, thread: str
) -> tuple[dict[str, Any], tuple[str, dict[str, Any] | None] | None]:
    """(result, undo record) — the undo record is (key, item before) for write and delete."""
    f = inp
    op = f["operation"]
    key = f.get("key")
    ns_given = f.get("namespace")

    if op == "list":
        sql = "SELECT key, type, value FROM memory_items WHERE persona = ? AND thread_id = ?"
        args: list[Any] = [persona, thread]
        if ns_given is not None:
            sql += " AND type = ?"
            args.append(namespace_of(ns_given))
        rows = conn.execute(sql + " ORDER BY seq", args).fetchall()
        items = [{"key": r["key"], "namespace": r["type"], "value": r["value"]} for r in rows]
        return {"items": items}, None
    if op == "read":
        assert key is not None
        item = snapshot(conn, persona, thread, key)
        if item is None:
            v.fail(f"{CAP}: no memory item {key!r} in this thread")
        return item, None
    if op == "delete":
        assert key is not None
        with Tx(conn):
            before = snapshot(conn, persona, thread, key)
            conn.execute(
                "DELETE FROM memory_items WHERE persona = ? AND thread_id = ? AND key = ?",
                (persona, thread, key),
            )
        return {"key": key, "deleted": before is not None}, (key, before)
    # write
    value = f["value"]
    text = (
        value
        if isinstance(value, str)
        else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    )
    key = key if key is not None else str(uuid.uuid4())
    kind = namespace_of(ns_given)
    with Tx(conn):
        before = snapshot(conn, persona, thread, key)
        _upsert(conn, persona, thread, key, kind, text)
    return {"key": key, "namespace": kind}, (key, before)


@handles(CAP)
def handle(call: HostCall) -> dict[str, Any]:
    result, undo = access(call.conn, call.input, persona=call.persona, thread=call.thread)
    if undo is not None:
        call.host.record_memory_undo(call.context, undo)
    return result


@row_hook("undo", CAP)
def undo(call: HostCall, result: Mapping[str, Any]) -> dict[str, Any]:
    """A write or delete is undone by putting the item back as it was before this step (the
    latest record the host kept for the step's key; steps are undone last first)."""
    if call.input.get("operation") not in ("write", "delete"):
        return {"undone": False, "reason": f"{call.input.get('operation')} changes nothing"}
    kept = call.host.take_memory_undo(call.context, result.get("key"))
    if kept is None:
        v.fail(f"{CAP}: this host did not record the item's prior value; cannot undo")
    key, before = kept
    put_back(call.conn, call.persona, call.thread, key, before)
    return {"key": key, "restored": before is not None, "deleted": before is None}
