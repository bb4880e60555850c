"""The full-text indexes of the host database (`forgec.host.db._fts_index`, one builder for
each of them, issue 31): every write — insert, update, delete, by any writer — keeps the index
in step with its table, for each indexed table alike."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from forgec.host.db import connect

NOW = "2026-01-01T00:00:00Z"

# table → (the columns indexed, a row's insert, the column a search reads)
TABLES = {
    "memories": (
        ("text", "tags"),
        "INSERT INTO memories (id, text, tags, created_at) VALUES ('m1', :v, '[]', :now)",
        "text",
    ),
    "memory_items": (
        ("key", "value"),
        "INSERT INTO memory_items (id, persona, thread_id, key, type, value, created_at,"
        " updated_at) VALUES ('i1', 'p', 't1', 'k', 'fact', :v, :now, :now)",
        "value",
    ),
}


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    c = connect(tmp_path / "h.db")
    c.execute("INSERT INTO threads (id, persona, created_at) VALUES ('t1', 'p', ?)", (NOW,))
    return c


def test_every_full_text_index_is_one_this_file_tries(conn: sqlite3.Connection) -> None:
    found = {
        r[0][: -len("_fts")]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%USING fts5%'"
        )
    }
    assert found == set(TABLES)


def _hits(conn: sqlite3.Connection, table: str, word: str) -> int:
    return conn.execute(
        f"SELECT count(*) FROM {table}_fts WHERE {table}_fts MATCH ?", (word,)
    ).fetchone()[0]


def _in_step(conn: sqlite3.Connection, table: str) -> None:
    conn.execute(f"INSERT INTO {table}_fts ({table}_fts) VALUES ('integrity-check')")


@pytest.mark.parametrize("table", sorted(TABLES))
def test_insert_update_and_delete_keep_the_index_in_step(
    conn: sqlite3.Connection, table: str
) -> None:
    columns, insert, column = TABLES[table]
    assert [r[1] for r in conn.execute(f"PRAGMA table_info({table}_fts)")] == list(columns)
    conn.execute(insert, {"v": "apricot", "now": NOW})
    assert _hits(conn, table, "apricot") == 1
    _in_step(conn, table)
    conn.execute(f"UPDATE {table} SET {column} = 'quince'")
    assert (_hits(conn, table, "apricot"), _hits(conn, table, "quince")) == (0, 1)
    _in_step(conn, table)
    conn.execute(f"DELETE FROM {table}")
    assert _hits(conn, table, "quince") == 0
    _in_step(conn, table)
