"""The MCP server, end to end: a real `mcp` SDK client starts `python -m forgec mcp serve` over
stdio, lists tools, calls them, and is refused what its labels do not grant."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from mcp_client import run_client as run_client_api
from mcp_client import run_session
from test_store import install, open_store, tool

from forgec import format_dsl

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A store with: list.tasks (R1, on), web.fetch (R4 net.http, on), off.tool (off)."""
    db = tmp_path / "tools.db"
    with open_store(db) as s:
        install(s, 1, None, "tasks.list", tool_id="list.tasks")
        s.enable("list.tasks", consent=True)
        install(s, 1, None, "net.http", tool_id="web.fetch")
        s.enable("web.fetch", consent=True)
        install(s, 1, None, "tasks.list", tool_id="off.tool")
    return db


def serve_args(store_path: Path, tmp_path: Path, *extra: str) -> list[str]:
    """`forgec mcp serve` options: the test's store, a host database in TMP_PATH, then EXTRA."""
    return ["--store", str(store_path), "--db", str(tmp_path / "h.db"), *extra]


def run_client(
    args: list[str],
    body: Any,
    *,
    elicitation: Any = None,
    cwd: Path | None = None,
    started: list[Any] | None = None,
) -> Any:
    """`forgec mcp serve ARGS` with a real SDK client session (`tests/mcp_client.py`)."""
    return run_session(
        ["mcp", "serve", *args],
        body,
        cwd=cwd,
        started=started,
        elicitation_callback=elicitation,
    )


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def test_the_server_introduces_itself_as_the_hosts_mcp_face(
    store_path: Path, tmp_path: Path
) -> None:
    # SPEC §13: the seed's `__talond_host_tools`; clients that show a title show "forgec"
    started: list[Any] = []

    async def body(session: Any) -> None:
        return None

    run_client(serve_args(store_path, tmp_path), body, started=started)
    info = started[0].server_info
    assert (info.name, info.title) == ("__talond_host_tools", "forgec")


def test_lists_only_what_the_labels_grant(store_path: Path, tmp_path: Path) -> None:
    async def body(session: Any) -> Any:
        listed = await session.list_tools()
        return {t.name: t for t in listed.tools}

    labels = "db.query:own,tool.create"
    tools = run_client(
        serve_args(store_path, tmp_path, "--persona-labels", labels),
        body,
    )
    assert sorted(tools) == ["db_query", "dynamic_list_Dtasks", "tool_create"]
    forged = tools["dynamic_list_Dtasks"]
    assert forged.annotations.read_only_hint is True
    assert forged.annotations.open_world_hint is False
    assert forged.input_schema["type"] == "object"
    assert tools["db_query"].annotations.read_only_hint is True

    # deny by default: no labels, only the forged tool that needs none
    bare = run_client(serve_args(store_path, tmp_path), body)
    assert sorted(bare) == ["dynamic_list_Dtasks"]

    wide = run_client(
        serve_args(store_path, tmp_path, "--persona-labels", "net.http:egress"),
        body,
    )
    assert "dynamic_web_Dfetch" in wide and "net_http" in wide
    web = wide["dynamic_web_Dfetch"]
    assert web.annotations.open_world_hint is True and web.annotations.read_only_hint is False


def test_a_tool_not_listed_is_refused_when_called(store_path: Path, tmp_path: Path) -> None:
    async def body(session: Any) -> Any:
        return [
            await session.call_tool("dynamic_web_Dfetch", {}),
            await session.call_tool("dynamic_off_Dtool", {}),
            await session.call_tool("net_http", {"method": "GET", "url": "https://x.example.com"}),
            await session.call_tool("tool_create", {"manifest": {}}),
        ]

    results = run_client(serve_args(store_path, tmp_path), body)
    for result in results:
        assert result.is_error
        assert "not available" in _text(result)


def test_the_server_refuses_a_foreign_store(tmp_path: Path) -> None:
    import subprocess

    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    proc = subprocess.run(
        [sys.executable, "-m", "forgec", "mcp", "serve", "--store", str(junk)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2
    assert "not a forgec tool store" in proc.stderr and "Traceback" not in proc.stderr


def test_calling_a_forged_tool_returns_structured_content(store_path: Path, tmp_path: Path) -> None:
    async def body(session: Any) -> Any:
        await session.list_tools()
        ok = await session.call_tool("dynamic_list_Dtasks", {})
        bad = await session.call_tool("dynamic_list_Dtasks", {"unexpected": 1})
        return ok, bad

    ok, bad = run_client(serve_args(store_path, tmp_path), body)
    assert not ok.is_error, _text(ok)
    assert ok.structured_content == {"items": []}
    assert orjson.loads(_text(ok)) == {"items": []}
    assert bad.is_error and "invalid input" in _text(bad)


def test_tool_create_installs_off(store_path: Path, tmp_path: Path) -> None:
    source = orjson.loads(tool(1, None, "tasks.list", tool_id="made.by.model"))

    async def body(session: Any) -> Any:
        created = await session.call_tool("tool_create", {"manifest": source, "target": "talos"})
        broken = dict(source, id="Bad Id", title="")
        failed = await session.call_tool("tool_create", {"manifest": broken})
        text = format_dsl(dict(source, id="from.forge"))
        from_text = await session.call_tool("tool_create", {"source": text})
        both = await session.call_tool("tool_create", {"source": text, "manifest": source})
        listed = await session.list_tools()
        return created, failed, from_text, both, [t.name for t in listed.tools]

    created, failed, from_text, both, names = run_client(
        serve_args(store_path, tmp_path, "--persona-labels", "tool.create"),
        body,
    )
    assert not created.is_error, _text(created)
    assert created.structured_content["name"] == "dynamic:made.by.model"
    assert "version" not in created.structured_content  # the store numbers it: v1
    assert created.structured_content["enabled"] is False
    assert "dynamic_made_Dby_Dmodel" not in names  # installed, but off
    assert failed.is_error
    codes = {d["code"] for d in failed.structured_content["report"]["diagnostics"]}
    assert {"FORGE_ID", "FORGE_TITLE"} <= codes
    assert "FORGE_ID" in _text(failed)  # every issue in the text too, for the model
    assert from_text.structured_content["name"] == "dynamic:from.forge", _text(from_text)
    assert both.is_error and "exactly one" in _text(both)
    with open_store(store_path) as s:
        assert not s.tool("made.by.model").enabled
        assert not s.tool("from.forge").enabled
        assert s.tool("made.by.model").version == 1


def test_r4_asks_every_time_or_is_refused(store_path: Path, tmp_path: Path) -> None:
    asked: list[str] = []

    async def decline(context: Any, params: Any) -> Any:
        import mcp_types as types

        asked.append(params.message)
        return types.ElicitResult(action="decline")

    async def body(session: Any) -> Any:
        return [await session.call_tool("dynamic_web_Dfetch", {}) for _ in range(2)]

    args = serve_args(store_path, tmp_path, "--persona-labels", "net.http:egress")
    results = run_client(args, body, elicitation=decline)
    assert len(asked) == 2  # asked on every call, never remembered
    assert "dynamic:web.fetch" in asked[0]
    assert all(r.is_error and "did not consent" in _text(r) for r in results)

    no_elicitation = run_client(args, body)
    assert all("cannot ask" in _text(r) for r in no_elicitation)


def test_r4_runs_after_elicitation_or_by_policy(store_path: Path, tmp_path: Path) -> None:
    config = tmp_path / "host.toml"
    # the name resolves to a closed local port: the run reaches the bridge and fails fast
    config.write_text('[network]\nresolve = ["api.example.com:443:127.0.0.1"]\n')
    asked: list[str] = []

    async def accept(context: Any, params: Any) -> Any:
        import mcp_types as types

        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"allow": True})

    async def body(session: Any) -> Any:
        return await session.call_tool("dynamic_web_Dfetch", {})

    args = serve_args(
        store_path, tmp_path, "--host-config", str(config), "--persona-labels", "net.http:egress"
    )
    ran = run_client(args, body, elicitation=accept)
    assert len(asked) == 1
    # consent was given, so the tool ran; the request itself failed at the network
    assert ran.is_error and "dynamic:web.fetch failed at node `s0`" in _text(ran)
    assert ran.meta["forgec/run"]["status"] == "failed"
    assert ran.meta["forgec/run"]["error"]["code"] == "RUN_CAPABILITY_FAILED"

    policy = tmp_path / "policy.toml"
    policy.write_text('[[allow]]\ntool = "dynamic_web_Dfetch"\nversion = 1\n')
    by_policy = run_client([*args, "--consent-policy", str(policy)], body)
    assert by_policy.meta["forgec/run"]["status"] == "failed"
    assert "cannot ask" not in _text(by_policy)

    policy.write_text('[[allow]]\ntool = "dynamic:web.fetch"\nversion = 2\n')
    wrong_version = run_client([*args, "--consent-policy", str(policy)], body)
    assert "cannot ask" in _text(wrong_version)


def test_a_host_tool_call_returns_structured_rows(store_path: Path, tmp_path: Path) -> None:
    async def body(session: Any) -> Any:
        ok = await session.call_tool("db_query", {"sql": "SELECT count(*) AS n FROM memory_items"})
        bad = await session.call_tool("db_query", {"sql": "DELETE FROM memory_items"})
        return ok, bad

    ok, bad = run_client(
        serve_args(store_path, tmp_path, "--persona-labels", "db.query:own"),
        body,
    )
    assert not ok.is_error, _text(ok)
    assert ok.structured_content == {"rows": [{"n": 0}], "truncated": False}
    assert bad.is_error and "SELECT" in _text(bad)


def test_listing_follows_the_store_and_instructions_follow_visibility(
    store_path: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "templates" / "tool-instructions"
    folder.mkdir(parents=True)
    (folder / "dynamic.list.tasks.md").write_text("## List tasks\nUse it for open tasks.\n")
    (folder / "net.http.md").write_text("## HTTP\nNot for this persona.\n")
    (folder / "db.query.md").write_text("## Queries\nOnly SELECT.\n")

    async def body(session: Any) -> Any:
        before = [t.name for t in (await session.list_tools()).tools]
        with open_store(store_path) as s:
            s.enable("off.tool", consent=True)  # a person turns a tool on, server running
            s.disable("list.tasks")
        after = [t.name for t in (await session.list_tools()).tools]
        refused = await session.call_tool("dynamic_list_Dtasks", {})
        return session.instructions, before, after, refused

    instructions, before, after, refused = run_client(
        serve_args(
            store_path,
            tmp_path,
            "--persona-labels",
            "db.query:own",
            "--templates",
            str(tmp_path / "templates"),
        ),
        body,
    )
    assert instructions == "## Queries\nOnly SELECT.\n\n## List tasks\nUse it for open tasks."
    assert "dynamic_list_Dtasks" in before and "dynamic_off_Dtool" not in before
    assert "dynamic_off_Dtool" in after and "dynamic_list_Dtasks" not in after
    assert refused.is_error and "not available" in _text(refused)


def test_r4_consent_over_the_multi_round_protocol(store_path: Path, tmp_path: Path) -> None:
    """A 2026-07-28 client: consent comes back as an `input_required` round, single use."""
    import mcp_types as types

    config = tmp_path / "host.toml"
    config.write_text('[network]\nresolve = ["api.example.com:443:127.0.0.1"]\n')
    answers = iter([True, False])
    asked: list[str] = []

    async def answer(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"allow": next(answers)})

    command = [sys.executable, "-m", "forgec", "mcp", "serve"]
    command += serve_args(
        store_path, tmp_path, "--host-config", str(config), "--persona-labels", "net.http:egress"
    )

    async def main(c: Any) -> Any:
        assert c.protocol_version in ("2026-07-28",)
        ran = await c.call_tool("dynamic_web_Dfetch", {})
        declined = await c.call_tool("dynamic_web_Dfetch", {})
        # drive the rounds by hand: a token answers one call, once
        first = await c.session.call_tool("dynamic_web_Dfetch", {}, allow_input_required=True)
        yes = {"forgec_consent": types.ElicitResult(action="accept", content={"allow": True})}
        token = first.request_state
        once = await c.session.call_tool(
            "dynamic_web_Dfetch",
            {},
            input_responses=yes,
            request_state=token,
            allow_input_required=True,
        )
        again = await c.session.call_tool(
            "dynamic_web_Dfetch",
            {},
            input_responses=yes,
            request_state=token,
            allow_input_required=True,
        )
        return ran, declined, first, once, again

    ran, declined, first, once, again = run_client_api(
        command, main, env={"PYTHONPATH": str(ROOT)}, timeout=60, elicitation_callback=answer
    )
    assert len(asked) == 2
    assert ran.meta["forgec/run"]["error"]["code"] == "RUN_CAPABILITY_FAILED"  # consented, ran
    assert declined.is_error and "did not consent" in _text(declined)
    assert isinstance(first, types.InputRequiredResult)
    assert once.meta["forgec/run"]["status"] == "failed"  # ran (and failed at the network)
    assert isinstance(again, types.InputRequiredResult)  # the used token is forgotten: ask again


def test_subagent_invoke_lists_and_holds_each_built_in_sub_agents_input(
    store_path: Path, tmp_path: Path
) -> None:
    # the listing's schema is the rows' (one `if`/`then` per built-in sub-agent), and a call
    # the sub-agent's shape refuses is refused, as `check` refuses the same literal
    from forgec.ir.capabilities import SUBAGENT_SHAPES

    async def body(session: Any) -> Any:
        listed = {t.name: t for t in (await session.list_tools()).tools}
        refused = await session.call_tool(
            "subagent_invoke", {"name": "memory-retriever", "input": {"query": "q" * 501}}
        )
        return listed["subagent_invoke"].input_schema, refused

    args = serve_args(store_path, tmp_path, "--persona-labels", "subagent.invoke")
    schema, refused = run_client(args, body)
    chosen = {
        rule["if"]["properties"]["name"]["const"]: rule["then"]["properties"]["input"]
        for rule in schema["allOf"]
    }
    assert chosen == {name: shape.schema() for name, shape in SUBAGENT_SHAPES.items()}
    assert refused.is_error and "/input/query" in _text(refused)


def test_an_r3_host_tool_runs_without_asking_and_r4_asks(store_path: Path, tmp_path: Path) -> None:
    # subagent_invoke is R3 in its row: over MCP it runs on the persona's labels alone, as the
    # catalog says (it used to ask for consent and refuse, saying it was R4); background_agent
    # is R4 and asks
    asked: list[str] = []

    async def decline(context: Any, params: Any) -> Any:
        import mcp_types as types

        asked.append(params.message)
        return types.ElicitResult(action="decline")

    async def body(session: Any) -> Any:
        invoke = await session.call_tool(
            "subagent_invoke", {"name": "memory-retriever", "input": {"query": "x"}}
        )
        background = await session.call_tool("background_agent", {"action": "profiles"})
        return invoke, background

    labels = "subagent.invoke,subagent.background"
    args = serve_args(store_path, tmp_path, "--persona-labels", labels)
    invoke, background = run_client(args, body, elicitation=decline)
    assert not invoke.is_error, _text(invoke)
    assert "R4" not in _text(invoke)
    assert len(asked) == 1 and "background_agent" in asked[0]
    assert background.is_error and "did not consent" in _text(background)
