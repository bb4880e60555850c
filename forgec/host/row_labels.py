"""The labels of stored rows (SPEC §15 "Labels persist"), on the reference host's SQLite.

Every row a call writes keeps, in its `labels` column, the union of the labels the call
carried (its data and what decided it, as the VM handed them over): a later read — by this
tool or another, through its capability or `db.query` — hands them back to the VM through
`CallContext.read_labels`, so the run-time guard (`[flows] deny`) sees where the text came
from. Which tables a capability writes and reads, and which result field names a row, are
`forgec.runtime.sources_and_sinks`' tables (the flow pass reads the same ones).

`db.query` cannot be attributed row by row (any SELECT may combine rows), so its result
carries the labels of every row of every table its SQL reads, and `external:talon` when its
SQL reads a column other people wrote (SPEC §21: by the query's lineage, not by table). A row updated keeps its earlier labels
too: labels only grow, which can only over-report.

The labels are written right after the call's own transaction (the bridge holds the
connection's lock throughout, so no other call of this host sees the row in between; a crash
in that window leaves the row with the labels it had).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from forgec.runtime import sources_and_sinks as fl

# table → the column the result's row key (`sources_and_sinks.ROW_KEYS`) matches
KEY_COLUMNS = {
    "tasks": "id",
    "notes": "id",
    "memories": "id",
    "memory_items": "key",
    "schedules": "id",
    "messages": "id",
    "a2a_tasks": "id",
    "background_tasks": "id",
}


def _decode(text: Any) -> set[str]:
    try:
        value = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        return set()
    return {x for x in value if isinstance(x, str)} if isinstance(value, list) else set()


def _encode(labels: Iterable[str]) -> str:
    return json.dumps(sorted(set(labels)), separators=(",", ":"))


def keep(
    conn: sqlite3.Connection,
    capability: str,
    input: Any,
    result: Any,
    labels: frozenset[str],
    read_into: set[str],
    columns_into: dict[str, set[str]] | None = None,
) -> None:
    """Label the rows the call wrote with `labels`; add those of the rows it read to
    `read_into` (and, of a `db.query`, the labels only some result columns carry to
    `columns_into`, when given)."""
    if labels:
        for table in fl.call_tables_written(capability, input):
            column = KEY_COLUMNS.get(table)
            if column is None:
                continue
            for key in fl.row_keys(table, result):
                add(conn, table, key, labels)
    if capability in fl.QUERY_FIELDS:
        whole, per_column = query_labels(conn, input, result, field=fl.QUERY_FIELDS[capability])
        read_into.update(whole)
        if per_column and columns_into is not None:
            for column, extra in per_column.items():
                columns_into.setdefault(column, set()).update(extra)
        else:
            for extra in per_column.values():
                read_into.update(extra)
        return
    for table in fl.tables_read(capability, input):
        column = KEY_COLUMNS.get(table)
        keys = fl.row_keys(table, result)
        if column is None or not keys:
            continue
        for start in range(0, len(keys), 500):  # SQLite's parameter limit
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in conn.execute(
                f"SELECT DISTINCT labels FROM {table} WHERE {column} IN ({marks})", chunk
            ):
                read_into.update(_decode(row[0]))


def add(conn: sqlite3.Connection, table: str, key: str, labels: Iterable[str]) -> None:
    """Join LABELS to the stored labels of the row of TABLE whose key is KEY (labels only
    grow)."""
    labels = set(labels)
    if not labels:
        return
    column = KEY_COLUMNS[table]
    rows = conn.execute(f"SELECT labels FROM {table} WHERE {column} = ?", (key,)).fetchall()
    for row in rows:
        labels |= _decode(row[0])
    conn.execute(f"UPDATE {table} SET labels = ? WHERE {column} = ?", (_encode(labels), key))


def stored(conn: sqlite3.Connection, table: str, key: str) -> frozenset[str]:
    """The labels stored with one row (none when it has none, or no such row)."""
    column = KEY_COLUMNS[table]
    row = conn.execute(f"SELECT labels FROM {table} WHERE {column} = ?", (key,)).fetchone()
    return frozenset(_decode(row[0])) if row is not None else frozenset()


def query_labels(
    conn: sqlite3.Connection, input: Any, result: Any = None, *, field: str = "sql"
) -> tuple[set[str], dict[str, set[str]]]:
    """What a `db.query` result carries (SPEC §21 "origin per field"), as (labels of the whole
    result, labels only some columns carry). By the query's lineage
    (`forgec.catalog.sql.query_lineage`): `external:talon` on a column computed from a column
    people wrote (`messages.content`, `threads.title`), and on every column when the query
    filters, joins, groups or orders by one — `count(*)` grouped by channel is clean, the same
    filtered on `content` is not; and every label stored with the rows of the tables it reads
    (on the whole result). A query whose columns cannot be told apart (`*`, a repeated name):
    on the whole result."""
    from forgec.catalog.sql import (
        outside_columns,
        query_lineage,
        query_reads_outside,
        query_tables_read,
    )

    sql = input.get(field) if type(input) is dict else None
    whole: set[str] = set()
    per_column: dict[str, set[str]] = {}
    lineage = query_lineage(sql)
    names = _result_columns(result)
    if lineage is None or not lineage[1] or names is None or len(names) != len(lineage[1]):
        if query_reads_outside(sql):
            whole.add(fl.TALON)
    else:
        common, items = lineage
        if outside_columns(common):
            whole.add(fl.TALON)
        else:
            for name, columns in zip(names, items, strict=True):
                if outside_columns(columns):
                    per_column[name] = {fl.TALON}
    for table in query_tables_read(sql):
        for row in conn.execute(f"SELECT DISTINCT labels FROM {table}"):
            whole.update(_decode(row[0]))
    return whole, per_column


def _result_columns(result: Any) -> list[str] | None:
    """The column names of a `db.query` result, in order (its first row's keys); None
    without rows (nothing to tell apart)."""
    rows = result.get("rows") if type(result) is dict else None
    if type(rows) is not list or not rows or type(rows[0]) is not dict:
        return None
    return list(rows[0])


def load_state_labels(conn: sqlite3.Connection, tool_id: str) -> dict[str, list[str]]:
    row = conn.execute("SELECT labels FROM tool_state WHERE tool_id = ?", (tool_id,)).fetchone()
    if row is None:
        return {}
    try:
        value = json.loads(row[0])
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {k: sorted(_decode(json.dumps(v))) for k, v in value.items() if isinstance(k, str)}


def encode_state_labels(labels: Any) -> str:
    if not isinstance(labels, dict):
        return "{}"
    clean = {
        k: sorted({x for x in v if isinstance(x, str)})
        for k, v in labels.items()
        if isinstance(k, str) and isinstance(v, list | tuple)
    }
    return json.dumps(clean, separators=(",", ":"), sort_keys=True)
