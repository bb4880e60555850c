"""The flow graph: ids, edges, cycles, reachability and the worst-case number of transitions.

A flow is a set of *scopes*: the top level, and the body of each `foreach`. Edges (`next`,
`then`, `else`) stay inside their scope; node ids share one namespace across all scopes. The
pass works on node positions rather than ids, so a duplicated id cannot make the analysis lose
a node:

1. Walk every node in manifest order (a loop's body right after the loop), record the first
   node of each id (`nodes_by_id`, `scope_of`) and report each later one as
   `FORGE_NODE_DUPLICATE`.
2. Resolve each edge to the node of that id in the same scope. An id that is not in the scope is
   `FORGE_EDGE_MISSING` (with a different message when the id lives in another scope, and a
   "did you mean" hint for the closest id in scope). An edge to an id that two nodes of the
   scope share is ambiguous: it already has its error, so it is followed for reachability (to
   every candidate) but not for cycles.
3. Cycles: each scope's graph goes through `graphlib.TopologicalSorter`; when it reports a cycle,
   a depth-first search from the entry (then from every node in manifest order) collects one
   cycle per back edge, printed whole (`a -> b -> a`) and reported at the edge that closes it.
   Removing every reported edge makes the graph acyclic, so each diagnostic is a distinct fix.
4. Reachability: breadth-first from the entry at the top level; a loop's body from its first
   node, and only when the loop itself is reachable. Every other node is
   `FORGE_UNREACHABLE_NODE` (warning) - except where reachability is unknown: with no usable
   entry, or in a scope with a missing edge (the missing target would decide it).
5. Worst case (SPEC §12): W(node) = weight + the largest W of its successors, where a node's
   weight is 1 and a `foreach`'s is 1 + maxItems × (longest path through its body). Computed
   over the reachable acyclic graph; above `maxTransitions` it is
   `FORGEC_TRANSITIONS_MAY_EXCEED` (warning).

Facts recorded for later passes and `forgec inspect`: see `forgec.passes.context.Facts`.
"""

from __future__ import annotations

import graphlib
from collections import deque

import attrs

from forgec.ir.nodes import ForeachNode, IfNode, Node
from forgec.ir.pointer import join
from forgec.passes.context import Facts, LoopFacts, PassContext

# Guard for the worst-case recursion: a cycle the caller did not rule out.
_CYCLIC = -1


@attrs.define
class Scope:
    """The nodes of one scope (top level or one loop body) and their resolved edges."""

    loop: ForeachNode | None
    nodes: list[Node]
    # id → positions in `nodes` holding it (more than one only for a duplicated id)
    index: dict[str, list[int]] = attrs.field(factory=dict)
    # position → [(field, target positions)]; an unresolved edge is absent
    edges: list[list[tuple[str, list[int]]]] = attrs.field(factory=list)
    missing_edge: bool = False
    reachable: list[bool] = attrs.field(factory=list)

    def successors(self, i: int) -> list[int]:
        return [j for _, targets in self.edges[i] for j in targets]

    def plain_successors(self, i: int) -> list[int]:
        """Successors through unambiguous edges only (what cycle detection follows)."""
        return [targets[0] for _, targets in self.edges[i] if len(targets) == 1]


def edge_fields(node: Node) -> list[tuple[str, str]]:
    """(JSON field name, target id) of a node's outgoing edges, in field order."""
    if isinstance(node, IfNode):
        return [(f, t) for f, t in (("then", node.then), ("else", node.else_)) if t is not None]
    nxt = getattr(node, "next", None)
    return [("next", nxt)] if isinstance(nxt, str) else []


def closest(name: str, candidates: list[str]) -> str | None:
    """The candidate a typo most likely meant, or None when nothing is close."""
    import difflib

    found = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    if found:
        return found[0]
    lowered = {c.lower(): c for c in candidates}
    return lowered.get(name.lower())


def build_scopes(nodes: tuple[Node, ...]) -> list[Scope]:
    """Scopes in manifest order: the top level first, then each body after its parent."""
    scopes: list[Scope] = []

    def add(loop: ForeachNode | None, members: tuple[Node, ...]) -> None:
        scope = Scope(loop=loop, nodes=list(members))
        for i, node in enumerate(scope.nodes):
            scope.index.setdefault(node.id, []).append(i)
        scopes.append(scope)
        for node in members:
            if isinstance(node, ForeachNode):
                add(node, node.body)

    add(None, nodes)
    return scopes


def check_graph(ctx: PassContext) -> None:
    manifest = ctx.manifest
    flow = manifest.flow
    facts = ctx.facts
    if flow is None:
        return
    scopes = build_scopes(flow.nodes)
    top = scopes[0]
    duplicates = _check_duplicates(ctx, scopes)
    where: dict[str, ForeachNode | None] = {}
    for scope in scopes:
        for node in scope.nodes:
            where.setdefault(node.id, scope.loop)
    for scope in scopes:
        _resolve_edges(ctx, scope, where)

    entry_ok = _check_entry(ctx, top, flow.entry, flow.pointer, where)
    facts.reachability_known = entry_ok
    cycles = [c for scope in scopes for c in _check_cycles(ctx, scope, flow.entry)]

    # Reachability, parents before bodies (build_scopes lists them in that order).
    reachable_loops: set[str] = set()
    for scope in scopes:
        if scope.loop is None:
            starts = top.index.get(flow.entry, []) if flow.entry is not None else []
        else:
            starts = [0] if scope.loop.pointer in reachable_loops and scope.nodes else []
        _reach(scope, starts)
        for i, node in enumerate(scope.nodes):
            if scope.reachable[i]:
                facts.reachable.add(node.id)
                facts.reachable_pointers.add(node.pointer)
                if isinstance(node, ForeachNode):
                    reachable_loops.add(node.pointer)
    _warn_unreachable(ctx, scopes, entry_ok, duplicates)

    facts.cycles = [[scope_node.id for scope_node in cycle] for cycle in cycles]
    facts.graph_ok = (
        bool(flow.nodes)
        and entry_ok
        and not duplicates
        and not cycles
        and not any(s.missing_edge for s in scopes)
    )
    _order(facts, scopes)
    _loop_facts(facts, scopes)
    _worst_case(ctx, scopes, flow.entry)


def _check_duplicates(ctx: PassContext, scopes: list[Scope]) -> set[str]:
    """Report every node whose id an earlier node (in manifest order) already has."""
    facts = ctx.facts
    first_pointer: dict[str, str] = {}
    duplicated: set[str] = set()
    ordered = sorted(
        ((node, s.loop) for s in scopes for node in s.nodes), key=lambda p: _order_key(p[0])
    )
    for node, loop in ordered:
        if node.id not in first_pointer:
            first_pointer[node.id] = node.pointer
            facts.nodes_by_id[node.id] = node
            facts.scope_of[node.id] = loop
            continue
        duplicated.add(node.pointer)
        ctx.report(
            "FORGE_NODE_DUPLICATE",
            join(node.pointer, "id"),
            f"node id `{node.id}` is already used by the node at {first_pointer[node.id]}",
            hint="give every node, loop bodies included, its own id",
        )
    return duplicated


def _order_key(node: Node) -> tuple[object, ...]:
    # Manifest order from the pointer: /flow/nodes/3 < /flow/nodes/3/body/0 < /flow/nodes/4.
    return tuple(int(t) if t.isdigit() else 0 for t in node.pointer.split("/")[3::2])


def _resolve_edges(ctx: PassContext, scope: Scope, where: dict[str, ForeachNode | None]) -> None:
    scope_ids = list(scope.index)
    for node in scope.nodes:
        resolved: list[tuple[str, list[int]]] = []
        for field, target in edge_fields(node):
            positions = scope.index.get(target)
            if positions:
                resolved.append((field, positions))
                continue
            scope.missing_edge = True
            ctx.report(
                "FORGE_EDGE_MISSING",
                join(node.pointer, field),
                _missing_edge_message(node, field, target, scope, where),
                hint=_did_you_mean(target, [i for i in scope_ids if i != node.id]),
            )
        scope.edges.append(resolved)


def _missing_edge_message(
    node: Node, field: str, target: str, scope: Scope, where: dict[str, ForeachNode | None]
) -> str:
    here = f"`{field}` of node `{node.id}` leads to `{target}`"
    if target in where:
        other = where[target]
        if scope.loop is None and other is not None:
            return (
                f"{here}, a node inside the body of loop `{other.id}`: a top-level node may "
                "only lead to top-level nodes"
            )
        if other is None and scope.loop is not None:
            return (
                f"{here}, a top-level node: nodes in the body of loop `{scope.loop.id}` may "
                "only lead to nodes of the same body (leave `next` out to end the iteration)"
            )
        if other is not None and scope.loop is not None:
            return (
                f"{here}, a node of another loop's body (`{other.id}`): nodes in the body of "
                f"loop `{scope.loop.id}` may only lead to nodes of the same body"
            )
    return f"{here}, which does not exist"


def _did_you_mean(name: str, candidates: list[str]) -> str | None:
    found = closest(name, candidates)
    return f"did you mean `{found}`?" if found is not None else None


def _check_entry(
    ctx: PassContext,
    top: Scope,
    entry: str | None,
    flow_pointer: str,
    where: dict[str, ForeachNode | None],
) -> bool:
    if entry is None:
        return False  # missing or ill-typed: the structure pass said so
    if entry in top.index:
        return True
    pointer = join(flow_pointer, "entry")
    loop = where.get(entry)
    if loop is not None:
        message = (
            f"the entry `{entry}` is inside the body of loop `{loop.id}`; the flow must start "
            "at a top-level node"
        )
    else:
        message = f"the entry `{entry}` names no node of the flow"
    ctx.report("FORGE_ENTRY_MISSING", pointer, message, hint=_did_you_mean(entry, list(top.index)))
    return False


def _check_cycles(ctx: PassContext, scope: Scope, entry: str | None) -> list[list[Node]]:
    n = len(scope.nodes)
    graph: dict[int, set[int]] = {i: set() for i in range(n)}  # node → predecessors
    for i in range(n):
        for j in scope.plain_successors(i):
            graph[j].add(i)
    try:
        graphlib.TopologicalSorter(graph).prepare()
        return []
    except graphlib.CycleError:
        pass
    starts = list(range(n))
    if scope.loop is None and entry is not None and entry in scope.index:
        starts.insert(0, scope.index[entry][0])
    cycles = []
    for path, last, field in find_cycles(n, scope, starts):
        ids = [scope.nodes[i].id for i in path]
        cycles.append([scope.nodes[i] for i in path])
        where = "the flow" if scope.loop is None else f"the body of loop `{scope.loop.id}`"
        ctx.report(
            "FORGE_CYCLE",
            join(scope.nodes[last].pointer, field),
            f"{where} loops back on itself: {' -> '.join([*ids, ids[0]])}",
            hint="flows are acyclic; repeat work with a bounded `foreach` instead",
        )
    return cycles


def find_cycles(n: int, scope: Scope, starts: list[int]) -> list[tuple[list[int], int, str]]:
    """One cycle per back edge of a depth-first search: (path, closing node, closing field).

    The path starts at the node the back edge returns to, so the first node printed is the one
    the search (from the entry first) met first.
    """
    state = [0] * n  # 0 new, 1 on the stack, 2 done
    found: list[tuple[list[int], int, str]] = []
    for start in starts:
        if state[start]:
            continue
        path: list[int] = [start]
        position = {start: 0}
        state[start] = 1
        stack = [(start, iter(_plain_edges(scope, start)))]
        while stack:
            v, edges = stack[-1]
            step = next(edges, None)
            if step is None:
                stack.pop()
                path.pop()
                del position[v]
                state[v] = 2
                continue
            field, w = step
            if state[w] == 1:
                found.append((path[position[w] :], v, field))
            elif state[w] == 0:
                state[w] = 1
                position[w] = len(path)
                path.append(w)
                stack.append((w, iter(_plain_edges(scope, w))))
    return found


def _plain_edges(scope: Scope, i: int) -> list[tuple[str, int]]:
    return [(field, targets[0]) for field, targets in scope.edges[i] if len(targets) == 1]


def _reach(scope: Scope, starts: list[int]) -> None:
    scope.reachable = [False] * len(scope.nodes)
    queue = deque(starts)
    for s in starts:
        scope.reachable[s] = True
    while queue:
        for j in scope.successors(queue.popleft()):
            if not scope.reachable[j]:
                scope.reachable[j] = True
                queue.append(j)


def _warn_unreachable(
    ctx: PassContext, scopes: list[Scope], entry_ok: bool, duplicates: set[str]
) -> None:
    if not entry_ok:
        return  # no entry, no reachability to speak of: FORGE_ENTRY_MISSING says it all
    unreachable_loops: set[str] = set()
    for scope in scopes:
        loop_dead = scope.loop is not None and scope.loop.pointer in unreachable_loops
        for i, node in enumerate(scope.nodes):
            if scope.reachable[i]:
                continue
            if isinstance(node, ForeachNode):
                unreachable_loops.add(node.pointer)
            if node.pointer in duplicates or (scope.missing_edge and not loop_dead):
                continue
            if loop_dead and scope.loop is not None:
                message = f"node `{node.id}` is never reached: its loop `{scope.loop.id}` is not"
            elif scope.loop is not None:
                message = (
                    f"node `{node.id}` is never reached from the first node of loop "
                    f"`{scope.loop.id}`'s body"
                )
            else:
                message = f"node `{node.id}` is never reached from the entry"
            ctx.report(
                "FORGE_UNREACHABLE_NODE",
                node.pointer,
                message,
                hint="remove it, or lead to it from a reachable node",
            )


def _topological(scope: Scope) -> list[int] | None:
    """The reachable positions of a scope in topological order, or None when cyclic."""
    graph: dict[int, set[int]] = {i: set() for i in range(len(scope.nodes)) if scope.reachable[i]}
    for i in graph:
        for j in scope.successors(i):
            graph[j].add(i)
    try:
        return list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError:
        return None


def _order(facts: Facts, scopes: list[Scope]) -> None:
    top = scopes[0]
    order = _topological(top)
    facts.topo_order = [top.nodes[i].id for i in order] if order is not None else []
    facts.ordered = order is not None
    for scope in scopes[1:]:
        assert scope.loop is not None
        body = _topological(scope)
        if body is None:
            facts.ordered = False
        facts.body_order[scope.loop.id] = (
            [scope.nodes[i].id for i in body] if body is not None else []
        )


def _loop_facts(facts: Facts, scopes: list[Scope]) -> None:
    for scope in scopes[1:]:
        loop = scope.loop
        assert loop is not None
        longest = longest_path(scopes, scope, 0) if scope.nodes else None
        facts.loops[loop.id] = LoopFacts(
            id=loop.id,
            pointer=loop.pointer,
            reachable=loop.pointer in facts.reachable_pointers,
            body=[node.id for node in scope.nodes],
            item_var=loop.item_var,
            index_var=loop.index_var,
            max_items=loop.max_items,
            body_longest=longest[0] if longest else None,
            body_longest_path=longest[1] if longest else [],
        )


def longest_path(scopes: list[Scope], scope: Scope, start: int) -> tuple[int, list[str]] | None:
    """SPEC §12's W from `start`: (transitions, the ids on the longest path), or None when it is
    unbounded (a cycle) or unknown (a loop without a usable `maxItems`)."""
    bodies = {s.loop.pointer: s for s in scopes if s.loop is not None}
    memo: dict[int, tuple[int, int | None]] = {}  # position → (W, best successor)

    def weight(node: Node) -> int:
        if not isinstance(node, ForeachNode):
            return 1
        body = bodies.get(node.pointer)
        if body is None or not body.nodes:
            return 1
        inner = longest_path(scopes, body, 0)
        if inner is None or node.max_items is None:
            return _CYCLIC
        return 1 + node.max_items * inner[0]

    def w(i: int) -> int:
        if i in memo:
            return memo[i][0]
        memo[i] = (_CYCLIC, None)  # on the stack: meeting it again means a cycle
        own = weight(scope.nodes[i])
        if own == _CYCLIC:
            return _CYCLIC
        best, best_j = 0, None
        for j in scope.successors(i):
            wj = w(j)
            if wj == _CYCLIC:
                return _CYCLIC
            if wj > best:
                best, best_j = wj, j
        memo[i] = (own + best, best_j)
        return own + best

    total = w(start)
    if total == _CYCLIC:
        return None
    path: list[str] = []
    cursor: int | None = start
    while cursor is not None:
        path.append(scope.nodes[cursor].id)
        cursor = memo[cursor][1]
    return total, path


def _worst_case(ctx: PassContext, scopes: list[Scope], entry: str | None) -> None:
    facts = ctx.facts
    flow = ctx.manifest.flow
    top = scopes[0]
    if entry is None or entry not in top.index or flow is None:
        return
    result = longest_path(scopes, top, top.index[entry][0])
    if result is None:
        return
    total, path = result
    facts.worst_case_transitions = total
    facts.worst_case_path = path
    limit = flow.max_transitions
    if limit is None or total <= limit:
        return
    shown = " -> ".join(_step_text(facts, node_id) for node_id in path)
    ctx.report(
        "FORGEC_TRANSITIONS_MAY_EXCEED",
        join(flow.pointer, "maxTransitions"),
        f"the longest run takes {total} transitions, more than maxTransitions {limit}: {shown}",
        hint="raise `maxTransitions` (at most 256), lower a loop's `maxItems`, or shorten the "
        "longest path; a run that hits the limit stops with RUN_TRANSITION_LIMIT",
    )


def _step_text(facts: Facts, node_id: str) -> str:
    loop = facts.loops.get(node_id)
    if loop is None or loop.body_longest is None:
        return node_id
    return f"{node_id} [{loop.max_items} × {loop.body_longest}]"
