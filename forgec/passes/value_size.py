"""The worst-case size of the largest value a run holds, computed from the IR (SPEC §16).

An upper bound in bytes of compact JSON, or None when it cannot be bounded below the run-time
limit (`VALUE_LIMIT`, which the VM enforces on every value it builds). Sources of size: a
literal is its own JSON; the input is at most `INPUT_LIMIT`, or what its `inputSchema` allows
where that is less (`maxLength`, `maxItems`, `enum`, closed objects); a capability result or
model answer at most `RESULT_LIMIT`; loaded state at most `state.maxBytes`; a loop's item at most
its source; an index at most 2 bytes (`maxItems` ≤ 100). A variable is bounded by the largest
of its writes, found by iterating to a fixpoint (flow-insensitive, so a value that feeds itself
is bounded only if the iteration settles). A template piece that is not known to be a string
may have each of its characters escaped, so it counts twice its JSON; one the input schema
types as a string counts its text.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from forgec.ir import nodes as ir
from forgec.ir.readable import Readable
from forgec.runtime.jsontext import compact as json_dumps
from forgec.runtime.limits import INPUT_LIMIT, RESULT_LIMIT, VALUE_LIMIT

# past this, a bound says nothing the run-time limit does not already say
_OVER = VALUE_LIMIT + 1


@attrs.define(repr=False)
class _Facts(Readable):
    """What the nodes say about sizes: each write, each value read, the loops' sources."""

    writes: list[tuple[str, ir.Value | int]] = attrs.field(factory=list)  # (variable, bound)
    values: list[ir.Value] = attrs.field(factory=list)
    loops: dict[str, ir.Value] = attrs.field(factory=dict)  # item variable → loop source
    indexes: set[str] = attrs.field(factory=set)


def _set(f: _Facts, node: ir.SetNode) -> None:
    if node.value is not None:
        f.values.append(node.value)
        if node.target is not None:
            f.writes.append((node.target, node.value))


def _step(f: _Facts, node: ir.CapabilityNode | ir.LlmNode) -> None:
    if node.input is not None:
        f.values.append(node.input)
    if node.target is not None:
        f.writes.append((node.target, RESULT_LIMIT))


def _if(f: _Facts, node: ir.IfNode) -> None:
    if node.condition is not None:
        f.values += [v for v in (node.condition.left, node.condition.right) if v is not None]


def _foreach(f: _Facts, node: ir.ForeachNode) -> None:
    if node.source is not None:
        f.values.append(node.source)
        if node.item_var is not None:
            f.loops[node.item_var] = node.source
        if node.index_var is not None:
            f.indexes.add(node.index_var)


def _return(f: _Facts, node: ir.ReturnNode) -> None:
    if node.value is not None:
        f.values.append(node.value)


def _fail(f: _Facts, node: ir.FailNode) -> None:
    """A `fail` holds no value but its literal message (bounded by the manifest's limits)."""


# node type → what it adds to the size facts (every type: tests/test_node_tables.py)
NODE_TABLE: dict[str, Callable[[_Facts, Any], None]] = {
    "set": _set,
    "capability": _step,
    "llm": _step,
    "if": _if,
    "foreach": _foreach,
    "return": _return,
    "fail": _fail,
}


def largest_value_bound(manifest: ir.Manifest) -> int | None:
    """Bytes the largest value of any run can reach, or None: "bounded at run time".

    Values read by the flow count (the input only when referenced)."""
    flow = manifest.flow
    if flow is None:
        return None
    facts = _Facts()
    for node, _loop in ir.walk_nodes(flow.nodes):
        NODE_TABLE[ir.node_type(node)](facts, node)
    writes, values, loops, indexes = facts.writes, facts.values, facts.loops, facts.indexes
    state = manifest.state
    state_bytes = (state.max_bytes or 0) if state is not None else 0

    bounds: dict[str, int] = {}

    def root_bound(root: str, field: str | None, ref: ir.Ref | None = None) -> int:
        if root == "input":
            sub = _schema_at(manifest.input_schema, ref.segments[1:]) if ref else None
            return min(INPUT_LIMIT, schema_bound(sub) if sub is not None else INPUT_LIMIT)
        if root == "state":
            # loaded state is within maxBytes; a field may also be written by the flow
            written = bounds.get(f"state.{field}", 0) if field else _state_total()
            return min(_OVER, max(state_bytes, written))
        if root in indexes:
            return 2
        best = bounds.get(root, 0)
        if root in loops:
            best = max(best, size(loops[root]))
        return best

    def _state_total() -> int:
        fields = [b for name, b in bounds.items() if name.startswith("state.")]
        return min(_OVER, state_bytes + sum(fields) + 2 * len(fields))

    def size(value: ir.Value) -> int:
        if isinstance(value, ir.Literal):
            return len(json_dumps(value.value))
        if isinstance(value, ir.Ref):
            field = value.segments[1] if len(value.segments) > 1 else None
            return root_bound(
                str(value.segments[0]), str(field) if field is not None else None, value
            )
        if isinstance(value, ir.Template):
            total = 2
            for part in value.parts:
                if isinstance(part, str):
                    total += len(json_dumps(part)) - 2
                elif _is_string(manifest.input_schema, part):
                    total += size(part) - 2
                else:
                    total += 2 * size(part)
            return min(_OVER, total)
        if isinstance(value, ir.ObjectExpr):
            total = 1 + max(1, len(value.fields))
            for key, member in value.fields:
                total += len(json_dumps(key)) + 1 + size(member)
            return min(_OVER, total)
        if isinstance(value, ir.ListExpr):
            return min(_OVER, 1 + max(1, len(value.items)) + sum(size(i) for i in value.items))
        if isinstance(value, ir.CredentialRef):
            return len(json_dumps({"$credential": value.id}))
        return _OVER

    # each round can only raise bounds; one that keeps rising feeds itself: give up on it
    for _ in range(len(writes) + 2):
        changed = False
        for target, value in writes:
            new = value if isinstance(value, int) else size(value)
            if new > bounds.get(target, 0):
                bounds[target] = min(_OVER, new)
                changed = True
        if not changed:
            break
    else:
        return None
    largest = max([0, *bounds.values(), *(size(v) for v in values)])
    # at the limit is no better than what the run enforces (a result may be that large)
    return largest if largest < VALUE_LIMIT else None


def _schema_at(schema: Any, segments: tuple[ir.Segment, ...]) -> dict[str, Any] | None:
    """The sub-schema a path into the input reads, or None when the schema does not say."""
    for seg in segments:
        if not isinstance(schema, dict):
            return None
        if isinstance(seg, int):
            schema = schema.get("items")
        else:
            props = schema.get("properties")
            schema = props.get(seg) if isinstance(props, dict) else None
    return schema if isinstance(schema, dict) else None


def _is_string(schema: Any, ref: ir.Ref) -> bool:
    if ref.segments[0] != "input":
        return False
    sub = _schema_at(schema, ref.segments[1:])
    return sub is not None and sub.get("type") == "string" and "enum" not in sub


# an input integer may be any 64-bit one (20 characters), a number also a float (23)
_SCALAR = {"integer": 20, "number": 24, "boolean": 5, "null": 4}


def schema_bound(schema: Any, depth: int = 0) -> int:
    """The most bytes a JSON value valid against `schema` can take; INPUT_LIMIT when unbounded."""
    if not isinstance(schema, dict) or depth > 8:
        return INPUT_LIMIT
    if "const" in schema:
        return len(json_dumps(schema["const"]))
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return max(len(json_dumps(v)) for v in schema["enum"])
    kind = schema.get("type")
    if not isinstance(kind, str):  # absent, or a list of types: not bounded here
        return INPUT_LIMIT
    if kind in _SCALAR:
        return _SCALAR[kind]
    if kind == "string" and isinstance(schema.get("maxLength"), int):
        return 6 * schema["maxLength"] + 2  # `\u0001` is 6 bytes for one character
    if kind == "array" and isinstance(schema.get("maxItems"), int):
        item = schema_bound(schema.get("items"), depth + 1)
        return min(INPUT_LIMIT, 2 + schema["maxItems"] * (item + 1))
    props = schema.get("properties")
    if kind == "object" and schema.get("additionalProperties") is False and isinstance(props, dict):
        total = 2 + sum(
            len(json_dumps(k)) + 2 + schema_bound(sub, depth + 1) for k, sub in props.items()
        )
        return min(INPUT_LIMIT, total)
    return INPUT_LIMIT
