"""SPEC §21 through the bridge's call API for a model's own calls (`forgec.host.agentcall`),
on the real reference host (SQLite): the context's labels ride every call as data and control,
`[flows] deny` refuses before any effect, `untrusted->destination` reads only the destination
arguments' data, the caller's allowed flows lift a rule for one call, the rows a call writes
keep the context's labels, and a result's labels are its origin per field plus its rows'."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from forgec.host import HostOptions, open_host
from forgec.host.agentcall import AgentContext, call_as_agent
from forgec.host.config import ChannelConfig, HostConfig
from forgec.runtime.host import HostError

ALL = ("schedule.manage:own", "memory.access:thread", "channel.send:*", "db.query:own")
WEB = "external:evil.example"


def _open(tmp_path: Path, deny: tuple[str, ...]):
    cfg = HostConfig(
        thread="th-1",
        channels={"general": ChannelConfig("general"), "journal": ChannelConfig("journal")},
        flow_deny=deny,
    )
    return open_host(HostOptions(db=tmp_path / "h.db", config=cfg, persona_labels=ALL))


def _as_agent(host: Any, capability: str, input: Any, context: Any = None, **kw: Any) -> Any:
    """One call a model makes in a turn (a fresh context unless CONTEXT is given)."""
    return call_as_agent(host, capability, input, context or AgentContext.start(), caller="t", **kw)


def _checked(doc: dict[str, Any], target: str) -> tuple[Any, Any]:
    """A tool checked clean for TARGET and its Program."""
    import orjson

    import forgec
    from forgec.backend import lower_manifest

    report = forgec.check(orjson.dumps(doc), target=target)
    assert report.ok, [d.message for d in report.errors]
    return report, lower_manifest(report.ir, marks=report.marks)


def _sent(tmp_path: Path) -> list[tuple[str, str, str]]:
    with sqlite3.connect(tmp_path / "h.db") as raw:
        return list(raw.execute("SELECT channel_id, content, labels FROM messages"))


def test_a_pin_read_in_a_turn_cannot_be_posted_under_private_egress(tmp_path: Path) -> None:
    with _open(tmp_path, ("private->egress",)) as host:
        ctx = AgentContext.start()
        _as_agent(host, "memory.access", {"operation": "write", "key": "pin", "value": "4921"}, ctx)
        read = _as_agent(host, "memory.access", {"operation": "read", "key": "pin"}, ctx)
        assert read.labels == {"private:memory.access"}
        ctx.join(read.labels)
        with pytest.raises(HostError) as info:
            _as_agent(
                host,
                "channel.send",
                {"channelId": "general", "content": "4921"},
                ctx,
                name="channel_send",
            )
        assert info.value.code == "RUN_FLOW_DENIED"
        assert "private->egress" in info.value.message
        assert _sent(tmp_path) == []  # no effect
        # the consent policy (or a person) allows this one flow for this call: it is sent
        _as_agent(
            host,
            "channel.send",
            {"channelId": "general", "content": "4921"},
            ctx,
            allowed_flows=("private->egress",),
        )
        (row,) = _sent(tmp_path)
        assert row[:2] == ("general", "4921") and "private:memory.access" in row[2]


def test_web_text_in_the_context_picks_no_destination(tmp_path: Path) -> None:
    with _open(tmp_path, ("untrusted->destination",)) as host:
        clean = AgentContext.start()
        _as_agent(host, "channel.send", {"channelId": "journal", "content": "hi"}, clean)
        steered = AgentContext.start({WEB})
        with pytest.raises(HostError) as info:
            _as_agent(host, "channel.send", {"channelId": "journal", "content": "x"}, steered)
        assert info.value.code == "RUN_FLOW_DENIED"
        assert "untrusted->destination" in info.value.message and WEB in info.value.message
        # control alone is not data: only the coarse rules count what decided the call
        decided = AgentContext(data=frozenset(), control=frozenset({WEB}))
        _as_agent(host, "channel.send", {"channelId": "journal", "content": "y"}, decided)
        assert [r[1] for r in _sent(tmp_path)] == ["hi", "y"]
        # a read is no sink: the rule refuses nothing there
        _as_agent(host, "memory.access", {"operation": "list"}, steered)


def test_written_rows_keep_the_context_and_a_later_read_carries_it(tmp_path: Path) -> None:
    with _open(tmp_path, ("untrusted->write",)) as host:
        steered = AgentContext.start({WEB})
        with pytest.raises(HostError):
            _as_agent(
                host, "memory.access", {"operation": "write", "key": "k", "value": "v"}, steered
            )
    with _open(tmp_path, ()) as host:
        steered = AgentContext.start({WEB})
        _as_agent(host, "memory.access", {"operation": "write", "key": "k", "value": "v"}, steered)
        fresh = AgentContext.start()
        read = _as_agent(host, "memory.access", {"operation": "read", "key": "k"}, fresh)
        assert WEB in read.labels


@pytest.mark.parametrize(
    ("sql", "outside"),
    [
        ("SELECT channel_id, count(*) AS n FROM messages GROUP BY channel_id", False),
        ("SELECT channel_id, count(*) FROM messages WHERE content LIKE '%x%' GROUP BY 1", True),
        ("SELECT id, created_at FROM messages ORDER BY created_at DESC", False),
        ("SELECT id FROM messages ORDER BY content", True),
        ("SELECT * FROM messages", True),
        ("SELECT id FROM threads WHERE title = 'External_x'", True),
        ("SELECT t.id FROM threads t JOIN messages m ON m.thread_id = t.id", False),
        ("SELECT key, value FROM memory_items", False),
    ],
)
def test_db_query_labels_follow_sql_lineage(tmp_path: Path, sql: str, outside: bool) -> None:
    with _open(tmp_path, ()) as host:
        out = _as_agent(host, "db.query", {"sql": sql})
        assert ("external:talon" in out.labels) is outside
        assert "private:db.query" in out.labels


# --- the same rules for a forged tool's steps (one mechanism) ------------------------------


def _busiest_channel_tool(where: str) -> dict[str, Any]:
    """Post to the channel a db.query picked: by a count (host facts) or by what people wrote."""
    sql = f"SELECT channel_id, count(*) AS n FROM messages {where} GROUP BY channel_id ORDER BY n DESC"
    nodes = [
        {
            "id": "pick",
            "type": "capability",
            "capability": "db.query",
            "input": {"sql": sql, "limit": 1},
            "target": "found",
            "next": "post",
        },
        {
            "id": "post",
            "type": "capability",
            "capability": "channel.send",
            "input": {"channelId": {"$ref": "found.rows[0].channel_id"}, "content": "digest"},
            "next": "done",
        },
        {"id": "done", "type": "return", "value": "ok"},
    ]
    return {
        "schema": "talos.local-tool.v1",
        "id": "busiest.channel",
        "version": 1,
        "title": "Busiest channel",
        "description": "Post a digest to the busiest channel.",
        "createdAt": "2026-01-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "flow": {"entry": "pick", "maxTransitions": 16, "nodes": nodes},
    }


@pytest.mark.parametrize(
    ("where", "steered"), [("", False), ("WHERE content LIKE '%urgent%'", True)]
)
def test_a_plan_may_pick_a_destination_by_host_facts_only(
    tmp_path: Path, where: str, steered: bool
) -> None:

    from forgec.runtime import run

    doc = _busiest_channel_tool(where)
    report, program = _checked(doc, "talon")
    flows = {(f.source, f.sink, f.argument, f.destination) for f in report.facts.flows}
    assert (("external:talon", "egress:channel.send", "channelId", True) in flows) is steered
    with _open(tmp_path, ("untrusted->destination",)) as host:
        for _ in range(2):  # messages in `journal`, which the plan will pick
            _as_agent(host, "channel.send", {"channelId": "journal", "content": "urgent"})
        result = run(program, {}, host=host, consent=lambda request: True)
    if steered:
        assert result.status == "failed" and result.error.code == "RUN_FLOW_DENIED"
        assert "untrusted->destination" in result.error.message
        assert len(_sent(tmp_path)) == 2
    else:
        assert result.status == "ok", result.error
        assert [r[:2] for r in _sent(tmp_path)][-1] == ("journal", "digest")


def test_a_forged_tool_in_a_turn_starts_with_the_context_on_its_input(tmp_path: Path) -> None:

    from forgec.runtime import run

    doc = _busiest_channel_tool("")
    doc["flow"]["nodes"][1]["input"]["content"] = {"$ref": "input.text"}
    doc["inputSchema"] = {"type": "object", "properties": {"text": {"type": "string"}}}
    _, program = _checked(doc, "talon")
    with _open(tmp_path, ("untrusted->egress",)) as host:
        _as_agent(host, "channel.send", {"channelId": "journal", "content": "x"})
        clean = run(program, {"text": "a"}, host=host, consent=lambda request: True)
        assert clean.status == "ok", clean.error
        steered = run(
            program, {"text": "b"}, host=host, consent=lambda request: True, input_labels={WEB}
        )
        assert steered.status == "failed" and steered.error.code == "RUN_FLOW_DENIED"
        allowed = run(
            program,
            {"text": "c"},
            host=host,
            consent=lambda request: True,
            input_labels={WEB},
            allowed_flows={"untrusted->egress"},
        )
        assert allowed.status == "ok" and WEB in allowed.output_labels


# --- typos never allow: one-line errors at start (exit 2) ----------------------------------


def _forgec(*args: str, cwd: Path) -> Any:
    import subprocess
    import sys

    return subprocess.run(
        [sys.executable, "-m", "forgec", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.mark.parametrize(
    ("config", "needle"),
    [
        ('[persona]\nlabels = ["chanel.send:*"]\n', "unknown label 'chanel.send:*'"),
        ('[flows]\ndeny = ["private->egres"]\n', "unknown rule 'private->egres'"),
    ],
)
def test_forgec_run_refuses_a_typo_in_the_host_config(
    tmp_path: Path, config: str, needle: str
) -> None:
    root = Path(__file__).resolve().parent.parent
    (tmp_path / "host.toml").write_text(config)
    done = _forgec(
        "run",
        str(root / "examples" / "daily-planner.forge"),
        "--host-config",
        "host.toml",
        "--db",
        "h.db",
        cwd=tmp_path,
    )
    assert done.returncode == 2 and needle in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("policy", "labels", "needle"),
    [
        ('[[allow]]\ntool = "chanel_send"\n', None, "unknown tool 'chanel_send'"),
        ('[[allow]]\ntool = "channel_send"\nflows = ["untrusted->dest"]\n', None, "unknown flow"),
        ('[[allow]]\ntool = "dynamic:no.such"\n', None, "does not hold"),
        (None, "channel.send:*\nmemory.acess:thread\n", "unknown label 'memory.acess:thread'"),
    ],
)
def test_talond_refuses_a_typo_at_start(
    tmp_path: Path, policy: str | None, labels: str | None, needle: str
) -> None:
    persona = tmp_path / "personas" / "helper"
    persona.mkdir(parents=True)
    (persona / "persona.md").write_text("# Helper\n")
    if labels is not None:
        (persona / "labels.txt").write_text(labels)
    config = '[persona]\nfolder = "personas"\n'
    if policy is not None:
        (tmp_path / "policy.toml").write_text(policy)
        config += '\n[talond]\nconsent_policy = "policy.toml"\n'
    (tmp_path / "host.toml").write_text(config)
    done = _forgec(
        "talond",
        "--host-config",
        "host.toml",
        "--db",
        "h.db",
        "--store",
        "tools.db",
        cwd=tmp_path,
    )
    assert done.returncode == 2 and needle in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("url", "destination"),
    [
        ({"$template": "https://api.example.com/search?q={{input.q}}"}, False),
        ({"$template": "https://{{input.q}}/search"}, True),
        ({"$ref": "input.q"}, True),
    ],
)
def test_a_literal_url_host_is_a_fixed_destination(url: Any, destination: bool) -> None:
    """Statically (inspect's flows) and at run time (`untrusted->destination` on the VM's
    call): the labels of a URL whose host the manifest writes fill content, not where."""

    from forgec.runtime import run
    from forgec.runtime.memory_host import MemoryHost

    doc = _busiest_channel_tool("")
    doc["network"] = {"mode": "allowlist", "hosts": ["api.example.com"]}
    doc["inputSchema"] = {"type": "object", "properties": {"q": {"type": "string"}}}
    doc["flow"]["entry"] = "fetch"
    doc["flow"]["nodes"] = [
        {
            "id": "fetch",
            "type": "capability",
            "capability": "net.http",
            "input": {"method": "GET", "url": url},
            "next": "done",
        },
        {"id": "done", "type": "return", "value": "ok"},
    ]
    report, program = _checked(doc, "talon")
    (flow,) = [f for f in report.facts.flows if f.argument == "url"]
    assert flow.destination is destination
    assert (flow.to_json().get("destination") is True) is destination
    host = MemoryHost(flow_deny=("untrusted->destination",))
    result = run(
        program, {"q": "api.example.com"}, host=host, consent=lambda r: True, input_labels={WEB}
    )
    # the in-memory host has no net.http: a call the rule lets through fails there instead
    code = "RUN_FLOW_DENIED" if destination else "RUN_CAPABILITY_FAILED"
    assert result.status == "failed" and result.error.code == code, result.error


def test_inspect_names_a_flow_into_a_destination(tmp_path: Path) -> None:
    import orjson

    path = tmp_path / "busiest.talostool"
    path.write_bytes(orjson.dumps(_busiest_channel_tool("WHERE content LIKE '%x%'")))
    text = _forgec("inspect", str(path), "--target", "talon", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    line = next(ln for ln in text.stdout.splitlines() if "at post.channelId" in ln)
    assert "external:talon" in line and "data (destination)" in line
    done = _forgec("inspect", str(path), "--target", "talon", "--format", "json", cwd=tmp_path)
    flows = orjson.loads(done.stdout)["flows"]
    picked = [f for f in flows if f["argument"] == "channelId" and f["via"] == "data"]
    assert picked and all(f["destination"] is True for f in picked)
    # control is not a destination flow (the coarse rules are for it)
    assert all("destination" not in f for f in flows if f["via"] == "control")


@pytest.mark.parametrize(
    ("capability", "result", "outside"),
    [
        ("persona.send", {"taskId": "t1", "status": "queued"}, False),
        ("persona.send", {"taskId": "t1", "status": "completed", "result": "hi"}, True),
        ("persona.task_status", {"taskId": "t1", "status": "failed", "error": "boom"}, True),
        ("subagent.invoke", {"result": {"summary": "x"}}, True),
        ("subagent.background", {"taskId": "b1", "status": "running"}, False),
        ("persona.list", {"result": [{"name": "p"}]}, True),
        ("persona.send", "not an object", True),
        ("memory.access", {"key": "k", "value": "v"}, False),
    ],
)
def test_a_delegated_answer_is_outside_text_only_when_it_holds_some(
    capability: str, result: Any, outside: bool
) -> None:
    """SPEC §21 "origin per field": the host's receipt (`taskId`, `status`) is its own fact."""
    from forgec.runtime import sources_and_sinks as fl

    labels = fl.origin_labels(capability, {}, result)
    assert (fl.TALON in labels) is outside
    assert fl.source_label(capability, None) in labels


def test_a_failed_forged_run_hands_back_every_label_it_held() -> None:
    """Its error message (shown to the model) may quote anything it read: a turn or a session
    joins all of it (`forged_output_labels`), never nothing."""

    from forgec.host.agentcall import forged_output_labels
    from forgec.runtime import run
    from forgec.runtime.memory_host import MemoryHost

    doc = _busiest_channel_tool("")
    doc["flow"]["entry"] = "read"
    doc["flow"]["nodes"] = [
        {
            "id": "read",
            "type": "capability",
            "capability": "notes.list",
            "input": {"limit": 5},
            "target": "found",
            "next": "keep",
        },
        {
            "id": "keep",
            "type": "capability",
            "capability": "tasks.create",
            "input": {"title": {"$ref": "found.items"}},
            "next": "done",
        },
        {"id": "done", "type": "return", "value": "ok"},
    ]
    report, program = _checked(doc, "talos")
    result = run(program, {}, host=MemoryHost(), consent=lambda r: True, input_labels={WEB})
    assert result.status == "failed"
    assert result.output_labels == ()
    assert {"private:notes.list", WEB} <= forged_output_labels(result, report.marks)


@pytest.mark.parametrize(
    ("channel", "content", "deny", "refused"),
    [
        ("channel_id", "content", "untrusted->destination", False),
        ("content", "channel_id", "untrusted->destination", True),
        ("channel_id", "content", "untrusted->egress", True),
        ("channel_id", "channel_id", "untrusted->egress", False),
    ],
)
def test_each_result_column_carries_its_own_lineage_at_run_time(
    tmp_path: Path, channel: str, content: str, deny: str, refused: bool
) -> None:
    """SPEC §21: `rows[0].channel_id` of `SELECT channel_id, content …` is the host's fact,
    `rows[0].content` is what someone wrote: a plan may send the text to the channel under
    `untrusted->destination`, never to a channel named by the text."""

    from forgec.runtime import run

    doc = _busiest_channel_tool("")
    pick, post = doc["flow"]["nodes"][0], doc["flow"]["nodes"][1]
    pick["input"]["sql"] = "SELECT channel_id, content FROM messages ORDER BY created_at DESC"
    post["input"] = {
        "channelId": {"$ref": f"found.rows[0].{channel}"},
        "content": {"$template": f"Re: {{{{found.rows[0].{content}}}}}"},
    }
    _, program = _checked(doc, "talon")
    with _open(tmp_path, (deny,)) as host:
        _as_agent(host, "channel.send", {"channelId": "general", "content": "journal"})
        result = run(program, {}, host=host, consent=lambda request: True)
    if refused:
        assert result.status == "failed" and result.error.code == "RUN_FLOW_DENIED", result.error
    else:
        assert result.status == "ok", result.error
