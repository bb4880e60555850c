"""The `forgec` command line: parses arguments, calls the library, prints. Nothing else.

Each subcommand lives in `forgec.commands.<module>` with a `register(subparsers)` function that
adds its parser and sets `handler`. Command modules import only argparse at module level and
the library inside their handlers, so `forgec --help` stays fast (no lark, no host).

Exit status (SPEC §10): 0 no errors, 1 the input has errors or the run failed, 2 bad usage or an
unreadable file.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from collections.abc import Sequence

from forgec.commands import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, UsageError

__all__ = ["EXIT_ERRORS", "EXIT_OK", "EXIT_USAGE", "UsageError", "build_parser", "entry", "main"]

COMMAND_MODULES = (
    "check",
    "inspect",
    "explain",
    "schema",
    "compile",
    "fmt",
    "graph",
    "lower",
    "run",
    "test",
    "tools",
    "mcp",
    "lsp",
    "screen",
    "talond",
)


class _SubParsers(argparse._SubParsersAction):
    """Every command's `--help` opens with the line the command list shows for it."""

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        if kwargs.get("description") is None and kwargs.get("help") is not None:
            kwargs["description"] = kwargs["help"]
        return super().add_parser(name, **kwargs)  # type: ignore[arg-type]


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.register("action", "parsers", _SubParsers)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost (sub)command parser the words chose (`forgec tools install`)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest or "", None)
            if isinstance(name, str) and name in action.choices:
                return _chosen(action.choices[name], args)
    return parser


def _unknown(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    """Words no option took: the chosen command's usage, and the option meant by a misspelt
    flag (`--fromat` → `--format`)."""
    from forgec.commands.common import closest

    chosen = _chosen(parser, args)
    flags = [o for a in chosen._actions for o in a.option_strings if o.startswith("--")]
    message = f"unrecognized arguments: {' '.join(extra)}"
    for word in extra:
        guess = closest(word.split("=", 1)[0], flags) if word.startswith("-") else None
        if guess is not None:
            message += f" (did you mean `{guess}`?)"
            break
    chosen.error(message)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (`only`, a name in COMMAND_MODULES) just that command's parser.

    A command's parser reads only its own arguments, so `forgec check x` parses exactly as with
    every command registered; registering the other thirteen (importing their modules, building
    their parsers) would be start-up paid for nothing. Anything else (no command, `--help`, a
    typo) gets the whole parser, so help and "invalid choice" errors list every command."""
    from forgec import __version__

    parser = _Parser(
        prog="forgec",
        description="Check, compile, lower and run forged tools (.talostool and .forge).",
    )
    parser.add_argument("--version", action="version", version=f"forgec {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in (only,) if only in COMMAND_MODULES else COMMAND_MODULES:
        try:
            module = importlib.import_module(f"forgec.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"forgec.commands.{name}":
                raise
            continue  # a command not built yet in this checkout
        module.register(subparsers)
    return parser


# Commands whose process runs with the cyclic collector off (`entry`): a check leaves no
# reference cycle (tests/test_check_garbage.py; none either over every example and corpus file,
# flows included), so reference counting frees all it builds, and the collections that the
# start-up's allocations would trigger only traverse every imported module's objects:
# ≈ 19 M instructions, 3.7 ms, of a cold `forgec check` (docs/performance.md, "The cold check
# again"). Every other command, the servers above all, keeps the collector.
COLLECTOR_OFF = ("check",)


def entry() -> int:
    """The process's entry point (`forgec`, `python -m forgec`): `main`, with the collector
    off for the commands of `COLLECTOR_OFF`. `main` itself never turns it off (tests and other
    hosts call it in their own process); `check` turns it back on from a second file on."""
    if sys.argv[1:2] and sys.argv[1] in COLLECTOR_OFF:
        gc.disable()
    return main()


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words else None)
    args, leftover = parser.parse_known_args(words)
    if leftover:
        _unknown(parser, args, leftover)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_USAGE
    from forgec.commands.needs import extra_of_module, install_hint, missing_extras

    command = str(getattr(args, "command", ""))
    missing = missing_extras(command)
    if missing:
        print(f"forgec: error: {install_hint(command, missing)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        return int(handler(args))
    except ModuleNotFoundError as exc:
        # a dependency the table above does not list for this command: still one line
        extra = extra_of_module((exc.name or "").split(".")[0], command)
        if extra is None:
            raise
        print(f"forgec: error: {install_hint(command, [extra])}", file=sys.stderr)
        return EXIT_USAGE
    except UsageError as exc:
        print(f"forgec: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
