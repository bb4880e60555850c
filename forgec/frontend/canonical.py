"""The canonical form of a manifest: fields in the specification's order, 2-space JSON.

Numbers are written by `forgec.runtime.jsontext`, so the text (and the content hash over it)
is the same under every orjson release.

`forgec compile` writes it, `forgec fmt --to talostool` writes it, and the round trip
`compile(fmt(M)) == canonical(M)` is stated in terms of it. Objects that hold user data (values,
JSON Schemas, state fields) keep the order they were written in: key order is meaningful there
(template rendering prints keys in their order).
"""

from __future__ import annotations

from typing import Any

from forgec.ir import rules
from forgec.runtime.jsontext import dumps, dumps_text

# Field orders are the fact table's (forgec.ir.rules): one spelling of every field list.
MANIFEST_ORDER = rules.MANIFEST_FIELDS
NETWORK_ORDER = rules.NETWORK_FIELDS
CREDENTIAL_ORDER = rules.CREDENTIAL_FIELDS
MODEL_ORDER = rules.MODEL_FIELDS
FLOW_ORDER = rules.FLOW_FIELDS
NODE_ORDER = rules.NODE_ORDER
RETRY_ORDER = rules.RETRY_FIELDS
CONDITION_ORDER = rules.CONDITION_FIELDS
STATE_ORDER = rules.STATE_FIELDS
TRIGGER_ORDER = rules.TRIGGER_FIELDS
UI_ORDER = rules.UI_FIELDS
UI_VALUE_ORDER = rules.UI_VALUE_FIELDS


def _ordered(obj: Any, order: tuple[str, ...]) -> Any:
    if not isinstance(obj, dict):
        return obj
    out = {k: obj[k] for k in order if k in obj}
    out.update((k, v) for k, v in obj.items() if k not in out)
    return out


def _node(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    out = _ordered(node, NODE_ORDER.get(node.get("type"), ("id", "type")))  # type: ignore[arg-type]
    if isinstance(out.get("retry"), dict):
        out["retry"] = _ordered(out["retry"], RETRY_ORDER)
    if isinstance(out.get("condition"), dict):
        out["condition"] = _ordered(out["condition"], CONDITION_ORDER)
    if isinstance(out.get("requirements"), dict):
        out["requirements"] = _ordered(out["requirements"], MODEL_ORDER)
    if isinstance(out.get("body"), list):
        out["body"] = [_node(n) for n in out["body"]]
    return out


def canonical_manifest(raw: dict[str, Any]) -> dict[str, Any]:
    """Reorder a manifest's structural fields into the canonical order (values untouched)."""
    out = _ordered(raw, MANIFEST_ORDER)
    if isinstance(out.get("network"), dict):
        out["network"] = _ordered(out["network"], NETWORK_ORDER)
    if isinstance(out.get("credentialRequirements"), list):
        out["credentialRequirements"] = [
            _ordered(c, CREDENTIAL_ORDER) for c in out["credentialRequirements"]
        ]
    if isinstance(out.get("modelDefaults"), dict):
        out["modelDefaults"] = _ordered(out["modelDefaults"], MODEL_ORDER)
    flow = out.get("flow")
    if isinstance(flow, dict):
        flow = _ordered(flow, FLOW_ORDER)
        if isinstance(flow.get("nodes"), list):
            flow["nodes"] = [_node(n) for n in flow["nodes"]]
        out["flow"] = flow
    if isinstance(out.get("state"), dict):
        out["state"] = _ordered(out["state"], STATE_ORDER)
    if isinstance(out.get("triggers"), list):
        out["triggers"] = [_ordered(t, TRIGGER_ORDER) for t in out["triggers"]]
    ui = out.get("ui")
    if isinstance(ui, dict):
        ui = _ordered(ui, UI_ORDER)
        if isinstance(ui.get("values"), list):
            ui["values"] = [_ordered(v, UI_VALUE_ORDER) for v in ui["values"]]
        out["ui"] = ui
    return out


def dumps_canonical(manifest: dict[str, Any]) -> str:
    """Canonical `.talostool` text: canonical order, 2-space indent, trailing newline."""
    return dumps_text(canonical_manifest(manifest), indent=True) + "\n"


def compact_size(value: Any) -> int:
    """Bytes of a JSON value as compact UTF-8 JSON (the unit of every size limit)."""
    return len(dumps(value))
