"""A cheap "did the tool store change?" probe, across processes.

The server caches what it lists (building a thousand tool entries per `tools/list` would make
listing cost grow with every call) and must notice a change made by anyone — `forgec tools
enable` in another shell, `tool_create` on this server, an embedder's Python call. SQLite's
`PRAGMA data_version` is exactly that signal: on one open connection its value changes when,
and only when, another connection committed to the file. It costs a few microseconds and reads
no table, so the server asks it before every request and from a background poll.

This connection only ever runs that pragma; it never reads or writes tool rows (those go
through `forgec.store.Store`, so its integrity checks apply).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path


class StoreWatch:
    def __init__(self, path: Path) -> None:
        self.path = path
        # check_same_thread off: the poll runs on the event loop, calls may arrive from a worker
        self._conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)

    def stamp(self) -> int:
        """A number that differs from the last one whenever another connection committed."""
        try:
            row = self._conn.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:
            return -1  # unreadable now: callers re-read the store, which reports the problem
        return int(row[0])

    def close(self) -> None:
        self._conn.close()
