"""Fast node builders, generated at import from the node table (`forgec.ir.rules.NODE_FIELDS`).

For each node type (and place: top level, loop body), straight-line code: the gate (known
fields only, required ones present, a good id), then each field by its kind. Kinds whose check
is pure (`name`, `op`, `retry`, `max_items`) are checked inline and any doubt returns None
*before anything is reported or read*, so the builder's `node_checked` takes over and reports;
the other kinds are read after the gate by the very readers `node_checked` uses (they report
their own problems and never make the node fall back), in table order. So the generated code
builds exactly what `node_checked` builds (a property test holds them together), and adding a
field to the table adds it here too. The generated functions take the builder as `self`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from forgec.ir.nodes import NODE_TYPES, Retry
from forgec.ir.rules import (
    LLM_OPS,
    MAX_ITEMS,
    NODE_FIELDS,
    NODE_ID_RE,
    RETRY_ATTEMPTS,
    RETRY_BACKOFF_MS,
    RETRY_FIELDS,
)

_ABSENT: Any = object()

_PURE_KINDS = {
    "name": """
    {var} = n.get({key!r}, _ABSENT)
    if {var} is _ABSENT:
        {var} = None
    elif type({var}) is not str:
        return None""",
    "op": """
    {var} = n.get({key!r}, _ABSENT)
    if {var} is _ABSENT:
        {var} = None
    elif type({var}) is not str or {var} not in _LLM_OP_SET:
        return None""",
    "max_items": """
    {var} = n.get({key!r}, _ABSENT)
    if {var} is _ABSENT:
        {var} = None
    elif type({var}) is not int or not {lo_items} <= {var} <= {hi_items}:
        return None""",
    "retry": """
    {var} = n.get({key!r}, _ABSENT)
    if {var} is _ABSENT:
        {var} = None
    else:
        if type({var}) is not dict or {var}.keys() != _RETRY_KEYS:
            return None
        _a, _b = {var}["attempts"], {var}["backoffMs"]
        if not (
            type(_a) is int and {lo_att} <= _a <= {hi_att}
            and type(_b) is int and {lo_back} <= _b <= {hi_back}
        ):
            return None
        {var} = Retry(_a, _b, p + "/{key}")""",
}
# A reader that takes the "where" text of messages is called only when its field is there
# (each returns the value of an absent field, `_ABSENT_READ`, without reporting), so the
# text is not built for the fields a node leaves out; the condition reader builds it itself,
# only when it hands the node's condition to the checking reader.
_REPORTING_KINDS = {
    "value": "self.value_field(n, {key!r}, p)",
    "requirements": "self.read_requirements(n, {key!r}, p, node_where(n, {typ!r}), loop, n['id'])",
    "schema": "self.read_schema(n, {key!r}, p)",
    "condition": "self.fast_condition(n, {key!r}, p, {typ!r})",
    "body": "self.read_body(n, {key!r}, p, node_where(n, {typ!r}), loop, n['id'])",
    "fail_code": "self.read_fail_code(n, {key!r}, p, node_where(n, {typ!r}), loop, n['id'])",
    "message": "self.read_message(n, {key!r}, p, node_where(n, {typ!r}), loop, n['id'])",
}
_ABSENT_READ = {"requirements": "None", "body": "()", "fail_code": "None", "message": "None"}


def node_where(n: dict[str, Any], typ: str) -> str:
    """How messages name a node the fast path builds (its id is good)."""
    return f"{typ} node `{n['id']}`"


def _fast_source(typ: str, top: bool) -> str:
    lines = [
        f"def fast_{typ}_{'top' if top else 'body'}(self, n, p, loop):",
        "    keys = n.keys()",
        f"    if not (keys <= _ALLOWED_{typ} and keys >= _REQUIRED_{typ}_{top}):",
        "        return None",
        "    node_id = n['id']",
        "    if type(node_id) is not str or _NODE_ID_MATCH(node_id) is None:",
        "        return None",
    ]
    args = ["node_id", "p"]
    for i, f in enumerate(NODE_FIELDS[typ]):
        var = f"f{i}"
        if f.kind in _PURE_KINDS:
            lines.append(
                _PURE_KINDS[f.kind]
                .format(
                    var=var,
                    key=f.name,
                    lo_items=MAX_ITEMS[0],
                    hi_items=MAX_ITEMS[1],
                    lo_att=RETRY_ATTEMPTS[0],
                    hi_att=RETRY_ATTEMPTS[1],
                    lo_back=RETRY_BACKOFF_MS[0],
                    hi_back=RETRY_BACKOFF_MS[1],
                )
                .rstrip()
            )
        args.append(var)
    for i, f in enumerate(NODE_FIELDS[typ]):  # after the gate, in table order
        if f.kind not in _PURE_KINDS:
            call = _REPORTING_KINDS[f.kind].format(key=f.name, typ=typ)
            if f.kind in _ABSENT_READ:
                call = f"{call} if {f.name!r} in n else {_ABSENT_READ[f.kind]}"
            lines.append(f"    f{i} = {call}")
    lines.append(f"    return _CLASS_{typ}({', '.join(args)})")
    return "\n".join(lines) + "\n"


Builders = dict[str, Callable[..., Any]]


def generate_node_builders(
    allowed: dict[str, frozenset[str]],
    required_top: dict[str, frozenset[str]],
    required_body: dict[str, frozenset[str]],
) -> tuple[Builders, Builders]:
    """(top-level builders, loop-body builders) by node type, from each type's field sets."""
    scope: dict[str, Any] = {
        "_ABSENT": _ABSENT,
        "_LLM_OP_SET": frozenset(LLM_OPS),
        "_RETRY_KEYS": frozenset(RETRY_FIELDS),
        "_NODE_ID_MATCH": NODE_ID_RE.fullmatch,
        "node_where": node_where,
        "Retry": Retry,
    }
    for typ in NODE_FIELDS:
        scope[f"_ALLOWED_{typ}"] = allowed[typ]
        scope[f"_REQUIRED_{typ}_True"] = required_top[typ] | {"id", "type"}
        scope[f"_REQUIRED_{typ}_False"] = required_body[typ] | {"id", "type"}
        scope[f"_CLASS_{typ}"] = NODE_TYPES[typ]
    # a loop in a loop body is an error: such a node always takes the checking path
    places = [(typ, top) for typ in NODE_FIELDS for top in (True, False) if top or typ != "foreach"]
    # one compile for all of them (start-up: `forgec check` is a short-lived process)
    source = "\n".join(_fast_source(typ, top) for typ, top in places)
    exec(
        compile(source, "<forgec.frontend.node_codegen: generated from NODE_FIELDS>", "exec"), scope
    )
    top: Builders = {}
    body: Builders = {}
    for typ, is_top in places:
        table = top if is_top else body
        table[typ] = scope[f"fast_{typ}_{'top' if is_top else 'body'}"]
    return top, body
