"""The flow graph: ids, edges, cycles, reachability and the worst-case number of transitions.

A flow is a set of *scopes*: the top level, and the body of each `foreach`. Edges (`next`,
`then`, `else`) stay inside their scope; node ids share one namespace across all scopes. The
pass works on node positions rather than ids, so a duplicated id cannot make the analysis lose
a node:

1. Walk every node in manifest order (a loop's body right after the loop), record the first
   node of each id (`nodes_by_id`, `scope_of`) and report each later one as
   `FORGE_NODE_DUPLICATE`.
2. Resolve each edge to the node of that id in the same scope. An id that is not in the scope is
   `FORGE_EDGE_MISSING` (unless it is the id of a node the IR left out for an unusable id or
   type: that node has its own error) (with a different message when the id lives in another scope, and a
   "did you mean" hint for the closest id in scope). An edge to an id that two nodes of the
   scope share is ambiguous: it already has its error, so it is followed for reachability (to
   every candidate) but not for cycles.
3. Order and cycles: `graphlib.TopologicalSorter` orders each scope whole (predecessors
   before successors; of the nodes ready next, the earliest in the manifest first, so a
   manifest written in flow order keeps its order). Only when it raises `CycleError` (the error path)
   does an iterative depth-first search per scope (from the entry first, then from every node
   in manifest order) over the unambiguous edges collect one cycle per back edge, printed whole
   (`a -> b -> a`) and reported at the edge that closes it; `graphlib` names only one cycle.
   Removing every reported edge makes the graph acyclic, so each diagnostic is a distinct fix.
4. Reachability and order: a plain depth-first search from the entry at the top level, and in
   a loop's body from its first node when the loop itself is reachable. The scope's order
   restricted to what is reached is the topological order later passes follow (a subsequence
   of a topological order is one); when the scope has a cycle, `graphlib` orders the reached
   part alone, None when that part is cyclic too. Every
   other node is `FORGE_UNREACHABLE_NODE` (warning), except where reachability is unknown:
   with no usable entry, or in a scope where a reachable node has a missing edge (the missing
   target would decide it, and so would a `next`/`then`/`else` that is missing or ill-typed). A duplicate is not
   warned about either: its id already has its error.
5. Worst case (SPEC §12): W(node) = weight + the largest W of its successors, where a node's
   weight is 1 and a `foreach`'s is 1 + maxItems × (longest path through its body). Computed
   in reverse topological order over what the start reaches (no recursion: a 64-node chain
   would otherwise be 64 frames deep); above `maxTransitions` it is
   `FORGEC_TRANSITIONS_MAY_EXCEED` (warning).

Facts recorded for later passes and `forgec inspect`: see `forgec.passes.context.Facts`.
"""

from __future__ import annotations

import graphlib
import heapq
from typing import Any

from forgec.ir.diagnostics import Related, suggestion
from forgec.ir.nodes import FailNode, ForeachNode, IfNode, Node, ReturnNode, edges
from forgec.ir.pointer import join
from forgec.passes.context import Facts, LoopFacts, PassContext
from forgec.passes.model import ABSENT, raw_at


class Scope:
    """The nodes of one scope (top level or one loop body) and their resolved edges."""

    __slots__ = (
        "cut",
        "full_order",
        "index",
        "loop",
        "missing_edge",
        "nodes",
        "order",
        "orders",
        "reachable",
        "succ",
    )

    def __init__(self, loop: ForeachNode | None, nodes: list[Node]) -> None:
        self.loop = loop
        self.nodes = nodes
        # id → positions in `nodes` holding it (more than one only for a duplicated id)
        self.index: dict[str, list[int]] = {node.id: [i] for i, node in enumerate(nodes)}
        if len(self.index) < len(nodes):  # a duplicated id: the last one won, list them all
            self.index = {}
            for i, node in enumerate(nodes):
                self.index.setdefault(node.id, []).append(i)
        # position → every successor position (an ambiguous edge leads to each candidate)
        self.succ: list[list[int]] = []
        # some edge does not resolve (anywhere in the scope) / position → its successors are
        # not all known (a missing, dropped, absent or ill-typed target)
        self.missing_edge = False
        self.cut: list[bool] = []
        self.reachable: list[bool] = [False] * len(nodes)
        # reachable positions in topological order, or None when the reachable part is cyclic
        self.order: list[int] | None = []
        # every position in a topological order (None: the scope has a cycle), set by the
        # cycle check; reachable parts are ordered from it
        self.full_order: list[int] | None = None
        # start position → (reached, their order): see `reach_and_order`
        self.orders: dict[int, tuple[list[bool], list[int] | None]] = {}


def edge_fields(node: Node) -> list[tuple[str, str]]:
    """(JSON field name, target id) of a node's outgoing edges, in field order."""
    return edges(node)


def shown(text: str, limit: int = 80) -> str:
    """A name as a message quotes it: a hostile 60 KB "id" must not become a 60 KB message."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def build_scopes(nodes: tuple[Node, ...]) -> tuple[list[Scope], list[tuple[Node, Scope]]]:
    """Scopes (the top level first, then each body after its parent) and every node with its
    scope in manifest order (a loop's body right after the loop)."""
    scopes: list[Scope] = []
    walk: list[tuple[Node, Scope]] = []
    _add_scope(None, nodes, scopes, walk)
    return scopes, walk


def _add_scope(
    loop: ForeachNode | None,
    members: tuple[Node, ...],
    scopes: list[Scope],
    walk: list[tuple[Node, Scope]],
) -> None:
    # a module-level function, not a closure: a recursive closure is a reference cycle, which
    # would keep the scopes (and so the IR) alive until the collector runs
    scope = Scope(loop, list(members))
    scopes.append(scope)
    if not any(isinstance(node, ForeachNode) for node in members):
        walk.extend([(node, scope) for node in members])  # no body to interleave
        return
    for node in members:
        walk.append((node, scope))
        if isinstance(node, ForeachNode):
            _add_scope(node, node.body, scopes, walk)


def check_graph(ctx: PassContext) -> None:
    manifest = ctx.manifest
    flow = manifest.flow
    facts = ctx.facts
    if flow is None:
        return
    scopes, walk = build_scopes(flow.nodes)
    top = scopes[0]
    duplicates = _check_duplicates(ctx, walk)
    where = facts.scope_of  # id → the loop holding its first node (None: the top level)
    dropped = Dropped(ctx.raw, walk)
    for scope in scopes:
        _resolve_edges(ctx, scope, where, dropped)

    entry_ok = _check_entry(ctx, top, flow.entry, flow.pointer, where, dropped)
    facts.incomplete = dropped.named
    facts.reachability_known = entry_ok
    cycles = [c for scope in scopes for c in _check_cycles(ctx, scope, flow.entry)]

    # Reachability and order, parents before bodies (build_scopes lists them in that order).
    reachable_loops: set[str] = set()
    reachable_add, pointers_add = facts.reachable.add, facts.reachable_pointers.add
    for scope in scopes:
        if scope.loop is None:
            start = top.index[flow.entry][0] if entry_ok and flow.entry is not None else None
        else:
            start = 0 if scope.loop.pointer in reachable_loops and scope.nodes else None
        _reach_and_order(scope, start)
        if start is not None and all(scope.reachable):  # the common case: all of it
            nodes = scope.nodes
            facts.reachable.update([node.id for node in nodes])
            facts.reachable_pointers.update([node.pointer for node in nodes])
            reachable_loops.update([n.pointer for n in nodes if type(n) is ForeachNode])
            continue
        for node, is_reached in zip(scope.nodes, scope.reachable, strict=True):
            if is_reached:
                reachable_add(node.id)
                pointers_add(node.pointer)
                if type(node) is ForeachNode:
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
    _record_order(facts, scopes)
    cache: Cache = {}
    _loop_facts(facts, scopes, cache)
    _worst_case(ctx, scopes, flow.entry, cache)


def _check_duplicates(ctx: PassContext, walk: list[tuple[Node, Scope]]) -> set[str]:
    """Report every node whose id an earlier node (in manifest order) already has."""
    facts = ctx.facts
    by_id = {node.id: node for node, _ in walk}
    if len(by_id) == len(walk):  # the common case: every id once
        facts.nodes_by_id.update(by_id)
        facts.scope_of.update({node.id: scope.loop for node, scope in walk})
        return set()
    first_pointer: dict[str, str] = {}
    duplicated: set[str] = set()
    for node, scope in walk:
        if node.id not in first_pointer:
            first_pointer[node.id] = node.pointer
            facts.nodes_by_id[node.id] = node
            facts.scope_of[node.id] = scope.loop
            continue
        duplicated.add(node.pointer)
        ctx.report(
            "FORGE_NODE_DUPLICATE",
            join(node.pointer, "id"),
            f"node id `{node.id}` is already used by the node at {first_pointer[node.id]}",
            hint="give every node, loop bodies included, its own id",
            related=(
                Related(join(first_pointer[node.id], "id"), f"`{node.id}` is also defined here"),
            ),
        )
    return duplicated


class Dropped:
    """The ids of nodes the IR left out, read from the manifest only when an edge or the entry
    does not resolve (the clean path never pays for it); `named` records that one was named."""

    def __init__(self, raw: Any, walk: list[tuple[Node, Scope]]) -> None:
        self.raw = raw
        self.walk = walk
        self.ids: set[str] | None = None
        self.named = False

    def __contains__(self, node_id: object) -> bool:
        if self.ids is None:
            self.ids = dropped_ids(self.raw, {node.pointer for node, _ in self.walk})
        found = node_id in self.ids
        self.named = self.named or found
        return found


def dropped_ids(raw: Any, kept: set[str]) -> set[str]:
    """Ids written on nodes the IR left out (an unusable id or type, already reported): an edge
    or the entry naming one is not missing, it names a broken node."""
    out: set[str] = set()
    flow = raw.get("flow") if isinstance(raw, dict) else None
    _dropped_in(flow.get("nodes") if isinstance(flow, dict) else None, "/flow/nodes", kept, out)
    return out


def _dropped_in(items: Any, base: str, kept: set[str], out: set[str]) -> None:
    # not a closure: a recursive closure is a reference cycle (see `_add_scope`)
    if not isinstance(items, list):
        return
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        pointer = f"{base}/{i}"
        node_id = item.get("id")
        if isinstance(node_id, str) and pointer not in kept:
            out.add(node_id)
        _dropped_in(item.get("body"), pointer + "/body", kept, out)


def _resolve_edges(
    ctx: PassContext, scope: Scope, where: dict[str, ForeachNode | None], dropped: Dropped
) -> None:
    index = scope.index
    top_level = scope.loop is None
    cut_append, succ_append = scope.cut.append, scope.succ.append
    for node in scope.nodes:
        if type(node) is IfNode:
            # the common branch: both targets are nodes of the scope
            if node.then is not None and node.else_ is not None:
                then, else_ = index.get(node.then), index.get(node.else_)
                if then is not None and else_ is not None and len(then) == len(else_) == 1:
                    cut_append(False)
                    succ_append([then[0], else_[0]])
                    continue
        else:
            nxt = getattr(node, "next", None)
            if type(nxt) is str:
                # the common case: one `next` to a node of the scope
                positions = index.get(nxt)
                if positions is not None and len(positions) == 1:
                    cut_append(False)
                    succ_append([positions[0]])
                    continue
        succ: list[int] = []
        cut = False
        for field, target in edge_fields(node):
            positions = index.get(target)
            if positions:
                succ.extend(positions)
                continue
            cut = True
            if target in dropped:
                continue  # it names a node whose own error says why it is unusable
            at = join(node.pointer, field)
            hint, fixes = suggestion(target, [i for i in index if i != node.id], at)
            ctx.report(
                "FORGE_EDGE_MISSING",
                at,
                _missing_edge_message(node, field, target, scope, where),
                hint=hint,
                fixes=fixes,
            )
        cut = cut or _edge_unknown(ctx.raw, node, top_level)
        scope.missing_edge = scope.missing_edge or cut
        cut_append(cut)
        succ_append(succ)


def _edge_unknown(raw: Any, node: Node, top_level: bool) -> bool:
    """Whether a successor the node should have is unusable or missing (the structure pass
    reported it): then nobody can tell what follows the node."""
    if isinstance(node, IfNode):
        return node.then is None or node.else_ is None
    if isinstance(node, (ReturnNode, FailNode)) or getattr(node, "next", None) is not None:
        return False
    return top_level or raw_at(raw, join(node.pointer, "next")) is not ABSENT


def _missing_edge_message(
    node: Node, field: str, target: str, scope: Scope, where: dict[str, ForeachNode | None]
) -> str:
    here = f"`{field}` of node `{node.id}` leads to `{shown(target)}`"
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


def _check_entry(
    ctx: PassContext,
    top: Scope,
    entry: str | None,
    flow_pointer: str,
    where: dict[str, ForeachNode | None],
    dropped: Dropped,
) -> bool:
    if entry is None:
        return False  # missing or ill-typed: the structure pass said so
    if entry in top.index:
        return True
    if entry in dropped or not where:
        return False  # a broken entry node, or no node at all: reported by the structure pass
    pointer = join(flow_pointer, "entry")
    loop = where.get(entry)
    if loop is not None:
        message = (
            f"the entry `{shown(entry)}` is inside the body of loop `{loop.id}`; the flow must start "
            "at a top-level node"
        )
    else:
        message = f"the entry `{shown(entry)}` names no node of the flow"
    hint, fixes = suggestion(entry, list(top.index), pointer)
    ctx.report("FORGE_ENTRY_MISSING", pointer, message, hint=hint, fixes=fixes)
    return False


def _check_cycles(ctx: PassContext, scope: Scope, entry: str | None) -> list[list[Node]]:
    scope.full_order = topological(scope.succ)
    if scope.full_order is not None:
        return []  # acyclic: the unambiguous edges are some of `succ`
    n = len(scope.nodes)
    starts = list(range(n))
    if scope.loop is None and entry is not None and entry in scope.index:
        starts.insert(0, scope.index[entry][0])
    cycles = []
    for path, last, field in find_cycles(plain_edges(scope), starts):
        ids = [scope.nodes[i].id for i in path]
        cycles.append([scope.nodes[i] for i in path])
        where = "the flow" if scope.loop is None else f"the body of loop `{scope.loop.id}`"
        ctx.report(
            "FORGE_CYCLE",
            join(scope.nodes[last].pointer, field),
            f"{where} loops back on itself: {' -> '.join([*ids, ids[0]])}",
            hint="flows are acyclic; repeat work with a bounded `foreach` instead",
            related=tuple(
                Related(
                    join(scope.nodes[i].pointer, "id"), f"`{scope.nodes[i].id}` is on the cycle"
                )
                for i in path
            ),
        )
    return cycles


def plain_edges(scope: Scope) -> list[list[tuple[str, int]]]:
    """Position → (field, successor) through unambiguous edges (an id that two nodes of the
    scope share is already an error): what cycles are made of. Built on the error path only."""
    out: list[list[tuple[str, int]]] = []
    for node in scope.nodes:
        edges: list[tuple[str, int]] = []
        for field, target in edge_fields(node):
            positions = scope.index.get(target)
            if positions is not None and len(positions) == 1:
                edges.append((field, positions[0]))
        out.append(edges)
    return out


def find_cycles(
    edges: list[list[tuple[str, int]]], starts: list[int]
) -> list[tuple[list[int], int, str]]:
    """One cycle per back edge of a depth-first search: (path, closing node, closing field).

    `edges[v]` lists v's (field, successor). The path starts at the node the back edge returns
    to, so the first node printed is the one the search (from the entry first) met first.
    """
    state = [0] * len(edges)  # 0 new, 1 on the stack, 2 done
    found: list[tuple[list[int], int, str]] = []
    for start in starts:
        if state[start]:
            continue
        path: list[int] = [start]
        position = {start: 0}
        state[start] = 1
        stack = [(start, 0)]
        while stack:
            v, k = stack[-1]
            out = edges[v]
            if k == len(out):
                stack.pop()
                path.pop()
                del position[v]
                state[v] = 2
                continue
            stack[-1] = (v, k + 1)
            field, w = out[k]
            if state[w] == 1:
                found.append((path[position[w] :], v, field))
            elif state[w] == 0:
                state[w] = 1
                position[w] = len(path)
                path.append(w)
                stack.append((w, 0))
    return found


def topological(succ: list[list[int]], members: list[int] | None = None) -> list[int] | None:
    """Positions in a topological order, or None when they form a cycle; `graphlib` sorts.

    Of the positions whose predecessors are all placed, the earliest in the manifest comes next,
    so a manifest written in flow order is listed as written. `members` restricts the sort to a
    part closed under `succ` (what a start reaches), listed in manifest order.

    `graphlib` costs about a microsecond per node and per edge, so it is fed *runs* rather than
    positions: a run is a stretch of consecutive positions p, p+1, … where each one's only
    successor is the next and the next has no other predecessor (a flow written in flow order
    is mostly one run). Sorting runs by their first position gives exactly the order above:
    when p is placed, p+1 becomes ready and every other ready position is already later than
    p (it was ready when p was picked as the earliest), hence later than p+1; so p+1 always
    follows p at once. A cycle through positions is a cycle through runs and back (a run that
    leads to its own start is a self-loop, which `graphlib` reports), so `CycleError` still
    decides acyclicity.
    """
    n = len(succ)
    positions = range(n) if members is None else members
    # distinct predecessors among the sorted positions: 0, 1 or 2 ("more than one")
    preds = [0] * n
    last_pred = [-1] * n
    for i in positions:
        for j in succ[i]:
            if last_pred[j] != i:
                last_pred[j] = i
                preds[j] += 1
    # run_of[p]: the first position of p's run; tail[h]: the last position of h's run
    run_of = list(range(n))
    tail: dict[int, int] = {}
    previous = -2
    for i in positions:
        out = succ[previous] if previous == i - 1 else None
        if out and preds[i] == 1 and out.count(i) == len(out):
            h = run_of[previous]
            run_of[i] = h
            tail[h] = i
        else:
            tail[i] = i
        previous = i
    sorter: graphlib.TopologicalSorter[int] = graphlib.TopologicalSorter()
    add = sorter.add
    for h, t in tail.items():
        add(h)
        for j in succ[t]:
            add(run_of[j], h)  # j's run comes after h's (j is the first of its run)
    try:
        sorter.prepare()
    except graphlib.CycleError:
        return None
    ready = list(sorter.get_ready())
    heapq.heapify(ready)
    order: list[int] = []
    push, pop, done, get_ready = heapq.heappush, heapq.heappop, sorter.done, sorter.get_ready
    while ready:
        h = pop(ready)
        order.extend(range(h, tail[h] + 1))
        done(h)
        for j in get_ready():
            push(ready, j)
    return order


def reach(succ: list[list[int]], start: int) -> list[bool]:
    """Which positions `start` reaches (itself included)."""
    seen = [False] * len(succ)
    seen[start] = True
    stack = [start]
    while stack:
        for w in succ[stack.pop()]:
            if not seen[w]:
                seen[w] = True
                stack.append(w)
    return seen


def reach_and_order(scope: Scope, start: int) -> tuple[list[bool], list[int] | None]:
    """What `start` reaches in `scope`, and those positions in a topological order (None when a
    cycle is among them). Memoised per start: the worst case asks again for the same ones."""
    known = scope.orders.get(start)
    if known is not None:
        return known
    seen = reach(scope.succ, start)
    full = scope.full_order
    if full is not None:
        order: list[int] | None = [i for i in full if seen[i]]
    else:
        order = topological(scope.succ, [i for i, s in enumerate(seen) if s])
    scope.orders[start] = seen, order
    return seen, order


def _reach_and_order(scope: Scope, start: int | None) -> None:
    if start is None:
        scope.order = []
        return
    scope.reachable, scope.order = reach_and_order(scope, start)


def _warn_unreachable(
    ctx: PassContext, scopes: list[Scope], entry_ok: bool, duplicates: set[str]
) -> None:
    if not entry_ok:
        return  # no entry, no reachability to speak of: FORGE_ENTRY_MISSING says it all
    unreachable_loops: set[str] = set()
    silent_loops: set[str] = set()  # unreachable loops not warned about: nor are their bodies
    for scope in scopes:
        loop_dead = scope.loop is not None and scope.loop.pointer in unreachable_loops
        loop_silent = scope.loop is not None and scope.loop.pointer in silent_loops
        if all(scope.reachable) and not loop_dead:
            continue  # the common case: nothing to warn about
        # a reachable node whose successors are unknown could lead anywhere in the scope
        unknown = any(r and c for r, c in zip(scope.reachable, scope.cut, strict=True))
        for i, node in enumerate(scope.nodes):
            if scope.reachable[i]:
                continue
            silent = loop_silent or node.pointer in duplicates or (unknown and not loop_dead)
            if isinstance(node, ForeachNode):
                unreachable_loops.add(node.pointer)
                if silent:
                    silent_loops.add(node.pointer)
            if silent:
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


def _record_order(facts: Facts, scopes: list[Scope]) -> None:
    top = scopes[0]
    facts.topo_order = [top.nodes[i].id for i in top.order] if top.order is not None else []
    facts.ordered = all(scope.order is not None for scope in scopes)
    for scope in scopes[1:]:
        assert scope.loop is not None
        facts.body_order[scope.loop.id] = (
            [scope.nodes[i].id for i in scope.order] if scope.order is not None else []
        )


Cache = dict[tuple[int, int], Any]


def _loop_facts(facts: Facts, scopes: list[Scope], cache: Cache) -> None:
    for scope in scopes[1:]:
        loop = scope.loop
        assert loop is not None
        longest = longest_path(scopes, scope, 0, cache) if scope.nodes else None
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


def longest_path(
    scopes: list[Scope], scope: Scope, start: int, cache: Cache | None = None
) -> tuple[int, list[str]] | None:
    """SPEC §12's W from `start`: (transitions, the ids on the longest path), or None when it is
    unbounded (a cycle) or unknown (a loop without a usable `maxItems`). `cache` keeps the
    answer per (scope, start) so nested loops are measured once."""
    cache = {} if cache is None else cache
    key = (id(scope), start)
    if key in cache:
        return cache[key]
    cache[key] = None  # while measuring: a body that leads back here is unbounded
    _, order = reach_and_order(scope, start)
    result: tuple[int, list[str]] | None = None
    if order is not None:
        bodies = {s.loop.pointer: s for s in scopes if s.loop is not None}
        nodes, succ = scope.nodes, scope.succ
        # position → W, and the next position on the longest path (-1: none)
        weight = [0] * len(nodes)
        follow = [-1] * len(nodes)
        for i in reversed(order):  # successors first
            node = nodes[i]
            own = 1
            if type(node) is ForeachNode:
                body = bodies.get(node.pointer)
                if body is not None and body.nodes:
                    inner = longest_path(scopes, body, 0, cache)
                    if inner is None or node.max_items is None:
                        return None
                    own = 1 + node.max_items * inner[0]
            w = 0
            for j in succ[i]:
                if weight[j] > w:
                    w = weight[j]
                    follow[i] = j
            weight[i] = own + w
        path: list[str] = []
        cursor = start
        while cursor >= 0:
            path.append(nodes[cursor].id)
            cursor = follow[cursor]
        result = (weight[start], path)
    cache[key] = result
    return result


def _worst_case(ctx: PassContext, scopes: list[Scope], entry: str | None, cache: Cache) -> None:
    facts = ctx.facts
    flow = ctx.manifest.flow
    top = scopes[0]
    if entry is None or entry not in top.index or flow is None:
        return
    result = longest_path(scopes, top, top.index[entry][0], cache)
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
