"""A throwaway HTTP(S) server on 127.0.0.1 for tests of the host's network and model clients.

`serving(Handler, seen=[])` starts a threaded server on a free port with the given attributes
set on it (handlers record what they saw there), optionally behind TLS, and stops it on exit.
"""

from __future__ import annotations

import http.server
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def serving(
    handler: type[http.server.BaseHTTPRequestHandler],
    *,
    tls: ssl.SSLContext | None = None,
    **state: Any,
) -> Iterator[http.server.ThreadingHTTPServer]:
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    srv.daemon_threads = True
    for name, value in state.items():
        setattr(srv, name, value)
    if tls is not None:
        srv.socket = tls.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
