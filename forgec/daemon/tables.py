"""The host's tables as the daemon reads and writes them: the truth the engine is derived from.

DBOS Transact (`forgec.daemon.engine`) keeps the daemon's durable execution state — which
workflow runs where, each step's checkpointed output, queues, recovery. The host's own tables
(schedules, their firings, A2A and background tasks, messages — the ones `db.query` reads) stay
in the host's SQLite database, and this module is the one place the daemon touches them:

- **slots**: which schedule slot is due (the one cron rule, croniter, read in `[talond]
  timezone`), and the firing row that records it — `running`, `completed`, `failed`, or
  `skipped` when it came while the schedule's previous firing still ran;
- **tasks**: queued A2A and background rows handed to the engine (`enqueued_at`), started
  (`running`) and finished, every change guarded by the status it expects, so a step the
  engine runs again after a crash changes nothing twice;
- **messages**: the outbox marked delivered; webhook messages handed to the engine
  (`sending`), their attempts, `delivered` or `failed`, and a person's re-send;
- **daemons**: each daemon's heartbeat, for takeover and for `talond status`;
- **status**, **schedules** and **messages** as the CLI shows them.
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
from zoneinfo import ZoneInfo

import attrs

from forgec.catalog.cron import validate_cron
from forgec.daemon.clock import Clock, iso, parse_iso
from forgec.host import db as dbm
from forgec.host import row_labels as rowlabels

_NEVER = _dt.datetime.max.replace(tzinfo=_dt.UTC)
KINDS = ("firing", "a2a", "background")
_TASK_TABLE = {"a2a": "a2a_tasks", "background": "background_tasks"}


@attrs.frozen
class Work:
    """One turn to run: of PERSONA in THREAD with PROMPT (a checkpointed step's output, so a
    replayed turn starts from exactly what the first run read)."""

    kind: str  # firing | a2a | background
    id: str  # the workflow id: fire:<schedule>:<slot>, or the task id
    persona: str
    thread: str
    prompt: str
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

    def to_json(self) -> dict[str, Any]:
        out = attrs.asdict(self)
        out["labels"] = list(self.labels)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Work:
        return cls(**{**data, "labels": tuple(data.get("labels") or ())})


@attrs.frozen
class Delivery:
    message_id: str
    channel_id: str
    thread_id: str
    persona: str
    connector: str
    content: str


def firing_id(schedule_id: str, slot: str) -> str:
    return f"fire:{schedule_id}:{slot}"


def latest_slot(expr: str, now: _dt.datetime, zone: str = "UTC") -> _dt.datetime:
    """The latest time at or before NOW that the cron expression names, read in ZONE."""
    from croniter import croniter

    base = now.astimezone(ZoneInfo(zone)).replace(microsecond=0) + _dt.timedelta(seconds=1)
    prev: _dt.datetime = croniter(expr, base).get_prev(_dt.datetime)
    return prev.astimezone(_dt.UTC)


def next_slot(expr: str, after: _dt.datetime, zone: str = "UTC") -> _dt.datetime:
    from croniter import croniter

    nxt: _dt.datetime = croniter(expr, after.astimezone(ZoneInfo(zone))).get_next(_dt.datetime)
    return nxt.astimezone(_dt.UTC)


def slot_text(moment: _dt.datetime) -> str:
    return moment.astimezone(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class Tables:
    """The daemon's view of the host database; safe to share between its threads."""

    def __init__(self, db_path: Path, *, clock: Clock, zone: str = "UTC") -> None:
        self.db_path = db_path
        self.clock = clock
        self.zone = zone
        self._conn = dbm.connect(db_path)
        self._lock = threading.RLock()
        # schedule id → ((cron, anchor), its next slot): a poll does cron arithmetic only for a
        # schedule that is due (a changed cron or a new firing changes the key)
        self._upcoming: dict[str, tuple[tuple[str, str], _dt.datetime]] = {}

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock, dbm.Tx(self._conn):
            yield self._conn

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def _one(self, sql: str, args: tuple[Any, ...] = ()) -> sqlite3.Row | None:
        with self._lock:
            row: sqlite3.Row | None = self._conn.execute(sql, args).fetchone()
            return row

    def now(self) -> _dt.datetime:
        return self.clock.now()

    # --- slots ---------------------------------------------------------------------------------

    def due_slots(self) -> list[tuple[str, str, bool]]:
        """(schedule id, slot, its previous firing still runs) for every enabled schedule whose
        latest slot at or before now is later than its anchor (the latest slot it has a firing
        row for, else its creation): only that latest slot, so slots missed while no daemon ran
        fire once."""
        now = self.now()
        out: list[tuple[str, str, bool]] = []
        rows = self._read(
            "SELECT s.id, s.cron_expr, s.created_at,"
            " (SELECT MAX(f.slot) FROM schedule_firings f WHERE f.schedule_id = s.id) AS anchor,"
            " EXISTS (SELECT 1 FROM schedule_firings f WHERE f.schedule_id = s.id"
            "   AND f.status = 'running') AS busy"
            " FROM schedules s WHERE s.enabled = 1 ORDER BY s.seq"
        )
        for row in rows:
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
                    upcoming = next_slot(row["cron_expr"], anchor, self.zone)
                    self._upcoming[row["id"]] = (key, upcoming)
                    if now < upcoming:
                        continue
                slot = latest_slot(row["cron_expr"], now, self.zone)
            except Exception:  # a row written around the cron rule: never fires, never crashes
                self._upcoming[row["id"]] = (key, _NEVER)
                continue
            if slot > anchor:
                out.append((row["id"], slot_text(slot), bool(row["busy"])))
        return out

    def record_slot(
        self, schedule_id: str, slot: str, status: str, error: str | None = None
    ) -> bool:
        """The firing row of SLOT (`running` when handed to the engine, `skipped` when its
        previous firing still ran); False when a row for that slot was already there."""
        stamp = iso(self.now())
        with self._tx() as conn:
            cur = conn.execute(
                "INSERT INTO schedule_firings (id, schedule_id, persona, slot, status, error,"
                " created_at, updated_at) SELECT ?, id, persona, ?, ?, ?, ?, ? FROM schedules"
                " WHERE id = ? ON CONFLICT (schedule_id, slot) DO NOTHING",
                (firing_id(schedule_id, slot), slot, status, error, stamp, stamp, schedule_id),
            )
        return cur.rowcount == 1

    # --- tasks ---------------------------------------------------------------------------------

    def queued_tasks(self, kind: str, personas: Iterable[str], limit: int = 500) -> list[str]:
        """Queued tasks not yet handed to the engine (A2A: only for loaded personas)."""
        table = _TASK_TABLE[kind]
        if kind == "a2a":
            names = sorted(personas)
            if not names:
                return []
            marks = ",".join("?" * len(names))
            rows = self._read(
                f"SELECT id FROM {table} WHERE status = 'queued' AND enqueued_at IS NULL"
                f" AND target_persona IN ({marks}) ORDER BY seq LIMIT ?",
                (*names, limit),
            )
        else:
            rows = self._read(
                f"SELECT id FROM {table} WHERE status = 'queued' AND enqueued_at IS NULL"
                " ORDER BY seq LIMIT ?",
                (limit,),
            )
        return [r["id"] for r in rows]

    def mark_enqueued(self, kind: str, task_id: str) -> None:
        with self._tx() as conn:
            conn.execute(
                f"UPDATE {_TASK_TABLE[kind]} SET enqueued_at = ? WHERE id = ?",
                (iso(self.now()), task_id),
            )

    def begin(self, kind: str, key: str) -> dict[str, Any] | None:
        """Start the work KEY (a firing id or a task id): its row `running`, and what the turn
        needs (`Work.to_json`); None when it must not run (cancelled, finished, its schedule
        deleted). Run again after a crash, it answers the same for work still running."""
        now = self.now()
        stamp = iso(now)
        if kind == "firing":
            _, schedule_id, slot = key.split(":", 2)
            with self._tx() as conn:
                # the poller records the slot right after handing it over; whichever comes
                # first writes the row (a `skipped` row written by another daemon wins)
                conn.execute(
                    "INSERT INTO schedule_firings (id, schedule_id, persona, slot, status,"
                    " created_at, updated_at) SELECT ?, id, persona, ?, 'running', ?, ?"
                    " FROM schedules WHERE id = ? ON CONFLICT (schedule_id, slot) DO NOTHING",
                    (key, slot, stamp, stamp, schedule_id),
                )
                row = conn.execute(
                    "SELECT f.id, f.slot, f.status, f.schedule_id, s.persona, s.thread_id,"
                    " s.prompt, s.prompt_file, s.label, s.cron_expr, s.labels, s.tool, s.input"
                    " FROM schedule_firings f"
                    " LEFT JOIN schedules s ON s.id = f.schedule_id WHERE f.id = ?",
                    (key,),
                ).fetchone()
                if row is None or row["status"] != "running":
                    return None
                if row["persona"] is None:
                    conn.execute(
                        "UPDATE schedule_firings SET status = 'failed', error = ?, updated_at = ?"
                        " WHERE id = ? AND status = 'running'",
                        ("the schedule was deleted", stamp, key),
                    )
                    return None
            return Work(
                kind="firing",
                id=key,
                persona=row["persona"],
                thread=row["thread_id"] or "default",
                prompt="",  # the schedule's: read by the agent (prompt, promptFile, label)
                schedule={k: row[k] for k in ("prompt", "prompt_file", "label", "cron_expr")}
                | {"id": row["schedule_id"]},
                schedule_id=row["schedule_id"],
                slot=row["slot"],
                labels=_labels(row["labels"]),
                tool=row["tool"],
                tool_input=row["input"],
            ).to_json()
        table = _TASK_TABLE[kind]
        with self._tx() as conn:
            extra: str = ""
            args: tuple[Any, ...] = ()
            if kind == "background":
                # the timeout runs from the start of the work, not from the spawn
                extra = ", deadline = CASE WHEN status = 'queued' THEN ? ELSE deadline END"
                minutes = conn.execute(
                    "SELECT timeout_minutes FROM background_tasks WHERE id = ?", (key,)
                ).fetchone()
                if minutes is None:
                    return None
                args = (iso(now + _dt.timedelta(minutes=int(minutes[0]))),)
            conn.execute(
                f"UPDATE {table} SET status = 'running', updated_at = ?{extra}"
                " WHERE id = ? AND status IN ('queued', 'running')",
                (stamp, *args, key),
            )
            row = conn.execute(f"SELECT * FROM {table} WHERE id = ?", (key,)).fetchone()
        if row is None or row["status"] != "running":
            return None
        labels = _labels(row["labels"])
        if kind == "a2a":
            return Work(
                kind="a2a",
                id=key,
                persona=row["target_persona"],
                thread=row["thread_id"] or "default",
                prompt=row["message"],
                depth=row["depth"],
                from_persona=row["from_persona"],
                labels=labels,
                tool=row["tool"],
                tool_input=row["input"],
            ).to_json()
        return Work(
            kind="background",
            id=key,
            persona=row["profile"] or row["persona"],
            thread=row["thread_id"] or "default",
            prompt=row["prompt"],
            from_persona=row["persona"],
            profile=row["profile"],
            provider=row["provider"],
            timeout_minutes=row["timeout_minutes"],
            labels=labels,
            tool=row["tool"],
            tool_input=row["input"],
        ).to_json()

    def still_running(self, kind: str, key: str) -> bool:
        """False once the work's row is no longer running (a background task cancelled)."""
        table = "schedule_firings" if kind == "firing" else _TASK_TABLE[kind]
        row = self._one(f"SELECT status FROM {table} WHERE id = ?", (key,))
        return row is not None and row["status"] == "running"

    def finish(
        self, work: dict[str, Any], result: Any, error: str | None, labels: Iterable[str] = ()
    ) -> bool:
        """End the work's row (once: a replayed finish changes nothing); a firing's answer is
        posted into its schedule's thread and a background task's end into the thread it was
        spawned from, in the same transaction."""
        kind, key = work["kind"], work["id"]
        table = "schedule_firings" if kind == "firing" else _TASK_TABLE[kind]
        status = "failed" if error is not None else "completed"
        now = iso(self.now())
        text = None if result is None else json.dumps(result, ensure_ascii=False)
        with self._tx() as conn:
            cur = conn.execute(
                f"UPDATE {table} SET status = ?, result = ?, error = ?, updated_at = ?"
                " WHERE id = ? AND status = 'running'",
                (status, text, error, now, key),
            )
            done = cur.rowcount == 1
            if done and kind == "firing" and isinstance(result, dict) and result.get("answer"):
                post_message(
                    conn,
                    work["persona"],
                    work["thread"],
                    str(result["answer"]),
                    channel="talond",
                    now=now,
                    labels=labels,
                )
            if done and kind in ("a2a", "background"):
                rowlabels.add(conn, table, key, labels)  # the answer a sender reads back
            if done and kind == "background":
                self._post_completion(conn, key, result, error, now)
        return done

    @staticmethod
    def _post_completion(
        conn: sqlite3.Connection,
        wid: str,
        result: Any,
        error: str | None,
        now: str,
    ) -> None:
        """A background task's end goes into the thread it was spawned from (SPEC §19), with
        the labels the task's row carries (SPEC §21)."""
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

    # --- deliveries ----------------------------------------------------------------------------

    def outbox_delivered(self) -> list[str]:
        """Messages of the store-only connectors are delivered by being in the outbox: mark
        every pending one (returns their ids, for the log)."""
        now = iso(self.now())
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

    def pending_deliveries(self, limit: int = 500) -> list[tuple[str, int]]:
        """Webhook messages not yet handed to the engine: (message id, delivery round)."""
        rows = self._read(
            "SELECT id, delivery_round FROM messages WHERE delivery = 'pending'"
            " AND connector = 'webhook' ORDER BY seq LIMIT ?",
            (limit,),
        )
        return [(r["id"], r["delivery_round"]) for r in rows]

    def mark_sending(self, message_id: str) -> None:
        with self._tx() as conn:
            conn.execute(
                "UPDATE messages SET delivery = 'sending' WHERE id = ? AND delivery = 'pending'",
                (message_id,),
            )

    def delivery(self, message_id: str) -> Delivery | None:
        r = self._one("SELECT * FROM messages WHERE id = ?", (message_id,))
        if r is None:
            return None
        return Delivery(
            message_id=r["id"],
            channel_id=r["channel_id"],
            thread_id=r["thread_id"],
            persona=r["persona"],
            connector=r["connector"],
            content=r["content"],
        )

    def delivery_record(self, message_id: str) -> dict[str, Any] | None:
        """What the messages row says of its delivery: `delivery` (its state),
        `delivery_attempts`, `delivery_error`, `next_attempt_at`."""
        r = self._one(
            "SELECT delivery, delivery_attempts, delivery_error, next_attempt_at"
            " FROM messages WHERE id = ?",
            (message_id,),
        )
        return None if r is None else dict(r)

    def delivery_attempt(
        self, message_id: str, outcome: str, error: str | None, retry_at: str | None
    ) -> None:
        """After one POST: OUTCOME is delivered | retry (at RETRY_AT) | failed."""
        now = iso(self.now())
        state = {"delivered": "delivered", "failed": "failed"}.get(outcome, "sending")
        with self._tx() as conn:
            conn.execute(
                "UPDATE messages SET delivery = ?, delivery_error = ?, next_attempt_at = ?,"
                " delivery_attempts = delivery_attempts + 1,"
                " delivered_at = CASE WHEN ? = 'delivered' THEN ? ELSE delivered_at END"
                " WHERE id = ? AND delivery = 'sending'",
                (state, error, retry_at, state, now, message_id),
            )

    def retry_failed(self, message_id: str | None = None) -> list[str]:
        """A person's re-send: failed messages (or the one named) back to `pending`, in a new
        delivery round (a new engine workflow)."""
        where = "delivery = 'failed'" + (" AND id = ?" if message_id else "")
        args: tuple[Any, ...] = (message_id,) if message_id else ()
        with self._tx() as conn:
            rows = conn.execute(f"SELECT id FROM messages WHERE {where}", args).fetchall()
            conn.execute(
                "UPDATE messages SET delivery = 'pending', delivery_round = delivery_round + 1,"
                f" delivery_error = NULL, next_attempt_at = NULL WHERE {where}",
                args,
            )
        return [r["id"] for r in rows]

    # --- daemons -------------------------------------------------------------------------------

    def register(self, daemon_id: str, host: str, pid: int, system_database: str) -> None:
        stamp = iso(self.now())
        with self._tx() as conn:
            conn.execute(
                "INSERT INTO talond_daemons (id, host, pid, system_database, timezone,"
                " started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (daemon_id, host, pid, system_database, self.zone, stamp, stamp),
            )

    def heartbeat(self, daemon_id: str) -> None:
        with self._tx() as conn:
            conn.execute(
                "UPDATE talond_daemons SET heartbeat_at = ? WHERE id = ?",
                (iso(self.now()), daemon_id),
            )

    def stopped(self, daemon_id: str) -> None:
        with self._tx() as conn:
            conn.execute(
                "UPDATE talond_daemons SET stopped_at = ?, heartbeat_at = ? WHERE id = ?",
                (iso(self.now()), iso(self.now()), daemon_id),
            )

    def others(self, daemon_id: str) -> list[sqlite3.Row]:
        """Daemons whose work nobody has taken over yet (running, stopped, or dead)."""
        return self._read(
            "SELECT * FROM talond_daemons WHERE id != ? AND taken_over_by IS NULL", (daemon_id,)
        )

    def taken_over(self, dead: str, by: str) -> None:
        stamp = iso(self.now())
        with self._tx() as conn:
            conn.execute(
                "UPDATE talond_daemons SET taken_over_by = ?, stopped_at = COALESCE(stopped_at, ?)"
                " WHERE id = ?",
                (by, stamp, dead),
            )

    # --- what the CLI shows --------------------------------------------------------------------

    def status(self, *, alive: Any = None) -> dict[str, Any]:
        """What `forgec talond status` shows: the daemons (alive or not, their heartbeats),
        schedules (next run, last run and its result, skipped slots, overdue), queued and
        running tasks, messages not delivered. ALIVE(row) says whether a daemon row is a
        running daemon (its lock held on this machine); None: by its heartbeat alone."""
        now = self.now()
        daemons = []
        for d in self._read("SELECT * FROM talond_daemons ORDER BY started_at"):
            running = d["stopped_at"] is None and d["taken_over_by"] is None
            if running and alive is not None:
                running = bool(alive(d))
            daemons.append(
                {
                    "id": d["id"],
                    "host": d["host"],
                    "pid": d["pid"],
                    "startedAt": d["started_at"],
                    "heartbeatAt": d["heartbeat_at"],
                    "stoppedAt": d["stopped_at"],
                    "running": running,
                }
            )
        live = [d for d in daemons if d["running"]]
        since = max((d["stoppedAt"] or d["heartbeatAt"] for d in daemons), default=None)
        schedules = []
        for s in self._read("SELECT * FROM schedules ORDER BY persona, seq"):
            last = self._one(
                "SELECT slot, status, result, error FROM schedule_firings"
                " WHERE schedule_id = ? AND status != 'skipped' ORDER BY slot DESC LIMIT 1",
                (s["id"],),
            )
            anchor_row = self._one(
                "SELECT MAX(slot) AS slot FROM schedule_firings WHERE schedule_id = ?", (s["id"],)
            )
            skipped = self._read(
                "SELECT slot FROM schedule_firings WHERE schedule_id = ? AND status = 'skipped'"
                " ORDER BY slot DESC LIMIT 5",
                (s["id"],),
            )
            anchor_text = (anchor_row["slot"] if anchor_row else None) or s["created_at"]
            anchor = parse_iso(anchor_text)
            overdue: str | None = None
            try:
                due = next_slot(
                    s["cron_expr"], max(anchor, now - _dt.timedelta(seconds=1)), self.zone
                )
                next_run: str | None = slot_text(due) if s["enabled"] else None
                latest = latest_slot(s["cron_expr"], now, self.zone)
                if s["enabled"] and latest > anchor:
                    next_run = slot_text(latest)  # due now
                    overdue = slot_text(latest)
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
                    "overdue": overdue if not live else None,
                    "lastRun": None
                    if last is None
                    else {
                        "slot": last["slot"],
                        "status": last["status"],
                        "result": None if last["result"] is None else json.loads(last["result"]),
                        "error": last["error"],
                    },
                    "skipped": [r["slot"] for r in skipped],
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
            (
                "firing",
                "SELECT id, status, persona, schedule_id, slot, created_at, updated_at, error"
                " FROM schedule_firings WHERE status = 'running' ORDER BY seq",
            ),
        ):
            for r in self._read(sql):
                tasks.append({"kind": kind, **{k: r[k] for k in r.keys()}})  # noqa: SIM118
        deliveries = [
            {k: r[k] for k in r.keys()}  # noqa: SIM118
            for r in self._read(
                "SELECT id, channel_id, connector, delivery, delivery_attempts, delivery_error,"
                " next_attempt_at FROM messages"
                " WHERE delivery IN ('pending', 'sending', 'failed', 'uncertain') ORDER BY seq"
            )
        ]
        return {
            "now": slot_text(now),
            "timezone": self.zone,
            "daemons": daemons,
            "running": bool(live),
            "noDaemonSince": None if live else since,
            "schedules": schedules,
            "tasks": tasks,
            "deliveries": deliveries,
        }

    def schedules(self) -> list[dict[str, Any]]:
        rows = self._read("SELECT * FROM schedules ORDER BY persona, seq")
        return [
            {
                "scheduleId": r["id"],
                "persona": r["persona"],
                "thread": r["thread_id"],
                "cronExpr": r["cron_expr"],
                "label": r["label"],
                "prompt": r["prompt"],
                "promptFile": r["prompt_file"],
                "enabled": bool(r["enabled"]),
            }
            for r in rows
        ]

    def set_schedule(self, schedule_id: str, action: str) -> bool:
        """A person's `pause`, `resume` or `delete` of a schedule; False: no such schedule."""
        stamp = iso(self.now())
        with self._tx() as conn:
            if action == "delete":
                cur = conn.execute("DELETE FROM schedules WHERE id = ?", (schedule_id,))
            else:
                cur = conn.execute(
                    "UPDATE schedules SET enabled = ?, updated_at = ? WHERE id = ?",
                    (1 if action == "resume" else 0, stamp, schedule_id),
                )
        return cur.rowcount == 1

    def messages(self, channel: str | None, limit: int) -> list[dict[str, Any]]:
        where, args = ("WHERE channel_id = ?", (channel,)) if channel else ("", ())
        rows = self._read(
            "SELECT id, channel_id, thread_id, persona, connector, content, created_at, delivery,"
            f" delivery_error FROM messages {where} ORDER BY seq DESC LIMIT ?",
            (*args, limit),
        )
        return [{k: r[k] for k in r.keys()} for r in reversed(rows)]  # noqa: SIM118


def _labels(text: Any) -> tuple[str, ...]:
    try:
        value = json.loads(text) if isinstance(text, str) else []
    except ValueError:
        return ()
    return tuple(sorted(x for x in value if isinstance(x, str))) if isinstance(value, list) else ()


def _answer_text(result: Any) -> str:
    text = result.get("answer") if isinstance(result, dict) else result
    text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    return text if len(text) <= 4000 else text[:4000] + " …"


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
    with the labels of the turn that wrote it (SPEC §21)."""
    from forgec.host.db import new_id

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
