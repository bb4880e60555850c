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
    """The one shape (`forgec.answers`), also what the screen's `/api/inspect` serves."""
    from forgec.answers import inspect_json as shape

    return shape(report)


def inspect_text(report: Any) -> str:
    from forgec.render.consent import render_consent_card
    from forgec.render.safe import safe_text

    data = inspect_json(report)
    marks = data["marks"] or {}
    lines: list[str] = []
    if report.ok and report.manifest is not None and report.marks is not None:
        lines += [*render_consent_card(report.manifest, report.marks).split("\n"), ""]
    lines.append("Marks")
    errors = [d for d in report.diagnostics if d.is_error]
    if errors:
        # a tool that does not check has no marks to show: a Talon tool read under `talos`
        # would show its host-tool steps as unknown, an R4 tool as R1
        lines.append(
            f"  not known: the tool does not check under --target {report.target} "
            f"({len(errors)} error(s))"
        )
        marks = {}
    else:
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
            via = f"{f['via']} (destination)" if f.get("destination") else f["via"]
            lines.append(
                f"  {f['source']} -> {f['sink']} at {f['node']}.{f['argument']}, {via}, "
                f"{' -> '.join(f['path'])}"
            )
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
    line = f"forgec: {name}: does not check under --target {target} ({count} error(s)); it has no card or marks"
    others = [t for t in TARGETS if t != target and check(data, path=path, target=t).ok]
    if others:
        line += f"; it checks under --target {others[0]} (or set `target` in [tool.forgec])"
    print(line, file=sys.stderr)
