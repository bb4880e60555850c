"""`forgec talond`: the glue between the host's tables and the engine, until told to stop.

Every `[talond] poll_ms` the daemon hands what the host tables say is due to DBOS
(`forgec.daemon.engine`): each due schedule slot as the workflow `fire:<scheduleId>:<slot>`
(or a `skipped` row when the schedule's previous firing still runs), each queued A2A and
background task as a queue entry under its task id, each pending webhook message as the
workflow `deliver:<messageId>`; the outbox's messages are marked delivered. DBOS runs them on
its queues' workers, calling back `turn` and `deliver` below, in this daemon or in any other on
the same system database.

**Liveness.** Each daemon has a row in `talond_daemons` (its heartbeat, every third of
`lease_seconds`) and holds a lock file while it lives (`<db>.talond.d/<id>.lock`). A daemon
that stopped or died leaves its unfinished workflows PENDING under its id; another daemon, or
the next start, takes them over (DBOS re-enqueues them and exactly one live daemon runs each)
once it knows the owner is gone: at once when its lock on this machine is free, else when its
heartbeat is older than `lease_seconds`. With the SQLite system database one daemon runs per
host database (a second is refused at start); with PostgreSQL several may.

**Stopping** (SIGTERM, Ctrl-C): nothing new is handed to the engine; a turn finishes the step
it is in and parks before its next model request, a delivery before its next POST or during its
wait; after `[talond] grace_seconds` (default 20) what still runs is left as it is. The
process then ends with that work PENDING in the engine, and the next start (or a peer) takes it
over from its last recorded step: nothing is lost, and nothing recorded is done again.
"""

from __future__ import annotations

import datetime as _dt
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from forgec.daemon import engine as eng
from forgec.daemon.agent import Agents, Cancelled, Stopping, TurnFailed
from forgec.daemon.clock import Clock, SystemClock, iso, parse_iso
from forgec.daemon.connectors import backoff_s, post
from forgec.daemon.log import Log
from forgec.daemon.tables import Tables, Work, firing_id
from forgec.host.config import HostConfig
from forgec.mcp.policy import ConsentPolicy

RELOAD_S = 1.0  # how often the persona folder is looked at for changes
TAKEOVER_S = 1.0  # how often stopped or dead daemons are looked for
PRUNE_S = 3600.0  # how often finished engine state past retention is pruned


class StartError(Exception):
    """The daemon cannot start (another holds the database, the engine cannot open)."""


AlreadyRunning = StartError


class DaemonLock:
    """An advisory lock on `<db>.talond.lock`, released by the OS when the process dies: one
    daemon per host database when the system database is SQLite."""

    def __init__(self, path: Path, what: str) -> None:
        self.path = path
        self.what = what
        self._fd: int | None = None

    def acquire(self) -> None:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise StartError(self.what) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    @staticmethod
    def held(path: Path) -> bool:
        """Whether a live process holds the lock at PATH (a missing file: no)."""
        import fcntl

        try:
            fd = os.open(path, os.O_RDWR)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)
        return False


def live_lock_path(db_path: Path, daemon_id: str) -> Path:
    return db_path.with_name(db_path.name + ".talond.d") / f"{daemon_id}.lock"


def alive(db_path: Path) -> Any:
    """A daemon row → whether that daemon runs (its lock held, on this machine)."""
    here = socket.gethostname()

    def check(row: Any) -> bool:
        if row["host"] != here:
            return True  # another machine: its heartbeat is all there is
        return DaemonLock.held(live_lock_path(db_path, row["id"]))

    return check


class Talond:
    def __init__(
        self,
        config: HostConfig,
        *,
        db_path: Path,
        store_path: Path | None,
        policy: ConsentPolicy,
        log: Log,
        clock: Clock | None = None,
        templates: Path | None = None,
        environ: Any = None,
    ) -> None:
        self.config = config
        self.db_path = db_path
        self.log = log
        self.clock = clock or SystemClock()
        self.host = socket.gethostname()
        self.id = f"talond-{self.host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.agents = Agents(  # a persona file that is not UTF-8 raises PersonaError here
            config,
            db_path=db_path,
            store_path=store_path,
            policy=policy,
            templates=templates,
            environ=environ,
        )
        self.stop = threading.Event()
        self.tables: Tables | None = None
        self.engine: eng.Engine | None = None
        self._active = 0
        self._parked: list[str] = []
        self._lock = threading.Lock()
        self._folder_seen = _folder_signature(config.personas_dir)
        self._last: dict[str, float] = {}

    # --- the loop ------------------------------------------------------------------------------

    def run(self, *, ready: threading.Event | None = None) -> None:
        """Until `self.stop` is set; then hands in-flight work back (docs/talond.md)."""
        bounds = self.config.talond
        url = bounds.system_database_url or eng.default_url(self.db_path)
        engine = eng.Engine(url, executor_id=self.id, workers=bounds.workers)
        locks = []
        if not engine.shared:
            single = DaemonLock(
                self.db_path.with_name(self.db_path.name + ".talond.lock"),
                f"another forgec talond is running on {self.db_path} (several daemons need "
                "a PostgreSQL [talond] system_database_url)",
            )
            single.acquire()
            locks.append(single)
        mine = DaemonLock(live_lock_path(self.db_path, self.id), "a daemon id is in use")
        mine.acquire()
        locks.append(mine)
        tables = Tables(self.db_path, clock=self.clock, zone=bounds.timezone)
        self.tables, self.engine = tables, engine
        try:
            tables.register(self.id, self.host, os.getpid(), _shown_url(url))
            eng.install(self)
            try:
                engine.launch()
            except Exception as exc:
                raise StartError(
                    f"cannot open the system database {_shown_url(url)}: "
                    f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
                ) from None
            beat = threading.Thread(target=self._beat, name="talond-heartbeat", daemon=True)
            beat.start()
            self.log.event(
                "started",
                db=str(self.db_path),
                system_database=_shown_url(url),
                timezone=bounds.timezone,
                personas=sorted(self.agents.personas),
                id=self.id,
            )
            self._persona_cards()
            if not self.agents.personas:
                self.log.event(
                    "warning",
                    message="no persona is loaded, so nothing can run: set [persona] folder to "
                    "a folder of <name>/persona.md (docs/talond.md)",
                )
            if ready is not None:
                ready.set()
            while not self.stop.is_set():
                try:
                    self._tick()
                except Exception as exc:  # a busy or broken database: say so, go on
                    self.log.event("error", what="handing work to the engine", error=str(exc))
                self.stop.wait(bounds.poll_ms / 1000)
            self._wind_down()
            tables.stopped(self.id)
        finally:
            for lock in reversed(locks):
                lock.release()
            self.log.event("stopped", id=self.id)

    def _due(self, what: str, every: float) -> bool:
        now = time.monotonic()
        if now - self._last.get(what, -1e9) < every:
            return False
        self._last[what] = now
        return True

    def _persona_cards(self) -> None:
        """SPEC §21: what each persona's labels and tools let its turns read, be steered by and
        reach; a warning line per persona that holds private data, untrusted input and
        egress at once (`forgec talond check` prints the whole card)."""
        from forgec.mcp.reach import enabled_forged, persona_labels, persona_reach

        forged = enabled_forged(self.agents.store_path)
        for name, persona in sorted(self.agents.personas.items()):
            card = persona_reach(
                name,
                persona_labels(persona, self.config),
                forged,
                self.config.flow_deny,
                self.config.allow_hosts,
            )
            legs = {leg: [i["tool"] for i in card[leg]] for leg in ("private", "untrusted")}
            egress = [i["tool"] for i in card["egress"]]
            self.log.event("persona", name=name, **legs, writes=len(card["writes"]), egress=egress)
            if card["warning"]:
                self.log.event("warning", persona=name, message=card["warning"])

    def _tick(self) -> None:
        tables, engine = self.tables, self.engine
        assert tables is not None and engine is not None
        if self._due("reload", RELOAD_S):
            self._reload()
        if self._due("takeover", TAKEOVER_S):
            self._take_over()
        for sid, slot, busy in tables.due_slots():
            if self.stop.is_set():
                return
            if busy:
                why = "skipped: the schedule's previous firing was still running"
                if tables.record_slot(sid, slot, "skipped", why):
                    self.log.event("firing", schedule=sid, slot=slot, status="skipped")
                continue
            engine.enqueue_turn("firing", firing_id(sid, slot))
            tables.record_slot(sid, slot, "running")
        for kind in ("a2a", "background"):
            for tid in tables.queued_tasks(kind, self.agents.personas):
                engine.enqueue_turn(kind, tid)
                tables.mark_enqueued(kind, tid)
        for mid, round_no in tables.pending_deliveries():
            engine.enqueue_delivery(mid, round_no)
            tables.mark_sending(mid)
        for mid in tables.outbox_delivered():
            self.log.event("delivered", message=mid, connector="outbox")
        if self._due("prune", PRUNE_S):
            days = self.config.talond.retention_days
            pruned = engine.prune(self.clock.now() - _dt.timedelta(days=days))
            if pruned:
                self.log.event("pruned", workflows=pruned, retention_days=days)

    def _beat(self) -> None:
        assert self.tables is not None
        period = max(self.config.talond.lease_seconds / 3, 0.5)
        while not self.stop.wait(period):
            try:
                self.tables.heartbeat(self.id)
            except Exception:  # a busy database: the next beat tries again
                continue

    def _reload(self) -> None:
        """Pick up a persona folder added or changed while the daemon runs."""
        seen = _folder_signature(self.config.personas_dir)
        if seen == self._folder_seen:
            return
        from forgec.host.delegation import PersonaError, load_personas

        self._folder_seen = seen
        try:
            personas = load_personas(self.config.personas_dir)
        except PersonaError as exc:
            self.log.event("error", what="reloading the personas", error=str(exc))
            return
        self.agents.personas = personas
        self.log.event("personas", personas=sorted(personas))

    def _take_over(self) -> None:
        """Recover the workflows of every daemon that stopped or died."""
        assert self.tables is not None and self.engine is not None
        lease = _dt.timedelta(seconds=self.config.talond.lease_seconds)
        now = self.clock.now()
        for row in self.tables.others(self.id):
            if row["host"] == self.host:
                gone = not DaemonLock.held(live_lock_path(self.db_path, row["id"]))
            else:
                stale = parse_iso(row["heartbeat_at"]) + lease < now
                gone = row["stopped_at"] is not None or stale
            if not gone:
                continue
            recovered = self.engine.recover(row["id"])
            self.tables.taken_over(row["id"], self.id)
            live_lock_path(self.db_path, row["id"]).unlink(missing_ok=True)
            self.log.event("took over", daemon=row["id"], workflows=recovered)

    def _wind_down(self) -> None:
        """Wait (at most the grace) until every workflow this daemon runs has ended or parked,
        and the engine has recorded each end (a workflow whose function returned is marked
        done a moment later: ending before would leave it PENDING, to be replayed)."""
        assert self.engine is not None
        deadline = time.monotonic() + self.config.talond.grace_seconds
        while time.monotonic() < deadline:
            with self._lock:
                active, waiting = self._active, set(self._parked)
            if active == 0 and self.engine.pending(self.id) <= waiting:
                break
            time.sleep(0.05)
        with self._lock:
            parked, left = list(self._parked), self._active
        for wid in parked:
            self.log.event("handed back", id=wid)
        if left:
            self.log.event("handed back", running=left, reason="still running after the grace")

    # --- what the engine's workflows call ---------------------------------------------------------

    @contextmanager
    def _working(self) -> Iterator[None]:
        with self._lock:
            self._active += 1
        try:
            yield
        finally:
            with self._lock:
                self._active -= 1

    def _park(self, wid: str) -> None:
        """Stopping: leave this workflow PENDING (the next start or a peer takes it over)."""
        with self._lock:
            self._active -= 1
            self._parked.append(wid)
        threading.Event().wait()  # the process ends; the engine has what was recorded

    def turn(self, kind: str, key: str) -> dict[str, Any]:
        """The body of a turn workflow (`engine.turn_workflow`)."""
        from dbos._error import DBOSException

        assert self.tables is not None
        tables = self.tables
        with self._working():
            if self.stop.is_set():
                self._park(key)
            token = uuid.uuid4().hex  # different in every run of this workflow
            data = eng.step("begin", tables.begin, kind, key)
            if data is None:
                return {"status": "not run"}
            work = Work.from_json(data)
            fields: dict[str, Any] = {"id": key, "persona": work.persona, "thread": work.thread}
            if kind == "firing":
                fields |= {"schedule": work.schedule_id, "slot": work.slot}
            elif kind == "a2a":
                fields |= {"from": work.from_persona, "depth": work.depth}
            event = "firing" if kind == "firing" else f"task.{kind}"
            started = time.monotonic()
            outcome, error = None, None
            try:
                outcome = self.agents.run(
                    work,
                    _EngineSteps(token),
                    self.stop.is_set,
                    lambda: not tables.still_running(kind, key),
                )
            except Stopping:
                self.log.event(event, **fields, status="handed back")
                self._park(key)
            except Cancelled:
                self.log.event(event, **fields, status="cancelled")
                return {"status": "cancelled"}
            except TurnFailed as exc:
                error = str(exc)
            except DBOSException:
                raise
            except Exception as exc:  # a bug or a broken database: the work fails, the daemon lives
                error = f"{type(exc).__name__}: {exc}"
            result: Any = None
            if outcome is not None:
                result = outcome.answer if kind == "a2a" else outcome.to_json()
            labels = list(outcome.labels) if outcome is not None else []

            def finish() -> dict[str, Any]:
                # the log line is part of the step: a replay of a finished turn (the process
                # ended before the engine marked it done) says nothing twice
                tables.finish(data, result, error, labels)
                elapsed = f"{time.monotonic() - started:.2f}s"
                if error is not None:
                    self.log.event(event, **fields, status="failed", error=error, elapsed=elapsed)
                    return {"status": "failed", "error": error}
                assert outcome is not None
                self.log.event(
                    event,
                    **fields,
                    status="completed",
                    rounds=outcome.rounds,
                    tools=list(outcome.calls),
                    elapsed=elapsed,
                )
                return {"status": "completed"}

            done: dict[str, Any] = eng.step("finish", finish)
            return done

    def deliver(self, message_id: str, round_no: int) -> dict[str, Any]:
        """The body of a delivery workflow (`engine.delivery_workflow`): POST until delivered,
        with capped backoff, for `[connectors] retry_hours` from the first attempt."""
        assert self.tables is not None
        wid = f"deliver:{message_id}"
        with self._working():
            if self.stop.is_set():
                self._park(wid)
            first, base = eng.step("start", self._delivery_round_start, message_id)
            attempt = 0
            while True:
                attempt += 1
                if self.stop.is_set():
                    self._park(wid)
                done = eng.step("post", self._post_once, message_id, attempt, first, base)
                if done["outcome"] != "retry":
                    return dict(done)
                self._wait_until(parse_iso(done["retryAt"]), wid)

    def _delivery_round_start(self, message_id: str) -> tuple[str, int]:
        """When this delivery round began, and how many attempts the row had counted before
        it (a re-send by a person starts a new round on the same row)."""
        assert self.tables is not None
        record = self.tables.delivery_record(message_id) or {}
        return iso(self.clock.now()), int(record.get("delivery_attempts") or 0)

    def _post_once(self, message_id: str, attempt: int, first: str, base: int) -> dict[str, Any]:
        assert self.tables is not None
        item = self.tables.delivery(message_id)
        if item is None:
            return {"outcome": "failed", "error": "the message is gone"}
        # The host row is the truth: a daemon killed after it recorded this attempt but before
        # the engine checkpointed the step would POST again at once, ignoring the backoff the
        # row already holds. An attempt the row has counted is answered from the row.
        record = self.tables.delivery_record(message_id) or {}
        if int(record.get("delivery_attempts") or 0) >= base + attempt:
            state = record.get("delivery")
            recorded = {"delivered": "delivered", "failed": "failed"}.get(str(state), "retry")
            retry_at = record.get("next_attempt_at") if recorded == "retry" else None
            if recorded != "retry" or retry_at:
                return {
                    "outcome": recorded,
                    "error": record.get("delivery_error"),
                    "retryAt": retry_at,
                }
        outcome, error = post(item, self.config)
        now = self.clock.now()
        retry_at = None
        if outcome == "retry":
            window = _dt.timedelta(hours=self.config.retry_hours)
            if now >= parse_iso(first) + window:
                outcome = "failed"
                error = (
                    f"{error}; gave up after {attempt} attempts over "
                    f"{self.config.retry_hours} hours ([connectors] retry_hours)"
                )
            else:
                retry_at = iso(now + _dt.timedelta(seconds=backoff_s(self.config, attempt)))
        self.tables.delivery_attempt(message_id, outcome, error, retry_at)
        self.log.event(
            "delivery",
            message=message_id,
            channel=item.channel_id,
            connector="webhook",
            attempt=attempt,
            status=outcome,
            error=error,
            retry_at=retry_at,
        )
        return {"outcome": outcome, "error": error, "retryAt": retry_at}

    def _wait_until(self, moment: _dt.datetime, wid: str) -> None:
        """Wait for MOMENT on the daemon's clock (not a step: a replay after a crash waits only
        for what is left); a stop parks the workflow."""
        while self.clock.now() < moment:
            if self.stop.is_set():
                self._park(wid)
            time.sleep(0.1)


class _EngineSteps:
    """A turn's steps as DBOS steps (checkpointed; replayed when the workflow runs again)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def run(self, name: str, fn: Any, *args: Any) -> Any:
        return eng.step(name, fn, *args)


def _folder_signature(folder: Path | None) -> tuple[tuple[str, int, int], ...]:
    """What changes when a persona is added, removed or edited (names, sizes, mtimes)."""
    if folder is None or not folder.is_dir():
        return ()
    out: list[tuple[str, int, int]] = []
    for root, dirs, files in os.walk(folder):
        depth = Path(root).relative_to(folder).parts
        if len(depth) >= 3:
            dirs[:] = []
        for name in (*dirs, *files):
            try:
                st = os.stat(os.path.join(root, name))
            except OSError:
                continue
            out.append((os.path.join(root, name), st.st_mtime_ns, st.st_size))
    return tuple(sorted(out))


def _shown_url(url: str) -> str:
    """The system database as shown (a PostgreSQL password never is)."""
    import re

    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def flush_and_exit(code: int) -> None:
    """End the process at once (parked workflow threads are not waited for)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
