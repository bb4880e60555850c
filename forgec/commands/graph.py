"""`forgec graph PATH [--format mermaid|dot] [--target]`: the flow as a picture.

Capability steps show their power and risk from the target's catalog; nodes the entry cannot
reach are grey. A flow with errors is still drawn as far as it goes (the errors go to stderr).
"""

from __future__ import annotations

import argparse
import sys

from forgec.commands.common import add_format, add_target, target_of


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "graph",
        help="draw a tool's flow (Mermaid or Graphviz DOT)",
        description="Draw a tool's flow as a Mermaid flowchart or a Graphviz digraph.",
    )
    p.add_argument("path", metavar="PATH", help=".forge or .talostool file (- for stdin)")
    add_format(p, "mermaid", "dot")
    add_target(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from forgec.api import load
    from forgec.catalog import get_catalog
    from forgec.commands import EXIT_ERRORS, EXIT_OK
    from forgec.commands.common import print_diagnostics, read_path, write_text
    from forgec.render.graph import to_dot, to_mermaid

    data, path = read_path(args.path)
    loaded = load(data, path=path)
    if loaded.diagnostics and loaded.value is None:
        print_diagnostics(loaded.diagnostics, path=path, source=loaded.source_map.text)
        return EXIT_ERRORS
    if not isinstance(loaded.value, dict):  # `null`, a number, a list: nothing to draw
        print(f"forgec: {args.path}: a manifest is a JSON object; nothing to draw", file=sys.stderr)
        return EXIT_ERRORS
    catalog = get_catalog(target_of(args, path))
    draw = to_dot if args.format == "dot" else to_mermaid
    # the flow edges need the checked flow; a flow with errors is drawn without them
    from forgec.api import check

    report = check(data, path=path, target=target_of(args, path))
    flows = getattr(report.facts, "flows", ()) if report.facts is not None else ()
    write_text(None, draw(loaded.value, catalog=catalog, flows=flows))
    return EXIT_OK
