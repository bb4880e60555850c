"""Names and references: safe targets and loop variables, credentials, definite assignment.

Three checks, in one pass because they share the value walk:

- **Targets and loop variables** (every node, reachable or not). A target is a NAME that is not
  reserved, or `state.FIELD` with FIELD declared → else `FORGE_TARGET_UNSAFE`. `itemVar` and
  `indexVar` are non-reserved NAMEs that differ → else `FORGE_VAR_UNSAFE`.
- **Credentials** (every node). `{"$credential": ID}` may only be a header value of a
  `net.http` step (`input.headers.NAME`), anywhere else `FORGE_REF_UNSAFE`; an ID that
  `credentialRequirements` does not declare is `FORGEC_CREDENTIAL_UNDECLARED` (wherever it
  stands: moving a misplaced credential does not declare it).
- **Definite assignment** (reachable nodes only, SPEC §3, §12). A forward "must/may" dataflow
  over the acyclic graph in topological order. At each node, `D` is the set of variables written
  on *every* path from the entry and `P` those written on *some* path: `D` is the intersection
  and `P` the union over the node's predecessors; a node adds its target's root to both. A read
  (a `$ref` or a template placeholder) of ROOT is fine when ROOT is `input`, a declared `state`
  field (`state.X`; the whole `state` too), a loop variable in scope or in `D`; in `P` only it
  is `FORGEC_REF_MAYBE_UNDEFINED` (warning), otherwise `FORGEC_REF_UNDEFINED`. A reserved root
  other than `input`/`state` (`output`, `result`, ...) is never a variable: always undefined.

  A loop body starts from the loop's `D` plus its loop variables, and its `P` also holds every
  variable the body writes (an earlier iteration may have written it). After the loop, `D` is
  the loop's `D` (the list may be empty) and `P` adds what the body's iterations may leave
  written; the loop variables go out of scope.

  A target writes its ROOT (`state.X` writes state, which is always defined). An unsafe target
  still counts as a write of its leading name, so one bad target gives one error, not a trail
  of undefined reads after it. The analysis needs a well-formed order; with a cycle, a
  duplicated id or a node the IR left out (all already errors) it is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any, cast

import attrs

from forgec.frontend.names import NAME_RE, RESERVED, parse_path
from forgec.ir.capabilities import BY_NAME
from forgec.ir.diagnostics import Fix, insert_fix
from forgec.ir.nodes import (
    NODE_TYPES,
    CapabilityNode,
    CredentialRef,
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
    node_values,
)
from forgec.ir.pointer import join
from forgec.ir.readable import Readable
from forgec.ir.suggest import MAX_LISTED, closest, listed, suggest
from forgec.passes.context import PassContext
from forgec.passes.graph import shown

LEADING_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*", re.ASCII)

# Roots that are always defined; every other reserved name is never a variable.
ALWAYS_DEFINED = ("input", "state")

# (written on every path, written on some path), as bit sets over the flow's variables
Defs = tuple[int, int]


def check_references(ctx: PassContext) -> None:
    manifest = ctx.manifest
    if manifest.flow is None:
        return
    state_fields = set(manifest.state.fields) if manifest.state is not None else set()
    declared = {c.id for c in manifest.credential_requirements if c.id is not None}
    # The builder recorded every node's reads while it built the values; an IR built by other
    # means (tests) has them walked here.
    known = manifest.node_reads
    with_credentials = manifest.credential_nodes
    reads: dict[str, list[Ref]] = {}
    # Writers are recorded in the same loop: the reachable nodes that hold their id first (a
    # duplicate is an error of its own) and write a variable (`state.X` counts as itself).
    facts = ctx.facts
    reachable, by_id, writers = facts.reachable_pointers, facts.nodes_by_id, facts.writers
    # node pointer → the variable its target writes for definedness (`written_root`), found
    # once here for the dataflow's transfers
    roots: dict[str, str | None] = {}
    for node in _all_nodes(manifest.flow.nodes):
        rule = _BY_CLASS[type(node)]
        if rule.writes_target:
            target = cast("SetNode", node).target  # writes_target: set, capability or llm
            if target is not None:
                # the common case: a plain unreserved name is safe and writes itself
                if _plain_target(target):
                    name: str | None = target
                    roots[node.pointer] = target
                else:
                    _check_target(ctx, node, state_fields)
                    root = roots[node.pointer] = written_root(target)
                    name = target if target.startswith("state.") else root
                if name is not None and node.pointer in reachable and by_id.get(node.id) is node:
                    writers.setdefault(name, []).append(node.id)
        elif rule.loop_vars:
            _check_loop_vars(ctx, cast(ForeachNode, node))
        pointer = node.pointer
        if known is not None and with_credentials is not None:
            reads[pointer] = known.get(pointer, [])
            if pointer not in with_credentials:
                continue
        refs, creds = values_of(node)
        reads[pointer] = refs
        if creds:
            _check_credentials(ctx, node, creds, declared)
    _definite_assignment(ctx, state_fields, reads, roots)


def _all_nodes(nodes: tuple[Node, ...]) -> list[Node]:
    out: list[Node] = []
    for node in nodes:
        out.append(node)
        if type(node) is ForeachNode:
            out.extend(_all_nodes(node.body))
    return out


# --- targets and loop variables -------------------------------------------------------------


def target_of(node: Node) -> str | None:
    if isinstance(node, (SetNode, CapabilityNode, LlmNode)) and isinstance(node.target, str):
        return node.target
    return None


def written_root(target: str) -> str | None:
    """The variable a target writes for definedness: its leading NAME, None for `state.X` (state
    is always defined) or when it has no leading name at all."""
    # (no cache across checks: a first check is the figure that counts)
    return _written_root(target)


def _plain_target(target: str) -> bool:
    """A plain unreserved NAME: such a target is safe and writes itself."""
    return NAME_RE.fullmatch(target) is not None and target not in RESERVED


def _written_root(target: str) -> str | None:
    match = LEADING_NAME.match(target)
    if match is None or match.group() in ALWAYS_DEFINED:
        return None
    return match.group()


def _check_target(ctx: PassContext, node: Node, state_fields: set[str]) -> None:
    target = target_of(node)
    if target is None:
        return
    if NAME_RE.fullmatch(target) and target not in RESERVED:
        return  # the common case, decided without parsing
    pointer = join(node.pointer, "target")
    segments = parse_path(target)
    if segments is not None and len(segments) == 1:
        if target in RESERVED:
            ctx.report(
                "FORGE_TARGET_UNSAFE",
                pointer,
                f"`{target}` is a reserved name and cannot be a target",
                hint=_reserved_hint(target, state_fields),
            )
        return
    if segments is not None and len(segments) == 2 and segments[0] == "state":
        field = segments[1]
        if isinstance(field, str) and field in state_fields:
            return
        declared = listed(state_fields)
        ctx.report(
            "FORGE_TARGET_UNSAFE",
            pointer,
            f"`{target}` writes state field `{field}`, which `state.fields` does not declare "
            f"(declared: {declared})",
            hint=_did_you_mean(str(field), sorted(state_fields), "state.")
            or "declare the field in `state.fields`",
            fixes=declare_state_field(ctx, str(field)),
        )
        return
    ctx.report(
        "FORGE_TARGET_UNSAFE",
        pointer,
        f"`{shown(target)}` is not a valid target: a target is a plain name (letters, digits, `_`, "
        "starting with a letter, at most 64 characters) or `state.FIELD`",
    )


def _reserved_hint(name: str, state_fields: set[str]) -> str:
    if name == "state" and state_fields:
        return f"write a declared field, e.g. `state.{sorted(state_fields)[0]}`"
    return f"choose another name, e.g. `{name}Value`"


def _check_loop_vars(ctx: PassContext, loop: ForeachNode) -> None:
    for field, name in (("itemVar", loop.item_var), ("indexVar", loop.index_var)):
        if name is None:
            continue
        pointer = join(loop.pointer, field)
        if not NAME_RE.fullmatch(name):
            ctx.report(
                "FORGE_VAR_UNSAFE",
                pointer,
                f"`{shown(name)}` is not a valid loop variable: use a plain name (letters, digits, "
                "`_`, starting with a letter, at most 64 characters)",
            )
        elif name in RESERVED:
            ctx.report(
                "FORGE_VAR_UNSAFE",
                pointer,
                f"`{name}` is a reserved name and cannot be a loop variable",
                hint=f"choose another name, e.g. `{name}Item`"
                if field == "itemVar"
                else "choose another name, e.g. `i`",
            )
    if loop.item_var is not None and loop.item_var == loop.index_var:
        ctx.report(
            "FORGE_VAR_UNSAFE",
            join(loop.pointer, "indexVar"),
            f"`indexVar` and `itemVar` are both `{loop.item_var}`; a loop's variables must differ",
        )


# --- credentials ----------------------------------------------------------------------------


Keys = tuple[str | int, ...]


def values_of(node: Node) -> tuple[list[Ref], list[tuple[CredentialRef, str, Keys]]]:
    """Every read of a node (template placeholders included) and every credential with the
    value slot and keys leading to it, in field order. One plain recursive walk: this runs on
    every node of every check."""
    refs: list[Ref] = []
    creds: list[tuple[CredentialRef, str, Keys]] = []
    for slot, root in _BY_CLASS[type(node)].values(node):
        _walk_value(root, slot, (), refs, creds)
    return refs, creds


def _walk_value(
    value: Value,
    slot: str,
    keys: Keys,
    refs: list[Ref],
    creds: list[tuple[CredentialRef, str, Keys]],
) -> None:
    # not a closure: a recursive closure is a reference cycle, which keeps what it reaches
    # alive until the collector runs (reference counting frees the rest of a check)
    if isinstance(value, Literal):
        return
    if isinstance(value, Ref):
        refs.append(value)
    elif isinstance(value, Template):
        refs.extend(p for p in value.parts if isinstance(p, Ref))
    elif isinstance(value, ObjectExpr):
        for key, member in value.fields:
            _walk_value(member, slot, (*keys, key), refs, creds)
    elif isinstance(value, ListExpr):
        for i, item in enumerate(value.items):
            _walk_value(item, slot, (*keys, i), refs, creds)
    elif isinstance(value, CredentialRef):
        creds.append((value, slot, keys))


def credential_allowed(node: Node, slot: str, keys: Keys) -> bool:
    """A credential may stand only as one value of an input field whose shape takes
    credential values (its row: `net.http`'s `headers`)."""
    if not (isinstance(node, CapabilityNode) and slot == "input" and len(keys) == 2):
        return False
    row = BY_NAME.get(node.capability or "")
    field = row.shape.fields.get(keys[0]) if row is not None and type(keys[0]) is str else None
    return field is not None and field.credential_values


def _check_credentials(
    ctx: PassContext,
    node: Node,
    creds: list[tuple[CredentialRef, str, Keys]],
    declared: set[str],
) -> None:
    for value, slot, keys in creds:
        if not credential_allowed(node, slot, keys):
            ctx.report(
                "FORGE_REF_UNSAFE",
                value.pointer,
                f"`$credential` `{shown(value.id)}` is not allowed here: a credential may only be "
                "a header value of a `net.http` step, so it never reaches a variable, a "
                "model, a result or a log",
                hint='use it as `"headers": {"Authorization": {"$credential": "ID"}}`',
            )
        if value.id not in declared:
            names = listed(declared)
            ctx.report(
                "FORGEC_CREDENTIAL_UNDECLARED",
                value.pointer,
                f"credential `{shown(value.id)}` is not declared in `credentialRequirements` "
                f"(declared: {names})",
                hint=_did_you_mean(value.id, sorted(declared))
                or "declare it with its purpose and the hosts it may reach",
            )


def _definite_assignment(
    ctx: PassContext,
    state_fields: set[str],
    reads: dict[str, list[Ref]],
    roots: dict[str, str | None],
) -> None:
    facts = ctx.facts
    flow = ctx.manifest.flow
    if flow is None or not facts.ordered or facts.cycles or facts.incomplete:
        return
    if flow.entry not in facts.nodes_by_id:
        return
    if len(reads) != len(facts.nodes_by_id):
        return  # a duplicated id makes edges ambiguous: FORGE_NODE_DUPLICATE comes first
    analysis = _Analysis(ctx, state_fields, reads, roots)
    analysis.scope(facts.topo_order, flow.entry, (0, 0), frozenset())


class _Analysis:
    """The dataflow over one flow; `scope` runs it over one scope's topological order.

    Variable sets are Python ints used as bit sets (one bit per variable name): intersection
    and union of 64 nodes' sets then cost a machine word each, not a set allocation."""

    def __init__(
        self,
        ctx: PassContext,
        state_fields: set[str],
        reads: dict[str, list[Ref]],
        roots: dict[str, str | None],
    ):
        self.ctx = ctx
        self.facts = ctx.facts
        self.state_fields = state_fields
        self.reads = reads
        self.roots = roots  # node pointer → the variable its target writes
        # inside a loop whose `itemVar` is unusable (a structure error) reads are not judged:
        # the variable they most likely mean has no name we could know
        self.silent = False
        self.bits: dict[str, int] = {}
        # the scope `scope` is walking: its start and its order (a witness path is searched
        # backwards over it, on the error path only)
        self.start = ""
        self.order: list[str] = []

    def bit(self, name: str) -> int:
        b = self.bits.get(name)
        if b is None:
            b = self.bits[name] = 1 << len(self.bits)
        return b

    def names(self, bits: int) -> set[str]:
        return {name for name, b in self.bits.items() if bits & b}

    def scope(self, order: list[str], start: str, entry: Defs, loop_vars: frozenset[str]) -> Defs:
        """Run over `order` from `start`; return (must, may) where the scope's runs end.

        Forward, in one sweep: a node's incoming state is the meet of what its predecessors
        already pushed to it (they come earlier in the order); a node nobody pushed to is
        unreachable in this scope and not analysed."""
        nodes = self.facts.nodes_by_id
        ids = set(order)
        incoming: dict[str, Defs] = {start: entry}
        ended: list[Defs] = []
        self.start, self.order = start, order
        reads = self.reads
        bits = self.bits
        for node_id in order:
            defs = incoming.get(node_id)
            if defs is None:
                continue  # unreachable in this scope: not analysed
            node = nodes[node_id]
            must, may = defs
            if not self.silent:
                for ref in reads.get(node.pointer, ()):
                    segments = ref.segments
                    if segments:
                        first = segments[0]
                        if first == "input" or (
                            must & bits.get(first, 0)  # type: ignore[arg-type]
                            and first not in RESERVED
                        ):
                            continue  # the common case, decided here; `read` has the rest
                    self.read(ref, node, defs, loop_vars)
            out = _BY_CLASS[type(node)].transfer(self, node, must, may)
            if out is None:
                continue  # writes nothing, leads nowhere, leaves no run open
            must, may, succs = out
            self.start, self.order = start, order  # a loop's body walked its own scope
            pushed = False
            for succ in succs:
                if succ in ids:
                    pushed = True
                    seen = incoming.get(succ)
                    incoming[succ] = (
                        (must, may) if seen is None else (seen[0] & must, seen[1] | may)
                    )
            if not pushed:
                ended.append((must, may))
        end_must = ended[0][0] if ended else 0
        end_may = 0
        for d, p in ended:
            end_must &= d
            end_may |= p
        return end_must, end_may

    def loop(self, loop: ForeachNode, defs: Defs) -> Defs:
        order = self.facts.body_order.get(loop.id, [])
        if not loop.body or not order:
            return defs
        loop_vars = frozenset(v for v in (loop.item_var, loop.index_var) if v is not None)
        var_bits = 0
        for name in loop_vars:
            var_bits |= self.bit(name)
        body_writes = 0
        for node in loop.body:
            root = self.roots.get(node.pointer)
            if root is not None and node.pointer in self.facts.reachable_pointers:
                body_writes |= self.bit(root)
        entry = (defs[0] | var_bits, defs[1] | var_bits | body_writes)
        self.silent = loop.item_var is None
        _, may = self.scope(order, loop.body[0].id, entry, loop_vars)
        self.silent = False
        return defs[0], defs[1] | (may & ~var_bits)

    def read(self, ref: Ref, node: Node, defs: Defs, loop_vars: frozenset[str]) -> None:
        if not ref.segments or not isinstance(ref.segments[0], str):
            return
        root = ref.segments[0]
        must, may = defs
        b = self.bits.get(root, 0)
        if root == "input" or root in loop_vars or (must & b and root not in RESERVED):
            return
        if root == "state":
            self.read_state(ref)
            return
        if root in RESERVED:
            self.ctx.report(
                "FORGEC_REF_UNDEFINED",
                ref.pointer,
                f"`{ref.text}` reads `{root}`, a reserved name that is never a variable",
                hint="read the tool's input as `input.NAME` and saved data as `state.FIELD`",
            )
            return
        writers = self.facts.writers.get(root, [])
        shown = ", ".join(f"`{w}`" for w in writers[:MAX_LISTED]) + (
            f" and {len(writers) - MAX_LISTED} more" if len(writers) > MAX_LISTED else ""
        )
        subject = f"`{root}`" if ref.text == root else f"`{ref.text}` reads `{root}`, which"
        if may & b:
            witness = self.path_without(root, node.id) if not loop_vars else None
            if witness:
                how = f"the path {witness} does not write it"
            elif loop_vars:
                how = "the first iteration, or some path to it, does not write it"
            else:
                how = "some paths from the entry do not write it"
            self.ctx.report(
                "FORGEC_REF_MAYBE_UNDEFINED",
                ref.pointer,
                f"{subject} may be undefined at node `{node.id}`: {how}",
                hint=self.maybe_hint(writers, shown),
            )
            return
        hint: str | None
        if writers:
            hint = f"`{root}` is written by {shown}, which never runs before this read"
        else:
            hint = self.suggest(root, loop_vars, self.names(must | may))
        self.ctx.report(
            "FORGEC_REF_UNDEFINED",
            ref.pointer,
            f"{subject} is not written on any path from the entry before node `{node.id}`",
            hint=hint,
        )

    def path_without(self, root: str, node_id: str) -> str | None:
        """A path from the scope's start to `node_id` through no node that writes `root` (a
        loop on it may run zero times), as `a -> b -> c`; None when there is none here."""
        nodes = self.facts.nodes_by_id
        ids = set(self.order)
        preds: dict[str, list[str]] = {}
        for pred in self.order:
            for succ in _successors(nodes[pred]):
                if succ in ids:
                    preds.setdefault(succ, []).append(pred)
        came_from: dict[str, str | None] = {node_id: None}
        queue = [node_id]
        for current in queue:  # backwards, breadth first: the shortest such path
            if current == self.start:
                path = [current]
                while (step := came_from[path[-1]]) is not None:
                    path.append(step)
                return " -> ".join(path)
            for pred in preds.get(current, ()):
                target = target_of(nodes[pred])
                writes = target is not None and written_root(target) == root
                if pred not in came_from and not writes:
                    came_from[pred] = current
                    queue.append(pred)
        return None

    def maybe_hint(self, writers: list[str], shown: str) -> str:
        # loop ids, never the loop nodes: IR nodes are unhashable (they hold JSON values)
        loops = {_loop_id(self.facts.scope_of.get(w)) for w in writers}
        if writers and None not in loops:
            names = ", ".join(sorted(f"`{loop}`" for loop in loops if loop is not None))
            return (
                f"it is written only inside the body of loop {names}, which may run zero times; "
                "set a default before the loop"
            )
        return f"it is written by {shown}, but not on every path here; set a default first"

    def read_state(self, ref: Ref) -> None:
        if len(ref.segments) < 2:
            return  # the whole state object
        field = ref.segments[1]
        if isinstance(field, str) and field in self.state_fields:
            return
        declared = listed(self.state_fields)  # at most MAX_LISTED names: output stays linear
        self.ctx.report(
            "FORGEC_REF_UNDEFINED",
            ref.pointer,
            f"`{ref.text}` reads state field `{field}`, which `state.fields` does not declare "
            f"(declared: {declared})",
            hint=_did_you_mean(str(field), self.state_fields, "state.")
            or "declare the field in `state.fields`",
            fixes=declare_state_field(self.ctx, str(field)),
        )

    def suggest(self, root: str, loop_vars: frozenset[str], known: set[str]) -> str | None:
        candidates = sorted({*self.facts.writers, *loop_vars, *known, "input", "state"})
        found = closest(root, [c for c in candidates if not c.startswith("state.")])
        if found is not None:
            return f"did you mean `{found}`?"
        return f"write `{root}` with a `set` step first, or read the tool's input as `input.{root}`"


def _loop_id(loop: ForeachNode | None) -> str | None:
    return loop.id if loop is not None else None


def _successors(node: Node) -> tuple[str, ...]:
    """The ids a node's edges name (`then` before `else`)."""
    if type(node) is IfNode:
        return tuple([t for t in (node.then, node.else_) if t is not None])
    nxt = getattr(node, "next", None)
    return (nxt,) if type(nxt) is str else ()


def declare_state_field(ctx: PassContext, field: str) -> tuple[Fix, ...]:
    """The fix that declares a state field: in `state.fields`, or a new `state` holding it."""
    title = f"Declare the state field `{field}`"
    if ctx.manifest.state is None:
        state = {"maxBytes": 4096, "fields": {field: {}}}
        return (insert_fix("", "state", state, title=title),)
    return (insert_fix("/state/fields", field, {}, title=title),)


def _did_you_mean(name: str, candidates: Iterable[str], prefix: str = "") -> str | None:
    return suggest(name, candidates, prefix)


# --- per node type (NODE_TABLE, keyed by forgec.ir.rules.NODE_TYPE_NAMES) -------------------

# what a node does to the dataflow: (must, may, successors), or None when the run ends there
Transfer = Callable[["_Analysis", Any, int, int], "tuple[int, int, tuple[str | None, ...]] | None"]


def _writes(an: _Analysis, node: SetNode | CapabilityNode | LlmNode, must: int, may: int) -> Any:
    root = an.roots.get(node.pointer)
    if root is not None:
        b = an.bits.get(root) or an.bit(root)
        must |= b
        may |= b
    return must, may, (node.next,)


def _branches(an: _Analysis, node: IfNode, must: int, may: int) -> Any:
    return must, may, (node.then, node.else_)


def _loops(an: _Analysis, node: ForeachNode, must: int, may: int) -> Any:
    must, may = an.loop(node, (must, may))
    return must, may, (node.next,)


def _ends(an: _Analysis, node: ReturnNode | FailNode, must: int, may: int) -> None:
    return None


def _value_slot(node: SetNode | ReturnNode) -> list[tuple[str, Value]]:
    return [("value", node.value)] if node.value is not None else []


def _input_slot(node: CapabilityNode | LlmNode) -> list[tuple[str, Value]]:
    return [("input", node.input)] if node.input is not None else []


@attrs.frozen(repr=False, eq=False)
class NodeRefs(Readable):
    """What this pass needs of a node type: whether it writes a target, declares loop
    variables, where its values are, and its dataflow transfer."""

    writes_target: bool
    loop_vars: bool
    values: Callable[[Any], list[tuple[str, Value]]]
    transfer: Transfer


NODE_TABLE: dict[str, NodeRefs] = {
    "set": NodeRefs(True, False, _value_slot, _writes),
    "capability": NodeRefs(True, False, _input_slot, _writes),
    "llm": NodeRefs(True, False, _input_slot, _writes),
    "if": NodeRefs(False, False, node_values, _branches),
    "foreach": NodeRefs(False, True, node_values, _loops),
    "return": NodeRefs(False, False, _value_slot, _ends),
    "fail": NodeRefs(False, False, node_values, _ends),
}
# the same table by IR class, for the per-node lookups of every check
_BY_CLASS: dict[type, NodeRefs] = {NODE_TYPES[name]: rule for name, rule in NODE_TABLE.items()}
