"""`forgec tools install|list|versions|show|enable|disable|rollback|run`: the tool store (§9).

A person's side of the Tool Forge: import a tool (checked, stored off), see what is installed,
read a version's consent card, turn it on (asking consent when needed, and saying exactly what
grew since the version they agreed to), turn it off, roll back, and run the current version.

Exit status: 0 done; 1 the input has errors, a refusal (consent not given, nothing to roll back
to, tool off) or a failed run; 2 bad usage, an unreadable file, an unknown tool or a store file
that cannot be used.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from forgec.commands.common import add_format, add_target, emit_json
from forgec.render.safe import safe_text  # stored rows are data: every value printed is escaped


def _store_options(p: argparse.ArgumentParser, *formats: str) -> None:
    p.add_argument(
        "--store",
        metavar="FILE",
        default=None,
        help="the tool store (default: tools.db in the user data directory)",
    )
    add_format(p, *(formats or ("text", "json")))


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = subparsers.add_parser(
        "tools",
        help="install, list, turn on/off, roll back and run stored tools",
        description="The installed-tools store: every version kept, off until turned on.",
    )
    sub = p.add_subparsers(dest="tools_command", metavar="ACTION", parser_class=type(p))
    p.set_defaults(handler=lambda args: _usage(p))

    inst = sub.add_parser("install", help="check a tool and store it as a new version (off)")
    inst.add_argument("path", metavar="FILE", help=".talostool or .forge file (- for stdin)")
    add_target(inst)
    _store_options(inst)
    inst.set_defaults(handler=cmd_install)

    lst = sub.add_parser("list", help="every tool: current version, on/off, risk, powers")
    _store_options(lst)
    lst.set_defaults(handler=cmd_list)

    for name, helptext, handler in (
        ("versions", "every stored version of a tool", "cmd_versions"),
        ("show", "the consent card of a tool's current version", "cmd_show"),
        ("enable", "turn a tool on (asks consent when needed)", "cmd_enable"),
        ("disable", "turn a tool off", "cmd_disable"),
        ("rollback", "make the previous version current and turn the tool off", "cmd_rollback"),
    ):
        sp = sub.add_parser(name, help=helptext)
        sp.add_argument("tool", metavar="ID", help="the tool id, or dynamic:<id>")
        _store_options(sp)
        if name == "show":
            sp.add_argument("--version", dest="tool_version", type=int, default=None)
        if name == "enable":
            sp.add_argument("--yes", action="store_true", help="consent without asking")
        sp.set_defaults(handler=globals()[handler])

    run = sub.add_parser("run", help="run the current version of an enabled tool")
    run.add_argument("tool", metavar="ID", help="the tool id, or dynamic:<id>")
    _store_options(run)
    _add_run_options(run)
    run.set_defaults(handler=cmd_run)


def _add_run_options(p: argparse.ArgumentParser) -> None:
    """The options of `forgec run` (SPEC §10), so a stored tool runs exactly like a file."""
    from forgec.commands.common import add_host_options

    p.add_argument("--input", default=None, metavar="JSON|@FILE", help="the tool's input")
    p.add_argument("--yes", action="store_true", help="consent without asking")
    add_host_options(p)


def _usage(p: argparse.ArgumentParser) -> int:
    p.print_help(sys.stderr)
    return 2


# -- helpers -----------------------------------------------------------------------------------


def _open(args: argparse.Namespace) -> Any:
    from forgec.cli import UsageError
    from forgec.store import Store, StoreError

    try:
        return Store(args.store)
    except StoreError as exc:
        raise UsageError(str(exc)) from None


def _fail(message: str, code: int = 1) -> int:
    print(f"forgec: {safe_text(message)}", file=sys.stderr)
    return code


def _guard(fn: Any) -> Any:
    """Store refusals become one line on stderr: unknown tool → 2, any other refusal → 1."""

    def wrapped(args: argparse.Namespace) -> int:
        from forgec.cli import UsageError
        from forgec.store import StoreError, ToolNotFound

        try:
            return int(fn(args))
        except ToolNotFound as exc:
            raise UsageError(str(exc)) from None
        except StoreError as exc:
            return _fail(f"error: {exc}")

    wrapped.__name__ = fn.__name__
    wrapped.__doc__ = fn.__doc__
    return wrapped


# -- actions -----------------------------------------------------------------------------------


@_guard
def cmd_install(args: argparse.Namespace) -> int:
    from forgec.commands.common import read_path

    data, path = read_path(args.path)
    with _open(args) as store:
        result = store.install(data, path=path, target=args.target)
    if args.format == "json":
        emit_json(result.to_json())
    else:
        from forgec.render.text import render_report, use_color

        if result.report.diagnostics:
            print(render_report(result.report, color=use_color(sys.stdout)) + "\n")
        if result.installed:
            tool_id, version = result.installed
            print(
                f"installed dynamic:{tool_id} v{version} (off); turn it on with "
                f"`forgec tools enable {tool_id}`"
            )
        else:
            errors = sum(1 for d in result.report.diagnostics if d.is_error)
            print(f"not installed: {errors} error{'s' if errors != 1 else ''}", file=sys.stderr)
    return 0 if result.installed else 1


@_guard
def cmd_list(args: argparse.Namespace) -> int:
    with _open(args) as store:
        tools = store.tools()
    if args.format == "json":
        emit_json([t.to_json() for t in tools])
        return 0
    if not tools:
        print("no tools installed")
        return 0
    rows = [("NAME", "VERSION", "STATE", "RISK", "POWERS")]
    rows += [
        (
            t.name,
            f"v{t.version}"
            + (f" (latest v{t.latest_version})" if t.latest_version != t.version else ""),
            "on" if t.enabled else "off",
            t.risk,
            ", ".join(t.powers) or "-",
        )
        for t in tools
    ]
    # a stored row is data (it may have been changed outside forgec): each cell is escaped
    rows = [(safe_text(a), safe_text(b), c, safe_text(d), safe_text(e)) for a, b, c, d, e in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    return 0


@_guard
def cmd_versions(args: argparse.Namespace) -> int:
    with _open(args) as store:
        name = store.tool(args.tool).name
        versions = store.versions(args.tool)
    if args.format == "json":
        emit_json([v.to_json() for v in versions])
        return 0
    print(f"{safe_text(name)}:")
    for v in reversed(versions):
        parent = "-" if v.parent_version is None else f"v{v.parent_version}"
        mark = "*" if v.current else " "
        consent = v.consent or "no consent"
        line = (
            f" {mark} v{v.version}  parent {parent}  {v.hash[:19]}…  "
            f"installed {v.installed_at}  {consent}"
        )
        print(safe_text(line))
    print("(* current)")
    return 0


def _show_json(stored: Any, status: Any) -> dict[str, Any]:
    from forgec.render.consent import consent_card_json

    return {
        "card": consent_card_json(stored.manifest, stored.marks),
        "version": stored.version,
        "current": stored.current,
        "enabled": stored.enabled,
        "hash": stored.hash,
        "target": stored.target,
        "consent": status.to_json(),
    }


def _growth_lines(status: Any) -> list[str]:
    words = {"powers": "new powers", "risk": "risk", "network": "new hosts", "labels": "new labels"}
    return [safe_text(f"  {words.get(k, k)}: {', '.join(v)}") for k, v in status.growth.items()]


@_guard
def cmd_show(args: argparse.Namespace) -> int:
    from forgec.render.consent import render_consent_card

    with _open(args) as store:
        stored = store.get(args.tool, args.tool_version)
        status = store.consent_status(args.tool, stored.version)
    if args.format == "json":
        emit_json(_show_json(stored, status))
        return 0
    print(render_consent_card(stored.manifest, stored.marks))
    state = "on" if stored.enabled else "off"
    where = "current" if stored.current else "not current"
    print(safe_text(f"version {stored.version} ({where}, {state}), {stored.hash}"))
    if status.always_asks:
        print("consent: asked before every run (R4), never remembered")
    elif status.needed:
        print("consent: needed before it can be turned on")
        lines = _growth_lines(status)
        if status.reason == "grown" and lines:
            print(f"  more than version {status.basis}, which you agreed to:")
            print("\n".join("  " + line for line in lines))
    else:
        print(f"consent: given (covers version {status.basis})")
    return 0


def _ask(question: str) -> bool:
    # the prompt goes to stderr, like the card, so stdout stays the command's output
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in {"y", "yes"}


@_guard
def cmd_enable(args: argparse.Namespace) -> int:
    from forgec.render.consent import render_consent_card

    with _open(args) as store:
        stored = store.get(args.tool)
        status = store.consent_status(stored.tool_id)
        consent = bool(args.yes)
        if status.needed:
            # what the person is agreeing to goes to stderr so --format json stays parseable
            out = sys.stderr
            print(render_consent_card(stored.manifest, stored.marks), file=out)
            if status.reason == "grown":
                print(
                    f"{stored.name} v{stored.version} may do more than v{status.basis}, "
                    "which you agreed to:",
                    file=out,
                )
                print("\n".join(_growth_lines(status)), file=out)
            elif status.reason == "always":
                print("This tool is R4: it will also ask before every run.", file=out)
                if status.growth:
                    print("\n".join(_growth_lines(status)), file=out)
            if not consent:
                if sys.stdin.isatty() and sys.stderr.isatty():
                    consent = _ask(f"Turn on {stored.name} v{stored.version}?")
                if not consent:
                    return _fail(
                        f"{stored.name} was not turned on: consent not given"
                        + ("" if sys.stdin.isatty() else " (pass --yes to consent)")
                    )
        status = store.enable(stored.tool_id, consent=consent)
    if args.format == "json":
        emit_json(
            {
                "name": stored.name,
                "version": stored.version,
                "enabled": True,
                "consent": status.to_json(),
            }
        )
    else:
        kept = (
            f" (consent for v{status.basis} kept: nothing grew)"
            if not status.needed and status.basis not in (None, stored.version)
            else ""
        )
        print(f"{stored.name} v{stored.version} is on{kept}")
    return 0


@_guard
def cmd_disable(args: argparse.Namespace) -> int:
    with _open(args) as store:
        store.disable(args.tool)
        summary = store.tool(args.tool)
    if args.format == "json":
        emit_json({"name": summary.name, "version": summary.version, "enabled": False})
    else:
        print(f"{summary.name} v{summary.version} is off")
    return 0


@_guard
def cmd_rollback(args: argparse.Namespace) -> int:
    with _open(args) as store:
        version = store.rollback(args.tool)
        summary = store.tool(args.tool)
    if args.format == "json":
        emit_json({"name": summary.name, "version": version, "enabled": False})
    else:
        print(
            f"{summary.name}: v{version} is current again, and the tool is off; turn it on "
            f"with `forgec tools enable {summary.id}`"
        )
    return 0


@_guard
def cmd_run(args: argparse.Namespace) -> int:
    from forgec.store.running import run_stored_cli

    with _open(args) as store:
        stored = store.get(args.tool)
        if not stored.enabled:
            return _fail(
                f"{stored.name} is off; turn it on with `forgec tools enable {stored.tool_id}`"
            )
        remembered = store.has_consent(stored.tool_id)
    return run_stored_cli(stored, args, remembered_consent=remembered)
