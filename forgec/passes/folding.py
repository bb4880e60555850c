"""Constant folding for the secrets pass: the strings a flow builds from literals alone.

`set p = "ghp_"` then `{"$template": "token {{p}}R8d7…"}` spells a GitHub token that no single
string of the file holds. This module computes, for every `$template` of the flow, the strings
it may produce when its references lead to constants, so the secrets pass can scan them
(SPEC §14, "secrets after folding").

The analysis is a small may-analysis over the IR. Each variable a `set` writes maps to the
values it may hold (at most `MAX_VALUES`, each plain JSON or `UNKNOWN`); any other writer (a
capability or model step's `target`, a loop's item and index, `input`) is `UNKNOWN`. It is
flow-insensitive: a variable holds every value any step assigns it, on any path, so "on any
path" costs no path enumeration; the nodes are visited in the graph pass's topological order
(loop bodies in their body order) so a chain of `set`s settles in one round, and the rounds
repeat until nothing changes (at most `MAX_ROUNDS`). Unreachable steps count too: a secret the
file spells in pieces is in the file whether or not the step runs.

A template is folded by rendering each combination of its parts' values (at most
`MAX_COMBINATIONS`) as the runtime would (`forgec.runtime.values.render`), an unknown part as a
space, which no token spans. Only templates with at least one part folded to a constant are
returned: the rest are scanned as written by the secrets pass already.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from typing import Any

import attrs
import orjson

from forgec.ir.nodes import (
    CapabilityNode,
    CredentialRef,
    ForeachNode,
    IfNode,
    ListExpr,
    Literal,
    LlmNode,
    Manifest,
    Node,
    ObjectExpr,
    Ref,
    ReturnNode,
    SetNode,
    Template,
    Value,
    walk_nodes,
)
from forgec.passes.context import Facts
from forgec.runtime.values import MISSING, RunFailure, render, resolve

__all__ = ["UNKNOWN", "FoldedTemplate", "folded_templates"]

MAX_VALUES = 8  # values kept per variable; more and it is UNKNOWN
MAX_COMBINATIONS = 32  # renderings per template
MAX_ROUNDS = 6
HOLE = " "  # an unknown part of a template: breaks any token the parts around it would form


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen
class FoldedTemplate:
    node: Node  # the step where the string is formed
    template: Template
    texts: tuple[str, ...]  # what it may render to, with at least one part folded


def folded_templates(manifest: Manifest, facts: Facts) -> Iterator[FoldedTemplate]:
    """Every template whose references fold to constants, with what it may render to, in
    manifest order; lazily, so a caller with a budget renders no more than it scans."""
    flow = manifest.flow
    if flow is None:
        return
    # the common case, first and cheaply: no template reads a variable a `set` writes
    all_nodes = walk_nodes(flow.nodes)
    written: set[str] = set()
    for node, _loop in all_nodes:
        if type(node) is SetNode and node.target:
            var = _variable(node.target)
            if var is not None:
                written.add(var)
    if not written:
        return
    # the builder recorded each node's reads (template placeholders included): only a node
    # reading a variable some `set` writes can hold a template to fold
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
    env = _environment(_in_order(flow.nodes, facts))
    for node, template in templates:
        texts = _fold_template(template, env)
        if texts:
            yield FoldedTemplate(node, template, texts)


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


def _environment(nodes: list[Node]) -> _Env:
    env: _Env = {}
    for _round in range(MAX_ROUNDS):
        changed = False
        for node in nodes:
            for var, values in _writes(node, env):
                merged = _merge(env.get(var, ()), values)
                if merged != env.get(var, ()):
                    env[var] = merged
                    changed = True
        if not changed:
            break
    return env


def _writes(node: Node, env: _Env) -> Iterator[tuple[str, tuple[Any, ...]]]:
    if isinstance(node, SetNode):
        if node.target is None:
            return
        values = _fold(node.value, env) if node.value is not None else (UNKNOWN,)
        var = _variable(node.target)
        if var is not None:
            yield var, values
        else:  # a path target (`a.b`): its root may now hold anything
            yield node.target.split(".", 1)[0].split("[", 1)[0], (UNKNOWN,)
    elif isinstance(node, CapabilityNode | LlmNode) and node.target:
        yield _variable(node.target) or node.target.split(".", 1)[0], (UNKNOWN,)
    elif isinstance(node, ForeachNode):
        for var in (node.item_var, node.index_var):
            if var:
                yield var, (UNKNOWN,)


def _variable(target: str) -> str | None:
    """The variable a `set` target names: `p`, or `state.X`; None for a path into a value."""
    if _NAME.fullmatch(target):
        return target
    root, dot, field = target.partition(".")
    if root == "state" and dot and _NAME.fullmatch(field):
        return target
    return None


def _key(value: Any) -> bytes:
    if value is UNKNOWN:
        return b"?"
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return repr(value).encode()


def _merge(old: tuple[Any, ...], new: tuple[Any, ...]) -> tuple[Any, ...]:
    keys = {_key(v) for v in old}
    out = list(old)
    for v in new:
        k = _key(v)
        if k not in keys:
            keys.add(k)
            out.append(v)
    if len(out) > MAX_VALUES:
        return (UNKNOWN,)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Folding values


def _fold(value: Value | None, env: _Env) -> tuple[Any, ...]:
    """The values `value` may evaluate to (a few; `UNKNOWN` for what no literal decides)."""
    if value is None or isinstance(value, CredentialRef):
        return (UNKNOWN,)  # a credential is the host's, never folded
    if isinstance(value, Literal):
        return (value.value,)
    if isinstance(value, Ref):
        return _lookup(value, env)
    if isinstance(value, Template):
        return tuple(text for text, _folded in _renderings(value, env)) or (UNKNOWN,)
    if isinstance(value, ObjectExpr):
        fields = [(k, _fold(v, env)) for k, v in value.fields]
        width = max((len(vs) for _k, vs in fields), default=1)
        # the k-th value of each field, not every combination: a few candidates, bounded
        return tuple(
            {
                k: vs[min(i, len(vs) - 1)]
                for k, vs in fields
                if vs[min(i, len(vs) - 1)] is not UNKNOWN
            }
            for i in range(width)
        )
    if isinstance(value, ListExpr):
        items = [_fold(v, env) for v in value.items]
        width = max((len(vs) for vs in items), default=1)
        return tuple([vs[min(i, len(vs) - 1)] for vs in items] for i in range(width))
    return (UNKNOWN,)


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


def _lookup(ref: Ref, env: _Env) -> tuple[Any, ...]:
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
    out: list[Any] = []
    for v in values:
        if v is UNKNOWN:
            out.append(UNKNOWN)
            continue
        got = resolve({"$": v}, ["$", *rest]) if rest else v
        out.append(UNKNOWN if got is MISSING else got)
    return tuple(out)


def _renderings(template: Template, env: _Env) -> list[tuple[str, bool]]:
    """Each rendering of `template` and whether a reference in it folded to a constant."""
    choices: list[tuple[tuple[str, bool], ...]] = []
    for part in template.parts:
        if isinstance(part, str):
            choices.append(((part, False),))
        else:
            choices.append(
                tuple(
                    (HOLE, False) if v is UNKNOWN else (_render(v), True)
                    for v in _lookup(part, env)
                )
                or ((HOLE, False),)
            )
    out: list[tuple[str, bool]] = []
    for combo in itertools.islice(itertools.product(*choices), MAX_COMBINATIONS):
        out.append(("".join(text for text, _ in combo), any(folded for _, folded in combo)))
    return out


def _render(value: Any) -> str:
    """The runtime's own rendering; a value it would refuse (an unknown inside a structure, one
    too deep) is a hole, as an unknown is."""
    try:
        return render(value)
    except (TypeError, orjson.JSONEncodeError, RunFailure):
        return HOLE


def _fold_template(template: Template, env: _Env) -> tuple[str, ...]:
    texts: list[str] = []
    for text, folded in _renderings(template, env):
        if folded and text not in texts:
            texts.append(text)
    return tuple(texts)


# ---------------------------------------------------------------------------------------------
# Where templates are


def _templates_of(node: Node) -> Iterator[Template]:
    values: list[Value | None] = []
    if isinstance(node, SetNode):
        values.append(node.value)
    elif isinstance(node, CapabilityNode | LlmNode):
        values.append(node.input)
    elif isinstance(node, ReturnNode):
        values.append(node.value)
    elif isinstance(node, IfNode) and node.condition is not None:
        values += [node.condition.left, node.condition.right]
    elif isinstance(node, ForeachNode):
        values.append(node.source)
    stack = [v for v in values if v is not None]
    while stack:
        v = stack.pop()
        kind = type(v)  # identity, not isinstance: this may run on every node of a check
        if kind is Template:
            yield v  # type: ignore[misc]
        elif kind is ObjectExpr:
            stack.extend(child for _k, child in v.fields)  # type: ignore[union-attr]
        elif kind is ListExpr:
            stack.extend(v.items)  # type: ignore[union-attr]
