"""`forgec screen`: bind 127.0.0.1, print the launch URL as the first line on stdout, open the
browser unless asked not to, serve until Ctrl-C or SIGTERM.

The server is uvicorn (the ASGI server the Starlette project documents, and the one the MCP
SDK's HTTP transport runs on): we hand it a socket we bound ourselves, so the address is
loopback by construction and the port is known (port 0 = a free one) before the URL is printed.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import TextIO

from forgec.screen.app import ScreenConfig, build_app
from forgec.screen.security import Secrets

LOOPBACK = "127.0.0.1"


def bind(port: int) -> socket.socket:
    """A listening TCP socket on 127.0.0.1:PORT (0: any free port); OSError when it cannot."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((LOOPBACK, port))
        sock.listen(64)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def serve(
    *,
    store: Path | None,
    host_config: Path | None,
    port: int,
    open_browser: bool,
    check_budget: float = 5.0,
    out: TextIO = sys.stdout,
) -> int:
    import signal

    def stop(signum: int, frame: object) -> None:
        raise _Stop

    # before the URL is out, so a signal that comes before uvicorn's own handlers still stops
    # it; uvicorn re-raises the signal it caught after its graceful shutdown, which lands here
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)
    sock = bind(port)
    try:
        _run(
            sock,
            ScreenConfig(store=store, host_config=host_config, check_budget=check_budget),
            open_browser=open_browser,
            out=out,
        )
    except _Stop:
        pass
    finally:
        sock.close()
    return 0


def _run(sock: socket.socket, config: ScreenConfig, *, open_browser: bool, out: TextIO) -> None:
    import uvicorn

    config.keys = keys = Secrets(port=sock.getsockname()[1])
    app = build_app(config)
    url = f"http://{LOOPBACK}:{keys.port}/?token={keys.token}"
    out.write(f"Tool Forge screen: {url}\n")
    out.flush()
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
            proxy_headers=False,
            timeout_graceful_shutdown=3,
        )
    )
    server.run(sockets=[sock])  # uvicorn stops gracefully on SIGINT (Ctrl-C) and SIGTERM


class _Stop(BaseException):
    """Ctrl-C or SIGTERM: the server is done (exit status 0)."""
