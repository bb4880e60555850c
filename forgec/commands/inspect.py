"""`forgec inspect PATH [--format text|json]`: marks, worst case, graph facts, consent card."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from forgec.commands.common import add_format, add_target, target_of


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = subparsers.add_parser(
        "inspect",
        help="show a tool's marks, worst case and consent card",
        description="Show what a tool may do: marks, worst-case transitions, graph facts and "
        "the consent card a person would see.",
    )
    p.add_argument("path", metavar="PATH")
    add_target(p)
    add_format(p, "text", "json")
    p.set_defaults(handler=run)


def inspect_json(report: Any) -> dict[str, Any]:
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
    out: dict[str, Any] = {
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
    return out


def _largest_value(ir: Any) -> int | None:
    """The static worst case of the largest value (SPEC §16), None: only the run bounds it."""
    if ir is None:
        return None
    from forgec.passes.value_size import largest_value_bound

    return largest_value_bound(ir)


def _value_limit() -> int:
    from forgec.runtime.limits import VALUE_LIMIT

    return VALUE_LIMIT


def inspect_text(report: Any) -> str:
    from forgec.render.consent import render_consent_card
    from forgec.render.safe import safe_text

    data = inspect_json(report)
    marks = data["marks"] or {}
    lines: list[str] = []
    if report.manifest is not None and report.marks is not None:
        lines += [*render_consent_card(report.manifest, report.marks).split("\n"), ""]
    lines.append("Marks")
    lines.append(f"  powers       {', '.join(marks.get('powers', [])) or '-'}")
    lines.append(f"  risk         {marks.get('risk', '-')}")
    lines.append(f"  always asks  {'yes' if marks.get('alwaysAsks') else 'no'}")
    lines.append(f"  labels       {', '.join(marks.get('labels', [])) or '-'}")
    lines.append(f"  network      {', '.join(marks.get('network', [])) or '-'}")
    lines.append(f"  credentials  {', '.join(marks.get('credentials', [])) or '-'}")
    model = marks.get("model")
    if model:
        lines.append(
            f"  model        {model.get('privacy') or 'any'}, effort "
            f"{model.get('reasoningEffort') or 'default'}, {model.get('steps')} step(s)"
        )
    t = data["transitions"]
    lines.append("")
    lines.append("Transitions")
    lines.append(f"  worst case   {t['worstCase']} of {t['limit']} allowed")
    if t["worstCasePath"]:
        lines.append(f"  longest path {' -> '.join(t['worstCasePath'])}")
    largest = data["values"]["largestBytes"]
    lines.append(
        f"  largest value {largest:,} bytes at most"
        if largest is not None
        else f"  largest value bounded at run time: {data['values']['limit'] // 1024} KiB"
    )
    g = data["graph"]
    lines.append("")
    lines.append(f"Graph (entry {g['entry']}, {'acyclic' if g['acyclic'] else 'not well formed'})")
    for n in g["nodes"]:
        indent = "    " if n["loop"] else "  "
        flag = "" if n["reachable"] else "  (unreachable)"
        extra = f" {n['capability']}" if "capability" in n else ""
        lines.append(f"{indent}{n['id']:<24} {n['type']}{extra}{flag}")
    if data["flows"]:
        lines.append("")
        lines.append("Flows (source -> sink at node.argument, via, path)")
        for f in data["flows"]:
            lines.append(
                f"  {f['source']} -> {f['sink']} at {f['node']}.{f['argument']}, {f['via']}, "
                f"{' -> '.join(f['path'])}"
            )
    errors = [d for d in report.diagnostics if d.is_error]
    if errors:
        lines.append("")
        lines.append(f"{len(errors)} error(s): run `forgec check {report.path}` for details")
    # ids, capabilities and labels come from the file, which may not have passed the checker:
    # each entry is one line (the card's lines are already safe: escaping them changes nothing)
    return "\n".join(safe_text(line) for line in lines) + "\n"


def run(args: argparse.Namespace) -> int:
    from forgec.api import check
    from forgec.commands import EXIT_ERRORS, EXIT_OK
    from forgec.commands.common import read_source

    data = read_source(args.path)
    path = None if args.path == "-" else args.path
    target = target_of(args, args.path)
    report = check(data, path=path, target=target)
    if not report.ok:
        _say_it_does_not_check(report, data, path, target, args.path)
    if args.format == "json":
        from forgec.runtime.jsontext import dumps_text

        sys.stdout.write(dumps_text(inspect_json(report), indent=True) + "\n")
    else:
        sys.stdout.write(inspect_text(report))
    return EXIT_OK if report.ok else EXIT_ERRORS


def _say_it_does_not_check(
    report: Any, data: bytes, path: str | None, target: str, name: str
) -> None:
    """On standard error: the card of a tool with errors is not what it would be (a Talon tool
    read under `talos` shows its host-tool steps as unknown, so R1 for an R4 tool)."""
    from forgec.api import check
    from forgec.catalog import TARGETS

    count = len(report.errors)
    line = f"forgec: {name}: does not check under --target {target} ({count} error(s)); the card and marks above are incomplete"
    others = [t for t in TARGETS if t != target and check(data, path=path, target=t).ok]
    if others:
        line += f"; it checks under --target {others[0]} (or set `target` in [tool.forgec])"
    print(line, file=sys.stderr)
