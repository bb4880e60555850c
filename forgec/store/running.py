"""Running a stored version: its saved Program on the reference host.

Shared by `forgec tools run` (`forgec.commands.stored`) and the MCP server; nothing here knows
about the command line (the store sits below it). The Program is the one lowered at install time
(so a run never re-checks or re-lowers; the content hash names exactly what runs). Consent is
the caller's: the CLI asks on a terminal or takes `--yes`, the MCP server elicits or follows
its policy; a non-R4 tool whose consent is on record in the store runs without asking.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from forgec.store.core import StoredVersion


def run_stored(
    stored: StoredVersion,
    tool_input: Any,
    *,
    host: Any,
    consent: Any,
    program: Any = None,
    input_labels: Any = (),
    allowed_flows: Any = (),
) -> Any:
    """Run the stored Program (PROGRAM: that Program already read, so it is not read twice).

    SPEC §21: INPUT_LABELS join `input` (a turn's context labels); ALLOWED_FLOWS are the
    `[flows] deny` rules the consent policy allows this tool."""
    from forgec.runtime import Program, run

    if program is None:
        program = Program.from_json(stored.program)
    return run(
        program,
        tool_input,
        host=host,
        consent=consent,
        input_labels=input_labels,
        allowed_flows=allowed_flows,
    )


def open_host_for(
    *,
    db: str | Path | None = None,
    host_config: str | Path | None = None,
    persona_labels: list[str] | tuple[str, ...] | None = None,
    default_labels: tuple[str, ...] = (),
    credentials: str | Path | None = None,
    resolve: list[str] | tuple[str, ...] | None = None,
    replay: str | Path | None = None,
    staged: bool = False,
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
        "staged": staged,
    }
    return open_host(HostOptions(**fields))
