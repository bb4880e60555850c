"""How `forgec test` reads files: through the one reading function (SPEC §24,
`forgec.frontend.reading`), which refuses anything but a regular file and reads at most the
limit plus one byte. Raises `OSError` (`ReadError`) with a one-line message."""

from __future__ import annotations

from pathlib import Path

from forgec.frontend.reading import TEST_FILE_BYTES, read_regular, read_tool_file

# a snapshot of compiled output: a manifest (64 KiB), its disassembly, card and facts
SNAPSHOT_BYTES = 1024 * 1024


def read_test_file(path: Path) -> bytes:
    """A `*.tests.toml` file: at most `TEST_FILE_BYTES` + 1 bytes."""
    return read_tool_file(str(path))


def read_tool(path: Path) -> bytes:
    """The tool under test (`.forge` or `.talostool`), by its own limit."""
    return read_tool_file(str(path))


def read_snapshot(path: Path) -> bytes:
    return read_regular(str(path), limit=SNAPSHOT_BYTES)


__all__ = ["SNAPSHOT_BYTES", "TEST_FILE_BYTES", "read_snapshot", "read_test_file", "read_tool"]
