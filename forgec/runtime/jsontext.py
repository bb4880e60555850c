"""forgec's own JSON text: orjson's speed, forgec's number rendering.

Every byte forgec writes that someone may compare or hash — `.talostool` and `.forge` text,
template output, a Program's JSON, the store's content hash — must be the same whatever
release of orjson is installed. orjson is stable for strings, integers and layout, but not for
floats: 3.13 writes `1e20` as `1e+20`. So floats are forgec's to render (`format_float`) and
`dumps` rewrites the float tokens of orjson's output with it.

The rendering is the one forgec has always written (orjson before 3.13, the `ryu` layout): the
shortest digits that read back as the same double (Python's `repr` digits), written as plain
decimals while the decimal exponent is within -5 < e <= 16 and as `d.ddde±x` (no `+`, no
leading zeros in the exponent) outside it, with `.0` on whole numbers: `0.1`, `100.0`,
`0.00001`, `1e-6`, `1e16`, `1.5e300`. Non-finite floats, which JSON cannot hold, are `null`
as orjson writes them.

Every string is written so that no character of `forgec.ir.text_rules.ESCAPED_ON_OUTPUT`
appears raw (SPEC §14: text forgec writes for a person never holds a raw control or bidi
character): orjson already escapes C0 as JSON requires; DEL, C1 (U+0080–U+009F), the bidi
controls and U+2028/U+2029 are rewritten as `\\uXXXX` escapes. Those characters can only occur
inside JSON strings (the structure is ASCII), so the rewrite never changes what the text parses
to: `loads(dumps(v)) == v`, and `dumps(loads(t)) == dumps(v)`.

Stored versions and content hashes: the store hashes the stored text itself (re-read, never
re-rendered), so a version stored before this rule keeps its hash and stays valid. Only a
manifest holding such a character gets a different stored text — and so a different hash —
when it is installed again; the forgec version is part of every hash anyway, so no consent
was ever carried across releases by hash equality. `escape=False` gives orjson's own string
text, for the schema-1 hash that was computed over it; `compact` is that text for values a run
measures and renders (sizes and template placeholders are data, not display).

The runtime owns this module (it renders templates); the compiler, the store and the
formatters import it from here.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from forgec.ir.text_rules import ESCAPED_ON_OUTPUT, ESCAPED_ON_OUTPUT_CHARS

# the table's ranges past C1 (bidi controls, line separators, surrogates): C0 is JSON's own
ESCAPED_ON_OUTPUT_RANGES_ABOVE_C1 = tuple((lo, hi) for lo, hi in ESCAPED_ON_OUTPUT if lo > 0x9F)

# A float token can only start where a digit is followed by `.` or an exponent; most documents
# hold none, and then orjson's bytes are returned as they are (one C-speed search).
_MAYBE_FLOAT = re.compile(rb"[0-9][.eE]")
# Strings are matched (and kept) so that digits inside them are never touched.
_TOKEN = re.compile(
    rb'"[^"\\]*(?:\\.[^"\\]*)*"|(-?[0-9]+(?:\.[0-9]+)?[eE][+-]?[0-9]+|-?[0-9]+\.[0-9]+)',
    re.DOTALL,
)
_INF = float("inf")


def _raw_escaped_bytes() -> re.Pattern[bytes]:
    """A byte pattern of the UTF-8 forms of every table character orjson writes raw, grouped
    by their leading bytes (`\xe2\x80[\x8e\x8f\xa8-\xae]`): one scan, no alternation of
    dozens of literals."""
    groups: dict[bytes, list[int]] = {}
    for ch in sorted(ESCAPED_ON_OUTPUT_CHARS):
        if ord(ch) < 0x20 or 0xD800 <= ord(ch) <= 0xDFFF:
            continue  # orjson escapes C0 itself and refuses lone surrogates
        encoded = ch.encode("utf-8")
        groups.setdefault(encoded[:-1], []).append(encoded[-1])
    alternatives = [
        re.escape(lead) + b"[" + b"".join(re.escape(bytes([last])) for last in lasts) + b"]"
        for lead, lasts in groups.items()
    ]
    return re.compile(b"|".join(alternatives))


_RAW_ESCAPED = _raw_escaped_bytes()


def _json_escape(match: re.Match[bytes]) -> bytes:
    return b"\\u%04x" % ord(match.group().decode("utf-8"))


def format_float(x: float) -> str:
    """The JSON text of one float (see the module doc for the layout)."""
    if x != x or x in (_INF, -_INF):
        return "null"
    text = repr(float(x))  # shortest round-trip digits, e.g. '1e+20', '2.5e-05', '100.0'
    sign = ""
    if text[0] == "-":
        sign, text = "-", text[1:]
    mantissa, _, exp_text = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    exponent = (int(exp_text) if exp_text else 0) - len(frac)
    digits = (whole + frac).lstrip("0")
    if not digits:
        return sign + "0.0"
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    # value = int(digits) * 10**exponent; `point` is where the decimal point goes in `digits`
    length = len(digits)
    point = length + exponent
    if exponent >= 0 and point <= 16:
        body = digits + "0" * exponent + ".0"
    elif 0 < point <= 16:
        body = digits[:point] + "." + digits[point:]
    elif -5 < point <= 0:
        body = "0." + "0" * -point + digits
    elif length == 1:
        body = f"{digits}e{point - 1}"
    else:
        body = f"{digits[0]}.{digits[1:]}e{point - 1}"
    return sign + body


def _float_token(match: re.Match[bytes]) -> bytes:
    number = match.group(1)
    if number is None:
        return match.group(0)
    return format_float(float(number)).encode("ascii")


_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_FLOAT_OUTSIDE = re.compile(rb"[0-9][.eE]")


def normalize(raw: bytes) -> bytes:
    """orjson output with every float token written by `format_float`.

    Linear, and cheap when no float stands outside a string (the common case: diagnostics,
    SARIF): strings are blanked by one C-level substitution and the rest searched, so the
    per-token Python callback runs only when there is a float to rewrite."""
    if _MAYBE_FLOAT.search(raw) is None:
        return raw
    if _FLOAT_OUTSIDE.search(_STRING.sub(b'""', raw)) is None:
        return raw
    return _TOKEN.sub(_float_token, raw)


def escape_unsafe(raw: bytes) -> bytes:
    """JSON text with every raw DEL, C1, bidi or line-separator character as a `\\u` escape."""
    if _RAW_ESCAPED.search(raw) is None:
        return raw
    return _RAW_ESCAPED.sub(_json_escape, raw)


_RAW_ESCAPED_TEXT = re.compile(
    "["
    + "".join(
        f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in ((0x7F, 0x9F), *ESCAPED_ON_OUTPUT_RANGES_ABOVE_C1)
    )
    + "]"
)


def escape_unsafe_text(text: str) -> str:
    """`escape_unsafe` for JSON text held as a `str` (another library's output: an MCP SDK
    message): every raw DEL, C1, bidi, line-separator or lone-surrogate character as a `\\u`
    escape. JSON text holds such characters only inside strings, where the escape means the same
    character, so the text parses to the same value (SPEC §14: what a machine reads)."""
    if _RAW_ESCAPED_TEXT.search(text) is None:
        return text
    return _RAW_ESCAPED_TEXT.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def dumps(value: Any, *, indent: bool = False, escape: bool = True) -> bytes:
    """Compact (or 2-space indented) UTF-8 JSON, byte-identical across orjson releases, with
    the characters of SPEC §14 escaped (module doc; `escape=False` keeps orjson's strings).

    Raises what `orjson.dumps` raises (`TypeError` / `orjson.JSONEncodeError`) for values
    JSON cannot hold."""
    raw = orjson.dumps(value, option=orjson.OPT_INDENT_2) if indent else orjson.dumps(value)
    return escape_unsafe(normalize(raw)) if escape else normalize(raw)


def compact(value: Any) -> bytes:
    """The compact JSON a run measures and renders values in (SPEC §16's value size, a
    template placeholder): data, not text for a person, so orjson's strings unescaped — the
    checker's size bound and the VM's measure stay one function."""
    return normalize(orjson.dumps(value))


def dumps_text(value: Any, *, indent: bool = False) -> str:
    """`dumps` as a str."""
    return dumps(value, indent=indent).decode("utf-8")
