"""forgec spans ↔ LSP positions.

A forgec `Span` is 1-based, counts columns in code points and ends just after its last
character. LSP positions are 0-based and count columns in the client's position encoding
(UTF-16 code units unless the client offered another one), so a character outside the Basic
Multilingual Plane before a position moves the LSP column by two.
"""

from __future__ import annotations

import attrs

from forgec.ir.span import Span


@attrs.frozen
class Point:
    """A 0-based position in code points (line, column)."""

    line: int
    column: int


class LineIndex:
    """The text's lines and the client's encoding: converts both ways."""

    def __init__(self, text: str, encoding: str = "utf-16") -> None:
        self.text = text
        self.lines = text.split("\n")
        self.encoding = encoding
        starts = [0]
        for line in self.lines[:-1]:
            starts.append(starts[-1] + len(line) + 1)
        self.starts = starts

    def _units(self, chars: str) -> int:
        if self.encoding == "utf-32":
            return len(chars)
        if self.encoding == "utf-8":
            return len(chars.encode("utf-8"))
        return len(chars) + sum(1 for c in chars if ord(c) > 0xFFFF)

    def to_client(self, point: Point) -> tuple[int, int]:
        """Code-point position → (line, column in client units)."""
        if point.line >= len(self.lines):
            return len(self.lines) - 1, self._units(self.lines[-1])
        line = self.lines[point.line]
        return point.line, self._units(line[: max(0, point.column)])

    def from_client(self, line: int, character: int) -> Point:
        """(line, column in client units) → code-point position (clamped to the text)."""
        if line >= len(self.lines):
            return Point(len(self.lines) - 1, len(self.lines[-1]))
        text = self.lines[max(0, line)]
        if self.encoding == "utf-32":
            return Point(line, min(character, len(text)))
        units = 0
        for i, c in enumerate(text):
            if units >= character:
                return Point(line, i)
            units += (
                len(c.encode("utf-8"))
                if self.encoding == "utf-8"
                else (2 if ord(c) > 0xFFFF else 1)
            )
        return Point(line, len(text))

    def offset(self, point: Point) -> int:
        """Code-point offset into the text."""
        if point.line >= len(self.starts):
            return len(self.text)
        return self.starts[point.line] + point.column

    def point(self, offset: int) -> Point:
        """Code-point offset → position."""
        import bisect

        line = bisect.bisect_right(self.starts, offset) - 1
        return Point(line, offset - self.starts[line])


def span_points(span: Span) -> tuple[Point, Point]:
    """A forgec span as (start, end) code-point positions, 0-based, end exclusive."""
    return Point(span.line - 1, span.column - 1), Point(span.end_line - 1, span.end_column - 1)


def contains(span: Span, point: Point) -> bool:
    start, end = span_points(span)
    return (start.line, start.column) <= (point.line, point.column) <= (end.line, end.column)


def span_size(span: Span) -> tuple[int, int]:
    """An ordering key: smaller spans are more specific."""
    return (
        span.end_line - span.line,
        span.end_column - span.column if span.end_line == span.line else 10**6,
    )
