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


def run_stored(stored: StoredVersion, tool_input: Any, *, host: Any, consent: Any) -> Any:
    from forgec.runtime import Program, run

    program = Program.from_json(stored.program)
    return run(program, tool_input, host=host, consent=consent)


def open_host_for(
    *,
    db: str | Path | None = None,
    host_config: str | Path | None = None,
    labels: list[str] | None = None,
    credentials: str | Path | None = None,
    resolve: list[str] | None = None,
    replay: str | Path | None = None,
) -> Any:
    """The reference host (`forgec.host.open_host`) with these options; labels None = config."""
    from forgec.host import HostOptions, open_host  # type: ignore[attr-defined]

    options = HostOptions(
        db=Path(db) if db else None,
        config=Path(host_config) if host_config else None,
        labels=tuple(labels) if labels is not None else None,
        credentials=Path(credentials) if credentials else None,
        resolve=tuple(resolve or ()),
        replay=Path(replay) if replay else None,
    )
    return open_host(options)


def _read_input(spec: str | None) -> Any:
    import orjson

    from forgec.cli import UsageError

    if spec is None:
        return {}
    if spec.startswith("@"):
        try:
            data = Path(spec[1:]).read_bytes()
        except OSError as exc:
            raise UsageError(f"{spec[1:]}: cannot read the input: {exc.strerror or exc}") from None
    else:
        data = spec.encode()
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UsageError(f"--input is not valid JSON: {exc}") from None


def run_stored_cli(
    stored: StoredVersion, args: argparse.Namespace, *, remembered_consent: bool
) -> int:
    """`forgec tools run`: the same options, consent and output as `forgec run`."""
    tool_input = _read_input(getattr(args, "input", None))
    labels = getattr(args, "persona_labels", None)
    label_list = (
        [x.strip() for x in labels.split(",") if x.strip()]
        if labels is not None
        else list(stored.marks.labels)  # like `forgec run`: what the tool needs
    )

    def consent(request: Any) -> bool:
        if remembered_consent and not stored.marks.always_asks:
            return True
        if getattr(args, "yes", False):
            return True
        if sys.stdin.isatty():
            from forgec.render.consent import render_consent_card

            print(render_consent_card(stored.manifest, stored.marks), file=sys.stderr)
            try:
                answer = input(f"Run {stored.name} v{stored.version}? [y/N] ")
            except EOFError:
                return False
            return answer.strip().lower() in {"y", "yes"}
        from forgec.runtime import ConsentDenied

        raise ConsentDenied(
            f"{stored.name} v{stored.version} asks before every run (R4); pass --yes to consent"
            if stored.marks.always_asks
            else f"{stored.name} needs consent; pass --yes to consent"
        )

    host = open_host_for(
        db=getattr(args, "db", None),
        host_config=getattr(args, "host_config", None),
        labels=label_list,
        credentials=getattr(args, "credentials", None),
        resolve=getattr(args, "resolve", None),
        replay=getattr(args, "replay", None),
    )
    try:
        result = run_stored(stored, tool_input, host=host, consent=consent)
    finally:
        close = getattr(host, "close", None)
        if close is not None:
            close()
    out = result.to_json()
    if getattr(args, "format", "text") == "json":
        import orjson

        sys.stdout.write(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        import orjson

        if result.ok:
            sys.stdout.write(
                orjson.dumps(out["output"], option=orjson.OPT_INDENT_2).decode() + "\n"
            )
            print(f"ok: {out['transitions']} transitions", file=sys.stderr)
        else:
            err = out["error"] or {}
            where = f" at node {err.get('node')}" if err.get("node") else ""
            print(f"failed{where}: {err.get('code')}: {err.get('message')}", file=sys.stderr)
            for c in out["compensations"]:
                print(f"  undo {c['node']} ({c['capability']}): {c['status']}", file=sys.stderr)
    return 0 if result.ok else 1
