"""URLs of `net.http` steps: which are acceptable, and which host they reach.

`check_url` accepts an absolute `http:` or `https:` URL with a host name, as `urllib.parse`
reads it. It refuses what different URL parsers read differently, because the checker, the
network pass and the HTTP client must all agree on the host: whitespace and control characters
(`urllib` silently drops tabs and newlines), backslashes (browsers and some clients read them as
`/`, moving the host), several `@` in the authority, and an invalid port.

`url_host` is the host as SPEC §5 defines it — hostname, lower-cased, without port or userinfo —
or None when the URL is not acceptable. The network pass compares it with the allowlist exactly
(no subdomain match); the host does the same at run time for every request and redirect.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit

SCHEMES = ("http", "https")
MAX_URL_LENGTH = 8192


def _split(url: str) -> tuple[SplitResult | None, list[str]]:
    if not isinstance(url, str):
        return None, ["a URL must be a string"]
    if not url:
        return None, ["the URL is empty"]
    if len(url) > MAX_URL_LENGTH:
        return None, [f"the URL is longer than {MAX_URL_LENGTH} characters"]
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in url):
        return None, ["the URL contains whitespace or control characters (percent-encode them)"]
    if "\\" in url:
        return None, ["the URL contains a backslash"]
    try:
        parts = urlsplit(url)
    except ValueError as error:
        return None, [f"the URL cannot be parsed ({error})"]
    problems: list[str] = []
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        shown = f"`{parts.scheme}:`" if parts.scheme else "no scheme"
        problems.append(f"only http: and https: URLs are allowed, this one has {shown}")
        return None, problems
    if not parts.netloc:
        return None, ["the URL has no host (expected http://host/... or https://host/...)"]
    if parts.netloc.count("@") > 1:
        problems.append("the URL's authority holds more than one `@`")
    try:
        hostname = parts.hostname
        port = parts.port
    except ValueError as error:
        return None, [f"the URL's host or port is invalid ({error})"]
    if not hostname:
        problems.append("the URL has no host name")
    if port is not None and not 1 <= port <= 65535:
        problems.append(f"port {port} is out of range 1-65535")
    return (parts if not problems else None), problems


def check_url(url: str) -> list[str]:
    """Problems with a `net.http` URL (empty when it is an acceptable http/https URL)."""
    return _split(url)[1]


def url_host(url: str) -> str | None:
    """The URL's host: hostname, lower-cased, no port or userinfo; None if not acceptable."""
    parts, problems = _split(url)
    if parts is None or problems:
        return None
    host = parts.hostname
    return host.lower() if host else None
