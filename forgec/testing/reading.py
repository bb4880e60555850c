"""How `forgec test` reads files: through the one reading function (SPEC §24) when this
checkout has it (`forgec.frontend.reading.read_tool_file`), else a bounded read of a regular
file. Both raise `OSError` with a one-line message."""

from __future__ import annotations

import stat
from pathlib import Path

TEST_FILE_BYTES = 256 * 1024


def read_tool_file(path: Path) -> bytes:
    try:
        from forgec.frontend import reading  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return _bounded(path, TEST_FILE_BYTES)
    return bytes(reading.read_tool_file(path))


def read_test_file(path: Path) -> bytes:
    return read_tool_file(path)


def _bounded(path: Path, limit: int) -> bytes:
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{path}: not a regular file")
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"{path}: larger than {limit // 1024} KiB")
    return data
