"""The reference tables of the docs, generated from the tables the code runs on: the opcode
table and the Program's pools (docs/runtime.md), the capability tables (docs/catalog.md).

The docs hold each between `<!-- generated: NAME -->` and `<!-- end generated -->`;
`tests/test_generated_docs.py` fails when a doc's copy differs from `generate(NAME)` and
rewrites them when `FORGEC_WRITE_DOCS=1` is set.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from forgec.ir.capabilities import SUBAGENT_SHAPES, Capability, rows_of
from forgec.ir.shapes import Field, Shape
from forgec.runtime.opcodes import OPS
from forgec.runtime.pools import POOLS


def opcode_table() -> str:
    lines = ["| # | name | operand | stack | jumps | does |", "|---|---|---|---|---|---|"]
    for op, info in sorted(OPS.items()):
        before = info.pops or "–"
        after = "end" if not info.falls_through and not info.jumps else (info.pushes or "–")
        lines.append(
            f"| {int(op)} | `{info.name}` | {info.operand.value} | {before} → {after} | "
            f"{'yes' if info.jumps else ''} | {info.does} |"
        )
    return "\n".join(lines)


def pool_table() -> str:
    lines = ["| pool | indexed by | holds |", "|---|---|---|"]
    for pool in POOLS:
        operand = pool.operand.value if pool.operand is not None else "a `const` value"
        lines.append(f"| `{pool.name}` | {operand} | {pool.holds.replace('|', chr(92) + '|')} |")
    return "\n".join(lines)


def _marks(row: Capability, attr: str) -> str:
    worst = getattr(row.marks, attr)
    if not row.op_marks:
        return worst
    better: dict[str, list[str]] = {}
    for op, marks in row.op_marks.items():
        better.setdefault(getattr(marks, attr), []).append(f"`{op}`")
    return worst + "".join(f" ({'/'.join(ops)}: {value})" for value, ops in better.items())


def _label(row: Capability) -> str:
    if row.label is None:
        return "—"
    if row.label_param is not None:
        return f"`{row.label_family}:<{row.label_param}>` or `{row.label}`"
    return f"`{row.label}`"


def capability_table(target: str) -> str:
    host = target != "talos"
    head = ["capability", *(["MCP name"] if host else []), "label", "power", "risk"]
    head += ["input limit", "undo", "flow"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows_of(target):
        if host and "talos" in row.targets:
            continue
        flow = [f"source: {row.source}"] if row.source else []
        if row.sink:
            ops = f" ({'/'.join(sorted(row.writing))})" if row.writing is not None else ""
            flow.append(f"sink: {row.sink}{ops}")
        if row.reads:
            flow.append(f"reads `{row.reads}`")
        if row.stores:
            flow.append("stores " + ", ".join(f"`{t}`" for t in row.stores))
        if row.outside_text:
            decided = ", ".join(f"`{f}`" for f in row.host_fields)
            flow.append("answers are outside text" + (f" (but {decided})" if decided else ""))
        if row.destinations:
            flow.append("destination " + ", ".join(f"`{d}`" for d in row.destinations))
        cells = [f"`{row.name}`", *([f"`{row.mcp_name}`"] if host else [])]
        cells += [_label(row), _marks(row, "power"), _marks(row, "risk")]
        cells += [str(row.input_limit), f"`{row.undo}`" if row.undo else "—"]
        cells.append("; ".join(flow) or "—")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _num(n: float) -> str:
    return str(int(n)) if float(n).is_integer() else str(n)


def _field_text(field: Field) -> str:
    if field.enum is not None:
        return "one of " + ", ".join(f"`{v}`" for v in field.enum)
    kind = {"array": "list", "any": "any JSON"}.get(field.kind, field.kind)
    extra: list[str] = []
    if field.min_length is not None and field.max_length is not None:
        extra.append(f"{field.min_length}–{field.max_length} characters")
    elif field.max_length is not None:
        extra.append(f"at most {field.max_length} characters")
    elif field.min_length:
        extra.append("non-empty")
    if field.minimum is not None and field.maximum is not None:
        extra.append(f"{_num(field.minimum)}–{_num(field.maximum)}")
    elif field.minimum is not None:
        extra.append(f"≥ {_num(field.minimum)}")
    if field.host_cap:
        extra.append("a computed value above is lowered to the cap")
    if field.items is not None:
        kind = f"list of {_field_text(field.items)}"
    if field.kind == "object" and field.values is not None:
        kind = f"object of {_field_text(field.values)} values"
    if field.max_items is not None:
        extra.append(f"at most {field.max_items} items")
    if field.credential_values:
        extra.append('values may be `{"$credential": id}`')
    if isinstance(field.validate, str):
        extra.append(f"the {field.validate} rule")
    if field.nullable:
        kind += " or null"
    return kind + (f" ({', '.join(extra)})" if extra else "")


def _shape_text(shape: Shape) -> str:
    if not shape.fields:
        return "no fields"
    parts = []
    for name, field in shape.fields.items():
        shown = f"**`{name}`**" if name in shape.required else f"`{name}`"
        about = f": {field.description}" if field.description else ""
        parts.append(f"{shown} {_field_text(field)}{about}")
    rules = [
        f"{' or '.join(f'`{n}`' for n in (rule.field, *rule.alternatives))} when `{rule.selector}` "
        f"is {'/'.join(f'`{v}`' for v in rule.values)}"
        for rule in shape.required_when
    ]
    rules += [f"`{a}` xor `{b}`" for a, b in shape.exclusive]
    rules += [" or ".join(f"`{n}`" for n in group) for group in shape.one_of]
    rules += [f"`{b}` with `{a}`" for a, b in shape.needs]
    text = "; ".join(parts)
    text += "".join(
        f"; `{rule.field}` has the shape of the {rule.what} `{rule.selector}` names, when it is "
        f"one of the built-in {rule.what}s"
        for rule in shape.nested
    )
    return text + (f". Required: {'; '.join(rules)}" if rules else "")


def input_table(target: str) -> str:
    host = target != "talos"
    lines = ["| capability | input |", "|---|---|"]
    for row in rows_of(target):
        if host and "talos" in row.targets:
            continue
        lines.append(f"| `{row.name}` | {_shape_text(row.shape).replace('|', chr(92) + '|')} |")
    return "\n".join(lines)


def subagent_table() -> str:
    """The built-in sub-agents' own inputs (`subagent.invoke`'s `input`), from their shapes."""
    lines = ["| sub-agent | input |", "|---|---|"]
    for name, shape in SUBAGENT_SHAPES.items():
        lines.append(f"| `{name}` | {_shape_text(shape).replace('|', chr(92) + '|')} |")
    return "\n".join(lines)


GENERATORS: dict[str, Callable[[], str]] = {
    "opcodes": opcode_table,
    "pools": pool_table,
    "talos-capabilities": lambda: capability_table("talos"),
    "talos-inputs": lambda: input_table("talos"),
    "talon-capabilities": lambda: capability_table("talon"),
    "talon-inputs": lambda: input_table("talon"),
    "subagent-inputs": subagent_table,
}

_BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[a-z-]+) -->\n)(?P<body>.*?)(\n<!-- end generated -->)", re.S
)


def generated_blocks(text: str) -> dict[str, str]:
    """The generated tables a doc holds, by name."""
    return {m.group("name"): m.group("body") for m in _BLOCK.finditer(text)}


def regenerate(text: str) -> str:
    """The doc with every generated block written anew."""

    def fill(m: Any) -> str:
        return m.group(1) + GENERATORS[m.group("name")]() + m.group(4)

    return _BLOCK.sub(fill, text)
