"""The Program's pools, defined once: their names in JSON order, the operand kind that indexes
each, what an entry holds, and the JSON Schema of an entry.

`Program.to_json`/`from_json`, the verifier's operand ranges, the backend's interning, the JSON
Schema of the Program (`program_json_schema`) and the tables of docs/runtime.md all read this
table (a test holds the docs equal to it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from forgec.ir.rules import (
    CONDITION_OPS,
    MAX_ITEMS,
    NODE_TYPE_NAMES,
    RETRY_ATTEMPTS,
    RETRY_BACKOFF_MS,
)
from forgec.runtime.opcodes import OPS, OperandKind

FORMAT = "forgec.program.v1"


@attrs.frozen
class Pool:
    name: str  # the Program's JSON member and attribute
    operand: OperandKind | None  # the operand kind whose argument indexes it
    holds: str  # for people (docs/runtime.md)
    item: Mapping[str, Any]  # JSON Schema (draft-07) of one entry
    filled_by_lowering: bool = True  # interned by the backend (nodes are appended per node)


def _int(low: int, high: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "minimum": low}
    if high is not None:
        out["maximum"] = high
    return out


def _record(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
    }


_INDEX = _int(0)
_STR = {"type": "string"}
_STR_OR_NULL = {"type": ["string", "null"]}

POOLS: tuple[Pool, ...] = (
    Pool(
        "nodes",
        OperandKind.NODE,
        "`{id, type, pointer, line}`: the source info every instruction points at",
        _record(
            {
                "id": _STR,
                "type": {"enum": list(NODE_TYPE_NAMES)},
                "pointer": _STR,
                "line": {"type": ["integer", "null"]},
            }
        ),
        filled_by_lowering=False,
    ),
    Pool("consts", None, "literal JSON values", {}),
    Pool(
        "paths",
        OperandKind.PATH,
        'reference paths and store targets as segment lists (`["input", "items", 0]`, '
        '`["state", "count"]`)',
        {"type": "array", "minItems": 1, "items": {"type": ["string", "integer"]}},
    ),
    Pool(
        "values",
        OperandKind.VALUE,
        'value descriptors: `["const", c]`, `["ref", p]`, `["tpl", [text | ["ref", p], …]]`, '
        '`["obj", [[key, v], …]]`, `["list", [v, …]]`, `["cred", id]`',
        {"$ref": "#/definitions/value"},
    ),
    Pool(
        "calls",
        OperandKind.CALL,
        "`{capability, attempts, backoffMs, compensation}`",
        _record(
            {
                "capability": _STR,
                "attempts": _int(*RETRY_ATTEMPTS),
                "backoffMs": _int(*RETRY_BACKOFF_MS),
                "compensation": _STR_OR_NULL,
            }
        ),
    ),
    Pool(
        "models",
        OperandKind.MODEL,
        "`{op, requirements, outputSchema}`; requirements already merged (step over defaults)",
        _record(
            {
                "op": _STR,
                "requirements": {"type": "object"},
                "outputSchema": {"type": ["object", "null"]},
            }
        ),
    ),
    Pool(
        "conds",
        OperandKind.COND,
        "`{op, left, right}` (value indices; `right` null for `truthy`/`exists`)",
        _record(
            {
                "op": {"enum": list(CONDITION_OPS)},
                "left": _INDEX,
                "right": {"type": ["integer", "null"], "minimum": 0},
            }
        ),
    ),
    Pool(
        "loops",
        OperandKind.LOOP,
        "`{itemVar, indexVar, maxItems}`",
        _record({"itemVar": _STR, "indexVar": _STR_OR_NULL, "maxItems": _int(*MAX_ITEMS)}),
    ),
    Pool("fails", OperandKind.FAIL, "`{code, message}`", _record({"code": _STR, "message": _STR})),
)
LOWERED_POOLS = tuple(pool.name for pool in POOLS if pool.filled_by_lowering)

_VALUE: dict[str, Any] = {
    "oneOf": [
        {"type": "array", "items": [{"const": "const"}, _INDEX], "minItems": 2, "maxItems": 2},
        {"type": "array", "items": [{"const": "ref"}, _INDEX], "minItems": 2, "maxItems": 2},
        {"type": "array", "items": [{"const": "cred"}, _STR], "minItems": 2, "maxItems": 2},
        {
            "type": "array",
            "items": [
                {"const": "tpl"},
                {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            _STR,
                            {
                                "type": "array",
                                "items": [{"const": "ref"}, _INDEX],
                                "minItems": 2,
                                "maxItems": 2,
                            },
                        ]
                    },
                },
            ],
            "minItems": 2,
            "maxItems": 2,
        },
        {
            "type": "array",
            "items": [
                {"const": "obj"},
                {
                    "type": "array",
                    "items": {
                        "type": "array",
                        "items": [_STR, {"$ref": "#/definitions/value"}],
                        "minItems": 2,
                        "maxItems": 2,
                    },
                },
            ],
            "minItems": 2,
            "maxItems": 2,
        },
        {
            "type": "array",
            "items": [
                {"const": "list"},
                {"type": "array", "items": {"$ref": "#/definitions/value"}},
            ],
            "minItems": 2,
            "maxItems": 2,
        },
    ]
}

# the members of a Program besides its pools and code, in JSON order, with their schemas
HEADER: tuple[tuple[str, Mapping[str, Any]], ...] = (
    ("format", {"const": FORMAT}),
    ("id", _STR),
    ("version", _int(1)),
    ("title", _STR),
    ("maxTransitions", _int(1, 256)),
    ("inputSchema", {"type": ["object", "null"]}),
    ("outputSchema", {"type": ["object", "null"]}),
    ("state", {"type": ["object", "null"]}),
    ("network", {"type": "object"}),
    ("credentials", {"type": "array", "items": {"type": "object"}}),
    ("modelDefaults", {"type": "object"}),
    ("marks", {"type": "object"}),
    ("ui", {"type": ["object", "null"]}),
    ("flow", {"type": "object"}),
)


def program_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft-07) of `forgec.program.v1`: the structure `Program.from_json`
    verifies (it checks more: operand and pool indices in range, schemas in the subset)."""
    ops = sorted(int(op) for op in OPS)
    properties: dict[str, Any] = dict(HEADER)
    for pool in POOLS:
        properties[pool.name] = {"type": "array", "items": dict(pool.item)}
    properties["code"] = {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "array",
            "items": [{"enum": ops}, _INDEX, _INDEX],
            "minItems": 3,
            "maxItems": 3,
        },
    }
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": FORMAT,
        "type": "object",
        "properties": properties,
        "required": list(properties),
        # `from_json` reads the members it knows and ignores others, and so does the schema
        "definitions": {"value": _VALUE},
    }
