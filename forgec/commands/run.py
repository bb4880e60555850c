"""`forgec run PATH [--input JSON|@FILE] [--target] [--yes] [--format text|json] [host options]`.

Checks and lowers the tool, asks consent (on a terminal; `--yes` grants it; with neither the run
is refused with RUN_CONSENT_DENIED), runs it on the host `make_host` builds, and prints the run
result (SPEC §8) as text — with the tool's `ui` summary card on success — or as JSON.
Exit status: 0 the run succeeded, 1 the tool has errors or the run failed, 2 bad usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from forgec.commands.common import add_format, add_host_options, add_target


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a tool on the host",
        description="Check, lower and run PATH with an input; prints the run result.",
    )
    parser.add_argument("path", metavar="PATH", help=".talostool or .forge file (- for stdin)")
    parser.add_argument(
        "--input",
        metavar="JSON|@FILE",
        default=None,
        help="the tool's input as JSON, or @FILE to read it from a file (default: {})",
    )
    add_target(parser)
    parser.add_argument("--yes", action="store_true", help="grant consent without asking")
    add_format(parser, "text", "json")
    add_host_options(parser)
    parser.set_defaults(handler=run)


def make_host(args: argparse.Namespace, report: Any) -> Any:
    """The one place the command builds its host: the reference host (SQLite, Talon tools,
    model providers). Without --persona-labels it grants every label the tool needs."""
    from forgec.commands.common import host_from_args

    needed = tuple(report.marks.labels) if report.marks is not None else ()
    return host_from_args(args, default_labels=needed)


def read_input(spec: str | None) -> Any:
    """`--input`: JSON text, or @FILE; bad JSON or an unreadable file → UsageError (exit 2)."""
    import orjson

    from forgec.commands import UsageError

    if spec is None:
        return {}
    where = "--input"
    text: str | bytes = spec
    if spec.startswith("@"):
        from forgec.commands.common import read_source
        from forgec.frontend.reading import INPUT_BYTES

        where = spec[1:]
        text = read_source(spec[1:], limit=INPUT_BYTES)
        if len(text) > INPUT_BYTES:
            raise UsageError(
                f"{where}: over {INPUT_BYTES // 1024} KiB, the largest input a run takes"
            )
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        # forgec's words and position, not the library's (they change between releases)
        from forgec.frontend.jsonsyntax import first_problem

        text_str = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        problem = first_problem(text_str, max_depth=1_000_000)
        detail = f": {problem[0]} at character {problem[1] + 1}" if problem else ""
        raise UsageError(f"{where}: not valid JSON{detail}") from None


def make_consent(args: argparse.Namespace, report: Any) -> Any:
    from forgec.runtime import ConsentDenied, ConsentRequest

    def consent(request: ConsentRequest) -> bool:
        if args.yes:
            return True
        if not (sys.stdin.isatty() and sys.stderr.isatty()):
            raise ConsentDenied(
                f"consent to run {request.name} was not given: no terminal to ask on; "
                "pass --yes to grant it"
            )
        from forgec.render.consent import render_consent_card

        if report.manifest is not None and report.marks is not None:
            sys.stderr.write(render_consent_card(report.manifest, report.marks) + "\n")
        sys.stderr.write(f"Run {request.name}? [y/N] ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        return answer in ("y", "yes")

    return consent


def render_text(program: Any, result: Any) -> str:
    """The run result for a person. The output, an error message and a compensation's message
    come from the run (its input, a host's answer, a model's): each line goes through
    `safe_text`, so no escape sequence, CR or bidi control reaches the terminal raw."""
    from forgec.render.safe import safe_text
    from forgec.runtime.jsontext import dumps_text

    lines = [
        f"{result.status}  {program.name} v{program.version}  "
        f"({result.transitions} transition{'s' if result.transitions != 1 else ''})"
    ]
    if result.ok:
        lines.append("output:")
        body = dumps_text(result.output, indent=True)
        # JSON escapes C0 controls but not C1, bidi or U+2028: split where orjson laid out lines
        lines.extend("  " + line for line in body.split("\n"))
        if program.ui is not None:
            lines.append("")
            lines.extend(render_card(program.ui, result.output))
    else:
        err = result.error
        where = f" at node {err.node!r}" if err.node else ""
        if err.line is not None:
            where += f" (line {err.line})"
        lines.append(f"error: {err.code}{where}: {err.message}")
    if result.compensations:
        lines.append("compensations (last step first):")
        for comp in result.compensations:
            why = f" — {comp.message}" if comp.message else ""
            lines.append(f"  {comp.node:<24} {comp.capability:<20} {comp.status}{why}")
    return "\n".join(safe_text(line) for line in lines) + "\n"


def render_card(ui: dict[str, Any], output: Any) -> list[str]:
    """The tool's summary card: its title, then `label: value` per ui path into the output."""
    from forgec.answers import ui_card
    from forgec.render.safe import safe_text

    card = ui_card(ui, output)
    # one line per value: a newline or an escape sequence in the run's output stays visible text
    lines = [f"┌─ {safe_text(card['title'])}"]
    for entry in card["values"]:
        lines.append(f"│ {safe_text(entry['label'])}: {safe_text(entry['value'])}")
    lines.append("└─")
    return lines


def run(args: argparse.Namespace) -> int:
    from forgec.commands import EXIT_ERRORS
    from forgec.commands.lower import checked_program
    from forgec.runtime import run as run_program

    got = checked_program(args)
    if got is None:
        return EXIT_ERRORS
    report, program = got
    value = read_input(args.input)
    from forgec.commands.common import staged_host

    host = make_host(args, report)
    try:
        host = staged_host(args, host, program)
        result = run_program(program, value, host=host, consent=make_consent(args, report))
    finally:
        host.close()
    if getattr(args, "staged", False):
        return print_staged(program, result, host, args.format)
    return print_result(program, result, args.format)


def print_staged(program: Any, result: Any, host: Any, fmt: str) -> int:
    """A staged run's result (SPEC §22): the §8 result with `"staged"`, the held-back effects;
    exit 0 when it succeeded or stopped at a send it did not make."""
    from forgec.commands import EXIT_ERRORS, EXIT_OK
    from forgec.commands.common import emit_json
    from forgec.render.safe import safe_text
    from forgec.runtime.jsontext import dumps_text

    data = host.result_json(result)
    if fmt == "json":
        emit_json(data)
    else:
        if data["status"] == "staged":
            sys.stdout.write(
                safe_text(
                    f"staged  {program.name} v{program.version}: stopped at "
                    f"`{data['stoppedAt']}`, a send that was not made (give it a --mock to go on)"
                )
                + "\n"
            )
        else:
            sys.stdout.write(render_text(program, result))
        sys.stdout.write("held back (nothing was written or sent):\n")
        if not data["staged"]:
            sys.stdout.write("  nothing\n")
        for entry in data["staged"]:
            labels = ", ".join(entry["labels"]) or "no labels"
            sys.stdout.write(
                safe_text(
                    f"  {entry['node']:<20} {entry['capability']:<18} "
                    f"{dumps_text(entry['input'])}  [{labels}]"
                )
                + "\n"
            )
    return EXIT_ERRORS if data["status"] == "failed" else EXIT_OK


def print_result(program: Any, result: Any, fmt: str) -> int:
    """A run's result on standard output, as JSON or text; the exit status it means."""
    from forgec.commands import EXIT_ERRORS, EXIT_OK
    from forgec.commands.common import emit_json

    if fmt == "json":
        emit_json(result.to_json())
    else:
        sys.stdout.write(render_text(program, result))
    return EXIT_OK if result.ok else EXIT_ERRORS
