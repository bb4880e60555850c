"""The JSON Schema (draft-07) of `talos.local-tool.v1`, for editors and other tools.

`forgec schema` prints it. Draft-07 because it is what editors (VS Code, JetBrains) and
validators (`jsonschema`, `fastjsonschema`) support best; it uses `if`/`then` to pick a node's
fields by its `type`, `additionalProperties: false` on every structural object, and patterns for
ids, names, hosts and paths.

The schema describes the shape only, so it is deliberately a little looser than `forgec check`:
it accepts every valid manifest, but some invalid ones pass it (duplicate node ids, edges to
missing nodes, cycles, schema nesting over 8 levels, reserved target names, an IP-like host,
a template's placeholders, capability inputs). Those need the whole document or a catalog,
which is what the checker is for.
"""

from __future__ import annotations

from typing import Any

from forgec.ir import rules
from forgec.ir.rules import (
    CONDITION_OPS,
    CONTEXT_TOKENS,
    DESCRIPTION_CHARS,
    EFFORT,
    EXECUTION,
    INSTALL_SCOPE,
    LLM_OPS,
    MANIFEST_REQUIRED,
    MAX_BODY,
    MAX_ITEMS,
    MAX_NODES,
    MAX_TRANSITIONS,
    NETWORK_MODES,
    NODE_FIELDS,
    NODE_ORDER,
    PRIVACY,
    RETRY_ATTEMPTS,
    RETRY_BACKOFF_MS,
    SCHEMA_ID,
    SCHEMA_TYPES,
    STATE_MAX_BYTES,
    TITLE_CHARS,
    TRIGGER_TYPES,
    UNARY_OPS,
    VERSION_LIMIT,
    node_required,
)

SCHEMA_URI = "https://talos.local/schemas/talos.local-tool.v1.json"

_NAME = rules.NAME_PATTERN
# Any segment spelled `prototype` or `constructor` is refused (`__proto__` cannot match NAME).
PATH_PATTERN = (
    r"^(?!(?:.*\.)?(?:prototype|constructor)(?:[.\[]|$))"
    + _NAME
    + r"(?:\." + _NAME + r"|\[(?:0|[1-9][0-9]{0,5})\])*$"
)  # fmt: skip
TOOL_ID_PATTERN = "^" + rules.TOOL_ID_PATTERN + "$"
NODE_ID_PATTERN = "^" + rules.NODE_ID_PATTERN + "$"
NAME_PATTERN = "^" + _NAME + "$"
# not a runtime code (`RUN_...`): a tool cannot speak as the runtime
FAIL_CODE_PATTERN = f"^(?!{rules.RUNTIME_CODE_PREFIX})" + rules.FAIL_CODE_PATTERN + "$"
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
HOST_PATTERN = r"^(?=.{1,253}$)(?:" + _LABEL + r"\.)+" + _LABEL + "$"
DATETIME_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?"
    r"(?:Z|[+-][0-9]{2}:[0-9]{2})$"
)
CRON_PATTERN = r"^\s*\S+(?:\s+\S+){4}\s*$"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/definitions/{name}"}


def _int(lo: int, hi: int, description: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "minimum": lo, "maximum": hi}
    if description:
        out["description"] = description
    return out


def _text(lo: int, hi: int, description: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string", "minLength": lo, "maxLength": hi}
    if description:
        out["description"] = description
    return out


def _object(
    properties: dict[str, Any], required: list[str], description: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    if description:
        out["description"] = description
    return out


def _node_fields() -> dict[str, Any]:
    """Every node field's schema, by name (the same name means the same thing everywhere)."""
    node_id = {"type": "string", "pattern": NODE_ID_PATTERN}
    return {
        "id": {**node_id, "description": "The node's id, unique in the whole flow."},
        "target": {
            "type": "string",
            "minLength": 1,
            "description": "The variable written: a name, or `state.FIELD`.",
        },
        "value": _ref("value"),
        "input": _ref("value"),
        "source": {**_ref("value"), "description": "A list (at run time) to loop over."},
        "next": {**node_id, "description": "The node that runs next."},
        "then": {**node_id, "description": "The node when the condition holds."},
        "else": {**node_id, "description": "The node when it does not."},
        "capability": {"type": "string", "minLength": 1, "description": "What the step calls."},
        "retry": _object(
            {
                "attempts": _int(*RETRY_ATTEMPTS, "How many times to try, transient errors only."),
                "backoffMs": _int(*RETRY_BACKOFF_MS, "Milliseconds between attempts."),
            },
            ["attempts", "backoffMs"],
        ),
        "compensation": {
            "type": "string",
            "minLength": 1,
            "description": "The capability that undoes this step if the run fails later.",
        },
        "op": {"enum": list(LLM_OPS)},
        "requirements": _ref("modelRequirements"),
        "outputSchema": _ref("jsonSchema"),
        "condition": _ref("condition"),
        "itemVar": {"type": "string", "pattern": NAME_PATTERN},
        "indexVar": {"type": "string", "pattern": NAME_PATTERN},
        "maxItems": _int(*MAX_ITEMS, "The most items the loop accepts; more fails the run."),
        "body": {
            "type": "array",
            "minItems": 1,
            "maxItems": MAX_BODY,
            "items": _ref("bodyNode"),
        },
        "code": {"type": "string", "pattern": FAIL_CODE_PATTERN},
        "message": _text(*DESCRIPTION_CHARS),
    }


def _node_definitions() -> dict[str, Any]:
    fields = _node_fields()
    defs: dict[str, Any] = {}
    for scope in ("top", "body"):
        branches = []
        types = [t for t in NODE_FIELDS if scope == "top" or t != "foreach"]
        for typ in types:
            required = ["id", "type", *node_required(typ, top=scope == "top")]
            properties = {
                name: ({"const": typ} if name == "type" else fields[name])
                for name in NODE_ORDER[typ]
            }
            name = f"{typ}Node" if scope == "top" else f"{typ}BodyNode"
            defs[name] = _object(properties, required)
            branches.append(
                {
                    "if": {"properties": {"type": {"const": typ}}, "required": ["type"]},
                    "then": _ref(name),
                }
            )
        defs["node" if scope == "top" else "bodyNode"] = {
            "type": "object",
            "required": ["id", "type"],
            "properties": {"type": {"enum": types}},
            "allOf": branches,
            "description": "A flow node"
            + (" (top level)." if scope == "top" else " inside a loop body (no foreach)."),
        }
    return defs


def _expression_definitions() -> dict[str, Any]:
    return {
        "value": {
            "description": "Any JSON value; an object whose only key is `$ref`, `$template` or "
            "`$credential` is an expression.",
            "if": {
                "type": "object",
                "anyOf": [{"required": [k]} for k in rules.EXPRESSION_KEYS],
            },
            "then": {
                "oneOf": [
                    _object(
                        {"$ref": {"type": "string", "pattern": PATH_PATTERN}},
                        ["$ref"],
                        "The value at a path, like `input.items[0].title`.",
                    ),
                    _object(
                        {"$template": {"type": "string"}},
                        ["$template"],
                        "Text with `{{path}}` placeholders.",
                    ),
                    _object(
                        {"$credential": {"type": "string"}},
                        ["$credential"],
                        "A declared credential, only in a `net.http` step's headers.",
                    ),
                ]
            },
            "else": {
                "anyOf": [
                    {"type": ["string", "number", "boolean", "null"]},
                    {"type": "array", "items": _ref("value")},
                    {"type": "object", "additionalProperties": _ref("value")},
                ]
            },
        },
        "condition": {
            **_object(
                {
                    "op": {"enum": list(CONDITION_OPS)},
                    "left": _ref("value"),
                    "right": _ref("value"),
                },
                ["op", "left"],
                "`truthy` and `exists` take `left` only; the others compare `left` and `right`.",
            ),
            "if": {"properties": {"op": {"enum": list(UNARY_OPS)}}},
            "then": {"not": {"required": ["right"]}},
            "else": {"required": ["right"]},
        },
    }


def _json_schema_subset() -> dict[str, Any]:
    type_name = {"enum": list(SCHEMA_TYPES)}
    count = {"type": "integer", "minimum": 0}
    return _object(
        {
            "type": {
                "anyOf": [
                    type_name,
                    {"type": "array", "items": type_name, "minItems": 1, "uniqueItems": True},
                ]
            },
            "properties": {"type": "object", "additionalProperties": _ref("jsonSchema")},
            "required": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            "additionalProperties": {"type": "boolean"},
            "items": _ref("jsonSchema"),
            "enum": {"type": "array", "minItems": 1},
            "const": {},
            "minimum": {"type": "number"},
            "maximum": {"type": "number"},
            "minLength": count,
            "maxLength": count,
            "minItems": count,
            "maxItems": count,
            "title": {"type": "string"},
            "description": {"type": "string"},
            "default": {},
        },
        [],
        "A JSON Schema in the supported subset (at most 8 levels deep).",
    )


def manifest_json_schema() -> dict[str, Any]:
    """The draft-07 JSON Schema of a `.talostool` manifest (a fresh dict each call)."""
    host = {"type": "string", "pattern": HOST_PATTERN, "description": "An exact DNS name."}
    hosts = {"type": "array", "items": host}
    model = _object(
        {
            "structuredOutput": {"type": "boolean"},
            "context": _int(*CONTEXT_TOKENS, "Context window needed, in tokens."),
            "privacy": {"enum": list(PRIVACY)},
            "reasoningEffort": {"enum": list(EFFORT)},
        },
        [],
    )
    definitions: dict[str, Any] = {
        "host": host,
        "modelRequirements": model,
        "jsonSchema": _json_schema_subset(),
        **_expression_definitions(),
        **_node_definitions(),
    }
    network = {
        **_object(
            {"mode": {"enum": list(NETWORK_MODES)}, "hosts": hosts},
            ["mode"],
            "`forbidden`, or `allowlist` with the exact hosts the tool may reach.",
        ),
        "if": {"properties": {"mode": {"const": rules.ALLOWLIST}}},
        "then": {"required": ["hosts"]},
        "else": {"properties": {"hosts": {"maxItems": 0}}},
    }
    trigger = {
        **_object(
            {
                "type": {"enum": list(TRIGGER_TYPES)},
                "cron": {"type": "string", "pattern": CRON_PATTERN},
            },
            ["type"],
        ),
        "if": {"properties": {"type": {"const": "schedule"}}},
        "then": {"required": ["cron"]},
        "else": {"not": {"required": ["cron"]}},
    }
    properties: dict[str, Any] = {
        "schema": {"const": SCHEMA_ID},
        "id": {
            "type": "string",
            "pattern": TOOL_ID_PATTERN,
            "description": "The tool's permanent id; it is named `dynamic:<id>`.",
        },
        "version": _int(1, VERSION_LIMIT - 1, "A positive integer; each version is kept."),
        "title": _text(*TITLE_CHARS, "Shown on the Tool Forge screen and the consent card."),
        "description": _text(*DESCRIPTION_CHARS, "What the tool does, for people and the model."),
        "createdAt": {
            "type": "string",
            "pattern": DATETIME_PATTERN,
            "description": "When this version was written (ISO 8601 with offset or Z).",
        },
        "parentVersion": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": VERSION_LIMIT - 2,
            "description": "The version this one replaces (lower than `version`), or null.",
        },
        "execution": {"const": EXECUTION},
        "installScope": {"const": INSTALL_SCOPE},
        "network": network,
        "credentialRequirements": {
            "type": "array",
            "items": _object(
                {
                    "id": {"type": "string", "pattern": TOOL_ID_PATTERN},
                    "purpose": _text(*DESCRIPTION_CHARS),
                    "hosts": hosts,
                },
                ["id", "purpose", "hosts"],
            ),
        },
        "modelDefaults": _ref("modelRequirements"),
        "inputSchema": _ref("jsonSchema"),
        "outputSchema": _ref("jsonSchema"),
        "flow": _object(
            {
                "entry": {"type": "string", "pattern": NODE_ID_PATTERN},
                "maxTransitions": _int(*MAX_TRANSITIONS, "The most nodes a run may enter."),
                "nodes": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_NODES,
                    "items": _ref("node"),
                },
            },
            ["entry", "maxTransitions", "nodes"],
        ),
        "state": _object(
            {
                "fields": {
                    "type": "object",
                    "propertyNames": {
                        "pattern": NAME_PATTERN,
                        "not": {"enum": sorted(rules.FORBIDDEN_SEGMENTS - {"__proto__"})},
                    },
                    "additionalProperties": _ref("jsonSchema"),
                },
                "maxBytes": _int(*STATE_MAX_BYTES),
            },
            ["fields", "maxBytes"],
            "Data kept between runs.",
        ),
        "triggers": {"type": "array", "items": trigger},
        "ui": _object(
            {
                "title": _text(*TITLE_CHARS),
                "values": {
                    "type": "array",
                    "items": _object(
                        {
                            "label": _text(*TITLE_CHARS),
                            "path": {
                                "type": "string",
                                "pattern": PATH_PATTERN,
                                "description": "A path into the output, like `items[0].title`.",
                            },
                        },
                        ["label", "path"],
                    ),
                },
            },
            ["title", "values"],
            "A summary card for the result.",
        ),
    }
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_URI,
        "title": "TALOS forged tool manifest (talos.local-tool.v1)",
        "description": "A declarative flow over TALOS capabilities. `forgec check` enforces "
        "the rest: graph, references, capabilities, network and secrets.",
        **_object(properties, list(MANIFEST_REQUIRED)),
        "definitions": definitions,
    }
