"""`forgec check PATH... [--target] [--format text|json|sarif]`: every diagnostic of every file.

A PATH may be a folder: its `.forge` and `.talostool` files are checked, recursively, minus
what `[tool.forgec] exclude` leaves out; each file's target is `--target`, else what its
settings say (`forgec.frontend.settings`)."""

from __future__ import annotations

import argparse
import gc
import sys

from forgec.commands.common import add_force_exclude, add_format, add_target, target_of


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = subparsers.add_parser(
        "check",
        help="check tools and list every problem",
        description="Check .talostool manifests and .forge files; list every problem.",
    )
    p.add_argument(
        "paths", nargs="+", metavar="PATH", help="files or folders to check (- for stdin)"
    )
    add_target(p)
    add_force_exclude(p)
    add_format(p, "text", "json", "sarif")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from forgec.api import check
    from forgec.commands import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, UsageError
    from forgec.commands.common import expand_paths, read_source

    reports = []
    unreadable = 0
    for index, path in enumerate(expand_paths(args.paths, force_exclude=args.force_exclude)):
        if index == 1:
            # a one-file check runs without the cyclic collector (`forgec.cli.entry`); a walk of
            # many files collects as usual, so garbage never grows with the number of files
            gc.enable()
        try:
            data = read_source(path)
        except UsageError as exc:
            print(f"forgec: error: {exc}", file=sys.stderr)
            unreadable += 1
            continue
        reports.append(
            check(data, path=None if path == "-" else path, target=target_of(args, path))
        )

    if args.format == "json":
        from forgec.answers import check_json
        from forgec.runtime.jsontext import dumps_text

        sys.stdout.write(dumps_text(check_json(reports), indent=True) + "\n")
    elif args.format == "sarif":
        from forgec.render.sarif import to_sarif
        from forgec.runtime.jsontext import dumps_text

        sys.stdout.write(dumps_text(to_sarif(reports), indent=True) + "\n")
    else:
        from forgec.render.text import render_report, summary_line, use_color

        color = use_color(sys.stdout)
        for report in reports:
            if report.diagnostics:
                sys.stdout.write(render_report(report, color=color) + "\n\n")
        print(summary_line(list(reports), unreadable=unreadable), file=sys.stderr)

    if unreadable:
        return EXIT_USAGE
    return EXIT_ERRORS if any(not r.ok for r in reports) else EXIT_OK
