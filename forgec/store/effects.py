"""Effects: what a version can do to the world, as sets a person is shown before consenting (§14).

Marks (§6) say how much a tool may do (powers, risk); effects say exactly *what*: which
operation of which capability, which hosts, labels and credentials, which data goes where,
what starts it, and what model it needs. They are the first part of the consent diff
(`forgec.store.diff`: effects gained and lost). They never decide whether to ask: consent is
bound to the content hash alone, and a version whose hash has no consent always asks.

- `operations`: `[capability, operation]` for each reachable step. The operation is the literal
  value of the capability's selector field (`action` or `operation`, as the Talon host tools
  have them), or `*` when that field is computed (any operation; `(c, "*")` covers every
  `(c, op)`). A capability with no selector (every TALOS capability, `net.http`,
  `channel.send`, …) does one thing: its operation is the capability itself, `(c, c)`.
- `hosts`, `labels`, `credentials`: from the marks.
- `flows`: `[source, sink]` pairs from the data-flow facts (§15) when the checker has them —
  those a person consents to, the card's "Sends" and "Steered by" lines: private data reaching
  an egress, outside text reaching a write or an egress (`input → output` and the like are
  not effects: the behaviour part of the diff shows a reshaped result).
- `triggers`: `manual`, `app-resume`, `task-changed`, `schedule <cron>`.
- `model`: `{"privacy", "effort"}` of the reachable model steps, or null with none.

Computed once, at install time, from the check report, and stored with the version (covered
by its content hash).
"""

from __future__ import annotations

from typing import Any

ANY = "*"
# less strict is more: a version that may use a remote model reaches further than a local one
PRIVACY_REACH = ("local-only", "local-preferred", "remote-allowed", None)
EFFORT_COST = (None, "low", "medium", "high")
SET_KEYS = ("operations", "hosts", "labels", "credentials", "flows", "triggers")


def effects_from_report(report: Any, target: str) -> dict[str, Any]:
    """The effects of a checked tool (REPORT: `forgec.api.Report`, checked against TARGET)."""
    from forgec.catalog import get_catalog
    from forgec.passes.capabilities import capability_nodes, literal_fields

    marks = report.marks
    facts = report.facts
    operations: set[tuple[str, str]] = set()
    ir = report.ir
    flow = getattr(ir, "flow", None)
    if flow is not None and facts is not None:
        catalog = get_catalog(target)
        reachable = facts.reachable_pointers
        for node in capability_nodes(flow.nodes):
            spec = catalog.get(node.capability) if node.capability else None
            if spec is None or node.pointer not in reachable:
                continue
            operations.add((spec.name, _operation(spec, literal_fields(node.input))))
    flows = {
        (str(f.source), str(f.sink))
        for f in (getattr(facts, "flows", ()) or ())
        if hasattr(f, "source") and hasattr(f, "sink") and _asks(str(f.source), str(f.sink))
    }
    manifest = report.manifest if isinstance(report.manifest, dict) else {}
    return _effects(marks, operations, flows, manifest.get("triggers") or [])


def _asks(source: str, sink: str) -> bool:
    """A flow a person consents to (SPEC §15's two codes; the card's flow lines)."""
    from forgec.runtime.sources_and_sinks import is_private, is_untrusted, sink_kind

    kind = sink_kind(sink)
    return (is_private(source) and kind == "egress") or (
        is_untrusted(source) and kind in ("egress", "write")
    )


def effects_from_marks(marks: Any, manifest: dict[str, Any]) -> dict[str, Any]:
    """Effects when no check report is at hand (a row older than effects): every capability
    with any operation — the most the marks allow."""
    operations = {(c, ANY) for c in marks.capabilities}  # wide: covers every operation
    return _effects(marks, operations, set(), manifest.get("triggers") or [])


def _operation(spec: Any, literal: Any) -> str:
    """The operation of a step: its selector's literal value (from the capability's row)."""
    from forgec.ir.capabilities import BY_NAME

    row = BY_NAME.get(str(spec.name))
    selector = row.selector if row is not None else None
    if selector is None:
        return str(spec.name)
    value = literal.get(selector) if hasattr(literal, "get") else None
    return value if isinstance(value, str) else ANY


def _effects(
    marks: Any, operations: set[tuple[str, str]], flows: set[tuple[str, str]], triggers: Any
) -> dict[str, Any]:
    model = marks.model if marks is not None else None
    return {
        "operations": sorted([c, op] for c, op in operations),
        "hosts": sorted(marks.network) if marks is not None else [],
        "labels": sorted(marks.labels) if marks is not None else [],
        "credentials": sorted(marks.credentials) if marks is not None else [],
        "flows": sorted([s, t] for s, t in flows),
        "triggers": sorted({_trigger(t) for t in triggers if isinstance(t, dict)}),
        "model": ({"privacy": model.privacy, "effort": model.reasoning_effort} if model else None),
    }


def _trigger(trigger: dict[str, Any]) -> str:
    kind = str(trigger.get("type"))
    return f"schedule {trigger.get('cron')}" if kind == "schedule" else kind


def _covered(key: str, item: list[str], old: dict[str, Any]) -> bool:
    have = old.get(key) or []
    if item in have:
        return True
    # a computed operation in the old version covers every operation of that capability
    return key == "operations" and [item[0], ANY] in have


def words(key: str, item: list[str]) -> str:
    if key == "operations":
        if item[1] == item[0]:
            return item[0]
        return f"{item[0]} (any operation)" if item[1] == ANY else f"{item[0]} {item[1]}"
    if key == "flows":
        return f"{item[0]} → {item[1]}"
    return str(item)


def growth(new: dict[str, Any], old: dict[str, Any]) -> dict[str, list[str]]:
    """What NEW does that OLD does not, in words, by kind ({} when NEW ⊆ OLD)."""
    out: dict[str, list[str]] = {}
    for key in SET_KEYS:
        fresh = [words(key, i) for i in new.get(key) or [] if not _covered(key, i, old)]
        if fresh:
            out[key] = fresh
    if model_change := _model_growth(new.get("model"), old.get("model")):
        out["model"] = model_change
    return out


def _model_growth(new: Any, old: Any) -> list[str]:
    if not new:
        return []
    if not old:
        return [f"a model step ({_privacy(new)}, {new.get('effort') or 'default effort'})"]
    out = []
    if _rank(PRIVACY_REACH, new.get("privacy")) > _rank(PRIVACY_REACH, old.get("privacy")):
        out.append(f"privacy {_privacy(old)} -> {_privacy(new)}")
    if _rank(EFFORT_COST, new.get("effort")) > _rank(EFFORT_COST, old.get("effort")):
        out.append(f"effort {old.get('effort') or 'default'} -> {new.get('effort')}")
    return out


def _privacy(model: dict[str, Any]) -> str:
    return str(model.get("privacy") or "any model")


def _rank(order: tuple[str | None, ...], value: Any) -> int:
    # an unknown value ranks as the widest: deny by default
    return order.index(value) if value in order else len(order)
