"""Where data goes (SPEC §15): which labels reach which sinks, on every path, before a run.

An abstract interpretation of the checked flow. Each variable holds an abstract value: the
labels of the whole value (`base`) and, when the value was built from an object or list
expression, the abstract value of each literal key (`fields`). Reading `x.a.b` collects the
bases along the path, so a field that was not sent carries none of its siblings' labels (SPEC
paths are always literal). Joins union labels; a missing key on one side is the other side's,
so every join is sound.

Control: the labels of an `if` condition (and of a loop's source, for its body) are the "pc"
of every node the branch decides: the nodes reachable from the branch before its immediate
post-dominator (the join; a virtual exit stands for `return`/`fail` and, in a body, the end
of the iteration). A value stored under a pc carries it; a sink under a pc is a control flow.
A loop whose body may `return`/`fail` decides everything after it: its source and its body's
conditions stay in the pc for the rest of the run. The VM mirrors exactly this (the joins go
into the Program), which is what makes the run-time pairs a subset of these.

Failure is control: a node that may fail at run time (a reference its declared shape does not
guarantee, a comparison that may meet the wrong types, a loop source that may not be a list or
may be too long, any capability or model step given labelled data)
decides whether every later node runs. The labels of what it evaluated join a flow-sensitive
"failure pc" (the env key `_FAIL`) that every later node's pc includes. The Program lists
these nodes (`mayFail`) and the VM adds the same labels at the same points.

Labels persist: `state.X` and each host table are cells. A read carries `private:state` (for
state) plus every label the tool can write into the cell on any path: the whole analysis runs
again with the cells' labels until they no longer grow (at most `_CELL_ROUNDS` times; then
every cell written gets every label the tool can produce — sound, as unknown means anything).

Bounded by construction (docs/analysis.md states the cost): label sets are interned and their
unions cached; an abstract value has at most `_MAX_SIZE` nodes and `_MAX_DEPTH` levels (beyond,
it collapses to one opaque value carrying all its labels); a loop widens after
`_PRECISE_ROUNDS` rounds, or at once when the analysis has spent its budget of node
transfers (`_BUDGET`), to "every variable the body assigns carries every label in reach",
which is a fixpoint by construction.

Results: `ctx.facts.flows` (sorted `Flow`s), `ctx.facts.flow_joins` (for lowering), and the
two `FORGEC_FLOW_*` warnings. The pass stands down when the graph is not well formed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from forgec.catalog.sql import query_reads_outside
from forgec.ir.nodes import (
    CapabilityNode,
    FailNode,
    ForeachNode,
    IfNode,
    ListExpr,
    Literal,
    LlmNode,
    Node,
    ObjectExpr,
    Ref,
    ReturnNode,
    SetNode,
    Template,
    Value,
    node_type,
)
from forgec.ir.pointer import join
from forgec.ir.readable import HashedByValue, Readable
from forgec.passes.capabilities import literal_fields
from forgec.passes.context import PassContext
from forgec.passes.network import static_host, url_of
from forgec.runtime import sources_and_sinks as fl

_EXIT = "\x00exit"  # the virtual node after return/fail (and a body's last node)
_FAIL = "\x00fail"  # env key: the labels that an earlier failure depends on
_MAX_SIZE = 128  # nodes of one abstract value (its tree, shared parts counted each time)
_MAX_DEPTH = 12  # levels of one abstract value
_PRECISE_ROUNDS = 4  # loop rounds before widening
_BUDGET = 20_000  # node transfers of the whole analysis before every loop widens at once
_CELL_ROUNDS = 3  # runs of the whole analysis over the persistent cells before widening


# --- label sets: interned, unions cached (shared, never copied) ------------------------

_UNIONS: dict[tuple[frozenset[str], frozenset[str]], frozenset[str]] = {}
_INTERN: dict[frozenset[str], frozenset[str]] = {}
_CACHE_CAP = 1 << 16


def _or(a: frozenset[str], b: frozenset[str]) -> frozenset[str]:
    if a is b or not b:
        return a
    if not a:
        return b
    key = (a, b)
    out = _UNIONS.get(key)
    if out is None:
        if len(_UNIONS) > _CACHE_CAP:  # bounded: a long-lived server checks many tools
            _UNIONS.clear()
            _INTERN.clear()
        union = a | b
        out = _INTERN.setdefault(union, union)
        _UNIONS[key] = out
    return out


@attrs.frozen(repr=False, eq=False)
class Flow(HashedByValue):
    source: str  # a label: input, private:<capability>, private:state, external:<host>, model
    sink: str  # egress:<host|capability>, write:<capability>, output
    node: str  # the sink's node id
    argument: str  # the top-level input key (or return key) that carries it; "*" = all of it
    via: str  # data | control
    path: tuple[str, ...]  # a witness: node ids from where the label entered to the sink
    # SPEC §21: the argument is one of the call's destinations (by data): where the data goes
    # or which item changes (a `net.http` URL whose host is literal is not)
    destination: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source": self.source,
            "sink": self.sink,
            "node": self.node,
            "argument": self.argument,
            "via": self.via,
            "path": list(self.path),
        }
        if self.destination:
            out["destination"] = True
        return out


Schema = tuple[Mapping[str, Any], bool]  # a declared JSON Schema; whether defaults fill in


class _AV:
    """An abstract value: labels of the whole (`base`), and per literal key when built from
    an object or list expression (`fields`); its declared shape when known (`schema`), and
    whether a variable holding it is defined on every path (`sure`).

    Witness paths are not carried label by label (that doubled the pass's cost): each value
    remembers the node that made it (`origin`) and the values it was made from (`parents`),
    and `_witness` walks that graph back only for the flows found. A value whose tree would
    pass `_MAX_SIZE` nodes or `_MAX_DEPTH` levels is collapsed to one opaque value (every
    part carries all its labels): sound, and every operation on a value stays bounded."""

    __slots__ = ("base", "depth", "fields", "flat", "origin", "parents", "schema", "size", "sure")

    def __init__(
        self,
        base: frozenset[str],
        fields: dict[Any, _AV] | None = None,
        origin: str | None = None,
        parents: tuple[_AV, ...] = (),
        schema: Schema | None = None,
        sure: bool = True,
    ) -> None:
        self.origin = origin
        self.parents = parents
        self.schema = schema
        self.sure = sure
        if fields is not None:
            size = 1
            depth = 0
            for child in fields.values():
                size += child.size  # type: ignore[has-type]
                if child.depth > depth:  # type: ignore[has-type]
                    depth = child.depth  # type: ignore[has-type]
            depth += 1
            if size > _MAX_SIZE or depth > _MAX_DEPTH:
                for child in fields.values():
                    base = _or(base, _flat(child))
                fields = None
        if fields is None:
            size = depth = 1
        self.base = base
        self.fields = fields
        self.size = size
        self.depth = depth
        self.flat: frozenset[str] | None = base if fields is None else None


_NONE: frozenset[str] = frozenset()
_EMPTY = _AV(_NONE)


def _flat(av: _AV) -> frozenset[str]:
    flat = av.flat
    if flat is None:
        flat = av.base
        for child in av.fields.values():  # type: ignore[union-attr]
            flat = _or(flat, _flat(child))
        av.flat = flat
    return flat


def _stamp(av: _AV, node: str, pc: _AV) -> _AV:
    """The value as stored by `node` under `pc` (the pc's labels join in)."""
    if pc is _EMPTY or not pc.base:
        return _AV(av.base, av.fields, node, (av,), av.schema)
    return _AV(_or(av.base, pc.base), av.fields, node, (av, pc), av.schema)


def _join(x: _AV, y: _AV) -> _AV:
    if x is y:
        return x
    base = _or(x.base, y.base)
    schema = x.schema if x.schema is y.schema else None
    sure = x.sure and y.sure
    if x.fields is None or y.fields is None:
        fields = x.fields if y.fields is None else y.fields
        return _AV(base, fields, None, (x, y), schema, sure)
    fields = dict(x.fields)
    for k, c in y.fields.items():
        fields[k] = _join(fields[k], c) if k in fields else _unsure(c)
    for k, c in x.fields.items():
        if k not in y.fields:
            fields[k] = _unsure(c)
    return _AV(base, fields, None, (x, y), schema, sure)


def _unsure(av: _AV) -> _AV:
    """The value on a path where it may be absent (a key one side of a join lacks)."""
    if not av.sure:
        return av
    return _AV(av.base, av.fields, None, (av,), av.schema, False)


def _opaque(
    labels: frozenset[str], origin: str | None = None, parents: tuple[_AV, ...] = ()
) -> _AV:
    return _AV(labels, None, origin, parents, None, False)


def _union(avs: list[_AV], origin: str | None = None) -> _AV:
    """One opaque value carrying every label of `avs` (a template, a condition, a result)."""
    labels = _NONE
    for av in avs:
        labels = _or(labels, _flat(av))
    return _AV(labels, None, origin, tuple(avs))


def _same(x: _AV, y: _AV) -> bool:
    if x is y:
        return True
    if x.base != y.base or x.sure != y.sure or x.schema is not y.schema:
        return False
    if x.fields is None or y.fields is None:
        return x.fields is y.fields
    if x.fields.keys() != y.fields.keys():
        return False
    return all(_same(c, y.fields[k]) for k, c in x.fields.items())


def _witness(av: _AV, label: str) -> tuple[str, ...]:
    """Node ids through which `label` came into `av`, oldest first (iterative: the graph of
    values can be long after a loop's fixpoint)."""
    out: list[str] = []
    seen: set[int] = set()
    current: _AV | None = av
    while current is not None:
        seen.add(id(current))
        if current.origin is not None and (not out or out[-1] != current.origin):
            out.append(current.origin)
        nxt = None
        for parent in (*current.parents, *(current.fields or {}).values()):
            if id(parent) not in seen and label in _flat(parent):
                nxt = parent
                break
        current = nxt
    out.reverse()
    return tuple(out)


def _child_schema(schema: Schema | None, seg: str | int) -> tuple[Schema | None, bool]:
    """The declared shape one step down, and whether the declared shape guarantees the step
    exists (an object with the key required — or defaulted, where defaults fill in — or an
    array with more than `seg` items by `minItems`). Anything else may be absent."""
    if schema is None:
        return None, False
    s, fill = schema
    kind = s.get("type")
    if type(seg) is str:
        props = s.get("properties")
        sub = props.get(seg) if isinstance(props, Mapping) else None
        required = s.get("required")
        ok = kind == "object" and (
            (isinstance(required, list) and seg in required)
            or (fill and isinstance(sub, Mapping) and "default" in sub)
        )
    else:
        sub = s.get("items")
        least = s.get("minItems")
        ok = kind == "array" and type(least) is int and type(seg) is int and seg < least
    return ((sub, fill) if isinstance(sub, Mapping) else None), ok


def _no_more_items(schema: Schema | None, max_items: int | None) -> bool:
    """Whether the declared shape guarantees a list of at most `max_items` items."""
    if schema is None or max_items is None:
        return False
    s = schema[0]
    most = s.get("maxItems")
    return s.get("type") == "array" and type(most) is int and most <= max_items


_TYPED_OPS = frozenset({"contains", "gt", "gte", "lt", "lte"})
_JSON_KINDS = {str: "string", bool: "boolean", int: "number", float: "number", list: "array"}


def _kind(value: Value | None, av: _AV) -> str | None:
    """The JSON type a condition operand is sure to have (None: not known)."""
    kind = type(value)
    if kind is Literal:
        lit = value.value  # type: ignore[union-attr]
        return "object" if isinstance(lit, dict) else _JSON_KINDS.get(type(lit))
    if kind is Template:
        return "string"
    if kind is ObjectExpr:
        return "object"
    if kind is ListExpr:
        return "array"
    if kind is Ref and av.schema is not None:
        declared = av.schema[0].get("type")
        return "number" if declared == "integer" else declared if type(declared) is str else None
    return None


def _well_typed(op: str, kinds: list[str | None]) -> bool:
    """Whether `contains` / an order comparison cannot meet operands of the wrong types."""
    left = kinds[0]
    right = kinds[1] if len(kinds) > 1 else None
    if op == "contains":
        return left == "array" or (left in ("string", "object") and right == "string")
    return left == right and left in ("number", "string")


Env = dict[str, _AV]


def _join_env(a: Env, b: Env) -> Env:
    if a is b:
        return a
    out = dict(a)
    for k, v in b.items():
        old = out.get(k)
        out[k] = _join(old, v) if old is not None else _unsure(v)
    for k, v in a.items():
        if k not in b:
            out[k] = _unsure(v)
    return out


def _same_env(a: Env, b: Env) -> bool:
    return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())


@attrs.define(repr=False, eq=False)
class FlowJoins(Readable):
    """What the VM needs to mirror control dependence (lowered into the Program)."""

    # if-node id → the node id where its branches join; None: the end of the run (top level)
    # or of the iteration (in a body)
    joins: dict[str, str | None] = attrs.field(factory=dict)
    # loops whose body may return/fail: their source and body conditions steer the rest
    exit_loops: list[str] = attrs.field(factory=list)
    # nodes that may fail depending on labelled data (SPEC §15 "Failure is control"): the
    # VM adds what they evaluated to the control labels of the rest of the run
    # node id → the paths of its reads that may fail (their labels at the node's entry);
    # capability and model steps also depend on their whole input, which the VM knows
    may_fail: dict[str, list[list[str | int]]] = attrs.field(factory=dict)


def analyse(ctx: PassContext, *, warn: bool = True) -> None:
    """Run the analysis on a checked context (the pass's gate, `forgec.passes.flow_gate`,
    decides whether a check runs it now); fills `ctx.facts.flows` and `flow_joins`."""
    _Analysis(ctx).run(warn=warn)


def _all_nodes(nodes: tuple[Node, ...]) -> list[Node]:
    out: list[Node] = []
    todo = list(nodes)
    while todo:
        node = todo.pop()
        out.append(node)
        if type(node) is ForeachNode:
            todo.extend(node.body)
    return out


# successors (with _EXIT), controllers, real successors
_Shape = tuple[dict[str, tuple[str, ...]], dict[str, list[str]], dict[str, tuple[str, ...]]]
# a node's effect: the env after it (None: the run ends there) and, for a node that decides
# what runs after it (an `if`, a loop that may end the run), the deciding value
_Transfer = Callable[["_Analysis", Any, Env, _AV], tuple[Env | None, _AV | None]]


class _Analysis:
    def __init__(self, ctx: PassContext) -> None:
        self.ctx = ctx
        self.facts = ctx.facts
        # (sink node, sink, argument, via) → the values that reached it (labels and witness)
        self.found: dict[tuple[str, str, str, str], list[_AV]] = {}
        # SPEC §21: sink node → its destination arguments (the rows' `destinations`, less a
        # URL whose host the manifest writes literally)
        self.destinations: dict[str, frozenset[str]] = {}
        self.joins = FlowJoins()
        # scope (its first node) → successors and controllers, computed once per scope
        self.shapes: dict[str, _Shape] = {}
        manifest = ctx.manifest
        self.state_decl = dict(manifest.state.fields) if manifest.state is not None else {}
        self.state_fields = tuple(self.state_decl)
        self.state_av = _AV(frozenset({fl.STATE}))
        schema = manifest.input_schema
        self.input_schema: Schema | None = (schema, True) if isinstance(schema, Mapping) else None
        # persistent cells (`state.X`, `table:T`) → what the previous round wrote into them
        self.cells: dict[str, _AV] = {}
        self.written: dict[str, list[_AV]] = {}
        self.read_cells: set[str] = set()
        self.transfers = 0
        # while a node's values are evaluated: what its possible failures depend on, and the
        # paths of the reads that may fail (lowered, so the VM adds the same labels)
        self.fail_parts: list[_AV] = []
        self.fail_paths: list[list[str | int]] = []
        self.sources: dict[str, frozenset[str]] = {}  # loop id → labels its body can produce
        self.assigned: dict[str, frozenset[str]] = {}  # loop id → env keys its body writes
        self.universe = self._universe()

    def _universe(self) -> frozenset[str]:
        """Every label this tool can produce: what a cap widens to (unknown = anything)."""
        out = {fl.INPUT, fl.STATE, fl.MODEL}
        for node in _all_nodes(self.ctx.manifest.flow.nodes):  # type: ignore[union-attr]
            if type(node) is CapabilityNode:
                out |= self.sources_of(node)
        return frozenset(out)

    def sources_of(self, node: CapabilityNode) -> frozenset[str]:
        name = node.capability or ""
        host = static_host(url_of(node)[0])
        out = set(fl.source_labels(name, host))
        # SPEC §21: a query's outside text by its lineage (a computed query: any)
        query = fl.QUERY_FIELDS.get(name)
        if query is not None and query_reads_outside(literal_fields(node.input).get(query)):
            out.add(fl.TALON)
        return frozenset(out)

    def spent(self) -> bool:
        return self.transfers > _BUDGET

    # --- values -------------------------------------------------------------------------

    def read(self, env: Env, ref: Ref) -> _AV:
        av, risky = self._read(env, ref.segments)
        if risky:
            # what a missing step depends on: the labels along the path (the read's base)
            self.fail_parts.append(av if av.fields is None else _AV(av.base, None, None, (av,)))
            self.fail_paths.append(list(ref.segments))
        return av

    def _read(self, env: Env, segs: tuple[str | int, ...]) -> tuple[_AV, bool]:
        """The value at a path, and whether the read may fail (RUN_REF_MISSING): a variable
        not defined on every path, a step its declared shape does not guarantee."""
        root = segs[0]
        if root == "state":
            if len(segs) == 1:
                self.read_cells.update(f"state.{f}" for f in self.state_fields)
                whole = [self.state_av, *(env.get(f"state.{f}", _EMPTY) for f in self.state_fields)]
                return _union(whole), False
            key = f"state.{segs[1]}"
            self.read_cells.add(key)
            found = env.get(key)
            rest = segs[2:]
        else:
            found = env.get(root)  # type: ignore[arg-type]
            rest = segs[1:]
        if found is None:
            return _EMPTY, True
        av = found
        risky = not av.sure
        if risky:
            av = _AV(av.base, av.fields, None, (av,), av.schema)  # read: it was there
        if not rest:
            return av, risky
        top = av
        acc = av.base
        schema = av.schema
        for seg in rest:
            if av.fields is None:
                # every part of an opaque value carries all its labels; only its declared
                # shape can say whether the part is there
                schema, ok = _child_schema(schema, seg)
                risky = risky or not ok
                continue
            child = av.fields.get(seg)
            if child is None:
                return _AV(acc, None, None, (top,)), True  # a literal member: no labels
            av = child
            risky = risky or not av.sure
            acc = _or(acc, av.base)
            schema = av.schema
        if av.sure and av.fields is None and acc is av.base and schema is av.schema:
            return av, risky
        return _AV(acc, av.fields, None, (top,), schema), risky

    def value(self, env: Env, value: Value | None) -> _AV:
        kind = type(value)
        if kind is Ref:
            return self.read(env, value)  # type: ignore[arg-type]
        if kind is Template:
            parts = value.parts  # type: ignore[union-attr]
            reads = [self.read(env, p) for p in parts if type(p) is Ref]
            if len(reads) == 1 and reads[0].fields is None:
                # one opaque read: its labels, as rendered text (so not its declared shape)
                only = reads[0]
                return only if only.schema is None else _AV(only.base, None, None, (only,))
            return _union(reads)
        if kind is ObjectExpr:
            return _AV(_NONE, {k: self.value(env, m) for k, m in value.fields})  # type: ignore[union-attr]
        if kind is ListExpr:
            return _AV(_NONE, {i: self.value(env, m) for i, m in enumerate(value.items)})  # type: ignore[union-attr]
        return _EMPTY  # a literal, a credential (resolved by the host, never a label), None

    def arguments(self, env: Env, value: Value | None) -> list[tuple[str, _AV]]:
        """Per top-level key of an object expression, else the whole value as `*`."""
        if type(value) is ObjectExpr:
            return [(k, self.value(env, m)) for k, m in value.fields]
        return [("*", self.value(env, value))]

    # --- sinks and cells -----------------------------------------------------------------

    def sink(self, node: str, sink: str, args: list[tuple[str, _AV]], pc: _AV) -> None:
        found = self.found
        for argument, av in args:
            if _flat(av):
                found.setdefault((node, sink, argument, "data"), []).append(av)
        if pc.base:
            found.setdefault((node, sink, "*", "control"), []).append(pc)

    def write_cell(self, cell: str, av: _AV) -> None:
        if _flat(av):
            self.written.setdefault(cell, []).append(av)

    def cell(self, cell: str, node: str) -> _AV | None:
        """What the tool's own writes left in a cell (None: nothing labelled)."""
        self.read_cells.add(cell)
        stored = self.cells.get(cell)
        return _AV(stored.base, None, node, (stored,)) if stored is not None else None

    def begin(self) -> None:
        self.fail_parts = []
        self.fail_paths = []

    def fails(self, env: Env, node: str, avs: list[_AV] = ()) -> Env:  # type: ignore[assignment]
        """`node` may fail depending on `avs` and on the reads it recorded since `begin`:
        every later node is decided by their labels (SPEC §15 "Failure is control")."""
        paths = self.fail_paths
        if paths:
            known = self.joins.may_fail.setdefault(node, [])
            for path in paths:
                if path not in known:
                    known.append(path)
        labels = _NONE
        parts = [*avs, *self.fail_parts]
        for av in parts:
            labels = _or(labels, _flat(av))
        self.begin()
        if not labels:
            return env  # a failure that depends on no labelled data adds nothing
        old = env.get(_FAIL)
        if old is not None and labels <= old.base:
            return env
        out = dict(env)
        fresh = _AV(labels, None, node, tuple(parts))
        out[_FAIL] = _AV(_or(old.base, labels), None, None, (old, fresh)) if old else fresh
        return out

    # --- scopes --------------------------------------------------------------------------

    def controllers(
        self, order: list[str], succ: dict[str, tuple[str, ...]]
    ) -> tuple[dict[str, list[str]], dict[str, str | None]]:
        """Per node the controllers (ifs, exit loops) whose region holds it; and each
        controller's join (immediate post-dominator; None for the virtual exit)."""
        ctrl: dict[str, list[str]] = {}
        joins: dict[str, str | None] = {}
        deciders = [c for c in order if len(succ[c]) > 1]
        if not deciders:
            return ctrl, joins  # a straight line decides nothing: skip the post-dominators
        bit = {n: 1 << i for i, n in enumerate(order)}
        exit_bit = 1 << len(order)
        pdom: dict[str, int] = {_EXIT: exit_bit}
        for n in reversed(order):
            acc = -1
            for s in succ[n]:
                acc &= pdom[s]
            pdom[n] = bit[n] | acc
        for c in deciders:
            # post-dominators lie on every path, so the closest is the first in topological
            # order: the lowest bit (bits follow the order)
            rest = pdom[c] & ~bit[c]
            index = (rest & -rest).bit_length() - 1
            ipdom = order[index] if index < len(order) else None
            joins[c] = ipdom
            seen: set[str] = set()
            stack = [s for s in succ[c] if s != _EXIT and s != ipdom]
            while stack:
                m = stack.pop()
                if m in seen:
                    continue
                seen.add(m)
                ctrl.setdefault(m, []).append(c)
                stack.extend(s for s in succ[m] if s != _EXIT and s != ipdom)
        return ctrl, joins

    def scope(self, order: list[str], env0: Env, pc0: _AV) -> tuple[Env | None, list[_AV]]:
        """Run one scope; returns the join of the envs where it ends normally (None when
        no path does) and its conditions' values."""
        nodes = self.facts.nodes_by_id
        key = order[0] if order else ""
        shape = self.shapes.get(key)
        if shape is None:
            shape = self.shapes[key] = self.shape(order)
        _succ, ctrl, nexts_of = shape
        cond_of: dict[str, _AV] = {}
        env_in: dict[str, Env] = {order[0]: env0} if order else {}
        end: Env | None = None
        conds: list[_AV] = []
        for n in order:
            env = env_in.get(n)
            if env is None:
                continue
            self.transfers += 1
            node = nodes[n]
            pc = pc0
            deciders = ctrl.get(n)
            failed = env.get(_FAIL)
            if deciders or failed is not None:
                parts = [pc0, *(cond_of[c] for c in deciders or ())]
                if failed is not None:
                    parts.append(failed)
                pc = _union(parts)
            out, steer = NODE_TABLE[node_type(node)](self, node, env, pc)
            if steer is not None:
                cond_of[n] = steer
                conds.append(steer)
            if out is None:
                continue
            nexts = nexts_of[n]
            for s in nexts:
                env_in[s] = _join_env(env_in[s], out) if s in env_in else out
            if not nexts:
                end = out if end is None else _join_env(end, out)
        return end, conds

    def shape(self, order: list[str]) -> _Shape:
        """Successors in the scope (`_EXIT` for return/fail, a missing edge, a body's end,
        and after a loop that may end the run), the controllers of each node and the real
        successors."""
        nodes = self.facts.nodes_by_id
        members = set(order)
        succ: dict[str, tuple[str, ...]] = {}
        nexts: dict[str, tuple[str, ...]] = {}
        ifs: list[str] = []
        for n in order:
            node = nodes[n]
            kind = type(node)
            if kind is ReturnNode or kind is FailNode:
                succ[n] = (_EXIT,)
                nexts[n] = ()
                continue
            if kind is IfNode:
                ifs.append(n)
                then, other = node.then, node.else_  # type: ignore[union-attr]
                out = tuple(
                    t for t in ((then, other) if then != other else (then,)) if t in members
                )
            else:
                nxt = node.next  # type: ignore[union-attr]
                out = (nxt,) if nxt in members else ()
            nexts[n] = out
            if not out:
                out = (_EXIT,)
            elif kind is ForeachNode and self.loop_exits(node):  # type: ignore[arg-type]
                out = (*out, _EXIT)
            succ[n] = out
        ctrl, joins = self.controllers(order, succ)
        for c, j in joins.items():
            if type(nodes[c]) is IfNode:
                self.joins.joins[c] = j
        for n in ifs:  # an `if` whose branches are one node decides nothing past it
            if n not in joins:
                only = succ[n][0]
                self.joins.joins[n] = only if only != _EXIT else None
        return succ, ctrl, nexts

    def loop_exits(self, loop: ForeachNode) -> bool:
        reachable = self.facts.reachable_pointers
        return any(
            type(b) is ReturnNode or type(b) is FailNode
            for b in loop.body
            if b.pointer in reachable
        )

    # --- nodes (NODE_TABLE below dispatches on the node's type name) ----------------------

    def set_node(self, node: SetNode, env: Env, pc: _AV) -> tuple[Env | None, _AV | None]:
        self.begin()
        av = self.value(env, node.value)
        out = self.store(env, node.target, _stamp(av, node.id, pc))
        return self.fails(out, node.id), None

    def capability_node(
        self, node: CapabilityNode, env: Env, pc: _AV
    ) -> tuple[Env | None, _AV | None]:
        name = node.capability or ""
        host = static_host(url_of(node)[0])
        self.begin()
        args = self.arguments(env, node.input)
        # only a selector field (memory.access `operation`, …) makes the literals matter
        fields = (
            literal_fields(node.input) if name in fl.WRITE_WHEN or name in fl.QUERY_FIELDS else {}
        )
        sink = fl.static_sink(name, fields, host)
        if sink is not None:
            self.sink(node.id, sink, args, pc)
            dests = fl.DESTINATIONS.get(name, ())
            if dests:
                fixed = fl.URL_DESTINATIONS.get(name, frozenset()) if host is not None else ()
                self.destinations[node.id] = frozenset(d for d in dests if d not in fixed)
        avs = [av for _, av in args]
        rule = fl.WRITE_WHEN.get(name)
        op_known = rule is None or rule[0] in fields
        tables = fl.tables_written(name, fields.get(rule[0]) if rule else None, op_known)
        if tables:
            written = _union([*avs, pc], node.id)
            for table in tables:
                self.write_cell(f"table:{table}", written)
        # a host may refuse any call: its failure depends on the data it was given
        out = self.fails(env, node.id, avs)
        if node.target is None:
            return out, None
        parts = [*avs, pc]
        sources = self.sources_of(node)
        if sources:
            parts.append(_AV(sources, None, node.id))
        for table in fl.tables_read(name, fields):
            stored = self.cell(f"table:{table}", node.id)
            if stored is not None:
                parts.append(stored)
        spec = self.ctx.catalog.get(name)
        shape = getattr(spec, "result_schema", None)
        result = _union(parts, node.id)
        if isinstance(shape, Mapping) and shape:
            result = _AV(result.base, None, node.id, result.parents, (shape, False))
        return self.store(out, node.target, result), None

    def llm_node(self, node: LlmNode, env: Env, pc: _AV) -> tuple[Env | None, _AV | None]:
        self.begin()
        given = self.value(env, node.input)
        answer = _union([given, self.model_av(node.id)])
        shape = node.output_schema
        if isinstance(shape, Mapping):
            answer = _AV(answer.base, None, None, answer.parents, (shape, False))
        out = self.store(env, node.target, _stamp(answer, node.id, pc))
        # the model may fail (or its answer miss the schema) depending on what it was given
        return self.fails(out, node.id, [given]), None

    def if_node(self, node: IfNode, env: Env, pc: _AV) -> tuple[Env | None, _AV | None]:
        cond = node.condition
        parts = [pc]
        self.begin()
        if cond is not None:
            operands = [self.value(env, cond.left)]
            if cond.op in ("exists", "truthy") and type(cond.left) is Ref:
                self.begin()  # a missing step of a bare path is false, not an error
            if cond.right is not None:
                operands.append(self.value(env, cond.right))
            if cond.op in _TYPED_OPS:
                kinds = [
                    _kind(v, av) for v, av in zip((cond.left, cond.right), operands, strict=False)
                ]
                if not _well_typed(cond.op, kinds):
                    # operands of the wrong types are RUN_TYPE: the types of the references
                    # decide (a literal's and a template's are fixed)
                    for v, av in zip((cond.left, cond.right), operands, strict=False):
                        if type(v) is Ref:
                            self.fail_parts.append(_AV(av.base, None, None, (av,)))
                            self.fail_paths.append(list(v.segments))
            parts += operands
            env = self.fails(env, node.id)
        return env, _union(parts, node.id)

    def foreach_node(self, node: ForeachNode, env: Env, pc: _AV) -> tuple[Env | None, _AV | None]:
        return self.loop(node, env, pc)

    def return_node(self, node: ReturnNode, env: Env, pc: _AV) -> tuple[Env | None, _AV | None]:
        self.sink(node.id, fl.OUTPUT, self.arguments(env, node.value), pc)
        return None, None

    def fail_node(self, node: FailNode, env: Env, pc: _AV) -> tuple[Env | None, _AV | None]:
        return None, None

    def model_av(self, node: str) -> _AV:
        return _AV(frozenset({fl.MODEL}), None, node)

    def store(self, env: Env, target: str | None, av: _AV) -> Env:
        if target is None:
            return env
        out = dict(env)
        out[target] = av  # `state.X` is its own key, as `read` expects
        if target.startswith("state."):
            self.write_cell(target, av)
        return out

    # --- loops -----------------------------------------------------------------------------

    def loop_facts(self, loop: ForeachNode) -> tuple[frozenset[str], frozenset[str]]:
        """The labels the body's own steps can produce (its sources, the cells they read,
        the model) and the env keys it writes (targets, the failure pc)."""
        nid = loop.id
        cached = self.sources.get(nid)
        if cached is not None:
            return cached, self.assigned[nid]
        labels: set[str] = set()
        keys: set[str] = {_FAIL}
        for node in _all_nodes(loop.body):
            target = getattr(node, "target", None)
            if isinstance(target, str):
                keys.add(target)
            if type(node) is LlmNode:
                labels.add(fl.MODEL)
            if type(node) is CapabilityNode:
                labels |= self.sources_of(node)
                name = node.capability or ""
                for table in fl.tables_may_read(name):
                    stored = self.cells.get(f"table:{table}")
                    if stored is not None:
                        labels |= stored.base
        self.sources[nid] = frozenset(labels)
        self.assigned[nid] = frozenset(keys)
        return self.sources[nid], self.assigned[nid]

    def widen(
        self, loop: ForeachNode, env: Env, steer: _AV
    ) -> tuple[frozenset[str], frozenset[str]]:
        """Every label in reach of the loop's body: what its env holds, what decides it and
        what its steps produce. Every label of a round comes from these, so a body whose
        written keys all carry them is a fixpoint."""
        produced, keys = self.loop_facts(loop)
        labels = _or(steer.base, produced)
        for av in env.values():
            labels = _or(labels, _flat(av))
        return labels, keys

    def loop(self, loop: ForeachNode, env: Env, pc: _AV) -> tuple[Env, _AV | None]:
        nid = loop.id
        self.begin()
        source = loop.source
        src = self.value(env, source)
        # how many times the body runs is the list's length: its own labels, not its items'
        ctrl = _AV(_or(src.base, pc.base), None, nid, (src, pc))
        if type(source) is Ref and not _no_more_items(src.schema, loop.max_items):
            # not a list, or more than maxItems (RUN_TYPE / RUN_LOOP_BOUND): the source's
            # own labels decide (a literal list's length is fixed)
            self.fail_parts.append(_AV(src.base, None, None, (src,)))
            self.fail_paths.append(list(source.segments))
        env = self.fails(env, nid)
        item: _AV | None = None
        if src.fields is not None:
            for child in src.fields.values():
                item = child if item is None else _join(item, child)
        if item is None:
            item_schema = None
            if src.schema is not None and src.schema[0].get("type") == "array":
                item_schema, _ = _child_schema(src.schema, 0)
            item = _AV(src.base, None, None, (), item_schema)
        elif src.base:
            item = _AV(_or(item.base, src.base), item.fields, None, (item,), item.schema)
        item = _stamp(item, nid, ctrl)
        exits = self.loop_exits(loop)
        if exits and nid not in self.joins.exit_loops:
            self.joins.exit_loops.append(nid)
        order = self.facts.body_order.get(nid, [])
        saved = {v: env.get(v) for v in (loop.item_var, loop.index_var) if v is not None}
        index = _AV(ctrl.base, None, nid, (ctrl,))

        def bind(e: Env) -> Env:
            e = dict(e)
            if loop.item_var is not None:
                e[loop.item_var] = item
            if loop.index_var is not None:
                e[loop.index_var] = index
            return e

        current = bind(env)
        steer = ctrl
        after: Env = env
        widened: frozenset[str] = frozenset()
        top = _EMPTY

        def flatten(e: Env) -> Env:
            return {k: (top if k in widened else v) for k, v in e.items()} | {
                k: top for k in widened if k not in e
            }

        if self.spent():  # out of budget: one round, already widened
            labels, widened = self.widen(loop, current, steer)
            top = _opaque(labels, nid, (steer,))
            current = flatten(current)
            if exits:
                steer = top
        for round_ in range(_PRECISE_ROUNDS + 2):
            end, conds = self.scope(order, current, steer) if order else (None, [])
            if end is not None:
                after = _join_env(after, end)
            merged = bind(_join_env(current, end)) if end is not None else current
            # a body that may end the run: its conditions decide later iterations too
            new_steer = _union([steer, *conds], nid) if exits and conds else steer
            if widened:
                merged = flatten(merged)
                if exits:
                    new_steer = top
            if _same_env(merged, current) and new_steer.base == steer.base:
                break
            if not widened and (round_ + 1 >= _PRECISE_ROUNDS or self.spent()):
                labels, widened = self.widen(loop, merged, new_steer)
                top = _opaque(labels, nid, (new_steer,))
                merged = flatten(merged)
                if exits:
                    new_steer = top
            current, steer = merged, new_steer
        else:  # pragma: no cover - the widened round is a fixpoint by construction
            everything = _opaque(self.universe, nid)
            after = {k: everything for k in (*after, *self.loop_facts(loop)[1])}
            steer = everything
        out = dict(after)
        for var, old in saved.items():
            if old is None:
                out.pop(var, None)
            else:
                out[var] = old
        return out, (steer if exits else None)

    # --- whole flow ----------------------------------------------------------------------

    def run(self, *, warn: bool = True) -> None:
        order = self.facts.topo_order
        if not order or order[0] != self.ctx.manifest.flow.entry:  # type: ignore[union-attr]
            return
        for round_ in range(_CELL_ROUNDS + 1):
            self.found = {}
            self.written = {}
            self.read_cells = set()
            self.sources = {}
            self.assigned = {}
            self.scope(order, self.entry_env(), _EMPTY)
            grown: dict[str, _AV] = dict(self.cells)
            growing = False
            for cell, avs in self.written.items():
                old = self.cells.get(cell)
                labels = old.base if old is not None else _NONE
                for av in avs:
                    labels = _or(labels, _flat(av))
                if old is None or labels != old.base:
                    grown[cell] = _opaque(labels, None, (*((old,) if old else ()), *avs))
                    growing = growing or cell in self.read_cells
            if not growing:
                break
            if round_ + 1 >= _CELL_ROUNDS:  # widen: the next round is the last
                grown = {c: _opaque(self.universe, None, (av,)) for c, av in grown.items()}
            self.cells = grown
        flows: list[Flow] = []
        for (node, sink, argument, via), avs in self.found.items():
            labels = _NONE
            for av in avs:
                labels = _or(labels, _flat(av))
            for label in labels:
                av = next(a for a in avs if label in _flat(a))
                path = _witness(av, label)
                if not path or path[-1] != node:
                    path = (*path, node)
                dests = self.destinations.get(node, frozenset())
                destination = (
                    via == "data" and bool(dests) and (argument in dests or argument == "*")
                )
                flows.append(Flow(label, sink, node, argument, via, path, destination))
        flows.sort(key=lambda f: (f.source, f.sink, f.node, f.argument, f.via))
        self.facts.flows = tuple(flows)
        self.facts.flow_joins = self.joins
        if warn:
            self.report(self.facts.flows)

    def entry_env(self) -> Env:
        env: Env = {"input": _AV(frozenset({fl.INPUT}), None, None, (), self.input_schema)}
        for f in self.state_fields:
            key = f"state.{f}"
            schema = self.state_decl[f]
            shape = (schema, False) if isinstance(schema, Mapping) else None
            sure = isinstance(schema, Mapping) and "default" in schema
            stored = self.cells.get(key)
            if stored is None:
                env[key] = _AV(self.state_av.base, None, None, (), shape, sure)
            else:
                labels = _or(self.state_av.base, stored.base)
                env[key] = _AV(labels, None, None, (stored,), shape, sure)
        return env

    def report(self, flows: tuple[Flow, ...]) -> None:
        nodes = self.facts.nodes_by_id
        seen: set[tuple[str, str, str]] = set()
        witness: dict[tuple[str, str], tuple[str, ...]] = {}
        for f in flows:
            kind = fl.sink_kind(f.sink)
            if fl.is_private(f.source) and kind == "egress":
                code = "FORGEC_FLOW_PRIVATE_EGRESS"
            elif fl.is_untrusted(f.source) and kind in ("egress", "write"):
                code = "FORGEC_FLOW_UNTRUSTED_CONTROL"
            else:
                continue
            if (code, f.node, f.source) in seen:
                continue
            seen.add((code, f.node, f.source))
            pointer = nodes[f.node].pointer
            if f.via == "data" and f.argument != "*":
                pointer = join(pointer, "input", f.argument)
            route = " -> ".join(f.path)
            src = fl.describe_source(f.source)
            dst = fl.describe_sink(f.sink)
            control = f.via == "control"
            if code == "FORGEC_FLOW_PRIVATE_EGRESS":
                how = (
                    f"decides whether `{f.node}` sends to" if control else f"`{f.node}` sends it to"
                )
                message = f"private data from {src} leaves the device: {how} {dst} (path: {route})"
                hint = "send only what the person expects to share, or keep this tool local"
            else:
                what = f"sends to {dst}" if kind == "egress" else f"changes your data with {dst}"
                how = "decides whether it runs" if control else "is passed to it"
                message = (
                    f"text from {src} can steer `{f.node}`, which {what}: it {how} (path: {route})"
                )
                hint = "check outside text before it decides a change, or ask before acting"
            self.ctx.report(code, pointer, message, hint=hint)
            witness.setdefault((code, pointer), f.path)
        self.facts.flow_witness = witness


NODE_TABLE: dict[str, _Transfer] = {
    "set": _Analysis.set_node,
    "capability": _Analysis.capability_node,
    "llm": _Analysis.llm_node,
    "if": _Analysis.if_node,
    "foreach": _Analysis.foreach_node,
    "return": _Analysis.return_node,
    "fail": _Analysis.fail_node,
}
