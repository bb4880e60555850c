"""`forgec talond`: the Talon daemon (SPEC §19); `forgec talond status`: what it has done."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forgec.daemon.clock import Clock
    from forgec.host.config import HostConfig


def _common(p: argparse.ArgumentParser, default: object) -> None:
    p.add_argument("--host-config", metavar="FILE", default=default, help="the TOML host config")
    p.add_argument(
        "--db", metavar="FILE", default=default, help="the host database (default: the config's)"
    )


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg,unused-ignore]
    p = subparsers.add_parser(
        "talond",
        help="run the Talon daemon: schedules fire, personas answer, messages are delivered",
        description="Run until SIGTERM or Ctrl-C: fire the schedules, run A2A and background "
        "tasks as turns of their personas, deliver channel messages. See docs/talond.md.",
    )
    _common(p, None)
    p.add_argument("--store", metavar="FILE", default=None, help="the tool store")
    p.add_argument(
        "--log-format", choices=("text", "json"), default="text", help="one line per event"
    )
    p.add_argument(
        "--templates",
        metavar="DIR",
        default=None,
        help="folder holding tool-instructions/<name>.md (default: the shipped ones)",
    )
    # tests only: a file holding the POSIX time the daemon takes as now (docs/talond.md)
    p.add_argument("--clock-file", metavar="FILE", default=None, help=argparse.SUPPRESS)
    p.set_defaults(handler=run)
    sub = p.add_subparsers(dest="talond_command", metavar="ACTION", parser_class=type(p))
    s = sub.add_parser(
        "status",
        help="schedules (next run, last run, its result), queued and running tasks",
        description="What the daemon has done and will do, read from the host database.",
    )
    _common(s, argparse.SUPPRESS)
    s.add_argument("--format", choices=("text", "json"), default="text")
    s.add_argument(
        "--clock-file", metavar="FILE", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    s.set_defaults(handler=status)
    a = sub.add_parser(
        "schedule",
        help="add a schedule for a persona (as its schedule_manage create would)",
        description="Create a schedule owned by PERSONA through the host's schedule.manage, "
        "the same rules a persona's own call meets (the one cron rule, promptFile a name).",
    )
    _common(a, argparse.SUPPRESS)
    a.add_argument("--persona", metavar="NAME", default=None, help="default: the config's")
    a.add_argument("--cron", metavar="EXPR", required=True, help="five fields, e.g. '0 9 * * 1'")
    a.add_argument("--label", default=None)
    what = a.add_mutually_exclusive_group()
    what.add_argument("--prompt", default=None, help="what each firing asks the persona")
    what.add_argument("--prompt-file", default=None, help="a prompt name in its prompts/")
    what.add_argument(
        "--tool",
        metavar="TOOL",
        default=None,
        help="a planned turn: each firing runs this enabled forged tool (its id) instead of a "
        "prompt (SPEC §21)",
    )
    a.add_argument(
        "--input",
        metavar="JSON",
        default=None,
        help="the planned tool's input, a JSON object (with --tool)",
    )
    a.set_defaults(handler=schedule)
    sc = sub.add_parser(
        "schedules",
        help="list schedules, or pause, resume or delete one",
        description="A person's view of the schedules: list them, or pause, resume or delete one.",
    )
    sc_sub = sc.add_subparsers(dest="schedules_command", metavar="ACTION", parser_class=type(p))
    sl = sc_sub.add_parser("list", help="every schedule, on or off")
    _common(sl, argparse.SUPPRESS)
    sl.add_argument("--format", choices=("text", "json"), default="text")
    sl.set_defaults(handler=schedules_list)
    for action, text in (
        ("pause", "stop a schedule firing until it is resumed"),
        ("resume", "let a paused schedule fire again (from its next slot)"),
        ("delete", "remove a schedule (its firings stay in the history)"),
    ):
        sa = sc_sub.add_parser(action, help=text)
        _common(sa, argparse.SUPPRESS)
        sa.add_argument("schedule_id", metavar="ID")
        sa.set_defaults(handler=schedules_set, action=action)
    sc.set_defaults(handler=schedules_list, format="text")
    m = sub.add_parser(
        "messages",
        help="the messages personas posted (the outbox), newest last",
        description="Messages in the host's outbox, with their delivery state.",
    )
    _common(m, argparse.SUPPRESS)
    m.add_argument("--channel", metavar="NAME", default=None)
    m.add_argument("--limit", metavar="N", type=int, default=20)
    m.add_argument("--format", choices=("text", "json"), default="text")
    m.set_defaults(handler=messages)
    d = sub.add_parser(
        "deliveries",
        help="re-send failed webhook messages",
        description="Webhook messages that failed after [connectors] retry_hours.",
    )
    d_sub = d.add_subparsers(dest="deliveries_command", metavar="ACTION", parser_class=type(p))
    dr = d_sub.add_parser("retry", help="send failed messages again (all, or the one named)")
    _common(dr, argparse.SUPPRESS)
    dr.add_argument("message_id", metavar="ID", nargs="?", default=None)
    dr.set_defaults(handler=deliveries_retry)
    c = sub.add_parser(
        "check",
        help="per persona: the private data, untrusted input, writes and egress its labels and "
        "enabled tools give it, and a warning when it holds the first three at once",
        description="What each persona's turns may read (private sources), be steered by "
        "(untrusted sources) and reach (writes, egress), from its labels and the enabled forged "
        "tools they cover; warns (the rule of two) when one persona holds private data, "
        "untrusted input and egress at once. See docs/trust.md.",
    )
    _common(c, argparse.SUPPRESS)
    c.add_argument("--store", metavar="FILE", default=None, help="the tool store")
    c.add_argument("--format", choices=("text", "json"), default="text")
    c.set_defaults(handler=check)


def _config(args: argparse.Namespace) -> tuple[HostConfig, Path]:
    from pathlib import Path

    from forgec.commands import UsageError
    from forgec.host import ConfigError, HostConfig, load_config
    from forgec.host.db import default_db_path

    # a subcommand without `--host-config` / `--db` reads the defaults
    host_config = getattr(args, "host_config", None)
    given_db = getattr(args, "db", None)
    try:
        config = load_config(host_config) if host_config else HostConfig()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    db = Path(given_db) if given_db else (config.db or default_db_path())
    return config, db.expanduser().resolve()


def _clock(args: argparse.Namespace) -> Clock:
    from forgec.daemon.clock import FileClock, SystemClock

    path = getattr(args, "clock_file", None)
    return FileClock(path) if path else SystemClock()


def run(args: argparse.Namespace) -> int:
    import signal
    from pathlib import Path

    from forgec.commands import UsageError
    from forgec.daemon.log import Log
    from forgec.daemon.service import StartError, Talond, flush_and_exit
    from forgec.host.db import DatabaseError, connect
    from forgec.host.delegation import PersonaError
    from forgec.mcp.policy import PolicyError, load_policy
    from forgec.store.core import default_store_path

    config, db = _config(args)
    try:
        policy = load_policy(config.talond.consent_policy)
    except PolicyError as exc:
        raise UsageError(str(exc)) from None
    from forgec.commands.common import refuse_typos

    refuse_typos(
        policy, Path(args.store) if args.store else default_store_path(), config.personas_dir
    )
    try:
        connect(db).close()  # refuse a database the host cannot use, in one line
    except DatabaseError as exc:
        raise UsageError(str(exc)) from None
    log = Log(args.log_format)
    if args.clock_file:
        log.event("test clock", file=args.clock_file)
    try:
        daemon = Talond(
            config,
            db_path=db,
            store_path=Path(args.store) if args.store else default_store_path(),
            policy=policy,
            log=log,
            clock=_clock(args),
            templates=Path(args.templates) if args.templates else None,
        )
    except PersonaError as exc:
        raise UsageError(str(exc)) from None

    def stop(signum: int, _frame: object) -> None:
        daemon.stop.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        daemon.run()
    except StartError as exc:
        print(f"forgec talond: {exc}", file=sys.stderr)
        flush_and_exit(2)
    # the workflows parked by the stop stay PENDING in the engine: end without waiting for them
    flush_and_exit(0)
    return 0


def _tables(args: argparse.Namespace) -> Any:
    from forgec.daemon.tables import Tables

    config, db = _config(args)
    return Tables(db, clock=_clock(args), zone=config.talond.timezone), db


def status(args: argparse.Namespace) -> int:

    from forgec.daemon.service import alive
    from forgec.render.safe import safe_text

    tables, db = _tables(args)
    try:
        report = tables.status(alive=alive(db))
    finally:
        tables.close()
    if args.format == "json":
        sys.stdout.write(_json_text(report) + "\n")
        return 0
    out = []
    live = [d for d in report["daemons"] if d["running"]]
    if live:
        for d in live:
            out.append(
                f"Daemon {d['id']} running (pid {d['pid']} on {d['host']}, "
                f"last heartbeat {d['heartbeatAt']})"
            )
    elif report["noDaemonSince"]:
        out.append(f"No daemon running since {report['noDaemonSince']}.")
    else:
        out.append("No daemon has run on this database.")
    out.append(f"Cron times are read in {report['timezone']}; now is {report['now']}.")
    out.append(f"Schedules ({len(report['schedules'])}):")
    for s in report["schedules"]:
        last = s["lastRun"]
        if last is None:
            last_text = "never"
        else:
            detail = last["error"] or _answer(last["result"])
            last_text = f"{last['slot']} {last['status']}" + (f": {detail}" if detail else "")
        state = "on" if s["enabled"] else "off"
        out.append(
            f"  {s['scheduleId']}  {s['persona']}  {s['cronExpr']!r} {state}"
            f"  label={s['label'] or '-'}"
        )
        out.append(f"    next run: {s['nextRun'] or '-'}   last run: {last_text}")
        if s["overdue"]:
            out.append(f"    overdue: the slot {s['overdue']} has not fired (no daemon runs)")
        if s["skipped"]:
            out.append("    skipped (the previous firing still ran): " + ", ".join(s["skipped"]))
    out.append(f"Tasks queued or running ({len(report['tasks'])}):")
    for t in report["tasks"]:
        out.append(f"  {t['kind']} {t['id']} {t['status']} persona={t['persona']}")
    waiting = report["deliveries"]
    if waiting:
        out.append(f"Messages not delivered ({len(waiting)}):")
        for d in waiting:
            error = f": {d['delivery_error']}" if d["delivery_error"] else ""
            retry = f" (next attempt {d['next_attempt_at']})" if d["next_attempt_at"] else ""
            out.append(f"  {d['id']} {d['channel_id']} {d['delivery']}{retry}{error}")
    print("\n".join(safe_text(line) for line in out))
    return 0


def schedules_list(args: argparse.Namespace) -> int:

    from forgec.render.safe import safe_text

    tables, _db = _tables(args)
    try:
        rows = tables.schedules()
    finally:
        tables.close()
    if getattr(args, "format", "text") == "json":
        sys.stdout.write(_json_text(rows) + "\n")
        return 0
    if not rows:
        print("No schedules.")
    for r in rows:
        state = "on" if r["enabled"] else "off"
        what = r["prompt"] or (f"promptFile {r['promptFile']}" if r["promptFile"] else "")
        print(
            safe_text(
                f"{r['scheduleId']}  {r['persona']}  {r['cronExpr']!r} {state}"
                f"  label={r['label'] or '-'}  {what}".rstrip()
            )
        )
    return 0


def schedules_set(args: argparse.Namespace) -> int:
    from forgec.commands import UsageError
    from forgec.render.safe import safe_text

    tables, _db = _tables(args)
    try:
        found = tables.set_schedule(args.schedule_id, args.action)
    finally:
        tables.close()
    if not found:
        raise UsageError(f"no schedule {safe_text(args.schedule_id)!r}")
    done = {"pause": "paused", "resume": "resumed", "delete": "deleted"}[args.action]
    print(f"{safe_text(args.schedule_id)} {done}")
    return 0


def messages(args: argparse.Namespace) -> int:

    from forgec.commands import UsageError
    from forgec.render.safe import safe_text

    if args.limit < 1:
        raise UsageError("--limit must be at least 1")
    tables, _db = _tables(args)
    try:
        rows = tables.messages(args.channel, args.limit)
    finally:
        tables.close()
    if args.format == "json":
        sys.stdout.write(_json_text(rows) + "\n")
        return 0
    if not rows:
        print("No messages.")
    for r in rows:
        state = r["delivery"] + (f" ({r['delivery_error']})" if r["delivery_error"] else "")
        print(safe_text(f"{r['created_at']}  #{r['channel_id']}  {r['persona']}  [{state}]"))
        for line in str(r["content"]).splitlines() or [""]:
            print(safe_text(f"    {line}"))
    return 0


def deliveries_retry(args: argparse.Namespace) -> int:
    from forgec.commands import UsageError
    from forgec.render.safe import safe_text

    tables, _db = _tables(args)
    try:
        again = tables.retry_failed(args.message_id)
    finally:
        tables.close()
    if args.message_id and not again:
        raise UsageError(f"no failed message {safe_text(args.message_id)!r}")
    print(
        f"{len(again)} message(s) will be sent again" + (": " + ", ".join(again) if again else "")
    )
    return 0


def _answer(result: object) -> str:
    text = result.get("answer") if isinstance(result, dict) else result
    text = "" if text is None else str(text).strip().replace("\n", " ")
    return text if len(text) <= 80 else text[:80] + "…"


def schedule(args: argparse.Namespace) -> int:

    from forgec.commands import EXIT_ERRORS
    from forgec.host import ConfigError, HostOptions, open_host
    from forgec.render.safe import safe_text
    from forgec.runtime.host import CallContext, HostError

    config, db = _config(args)
    request: dict[str, object] = {"action": "create", "cronExpr": args.cron}
    for key, value in (
        ("label", args.label),
        ("prompt", args.prompt),
        ("promptFile", args.prompt_file),
        ("tool", args.tool),
    ):
        if value is not None:
            request[key] = value
    if args.input is not None:
        import json

        from forgec.commands import UsageError

        try:
            request["input"] = json.loads(args.input)
        except ValueError as exc:
            raise UsageError(f"--input is not JSON: {exc}") from None
    try:
        host = open_host(
            HostOptions(
                db=db,
                config=config,
                persona=args.persona,
                persona_labels=("schedule.manage:own",),
            )
        )
    except ConfigError as exc:
        from forgec.commands import UsageError

        raise UsageError(str(exc)) from None
    try:
        made = host.call("schedule.manage", request, CallContext("talond", 1, "schedule"))
    except HostError as exc:
        print(f"forgec talond: {safe_text(exc.message)}", file=sys.stderr)
        return EXIT_ERRORS
    finally:
        host.close()
    sys.stdout.write(_json_text(made) + "\n")
    return 0


def check(args: argparse.Namespace) -> int:

    from forgec.mcp.reach import host_cards, render_text
    from forgec.render.safe import safe_text
    from forgec.store.core import default_store_path

    config, _db = _config(args)
    store = Path(args.store) if args.store else default_store_path()
    cards = host_cards(config, store)
    if args.format == "json":
        sys.stdout.write(_json_text({"personas": cards}))
        sys.stdout.write("\n")
        return 0
    print("\n".join(safe_text(line) for line in render_text(cards).splitlines()))
    return 0


def _json_text(value: object) -> str:
    """VALUE as indented JSON for standard output, with every raw DEL, C1, bidi or
    line-separator character as a `\\u` escape (SPEC §14: what a machine reads, whatever
    produced the text: a persona's message, a tool's result)."""
    import orjson

    from forgec.runtime.jsontext import escape_unsafe_text

    return escape_unsafe_text(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode())
