"""`db.query`: one restricted, read-only, scoped SELECT against the host database.

Four independent layers, so a hole in one is not a hole in the whole:

1. **Shape** (sqlglot, plus the catalog's `check_select` when present): exactly one statement
   (one trailing `;` allowed), a plain SELECT — no UNION/EXCEPT/INTERSECT, no CTE, no subquery,
   no table-valued function — reading only the allowed tables, unqualified (`main.x` refused).
2. **Scoping** by substitution: on a fresh connection the host creates TEMP views named like the
   allowed tables (`memory_items`, `schedules`, `messages`, `threads`), each selecting only the
   current persona's rows (and, for `memory_items` and `messages`, the current thread's).
   SQLite resolves an unqualified name to the temp schema first, so the query sees the views.
3. **Authorizer** (`set_authorizer`): once the views exist, every action is denied except
   SELECT, reads of the views, reads of the real tables *through our views only* (the
   authorizer's source-view argument must be the view of the same name; a direct top-level read
   of `main.memory_items` is refused), and calls of a list of harmless functions. No PRAGMA, no
   ATTACH, no write, no `load_extension`, no table-valued pragma functions.
4. **Read-only connection** (`file:…?mode=ro` URI), `SQLITE_LIMIT_LENGTH` of 1 MB per value,
   and a progress handler that aborts the query past the time limit.

Rows come back as `{column: value}` objects, at most `limit` (default 100, capped at 1000), with
`truncated` true when more rows matched; the whole result is capped at 256 KiB.
"""

from __future__ import annotations

import math
import sqlite3
import time
from pathlib import Path
from typing import Any

from forgec.host import validate as v
from forgec.runtime.host import HostError

CAP = "db.query"
ALLOWED_TABLES = ("memory_items", "schedules", "messages", "threads")
# table → scoping columns: the persona always, the thread where the rows belong to one
SCOPES = {
    "memory_items": ("persona", "thread_id"),
    "messages": ("persona", "thread_id"),
    "schedules": ("persona",),
    "threads": ("persona",),
}
MAX_RESULT = 256 * 1024
SAFE_FUNCTIONS = frozenset(
    [
        "abs",
        "avg",
        "char",
        "coalesce",
        "count",
        "date",
        "datetime",
        "glob",
        "group_concat",
        "hex",
        "ifnull",
        "iif",
        "instr",
        "julianday",
        "length",
        "like",
        "likelihood",
        "likely",
        "lower",
        "ltrim",
        "max",
        "min",
        "nullif",
        "octet_length",
        "printf",
        "format",
        "quote",
        "replace",
        "round",
        "rtrim",
        "sign",
        "strftime",
        "string_agg",
        "substr",
        "substring",
        "sum",
        "time",
        "timediff",
        "total",
        "trim",
        "typeof",
        "unicode",
        "unixepoch",
        "unlikely",
        "upper",
        "concat",
        "concat_ws",
        "json",
        "json_array",
        "json_array_length",
        "json_extract",
        "json_object",
        "json_type",
        "json_valid",
        "json_quote",
    ]
)


def check_sql(sql: str) -> list[str]:
    """Every reason `sql` is not a single plain SELECT over the allowed tables."""
    import sqlglot
    from sqlglot import exp

    try:
        parsed = [s for s in sqlglot.parse(sql, read="sqlite") if s is not None]
    except sqlglot.errors.SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else "syntax error"
        return [f"not valid SQL: {first}"]
    if len(parsed) != 1:
        return ["exactly one statement is allowed" if parsed else "the query is empty"]
    stmt = parsed[0]
    problems: list[str] = []
    if not isinstance(stmt, exp.Select):
        return [f"only SELECT is allowed, not {stmt.key.upper()}"]
    for node in stmt.walk():
        if isinstance(node, exp.Union | exp.Except | exp.Intersect):
            problems.append("UNION, EXCEPT and INTERSECT are not allowed")
        elif isinstance(node, exp.With | exp.CTE):
            problems.append("CTEs (WITH) are not allowed")
        elif isinstance(node, exp.Subquery) or (isinstance(node, exp.Select) and node is not stmt):
            problems.append("subqueries are not allowed")
        elif isinstance(node, exp.Lateral | exp.Values | exp.Unnest):
            problems.append(f"{node.key.upper()} is not allowed")
        elif isinstance(node, exp.Table):
            if not isinstance(node.this, exp.Identifier):
                problems.append("only plain table names may follow FROM/JOIN")
                continue
            if node.args.get("db") or node.args.get("catalog"):
                problems.append(f"qualified table names are not allowed ({node.sql('sqlite')})")
            name = node.name.lower()
            if name not in ALLOWED_TABLES:
                problems.append(
                    f"table {node.name!r} is not allowed (only {', '.join(ALLOWED_TABLES)})"
                )
    return sorted(set(problems), key=problems.index)


def _catalog_problems(sql: str) -> list[str]:
    try:
        from forgec.catalog.sql import check_select
    except ImportError:  # the catalog is optional for an embedder of the runtime alone
        return []
    return list(check_select(sql))


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _authorizer(
    action: int, arg1: str | None, arg2: str | None, db: str | None, source: str | None
) -> int:
    ok, deny = sqlite3.SQLITE_OK, sqlite3.SQLITE_DENY
    if action == sqlite3.SQLITE_SELECT:
        return ok
    if action == sqlite3.SQLITE_READ:
        table = (arg1 or "").lower()
        if table not in ALLOWED_TABLES:
            return deny
        if db == "temp" and source is None:
            return ok  # the scoped view itself
        if db == "main" and source is not None and source.lower() == table:
            return ok  # the real table, read through its scoped view
        return deny
    if action == sqlite3.SQLITE_FUNCTION:
        return ok if (arg2 or "").lower() in SAFE_FUNCTIONS else deny
    return deny


def _params(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > 100:
        v.fail(f"{CAP}: `params` must be a list of at most 100 values")
    for p in value:
        if not (p is None or isinstance(p, str | int | float | bool)):
            v.fail(f"{CAP}: `params` holds only strings, numbers, booleans and null")
    return list(value)


def _cell(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def run_query(
    db_path: Path,
    inp: Any,
    *,
    persona: str,
    thread: str,
    time_limit_ms: int = 2000,
) -> dict[str, Any]:
    f = v.fields(CAP, inp, allowed={"sql", "params", "limit"}, required=("sql",))
    sql = v.req_string(CAP, f, "sql", min_len=1, max_len=16 * 1024)
    params = _params(f.get("params"))
    limit = v.integer(CAP, f, "limit", default=100, low=1, high=1000, cap=True)
    problems = check_sql(sql) + [p for p in _catalog_problems(sql) if p]
    if problems:
        v.fail(f"{CAP}: refused: " + "; ".join(dict.fromkeys(problems)))

    uri = Path(db_path).resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=2.0, isolation_level=None)
    except sqlite3.Error as exc:
        v.fail(f"{CAP}: cannot open the database read-only: {exc}")
    try:
        values = {"persona": persona, "thread_id": thread}
        for table in ALLOWED_TABLES:
            where = " AND ".join(f"{col} = {_quote(values[col])}" for col in SCOPES[table])
            conn.execute(f"CREATE TEMP VIEW {table} AS SELECT * FROM main.{table} WHERE {where}")
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1_000_000)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.set_authorizer(_authorizer)
        deadline = time.monotonic() + time_limit_ms / 1000
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 1000)
        try:
            cur = conn.execute(sql, params)
            names = _column_names(cur.description or ())
            rows: list[dict[str, Any]] = []
            size = 0
            truncated = False
            for row in cur:
                if len(rows) == limit:
                    truncated = True
                    break
                item = {n: _cell(x) for n, x in zip(names, row, strict=True)}
                size += sum(len(str(x)) + len(n) + 8 for n, x in item.items())
                if size > MAX_RESULT:
                    raise HostError(
                        "RUN_RESULT_TOO_LARGE", f"{CAP}: the rows are larger than 256 KiB"
                    )
                rows.append(item)
        except sqlite3.OperationalError as exc:
            if "interrupted" in str(exc):
                v.fail(f"{CAP}: the query took longer than {time_limit_ms} ms and was stopped")
            v.fail(f"{CAP}: refused or failed: {exc}")
        except (sqlite3.ProgrammingError, sqlite3.DatabaseError, ValueError) as exc:
            v.fail(f"{CAP}: refused or failed: {exc}")
        return {"rows": rows, "truncated": truncated}
    finally:
        conn.close()


def _column_names(description: Any) -> list[str]:
    names: list[str] = []
    for col in description:
        name = str(col[0])
        base, n = name, 2
        while name in names:
            name = f"{base}_{n}"
            n += 1
        names.append(name)
    return names
