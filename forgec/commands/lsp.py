"""`forgec lsp`: the language server for `.forge` and `.talostool`, over stdio."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    from forgec.commands.mcp import seconds

    p = subparsers.add_parser(
        "lsp",
        help="run the language server (stdio) for editors",
        description="The language server for .forge and .talostool files, over standard "
        "input/output.",
    )
    p.add_argument(
        "--stdio",
        action="store_true",
        help="talk over standard input/output (the default and only transport; editors pass it)",
    )
    p.add_argument(
        "--check-budget",
        metavar="SECONDS",
        type=seconds,
        default=None,
        help="how long a document's check may take before it is reported as "
        "FORGEC_CHECK_BUDGET (default 5; also the `checkBudget` setting)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from forgec.commands import UsageError

    try:
        from forgec.lsp.server import main
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] in ("pygls", "lsprotocol"):
            raise UsageError(
                "forgec lsp needs the language server: pip install 'forgec[lsp]'"
            ) from None
        raise
    from forgec import __version__
    from forgec.commands.common import serve_in_foreground

    serve_in_foreground(
        f"forgec lsp {__version__}: language server for .forge and .talostool on stdio "
        "(an editor starts it; Ctrl-C ends it)"
    )
    main(args.check_budget)
    return 0
