"""Every per-node table covers every node type, and nothing else (starlark-go's opcode-name
test, Lua's "ORDER OP"): adding a node type to `forgec.ir.rules` fails here until lowering,
the flow analysis, references, folding and value size each say what the node does. A table is
a plain dict with no default, so a pass cannot silently treat an unknown node as "nothing
happens here"."""

from __future__ import annotations

import importlib

import pytest

from forgec.ir.nodes import NODE_TYPES
from forgec.ir.rules import NODE_TYPE_NAMES

TABLES = [
    "forgec.backend.lower",
    "forgec.passes.flows",
    "forgec.passes.references",
    "forgec.passes.folding",
    "forgec.passes.value_size",
    "forgec.store.diff",
]
# other per-node-type tables, under their own names (how a node is drawn)
OTHER_TABLES = [
    ("forgec.render.graph", "_MERMAID_SHAPES"),
    ("forgec.render.graph", "_DOT_SHAPES"),
]


@pytest.mark.parametrize("module", TABLES)
def test_every_node_type_has_an_entry(module: str) -> None:
    table = getattr(importlib.import_module(module), "NODE_TABLE", None)
    assert table is not None, f"{module} has no NODE_TABLE"
    assert type(table) is dict, f"{module}.NODE_TABLE is a {type(table).__name__}, not a dict"
    assert list(table) == list(NODE_TYPE_NAMES), module
    assert all(entry is not None for entry in table.values())


@pytest.mark.parametrize(("module", "name"), OTHER_TABLES)
def test_every_node_type_is_drawn(module: str, name: str) -> None:
    table = getattr(importlib.import_module(module), name)
    assert list(table) == list(NODE_TYPE_NAMES), f"{module}.{name}"


def test_the_ir_classes_are_the_node_types() -> None:
    assert list(NODE_TYPES) == list(NODE_TYPE_NAMES)
