"""Diagnostics are data: a stable code, a message that makes sense alone, where, and help.

Checks create them with `make`, which takes the severity from the one code registry
(`forgec.ir.codes`), so a code can never be an error in one pass and a warning in another.
Rendering (text with caret, JSON, SARIF) lives in `forgec.render`, apart from the checks.
"""

from __future__ import annotations

from enum import StrEnum

import attrs

from forgec.ir.span import Span


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@attrs.frozen
class Diagnostic:
    code: str
    severity: Severity
    message: str
    path: str  # JSON Pointer into the manifest; "" is the whole document
    span: Span | None = None
    hint: str | None = None
    notes: tuple[str, ...] = ()
    key: bool = False  # the span should cover the member's key (e.g. an unknown field)

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "path": self.path,
            "span": self.span.to_json() if self.span else None,
            "hint": self.hint,
            "notes": list(self.notes),
        }


def make(
    code: str,
    path: str,
    message: str,
    *,
    hint: str | None = None,
    notes: tuple[str, ...] | list[str] = (),
    key: bool = False,
    span: Span | None = None,
) -> Diagnostic:
    from forgec.ir.codes import severity_of

    return Diagnostic(
        code=code,
        severity=severity_of(code),
        message=message,
        path=path,
        span=span,
        hint=hint,
        notes=tuple(notes),
        key=key,
    )


def sort_key(d: Diagnostic) -> tuple[object, ...]:
    """Order diagnostics as a reader meets them: by position, then path, then code."""
    if d.span is not None:
        return (0, d.span.line, d.span.column, d.path, d.code, d.message)
    return (1, 0, 0, d.path, d.code, d.message)
