"""`forgec tools run`: a stored version run with the same options, input, consent and output as
`forgec run`. It lives with the commands (not in the store) because it reads argparse options
and the terminal; the store's part is `forgec.store.running.run_stored`."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from forgec.store.core import StoredVersion


def run_stored_cli(
    stored: StoredVersion, args: argparse.Namespace, *, remembered_consent: bool
) -> int:
    """`forgec tools run`: the same options, input, consent and output as `forgec run`."""
    from forgec.commands.common import host_from_args
    from forgec.commands.run import print_result, read_input
    from forgec.runtime import Program
    from forgec.store.running import run_stored

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
        from forgec.render.consent import always_asks_banner
        from forgec.runtime import ConsentDenied

        raise ConsentDenied(
            f"{stored.name} v{stored.version}: {always_asks_banner(stored.marks)} Pass --yes to "
            "consent"
            if stored.marks.always_asks
            else f"consent to run {stored.name} was not given; pass --yes to grant it"
        )

    # like `forgec run`: without --persona-labels, grant what the tool needs
    host: Any = host_from_args(args, default_labels=tuple(stored.marks.labels))
    try:
        # read once: the text output lists the Program's compensations too
        program = Program.from_json(stored.program)
        from forgec.commands.common import staged_host

        host = staged_host(args, host, program)
        result = run_stored(stored, tool_input, host=host, consent=consent, program=program)
    finally:
        close = getattr(host, "close", None)
        if close is not None:
            close()
    if getattr(args, "staged", False):
        from forgec.commands.run import print_staged

        return print_staged(program, result, host, getattr(args, "format", "text"))
    return print_result(program, result, getattr(args, "format", "text"))
