"""What the capability handlers share for failing: one error code, one size measure.

The input itself is checked once, at the bridge, by the capability's row (`forgec.ir.shapes`,
the check `forgec check` runs on literals), so a handler reads fields it can trust. Every
failure is a `HostError` with `RUN_CAPABILITY_FAILED` and a message naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

import orjson

from forgec.runtime.host import HostError

FAILED = "RUN_CAPABILITY_FAILED"


def fail(message: str, *, transient: bool = False) -> NoReturn:
    raise HostError(FAILED, message, transient=transient)


def compact_size(value: Any) -> int:
    """Bytes of the value as compact UTF-8 JSON (how SPEC §5 measures input limits)."""
    try:
        return len(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        fail("the input is not a JSON value")


def fields(
    capability: str,
    value: Any,
    *,
    allowed: frozenset[str] | set[str],
    required: tuple[str, ...] = (),
) -> Mapping[str, Any]:
    """The input as an object with only known fields and every required one present.

    For inputs that have no row: a built-in sub-agent's own input (`subagent.invoke`'s
    `input`). A capability's input is checked by its row's shape at the bridge instead."""
    if not isinstance(value, Mapping):
        fail(f"{capability}: the input must be an object, not {type_name(value)}")
    unknown = sorted(k for k in value if k not in allowed)
    if unknown:
        fail(f"{capability}: unknown field {', '.join(repr(k) for k in unknown)}")
    for name in required:
        if name not in value or value[name] is None:
            fail(f"{capability}: `{name}` is required")
    return value


def whole(value: Any, default: int) -> int:
    """An optional integer field the shape has checked (run-time data may spell it `5.0`)."""
    return default if value is None else int(value)


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return type(value).__name__


def string(
    capability: str,
    inp: Mapping[str, Any],
    name: str,
    *,
    default: str | None = None,
    min_len: int = 0,
    max_len: int | None = None,
    choices: tuple[str, ...] | None = None,
) -> str | None:
    """An optional string field (None when absent and no default)."""
    value = inp.get(name)
    if value is None:
        return default
    if not isinstance(value, str):
        fail(f"{capability}: `{name}` must be a string, not {type_name(value)}")
    if len(value) < min_len:
        fail(f"{capability}: `{name}` must be at least {min_len} character(s)")
    if max_len is not None and len(value) > max_len:
        fail(f"{capability}: `{name}` must be at most {max_len} characters")
    if choices is not None and value not in choices:
        fail(f"{capability}: `{name}` must be one of {', '.join(choices)}, not {value!r}")
    return value


def req_string(capability: str, inp: Mapping[str, Any], name: str, **kw: Any) -> str:
    value = string(capability, inp, name, **kw)
    if value is None:
        fail(f"{capability}: `{name}` is required")
    return value


def integer(
    capability: str,
    inp: Mapping[str, Any],
    name: str,
    *,
    default: int,
    low: int,
    high: int,
    cap: bool = False,
) -> int:
    """An integer field in [low, high]; `cap` clamps values above `high` instead of failing."""
    value = inp.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        fail(f"{capability}: `{name}` must be a number, not {type_name(value)}")
    if isinstance(value, float):
        if not value.is_integer():
            fail(f"{capability}: `{name}` must be a whole number")
        value = int(value)
    if value < low:
        fail(f"{capability}: `{name}` must be at least {low}")
    if value > high:
        if cap:
            return high
        fail(f"{capability}: `{name}` must be at most {high}")
    return value


def boolean(capability: str, inp: Mapping[str, Any], name: str, *, default: bool) -> bool:
    value = inp.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        fail(f"{capability}: `{name}` must be true or false, not {type_name(value)}")
    return value
