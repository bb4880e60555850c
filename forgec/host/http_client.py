"""The one builder of outbound HTTP clients: `net.http`, model providers, talond's webhooks.

httpx sends (URLs, headers, streaming, the caller's redirect loop); httpcore connects. httpx's
own `HTTPTransport` takes no network backend, so a client gets `_CoreTransport`: a custom
transport (httpx's documented `BaseTransport.handle_request` API) that hands each request to a
public `httpcore.ConnectionPool` built with httpcore's documented `network_backend` parameter.
No private attribute of either library is read or written (a static test holds every module to
that).

The network backend, `_PinnedBackend`, is where the two promises of an outbound request live:
- **pinned address**: with `pins` (`{(host, port): address}`), a connection to host:port goes to
  that exact address, never a second lookup, and a host:port not in `pins` is refused
  (`RUN_NETWORK_DENIED`). The name still goes into the URL, so the `Host` header, TLS SNI and
  the certificate check use the name. Without `pins` (an operator-configured endpoint: a model
  provider, a webhook) the name is resolved by the system as usual.
- **one deadline**: every connect, TLS handshake, write and read gets only what is left of
  `deadline` (`time.monotonic()` seconds), so a server trickling bytes cannot hold a request past
  it (httpx's own timeouts are per operation).

Environment proxies are never used (`trust_env=False`, and the transport has no proxy).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from forgec.runtime.host import HostError

DENIED = "RUN_NETWORK_DENIED"


def tls_context(ca_file: Path | None = None) -> Any:
    """The TLS context: the system's CAs, plus `ca_file` (PEM) when given. Built once per file
    version: building one reads the whole CA bundle (measured 0.2 s on a loaded machine, two
    thirds of an instant model's turn in the daemon). Raises OSError / ssl.SSLError for a CA
    file that cannot be loaded."""
    if ca_file is None:
        return _tls_context(None, 0)
    return _tls_context(str(ca_file), Path(ca_file).stat().st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _tls_context(ca_file: str | None, _version: int) -> Any:
    import httpx

    context = httpx.create_ssl_context(trust_env=False)
    if ca_file is not None:
        context.load_verify_locations(cafile=ca_file)  # an extra trusted CA, on top of the system's
    return context


def _left(deadline: float, timeout: float | None, error: type[Exception]) -> float:
    """The time an I/O operation may take: its own timeout, never past the request's deadline."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise error("the request's deadline has passed")
    return left if timeout is None else min(timeout, left)


def _deadline_stream(stream: Any, deadline: float) -> Any:
    """`stream` (an httpcore network stream) with every read, write and TLS handshake cut off
    at `deadline`."""
    import httpcore

    class DeadlineStream(httpcore.NetworkStream):
        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return bytes(stream.read(max_bytes, _left(deadline, timeout, httpcore.ReadTimeout)))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            stream.write(buffer, _left(deadline, timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            stream.close()

        def start_tls(
            self,
            ssl_context: Any,
            server_hostname: str | None = None,
            timeout: float | None = None,
        ) -> Any:
            left = _left(deadline, timeout, httpcore.ConnectTimeout)
            return _deadline_stream(stream.start_tls(ssl_context, server_hostname, left), deadline)

        def get_extra_info(self, info: str) -> Any:
            return stream.get_extra_info(info)

    return DeadlineStream()


def _backend(pins: Mapping[tuple[str, int], str] | None, deadline: float, what: str) -> Any:
    import httpcore

    class PinnedBackend(httpcore.SyncBackend):
        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Any:
            address = host
            if pins is not None:
                pinned = pins.get((host.lower(), port))
                if pinned is None:  # every hop is pinned before it is sent: never a second lookup
                    raise HostError(DENIED, f"{what}: {host!r} was not resolved and checked")
                address = pinned
            stream = super().connect_tcp(
                address,
                port,
                timeout=_left(deadline, timeout, httpcore.ConnectTimeout),
                local_address=local_address,
                socket_options=socket_options,
            )
            return _deadline_stream(stream, deadline)

    return PinnedBackend()


def _as_httpx(exc: Exception) -> Exception:
    """An httpcore error as the httpx error callers catch (timeouts stay timeouts)."""
    import httpcore
    import httpx

    if isinstance(exc, httpcore.TimeoutException):
        return httpx.TimeoutException(str(exc))
    return httpx.TransportError(f"{type(exc).__name__}: {exc}")


@functools.cache
def _core_errors() -> tuple[type[Exception], ...]:
    """httpcore's errors a request may raise (httpcore imported on first use)."""
    import httpcore

    return (
        httpcore.TimeoutException,
        httpcore.NetworkError,
        httpcore.ProtocolError,
        httpcore.UnsupportedProtocol,
        httpcore.ProxyError,
    )


def _transport(pool: Any) -> Any:
    import httpcore
    import httpx

    class Body(httpx.SyncByteStream):
        def __init__(self, response: httpcore.Response) -> None:
            self.response = response

        def __iter__(self) -> Iterator[bytes]:
            try:
                yield from self.response.iter_stream()
            except _core_errors() as exc:
                raise _as_httpx(exc) from exc

        def close(self) -> None:
            self.response.close()

    class CoreTransport(httpx.BaseTransport):
        """httpx's request → httpcore's pool → httpx's response; the body stays a stream."""

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            core = httpcore.Request(
                request.method,
                str(request.url),
                headers=request.headers.raw,
                content=request.stream,
                extensions=request.extensions,  # the per-operation timeouts httpx computed
            )
            try:
                response = pool.handle_request(core)
            except _core_errors() as exc:
                raise _as_httpx(exc) from exc
            return httpx.Response(
                response.status,
                headers=response.headers,
                stream=Body(response),
                extensions=response.extensions,
            )

        def close(self) -> None:
            pool.close()

    return CoreTransport()


def make_client(
    *,
    deadline: float,
    pins: Mapping[tuple[str, int], str] | None = None,
    ca_file: Path | None = None,
    max_connections: int = 4,
    what: str = "HTTP",
) -> Any:
    """An `httpx.Client` whose every connection honours `pins` and `deadline` (see the module
    docstring). Redirects are not followed: a caller that follows them checks each hop itself.
    Raises OSError / ssl.SSLError when `ca_file` cannot be loaded."""
    import httpcore
    import httpx

    pool = httpcore.ConnectionPool(
        ssl_context=tls_context(ca_file),
        network_backend=_backend(pins, deadline, what),
        max_connections=max_connections,
    )
    return httpx.Client(
        transport=_transport(pool),
        timeout=httpx.Timeout(max(0.0, deadline - time.monotonic())),
        follow_redirects=False,
        trust_env=False,
    )
