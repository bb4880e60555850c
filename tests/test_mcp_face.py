"""SPEC §17, the MCP face, through the real Python SDK client against `forgec mcp serve` run as a
subprocess: what a client is shown for each tool and each result, when it is told the list
changed, that consent is asked only after every check that would refuse anyway, and that the
server refuses at start what it could not use."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_face_tools import ROOT, build_store, enable_in_another_process, serve_command

from forgec.store import Store

ALL_LABELS = (
    "schedule.manage:own,channel.send:*,memory.access:thread,net.http:egress,db.query:own,"
    "subagent.invoke,subagent.background,persona.send:*,tool.create"
)


@pytest.fixture
def face(tmp_path: Path) -> Path:
    return build_store(tmp_path / "tools.db")


def _env(tmp_path: Path) -> dict[str, str]:
    # a private HOME: nothing is read from or written to the user's real store or database
    return {"PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home"), "NO_COLOR": "1"}


def client_run(
    cmd: list[str],
    body: Callable[[Any], Awaitable[Any]],
    tmp_path: Path,
    *,
    mode: str = "legacy",
    errlog: Path | None = None,
    **kw: Any,
) -> Any:
    """Start CMD as an MCP server, connect the SDK's `Client` in MODE, run BODY(client)."""
    from mcp_client import run_client

    return run_client(cmd, body, env=_env(tmp_path), cwd=tmp_path, errlog=errlog, mode=mode, **kw)


def text_items(result: Any) -> list[str]:
    return [c.text for c in result.content if getattr(c, "type", "") == "text"]


def _serve(face: Path, tmp_path: Path, *extra: str) -> list[str]:
    return serve_command(face, tmp_path / "host.db", *extra)


# -- results ----------------------------------------------------------------------------------


def test_a_failed_run_is_an_error_with_its_message_and_no_structured_content(
    face: Path, tmp_path: Path
) -> None:
    async def body(client: Any) -> Any:
        await client.list_tools()  # the client now knows greet's outputSchema and checks it
        return await client.call_tool("dynamic_greet", {"name": "fail"})

    failed = client_run(_serve(face, tmp_path), body, tmp_path)
    assert failed.is_error is True
    assert failed.structured_content is None
    [text] = text_items(failed)
    assert text == "dynamic:greet failed at node `refuse`: GREET_REFUSED: no greeting for fail"
    run = failed.meta["forgec/run"]
    assert run["status"] == "failed" and run["output"] is None
    assert run["error"] == {
        "code": "GREET_REFUSED",
        "message": "no greeting for fail",
        "node": "refuse",
    }


def test_a_ui_card_is_a_text_item_and_its_values_are_in_meta(face: Path, tmp_path: Path) -> None:
    async def body(client: Any) -> Any:
        await client.list_tools()
        plain = await client.call_tool("dynamic_greet", {"name": "Ann"})
        hostile = await client.call_tool("dynamic_greet", {"name": "\x1b[2J\u202eevil"})
        return plain, hostile

    plain, hostile = client_run(_serve(face, tmp_path), body, tmp_path)
    assert not plain.is_error
    assert plain.structured_content == {"greeting": "hello Ann"}
    data, card = text_items(plain)
    assert json.loads(data) == {"greeting": "hello Ann"}
    assert card == "Greeting\nSays: hello Ann"
    assert plain.meta["forgec/ui"] == {
        "title": "Greeting",
        "values": [{"label": "Says", "path": "greeting", "value": "hello Ann"}],
    }
    assert plain.meta["forgec/run"] == {"transitions": 2, "compensations": []}
    # the card is what a person reads: a run's output never reaches it as terminal control
    card = text_items(hostile)[1]
    assert card == "Greeting\nSays: hello \\x1b[2J\\u202eevil"
    assert "\x1b" not in card and "\u202e" not in card
    # the data itself is untouched (it is JSON, and the values in _meta are data)
    assert hostile.structured_content == {"greeting": "hello \x1b[2J\u202eevil"}


# -- listing ----------------------------------------------------------------------------------


def test_annotations_output_schemas_and_meta(face: Path, tmp_path: Path) -> None:
    async def body(client: Any) -> Any:
        return {t.name: t for t in (await client.list_tools()).tools}

    tools = client_run(_serve(face, tmp_path, "--persona-labels", ALL_LABELS), body, tmp_path)
    hints = {
        name: (
            t.annotations.read_only_hint,
            t.annotations.destructive_hint,
            t.annotations.idempotent_hint,
            t.annotations.open_world_hint,
        )
        for name, t in tools.items()
    }
    # (readOnly, destructive, idempotent, openWorld)
    assert hints["db_query"] == (True, False, True, False)
    assert hints["persona_list"] == (True, False, True, False)
    assert hints["persona_task_status"] == (True, False, True, False)
    assert hints["memory_access"] == (False, True, False, False)  # a delete is permanent
    assert hints["schedule_manage"] == (False, True, False, False)
    assert hints["channel_send"] == (False, True, False, False)
    assert hints["net_http"] == (False, True, False, True)
    for delegating in ("subagent_invoke", "background_agent", "persona_send"):
        assert hints[delegating] == (False, True, False, True), delegating
    assert hints["dynamic_greet"] == (True, False, True, False)
    assert hints["dynamic_web_Dfetch"] == (False, True, False, True)

    host_tools = [n for n in tools if not n.startswith("dynamic_") and n != "tool_create"]
    assert len(host_tools) == 10
    for name in host_tools:
        schema = tools[name].output_schema
        assert schema is not None and schema["type"] == "object", name

    with Store(face) as store:
        greet = store.get("greet")
    assert tools["dynamic_greet"].meta == {"forgec/version": 1, "forgec/hash": greet.hash}
    assert all(tools[n].meta is None for n in host_tools)


def test_a_host_tool_result_matches_its_output_schema(face: Path, tmp_path: Path) -> None:
    """The client validates structuredContent against outputSchema: these calls would raise."""

    async def body(client: Any) -> Any:
        await client.list_tools()
        wrote = await client.call_tool(
            "memory_access", {"operation": "write", "key": "k", "value": "v"}
        )
        listed = await client.call_tool("memory_access", {"operation": "list"})
        deleted = await client.call_tool("memory_access", {"operation": "delete", "key": "k"})
        made = await client.call_tool(
            "schedule_manage", {"action": "create", "cronExpr": "0 9 * * 1", "prompt": "hi"}
        )
        schedules = await client.call_tool("schedule_manage", {"action": "list"})
        personas = await client.call_tool("persona_list", {})
        return wrote, listed, deleted, made, schedules, personas

    labels = "memory.access:thread,schedule.manage:own,persona.send:*"
    results = client_run(_serve(face, tmp_path, "--persona-labels", labels), body, tmp_path)
    for result in results:
        assert not result.is_error, text_items(result)
    wrote, listed, deleted, _made, schedules, _personas = results
    assert wrote.structured_content["key"] == "k"
    assert [i["key"] for i in listed.structured_content["items"]] == ["k"]
    assert deleted.structured_content == {"key": "k", "deleted": True}
    assert len(schedules.structured_content["schedules"]) == 1


# -- list changed ------------------------------------------------------------------------------


def test_list_changed_is_advertised_and_sent_when_another_process_enables_a_tool(
    face: Path, tmp_path: Path
) -> None:
    import mcp_types as types

    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async def body(client: Any) -> Any:
        before = [t.name for t in (await client.list_tools()).tools]
        with anyio.fail_after(2):
            await anyio.sleep(1.2)  # a quiet store sends nothing
        quiet = changed.is_set()
        await anyio.to_thread.run_sync(enable_in_another_process, face, "later.tool")
        with anyio.fail_after(10):
            await changed.wait()
        after = [t.name for t in (await client.list_tools()).tools]
        return client.server_capabilities, before, quiet, after

    caps, before, quiet, after = client_run(
        _serve(face, tmp_path), body, tmp_path, message_handler=on_message
    )
    assert caps.tools is not None and caps.tools.list_changed is True
    assert not quiet
    assert "dynamic_later_Dtool" not in before and "dynamic_later_Dtool" in after


def test_list_changed_reaches_a_2026_listen_stream(face: Path, tmp_path: Path) -> None:
    async def body(client: Any) -> Any:
        assert client.protocol_version == "2026-07-28"
        before = [t.name for t in (await client.list_tools()).tools]
        async with client.listen(tools_list_changed=True) as sub:
            await anyio.to_thread.run_sync(enable_in_another_process, face, "later.tool")
            with anyio.fail_after(10):
                event = await sub.__anext__()
        after = [t.name for t in (await client.list_tools()).tools]
        return client.server_capabilities, type(event).__name__, before, after

    caps, event, before, after = client_run(_serve(face, tmp_path), body, tmp_path, mode="auto")
    assert caps.tools is not None and caps.tools.list_changed is True
    assert event == "ToolsListChanged"
    assert "dynamic_later_Dtool" not in before and "dynamic_later_Dtool" in after


def test_tool_create_of_an_off_tool_changes_nothing_listed(face: Path, tmp_path: Path) -> None:
    """Only a change to what is listed is announced: a new version installed OFF is not."""
    import mcp_types as types
    from mcp_face_tools import later_manifest

    heard: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            heard.append(message)

    async def body(client: Any) -> Any:
        await client.list_tools()
        created = await client.call_tool(
            "tool_create", {"manifest": dict(later_manifest(), id="quiet.tool"), "target": "talos"}
        )
        await anyio.sleep(1.5)
        return created

    created = client_run(
        _serve(face, tmp_path, "--persona-labels", "tool.create"),
        body,
        tmp_path,
        message_handler=on_message,
    )
    assert not created.is_error, text_items(created)
    assert heard == []


# -- consent last -------------------------------------------------------------------------------


def test_consent_is_asked_after_every_check_that_refuses_anyway(face: Path, tmp_path: Path) -> None:
    import mcp_types as types

    asked: list[str] = []

    async def accept(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"allow": True})

    config = tmp_path / "host.toml"
    config.write_text('[network]\nallow = ["other.example.com"]\n')

    async def body(client: Any) -> Any:
        return {
            "missing credential": await client.call_tool("dynamic_keyed_Dfetch", {}),
            "forged, host off the host's list": await client.call_tool("dynamic_web_Dfetch", {}),
            "host tool, host off the list": await client.call_tool(
                "net_http", {"method": "GET", "url": "https://api.example.com/x"}
            ),
            "host tool, bad input": await client.call_tool(
                "net_http", {"method": "GET", "url": "ftp://other.example.com/x"}
            ),
            "host tool, label": await client.call_tool(
                "channel_send", {"channelId": "alerts", "content": "hi"}
            ),
        }

    results = client_run(
        _serve(
            face,
            tmp_path,
            "--host-config",
            str(config),
            "--persona-labels",
            "net.http:egress,channel.send:team",
        ),
        body,
        tmp_path,
        elicitation_callback=accept,
    )
    assert asked == []  # nobody was asked about a call that could not go through
    expected = {
        "missing credential": "RUN_CREDENTIAL_MISSING",
        "forged, host off the host's list": "RUN_NETWORK_DENIED",
        "host tool, host off the list": "RUN_NETWORK_DENIED",
        "host tool, bad input": "http",
        "host tool, label": "RUN_LABEL_DENIED",
    }
    for what, needle in expected.items():
        result = results[what]
        assert result.is_error, what
        assert needle in text_items(result)[0], (what, text_items(result))


def test_consent_is_still_asked_when_the_checks_pass(face: Path, tmp_path: Path) -> None:
    import mcp_types as types

    asked: list[str] = []

    async def decline(context: Any, params: Any) -> Any:
        asked.append(params.message)
        return types.ElicitResult(action="decline")

    config = tmp_path / "host.toml"
    config.write_text('[network]\nallow = ["api.example.com"]\n')

    async def body(client: Any) -> Any:
        return await client.call_tool(
            "net_http", {"method": "GET", "url": "https://api.example.com/x"}
        )

    result = client_run(
        _serve(face, tmp_path, "--host-config", str(config), "--persona-labels", "net.http:egress"),
        body,
        tmp_path,
        elicitation_callback=decline,
    )
    assert len(asked) == 1 and result.is_error and "did not consent" in text_items(result)[0]


# -- start-up -----------------------------------------------------------------------------------


def _start(cmd: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=60,
        env=_env(tmp_path),
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )


def test_serve_refuses_a_host_database_it_cannot_use(face: Path, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"\x00not sqlite\n" * 200)
    folder = tmp_path / "a-folder"
    folder.mkdir()
    for db in (folder, garbage):
        proc = _start(
            [sys.executable, "-m", "forgec", "mcp", "serve", "--store", str(face), "--db", str(db)],
            tmp_path,
        )
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and str(db) in lines[0], proc.stderr
        assert "Traceback" not in proc.stderr
    as_store = _start(
        [sys.executable, "-m", "forgec", "mcp", "serve", "--store", str(folder)], tmp_path
    )
    assert as_store.returncode == 2 and len(as_store.stderr.strip().splitlines()) == 1


def test_serve_warns_about_a_label_no_tool_knows(face: Path, tmp_path: Path) -> None:
    async def body(client: Any) -> Any:
        return [t.name for t in (await client.list_tools()).tools]

    log = tmp_path / "stderr.txt"
    names = client_run(
        _serve(face, tmp_path, "--persona-labels", "db.query:own,net.http:egres,channel.send:ops"),
        body,
        tmp_path,
        errlog=log,
    )
    assert "db_query" in names and "net_http" not in names
    warnings = log.read_text()
    assert "'net.http:egres'" in warnings and "warning" in warnings
    # warned about by name (quoted) only the unknown one; the known ones are listed as known
    assert "'db.query:own'" not in warnings and "'channel.send:ops'" not in warnings
    assert "known: " in warnings and "channel.send:<channelId>" in warnings

    empty = tmp_path / "no-templates"
    empty.mkdir()
    client_run(_serve(face, tmp_path, "--templates", str(empty)), body, tmp_path, errlog=log)
    assert "has no tool-instructions/ folder" in log.read_text()


def test_the_readme_client_snippet_works_as_written(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Serve tools over MCP", 1)[1]
    block = re.search(r"```json\n(.*?)```", section, re.S)
    assert block is not None
    server = json.loads(block.group(1))["mcpServers"]["forgec"]
    assert server["command"] == "forgec"

    async def body(client: Any) -> Any:
        return [t.name for t in (await client.list_tools()).tools], client.instructions

    # `forgec` is the console script; `python -m forgec` is the same entry point
    names, instructions = client_run(
        [sys.executable, "-m", "forgec", *server["args"]], body, tmp_path
    )
    assert {"db_query", "memory_access", "tool_create"} <= set(names)
    assert instructions and "## db_query" in instructions


# -- instructions -------------------------------------------------------------------------------


def test_default_instructions_are_those_of_the_visible_tools(face: Path, tmp_path: Path) -> None:
    folder = ROOT / "forgec" / "templates" / "tool-instructions"
    files = sorted(folder.glob("*.md"))
    assert len(files) == 10
    for path in files:
        assert path.read_text(encoding="utf-8").startswith("## "), path

    async def body(client: Any) -> Any:
        return client.instructions

    instructions = client_run(
        _serve(face, tmp_path, "--persona-labels", "memory.access:thread,db.query:own"),
        body,
        tmp_path,
    )
    expected = "\n\n".join(
        (folder / f"{name}.md").read_text(encoding="utf-8").strip()
        for name in ("db.query", "memory.access")  # in listing order: db_query, memory_access
    )
    assert instructions == expected
    none = client_run(_serve(face, tmp_path), body, tmp_path)
    assert not none  # a persona that sees no host tool is told about none


def test_a_tampered_version_is_left_out_and_named_on_stderr(face: Path, tmp_path: Path) -> None:
    import sqlite3

    conn = sqlite3.connect(face)
    with conn:  # a change made outside forgec: the manifest no longer matches its hash
        conn.execute(
            "UPDATE versions SET manifest = replace(manifest, 'hello', 'HELLO') WHERE tool_id = ?",
            ("greet",),
        )
    conn.close()

    async def body(client: Any) -> Any:
        names = [t.name for t in (await client.list_tools()).tools]
        return names, await client.call_tool("dynamic_greet", {"name": "Ann"})

    log = tmp_path / "stderr.txt"
    names, called = client_run(_serve(face, tmp_path), body, tmp_path, errlog=log)
    assert "dynamic_greet" not in names
    assert called.is_error and "not available" in text_items(called)[0]
    assert "dynamic:greet" in log.read_text() and "Traceback" not in log.read_text()
