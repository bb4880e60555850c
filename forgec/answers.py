"""The JSON answers forgec gives, one function each, read by every face that shows them.

`forgec inspect --format json` prints `inspect_json`, `forgec check --format json` prints
`check_json`, and the Tool Forge screen (`forgec.screen`) serves the very same dicts from its
`/api/...` and draws its pages from them: a change here shows in the CLI and on the screen at
once. `ui_card` is a run's summary card as data (the CLI lays it out as text lines, the screen
as HTML). Nothing here escapes text: each renderer sends what it prints through
`forgec.render.safe.safe_text`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def check_json(reports: Iterable[Any]) -> dict[str, Any]:
    """`forgec check --format json`: every file's report."""
    return {"files": [r.to_json() for r in reports]}


def inspect_json(report: Any) -> dict[str, Any]:
    """`forgec inspect --format json`: marks, worst case, graph facts, consent card, flows."""
    from forgec.ir.nodes import ForeachNode, node_type, walk_nodes
    from forgec.render.consent import consent_card_json

    facts = report.facts
    ir = report.ir
    nodes: list[dict[str, Any]] = []
    if ir is not None and ir.flow is not None:
        for node, loop in walk_nodes(ir.flow.nodes):
            entry: dict[str, Any] = {
                "id": node.id,
                "type": node_type(node),
                "reachable": node.id in facts.reachable,
                "loop": loop.id if loop is not None else None,
            }
            if isinstance(node, ForeachNode):
                entry["maxItems"] = node.max_items
            capability = getattr(node, "capability", None)
            if capability is not None:
                entry["capability"] = capability
            nodes.append(entry)
    max_transitions = ir.flow.max_transitions if ir is not None and ir.flow is not None else None
    return {
        "path": report.path,
        "ok": report.ok,
        "target": report.target,
        "marks": report.marks.to_json() if report.marks else None,
        "transitions": {
            "worstCase": facts.worst_case_transitions if facts else None,
            "limit": max_transitions,
            "worstCasePath": list(facts.worst_case_path) if facts else [],
        },
        "values": {"largestBytes": _largest_value(ir), "limit": _value_limit()},
        "graph": {
            "entry": ir.flow.entry if ir is not None and ir.flow is not None else None,
            "nodes": nodes,
            "acyclic": bool(facts.graph_ok) if facts else False,
            "order": list(facts.topo_order) if facts else [],
        },
        "consent": (
            consent_card_json(report.manifest, report.marks)
            if report.manifest is not None and report.marks is not None
            else None
        ),
        "flows": [f.to_json() for f in getattr(facts, "flows", ())] if facts else [],
        "diagnostics": [d.to_json() for d in report.diagnostics],
    }


def _largest_value(ir: Any) -> int | None:
    """The static worst case of the largest value (SPEC §16), None: only the run bounds it."""
    if ir is None:
        return None
    from forgec.passes.value_size import largest_value_bound

    return largest_value_bound(ir)


def _value_limit() -> int:
    from forgec.runtime.limits import VALUE_LIMIT

    return VALUE_LIMIT


def ui_card(ui: dict[str, Any], output: Any) -> dict[str, Any]:
    """A run's summary card: the tool's `ui` title, then each label with the value its path
    finds in the output ("—" when the path finds nothing), values shown as templates show
    them (strings as they are, the rest as compact JSON)."""
    from forgec.runtime.values import MISSING, render, resolve

    values = []
    for entry in ui.get("values", []):
        segments = entry.get("segments")
        value = resolve({"$": output}, ["$", *segments]) if segments else MISSING
        values.append(
            {"label": entry.get("label"), "value": "—" if value is MISSING else render(value)}
        )
    return {"title": ui.get("title") or "", "values": values}
