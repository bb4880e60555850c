"""The worst-case size of the largest value a run holds, computed from the IR (SPEC §16).

An upper bound in bytes of compact JSON, or None when it cannot be bounded below the run-time
limit (`VALUE_LIMIT`, which the VM enforces on every value it builds). Sources of size: a
literal is its own JSON; the input is at most `INPUT_LIMIT`; a capability result or model
answer at most `RESULT_LIMIT`; loaded state at most `state.maxBytes`; a loop's item at most
its source; an index at most 2 bytes (`maxItems` ≤ 100). A variable is bounded by the largest
of its writes, found by iterating to a fixpoint (flow-insensitive, so a value that feeds itself
is bounded only if the iteration settles). A template piece that is not known to be a string
may have each of its characters escaped, so it counts twice its JSON.
"""

from __future__ import annotations

import orjson

from forgec.ir import nodes as ir
from forgec.runtime.limits import INPUT_LIMIT, RESULT_LIMIT, VALUE_LIMIT

# past this, a bound says nothing the run-time limit does not already say
_OVER = VALUE_LIMIT + 1


def largest_value_bound(manifest: ir.Manifest) -> int | None:
    """Bytes the largest value of any run can reach, or None: "bounded at run time".

    Values read by the flow count (the input only when referenced)."""
    flow = manifest.flow
    if flow is None:
        return None
    writes: list[tuple[str, ir.Value | int]] = []  # (variable, value or a fixed bound)
    values: list[ir.Value] = []
    loops: dict[str, ir.Value] = {}  # item variable → its loop's source
    indexes: set[str] = set()
    for node, _loop in ir.walk_nodes(flow.nodes):
        if isinstance(node, ir.SetNode) and node.value is not None:
            values.append(node.value)
            if node.target is not None:
                writes.append((node.target, node.value))
        elif isinstance(node, (ir.CapabilityNode, ir.LlmNode)):
            if node.input is not None:
                values.append(node.input)
            if node.target is not None:
                writes.append((node.target, RESULT_LIMIT))
        elif isinstance(node, ir.IfNode) and node.condition is not None:
            values += [v for v in (node.condition.left, node.condition.right) if v is not None]
        elif isinstance(node, ir.ForeachNode) and node.source is not None:
            values.append(node.source)
            if node.item_var is not None:
                loops[node.item_var] = node.source
            if node.index_var is not None:
                indexes.add(node.index_var)
        elif isinstance(node, ir.ReturnNode) and node.value is not None:
            values.append(node.value)
    state = manifest.state
    state_bytes = (state.max_bytes or 0) if state is not None else 0

    bounds: dict[str, int] = {}

    def root_bound(root: str, field: str | None) -> int:
        if root == "input":
            return INPUT_LIMIT
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
            return len(orjson.dumps(value.value))
        if isinstance(value, ir.Ref):
            field = value.segments[1] if len(value.segments) > 1 else None
            return root_bound(str(value.segments[0]), str(field) if field is not None else None)
        if isinstance(value, ir.Template):
            total = 2
            for part in value.parts:
                if isinstance(part, str):
                    total += len(orjson.dumps(part)) - 2
                else:
                    total += 2 * size(part)
            return min(_OVER, total)
        if isinstance(value, ir.ObjectExpr):
            total = 1 + max(1, len(value.fields))
            for key, member in value.fields:
                total += len(orjson.dumps(key)) + 1 + size(member)
            return min(_OVER, total)
        if isinstance(value, ir.ListExpr):
            return min(_OVER, 1 + max(1, len(value.items)) + sum(size(i) for i in value.items))
        if isinstance(value, ir.CredentialRef):
            return len(orjson.dumps({"$credential": value.id}))
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
