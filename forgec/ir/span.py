"""Source positions.

A `Span` is a 1-based, inclusive-start range in the file the user wrote. Diagnostics and IR
nodes do not carry spans directly: they carry a JSON Pointer, and a `SourceMap` turns a pointer
into a span only when something needs to be shown. That keeps the happy path (a clean check)
free of position bookkeeping.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from forgec.ir.readable import HashedByValue


@attrs.frozen(repr=False, eq=False)
class Span(HashedByValue):
    file: str | None
    line: int
    column: int
    end_line: int
    end_column: int

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "endLine": self.end_line,
            "endColumn": self.end_column,
        }


class SourceMap(Protocol):
    """Resolves a JSON Pointer (``/flow/nodes/3/retry``) to where it was written.

    ``key=True`` asks for the span of the member's key instead of its value (useful for
    "unknown field" diagnostics). Implementations return the nearest enclosing span they know
    when the exact pointer has no position (a missing field points at its parent object).
    """

    @property
    def file(self) -> str | None: ...

    @property
    def text(self) -> str | None: ...

    def span(self, pointer: str, *, key: bool = False) -> Span | None: ...
