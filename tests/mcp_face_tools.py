"""Forged tools and a server launcher shared by the MCP face tests (Python and TypeScript clients).

- `greet` (R0, no label): `{"name"}` → `{"greeting": "hello <name>"}` with a `ui` card; the name
  `fail` ends the run at a `fail` node, so one tool gives both a success and a failure, and it
  has an `outputSchema` (what made the TypeScript client throw on a failed run);
- `keyed.fetch` (R4): `net.http` with a declared credential, to see consent asked last;
- `web.fetch` (R4): `net.http` to a literal host, for the host's allowlist;
- `later.tool`: installed off, turned on by another process while a server runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from manifests import manifest_with_nodes

from forgec.store import Store

ROOT = Path(__file__).resolve().parent.parent

GREET_NODES: list[dict[str, Any]] = [
    {
        "id": "check",
        "type": "if",
        "condition": {"op": "eq", "left": {"$ref": "input.name"}, "right": "fail"},
        "then": "refuse",
        "else": "done",
    },
    {"id": "refuse", "type": "fail", "code": "GREET_REFUSED", "message": "no greeting for fail"},
    {
        "id": "done",
        "type": "return",
        "value": {"greeting": {"$template": "hello {{input.name}}"}},
    },
]


def greet_manifest() -> dict[str, Any]:
    return manifest_with_nodes(
        GREET_NODES,
        id="greet",
        version=1,
        parentVersion=None,
        network={"mode": "forbidden"},
        inputSchema={
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"],
            "additionalProperties": False,
        },
        outputSchema={
            "type": "object",
            "properties": {"greeting": {"type": "string"}},
            "required": ["greeting"],
            "additionalProperties": False,
        },
        ui={"title": "Greeting", "values": [{"label": "Says", "path": "greeting"}]},
    )


def http_manifest(tool_id: str, *, credential: bool) -> dict[str, Any]:
    step_input: dict[str, Any] = {"method": "GET", "url": "https://api.example.com/x"}
    extra: dict[str, Any] = {}
    if credential:
        step_input["headers"] = {"Authorization": {"$credential": "api-key"}}
        extra["credentialRequirements"] = [
            {"id": "api-key", "purpose": "the example API", "hosts": ["api.example.com"]}
        ]
    nodes = [
        {
            "id": "get",
            "type": "capability",
            "capability": "net.http",
            "input": step_input,
            "target": "page",
            "next": "done",
        },
        {"id": "done", "type": "return", "value": {"$ref": "page.status"}},
    ]
    return manifest_with_nodes(
        nodes,
        id=tool_id,
        version=1,
        parentVersion=None,
        network={"mode": "allowlist", "hosts": ["api.example.com"]},
        **extra,
    )


def later_manifest() -> dict[str, Any]:
    nodes = [{"id": "done", "type": "return", "value": {"ok": True}}]
    return manifest_with_nodes(
        nodes, id="later.tool", version=1, parentVersion=None, network={"mode": "forbidden"}
    )


def build_store(path: Path) -> Path:
    """The store the face tests serve: greet, keyed.fetch, web.fetch on; later.tool off."""
    with Store(path) as store:
        for manifest, target, on in (
            (greet_manifest(), "talos", True),
            (http_manifest("keyed.fetch", credential=True), "talon", True),
            (http_manifest("web.fetch", credential=False), "talon", True),
            (later_manifest(), "talos", False),
        ):
            result = store.install(orjson.dumps(manifest), target=target)
            assert result.installed, result.to_json()
            if on:
                store.enable(manifest["id"], consent=True)
    return path


def enable_in_another_process(store: Path, tool_id: str) -> None:
    """`forgec tools enable ID --yes` as a person would type it, in its own process."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "forgec",
            "tools",
            "enable",
            tool_id,
            "--yes",
            "--store",
            str(store),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr


def serve_command(store: Path, db: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "forgec",
        "mcp",
        "serve",
        "--store",
        str(store),
        "--db",
        str(db),
        *extra,
    ]
