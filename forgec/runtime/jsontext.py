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

The runtime owns this module (it renders templates); the compiler, the store and the
formatters import it from here.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

# A float token can only start where a digit is followed by `.` or an exponent; most documents
# hold none, and then orjson's bytes are returned as they are (one C-speed search).
_MAYBE_FLOAT = re.compile(rb"[0-9][.eE]")
# Strings are matched (and kept) so that digits inside them are never touched.
_TOKEN = re.compile(
    rb'"[^"\\]*(?:\\.[^"\\]*)*"|(-?[0-9]+(?:\.[0-9]+)?[eE][+-]?[0-9]+|-?[0-9]+\.[0-9]+)',
    re.DOTALL,
)
_INF = float("inf")


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


def normalize(raw: bytes) -> bytes:
    """orjson output with every float token written by `format_float`."""
    if _MAYBE_FLOAT.search(raw) is None:
        return raw
    return _TOKEN.sub(_float_token, raw)


def dumps(value: Any, *, indent: bool = False) -> bytes:
    """Compact (or 2-space indented) UTF-8 JSON, byte-identical across orjson releases.

    Raises what `orjson.dumps` raises (`TypeError` / `orjson.JSONEncodeError`) for values
    JSON cannot hold."""
    raw = orjson.dumps(value, option=orjson.OPT_INDENT_2) if indent else orjson.dumps(value)
    return normalize(raw)


def dumps_text(value: Any, *, indent: bool = False) -> str:
    """`dumps` as a str."""
    return dumps(value, indent=indent).decode("utf-8")
