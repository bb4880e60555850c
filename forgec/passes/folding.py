"""Constant folding for the secrets pass: the strings a flow builds from literals alone.

`set p = "ghp_"` then `{"$template": "token {{p}}R8d7…"}` spells a GitHub token that no single
string of the file holds. This module computes, for every `$template` of the flow, the strings
it may produce when its references lead to constants, so the secrets pass can scan them
(SPEC §14, "secrets after folding").

The analysis is a small may-analysis over the IR. Each variable maps to the values it may hold
(at most `MAX_VALUES`, each a constant or `UNKNOWN`): a `set` writes what its value folds to;
`input` holds the input schema's `default`s (and anything the caller sends); `state.X` holds
its schema's `default` and every value a `set` writes to it; a loop over a list that folds to
constants binds its item variable to each item and its index variable to each index; any other
writer (a capability or model step's `target`) is `UNKNOWN`. It is flow-insensitive: a variable
holds every value any step assigns it, on any path, so "on any path" costs no path
enumeration; the nodes are visited in the graph pass's topological order (loop bodies in their
body order) so a chain of `set`s settles in one round, and the rounds repeat until nothing
changes (at most `MAX_ROUNDS`). Unreachable steps count too: a secret the file spells in pieces
is in the file whether or not the step runs.

A template is folded by rendering each combination of its parts' values (at most
`MAX_COMBINATIONS`) as the runtime would (`forgec.runtime.values.render`), an unknown part as a
space, which no token spans. Only templates with at least one part folded to a constant are
returned: the rest are scanned as written by the secrets pass already.

**Bounded by construction** (SPEC §16, docs/analysis.md "Constant folding"). Every constant is a
`_Const` that carries its compact-JSON size and a 16-byte digest, both computed from its
members' when it is built, so no value is ever serialised or hashed whole to be compared or
measured; a value whose size would pass `VALUE_LIMIT` (256 KiB) is `UNKNOWN` *before* it is
built (a template's rendering is 2 + its parts' JSON-escaped bytes, known before the join).
Each check also has a fixed work allowance (`WORK_UNITS`, bytes built plus a weight per
operation) for the environment and another for the renderings; when one runs out, whatever is
still to be folded is `UNKNOWN`. Unknown means "anything": a cap never invents a constant.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs
import orjson

from forgec.ir.nodes import (
    CapabilityNode,
    CredentialRef,
    ForeachNode,
    ListExpr,
    Literal,
    LlmNode,
    Manifest,
    Node,
    ObjectExpr,
    Ref,
    SetNode,
    Template,
    Value,
    node_type,
    walk_nodes,
)
from forgec.ir.readable import Readable
from forgec.ir.rules import NODE_TYPE_NAMES
from forgec.passes.context import Facts
from forgec.runtime.limits import VALUE_LIMIT

__all__ = ["NODE_TABLE", "UNKNOWN", "FoldedTemplate", "folded_templates"]

MAX_VALUES = 16  # values kept per variable; more and it is UNKNOWN
MAX_COMBINATIONS = 256  # renderings per template
MAX_ROUNDS = 6
HOLE = " "  # an unknown part of a template: breaks any token the parts around it would form
# Work allowed per check, in bytes built; an operation (a member placed, a part looked up, a
# combination tried) weighs OP_WEIGHT bytes, about its cost in time. One allowance for the
# environment (~30 ms at most), a smaller one for the renderings handed to the scanner, which
# reads about 12 MB/s: 2 MiB of texts is ~0.2 s of scanning at the very most.
WORK_UNITS = 16 << 20
RENDER_UNITS = 2 << 20
OP_WEIGHT = 128


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen(repr=False, eq=False)
class FoldedTemplate(Readable):
    node: Node  # the step where the string is formed
    template: Template
    texts: tuple[str, ...]  # what it may render to, with at least one part folded


# ---------------------------------------------------------------------------------------------
# Constants that know their size and identity


class _Const:
    """A folded JSON value with its compact-JSON size (bytes) and a digest of its content.

    `members` holds the members' `_Const`s (a tuple for a list, a dict for an object), so a
    path into the value and every measure of it cost its depth, never its size."""

    __slots__ = ("_text", "key", "members", "size", "value")

    def __init__(self, value: Any, size: int, key: bytes, members: Any = None) -> None:
        self.value = value
        self.size = size
        self.key = key
        self.members = members
        self._text: str | None = None


def _digest(data: bytes) -> bytes:
    import hashlib  # here: most checks fold nothing, and hashlib loads OpenSSL (≈ 3 ms)

    return hashlib.blake2b(data, digest_size=16).digest()


class _OutOfWork(Exception):
    """The allowance ran out: what was being folded is UNKNOWN, and so is everything after."""


class _Budget:
    __slots__ = ("left",)

    def __init__(self, units: int) -> None:
        self.left = units

    def spend(self, units: int) -> None:
        self.left -= units
        if self.left < 0:
            raise _OutOfWork


class _Builder:
    """Makes `_Const`s within the value limit, charging their cost to a budget."""

    def __init__(self, budget: _Budget) -> None:
        self.budget = budget
        self._literals: dict[int, Any] = {}  # id(Literal) → its _Const (or UNKNOWN)
        self._keep: list[Any] = []  # the Literals memoised, so their ids stay theirs

    def scalar(self, value: Any) -> Any:
        try:
            text = orjson.dumps(value)
        except (TypeError, orjson.JSONEncodeError):
            return UNKNOWN
        self.budget.spend(OP_WEIGHT + len(text))
        if len(text) > VALUE_LIMIT:
            return UNKNOWN
        tag = b"s" if type(value) is str else b"v"
        return _Const(value, len(text), _digest(tag + text))

    def list_of(self, items: list[Any]) -> Any:
        self.budget.spend(OP_WEIGHT * (1 + len(items)))
        size = 1 + len(items) if items else 2
        for item in items:
            if item is UNKNOWN:
                return UNKNOWN  # a list holding something unknown is not a constant
            size += item.size
            if size > VALUE_LIMIT:
                return UNKNOWN
        key = _digest(b"[" + b"".join(item.key for item in items))
        return _Const([item.value for item in items], size, key, tuple(items))

    def object_of(self, fields: list[tuple[str, Any]]) -> Any:
        self.budget.spend(OP_WEIGHT * (1 + len(fields)))
        members: dict[str, Any] = {}
        size = 1 + len(fields) if fields else 2
        for name, member in fields:
            if member is UNKNOWN:
                continue  # an unknown member: folded as absent (a lookup of it is UNKNOWN)
            text = orjson.dumps(name)
            self.budget.spend(len(text))
            size += len(text) + 1 + member.size
            if size > VALUE_LIMIT:
                return UNKNOWN
            members[name] = member
        parts = sorted(_digest(orjson.dumps(k)) + m.key for k, m in members.items())
        key = _digest(b"{" + b"".join(parts))
        return _Const({k: m.value for k, m in members.items()}, size, key, members)

    def plain(self, value: Any) -> Any:
        """A plain JSON value (a literal, a schema default) as a `_Const`, iteratively."""
        t = type(value)
        if t is not list and t is not dict:
            return self.scalar(value)
        # post-order over the value: each container is built after its members
        done: dict[int, Any] = {}
        stack: list[tuple[Any, bool]] = [(value, False)]
        while stack:
            v, ready = stack.pop()
            tv = type(v)
            if tv is not list and tv is not dict:
                done[id(v)] = self.scalar(v)
                continue
            if id(v) in done:
                continue
            if not ready:
                stack.append((v, True))
                stack.extend((x, False) for x in (v if tv is list else v.values()))
                continue
            if tv is list:
                done[id(v)] = self.list_of([done[id(x)] for x in v])
            else:
                done[id(v)] = self.object_of([(k, done[id(x)]) for k, x in v.items()])
        return done[id(value)]

    def literal(self, lit: Literal) -> Any:
        got = self._literals.get(id(lit))
        if got is None:
            got = self.plain(lit.value)
            self._literals[id(lit)] = got
            self._keep.append(lit)
        return got

    def text_of(self, c: _Const) -> str | None:
        """What a template placeholder renders `c` as (the runtime's `render`): a string as
        it is, anything else as its compact JSON; None when the runtime could not."""
        if type(c.value) is str:
            return str(c.value)
        if c._text is None:
            self.budget.spend(OP_WEIGHT + c.size)
            try:
                from forgec.runtime.jsontext import dumps

                c._text = dumps(c.value).decode("utf-8")
            except (TypeError, orjson.JSONEncodeError):
                return None
        return c._text


# ---------------------------------------------------------------------------------------------
# Entry point


def folded_templates(manifest: Manifest, facts: Facts) -> Iterator[FoldedTemplate]:
    """Every template whose references fold to constants, with what it may render to, in
    manifest order; lazily, so a caller with a budget renders no more than it scans."""
    flow = manifest.flow
    if flow is None:
        return
    all_nodes = walk_nodes(flow.nodes)
    written = _folded_variables(manifest, all_nodes)
    if not written:
        return  # the common case, first and cheaply: no variable can hold a constant
    # the builder recorded each node's reads (template placeholders included): only a node
    # reading a variable that may hold a constant can hold a template to fold
    reads = manifest.node_reads
    templates: list[tuple[Node, Template]] = []
    for node, _loop in all_nodes:
        if reads is not None and not _reads_any(reads.get(node.pointer, ()), written):
            continue
        for t in _templates_of(node):
            if any(type(p) is Ref and _root(p) in written for p in t.parts):
                templates.append((node, t))
    if not templates:
        return
    env = _Environment(_Builder(_Budget(WORK_UNITS)))
    env.seed(manifest)
    env.settle(_in_order(flow.nodes, facts))
    render = _Builder(_Budget(RENDER_UNITS))
    for node, template in templates:
        try:
            texts = _fold_template(template, env.values, render)
        except _OutOfWork:
            return  # the allowance is spent: the rest is unknown, and unknown is not scanned
        if texts:
            yield FoldedTemplate(node, template, texts)


def _folded_variables(manifest: Manifest, all_nodes: list[tuple[Node, Any]]) -> set[str]:
    """The variables some constant can reach: `set` targets, loop variables, and `input` and
    `state.X` when their schemas give a `default`."""
    out: set[str] = set()
    for node, _loop in all_nodes:
        kind = type(node)
        if kind is SetNode and node.target:  # type: ignore[union-attr]
            var = _variable(node.target)  # type: ignore[union-attr]
            if var is not None:
                out.add(var)
        elif kind is ForeachNode:
            for var in (node.item_var, node.index_var):  # type: ignore[union-attr]
                if var:
                    out.add(var)
    if _has_default(manifest.input_schema):
        out.add("input")
    state = manifest.state
    if state is not None and isinstance(state.fields, dict):
        for name, schema in state.fields.items():
            if isinstance(schema, dict) and "default" in schema:
                out.add(f"state.{name}")
    return out


def _has_default(schema: Any) -> bool:
    stack = [schema]
    while stack:
        s = stack.pop()
        if not isinstance(s, dict):
            continue
        if "default" in s:
            return True
        props = s.get("properties")
        if isinstance(props, dict):
            stack.extend(props.values())
    return False


# ---------------------------------------------------------------------------------------------
# Order and environment


def _in_order(top: tuple[Node, ...], facts: Facts) -> list[Node]:
    """Every node, those the graph pass ordered first (topological, bodies in body order)."""
    by_id = {n.id: n for n, _loop in walk_nodes(top)}
    ordered: list[Node] = []
    seen: set[int] = set()

    def add(node: Node | None) -> None:
        if node is not None and id(node) not in seen:
            seen.add(id(node))
            ordered.append(node)

    for nid in facts.topo_order:
        node = by_id.get(nid)
        add(node)
        if isinstance(node, ForeachNode):
            for bid in facts.body_order.get(nid, ()):
                add(by_id.get(bid))
    for node, _loop in walk_nodes(top):
        add(node)
    return ordered


_Env = dict[str, tuple[Any, ...]]
_Writes = Iterator[tuple[str, tuple[Any, ...]]]


class _Environment:
    def __init__(self, builder: _Builder) -> None:
        self.values: _Env = {}
        self.build = builder
        self.exhausted = False

    def seed(self, manifest: Manifest) -> None:
        """The schema defaults: what `input` and `state.X` hold before any step writes."""
        try:
            defaults = _defaults_object(manifest.input_schema)
            if defaults is not None:
                # the caller may send anything; the defaults fill what it leaves out
                self.values["input"] = (self.build.plain(defaults), UNKNOWN)
            state = manifest.state
            if state is not None and isinstance(state.fields, dict):
                for name, schema in state.fields.items():
                    if isinstance(schema, dict) and "default" in schema:
                        self.values[f"state.{name}"] = (self.build.plain(schema["default"]),)
        except _OutOfWork:
            self._give_up()

    def settle(self, nodes: list[Node]) -> None:
        if self.exhausted:
            return
        env = self.values
        try:
            for _round in range(MAX_ROUNDS):
                changed = False
                for node in nodes:
                    for var, values in NODE_TABLE[node_type(node)].writes(self, node):
                        old = env.get(var, ())
                        merged = _merge(old, values)
                        if merged is not old:
                            env[var] = merged
                            changed = True
                if not changed:
                    break
        except _OutOfWork:
            self._give_up()

    def _give_up(self) -> None:
        """Out of work: every variable may hold anything (sound, and nothing more is built)."""
        self.exhausted = True
        for var in self.values:
            self.values[var] = (UNKNOWN,)

    # -- per node type (NODE_TABLE) -------------------------------------------------------

    def set_writes(self, node: SetNode) -> _Writes:
        if node.target is None:
            return
        values = self.fold(node.value) if node.value is not None else (UNKNOWN,)
        var = _variable(node.target)
        if var is not None:
            yield var, values
        else:  # a path target (`a.b`): its root may now hold anything
            yield node.target.split(".", 1)[0].split("[", 1)[0], (UNKNOWN,)

    def step_writes(self, node: CapabilityNode | LlmNode) -> _Writes:
        if node.target:
            yield _variable(node.target) or node.target.split(".", 1)[0], (UNKNOWN,)

    def loop_writes(self, node: ForeachNode) -> _Writes:
        """A loop over lists that fold to constants: each item, and each index, may be bound."""
        items: list[Any] = []
        width = 0
        for source in self.fold(node.source):
            if source is UNKNOWN or type(source.members) is not tuple:
                items, width = [UNKNOWN], MAX_VALUES + 1
                break
            items.extend(source.members)
            width = max(width, len(source.members))
        if node.item_var:
            yield node.item_var, tuple(items) or (UNKNOWN,)
        if node.index_var:
            indexes = tuple(self.build.scalar(i) for i in range(width))
            yield node.index_var, indexes if 0 < width <= MAX_VALUES else (UNKNOWN,)

    @staticmethod
    def no_writes(node: Node) -> _Writes:
        return iter(())

    # -- values ---------------------------------------------------------------------------

    def fold(self, value: Value | None) -> tuple[Any, ...]:
        """The values `value` may evaluate to (a few; `UNKNOWN` for what no literal decides)."""
        if value is None or isinstance(value, CredentialRef):
            return (UNKNOWN,)  # a credential is the host's, never folded
        if isinstance(value, Literal):
            return (self.build.literal(value),)
        if isinstance(value, Ref):
            return _lookup(value, self.values, self.build)
        if isinstance(value, Template):
            return tuple(_renderings(value, self.values, self.build, folded_only=False)) or (
                UNKNOWN,
            )
        if isinstance(value, ObjectExpr):
            fields = [(k, self.fold(v)) for k, v in value.fields]
            width = max((len(vs) for _k, vs in fields), default=1)
            # the k-th value of each field, not every combination: a few candidates, bounded
            return tuple(
                self.build.object_of([(k, vs[min(i, len(vs) - 1)]) for k, vs in fields])
                for i in range(width)
            )
        if isinstance(value, ListExpr):
            items = [self.fold(v) for v in value.items]
            width = max((len(vs) for vs in items), default=1)
            return tuple(
                self.build.list_of([vs[min(i, len(vs) - 1)] for vs in items]) for i in range(width)
            )
        return (UNKNOWN,)


def _defaults_object(schema: Any) -> Any:
    """The value the input validator's defaults make of an empty object, or None when the
    schema gives no default (nested objects' defaults included)."""
    if not isinstance(schema, dict):
        return None
    if "default" in schema:
        return schema["default"]
    props = schema.get("properties")
    if not isinstance(props, dict):
        return None
    out = {}
    for name, sub in props.items():
        got = _defaults_object(sub)
        if got is not None:
            out[name] = got
    return out or None


def _variable(target: str) -> str | None:
    """The variable a `set` target names: `p`, or `state.X`; None for a path into a value."""
    if _NAME.fullmatch(target):
        return target
    root, dot, field = target.partition(".")
    if root == "state" and dot and _NAME.fullmatch(field):
        return target
    return None


def _merge(old: tuple[Any, ...], new: tuple[Any, ...]) -> tuple[Any, ...]:
    """OLD with NEW's values added (by digest); OLD itself when nothing is new."""
    if old == (UNKNOWN,):
        return old
    keys = {v.key for v in old if v is not UNKNOWN}
    out = list(old)
    for v in new:
        if v is UNKNOWN:
            if UNKNOWN not in out:
                out.append(UNKNOWN)
        elif v.key not in keys:
            keys.add(v.key)
            out.append(v)
    if len(out) == len(old):
        return old
    if len(out) > MAX_VALUES:
        return (UNKNOWN,)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# References and templates


def _reads_any(refs: Iterable[Ref], written: set[str]) -> bool:
    """Whether any of REFS reads a variable in WRITTEN (`_root`, inlined: this runs for every
    node of every check)."""
    for ref in refs:
        segments = ref.segments
        if not segments:
            continue
        head = segments[0]
        if head == "state":
            if len(segments) > 1 and isinstance(segments[1], str):
                if f"state.{segments[1]}" in written:
                    return True
            elif "state" in written:
                return True
        elif head in written:
            return True
    return False


def _root(ref: Ref) -> str:
    """The variable a reference reads: its first segment, or `state.X`."""
    segments = ref.segments
    if len(segments) > 1 and segments[0] == "state" and isinstance(segments[1], str):
        return f"state.{segments[1]}"
    return str(segments[0]) if segments else ""


def _lookup(ref: Ref, env: _Env, build: _Builder) -> tuple[Any, ...]:
    segments = ref.segments
    if not segments:
        return (UNKNOWN,)
    root = str(segments[0])
    rest: tuple[Any, ...] = tuple(segments[1:])
    if root == "state" and rest and isinstance(rest[0], str) and f"state.{rest[0]}" in env:
        root, rest = f"state.{rest[0]}", rest[1:]
    values = env.get(root)
    if values is None:
        return (UNKNOWN,)
    build.budget.spend(OP_WEIGHT * len(values) * (1 + len(rest)))
    out: list[Any] = []
    for v in values:
        for seg in rest:
            if v is UNKNOWN:
                break
            members = v.members
            if type(seg) is int:
                ok = type(members) is tuple and 0 <= seg < len(members)
            else:
                ok = type(members) is dict and seg in members
            v = members[seg] if ok else UNKNOWN
        out.append(v)
    return tuple(out)


def _renderings(
    template: Template, env: _Env, build: _Builder, *, folded_only: bool
) -> Iterator[Any]:
    """Each rendering of `template` as a `_Const` string (UNKNOWN when over the value limit);
    with FOLDED_ONLY, only those in which a reference folded to a constant."""
    # each option: (its text, whether it is a folded constant, its bytes once JSON-escaped).
    # Escaping is per character, so a rendering's compact JSON is 2 + the sum of its parts'
    # escaped bytes: known exactly (a structure's: at least) before the parts are joined
    choices: list[tuple[tuple[str, bool, int], ...]] = []
    for part in template.parts:
        if isinstance(part, str):
            build.budget.spend(OP_WEIGHT + len(part))
            choices.append(((part, False, len(orjson.dumps(part)) - 2),))
            continue
        options: list[tuple[str, bool, int]] = []
        for v in _lookup(part, env, build):
            text = None if v is UNKNOWN else build.text_of(v)
            if text is None:
                options.append((HOLE, False, 1))
            else:
                options.append((text, True, v.size - 2 if type(v.value) is str else v.size))
        choices.append(tuple(options) or ((HOLE, False, 1),))
    for combo in itertools.islice(itertools.product(*choices), MAX_COMBINATIONS):
        build.budget.spend(OP_WEIGHT * (1 + len(combo)))
        folded = False
        size = 2
        for _text, was_folded, escaped in combo:
            folded = folded or was_folded
            size += escaped
        if folded_only and not folded:
            continue
        if size > VALUE_LIMIT:
            yield UNKNOWN  # the runtime refuses to build it: no value, nothing to scan
            continue
        yield build.scalar("".join(text for text, _folded, _escaped in combo))


def _fold_template(template: Template, env: _Env, build: _Builder) -> tuple[str, ...]:
    texts: list[str] = []
    seen: set[bytes] = set()
    for c in _renderings(template, env, build, folded_only=True):
        if c is not UNKNOWN and c.key not in seen:
            seen.add(c.key)
            texts.append(c.value)
    return tuple(texts)


# ---------------------------------------------------------------------------------------------
# Per node type: what it writes, and where its templates are


def _values_of(*attrs_: str) -> Callable[[Node], list[Value | None]]:
    def get(node: Node) -> list[Value | None]:
        return [getattr(node, a) for a in attrs_]

    return get


def _condition_values(node: Node) -> list[Value | None]:
    cond = node.condition  # type: ignore[union-attr]
    return [] if cond is None else [cond.left, cond.right]


@attrs.frozen(repr=False, eq=False)
class _NodeRule(Readable):
    writes: Callable[[_Environment, Any], _Writes]
    values: Callable[[Node], list[Value | None]]  # the value slots that may hold templates


NODE_TABLE: dict[str, _NodeRule] = {
    "set": _NodeRule(_Environment.set_writes, _values_of("value")),
    "capability": _NodeRule(_Environment.step_writes, _values_of("input")),
    "llm": _NodeRule(_Environment.step_writes, _values_of("input")),
    "if": _NodeRule(lambda env, node: _Environment.no_writes(node), _condition_values),
    "foreach": _NodeRule(_Environment.loop_writes, _values_of("source")),
    "return": _NodeRule(lambda env, node: _Environment.no_writes(node), _values_of("value")),
    "fail": _NodeRule(lambda env, node: _Environment.no_writes(node), lambda node: []),
}
if set(NODE_TABLE) != set(NODE_TYPE_NAMES):  # pragma: no cover - a new node type
    raise RuntimeError(f"folding's NODE_TABLE misses {set(NODE_TYPE_NAMES) - set(NODE_TABLE)}")


def _templates_of(node: Node) -> Iterator[Template]:
    stack = [v for v in NODE_TABLE[node_type(node)].values(node) if v is not None]
    while stack:
        v = stack.pop()
        kind = type(v)  # identity, not isinstance: this may run on every node of a check
        if kind is Template:
            yield v  # type: ignore[misc]
        elif kind is ObjectExpr:
            stack.extend(child for _k, child in v.fields)  # type: ignore[union-attr]
        elif kind is ListExpr:
            stack.extend(v.items)  # type: ignore[union-attr]
