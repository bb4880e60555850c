"""The capability rows (`forgec.ir.capabilities`) are the one place each fact is spelled: every
consumer agrees with them because it reads them. These tests hold the consumers to that, and
search for a row whose facts disagree with each other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import forgec.catalog  # noqa: F401  (the named rules)
from forgec.catalog import get_catalog
from forgec.host import HostOptions, open_host
from forgec.host.config import HostConfig
from forgec.ir import capabilities as rows
from forgec.runtime import sources_and_sinks
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="t", tool_version=1, node_id="n")
ALL_LABELS = (*{row.label for row in rows.ROWS if row.label}, "channel.send:*")


def test_every_row_of_the_host_has_one_registered_handler() -> None:
    from forgec.host import bridge  # noqa: F401  (imports the tool modules, which register)
    from forgec.host.handlers import HANDLERS

    assert set(HANDLERS) == {row.name for row in rows.rows_of("talon")}


def test_every_built_in_sub_agent_has_its_input_shape_and_no_other() -> None:
    # the shapes beside the rows are what `check` and the bridge hold a sub-agent's input to:
    # a built-in without one would take any input unchecked, a shape without one is dead
    from forgec.host.delegation import builtin_subagents

    assert list(builtin_subagents()) == list(rows.SUBAGENT_SHAPES)


def test_targets_are_the_rows() -> None:
    for target in ("talos", "talon"):
        catalog = get_catalog(target)
        assert list(catalog.capabilities) == [row.name for row in rows.rows_of(target)]
        for name, spec in catalog.capabilities.items():
            row = rows.BY_NAME[name]
            assert spec is row  # the row is the only capability object
            assert (spec.input_limit, spec.undo, spec.mcp_name) == (
                row.input_limit,
                row.undo,
                row.mcp_name,
            )


@pytest.mark.parametrize("row", rows.ROWS, ids=lambda r: r.name)
def test_a_row_agrees_with_itself(row: rows.Capability) -> None:
    assert row.marks.power in rows.POWERS and row.marks.risk in rows.RISKS
    assert row.source in (None, *rows.SOURCES) and row.sink in (None, *rows.SINKS)
    if row.undo is not None:
        assert row.undo in rows.BY_NAME
    if row.selector is not None:
        assert row.selector in row.shape.fields and row.operations()
        assert set(row.op_marks) <= set(row.operations())
        assert row.writing is None or row.writing <= set(row.operations())
    else:
        assert not row.op_marks and row.writing is None
    if row.label_param is not None:
        assert row.label is not None and row.label.endswith(":*")
        assert row.label_param in row.shape.required
    for field, cap in row.caps.items():
        assert row.shape.fields[field].maximum == cap
    # TALOS needs no label, every Talon host tool one; only host tools have MCP names
    assert (row.label is None) == ("talos" in row.targets) == (row.mcp_name is None)


def test_the_flow_tables_are_the_rows() -> None:
    for row in rows.ROWS:
        source = sources_and_sinks.source_label(row.name, "h.example")
        expected = {None: None, "private": f"private:{row.name}", "external": "external:h.example"}
        assert source == expected[row.source]
        for op in [None, *row.operations()]:
            literal = {row.selector: op} if row.selector and op else {}
            sink = sources_and_sinks.call_sink(row.name, {**literal, "url": "https://h.example/"})
            if row.sink is None or (row.writing is not None and op not in row.writing):
                assert sink is None or row.writing is None, (row.name, op, sink)
            else:
                assert sink is not None and sources_and_sinks.sink_kind(sink) == row.sink


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Any:
    cfg = HostConfig(persona="alice", thread="t1")
    db = Path(tmp_path_factory.mktemp("rows")) / "h.db"
    with open_host(HostOptions(db=db, config=cfg, persona_labels=ALL_LABELS)) as h:
        yield h


# every row's smallest valid input (a new row fails the test below until it has one)
MINIMAL: dict[str, dict[str, Any]] = {
    "tasks.list": {},
    "tasks.create": {"title": "t"},
    "tasks.setStatus": {"id": "t1", "status": "done"},
    "notes.list": {},
    "notes.create": {"title": "t", "body": ""},
    "notes.update": {"id": "n1"},
    "memory.search": {"query": "q"},
    "memory.create": {"text": "x"},
    "schedule.manage": {"action": "list"},
    "channel.send": {"channelId": "c", "content": "x"},
    "memory.access": {"operation": "write", "key": "k", "value": ""},
    "net.http": {"method": "POST", "url": "https://h.example/", "body": ""},
    "db.query": {"sql": "SELECT 1", "params": []},
    "subagent.invoke": {"name": "memory-retriever", "input": {"query": "q"}},
    "subagent.background": {"action": "profiles"},
    "persona.send": {"target_persona": "p", "message": "x"},
    "persona.task_status": {"task_id": "t1"},
    "persona.list": {},
}


def _room(row: rows.Capability) -> str | None:
    """A field of the row's shape that takes content of any length up to the row's limit
    (a free string, a value of any kind, a list), or None: no valid input reaches the limit."""
    for name, field in row.shape.fields.items():
        if field.enum is not None or field.validate is not None:
            continue
        if field.kind == "string" and (field.max_length or row.input_limit) >= row.input_limit:
            return name
        if field.kind in ("any", "array"):
            return name
    return None


def _padded(row: rows.Capability, size: int, key: str) -> dict[str, Any]:
    """The row's smallest input with `key` padded to exactly `size` bytes in all."""
    out = dict(MINIMAL[row.name])
    array = row.shape.fields[key].kind == "array"
    out[key] = [""] if array else ""
    pad = "x" * (size - len(orjson.dumps(out)))
    out[key] = [pad] if array else pad
    assert len(orjson.dumps(out)) == size
    return out


@pytest.mark.parametrize("row", rows.ROWS, ids=lambda r: r.name)
def test_the_bridge_limit_is_the_rows_limit(host: Any, row: rows.Capability) -> None:
    assert row.name in MINIMAL, "give the new row its smallest valid input in MINIMAL"
    host.check_call(row.name, MINIMAL[row.name])  # the smallest input passes
    key = _room(row)
    if key is None:
        # no valid input reaches the limit; one over it is still refused for its size
        over = {**MINIMAL[row.name], "padding": "x" * row.input_limit}
    else:
        host.check_call(row.name, _padded(row, row.input_limit, key))  # exactly at the limit
        over = _padded(row, row.input_limit + 1, key)
    with pytest.raises(HostError) as info:
        host.check_call(row.name, over)
    assert f"{row.input_limit}" in info.value.message


def test_every_host_tool_has_its_instruction_file_and_no_other() -> None:
    folder = Path(__file__).resolve().parent.parent / "forgec" / "templates" / "tool-instructions"
    names = {p.stem for p in folder.glob("*.md")}
    assert names == {row.name for row in rows.ROWS if row.mcp_name is not None}
