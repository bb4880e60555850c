"""`forgec WORDS…` run in the test's own process, through `forgec.cli.main`, answered as
`subprocess.run` answers (`returncode`, `stdout`, `stderr` as text).

For a test whose promise is a command's output and exit code: a subprocess pays the
interpreter's start-up and forgec's imports again (0.2–1 s of a 2-core machine a call) for
nothing the test looks at. A promise about the process itself — start-up time, signals, a
server's lifetime, stdin as a pipe, what a child inherits, a traceback printed by the
interpreter — keeps its real subprocess, and every command keeps at least one real-subprocess
test (docs/performance.md, "The suite's time"). The servers (`mcp serve`, `screen`, `lsp`,
`talond` without a subcommand) change signal handlers and never return: not for this runner.

An exception escaping `main` is not turned into an exit code: it fails the test with its
traceback, which is what a one-line-error promise wants to see.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

SERVERS = {("mcp", "serve"), ("screen",), ("lsp",)}


def run_main(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`forgec ARGS` in this process, in CWD, with ENV added to the environment and STDIN as
    its standard input (empty when None)."""
    from forgec.cli import main

    words = list(args)
    assert tuple(words[:2]) not in SERVERS and tuple(words[:1]) not in SERVERS, words
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", newline="")
    given = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), encoding="utf-8")
    with (
        contextlib.chdir(cwd or Path.cwd()),
        mock.patch.dict(os.environ, {"NO_COLOR": "1", **(env or {})}),
        mock.patch.object(sys, "stdout", out),
        mock.patch.object(sys, "stderr", err),
        mock.patch.object(sys, "stdin", given),
    ):
        try:
            code = main(words)
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode("utf-8"))  # type: ignore[attr-defined]
    return subprocess.CompletedProcess(["forgec", *words], int(code), texts[0], texts[1])
