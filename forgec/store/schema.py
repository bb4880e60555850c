"""The store's SQLite file: opening it safely, its schema, and its version.

A store is one SQLite database (stdlib `sqlite3`) in WAL mode, so a reader (the MCP server)
never blocks a writer (the CLI) and a crash mid-write leaves the last committed state. Every
operation runs in one `BEGIN IMMEDIATE` transaction (see `forgec.store.core`).

The file announces itself in the `meta` table: `format = forgec.store` and `schema = 4`. An
empty file becomes a new store; a SQLite file without that row is someone else's database and
is refused, as is a file that is not SQLite at all, and a schema newer than this forgec knows.
An older store is upgraded in place, in one transaction, the first time it is opened
(`_upgrade`): from schema 1 its versions become a person's, and their effects and hashes are
filled in by the caller's `fill` (see `forgec.store.core`); from schema 2 its proposals move
out of the version numbers into their own (`PROPOSAL_BASE`, below); from schema 3 it gains the
`version_tests` table.

Tables:
- `tools(id, current_version, enabled, created_at, updated_at, last_proposal)`: one row per
  tool id; `last_proposal` is the last proposal number given (never reused).
- `versions(tool_id, version, parent_version, target, manifest, program, marks, hash,
  forgec_version, installed_at, author, author_name, status, effects)`: every installed
  version and every proposal, never deleted. `author` is `person` | `model`; `status` is
  `stored` (the lineage: it is, or may become, current by rollback), `proposed` (a model's
  version waiting for a person) or `rejected`. A proposal's row is keyed `PROPOSAL_BASE + N`
  (proposal N), above every number a manifest's `version` can have, so no proposal ever holds,
  blocks or raises a version number of the lineage; its `parent_version` is the lineage's
  latest version when it was proposed.
- `consents(tool_id, version, kind, carried_from, marks, granted_at, hash)`: the consent a
  person gave (`granted`), bound to the version's content hash; for an R4 tool only the
  basis of the next diff, never a consent to run. Older forgec also wrote `carried` records
  (consent kept across an upgrade whose effects did not grow); they are kept as history and
  are not a consent: that version asks again.
- `version_tests(tool_id, version, cases)`: the test cases (SPEC §22) kept with a version or a
  proposal — the tests file found beside the tool at `tools install`, or `tool_create`'s
  `tests` — as a JSON list of cases. They are evidence for a review (`tools review` runs the
  current version's cases on a proposal), never part of what is consented to: not covered by
  the content hash, and only ever run on the in-memory host.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

FORMAT = "forgec.store"
SCHEMA_VERSION = 4
# proposal N is the `versions` row keyed PROPOSAL_BASE + N: above every manifest `version`
# (forgec.ir.rules.VERSION_LIMIT), so proposals and the lineage never share a number
PROPOSAL_BASE = 2**31

# fills what a schema-1 row lacks (effects, the new hash); called inside the upgrade transaction
Filler = Callable[[sqlite3.Connection], None]

# `tools/list` reads the enabled tools only; everything else filters on a primary key
INDEXES = ("CREATE INDEX IF NOT EXISTS tools_enabled ON tools (enabled, id)",)

# schema 1 -> 2: authors, proposals, effects, consent bound to the hash, the index
UPGRADE_FROM_1 = (
    "ALTER TABLE versions ADD COLUMN author TEXT NOT NULL DEFAULT 'person'"
    " CHECK (author IN ('person', 'model'))",
    "ALTER TABLE versions ADD COLUMN author_name TEXT",
    "ALTER TABLE versions ADD COLUMN status TEXT NOT NULL DEFAULT 'stored'"
    " CHECK (status IN ('stored', 'proposed', 'rejected'))",
    "ALTER TABLE versions ADD COLUMN effects TEXT",
    "ALTER TABLE consents ADD COLUMN hash TEXT",
    *INDEXES,
)

# schema 2 -> 3: proposals get their own numbers (`rekey_proposals`), counted per tool
UPGRADE_FROM_2 = ("ALTER TABLE tools ADD COLUMN last_proposal INTEGER NOT NULL DEFAULT 0",)

# schema 3 -> 4: the test cases kept with a version (SPEC §22)
TESTS_TABLE = """CREATE TABLE IF NOT EXISTS version_tests (
    tool_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    cases TEXT NOT NULL,
    PRIMARY KEY (tool_id, version)
)"""
UPGRADE_FROM_3 = (TESTS_TABLE,)

DDL = (
    """
CREATE TABLE meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE tools (
    id TEXT PRIMARY KEY,
    current_version INTEGER NOT NULL,
    enabled INTEGER NOT NULL DEFAULT 0 CHECK (enabled IN (0, 1)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    last_proposal INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE versions (
    tool_id TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    parent_version INTEGER,
    target TEXT NOT NULL,
    manifest TEXT NOT NULL,
    program TEXT NOT NULL,
    marks TEXT NOT NULL,
    hash TEXT NOT NULL,
    forgec_version TEXT NOT NULL,
    installed_at TEXT NOT NULL,
    author TEXT NOT NULL DEFAULT 'person' CHECK (author IN ('person', 'model')),
    author_name TEXT,
    status TEXT NOT NULL DEFAULT 'stored' CHECK (status IN ('stored', 'proposed', 'rejected')),
    effects TEXT,
    PRIMARY KEY (tool_id, version)
);
CREATE TABLE consents (
    tool_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('granted', 'carried')),
    carried_from INTEGER,
    marks TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    hash TEXT,
    PRIMARY KEY (tool_id, version),
    FOREIGN KEY (tool_id, version) REFERENCES versions (tool_id, version)
);
"""
    + TESTS_TABLE
    + ";\n"
    + "".join(f"{index};\n" for index in INDEXES)
)


class StoreError(Exception):
    """A store operation was refused or failed; the message is meant for a person."""


def connect(path: Path, fill: Filler | None = None) -> sqlite3.Connection:
    """Open (creating when new) the store at PATH; refuse anything that is not a forgec store.
    An older schema is upgraded, with FILL completing its rows."""
    if path.exists() and path.is_dir():
        raise StoreError(f"{path}: is a directory, not a tool store")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"{path}: cannot create its folder: {exc.strerror or exc}") from None
    try:
        # autocommit mode: transactions are begun and ended explicitly (BEGIN IMMEDIATE)
        conn = sqlite3.connect(path, isolation_level=None, timeout=10.0)
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the tool store: {exc}") from None
    try:
        _prepare(conn, path, fill)
    except BaseException:
        conn.close()
        raise
    return conn


def _prepare(conn: sqlite3.Connection, path: Path, fill: Filler | None) -> None:
    try:
        conn.execute("PRAGMA busy_timeout = 10000")
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
    except sqlite3.DatabaseError as exc:
        raise StoreError(
            f"{path}: not a forgec tool store (the file is not a SQLite database: {exc})"
        ) from None
    if not tables:
        _create(conn, path)
        return
    if "meta" not in tables:
        raise StoreError(f"{path}: not a forgec tool store (a SQLite database of something else)")
    try:
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: the tool store is damaged: {exc}") from None
    if meta.get("format") != FORMAT:
        raise StoreError(f"{path}: not a forgec tool store (a SQLite database of something else)")
    try:
        schema = int(meta.get("schema", ""))
    except ValueError:
        raise StoreError(f"{path}: the tool store is damaged (bad schema version)") from None
    if schema > SCHEMA_VERSION:
        raise StoreError(
            f"{path}: the tool store has schema version {schema}, newer than this forgec "
            f"understands ({SCHEMA_VERSION}); upgrade forgec"
        )
    if schema < 1 or not {"tools", "versions", "consents"} <= tables:
        raise StoreError(f"{path}: the tool store is damaged (tables are missing)")
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"{path}: cannot use the tool store: {exc}") from None
    if schema < SCHEMA_VERSION:
        _upgrade(conn, path, fill)


def rekey_proposals(conn: sqlite3.Connection) -> None:
    """Schema 2 kept a model's proposal under the version number the model wrote; move each
    one (waiting or rejected) to proposal N, in the order they were numbered."""
    rows = conn.execute(
        "SELECT tool_id, version FROM versions WHERE status IN ('proposed', 'rejected')"
        " AND version < ? ORDER BY tool_id, version",
        (PROPOSAL_BASE,),
    ).fetchall()
    counts: dict[str, int] = {}
    for tool_id, version in rows:
        counts[tool_id] = counts.get(tool_id, 0) + 1
        conn.execute(
            "UPDATE versions SET version = ? WHERE tool_id = ? AND version = ?",
            (PROPOSAL_BASE + counts[tool_id], tool_id, version),
        )
    for tool_id, count in counts.items():
        conn.execute("UPDATE tools SET last_proposal = ? WHERE id = ?", (count, tool_id))


def _upgrade(conn: sqlite3.Connection, path: Path, fill: Filler | None) -> None:
    try:
        conn.execute("BEGIN IMMEDIATE")
        # another process may have upgraded it between our look and our lock
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        schema = int(row[0]) if row is not None and str(row[0]).isdigit() else SCHEMA_VERSION
        if schema == 1:
            for statement in UPGRADE_FROM_1:
                conn.execute(statement)
            if fill is not None:
                fill(conn)
        if schema <= 2:
            for statement in UPGRADE_FROM_2:
                conn.execute(statement)
            rekey_proposals(conn)
        if schema <= 3:
            for statement in UPGRADE_FROM_3:
                conn.execute(statement)
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),))
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise StoreError(
            f"{path}: cannot upgrade the tool store to schema {SCHEMA_VERSION}: {exc}"
        ) from None
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def _create(conn: sqlite3.Connection, path: Path) -> None:
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("BEGIN IMMEDIATE")
        # another process may have created it between our look and our lock
        exists = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'"
        ).fetchone()
        if not exists:
            for statement in DDL.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("format", FORMAT), ("schema", str(SCHEMA_VERSION))],
            )
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise StoreError(f"{path}: cannot create the tool store: {exc}") from None
