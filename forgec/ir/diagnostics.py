"""Diagnostics are data: a stable code, a message that makes sense alone, where, and help.

Checks create them with `make`, which takes the severity from the one code registry
(`forgec.ir.codes`), so a code can never be an error in one pass and a warning in another.
Rendering (text with caret, JSON, SARIF) lives in `forgec.render`, apart from the checks.

A diagnostic carries its repairs as data (rust-analyzer's `with_fixes`): `fixes` say what to
change by JSON Pointer — put a value in place of the one at a pointer (or, `key`, rename the
member there), insert a member into the object at a pointer — and `related` name the other
places the problem involves, each with a note. The checker fills them where it knows the
answer (a "did you mean", a missing field); the language server applies them without reading
the message, and `--format json` shows them to any other tool.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

import attrs

from forgec.ir.readable import HashedByValue
from forgec.ir.span import Span


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@attrs.frozen(repr=False, eq=False)
class Fix(HashedByValue):
    """One repair. `replace`: the value at `pointer` becomes `value` (with `key`, the member's
    name at `pointer` becomes `value`); `insert`: the object at `pointer` gains the member
    `field` with `value`."""

    kind: str  # replace | insert
    pointer: str
    value: Any
    title: str
    field: str | None = None
    key: bool = False

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "kind": self.kind,
            "pointer": self.pointer,
            "value": self.value,
            "title": self.title,
        }
        if self.field is not None:
            out["field"] = self.field
        if self.key:
            out["key"] = True
        return out


@attrs.frozen(repr=False, eq=False)
class Related(HashedByValue):
    """Another place a diagnostic involves (the other duplicate, a node of the cycle)."""

    pointer: str
    note: str

    def to_json(self) -> dict[str, object]:
        return {"pointer": self.pointer, "note": self.note}


def replace_fix(pointer: str, value: Any, *, key: bool = False) -> Fix:
    shown = value if isinstance(value, str) else repr(value)
    return Fix("replace", pointer, value, f"Change to `{shown}`", key=key)


def insert_fix(pointer: str, field: str, value: Any, *, title: str | None = None) -> Fix:
    return Fix("insert", pointer, value, title or f"Add the missing `{field}`", field=field)


def suggestion(
    word: Any, choices: Any, pointer: str, *, key: bool = False, prefix: str = ""
) -> tuple[str | None, tuple[Fix, ...]]:
    """The "did you mean" hint for `word` and the fix that applies it, or (None, ())."""
    from forgec.ir.suggest import closest

    found = closest(word, choices) if isinstance(word, str) else None
    if found is None:
        return None, ()
    name = prefix + found
    return f"did you mean `{name}`?", (replace_fix(pointer, name, key=key),)


@attrs.frozen(repr=False, eq=False)
class Diagnostic(HashedByValue):
    code: str
    severity: Severity
    message: str
    path: str  # JSON Pointer into the manifest; "" is the whole document
    span: Span | None = None
    hint: str | None = None
    notes: tuple[str, ...] = ()
    key: bool = False  # the span should cover the member's key (e.g. an unknown field)
    fixes: tuple[Fix, ...] = ()
    related: tuple[Related, ...] = ()

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "path": self.path,
            "span": self.span.to_json() if self.span else None,
            "hint": self.hint,
            "notes": list(self.notes),
        }
        # present only when there are some, so a report without fixes reads as before
        if self.fixes:
            out["fixes"] = [f.to_json() for f in self.fixes]
        if self.related:
            out["related"] = [r.to_json() for r in self.related]
        return out


def make(
    code: str,
    path: str,
    message: str,
    *,
    hint: str | None = None,
    notes: tuple[str, ...] | list[str] = (),
    key: bool = False,
    span: Span | None = None,
    fixes: tuple[Fix, ...] = (),
    related: tuple[Related, ...] = (),
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
        fixes=fixes,
        related=related,
    )


def sort_key(d: Diagnostic) -> tuple[object, ...]:
    """Order diagnostics as a reader meets them: by position, then path, then code."""
    if d.span is not None:
        return (0, d.span.line, d.span.column, d.path, d.code, d.message)
    return (1, 0, 0, d.path, d.code, d.message)
