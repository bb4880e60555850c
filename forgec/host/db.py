"""The reference host's SQLite database: opening, WAL, foreign keys and versioned migrations.

One file holds everything the host keeps: TALOS tasks, notes and memories; the Talon tables
(`threads`, `messages` = the channel outbox, `memory_items`, `schedules`); durable background
and A2A task queues; and each forged tool's persisted `state`. Every row a tool can write keeps
the labels of what was written into it (`labels`, SPEC §15; see `forgec.host.row_labels`).

Migrations are an ordered tuple of SQL scripts. `schema_migrations` records each applied
version; `open_db` applies the missing ones in one transaction each, so a crash mid-way leaves
the database at the previous version. A database written by a newer forgec (a version we do not
know) is refused rather than silently misread.

Full-text search (FTS5) indexes are kept in sync by triggers, so every writer (including one in
another process) keeps them right. The indexed tables have an explicit `seq INTEGER PRIMARY KEY`
because an FTS5 external-content index refers to rows by rowid, and an implicit rowid may change
on `VACUUM`.
"""

from __future__ import annotations

import datetime as _dt
import sqlite3
import uuid
from pathlib import Path
from typing import Any


def _fts_index(table: str, columns: tuple[str, ...]) -> str:
    """An FTS5 external-content index on TABLE's COLUMNS (rows by `seq`) and the three
    triggers that keep it in step with every insert, delete and update."""
    cols = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    fts = f"{table}_fts"
    return f"""
    CREATE VIRTUAL TABLE {fts} USING fts5 (
        {cols}, content='{table}', content_rowid='seq'
    );
    CREATE TRIGGER {table}_ai AFTER INSERT ON {table} BEGIN
        INSERT INTO {fts} (rowid, {cols}) VALUES (new.seq, {new});
    END;
    CREATE TRIGGER {table}_ad AFTER DELETE ON {table} BEGIN
        INSERT INTO {fts} ({fts}, rowid, {cols}) VALUES ('delete', old.seq, {old});
    END;
    CREATE TRIGGER {table}_au AFTER UPDATE ON {table} BEGIN
        INSERT INTO {fts} ({fts}, rowid, {cols}) VALUES ('delete', old.seq, {old});
        INSERT INTO {fts} (rowid, {cols}) VALUES (new.seq, {new});
    END;
    """


MIGRATIONS: tuple[str, ...] = (
    # 1: TALOS tasks, notes, memories; tool state
    """
    CREATE TABLE tasks (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        title TEXT NOT NULL,
        notes TEXT NOT NULL DEFAULT '',
        due TEXT,
        status TEXT NOT NULL CHECK (status IN ('open', 'done', 'cancelled')),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX tasks_created ON tasks (created_at, seq);
    CREATE TABLE notes (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        title TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE TABLE memories (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        text TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        created_at TEXT NOT NULL
    );
    """
    + _fts_index("memories", ("text", "tags"))
    + """
    CREATE TABLE tool_state (
        tool_id TEXT PRIMARY KEY,
        state TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    """,
    # 2: the Talon host tables
    """
    CREATE TABLE threads (
        id TEXT PRIMARY KEY,
        persona TEXT NOT NULL,
        channel_id TEXT,
        title TEXT,
        created_at TEXT NOT NULL
    );
    CREATE TABLE messages (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        thread_id TEXT NOT NULL REFERENCES threads (id),
        persona TEXT NOT NULL,
        channel_id TEXT NOT NULL,
        role TEXT NOT NULL DEFAULT 'assistant' CHECK (role IN ('user', 'assistant', 'system')),
        connector TEXT NOT NULL,
        content TEXT NOT NULL,
        markdown TEXT NOT NULL,
        reply_to TEXT,
        created_at TEXT NOT NULL
    );
    CREATE INDEX messages_thread ON messages (thread_id, seq);
    CREATE TABLE memory_items (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        persona TEXT NOT NULL,
        thread_id TEXT NOT NULL REFERENCES threads (id),
        key TEXT NOT NULL,
        type TEXT NOT NULL CHECK (type IN ('fact', 'summary', 'note')),
        value TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (persona, thread_id, key)
    );
    """
    + _fts_index("memory_items", ("key", "value"))
    + """
    CREATE TABLE schedules (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        persona TEXT NOT NULL,
        thread_id TEXT,
        cron_expr TEXT NOT NULL,
        label TEXT,
        prompt TEXT,
        prompt_file TEXT,
        enabled INTEGER NOT NULL DEFAULT 1,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX schedules_persona ON schedules (persona, seq);
    """,
    # 3: durable delegation queues (background agent tasks, A2A persona tasks)
    """
    CREATE TABLE background_tasks (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        persona TEXT NOT NULL,
        thread_id TEXT,
        prompt TEXT NOT NULL,
        provider TEXT,
        profile TEXT,
        working_directory TEXT,
        timeout_minutes INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed')),
        result TEXT,
        error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deadline TEXT NOT NULL
    );
    CREATE TABLE a2a_tasks (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        from_persona TEXT NOT NULL,
        target_persona TEXT NOT NULL,
        message TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
        result TEXT,
        error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX a2a_target ON a2a_tasks (target_persona, status, seq);
    """,
    # 4: the daemon's leased rows (before migration 7 moved that state into DBOS): schedule
    # firings, a turn's journal, leases on the A2A and background queues, the
    # connector workers' delivery state of each message
    """
    CREATE TABLE schedule_firings (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        schedule_id TEXT NOT NULL,
        persona TEXT NOT NULL,
        slot TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('leased', 'completed', 'failed')),
        owner TEXT,
        lease_until TEXT,
        attempts INTEGER NOT NULL DEFAULT 1,
        result TEXT,
        error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (schedule_id, slot)
    );
    CREATE INDEX schedule_firings_status ON schedule_firings (status, lease_until);
    CREATE TABLE turn_journal (
        work_id TEXT NOT NULL,
        step INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('model', 'call', 'result')),
        body TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (work_id, step)
    );
    ALTER TABLE a2a_tasks ADD COLUMN depth INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE a2a_tasks ADD COLUMN thread_id TEXT;
    ALTER TABLE a2a_tasks ADD COLUMN owner TEXT;
    ALTER TABLE a2a_tasks ADD COLUMN lease_until TEXT;
    ALTER TABLE a2a_tasks ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE background_tasks_v4 (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        persona TEXT NOT NULL,
        thread_id TEXT,
        prompt TEXT NOT NULL,
        provider TEXT,
        profile TEXT,
        working_directory TEXT,
        timeout_minutes INTEGER NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
        result TEXT,
        error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        deadline TEXT NOT NULL,
        owner TEXT,
        lease_until TEXT,
        attempts INTEGER NOT NULL DEFAULT 0
    );
    INSERT INTO background_tasks_v4 (seq, id, persona, thread_id, prompt, provider, profile,
        working_directory, timeout_minutes, status, result, error, created_at, updated_at,
        deadline)
    SELECT seq, id, persona, thread_id, prompt, provider, profile, working_directory,
        timeout_minutes, status, result, error, created_at, updated_at, deadline
    FROM background_tasks;
    DROP TABLE background_tasks;
    ALTER TABLE background_tasks_v4 RENAME TO background_tasks;
    ALTER TABLE messages ADD COLUMN delivery TEXT NOT NULL DEFAULT 'pending'
        CHECK (delivery IN ('pending', 'sending', 'delivered', 'failed', 'uncertain'));
    ALTER TABLE messages ADD COLUMN delivery_attempts INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE messages ADD COLUMN next_attempt_at TEXT;
    ALTER TABLE messages ADD COLUMN delivery_owner TEXT;
    ALTER TABLE messages ADD COLUMN delivery_lease_until TEXT;
    ALTER TABLE messages ADD COLUMN delivered_at TEXT;
    ALTER TABLE messages ADD COLUMN delivery_error TEXT;
    CREATE INDEX messages_delivery ON messages (delivery, next_attempt_at);
    """,
    # 5: SPEC §15 "Labels persist": the labels of what was written into each row (a sorted
    # JSON list), and those of each field of a tool's state (a JSON object of lists)
    """
    ALTER TABLE tasks ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE notes ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE memories ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE memory_items ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE schedules ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE messages ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE threads ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE tool_state ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
    """,
    # 6: SPEC §21: the labels of the turn that queued an A2A or background task (the task's turn
    # starts with them), and planned work: a forged tool and its input (JSON) in place of a
    # prompt, for a schedule, an A2A task or a background task
    """
    ALTER TABLE a2a_tasks ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE background_tasks ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE schedules ADD COLUMN tool TEXT;
    ALTER TABLE schedules ADD COLUMN input TEXT;
    ALTER TABLE a2a_tasks ADD COLUMN tool TEXT;
    ALTER TABLE a2a_tasks ADD COLUMN input TEXT;
    ALTER TABLE background_tasks ADD COLUMN tool TEXT;
    ALTER TABLE background_tasks ADD COLUMN input TEXT;
    """,
    # 7: the daemon runs on DBOS Transact (docs/talond.md): leases, attempts and the turn
    # journal move into the engine's system database; a firing row is the host's record of a
    # slot (running, completed, failed, or skipped while the previous one still ran); a task
    # notes when it was handed to the engine; a message its delivery round (a re-send is a new
    # workflow); each daemon's heartbeat, for takeover and status
    """
    CREATE TABLE schedule_firings_v6 (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        schedule_id TEXT NOT NULL,
        persona TEXT NOT NULL,
        slot TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'skipped')),
        result TEXT,
        error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (schedule_id, slot)
    );
    INSERT INTO schedule_firings_v6 (seq, id, schedule_id, persona, slot, status, result, error,
        created_at, updated_at)
    SELECT seq, id, schedule_id, persona, slot,
        CASE status WHEN 'leased' THEN 'running' ELSE status END, result, error, created_at,
        updated_at
    FROM schedule_firings;
    DROP TABLE schedule_firings;
    ALTER TABLE schedule_firings_v6 RENAME TO schedule_firings;
    CREATE INDEX schedule_firings_status ON schedule_firings (status, schedule_id);
    DROP TABLE turn_journal;
    ALTER TABLE a2a_tasks ADD COLUMN enqueued_at TEXT;
    ALTER TABLE background_tasks ADD COLUMN enqueued_at TEXT;
    ALTER TABLE messages ADD COLUMN delivery_round INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE talond_daemons (
        id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        system_database TEXT NOT NULL,
        timezone TEXT NOT NULL,
        started_at TEXT NOT NULL,
        heartbeat_at TEXT NOT NULL,
        stopped_at TEXT,
        taken_over_by TEXT
    );
    """,
)

SCHEMA_VERSION = len(MIGRATIONS)


class DatabaseError(Exception):
    """The database cannot be opened or is of an unknown (newer) schema."""


def default_db_path() -> Path:
    """`host.db` in the user's data directory (created on first use)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("forgec")) / "host.db"


def now_iso() -> str:
    """The current time, ISO 8601 UTC with milliseconds and `Z` (sorts as text)."""
    stamp = _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def connect(path: Path | str) -> sqlite3.Connection:
    """A read-write connection with WAL, foreign keys and a busy timeout; migrated."""
    p = Path(path).expanduser()
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(p), timeout=5.0, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise DatabaseError(f"cannot open database {p}: {exc}") from None
    conn.row_factory = sqlite3.Row
    conn.create_function("forgec_casefold", 1, _casefold, deterministic=True)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
        migrate(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise DatabaseError(f"cannot use database {p}: {exc}") from None
    except DatabaseError:
        conn.close()
        raise
    return conn


def _casefold(value: Any) -> Any:
    return value.casefold() if isinstance(value, str) else value


def schema_version(conn: sqlite3.Connection) -> int:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    row = conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()
    return int(row[0] or 0)


def migrate(conn: sqlite3.Connection) -> int:
    """Apply every missing migration, each atomically; return the resulting version."""
    current = schema_version(conn)
    if current > SCHEMA_VERSION:
        raise DatabaseError(
            f"database schema version {current} is newer than this forgec knows "
            f"({SCHEMA_VERSION}); upgrade forgec"
        )
    for version in range(current + 1, SCHEMA_VERSION + 1):
        script = MIGRATIONS[version - 1]
        # executescript commits first, so wrap the script in its own explicit transaction
        try:
            conn.executescript(
                "BEGIN IMMEDIATE;\n"
                + script
                + f"\nINSERT INTO schema_migrations (version, applied_at) VALUES ({version}, "
                + f"'{now_iso()}');\nCOMMIT;"
            )
        except sqlite3.Error:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if schema_version(conn) >= version:  # another process migrated meanwhile
                continue
            raise
    return SCHEMA_VERSION


class Tx:
    """`with Tx(conn):` runs the block in one IMMEDIATE transaction (commit or roll back)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            self.conn.execute("ROLLBACK")
