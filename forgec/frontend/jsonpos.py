"""Where each JSON Pointer of a document was written: a lazy position index for diagnostics.

The loader parses with orjson, which keeps no positions. Positions are needed only when a
diagnostic is shown, so `TextSourceMap` tokenizes the text the first time `span()` is called
and never on a clean check.

The scanner is a small iterative state machine over regex tokens (strings use the unrolled
`"[^"\\\\]*(?:\\\\.[^"\\\\]*)*"` form, linear time). It is not a validator: it runs on text
orjson already accepted, and on anything else it stops quietly with what it has. For every
value it records the character range of the value and, for object members, of the key. The
same walk reports duplicate keys (with the pointer and span of the second occurrence) and the
first container nested deeper than the limit (where it stops), which the loader uses on its slow path.
"""

from __future__ import annotations

import bisect
import json
import re
from typing import Any

import attrs

from forgec.ir.pointer import escape, parent
from forgec.ir.readable import Readable
from forgec.ir.span import Span

_WS = " \t\n\r"
_TOKEN = re.compile(
    r'[ \t\n\r]*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([{}\[\],:])'
    r"|(-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null))",
    re.ASCII | re.DOTALL,
)


@attrs.define(repr=False, eq=False)
class PositionIndex(Readable):
    # pointer → (key_start, key_end, value_start, value_end), character offsets, end
    # exclusive; key_start is -1 for array items and the root
    entries: dict[str, tuple[int, int, int, int]]
    # duplicate keys: (pointer, key_start, key_end) of each repeated occurrence
    duplicates: list[tuple[str, int, int]]
    # the first container deeper than the limit: (pointer, start), or None
    too_deep: tuple[str, int] | None


def _decode_key(token: str) -> str:
    if "\\" not in token:
        return token[1:-1]
    try:
        key = json.loads(token)
    except ValueError:
        return token[1:-1]
    return key if isinstance(key, str) else token[1:-1]


def index_positions(text: str, *, max_depth: int = 64) -> PositionIndex:
    """Scan `text` once, recording the span of every pointer (see the module doc)."""
    entries: dict[str, tuple[int, int, int, int]] = {}
    duplicates: list[tuple[str, int, int]] = []
    too_deep: tuple[str, int] | None = None
    # frame: [is_object, pointer, start, key_start, key_end, next_index, seen_keys]
    stack: list[list[Any]] = []
    pending_ptr = ""  # the pointer of the value expected next
    pending_key = (-1, -1)
    expect_key = False
    match = _TOKEN.match
    pos = 0
    while True:
        m = match(text, pos)
        if m is None:
            break
        pos = m.end()
        string, punct = m.group(1), m.group(2)
        if expect_key:
            frame = stack[-1]
            if string is not None:
                start = m.start(1)
                key = _decode_key(string)
                pending_ptr = frame[1] + "/" + escape(key)
                pending_key = (start, pos)
                if key in frame[6]:
                    duplicates.append((pending_ptr, start, pos))
                else:
                    frame[6].add(key)
                m = match(text, pos)
                if m is None or m.group(2) != ":":
                    break
                pos = m.end()
                expect_key = False
                continue
            if punct == "}":
                expect_key = False
            else:
                break
        if punct is None:
            value_start = m.start(1) if string is not None else m.start(3)
            entries[pending_ptr] = (*pending_key, value_start, pos)
        elif punct in "{[":
            value_start = pos - 1
            if len(stack) >= max_depth:
                # Too deep: the document is refused whole, so stop here (pointers this deep
                # would also cost quadratic time to build).
                too_deep = (pending_ptr, value_start)
                break
            is_object = punct == "{"
            stack.append(
                [is_object, pending_ptr, value_start, *pending_key, 0, set() if is_object else None]
            )
            if is_object:
                expect_key = True
                continue
            pending_ptr = pending_ptr + "/0"
            pending_key = (-1, -1)
            continue
        elif punct in "}]":
            if not stack:
                break
            frame = stack.pop()
            entries[frame[1]] = (frame[3], frame[4], frame[2], pos)
        elif punct == ",":
            if not stack:
                break
            frame = stack[-1]
            if frame[0]:
                expect_key = True
            else:
                frame[5] += 1
                pending_ptr = frame[1] + "/" + str(frame[5])
                pending_key = (-1, -1)
            continue
        else:
            break  # a stray ':' — not JSON orjson would accept
        # after a complete value: expect ',' or a closing bracket (handled by the loop)
        if not stack:
            break
        frame = stack[-1]
        if frame[0]:
            pending_ptr = frame[1]
    return PositionIndex(entries=entries, duplicates=duplicates, too_deep=too_deep)


class LineIndex:
    """Character offset → 1-based (line, column); columns count code points."""

    def __init__(self, text: str) -> None:
        starts = [0]
        find = text.find
        i = find("\n")
        while i >= 0:
            starts.append(i + 1)
            i = find("\n", i + 1)
        self._starts = starts

    def line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset) - 1
        return line + 1, offset - self._starts[line] + 1


def line_col(text: str, offset: int) -> tuple[int, int]:
    """One-off conversion without building an index."""
    line = text.count("\n", 0, offset) + 1
    last = text.rfind("\n", 0, offset)
    return line, offset - last


class TextSourceMap:
    """A `SourceMap` over manifest text; tokenizes on the first `span()` call only."""

    def __init__(self, text: str | bytes, file: str | None = None) -> None:
        self._raw = text
        self._file = file
        self._text: str | None = text if isinstance(text, str) else None
        self._index: PositionIndex | None = None
        self._lines: LineIndex | None = None

    @property
    def file(self) -> str | None:
        return self._file

    @property
    def text(self) -> str | None:
        if self._text is None:
            raw = self._raw
            self._text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        return self._text

    def index(self) -> PositionIndex:
        if self._index is None:
            self._index = index_positions(self.text or "")
        return self._index

    def span_of(self, start: int, end: int) -> Span:
        if self._lines is None:
            self._lines = LineIndex(self.text or "")
        line, col = self._lines.line_col(start)
        end_line, end_col = self._lines.line_col(max(end, start))
        return Span(self._file, line, col, end_line, end_col)

    def span(self, pointer: str, *, key: bool = False) -> Span | None:
        entries = self.index().entries
        p = pointer
        while True:
            entry = entries.get(p)
            if entry is not None:
                if key and p == pointer and entry[0] >= 0:
                    return self.span_of(entry[0], entry[1])
                return self.span_of(entry[2], entry[3])
            if not p:
                return None
            p = parent(p)


class NullSourceMap:
    """A `SourceMap` for a document with no text (e.g. a dict handed to the API)."""

    def __init__(self, file: str | None = None) -> None:
        self._file = file

    @property
    def file(self) -> str | None:
        return self._file

    @property
    def text(self) -> str | None:
        return None

    def span(self, pointer: str, *, key: bool = False) -> Span | None:
        return None
