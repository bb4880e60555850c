"""The one way a test talks to an MCP server over stdio: the official SDK's `ClientSession`
on a real subprocess (`python -m forgec mcp serve …` by default), initialized, then BODY.

    answer = run_session(["mcp", "serve", "--store", str(db)], body)          # body(session)
    run_session(args, body, started=out)   # out gets the InitializeResult (serverInfo, …)

`args` are `forgec`'s words (or, with `python_args`, the interpreter's own: `["-c", CODE,
…]`); the server's stderr goes to /dev/null; the whole session is bounded by `timeout`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent


def run_session(
    args: list[str],
    body: Any,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60,
    python_args: bool = False,
    started: list[Any] | None = None,
    **session_options: Any,
) -> Any:
    """Start the server, open a `ClientSession` (SESSION_OPTIONS: `elicitation_callback`, …),
    initialize it and return `await body(session)`."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=args if python_args else ["-m", "forgec", *args],
        env=env if env is not None else {"PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
        cwd=str(cwd or ROOT),
    )

    async def main() -> Any:
        with anyio.fail_after(timeout), open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, **session_options) as session,
            ):
                answer = await session.initialize()
                if started is not None:
                    started.append(answer)
                return await body(session)

    return anyio.run(main)


def run_client(
    command: list[str],
    body: Any,
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 90,
    errlog: Path | None = None,
    **client_options: Any,
) -> Any:
    """The same through the SDK's high-level `Client` (CLIENT_OPTIONS: `mode`,
    `elicitation_callback`, `message_handler`, …): COMMAND is the whole server command line;
    returns `await body(client)`; the server's stderr goes to ERRLOG when given."""
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=command[0],
        args=command[1:],
        env=env if env is not None else {"PYTHONPATH": str(ROOT), "NO_COLOR": "1"},
        cwd=str(cwd or ROOT),
    )

    async def main() -> Any:
        with anyio.fail_after(timeout), open(errlog or os.devnull, "w") as log:
            async with Client(stdio_client(params, errlog=log), **client_options) as client:  # type: ignore[arg-type]
                return await body(client)

    return anyio.run(main)
