"""Several daemons on one PostgreSQL system database and one host database (SPEC §19): each
firing runs in exactly one of them, and the work of one killed with `kill -9` is taken over by
the live one — every slot fired once between them, every effect once.

The real daemon processes against a scripted loopback model, PostgreSQL started by the fixture
as an unprivileged user (tests/pgserver.py), time injected through `--clock-file`.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pgserver import postgres_server
from test_talond import fake_model, text_reply, tool_reply, write_config, write_personas
from test_talond_daemon import (
    Daemon,
    create_schedule,
    db_rows,
    make_store,
    now_utc,
    set_clock,
    status_json,
)

from forgec.daemon.tables import slot_text


@pytest.fixture(scope="module")
def pg() -> Iterator[str]:
    with postgres_server() as base:
        yield base


def test_two_daemons_on_postgres_fire_each_slot_once_and_a_killed_ones_work_is_taken_over(
    tmp_path: Path, pg: str, daemons: list[Daemon]
) -> None:
    write_personas(tmp_path, {"alpha": ("channel.send:journal",)})
    store = make_store(tmp_path)
    clock = tmp_path / "clock"
    block = threading.Event()
    state = {"block": False, "held": 0}
    lock = threading.Lock()

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        prompt = body["messages"][1]["content"]
        if n == 0:
            return tool_reply("channel_send", {"channelId": "journal", "content": prompt})
        if state["block"]:
            with lock:
                state["held"] += 1
            return block  # held until the test lets go, then HTTP 503 (retried)
        return text_reply(f"done {prompt}")

    url = f"{pg}/talond_{uuid.uuid4().hex[:8]}"
    with fake_model(script) as srv:
        config = write_config(
            tmp_path,
            f"http://127.0.0.1:{srv.server_port}",
            '[channels.journal]\nconnector = "outbox"\n',
        )
        config.write_text(
            config.read_text().replace(
                "poll_ms = 100\n", f'poll_ms = 100\nsystem_database_url = "{url}"\n'
            )
        )
        t0 = now_utc()
        set_clock(clock, t0)
        ids = [create_schedule(tmp_path, "* * * * *", prompt=f"s{i}") for i in range(6)]
        first = Daemon(tmp_path, config, store, clock).start()
        second = Daemon(tmp_path, config, store, clock).start()
        daemons.extend([first, second])
        slots = [(t0 + dt.timedelta(minutes=k)).replace(second=0, microsecond=0) for k in (1, 2, 3)]

        def completed() -> list[dict[str, Any]]:
            return [e for d in (first, second) for e in d.firings("completed")]

        def wait_completed(n: int) -> None:
            deadline = time.monotonic() + 90
            while len(completed()) < n:
                assert time.monotonic() < deadline, f"{len(completed())} of {n} firings"
                time.sleep(0.1)

        # slot 1: both daemons see all six schedules due; each firing runs in one of them
        set_clock(clock, slots[0] + dt.timedelta(seconds=1))
        wait_completed(6)
        # slot 2: the model holds every turn in its second round; one daemon is killed
        state["block"] = True
        set_clock(clock, slots[1] + dt.timedelta(seconds=1))
        deadline = time.monotonic() + 60
        while state["held"] < 6:
            assert time.monotonic() < deadline, f"{state['held']} turns reached round two"
            time.sleep(0.05)
        first.kill9()
        report = status_json(tmp_path, clock)
        running = {d["id"]: d["running"] for d in report["daemons"]}
        first_id = next(e["id"] for e in first.events if e["event"] == "started")
        assert running.pop(first_id) is False and list(running.values()) == [True]
        state["block"] = False
        block.set()
        wait_completed(12)
        assert any(e["event"] == "took over" for e in second.events)
        # slot 3: the live one fires everything alone
        set_clock(clock, slots[2] + dt.timedelta(seconds=1))
        wait_completed(18)
        time.sleep(1.0)  # time for a wrong second firing to show
        assert second.stop() == 0
    db = tmp_path / "host.db"
    fired = Counter(
        (r["schedule_id"], r["slot"])
        for r in db_rows(db, "SELECT schedule_id, slot FROM schedule_firings")
    )
    assert set(fired) == {(sid, slot_text(s)) for sid in ids for s in slots}
    assert set(fired.values()) == {1}
    statuses = {r["status"] for r in db_rows(db, "SELECT status FROM schedule_firings")}
    assert statuses == {"completed"}
    per_slot = Counter((e["schedule"], e["slot"]) for e in completed())
    assert set(per_slot.values()) == {1}, per_slot  # no firing completed twice
    sent = Counter(
        r["content"]
        for r in db_rows(db, "SELECT content FROM messages WHERE channel_id = 'journal'")
    )
    # one channel_send per firing (the prompt); the turns killed mid-way did not send again
    assert sent == Counter({f"s{i}": 3 for i in range(6)})
