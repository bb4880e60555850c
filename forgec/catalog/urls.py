"""URLs of `net.http` steps: which are acceptable, and which host they reach — the one URL parser.

SPEC §16 asks for one URL parser: the checker (`check_url`, the network pass's `url_host`) and
the host at run time (`forgec.host.http`, for the first request and for every redirect) all call
`parse_url` below, so they cannot disagree on the host a URL reaches. It reads the URL with
`httpx.URL` (imported lazily) — the parser of the client that actually sends the request — and
then refuses what a reader could take two ways:

- whitespace and control characters (some parsers silently drop tabs and newlines), and
  backslashes (browsers and some clients read them as `/`, moving the host);
- any `@` in the authority: `user:password@` bypasses the credential rules, and
  `http://a.com@b.com` goes to `b.com` while a person reads `a.com`;
- a percent sign in the host (`%65xample.com`), an empty label (`a..com`), a trailing dot
  (`example.com.` is the same DNS name as `example.com`, but not the same allowlist entry);
- a scheme other than http/https, no host, an invalid port or one outside 1-65535.

The host is lower-cased, in punycode for an internationalised name (`bücher.de` →
`xn--bcher-kva.de`, as httpx sends it), without port or userinfo. The network pass compares it
with the allowlist exactly (no subdomain match); the host does the same for every request.
"""

from __future__ import annotations

from typing import Any, NamedTuple

SCHEMES = ("http", "https")
MAX_URL_LENGTH = 8192


class UrlParts(NamedTuple):
    scheme: str  # "http" or "https"
    host: str  # lower-cased, punycode, no port, no userinfo; an IPv6 address without brackets
    port: int | None  # None when it is the scheme's default


def _authority(url: str) -> str:
    """The text between `scheme://` and the first `/`, `?` or `#` (as written)."""
    start = url.find("//")
    if start < 0:
        return ""
    rest = url[start + 2 :]
    ends = [i for i in (rest.find(c) for c in "/?#") if i >= 0]
    return rest[: min(ends)] if ends else rest


def parse_url(url: Any) -> tuple[UrlParts | None, list[str]]:
    """The URL's scheme, host and port, or None with every reason it is not acceptable."""
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
    import httpx

    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError, TypeError) as error:
        return None, [f"the URL cannot be parsed ({str(error)[:120]})"]
    scheme = parsed.scheme.lower()
    if scheme not in SCHEMES:
        shown = f"`{parsed.scheme}:`" if parsed.scheme else "no scheme"
        return None, [f"only http: and https: URLs are allowed, this one has {shown}"]
    if not url[len(parsed.scheme) + 1 :].startswith("//"):
        return None, ["the URL has no host (expected http://host/... or https://host/...)"]
    if "@" in _authority(url):
        return None, ["a URL may not hold `user:password@` (declare a credential instead)"]
    raw = parsed.raw_host
    host = (raw.decode("ascii", "replace") if isinstance(raw, bytes) else str(raw)).lower()
    problems: list[str] = []
    if not host:
        return None, ["the URL has no host name"]
    if "%" in host:
        problems.append("the URL's host is percent-encoded: write it plainly")
    elif ":" not in host:  # a name or an IPv4 address (IPv6 is checked by httpx)
        labels = host.split(".")
        if host.endswith("."):
            problems.append("the URL's host ends with a dot: write it without")
        elif any(not label for label in labels):
            problems.append("the URL's host has an empty label (`..`)")
    port = parsed.port
    if port is not None and not 1 <= port <= 65535:
        problems.append(f"port {port} is out of range 1-65535")
    if problems:
        return None, problems
    return UrlParts(scheme, host, port), []


def check_url(url: str) -> list[str]:
    """Problems with a `net.http` URL (empty when it is an acceptable http/https URL)."""
    return parse_url(url)[1]


def url_host(url: str) -> str | None:
    """The URL's host: lower-cased, punycode, no port or userinfo; None if not acceptable."""
    parts, _ = parse_url(url)
    return parts.host if parts is not None else None


def check_url_template(parts: tuple[object, ...] | list[object]) -> list[str]:
    """Problems with a `net.http` URL that is a template, from its literal parts alone (SPEC
    §24: the literal parts of a templated URL are checked like a literal URL's).

    PARTS are the template's pieces, text (`str`) or a placeholder (anything else). What no
    substitution can change is judged by `parse_url`'s own rules: a character no URL may hold
    (whitespace, a control character, a backslash) in any text part; and, from the text before
    the first placeholder, the scheme once it is written out (`ftp://{{h}}/`), and the whole
    authority — host, port, `user:password@` — once a `/`, `?` or `#` closes it
    (`http://status.test:99999/{{p}}`). Anything a placeholder may still extend is left to the
    host at run time, which checks the URL it sends with the same parser.
    """
    texts = [p for p in parts if isinstance(p, str)]
    for text in texts:
        if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
            return ["the URL contains whitespace or control characters (percent-encode them)"]
        if "\\" in text:
            return ["the URL contains a backslash"]
    prefix = parts[0] if parts and isinstance(parts[0], str) else ""
    if len(prefix) > MAX_URL_LENGTH:
        return [f"the URL is longer than {MAX_URL_LENGTH} characters"]
    colon = prefix.find(":")
    if colon < 0:
        return []  # the scheme is not written out yet (`{{base}}/x`, `ht{{s}}://`)
    scheme = prefix[:colon]
    if not scheme or not scheme[0].isalpha() or not all(c.isalnum() or c in "+-." for c in scheme):
        return ["the URL does not start with a scheme (expected http:// or https://)"]
    if scheme.lower() not in SCHEMES:
        return [f"only http: and https: URLs are allowed, this one has `{scheme}:`"]
    rest = prefix[colon + 1 :]
    if len(rest) < 2:
        return []  # `http:{{x}}` or `http:/{{x}}`: the rest may still make `//host`
    if not rest.startswith("//"):
        return ["the URL has no host (expected http://host/... or https://host/...)"]
    authority = rest[2:]
    ends = [i for i in (authority.find(c) for c in "/?#") if i >= 0]
    if not ends:
        if "@" in authority:  # whatever follows, the userinfo is there
            return ["a URL may not hold `user:password@` (declare a credential instead)"]
        return []  # a placeholder may still extend the host or the port
    return parse_url(prefix[: colon + 3 + min(ends)] + "/")[1]
