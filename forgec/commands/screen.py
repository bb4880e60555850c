"""`forgec screen [--store FILE] [--host-config FILE] [--port N] [--no-open]`: the Tool Forge
screen (SPEC §18) on 127.0.0.1, until Ctrl-C or SIGTERM. See docs/screen.md."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = subparsers.add_parser(
        "screen",
        help="the Tool Forge screen: import, review and consent in a browser",
        description="Serve the Tool Forge screen on 127.0.0.1: import a tool, read its card, "
        "compare versions, turn it on, run it. Prints the launch URL as its first line.",
    )
    p.add_argument(
        "--store",
        metavar="FILE",
        default=None,
        help="the tool store (default: tools.db in the user data directory)",
    )
    p.add_argument("--host-config", default=None, metavar="FILE", help="TOML host config for runs")
    p.add_argument("--port", type=int, default=0, metavar="N", help="port (default 0: a free one)")
    p.add_argument("--no-open", action="store_true", help="do not open a browser")
    p.add_argument(
        "--check-budget",
        metavar="SECONDS",
        type=float,
        default=5.0,
        help="how long one check of an imported file may take (default: 5)",
    )
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from forgec.commands import UsageError
    from forgec.commands.common import new_store
    from forgec.screen.server import serve
    from forgec.store import StoreError

    if not 0 < args.check_budget <= 3600:
        raise UsageError(f"--check-budget {args.check_budget:g}: not between 0 and 3600 seconds")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: not a port (0 to 65535)")
    store = Path(args.store) if args.store else None
    host_config = Path(args.host_config) if args.host_config else None
    try:
        # a store it cannot use: one line now, not on the first page; a new one said aloud
        new_store(store)
    except StoreError as exc:
        raise UsageError(str(exc)) from None
    if host_config is not None:
        from forgec.host import ConfigError, load_config

        try:
            load_config(host_config)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
    try:
        return serve(
            store=store,
            host_config=host_config,
            port=args.port,
            open_browser=not args.no_open,
            check_budget=args.check_budget,
        )
    except OSError as exc:
        raise UsageError(f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror or exc}") from None
