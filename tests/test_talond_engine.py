"""The daemon on its engine, as it will be used: the real `forgec talond` process against a
scripted loopback model and webhook receiver, time injected through `--clock-file`.

- a short soak: kill -9 during a delivery's backoff, mid-turn and mid-POST, and a SIGTERM
  mid-turn; every slot fired once, every effect once, every message delivered and applied once;
- overlap: a slot that comes while the previous firing runs is skipped, recorded and shown;
- what a person reads and does: status (liveness, overdue slots, the time zone), schedules
  list/pause/resume/delete, messages, a failed message re-sent;
- the model: a transient error retried within the deadline, an answer over the size cap or the
  deadline refused;
- a persona folder added while the daemon runs; a persona file that is not UTF-8; retention.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from loopback import serving
from test_talond import fake_model, text_reply, tool_reply, write_config, write_personas
from test_talond_daemon import (
    ROOT,
    Daemon,
    create_schedule,
    db_rows,
    hooked_config,
    hooked_persona,
    make_store,
    now_utc,
    post_once,
    set_clock,
    status_json,
)

from forgec.daemon.tables import slot_text


class Receiver(http.server.BaseHTTPRequestHandler):
    """A webhook receiver that deduplicates by Idempotency-Key (applies each key once). What it
    answers is scripted: `server.plan` maps a POST's ordinal (per key, from 1) to 500 or
    "hang" (wait for `server.release`, then 200); anything else is 200."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        srv: Any = self.server
        key = self.headers["idempotency-key"]
        with srv.lock:
            srv.posts.append(key)
            nth = srv.posts.count(key)
            answer = srv.plan.get(nth, 200) if srv.mode == "plan" else srv.mode
        if answer == "hang":
            srv.hanging.set()
            srv.release.wait(60)
            answer = 200
        if answer == 200:
            with srv.lock:
                if key not in srv.applied:
                    srv.applied.append(key)
        try:
            self.send_response(int(answer))
            self.send_header("content-length", "0")
            self.end_headers()
        except OSError:
            pass


def receiving() -> Any:
    return serving(
        Receiver,
        posts=[],
        applied=[],
        plan={},
        mode="plan",
        lock=threading.Lock(),
        hanging=threading.Event(),
        release=threading.Event(),
    )


def run_cli(root: Path, *args: str, clock: Path | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["--clock-file", str(clock)] if clock is not None else []
    return subprocess.run(
        [sys.executable, "-m", "forgec", "talond", *args, *extra],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )


def wait(check: Any, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_a_short_soak_kills_and_stops_and_everything_happens_exactly_once(
    tmp_path: Path,
    daemons: list[Daemon],
) -> None:
    store, clock = hooked_persona(tmp_path)
    block = threading.Event()
    state = {"block": False, "held": 0, "n": 0}
    lock = threading.Lock()

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        if n == 0:
            with lock:
                state["n"] += 1
                content = f"tick {state['n']}"
            return tool_reply("channel_send", {"channelId": "hooked", "content": content})
        if state["block"]:
            with lock:
                state["held"] += 1
            return block
        return text_reply("ticked")

    with fake_model(script) as srv, receiving() as hook:
        config = hooked_config(
            tmp_path,
            srv.server_port,
            hook.server_port,
            plain=True,
            talond="webhook_backoff_ms = 5000\ngrace_seconds = 1\n",
        )
        t0 = now_utc()
        set_clock(clock, t0)
        sid = create_schedule(tmp_path, "* * * * *", prompt="tick")
        slots = [
            (t0 + dt.timedelta(minutes=k)).replace(second=0, microsecond=0) for k in range(1, 5)
        ]
        started: list[Daemon] = []

        def start() -> Daemon:
            d = Daemon(tmp_path, config, store, clock).start()
            daemons.append(d)
            started.append(d)
            return d

        # 1. kill -9 during a delivery's backoff: the first POST answered 500
        hook.plan = {1: 500}
        d = start()
        set_clock(clock, slots[0] + dt.timedelta(seconds=1))
        d.wait_for(lambda e: e["event"] == "delivery" and e["status"] == "retry", what="a 500")
        d.wait_for(lambda e: e["event"] == "firing", what="the first firing")
        d.kill9()
        d = start()  # takes the delivery over; it waits out the rest of its backoff
        time.sleep(1.0)
        assert len(hook.posts) == 1  # the backoff holds (5 s on the daemon's clock)
        set_clock(clock, slots[0] + dt.timedelta(seconds=7))
        d.wait_for(lambda e: e["event"] == "delivery" and e["status"] == "delivered", what="it")

        # 2. kill -9 mid-turn: the message was sent in round one, round two never answered
        state["block"] = True
        set_clock(clock, slots[1] + dt.timedelta(seconds=1))
        wait(lambda: state["held"] >= 1, "the turn's second round")
        d.kill9()
        state["block"] = False
        block.set()
        d = start()
        d.wait_for(lambda e: e["event"] == "firing" and e["status"] == "completed", what="it")

        # 3. kill -9 mid-POST: the receiver has the message, no answer was recorded
        hook.mode = "hang"
        set_clock(clock, slots[2] + dt.timedelta(seconds=1))
        assert hook.hanging.wait(60)
        d.kill9()
        hook.mode = "plan"
        hook.plan = {}
        hook.release.set()
        d = start()
        wait(lambda: len(hook.applied) == 3, "three messages applied")

        # 4. SIGTERM mid-turn: handed back, the next start finishes it
        block.clear()
        state["block"], state["held"] = True, 0
        set_clock(clock, slots[3] + dt.timedelta(seconds=1))
        wait(lambda: state["held"] >= 1, "the turn's second round")
        assert d.stop() == 0
        assert any(e["event"] == "handed back" for e in d.events)
        state["block"] = False
        block.set()
        d = start()
        wait(lambda: len(hook.applied) == 4, "four messages applied")
        d.wait_for(lambda e: e["event"] == "firing" and e["status"] == "completed", what="it")
        time.sleep(1.0)  # time for a wrong second anything to show
        assert d.stop() == 0

    db = tmp_path / "host.db"
    firings = db_rows(db, "SELECT slot, status FROM schedule_firings WHERE schedule_id = ?", (sid,))
    assert sorted((r["slot"], r["status"]) for r in firings) == [
        (slot_text(s), "completed") for s in slots
    ]
    completed = Counter(
        e["slot"] for d in started for e in d.firings("completed") if e.get("schedule") == sid
    )
    assert completed == Counter({slot_text(s): 1 for s in slots})
    messages = db_rows(db, "SELECT id, content, delivery FROM messages WHERE channel_id = 'hooked'")
    assert len(messages) == 4 and len({m["content"] for m in messages}) == 4  # one per firing
    assert {m["delivery"] for m in messages} == {"delivered"}
    # at least once sent, exactly once applied, under each message's own id
    assert sorted(hook.applied) == sorted(m["id"] for m in messages)
    assert set(hook.posts) == set(hook.applied)


def test_a_slot_that_comes_while_the_previous_firing_runs_is_skipped_and_shown(
    tmp_path: Path,
    daemons: list[Daemon],
) -> None:
    write_personas(tmp_path, {"alpha": ()})
    store = make_store(tmp_path)
    clock = tmp_path / "clock"
    block = threading.Event()

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        return block if not block.is_set() else text_reply("slow answer")

    with fake_model(script) as srv:
        config = write_config(tmp_path, f"http://127.0.0.1:{srv.server_port}")
        t0 = now_utc()
        set_clock(clock, t0)
        sid = create_schedule(tmp_path, "* * * * *", prompt="slow")
        slot1 = (t0 + dt.timedelta(minutes=1)).replace(second=0, microsecond=0)
        slot2 = slot1 + dt.timedelta(minutes=1)
        d = Daemon(tmp_path, config, store, clock).start()
        daemons.append(d)
        set_clock(clock, slot1 + dt.timedelta(seconds=1))
        assert srv.blocked.wait(60)
        set_clock(clock, slot2 + dt.timedelta(seconds=1))
        d.wait_for(lambda e: e["event"] == "firing" and e["status"] == "skipped", what="a skip")
        report = status_json(tmp_path, clock)
        block.set()
        d.wait_for(lambda e: e["event"] == "firing" and e["status"] == "completed", what="it")
        assert d.stop() == 0
    (shown,) = report["schedules"]
    assert shown["skipped"] == [slot_text(slot2)]
    rows = db_rows(tmp_path / "host.db", "SELECT slot, status FROM schedule_firings ORDER BY slot")
    assert [(r["slot"], r["status"]) for r in rows] == [
        (slot_text(slot1), "completed"),
        (slot_text(slot2), "skipped"),
    ]
    assert sum(1 for b in srv.seen) <= 2  # the skipped slot never asked the model
    text = run_cli(tmp_path, "status", "--host-config", str(config), clock=clock)
    assert "skipped (the previous firing still ran): " + slot_text(slot2) in text.stdout
    assert sid in text.stdout


def test_status_schedules_messages_and_a_failed_delivery_sent_again(
    tmp_path: Path,
    daemons: list[Daemon],
) -> None:
    store, clock = hooked_persona(tmp_path)
    with fake_model(post_once("hello", "said hello")) as srv, receiving() as hook:
        config = hooked_config(
            tmp_path,
            srv.server_port,
            hook.server_port,
            talond='webhook_backoff_ms = 600000\ntimezone = "Europe/Paris"\n',
            extra="\n[connectors]\nretry_hours = 1\n",
        )
        host_config = ["--host-config", str(config)]
        t0 = now_utc()
        set_clock(clock, t0)
        slot = (t0 + dt.timedelta(minutes=1)).replace(second=0, microsecond=0)
        paris = slot.astimezone(ZoneInfo("Europe/Paris"))
        sid = create_schedule(tmp_path, f"{paris.minute} {paris.hour} * * *", prompt="greet")
        other = create_schedule(tmp_path, "0 9 * * *", prompt="morning")
        before = run_cli(tmp_path, "status", *host_config, clock=clock)
        assert "No daemon has run on this database." in before.stdout
        assert "Cron times are read in Europe/Paris" in before.stdout

        hook.mode = 500  # the receiver is down for the whole window
        d = Daemon(tmp_path, config, store, clock).start()
        daemons.append(d)
        live = status_json(tmp_path, clock)
        assert live["running"] and live["timezone"] == "Europe/Paris"
        assert [x["running"] for x in live["daemons"]] == [True]
        set_clock(clock, slot + dt.timedelta(seconds=1))
        fired = d.wait_for(lambda e: e["event"] == "firing", what="the daily firing, in Paris")
        assert fired["slot"] == slot_text(slot)
        d.wait_for(lambda e: e["event"] == "delivery" and e["status"] == "retry", what="a 500")
        # backoff is capped at five minutes: past the hour, the message fails
        moment = slot + dt.timedelta(seconds=1)

        def failed() -> bool:
            return any(e["event"] == "delivery" and e["status"] == "failed" for e in d.events)

        def attempts() -> int:
            return sum(1 for e in list(d.events) if e["event"] == "delivery")

        while not failed():
            # the next five minutes only once the daemon has recorded the last attempt (its
            # next one is due five minutes after the time it read then)
            seen = attempts()
            moment += dt.timedelta(minutes=5, seconds=1)
            set_clock(clock, moment)
            wait(lambda: attempts() > seen, "the next attempt")  # noqa: B023
            assert moment < slot + dt.timedelta(hours=2), "never failed"
        # at most five minutes apart, for the hour of [connectors] retry_hours
        assert len(hook.posts) == 13
        assert run_cli(tmp_path, "schedules", "pause", sid, *host_config).returncode == 0
        assert d.stop() == 0

        shown = run_cli(tmp_path, "status", *host_config, clock=clock)
        assert "No daemon running since" in shown.stdout
        assert "failed" in shown.stdout and "gave up after" in shown.stdout
        listing = run_cli(tmp_path, "schedules", "list", *host_config)
        assert f"{sid}  alpha  '{paris.minute} {paris.hour} * * *' off" in listing.stdout
        assert f"{other}  alpha  '0 9 * * *' on" in listing.stdout
        assert run_cli(tmp_path, "schedules", "delete", other, *host_config).returncode == 0
        gone = run_cli(tmp_path, "schedules", "resume", other, *host_config)
        assert gone.returncode == 2 and f"no schedule '{other}'" in gone.stderr
        overdue = status_json(tmp_path, clock)
        assert [s["scheduleId"] for s in overdue["schedules"]] == [sid]
        assert run_cli(tmp_path, "schedules", "resume", sid, *host_config).returncode == 0
        set_clock(clock, slot + dt.timedelta(days=1, minutes=1))
        (due,) = status_json(tmp_path, clock)["schedules"]
        assert due["overdue"] == slot_text(slot + dt.timedelta(days=1))  # no daemon runs
        assert "overdue" in run_cli(tmp_path, "status", *host_config, clock=clock).stdout
        assert run_cli(tmp_path, "schedules", "pause", sid, *host_config).returncode == 0

        msgs = run_cli(tmp_path, "messages", "--channel", "hooked", "--limit", "5", *host_config)
        assert "#hooked" in msgs.stdout and "hello" in msgs.stdout and "[failed" in msgs.stdout
        (mid,) = [
            r["id"]
            for r in db_rows(
                tmp_path / "host.db", "SELECT id FROM messages WHERE channel_id = 'hooked'"
            )
        ]
        again = run_cli(tmp_path, "deliveries", "retry", mid, *host_config)
        assert again.returncode == 0 and mid in again.stdout
        hook.mode = 200
        d = Daemon(tmp_path, config, store, clock).start()
        daemons.append(d)
        d.wait_for(lambda e: e["event"] == "delivery" and e["status"] == "delivered", what="it")
        assert d.stop() == 0
    assert hook.applied == [mid]
    (row,) = db_rows(tmp_path / "host.db", "SELECT delivery FROM messages WHERE id = ?", (mid,))
    assert row["delivery"] == "delivered"


class Answers(http.server.BaseHTTPRequestHandler):
    """A model server with bad habits: `server.plan` is a list of 500 | "huge" | "slow" |
    "ok", one per request (then "ok")."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        srv: Any = self.server
        kind = srv.plan.pop(0) if srv.plan else "ok"
        srv.seen.append(kind)
        if kind == 500:
            self.send_response(500)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        body = json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": "fine"}}]}
        ).encode()
        if kind == "huge":
            body = body[:-2] + b', "x": "' + b"a" * (2 << 20) + b'"}' + body[-2:]
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        try:
            if kind == "slow":  # a body that never ends in time: a byte a second
                for byte in body:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(1.0)
            else:
                self.wfile.write(body)
        except OSError:
            pass


def test_model_errors_are_retried_and_oversized_or_endless_answers_refused(
    tmp_path: Path,
    daemons: list[Daemon],
) -> None:
    write_personas(tmp_path, {"alpha": ()})
    store = make_store(tmp_path)
    clock = tmp_path / "clock"
    with serving(Answers, plan=[500, 500, "ok", "huge", "slow"], seen=[]) as srv:
        config = write_config(tmp_path, f"http://127.0.0.1:{srv.server_port}")
        config.write_text(
            config.read_text().replace("poll_ms = 100\n", "poll_ms = 100\nturn_seconds = 4\n")
        )
        t0 = now_utc()
        set_clock(clock, t0)
        create_schedule(tmp_path, "* * * * *", prompt="go")
        d = Daemon(tmp_path, config, store, clock).start()
        daemons.append(d)
        slots = [(t0 + dt.timedelta(minutes=k)).replace(second=0, microsecond=0) for k in (1, 2, 3)]
        set_clock(clock, slots[0] + dt.timedelta(seconds=1))
        first = d.wait_for(lambda e: e["event"] == "firing", what="the first firing")
        assert first["status"] == "completed"  # two 500s, asked again within the deadline
        set_clock(clock, slots[1] + dt.timedelta(seconds=1))
        huge = d.wait_for(
            lambda e: e["event"] == "firing" and e["slot"] == slot_text(slots[1]), what="huge"
        )
        assert huge["status"] == "failed" and "more than 1048576 bytes" in huge["error"]
        set_clock(clock, slots[2] + dt.timedelta(seconds=1))
        begun = time.monotonic()
        slow = d.wait_for(
            lambda e: e["event"] == "firing" and e["slot"] == slot_text(slots[2]), what="slow"
        )
        assert slow["status"] == "failed" and "budget of 4 s" in slow["error"]
        assert time.monotonic() - begun < 12  # the deadline held the streamed body too
        assert d.stop() == 0
    assert srv.seen[:5] == [500, 500, "ok", "huge", "slow"]
    sizes = db_rows(tmp_path / "host.db", "SELECT length(result) AS n FROM schedule_firings")
    assert all((r["n"] or 0) < 10_000 for r in sizes)  # the hostile answer was never stored


def test_a_persona_added_while_running_is_picked_up_and_a_bad_file_is_one_line(
    tmp_path: Path,
    daemons: list[Daemon],
) -> None:
    write_personas(tmp_path, {"alpha": ()})
    store = make_store(tmp_path)
    clock = tmp_path / "clock"

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        return text_reply(f"{persona} here")

    with fake_model(script) as srv:
        config = write_config(tmp_path, f"http://127.0.0.1:{srv.server_port}")
        config.write_text(
            config.read_text().replace("poll_ms = 100\n", "poll_ms = 100\nretention_days = 30\n")
        )
        t0 = now_utc()
        set_clock(clock, t0)
        d = Daemon(tmp_path, config, store, clock).start()
        daemons.append(d)
        write_personas(tmp_path, {"beta": ()})  # a new folder, while it runs
        d.wait_for(lambda e: e["event"] == "personas" and "beta" in e["personas"], what="beta")
        create_schedule(tmp_path, "* * * * *", persona="beta", prompt="hi")
        set_clock(clock, (t0 + dt.timedelta(minutes=1)).replace(second=1, microsecond=0))
        fired = d.wait_for(lambda e: e["event"] == "firing", what="beta's firing")
        assert fired["persona"] == "beta" and fired["status"] == "completed"
        assert d.stop() == 0
        # finished engine state past retention is pruned at the next start; host rows never
        set_clock(clock, t0 + dt.timedelta(days=31))
        d = Daemon(tmp_path, config, store, clock).start()
        daemons.append(d)
        pruned = d.wait_for(lambda e: e["event"] == "pruned", what="the pruning")
        assert pruned["workflows"] >= 1
        assert d.stop() == 0
    assert len(db_rows(tmp_path / "host.db", "SELECT id FROM schedule_firings")) >= 1
    (tmp_path / "personas" / "beta" / "labels.txt").write_bytes(b"memory.access:\xff\n")
    bad = run_cli(tmp_path, "--host-config", str(config), "--log-format", "json")
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "labels.txt" in bad.stderr and "UTF-8" in bad.stderr
