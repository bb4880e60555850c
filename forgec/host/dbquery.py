"""`db.query`: one restricted, read-only, scoped SELECT against the host database.

Four independent layers, so a hole in one is not a hole in the whole:

1. **Shape** (the catalog's `check_select`, the compiler's own check): exactly one statement
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
4. **Read-only connection** (`file:…?mode=ro` URI), `SQLITE_LIMIT_LENGTH` of 256 KiB per value,
   and the time limit (host config `db_query_time_ms`, default 2000) enforced for every query
   by a progress handler and a watchdog thread's `interrupt()` — and, for straight-line SQL
   that reaches neither (they act at the VM's jumps), by the slow functions (`printf`,
   `format`, `instr`) checking the deadline themselves.

The tables and functions of layers 1 and 3 come from one table, `forgec.catalog.sql`
(`ALLOWED_TABLES`, `ALLOWED_FUNCTIONS`): the compiler and the host apply one SQL policy.

Rows come back as `{column: value}` objects, at most `limit` (default 100, capped at 1000), with
`truncated` true when more rows matched; the whole result is capped at 256 KiB.
"""

from __future__ import annotations

import math
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from forgec.catalog.sql import ALLOWED_FUNCTIONS, ALLOWED_TABLES, check_select
from forgec.host import handler_errors as v
from forgec.host.handlers import HostCall, handles
from forgec.runtime.host import HostError
from forgec.runtime.limits import RESULT_LIMIT

CAP = "db.query"
# table → scoping columns: the persona always, the thread where the rows belong to one
SCOPES = {
    "memory_items": ("persona", "thread_id"),
    "messages": ("persona", "thread_id"),
    "schedules": ("persona",),
    "threads": ("persona",),
}
assert set(SCOPES) == ALLOWED_TABLES, "every allowed table needs its scope"
MAX_RESULT = RESULT_LIMIT  # the whole result: what a capability result may be (SPEC §16)
# SQLite's own cap on any string or blob it builds (SQLITE_LIMIT_LENGTH): a function such as
# `printf('%.2000000000c', 'x')` fails at once instead of allocating gigabytes before the
# progress handler gets a chance to run. One result value could never be returned anyway.
MAX_VALUE_LENGTH = RESULT_LIMIT  # one value can be no larger than the whole result


def check_sql(sql: str) -> list[str]:
    """Every reason `sql` is not a single plain SELECT over the allowed tables.

    The catalog's check, the same the compiler ran on a literal `sql`: one SQL policy."""
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
        return ok if (arg2 or "").lower() in ALLOWED_FUNCTIONS else deny
    return deny


def _cell(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def run_query(
    db_path: Path,
    inp: Mapping[str, Any],
    *,
    persona: str,
    thread: str,
    time_limit_ms: int = 2000,
) -> dict[str, Any]:
    # the row's shape checked the input at the bridge, the SQL with the one SQL rule
    # (`check_sql`); the authorizer below is the second, independent line
    f = inp
    sql = f["sql"]
    params = list(f.get("params") or [])
    limit = v.whole(f.get("limit"), 100)

    uri = Path(db_path).resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=2.0, isolation_level=None)
    except sqlite3.Error as exc:
        v.fail(f"{CAP}: cannot open the database read-only: {exc}")
    try:
        values = {"persona": persona, "thread_id": thread}
        for table in sorted(ALLOWED_TABLES):
            where = " AND ".join(f"{col} = {_quote(values[col])}" for col in SCOPES[table])
            # every column but the host's own `labels` (SPEC §15: they are the host's, not data)
            columns = ", ".join(
                f'"{r[1]}"'
                for r in conn.execute(f"PRAGMA main.table_info({table})")
                if r[1] != "labels"
            )
            conn.execute(
                f"CREATE TEMP VIEW {table} AS SELECT {columns} FROM main.{table} WHERE {where}"
            )
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_LENGTH)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        deadline = time.monotonic() + time_limit_ms / 1000
        printf = _BoundedPrintf(deadline)
        for name in ("printf", "format"):
            conn.create_function(name, -1, printf, deterministic=True)
        conn.create_function("instr", 2, printf.instr, deterministic=True)
        conn.set_authorizer(_authorizer)
        with _time_limit(conn, time_limit_ms) as expired, printf:
            try:
                rows, truncated = _fetch(conn, sql, params, limit)
            except (sqlite3.Error, ValueError) as exc:
                text = str(exc)
                if printf.refused is not None:
                    v.fail(f"{CAP}: {printf.refused}")
                if expired() or printf.late or "interrupted" in text:
                    v.fail(f"{CAP}: the query reached its time limit of {time_limit_ms} ms")
                if "too big" in text:
                    v.fail(
                        f"{CAP}: a value would be longer than the length limit of "
                        f"{MAX_VALUE_LENGTH} bytes"
                    )
                v.fail(f"{CAP}: refused or failed: {text}")
        return {"rows": rows, "truncated": truncated}
    finally:
        conn.close()


# one `%` conversion of SQLite's printf: flags, width, precision, length modifier, conversion
_SPEC = re.compile(r"%[-+ 0#,!]*(\*|\d+)?(?:\.(\*|\d+))?(?:ll|l|h)?(.?)", re.DOTALL)


def _sqlite_int(value: Any) -> int:
    """The size SQLite's printf reads from a `*` argument, as a magnitude: reals are truncated
    and text is read up to its first non-digit (`'2000000000abc'` is 2000000000)."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        match = re.match(r"\s*[-+]?(\d+)", value)
        return int(match.group(1)) if match else 0
    if isinstance(value, float):
        return abs(int(value)) if math.isfinite(value) else 0
    return abs(value) if isinstance(value, int) else 0


class _BoundedPrintf:
    """`printf`/`format` that refuses a width or precision past the length limit, and `instr`;
    each checks the query's deadline first.

    SQLite's own printf honours `%.2000000000c` by appending one character two billion times
    inside a single C call: the length limit turns the result into NULL, but only after some
    seconds, and neither the progress handler nor `interrupt()` can stop a C loop. So the
    query connection's printf checks every width and precision (literal or `*`) first and hands
    the call to SQLite's real printf on a private in-memory connection."""

    def __init__(self, deadline: float) -> None:
        self.refused: str | None = None
        self.deadline = deadline
        self.late = False
        self._real: sqlite3.Connection | None = None

    def _in_time(self) -> None:
        """Refuse a call made after the deadline: a row of straight-line SQL (`f(..) + f(..)
        + …`) never reaches the checks of the progress handler or `interrupt()`, which run at
        the VM's jumps, so the functions that can be slow check the clock themselves."""
        if time.monotonic() > self.deadline:
            self.late = True
            raise ValueError("the query reached its time limit")

    def _sqlite(self) -> sqlite3.Connection:
        if self._real is None:
            self._real = sqlite3.connect(":memory:")
            self._real.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_LENGTH)
        return self._real

    def instr(self, haystack: Any, needle: Any) -> Any:
        """SQLite's `instr` (1-based position of the first occurrence, 0 when absent, NULL with
        a NULL), in time: SQLite's own compares naively, O(n·m) in C (0.3 s for one call on
        strings within the length limit, uninterruptible); Python's search is linear-ish."""
        self._in_time()
        if type(haystack) is type(needle) and isinstance(haystack, str | bytes):
            return haystack.find(needle) + 1
        # NULLs and mixed types (numbers read as text, blob against text): SQLite's own rules
        return self._sqlite().execute("SELECT instr(?, ?)", (haystack, needle)).fetchone()[0]

    def __enter__(self) -> _BoundedPrintf:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._real is not None:
            self._real.close()

    def __call__(self, fmt: Any, *args: Any) -> Any:
        self._in_time()
        if isinstance(fmt, str):
            position = 0
            for match in _SPEC.finditer(fmt):
                if match.group(3) == "%":
                    continue
                for size in (match.group(1), match.group(2)):
                    if size == "*":
                        value = args[position] if position < len(args) else 0
                        position += 1
                        size = str(_sqlite_int(value))
                    if size is not None and int(size) > MAX_VALUE_LENGTH:
                        self.refused = (
                            f"printf width or precision {int(size)} is over the length limit "
                            f"of {MAX_VALUE_LENGTH} bytes"
                        )
                        raise ValueError(self.refused)
                position += 1
        marks = ", ".join("?" * (1 + len(args)))
        return self._sqlite().execute(f"SELECT printf({marks})", (fmt, *args)).fetchone()[0]


@contextmanager
def _time_limit(conn: sqlite3.Connection, time_limit_ms: int) -> Iterator[Callable[[], bool]]:
    """Stop whatever `conn` runs once `time_limit_ms` have passed, by two independent means.

    The progress handler runs between virtual-machine steps, but one step may be a single long
    C call (a huge `printf`, `instr` over long strings) that never returns to the VM loop; the
    watchdog thread's `interrupt()` makes SQLite abandon such a call at its next check. Yields
    a function telling whether the limit was reached.
    """
    deadline = time.monotonic() + time_limit_ms / 1000
    fired = threading.Event()

    def progress() -> int:
        if time.monotonic() > deadline:
            fired.set()
            return 1
        return 0

    def watchdog() -> None:
        fired.set()
        # the query may have ended and closed the connection meanwhile
        with suppress(sqlite3.ProgrammingError):
            conn.interrupt()

    conn.set_progress_handler(progress, 1000)
    timer = threading.Timer(time_limit_ms / 1000, watchdog)
    timer.daemon = True
    timer.start()
    try:
        yield fired.is_set
    finally:
        timer.cancel()
        conn.set_progress_handler(None, 0)


def _fetch(
    conn: sqlite3.Connection, sql: str, params: list[Any], limit: int
) -> tuple[list[dict[str, Any]], bool]:
    cur = conn.execute(sql, params)
    names = _column_names(cur.description or ())
    rows: list[dict[str, Any]] = []
    size = 0
    for row in cur:
        if len(rows) == limit:
            return rows, True
        item = {n: _cell(x) for n, x in zip(names, row, strict=True)}
        size += sum(len(str(x)) + len(n) + 8 for n, x in item.items())
        if size > MAX_RESULT:
            raise HostError(
                "RUN_RESULT_TOO_LARGE", f"{CAP}: the rows are larger than {MAX_RESULT // 1024} KiB"
            )
        rows.append(item)
    return rows, False


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


@handles(CAP, own_connection=True)
def handle(call: HostCall) -> dict[str, Any]:
    return run_query(
        call.host.db_path,
        call.input,
        persona=call.persona,
        thread=call.thread,
        time_limit_ms=call.host.config.db_query_time_ms,
    )
