"""`forgec lsp`: the language server for `.forge` and `.talostool`, over stdio."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = subparsers.add_parser("lsp", help="run the language server (stdio) for editors")
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
    main()
    return 0
