"""`db.query` SQL: one plain SELECT over the allowed tables, nothing else.

Used by the compiler on a literal `sql` and by the host again on every call.

Algorithm (`check_select`), all on `sqlglot`'s SQLite dialect, imported lazily:
1. Tokenize. Comments are not tokens, so `-- ;` or `/* ; DELETE */` hide nothing; at most one
   `;` may appear and only as the last token (one trailing `;` is allowed, stacked statements
   are not, nor an empty statement `;;`). The same is asked of SQLite's own tokenizer
   (`sqlite3.complete_statement`), in case the two disagree on where a string or comment ends.
2. Parse. The one statement must be a `SELECT` (not a set operation, `VALUES`, `PRAGMA`,
   `ATTACH`, DML, DDL or any command sqlglot cannot parse).
3. Walk the whole tree and refuse: CTEs (`WITH`), set operations anywhere, any nested `SELECT`
   or parenthesised query (subqueries in FROM, WHERE, the select list, `EXISTS`, `IN (...)`),
   SQLite's `IN table` form, FROM/JOIN items that are not a plain table name (table-valued
   functions such as `json_each` or `pragma_table_info`, `VALUES`, `LATERAL`), tables outside
   `ALLOWED_TABLES` (quoted or not, any case; any schema qualifier, `main.` included), and calls
   of any function whose SQLite name is not in `ALLOWED_FUNCTIONS` (so `load_extension`,
   `readfile`, `fts3_tokenizer`, `zeroblob` and friends are refused).
   Parameters are `?` or `?NNN`; named ones are refused.

Defense in depth at run time: the host opens the database read-only, through per-persona views,
with its authorizer (`forgec.host.dbquery`, the one authorizer) on the connection, which lets
SQLite itself — the parser that counts — deny anything but reading the allowed tables through
those views and calling allowed functions.
"""

from __future__ import annotations

import re
from typing import Any

from forgec.ir.capabilities import OUTSIDE_COLUMNS, QUERY_TABLES, named_query_tables

# The one SQL policy (SPEC §16): the static check below and the host's authorizer
# (`forgec.host.dbquery`) both read these two tables, so what `check` accepts the host runs.
ALLOWED_TABLES = frozenset({"memory_items", "schedules", "messages", "threads"})

# Functions a query may call, by the name SQLite reports to its authorizer. Generous but safe:
# SQLite's core scalar, date, math, JSON, aggregate and window functions and FTS5's ranking
# helpers, all bounded by the host's length and time limits. Left out on purpose: anything that
# reads the host or the engine (`load_extension`, `sqlite_*`, `changes`, `last_insert_rowid`,
# `fts3_tokenizer`, `rtree*`), blob factories sized by an argument (`randomblob`, `zeroblob`),
# and functions that SQLite 3.40 (the oldest we run on) lacks (`concat`, `unhex`, `timediff`,
# `octet_length`, `string_agg`) — the checker would otherwise accept what the host cannot run.
ALLOWED_FUNCTIONS = frozenset(
    {
        "abs", "avg", "ceil", "ceiling", "char", "coalesce", "count", "cume_dist",
        "current_date", "current_time", "current_timestamp", "date", "datetime", "dense_rank",
        "first_value", "format", "glob", "group_concat", "hex", "ifnull", "iif", "instr",
        "julianday", "lag", "last_value", "lead", "length", "like", "likelihood", "likely",
        "lower", "ltrim", "max", "min", "nth_value", "ntile", "nullif", "percent_rank", "printf",
        "quote", "random", "rank", "replace", "round", "row_number", "rtrim", "sign", "strftime",
        "substr", "substring", "sum", "time", "total", "trim", "typeof", "unicode", "unixepoch",
        "unlikely", "upper",
        "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cos", "cosh", "degrees",
        "exp", "floor", "ln", "log", "log10", "log2", "mod", "pi", "pow", "power", "radians",
        "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
        "json", "json_array", "json_array_length", "json_extract", "json_group_array",
        "json_group_object", "json_insert", "json_object", "json_patch", "json_quote",
        "json_remove", "json_replace", "json_set", "json_type", "json_valid", "->", "->>",
        "bm25", "highlight", "snippet",
    }
)  # fmt: skip

# Parameters: `?` and `?NNN` (the host binds a list of at most this many values); named forms
# (`:a`, `@a`, `$a`) have nothing to bind to and are refused.
MAX_PARAM_NUMBER = 100


def _parse(sql: str) -> tuple[Any, list[str]]:
    """The one statement's tree, or None with the problems."""
    import logging  # here, not at import: a check without SQL never needs it (3 ms of a cold check)

    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import SqlglotError
    from sqlglot.tokens import TokenType

    dialect = sqlglot.Dialect.get_or_raise("sqlite")
    if _sqlite_sees_two_statements(sql, dialect):
        return None, ["only one statement is allowed (a single trailing `;` at most)"]
    try:
        tokens = dialect.tokenize(sql)
    except SqlglotError as error:
        return None, [f"not valid SQL ({_first_line(error)})"]
    except Exception as error:  # the tokenizer must never become a traceback
        return None, [f"not valid SQL ({type(error).__name__})"]
    if not tokens:
        return None, ["the SQL is empty (only comments or whitespace)"]
    semicolons = [i for i, t in enumerate(tokens) if t.token_type == TokenType.SEMICOLON]
    if len(semicolons) > 1 or (semicolons and semicolons[0] != len(tokens) - 1):
        return None, ["only one statement is allowed (a single trailing `;` at most)"]
    sql, problem = _numbered_params(sql, tokens)
    if problem is not None:
        return None, [problem]
    log = logging.getLogger("sqlglot")
    level = log.level
    log.setLevel(logging.CRITICAL)  # sqlglot warns on syntax it only half understands
    try:
        statements = dialect.parse(sql)
    except SqlglotError as error:
        return None, [f"not valid SQL ({_first_line(error)})"]
    except Exception as error:
        return None, [f"not valid SQL ({type(error).__name__})"]
    finally:
        log.setLevel(level)
    found = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    for statement in statements:
        if statement is not None and (len(found) != 1 or statement is not found[0]):
            _free(statement)
    if len(found) != 1:
        return None, ["exactly one SELECT statement is expected"]
    return found[0], []


def _numbered_params(sql: str, tokens: list[Any]) -> tuple[str, str | None]:
    """`sql` with each `?NNN` written as `?` (sqlglot cannot parse the number), or a problem.

    SQLite numbers `?NNN` explicitly; the shape of the statement is the same either way, so the
    number is blanked out (same length, so error positions still match the author's text) once
    it is known to be within the list the host binds. Named parameters are refused here.
    """
    from sqlglot.tokens import TokenType

    text = list(sql)
    for index, token in enumerate(tokens):
        kind = token.token_type
        after: Any = tokens[index + 1] if index + 1 < len(tokens) else None
        adjacent = after is not None and after.start == token.end + 1
        if kind == TokenType.PLACEHOLDER and adjacent and after.token_type == TokenType.NUMBER:
            if not after.text.isdigit() or not 1 <= int(after.text) <= MAX_PARAM_NUMBER:
                return sql, f"parameter `?{after.text}` must be ?1 to ?{MAX_PARAM_NUMBER}"
            text[after.start : after.end + 1] = " " * (after.end + 1 - after.start)
        elif (
            kind == TokenType.PARAMETER
            or (kind == TokenType.COLON and adjacent)
            or (kind == TokenType.VAR and token.text.startswith("$"))
        ):
            return sql, "named parameters are not allowed: use `?` or `?NNN` with `params`"
    return "".join(text), None


def _sqlite_sees_two_statements(sql: str, dialect: Any) -> bool:
    """Whether SQLite's own tokenizer ends a statement before code that follows.

    `sqlite3.complete_statement` is true when the text ends with a `;` outside any string,
    identifier or comment, as SQLite reads them; after such a `;` only whitespace and comments
    may follow. This guards against sqlglot and SQLite disagreeing on where a string or a
    comment ends.
    """
    import sqlite3

    start = 0
    while (index := sql.find(";", start)) >= 0:
        start = index + 1
        if sqlite3.complete_statement(sql[: index + 1]):
            try:
                return bool(dialect.tokenize(sql[index + 1 :]))
            except Exception:
                return True
    return False


def _first_line(error: Exception) -> str:
    """Where the SQL stops being SQL, in forgec's words: sqlglot's own messages (token dumps,
    "Invalid expression / Unexpected token") change between releases and mean little to a
    person, so only the position it reports is kept."""
    for found in getattr(error, "errors", None) or ():
        line, col = found.get("line"), found.get("col")
        if isinstance(line, int) and isinstance(col, int) and line > 0:
            return f"it stops making sense at line {line}, column {max(col, 1)}"
    if type(error).__name__ == "TokenError":
        return "an unterminated string, comment or quoted name?"
    return "it cannot be read as SQLite SQL"


def check_select(sql: str) -> list[str]:
    """Problems with `sql` as a `db.query` statement (empty when it is an allowed SELECT)."""
    if not isinstance(sql, str):
        return ["the SQL must be a string"]
    if not sql.strip():
        return ["the SQL is empty"]
    if "\x00" in sql:
        return ["the SQL contains a NUL character"]
    cached = _CHECK_CACHE.get(sql)
    if cached is None:
        cached = _check(sql)
        if len(_CHECK_CACHE) > 512:  # bounded: a long-lived host sees many queries
            _CHECK_CACHE.clear()
        _CHECK_CACHE[sql] = cached
    return list(cached)


_CHECK_CACHE: dict[str, tuple[str, ...]] = {}


def _check(sql: str) -> tuple[str, ...]:
    tree, problems = _parse(sql)
    if tree is None:
        return tuple(problems)
    try:
        from sqlglot import exp

        if not isinstance(tree, exp.Select):
            return (_not_select(tree),)
        out: list[str] = []
        for node in tree.walk():
            message = _refusal(node, tree)
            if message and message not in out:
                out.append(message)
        return tuple(out)
    finally:
        _free(tree)


def _free(tree: Any) -> None:
    """Break a parsed tree's parent links once it has been read: sqlglot's nodes point at their
    parent, so a tree is a web of reference cycles that would wait for the cyclic collector
    (a check leaves no cycle behind: tests/test_check_garbage.py). Only plain data — strings,
    tuples, frozensets — leaves this module."""
    for node in list(tree.walk()):
        node.parent = None


def _not_select(tree: Any) -> str:
    from sqlglot import exp

    if isinstance(tree, (exp.Union, exp.Except, exp.Intersect)):
        return "UNION, EXCEPT and INTERSECT are not allowed: one plain SELECT only"
    if isinstance(tree, exp.Command):
        keyword = str(tree.this).upper() if tree.this else "this statement"
        return f"only SELECT is allowed, not {keyword}"
    return f"only SELECT is allowed, not {tree.key.upper()}"


def _refusal(node: Any, root: Any) -> str | None:
    from sqlglot import exp

    if isinstance(node, (exp.With, exp.CTE)):
        return "common table expressions (WITH) are not allowed"
    if isinstance(node, (exp.Union, exp.Except, exp.Intersect)):
        return "UNION, EXCEPT and INTERSECT are not allowed: one plain SELECT only"
    if (isinstance(node, exp.Select) and node is not root) or isinstance(
        node, (exp.Subquery, exp.Lateral)
    ):
        return "subqueries are not allowed"
    if isinstance(node, exp.In) and node.args.get("field") is not None:
        return "`IN table` is not allowed: list the values"
    if isinstance(node, (exp.Command, exp.Values, exp.Into)):
        return f"{node.key.upper()} is not allowed inside a SELECT"
    if isinstance(node, (exp.From, exp.Join)):
        item = node.this
        if not isinstance(item, (exp.Table, exp.Subquery)) or not isinstance(
            item.this, exp.Identifier
        ):
            if isinstance(item, exp.Table) and isinstance(item.this, exp.Func):
                name = _func_name(item.this)
                return f"table-valued function `{name}` is not allowed: read the allowed tables"
            if not isinstance(item, exp.Subquery):
                return "only the allowed tables may be read"
        return None
    if isinstance(node, exp.Table):
        if node.arg_key == "indexed":
            return None  # `INDEXED BY name` names an index, not a table
        return _table_refusal(node)
    if isinstance(node, exp.Func) and node.arg_key == "this" and isinstance(node.parent, exp.Table):
        return None  # a table-valued function, reported at its FROM/JOIN
    called = _sqlite_function(node)
    if called is not None and called.lower() not in ALLOWED_FUNCTIONS:
        return f"function `{called}` is not allowed"
    return None


# sqlglot classes SQLite runs as a function call although they are written as operators
_OPERATOR_FUNCTIONS = {"RegexpLike": "regexp", "Like": "like", "Glob": "glob", "Match": "match"}
# what sqlglot renders as `NAME(` but SQLite treats as syntax, not a function call
_NOT_FUNCTIONS = frozenset({"cast", "exists"})
_CALL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def _sqlite_function(node: Any) -> str | None:
    """The name SQLite's authorizer will see for this node's function call, if it is one.

    Every function counts — not only those sqlglot does not know — because the host's
    authorizer allows by name: `random()` parses as sqlglot's `Rand`, which SQLite runs as
    `random`. sqlglot's rendering in the SQLite dialect gives that name.
    """
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return str(node.name)
    operator = _OPERATOR_FUNCTIONS.get(type(node).__name__)
    if operator is not None:
        return operator
    if not isinstance(node, exp.Func) or isinstance(node, exp.Connector):
        return None  # AND / OR / XOR: operators sqlglot files under Func, never calls
    try:
        rendered = _own_call(node)
    except Exception:  # a node sqlglot cannot render is not something we can vouch for
        return type(node).__name__.lower()
    match = _CALL.match(rendered)
    if match is None:
        if "->" in rendered:
            return "->>" if "->>" in rendered else "->"
        return None  # written as syntax (`CASE`, `COLLATE`, `CURRENT_DATE`)
    name = match.group(1).lower()
    return None if name in _NOT_FUNCTIONS else name


def _own_call(node: Any) -> str:
    """NODE rendered in the SQLite dialect with each operand replaced by a placeholder: only its
    own call matters, and rendering the operands too would make the check of a nested
    expression quadratic in its length (each call node rendering all the calls below it).
    Falls back to the whole node when the stand-in cannot be rendered."""
    from sqlglot import exp

    args: dict[str, Any] = {}
    for key, value in node.args.items():
        if isinstance(value, exp.Expression) and not isinstance(value, exp.DataType):
            args[key] = exp.Null()
        elif isinstance(value, list):
            args[key] = [
                exp.Null()
                if isinstance(v, exp.Expression) and not isinstance(v, exp.DataType)
                else v
                for v in value
            ]
        else:
            args[key] = value
    try:
        return str(type(node)(**args).sql(dialect="sqlite"))
    except Exception:
        return str(node.sql(dialect="sqlite"))


def _func_name(node: Any) -> str:
    from sqlglot import exp

    if isinstance(node, exp.Anonymous):
        return str(node.name)
    return str(node.sql_name()).lower()


def _table_refusal(node: Any) -> str | None:
    from sqlglot import exp

    if isinstance(node.this, exp.Func):
        return None  # a table-valued function, reported at its FROM/JOIN
    if not isinstance(node.this, exp.Identifier):
        return "only the allowed tables may be read"
    name = str(node.name).lower()
    if node.args.get("catalog") is not None or node.args.get("db") is not None:
        # the host scopes the unqualified names (temp views); `main.x` would bypass the scope
        return f"table `{node.sql(dialect='sqlite')}` is not allowed: write the table name alone"
    if name not in ALLOWED_TABLES:
        allowed = ", ".join(sorted(ALLOWED_TABLES))
        return f"table `{node.name}` is not allowed (allowed: {allowed})"
    return None


# --- lineage (SPEC §21 "origin per field") ------------------------------------------------


def query_columns(sql: Any) -> frozenset[tuple[str, str]] | None:
    """Every (table, column) an allowed SELECT reads, anywhere: what its result columns are
    computed from and what it filters, joins, groups, orders or windows by. `(table, "*")`
    stands for every column of the table (`SELECT *`, `t.*`); `count(*)` reads no column.
    A column whose table cannot be told (unqualified, several tables) counts for each table
    of the query. None when `sql` is not an allowed SELECT (the host refuses it anyway).

    A query is one SELECT with no subquery (`check_select`), so every column in its tree is a
    column of one of its own tables: the lineage of the whole result is exactly this set."""
    lineage = query_lineage(sql)
    if lineage is None:
        return None
    common, per_column = lineage
    return common.union(*per_column) if per_column else common


Columns = frozenset[tuple[str, str]]
_LINEAGE_CACHE: dict[str, tuple[Columns, tuple[Columns, ...]]] = {}


def query_lineage(sql: Any) -> tuple[Columns, tuple[Columns, ...]] | None:
    """The lineage of an allowed SELECT, per result column: `(common, per_column)` where
    `common` is what decides every column — the columns it filters, joins, groups, orders or
    windows by (an alias or an ordinal there stands for its select item) — and `per_column[i]`
    what the i-th select item is computed from. `per_column` is empty when a select item is a
    `*` (the result's columns are not the items): then `common` holds everything. None when
    `sql` is not an allowed SELECT."""
    if not isinstance(sql, str) or check_select(sql):
        return None
    cached = _LINEAGE_CACHE.get(sql)
    if cached is None:
        cached = _lineage(sql)
        if len(_LINEAGE_CACHE) > 512:  # bounded: a long-lived host sees many queries
            _LINEAGE_CACHE.clear()
        _LINEAGE_CACHE[sql] = cached
    return cached


def _lineage(sql: str) -> tuple[Columns, tuple[Columns, ...]]:

    tree, _ = _parse(sql)
    try:
        return _lineage_of(tree)
    finally:
        _free(tree)


def _lineage_of(tree: Any) -> tuple[Columns, tuple[Columns, ...]]:
    from sqlglot import exp

    tables: dict[str, str] = {}  # alias or name (lower) → table
    for table in tree.find_all(exp.Table):
        name = str(table.name).lower()
        tables[name] = name
        if table.alias:
            tables[str(table.alias).lower()] = name
    every = frozenset(tables.values())

    items = list(tree.expressions)
    in_items = {id(n) for item in items for n in item.walk()}

    def columns(root: Any, skip: bool = False) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for node in root.walk():
            if skip and id(node) in in_items:
                continue
            if isinstance(node, exp.Column):
                owner = str(node.table).lower() if node.table else None
                column = "*" if isinstance(node.this, exp.Star) else str(node.name).lower()
                for table in (tables[owner],) if owner in tables else every:
                    out.add((table, column))
            elif isinstance(node, exp.Star) and not isinstance(node.parent, (exp.Column, exp.Func)):
                out.update((table, "*") for table in every)  # `SELECT *`
        return out

    per = [columns(item) for item in items]
    common = columns(tree, skip=True)
    # an alias or an ordinal outside the select list stands for its item's lineage
    aliases = {str(item.alias).lower(): i for i, item in enumerate(items) if item.alias}
    for node in tree.walk():
        if id(node) in in_items:
            continue
        if isinstance(node, exp.Column) and not node.table:
            i = aliases.get(str(node.name).lower())
            if i is not None:
                common |= per[i]
        elif (
            isinstance(node, exp.Literal)
            and isinstance(node.parent, (exp.Ordered, exp.Group))
            and node.is_int
            and 1 <= int(node.this) <= len(items)
        ):
            common |= per[int(node.this) - 1]
    starred = any(
        isinstance(n, exp.Star) and not isinstance(n.parent, exp.Func)
        for item in items
        for n in item.walk()
    )
    if starred:
        return frozenset(common.union(*per)), ()
    return frozenset(common), tuple(frozenset(p) for p in per)


def outside_columns(columns: Any) -> bool:
    """Whether a lineage holds a column people wrote (`OUTSIDE_COLUMNS`)."""
    for table, column in columns:
        outside = OUTSIDE_COLUMNS.get(table)
        if outside and (column == "*" or column in outside):
            return True
    return False


def query_reads_outside(sql: Any) -> bool:
    """Whether a `db.query` result holds, by lineage, text people wrote (`OUTSIDE_COLUMNS` of
    the rows' table: a message's text, a thread's title) — `external:talon` at origin; ids,
    channels, senders, times and counts are the host's own. SQL that is not known (computed)
    or not an allowed SELECT: as if it read every such column its text names."""
    columns = query_columns(sql)
    if columns is None:
        return not isinstance(sql, str) or any(
            t in OUTSIDE_COLUMNS for t in named_query_tables(sql)
        )
    for table, column in columns:
        outside = OUTSIDE_COLUMNS.get(table)
        if outside and (column == "*" or column in outside):
            return True
    return False


def query_tables_read(sql: Any) -> tuple[str, ...]:
    """The tables a `db.query` reads (its FROM and JOINs), every allowed one when not known."""
    columns = query_columns(sql)
    if not isinstance(sql, str):
        return QUERY_TABLES
    if columns is None:
        return named_query_tables(sql)
    tables = {table for table, _ in columns}
    if not tables:
        return named_query_tables(sql)  # `SELECT count(*) FROM t`: its rows still count
    return tuple(t for t in QUERY_TABLES if t in tables)
