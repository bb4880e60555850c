"""SPEC §21's SQL lineage (`forgec.catalog.sql.query_lineage`), searched for counterexamples
against SQLite itself: its authorizer reports every (table, column) a statement reads
(`SQLITE_READ`), whatever sqlglot made of the text. Every column SQLite reads must be in the
lineage (soundness: a result can carry no label the lineage missed), and a query that reads a
column people wrote must be labelled outside text."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from strategies import lineage_selects

from forgec.catalog.sql import query_columns, query_lineage, query_reads_outside
from forgec.host.db import connect
from forgec.ir.capabilities import OUTSIDE_COLUMNS


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> sqlite3.Connection:
    path = Path(tmp_path_factory.mktemp("lineage")) / "h.db"
    connect(path).close()  # the host's own schema
    return sqlite3.connect(path)


def read_by_sqlite(conn: sqlite3.Connection, sql: str) -> set[tuple[str, str]]:
    seen: set[tuple[str, str]] = set()

    def authorizer(action: int, table: str | None, column: str | None, *_: object) -> int:
        if action == sqlite3.SQLITE_READ and table and column:
            seen.add((table, column))
        return sqlite3.SQLITE_OK

    conn.set_authorizer(authorizer)
    try:
        conn.execute(sql).fetchall()
    finally:
        conn.set_authorizer(None)
    return seen


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=lineage_selects())
def test_every_column_sqlite_reads_is_in_the_lineage(
    database: sqlite3.Connection, pair: tuple[str, str]
) -> None:
    sql, _ = pair
    lineage = query_columns(sql)
    assert lineage is not None, sql
    read = read_by_sqlite(database, sql)
    missed = {(t, c) for t, c in read if (t, c) not in lineage and (t, "*") not in lineage}
    assert not missed, (sql, missed)
    if any(c in OUTSIDE_COLUMNS.get(t, ()) for t, c in read):
        assert query_reads_outside(sql), sql


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=lineage_selects())
def test_what_decides_the_rows_is_in_every_columns_lineage(
    database: sqlite3.Connection, pair: tuple[str, str]
) -> None:
    """Per column: what SQLite reads to decide which rows come back and in what order (the
    query with its select list replaced, aliases and ordinals spelled out) is in `common`,
    which every result column carries."""
    sql, decider = pair
    lineage = query_lineage(sql)
    assert lineage is not None, sql
    common, _ = lineage
    for table, column in read_by_sqlite(database, decider):
        assert (table, column) in common or (table, "*") in common, (sql, column)
