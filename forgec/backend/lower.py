"""Lowering: a checked IR `Manifest` → a linear `Program` (starlark `compile.go`, CPython
`flowgraph.c`).

Algorithm, in three steps:

1. **Layout.** Top-level nodes are laid out in reverse post-order of a depth-first walk from the
   entry (visiting `else` before `then`, so `then` lands right after its `if`); a `foreach`'s
   body follows its loop head immediately, in the same order from the body's first node. The
   flow graph is acyclic, so in this order every edge goes forward.
2. **Blocks.** Each node becomes one labelled block of coarse ops ending in a jump to its
   successor's label (`set`: ENTER EVAL STORE; `capability`: ENTER EVAL CALL STORE|POP; `llm`:
   ENTER EVAL MODEL STORE; `if`: ENTER COMPARE JUMP_IF_FALSE JUMP; `foreach`: ENTER EVAL
   FOREACH_INIT, then a loop-head block FOREACH_NEXT whose exit is the loop's `next`; `return`:
   ENTER EVAL RETURN; `fail`: ENTER FAIL). A body node with no successor jumps back to its loop
   head: the only backward jump.
3. **Linearize** (`linearize`): concatenate the blocks, drop every jump to the block that
   follows, resolve labels to pcs, and check the named invariants (`invariants.py`), which also
   compute the stack depth of every instruction.

Values are interned into pools (constants, paths, value descriptors) in first-use order, so the
same manifest always gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import orjson

from forgec.ir import nodes as ir
from forgec.ir.readable import Readable
from forgec.ir.rules import ALLOWLIST, FORBIDDEN
from forgec.runtime.opcodes import OPS, Op, OperandKind
from forgec.runtime.pools import LOWERED_POOLS
from forgec.runtime.program import Program, ProgramError, stack_depths


class LoweringError(Exception):
    """The IR cannot be lowered (it was not checked, or a checked invariant is broken)."""


@attrs.define(repr=False)
class Ins(Readable):
    op: Op
    arg: int | str  # a label (str) for jumps until linearized
    node: int


@attrs.define(repr=False)
class Block(Readable):
    label: str
    ops: list[Ins] = attrs.field(factory=list)


@attrs.define(repr=False)
class _Pools(Readable):
    """The pools lowering interns into, by name (`forgec.runtime.pools.LOWERED_POOLS`)."""

    lists: dict[str, list[Any]] = attrs.field(factory=lambda: {n: [] for n in LOWERED_POOLS})
    index: dict[tuple[str, bytes], int] = attrs.field(factory=dict)

    def intern(self, pool: str, item: Any) -> int:
        key = (pool, orjson.dumps(item))
        found = self.index.get(key)
        if found is not None:
            return found
        items = self.lists[pool]
        items.append(item)
        self.index[key] = len(items) - 1
        return len(items) - 1


def _loop_label(node_id: str) -> str:
    return f"loop:{node_id}"


class _Lowerer:
    def __init__(self, manifest: ir.Manifest, source_map: Any) -> None:
        self.m = manifest
        self.source_map = source_map
        self.pools = _Pools()
        self.blocks: list[Block] = []
        self.nodes: list[dict[str, Any]] = []
        self.node_index: dict[str, int] = {}

    # --- values -------------------------------------------------------------------------

    def value(self, value: ir.Value | None) -> int:
        return self.pools.intern("values", self.descriptor(value))

    def descriptor(self, value: ir.Value | None) -> Any:
        if value is None:
            raise LoweringError("a value slot is empty (the manifest was not checked)")
        if isinstance(value, ir.Literal):
            return ["const", self.pools.intern("consts", value.value)]
        if isinstance(value, ir.Ref):
            return ["ref", self.path(value.segments)]
        if isinstance(value, ir.Template):
            return [
                "tpl",
                [p if isinstance(p, str) else ["ref", self.path(p.segments)] for p in value.parts],
            ]
        if isinstance(value, ir.CredentialRef):
            return ["cred", value.id]
        if isinstance(value, ir.ObjectExpr):
            return ["obj", [[key, self.descriptor(v)] for key, v in value.fields]]
        if isinstance(value, ir.ListExpr):
            return ["list", [self.descriptor(v) for v in value.items]]
        raise LoweringError(f"unknown value {type(value).__name__}")

    def path(self, segments: tuple[ir.Segment, ...]) -> int:
        return self.pools.intern("paths", list(segments))

    def target(self, target: str | None) -> int:
        if not target:
            raise LoweringError("a step has no target")
        if target.startswith("state."):
            return self.path(("state", target[len("state.") :]))
        return self.path((target,))

    # --- nodes --------------------------------------------------------------------------

    def node_info(self, node: ir.Node) -> int:
        span = self.source_map.span(node.pointer) if self.source_map is not None else None
        self.nodes.append(
            {
                "id": node.id,
                "type": ir.node_type(node),
                "pointer": node.pointer,
                "line": span.line if span is not None else None,
            }
        )
        self.node_index[node.id] = len(self.nodes) - 1
        return len(self.nodes) - 1

    def emit_node(self, node: ir.Node, loop: str | None) -> None:
        n = self.node_info(node)
        block = Block(node.id)
        self.blocks.append(block)
        emit = _Emit(self, node.id, n, loop, block.ops)
        emit.add(Op.ENTER, n)
        NODE_TABLE[ir.node_type(node)](emit, node)

    def requirements(self, step: ir.ModelRequirements | None) -> dict[str, Any]:
        """Effective model requirements: the step's, else the manifest's defaults."""
        out: dict[str, Any] = {}
        for source in (self.m.model_defaults, step):
            if source is None:
                continue
            for key, value in (
                ("structuredOutput", source.structured_output),
                ("context", source.context),
                ("privacy", source.privacy),
                ("reasoningEffort", source.reasoning_effort),
            ):
                if value is not None:
                    out[key] = value
        return out


@attrs.define(repr=False)
class _Emit(Readable):
    """Where one node's block is being written: its ops, its node index, its loop if any."""

    lw: _Lowerer
    node_id: str
    n: int
    loop: str | None
    ops: list[Ins]

    def add(self, op: Op, arg: int | str = 0) -> None:
        self.ops.append(Ins(op, arg, self.n))

    def then_go(self, successor: str | None) -> None:
        if successor is not None:
            self.add(Op.JUMP, successor)
        elif self.loop is not None:
            self.add(Op.JUMP, _loop_label(self.loop))
        else:
            raise LoweringError(f"top-level node {self.node_id!r} has no next")


# --- one block per node type (NODE_TABLE, keyed by forgec.ir.rules.NODE_TYPE_NAMES) -------


def _lower_set(e: _Emit, node: ir.SetNode) -> None:
    e.add(Op.EVAL, e.lw.value(node.value))
    e.add(Op.STORE, e.lw.target(node.target))
    e.then_go(node.next)


def _lower_capability(e: _Emit, node: ir.CapabilityNode) -> None:
    e.add(Op.EVAL, e.lw.value(node.input))
    retry = node.retry
    call = {
        "capability": node.capability,
        "attempts": (retry.attempts if retry and retry.attempts else 1),
        "backoffMs": (retry.backoff_ms if retry and retry.backoff_ms else 0),
        "compensation": node.compensation,
    }
    e.add(Op.CALL, e.lw.pools.intern("calls", call))
    if node.target:
        e.add(Op.STORE, e.lw.target(node.target))
    else:
        e.add(Op.POP)
    e.then_go(node.next)


def _lower_llm(e: _Emit, node: ir.LlmNode) -> None:
    e.add(Op.EVAL, e.lw.value(node.input))
    model = {
        "op": node.op,
        "requirements": e.lw.requirements(node.requirements),
        "outputSchema": node.output_schema,
    }
    e.add(Op.MODEL, e.lw.pools.intern("models", model))
    e.add(Op.STORE, e.lw.target(node.target))
    e.then_go(node.next)


def _lower_if(e: _Emit, node: ir.IfNode) -> None:
    cond = node.condition
    if cond is None or cond.op is None or node.then is None or node.else_ is None:
        raise LoweringError(f"if node {node.id!r} is incomplete")
    entry = {
        "op": cond.op,
        "left": e.lw.value(cond.left),
        "right": e.lw.value(cond.right) if cond.right is not None else None,
    }
    e.add(Op.COMPARE, e.lw.pools.intern("conds", entry))
    e.add(Op.JUMP_IF_FALSE, node.else_)
    e.add(Op.JUMP, node.then)


def _lower_foreach(e: _Emit, node: ir.ForeachNode) -> None:
    if e.loop is not None:
        raise LoweringError(f"foreach {node.id!r} is nested in a loop body")
    e.add(Op.EVAL, e.lw.value(node.source))
    spec = {"itemVar": node.item_var, "indexVar": node.index_var, "maxItems": node.max_items}
    e.add(Op.FOREACH_INIT, e.lw.pools.intern("loops", spec))
    if node.next is None:
        raise LoweringError(f"foreach {node.id!r} has no next")
    head = Block(_loop_label(node.id), [Ins(Op.FOREACH_NEXT, node.next, e.n)])
    e.lw.blocks.append(head)
    body = {child.id: child for child in node.body}
    if node.body:
        for child_id in _layout(node.body[0].id, body):
            e.lw.emit_node(body[child_id], node.id)
    else:
        head.ops.append(Ins(Op.JUMP, head.label, e.n))


def _lower_return(e: _Emit, node: ir.ReturnNode) -> None:
    e.add(Op.EVAL, e.lw.value(node.value))
    e.add(Op.RETURN)


def _lower_fail(e: _Emit, node: ir.FailNode) -> None:
    e.add(Op.FAIL, e.lw.pools.intern("fails", {"code": node.code, "message": node.message}))


# node type → the function that writes its block (every type: tests/test_node_tables.py)
NODE_TABLE: dict[str, Callable[[_Emit, Any], None]] = {
    "set": _lower_set,
    "capability": _lower_capability,
    "llm": _lower_llm,
    "if": _lower_if,
    "foreach": _lower_foreach,
    "return": _lower_return,
    "fail": _lower_fail,
}


def _layout(entry: str, nodes: dict[str, ir.Node]) -> list[str]:
    """Reverse post-order from `entry`; successors visited else-first so `then` comes next."""
    seen: set[str] = set()
    post: list[str] = []
    # iterative DFS: (id, successors left to visit)
    if entry not in nodes:
        raise LoweringError(f"entry {entry!r} is not a node")
    stack: list[tuple[str, list[str]]] = [(entry, list(ir.successors(nodes[entry])))]
    seen.add(entry)
    while stack:
        node_id, todo = stack[-1]
        if todo:
            succ = todo.pop()  # the last successor first: `else` before `then`
            if succ not in nodes:
                raise LoweringError(f"edge {node_id!r} -> {succ!r} leads nowhere")
            if succ not in seen:
                seen.add(succ)
                stack.append((succ, list(ir.successors(nodes[succ]))))
        else:
            post.append(node_id)
            stack.pop()
    return post[::-1]


def lower_manifest(
    manifest: ir.Manifest, *, marks: Any = None, source_map: Any = None, flow_joins: Any = None
) -> Program:
    """Lower a checked IR manifest. `marks` (a `forgec.ir.marks.Marks`) goes into the Program
    for the consent callback; `source_map` gives each node its line; `flow_joins` (the flow
    pass's `FlowJoins`) lets the VM end an `if`'s control labels where the pass does."""
    from forgec.backend.invariants import check_invariants

    m = manifest
    if m.flow is None or m.flow.entry is None or m.id is None or m.version is None:
        raise LoweringError("the manifest has no usable flow, id or version")
    lowerer = _Lowerer(m, source_map)
    top = {node.id: node for node in m.flow.nodes}
    for node_id in _layout(m.flow.entry, top):
        lowerer.emit_node(top[node_id], None)
    code = linearize(lowerer.blocks)
    pool_lists: dict[str, Any] = dict(lowerer.pools.lists)
    network = m.network
    program = Program(
        id=m.id,
        version=m.version,
        title=m.title or m.id,
        max_transitions=m.flow.max_transitions or 256,
        code=code,
        nodes=lowerer.nodes,
        **pool_lists,
        input_schema=m.input_schema,
        output_schema=m.output_schema,
        state=(
            {"fields": dict(m.state.fields), "maxBytes": m.state.max_bytes}
            if m.state is not None
            else None
        ),
        network={
            "mode": network.mode if network and network.mode else FORBIDDEN,
            "hosts": list(network.hosts) if network and network.mode == ALLOWLIST else [],
        },
        credentials=[
            {"id": c.id, "purpose": c.purpose, "hosts": list(c.hosts)}
            for c in m.credential_requirements
        ],
        model_defaults=lowerer.requirements(None),
        marks=marks.to_json() if marks is not None else {},
        flow={
            "joins": dict(sorted(flow_joins.joins.items())) if flow_joins is not None else {},
            "exitLoops": sorted(flow_joins.exit_loops) if flow_joins is not None else [],
            # SPEC §15 "Failure is control"; absent (no flow facts) the VM takes every node
            **(
                {"mayFail": {n: flow_joins.may_fail[n] for n in sorted(flow_joins.may_fail)}}
                if flow_joins is not None
                else {}
            ),
        },
        ui=(
            {
                "title": m.ui.title,
                "values": [
                    {
                        "label": v.label,
                        "path": v.path,
                        "segments": list(v.segments) if v.segments is not None else None,
                    }
                    for v in m.ui.values
                ],
            }
            if m.ui is not None
            else None
        ),
    )
    check_invariants(program)
    return program


def linearize(blocks: list[Block]) -> list[list[int]]:
    """Blocks → `[op, arg, node]` with labels resolved; jumps to the next block dropped."""
    # drop a block's final JUMP when its target is the block laid out right after it
    for i, block in enumerate(blocks):
        if (
            block.ops
            and block.ops[-1].op is Op.JUMP
            and i + 1 < len(blocks)
            and block.ops[-1].arg == blocks[i + 1].label
            and blocks[i + 1].ops
        ):
            block.ops.pop()
    starts: dict[str, int] = {}
    pc = 0
    for block in blocks:
        if block.label in starts:
            raise LoweringError(f"label {block.label!r} is defined twice")
        starts[block.label] = pc
        pc += len(block.ops)
    code: list[list[int]] = []
    for block in blocks:
        for ins in block.ops:
            arg = ins.arg
            if OPS[ins.op].operand is OperandKind.LABEL:
                if not isinstance(arg, str) or arg not in starts:
                    raise LoweringError(f"jump to unknown label {arg!r}")
                arg = starts[arg]
            assert isinstance(arg, int)
            code.append([int(ins.op), arg, ins.node])
    try:
        stack_depths(code)
    except ProgramError as exc:
        raise LoweringError(f"stack_depth_consistent: {exc}") from None
    return code
