"""Small helpers shared by subcommands: reading files, the --target and --format options."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from forgec.cli import UsageError


def add_target(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target",
        choices=("talos", "talon"),
        default="talos",
        help="capability catalog to check against (default: talos)",
    )


def add_format(parser: argparse.ArgumentParser, *choices: str, default: str | None = None) -> None:
    parser.add_argument(
        "--format",
        choices=choices,
        default=default or choices[0],
        help=f"output format (default: {default or choices[0]})",
    )


def read_source(path: str) -> bytes:
    """The bytes of PATH (``-`` for standard input); unreadable → UsageError (exit 2)."""
    if path == "-":
        return sys.stdin.buffer.read()
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a directory") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None


def write_text(path: str | None, text: str) -> None:
    """Write to PATH, or to standard output when PATH is None or ``-``."""
    if path is None or path == "-":
        sys.stdout.write(text)
        return
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None
