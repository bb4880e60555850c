"""`forgec mcp serve`: the MCP server over stdio (SPEC §13); see `forgec.mcp.server`."""

from __future__ import annotations

import argparse
import sys

from forgec.commands.common import LABELS, with_labels


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = subparsers.add_parser(
        "mcp",
        help="serve the host tools and the enabled forged tools over MCP",
        description="The Model Context Protocol face of the reference host.",
    )
    sub = p.add_subparsers(dest="mcp_command", metavar="ACTION", parser_class=type(p))
    p.set_defaults(handler=lambda args: (p.print_help(), 2)[1])
    s = sub.add_parser(
        "serve",
        help="run the MCP server on standard input/output",
        description="Serve the host tools, every enabled forged tool (dynamic_<id>) and "
        "tool_create over stdio — each only when the persona's labels grant it.",
    )
    s.add_argument("--store", metavar="FILE", default=None, help="the tool store")
    s.add_argument(
        "--persona-labels",
        metavar="L,...",
        default=None,
        help="capability labels granted to the caller (default: none — deny by default); "
        "the labels: " + LABELS,
    )
    s.add_argument("--host-config", metavar="FILE", default=None, help="the TOML host config")
    s.add_argument("--db", metavar="FILE", default=None, help="the reference host's database")
    s.add_argument(
        "--consent-policy",
        metavar="FILE",
        default=None,
        help="TOML file of R4 tools allowed to run without asking (see docs/mcp.md)",
    )
    s.add_argument(
        "--templates",
        metavar="DIR",
        default=None,
        help="folder holding tool-instructions/<name>.md (default: the instructions shipped "
        "with forgec for the host tools)",
    )
    s.add_argument(
        "--session-labels",
        choices=("on", "off"),
        default="on",
        help="SPEC §21: carry the labels of every result this session returned into its "
        "later calls, under the host config's [flows] deny rules (default on)",
    )
    s.add_argument(
        "--check-budget",
        metavar="SECONDS",
        type=seconds,
        default=5.0,
        help="how long a tool_create check may take before it is refused as "
        "FORGEC_CHECK_BUDGET (default 5)",
    )
    with_labels(s, label_words)
    s.set_defaults(handler=serve)


def seconds(text: str) -> float:
    """A check budget in seconds: a positive number (argparse turns a ValueError into a usage
    error of one line)."""
    value = float(text)
    if not 0 < value <= 3600:
        raise ValueError(text)
    return value


def known_label(label: str) -> bool:
    """A label some tool can need: a capability row's (a channel's too), or `tool.create`."""
    from forgec.ir.capabilities import known_persona_label

    return known_persona_label(label)


def label_words() -> str:
    """Every label a tool can need, for help and warnings (from the rows)."""
    from forgec.ir.capabilities import TOOL_CREATE_LABEL, label_list

    return ", ".join([*label_list(), TOOL_CREATE_LABEL])


def serve(args: argparse.Namespace) -> int:
    from pathlib import Path

    import anyio

    from forgec.commands import UsageError
    from forgec.commands.common import new_store
    from forgec.mcp.policy import PolicyError, load_policy
    from forgec.mcp.server import ServeOptions, open_reference_host, serve_stdio
    from forgec.store import StoreError

    try:
        policy = load_policy(args.consent_policy)
    except PolicyError as exc:
        raise UsageError(str(exc)) from None
    labels = tuple(sorted({x.strip() for x in (args.persona_labels or "").split(",") if x.strip()}))
    for label in labels:
        if not known_label(label):
            print(
                f"forgec mcp: warning: persona label {label!r} is not one any tool needs "
                f"(a typo grants nothing; known: {label_words()})",
                file=sys.stderr,
            )
    if args.templates and not (Path(args.templates) / "tool-instructions").is_dir():
        print(
            f"forgec mcp: warning: {args.templates} has no tool-instructions/ folder; "
            "no instructions will be sent",
            file=sys.stderr,
        )
    options = ServeOptions(
        store=Path(args.store) if args.store else None,
        labels=labels,
        host_config=Path(args.host_config) if args.host_config else None,
        db=Path(args.db) if args.db else None,
        policy=policy,
        templates=Path(args.templates) if args.templates else None,
        check_budget=args.check_budget,
        session_labels=args.session_labels == "on",
    )
    from forgec.commands.common import refuse_typos
    from forgec.host import ConfigError, load_config

    try:
        # refuse a foreign or damaged store before serving (a new one is said aloud, and
        # made only in a folder that exists), and a policy naming a tool it does not hold
        new_store(args.store)
        config = load_config(args.host_config) if args.host_config else None
        refuse_typos(policy, args.store, config.personas_dir if config is not None else None)
    except (StoreError, ConfigError) as exc:
        raise UsageError(str(exc)) from None

    try:
        # a bad host config or a database the host cannot use is refused now, in one line,
        # not on every call
        open_reference_host(options).close()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    from forgec.commands.common import serve_in_foreground
    from forgec.ir.text_rules import escape_unsafe
    from forgec.mcp.reach import enabled_forged, persona_reach
    from forgec.store import default_store_path

    # SPEC §21: the rule of two, for the labels this server grants
    card = persona_reach(
        "this server's persona",
        labels,
        enabled_forged(Path(args.store) if args.store else default_store_path()),
        config.flow_deny if config is not None else (),
        config.allow_hosts if config is not None else (),
    )
    if card["warning"]:
        print(f"forgec mcp: warning: {escape_unsafe(card['warning'])}", file=sys.stderr)
    granted = ", ".join(labels) if labels else "none"
    serve_in_foreground(
        f"forgec mcp serve: MCP server on stdio, store {store_shown(args.store)}, "
        f"persona labels: {granted} (an MCP client starts it; Ctrl-C ends it)"
    )
    anyio.run(serve_stdio, options)
    return 0


def store_shown(path: str | None) -> str:
    from forgec.ir.text_rules import escape_unsafe

    if path:
        return escape_unsafe(path)
    try:
        from forgec.store import default_store_path

        return escape_unsafe(str(default_store_path()))
    except Exception:  # the banner is informational: never a reason not to serve
        return "(default)"
