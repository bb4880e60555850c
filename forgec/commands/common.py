"""Small helpers shared by subcommands: reading files, the --target and --format options, and
printing a tool's diagnostics to standard error the way `check` shows them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from forgec.commands import UsageError


def add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target",
        choices=("talos", "talon"),
        default=None,
        help="capability catalog to check against (default: the file's [tool.forgec] "
        "settings, else talos)",
    )


def add_force_exclude(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force-exclude",
        action="store_true",
        help="leave out files named outright that [tool.forgec] exclude matches "
        "(what the pre-commit hooks pass)",
    )


def expand_paths(paths: list[str], *, force_exclude: bool = False) -> list[str]:
    """PATHS with folders walked for tool files (`forgec.frontend.settings.expand`)."""
    from forgec.frontend.settings import SettingsError, expand

    try:
        return expand(paths, force_exclude=force_exclude, skipped=_say_skipped)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None


def _say_skipped(path: str, why: str) -> None:
    """A folder walk left PATH out (SPEC §24): said on standard error, never read."""
    from forgec.render.safe import safe_text

    print(f"forgec: warning: {safe_text(path)}: skipped: {why}", file=sys.stderr)


def target_of(args: argparse.Namespace, path: str | None) -> str:
    """`--target` when given, else what the settings nearest PATH say (`[tool.forgec]`)."""
    if getattr(args, "target", None):
        return str(args.target)
    from forgec.frontend.settings import SettingsError, settings_for

    try:
        settings = settings_for(None if path in (None, "-") else path)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    return settings.target_for(Path(path)) if path not in (None, "-") else settings.target


def add_format(parser: argparse.ArgumentParser, *choices: str, default: str | None = None) -> None:
    parser.add_argument(
        "--format",
        choices=choices,
        default=default or choices[0],
        help=f"output format (default: {default or choices[0]})",
    )


def read_source(path: str, *, limit: int | None = None) -> bytes:
    """The bytes of PATH (``-`` for standard input), at most its limit + 1 (SPEC §24: through
    `forgec.frontend.reading`, the one reader); unreadable or not a regular file → UsageError
    (exit 2)."""
    from forgec.frontend.reading import ReadError, read_tool_file, read_tool_stream

    if path == "-":
        return read_tool_stream(sys.stdin.buffer)
    try:
        return read_tool_file(path, limit=limit)
    except ReadError as exc:
        raise UsageError(str(exc)) from None


def read_path(arg: str) -> tuple[bytes, str | None]:
    """The bytes of ARG (``-`` for standard input) and its path for messages (None for stdin)."""
    return read_source(arg), (None if arg == "-" else arg)


def print_report(report: Any) -> None:
    """A check report's diagnostics on standard error (coloured on a terminal)."""
    from forgec.render.text import render_report, use_color

    sys.stderr.write(render_report(report, color=use_color(sys.stderr)) + "\n")


def print_diagnostics(
    diagnostics: Any, *, path: str | None, source: str | None, color: bool = False
) -> None:
    """Each diagnostic (of a load, say) on standard error, one rendered block after another."""
    from forgec.render.text import render_diagnostic

    for d in diagnostics:
        print(render_diagnostic(d, path=path, source=source, color=color), file=sys.stderr)


def emit_json(value: Any) -> None:
    """VALUE as indented JSON on standard output (the `--format json` of every subcommand)."""
    from forgec.runtime.jsontext import dumps_text

    sys.stdout.write(dumps_text(value, indent=True) + "\n")


def write_text(path: str | None, text: str) -> None:
    """Write to PATH, or to standard output when PATH is None or ``-``."""
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None


# where an argument's help lists the labels a tool can need (`with_labels` fills it)
LABELS = "{labels}"


def host_label_words() -> str:
    """Every label a host tool can need (the capability rows'), for help."""
    from forgec.ir.capabilities import label_list

    return ", ".join(label_list())


def with_labels(parser: argparse.ArgumentParser, words: Callable[[], str]) -> None:
    """Fill `LABELS` in `parser`'s argument help with `words()`, computed only when the help is
    formatted: building the parser (every command's, for `forgec --help`) imports no rows.
    Python 3.14 expands each help string once as the argument is added, to check it; that
    expansion leaves the placeholder alone."""
    base = parser.formatter_class

    class LabelsFormatter(base):  # type: ignore[valid-type,misc]
        _filling = False

        def format_help(self) -> str:
            self._filling = True
            return str(super().format_help())

        def _expand_help(self, action: argparse.Action) -> str:
            text = str(super()._expand_help(action))
            if self._filling and LABELS in text:
                text = text.replace(LABELS, words())
            return text

    parser.formatter_class = LabelsFormatter


def add_host_options(parser: argparse.ArgumentParser) -> None:
    """The reference host's options (SPEC §10), shared by `forgec run` and `forgec tools run`."""
    parser.add_argument(
        "--db",
        default=None,
        metavar="FILE",
        help="the host's SQLite database (`:memory:`: a throwaway one, gone after the run)",
    )
    parser.add_argument("--host-config", default=None, metavar="FILE", help="TOML host config")
    parser.add_argument(
        "--persona-labels",
        default=None,
        metavar="L,...",
        help="capability labels granted (default: every label the tool needs); the labels: "
        + LABELS,
    )
    parser.add_argument(
        "--credentials", default=None, metavar="FILE", help="credentials file (JSON or TOML)"
    )
    parser.add_argument(
        "--resolve",
        action="append",
        default=[],
        metavar="HOST:PORT:ADDR",
        help="curl-style name override (repeatable)",
    )
    parser.add_argument("--replay", default=None, metavar="FILE", help="recorded model answers")
    parser.add_argument(
        "--staged",
        action="store_true",
        help="change nothing: run on a copy of the host's data, hold back every write and "
        "send, and list them",
    )
    parser.add_argument(
        "--mock",
        default=None,
        metavar="FILE",
        help="with --staged: answers for held-back sends ([[mock]] step/result, as in a "
        "tests file)",
    )
    with_labels(parser, host_label_words)


def host_from_args(args: argparse.Namespace, *, default_labels: tuple[str, ...] = ()) -> Any:
    """Open the reference host the options describe; a bad option or config → UsageError."""
    from forgec.host import ConfigError
    from forgec.store.running import open_host_for

    labels = getattr(args, "persona_labels", None)
    try:
        return open_host_for(
            db=getattr(args, "db", None),
            host_config=getattr(args, "host_config", None),
            persona_labels=[x.strip() for x in labels.split(",") if x.strip()]
            if labels is not None
            else None,
            default_labels=default_labels,
            credentials=getattr(args, "credentials", None),
            resolve=getattr(args, "resolve", None),
            replay=getattr(args, "replay", None),
            staged=bool(getattr(args, "staged", False)),
        )
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


def staged_host(args: argparse.Namespace, host: Any, program: Any) -> Any:
    """With `--staged`: HOST (opened on a copy) wrapped to hold back writes and sends, with
    `--mock FILE`'s answers checked against the capabilities' result shapes; else HOST."""
    if not getattr(args, "staged", False):
        if getattr(args, "mock", None):
            raise UsageError("--mock answers held-back sends: it needs --staged")
        return host
    from forgec.host.staged import StagedHost

    mocks = read_mocks(args.mock, program) if getattr(args, "mock", None) else []
    return StagedHost(host, mocks)


def read_mocks(path: str, program: Any) -> list[dict[str, Any]]:
    """`--mock FILE`: `[[mock]]` entries (TOML) or a JSON list, in the tests file's format,
    each checked as a tests file's mock is; a problem is a one-line UsageError."""
    import tomllib

    import orjson

    from forgec.testing import cases_from_json
    from forgec.testing.cases import jsonify

    data = read_source(path)
    try:
        if path.endswith(".json"):
            value = orjson.loads(data)
        else:
            value = jsonify(tomllib.loads(data.decode("utf-8"))).get("mock", [])
    except (orjson.JSONDecodeError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the mocks: {exc}") from None
    cases, found = cases_from_json([{"name": "staged", "mock": value}], program)
    diagnostics = [d for d in found if "/mock" in d.path]  # the input is not this file's
    if diagnostics:
        first = diagnostics[0]
        raise UsageError(f"{path}: {first.message} (at {first.path.removeprefix('/0')})")
    return [
        {"step": m.step, "result": m.result, "error": m.error, "message": m.message}
        for m in cases[0].mocks
    ]


def serve_in_foreground(banner: str) -> None:
    """Before a stdio server starts: Ctrl-C and SIGTERM end the process at once, and a person at
    a terminal is told what runs there.

    The servers read standard input in a worker thread, which Python's KeyboardInterrupt cannot
    stop: the interpreter waited for the next line (Ctrl-D) before exiting. The default action
    of both signals ends the process straight away; a server holds nothing a sudden end could
    damage (the store and the databases are SQLite, whose transactions survive it).
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        on_terminal = sys.stderr.isatty()
    except (AttributeError, ValueError):
        on_terminal = False
    if on_terminal:
        print(banner, file=sys.stderr, flush=True)


def refuse_typos(policy: Any, store_path: Any, personas_dir: Path | None) -> None:
    """SPEC §21: at start, a consent policy naming a forged tool the store does not hold, or
    a persona's `labels.txt` naming a label no tool needs, is a one-line error (exit 2): a
    typo must never silently allow a flow or seem to grant a tool. (The host config's own
    labels and flows, and the policy's tools and flows, are checked as they are read.)"""
    from forgec.host.config import unknown_label
    from forgec.host.delegation import load_personas
    from forgec.mcp.policy import unknown_forged
    from forgec.store import Store, StoreError

    if policy.forged_ids():
        try:
            with Store(store_path) as store:
                ids = [tool.id for tool in store.tools(on_problem=lambda _line: None)]
        except StoreError as exc:
            raise UsageError(str(exc)) from None
        problem = unknown_forged(policy, ids)
        if problem is not None:
            raise UsageError(problem)
    from forgec.host.delegation import PersonaError

    try:
        personas = load_personas(personas_dir)
    except PersonaError as exc:  # a persona file that is not UTF-8: one line naming it
        raise UsageError(str(exc)) from None
    for persona in personas.values():
        for label in persona.labels:
            problem = unknown_label(label)
            if problem is not None:
                where = persona.folder / "labels.txt" if persona.folder else persona.name
                raise UsageError(f"{where}: {problem}")


def new_store(store_path: Any) -> None:
    """Open (and close) the store a server will use, now, so a store it cannot use is one line
    before it serves. An explicit `--store` that does not exist yet is made only in a folder
    that exists (a mistyped folder must not become new, empty folders), and saying so on
    standard error: a typo never silently serves an empty store."""
    from forgec.store import Store

    path = Path(store_path).expanduser() if store_path is not None else None
    fresh = path is not None and not path.exists()
    Store(path, create="file").close()
    if fresh:
        print(f"forgec: a new, empty tool store at {path}", file=sys.stderr)


def closest(word: str, choices: list[str]) -> str | None:
    """The one "did you mean" (`forgec.ir.suggest`), for the command line's own words."""
    from forgec.ir.suggest import closest as nearest

    return nearest(word, choices)
