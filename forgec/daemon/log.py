"""One log line per firing, per task and per delivery: text for a person, or JSON lines.

A text line is `talond: EVENT key=value ...` with every value through the safe text of
SPEC §14 (a persona's answer or a model's error may hold terminal controls); a JSON line is one
compact object with `"event"` and the same fields (`--log-format json`).
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

import orjson

from forgec.render.safe import safe_text
from forgec.runtime.jsontext import escape_unsafe_text

_MAX_VALUE = 300  # characters of one value on a text line


class Log:
    def __init__(self, fmt: str = "text", stream: TextIO | None = None) -> None:
        self.fmt = fmt
        self.stream = stream if stream is not None else sys.stdout
        self._lock = threading.Lock()

    def event(self, event: str, **fields: Any) -> None:
        if self.fmt == "json":
            # SPEC §14: a JSON log line holds no raw control, bidi or line-separator character
            line = escape_unsafe_text(
                orjson.dumps({"event": event, **fields}, default=str).decode()
            )
        else:
            parts = [f"talond: {event}"]
            for key, value in fields.items():
                if value is None or value == "" or value == []:
                    continue
                text = ",".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
                if len(text) > _MAX_VALUE:
                    text = text[:_MAX_VALUE] + "…"
                text = safe_text(text)
                parts.append(f"{key}={text!r}" if " " in text else f"{key}={text}")
            line = " ".join(parts)
        with self._lock:
            self.stream.write(line + "\n")
            self.stream.flush()
