"""Records: slotted classes whose methods are generated from their annotations.

The compiler's records (the IR nodes, shapes, capability rows, diagnostics, marks, the pass
context, the report) are declared as plain class bodies with annotations, and `record` adds
what attrs used to add: `__init__` (positional or keyword, defaults and factories), `__eq__`
by fields, `__hash__` where the class was hashable, a readable `__repr__`, immutability for
frozen ones (`__setattr__` raises `FrozenInstanceError`), `__slots__`, `__match_args__`,
pickling. Why not attrs: `forgec check` must start in under 100 ms of CPU, and attrs' import
(≈ 13 ms beyond what orjson brings) plus its ~55 classes on the check path (0.3–0.6 ms each:
several methods compiled per class) were ≈ 30 ms of it (docs/performance.md "Faster with one
truth"). Why not dataclasses: it compiles several functions per class too. Here a class costs
one small `compile` (its `__init__`); `==` and the hash are closures over one
`operator.attrgetter`; this module imports only `typing` and `operator`.

`typing.dataclass_transform` tells mypy what `record` does, so the generated `__init__` is
type-checked like a dataclass's. `fields(cls)` and `evolve(obj, **changes)` replace
`attrs.fields` and `attrs.evolve`.

The rule (docs/architecture.md): every module `forgec check` imports defines its records with
this; modules above the compiler (host, store, daemon, mcp, screen, lsp) may keep attrs.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["NOTHING", "Field", "FrozenInstanceError", "evolve", "field", "fields", "record"]

_T = TypeVar("_T")


class FrozenInstanceError(AttributeError):
    """A frozen record was assigned to (or had a field deleted)."""

    def __init__(self) -> None:
        super().__init__("can't set attribute")


class _Nothing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOTHING"


NOTHING: Any = _Nothing()  # "no default": the field is required


class Field:
    """One field of a record, in declaration order (what `fields(cls)` returns)."""

    __slots__ = ("default", "eq", "factory", "name", "repr")

    def __init__(
        self,
        name: str,
        default: Any = NOTHING,
        factory: Callable[[], Any] | None = None,
        eq: bool = True,
        repr: bool = True,
    ) -> None:
        self.name = name
        self.default = default
        self.factory = factory
        self.eq = eq
        self.repr = repr

    def __repr__(self) -> str:
        return f"Field({self.name!r})"


@overload
def field(*, default: _T, eq: bool = True, repr: bool = True) -> _T: ...
@overload
def field(*, factory: Callable[[], _T], eq: bool = True, repr: bool = True) -> _T: ...
@overload
def field(*, eq: bool = True, repr: bool = True) -> Any: ...  # required
def field(
    *,
    default: Any = NOTHING,
    factory: Callable[[], Any] | None = None,
    eq: bool = True,
    repr: bool = True,
) -> Any:
    """A field with a default or a factory (neither: required), optionally left out of
    `==`/hash or of the repr."""
    return Field("", default, factory, eq, repr)


def fields(cls: type) -> tuple[Field, ...]:
    """The fields of a record class, in declaration order."""
    found: tuple[Field, ...] | None = getattr(cls, "__record_fields__", None)
    if found is None:
        raise TypeError(f"{cls!r} is not a record class")
    return found


def evolve(obj: _T, **changes: Any) -> _T:
    """A copy of `obj` with some fields replaced (through `__init__`, like `attrs.evolve`)."""
    cls = type(obj)
    for f in fields(cls):
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return cls(**changes)


def _repr(self: Any) -> str:
    shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in type(self).__record_repr__)
    return f"{type(self).__qualname__}({shown})"


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError


def _getstate(self: Any) -> dict[str, Any]:
    return {f.name: getattr(self, f.name) for f in type(self).__record_fields__}


def _setstate(self: Any, state: dict[str, Any]) -> None:
    for name, value in state.items():
        object.__setattr__(self, name, value)


def _fields_of(cls: type) -> list[Field]:
    out = []
    # the class's own annotations, unevaluated (`inspect` is what this module avoids)
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():  # noqa: RUF063
        if isinstance(annotation, str) and annotation.startswith(("ClassVar", "typing.ClassVar")):
            continue
        declared = cls.__dict__.get(name, NOTHING)
        if isinstance(declared, Field):
            declared.name = name
            out.append(declared)
        else:
            out.append(Field(name, declared))
    return out


def _init_source(
    cls: type, found: list[Field], frozen: bool, slots: dict[str, Any] | None = None
) -> tuple[str, dict[str, Any]]:
    """The source of `__init__` and its namespace. A frozen class assigns past its raising
    `__setattr__`: through each slot's own descriptor when `slots` (name → member descriptor)
    is given — about a quarter faster than `object.__setattr__`, which looks the name up on
    the type first; a check builds some 300 records — else through `object.__setattr__`."""
    ns: dict[str, Any] = {"NOTHING": NOTHING, "_bind_setattr": object.__setattr__.__get__}
    params, body = ["self"], []
    seen_default = False
    for f in found:
        n = f.name
        if f.factory is not None:
            ns[f"_factory_{n}"] = f.factory
            params.append(f"{n}=NOTHING")
            value = f"_factory_{n}() if {n} is NOTHING else {n}"
            seen_default = True
        elif f.default is not NOTHING:
            ns[f"_default_{n}"] = f.default
            params.append(f"{n}=_default_{n}")
            value = n
            seen_default = True
        elif seen_default:
            raise TypeError(f"{cls.__qualname__}: field {n!r} without a default follows one")
        else:
            params.append(n)
            value = n
        if not frozen:
            body.append(f"    self.{n} = {value}")
        elif slots is not None:
            ns[f"_set_{n}"] = slots[n].__set__
            body.append(f"    _set_{n}(self, {value})")
        else:
            body.append(f"    _setattr({n!r}, {value})")
    if frozen and slots is None and body:
        body.insert(0, "    _setattr = _bind_setattr(self)")
    return f"def __init__({', '.join(params)}):\n" + "\n".join(body or ["    pass"]) + "\n", ns


def _eq_and_hash(cls: type, compared: list[str]) -> tuple[Callable[..., Any], Callable[..., int]]:
    # closures over one C getter: no source to compile. Slower than attrs' inline tuples
    # (≈ 0.3 µs against 0.1 a comparison), but a check compares and hashes no record.
    values = attrgetter(*compared) if compared else (lambda obj: ())
    type_hash = hash(cls.__qualname__)  # two classes with equal fields still hash apart

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return values(self) == values(other)

    def __hash__(self: Any) -> int:
        return hash((type_hash, values(self)))

    return __eq__, __hash__


def _build(
    cls: type[_T], frozen: bool, slots: bool, hashable: bool | None, table: tuple[str, ...] | None
) -> type[_T]:
    if any(hasattr(base, "__record_fields__") for base in cls.__mro__[1:]):
        # attrs would have inherited the base's fields; this generator does not, so say so
        raise TypeError(f"{cls.__qualname__}: a record cannot extend another record")
    found = _fields_of(cls)
    names = tuple(f.name for f in found)
    if table is not None and names != table:
        raise TypeError(f"{cls.__qualname__}: fields {names} differ from the table's {table}")
    if hashable is None:
        hashable = frozen
    eq, hash_ = _eq_and_hash(cls, [f.name for f in found if f.eq])
    methods: dict[str, Any] = {
        "__eq__": eq,
        "__hash__": hash_ if hashable else None,
        "__repr__": _repr,
        "__match_args__": names,
        "__record_fields__": tuple(found),
        "__record_repr__": tuple(f.name for f in found if f.repr),
    }
    if frozen:
        methods["__setattr__"] = _frozen_setattr
        methods["__delattr__"] = _frozen_delattr
    for method in ("__eq__", "__hash__"):
        if methods[method] is not None:
            methods[method].__qualname__ = f"{cls.__qualname__}.{method}"
    if not slots:
        for name in names:
            if name in cls.__dict__:
                delattr(cls, name)
        for key, value in methods.items():
            setattr(cls, key, value)
        _add_init(cls, found, frozen, None)
        return cls
    body = {k: v for k, v in cls.__dict__.items() if k not in names and k not in _NOT_COPIED}
    body.update(methods)
    body["__slots__"] = (*names, "__weakref__")
    body["__qualname__"] = cls.__qualname__
    body["__getstate__"] = _getstate
    body["__setstate__"] = _setstate
    made: type[_T] = type.__new__(type(cls), cls.__name__, cls.__bases__, body)
    # compiled once the class exists: a frozen one assigns through its slots' descriptors
    _add_init(made, found, frozen, {n: made.__dict__[n] for n in names} if frozen else None)
    return made


def _add_init(cls: type, found: list[Field], frozen: bool, slots: dict[str, Any] | None) -> None:
    source, ns = _init_source(cls, found, frozen, slots)
    exec(compile(source, f"<record {cls.__module__}.{cls.__qualname__}>", "exec"), ns)
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    type.__setattr__(cls, "__init__", init)


_NOT_COPIED = frozenset({"__dict__", "__weakref__"})


@overload
def record(cls: type[_T], /) -> type[_T]: ...
@overload
def record(
    *,
    frozen: bool = True,
    slots: bool = True,
    hashable: bool | None = None,
    table: tuple[str, ...] | None = None,
) -> Callable[[type[_T]], type[_T]]: ...
@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def record(
    cls: type[_T] | None = None,
    /,
    *,
    frozen: bool = True,
    slots: bool = True,
    hashable: bool | None = None,
    table: tuple[str, ...] | None = None,
) -> Any:
    """Make `cls` a record: frozen (assignment raises) unless `frozen=False`, slotted unless
    `slots=False`, hashable by its compared fields when frozen unless `hashable=False`.
    `table`, when given, is the field names the class must declare, in order (a table that
    says what the record holds, e.g. `forgec.ir.rules.NODE_FIELDS`)."""

    def make(c: type[_T]) -> type[_T]:
        return _build(c, frozen, slots, hashable, table)

    return make if cls is None else make(cls)
