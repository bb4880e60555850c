"""Why a text is not JSON, in forgec's words: the first problem and where it is.

The loader parses with orjson, but orjson's error messages and positions change between
releases (3.13 reworded the trailing-comma error and refuses deep nesting at a different
place). A diagnostic is a promise to the user, so when orjson refuses a text this strict,
iterative scanner (RFC 8259, plus orjson's refusals: lone surrogate escapes, numbers with a
fraction or exponent too large for a double) finds the first problem itself. It runs on the
error path only, so it favours plain code over speed; it never recurses, so any nesting is safe.

An integer is valid JSON however long it is; whether it is *safe* (within ±(2^53 − 1), SPEC
§16) is decided from its digits as written (`unsafe_integer_token`), never by converting it:
a parser turns one past 64 bits into a float or refuses it, and Python refuses to convert one
of more than 4300 digits. The loader and the `.forge` reader share that rule and its words.
"""

from __future__ import annotations

import re

from forgec.ir.rules import MAX_SAFE_INTEGER

DEPTH = "depth"  # the reason returned for a container nested deeper than `max_depth`

_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_PLAIN = re.compile(r'[^"\\\x00-\x1f]*')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_ESCAPES = frozenset('"\\/bfnrt')
_INF = float("inf")

EMPTY = "the document is empty"
EARLY_END = "the document ends too early (unclosed string, object or array?)"
TRAILING_COMMA = "a trailing comma is not allowed"
AFTER_END = "unexpected text after the end of the document"


def first_problem(text: str, *, max_depth: int) -> tuple[str, int] | None:
    """(reason, character offset) of the first thing that makes `text` not JSON, `DEPTH` when
    a container opens deeper than `max_depth` first; None when `text` is valid JSON."""
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]
    if pos == len(text):
        return EMPTY, 0
    # stack of open containers: "{" or "["; `comma` is the offset of the comma just read
    stack: list[str] = []
    comma = -1
    want = "value"  # "value" | "key" | "colon" | "after"
    n = len(text)
    while True:
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if pos == n:
            if not stack and want == "after":
                return None
            return EARLY_END, n
        c = text[pos]
        if want == "after":
            if not stack:
                return AFTER_END, pos
            close = "}" if stack[-1] == "{" else "]"
            if c == close:
                stack.pop()
                pos += 1
                continue
            if c == ",":
                comma = pos
                pos += 1
                want = "key" if stack[-1] == "{" else "value"
                continue
            return _unexpected(text, pos, f"`,` or `{close}`"), pos
        if want == "colon":
            if c != ":":
                return _unexpected(text, pos, "`:` after a key"), pos
            pos += 1
            want = "value"
            continue
        if want == "key":
            if c == "}" and comma < 0:
                stack.pop()  # `{}`
                pos += 1
                want = "after"
                continue
            if c == "}":
                return TRAILING_COMMA, comma
            if c != '"':
                return _not_a_value(text, pos, "a key in double quotes"), pos
            problem, pos = _string(text, pos)
            if problem is not None:
                return problem
            want = "colon"
            comma = -1
            continue
        # want == "value"
        if c in "]}" and comma >= 0 and stack:
            return TRAILING_COMMA, comma
        if c == "]" and stack and stack[-1] == "[" and comma < 0:
            stack.pop()  # `[]`
            pos += 1
            want = "after"
            continue
        comma = -1
        if c in "[{":
            if len(stack) >= max_depth:
                return DEPTH, pos
            stack.append(c)
            pos += 1
            want = "key" if c == "{" else "value"
            continue
        if c == '"':
            problem, pos = _string(text, pos)
            if problem is not None:
                return problem
            want = "after"
            continue
        m = _NUMBER.match(text, pos)
        if m is not None:
            whole = not any(c in m.group() for c in ".eE")
            if not whole and float(m.group()) in (_INF, -_INF):
                return "a number is too large to represent", pos
            end = m.end()
            if m.group() in ("0", "-0") and end < n and text[end].isdigit():
                return "a number starts with 0 (JSON numbers have no leading zeros)", pos
            pos = end
            want = "after"
            continue
        for word in ("true", "false", "null"):
            if text.startswith(word, pos):
                pos += len(word)
                want = "after"
                break
        else:
            return _not_a_value(text, pos, "a value"), pos


def _string(text: str, pos: int) -> tuple[tuple[str, int] | None, int]:
    """Scan the string starting at `pos` (a `"`): (problem or None, offset after it)."""
    pos += 1
    n = len(text)
    while True:
        pos = _PLAIN.match(text, pos).end()  # type: ignore[union-attr]
        if pos == n:
            return (EARLY_END, n), n
        c = text[pos]
        if c == '"':
            return None, pos + 1
        if c != "\\":
            return (
                ("a string contains a raw control character (write it as an escape)", pos),
                pos,
            )
        if pos + 1 == n:
            return (EARLY_END, n), n
        e = text[pos + 1]
        if e in _ESCAPES:
            pos += 2
            continue
        if e != "u":
            return ((f"`\\{_shown(e)}` is not a JSON escape", pos), pos)
        hex4 = _HEX4.match(text, pos + 2)
        if hex4 is None:
            return (("a `\\u` escape needs four hex digits", pos), pos)
        unit = int(hex4.group(), 16)
        if 0xDC00 <= unit <= 0xDFFF:
            return (("a `\\u` escape is a lone surrogate", pos), pos)
        if 0xD800 <= unit <= 0xDBFF:
            low = _HEX4.match(text, pos + 8) if text.startswith("\\u", pos + 6) else None
            if low is None or not 0xDC00 <= int(low.group(), 16) <= 0xDFFF:
                return (("a `\\u` escape is a lone surrogate", pos), pos)
            pos += 12
            continue
        pos += 6


def _not_a_value(text: str, pos: int, expected: str) -> str:
    rest = text[pos : pos + 12]
    for word in ("NaN", "Infinity", "-Infinity"):
        if rest.startswith(word):
            return f"`{word}` is not a JSON number"
    if rest.startswith(("//", "/*", "#")):
        return "comments are not allowed in JSON"
    if rest.startswith("'"):
        return "strings use double quotes in JSON"
    return _unexpected(text, pos, expected)


def _unexpected(text: str, pos: int, expected: str) -> str:
    if text.startswith(("//", "/*", "#"), pos):
        return "comments are not allowed in JSON"
    return f"unexpected character `{_shown(text[pos])}` (expected {expected})"


def _shown(c: str) -> str:
    if c.isprintable() and c != "`":
        return c
    return f"U+{ord(c):04X}"


_MAX_SAFE_DIGITS = str(MAX_SAFE_INTEGER)
UNSAFE_INTEGER_HINT = "write it as a string, or as a number with a fraction if precision may go"


def unsafe_integer_token(token: str) -> bool:
    """Whether an integer token as written (`-?[0-9]+`, no leading zero) lies outside
    ±(2^53 − 1); by its digits alone, so it costs its length whatever that is."""
    digits = token[1:] if token[:1] == "-" else token
    n = len(digits)
    return n > len(_MAX_SAFE_DIGITS) or (n == len(_MAX_SAFE_DIGITS) and digits > _MAX_SAFE_DIGITS)


def unsafe_integer_message(token: str) -> str:
    """The one wording of an unsafe integer for a token as written (a long one shortened)."""
    digits = len(token) - (token[:1] == "-")
    shown = token if len(token) <= 24 else f"{token[:12]}…{token[-4:]}` ({digits:,} digits)"
    shown = f"`{shown}" if shown.endswith(")") else f"`{shown}`"
    return (
        f"the integer {shown} is outside ±(2^53 − 1) = ±{MAX_SAFE_INTEGER}: not every JSON "
        "host keeps it exactly"
    )
