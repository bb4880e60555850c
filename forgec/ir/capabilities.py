"""One row per capability: every fact about it that any layer needs, spelled once (SPEC §5, §13).

A row holds the capability's name, the targets that have it (`talos`, `talon`), a summary, its
input `Shape` (fields, required ones, size limit, host caps: `forgec.ir.shapes`), the JSON
Schema of its result, its marks (power and risk, per operation where the selector field
`action` / `operation` decides), the grant label (and the input field that parameterises it:
`channel.send:<channelId>`), its undo pair, its flow class (SPEC §15: the source its result is,
the sink a call is, and which operations of the selector write), and its MCP name.

Every consumer reads the rows instead of spelling a fact again: the catalog (what `check`
enforces), the reference host's bridge (grants, limits, caps, undo, the input check), the
in-memory host, the flow rules (`forgec.runtime.sources_and_sinks`), the MCP listing, the store's
effects and the label lists of `forgec mcp`. `grants` is the one label rule, for a listing
(is some call of the tool granted?) and for a call (is this one?).

Plain data: the runtime may import it (`forgec.ir` imports nothing of forgec above it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

import attrs

from forgec.ir.readable import HashedByValue, Readable
from forgec.ir.shapes import (
    Field,
    Nested,
    RequiredWhen,
    Shape,
    any_value,
    array,
    boolean,
    enum,
    integer,
    number,
    obj,
    string,
)

KIB = 1024
TALOS = ("talos", "talon")
TALON = ("talon",)
TASK_STATUSES = ("open", "done", "cancelled")
POWERS = ("Read", "Write", "Send", "Network", "Delegate")
RISKS = ("R0", "R1", "R2", "R3", "R4")
# flow classes (SPEC §15): what a result is as a source, what a call is as a sink
SOURCES = ("private", "external")
SINKS = ("write", "egress")
# Talon host tools take the run's input limit; the seed gives them none of their own
HOST_TOOL_LIMIT = 64 * KIB
CHANNEL_NAME_MAX = 64
DRAFT_07 = "http://json-schema.org/draft-07/schema#"


@attrs.frozen(repr=False, eq=False)
class StepMarks(HashedByValue):
    """The marks of one call: power, risk and the Talon label it needs (None: TALOS)."""

    power: str  # Read | Write | Send | Network | Delegate
    risk: str  # R0..R4
    label: str | None


@attrs.frozen(repr=False, eq=False)
class OpMarks(HashedByValue):
    power: str
    risk: str


@attrs.frozen(repr=False, eq=False)
class Capability(Readable):
    name: str
    summary: str
    shape: Shape
    marks: OpMarks  # the worst case: any operation not in `op_marks`, or a computed one
    result: Mapping[str, Any]
    targets: tuple[str, ...] = TALOS
    label: str | None = None  # the grant label; `<family>:*` when `label_param` is set
    label_param: str | None = None  # the input field that names the label's parameter
    selector: str | None = None  # the field that selects the operation (`action`)
    op_marks: Mapping[str, OpMarks] = attrs.field(factory=dict)
    source: str | None = None  # private | external | None
    sink: str | None = None  # write | egress | None
    writing: frozenset[str] | None = None  # with a selector: the operations that are the sink
    undo: str | None = None
    mcp_name: str | None = None
    needs_network: bool = False
    # SPEC §15 "labels persist": the host tables a call writes (with a selector: only when its
    # operation writes) and the one its result reads
    stores: tuple[str, ...] = ()
    reads: str | None = None
    # the input field holding a SELECT: its result reads the tables the SQL names (db.query)
    reads_sql: str | None = None
    # its answers are also text other people wrote (another persona, a sub-agent)
    outside_text: bool = False
    # SPEC §21 "origin per field": with `outside_text`, the result fields the host itself
    # decides (ids, statuses): they carry no outside label; every other field does
    host_fields: tuple[str, ...] = ()
    # SPEC §21 "destinations": the input fields that say where the data goes or which item
    # changes (a URL field — its `validate` is "url" — by its host only); the rest is content
    destinations: tuple[str, ...] = ()
    # SPEC §23, the review's words (forgec.store.verdict): "" the call in a few words, with
    # `{field}` standing for a field's value ("post to {channelId}"); a field name: the gain
    # when that field changes, `{}` its new value ("can post to {}"); "sends": the call
    # carrying private data (`{data}` what); "#": the mark before a literal destination;
    # "?": the noun for a computed one ("a channel computed from your input")
    review_words: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def input_limit(self) -> int:
        return self.shape.limit

    @property
    def caps(self) -> dict[str, float]:
        return self.shape.caps()

    @property
    def label_family(self) -> str | None:
        """`channel.send` for `channel.send:*`; None without a parameterised label."""
        if self.label is None or self.label_param is None:
            return None
        return self.label.rsplit(":", 1)[0]

    def operation(self, literal: Mapping[str, Any]) -> str | None:
        """The literal operation of an input, None when there is no selector or it is not a
        known literal operation (computed, missing, misspelt: the worst case)."""
        if self.selector is None or not isinstance(literal, Mapping):
            return None
        value = literal.get(self.selector)
        field = self.shape.fields.get(self.selector)
        if isinstance(value, str) and field is not None and value in (field.enum or ()):
            return value
        return None

    def operations(self) -> tuple[str, ...]:
        field = self.shape.fields.get(self.selector) if self.selector else None
        return tuple(field.enum or ()) if field is not None else ()

    def label_needed(self, input: Any) -> str | None:
        """The label a call with this (literal or run-time) input needs."""
        if self.label_param is None or self.label is None:
            return self.label
        value = input.get(self.label_param) if isinstance(input, Mapping) else None
        field = self.shape.fields[self.label_param]
        if isinstance(value, str) and not field.problems(value, (self.label_param,), True):
            return f"{self.label_family}:{value}"
        return self.label

    def step_marks(self, literal: Mapping[str, Any]) -> StepMarks:
        """The marks of a call whose literal input fields are `literal` (worst case when the
        deciding field is not literal)."""
        op = self.operation(literal)
        marks = self.op_marks.get(op, self.marks) if op is not None else self.marks
        return StepMarks(power=marks.power, risk=marks.risk, label=self.label_needed(literal))

    def url_destination(self, name: str) -> bool:
        """Whether destination `name` is a URL, whose destination is its host alone."""
        field = self.shape.fields.get(name)
        return field is not None and field.validate == "url"

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema (draft 7) of the input, from the shape."""
        return {"$schema": DRAFT_07, **self.shape.schema()}

    @property
    def result_schema(self) -> dict[str, Any]:
        """The JSON Schema (draft 7) of the result."""
        return {"$schema": DRAFT_07, **self.result}

    def writes(self, operation: Any) -> bool:
        """Whether a call with this operation (None: unknown/computed) is this row's sink."""
        if self.writing is None:
            return True
        return operation is None or operation in self.writing


# --- validators that need no library (cron, SQL and URL are named: see forgec.ir.shapes) -----

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def check_date(value: str) -> list[str]:
    """An ISO 8601 calendar date, `YYYY-MM-DD` (no time, no week or ordinal forms)."""
    if not _DATE.fullmatch(value):
        return [f"`{value[:40]}` is not a date (expected YYYY-MM-DD)"]
    try:
        date.fromisoformat(value)
    except ValueError:
        return [f"`{value}` is not a valid calendar date"]
    return []


def check_prompt_file(value: str) -> list[str]:
    """A prompt alias from the persona's `prompts/` folder: a bare name, never a path."""
    if not value:
        return ["must not be empty"]
    if any(ch in value for ch in "/\\:") or ".." in value:
        return [f"`{value[:60]}` is not a basename (no `/`, `\\`, `:` or `..`): name a prompt"]
    if value.startswith(".") or any(ch.isspace() or ord(ch) < 0x20 for ch in value):
        return [f"`{value[:60]}` is not a prompt name (no leading dot, whitespace or controls)"]
    return []


def check_channel_name(value: str) -> list[str]:
    """A configured channel name; it becomes part of a label, so no `*`, `,` or whitespace."""
    if not value:
        return ["must not be empty"]
    if len(value) > CHANNEL_NAME_MAX:
        return [f"a channel name has at most {CHANNEL_NAME_MAX} characters"]
    if any(ch in "*," or ch.isspace() or ord(ch) < 0x20 for ch in value):
        return [f"`{value}` is not a channel name (no `*`, `,`, whitespace or controls)"]
    return []


def check_headers(value: Mapping[str, Any]) -> list[str]:
    """Header names are RFC 9110 tokens; values may not break the header block (no CR/LF)."""
    problems: list[str] = []
    for name, item in value.items():
        if not name or any(ch not in _TCHAR for ch in name):
            problems.append(f"`{name[:60]}` is not a valid header name")
        if isinstance(item, str) and any(ch in item for ch in "\r\n\x00"):
            problems.append(f"the value of header `{name[:60]}` contains a line break or NUL")
    return problems


def _check_param(value: Any) -> list[str]:
    if isinstance(value, (dict, list, tuple)):
        return ["a statement parameter is a string, number, boolean or null"]
    return []


# --- result shapes (what a flow's `target` receives), SPEC §5 and §13 -----------------------

_STR: Mapping[str, Any] = {"type": "string"}
_TIME: Mapping[str, Any] = {"type": "string", "description": "ISO 8601 date-time"}
_OBJECT: Mapping[str, Any] = {"type": "object"}


def _object(properties: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(properties),
        "additionalProperties": False,
    }


def _items(item: Mapping[str, Any]) -> dict[str, Any]:
    return _object({"items": {"type": "array", "items": dict(item)}})


def _plus(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    return _object({**base["properties"], **extra})


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
_SCHEDULE = {
    "type": "object",
    "properties": {
        "scheduleId": _STR,
        "cronExpr": _STR,
        "label": {"type": ["string", "null"]},
        "enabled": {"type": "boolean"},
    },
    "required": ["scheduleId", "cronExpr", "enabled"],
}
_MEMORY_ITEM = {
    "type": "object",
    "properties": {"key": _STR, "namespace": _STR, "value": {}},
    "required": ["key", "namespace", "value"],
}
_DELEGATED = {
    "anyOf": [
        {"type": "object", "properties": {"result": {}}, "required": ["result"]},
        {
            "type": "object",
            "properties": {"taskId": _STR, "status": _STR},
            "required": ["taskId", "status"],
        },
    ]
}

# --- fields shared by several capabilities -------------------------------------------------

# the longest id the hosts keep (a task, note, schedule or delegated task)
ID_MAX = 200
QUERY_MAX = 500
_TITLE = string("1–200 characters (code points)", min_length=1, max_length=200)
_ID = string("the id of an existing item", min_length=1, max_length=ID_MAX)
_QUERY = string("case-insensitive text to look for", max_length=QUERY_MAX)
_NAME = 128  # a sub-agent, persona, provider or profile name


# SPEC §21 planned turns: a forged tool (and its input) run in place of a prompt
PLANNED_TOOL = string(
    "a forged tool (its id, or its MCP name) the work runs in place of a prompt: a planned turn",
    min_length=1,
    max_length=_NAME,
)
PLANNED_INPUT = obj("the planned tool's input (with `tool`)")


def _status(description: str) -> Field:
    return enum(description, *TASK_STATUSES)


def _limit(maximum: int) -> Field:
    return integer(f"how many items at most (1–{maximum})", minimum=1, maximum=maximum)


# --- the built-in sub-agents' own inputs (`subagent.invoke`'s `input`, by `name`) ------------

SUBAGENT_QUERY_MAX = 500
SPARK_TASK_MAX = 32 * KIB


def _search(what: str) -> Shape:
    return Shape(
        {
            "query": string(what, max_length=SUBAGENT_QUERY_MAX),
            "limit": integer("results at most (default 10; 1–50)", minimum=1, maximum=50),
        },
        limit=HOST_TOOL_LIMIT,
        required=("query",),
    )


# One shape per built-in sub-agent of `forgec.host.delegation`: `check` holds a literal input to
# it, the bridge every evaluated one, before the sub-agent runs (it checks nothing again). A
# name here keeps its shape whatever function a host registers under it.
SUBAGENT_SHAPES: Mapping[str, Shape] = {
    "memory-retriever": _search("words to find in this thread's memory items (FTS5)"),
    "file-searcher": _search("words to find in the files under the configured roots"),
    "session-summarizer": Shape(
        {"text": string("more text to summarize with the thread's messages")},
        limit=HOST_TOOL_LIMIT,
    ),
    "memory-groomer": Shape({}, limit=HOST_TOOL_LIMIT),
    "spark-coder": Shape(
        {
            "task": string("what to write or change", max_length=SPARK_TASK_MAX),
            "files": Field("object", "path → current content", values=string()),
        },
        limit=HOST_TOOL_LIMIT,
        required=("task",),
    ),
}

# the fields of a delegated answer the host decides (SPEC §21 "origin per field"): the task's
# id and status, the persona it went to; its `result` and `error` are text others wrote
_HOST_FIELDS = ("taskId", "status", "targetPersona")

_READ_R1 = OpMarks("Read", "R1")
_WRITE_R2 = OpMarks("Write", "R2")
_WRITE_R3 = OpMarks("Write", "R3")

ROWS: tuple[Capability, ...] = (
    # --- TALOS (the seed's eight) --------------------------------------------------------
    Capability(
        "tasks.list",
        "Read local TALOS tasks (newest first).",
        Shape(
            {
                "status": _status("only tasks with this status"),
                "query": _QUERY,
                "limit": _limit(100),
            },
            limit=1 * KIB,
        ),
        _READ_R1,
        _items(TASK),
        source="private",
        reads="tasks",
    ),
    Capability(
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
            limit=16 * KIB,
            required=("title",),
        ),
        _WRITE_R2,
        TASK,
        source="private",
        sink="write",
        undo="tasks.setStatus",
        stores=("tasks",),
    ),
    Capability(
        "tasks.setStatus",
        "Change a local task's status.",
        Shape(
            {"id": _ID, "status": _status("the new status")},
            limit=1 * KIB,
            required=("id", "status"),
        ),
        _WRITE_R2,
        _plus(TASK, {"previousStatus": {"type": "string", "enum": list(TASK_STATUSES)}}),
        source="private",
        sink="write",
        undo="tasks.setStatus",
        stores=("tasks",),
        reads="tasks",
        destinations=("id",),
    ),
    Capability(
        "notes.list",
        "Read local TALOS notes.",
        Shape({"query": _QUERY, "limit": _limit(100)}, limit=1 * KIB),
        _READ_R1,
        _items(NOTE),
        source="private",
        reads="notes",
    ),
    Capability(
        "notes.create",
        "Create a local TALOS note.",
        Shape(
            {"title": _TITLE, "body": string("the note's text")},
            limit=32 * KIB,
            required=("title", "body"),
        ),
        _WRITE_R2,
        NOTE,
        source="private",
        sink="write",
        stores=("notes",),
    ),
    Capability(
        "notes.update",
        "Update a local TALOS note.",
        Shape(
            {"id": _ID, "title": _TITLE, "body": string("the note's new text")},
            limit=32 * KIB,
            required=("id",),
        ),
        _WRITE_R2,
        _plus(NOTE, {"previous": _object({"title": _STR, "body": _STR})}),
        source="private",
        sink="write",
        undo="notes.update",
        stores=("notes",),
        reads="notes",
        destinations=("id",),
    ),
    Capability(
        "memory.search",
        "Search active local TALOS memories (full-text ranked).",
        Shape(
            {
                "query": string("what to look for", min_length=1, max_length=QUERY_MAX),
                "limit": _limit(50),
            },
            limit=1 * KIB,
            required=("query",),
        ),
        OpMarks("Read", "R2"),
        _items(MEMORY_HIT),
        source="private",
        reads="memories",
    ),
    Capability(
        "memory.create",
        "Create a durable TALOS memory.",
        Shape(
            {
                "text": string("what to remember", min_length=1),
                "tags": array("labels for the memory", string("a tag")),
            },
            limit=32 * KIB,
            required=("text",),
        ),
        _WRITE_R3,
        MEMORY,
        source="private",
        sink="write",
        stores=("memories",),
    ),
    # --- the ten Talon host tools (seeds/host-tools.txt) -----------------------------------
    Capability(
        "schedule.manage",
        "Create, update, cancel, delete or list the persona's cron schedules.",
        Shape(
            {
                "action": enum("what to do", "create", "update", "cancel", "delete", "list"),
                "scheduleId": string(
                    "the schedule (update, cancel, delete)", min_length=1, max_length=ID_MAX
                ),
                "cronExpr": string("5-field cron expression", max_length=200, validate="cron"),
                "label": string("human-readable label", max_length=200),
                "prompt": string(
                    "inline prompt (or promptFile)", min_length=1, max_length=32 * KIB
                ),
                "promptFile": string(
                    "prompt alias from the persona's prompts/ folder (or prompt)",
                    max_length=100,
                    validate=check_prompt_file,
                ),
                "tool": PLANNED_TOOL,
                "input": PLANNED_INPUT,
            },
            limit=HOST_TOOL_LIMIT,
            required=("action",),
            required_when=(
                RequiredWhen("action", ("create",), "cronExpr"),
                # no prompt rule: the seed makes both optional (a schedule with neither fires
                # its label, SPEC §19)
                RequiredWhen("action", ("update", "cancel", "delete"), "scheduleId"),
                RequiredWhen(
                    "action",
                    ("update",),
                    "cronExpr",
                    alternatives=("label", "prompt", "promptFile", "tool", "input"),
                ),
            ),
            exclusive=(("prompt", "promptFile"), ("prompt", "tool"), ("promptFile", "tool")),
            needs=(("input", "tool"),),
        ),
        _WRITE_R3,
        {
            "anyOf": [
                _SCHEDULE,
                {
                    "type": "object",
                    "properties": {"schedules": {"type": "array", "items": _SCHEDULE}},
                    "required": ["schedules"],
                },
                _OBJECT,
            ]
        },
        targets=TALON,
        label="schedule.manage:own",
        selector="action",
        op_marks={"list": _READ_R1},
        source="private",
        sink="write",
        writing=frozenset({"create", "update", "cancel", "delete"}),
        undo="schedule.manage",
        mcp_name="schedule_manage",
        stores=("schedules",),
        reads="schedules",
        destinations=("scheduleId", "tool"),
    ),
    Capability(
        "channel.send",
        "Send a Markdown message to a configured Talon channel.",
        Shape(
            {
                "channelId": string("configured channel name", validate=check_channel_name),
                "content": string("Markdown body", min_length=1),
                "replyTo": string(
                    "channel-specific thread or message id", min_length=1, max_length=256
                ),
            },
            limit=HOST_TOOL_LIMIT,
            required=("channelId", "content"),
        ),
        OpMarks("Send", "R3"),
        {
            "type": "object",
            "properties": {"messageId": _STR, "channelId": _STR},
            "required": ["messageId", "channelId"],
        },
        targets=TALON,
        label="channel.send:*",
        label_param="channelId",
        sink="egress",
        mcp_name="channel_send",
        stores=("messages", "threads"),
        destinations=("channelId", "replyTo"),
        review_words={
            "": "post to {channelId}",
            "channelId": "can post to {}",
            "sends": "sends {data} to {channelId}",
            "#": "#",
            "?": "a channel",
        },
    ),
    Capability(
        "memory.access",
        "Read and write per-thread memory items.",
        Shape(
            {
                "operation": enum("what to do", "read", "write", "delete", "list"),
                "key": string(
                    "item key (read, delete; write generates one if absent)",
                    min_length=1,
                    max_length=256,
                ),
                "value": any_value("the value to write (non-strings are stored as JSON)"),
                "namespace": string(
                    "fact, summary or note (others fall back to note)", max_length=64
                ),
            },
            limit=HOST_TOOL_LIMIT,
            required=("operation",),
            required_when=(
                RequiredWhen("operation", ("read", "delete"), "key"),
                RequiredWhen("operation", ("write",), "value"),
            ),
        ),
        _WRITE_R3,
        {
            "anyOf": [
                _MEMORY_ITEM,
                {
                    "type": "object",
                    "properties": {"items": {"type": "array", "items": _MEMORY_ITEM}},
                    "required": ["items"],
                },
                {
                    "type": "object",
                    "properties": {"key": _STR, "deleted": {"type": "boolean"}},
                    "required": ["key", "deleted"],
                },
                {
                    "type": "object",
                    "properties": {"key": _STR, "namespace": _STR},
                    "required": ["key", "namespace"],
                },
            ]
        },
        targets=TALON,
        label="memory.access:thread",
        selector="operation",
        op_marks={"read": _READ_R1, "list": _READ_R1},
        source="private",
        sink="write",
        writing=frozenset({"write", "delete"}),
        undo="memory.access",
        mcp_name="memory_access",
        stores=("memory_items",),
        reads="memory_items",
        destinations=("key", "namespace"),
    ),
    Capability(
        "net.http",
        "Make an HTTP(S) request through the host, to allowlisted hosts only.",
        Shape(
            {
                "method": enum("HTTP method", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"),
                "url": string(
                    "absolute http: or https: URL", min_length=1, max_length=8192, validate="url"
                ),
                "headers": Field(
                    "object",
                    "request headers (values: strings or declared credentials)",
                    values=string("header value"),
                    credential_values=True,
                    validate=check_headers,
                ),
                "body": string("request body"),
                "timeoutMs": number(
                    "timeout in ms (default 30000, at most 120000)",
                    minimum=1,
                    maximum=120_000,
                    host_cap=True,
                ),
            },
            limit=HOST_TOOL_LIMIT,
            required=("method", "url"),
        ),
        OpMarks("Network", "R4"),
        {
            "type": "object",
            "properties": {
                "status": {"type": "integer"},
                "headers": {"type": "object", "additionalProperties": _STR},
                "body": _STR,
            },
            "required": ["status", "headers", "body"],
        },
        targets=TALON,
        label="net.http:egress",
        # source `external:<host>`, sink `egress:<host>`: the URL's host names both
        source="external",
        sink="egress",
        mcp_name="net_http",
        needs_network=True,
        destinations=("url",),
        review_words={"": "send a request to {url}", "url": "sends a request to {}"},
    ),
    Capability(
        "db.query",
        "Run one read-only SELECT on memory_items, schedules, messages or threads.",
        Shape(
            {
                "sql": string(
                    "one plain SELECT on the allowed tables",
                    min_length=1,
                    max_length=16 * KIB,
                    validate="sql",
                ),
                "params": array(
                    "prepared-statement parameters",
                    Field("any", "string, number, boolean or null", validate=_check_param),
                    max_items=100,
                ),
                "limit": integer(
                    "rows at most (default 100; 1–1000)", minimum=1, maximum=1000, host_cap=True
                ),
            },
            limit=HOST_TOOL_LIMIT,
            required=("sql",),
        ),
        OpMarks("Read", "R2"),
        {
            "type": "object",
            "properties": {
                "rows": {"type": "array", "items": _OBJECT},
                "truncated": {"type": "boolean"},
            },
            "required": ["rows", "truncated"],
        },
        targets=TALON,
        label="db.query:own",
        source="private",
        mcp_name="db_query",
        reads_sql="sql",
        review_words={"": "query the database", "limit": "can read up to {} rows a query"},
    ),
    Capability(
        "subagent.invoke",
        "Run a named sub-agent synchronously and return its result.",
        Shape(
            {
                "name": string("sub-agent name", min_length=1, max_length=_NAME),
                "input": obj("JSON object passed to the sub-agent"),
            },
            limit=HOST_TOOL_LIMIT,
            required=("name",),
            nested=(
                Nested("name", "input", SUBAGENT_SHAPES, "sub-agent", "FORGEC_SUBAGENT_UNKNOWN"),
            ),
        ),
        OpMarks("Delegate", "R3"),
        _DELEGATED,
        targets=TALON,
        label="subagent.invoke",
        source="private",
        sink="egress",
        mcp_name="subagent_invoke",
        outside_text=True,
        host_fields=_HOST_FIELDS,
        destinations=("name",),
    ),
    Capability(
        "subagent.background",
        "Start and manage long-running background agent tasks.",
        Shape(
            {
                "action": enum("what to do", "spawn", "status", "cancel", "result", "profiles"),
                "prompt": string("the task (spawn)", min_length=1, max_length=HOST_TOOL_LIMIT),
                "taskId": string(
                    "the task (status, cancel, result)", min_length=1, max_length=ID_MAX
                ),
                "provider": string("provider override (spawn)", max_length=_NAME),
                "profile": string("persona profile name (spawn)", max_length=_NAME),
                "workingDirectory": string("working directory (spawn)", max_length=4096),
                "timeoutMinutes": number(
                    "timeout override (spawn); under 15 is raised to 15", minimum=0
                ),
                "tool": PLANNED_TOOL,
                "input": PLANNED_INPUT,
            },
            limit=HOST_TOOL_LIMIT,
            required=("action",),
            required_when=(
                RequiredWhen("action", ("spawn",), "prompt", alternatives=("tool",)),
                RequiredWhen("action", ("status", "cancel", "result"), "taskId"),
            ),
            exclusive=(("prompt", "tool"),),
            needs=(("input", "tool"),),
        ),
        OpMarks("Delegate", "R4"),
        _DELEGATED,
        targets=TALON,
        label="subagent.background",
        selector="action",
        source="private",
        sink="egress",
        mcp_name="background_agent",
        outside_text=True,
        stores=("background_tasks",),
        reads="background_tasks",
        host_fields=_HOST_FIELDS,
        destinations=("taskId", "provider", "profile", "workingDirectory", "tool"),
    ),
    Capability(
        "persona.send",
        "Send a task to another persona (A2A), optionally waiting for the reply.",
        Shape(
            {
                "target_persona": string("destination persona", min_length=1, max_length=_NAME),
                "message": string("the task or message", min_length=1, max_length=HOST_TOOL_LIMIT),
                "await_reply": boolean("wait for the reply inline"),
                "tool": PLANNED_TOOL,
                "input": PLANNED_INPUT,
            },
            limit=HOST_TOOL_LIMIT,
            required=("target_persona",),
            exclusive=(("message", "tool"),),
            one_of=(("message", "tool"),),
            needs=(("input", "tool"),),
        ),
        OpMarks("Delegate", "R3"),
        _DELEGATED,
        targets=TALON,
        label="persona.send:*",
        source="private",
        sink="egress",
        mcp_name="persona_send",
        outside_text=True,
        stores=("a2a_tasks",),
        reads="a2a_tasks",
        host_fields=_HOST_FIELDS,
        destinations=("target_persona", "tool"),
    ),
    Capability(
        "persona.task_status",
        "Fetch the status or result of a delegated A2A task.",
        Shape(
            {
                "task_id": string(
                    "task id returned by persona.send", min_length=1, max_length=ID_MAX
                ),
                "wait_ms": number("poll up to this many ms for a terminal state", minimum=0),
            },
            limit=HOST_TOOL_LIMIT,
            required=("task_id",),
        ),
        _READ_R1,
        _DELEGATED,
        targets=TALON,
        label="persona.send:*",
        source="private",
        mcp_name="persona_task_status",
        outside_text=True,
        reads="a2a_tasks",
        host_fields=_HOST_FIELDS,
    ),
    Capability(
        "persona.list",
        "List the other loaded personas available for delegation.",
        Shape({}, limit=HOST_TOOL_LIMIT),
        _READ_R1,
        _DELEGATED,
        targets=TALON,
        label="persona.send:*",
        source="private",
        mcp_name="persona_list",
        outside_text=True,
        host_fields=_HOST_FIELDS,
    ),
)

# the host tables `db.query` may read, and (SPEC §21 "origin per field") the columns of each
# that hold text people wrote — a message's text, a thread's title: `external:talon` at origin.
# Every other column (ids, the channel, the sender, times, counts) is the host's own fact.
QUERY_TABLES = ("memory_items", "messages", "schedules", "threads")
OUTSIDE_COLUMNS: Mapping[str, frozenset[str]] = {
    "messages": frozenset({"content", "markdown"}),
    "threads": frozenset({"title"}),
}


def named_query_tables(sql: Any) -> tuple[str, ...]:
    """The tables a `db.query` may read: those named in its SQL text (a word match, which
    can only over-count), every allowed table when the SQL is not known."""
    if type(sql) is not str:
        return QUERY_TABLES
    lowered = sql.lower()
    return tuple(t for t in QUERY_TABLES if re.search(rf"(?<![a-z0-9_]){t}(?![a-z0-9_])", lowered))


BY_NAME: dict[str, Capability] = {row.name: row for row in ROWS}
# the families of parameterised labels: `channel.send` → its row
_PARAM_FAMILIES: dict[str, Capability] = {
    row.label_family: row for row in ROWS if row.label_family is not None
}


def rows_of(target: str) -> tuple[Capability, ...]:
    return tuple(row for row in ROWS if target in row.targets)


def label_grants(labels: Iterable[str], needed: str) -> bool:
    """Whether `labels` hold `needed`: exactly, or as the family's `*` (`channel.send:*`
    grants `channel.send:general`)."""
    held = labels if isinstance(labels, (set, frozenset)) else frozenset(labels)
    if needed in held:
        return True
    family, sep, _ = needed.rpartition(":")
    return bool(sep) and family in _PARAM_FAMILIES and f"{family}:*" in held


_SOME_CALL: Any = object()


def grants(labels: Iterable[str], capability: str, input: Any = _SOME_CALL) -> bool:
    """The one grant rule, for the listing and the bridge alike.

    With an `input`: whether that call is granted (its label, `label_needed`). Without one:
    whether some call of the capability is — a parameterised label (`channel.send:<name>`)
    is granted for its own parameter, so a tool is listed exactly when a call of it would
    pass the bridge. A capability without a label (TALOS) needs none; an unknown one is never
    granted.
    """
    row = BY_NAME.get(capability)
    if row is None:
        return False
    if row.label is None:
        return True
    held = frozenset(labels)
    if input is not _SOME_CALL:
        needed = row.label_needed(input)
        return needed is not None and label_grants(held, needed)
    if row.label in held:
        return True
    family = row.label_family
    if family is None:
        return False
    prefix = family + ":"
    return any(
        label.startswith(prefix)
        and row.label_needed({row.label_param: label[len(prefix) :]}) == label
        for label in held
    )


def known_label(label: str) -> bool:
    """A label some capability can need: a row's, or a valid parameter of a family."""
    if any(row.label == label for row in ROWS):
        return True
    family, sep, param = label.rpartition(":")
    row = _PARAM_FAMILIES.get(family) if sep else None
    return row is not None and row.label_needed({row.label_param: param}) == label


# the label that lets an MCP client forge tools (`tool_create`): no capability row needs it
TOOL_CREATE_LABEL = "tool.create"


def known_persona_label(label: str) -> bool:
    """A label a persona may hold: one a capability can need, or `tool.create`."""
    return label == TOOL_CREATE_LABEL or known_label(label)


def label_list() -> list[str]:
    """Every label the rows name (parameterised ones as `<family>:<param field>`), for help."""
    out: list[str] = []
    for row in ROWS:
        if row.label is None:
            continue
        text = row.label if row.label_param is None else f"{row.label_family}:<{row.label_param}>"
        if text not in out:
            out.append(text)
        if row.label_param is not None and row.label not in out:
            out.append(row.label)
    return out
