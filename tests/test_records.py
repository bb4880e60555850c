"""`forgec.ir.records` behaves as the attrs classes it replaced did.

The compiler's records left attrs for start-up time (docs/performance.md "Faster with one
truth"); nothing a caller can observe may change with them. The property builds the same
class both ways — any mix of required fields, defaults, factories, fields left out of `==` or
of the repr; frozen and hashable, frozen and unhashable (the IR nodes), mutable, frozen without
slots (the report) — and holds the two to each other: construction by position and by keyword,
equality, hashability and hash consistency, repr, immutability, `evolve`, `__match_args__`, a
fresh object from each factory call.
"""

from __future__ import annotations

import ast
import pickle
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

import forgec
from forgec.api import check
from forgec.ir import records
from forgec.ir.diagnostics import Diagnostic, Severity
from forgec.ir.nodes import NODE_TYPES, Literal
from forgec.ir.rules import NODE_FIELDS
from forgec.ir.span import Span

# (how the class is made with attrs, the same with records)
FLAVOURS: dict[str, tuple[Any, Any]] = {
    "frozen": (attrs.frozen, records.record),
    "frozen-unhashable": (attrs.frozen(unsafe_hash=False), records.record(hashable=False)),
    "mutable": (attrs.define, records.record(frozen=False)),
    "frozen-dict": (attrs.frozen(slots=False), records.record(slots=False)),
}

values = st.one_of(st.none(), st.integers(-3, 3), st.text(max_size=3), st.tuples(st.integers(0, 2)))
field_specs = st.lists(
    st.tuples(st.sampled_from(["required", "default", "factory"]), st.booleans(), st.booleans()),
    max_size=6,
).map(lambda specs: sorted(specs, key=lambda s: s[0] != "required"))  # required ones first


def _pair(flavour: str, specs: list[tuple[str, bool, bool]]) -> tuple[Any, Any]:
    old: dict[str, Any] = {"__annotations__": {}}
    new: dict[str, Any] = {"__annotations__": {}}
    for i, (kind, eq, shown) in enumerate(specs):
        name = f"f{i}"
        old["__annotations__"][name] = new["__annotations__"][name] = "Any"
        given: dict[str, Any] = {}
        if kind == "default":
            given["default"] = i
        elif kind == "factory":
            given["factory"] = list
        old[name] = attrs.field(eq=eq, repr=shown, **given)
        new[name] = records.field(eq=eq, repr=shown, **given)
    make_old, make_new = FLAVOURS[flavour]
    return make_old(type("Rec", (), old)), make_new(type("Rec", (), new))


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except Exception as exc:
        return ("raises", type(exc).__mro__[-3] if isinstance(exc, AttributeError) else type(exc))


@given(
    flavour=st.sampled_from(sorted(FLAVOURS)),
    specs=field_specs,
    first=st.lists(values, min_size=6, max_size=6),
    second=st.lists(values, min_size=6, max_size=6),
    positional=st.integers(0, 6),
    given_count=st.integers(0, 6),
)
def test_a_record_behaves_as_its_attrs_class(
    flavour: str,
    specs: list[tuple[str, bool, bool]],
    first: list[Any],
    second: list[Any],
    positional: int,
    given_count: int,
) -> None:
    old, new = _pair(flavour, specs)
    names = [f"f{i}" for i in range(len(specs))]
    required = sum(1 for kind, _, _ in specs if kind == "required")
    count = max(required, min(given_count, len(specs)))  # every required field, then some

    def build(cls: type, vals: list[Any]) -> Any:
        args = vals[: min(positional, count)]
        kwargs = {names[i]: vals[i] for i in range(len(args), count)}
        return cls(*args, **kwargs)

    a_old, b_old = build(old, first), build(old, second)
    a_new, b_new = build(new, first), build(new, second)
    assert [f.name for f in records.fields(new)] == [a.name for a in attrs.fields(old)]
    assert new.__match_args__ == old.__match_args__
    for name in names:
        assert getattr(a_new, name) == getattr(a_old, name)
    assert (a_new == b_new) == (a_old == b_old)
    assert (a_new != b_new) == (a_old != b_old)
    assert a_new == build(new, first)
    assert a_new != object()
    assert repr(a_new) == repr(a_old)
    assert _outcome(lambda: hash(a_new) == hash(build(new, first))) == _outcome(
        lambda: hash(a_old) == hash(build(old, first))
    )
    assert _outcome(lambda: setattr(a_new, "f0", 1)) == _outcome(lambda: setattr(a_old, "f0", 1))
    assert _outcome(lambda: setattr(a_new, "nope", 1)) == _outcome(
        lambda: setattr(a_old, "nope", 1)
    )
    changes = {n: v for n, v in zip(names, second, strict=False) if n in names[: len(names) // 2]}
    evolved_new, evolved_old = records.evolve(a_new, **changes), attrs.evolve(a_old, **changes)
    assert [getattr(evolved_new, n) for n in names] == [getattr(evolved_old, n) for n in names]
    for i, (kind, _, _) in enumerate(specs):
        if kind == "factory" and i >= count:  # each instance has its own fresh object
            assert getattr(a_new, names[i]) is not getattr(build(new, first), names[i])


def test_frozen_records_raise_frozen_instance_error() -> None:
    span = Span("f", 1, 1, 1, 2)
    with pytest.raises(records.FrozenInstanceError):
        span.line = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del span.line


def test_hashability_is_as_before() -> None:
    # the IR nodes were `attrs.frozen(unsafe_hash=False)`: unhashable; spans and diagnostics
    # were `attrs.frozen`: hashable by their fields
    with pytest.raises(TypeError):
        hash(Literal(1, "/x"))
    assert hash(Span(None, 1, 2, 3, 4)) == hash(Span(None, 1, 2, 3, 4))
    one, same = (Diagnostic("FORGE_X", Severity.ERROR, "m", "/a") for _ in range(2))
    assert one is not same and len({one, same}) == 1


def test_node_records_hold_the_node_table_fields() -> None:
    for typ, cls in NODE_TYPES.items():
        expected = ["id", "pointer", *(f.attr for f in NODE_FIELDS[typ])]
        assert [f.name for f in records.fields(cls)] == expected


def test_a_disagreeing_table_fails_at_class_creation() -> None:
    with pytest.raises(TypeError, match="differ from the table"):

        @records.record(table=("a", "b"))
        class _Wrong:
            b: int
            a: int


def test_a_report_survives_pickling() -> None:
    # the budgeted check (forgec.budget) sends reports, IR and facts through pickle
    report = check(b'{"schema": "talos.local-tool.v1"}')
    again = pickle.loads(pickle.dumps(report, protocol=pickle.HIGHEST_PROTOCOL))
    assert again == report and again.diagnostics == report.diagnostics


# The packages a check runs through (docs/architecture.md: "The compiler's records are
# `forgec.ir.records`"); the layers above may keep attrs.
COMPILER = ("ir", "frontend", "passes", "catalog", "secretscan", "render")


def test_the_compiler_imports_no_attrs() -> None:
    root = Path(forgec.__file__).parent
    files = [root / "api.py", *(f for pkg in COMPILER for f in (root / pkg).rglob("*.py"))]
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            found += [
                f"{path.relative_to(root)}: {n}"
                for n in names
                if n.split(".")[0] in ("attr", "attrs")
            ]
    assert found == []


def test_a_record_cannot_silently_drop_a_base_records_fields() -> None:
    # attrs would have inherited `a`; a record that did not would lose it without a word
    @records.record
    class Base:
        a: int

    with pytest.raises(TypeError, match="cannot extend another record"):

        @records.record
        class Child(Base):
            b: int
