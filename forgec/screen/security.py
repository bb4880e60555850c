"""Only the person at the screen (SPEC §18): one ASGI middleware every request goes through.

Who can reach the screen at all: processes on this machine (it listens on 127.0.0.1 only).
Of those, only the one holding the launch token, which `forgec screen` prints once on its
stdout and which the browser keeps as an HttpOnly, SameSite=Strict cookie (the first request
carries it in the URL; the answer sets the cookie and redirects to the same page without it, so
the token leaves the address bar and the history at once). In order, each request must:

1. name this server in `Host` (`127.0.0.1:PORT` or `localhost:PORT`): a page on another origin
   that rebinds its DNS name to 127.0.0.1 sends its own name, and is refused (421);
2. carry the token (cookie, or `?token=` on a GET, which then becomes the cookie): else 403;
3. when it changes anything (every method but GET and HEAD): come from this origin (`Origin`
   equal to `http://` + the Host it sent) and carry the CSRF token of this run (the form field
   `csrf`, checked by `forgec.screen.pages.action`, or the header `X-CSRF-Token` for the JSON
   API): else 403;
4. fit in `MAX_BODY` bytes (a `.forge` source is at most 256 KiB): else 413.

Every answer that sends the browser somewhere (`Location`) sends it only within this origin:
`same_origin_location` resolves the exact header value against the origin as a browser does
(the WHATWG URL rule, through `ada_url`: `\\` read as `/`, tabs and newlines dropped, leading
control characters and spaces stripped, `.` and `..` segments applied) and compares the origins;
anything else becomes `/`. It is applied to every answer on its way out, the login redirect's
included, so no route can forget it.

Every answer carries the Content-Security-Policy (scripts and styles from this origin only, no
inline script or style, no frame, no form to another origin), `X-Frame-Options: DENY`,
`Referrer-Policy: same-origin`, `Cache-Control: no-store` and `nosniff`.
"""

from __future__ import annotations

import contextlib
import hmac
import re
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import attrs

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    # not no-referrer: with it Chromium sends `Origin: null` on a same-origin form POST
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)
MAX_BODY = 1024 * 1024
# what a header value may hold and be read back unchanged by every browser and by h11:
# printable ASCII (a control character, a space or a byte over 0x7e is not sent, never mended)
_HEADER_SAFE = re.compile(r"[\x21-\x7e]*\Z")
SAFE_METHODS = ("GET", "HEAD")


@attrs.define
class Secrets:
    """This run's launch token and CSRF token (fresh for every `forgec screen`), and its port
    (known once the socket is bound)."""

    token: str = attrs.field(factory=lambda: secrets.token_urlsafe(32))
    csrf: str = attrs.field(factory=lambda: secrets.token_urlsafe(32))
    port: int = 0

    @property
    def cookie_name(self) -> str:
        # cookies ignore the port: two screens on one machine must not overwrite each other's
        return f"forgec_screen_{self.port}"

    def hosts(self) -> tuple[str, ...]:
        return (f"127.0.0.1:{self.port}", f"localhost:{self.port}")


def same_origin_location(location: str, origin: str) -> str:
    """LOCATION if a browser on ORIGIN (`http://127.0.0.1:PORT`) would follow it to ORIGIN
    itself, else `/`.

    Decided as the browser decides (WHATWG URL, `ada_url`): the value is resolved against the
    origin's root and the resolved URL's origin must equal ORIGIN. So `//host`, `/\\host`,
    `/\t/host`, `\\\\host`, `http:host`, `/x/..//host` (a path that only becomes `//host` as a
    pathname, still same-origin as sent) and every other spelling of another origin is refused by
    what it means, not by how it is spelled."""
    from ada_url import URL

    if not _HEADER_SAFE.match(location):
        return "/"
    try:
        resolved = URL(location, origin + "/")
    except ValueError:  # a browser would not follow it either: stay here
        return "/"
    return location if resolved.origin == origin else "/"


def same(a: str | None, b: str) -> bool:
    """Constant-time equality of two tokens (None never matches)."""
    return a is not None and hmac.compare_digest(a.encode(), b.encode())


class Guard:
    """The middleware of the module doc, around the whole app."""

    def __init__(self, app: ASGIApp, keys: Secrets) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # no websocket, nothing else
        headers = _headers(scope)
        host = headers.get("host", "")
        if host not in self.keys.hosts():
            await _plain(send, 421, "this server answers only as 127.0.0.1 or localhost")
            return
        method = scope["method"]
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        cookie = _cookie(headers.get("cookie", ""), self.keys.cookie_name)
        if method in SAFE_METHODS and "token" in query:
            if not same(query["token"], self.keys.token):
                await _plain(send, 403, "wrong token: open the link `forgec screen` printed")
                return
            await _login(send, self.keys, scope, query, f"http://{host}")
            return
        if not same(cookie, self.keys.token):
            await _plain(send, 403, "no token: open the link `forgec screen` printed")
            return
        if method not in SAFE_METHODS:
            if headers.get("origin") != f"http://{host}":
                await _plain(send, 403, "refused: a change must come from this page")
                return
            api = scope["path"].startswith("/api/")
            if api and not same(headers.get("x-csrf-token"), self.keys.csrf):
                await _plain(send, 403, "refused: missing or wrong CSRF token")
                return
            length = headers.get("content-length")
            if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
                await _plain(send, 413, "too large")
                return
            receive = _capped(receive)
        # a body without Content-Length that grows past MAX_BODY stops the request (answered 500)
        with contextlib.suppress(BodyTooLarge):
            await self.app(scope, receive, _with_headers(send, f"http://{host}"))


def _headers(scope: Scope) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers", []):
        name = k.decode("latin-1").lower()
        # a repeated Host, Origin or Cookie header is an attack, not a browser: keep neither
        out[name] = "" if name in out and name in ("host", "origin") else v.decode("latin-1")
    return out


def _cookie(header: str, name: str) -> str | None:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None else None


def _capped(receive: Receive) -> Receive:
    """RECEIVE that refuses a body past MAX_BODY even without a Content-Length."""
    seen = 0

    async def wrapped() -> Message:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > MAX_BODY:
                raise BodyTooLarge
        return message

    return wrapped


class BodyTooLarge(Exception):
    pass


def _with_headers(send: Send, origin: str) -> Send:
    """SEND with the policy headers added to the answer, and its `Location` (if any) kept
    within ORIGIN (`same_origin_location`)."""

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [
                *_within(message.get("headers", []), origin),
                *HEADERS,
            ]
        await send(message)

    return wrapped


def _within(headers: Any, origin: str) -> list[tuple[bytes, bytes]]:
    out = []
    for name, value in headers:
        if bytes(name).lower() == b"location":
            value = same_origin_location(bytes(value).decode("latin-1"), origin).encode()
        out.append((name, value))
    return out


async def _plain(send: Send, status: int, text: str) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), *HEADERS],
        }
    )
    await send({"type": "http.response.body", "body": (text + "\n").encode()})


async def _login(
    send: Send, keys: Secrets, scope: Scope, query: dict[str, str], origin: str
) -> None:
    """Set the cookie and send the browser to the same page without the token in its URL: the
    path as the request spelled it (still percent-encoded), when a browser reads it as this
    origin (`same_origin_location`); else the root."""
    rest = {k: v for k, v in query.items() if k != "token"}
    raw = scope.get("raw_path")
    path = bytes(raw).decode("latin-1") if raw else quote(scope["path"])
    location = same_origin_location(path + ("?" + urlencode(rest) if rest else ""), origin)
    cookie = f"{keys.cookie_name}={keys.token}; HttpOnly; SameSite=Strict; Path=/"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", location.encode("ascii")),
                (b"set-cookie", cookie.encode()),
                *HEADERS,
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})
