"""Running a stored version: its saved Program on the reference host.

Shared by `forgec tools run` and the MCP server. The Program is the one lowered at install time
(so a run never re-checks or re-lowers; the content hash names exactly what runs). Consent is
the caller's: the CLI asks on a terminal or takes `--yes`, the MCP server elicits or follows
its policy; a non-R4 tool whose consent is on record in the store runs without asking.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from forgec.store.core import StoredVersion


def run_stored(
    stored: StoredVersion, tool_input: Any, *, host: Any, consent: Any, program: Any = None
) -> Any:
    """Run the stored Program (PROGRAM: that Program already read, so it is not read twice)."""
    from forgec.runtime import Program, run

    if program is None:
        program = Program.from_json(stored.program)
    return run(program, tool_input, host=host, consent=consent)


def open_host_for(
    *,
    db: str | Path | None = None,
    host_config: str | Path | None = None,
    persona_labels: list[str] | tuple[str, ...] | None = None,
    default_labels: tuple[str, ...] = (),
    credentials: str | Path | None = None,
    resolve: list[str] | tuple[str, ...] | None = None,
    replay: str | Path | None = None,
) -> Any:
    """The reference host (`forgec.host.open_host`). PERSONA_LABELS None means: the host
    config's labels, else DEFAULT_LABELS; an empty tuple grants nothing."""
    from forgec.host import HostOptions, open_host

    # a plain dict: attrs converters confuse mypy about the field types
    fields: dict[str, Any] = {
        "db": db,
        "host_config": host_config,
        "persona_labels": tuple(persona_labels) if persona_labels is not None else None,
        "default_labels": tuple(default_labels),
        "credentials": credentials,
        "resolve": tuple(resolve or ()),
        "replay": replay,
    }
    return open_host(HostOptions(**fields))


def run_stored_cli(
    stored: StoredVersion, args: argparse.Namespace, *, remembered_consent: bool
) -> int:
    """`forgec tools run`: the same options, input, consent and output as `forgec run`."""
    from forgec.commands.common import host_from_args
    from forgec.commands.run import print_result, read_input
    from forgec.runtime import Program

    tool_input = read_input(getattr(args, "input", None))

    def consent(request: Any) -> bool:
        if remembered_consent and not stored.marks.always_asks:
            return True
        if getattr(args, "yes", False):
            return True
        if sys.stdin.isatty() and sys.stderr.isatty():
            from forgec.render.consent import render_consent_card

            print(render_consent_card(stored.manifest, stored.marks), file=sys.stderr)
            sys.stderr.write(f"Run {stored.name} v{stored.version}? [y/N] ")
            sys.stderr.flush()
            return sys.stdin.readline().strip().lower() in {"y", "yes"}
        from forgec.runtime import ConsentDenied

        raise ConsentDenied(
            f"{stored.name} v{stored.version} asks before every run (R4); pass --yes to consent"
            if stored.marks.always_asks
            else f"consent to run {stored.name} was not given; pass --yes to grant it"
        )

    # like `forgec run`: without --persona-labels, grant what the tool needs
    host: Any = host_from_args(args, default_labels=tuple(stored.marks.labels))
    try:
        # read once: the text output lists the Program's compensations too
        program = Program.from_json(stored.program)
        result = run_stored(stored, tool_input, host=host, consent=consent, program=program)
    finally:
        close = getattr(host, "close", None)
        if close is not None:
            close()
    return print_result(program, result, getattr(args, "format", "text"))
