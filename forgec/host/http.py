"""`net.http`: outbound HTTP(S) through the host, behind two allowlists.

Algorithm of one call:
1. Check the input (method, URL, string headers or `{"$credential": id}` values, body,
   `timeoutMs` default 30000 capped at 120000). A `$credential` header value is resolved
   only when `context.credential_headers` (set by the VM from the Program, never from data)
   names it for that header; one that arrived as data is refused.
2. For the first request and for every redirect (followed by hand, at most `max_redirects`):
   the URL must pass `forgec.catalog.urls.parse_url` (the checker's own URL parser: http or
   https, no userinfo, a plain host) and its host (lower-cased, punycode, no port) must be in
   the manifest's allowlist AND, when the host configuration lists hosts, in that list too (an
   empty host-side list leaves the manifest's as the only gate). A refusal is
   `RUN_NETWORK_DENIED` and nothing is sent.
3. The host name is resolved once, here, and every address it resolves to is checked against
   `forgec.host.addresses` (loopback, private, link-local, metadata, unique-local, multicast,
   unspecified...): one refused address refuses the hop (`RUN_NETWORK_DENIED`), unless the
   operator mapped that host (`--resolve`, `[network] resolve`: the mapping is the operator's
   word) or set `[network] allow_private = true`. The connection then goes to the address that
   was checked (`pins`): the HTTP library never resolves the name itself, so a DNS answer that
   changes between the check and the connect (rebinding) cannot steer it elsewhere.
4. A credential header is attached only to an `https` request to one of that credential's
   declared hosts: a first request over `http` that would carry one is refused, and so is a
   redirect to `http` on a host it would be attached to; a redirect to another host simply goes
   without it.
5. The response body is streamed and reading stops past 256 KiB (`RUN_RESULT_TOO_LARGE`); one
   deadline (`timeoutMs`) covers the name lookup, connect, TLS, headers, body and every hop:
   each socket operation gets only what is left of it (`forgec.host.http_client`, the one
   builder of outbound clients), so a server trickling bytes cannot hold the run past
   `timeoutMs`.

Name override (`--resolve HOST:PORT:ADDR`, as curl): the connection goes to ADDR instead of a
lookup of HOST. Everything else — the URL, the `Host` header, TLS SNI and certificate checks —
still uses HOST, so the request is the one the real name would get (the same holds for the
pinned address of step 3). Proxies from the environment are ignored (`trust_env=False`): they
would bypass both.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from forgec.catalog.urls import parse_url
from forgec.host import handler_errors as v
from forgec.host.addresses import refused
from forgec.host.credentials import CredentialStore
from forgec.host.handlers import HostCall, handles
from forgec.host.http_client import DENIED, make_client
from forgec.ir.shapes import json_type_name
from forgec.runtime.host import CallContext, HostError
from forgec.runtime.limits import RESULT_LIMIT

CAP = "net.http"
DEFAULT_TIMEOUT_MS = 30_000
MAX_BODY = RESULT_LIMIT  # a response body: what a capability result may be (SPEC §16)
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
# hop-by-hop and routing headers a flow may not set: the host decides them
_FORBIDDEN_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "upgrade",
        "te",
        "trailer",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
    }
)


def parse_resolve(entries: tuple[str, ...] | list[str]) -> dict[tuple[str, int], str]:
    """`HOST:PORT:ADDR` entries → {(host, port): addr}; ADDR may be a bracketed IPv6."""
    out: dict[tuple[str, int], str] = {}
    for entry in entries:
        m = re.match(r"^([^:\s]+):(\d{1,5}):(\[[0-9A-Fa-f:.]+\]|[^:\s\[\]]+)$", entry)
        if not m or not 0 < int(m.group(2)) < 65536:
            raise ValueError(f"--resolve {entry!r}: expected HOST:PORT:ADDR")
        out[(m.group(1).lower(), int(m.group(2)))] = m.group(3).strip("[]")
    return out


def _client(pins: Mapping[tuple[str, int], str], deadline: float, ca_file: Path | None) -> Any:
    """The one builder's client, pinned to `pins` (filled hop by hop, before each is sent)."""
    import ssl

    try:
        return make_client(deadline=deadline, pins=pins, ca_file=ca_file, what=CAP)
    except (OSError, ssl.SSLError) as exc:
        v.fail(f"{CAP}: cannot load the CA file {ca_file}: {exc}")


Resolver = Callable[[str, int], list[str]]


def system_resolver(host: str, port: int) -> list[str]:
    """The addresses the system's resolver gives `host` (every family, TCP)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _lookup(resolver: Resolver, host: str, port: int, deadline: float) -> list[str]:
    """`resolver(host, port)` within what is left of the request's deadline.

    `getaddrinfo` has no timeout of its own: it runs in a daemon thread the call stops
    waiting for at the deadline."""
    out: list[Any] = []

    def work() -> None:
        try:
            out.append(resolver(host, port))
        except (OSError, UnicodeError) as exc:
            out.append(exc)

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(max(0.0, deadline - time.monotonic()))
    if not out:
        v.fail(f"{CAP}: looking up {host!r} timed out", transient=True)
    if isinstance(out[0], Exception) or not out[0]:
        v.fail(f"{CAP}: cannot resolve host {host!r}", transient=True)
    return list(out[0])


def pin_address(
    host: str,
    port: int,
    *,
    resolve: Mapping[tuple[str, int], str],
    allow_private: bool,
    resolver: Resolver,
    deadline: float,
    what: str,
) -> str:
    """The one address a hop to host:port connects to (SPEC §14): the operator's mapping, else
    the resolver's first answer once every answer passed `addresses.refused`."""
    mapped = resolve.get((host, port))
    if mapped is not None:
        return mapped
    addresses = _lookup(resolver, host, port, deadline)
    if not allow_private:
        for address in addresses:
            try:
                why = refused(address)
            except ValueError:
                why = "not an IP address"
            if why is not None:
                raise HostError(
                    DENIED,
                    f"{what}: {host!r} resolves to {address}, a {why} address; net.http does "
                    "not connect into the machine's own network (the operator may map the host "
                    "with --resolve or set [network] allow_private = true)",
                )
    return addresses[0]


def check_url(url: str, context: CallContext, host_allow: tuple[str, ...], *, what: str) -> str:
    """The URL's host if it is acceptable and both allowlists pass; else RUN_NETWORK_DENIED.

    The host is decided by `forgec.catalog.urls.parse_url`, the function the checker uses."""
    parts, problems = parse_url(url)
    if parts is None:
        raise HostError(DENIED, f"{what}: {problems[0] if problems else 'the URL is refused'}")
    host = parts.host
    if host not in context.allowed_hosts:
        listed = ", ".join(context.allowed_hosts) or "none"
        raise HostError(
            DENIED, f"{what}: host {host!r} is not in the tool's network allowlist ({listed})"
        )
    if host_allow and host not in host_allow:
        raise HostError(DENIED, f"{what}: host {host!r} is not in the host's network allowlist")
    return host


def _headers(inp: Mapping[str, Any], context: CallContext) -> tuple[dict[str, str], dict[str, str]]:
    """(plain headers, header name → credential id)."""
    raw = inp.get("headers")
    if raw is None:
        return {}, {}
    if not isinstance(raw, Mapping):
        v.fail(f"{CAP}: `headers` must be an object of header name → string")
    plain: dict[str, str] = {}
    creds: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not _TOKEN.match(name):
            v.fail(f"{CAP}: invalid header name {name!r}")
        if name.lower() in _FORBIDDEN_HEADERS:
            v.fail(f"{CAP}: the {name!r} header is set by the host, not the flow")
        if isinstance(value, Mapping) and set(value) == {"$credential"}:
            cid = value["$credential"]
            if context.credential_headers.get(name) != cid:
                # data shaped like a credential (from input, a result, a model, state): the
                # checked manifest did not write it here, so it is never resolved
                v.fail(
                    f"{CAP}: header {name!r} holds a `$credential` object that arrived as data; "
                    "only credentials written in the tool's own headers are attached"
                )
            if not isinstance(cid, str) or cid not in context.credential_hosts:
                v.fail(
                    f"{CAP}: header {name!r} names credential {cid!r}, which the tool does not declare"
                )
            creds[name] = cid
        elif isinstance(value, str):
            if "\r" in value or "\n" in value or "\0" in value:
                v.fail(f"{CAP}: header {name!r} contains a line break")
            plain[name] = value
        else:
            v.fail(f"{CAP}: header {name!r} must be a string, not {json_type_name(value)}")
    return plain, creds


def request(
    inp: Mapping[str, Any],
    context: CallContext,
    *,
    credentials: CredentialStore,
    host_allow: tuple[str, ...] = (),
    resolve: Mapping[tuple[str, int], str] | None = None,
    max_redirects: int = 5,
    ca_file: Path | None = None,
    allow_private: bool = False,
    resolver: Resolver | None = None,
) -> dict[str, Any]:
    import httpx

    f = inp  # checked at the bridge by the row's shape (method, URL, caps applied)
    method = f["method"]
    url_text = f["url"]
    body = f.get("body")
    timeout_ms = v.whole(f.get("timeoutMs"), DEFAULT_TIMEOUT_MS)
    plain, cred_headers = _headers(f, context)
    first_host = check_url(url_text, context, host_allow, what=CAP)
    url = httpx.URL(url_text)  # parse_url read it with this same parser: it cannot fail now
    secrets: dict[str, str] = {}
    for name, cid in cred_headers.items():
        if first_host not in context.credential_hosts.get(cid, ()):
            raise HostError(
                DENIED,
                f"{CAP}: credential {cid!r} may only be sent to "
                f"{', '.join(context.credential_hosts.get(cid, ())) or 'no host'}, not {first_host!r}",
            )
        if url.scheme != "https":
            raise HostError(
                DENIED,
                f"{CAP}: credential {cid!r} is only sent over https, and this request is "
                f"plain {url.scheme}",
            )
        secret = credentials.get(cid)
        if secret is None:
            from forgec.host.credentials import how_to_supply

            raise HostError(
                "RUN_CREDENTIAL_MISSING",
                f"credential {cid!r} is not available: {how_to_supply(cid)}",
            )
        secrets[name] = secret

    deadline = time.monotonic() + timeout_ms / 1000
    content: bytes | None = body.encode("utf-8") if body is not None else None
    mapped = resolve or {}
    pins: dict[tuple[str, int], str] = {}
    client = _client(pins, deadline, ca_file)
    try:
        for hop in range(max_redirects + 1):
            what = CAP if hop == 0 else f"{CAP} redirect"
            host = first_host if hop == 0 else check_url(str(url), context, host_allow, what=what)
            headers = dict(plain)
            if not any(k.lower() == "accept-encoding" for k in headers):
                headers["accept-encoding"] = "gzip, deflate"  # the two `_decode` undoes
            for name, cid in cred_headers.items():
                if host not in context.credential_hosts.get(cid, ()):
                    continue  # another host: the request goes without the credential
                if url.scheme != "https":
                    raise HostError(
                        DENIED,
                        f"{what}: the server redirected to plain {url.scheme}, and credential "
                        f"{cid!r} is only sent over https",
                    )
                headers[name] = secrets[name]
            port = url.port or (443 if url.scheme == "https" else 80)
            if (host, port) not in pins:
                pins[(host, port)] = pin_address(
                    host,
                    port,
                    resolve=mapped,
                    allow_private=allow_private,
                    resolver=resolver or system_resolver,
                    deadline=deadline,
                    what=what,
                )
            status, resp_headers, text, location = _send(
                client, method, url, headers, content, deadline, timeout_ms
            )
            if status in (301, 302, 303, 307, 308) and location is not None:
                try:
                    url = url.join(location)
                except (httpx.InvalidURL, ValueError):
                    v.fail(f"{CAP}: the server redirected to an invalid URL")
                if status == 303 or (status in (301, 302) and method not in ("GET", "HEAD")):
                    method, content = "GET", None
                continue
            return {
                "status": status,
                "headers": resp_headers,
                "body": text,
            }
        v.fail(f"{CAP}: more than {max_redirects} redirects")
    finally:
        client.close()


def _send(
    client: Any,
    method: str,
    url: Any,
    headers: dict[str, str],
    content: bytes | None,
    deadline: float,
    timeout_ms: int,
) -> tuple[int, dict[str, str], str, str | None]:
    import httpx

    remaining = deadline - time.monotonic()
    if remaining <= 0:
        v.fail(f"{CAP}: timed out after {timeout_ms} ms", transient=True)
    try:
        with client.stream(
            method, url, headers=headers, content=content, timeout=httpx.Timeout(remaining)
        ) as resp:
            chunks: list[bytes] = []
            size = 0
            for chunk in resp.iter_raw():
                size += len(chunk)
                if size > MAX_BODY:
                    raise HostError(
                        "RUN_RESULT_TOO_LARGE",
                        f"{CAP}: the response body is larger than {MAX_BODY // 1024} KiB; stopped reading",
                    )
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    v.fail(f"{CAP}: timed out after {timeout_ms} ms", transient=True)
            merged: dict[str, str] = {}
            for name, value in resp.headers.multi_items():
                key = name.lower()
                merged[key] = f"{merged[key]}, {value}" if key in merged else value
            data = b"".join(chunks)
            encoding = resp.headers.get("content-encoding", "").lower()
            if encoding and encoding != "identity":
                data = _decode(data, encoding)
            try:
                text = data.decode(resp.charset_encoding or "utf-8", "replace")
            except LookupError:
                text = data.decode("utf-8", "replace")
            return resp.status_code, merged, text, resp.headers.get("location")
    except httpx.TimeoutException:
        v.fail(f"{CAP}: timed out after {timeout_ms} ms", transient=True)
    except httpx.HTTPError as exc:
        v.fail(f"{CAP}: request failed: {type(exc).__name__}: {exc}", transient=True)


def _decode(data: bytes, encoding: str) -> bytes:
    """Undo gzip/deflate, itself capped at 256 KiB (a small zip bomb must not blow up)."""
    import zlib

    if encoding not in ("gzip", "deflate", "x-gzip"):
        v.fail(f"{CAP}: unsupported response content-encoding {encoding!r}")
    wbits = 47 if encoding != "deflate" else zlib.MAX_WBITS
    decomp = zlib.decompressobj(wbits)
    try:
        out = decomp.decompress(data, MAX_BODY + 1)
    except zlib.error:
        v.fail(f"{CAP}: the response body is not valid {encoding}")
    if len(out) > MAX_BODY:
        raise HostError(
            "RUN_RESULT_TOO_LARGE",
            f"{CAP}: the decoded response body is larger than {MAX_BODY // 1024} KiB",
        )
    return out


@handles(CAP, own_connection=True)
def handle(call: HostCall) -> dict[str, Any]:
    host = call.host
    return request(
        call.input,
        call.context,
        credentials=host.credentials,
        host_allow=host.config.allow_hosts,
        resolve=host.resolve,
        max_redirects=host.config.max_redirects,
        ca_file=host.config.ca_file,
        allow_private=host.config.allow_private,
    )
