"""Small valid manifests for tests, built fresh on every call so a test can mutate its copy.

`minimal_manifest()` is the smallest manifest that checks clean on every target: one `return`
node, network forbidden, no credentials. Keyword overrides replace top-level fields; pass
`DELETE` to remove one (``minimal_manifest(title=DELETE)``).

`manifest_with_nodes(nodes)` wraps a list of node objects in that manifest, with the entry set to
the first node's id unless `entry` is given.
"""

from __future__ import annotations

import copy
from typing import Any

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
