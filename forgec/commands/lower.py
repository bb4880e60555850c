"""`forgec lower PATH [--target] [--disasm]`: the Program (JSON), or a readable listing."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from forgec.commands.common import add_target, target_of


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "lower",
        help="lower a tool to its linear Program",
        description="Check PATH, lower it and print the Program (forgec.program.v1) as JSON, "
        "or with --disasm one instruction per line with its node and source line.",
    )
    parser.add_argument("path", metavar="PATH", help=".talostool or .forge file (- for stdin)")
    add_target(parser)
    parser.add_argument("--disasm", action="store_true", help="print a readable listing")
    parser.set_defaults(handler=run)


def checked_program(args: argparse.Namespace) -> tuple[Any, Any] | None:
    """(report, Program) for PATH, or None after printing its errors to standard error."""
    from forgec.api import check
    from forgec.backend import lower_report
    from forgec.commands.common import print_report, read_path

    data, path = read_path(args.path)
    report = check(data, path=path, target=target_of(args, path))
    if not report.ok:
        print_report(report)
        sys.stderr.write(f"forgec: {args.path}: not lowered, the tool has errors\n")
        return None
    return report, lower_report(report)


def run(args: argparse.Namespace) -> int:
    from forgec.commands import EXIT_ERRORS, EXIT_OK

    got = checked_program(args)
    if got is None:
        return EXIT_ERRORS
    _report, program = got
    if args.disasm:
        from forgec.backend import disassemble
        from forgec.render.safe import safe_text

        # one instruction a line; constants are JSON-quoted, which leaves bidi and C1 raw
        sys.stdout.write(safe_text(disassemble(program), keep_newlines=True))
    else:
        sys.stdout.write(program.to_bytes(indent=True).decode("utf-8") + "\n")
    return EXIT_OK
