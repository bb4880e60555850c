"""The daemon's clock: the system's, or — for tests only — a file that says what time it is.

Every time the daemon reasons about (which cron slot is due, when a lease expires, when a
webhook is retried) comes from one `Clock`, so a test can move time by rewriting a file instead
of waiting for real minutes. Budgets of work in progress (a turn's wall-clock budget, an HTTP
timeout) are real elapsed time (`time.monotonic`) whatever the clock says: a test clock can
make a slot due, never make a running turn slower or faster.

`FileClock` is reached only through `forgec talond --clock-file FILE`, an option hidden from
`--help`, and the daemon logs that it is in use.
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Protocol


class Clock(Protocol):
    def now(self) -> _dt.datetime: ...


class SystemClock:
    def now(self) -> _dt.datetime:
        return _dt.datetime.now(_dt.UTC)


class FileClock:
    """Now is the POSIX timestamp written in FILE (re-read on every call); while the file is
    missing or unreadable, the last time read (or the system's, before any)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._last: _dt.datetime | None = None

    def now(self) -> _dt.datetime:
        try:
            stamp = float(self.path.read_text(encoding="ascii").strip())
            self._last = _dt.datetime.fromtimestamp(stamp, _dt.UTC)
        except (OSError, ValueError, OverflowError):
            pass
        return self._last or _dt.datetime.now(_dt.UTC)


def iso(moment: _dt.datetime) -> str:
    """ISO 8601 UTC with milliseconds and `Z`, as every host table stores times (sorts as text)."""
    stamp = moment.astimezone(_dt.UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def parse_iso(text: str) -> _dt.datetime:
    moment = _dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=_dt.UTC)
