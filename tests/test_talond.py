"""The Talon daemon's parts, and the helpers its end-to-end tests share.

Helpers: a loopback fake OpenAI-compatible server whose answers a test scripts (per persona,
per round: the n-th assistant answer of a conversation), tool-call replies, a persona folder
and a host config. The end-to-end tests (the real daemon process, the real `mcp` client) are
in tests/test_talond_daemon.py; here the units: the cron rule of due slots, leases and the
journal, the model client's tool-call protocol, the four measured fixes.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loopback import serving

from forgec.daemon.clock import iso
from forgec.daemon.tables import Tables, Work, firing_id, latest_slot, slot_text
from forgec.host import HostOptions, open_host
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="t", tool_version=1, node_id="n")
UTC = dt.UTC


# --- the fake model server -------------------------------------------------------------------


def tool_reply(name: str, args: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ],
    }


def text_reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def persona_of(body: dict[str, Any]) -> str:
    """Each test persona's persona.md starts `# <name>:` — the system prompt says who asks."""
    system = body["messages"][0]["content"]
    return system.split("\n", 1)[0].lstrip("# ").split(":", 1)[0]


def round_of(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m.get("role") == "assistant")


Script = Callable[[str, int, dict[str, Any]], Any]


class FakeModel(http.server.BaseHTTPRequestHandler):
    """POST /v1/chat/completions → `server.script(persona, round, body)`: a message dict, or
    a `threading.Event` to wait on (then HTTP 503), or an int HTTP status."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        srv: Any = self.server
        with srv.lock:
            srv.seen.append(body)
        answer = srv.script(persona_of(body), round_of(body), body)
        if isinstance(answer, threading.Event):
            srv.blocked.set()
            answer.wait(60)
            answer = 503
        if isinstance(answer, int):
            self.send_response(answer)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        data = json.dumps({"choices": [{"message": answer, "finish_reason": "stop"}]}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def fake_model(script: Script) -> Any:
    return serving(
        FakeModel, script=script, seen=[], lock=threading.Lock(), blocked=threading.Event()
    )


def write_personas(root: Path, personas: dict[str, tuple[str, ...]]) -> Path:
    """personas/<name>/persona.md (`# <name>: ...`) and labels.txt."""
    folder = root / "personas"
    for name, labels in personas.items():
        sub = folder / name
        (sub / "prompts").mkdir(parents=True)
        (sub / "persona.md").write_text(f"# {name}: a test persona\n\nYou are {name}.\n")
        (sub / "labels.txt").write_text("\n".join(labels) + "\n")
        (sub / "skills.txt").write_text(f"{name}-skill\n")
    return folder


def write_config(
    root: Path, model_url: str | None, extra: str = "", persona: str = "alpha"
) -> Path:
    model = (
        f'[model]\nkind = "openai"\nbase_url = "{model_url}/v1"\nmodel = "fake-model"\n'
        "timeout_ms = 20000\n"
        if model_url
        else ""
    )
    text = (
        f'db = "host.db"\nthread = "main"\n\n[persona]\nname = "{persona}"\nfolder = "personas"\n\n'
        f"{model}\n[talond]\nlease_seconds = 5\npoll_ms = 100\n\n{extra}"
    )
    path = root / "host.toml"
    path.write_text(text)
    return path


# --- due slots: the one cron rule, once per missed run --------------------------------------


class FixedClock:
    def __init__(self, moment: dt.datetime) -> None:
        self.moment = moment

    def now(self) -> dt.datetime:
        return self.moment


def _schedule(db: Path, cron: str, created: dt.datetime, **extra: Any) -> str:
    conn = sqlite3.connect(db)
    sid = f"sch_{abs(hash((cron, created))) % 10**8}"
    conn.execute(
        "INSERT INTO schedules (id, persona, thread_id, cron_expr, label, prompt, prompt_file,"
        " enabled, created_at, updated_at) VALUES (?, 'alpha', 'main', ?, ?, NULL, NULL, ?, ?, ?)",
        (sid, cron, extra.get("label"), extra.get("enabled", 1), iso(created), iso(created)),
    )
    conn.commit()
    conn.close()
    return sid


@pytest.fixture
def queue_db(tmp_path: Path) -> Path:
    from forgec.host.db import connect

    db = tmp_path / "host.db"
    connect(db).close()
    return db


START = dt.datetime(2026, 3, 2, 9, 0, 30, tzinfo=UTC)


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    n = st.integers(low, high)
    return st.one_of(
        st.just("*"),
        n.map(str),
        st.integers(2, max(2, high - low)).map(lambda k: f"*/{k}"),
        st.tuples(n, n).map(lambda ab: f"{min(ab)}-{max(ab)}"),
        st.lists(n, min_size=2, max_size=3, unique=True).map(lambda xs: ",".join(map(str, xs))),
    )


def crons() -> st.SearchStrategy[str]:
    """Five-field expressions the one cron rule accepts (the daemon fires nothing else)."""
    from forgec.catalog.cron import validate_cron

    fields = st.tuples(_field(0, 59), _field(0, 23), _field(1, 28), _field(1, 12), _field(0, 6))
    return fields.map(" ".join).filter(lambda e: validate_cron(e) is None)


def _claim(db: Path, clock: Any) -> list[Work]:
    """What one look of the daemon's glue starts: each due slot recorded and begun."""
    tables = Tables(db, clock=clock)
    try:
        out = []
        for sid, slot, busy in tables.due_slots():
            if busy:
                tables.record_slot(sid, slot, "skipped")
                continue
            tables.record_slot(sid, slot, "running")
            data = tables.begin("firing", firing_id(sid, slot))
            if data is not None:
                out.append(Work.from_json(data))
        return out
    finally:
        tables.close()


def _finish(db: Path, clock: Any, work: Work, answer: str = "ok") -> bool:
    tables = Tables(db, clock=clock)
    try:
        return tables.finish(work.to_json(), {"answer": answer}, None)
    finally:
        tables.close()


@settings(max_examples=25, deadline=None)
@given(
    cron=st.one_of(st.sampled_from(["* * * * *", "*/5 * * * *", "0 * * * *"]), crons()),
    steps=st.lists(st.integers(min_value=0, max_value=600), min_size=1, max_size=8),
    unfinished=st.sets(st.integers(min_value=0, max_value=7)),
)
def test_each_slot_fires_at_most_once_and_the_latest_is_never_lost(
    tmp_path_factory: pytest.TempPathFactory, cron: str, steps: list[int], unfinished: set[int]
) -> None:
    """Invariant: whatever the times the daemon looks (and whether the firing it started has
    finished — a dead daemon's firing runs on in the engine), (1) no slot is ever started twice,
    (2) every start is the latest slot at or before the time it was made, (3) after each look
    the latest due slot has a row — missed ones fire once, not once per slot — (4) a slot that
    came while the previous firing still ran is recorded `skipped`, never run beside it."""
    from forgec.host.db import connect

    db = tmp_path_factory.mktemp("q") / "host.db"
    connect(db).close()
    sid = _schedule(db, cron, START)
    clock = FixedClock(START)
    started: list[str] = []
    running: list[Work] = []
    for i, minutes in enumerate(steps):
        clock.moment += dt.timedelta(minutes=minutes)
        for work in _claim(db, clock):
            assert work.slot not in started, "a slot fired twice"
            assert not running, "two firings of one schedule at once"
            assert work.slot == slot_text(latest_slot(cron, clock.moment))
            started.append(str(work.slot))
            running.append(work)
        latest = latest_slot(cron, clock.moment)
        if latest > START:
            rows = sqlite3.connect(db).execute(
                "SELECT status FROM schedule_firings WHERE slot = ?", (slot_text(latest),)
            )
            assert rows.fetchone() is not None, "the latest due slot was lost"
        if i not in unfinished:
            for work in running:
                assert _finish(db, clock, work)
                assert not _finish(db, clock, work)  # a replayed finish changes nothing
            running.clear()
    rows = sqlite3.connect(db).execute(
        "SELECT slot, COUNT(*) FROM schedule_firings WHERE schedule_id = ? GROUP BY slot", (sid,)
    )
    assert all(n == 1 for _slot, n in rows)
    skipped = sqlite3.connect(db).execute(
        "SELECT slot FROM schedule_firings WHERE status = 'skipped'"
    )
    assert not {r[0] for r in skipped} & set(started)


# --- the model client's tool-call protocol ----------------------------------------------------


def test_the_chat_client_sends_tools_and_reads_tool_calls() -> None:
    from forgec.host.models import OpenAIProvider

    def script(persona: str, n: int, body: dict[str, Any]) -> Any:
        return tool_reply("memory_access", {"operation": "list"}) if n == 0 else text_reply("ok")

    tools = [{"type": "function", "function": {"name": "memory_access", "parameters": {}}}]
    with fake_model(script) as srv:
        provider = OpenAIProvider(f"http://127.0.0.1:{srv.server_port}/v1", "m")
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "# alpha: x"},
            {"role": "user", "content": "go"},
        ]
        reply = provider.turn(messages, tools)
        assert reply.tool_calls[0].name == "memory_access"
        assert reply.tool_calls[0].arguments == {"operation": "list"}
        messages.append(reply.to_json())
        messages.append({"role": "tool", "tool_call_id": "call_1", "content": "{}"})
        assert provider.turn(messages, tools, model="other").content == "ok"
    assert srv.seen[0]["tools"] == tools and srv.seen[0]["tool_choice"] == "auto"
    assert srv.seen[1]["model"] == "other"
    assert srv.seen[1]["messages"][2]["tool_calls"][0]["function"]["name"] == "memory_access"


@pytest.mark.parametrize(
    "message",
    [
        {"content": 3},
        {"tool_calls": "x"},
        {"tool_calls": [{"function": {}}]},
        {"tool_calls": [{"function": {"name": "a"}}] * 40},
    ],
)
def test_a_malformed_tool_call_answer_is_one_clear_error(message: dict[str, Any]) -> None:
    from forgec.host.models import parse_turn

    with pytest.raises(HostError) as info:
        parse_turn(message)
    assert info.value.code == "RUN_MODEL_FAILED"


# --- the four measured fixes ---------------------------------------------------------------


def _host(tmp_path: Path, **kw: Any) -> Any:
    folder = write_personas(tmp_path, {"alpha": ("schedule.manage:own",), "beta": ()})
    config = write_config(tmp_path, None)
    (tmp_path / "host.toml").write_text(
        config.read_text()
        + '\n[providers.fast]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "fast-model"\n'
        '\n[personas.beta]\nprovider = "fast"\nmodel = "beta-model"\n'
    )
    assert folder.is_dir()
    opts: dict[str, Any] = {
        "host_config": config,
        "persona_labels": ("schedule.manage:own", "subagent.background", "memory.access:thread"),
        **kw,
    }
    return open_host(HostOptions(**opts))


def test_a_schedule_with_only_a_cron_expression_is_created_and_fires_its_label(
    tmp_path: Path,
) -> None:
    from forgec.host.schedules import firing_prompt

    with _host(tmp_path) as h:
        made = h.call(
            "schedule.manage", {"action": "create", "cronExpr": "0 9 * * 1", "label": "review"}, CTX
        )
        bare = h.call("schedule.manage", {"action": "create", "cronExpr": "0 9 * * 1"}, CTX)
        rows = {r["id"]: r for r in h.conn.execute("SELECT * FROM schedules").fetchall()}
    assert made["enabled"] and made["prompt"] is None and made["promptFile"] is None
    assert firing_prompt(rows[made["scheduleId"]], None) == "review"
    assert bare["scheduleId"] in firing_prompt(rows[bare["scheduleId"]], None)


def test_a_background_profile_is_the_whole_persona(tmp_path: Path) -> None:
    jobs: list[dict[str, Any]] = []
    done = threading.Event()

    def runner(job: dict[str, Any], ctx: Any) -> Any:
        jobs.append(job)
        done.set()
        return "ok"

    with _host(tmp_path, background_runner=runner) as h:
        h.call(
            "subagent.background",
            {"action": "spawn", "prompt": "look", "profile": "beta", "provider": "fast"},
            CTX,
        )
        assert done.wait(10)
        with pytest.raises(HostError, match="unknown provider"):
            h.call("subagent.background", {"action": "spawn", "prompt": "x", "provider": "no"}, CTX)
    profile = jobs[0]["profile"]
    assert profile["name"] == "beta" and profile["skills"] == ["beta-skill"]
    assert profile["prompt"].startswith("# beta: a test persona")
    assert profile["model"] == "beta-model" and profile["provider"] == "fast"
    assert profile["labels"] == []
    assert jobs[0]["provider"] == "fast"


# --- the instruction files say only what the host does -------------------------------------

INSTRUCTIONS = Path(__file__).resolve().parent.parent / "forgec" / "templates" / "tool-instructions"


def _claims() -> list[tuple[str, str, Callable[[Any], None]]]:
    """(file, a sentence it must hold, a probe that exercises exactly that claim)."""

    def cancel_stays_off(h: Any) -> None:
        s = h.call("schedule.manage", {"action": "create", "cronExpr": "0 9 * * *"}, CTX)
        h.call("schedule.manage", {"action": "cancel", "scheduleId": s["scheduleId"]}, CTX)
        after = h.call(
            "schedule.manage",
            {"action": "update", "scheduleId": s["scheduleId"], "cronExpr": "0 10 * * *"},
            CTX,
        )
        assert after["enabled"] is False

    def prompt_optional(h: Any) -> None:
        assert h.call("schedule.manage", {"action": "create", "cronExpr": "0 9 * * *"}, CTX)

    def exclusive(h: Any) -> None:
        with pytest.raises(HostError, match="mutually exclusive"):
            h.call(
                "schedule.manage",
                {"action": "create", "cronExpr": "0 9 * * *", "prompt": "a", "promptFile": "b"},
                CTX,
            )

    def cron_required(h: Any) -> None:
        with pytest.raises(HostError, match="cronExpr"):
            h.call("schedule.manage", {"action": "create", "label": "x"}, CTX)

    def never_date(h: Any) -> None:
        with pytest.raises(HostError, match="never"):
            h.call("schedule.manage", {"action": "create", "cronExpr": "0 9 31 2 *"}, CTX)

    def timeout_raised(h: Any) -> None:
        s = h.call(
            "subagent.background", {"action": "spawn", "prompt": "x", "timeoutMinutes": 1}, CTX
        )
        row = h.conn.execute(
            "SELECT timeout_minutes FROM background_tasks WHERE id = ?", (s["taskId"],)
        ).fetchone()
        assert row[0] == 15

    def profiles_listed(h: Any) -> None:
        names = [
            p["name"] for p in h.call("subagent.background", {"action": "profiles"}, CTX)["result"]
        ]
        assert names == ["alpha", "beta"]

    def generated_key(h: Any) -> None:
        import uuid

        made = h.call("memory.access", {"operation": "write", "value": "v"}, CTX)
        uuid.UUID(made["key"])

    def stringified(h: Any) -> None:
        h.call("memory.access", {"operation": "write", "key": "k", "value": {"a": 1}}, CTX)
        read = h.call("memory.access", {"operation": "read", "key": "k"}, CTX)
        assert json.loads(read["value"]) == {"a": 1}

    def unknown_namespace(h: Any) -> None:
        made = h.call(
            "memory.access", {"operation": "write", "key": "n", "value": "v", "namespace": "x"}, CTX
        )
        assert made["namespace"] == "note"

    return [
        ("memory.access", "without it a new UUID key\n  is generated", generated_key),
        ("memory.access", "anything that is not a string is stored as its JSON text", stringified),
        ("memory.access", "any other value silently becomes `note`", unknown_namespace),
        (
            "schedule.manage",
            "`update` changes its fields but never turns it\n  back on",
            cancel_stays_off,
        ),
        ("schedule.manage", "`prompt` and `promptFile` are optional", prompt_optional),
        ("schedule.manage", "mutually exclusive", exclusive),
        ("schedule.manage", "`cronExpr` (required for `create`)", cron_required),
        ("schedule.manage", "a date that\nnever occurs (`0 9 31 2 *`) is refused", never_date),
        ("subagent.background", "`timeoutMinutes` under 15 is raised to 15", timeout_raised),
        ("subagent.background", "Call `profiles`", profiles_listed),
    ]


@pytest.mark.parametrize("claim", _claims(), ids=lambda c: f"{c[0]}:{c[1][:30]}")
def test_an_instruction_file_claim_holds(tmp_path: Path, claim: Any) -> None:
    name, sentence, probe = claim
    text = " ".join((INSTRUCTIONS / f"{name}.md").read_text().split())
    assert " ".join(sentence.split()) in text, f"{name}.md no longer says: {sentence!r}"
    with _host(tmp_path) as h:
        probe(h)


def test_no_instruction_file_promises_what_the_host_never_does() -> None:
    """Claims the host has been measured not to keep (each was in a shipped file once)."""
    broken = {
        "schedule.manage": ["turned on again with `update`", "can be turned on again"],
        "subagent.background": ['answers `{"profiles"'],
    }
    for name, phrases in broken.items():
        text = " ".join((INSTRUCTIONS / f"{name}.md").read_text().split())
        for phrase in phrases:
            assert phrase not in text, f"{name}.md says {phrase!r}, which the host does not do"


# --- the journal: a turn killed anywhere never repeats an effect ----------------------------


class Crash(BaseException):
    """The daemon dies here (BaseException: nothing in the turn may catch it)."""


class ScriptedProvider:
    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.asked: list[int] = []

    def turn(
        self,
        messages: Any,
        tools: Any,
        *,
        model: Any = None,
        timeout_s: Any = None,
        max_bytes: Any = None,
    ) -> Any:
        from forgec.host.models import parse_turn

        n = sum(1 for m in messages if m.get("role") == "assistant")
        self.asked.append(n)
        if n < self.calls:
            reply = tool_reply(
                "channel_send", {"channelId": "journal", "content": f"m{n}"}, f"c{n}"
            )
        else:
            reply = text_reply("done")
        return parse_turn(reply)


class RecordedSteps:
    """The engine's step contract, in memory: each step's output is recorded; a run that dies
    at step LIMIT (a Crash, with every effect before it done) leaves what it recorded, and the
    next run (a new token) replays it — as DBOS replays a workflow's checkpointed steps."""

    def __init__(self, log: list[tuple[str, Any]], token: str, limit: int | None) -> None:
        self.log, self.token, self.limit, self.n = log, token, limit, 0

    def run(self, name: str, fn: Any, *args: Any) -> Any:
        if self.n < len(self.log):
            recorded_name, output = self.log[self.n]
            assert recorded_name == name, "a replay took another path"
            self.n += 1
            return output
        if self.limit is not None and self.n >= self.limit:
            raise Crash  # before the step: it never ran
        output = fn(*args)
        if self.limit is not None and self.n + 1 == self.limit and name == "call":
            raise Crash  # during the step: its effect happened, nothing recorded it
        self.log.append((name, output))
        self.n += 1
        return output


@settings(max_examples=30, deadline=None)
@given(
    calls=st.integers(min_value=0, max_value=4),
    crashes=st.lists(st.integers(min_value=0, max_value=12), max_size=4),
)
def test_a_turn_killed_at_any_step_never_repeats_an_effect(
    tmp_path_factory: pytest.TempPathFactory, calls: int, crashes: list[int]
) -> None:
    """Invariant: a turn that dies before or during any step (with every effect before it done)
    and is run again sends each message at most once; a send whose result was recorded exactly
    once; a call that died during its step is answered "interrupted, not repeated"; and the
    turn, run again after any number of such deaths, ends with the model's answer."""
    from forgec.daemon.agent import INTERRUPTED, Agents
    from forgec.host.config import load_config
    from forgec.mcp.policy import ConsentPolicy

    root = tmp_path_factory.mktemp("j")
    write_personas(root, {"alpha": ("channel.send:journal",)})
    config_path = write_config(
        root, "http://127.0.0.1:9", '[channels.journal]\nconnector = "outbox"\n'
    )
    config = load_config(config_path)
    db = root / "host.db"
    from forgec.host.db import connect

    connect(db).close()
    _schedule(db, "0 * * * *", START, label="go")
    clock = FixedClock(START + dt.timedelta(hours=1))
    (work,) = _claim(db, clock)
    provider = ScriptedProvider(calls)
    agents = Agents(config, db_path=db, store_path=None, policy=ConsentPolicy())
    agents.provider_for = lambda persona, work, host: (provider, None)  # type: ignore[method-assign]
    log: list[tuple[str, Any]] = []
    outcome = None
    for run, limit in enumerate([*crashes, None]):
        try:
            outcome = agents.run(work, RecordedSteps(log, f"run{run}", limit))
            break
        except Crash:
            continue
    assert outcome is not None and outcome.answer == "done"
    sent = [
        r[0]
        for r in sqlite3.connect(db).execute(
            "SELECT content FROM messages WHERE channel_id = 'journal'"
        )
    ]
    assert len(sent) == len(set(sent)), f"a message was sent twice: {sent}"
    results = [out for name, out in log if name == "call"]
    assert len(results) == calls
    for n, item in enumerate(results):
        if INTERRUPTED in item["content"]:
            assert sent.count(f"m{n}") <= 1
        else:
            assert sent.count(f"m{n}") == 1


# --- no person at the daemon: R4 only by policy; nothing is ever armed ----------------------


def _agents(tmp_path: Path, policy: Any, store: Path | None = None) -> Any:
    from forgec.daemon.agent import Agents
    from forgec.host.config import load_config

    write_personas(tmp_path, {"alpha": ("subagent.background",)})
    config = load_config(write_config(tmp_path, "http://127.0.0.1:9"))
    return Agents(config, db_path=tmp_path / "host.db", store_path=store, policy=policy)


def test_an_r4_call_runs_only_when_the_policy_allows_it(tmp_path: Path) -> None:
    from forgec.mcp.policy import Allow, ConsentPolicy

    spawn = json.dumps({"action": "spawn", "prompt": "go"})
    labels = ("subagent.background",)
    refused = _agents(tmp_path, ConsentPolicy())
    with open_host(HostOptions(db=tmp_path / "host.db", persona_labels=labels)) as h:
        offered = refused.offered(labels)
        answer = json.loads(refused.call_tool(offered, "background_agent", spawn, h))
        assert "R4" in answer["error"] and "consent_policy" in answer["error"]
        assert h.conn.execute("SELECT COUNT(*) FROM background_tasks").fetchone()[0] == 0
        # a listing is not a grant: a tool the labels do not offer is refused, named or not
        answer = json.loads(refused.call_tool(offered, "net_http", "{}", h))
        assert "not available" in answer["error"]
        allowed = _agents(tmp_path / "b", ConsentPolicy((Allow(tool="background_agent"),)))
        answer = json.loads(allowed.call_tool(offered, "background_agent", spawn, h))
        assert answer["status"] == "queued"


def test_the_daemon_offers_only_enabled_forged_tools_and_never_tool_create(tmp_path: Path) -> None:
    from test_store import install, open_store

    from forgec.mcp.policy import ConsentPolicy

    store = tmp_path / "tools.db"
    with open_store(store) as s:
        install(s, 1, None, "tasks.list", tool_id="on.tool")
        s.enable("on.tool", consent=True)
        install(s, 1, None, "tasks.list", tool_id="off.tool")
    agents = _agents(tmp_path, ConsentPolicy(), store)
    offered = agents.offered(("subagent.background", "tool.create"))
    assert sorted(offered) == ["background_agent", "dynamic_on_Dtool"]
    with open_store(store) as s:  # the daemon turned nothing on
        assert {t.id: t.enabled for t in s.tools()} == {"off.tool": False, "on.tool": True}


def test_background_profiles_fit_the_output_schema_for_the_real_mcp_client(tmp_path: Path) -> None:
    from test_mcp_server import run_client

    write_personas(tmp_path, {"alpha": (), "beta": ()})
    config = write_config(tmp_path, None)
    policy = tmp_path / "policy.toml"
    policy.write_text('[[allow]]\ntool = "background_agent"\n')

    async def body(session: Any) -> Any:
        return await session.call_tool("background_agent", {"action": "profiles"})

    result = run_client(
        [
            "--host-config",
            str(config),
            "--store",
            str(tmp_path / "tools.db"),
            "--persona-labels",
            "subagent.background",
            "--consent-policy",
            str(policy),
        ],
        body,
    )
    assert not result.is_error
    assert [p["name"] for p in result.structured_content["result"]] == ["alpha", "beta"]


def test_the_chain_bound_the_persona_send_file_states_holds(tmp_path: Path) -> None:
    text = " ".join((INSTRUCTIONS / "persona.send.md").read_text().split())
    assert "the fifth send in one chain fails with a status saying so" in text
    write_personas(tmp_path, {"alpha": ("persona.send:*",), "beta": ()})
    labels = ("persona.send:*",)
    with open_host(
        HostOptions(host_config=write_config(tmp_path, None), persona_labels=labels)
    ) as h:
        h.a2a_depth = 3
        fourth = h.call("persona.send", {"target_persona": "beta", "message": "go"}, CTX)
        h.a2a_depth = 4
        fifth = h.call("persona.send", {"target_persona": "beta", "message": "go"}, CTX)
    assert fourth["status"] == "queued"
    assert fifth["status"] == "failed" and "bound of 4" in fifth["error"]


def test_a_schedule_row_written_around_the_cron_rule_never_fires(queue_db: Path) -> None:
    _schedule(queue_db, "@hourly", START)
    _schedule(queue_db, "0 9 31 2 *", START)
    assert _claim(queue_db, FixedClock(START + dt.timedelta(days=400))) == []


def test_check_and_the_host_agree_a_schedule_needs_only_its_cron(tmp_path: Path) -> None:
    """One rule: `forgec check` accepts the step the host accepts (and fires its label)."""
    import forgec

    root = Path(__file__).resolve().parent.parent
    manifest = json.loads((root / "examples" / "talon-weekly-scheduler.talostool").read_text())
    create = manifest["flow"]["nodes"][0]
    assert create["capability"] == "schedule.manage"
    del create["input"]["promptFile"]
    report = forgec.check(json.dumps(manifest).encode(), path="s.talostool", target="talon")
    assert [d.code for d in report.diagnostics if d.severity == "error"] == []


# --- webhooks: at most once per message id, whatever the receiver and the crashes ------------


@settings(max_examples=50, deadline=None)
@given(first_ms=st.integers(min_value=1, max_value=600_000), attempt=st.integers(1, 10_000))
def test_webhook_retries_back_off_and_are_never_more_than_five_minutes_apart(
    first_ms: int, attempt: int
) -> None:
    """Invariant: the wait after a failed POST doubles from `webhook_backoff_ms` and is never
    more than five minutes, whatever the attempt."""
    import attrs as _attrs

    from forgec.daemon.connectors import MAX_BACKOFF_S, backoff_s
    from forgec.host.config import HostConfig, TalondConfig

    config = HostConfig(talond=_attrs.evolve(TalondConfig(), webhook_backoff_ms=first_ms))
    wait = backoff_s(config, attempt)
    assert 0 < wait <= MAX_BACKOFF_S
    assert wait == min(first_ms / 1000 * 2 ** min(attempt - 1, 40), MAX_BACKOFF_S)
    assert backoff_s(config, attempt + 1) >= wait


def test_a_log_line_shows_controls_escaped_and_json_lines_are_json() -> None:
    import io

    from forgec.daemon.log import Log

    text, lines = io.StringIO(), io.StringIO()
    Log("text", text).event("firing", id="f1", error="bad \x1b[2J answer\u202e")
    Log("json", lines).event("firing", id="f1", tools=["a", "b"])
    assert "\x1b" not in text.getvalue() and "\\x1b" in text.getvalue()
    assert "\u202e" not in text.getvalue()
    assert json.loads(lines.getvalue()) == {"event": "firing", "id": "f1", "tools": ["a", "b"]}


def test_a_model_cannot_call_around_the_offered_tools(tmp_path: Path) -> None:
    """Invented names, bad JSON, inputs the schema refuses: each refused with no effect."""
    from forgec.mcp.policy import ConsentPolicy

    agents = _agents(tmp_path, ConsentPolicy())
    labels = ("subagent.background",)
    with open_host(HostOptions(db=tmp_path / "host.db", persona_labels=labels)) as h:
        offered = agents.offered(labels)
        for name, raw, expect in [
            ("tool_create", "{}", "not available"),
            ("schedule_manage", '{"action": "list"}', "not available"),
            ("background_agent", "{not json", "not valid JSON"),
            ("background_agent", '{"action": "explode"}', "invalid input"),
            ("background_agent", '{"action": "spawn", "prompt": "x", "extra": 1}', "invalid input"),
        ]:
            answer = json.loads(agents.call_tool(offered, name, raw, h))
            assert expect in answer["error"], (name, answer)
        assert h.conn.execute("SELECT COUNT(*) FROM background_tasks").fetchone()[0] == 0


@settings(max_examples=25, deadline=None)
@given(
    hops=st.lists(
        st.tuples(st.sampled_from(["alpha", "beta", "gamma"]), st.integers(0, 2)), max_size=12
    )
)
def test_no_send_deeper_than_the_bound_ever_reaches_a_persona(
    tmp_path_factory: pytest.TempPathFactory, hops: list[tuple[str, int]]
) -> None:
    """Invariant: whatever the pattern of sends (fan-out, cycles A → B → A), a task is queued
    only at depth ≤ 4; every deeper one is stored failed saying so."""
    root = tmp_path_factory.mktemp("a2a")
    labels = ("persona.send:*",)
    write_personas(root, {"alpha": labels, "beta": labels, "gamma": labels})
    config = write_config(root, None)
    from forgec.host.db import connect

    connect(root / "host.db").close()
    frontier: list[tuple[str, int]] = [("alpha", 0)]  # (the persona whose turn sends, its depth)
    for target, pick in hops:
        sender, depth = frontier[pick % len(frontier)]
        if target == sender:
            continue
        with open_host(HostOptions(host_config=config, persona=sender, persona_labels=labels)) as h:
            h.a2a_depth = depth
            sent = h.call("persona.send", {"target_persona": target, "message": "go"}, CTX)
        if sent["status"] == "queued":
            frontier.append((target, depth + 1))
    rows = sqlite3.connect(root / "host.db").execute("SELECT depth, status, error FROM a2a_tasks")
    for depth, status, error in rows:
        if depth > 4:
            assert status == "failed" and "bound of 4" in error
        else:
            assert status == "queued"


class KeyedModel(http.server.BaseHTTPRequestHandler):
    """Records the Authorization header; answers 500 quoting it (a careless server)."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        srv: Any = self.server
        srv.auth.append(self.headers.get("authorization"))
        data = f"upstream refused {self.headers.get('authorization')}".encode()
        self.send_response(500)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_a_persona_providers_api_key_is_sent_and_never_shown(tmp_path: Path) -> None:
    import time as _time

    from forgec.daemon.agent import Agents
    from forgec.host.config import load_config
    from forgec.mcp.policy import ConsentPolicy

    secret = "sk-test-abcdefghijklmnopqrstuvwx0123456789"
    write_personas(tmp_path, {"alpha": ()})
    with serving(KeyedModel, auth=[]) as srv:
        url = f"http://127.0.0.1:{srv.server_port}/v1"
        path = write_config(
            tmp_path,
            None,
            f'[providers.hosted]\nbase_url = "{url}"\nmodel = "m"\napi_key_env = "HOSTED_KEY"\n'
            '\n[personas.alpha]\nprovider = "hosted"\n',
        )
        environ = {"HOSTED_KEY": secret}
        agents = Agents(
            load_config(path),
            db_path=tmp_path / "host.db",
            store_path=None,
            policy=ConsentPolicy(),
            environ=environ,
        )
        work = Work(kind="a2a", id="a2a_x", persona="alpha", thread="main", prompt="hi")
        persona = agents.personas["alpha"]
        host = agents._open_host(persona, work)
        try:
            provider, _model = agents.provider_for(persona, work, host)
            # HTTP 500 is transient: asked again with backoff while the deadline allows
            asked = agents._ask(
                provider,
                None,
                [{"role": "user", "content": "hi"}],
                [],
                _time.monotonic() + 1.2,
                1,
                host,
            )
        finally:
            host.close()
    assert srv.auth == [f"Bearer {secret}"] * 2
    assert secret not in asked["error"] and "HTTP 500" in asked["error"]


def test_a_background_task_cancelled_queued_or_running_never_runs_on(tmp_path: Path) -> None:
    from forgec.daemon.agent import Agents, Cancelled
    from forgec.host.config import load_config
    from forgec.mcp.policy import ConsentPolicy

    write_personas(tmp_path, {"alpha": ("subagent.background",)})
    config = load_config(write_config(tmp_path, "http://127.0.0.1:9"))
    db = tmp_path / "host.db"
    labels = ("subagent.background",)
    tables = Tables(db, clock=FixedClock(START))
    with open_host(HostOptions(config=config, db=db, persona="alpha", persona_labels=labels)) as h:
        queued = h.call("subagent.background", {"action": "spawn", "prompt": "q"}, CTX)["taskId"]
        running = h.call("subagent.background", {"action": "spawn", "prompt": "r"}, CTX)["taskId"]
        data = tables.begin("background", running)
        assert data is not None
        cancelled = h.call("subagent.background", {"action": "cancel", "taskId": queued}, CTX)
        assert cancelled["status"] == "failed"  # a queued task is cancelled, not left queued
        h.call("subagent.background", {"action": "cancel", "taskId": running}, CTX)
    assert tables.begin("background", queued) is None  # the engine's entry never runs it
    provider = ScriptedProvider(3)
    agents = Agents(config, db_path=db, store_path=None, policy=ConsentPolicy())
    agents.provider_for = lambda persona, work, host: (provider, None)  # type: ignore[method-assign]
    with pytest.raises(Cancelled):
        agents.run(
            Work.from_json(data), cancelled=lambda: not tables.still_running("background", running)
        )
    assert provider.asked == []  # the model was not asked again
    assert not tables.finish(data, {"answer": "late"}, None)
    tables.close()


def test_an_r4_forged_tool_runs_only_under_a_policy_pinned_to_its_version(tmp_path: Path) -> None:
    from test_store import install, open_store

    from forgec.daemon.agent import Agents
    from forgec.host.config import load_config
    from forgec.mcp.policy import Allow, ConsentPolicy

    store = tmp_path / "tools.db"
    with open_store(store) as s:
        install(s, 1, None, "net.http", tool_id="web.fetch")
        s.enable("web.fetch", consent=True)
        digest = s.get("web.fetch").hash
    write_personas(tmp_path, {"alpha": ("net.http:egress",)})
    config = load_config(write_config(tmp_path, "http://127.0.0.1:9"))
    labels = ("net.http:egress",)

    def answer(policy: ConsentPolicy) -> str:
        agents = Agents(config, db_path=tmp_path / "host.db", store_path=store, policy=policy)
        offered = agents.offered(labels)
        with open_host(
            HostOptions(config=config, db=tmp_path / "host.db", persona_labels=labels)
        ) as h:
            return str(
                json.loads(agents.call_tool(offered, "dynamic_web_Dfetch", "{}", h))["error"]
            )

    assert "is R4" in answer(ConsentPolicy())
    assert "is R4" in answer(ConsentPolicy((Allow(tool="dynamic:web.fetch", version=2),)))
    assert "is R4" in answer(ConsentPolicy((Allow(tool="dynamic:web.fetch", hash="sha256:0"),)))
    allowed = answer(ConsentPolicy((Allow(tool="dynamic:web.fetch", hash=digest),)))
    assert "is R4" not in allowed  # past consent: the run itself answers (no network here)


class LoopingProvider:
    """A model that never stops calling tools (optionally slowly)."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.asked = 0

    def turn(
        self,
        messages: Any,
        tools: Any,
        *,
        model: Any = None,
        timeout_s: Any = None,
        max_bytes: Any = None,
    ) -> Any:
        import time as _time

        from forgec.host.models import parse_turn

        self.asked += 1
        _time.sleep(self.delay_s)
        return parse_turn(tool_reply("persona_list", {}, f"c{self.asked}"))


@pytest.mark.parametrize(
    ("extra", "delay", "expect"),
    [
        ("rounds = 3\n", 0.0, "over its bound of 3 tool-call rounds"),
        ("turn_seconds = 1\n", 0.4, "over its wall-clock budget of 1 s"),
    ],
)
def test_a_turn_stops_at_its_round_bound_and_its_wall_clock_budget(
    tmp_path: Path, extra: str, delay: float, expect: str
) -> None:
    from forgec.daemon.agent import Agents, TurnFailed
    from forgec.host.config import load_config
    from forgec.mcp.policy import ConsentPolicy

    write_personas(tmp_path, {"alpha": ("persona.send:*",)})
    path = write_config(tmp_path, "http://127.0.0.1:9")
    path.write_text(path.read_text().replace("poll_ms = 100\n", "poll_ms = 100\n" + extra))
    config = load_config(path)
    db = tmp_path / "host.db"
    from forgec.host.db import connect

    connect(db).close()
    _schedule(db, "0 * * * *", START, label="loop")
    (work,) = _claim(db, FixedClock(START + dt.timedelta(hours=1)))
    provider = LoopingProvider(delay)
    agents = Agents(config, db_path=db, store_path=None, policy=ConsentPolicy())
    agents.provider_for = lambda persona, work, host: (provider, None)  # type: ignore[method-assign]
    with pytest.raises(TurnFailed, match=expect):
        agents.run(work)
    assert provider.asked <= (3 if "rounds" in extra else 4)
