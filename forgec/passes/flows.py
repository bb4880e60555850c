"""Where data goes (SPEC §15): which labels reach which sinks, on every path, before a run.

An abstract interpretation of the checked flow. Each variable holds an abstract value: the
labels of the whole value (`base`, label → witness path of node ids) and, when the value was
built from an object or list expression, the abstract value of each literal key (`fields`).
Reading `x.a.b` collects the bases along the path, so a field that was not sent carries none
of its siblings' labels (SPEC paths are always literal). Joins union labels; a missing key on
one side is the other side's, so every join is sound.

Control: the labels of an `if` condition (and of a loop's source, for its body) are the "pc"
of every node the branch decides: the nodes reachable from the branch before its immediate
post-dominator (the join; a virtual exit stands for `return`/`fail` and, in a body, the end
of the iteration). A value stored under a pc carries it; a sink under a pc is a control flow.
A loop whose body may `return`/`fail` decides everything after it: its source and its body's
conditions stay in the pc for the rest of the run. The VM mirrors exactly this (the joins go
into the Program), which is what makes the run-time pairs a subset of these.

Results: `ctx.facts.flows` (sorted `Flow`s), `ctx.facts.flow_joins` (for lowering), and the
two `FORGEC_FLOW_*` warnings. The pass stands down when the graph is not well formed.
"""

from __future__ import annotations

from typing import Any

import attrs

from forgec.ir.nodes import (
    CapabilityNode,
    FailNode,
    ForeachNode,
    IfNode,
    ListExpr,
    LlmNode,
    Node,
    ObjectExpr,
    Ref,
    ReturnNode,
    SetNode,
    Template,
    Value,
    nodes_of_type,
)
from forgec.ir.pointer import join
from forgec.passes.capabilities import literal_fields
from forgec.passes.context import PassContext
from forgec.passes.network import static_host, url_of
from forgec.runtime import flowlabels as fl

_EXIT = "\x00exit"  # the virtual node after return/fail (and a body's last node)
_WIDEN_AFTER = 6  # loop iterations before nested fields collapse (termination)


@attrs.frozen
class Flow:
    source: str  # a label: input, private:<capability>, private:state, external:<host>, model
    sink: str  # egress:<host|capability>, write:<capability>, output
    node: str  # the sink's node id
    argument: str  # the top-level input key (or return key) that carries it; "*" = all of it
    via: str  # data | control
    path: tuple[str, ...]  # a witness: node ids from where the label entered to the sink

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "sink": self.sink,
            "node": self.node,
            "argument": self.argument,
            "via": self.via,
            "path": list(self.path),
        }


class _AV:
    """An abstract value: labels of the whole (`base`), and per literal key when built from
    an object or list expression (`fields`).

    Witness paths are not carried label by label (that doubled the pass's cost): each value
    remembers the node that made it (`origin`) and the values it was made from (`parents`),
    and `_witness` walks that graph back only for the flows found."""

    __slots__ = ("base", "fields", "flat", "origin", "parents")

    def __init__(
        self,
        base: frozenset[str],
        fields: dict[Any, _AV] | None = None,
        origin: str | None = None,
        parents: tuple[_AV, ...] = (),
    ) -> None:
        self.base = base
        self.fields = fields
        self.origin = origin
        self.parents = parents
        self.flat: frozenset[str] | None = base if fields is None else None


_NONE: frozenset[str] = frozenset()
_EMPTY = _AV(_NONE)


def _flat(av: _AV) -> frozenset[str]:
    flat = av.flat
    if flat is None:
        flat = av.base
        for child in av.fields.values():  # type: ignore[union-attr]
            flat = flat | _flat(child)
        av.flat = flat
    return flat


def _stamp(av: _AV, node: str, pc: _AV) -> _AV:
    """The value as stored by `node` under `pc` (the pc's labels join in)."""
    if pc is _EMPTY:
        return _AV(av.base, av.fields, node, (av,))
    return _AV(av.base | pc.base, av.fields, node, (av, pc))


def _join(x: _AV, y: _AV) -> _AV:
    if x is y:
        return x
    base = x.base | y.base
    if x.fields is None or y.fields is None:
        return _AV(base, x.fields if y.fields is None else y.fields, None, (x, y))
    fields = dict(x.fields)
    for k, c in y.fields.items():
        fields[k] = _join(fields[k], c) if k in fields else c
    return _AV(base, fields, None, (x, y))


def _union(avs: list[_AV], origin: str | None = None) -> _AV:
    """One opaque value carrying every label of `avs` (a template, a condition, a result)."""
    labels = _NONE
    for av in avs:
        labels = labels | _flat(av)
    return _AV(labels, None, origin, tuple(avs))


def _same(x: _AV, y: _AV) -> bool:
    if x is y:
        return True
    if x.base != y.base:
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


Env = dict[str, _AV]


def _join_env(a: Env, b: Env) -> Env:
    if a is b:
        return a
    out = dict(a)
    for k, v in b.items():
        out[k] = _join(out[k], v) if k in out else v
    return out


def _same_env(a: Env, b: Env) -> bool:
    return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())


@attrs.define
class FlowJoins:
    """What the VM needs to mirror control dependence (lowered into the Program)."""

    # if-node id → the node id where its branches join; None: the end of the run (top level)
    # or of the iteration (in a body)
    joins: dict[str, str | None] = attrs.field(factory=dict)
    # loops whose body may return/fail: their source and body conditions steer the rest
    exit_loops: list[str] = attrs.field(factory=list)


def check_flows(ctx: PassContext) -> None:
    facts = ctx.facts
    flow = ctx.manifest.flow
    if flow is None or not facts.graph_ok or not facts.ordered or facts.incomplete:
        return
    if flow.entry not in facts.nodes_by_id:
        return
    if not _may_warn(ctx):
        # no step sends anything out and nothing comes from outside: no FORGEC_FLOW_* can
        # follow and the card has no Sends/Steered line, so `check` does not pay for the
        # facts; whoever reads `facts.flows` (inspect, lowering, the store) computes them
        facts.flows_pending = lambda: _Analysis(ctx).run(warn=False)
        return
    facts.flow_warned = True
    _Analysis(ctx).run()


def _may_warn(ctx: PassContext) -> bool:
    """Whether a reachable step is an egress sink or an outside source (`net.http`)."""
    reachable = ctx.facts.reachable_pointers
    names = fl.EGRESS_CAPABILITIES | {fl.HTTP}
    return any(
        node.capability in names and node.pointer in reachable
        for node in nodes_of_type(ctx.manifest.flow.nodes, CapabilityNode)  # type: ignore[union-attr]
    )


# successors (with _EXIT), controllers, real successors
_Shape = tuple[dict[str, tuple[str, ...]], dict[str, list[str]], dict[str, tuple[str, ...]]]


class _Analysis:
    def __init__(self, ctx: PassContext) -> None:
        self.ctx = ctx
        self.facts = ctx.facts
        # (sink node, sink, argument, via) → the values that reached it (labels and witness)
        self.found: dict[tuple[str, str, str, str], list[_AV]] = {}
        self.joins = FlowJoins()
        # scope (its first node) → successors and controllers, computed once per scope
        self.shapes: dict[str, _Shape] = {}
        manifest = ctx.manifest
        self.state_fields = tuple(manifest.state.fields) if manifest.state is not None else ()
        self.state_av = _AV(frozenset({fl.STATE}))

    # --- values -------------------------------------------------------------------------

    def read(self, env: Env, ref: Ref) -> _AV:
        segs = ref.segments
        root = segs[0]
        if root == "state":
            if len(segs) == 1:
                return _union(
                    [self.state_av, *(env.get(f"state.{f}", _EMPTY) for f in self.state_fields)]
                )
            av = env.get(f"state.{segs[1]}", _EMPTY)
            rest = segs[2:]
        else:
            av = env.get(root, _EMPTY)  # type: ignore[arg-type]
            rest = segs[1:]
        if not rest or av.fields is None:
            return av  # every part of an opaque value carries all its labels
        top = av
        acc = av.base
        for seg in rest:
            if av.fields is None:
                return _AV(acc, None, None, (top,))
            child = av.fields.get(seg)
            if child is None:
                return _AV(acc, None, None, (top,))  # a literal member: no labels of its own
            av = child
            acc = acc | av.base
        return _AV(acc, av.fields, None, (top,))

    def value(self, env: Env, value: Value | None) -> _AV:
        kind = type(value)
        if kind is Ref:
            return self.read(env, value)  # type: ignore[arg-type]
        if kind is Template:
            reads = [self.read(env, p) for p in value.parts if type(p) is Ref]  # type: ignore[union-attr]
            if len(reads) == 1 and reads[0].fields is None:
                return reads[0]  # one opaque read: its labels, as rendered text
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

    # --- sinks ---------------------------------------------------------------------------

    def sink(self, node: str, sink: str, args: list[tuple[str, _AV]], pc: _AV) -> None:
        found = self.found
        for argument, av in args:
            if _flat(av):
                found.setdefault((node, sink, argument, "data"), []).append(av)
        if pc.base:
            found.setdefault((node, sink, "*", "control"), []).append(pc)

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
            node = nodes[n]
            pc = pc0
            deciders = ctrl.get(n)
            if deciders:
                pc = _union([pc0, *(cond_of[c] for c in deciders)])
            out, steer = self.transfer(node, env, pc)
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

    # --- nodes ---------------------------------------------------------------------------

    def transfer(self, node: Node, env: Env, pc: _AV) -> tuple[Env | None, _AV | None]:
        """The env after `node` (None: the run ends here) and, for a node that decides
        what runs after it (an `if`, a loop that may end the run), the deciding value."""
        kind = type(node)
        nid = node.id
        if kind is SetNode:
            return self.store(env, node.target, _stamp(self.value(env, node.value), nid, pc)), None  # type: ignore[union-attr]
        if kind is CapabilityNode:
            return self.capability(node, env, pc), None  # type: ignore[arg-type]
        if kind is LlmNode:
            answer = _union([self.value(env, node.input), self.model_av(nid)])  # type: ignore[union-attr]
            return self.store(env, node.target, _stamp(answer, nid, pc)), None  # type: ignore[union-attr]
        if kind is IfNode:
            cond = node.condition  # type: ignore[union-attr]
            parts = [pc]
            if cond is not None:
                parts += [self.value(env, cond.left), self.value(env, cond.right)]
            return env, _union(parts, nid)
        if kind is ForeachNode:
            return self.loop(node, env, pc)  # type: ignore[arg-type]
        if kind is ReturnNode:
            self.sink(nid, fl.OUTPUT, self.arguments(env, node.value), pc)  # type: ignore[union-attr]
        return None, None  # return, fail

    def model_av(self, node: str) -> _AV:
        return _AV(frozenset({fl.MODEL}), None, node)

    def store(self, env: Env, target: str | None, av: _AV) -> Env:
        if target is None:
            return env
        out = dict(env)
        out[target] = av  # `state.X` is its own key, as `read` expects
        return out

    def capability(self, node: CapabilityNode, env: Env, pc: _AV) -> Env:
        name = node.capability or ""
        host = static_host(url_of(node)[0]) if name == fl.HTTP else None
        args = self.arguments(env, node.input)
        # only a selector field (memory.access `operation`, …) makes the literals matter
        fields = literal_fields(node.input) if name in fl.WRITE_WHEN else {}
        sink = fl.static_sink(name, fields, host)
        if sink is not None:
            self.sink(node.id, sink, args, pc)
        if node.target is None:
            return env
        parts = [av for _, av in args]
        source = fl.source_label(name, host)
        if source is not None:
            parts.append(_AV(frozenset({source}), None, node.id))
        parts.append(pc)
        return self.store(env, node.target, _union(parts, node.id))

    def loop(self, loop: ForeachNode, env: Env, pc: _AV) -> tuple[Env, _AV | None]:
        nid = loop.id
        src = self.value(env, loop.source)
        # how many times the body runs is the list's length: its own labels, not its items'
        ctrl = _AV(src.base | pc.base, None, nid, (src, pc))
        item = _AV(src.base)
        if src.fields is not None:
            for child in src.fields.values():
                item = _join(item, child)
        item = _stamp(item, nid, ctrl)
        exits = self.loop_exits(loop)
        if exits:
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
        for round_ in range(64):
            end, conds = self.scope(order, current, steer) if order else (None, [])
            if end is not None:
                after = _join_env(after, end)
            merged = bind(_join_env(current, end)) if end is not None else current
            # a body that may end the run: its conditions decide later iterations too
            new_steer = _union([steer, *conds], nid) if exits and conds else steer
            if round_ >= _WIDEN_AFTER:  # nested fields could grow forever: flatten them
                merged = {k: _union([v]) if v.fields else v for k, v in merged.items()}
            if _same_env(merged, current) and new_steer.base == steer.base:
                break
            current, steer = merged, new_steer
        out = dict(after)
        for var, old in saved.items():
            if old is None:
                out.pop(var, None)
            else:
                out[var] = old
        return out, (steer if exits else None)

    # --- whole flow ----------------------------------------------------------------------

    def run(self, *, warn: bool = True) -> None:
        env0: Env = {"input": _AV(frozenset({fl.INPUT}))}
        for f in self.state_fields:
            env0[f"state.{f}"] = self.state_av
        order = self.facts.topo_order
        if not order or order[0] != self.ctx.manifest.flow.entry:  # type: ignore[union-attr]
            return
        self.scope(order, env0, _EMPTY)
        flows: list[Flow] = []
        for (node, sink, argument, via), avs in self.found.items():
            labels = _NONE
            for av in avs:
                labels = labels | _flat(av)
            for label in labels:
                av = next(a for a in avs if label in _flat(a))
                path = _witness(av, label)
                if not path or path[-1] != node:
                    path = (*path, node)
                flows.append(Flow(label, sink, node, argument, via, path))
        flows.sort(key=lambda f: (f.source, f.sink, f.node, f.argument, f.via))
        self.facts.flows = tuple(flows)
        self.facts.flow_joins = self.joins
        if warn:
            self.report(self.facts.flows)

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
