"""`forgec tools install|list|versions|show|enable|disable|rollback|run|review|accept|reject|diff`.

A person's side of the Tool Forge (SPEC §9, §14): import a tool (checked, stored off), see what
is installed, read a version's consent card, turn it on (asking consent for every version whose
hash has none, and showing the three-part diff from the version they last agreed to), turn it
off, roll back, run the current version, decide on the versions a model proposed (review,
accept, reject), and compare any two versions (diff).

Exit status: 0 done; 1 the input has errors, a refusal (consent not given, nothing to roll back
to, tool off, a proposal already rejected) or a failed run; 2 bad usage (a `diff` side that is
neither N nor pN included), an unreadable file, an unknown tool, version or proposal, a store
file that cannot be used, or a stored version changed outside forgec or damaged.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from forgec.commands.common import add_format, add_target, emit_json, target_of


def safe_text(text: object) -> str:
    """A stored row is data (a model's text, or changed outside forgec): every value printed
    goes through `forgec.render.safe.safe_text`, imported here so `forgec --help` stays lazy."""
    from forgec.render.safe import safe_text as escape

    return escape(text)


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
            sp.add_argument(
                "--proposal", dest="proposal", type=int, default=None, help="a proposal instead"
            )
        if name == "enable":
            sp.add_argument("--yes", action="store_true", help="consent without asking")
        sp.set_defaults(handler=globals()[handler])

    rev = sub.add_parser("review", help="a model's proposal beside the current version")
    rev.add_argument("tool", metavar="ID", help="the tool id, or dynamic:<id>")
    rev.add_argument(
        "--proposal",
        "--version",
        dest="tool_version",
        metavar="N",
        type=int,
        default=None,
        help="the proposal's number (default: the latest waiting)",
    )
    _store_options(rev)
    rev.set_defaults(handler=cmd_review)
    dif = sub.add_parser(
        "diff", help="what changed between two versions: effects, behaviour step by step, text"
    )
    dif.add_argument("tool", metavar="ID", help="the tool id, or dynamic:<id>")
    dif.add_argument("old", metavar="A", help="the version compared from (N, or pN: proposal N)")
    dif.add_argument("new", metavar="B", help="the version compared to (N, or pN: proposal N)")
    _store_options(dif)
    dif.set_defaults(handler=cmd_diff)
    for name, helptext, handler in (
        ("accept", "make a proposal the next version, current (off)", "cmd_accept"),
        ("reject", "reject a proposal (kept, never current)", "cmd_reject"),
    ):
        sp = sub.add_parser(name, help=helptext)
        sp.add_argument("tool", metavar="ID", help="the tool id, or dynamic:<id>")
        sp.add_argument("tool_version", metavar="N", type=int, help="the proposal's number")
        _store_options(sp)
        sp.set_defaults(handler=globals()[handler])

    rm = sub.add_parser(
        "remove",
        help="delete a tool, or one version of it (also a damaged one)",
        description="Delete every version of a tool, or only --version N. A person's act: it "
        "asks on a terminal (or --yes); the MCP server offers nothing like it.",
    )
    rm.add_argument("tool", metavar="ID", help="the tool id, or dynamic:<id>")
    rm.add_argument("--version", dest="tool_version", type=int, default=None)
    rm.add_argument("--yes", action="store_true", help="remove without asking")
    _store_options(rm)
    rm.set_defaults(handler=cmd_remove)

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


def _open(args: argparse.Namespace, *, creates: bool = False) -> Any:
    """The store of `--store` (or the default one). A `--store` file that does not exist is
    refused unless the command creates by nature (install), and then only in a folder that
    exists: a mistyped path must not become a new, empty store."""
    from forgec.commands import UsageError
    from forgec.store import Store, StoreError

    try:
        return Store(args.store, create="file" if creates else "no")
    except StoreError as exc:
        raise UsageError(str(exc)) from None


def _fail(message: str, code: int = 1) -> int:
    print(f"forgec: {safe_text(message)}", file=sys.stderr)
    return code


def _guard(fn: Any) -> Any:
    """Store refusals become one line on stderr: unknown tool or a changed/damaged stored
    version → 2, any other refusal → 1."""

    def wrapped(args: argparse.Namespace) -> int:
        from forgec.commands import UsageError
        from forgec.store import StoreDamaged, StoreError, ToolNotFound

        try:
            return int(fn(args))
        except (ToolNotFound, StoreDamaged) as exc:
            raise UsageError(safe_text(exc)) from None
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
    tests = _tests_beside(path, target_of(args, path))
    with _open(args, creates=True) as store:
        result = store.install(data, path=path, target=target_of(args, path), tests=tests)
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
            if tests is not None:
                print(f"kept its {len(tests)} test case(s) with it")
        else:
            errors = sum(1 for d in result.report.diagnostics if d.is_error)
            print(f"not installed: {errors} error{'s' if errors != 1 else ''}", file=sys.stderr)
    return 0 if result.installed else 1


def _tests_beside(path: str | None, target: str) -> list[dict[str, Any]] | None:
    """The cases of NAME.tests.toml beside the tool file, as JSON (SPEC §22: kept with the
    version); None without one. A tests file with problems is named on stderr and not kept."""
    if path is None:
        return None
    from pathlib import Path

    tool = Path(path)
    beside = tool.with_name(tool.name.rsplit(".", 1)[0] + ".tests.toml")
    if not beside.is_file():
        return None
    from forgec.testing import load_tests

    try:
        tests = load_tests(beside, target=target)
    except OSError as exc:
        print(f"forgec: {beside}: not kept: {exc}", file=sys.stderr)
        return None
    if not tests.ok:
        print(
            f"forgec: {beside}: not kept: {len(tests.diagnostics)} problem(s); "
            f"`forgec test {beside}` lists them",
            file=sys.stderr,
        )
        return None
    return [case.to_json() for case in tests.cases]


@_guard
def cmd_list(args: argparse.Namespace) -> int:
    problems: list[str] = []
    with _open(args) as store:
        # a changed or damaged tool is named on stderr and listed as damaged; the rest lists
        tools = store.tools(on_problem=problems.append)
        intact = {t.id for t in tools}
        damaged = [(tid, v) for tid, v in store.tool_ids() if tid not in intact]
    for problem in problems:
        print(f"forgec: error: {safe_text(problem)}", file=sys.stderr)
    done = 2 if problems else 0
    if args.format == "json":
        emit_json([t.to_json() for t in tools] + [_damaged_json(tid, v) for tid, v in damaged])
        return done
    if not tools and not damaged:
        print("no tools installed")
        return done
    rows = [("NAME", "VERSION", "STATE", "RISK", "POWERS")]
    rows += [
        (
            t.name,
            f"v{t.version}"
            + (f" (latest v{t.latest_version})" if t.latest_version != t.version else "")
            + (
                f" (proposal {', '.join(str(n) for n in t.proposed)} waiting)" if t.proposed else ""
            ),
            "on" if t.enabled else "off",
            t.risk,
            ", ".join(t.powers) or "-",
        )
        for t in tools
    ]
    rows += [(f"dynamic:{tid}", f"v{v}", "damaged", "-", "-") for tid, v in damaged]
    # a stored row is data (it may have been changed outside forgec): each cell is escaped
    rows = [(safe_text(a), safe_text(b), c, safe_text(d), safe_text(e)) for a, b, c, d, e in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    if any(t.proposed for t in tools):
        print("a model proposed new versions: `forgec tools review ID` to see them")
    for tid, v in damaged:
        print(safe_text(_recovery(tid, v, args.store)))
    return done


def _store_arg(store: str | None) -> str:
    import shlex

    return f" --store {shlex.quote(store)}" if store else ""


def _recovery(tool_id: str, version: int, store: str | None) -> str:
    """How to get out of a damaged row, in one line."""
    where = _store_arg(store)
    back = (
        f"`forgec tools rollback {tool_id}{where}` goes back to the version before; "
        if version > 1
        else ""
    )
    return (
        f"dynamic:{tool_id} v{version} is damaged (changed outside forgec, or unreadable): {back}"
        f"`forgec tools remove {tool_id} --version {version}{where}` deletes it, "
        "and installing the file again restores it"
    )


def _damaged_json(tool_id: str, version: int) -> dict[str, Any]:
    return {"id": tool_id, "name": f"dynamic:{tool_id}", "version": version, "damaged": True}


@_guard
def cmd_remove(args: argparse.Namespace) -> int:
    """Delete a tool or one version: a person at a terminal says yes, or passes --yes."""
    from forgec.store import normalize_id

    tool_id = normalize_id(args.tool)
    what = (
        f"dynamic:{tool_id} v{args.tool_version}"
        if args.tool_version is not None
        else f"dynamic:{tool_id} and every version of it"
    )
    if not args.yes:
        if not sys.stdin.isatty():
            return _fail(f"error: not removing {what}: pass --yes (no terminal to ask)")
        answer = input(f"Remove {safe_text(what)} from the store? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            return _fail("not removed")
    with _open(args) as store:
        gone = store.remove(tool_id, args.tool_version)
    shown = ", ".join(f"v{v}" for v in gone)
    print(safe_text(f"removed dynamic:{tool_id} {shown}"))
    return 0


@_guard
def cmd_versions(args: argparse.Namespace) -> int:
    from forgec.store import normalize_id

    with _open(args) as store:
        name = f"dynamic:{normalize_id(args.tool)}"
        versions = store.versions(args.tool)
    problems = [v.problem for v in versions if v.problem]
    for problem in problems:
        print(f"forgec: error: {safe_text(problem)}", file=sys.stderr)
    done = 2 if problems else 0
    if args.format == "json":
        emit_json([v.to_json() for v in versions])
        return done
    print(f"{safe_text(name)}:")
    for v in reversed(versions):
        parent = "-" if v.parent_version is None else f"v{v.parent_version}"
        mark = "*" if v.current else " "
        consent = v.consent_words
        author = "model" + (f" ({v.author_name})" if v.author_name else "")
        by = author if v.author == "model" else "person"
        state = "" if v.status in ("current", "previous") else f"  {v.status.upper()}"
        damaged = "  CHANGED OUTSIDE FORGEC" if v.problem else ""
        line = (
            f" {mark} {v.label}  parent {parent}  {v.hash[:19]}…  by {by}  "
            f"installed {v.installed_at}  {consent}{state}{damaged}"
        )
        print(safe_text(line))  # a persona's name and a stored row are data
    print("(* current)")
    return done


def _show_json(stored: Any, status: Any) -> dict[str, Any]:
    from forgec.render.consent import consent_card_json

    return {
        "card": consent_card_json(stored.manifest, stored.marks, author=stored.author_words),
        "version": None if stored.proposal is not None else stored.version,
        "proposal": stored.proposal,
        "current": stored.current,
        "enabled": stored.enabled,
        "hash": stored.hash,
        "target": stored.target,
        "author": stored.author,
        "authorName": stored.author_name,
        "status": _status_word(stored),
        "effects": stored.effects,
        "consent": status.to_json(),
    }


def _status_word(stored: Any) -> str:
    if stored.current:
        return "current"
    return stored.status if stored.status in ("proposed", "rejected") else "previous"


def _card(stored: Any) -> str:
    from forgec.render.consent import render_consent_card

    return render_consent_card(
        stored.manifest, stored.marks, author=stored.author_words, which=stored.label
    )


@_guard
def cmd_show(args: argparse.Namespace) -> int:
    with _open(args) as store:
        if args.proposal is not None:
            stored = store.get_proposal(args.tool, args.proposal)
        else:
            stored = store.get(args.tool, args.tool_version)
        status = store.consent_status(args.tool, stored.version)
    if args.format == "json":
        emit_json(_show_json(stored, status))
        return 0
    print(_card(stored))
    state = "on" if stored.enabled else "off"
    where = {"current": "current", "proposed": "proposed by a model, not current"}.get(
        _status_word(stored), f"{_status_word(stored)}, not current"
    )
    what = f"proposal {stored.proposal}" if stored.proposal is not None else "version"
    number = "" if stored.proposal is not None else f" {stored.version}"
    print(safe_text(f"{what}{number} ({where}, {state}), {stored.hash}"))
    if status.always_asks:
        print("consent: asked before every run (R4), never remembered")
    elif status.needed:
        print("consent: needed before it can be turned on (this version has none)")
        if status.basis is not None:
            print(
                f"  you agreed to v{status.basis}; what changed since: "
                f"`forgec tools diff {stored.tool_id} {status.basis} {stored.version}`"
            )
    else:
        print("consent: given for this version (its hash)")
    return 0


def _ask(question: str) -> bool:
    # the prompt goes to stderr, like the card, so stdout stays the command's output
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in {"y", "yes"}


def _consent_diff(store: Any, stored: Any, status: Any) -> dict[str, Any] | None:
    """The diff from the version last consented to, when there is one (else a first consent)."""
    from forgec.store.diff import diff_versions

    if status.basis is None or status.basis == stored.version:
        return None
    return diff_versions(store, stored.tool_id, status.basis, stored.version)


@_guard
def cmd_enable(args: argparse.Namespace) -> int:
    from forgec.render.consent import always_asks_banner
    from forgec.render.diff import render_diff, render_verdict

    diff = None
    with _open(args) as store:
        stored = store.get(args.tool)
        status = store.consent_status(stored.tool_id)
        consent = bool(args.yes)
        if status.needed:
            diff = _consent_diff(store, stored, status)
            # what the person is agreeing to goes to stderr so --format json stays parseable
            out = sys.stderr
            # the verdict first (SPEC §23): what this version can do that the agreed one could not
            if diff is not None and diff.get("verdict"):
                print(render_verdict(diff["verdict"]) + "\n", file=out)
            print(_card(stored), file=out)
            who = safe_text(f"{stored.name} v{stored.version}, written by {stored.author_words}")
            if diff is not None:
                print(f"{who}, has no consent of yours yet.", file=out)
                print(render_diff(diff, verdict=False), file=out)
            elif status.basis == stored.version:  # R4: turned on before, and it asks again
                print(f"You turned {who}, on before; nothing changed since.", file=out)
            else:
                print(
                    f"First consent: {who}; you have agreed to no version of it before, so "
                    "the card above is everything it may do.",
                    file=out,
                )
            banner = always_asks_banner(stored.marks)
            if status.always_asks and banner:
                print(banner, file=out)
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
                "verdict": diff.get("verdict") if diff is not None else None,
                "diff": diff,
            }
        )
    else:
        again = "" if status.needed else " (you agreed to this very version before)"
        print(f"{stored.name} v{stored.version} is on{again}")
    return 0


@_guard
def cmd_review(args: argparse.Namespace) -> int:
    from forgec.render.diff import render_diff, render_verdict
    from forgec.store import StoreError
    from forgec.store.diff import diff_versions

    with _open(args) as store:
        wanted = args.tool_version
        if wanted is None:
            proposals = store.proposals(args.tool)
            if not proposals:
                raise StoreError(f"dynamic:{store.tool(args.tool).id} has no proposed version")
            wanted = proposals[-1]
        proposal = store.get_proposal(args.tool, wanted)
        current = store.get(args.tool)
        status = store.consent_status(args.tool, proposal.version)
        current_latest = store.tool(args.tool).latest_version
        diff = diff_versions(store, proposal.tool_id, current.version, f"p{wanted}")
        from forgec.testing.paired import review_tests

        tests = review_tests(store, current, proposal)
    if args.format == "json":
        emit_json(
            {
                "current": _show_json(current, _shown_only(current)),
                "proposal": _show_json(proposal, status),
                "verdict": diff.get("verdict"),
                "diff": diff,
                "tests": tests,
            }
        )
        return 0
    # the answer first (SPEC §23): what can the proposal do that the current version could not?
    if diff.get("verdict"):
        print(render_verdict(diff["verdict"]))
        print()
    print(f"current: v{current.version} ({'on' if current.enabled else 'off'})")
    print(_card(current))
    print()
    print(f"{proposal.label} ({_status_word(proposal)})")
    print(_card(proposal))
    print()
    print(render_diff(diff, verdict=False))
    print()
    from forgec.testing.paired import paired_lines

    for line in paired_lines(tests, new=proposal.label, old=f"v{current.version}"):
        print(safe_text(line))
    if proposal.status == "proposed":
        print(
            f"accept: `forgec tools accept {proposal.tool_id} {proposal.proposal}` (it becomes "
            f"v{current_latest + 1}, current and off; turning it on asks your consent); "
            f"reject: `forgec tools reject {proposal.tool_id} {proposal.proposal}`"
        )
    return 0


def _which(text: str) -> int | str:
    """`3` (version 3) or `p2` (proposal 2), as `diff_versions` takes them."""
    from forgec.commands import UsageError

    body = text[1:] if text[:1] in ("p", "P") else text
    if not body.isdigit() or not body.isascii():
        raise UsageError(
            f"{safe_text(text)!s} is not a version (N) or a proposal (pN), e.g. 3 or p2"
        )
    return f"p{int(body)}" if body != text else int(body)


@_guard
def cmd_diff(args: argparse.Namespace) -> int:
    from forgec.render.diff import render_diff
    from forgec.store.diff import diff_versions

    with _open(args) as store:
        diff = diff_versions(store, args.tool, _which(args.old), _which(args.new))
    if args.format == "json":
        emit_json(diff)
    else:
        print(render_diff(diff))
    return 0


def _shown_only(stored: Any) -> Any:
    """The consent part of the current version's JSON in a review: not asked, only shown."""
    from forgec.store import ConsentStatus

    return ConsentStatus(stored.tool_id, stored.version, needed=False, reason="shown")


@_guard
def cmd_accept(args: argparse.Namespace) -> int:
    with _open(args) as store:
        stored = store.accept(args.tool, args.tool_version)
    if args.format == "json":
        emit_json(
            {
                "name": stored.name,
                "proposal": args.tool_version,
                "version": stored.version,
                "enabled": False,
            }
        )
    else:
        print(
            f"{stored.name} proposal {args.tool_version} is now v{stored.version}, current, "
            f"and the tool is off; turn it on with `forgec tools enable {stored.tool_id}` "
            "(it asks your consent)"
        )
    return 0


@_guard
def cmd_reject(args: argparse.Namespace) -> int:
    from forgec.store import normalize_id

    with _open(args) as store:
        store.reject(args.tool, args.tool_version)
    name = f"dynamic:{normalize_id(args.tool)}"
    if args.format == "json":
        emit_json({"name": name, "proposal": args.tool_version, "status": "rejected"})
    else:
        print(
            f"{name} proposal {args.tool_version} is rejected; it is kept but never becomes "
            "current, and holds no version number"
        )
    return 0


@_guard
def cmd_disable(args: argparse.Namespace) -> int:
    from forgec.store import normalize_id

    with _open(args) as store:
        store.disable(args.tool)
        version = store.versions(args.tool)
    name = f"dynamic:{normalize_id(args.tool)}"
    current = next((v.version for v in version if v.current), None)
    if args.format == "json":
        emit_json({"name": name, "version": current, "enabled": False})
    else:
        print(f"{name} v{current} is off")
    return 0


@_guard
def cmd_rollback(args: argparse.Namespace) -> int:
    from forgec.store import normalize_id

    with _open(args) as store:
        version = store.rollback(args.tool)
    tool_id = normalize_id(args.tool)
    if args.format == "json":
        emit_json({"name": f"dynamic:{tool_id}", "version": version, "enabled": False})
    else:
        print(
            f"dynamic:{tool_id}: v{version} is current again, and the tool is off; turn it on "
            f"with `forgec tools enable {tool_id}`"
        )
    return 0


@_guard
def cmd_run(args: argparse.Namespace) -> int:
    from forgec.commands.stored import run_stored_cli

    with _open(args) as store:
        stored = store.get(args.tool)
        if not stored.enabled and not getattr(args, "staged", False):
            # a staged run changes nothing: a tool that is off may be tried (consent is asked)
            return _fail(
                f"{stored.name} is off; turn it on with `forgec tools enable {stored.tool_id}`"
            )
        remembered = store.has_consent(stored.tool_id) and stored.enabled
    return run_stored_cli(stored, args, remembered_consent=remembered)
