"""`forgec fmt PATH [--to forge|talostool] [--write|--check]`: canonical text of either form.

Printing defaults to `.forge` text whatever the input (issue 3: "canonical `.forge` text from
either form"), so `forgec fmt x.talostool` is the decompiler; `--to talostool` prints the
canonical manifest instead. `--write` and `--check` keep the file's own form (SPEC §10). Formatting needs only a readable document, not a
valid tool, but it refuses a source with syntax-level problems (bad syntax, duplicate keys):
rewriting those would silently pick one reading.
"""

from __future__ import annotations

import argparse
import sys

from forgec.commands.common import add_force_exclude


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "fmt",
        help="print the canonical text of a .forge or .talostool file",
        description="Print the canonical .forge or .talostool text of a tool "
        "(.talostool → .forge decompiles).",
    )
    p.add_argument(
        "paths",
        metavar="PATH",
        nargs="+",
        help="file to format (- for stdin); several, or folders, with --write or --check "
        "(as pre-commit passes them)",
    )
    p.add_argument(
        "--to",
        choices=("forge", "talostool"),
        help="output form (default: forge when printing; the file's own form with --write/--check)",
    )
    add_force_exclude(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite PATH in place")
    mode.add_argument(
        "--check", action="store_true", help="exit 1 when PATH is not in canonical form"
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from forgec.commands import UsageError
    from forgec.commands.common import expand_paths

    paths = expand_paths(args.paths, force_exclude=args.force_exclude)
    if len(paths) > 1 and not (args.write or args.check):
        raise UsageError("printing takes one file; pass --write or --check for several")
    status = 0
    for path in paths:
        status = max(status, _format_one(args, path))
    return status


def _format_one(args: argparse.Namespace, arg_path: str) -> int:
    from forgec.api import is_forge_source, load
    from forgec.commands import EXIT_ERRORS, EXIT_OK, UsageError
    from forgec.commands.common import print_diagnostics, read_path, read_source, write_text
    from forgec.frontend.canonical import dumps_canonical
    from forgec.frontend.dsl_format import FormatError, format_forge, same_text
    from forgec.frontend.dsl_trivia import trivia_of
    from forgec.render.text import use_color

    data, path = read_path(arg_path)
    form = "forge" if is_forge_source(data, path) else "talostool"
    to = args.to or (form if args.write or args.check else "forge")
    if (args.write or args.check) and to != form:
        raise UsageError("--write and --check keep the file's own form; drop --to")
    if args.write and path is None:
        raise UsageError("--write needs a file, not standard input")
    loaded = load(data, path=path)
    if loaded.diagnostics:
        print_diagnostics(
            loaded.diagnostics,
            path=path,
            source=loaded.source_map.text,
            color=use_color(sys.stderr),
        )
        print(f"forgec: {arg_path}: not formatted", file=sys.stderr)
        return EXIT_ERRORS
    if not isinstance(loaded.value, dict):  # `null`, a number, a list
        print(f"forgec: {arg_path}: a manifest is a JSON object; not formatted", file=sys.stderr)
        return EXIT_ERRORS
    trivia = trivia_of(loaded.source_map)
    try:
        text = (
            format_forge(loaded.value, trivia) if to == "forge" else dumps_canonical(loaded.value)
        )
    except FormatError as exc:
        print(f"forgec: {arg_path}: cannot write as .forge: {exc}", file=sys.stderr)
        return EXIT_ERRORS
    if to == "talostool" and trivia is not None:
        warn_dropped_comments(arg_path, trivia.count)
    if args.check:
        original = data.decode("utf-8", errors="replace")
        if not same_text(original, text):
            print(f"{arg_path}: not in canonical form (run `forgec fmt --write`)", file=sys.stderr)
            return EXIT_ERRORS
        return EXIT_OK
    if args.write:
        assert path is not None
        if not same_text(read_source(path).decode("utf-8", errors="replace"), text):
            write_text(path, text)
        return EXIT_OK
    write_text(None, text)
    return EXIT_OK


def warn_dropped_comments(name: str, count: int) -> None:
    """A `.forge` → `.talostool` conversion keeps no comment (JSON has none): say so."""
    if count:
        noun = "comment" if count == 1 else "comments"
        print(
            f"forgec: {name}: {count} {noun} not kept (a .talostool has no comments)",
            file=sys.stderr,
        )
