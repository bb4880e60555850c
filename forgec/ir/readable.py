"""One readable `__repr__`, one `==` and one hash for the compiler's attrs records.

The compiler's records are attrs classes declared with `repr=False` that inherit `Readable`:
attrs compiles a `__repr__` for each class it builds (about a third of the ≈ 0.37 ms a frozen
record costs to define), and a cold `forgec check` defines some fifty records it never prints.
This one method, read from the class's attrs fields, prints what attrs' own would
(`Ref(text='input.x', segments=('input', 'x'), pointer='/flow/nodes/0/input')`, fields declared
`repr=False` left out), so a record in a debugger, a failing assertion or a log reads the same.
Figures: docs/performance.md ("The cold check again").
"""

from __future__ import annotations

from typing import Any


class Readable:
    """Mix-in (no slots, no fields) giving an attrs class declared `repr=False` attrs' repr."""

    __slots__ = ()
    __attrs_attrs__: Any  # set by attrs on every subclass

    def __repr__(self) -> str:
        name = type(self).__qualname__.rsplit(">.", 1)[-1]
        shown = ", ".join(
            f"{a.name}={getattr(self, a.name)!r}" for a in self.__attrs_attrs__ if a.repr
        )
        return f"{name}({shown})"


class ComparedByValue(Readable):
    """Mix-in giving an attrs class declared `eq=False` attrs' own `==`: equal when the other
    is of the very same class and the fields declared with `eq` (the default) are equal, as one
    tuple against the other (so `is` short-cuts each, as attrs' generated method does); not
    hashable, as the IR's nodes were (`unsafe_hash=False`). The IR's 24 node and value classes
    use it: attrs compiles an `__eq__` for each class (a third of what defining one costs once
    its `__repr__` is gone), tests compare nodes, and a check never does."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        fields = self.__attrs_attrs__
        mine = tuple(getattr(self, a.name) for a in fields if a.eq)
        return mine == tuple(getattr(other, a.name) for a in fields if a.eq)

    __hash__ = None  # type: ignore[assignment]


class HashedByValue(ComparedByValue):
    """`ComparedByValue`, hashable as attrs makes a frozen class with `eq`: the hash of the
    class and the same fields, so equal records hash alike. The compiler's frozen value records
    (diagnostics, spans, marks, shapes, the report) use it; attrs compiled an `__eq__` and a
    `__hash__` for each (≈ 0.9 M instructions a class)."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(
            (self.__class__, *(getattr(self, a.name) for a in self.__attrs_attrs__ if a.eq))
        )
