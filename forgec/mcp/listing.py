"""What the MCP server lists for a persona, and how each tool is described to a client.

Three kinds of tool (SPEC §13), each listed only when the persona's labels grant it — and the
same function decides again at call time, so a tool that is not listed is refused:
- the ten Talon host tools, under their MCP names, when a label covers the tool's label;
- every **enabled** forged tool, as `dynamic_<id>` (see `forgec.mcp.names`), when every label
  its marks need is granted (a tool that needs none is always listed; deny by default means
  that without `--persona-labels` only those are);
- `tool_create`, with the label `tool.create`.

Label grants are the rows' one rule (`forgec.ir.capabilities.grants`), the very function the
host's bridge calls: a persona label grants itself, and `channel.send:*` also grants every
`channel.send:<name>`. A host tool is listed when some call of it is granted — for a
parameterised label (`channel.send:<channelId>`), a label naming a valid parameter — and the
bridge then checks the actual call (its channel) again. `persona.send:researcher` is not a
label of any row, so it lists nothing.

Annotations are derived from marks (never taken from the manifest), SPEC §17:
- `readOnlyHint`: every power is Read (or there is none) and the tool keeps no state;
- `destructiveHint`: any operation writes, deletes, cancels or sends — a Write, Send, Network or
  Delegate power. An undo pair does not make a write harmless (a `memory.access` delete is
  permanent to the person), so compensation is not considered; a tool whose only effect is its
  own `state` is neither read-only nor destructive;
- `openWorldHint`: it may reach the network or hand work to another agent (Network or Delegate
  power, or an allowlisted host);
- `idempotentHint`: true only where every operation is — a read-only tool; false otherwise,
  since a repeated write cannot be shown to have no further effect from the manifest alone.
For a host tool whose marks depend on the operation (`memory.access`, `schedule.manage`) the
worst operation decides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from forgec.ir.marks import Marks
from forgec.mcp.names import MAX_MCP_NAME, mcp_name

TOOL_CREATE = "tool_create"
# powers whose operations change something (write, delete, cancel, send) — SPEC §17
DESTRUCTIVE_POWERS = frozenset({"Write", "Send", "Network", "Delegate"})
# powers that reach outside the device: the network, or another agent
OPEN_WORLD_POWERS = frozenset({"Network", "Delegate"})

TOOL_CREATE_INPUT: dict[str, Any] = {
    "type": "object",
    "description": "Either `manifest` (a talos.local-tool.v1 object) or `source` (.forge text).",
    "properties": {
        "manifest": {"type": "object", "description": "A talos.local-tool.v1 manifest."},
        "source": {"type": "string", "description": "A tool in the .forge text language."},
        "target": {
            "type": "string",
            "enum": ["talos", "talon"],
            "description": "Capability catalog to check against (default: talon).",
        },
        "tests": {
            "type": "array",
            "items": {"type": "object"},
            "description": "Test cases kept with the tool for its reviewer (each: name, input, "
            "host, mock, model, expect — the keys of a NAME.tests.toml case). They are "
            "checked against the tool and only ever run on an in-memory host.",
        },
    },
    "additionalProperties": False,
}
TOOL_CREATE_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "ok": {"type": "boolean"},
        "name": {"type": ["string", "null"]},
        "status": {"type": ["string", "null"], "enum": ["waiting", None]},
        "enabled": {"type": "boolean"},
        "report": {"type": "object"},
    },
    "required": ["ok", "name", "status", "enabled", "report"],
}


@attrs.frozen
class Annotations:
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool

    def to_json(self) -> dict[str, bool]:
        return {
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


@attrs.frozen
class ToolEntry:
    """One listed tool, in protocol-neutral form (the server turns it into `mcp_types.Tool`)."""

    name: str  # the MCP name
    kind: str  # "host" | "forged" | "create"
    internal: str  # memory.access, dynamic:<id>, tool.create
    title: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    annotations: Annotations
    wraps_input: bool = False  # the manifest's input is not an object: passed as {"input": ..}
    wraps_output: bool = False  # the output is returned as {"result": ..}
    meta: dict[str, Any] | None = None  # the tool's `_meta` (forged: forgec/version, forgec/hash)
    ui: dict[str, Any] | None = None  # the Program's `ui` (title, values with segments)


def label_granted(needed: str, granted: Iterable[str]) -> bool:
    """The bridge's rule (the rows' `label_grants`), so a listed tool is never refused by the
    host for its label."""
    from forgec.ir.capabilities import label_grants

    return label_grants(granted, needed)


def annotations_from_marks(marks: Marks, *, keeps_state: bool = False) -> Annotations:
    powers = set(marks.powers)
    read_only = powers <= {"Read"} and not keeps_state
    destructive = bool(powers & DESTRUCTIVE_POWERS)
    open_world = bool(powers & OPEN_WORLD_POWERS) or bool(marks.network)
    return Annotations(
        read_only=read_only, destructive=destructive, idempotent=read_only, open_world=open_world
    )


def writes_state(manifest: Mapping[str, Any]) -> bool:
    """Whether a run may persist state (a `set`/step target `state.X`)."""
    if not manifest.get("state"):
        return False
    stack = list((manifest.get("flow") or {}).get("nodes") or [])
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        target = node.get("target")
        if isinstance(target, str) and target.startswith("state."):
            return True
        stack.extend(node.get("body") or [])
    return False


def _object_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and (
        schema.get("type") == "object" or (not schema.get("type") and "properties" in schema)
    )


def forged_entry(
    manifest: Mapping[str, Any],
    marks: Marks,
    *,
    digest: str | None = None,
    ui: dict[str, Any] | None = None,
) -> ToolEntry | None:
    """The listing of an enabled forged tool (None when its MCP name would be too long).
    DIGEST is the stored version's content hash; UI the lowered Program's `ui`."""
    tool_id = str(manifest.get("id"))
    name = mcp_name(tool_id)
    if len(name) > MAX_MCP_NAME:
        return None
    in_schema = manifest.get("inputSchema")
    wraps_input = in_schema is not None and not _object_schema(in_schema)
    if in_schema is None:
        # no parameters: the model is offered exactly none
        input_schema: dict[str, Any] = {
            "type": "object",
            "properties": {},
            "additionalProperties": False,
        }
    elif wraps_input:
        input_schema = {"type": "object", "properties": {"input": in_schema}, "required": ["input"]}
    else:
        input_schema = dict(in_schema)
    out_schema = manifest.get("outputSchema")
    wraps_output = out_schema is not None and not _object_schema(out_schema)
    output_schema: dict[str, Any] | None
    if out_schema is None:
        output_schema = None
    elif wraps_output:
        output_schema = {
            "type": "object",
            "properties": {"result": out_schema},
            "required": ["result"],
        }
    else:
        output_schema = dict(out_schema)
    risk = marks.risk + (", asks before every run" if marks.always_asks else "")
    return ToolEntry(
        name=name,
        kind="forged",
        internal=f"dynamic:{tool_id}",
        title=str(manifest.get("title") or tool_id),
        description=f"{manifest.get('description') or ''}\n\n(forged tool v{manifest.get('version')}; "
        f"risk {risk}; powers: {', '.join(marks.powers) or 'none'})",
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=annotations_from_marks(marks, keeps_state=writes_state(manifest)),
        wraps_input=wraps_input,
        wraps_output=wraps_output,
        # which exact version a client is shown, so a log or a person can tell them apart
        meta={"forgec/version": manifest.get("version"), "forgec/hash": digest},
        ui=ui,
    )


def forged_visible(marks: Marks, labels: Iterable[str]) -> bool:
    granted = list(labels)
    return all(label_granted(need, granted) for need in marks.labels)


def host_entries(labels: Iterable[str]) -> list[ToolEntry]:
    """The Talon host tools the labels grant, from the `talon` catalog."""
    from forgec.catalog import get_catalog
    from forgec.catalog.base import StepMarks
    from forgec.ir.capabilities import grants

    granted = frozenset(labels)
    out: list[ToolEntry] = []
    for spec in get_catalog("talon").capabilities.values():
        if spec.mcp_name is None:
            continue
        worst: StepMarks = spec.step_marks({})
        if worst.label is None or not grants(granted, spec.name):
            continue
        marks = Marks(
            powers=(worst.power,),
            risk=worst.risk,
            always_asks=worst.risk == "R4",
            labels=(worst.label,),
            network=(),
        )
        annotations = annotations_from_marks(marks)
        if spec.needs_network:
            annotations = attrs.evolve(annotations, open_world=True)
        out.append(
            ToolEntry(
                name=spec.mcp_name,
                kind="host",
                internal=spec.name,
                title=spec.name,
                description=spec.summary,
                input_schema=dict(spec.input_schema) or {"type": "object"},
                output_schema=host_output_schema(spec.result_schema),
                annotations=annotations,
            )
        )
    return sorted(out, key=lambda e: e.name)


def host_output_schema(result: Mapping[str, Any]) -> dict[str, Any]:
    """The catalog's result shape (SPEC §13) as an MCP `outputSchema`, whose root must be an
    object: a union of object shapes (`anyOf`) gets `"type": "object"` beside it."""
    schema = dict(result)
    if not schema:
        return {"type": "object"}
    if "type" not in schema:
        schema = {"type": "object", **schema}
    return schema


def create_entry() -> ToolEntry:
    return ToolEntry(
        name=TOOL_CREATE,
        kind="create",
        internal="tool.create",
        title="Create a forged tool",
        description=(
            "Check a forged tool (a talos.local-tool.v1 manifest or .forge text) and, when it "
            "has no error, store it OFF for a person to review (the store numbers versions: "
            "yours are not used). Returns the check report and the tool's name (dynamic:<id>). "
            "Only a person can turn a tool on."
        ),
        input_schema=TOOL_CREATE_INPUT,
        output_schema=TOOL_CREATE_OUTPUT,
        annotations=Annotations(
            read_only=False, destructive=False, idempotent=False, open_world=False
        ),
    )
