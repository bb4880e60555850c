"""The real daemon process (`python -m forgec talond`), driven by a loopback fake
OpenAI-compatible server that scripts its answers, with time injected through the hidden
`--clock-file` (so no test waits for real minutes — except the one marked slow).

What a user would notice: a schedule made through `schedule_manage` over the real `mcp` client
fires at its minute and its turn calls a host tool and a forged tool; `kill -9` mid-turn then a
restart neither loses nor repeats that firing; a slot missed while down fires once; an
A → B → A chain of sends stops at the bound; a background agent's completion lands in its
thread; a webhook receiver gets each message once despite a failed first attempt.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from loopback import serving
from test_mcp_server import run_client
from test_store import install, open_store
from test_talond import fake_model, text_reply, tool_reply, write_config, write_personas

from forgec.daemon.clock import iso
from forgec.daemon.tables import slot_text
from forgec.host import HostOptions, open_host
from forgec.runtime.host import CallContext

ROOT = Path(__file__).resolve().parent.parent
CTX = CallContext(tool_id="t", tool_version=1, node_id="n")


class Daemon:
    """`forgec talond` as a subprocess, its JSON log lines collected as they come."""

    def __init__(
        self,
        root: Path,
        config: Path,
        store: Path | None,
        clock: Path,
        *,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        base = args or ["talond", "--host-config", str(config), "--store", str(store)]
        self.args = [sys.executable, "-m", "forgec", *base]
        self.args += ["--clock-file", str(clock), "--log-format", "json"]
        self.env = env or {}
        self.root = root
        self.events: list[dict[str, Any]] = []
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> Daemon:
        env = {**os.environ, "PYTHONPATH": str(ROOT), **self.env}
        self.proc = subprocess.Popen(
            self.args,
            cwd=self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        self.wait_for(lambda e: e["event"] == "started", what="the daemon to start")
        return self

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.events.append(json.loads(line))

    def wait_for(
        self, match: Callable[[dict[str, Any]], bool], *, what: str, timeout: float = 60
    ) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for event in list(self.events):
                if match(event):
                    return event
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"the daemon exited: {self.proc.stderr.read()}")  # type: ignore[union-attr]
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}; events: {self.events}")

    def firings(self, status: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e["event"] == "firing" and (status is None or e["status"] == status)
        ]

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(60)
        return code


def set_clock(path: Path, moment: dt.datetime) -> None:
    path.write_text(repr(moment.timestamp()))


def now_utc() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def fresh_minute() -> dt.datetime:
    """Now, early enough in its minute that a schedule another process makes next (the MCP
    server, the CLI: made at the system's time) is made before the next minute's slot (the
    tests compute that slot from this time). A schedule `create_schedule` makes needs no such
    wait: it is made at the test clock's time; take `now_utc()` for it."""
    moment = now_utc()
    if moment.second >= 45:
        time.sleep(61 - moment.second)
        moment = now_utc()
    return moment


def db_rows(db: Path, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def make_store(root: Path) -> Path:
    """A store with `add.task` (tasks.create, below R4) on, with the person's consent."""
    store = root / "tools.db"
    with open_store(store) as s:
        install(s, 1, None, "tasks.create", tool_id="add.task")
        s.enable("add.task", consent=True)
    return store


def hooked_persona(root: Path) -> tuple[Path, Path]:
    """alpha, who may post to the `hooked` channel; the tool store and the clock file."""
    write_personas(root, {"alpha": ("channel.send:hooked",)})
    return make_store(root), root / "clock"


def post_once(content: str, answer: str = "posted") -> Callable[[str, int, dict[str, Any]], Any]:
    """A model that posts CONTENT to `hooked` on its first request, then answers ANSWER."""

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        if n == 0:
            return tool_reply("channel_send", {"channelId": "hooked", "content": content})
        return text_reply(answer)

    return script


def hooked_config(
    root: Path,
    model_port: int,
    hook_port: int,
    *,
    plain: bool = False,
    talond: str = "",
    extra: str = "",
) -> Path:
    """The host config: the model on MODEL_PORT, `hooked` a webhook on HOOK_PORT (PLAIN: its
    `plain` format), TALOND more `[talond]` lines, EXTRA more sections."""
    fmt = 'format = "plain"\n' if plain else ""
    config = write_config(
        root,
        f"http://127.0.0.1:{model_port}",
        f'[channels.hooked]\nconnector = "webhook"\n{fmt}'
        f'url = "http://127.0.0.1:{hook_port}/hook"\n{extra}',
    )
    if talond:
        config.write_text(config.read_text().replace("poll_ms = 100\n", f"poll_ms = 100\n{talond}"))
    return config


def create_schedule(root: Path, cron: str, persona: str = "alpha", **fields: Any) -> str:
    """A schedule made through `schedule.manage`, made at the time ROOT/clock says (the
    daemon's clock) when that file exists: its first slot is then the minute after the clock's,
    however long the test took to get here (no test waits for a real minute to turn)."""
    config = root / "host.toml"
    labels = ("schedule.manage:own",)
    clock = root / "clock"
    at = None
    if clock.exists():
        at = dt.datetime.fromtimestamp(float(clock.read_text()), dt.UTC)
    with (
        open_host(
            HostOptions(host_config=config, persona=persona, persona_labels=labels, thread="main")
        ) as h,
        mock.patch("forgec.host.schedules.now_iso", lambda: iso(at)) if at else nullcontext(),
    ):
        made = h.call("schedule.manage", {"action": "create", "cronExpr": cron, **fields}, CTX)
    return str(made["scheduleId"])


def minute_cron(moment: dt.datetime) -> str:
    return f"{moment.minute} {moment.hour} * * *"


def status_json(root: Path, clock: Path) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "forgec",
            "talond",
            "status",
            "--host-config",
            str(root / "host.toml"),
            "--format",
            "json",
            "--clock-file",
            str(clock),
        ],
        cwd=root,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


# --- a schedule made over MCP fires, and its turn calls a host tool and a forged tool ---------


def test_a_schedule_made_over_mcp_fires_and_its_turn_calls_host_and_forged_tools(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    write_personas(tmp_path, {"alpha": ("schedule.manage:own", "memory.access:thread")})
    store = make_store(tmp_path)
    clock = tmp_path / "clock"

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        return [
            tool_reply("memory_access", {"operation": "write", "key": "seen", "value": "tick"}),
            tool_reply("dynamic_add_Dtask", {}, "call_2"),
            text_reply("Noted the tick and added the task."),
        ][n]

    with fake_model(script) as srv:
        # alpha's own model id on the host's endpoint (SPEC §19: per persona, else [model])
        config = write_config(
            tmp_path,
            f"http://127.0.0.1:{srv.server_port}",
            '[personas.alpha]\nmodel = "alpha-model"\n',
        )
        t0 = fresh_minute()
        slot = (t0 + dt.timedelta(minutes=1)).replace(second=0, microsecond=0)
        set_clock(clock, t0)

        async def create(session: Any) -> Any:
            # only cronExpr and a label: the seed makes prompt and promptFile optional
            return await session.call_tool(
                "schedule_manage",
                {"action": "create", "cronExpr": minute_cron(slot), "label": "tick"},
            )

        made = run_client(
            [
                "--store",
                str(store),
                "--host-config",
                str(config),
                "--persona-labels",
                "schedule.manage:own",
            ],
            create,
        )
        assert not made.is_error, made.content
        sid = made.structured_content["scheduleId"]

        daemon = Daemon(tmp_path, config, store, clock).start()
        daemons.append(daemon)
        time.sleep(1.0)
        assert daemon.firings() == [] and srv.seen == []  # not yet its minute
        before = status_json(tmp_path, clock)["schedules"][0]
        assert before["nextRun"] == slot_text(slot) and before["lastRun"] is None

        set_clock(clock, slot + dt.timedelta(seconds=1))
        fired = daemon.wait_for(
            lambda e: e["event"] == "firing" and e["status"] == "completed", what="the firing"
        )
        assert fired["schedule"] == sid and fired["slot"] == slot_text(slot)
        assert fired["tools"] == ["memory_access", "dynamic_add_Dtask"]
        assert daemon.stop() == 0

    db = tmp_path / "host.db"
    assert [r["value"] for r in db_rows(db, "SELECT value FROM memory_items")] == ["tick"]
    assert [r["title"] for r in db_rows(db, "SELECT title FROM tasks")] == ["x"]
    posted = db_rows(db, "SELECT content FROM messages WHERE thread_id = 'main'")
    assert [r["content"] for r in posted] == ["Noted the tick and added the task."]
    # the turn was told: the label as the prompt, the tools under their MCP names and the MCP
    # server's schemas, those tools' instruction files in the system prompt
    first = srv.seen[0]
    assert first["model"] == "alpha-model"
    assert first["messages"][1] == {"role": "user", "content": "tick"}
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(offered) == {"schedule_manage", "memory_access", "dynamic_add_Dtask"}
    from forgec.mcp.listing import host_entries

    for entry in host_entries(("schedule.manage:own", "memory.access:thread")):
        assert offered[entry.name]["parameters"] == entry.input_schema
    system = first["messages"][0]["content"]
    assert system.startswith("# alpha: a test persona")
    assert "## memory_access" in system and "## schedule_manage" in system
    assert "alpha-skill" in system
    after = status_json(tmp_path, clock)["schedules"][0]
    assert after["lastRun"]["status"] == "completed" and after["lastRun"]["slot"] == slot_text(slot)
    assert after["lastRun"]["result"]["answer"] == "Noted the tick and added the task."


# --- kill -9 mid-turn: neither lost nor repeated; a slot missed while down fires once ---------


def test_kill_9_mid_turn_neither_loses_nor_repeats_and_missed_slots_fire_once(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    write_personas(tmp_path, {"alpha": ("channel.send:journal",)})
    store = make_store(tmp_path)
    clock = tmp_path / "clock"
    block = threading.Event()
    phase = {"now": "first"}

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        if phase["now"] == "first":
            if n == 0:
                return tool_reply("channel_send", {"channelId": "journal", "content": "once"})
            return block if phase.get("block", True) else text_reply("sent it")
        return text_reply("caught up")

    with fake_model(script) as srv:
        config = write_config(
            tmp_path,
            f"http://127.0.0.1:{srv.server_port}",
            '[channels.journal]\nconnector = "outbox"\n',
        )
        t0 = now_utc()
        set_clock(clock, t0)
        sid = create_schedule(tmp_path, "* * * * *", prompt="write in the journal")
        slot = (t0 + dt.timedelta(minutes=1)).replace(second=0, microsecond=0)
        first = Daemon(tmp_path, config, store, clock).start()
        daemons.append(first)
        set_clock(clock, slot + dt.timedelta(seconds=2))
        assert srv.blocked.wait(60), "the turn never reached its second round"
        first.kill9()  # mid-turn: the message is sent, the model's second answer never came
        block.set()
        running = db_rows(tmp_path / "host.db", "SELECT status FROM schedule_firings")
        assert [r["status"] for r in running] == ["running"]
        report = status_json(tmp_path, clock)
        assert not report["running"] and report["noDaemonSince"]  # its lock is free: dead

        phase["block"] = False
        second = Daemon(tmp_path, config, store, clock).start()  # takes over at once
        daemons.append(second)
        done = second.wait_for(
            lambda e: e["event"] == "firing" and e["status"] == "completed", what="the re-take"
        )
        assert done["slot"] == slot_text(slot)
        assert any(e["event"] == "took over" and e["workflows"] == 1 for e in second.events)
        assert second.stop() == 0

        db = tmp_path / "host.db"
        sent = db_rows(db, "SELECT content FROM messages WHERE channel_id = 'journal'")
        assert [r["content"] for r in sent] == ["once"]  # the effect was not repeated
        # the first answer came from the recorded step, not from the model again
        assert sum(1 for b in srv.seen if len(b["messages"]) == 2) == 1
        firings = db_rows(db, "SELECT slot, status FROM schedule_firings")
        assert [(r["slot"], r["status"]) for r in firings] == [(slot_text(slot), "completed")]

        # down for seven minutes: seven slots missed, one firing at start, for the latest
        phase["now"] = "later"
        set_clock(clock, slot + dt.timedelta(minutes=7, seconds=5))
        third = Daemon(tmp_path, config, store, clock).start()
        daemons.append(third)
        third.wait_for(lambda e: e["event"] == "firing", what="the catch-up firing")
        time.sleep(1.5)
        assert len(third.firings()) == 1, third.events
        assert third.firings()[0]["slot"] == slot_text(slot + dt.timedelta(minutes=7))
        assert third.stop() == 0
    rows = db_rows(db, "SELECT slot FROM schedule_firings WHERE schedule_id = ?", (sid,))
    assert len(rows) == 2


# --- A → B → A: the chain of sends stops at the bound -----------------------------------------


def test_a_chain_of_sends_stops_at_the_bound(tmp_path: Path, daemons: list[Daemon]) -> None:
    labels = ("persona.send:*",)
    write_personas(tmp_path, {"alpha": labels, "beta": labels})
    store = make_store(tmp_path)
    clock = tmp_path / "clock"
    results: list[str] = []

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        if n == 0:
            other = "beta" if persona == "alpha" else "alpha"
            return tool_reply("persona_send", {"target_persona": other, "message": "ping"})
        results.append(body["messages"][-1]["content"])
        return text_reply(f"{persona} passed it on")

    with fake_model(script) as srv:
        config = write_config(tmp_path, f"http://127.0.0.1:{srv.server_port}")
        t0 = now_utc()
        set_clock(clock, t0)
        create_schedule(tmp_path, "* * * * *", prompt="start the chain")
        daemon = Daemon(tmp_path, config, store, clock).start()
        daemons.append(daemon)
        set_clock(clock, (t0 + dt.timedelta(minutes=1)).replace(second=1, microsecond=0))
        daemon.wait_for(
            lambda e: e["event"] == "task.a2a" and e.get("depth") == 4, what="the 4th task"
        )
        time.sleep(1.0)
        assert daemon.stop() == 0
    tasks = db_rows(
        tmp_path / "host.db",
        "SELECT from_persona, target_persona, depth, status, error FROM a2a_tasks ORDER BY seq",
    )
    assert [(t["from_persona"], t["target_persona"], t["depth"]) for t in tasks] == [
        ("alpha", "beta", 1),
        ("beta", "alpha", 2),
        ("alpha", "beta", 3),
        ("beta", "alpha", 4),
        ("alpha", "beta", 5),
    ]
    assert [t["status"] for t in tasks] == ["completed"] * 4 + ["failed"]
    assert "bound of 4" in tasks[-1]["error"]
    # the persona whose send was refused was told so in its tool result
    assert any('"status": "failed"' in r and "bound of 4" in r for r in results)
    assert len([e for e in daemon.events if e["event"] == "task.a2a"]) == 4


# --- a background agent: its profile's persona, its completion in the thread ------------------


def test_a_background_agent_runs_as_its_profile_and_completes_into_the_thread(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    write_personas(tmp_path, {"alpha": ("subagent.background",), "beta": ()})
    store = make_store(tmp_path)
    clock = tmp_path / "clock"
    (tmp_path / "policy.toml").write_text('[[allow]]\ntool = "background_agent"\n')

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        if persona == "alpha":
            if n == 0:
                return tool_reply(
                    "background_agent",
                    {"action": "spawn", "prompt": "find the answer", "profile": "beta"},
                )
            return text_reply("spawned it")
        return text_reply("The answer is 42.")

    with fake_model(script) as srv:
        url = f"http://127.0.0.1:{srv.server_port}"
        config = write_config(
            tmp_path,
            url,
            f'consent_policy = "policy.toml"\n\n[providers.deep]\nbase_url = "{url}/v1"\n'
            'model = "deep-model"\n\n[personas.beta]\nprovider = "deep"\n',
        )
        # write_config's [talond] table is open above `consent_policy`: keep it there
        text = config.read_text().replace(
            'poll_ms = 100\n\nconsent_policy = "policy.toml"',
            'poll_ms = 100\nconsent_policy = "policy.toml"',
        )
        config.write_text(text)
        t0 = now_utc()
        set_clock(clock, t0)
        create_schedule(tmp_path, "* * * * *", prompt="research in the background")
        daemon = Daemon(tmp_path, config, store, clock).start()
        daemons.append(daemon)
        set_clock(clock, (t0 + dt.timedelta(minutes=1)).replace(second=1, microsecond=0))
        task = daemon.wait_for(
            lambda e: e["event"] == "task.background" and e["status"] == "completed",
            what="the background task",
        )
        assert daemon.stop() == 0
    assert task["persona"] == "beta"
    beta = [b for b in srv.seen if b["messages"][0]["content"].startswith("# beta")]
    assert beta and beta[0]["model"] == "deep-model"  # the profile's provider and model
    assert beta[0]["messages"][1]["content"] == "find the answer"
    # beta's labels grant no host tool: only the forged tool that needs no label
    assert [t["function"]["name"] for t in beta[0]["tools"]] == ["dynamic_add_Dtask"]
    thread = db_rows(
        tmp_path / "host.db",
        "SELECT channel_id, content FROM messages WHERE thread_id = 'main' ORDER BY seq",
    )
    completions = [r["content"] for r in thread if r["channel_id"] == "background"]
    assert len(completions) == 1 and "completed" in completions[0]
    assert "The answer is 42." in completions[0]


# --- a webhook receiver gets each message once, despite a failed first attempt ----------------


class Receiver(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        srv: Any = self.server
        srv.seen.append((self.headers["idempotency-key"], body))
        status = 500 if len(srv.seen) == 1 else 200
        if status == 200:
            srv.accepted.append(body["messageId"])
        self.send_response(status)
        self.send_header("content-length", "0")
        self.end_headers()


def test_a_webhook_gets_each_message_once_despite_a_failed_first_attempt(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    store, clock = hooked_persona(tmp_path)
    script = post_once("**Build** done")
    with fake_model(script) as srv, serving(Receiver, seen=[], accepted=[]) as hook:
        config = hooked_config(
            tmp_path,
            srv.server_port,
            hook.server_port,
            plain=True,
            talond="webhook_backoff_ms = 2000\n",
        )
        t0 = now_utc()
        set_clock(clock, t0)
        create_schedule(tmp_path, "* * * * *", prompt="announce the build")
        daemon = Daemon(tmp_path, config, store, clock).start()
        daemons.append(daemon)
        fire_at = (t0 + dt.timedelta(minutes=1)).replace(second=1, microsecond=0)
        set_clock(clock, fire_at)
        daemon.wait_for(
            lambda e: e["event"] == "delivery" and e["status"] == "retry", what="the failed POST"
        )
        time.sleep(0.5)
        assert len(hook.seen) == 1  # the backoff holds the retry back
        set_clock(clock, fire_at + dt.timedelta(seconds=3))
        daemon.wait_for(
            lambda e: e["event"] == "delivery" and e["status"] == "delivered", what="the delivery"
        )
        time.sleep(1.0)  # time for a wrong second delivery to show
        assert daemon.stop() == 0
    keys = [k for k, _ in hook.seen]
    assert len(hook.seen) == 2 and keys[0] == keys[1]
    assert hook.accepted == [keys[0]]
    assert hook.seen[1][1]["content"].strip() == "Build done"  # converted: plain text
    row = db_rows(
        tmp_path / "host.db",
        "SELECT delivery, delivery_attempts FROM messages WHERE channel_id = 'hooked'",
    )
    assert [(r["delivery"], r["delivery_attempts"]) for r in row] == [("delivered", 2)]


# --- stopping hands in-flight work back; the next start finishes it without repeating ---------


def test_sigterm_mid_turn_hands_the_work_back_and_the_next_start_finishes_it(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    write_personas(tmp_path, {"alpha": ("channel.send:journal",)})
    store = make_store(tmp_path)
    clock = tmp_path / "clock"
    block = threading.Event()
    state = {"block": True}

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        if n == 0:
            return tool_reply("channel_send", {"channelId": "journal", "content": "once"})
        return block if state["block"] else text_reply("finished")

    with fake_model(script) as srv:
        config = write_config(
            tmp_path,
            f"http://127.0.0.1:{srv.server_port}",
            '[channels.journal]\nconnector = "outbox"\n',
        )
        config.write_text(
            config.read_text().replace("poll_ms = 100\n", "poll_ms = 100\ngrace_seconds = 1\n")
        )
        t0 = now_utc()
        set_clock(clock, t0)
        create_schedule(tmp_path, "0 * * * *", prompt="write once")
        slot = (t0 + dt.timedelta(hours=1)).replace(minute=0, second=0, microsecond=0)
        first = Daemon(tmp_path, config, store, clock).start()
        daemons.append(first)
        set_clock(clock, slot + dt.timedelta(seconds=1))
        assert srv.blocked.wait(60)
        started = time.monotonic()
        assert first.stop() == 0  # within the grace period, not after the model's timeout
        assert time.monotonic() - started < 15
        assert any(e["event"] == "handed back" for e in first.events)
        block.set()
        state["block"] = False
        second = Daemon(tmp_path, config, store, clock).start()  # same clock: no lease to wait out
        daemons.append(second)
        done = second.wait_for(
            lambda e: e["event"] == "firing" and e["status"] == "completed", what="the finish"
        )
        assert done["slot"] == slot_text(slot)
        assert second.stop() == 0
    sent = db_rows(
        tmp_path / "host.db", "SELECT content FROM messages WHERE channel_id = 'journal'"
    )
    assert [r["content"] for r in sent] == ["once"]


# --- the one slow test: a real minute boundary, on the real clock ----------------------------


@pytest.mark.slow
def test_on_the_real_clock_a_schedule_fires_at_the_next_minute(tmp_path: Path) -> None:
    write_personas(tmp_path, {"alpha": ()})
    store = make_store(tmp_path)

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        return text_reply("on time")

    with fake_model(script) as srv:
        config = write_config(tmp_path, f"http://127.0.0.1:{srv.server_port}")
        sid = create_schedule(tmp_path, "* * * * *", label="every minute")
        args = [sys.executable, "-m", "forgec", "talond", "--host-config", str(config)]
        args += ["--store", str(store), "--log-format", "json"]
        proc = subprocess.Popen(
            args,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        try:
            assert proc.stdout is not None
            started = time.time()
            for line in proc.stdout:
                event = json.loads(line)
                if event["event"] == "firing":
                    break
                assert time.time() - started < 90, "no firing within a real minute and a half"
            fired_at = dt.datetime.now(dt.UTC)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(60)
    assert event["status"] == "completed" and event["schedule"] == sid
    slot = dt.datetime.fromisoformat(event["slot"].replace("Z", "+00:00"))
    assert slot.second == 0 and dt.timedelta(0) <= fired_at - slot < dt.timedelta(seconds=30)


# --- README's Talon section, as written, against a local (fake) model server ------------------


def test_the_readme_talon_section_starts_the_daemon_and_a_schedule_fires(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    import re
    import shlex
    import shutil

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Talon: schedules fire, personas answer", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    assert block is not None
    commands = [
        shlex.split(line) for line in block.group(1).splitlines() if line.startswith("forgec")
    ]
    assert [c[:3] for c in commands] == [
        ["forgec", "talond", "schedule"],
        ["forgec", "talond", "--host-config"],
    ]
    example = tmp_path / "examples" / "talond"
    shutil.copytree(ROOT / "examples" / "talond", example)
    config = example / "host.toml"
    clock = tmp_path / "clock"

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        if n == 0:
            return tool_reply(
                "channel_send", {"channelId": "journal", "content": "Hello at 09:31."}
            )
        return text_reply("Hello at 09:31.")

    # the user's data directory (the default tool store) is the test's
    env = {"XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)}
    with fake_model(script) as srv:
        text = config.read_text().replace(
            "http://127.0.0.1:11434/v1", f"http://127.0.0.1:{srv.server_port}/v1"
        )
        config.write_text(text)
        t0 = fresh_minute()
        set_clock(clock, t0)
        made = subprocess.run(
            [sys.executable, "-m", "forgec", *commands[0][1:]],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, **env},
            timeout=60,
        )
        assert made.returncode == 0, made.stderr
        sid = json.loads(made.stdout)["scheduleId"]
        daemon = Daemon(tmp_path, config, None, clock, args=commands[1][1:], env=env).start()
        daemons.append(daemon)
        set_clock(clock, (t0 + dt.timedelta(minutes=1)).replace(second=1, microsecond=0))
        fired = daemon.wait_for(lambda e: e["event"] == "firing", what="the README's firing")
        assert fired["status"] == "completed" and fired["schedule"] == sid
        assert daemon.stop() == 0
    shown = subprocess.run(
        [sys.executable, "-m", "forgec", "talond", "status", "--host-config", str(config)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    assert sid in shown.stdout and "completed: Hello at 09:31." in shown.stdout
    assert srv.seen[0]["messages"][1]["content"].startswith("Say hello, note the time")


# --- await_reply: the sender's turn sees the target persona's answer ------------------------


def test_await_reply_sees_the_target_personas_answer(tmp_path: Path, daemons: list[Daemon]) -> None:
    labels = ("persona.send:*",)
    write_personas(tmp_path, {"alpha": labels, "beta": ()})
    store = make_store(tmp_path)
    clock = tmp_path / "clock"
    seen: list[str] = []

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        if persona == "beta":
            return text_reply("beta says 7")
        if n == 0:
            return tool_reply(
                "persona_send",
                {"target_persona": "beta", "message": "a number?", "await_reply": True},
            )
        if n == 1:
            seen.append(body["messages"][-1]["content"])
            sent = json.loads(body["messages"][-1]["content"])
            return tool_reply("persona_task_status", {"task_id": sent["taskId"]}, "call_2")
        seen.append(body["messages"][-1]["content"])
        return text_reply("got it")

    with fake_model(script) as srv:
        config = write_config(tmp_path, f"http://127.0.0.1:{srv.server_port}")
        t0 = now_utc()
        set_clock(clock, t0)
        create_schedule(tmp_path, "* * * * *", prompt="ask beta")
        daemon = Daemon(tmp_path, config, store, clock).start()
        daemons.append(daemon)
        set_clock(clock, (t0 + dt.timedelta(minutes=1)).replace(second=1, microsecond=0))
        daemon.wait_for(
            lambda e: e["event"] == "firing" and e["status"] == "completed", what="alpha's turn"
        )
        assert daemon.stop() == 0
    replied, status = (json.loads(s) for s in seen)
    assert replied["status"] == "completed" and replied["result"] == "beta says 7"
    assert status == replied


class HangingReceiver(http.server.BaseHTTPRequestHandler):
    """Reads the POST, records it, and answers 200 only once the test lets it go."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        json.loads(self.rfile.read(int(self.headers["content-length"])))
        srv: Any = self.server
        srv.seen.append(self.headers["idempotency-key"])
        srv.got.set()
        srv.release.wait(60)
        try:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()
        except OSError:  # the daemon that sent it is gone
            pass


def test_kill_9_during_a_webhook_post_sends_it_again_under_the_same_key(
    tmp_path: Path, daemons: list[Daemon]
) -> None:
    store, clock = hooked_persona(tmp_path)
    script = post_once("once only")
    release = threading.Event()
    with (
        fake_model(script) as srv,
        serving(HangingReceiver, seen=[], got=threading.Event(), release=release) as hook,
    ):
        config = hooked_config(tmp_path, srv.server_port, hook.server_port)
        t0 = now_utc()
        set_clock(clock, t0)
        create_schedule(tmp_path, "0 * * * *", prompt="announce")
        slot = (t0 + dt.timedelta(hours=1)).replace(minute=0, second=0, microsecond=0)
        first = Daemon(tmp_path, config, store, clock).start()
        daemons.append(first)
        set_clock(clock, slot + dt.timedelta(seconds=1))
        assert hook.got.wait(60), "the webhook was never POSTed"
        first.kill9()  # during the POST: sent, and no answer recorded
        release.set()
        hook.got.clear()
        second = Daemon(tmp_path, config, store, clock).start()
        daemons.append(second)
        second.wait_for(
            lambda e: e["event"] == "delivery" and e["status"] == "delivered",
            what="the delivery, taken over",
        )
        assert second.stop() == 0
    # at least once sent, under one key: the receiver applies it once
    assert len(hook.seen) == 2 and hook.seen[0] == hook.seen[1]
    row = db_rows(tmp_path / "host.db", "SELECT delivery FROM messages WHERE channel_id = 'hooked'")
    assert [r["delivery"] for r in row] == ["delivered"]
