"""`forgec compile SRC.forge [-o OUT] [--target]`: DSL → canonical `.talostool`; refuses on errors.

The tool is checked in full against `--target` (default `talos`; a tool that calls Talon host
tools needs `--target talon`). Errors are printed as `check` prints them and nothing is written;
warnings are printed and the manifest is still written.
"""

from __future__ import annotations

import argparse
import sys

from forgec.commands.common import add_target, target_of


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "compile",
        help="compile a .forge file to a canonical .talostool manifest",
        description="Compile .forge text to the canonical .talostool manifest (refuses on errors).",
    )
    p.add_argument("source", metavar="SRC", help=".forge file to compile (- for stdin)")
    p.add_argument("-o", "--output", metavar="OUT", help="write here instead of standard output")
    add_target(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from forgec.api import check, is_forge_source
    from forgec.commands import EXIT_ERRORS, EXIT_OK
    from forgec.commands.common import print_report, read_path, write_text
    from forgec.frontend.canonical import dumps_canonical

    data, path = read_path(args.source)
    report = check(data, path=path or "<stdin>.forge", target=target_of(args, path))
    if report.diagnostics:
        print_report(report)
    if not report.ok or report.manifest is None:
        count = len(report.errors)
        print(f"forgec: not compiled: {count} error(s)", file=sys.stderr)
        return EXIT_ERRORS
    if is_forge_source(data, path):
        from forgec.commands.fmt import warn_dropped_comments
        from forgec.frontend.dsl_trivia import comment_texts

        text = data.decode("utf-8", errors="replace")
        warn_dropped_comments(args.source, len(comment_texts(text)))
    write_text(args.output, dumps_canonical(report.manifest))
    return EXIT_OK
