"""The consent diff the screen shows: `forgec.store.diff.diff_versions` (what `forgec tools diff
--format json` prints), through this one adapter.

The shape (docs/screen.md): {"id", "from": {"version", "hash", "author"} | null,
"to": {...}, "effects": {"gained": [{"kind", "text"}], "lost": [...]},
"behaviour": [{"change", "node", "what", "old", "new", "text"}], "text": [{"field", "old",
"new"}], "summary"}. Where this forgec has no `forgec.store.diff` yet, `_effects_only` builds
the same shape from the effects the store keeps (gained and lost), with the text fields
compared and no step-by-step part: the pages read only the shape, so they need no change when
the full diff arrives.
"""

from __future__ import annotations

import importlib
from typing import Any

# the growth keys of `forgec.store.core.growth_between` → the shape's effect kinds
_KIND = {
    "powers": "operation",
    "risk": "operation",
    "operations": "operation",
    "network": "host",
    "hosts": "host",
    "labels": "label",
    "credentials": "credential",
    "flows": "flow",
    "triggers": "trigger",
    "model": "model",
}
TEXT_FIELDS = ("title", "description", "ui")


def consent_diff(store: Any, tool_id: str, a: int | None, b: int) -> dict[str, Any]:
    """What changed from version A (None: nothing consented yet) to version B of TOOL_ID."""
    try:
        module = importlib.import_module("forgec.store.diff")
    except ModuleNotFoundError as exc:
        if exc.name != "forgec.store.diff":
            raise
        return _effects_only(store, tool_id, a, b)
    result: dict[str, Any] = module.diff_versions(store, tool_id, a, b)
    return result


def _side(stored: Any) -> dict[str, Any]:
    return {"version": stored.version, "hash": stored.hash, "author": stored.author}


def _effects_only(store: Any, tool_id: str, a: int | None, b: int) -> dict[str, Any]:
    from forgec.runtime.jsontext import dumps_text
    from forgec.store import effects as fx
    from forgec.store.core import _everything, growth_between

    new = store.get(tool_id, b)
    old = store.get(tool_id, a) if a is not None else None
    gained = growth_between(new, old) if old is not None else _everything(new)
    lost = fx.removed(new.effects, old.effects) if old is not None else {}
    text = []
    if old is not None:
        for field in TEXT_FIELDS:
            before, after = old.manifest.get(field), new.manifest.get(field)
            if before != after:
                shown = [
                    v if isinstance(v, str) or v is None else dumps_text(v) for v in (before, after)
                ]
                text.append({"field": field, "old": shown[0], "new": shown[1]})
    effects = {
        "gained": [
            {"kind": _KIND.get(k, k), "text": f"{k}: {item}"}
            for k, v in gained.items()
            for item in v
        ],
        "lost": [
            {"kind": _KIND.get(k, k), "text": f"{k}: {item}"} for k, v in lost.items() for item in v
        ],
    }
    if old is not None and new.hash == old.hash:
        summary = "No change."
    elif not effects["gained"] and not effects["lost"]:
        summary = "No effect gained or lost."
    elif old is None:
        summary = "Nothing consented yet: everything this version may do is new."
    else:
        summary = f"{len(effects['gained'])} effect(s) gained, {len(effects['lost'])} lost."
    return {
        "id": tool_id,
        "from": _side(old) if old is not None else None,
        "to": _side(new),
        "effects": effects,
        "behaviour": [],
        "text": text,
        "summary": summary,
        # no step-by-step part here: the page says so instead of "no step changed"
        "partial": True,
    }
