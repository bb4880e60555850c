"""The daemon's durable state: every read and write of the schedule and queue tables.

This module is the one place that knows how work is claimed, kept and finished, so that a
durable-workflow engine (DBOS on PostgreSQL, say) could take it over by replacing this module
alone (docs/talond.md). The rest of the daemon sees `Work` items and calls the methods below.

**Leases.** Every piece of work is a row claimed with a lease (`owner`, `lease_until`) in one
SQLite transaction (WAL, `BEGIN IMMEDIATE`): a schedule firing, an A2A task, a background task,
a webhook delivery. The worker renews the lease while it works (`heartbeat`) and finishes the
row (`complete`/`fail`) in one transaction. A daemon killed at any moment leaves its rows
leased; once a lease has expired, the next daemon takes the row again (`attempts` + 1) — after
`MAX_ATTEMPTS` the row fails instead of being retried forever. `hand_back` (a clean stop)
expires the lease at once, so the next start takes the work without waiting.

**Firings: never twice, never lost.** A firing is the row `(schedule_id, slot)`, unique, where
`slot` is the cron time it is for. A schedule is due when the latest slot at or before now (by
the one cron rule, croniter) is later than its *anchor* — the latest slot it has a firing for,
else the time it was created. Only that latest slot is inserted, so slots missed while the
daemon was down fire once, not once per slot; the unique key makes a second insert of the same
slot a no-op, so no slot fires twice whatever happens between claim and finish.

**The journal.** A turn records each model answer and each tool call before and after it runs
(`turn_journal`). A turn taken again after a crash replays its journal instead of asking again:
model answers are reused, finished tool calls are not repeated, and a call that was started but
has no recorded result (the crash came during it) is answered "interrupted, not repeated" —
an effect happens at most once.

**Deliveries.** A webhook message is POSTed only after its row is marked `sending`; a definite
refusal (connection refused, an HTTP error status) puts it back `pending` with a backoff, a 2xx
marks it `delivered`. A row found `sending` with its lease expired (the daemon died during the
POST, or the answer never came) is `uncertain` and never sent again: at most once per message id.
"""

from __future__ import annotations

import datetime as _dt
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from forgec.catalog.cron import validate_cron
from forgec.daemon.clock import Clock, iso, parse_iso
from forgec.host import db as dbm
from forgec.host import labels as rowlabels
from forgec.host.db import new_id

_NEVER = _dt.datetime.max.replace(tzinfo=_dt.UTC)
MAX_ATTEMPTS = 3  # takes of one row (the first and two after crashes) before it fails
KINDS = ("firing", "a2a", "background")
_TABLE = {"firing": "schedule_firings", "a2a": "a2a_tasks", "background": "background_tasks"}
_RUNNING = {"firing": "leased", "a2a": "running", "background": "running"}


@attrs.frozen
class Work:
    """One claimed piece of work: a turn of PERSONA in THREAD with PROMPT."""

    kind: str  # firing | a2a | background
    id: str
    persona: str
    thread: str
    prompt: str
    attempts: int
    depth: int = 0  # the A2A depth of this task (0: not an A2A task)
    from_persona: str | None = None
    schedule_id: str | None = None
    slot: str | None = None
    profile: str | None = None  # background: the persona whose whole self runs it
    provider: str | None = None
    timeout_minutes: int | None = None
    schedule: dict[str, Any] | None = attrs.field(default=None, eq=False)  # a firing's row
    # SPEC §21: the labels the turn starts with (stored with the schedule, or with the task by
    # the turn that queued it), and planned work: a forged tool and its input (JSON text)
    labels: tuple[str, ...] = ()
    tool: str | None = None
    tool_input: str | None = None


@attrs.frozen
class Delivery:
    message_id: str
    channel_id: str
    thread_id: str
    persona: str
    connector: str
    content: str
    attempts: int


def latest_slot(expr: str, now: _dt.datetime) -> _dt.datetime:
    """The latest time at or before NOW that the cron expression names."""
    from croniter import croniter

    base = now.replace(microsecond=0) + _dt.timedelta(seconds=1)
    prev: _dt.datetime = croniter(expr, base).get_prev(_dt.datetime)
    return prev.astimezone(_dt.UTC)


def next_slot(expr: str, after: _dt.datetime) -> _dt.datetime:
    from croniter import croniter

    nxt: _dt.datetime = croniter(expr, after).get_next(_dt.datetime)
    return nxt.astimezone(_dt.UTC)


def slot_text(moment: _dt.datetime) -> str:
    return moment.astimezone(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class Queue:
    """The daemon's view of the database; safe to share between its worker threads."""

    def __init__(self, db_path: Path, *, owner: str, clock: Clock, lease_seconds: int) -> None:
        self.db_path = db_path
        self.owner = owner
        self.clock = clock
        self.lease = _dt.timedelta(seconds=lease_seconds)
        self._conn = dbm.connect(db_path)
        self._lock = threading.RLock()
        # schedule id → ((cron, anchor), its next slot): a poll does cron arithmetic only for a
        # schedule that is due (a changed cron or a new firing changes the key); one entry per
        # schedule
        self._upcoming: dict[str, tuple[tuple[str, str], _dt.datetime]] = {}
        self._working: frozenset[str] = frozenset()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock, dbm.Tx(self._conn):
            yield self._conn

    def _now(self) -> _dt.datetime:
        return self.clock.now()

    def _until(self) -> str:
        return iso(self._now() + self.lease)

    # --- claiming ------------------------------------------------------------------------------

    def claim(
        self, personas: Iterable[str], limit: int, *, working: Iterable[str] = ()
    ) -> list[Work]:
        """Work to do now, claimed for this daemon: expired leases taken again first (oldest
        first), then due schedule slots, queued A2A tasks for loaded personas, queued
        background tasks. At most LIMIT items (the free workers). WORKING: the ids this
        daemon is working on, never taken again even if a heartbeat came late."""
        names = set(personas)
        self._working = frozenset(working)
        out: list[Work] = []
        for take in (self._retake, self._due_firings, self._queued_a2a, self._queued_background):
            if len(out) >= limit:
                break
            out.extend(take(names, limit - len(out)))
        return out

    def _retake(self, names: set[str], limit: int) -> list[Work]:
        now = iso(self._now())
        out: list[Work] = []
        for kind in KINDS:
            table, running = _TABLE[kind], _RUNNING[kind]
            with self._tx() as conn:
                rows = [
                    row
                    for row in conn.execute(
                        f"SELECT id, attempts FROM {table} WHERE status = ? AND owner IS NOT NULL"
                        " AND lease_until < ? ORDER BY seq LIMIT ?",
                        (running, now, limit - len(out) + len(self._working)),
                    ).fetchall()
                    if row["id"] not in self._working
                ][: limit - len(out)]
                for row in rows:
                    if row["attempts"] >= MAX_ATTEMPTS:
                        error = f"given up: the daemon stopped during it {row['attempts']} times"
                        conn.execute(
                            f"UPDATE {table} SET status = 'failed', error = ?, updated_at = ?,"
                            " lease_until = NULL WHERE id = ?",
                            (error, now, row["id"]),
                        )
                        if kind == "background":
                            self._post_completion(conn, row["id"], None, error, now)
                        continue
                    conn.execute(
                        f"UPDATE {table} SET owner = ?, lease_until = ?, attempts = attempts + 1,"
                        " updated_at = ? WHERE id = ?",
                        (self.owner, self._until(), now, row["id"]),
                    )
            for row in rows:
                if row["attempts"] < MAX_ATTEMPTS:
                    work = self._load(kind, row["id"])
                    if work is not None:
                        out.append(work)
        return out

    def _due_firings(self, names: set[str], limit: int) -> list[Work]:
        now = self._now()
        out: list[Work] = []
        schedules = self._read(
            "SELECT s.id, s.cron_expr, s.created_at,"
            " (SELECT MAX(f.slot) FROM schedule_firings f WHERE f.schedule_id = s.id) AS anchor"
            " FROM schedules s WHERE s.enabled = 1 ORDER BY s.seq"
        )
        for row in schedules:
            if len(out) >= limit:
                break
            anchor_text = row["anchor"] or row["created_at"]
            key = (row["cron_expr"], anchor_text)
            cached = self._upcoming.get(row["id"])
            upcoming = cached[1] if cached is not None and cached[0] == key else None
            if upcoming is not None and now < upcoming:
                continue  # not due: no cron arithmetic on this poll
            anchor = parse_iso(anchor_text)
            try:
                if upcoming is None:
                    if validate_cron(row["cron_expr"]) is not None:
                        raise ValueError("refused by the one cron rule")
                    upcoming = next_slot(row["cron_expr"], anchor)
                    self._upcoming[row["id"]] = (key, upcoming)
                    if now < upcoming:
                        continue
                slot = latest_slot(row["cron_expr"], now)
            except Exception:  # a row written around the cron rule: never fires, never crashes
                self._upcoming[row["id"]] = (key, _NEVER)
                continue
            if slot <= anchor:
                continue
            fid = new_id("fire")
            stamp = iso(now)
            with self._tx() as conn:
                cur = conn.execute(
                    "INSERT OR IGNORE INTO schedule_firings (id, schedule_id, persona, slot,"
                    " status, owner, lease_until, attempts, created_at, updated_at)"
                    " SELECT ?, id, persona, ?, 'leased', ?, ?, 1, ?, ? FROM schedules"
                    " WHERE id = ? AND enabled = 1",
                    (fid, slot_text(slot), self.owner, self._until(), stamp, stamp, row["id"]),
                )
            if cur.rowcount == 1:
                work = self._load("firing", fid)
                if work is not None:
                    out.append(work)
        return out

    def _queued_a2a(self, names: set[str], limit: int) -> list[Work]:
        if not names:
            return []
        marks = ",".join("?" * len(names))
        rows = self._read(
            f"SELECT id FROM a2a_tasks WHERE status = 'queued' AND target_persona IN ({marks})"
            " ORDER BY seq LIMIT ?",
            (*sorted(names), limit),
        )
        return self._take_queued("a2a", [r["id"] for r in rows])

    def _queued_background(self, names: set[str], limit: int) -> list[Work]:
        rows = self._read(
            "SELECT id FROM background_tasks WHERE status = 'queued' ORDER BY seq LIMIT ?",
            (limit,),
        )
        return self._take_queued("background", [r["id"] for r in rows])

    def _take_queued(self, kind: str, ids: list[str]) -> list[Work]:
        table = _TABLE[kind]
        out: list[Work] = []
        for wid in ids:
            now = self._now()
            with self._tx() as conn:
                extra = ""
                args: tuple[Any, ...] = (self.owner, self._until(), iso(now))
                if kind == "background":
                    # the timeout runs from the start of the work, not from the spawn
                    minutes = conn.execute(
                        "SELECT timeout_minutes FROM background_tasks WHERE id = ?", (wid,)
                    ).fetchone()[0]
                    extra = ", deadline = ?"
                    args = (*args, iso(now + _dt.timedelta(minutes=int(minutes))))
                cur = conn.execute(
                    f"UPDATE {table} SET status = 'running', owner = ?, lease_until = ?,"
                    f" attempts = 1, updated_at = ?{extra} WHERE id = ? AND status = 'queued'",
                    (*args, wid),
                )
            if cur.rowcount == 1:
                work = self._load(kind, wid)
                if work is not None:
                    out.append(work)
        return out

    def _load(self, kind: str, wid: str) -> Work | None:
        if kind == "firing":
            row = self._one(
                "SELECT f.id, f.slot, f.attempts, f.schedule_id, s.persona, s.thread_id,"
                " s.prompt, s.prompt_file, s.label, s.cron_expr, s.labels, s.tool, s.input"
                " FROM schedule_firings f"
                " LEFT JOIN schedules s ON s.id = f.schedule_id WHERE f.id = ?",
                (wid,),
            )
            if row is None:
                return None
            if row["persona"] is None:  # deleted while the firing was leased
                self._finish("firing", wid, "failed", None, "the schedule was deleted")
                return None
            return Work(
                kind="firing",
                id=wid,
                persona=row["persona"],
                thread=row["thread_id"] or "default",
                prompt="",  # the schedule's: read by the agent (prompt, promptFile, label)
                attempts=row["attempts"],
                schedule={k: row[k] for k in ("prompt", "prompt_file", "label", "cron_expr")}
                | {"id": row["schedule_id"]},
                schedule_id=row["schedule_id"],
                slot=row["slot"],
                labels=_labels(row["labels"]),
                tool=row["tool"],
                tool_input=row["input"],
            )
        if kind == "a2a":
            row = self._one("SELECT * FROM a2a_tasks WHERE id = ?", (wid,))
            if row is None:
                return None
            return Work(
                kind="a2a",
                id=wid,
                persona=row["target_persona"],
                thread=row["thread_id"] or "default",
                prompt=row["message"],
                attempts=row["attempts"],
                depth=row["depth"],
                from_persona=row["from_persona"],
                labels=_labels(row["labels"]),
                tool=row["tool"],
                tool_input=row["input"],
            )
        row = self._one("SELECT * FROM background_tasks WHERE id = ?", (wid,))
        if row is None:
            return None
        return Work(
            kind="background",
            id=wid,
            persona=row["profile"] or row["persona"],
            thread=row["thread_id"] or "default",
            prompt=row["prompt"],
            attempts=row["attempts"],
            from_persona=row["persona"],
            profile=row["profile"],
            provider=row["provider"],
            timeout_minutes=row["timeout_minutes"],
            labels=_labels(row["labels"]),
            tool=row["tool"],
            tool_input=row["input"],
        )

    # --- while working, and after ----------------------------------------------------------------

    def heartbeat(self, work: Work) -> bool:
        """Renew the lease; False when this daemon no longer holds it (the work was cancelled,
        or finished elsewhere): the worker stops."""
        table = _TABLE[work.kind]
        with self._tx() as conn:
            cur = conn.execute(
                f"UPDATE {table} SET lease_until = ? WHERE id = ? AND owner = ? AND status = ?",
                (self._until(), work.id, self.owner, _RUNNING[work.kind]),
            )
        return cur.rowcount == 1

    def complete(self, work: Work, result: Any, labels: Iterable[str] = ()) -> bool:
        """Finish WORK with RESULT; LABELS: what the turn's context carried at its end (SPEC
        §21), kept with what it writes here (its answer in the thread, the task's row)."""
        return self._finish(
            work.kind, work.id, "completed", result, None, work=work, labels=frozenset(labels)
        )

    def fail(self, work: Work, error: str) -> bool:
        return self._finish(work.kind, work.id, "failed", None, error, work=work)

    def _finish(
        self,
        kind: str,
        wid: str,
        status: str,
        result: Any,
        error: str | None,
        *,
        work: Work | None = None,
        labels: frozenset[str] = frozenset(),
    ) -> bool:
        table = _TABLE[kind]
        now = iso(self._now())
        text = None if result is None else json.dumps(result, ensure_ascii=False)
        with self._tx() as conn:
            cur = conn.execute(
                f"UPDATE {table} SET status = ?, result = ?, error = ?, updated_at = ?,"
                " lease_until = NULL WHERE id = ? AND status = ?"
                + (" AND owner = ?" if work is not None else ""),
                (status, text, error, now, wid, _RUNNING[kind])
                + ((self.owner,) if work is not None else ()),
            )
            if cur.rowcount == 1 and kind == "firing" and work is not None and result:
                # the answer lands in the schedule's thread in the same transaction as the
                # firing's end: a crash leaves both or neither
                answer = result.get("answer") if isinstance(result, dict) else None
                if answer:
                    post_message(
                        conn,
                        work.persona,
                        work.thread,
                        answer,
                        channel="talond",
                        now=now,
                        labels=labels,
                    )
            if cur.rowcount == 1 and kind in ("a2a", "background"):
                rowlabels.add(conn, table, wid, labels)  # the answer a sender reads back
            if cur.rowcount == 1 and kind == "background":
                self._post_completion(conn, wid, result, error, now)
        return cur.rowcount == 1

    @staticmethod
    def _post_completion(
        conn: sqlite3.Connection, wid: str, result: Any, error: str | None, now: str
    ) -> None:
        """A background task's end goes into the thread it was spawned from (SPEC §19)."""
        row = conn.execute(
            "SELECT persona, thread_id FROM background_tasks WHERE id = ?", (wid,)
        ).fetchone()
        summary = f"failed: {error}" if error else f"completed.\n\n{_answer_text(result)}"
        post_message(
            conn,
            row["persona"],
            row["thread_id"] or "default",
            f"Background task `{wid}` {summary}",
            channel="background",
            now=now,
            labels=rowlabels.stored(conn, "background_tasks", wid),
        )

    def hand_back(self, work: Work) -> None:
        """A clean stop during the work: expire the lease now (the journal keeps what was
        done), so the next daemon takes it at once."""
        table = _TABLE[work.kind]
        with self._tx() as conn:
            # a hand-back is not a crash: it does not count towards MAX_ATTEMPTS
            conn.execute(
                f"UPDATE {table} SET lease_until = ?, attempts = attempts - 1"
                " WHERE id = ? AND owner = ? AND status = ?",
                (
                    iso(self._now() - _dt.timedelta(seconds=1)),
                    work.id,
                    self.owner,
                    _RUNNING[work.kind],
                ),
            )

    def hand_back_unfinished(self) -> None:
        """Every row this daemon still holds (a stop that could not finish them)."""
        now = iso(self._now() - _dt.timedelta(seconds=1))
        with self._tx() as conn:
            for kind in KINDS:
                conn.execute(
                    f"UPDATE {_TABLE[kind]} SET lease_until = ?, attempts = attempts - 1"
                    " WHERE owner = ? AND status = ?",
                    (now, self.owner, _RUNNING[kind]),
                )

    # --- the journal ---------------------------------------------------------------------------

    def journal(self, work_id: str) -> list[tuple[str, Any]]:
        rows = self._read(
            "SELECT kind, body FROM turn_journal WHERE work_id = ? ORDER BY step", (work_id,)
        )
        return [(r["kind"], json.loads(r["body"])) for r in rows]

    def record(self, work: Work, kind: str, body: Any) -> None:
        """Append to the work's journal, only while this daemon holds its lease."""
        table = _TABLE[work.kind]
        with self._tx() as conn:
            held = conn.execute(
                f"SELECT 1 FROM {table} WHERE id = ? AND owner = ? AND status = ?",
                (work.id, self.owner, _RUNNING[work.kind]),
            ).fetchone()
            if held is None:
                raise LeaseLost(work.id)
            step = conn.execute(
                "SELECT COALESCE(MAX(step), -1) + 1 FROM turn_journal WHERE work_id = ?",
                (work.id,),
            ).fetchone()[0]
            conn.execute(
                "INSERT INTO turn_journal (work_id, step, kind, body, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (work.id, step, kind, json.dumps(body, ensure_ascii=False), iso(self._now())),
            )

    # --- deliveries ----------------------------------------------------------------------------

    def outbox_delivered(self) -> list[str]:
        """Messages of the store-only connectors are delivered by being in the outbox: mark
        every pending one (returns their ids, for the log)."""
        now = iso(self._now())
        with self._tx() as conn:
            rows = conn.execute(
                "SELECT id FROM messages WHERE delivery = 'pending' AND connector != 'webhook'"
                " ORDER BY seq LIMIT 500"
            ).fetchall()
            conn.executemany(
                "UPDATE messages SET delivery = 'delivered', delivered_at = ? WHERE id = ?",
                [(now, r["id"]) for r in rows],
            )
        return [r["id"] for r in rows]

    def claim_deliveries(self, limit: int) -> list[Delivery]:
        now = iso(self._now())
        with self._tx() as conn:
            # the daemon died during these POSTs, or their answer never came: never resent
            conn.execute(
                "UPDATE messages SET delivery = 'uncertain', delivery_error = ?"
                " WHERE delivery = 'sending' AND delivery_lease_until < ?",
                ("the delivery was interrupted; not sent again (at most once)", now),
            )
            rows = conn.execute(
                "SELECT * FROM messages WHERE delivery = 'pending' AND connector = 'webhook'"
                " AND (next_attempt_at IS NULL OR next_attempt_at <= ?) ORDER BY seq LIMIT ?",
                (now, limit),
            ).fetchall()
            conn.executemany(
                "UPDATE messages SET delivery = 'sending', delivery_owner = ?,"
                " delivery_lease_until = ?, delivery_attempts = delivery_attempts + 1"
                " WHERE id = ? AND delivery = 'pending'",
                [(self.owner, self._until(), r["id"]) for r in rows],
            )
        return [
            Delivery(
                message_id=r["id"],
                channel_id=r["channel_id"],
                thread_id=r["thread_id"],
                persona=r["persona"],
                connector=r["connector"],
                content=r["content"],
                attempts=r["delivery_attempts"] + 1,
            )
            for r in rows
        ]

    def delivery_done(
        self, message_id: str, outcome: str, error: str | None = None, retry_at: str | None = None
    ) -> None:
        """OUTCOME: delivered | pending (retry at RETRY_AT) | failed | uncertain."""
        with self._tx() as conn:
            conn.execute(
                "UPDATE messages SET delivery = ?, delivery_error = ?, next_attempt_at = ?,"
                " delivered_at = CASE WHEN ? = 'delivered' THEN ? ELSE delivered_at END,"
                " delivery_lease_until = NULL WHERE id = ? AND delivery = 'sending'"
                " AND delivery_owner = ?",
                (outcome, error, retry_at, outcome, iso(self._now()), message_id, self.owner),
            )

    # --- status --------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """What `forgec talond status` shows: schedules (next run, last run and its result),
        queued and running tasks, messages waiting for or refused delivery."""
        now = self._now()
        schedules = []
        for s in self._read("SELECT * FROM schedules ORDER BY persona, seq"):
            last = self._one(
                "SELECT slot, status, result, error, attempts FROM schedule_firings"
                " WHERE schedule_id = ? ORDER BY slot DESC LIMIT 1",
                (s["id"],),
            )
            anchor = parse_iso(last["slot"] if last is not None else s["created_at"])
            try:
                due = next_slot(s["cron_expr"], max(anchor, now - _dt.timedelta(seconds=1)))
                next_run: str | None = slot_text(due) if s["enabled"] else None
                if s["enabled"] and latest_slot(s["cron_expr"], now) > anchor:
                    next_run = slot_text(latest_slot(s["cron_expr"], now))  # due now
            except Exception:
                next_run = None
            schedules.append(
                {
                    "scheduleId": s["id"],
                    "persona": s["persona"],
                    "cronExpr": s["cron_expr"],
                    "label": s["label"],
                    "enabled": bool(s["enabled"]),
                    "nextRun": next_run,
                    "lastRun": None
                    if last is None
                    else {
                        "slot": last["slot"],
                        "status": last["status"],
                        "result": None if last["result"] is None else json.loads(last["result"]),
                        "error": last["error"],
                        "attempts": last["attempts"],
                    },
                }
            )
        tasks = []
        for kind, sql in (
            (
                "a2a",
                "SELECT id, status, target_persona AS persona, from_persona, depth, created_at,"
                " updated_at, error FROM a2a_tasks WHERE status IN ('queued', 'running')"
                " ORDER BY seq",
            ),
            (
                "background",
                "SELECT id, status, COALESCE(profile, persona) AS persona,"
                " persona AS from_persona, NULL AS depth, created_at, updated_at, error"
                " FROM background_tasks WHERE status IN ('queued', 'running') ORDER BY seq",
            ),
        ):
            for r in self._read(sql):
                tasks.append({"kind": kind, **{k: r[k] for k in r.keys()}})  # noqa: SIM118
        firing = self._read(
            "SELECT id, schedule_id, persona, slot, attempts FROM schedule_firings"
            " WHERE status = 'leased' ORDER BY seq"
        )
        for r in firing:
            tasks.append({"kind": "firing", "status": "running", **{k: r[k] for k in r.keys()}})  # noqa: SIM118
        deliveries = [
            {k: r[k] for k in r.keys()}  # noqa: SIM118
            for r in self._read(
                "SELECT id, channel_id, connector, delivery, delivery_attempts, delivery_error"
                " FROM messages WHERE delivery IN ('pending', 'sending', 'failed', 'uncertain')"
                " ORDER BY seq"
            )
        ]
        return {
            "now": slot_text(now),
            "schedules": schedules,
            "tasks": tasks,
            "deliveries": deliveries,
        }

    # --- plumbing --------------------------------------------------------------------------

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def _one(self, sql: str, args: tuple[Any, ...] = ()) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._conn.execute(sql, args).fetchone()
            return row


class LeaseLost(Exception):
    """This daemon no longer holds the work's lease: stop without finishing it."""


def _answer_text(result: Any) -> str:
    text = result.get("answer") if isinstance(result, dict) else result
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    return text if len(text) <= 4000 else text[:4000] + " …"


def _labels(text: Any) -> tuple[str, ...]:
    try:
        value = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        return ()
    return tuple(sorted(x for x in value if isinstance(x, str))) if isinstance(value, list) else ()


def post_message(
    conn: sqlite3.Connection,
    persona: str,
    thread: str,
    text: str,
    *,
    channel: str,
    now: str,
    labels: Iterable[str] = (),
) -> str:
    """A message into THREAD (the outbox), as the daemon's turns and completions write them,
    with LABELS: those of the turn that wrote it (SPEC §21)."""
    conn.execute(
        "INSERT INTO threads (id, persona, created_at) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING",
        (thread, persona, now),
    )
    mid = new_id("msg")
    conn.execute(
        "INSERT INTO messages (id, thread_id, persona, channel_id, connector, content, markdown,"
        " created_at) VALUES (?, ?, ?, ?, 'outbox', ?, ?, ?)",
        (mid, thread, persona, channel, text, text, now),
    )
    rowlabels.add(conn, "messages", mid, labels)
    return mid
