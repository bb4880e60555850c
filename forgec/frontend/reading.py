"""The one reader of every file forgec reads as a tool or a test (SPEC §24).

`read_tool_file(path)` is what `check`, `fmt` (and `--check`), `compile`, `lower`, `inspect`,
`graph`, `run`, `tools install`, `test`, the language server, the pre-commit hooks (through the
command line) and the screen's upload (`read_tool_stream`) call; `tests/test_reading.py` holds
the list of callers and a static test that no other module of forgec opens a tool file.

The invariant: whatever PATH names, the reader

- refuses anything but a regular file (a FIFO, a character or block device, a socket, a
  directory) with a one-line `ReadError`, deciding from `os.stat` *before* opening — a FIFO is
  never opened, so nothing can block on a writer — and again from `os.fstat` of what it
  opened (with `O_NONBLOCK`, so a FIFO swapped in between the two cannot block either);
- reads at most LIMIT + 1 bytes, whatever the file's size: the loaders see more than LIMIT
  bytes and answer `FORGE_MANIFEST_TOO_LARGE` without the rest ever being read, so memory and
  time are bounded by the limit (a sparse 1.5 GiB file costs 256 KiB).

The limit comes from the name, as the form does (`forgec.api.is_forge_source`): 256 KiB for a
`.forge` text, 64 KiB for a manifest, `TEST_FILE_BYTES` for a `*.tests.toml` test file, and the
largest of them for a name with none of those endings (standard input, sniffed by content).
"""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from forgec.ir.rules import MAX_FORGE_BYTES, MAX_MANIFEST_BYTES

TEST_FILE_BYTES = 256 * 1024  # a `*.tests.toml` file (SPEC §22): inputs and expectations
INPUT_BYTES = 256 * 1024  # `forgec run --input @FILE`: a value is at most 256 KiB (SPEC §16)
SETTINGS_BYTES = 1024 * 1024  # a `forgec.toml` / `pyproject.toml` read for `[tool.forgec]`
ANY_SOURCE_BYTES = max(MAX_FORGE_BYTES, MAX_MANIFEST_BYTES)

_O_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


class ReadError(OSError):
    """A file that is not read: its one-line message names the path and why."""


def source_limit(path: str | None) -> int:
    """The most bytes a source named PATH may hold (None: standard input, form sniffed)."""
    if path is None:
        return ANY_SOURCE_BYTES
    name = os.path.basename(path)
    if name.endswith(".forge"):
        return MAX_FORGE_BYTES
    if name.endswith(".talostool"):
        return MAX_MANIFEST_BYTES
    if name.endswith(".toml"):
        return TEST_FILE_BYTES
    return ANY_SOURCE_BYTES


def describe_mode(mode: int) -> str:
    """What a file of MODE is, for a message (`is a FIFO …`)."""
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode):
        return "is a character device, not a regular file"
    if stat.S_ISBLK(mode):
        return "is a block device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "is not a regular file"


def _why(path: str, exc: OSError) -> ReadError:
    if isinstance(exc, FileNotFoundError):
        return ReadError(f"{path}: no such file")
    if isinstance(exc, IsADirectoryError):
        return ReadError(f"{path}: is a directory")
    return ReadError(f"{path}: cannot read: {exc.strerror or exc}")


def is_regular(path: str) -> bool:
    """PATH (links followed) is a regular file: what a folder walk may hand the reader."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def read_regular(path: str, *, limit: int) -> bytes:
    """At most LIMIT + 1 bytes of the regular file PATH; anything else → `ReadError`."""
    try:
        before = os.stat(path)
    except (OSError, ValueError) as exc:
        raise _why(path, exc if isinstance(exc, OSError) else OSError(str(exc))) from None
    if not stat.S_ISREG(before.st_mode):
        raise ReadError(f"{path}: {describe_mode(before.st_mode)}")
    try:
        fd = os.open(path, _O_FLAGS)
    except OSError as exc:
        raise _why(path, exc) from None
    try:
        opened = os.fstat(fd)
        if not stat.S_ISREG(opened.st_mode):  # swapped since the stat: still never blocks
            raise ReadError(f"{path}: {describe_mode(opened.st_mode)}")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except ReadError:
        raise
    except OSError as exc:
        raise _why(path, exc) from None
    finally:
        os.close(fd)


def read_tool_file(path: str, *, limit: int | None = None) -> bytes:
    """The bytes of the tool or test file PATH, at most its limit + 1 (`source_limit`)."""
    return read_regular(path, limit=source_limit(path) if limit is None else limit)


def read_tool_stream(stream: BinaryIO, *, path: str | None = None) -> bytes:
    """At most the limit + 1 bytes of STREAM (standard input, an upload), PATH naming its form."""
    data = stream.read(source_limit(path) + 1)
    return bytes(data or b"")
