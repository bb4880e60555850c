"""The typed IR of a forged tool: what both frontends (JSON manifest, `.forge`) produce.

Frontends build these frozen attrs classes; passes read them; the backend lowers them.
Nothing here knows about JSON parsing or text positions: every node carries the JSON Pointer
of the manifest object it came from (`pointer`), and a `SourceMap` turns that into a line when
a diagnostic or a run error needs one.

A manifest with errors still yields an IR, best effort: a field whose value is unusable is
`None` (already diagnosed by the structure pass), and a node without a usable `id` or `type` is
left out. Passes therefore tolerate `None` in any optional-typed field.

Values: inside `set.value`, `capability.input`, `llm.input`, `condition.left/right`,
`foreach.source` and `return.value`, a JSON value may hold expressions. A value subtree with no
expression in it is one `Literal`; an object or list holding an expression somewhere is an
`ObjectExpr`/`ListExpr` whose members are values again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias, TypeVar

import attrs

from forgec.ir.readable import ComparedByValue
from forgec.ir.rules import EDGE_FIELDS, NODE_FIELDS, PLAIN_KINDS, VALUE_KINDS

_C = TypeVar("_C", bound=type)


def _node_fields(typ: str) -> tuple[str, ...]:
    """A node class's fields: `id`, `pointer`, then the node table's, in its order."""
    return ("id", "pointer", *(f.attr for f in NODE_FIELDS[typ]))


def _table(typ: str) -> Callable[[_C], _C]:
    """Hold a node class to its `NODE_FIELDS` row: the class and the table cannot disagree (a
    difference fails at import)."""

    def check(cls: _C) -> _C:
        names = tuple(a.name for a in attrs.fields(cls))
        if names != _node_fields(typ):
            raise TypeError(f"{cls.__qualname__}: fields {names} differ from the table's")
        return cls

    return check


# A path segment: a NAME (str) or an INDEX (int). The first segment is the ROOT.
Segment: TypeAlias = str | int


@attrs.frozen(eq=False, repr=False)
class Literal(ComparedByValue):
    value: Any  # plain JSON (dict/list/str/int/float/bool/None), no expression inside
    pointer: str


@attrs.frozen(eq=False, repr=False)
class Ref(ComparedByValue):
    """``{"$ref": "input.items[0].title"}``: the value at a safe path."""

    text: str
    segments: tuple[Segment, ...]
    pointer: str

    @property
    def root(self) -> str:
        return str(self.segments[0])


@attrs.frozen(eq=False, repr=False)
class Template(ComparedByValue):
    """``{"$template": "Due in {{input.days}} days"}``: parts are text or a `Ref`."""

    text: str
    parts: tuple[str | Ref, ...]
    pointer: str


@attrs.frozen(eq=False, repr=False)
class CredentialRef(ComparedByValue):
    """``{"$credential": "github"}``: resolved by the host at the bridge, never by the flow."""

    id: str
    pointer: str


@attrs.frozen(eq=False, repr=False)
class ObjectExpr(ComparedByValue):
    fields: tuple[tuple[str, Value], ...]
    pointer: str


@attrs.frozen(eq=False, repr=False)
class ListExpr(ComparedByValue):
    items: tuple[Value, ...]
    pointer: str


Value: TypeAlias = Literal | Ref | Template | CredentialRef | ObjectExpr | ListExpr


@attrs.frozen(eq=False, repr=False)
class Retry(ComparedByValue):
    attempts: int | None
    backoff_ms: int | None
    pointer: str


@attrs.frozen(eq=False, repr=False)
class ModelRequirements(ComparedByValue):
    structured_output: bool | None = None
    context: int | None = None
    privacy: str | None = None  # local-only | local-preferred | remote-allowed
    reasoning_effort: str | None = None  # low | medium | high
    pointer: str = ""


@_table("set")
@attrs.frozen(eq=False, repr=False)
class SetNode(ComparedByValue):
    id: str
    pointer: str
    target: str | None
    value: Value | None
    next: str | None


@_table("capability")
@attrs.frozen(eq=False, repr=False)
class CapabilityNode(ComparedByValue):
    id: str
    pointer: str
    capability: str | None
    input: Value | None
    target: str | None
    retry: Retry | None
    compensation: str | None
    next: str | None


@_table("llm")
@attrs.frozen(eq=False, repr=False)
class LlmNode(ComparedByValue):
    id: str
    pointer: str
    op: str | None  # classify | extract | summarize | generate | rank
    input: Value | None
    target: str | None
    requirements: ModelRequirements | None
    output_schema: dict[str, Any] | None
    next: str | None


@attrs.frozen(eq=False, repr=False)
class Condition(ComparedByValue):
    op: str | None  # eq neq truthy exists contains gt gte lt lte
    left: Value | None
    right: Value | None
    pointer: str


@_table("if")
@attrs.frozen(eq=False, repr=False)
class IfNode(ComparedByValue):
    id: str
    pointer: str
    condition: Condition | None
    then: str | None
    else_: str | None


@_table("foreach")
@attrs.frozen(eq=False, repr=False)
class ForeachNode(ComparedByValue):
    id: str
    pointer: str
    source: Value | None
    item_var: str | None
    index_var: str | None
    max_items: int | None
    body: tuple[Node, ...]
    next: str | None


@_table("return")
@attrs.frozen(eq=False, repr=False)
class ReturnNode(ComparedByValue):
    id: str
    pointer: str
    value: Value | None


@_table("fail")
@attrs.frozen(eq=False, repr=False)
class FailNode(ComparedByValue):
    id: str
    pointer: str
    code: str | None
    message: str | None


Node: TypeAlias = SetNode | CapabilityNode | LlmNode | IfNode | ForeachNode | ReturnNode | FailNode

NODE_TYPES: dict[str, type] = {
    "set": SetNode,
    "capability": CapabilityNode,
    "llm": LlmNode,
    "if": IfNode,
    "foreach": ForeachNode,
    "return": ReturnNode,
    "fail": FailNode,
}


def node_type(node: Node) -> str:
    return _TYPE_NAMES[type(node)]


_TYPE_NAMES: dict[type, str] = {cls: name for name, cls in NODE_TYPES.items()}


# node class → (JSON field, IR attribute) of its edges, in field order (from `NODE_FIELDS`)
_EDGES: dict[type, tuple[tuple[str, str], ...]] = {
    NODE_TYPES[typ]: tuple((f.name, f.attr) for f in fields if f.name in EDGE_FIELDS)
    for typ, fields in NODE_FIELDS.items()
}


def edges(node: Node) -> list[tuple[str, str]]:
    """(JSON field, target id) of a node's outgoing edges, in field order (``then`` before
    ``else``); a field left out or unusable (None) is no edge."""
    out = []
    for name, attr in _EDGES[type(node)]:
        target = getattr(node, attr)
        if type(target) is str:
            out.append((name, target))
    return out


def successors(node: Node) -> tuple[str, ...]:
    """The ids a node may go to next, in its own scope (``then`` before ``else``)."""
    return tuple(target for _, target in edges(node))


@attrs.frozen(eq=False, repr=False)
class Network(ComparedByValue):
    mode: str | None  # forbidden | allowlist
    hosts: tuple[str, ...]
    pointer: str = "/network"


@attrs.frozen(eq=False, repr=False)
class CredentialRequirement(ComparedByValue):
    id: str | None
    purpose: str | None
    hosts: tuple[str, ...]
    pointer: str


@attrs.frozen(eq=False, repr=False)
class Flow(ComparedByValue):
    entry: str | None
    max_transitions: int | None
    nodes: tuple[Node, ...]
    pointer: str = "/flow"


@attrs.frozen(eq=False, repr=False)
class StateDecl(ComparedByValue):
    fields: dict[str, dict[str, Any]]  # name → JSON Schema subset
    max_bytes: int | None
    pointer: str = "/state"


@attrs.frozen(eq=False, repr=False)
class Trigger(ComparedByValue):
    type: str | None
    cron: str | None
    pointer: str


@attrs.frozen(eq=False, repr=False)
class UiValue(ComparedByValue):
    label: str | None
    path: str | None
    segments: tuple[Segment, ...] | None  # parsed `path`, None when unsafe
    pointer: str


@attrs.frozen(eq=False, repr=False)
class Ui(ComparedByValue):
    title: str | None
    values: tuple[UiValue, ...]
    pointer: str = "/ui"


@attrs.frozen(eq=False, repr=False)
class Manifest(ComparedByValue):
    schema: str | None
    id: str | None
    version: int | None
    title: str | None
    description: str | None
    created_at: str | None
    parent_version: int | None
    execution: str | None
    install_scope: str | None
    network: Network | None
    credential_requirements: tuple[CredentialRequirement, ...]
    model_defaults: ModelRequirements | None
    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None
    flow: Flow | None
    state: StateDecl | None
    triggers: tuple[Trigger, ...]
    ui: Ui | None
    # Facts the builder records while it walks the values anyway, so passes need not walk them
    # again. None when the IR was built by other means (then passes walk the values themselves):
    # node pointer → every read of that node (`$ref`s and template placeholders, field order)
    node_reads: dict[str, list[Ref]] | None = attrs.field(default=None, eq=False, repr=False)
    # pointers of the nodes whose values hold a `$credential`
    credential_nodes: frozenset[str] | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def name(self) -> str:
        return f"dynamic:{self.id}"


def walk_nodes(nodes: tuple[Node, ...]) -> list[tuple[Node, ForeachNode | None]]:
    """Every node with the loop that holds it (None at the top level), in manifest order."""
    out: list[tuple[Node, ForeachNode | None]] = []
    for node in nodes:
        out.append((node, None))
        if isinstance(node, ForeachNode):
            out.extend((child, node) for child in node.body)
    return out


N = TypeVar("N", SetNode, CapabilityNode, LlmNode, IfNode, ForeachNode, ReturnNode, FailNode)


def nodes_of_type(nodes: tuple[Node, ...], kind: type[N]) -> list[N]:
    """Every node of one type, loop bodies included, in manifest order (a hot path of the
    checker: plain type identity, no isinstance chains)."""
    out: list[N] = []
    for node in nodes:
        node_kind = type(node)
        if node_kind is kind:
            out.append(node)  # type: ignore[arg-type]
        if node_kind is ForeachNode:
            out.extend(nodes_of_type(node.body, kind))  # type: ignore[union-attr]
    return out


def walk_values(value: Value | None) -> list[Value]:
    """Every value in a value tree, pre-order (the value itself first)."""
    if value is None:
        return []
    out: list[Value] = [value]
    if isinstance(value, ObjectExpr):
        for _, member in value.fields:
            out.extend(walk_values(member))
    elif isinstance(value, ListExpr):
        for item in value.items:
            out.extend(walk_values(item))
    return out


def _value_slots(name: str, kind: str, held: Any) -> list[tuple[str, Value | None]]:
    if kind == "value":
        return [(name, held)]
    # a condition: its two operands
    return [("left", held.left), ("right", held.right)] if held is not None else []


_unclassified = {f.kind for fields in NODE_FIELDS.values() for f in fields} - {
    *VALUE_KINDS,
    *PLAIN_KINDS,
}
if _unclassified or set(VALUE_KINDS) & set(PLAIN_KINDS):
    raise TypeError(f"field kinds neither value nor plain: {sorted(_unclassified)}")

# node class → (JSON field, kind, IR attribute) of its fields that hold values
_VALUE_FIELDS: dict[type, tuple[tuple[str, str, str], ...]] = {
    NODE_TYPES[typ]: tuple((f.name, f.kind, f.attr) for f in fields if f.kind in VALUE_KINDS)
    for typ, fields in NODE_FIELDS.items()
}


def node_values(node: Node) -> list[tuple[str, Value]]:
    """The value slots of a node as (field name, value), in field order (from `NODE_FIELDS`:
    every field whose kind holds values; a condition gives its `left` and `right`)."""
    out: list[tuple[str, Value]] = []
    for name, kind, attr in _VALUE_FIELDS[type(node)]:
        out.extend(
            (n, v) for n, v in _value_slots(name, kind, getattr(node, attr)) if v is not None
        )
    return out
