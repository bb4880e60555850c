"""DBOS Transact under the daemon: durable workflows, checkpointed steps, queues, recovery.

What the engine does for us (docs/talond.md has the guide):

- **a turn is a workflow** (`turn_workflow`): its first step starts the host row and reads what
  the turn needs; each model request and each tool call is a step whose output DBOS checkpoints
  in its system database, so a turn run again after a crash replays what was recorded and
  continues from there; its last step ends the host row;
- **a firing is the workflow `fire:<scheduleId>:<slot>`**: starting a workflow under an id that
  exists returns the existing one, so however many daemons, restarts and crashes, a slot runs
  at most once;
- **A2A and background tasks are queue entries** whose workflow id is the task id;
- **a delivery is the workflow `deliver:<messageId>`** (`…:<round>` for a person's re-send);
- **queues** (`talond-firings`, `talond-a2a`, `talond-background`, `talond-deliveries`) bound how
  much runs at once in each daemon, and every daemon on one system database dequeues from them,
  each entry in exactly one;
- **recovery**: a daemon that stopped or died leaves its workflows PENDING under its executor
  id; a restart or a live peer re-enqueues them (`recover`), and DBOS hands each to exactly one
  live daemon.

The system database is SQLite by default (WAL, beside the host database) or PostgreSQL
(`[talond] system_database_url`). The workflow functions are module-level (DBOS registers them
by name) and call back into the running daemon (`install`).
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Protocol

from dbos import DBOS, DBOSConfig, SetWorkflowID

APP = "forgec-talond"
# the engine's contract with what it has recorded: a daemon recovers only workflows recorded
# under the same version, so this changes only when the shape of the steps changes
VERSION = "talond-1"
QUEUES = {
    "firing": "talond-firings",
    "a2a": "talond-a2a",
    "background": "talond-background",
    "delivery": "talond-deliveries",
}
DELIVERY_WORKERS = 64  # messages being posted or waiting for their next attempt, per daemon
QUEUE_POLL_S = 0.1
FINISHED = ["SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"]


class Runner(Protocol):
    """What the workflows call back into: the running daemon (`forgec.daemon.service`)."""

    def turn(self, kind: str, key: str) -> dict[str, Any]: ...

    def deliver(self, message_id: str, round_no: int) -> dict[str, Any]: ...


_RUNNER: Runner | None = None


def install(runner: Runner) -> None:
    global _RUNNER
    _RUNNER = runner


def _runner() -> Runner:
    if _RUNNER is None:  # pragma: no cover - the daemon installs itself before launching
        raise RuntimeError("the talond engine runs no workflow outside the daemon")
    return _RUNNER


@DBOS.workflow(name="talond.turn")
def turn_workflow(kind: str, key: str) -> dict[str, Any]:
    return _runner().turn(kind, key)


@DBOS.workflow(name="talond.delivery")
def delivery_workflow(message_id: str, round_no: int) -> dict[str, Any]:
    return _runner().deliver(message_id, round_no)


def step(name: str, fn: Any, *args: Any) -> Any:
    """Run FN(*ARGS) as a checkpointed step of the current workflow (its output recorded;
    replayed, not run again, when the workflow runs again after a crash)."""
    return DBOS.run_step({"name": name}, fn, *args)


def default_url(db_path: Path) -> str:
    """The SQLite system database beside the host database."""
    return "sqlite:///" + str(db_path.with_name(db_path.name + ".dbos.sqlite"))


def _sqlite_engine(url: str) -> Any:
    """DBOS's SQLite engine, in WAL with normal sync: a commit costs no fsync of the whole
    journal (measured: about a third of the time per workflow on this kind of disk)."""
    import sqlalchemy as sa
    from sqlalchemy import event

    engine = sa.create_engine(url)

    @event.listens_for(engine, "connect")
    def _setup(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = "IMMEDIATE"
        dbapi_conn.execute("PRAGMA busy_timeout=30000")
        dbapi_conn.execute("PRAGMA foreign_keys=ON")
        dbapi_conn.execute("PRAGMA journal_mode=WAL")
        dbapi_conn.execute("PRAGMA synchronous=NORMAL")

    return engine


class Engine:
    """The process's DBOS instance (one per process: DBOS is a singleton)."""

    def __init__(self, url: str, *, executor_id: str, workers: int) -> None:
        self.url = url
        self.executor_id = executor_id
        self.workers = workers
        self.queues: dict[str, Any] = {}

    @property
    def shared(self) -> bool:
        """Several daemons may share this system database (PostgreSQL)."""
        return not self.url.startswith("sqlite")

    def launch(self) -> None:
        import logging

        config: DBOSConfig = {
            "name": APP,
            "system_database_url": self.url,
            "application_version": VERSION,
            "executor_id": self.executor_id,
            "log_level": "WARNING",
            "notification_listener_polling_interval_sec": 0.2,
        }
        if not self.shared:
            Path(self.url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
            config["system_database_engine"] = _sqlite_engine(self.url)
        DBOS(config=config)
        DBOS.launch()
        logging.getLogger("dbos").setLevel(logging.WARNING)
        for kind, name in QUEUES.items():
            self.queues[kind] = DBOS.register_queue(
                name,
                worker_concurrency=DELIVERY_WORKERS if kind == "delivery" else self.workers,
                polling_interval_sec=QUEUE_POLL_S,
                on_conflict="always_update",
            )

    def enqueue_turn(self, kind: str, key: str) -> None:
        """Idempotent: a workflow with this id already there (queued, running, finished) is
        left as it is."""
        with SetWorkflowID(key):
            self.queues[kind].enqueue(turn_workflow, kind, key)

    def enqueue_delivery(self, message_id: str, round_no: int) -> None:
        wid = f"deliver:{message_id}" + (f":{round_no}" if round_no else "")
        with SetWorkflowID(wid):
            self.queues["delivery"].enqueue(delivery_workflow, message_id, round_no)

    def recover(self, executor_id: str) -> int:
        """Re-enqueue every workflow a stopped or dead daemon left PENDING; each is then run by
        exactly one live daemon (DBOS's recovery is idempotent)."""
        return len(DBOS._recover_pending_workflows([executor_id]))

    def pending(self, executor_id: str) -> set[str]:
        """The ids of the workflows EXECUTOR_ID has started and the engine has not marked done."""
        found = DBOS.list_workflows(
            status="PENDING", executor_id=executor_id, load_input=False, load_output=False
        )
        return {w.workflow_id for w in found}

    def prune(self, before: _dt.datetime, batch: int = 1000) -> int:
        """Delete finished workflows (their steps with them) created before BEFORE."""
        total = 0
        end = before.astimezone(_dt.UTC).isoformat()
        while True:
            done = DBOS.list_workflows(
                status=FINISHED, end_time=end, limit=batch, load_input=False, load_output=False
            )
            if not done:
                return total
            DBOS.delete_workflows([w.workflow_id for w in done])
            total += len(done)
            if len(done) < batch:
                return total

    def shutdown(self) -> None:
        DBOS.destroy(workflow_completion_timeout_sec=0)
