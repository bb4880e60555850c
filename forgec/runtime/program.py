"""`Program` (`forgec.program.v1`): what the backend produces and the VM runs.

Plain JSON-able data, so an embedder can store a lowered tool and run it later with
`forgec.runtime` alone. It carries the linear code and its pools, and what the VM needs from
the manifest (id, version, schemas, state, bounds, network, credentials, model defaults, marks,
ui), never the manifest's prose or the compiler's facts.

Layout (every index is 0-based into the named list):

- `code`: instructions `[op, arg, node]` (see `forgec.runtime.opcodes`).
- `consts`: literal JSON values. `paths`: reference paths and store targets as segment lists
  (`["input", "items", 0]`, `["state", "count"]`).
- `values`: pre-compiled value descriptors, nested: `["const", c]`, `["ref", p]`,
  `["tpl", [part, ..]]` (a part is literal text or `["ref", p]`), `["obj", [[key, v], ..]]`,
  `["list", [v, ..]]`, `["cred", id]`.
- `calls`: `{"capability", "attempts", "backoffMs", "compensation"}`; `models`:
  `{"op", "requirements", "outputSchema"}` (requirements already merged with the defaults);
  `conds`: `{"op", "left", "right"}` (value indices, `right` null for truthy/exists);
  `loops`: `{"itemVar", "indexVar", "maxItems"}`; `fails`: `{"code", "message"}`;
  `nodes`: `{"id", "type", "pointer", "line"}`.

`Program.from_json` verifies the structure (types, operand indices and jump targets in range)
and raises `ProgramError` on anything else: a Program read from disk is input like any other.
"""

from __future__ import annotations

from typing import Any

import attrs

from forgec.ir.rules import (
    CONDITION_OPS,
    FORBIDDEN,
    MAX_ITEMS,
    MAX_SCHEMA_DEPTH,
    NETWORK_MODES,
    RETRY_ATTEMPTS,
    RETRY_BACKOFF_MS,
    SCHEMA_KEYWORDS,
    STATE_MAX_BYTES,
    UNARY_OPS,
)
from forgec.ir.rules import MAX_TRANSITIONS as _TRANSITIONS
from forgec.runtime.opcodes import OPS, Op, OperandKind
from forgec.runtime.pools import FORMAT, POOLS

# A Program with schema keywords outside the manifest's subset (SPEC §2.2) is refused, so a
# hand-made Program cannot smuggle anything unexpected into the schema validator.
_SCHEMA_KEYWORDS = frozenset(SCHEMA_KEYWORDS)
_CONDITION_OPS = frozenset(CONDITION_OPS)

# the hard bound on transitions of one run (SPEC: maxTransitions is at most 256)
MAX_TRANSITIONS = _TRANSITIONS[1]


class ProgramError(ValueError):
    """A Program (usually read from JSON) is not a well-formed `forgec.program.v1`."""


@attrs.define(eq=False)
class Program:
    id: str
    version: int
    title: str
    max_transitions: int
    code: list[list[int]]
    nodes: list[dict[str, Any]]
    consts: list[Any] = attrs.field(factory=list)
    paths: list[list[str | int]] = attrs.field(factory=list)
    values: list[Any] = attrs.field(factory=list)
    calls: list[dict[str, Any]] = attrs.field(factory=list)
    models: list[dict[str, Any]] = attrs.field(factory=list)
    conds: list[dict[str, Any]] = attrs.field(factory=list)
    loops: list[dict[str, Any]] = attrs.field(factory=list)
    fails: list[dict[str, Any]] = attrs.field(factory=list)
    input_schema: dict[str, Any] | None = None
    output_schema: dict[str, Any] | None = None
    state: dict[str, Any] | None = None  # {"fields": {..}, "maxBytes": n}
    network: dict[str, Any] = attrs.field(factory=lambda: {"mode": FORBIDDEN, "hosts": []})
    credentials: list[dict[str, Any]] = attrs.field(factory=list)
    model_defaults: dict[str, Any] = attrs.field(factory=dict)
    marks: dict[str, Any] = attrs.field(factory=dict)
    ui: dict[str, Any] | None = None  # {"title", "values": [{"label", "path", "segments"}]}
    # SPEC §15, what the VM needs to track control labels like the flow pass does:
    # {"joins": {if id: join node id | null}, "exitLoops": [loop ids], "mayFail": [node ids]}.
    # Absent (a hand-made or older Program): every `if` decides the rest of the run (or of
    # the iteration) and every node may fail.
    flow: dict[str, Any] = attrs.field(factory=lambda: {"joins": {}, "exitLoops": []})
    # What the VM derives once per Program (compiled values, schema validators); never JSON.
    cache: dict[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def name(self) -> str:
        return f"dynamic:{self.id}"

    @property
    def transition_limit(self) -> int:
        """What a run may spend: `maxTransitions`, never above the hard bound."""
        return min(self.max_transitions, MAX_TRANSITIONS)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "id": self.id,
            "version": self.version,
            "title": self.title,
            "maxTransitions": self.max_transitions,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "state": self.state,
            "network": self.network,
            "credentials": self.credentials,
            "modelDefaults": self.model_defaults,
            "marks": self.marks,
            "ui": self.ui,
            "flow": self.flow,
            **{pool.name: getattr(self, pool.name) for pool in POOLS},
            "code": self.code,
        }

    def to_bytes(self, *, indent: bool = False) -> bytes:
        from forgec.runtime.jsontext import dumps

        return dumps(self.to_json(), indent=indent)

    @classmethod
    def from_json(cls, data: Any) -> Program:
        """Build and verify a Program from its JSON form; `ProgramError` when it is not one."""
        if isinstance(data, (str, bytes)):
            import orjson

            try:
                data = orjson.loads(data)
            except orjson.JSONDecodeError:
                # orjson's wording changes between releases; the user needs only the fact
                raise ProgramError("not valid JSON text") from None
        if not isinstance(data, dict):
            raise ProgramError("a Program is a JSON object")
        if data.get("format") != FORMAT:
            raise ProgramError(f"format must be {FORMAT!r}, got {data.get('format')!r}")
        try:
            program = cls(
                id=_typed(data, "id", str),
                version=_typed(data, "version", int),
                title=_typed(data, "title", str),
                max_transitions=_typed(data, "maxTransitions", int),
                code=_typed(data, "code", list),
                **{pool.name: _typed(data, pool.name, list) for pool in POOLS},
                input_schema=_typed(data, "inputSchema", dict, optional=True),
                output_schema=_typed(data, "outputSchema", dict, optional=True),
                state=_typed(data, "state", dict, optional=True),
                network=_typed(data, "network", dict),
                credentials=_typed(data, "credentials", list),
                model_defaults=_typed(data, "modelDefaults", dict),
                marks=_typed(data, "marks", dict),
                ui=_typed(data, "ui", dict, optional=True),
                flow=_flow_info(data.get("flow")),
            )
        except KeyError as exc:
            raise ProgramError(f"missing field {exc.args[0]!r}") from None
        verify(program)
        return program


def _path(value: Any) -> bool:
    """A read path as the Program writes it: a name, then names and indexes."""
    return (
        isinstance(value, list)
        and bool(value)
        and isinstance(value[0], str)
        and all(type(x) is str or (type(x) is int and x >= 0) for x in value)
    )


def _flow_info(value: Any) -> dict[str, Any]:
    """The optional `flow` member, checked: the VM trusts its ids only as lookup keys."""
    if value is None:
        return {"joins": {}, "exitLoops": []}
    if not isinstance(value, dict):
        raise ProgramError("field 'flow' must be a dict")
    joins = value.get("joins", {})
    loops = value.get("exitLoops", [])
    if not isinstance(joins, dict) or not all(
        isinstance(k, str) and (v is None or isinstance(v, str)) for k, v in joins.items()
    ):
        raise ProgramError("flow.joins must map node ids to a node id or null")
    if not isinstance(loops, list) or not all(isinstance(x, str) for x in loops):
        raise ProgramError("flow.exitLoops must be a list of node ids")
    out = {"joins": dict(joins), "exitLoops": list(loops)}
    fails = value.get("mayFail")
    if fails is not None:  # absent: every node may fail (the VM's sound default)
        if not isinstance(fails, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(_path(p) for p in v)
            for k, v in fails.items()
        ):
            raise ProgramError("flow.mayFail must map node ids to lists of paths")
        out["mayFail"] = {k: [list(p) for p in v] for k, v in fails.items()}
    return out


def _typed(data: dict[str, Any], key: str, kind: type, *, optional: bool = False) -> Any:
    value = data[key]
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ProgramError(f"field {key!r} must be a {kind.__name__}")
    return value


def verify(program: Program) -> None:
    """Check what the VM relies on: every operand, pool entry and jump target is in range.

    The backend's richer invariants (forward jumps, stack depth, termination) are checked
    right after lowering; this is the runtime's own guard against a hand-edited Program.
    """
    p = program
    if not _TRANSITIONS[0] <= p.max_transitions <= MAX_TRANSITIONS:
        raise ProgramError(f"maxTransitions must be 1..{MAX_TRANSITIONS}")
    if not p.code:
        raise ProgramError("empty code")
    for i, node in enumerate(p.nodes):
        if not isinstance(node, dict) or not isinstance(node.get("id"), str):
            raise ProgramError(f"nodes[{i}] must be an object with a string id")
    for i, path in enumerate(p.paths):
        if (
            not isinstance(path, list)
            or not path
            or not isinstance(path[0], str)
            or not all(_is_segment(s) for s in path)
        ):
            raise ProgramError(f"paths[{i}] must be a non-empty list of names and indices")
    for i, value in enumerate(p.values):
        _verify_value(p, value, f"values[{i}]", 0)
    for i, call in enumerate(p.calls):
        if (
            not isinstance(call, dict)
            or not isinstance(call.get("capability"), str)
            or not _int_in(call.get("attempts"), *RETRY_ATTEMPTS)
            or not _int_in(call.get("backoffMs"), *RETRY_BACKOFF_MS)
            or not isinstance(call.get("compensation"), (str, type(None)))
        ):
            raise ProgramError(f"calls[{i}] is malformed")
    for i, model in enumerate(p.models):
        if (
            not isinstance(model, dict)
            or not isinstance(model.get("op"), str)
            or not isinstance(model.get("requirements"), dict)
        ):
            raise ProgramError(f"models[{i}] is malformed")
        if model.get("outputSchema") is not None:
            verify_schema(model["outputSchema"], f"models[{i}].outputSchema")
    for i, cond in enumerate(p.conds):
        if not isinstance(cond, dict) or cond.get("op") not in _CONDITION_OPS:
            raise ProgramError(f"conds[{i}] is malformed")
        if not _int_in(cond.get("left"), 0, len(p.values) - 1):
            raise ProgramError(f"conds[{i}].left is out of range")
        right = cond.get("right")
        if (right is None) != (cond["op"] in UNARY_OPS):
            raise ProgramError(f"conds[{i}].right does not fit op {cond['op']!r}")
        if right is not None and not _int_in(right, 0, len(p.values) - 1):
            raise ProgramError(f"conds[{i}].right is out of range")
    for i, loop in enumerate(p.loops):
        if (
            not isinstance(loop, dict)
            or not isinstance(loop.get("itemVar"), str)
            or not isinstance(loop.get("indexVar"), (str, type(None)))
            or not _int_in(loop.get("maxItems"), *MAX_ITEMS)
        ):
            raise ProgramError(f"loops[{i}] is malformed")
    for i, fail in enumerate(p.fails):
        if not (
            isinstance(fail, dict)
            and isinstance(fail.get("code"), str)
            and isinstance(fail.get("message"), str)
        ):
            raise ProgramError(f"fails[{i}] is malformed")
    _verify_outside(p)
    for name, schema in (("inputSchema", p.input_schema), ("outputSchema", p.output_schema)):
        if schema is not None:
            verify_schema(schema, name)
    if p.state is not None:
        if not isinstance(p.state.get("fields"), dict) or not _int_in(
            p.state.get("maxBytes"), *STATE_MAX_BYTES
        ):
            raise ProgramError(
                f"state must be {{fields, maxBytes {STATE_MAX_BYTES[0]}..{STATE_MAX_BYTES[1]}}}"
            )
        for field, schema in p.state["fields"].items():
            verify_schema(schema, f"state.fields.{field}")
    sizes = {
        **{pool.operand: len(getattr(p, pool.name)) for pool in POOLS if pool.operand},
        OperandKind.LABEL: len(p.code),
    }
    for pc, ins in enumerate(p.code):
        if not (isinstance(ins, list) and len(ins) == 3 and all(type(x) is int for x in ins)):
            raise ProgramError(f"code[{pc}] must be [op, arg, node] integers")
        op_num, arg, node_index = ins
        if op_num not in Op._value2member_map_:
            raise ProgramError(f"code[{pc}] has unknown op {op_num}")
        kind = OPS[Op(op_num)].operand
        if kind is not OperandKind.NONE and not 0 <= arg < sizes[kind]:
            raise ProgramError(f"code[{pc}] operand {arg} is out of range for {kind.value}")
        if not 0 <= node_index < len(p.nodes):
            raise ProgramError(f"code[{pc}] node {node_index} is out of range")
        if (
            kind is OperandKind.LABEL
            and arg <= pc
            and (Op(op_num) is not Op.JUMP or p.code[arg][0] != Op.FOREACH_NEXT)
        ):
            raise ProgramError(f"code[{pc}] jumps backwards, and not to a loop head")
    stack_depths(p.code)


def stack_depths(code: list[list[int]]) -> list[int]:
    """The stack depth before each instruction; `ProgramError` when it is not consistent.

    A worklist over the control-flow edges (fall-through and jump) carrying the abstract
    stack (the kind of each slot): every instruction must be reached with one stack whatever
    the path, pop only what it expects, and never fall off the end of the code. Unreached
    instructions get -1. Used by `verify` and by the backend's `stack_depth_consistent`.
    """
    shapes: list[str | None] = [None] * len(code)
    shapes[0] = ""
    work = [0]
    while work:
        pc = work.pop()
        op = Op(code[pc][0])
        info = OPS[op]
        shape = shapes[pc]
        assert shape is not None
        popped = info.pops
        if popped and not shape.endswith(popped):
            have = shape[-1:] or "nothing"
            raise ProgramError(
                f"code[{pc}] ({info.name}) pops {_KIND[popped]} but the stack has {_KIND.get(have, have)}"
            )
        below = shape[: len(shape) - len(popped)]
        edges: list[tuple[int, str]] = []
        if info.falls_through:
            if pc + 1 >= len(code):
                raise ProgramError(f"code[{pc}] ({info.name}) falls off the end of the code")
            edges.append((pc + 1, below + info.pushes))
        if info.jump_effect is not None:
            edges.append((code[pc][1], below))
        for target, after in edges:
            if shapes[target] is None:
                shapes[target] = after
                work.append(target)
            elif shapes[target] != after:
                raise ProgramError(
                    f"code[{target}] is reached with stack depth {len(shapes[target] or '')} "
                    f"and {len(after)} (or different kinds of values)"
                )
    return [len(s) if s is not None else -1 for s in shapes]


_KIND = {"V": "a value", "B": "a condition result", "I": "a loop iterator", "nothing": "nothing"}


def _verify_outside(p: Program) -> None:
    """What the VM hands the host and the consent callback: network, credentials, marks, ui."""
    net = p.network
    if net.get("mode") not in NETWORK_MODES or not _strings(net.get("hosts")):
        raise ProgramError("network must be {mode: forbidden|allowlist, hosts: [str]}")
    for i, cred in enumerate(p.credentials):
        if not (
            isinstance(cred, dict)
            and isinstance(cred.get("id"), str)
            and isinstance(cred.get("purpose"), (str, type(None)))
            and _strings(cred.get("hosts"))
        ):
            raise ProgramError(f"credentials[{i}] must be {{id, purpose, hosts: [str]}}")
    marks = p.marks
    if (
        not isinstance(marks.get("risk", "R0"), str)
        or not isinstance(marks.get("alwaysAsks", False), bool)
        or not _strings(marks.get("powers", []))
    ):
        raise ProgramError("marks must hold risk (str), alwaysAsks (bool), powers ([str])")
    if p.ui is not None:
        entries = p.ui.get("values")
        if not isinstance(p.ui.get("title"), str) or not isinstance(entries, list):
            raise ProgramError("ui must be {title, values: [..]}")
        for i, entry in enumerate(entries):
            segments = entry.get("segments") if isinstance(entry, dict) else None
            if not isinstance(entry, dict) or not (
                segments is None
                or (isinstance(segments, list) and all(_is_segment(s) for s in segments))
            ):
                raise ProgramError(f"ui.values[{i}] is malformed")
    for i, node in enumerate(p.nodes):
        line = node.get("line")
        if line is not None and type(line) is not int:
            raise ProgramError(f"nodes[{i}].line must be an integer or null")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _verify_value(p: Program, value: Any, where: str, depth: int) -> None:
    if depth > 64 or not isinstance(value, list) or len(value) != 2:
        raise ProgramError(f"{where} is not a value descriptor")
    kind, arg = value
    if kind == "const":
        ok = _int_in(arg, 0, len(p.consts) - 1)
    elif kind == "ref":
        ok = _int_in(arg, 0, len(p.paths) - 1)
    elif kind == "cred":
        ok = isinstance(arg, str)
    elif kind == "tpl":
        ok = isinstance(arg, list) and all(
            isinstance(part, str)
            or (
                isinstance(part, list)
                and len(part) == 2
                and part[0] == "ref"
                and _int_in(part[1], 0, len(p.paths) - 1)
            )
            for part in arg
        )
    elif kind == "obj":
        ok = isinstance(arg, list)
        for j, member in enumerate(arg if ok else []):
            if not (isinstance(member, list) and len(member) == 2 and isinstance(member[0], str)):
                raise ProgramError(f"{where} member {j} is malformed")
            _verify_value(p, member[1], f"{where}.{member[0]}", depth + 1)
    elif kind == "list":
        ok = isinstance(arg, list)
        for j, item in enumerate(arg if ok else []):
            _verify_value(p, item, f"{where}[{j}]", depth + 1)
    else:
        ok = False
    if not ok:
        raise ProgramError(f"{where} is not a value descriptor")


def verify_schema(schema: Any, where: str, depth: int = 0) -> None:
    """Only the SPEC §2.2 subset, at most 8 levels deep (booleans allowed as sub-schemas)."""
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict) or depth >= MAX_SCHEMA_DEPTH:
        raise ProgramError(f"{where} is not a schema of the supported subset")
    for key, sub in schema.items():
        if key not in _SCHEMA_KEYWORDS:
            raise ProgramError(f"{where} uses unsupported keyword {key!r}")
        if key == "properties":
            if not isinstance(sub, dict):
                raise ProgramError(f"{where}.properties must be an object")
            for name, prop in sub.items():
                verify_schema(prop, f"{where}.properties.{name}", depth + 1)
        elif key == "items":
            verify_schema(sub, f"{where}.items", depth + 1)


def _is_segment(s: Any) -> bool:
    return isinstance(s, str) or (type(s) is int and s >= 0)


def _int_in(value: Any, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high
