"""The facts of `talos.local-tool.v1` (SPEC §2–§4) as plain data: one table each.

The JSON builder, the `.forge` parser and formatter, the JSON Schema exporter, the runtime's
Program verifier and the store all read these, so a constant, an op, an id rule, a limit or a
node field is written here once and nowhere else. Adding a node field is an edit to
`NODE_FIELDS` plus the code that gives it meaning (a test holds every consumer to the table).

Plain data and `re` only: the runtime imports this module, and it must import nothing above
`forgec.ir`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

# ---- manifest constants -------------------------------------------------------------------------

SCHEMA_ID = "talos.local-tool.v1"
EXECUTION = "declarative-flow"
INSTALL_SCOPE = "device"
NETWORK_MODES = ("forbidden", "allowlist")
FORBIDDEN, ALLOWLIST = NETWORK_MODES  # the network modes, by name
PRIVACY = ("local-only", "local-preferred", "remote-allowed")
EFFORT = ("low", "medium", "high")
TRIGGER_TYPES = ("manual", "schedule", "app-resume", "task-changed")

# top-level fields in canonical order, and which are required
MANIFEST_FIELDS = (
    "schema", "id", "version", "title", "description", "createdAt", "parentVersion",
    "execution", "installScope", "network", "credentialRequirements", "modelDefaults",
    "inputSchema", "outputSchema", "flow", "state", "triggers", "ui",
)  # fmt: skip
MANIFEST_REQUIRED = (
    "schema", "id", "version", "title", "description", "createdAt", "parentVersion",
    "execution", "installScope", "network", "credentialRequirements", "flow",
)  # fmt: skip
NETWORK_FIELDS = ("mode", "hosts")
CREDENTIAL_FIELDS = ("id", "purpose", "hosts")
MODEL_FIELDS = ("structuredOutput", "context", "privacy", "reasoningEffort")
FLOW_FIELDS = ("entry", "maxTransitions", "nodes")
RETRY_FIELDS = ("attempts", "backoffMs")
CONDITION_FIELDS = ("op", "left", "right")
STATE_FIELDS = ("fields", "maxBytes")
TRIGGER_FIELDS = ("type", "cron")
UI_FIELDS = ("title", "values")
UI_VALUE_FIELDS = ("label", "path")

# ---- limits (inclusive ranges unless said otherwise) --------------------------------------------

MAX_MANIFEST_BYTES = 65_536  # a `.talostool` file, and a compiled `.forge` as compact JSON
MAX_JSON_DEPTH = 64  # nesting of the whole document; the top-level object is level 1
MAX_FORGE_BYTES = 262_144  # a `.forge` text, checked before any parsing (SPEC §16)
MAX_SAFE_INTEGER = 2**53 - 1  # every integer in a manifest lies within ±this (SPEC §16)
VERSION_LIMIT = 2**31  # version and parentVersion: 1 ≤ v < 2^31
TITLE_CHARS = (1, 120)  # `title`, `ui.title`, a ui value's `label`
DESCRIPTION_CHARS = (1, 1000)  # `description`, a credential's `purpose`, a fail `message`
CONTEXT_TOKENS = (256, 131_072)
MAX_TRANSITIONS = (1, 256)
MAX_NODES = 64  # body nodes count
MAX_BODY = 16  # nodes of one loop body (at least 1)
MAX_ITEMS = (1, 100)  # foreach.maxItems
RETRY_ATTEMPTS = (1, 3)
RETRY_BACKOFF_MS = (0, 5000)
STATE_MAX_BYTES = (1, 65_536)
MAX_SCHEMA_DEPTH = 8
MAX_INDEX = 999_999  # a path's [INDEX]

# ---- ops ----------------------------------------------------------------------------------------

LLM_OPS = ("classify", "extract", "summarize", "generate", "rank")
CONDITION_OPS = ("eq", "neq", "truthy", "exists", "contains", "gt", "gte", "lt", "lte")
UNARY_OPS = ("truthy", "exists")  # take `left` only
# how `.forge` spells the comparisons (the others are words: `contains`, `truthy`, `exists`)
OP_SYMBOLS = {"eq": "==", "neq": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}

# ---- the JSON Schema subset (SPEC §2.2) ---------------------------------------------------------

SCHEMA_KEYWORDS = (
    "type", "properties", "required", "additionalProperties", "items", "enum", "const",
    "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "title",
    "description", "default",
)  # fmt: skip
SCHEMA_TYPES = ("string", "number", "integer", "boolean", "object", "array", "null")

# ---- id rules -----------------------------------------------------------------------------------
# `re.ASCII` everywhere: `\d` and case folding must not admit other scripts' digits or letters.

TOOL_ID_PATTERN = r"[a-z0-9._-]{3,64}"  # tool ids and credential ids
NODE_ID_PATTERN = r"[A-Za-z][A-Za-z0-9_-]{0,63}"
NAME_PATTERN = r"[A-Za-z][A-Za-z0-9_]{0,63}"  # ROOT and NAME of a path, state field names
FAIL_CODE_PATTERN = r"[A-Z][A-Z0-9_]{2,63}"
RUNTIME_CODE_PREFIX = "RUN_"  # a tool's fail code may not speak as the runtime (SPEC §14)

TOOL_ID_RE = re.compile(TOOL_ID_PATTERN, re.ASCII)
NODE_ID_RE = re.compile(NODE_ID_PATTERN, re.ASCII)
NAME_RE = re.compile(NAME_PATTERN, re.ASCII)
FAIL_CODE_RE = re.compile(FAIL_CODE_PATTERN, re.ASCII)

# Never a target nor a loop variable (SPEC §3).
RESERVED = frozenset(
    {
        "input", "state", "output", "result", "error", "env", "secrets", "credentials",
        "self", "this", "prototype", "constructor",
    }
)  # fmt: skip
# Refused as any segment of a path: TALOS may be a JavaScript host.
FORBIDDEN_SEGMENTS = frozenset({"__proto__", "prototype", "constructor"})
EXPRESSION_KEYS = ("$ref", "$template", "$credential")

# ---- node fields --------------------------------------------------------------------------------


class NodeField(NamedTuple):
    """One field of a node type.

    `kind` says how the field is read: `name` (a string naming a node, variable or
    capability; resolved by later passes), `value` (a value that may hold expressions, SPEC §3),
    `op` (one of the type's ops), `retry`, `requirements`, `schema`, `condition`, `body`,
    `max_items`, `fail_code`, `message`. `need` is `always`, `top` (required at the top level,
    optional in a loop body) or `optional`. `attr` is the IR attribute that holds it
    (`forgec.ir.nodes`)."""

    name: str
    kind: str
    need: str
    attr: str


def _f(name: str, kind: str, need: str, attr: str | None = None) -> NodeField:
    return NodeField(name, kind, need, attr or name)


# type → its fields after `id` and `type`, in canonical order
NODE_FIELDS: dict[str, tuple[NodeField, ...]] = {
    "set": (
        _f("target", "name", "always"),
        _f("value", "value", "always"),
        _f("next", "name", "top"),
    ),
    "capability": (
        _f("capability", "name", "always"),
        _f("input", "value", "always"),
        _f("target", "name", "optional"),
        _f("retry", "retry", "optional"),
        _f("compensation", "name", "optional"),
        _f("next", "name", "top"),
    ),
    "llm": (
        _f("op", "op", "always"),
        _f("input", "value", "always"),
        _f("target", "name", "always"),
        _f("requirements", "requirements", "optional"),
        _f("outputSchema", "schema", "optional", "output_schema"),
        _f("next", "name", "top"),
    ),
    "if": (
        _f("condition", "condition", "always"),
        _f("then", "name", "always"),
        _f("else", "name", "always", "else_"),
    ),
    "foreach": (
        _f("source", "value", "always"),
        _f("itemVar", "name", "always", "item_var"),
        _f("indexVar", "name", "optional", "index_var"),
        _f("maxItems", "max_items", "always", "max_items"),
        _f("body", "body", "always"),
        _f("next", "name", "top"),
    ),
    "return": (_f("value", "value", "always"),),
    "fail": (
        _f("code", "fail_code", "always"),
        _f("message", "message", "always"),
    ),
}
NODE_TYPE_NAMES = tuple(NODE_FIELDS)
# the `name` fields that name the node that runs next (a node's edges, in its own scope)
EDGE_FIELDS = ("next", "then", "else")
# the kinds of field that hold values (expressions may stand inside), and those that do not:
# every kind of `NODE_FIELDS` is in exactly one (`forgec.ir.nodes` fails at import otherwise)
VALUE_KINDS = ("value", "condition")
PLAIN_KINDS = (
    "name", "op", "retry", "requirements", "schema", "max_items", "body", "fail_code", "message",
)  # fmt: skip

# Derived views, so no consumer re-spells a list.
NODE_ORDER: dict[str, tuple[str, ...]] = {
    typ: ("id", "type", *(f.name for f in fields)) for typ, fields in NODE_FIELDS.items()
}


def node_required(typ: str, *, top: bool) -> tuple[str, ...]:
    """The fields a node of `typ` must have (besides `id` and `type`)."""
    return tuple(
        f.name for f in NODE_FIELDS[typ] if f.need == "always" or (top and f.need == "top")
    )
