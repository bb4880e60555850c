"""`forgec talond`: the loop that claims work and runs it until it is told to stop.

Every `[talond] poll_ms` the loop claims as much work as it has free workers
(`forgec.daemon.queue.Queue.claim`: expired leases, due schedule slots, queued A2A and
background tasks), runs each item on its own worker thread as a turn of its persona
(`forgec.daemon.agent`), renews the item's lease while it runs, and finishes the row. Connector
workers deliver messages beside it. One daemon per database: a second one on the same database
is refused at start (an advisory lock beside the database file), so leases are only ever
contended by a daemon that died.

**Stopping** (SIGTERM, Ctrl-C): no new work is claimed; a turn finishes the tool call it is in
and, before its next model request, hands its row back (the lease expires at once, the journal
keeps what was done), so the next start continues it; what is still running after the grace
period (`[talond] grace_seconds`, default 20) is handed back the same way. Nothing is lost, and nothing done is done again.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from forgec.daemon.agent import Agents, LeaseLost, Stopping, TurnFailed, keep_leased
from forgec.daemon.clock import Clock, SystemClock
from forgec.daemon.connectors import deliver_outbox, deliver_webhooks
from forgec.daemon.log import Log
from forgec.daemon.queue import Queue, Work
from forgec.host.config import HostConfig
from forgec.mcp.policy import ConsentPolicy


class AlreadyRunning(Exception):
    """Another daemon holds this database."""


class DaemonLock:
    """An advisory lock on `<db>.talond.lock`, released by the OS when the process dies."""

    def __init__(self, db_path: Path) -> None:
        self.db_path = db_path
        self.path = db_path.with_name(db_path.name + ".talond.lock")
        self._fd: int | None = None

    def acquire(self) -> None:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise AlreadyRunning(f"another forgec talond is running on {self.db_path}") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


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
        self.owner = f"talond-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.agents = Agents(
            config,
            db_path=db_path,
            store_path=store_path,
            policy=policy,
            templates=templates,
            environ=environ,
        )
        self.stop = threading.Event()
        self._running: dict[str, tuple[Work, threading.Thread]] = {}
        self._lock = threading.Lock()

    def run(self, *, ready: threading.Event | None = None) -> None:
        """Until `self.stop` is set."""
        lock = DaemonLock(self.db_path)
        lock.acquire()
        bounds = self.config.talond
        queue = Queue(
            self.db_path, owner=self.owner, clock=self.clock, lease_seconds=bounds.lease_seconds
        )
        delivery = threading.Thread(
            target=self._deliveries, args=(queue,), name="talond-deliveries", daemon=True
        )
        try:
            self.log.event(
                "started",
                db=str(self.db_path),
                personas=sorted(self.agents.personas),
                owner=self.owner,
            )
            self._persona_cards()
            if not self.agents.personas:
                self.log.event(
                    "warning",
                    message="no persona is loaded, so nothing can run: set [persona] folder to "
                    "a folder of <name>/persona.md (docs/talond.md)",
                )
            delivery.start()
            if ready is not None:
                ready.set()
            while not self.stop.is_set():
                self._reap()
                free = bounds.workers - len(self._running)
                if free > 0:
                    try:
                        claimed = queue.claim(
                            self.agents.personas, free, working=list(self._running)
                        )
                    except Exception as exc:  # a busy or broken database: say so, go on
                        self.log.event("error", what="claiming work", error=str(exc))
                        claimed = []
                    for work in claimed:
                        self._start(work, queue)
                self.stop.wait(bounds.poll_ms / 1000)
            self._wind_down(queue)
        finally:
            delivery.join(timeout=5)
            queue.close()
            lock.release()
            self.log.event("stopped", owner=self.owner)

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

    # --- workers -------------------------------------------------------------------------------

    def _start(self, work: Work, queue: Queue) -> None:
        thread = threading.Thread(
            target=self._work, args=(work, queue), name=f"talond-{work.id}", daemon=True
        )
        with self._lock:
            self._running[work.id] = (work, thread)
        thread.start()

    def _reap(self) -> None:
        with self._lock:
            for wid, (_work, thread) in list(self._running.items()):
                if not thread.is_alive():
                    del self._running[wid]

    def _work(self, work: Work, queue: Queue) -> None:
        done, lost = threading.Event(), threading.Event()
        beat = threading.Thread(
            target=keep_leased,
            args=(queue, work, max(self.config.talond.lease_seconds / 3, 0.5), done, lost),
            daemon=True,
        )
        beat.start()
        started = time.monotonic()
        fields: dict[str, Any] = {
            "id": work.id,
            "persona": work.persona,
            "thread": work.thread,
            "attempt": work.attempts,
        }
        if work.kind == "firing":
            fields |= {"schedule": work.schedule_id, "slot": work.slot}
        elif work.kind == "a2a":
            fields |= {"from": work.from_persona, "depth": work.depth}
        event = "firing" if work.kind == "firing" else f"task.{work.kind}"
        try:
            outcome = self.agents.run(work, queue, self.stop, lost)
        except Stopping:
            queue.hand_back(work)
            self.log.event(event, **fields, status="handed back")
            return
        except LeaseLost:
            self.log.event(event, **fields, status="lease lost")
            return
        except TurnFailed as exc:
            self._finish(queue, work, event, fields, None, str(exc), started)
            return
        except Exception as exc:  # a bug or a broken database: the work fails, the daemon lives
            self._finish(queue, work, event, fields, None, f"{type(exc).__name__}: {exc}", started)
            return
        finally:
            done.set()
        self._finish(queue, work, event, fields, outcome, None, started)

    def _finish(
        self,
        queue: Queue,
        work: Work,
        event: str,
        fields: dict[str, Any],
        outcome: Any,
        error: str | None,
        started: float,
    ) -> None:
        elapsed = f"{time.monotonic() - started:.2f}s"
        try:
            if error is not None:
                finished = queue.fail(work, error)
            else:
                result = outcome.answer if work.kind == "a2a" else outcome.to_json()
                finished = queue.complete(work, result, outcome.labels)
        except Exception as exc:
            self.log.event(event, **fields, status="unfinished", error=str(exc))
            return
        if not finished:  # cancelled meanwhile, or taken over: its row says what happened
            self.log.event(event, **fields, status="lease lost")
            return
        if error is not None:
            self.log.event(event, **fields, status="failed", error=error, elapsed=elapsed)
        else:
            self.log.event(
                event,
                **fields,
                status="completed",
                rounds=outcome.rounds,
                tools=list(outcome.calls),
                elapsed=elapsed,
            )

    def _wind_down(self, queue: Queue) -> None:
        deadline = time.monotonic() + self.config.talond.grace_seconds
        while time.monotonic() < deadline:
            self._reap()
            if not self._running:
                return
            time.sleep(0.05)
        queue.hand_back_unfinished()
        for work, _thread in list(self._running.values()):
            self.log.event("handed back", id=work.id, persona=work.persona)

    def _deliveries(self, queue: Queue) -> None:
        poll = self.config.talond.poll_ms / 1000
        while not self.stop.is_set():
            try:
                deliver_outbox(queue, self.log)
                deliver_webhooks(queue, self.config, self.log)
            except Exception as exc:
                self.log.event("error", what="delivering messages", error=str(exc))
            self.stop.wait(poll)
