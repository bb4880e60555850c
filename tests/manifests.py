"""Small valid manifests for tests, built fresh on every call so a test can mutate its copy.

`minimal_manifest()` is the smallest manifest that checks clean on every target: one `return`
node, network forbidden, no credentials. Keyword overrides replace top-level fields; pass
`DELETE` to remove one (``minimal_manifest(title=DELETE)``).

`example(name)` reads `examples/NAME.talostool` (the shipped examples) afresh.

`manifest_with_nodes(nodes)` wraps a list of node objects in that manifest, with the entry set to
the first node's id unless `entry` is given.

`probe(nodes, ...)` is the attack tests' one builder: a tool whose flow calls host capabilities
(`net.http`, `db.query`, …), with its network allowlist, credentials and input schema, built
with `step` / `http_step` nodes and `credential` declarations.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

DELETE: Any = object()  # sentinel: remove the field instead of setting it

_MINIMAL: dict[str, Any] = {
    "schema": "talos.local-tool.v1",
    "id": "demo.tool",
    "version": 1,
    "title": "Demo tool",
    "description": "A small tool used by the tests.",
    "createdAt": "2026-01-01T00:00:00Z",
    "parentVersion": None,
    "execution": "declarative-flow",
    "installScope": "device",
    "network": {"mode": "forbidden"},
    "credentialRequirements": [],
    "flow": {
        "entry": "done",
        "maxTransitions": 16,
        "nodes": [{"id": "done", "type": "return", "value": {"ok": True}}],
    },
}


def _apply(manifest: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    for key, value in overrides.items():
        if value is DELETE:
            manifest.pop(key, None)
        else:
            manifest[key] = copy.deepcopy(value)
    return manifest


def example(name: str) -> dict[str, Any]:
    """A fresh copy of the shipped example `examples/NAME.talostool`."""
    return orjson.loads((EXAMPLES / f"{name}.talostool").read_bytes())


def minimal_manifest(**overrides: Any) -> dict[str, Any]:
    """A fresh valid manifest; keyword arguments replace (or, with `DELETE`, remove) fields."""
    return _apply(copy.deepcopy(_MINIMAL), overrides)


def manifest_with_nodes(
    nodes: list[dict[str, Any]],
    *,
    entry: str | None = None,
    max_transitions: int = 256,
    **overrides: Any,
) -> dict[str, Any]:
    """A fresh manifest whose flow is `nodes` (entry: the first node's id unless given)."""
    manifest = copy.deepcopy(_MINIMAL)
    first = nodes[0].get("id") if nodes and isinstance(nodes[0], dict) else None
    manifest["flow"] = {
        "entry": entry if entry is not None else first,
        "maxTransitions": max_transitions,
        "nodes": copy.deepcopy(nodes),
    }
    return _apply(manifest, overrides)


def step(
    node_id: str,
    capability: str,
    input: Any,
    *,
    target: str | None = None,
    next: str | None = None,
) -> dict[str, Any]:
    """A capability node (`target` and `next` only when given)."""
    node: dict[str, Any] = {
        "id": node_id,
        "type": "capability",
        "capability": capability,
        "input": copy.deepcopy(input),
    }
    if target is not None:
        node["target"] = target
    if next is not None:
        node["next"] = next
    return node


def http_step(
    url: Any,
    *,
    node_id: str = "fetch",
    method: str = "GET",
    headers: Any = None,
    target: str | None = "resp",
    next: str | None = "done",
) -> dict[str, Any]:
    """A `net.http` node: `url` and `headers` literal or expressions (no headers: none sent)."""
    inp: dict[str, Any] = {"method": method, "url": url}
    if headers is not None:
        inp["headers"] = headers
    return step(node_id, "net.http", inp, target=target, next=next)


def credential(credential_id: str, *hosts: str, purpose: str = "Call the API") -> dict[str, Any]:
    """One `credentialRequirements` entry."""
    return {"id": credential_id, "purpose": purpose, "hosts": list(hosts)}


def probe(
    nodes: list[dict[str, Any]],
    *,
    tool_id: str,
    title: str,
    description: str,
    hosts: list[str] | None = None,
    credentials: list[dict[str, Any]] | tuple[dict[str, Any], ...] = (),
    input_schema: dict[str, Any] | None = None,
    max_transitions: int = 4,
    **extra: Any,
) -> dict[str, Any]:
    """A fresh tool whose flow is `nodes` (entry: the first), fields in canonical order:
    network an allowlist of `hosts` (None: forbidden), the `credentials` declared, `inputSchema`
    when given; `extra` top-level fields (`state`, …) follow the flow."""
    manifest: dict[str, Any] = {
        "schema": _MINIMAL["schema"],
        "id": tool_id,
        "version": 1,
        "title": title,
        "description": description,
        "createdAt": _MINIMAL["createdAt"],
        "parentVersion": None,
        "execution": _MINIMAL["execution"],
        "installScope": _MINIMAL["installScope"],
        "network": {"mode": "allowlist", "hosts": list(hosts)}
        if hosts is not None
        else {"mode": "forbidden"},
        "credentialRequirements": copy.deepcopy(list(credentials)),
    }
    if input_schema is not None:
        manifest["inputSchema"] = copy.deepcopy(input_schema)
    manifest["flow"] = {
        "entry": nodes[0]["id"],
        "maxTransitions": max_transitions,
        "nodes": copy.deepcopy(nodes),
    }
    return _apply(manifest, extra)


def full_manifest() -> dict[str, Any]:
    """A fresh valid manifest (talos target) that uses every field and every node type."""
    nodes: list[dict[str, Any]] = [
        {
            "id": "find",
            "type": "capability",
            "capability": "tasks.list",
            "input": {"status": "open", "query": {"$ref": "input.topic"}, "limit": 20},
            "target": "found",
            "retry": {"attempts": 2, "backoffMs": 100},
            "next": "check",
        },
        {
            "id": "check",
            "type": "if",
            "condition": {"op": "truthy", "left": {"$ref": "found.items"}},
            "then": "loop",
            "else": "none",
        },
        {
            "id": "loop",
            "type": "foreach",
            "source": {"$ref": "found.items"},
            "itemVar": "task",
            "indexVar": "i",
            "maxItems": 20,
            "body": [
                {
                    "id": "label",
                    "type": "set",
                    "target": "line",
                    "value": {"$template": "{{i}}: {{ task.title }}"},
                }
            ],
            "next": "summarize",
        },
        {
            "id": "summarize",
            "type": "llm",
            "op": "summarize",
            "input": {"items": {"$ref": "found.items"}, "style": "short"},
            "target": "summary",
            "requirements": {"structuredOutput": True, "privacy": "local-only"},
            "outputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 2000}},
                "required": ["text"],
                "additionalProperties": False,
            },
            "next": "save",
        },
        {
            "id": "save",
            "type": "capability",
            "capability": "notes.create",
            "input": {"title": "Open tasks", "body": {"$ref": "summary.text"}},
            "target": "note",
            "next": "remember",
        },
        {
            "id": "remember",
            "type": "set",
            "target": "state.lastNote",
            "value": {"$ref": "note.id"},
            "next": "done",
        },
        {"id": "done", "type": "return", "value": {"noteId": {"$ref": "note.id"}, "ok": True}},
        {"id": "none", "type": "fail", "code": "NO_TASKS", "message": "No open task matched."},
    ]
    return manifest_with_nodes(
        nodes,
        max_transitions=64,
        id="demo.full-tool",
        version=3,
        parentVersion=2,
        network={"mode": "allowlist", "hosts": ["api.example.org"]},
        credentialRequirements=[
            {"id": "example-api", "purpose": "Read the example API.", "hosts": ["api.example.org"]}
        ],
        modelDefaults={
            "structuredOutput": False,
            "context": 4096,
            "privacy": "local-preferred",
            "reasoningEffort": "low",
        },
        inputSchema={
            "type": "object",
            "properties": {"topic": {"type": "string", "minLength": 1, "maxLength": 200}},
            "required": ["topic"],
            "additionalProperties": False,
        },
        outputSchema={
            "type": "object",
            "properties": {"noteId": {"type": "string"}, "ok": {"type": "boolean"}},
        },
        state={"fields": {"lastNote": {"type": ["string", "null"]}}, "maxBytes": 4096},
        triggers=[{"type": "manual"}, {"type": "schedule", "cron": "0 9 * * 1-5"}],
        ui={"title": "Task summary", "values": [{"label": "Note", "path": "noteId"}]},
    )


def pointers(value: Any, base: str = "") -> list[str]:
    """Every JSON Pointer inside `value` (the root first), in document order."""
    out = [base]
    if isinstance(value, dict):
        for key, member in value.items():
            token = str(key).replace("~", "~0").replace("/", "~1")
            out.extend(pointers(member, f"{base}/{token}"))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out.extend(pointers(item, f"{base}/{i}"))
    return out


def mutate(manifest: dict[str, Any], where: int, action: str, new: Any = None) -> dict[str, Any]:
    """A copy of `manifest` with one change at its `where`-th pointer (modulo their number):
    action "replace" (the value becomes `new`), "delete" (the member or item is removed) or
    "add" (an object gets a member `"x-extra": new`; elsewhere it is a replace)."""
    out = copy.deepcopy(manifest)
    ptrs = pointers(out)
    target = ptrs[where % len(ptrs)]
    if target == "":
        return out if action != "replace" else new
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in target[1:].split("/")]
    parent: Any = out
    for token in tokens[:-1]:
        parent = parent[int(token)] if isinstance(parent, list) else parent[token]
    last: Any = int(tokens[-1]) if isinstance(parent, list) else tokens[-1]
    if action == "delete":
        del parent[last]
    elif action == "add" and isinstance(parent[last], dict):
        parent[last]["x-extra"] = copy.deepcopy(new)
    else:
        parent[last] = copy.deepcopy(new)
    return out
