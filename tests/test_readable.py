"""The compiler's records print and compare as attrs would (`forgec.ir.readable`).

attrs builds every record; `repr`, `==` and the hash of most of them come from three shared
methods instead of one compiled per class (a cold check's start-up). Here each record of every
example's report, IR and facts is held to an attrs twin made from its own fields: the same
text from `repr`, and the same answer from `==` against itself, a copy and a changed copy.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

import forgec
from forgec.ir.readable import ComparedByValue, HashedByValue, Readable

EXAMPLES = sorted(
    p
    for p in (Path(__file__).resolve().parent.parent / "examples").rglob("*")
    if p.suffix in (".talostool", ".forge") and "__snapshots__" not in p.parts
)


@functools.cache
def _twin(cls: type) -> type:
    """An attrs class with `cls`'s fields whose repr and == attrs generated."""
    fields = {a.name: attrs.field(repr=a.repr, eq=a.eq) for a in attrs.fields(cls)}
    twin = attrs.make_class(cls.__name__, fields, frozen=True, slots=True)
    twin.__qualname__ = cls.__qualname__
    return twin


def _records(value: Any, seen: set[int]) -> Iterator[Any]:
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, Readable):
        yield value
        for a in attrs.fields(type(value)):
            yield from _records(getattr(value, a.name), seen)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _records(v, seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _records(v, seen)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_records_print_and_compare_as_attrs_would(path: Path) -> None:
    report = forgec.check_file(str(path))
    found = list(_records((report, report.ir, report.facts, report.diagnostics), set()))
    assert any(isinstance(r, ComparedByValue) for r in found)
    for record in found:
        cls = type(record)
        values = {a.name: getattr(record, a.name) for a in attrs.fields(cls)}
        twin = _twin(cls)(**values)
        assert repr(record) == repr(twin)
        if isinstance(record, ComparedByValue):
            copy = attrs.evolve(record)
            assert record == copy
            assert (record != copy) is False
            assert (record == record) == (twin == twin)
            changed = [a for a in attrs.fields(cls) if a.eq]
            if changed:
                other = attrs.evolve(record, **{changed[0].name: object()})
                assert record != other
            if isinstance(record, HashedByValue):
                assert hash(record) == hash(copy)
        else:  # compared by identity: nobody compares two
            assert record == record and record != attrs.evolve(record)


def test_every_record_prints_its_fields() -> None:
    """No record of the compiler falls back to `<… object at 0x…>`: declared `repr=False`, it
    inherits the shared one."""
    missing = []
    for package in ("forgec.ir", "forgec.passes", "forgec.frontend", "forgec.catalog"):
        root = importlib.import_module(package)
        for info in pkgutil.iter_modules(root.__path__, package + "."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if (
                    isinstance(value, type)
                    and attrs.has(value)
                    and value.__module__ == info.name
                    and value.__repr__ is object.__repr__
                ):
                    missing.append(value.__qualname__)
    assert missing == []
