"""The `talos` target: the Tool Forge seed's eight capabilities (SPEC §5).

Each capability is one row: its input `Shape` (fields, required ones, size limit in bytes of
compact UTF-8 JSON), its marks (fixed for TALOS capabilities: power and risk from the seed, no
Talon label), its undo pair and the JSON Schema of its result. Shapes give both the checker and
the input schema (`forgec.catalog.fields`), so the compiler, the host's bridge check, the MCP
server and the docs all read the same table.

Import is cheap: plain data and closures, no third-party library beyond attrs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from datetime import date
from typing import Any

from forgec.catalog.base import CapabilitySpec, Catalog, MarksResolver, StepMarks
from forgec.catalog.fields import Field, Shape, array, enum, integer, string
from forgec.ir.talos import INPUT_LIMITS, TALOS_UNDO, TASK_STATUSES

KIB = 1024
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def check_date(value: str) -> list[str]:
    """An ISO 8601 calendar date, `YYYY-MM-DD` (no time, no week or ordinal forms)."""
    if not _DATE.fullmatch(value):
        return [f"`{value[:40]}` is not a date (expected YYYY-MM-DD)"]
    try:
        date.fromisoformat(value)
    except ValueError:
        return [f"`{value}` is not a valid calendar date"]
    return []


def fixed_marks(power: str, risk: str, label: str | None = None) -> MarksResolver:
    """A marks resolver that ignores the input (the capability's marks never vary)."""
    marks = StepMarks(power=power, risk=risk, label=label)

    def resolve(_literal: Mapping[str, Any]) -> StepMarks:
        return marks

    return resolve


def make_spec(
    name: str,
    summary: str,
    shape: Shape,
    marks: MarksResolver,
    *,
    result: Mapping[str, Any],
    undo: str | None = None,
    needs_network: bool = False,
    mcp_name: str | None = None,
) -> CapabilitySpec:
    """One catalog row: the checker, its run-time twin and the input schema come from `shape`."""
    return CapabilitySpec(
        name=name,
        summary=summary,
        input_limit=shape.limit,
        marks=marks,
        check_input=shape.check,
        undo=undo,
        needs_network=needs_network,
        mcp_name=mcp_name,
        input_schema={"$schema": "http://json-schema.org/draft-07/schema#", **shape.schema()},
        result_schema={"$schema": "http://json-schema.org/draft-07/schema#", **result},
        runtime_check=functools.partial(shape.check, computed=frozenset(), runtime=True),
    )


# Fields shared by several capabilities.
_TITLE = string("1–200 characters (code points)", min_length=1, max_length=200)
_ID = string("the id of an existing item", min_length=1)
_QUERY = string("case-insensitive text to look for")


def _status(description: str) -> Field:
    return enum(description, *TASK_STATUSES)


def _limit(maximum: int) -> Field:
    return integer(f"how many items at most (1–{maximum})", minimum=1, maximum=maximum)


# Result shapes (what a flow's `target` receives), SPEC §5.
_STR: Mapping[str, Any] = {"type": "string"}
_TIME: Mapping[str, Any] = {"type": "string", "description": "ISO 8601 date-time"}


def _object(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }


TASK = _object(
    {
        "id": _STR,
        "title": _STR,
        "notes": _STR,
        "due": {"type": ["string", "null"], "description": "YYYY-MM-DD or null"},
        "status": {"type": "string", "enum": list(TASK_STATUSES)},
        "createdAt": _TIME,
        "updatedAt": _TIME,
    }
)
NOTE = _object({"id": _STR, "title": _STR, "body": _STR, "createdAt": _TIME, "updatedAt": _TIME})
MEMORY = _object(
    {"id": _STR, "text": _STR, "tags": {"type": "array", "items": _STR}, "createdAt": _TIME}
)
MEMORY_HIT = _object({"id": _STR, "text": _STR, "score": {"type": "number"}})


def _items(item: Mapping[str, Any]) -> dict[str, Any]:
    return _object({"items": {"type": "array", "items": dict(item)}})


def _plus(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    return _object({**base["properties"], **extra})


SPECS: tuple[CapabilitySpec, ...] = (
    make_spec(
        "tasks.list",
        "Read local TALOS tasks (newest first).",
        Shape(
            {
                "status": _status("only tasks with this status"),
                "query": _QUERY,
                "limit": _limit(100),
            },
            limit=INPUT_LIMITS["tasks.list"],
        ),
        fixed_marks("Read", "R1"),
        result=_items(TASK),
    ),
    make_spec(
        "tasks.create",
        "Create a local TALOS task.",
        Shape(
            {
                "title": _TITLE,
                "notes": string("free text"),
                "due": string(
                    "due date, YYYY-MM-DD",
                    validate=check_date,
                    nullable=True,
                    format="date",
                    pattern=r"^\d{4}-\d{2}-\d{2}$",
                ),
                "status": _status("initial status (default open)"),
            },
            limit=INPUT_LIMITS["tasks.create"],
            required=("title",),
        ),
        fixed_marks("Write", "R2"),
        result=TASK,
        undo=TALOS_UNDO["tasks.create"],
    ),
    make_spec(
        "tasks.setStatus",
        "Change a local task's status.",
        Shape(
            {"id": _ID, "status": _status("the new status")},
            limit=INPUT_LIMITS["tasks.setStatus"],
            required=("id", "status"),
        ),
        fixed_marks("Write", "R2"),
        result=_plus(TASK, {"previousStatus": {"type": "string", "enum": list(TASK_STATUSES)}}),
        undo=TALOS_UNDO["tasks.setStatus"],
    ),
    make_spec(
        "notes.list",
        "Read local TALOS notes.",
        Shape({"query": _QUERY, "limit": _limit(100)}, limit=INPUT_LIMITS["notes.list"]),
        fixed_marks("Read", "R1"),
        result=_items(NOTE),
    ),
    make_spec(
        "notes.create",
        "Create a local TALOS note.",
        Shape(
            {"title": _TITLE, "body": string("the note's text")},
            limit=INPUT_LIMITS["notes.create"],
            required=("title", "body"),
        ),
        fixed_marks("Write", "R2"),
        result=NOTE,
    ),
    make_spec(
        "notes.update",
        "Update a local TALOS note.",
        Shape(
            {"id": _ID, "title": _TITLE, "body": string("the note's new text")},
            limit=INPUT_LIMITS["notes.update"],
            required=("id",),
        ),
        fixed_marks("Write", "R2"),
        result=_plus(NOTE, {"previous": _object({"title": _STR, "body": _STR})}),
        undo=TALOS_UNDO["notes.update"],
    ),
    make_spec(
        "memory.search",
        "Search active local TALOS memories (full-text ranked).",
        Shape(
            {"query": string("what to look for", min_length=1), "limit": _limit(50)},
            limit=INPUT_LIMITS["memory.search"],
            required=("query",),
        ),
        fixed_marks("Read", "R2"),
        result=_items(MEMORY_HIT),
    ),
    make_spec(
        "memory.create",
        "Create a durable TALOS memory.",
        Shape(
            {
                "text": string("what to remember", min_length=1),
                "tags": array("labels for the memory", string("a tag")),
            },
            limit=INPUT_LIMITS["memory.create"],
            required=("text",),
        ),
        fixed_marks("Write", "R3"),
        result=MEMORY,
    ),
)

CATALOG = Catalog(name="talos", capabilities={spec.name: spec for spec in SPECS})
