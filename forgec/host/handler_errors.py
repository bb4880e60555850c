"""What the capability handlers share for failing: one error code, one size measure.

The input itself is checked once, at the bridge, by the capability's row (`forgec.ir.shapes`,
the check `forgec check` runs on literals), so a handler reads fields it can trust. Every
failure is a `HostError` with `RUN_CAPABILITY_FAILED` and a message naming the field.
"""

from __future__ import annotations

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


def whole(value: Any, default: int) -> int:
    """An optional integer field the shape has checked (run-time data may spell it `5.0`)."""
    return default if value is None else int(value)
