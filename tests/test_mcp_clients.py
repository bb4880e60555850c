"""Real MCP clients, each in both protocol versions it speaks, against `forgec mcp serve`:
the TypeScript SDK (pinned in tests/clients/package.json; 2025-11-25 and 2025-06-18) and the
Python SDK (2026-07-28 and 2025-11-25). The same story for each: list, a forged tool that
succeeds and one that fails (the client must show the message, not throw), a host tool refused
by labels, `tool_create` valid and invalid, and the list-changed notification after `forgec
tools enable` in another process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_face_tools import ROOT, build_store, enable_in_another_process, later_manifest

CLIENTS = ROOT / "tests" / "clients"
LABELS = "channel.send:team,tool.create"
VALID = dict(later_manifest(), id="made.by.client")


def _env(tmp_path: Path) -> dict[str, str]:
    env = {"PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    env["PATH"] = os.environ.get("PATH", "")
    return env


def _serve_args(store: Path, tmp_path: Path) -> list[str]:
    return [
        "-m",
        "forgec",
        "mcp",
        "serve",
        "--store",
        str(store),
        "--db",
        str(tmp_path / "host.db"),
        "--persona-labels",
        LABELS,
    ]


def _enable_args(store: Path) -> list[str]:
    return ["-m", "forgec", "tools", "enable", "later.tool", "--yes", "--store", str(store)]


def check_story(seen: dict[str, Any], protocol: str) -> None:
    """What any client must have seen; SEEN is protocol-neutral JSON (see the two drivers)."""
    assert seen["protocol"] == protocol
    assert seen["listChanged"] is True
    steps = seen["steps"]
    for name, value in steps.items():
        assert "threw" not in value, (name, value)  # the client broke on this call
    names = [t["name"] for t in steps["list"]]
    assert {"dynamic_greet", "channel_send", "tool_create"} <= set(names)
    assert "dynamic_later_Dtool" not in names
    greet = next(t for t in steps["list"] if t["name"] == "dynamic_greet")
    assert greet["hasOutputSchema"] and greet["meta"]["forgec/version"] == 1

    ok = steps["ok"]
    assert not ok["isError"] and ok["structuredContent"] == {"greeting": "hello Ann"}
    assert ok["text"][1] == "Greeting\nSays: hello Ann"

    failed = steps["failed"]
    assert failed["isError"] and failed["structuredContent"] is None
    assert failed["text"] == [
        "dynamic:greet failed at node `refuse`: GREET_REFUSED: no greeting for fail"
    ]
    assert failed["meta"]["forgec/run"]["error"]["code"] == "GREET_REFUSED"

    refused = steps["refusedByLabel"]
    assert refused["isError"] and "RUN_LABEL_DENIED" in refused["text"][0]
    assert "channel.send:alerts" in refused["text"][0]

    created = steps["createValid"]
    assert not created["isError"], created
    assert created["structuredContent"]["name"] == "dynamic:made.by.client"
    assert created["structuredContent"]["enabled"] is False
    invalid = steps["createInvalid"]
    assert invalid["isError"] and "FORGE_ID" in invalid["text"][0]

    changed = steps["listChanged"]
    assert changed["notified"] is True
    assert "dynamic_later_Dtool" in changed["names"]
    assert "dynamic_made_Dby_Dclient" not in changed["names"]  # installed off by the model


# -- TypeScript ----------------------------------------------------------------------------------


def _node() -> str:
    node = shutil.which("node")
    assert node is not None  # the ts_client_packages fixture skips (or fails in CI) without it
    return node


def test_the_typescript_client_is_pinned() -> None:
    package = json.loads((CLIENTS / "package.json").read_text())
    version = package["dependencies"]["@modelcontextprotocol/sdk"]
    assert version[0].isdigit(), "pin an exact version, not a range"
    lock = json.loads((CLIENTS / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@modelcontextprotocol/sdk"]["version"] == version


@pytest.mark.parametrize("protocol", ["2025-11-25", "2025-06-18"])
@pytest.mark.usefixtures("ts_client_packages")
def test_typescript_sdk_client(protocol: str, tmp_path: Path) -> None:
    node = _node()
    store = build_store(tmp_path / "tools.db")
    config = {
        "command": sys.executable,
        "args": _serve_args(store, tmp_path),
        "env": _env(tmp_path),
        "protocol": protocol,
        "enable": {"command": sys.executable, "args": _enable_args(store)},
        "validManifest": VALID,
    }
    proc = subprocess.run(
        [node, str(CLIENTS / "ts-client.mjs"), json.dumps(config)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=CLIENTS,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "fatal" not in seen, (seen["fatal"], proc.stderr)
    seen["listChanged"] = (seen.get("capabilities") or {}).get("tools", {}).get("listChanged")
    check_story(seen, protocol)


# -- Python -----------------------------------------------------------------------------------


def _summary(result: Any) -> dict[str, Any]:
    return {
        "isError": bool(result.is_error),
        "text": [c.text for c in result.content if getattr(c, "type", "") == "text"],
        "structuredContent": result.structured_content,
        "meta": result.meta,
    }


async def _python_story(client: Any, store: Path) -> dict[str, Any]:
    steps: dict[str, Any] = {}
    listed = await client.list_tools()
    steps["list"] = [
        {"name": t.name, "hasOutputSchema": t.output_schema is not None, "meta": t.meta}
        for t in listed.tools
    ]
    steps["ok"] = _summary(await client.call_tool("dynamic_greet", {"name": "Ann"}))
    steps["failed"] = _summary(await client.call_tool("dynamic_greet", {"name": "fail"}))
    steps["refusedByLabel"] = _summary(
        await client.call_tool("channel_send", {"channelId": "alerts", "content": "hi"})
    )
    steps["createValid"] = _summary(
        await client.call_tool("tool_create", {"manifest": VALID, "target": "talos"})
    )
    steps["createInvalid"] = _summary(
        await client.call_tool("tool_create", {"manifest": dict(VALID, id="Bad Id", title="")})
    )
    return steps


async def _wait_legacy(client: Any, store: Path, changed: anyio.Event) -> bool:
    await anyio.to_thread.run_sync(enable_in_another_process, store, "later.tool")
    with anyio.move_on_after(10):
        await changed.wait()
    return changed.is_set()


async def _wait_modern(client: Any, store: Path) -> bool:
    async with client.listen(tools_list_changed=True) as sub:
        await anyio.to_thread.run_sync(enable_in_another_process, store, "later.tool")
        with anyio.move_on_after(10):
            await sub.__anext__()
            return True
    return False


@pytest.mark.parametrize(("mode", "protocol"), [("auto", "2026-07-28"), ("legacy", "2025-11-25")])
def test_python_sdk_client(mode: str, protocol: str, tmp_path: Path) -> None:
    import mcp_types as types
    from mcp_client import run_client

    store = build_store(tmp_path / "tools.db")
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async def main(client: Any) -> dict[str, Any]:
        steps = await _python_story(client, store)
        if client.protocol_version == "2026-07-28":
            notified = await _wait_modern(client, store)
        else:
            notified = await _wait_legacy(client, store, changed)
        names = [t.name for t in (await client.list_tools()).tools]
        steps["listChanged"] = {"notified": notified, "names": names}
        caps = client.server_capabilities
        return {
            "protocol": client.protocol_version,
            "listChanged": caps.tools.list_changed if caps.tools else None,
            "steps": steps,
        }

    command = [sys.executable, *_serve_args(store, tmp_path)]
    answer = run_client(
        command, main, env=_env(tmp_path), cwd=Path.cwd(), mode=mode, message_handler=on_message
    )
    check_story(answer, protocol)
