"""Run-time labels (SPEC §15): what the VM knows about where each value came from.

A label tree is `(base, fields)`: `base` is the frozenset of labels of the whole value and
`fields` is None, or — for a value built from an object or list expression — the tree of each
key. It is exactly the flow pass's abstract value for one path, so every label a run sees is
one the pass reported (the soundness property of `tests/test_flows_sound.py`).

Labels are kept per variable in a dict parallel to the VM's environment, and per stack slot in
a stack parallel to the value stack; `compile_labels` turns a value descriptor into a closure
once per Program, like `forgec.runtime.values.compile_value`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from forgec.runtime.sources_and_sinks import INPUT, STATE

Tree = tuple[frozenset[str], Any]  # (base, fields: dict[key, Tree] | None)
LEnv = dict[str, Tree]
LabelFn = Callable[[LEnv], Tree]

NONE: frozenset[str] = frozenset()
EMPTY: Tree = (NONE, None)
INPUT_TREE: Tree = (frozenset({INPUT}), None)
STATE_TREE: Tree = (frozenset({STATE}), None)


def flat(tree: Tree) -> frozenset[str]:
    base, fields = tree
    if fields is None:
        return base
    for child in fields.values():
        base = base | flat(child)
    return base


def _const(lenv: LEnv) -> Tree:
    return EMPTY


def compile_read(segments: list[str | int]) -> LabelFn:
    root = segments[0]
    if root == "state" and len(segments) == 1:

        def whole_state(lenv: LEnv) -> Tree:
            out = STATE_TREE[0]
            for key, tree in lenv.items():
                if key.startswith("state."):
                    out = out | flat(tree)
            return (out, None)

        return whole_state
    if root == "state":
        key, rest, default = f"state.{segments[1]}", tuple(segments[2:]), STATE_TREE
    else:
        key, rest, default = str(root), tuple(segments[1:]), EMPTY

    if not rest:
        return lambda lenv: lenv.get(key, default)

    def read(lenv: LEnv) -> Tree:
        tree = lenv.get(key, default)
        if tree[1] is None:
            return tree  # every part of an opaque value carries all its labels
        acc = tree[0]
        for seg in rest:
            fields = tree[1]
            if fields is None:
                return (acc, None)
            child = fields.get(seg)
            if child is None:
                return (acc, None)
            tree = child
            acc = acc | child[0]
        return (acc, tree[1])

    return read


def single_root(desc: Any, paths: list[list[str | int]]) -> tuple[str, Tree] | None:
    """When a value reads exactly one variable (a `$ref`, a one-placeholder template) and
    that variable is opaque, its labels are the variable's: the VM then reads them with one
    dict probe instead of a closure call. Returns (lenv key, default), else None."""
    kind, arg = desc
    if kind == "ref":
        segments = paths[arg]
    elif kind == "tpl":
        refs = [p for p in arg if not isinstance(p, str)]
        if len(refs) != 1:
            return None
        segments = paths[refs[0][1]]
    else:
        return None
    root = segments[0]
    if root == "state":
        if len(segments) == 1:
            return None
        return f"state.{segments[1]}", STATE_TREE
    return str(root), EMPTY


def compile_labels(desc: Any, paths: list[list[str | int]]) -> LabelFn:
    """A value descriptor → a closure `lenv -> Tree` (see `forgec.runtime.program`)."""
    kind, arg = desc
    if kind == "ref":
        return compile_read(paths[arg])
    if kind == "tpl":
        reads = [compile_read(paths[p[1]]) for p in arg if not isinstance(p, str)]
        if not reads:
            return _const
        if len(reads) == 1:  # the common case: one placeholder
            only = reads[0]

            def one(lenv: LEnv) -> Tree:
                tree = only(lenv)
                return tree if tree[1] is None else (flat(tree), None)

            return one

        def template(lenv: LEnv) -> Tree:
            out = NONE
            for r in reads:
                out = out | flat(r(lenv))
            return (out, None)

        return template
    if kind == "obj":
        members = [(key, compile_labels(v, paths)) for key, v in arg]
        return lambda lenv: (NONE, {key: f(lenv) for key, f in members})
    if kind == "list":
        items = [compile_labels(v, paths) for v in arg]
        return lambda lenv: (NONE, {i: f(lenv) for i, f in enumerate(items)})
    return _const  # const, cred: a credential is resolved by the host, it carries no label


def compile_condition_labels(
    cond: dict[str, Any], values: list[Any], paths: list[list[str | int]]
) -> LabelFn:
    left_desc = values[cond["left"]]
    right_desc = values[cond["right"]] if cond.get("right") is not None else None
    left = compile_labels(left_desc, paths)
    if right_desc is None or right_desc[0] == "const":  # the common `x == "literal"`
        return lambda lenv: (flat(left(lenv)), None)
    right = compile_labels(right_desc, paths)
    return lambda lenv: (flat(left(lenv)) | flat(right(lenv)), None)


def per_argument(value: Any, tree: Tree) -> dict[str, tuple[str, ...]]:
    """What the host is told: the labels of each top-level key of an object input (its own
    and the whole value's), or of the whole input as `*`."""
    base, fields = tree
    if type(value) is not dict:
        return {"*": tuple(sorted(flat(tree)))}
    out: dict[str, tuple[str, ...]] = {}
    for key in value:
        child = fields.get(key) if fields is not None else None
        out[key] = tuple(sorted(base | flat(child) if child is not None else base))
    return out


def column_tree(base: frozenset[str], result: Any, columns: Any) -> Tree:
    """A result of rows (`{"rows": [{column: value}]}`) whose columns carry labels of their
    own (SPEC §21: `db.query` by lineage): every part carries `base`; `rows[i].<column>` also
    `columns[column]`. Anything else: the whole value carries all of them."""
    rows = result.get("rows") if type(result) is dict else None
    extra = {
        str(k): frozenset(x for x in v if type(x) is str) for k, v in dict(columns).items() if v
    }
    if type(rows) is not list:
        return (base.union(*extra.values()), None)
    items: dict[Any, Tree] = {}
    for i, row in enumerate(rows):
        if type(row) is dict:
            own = {k: (labels, None) for k, labels in extra.items() if k in row}
            if own:
                items[i] = (NONE, own)
    return (base, {"rows": (NONE, items)})


def item_tree(source: Tree, index: int, control: frozenset[str]) -> Tree:
    """A loop item's labels: its own (when the list was built here) plus the list's and the
    loop's control labels."""
    base, fields = source
    child = fields.get(index) if fields is not None else None
    if child is None:
        return (base | control, None)
    return (child[0] | base | control, child[1])
