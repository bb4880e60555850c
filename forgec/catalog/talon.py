"""The `talon` target: everything of `talos` plus the ten Talon host tools (SPEC §5, §13).

Host tools are named by their internal dotted names (`memory.access`); `mcp_name` is the name
the MCP layer shows (`memory_access`; `subagent.background` is `background_agent`). Their
parameters follow `seeds/host-tools.txt`, checked where literal and again at the bridge:
required fields per literal `action`/`operation`, `prompt`/`promptFile` exclusive, cron
expressions (`forgec.catalog.cron`), SQL (`forgec.catalog.sql`), URLs (`forgec.catalog.urls`),
host caps (`timeoutMs` 120000, `db.query` `limit` 1000: a literal above is an error).

Marks that depend on the operation (`schedule.manage` `list`, `memory.access` `read`/`list` are
Read/R1, the rest Write/R3) take the worst case when the operation is not a literal (or not a
valid one). `channel.send` needs `channel.send:<channelId>` when the channel is a literal, else
`channel.send:*`. Host tools have no size limit of their own in the seed; each takes the run
input limit, 64 KiB.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from forgec.catalog.base import CapabilitySpec, Catalog, MarksResolver, StepMarks
from forgec.catalog.cron import check_cron
from forgec.catalog.fields import (
    Field,
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
from forgec.catalog.talos import KIB, fixed_marks, make_spec
from forgec.catalog.talos import SPECS as TALOS_SPECS
from forgec.catalog.urls import check_url

HOST_TOOL_LIMIT = 64 * KIB
HTTP_TIMEOUT_CAP_MS = 120_000
DB_LIMIT_CAP = 1000
CHANNEL_NAME_MAX = 64

_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _check_sql(value: str) -> list[str]:
    from forgec.catalog.sql import check_select  # sqlglot is imported only when SQL is checked

    return check_select(value)


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


def by_operation(selector: str, read_values: tuple[str, ...], label: str) -> MarksResolver:
    """Read/R1 when `selector` is literally one of `read_values`, else Write/R3 (worst case)."""
    read = StepMarks(power="Read", risk="R1", label=label)
    write = StepMarks(power="Write", risk="R3", label=label)

    def resolve(literal: Mapping[str, Any]) -> StepMarks:
        value = literal.get(selector) if isinstance(literal, Mapping) else None
        return read if isinstance(value, str) and value in read_values else write

    return resolve


def channel_marks(literal: Mapping[str, Any]) -> StepMarks:
    """`channel.send:<channelId>` for a literal, valid channel; `channel.send:*` otherwise."""
    channel = literal.get("channelId") if isinstance(literal, Mapping) else None
    if isinstance(channel, str) and not check_channel_name(channel):
        return StepMarks(power="Send", risk="R3", label=f"channel.send:{channel}")
    return StepMarks(power="Send", risk="R3", label="channel.send:*")


# Result shapes, SPEC §13 ("Results of the host tools").
_STR: Mapping[str, Any] = {"type": "string"}
_OBJECT: Mapping[str, Any] = {"type": "object"}
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


def _limit_field(description: str, cap: int) -> Field:
    return integer(f"{description} (1–{cap})", minimum=1, maximum=cap)


HOST_SPECS: tuple[CapabilitySpec, ...] = (
    make_spec(
        "schedule.manage",
        "Create, update, cancel, delete or list the persona's cron schedules.",
        Shape(
            {
                "action": enum("what to do", "create", "update", "cancel", "delete", "list"),
                "scheduleId": string("the schedule (update, cancel, delete)", min_length=1),
                "cronExpr": string("5-field cron expression", validate=check_cron),
                "label": string("human-readable label"),
                "prompt": string("inline prompt (or promptFile)", min_length=1),
                "promptFile": string(
                    "prompt alias from the persona's prompts/ folder (or prompt)",
                    validate=check_prompt_file,
                ),
            },
            limit=HOST_TOOL_LIMIT,
            required=("action",),
            required_when=(
                RequiredWhen("action", ("create",), "cronExpr"),
                RequiredWhen("action", ("update", "cancel", "delete"), "scheduleId"),
            ),
            exclusive=(("prompt", "promptFile"),),
        ),
        by_operation("action", ("list",), "schedule.manage:own"),
        result={
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
        undo="schedule.manage",
        mcp_name="schedule_manage",
    ),
    make_spec(
        "channel.send",
        "Send a Markdown message to a configured Talon channel.",
        Shape(
            {
                "channelId": string("configured channel name", validate=check_channel_name),
                "content": string("Markdown body", min_length=1),
                "replyTo": string("channel-specific thread or message id", min_length=1),
            },
            limit=HOST_TOOL_LIMIT,
            required=("channelId", "content"),
        ),
        channel_marks,
        result={
            "type": "object",
            "properties": {"messageId": _STR, "channelId": _STR},
            "required": ["messageId", "channelId"],
        },
        mcp_name="channel_send",
    ),
    make_spec(
        "memory.access",
        "Read and write per-thread memory items.",
        Shape(
            {
                "operation": enum("what to do", "read", "write", "delete", "list"),
                "key": string(
                    "item key (read, delete; write generates one if absent)", min_length=1
                ),
                "value": any_value("the value to write (non-strings are stored as JSON)"),
                "namespace": string("fact, summary or note (others fall back to note)"),
            },
            limit=HOST_TOOL_LIMIT,
            required=("operation",),
            required_when=(
                RequiredWhen("operation", ("read", "delete"), "key"),
                RequiredWhen("operation", ("write",), "value"),
            ),
        ),
        by_operation("operation", ("read", "list"), "memory.access:thread"),
        result={
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
        undo="memory.access",
        mcp_name="memory_access",
    ),
    make_spec(
        "net.http",
        "Make an HTTP(S) request through the host, to allowlisted hosts only.",
        Shape(
            {
                "method": enum("HTTP method", "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"),
                "url": string("absolute http: or https: URL", validate=check_url),
                "headers": Field(
                    "object",
                    "request headers (values: strings or declared credentials)",
                    values=string("header value"),
                    credential_values=True,
                    validate=check_headers,
                ),
                "body": string("request body"),
                "timeoutMs": number(
                    f"timeout in ms (default 30000, at most {HTTP_TIMEOUT_CAP_MS})",
                    minimum=1,
                    maximum=HTTP_TIMEOUT_CAP_MS,
                ),
            },
            limit=HOST_TOOL_LIMIT,
            required=("method", "url"),
        ),
        fixed_marks("Network", "R4", "net.http:egress"),
        result={
            "type": "object",
            "properties": {
                "status": {"type": "integer"},
                "headers": {"type": "object", "additionalProperties": _STR},
                "body": _STR,
            },
            "required": ["status", "headers", "body"],
        },
        needs_network=True,
        mcp_name="net_http",
    ),
    make_spec(
        "db.query",
        "Run one read-only SELECT on memory_items, schedules, messages or threads.",
        Shape(
            {
                "sql": string("one plain SELECT on the allowed tables", validate=_check_sql),
                "params": array(
                    "prepared-statement parameters",
                    Field("any", "string, number, boolean or null", validate=_check_param),
                ),
                "limit": _limit_field("rows at most (default 100)", DB_LIMIT_CAP),
            },
            limit=HOST_TOOL_LIMIT,
            required=("sql",),
        ),
        fixed_marks("Read", "R2", "db.query:own"),
        result={
            "type": "object",
            "properties": {
                "rows": {"type": "array", "items": _OBJECT},
                "truncated": {"type": "boolean"},
            },
            "required": ["rows", "truncated"],
        },
        mcp_name="db_query",
    ),
    make_spec(
        "subagent.invoke",
        "Run a named sub-agent synchronously and return its result.",
        Shape(
            {
                "name": string("sub-agent name", min_length=1),
                "input": obj("JSON object passed to the sub-agent"),
            },
            limit=HOST_TOOL_LIMIT,
            required=("name",),
        ),
        fixed_marks("Delegate", "R3", "subagent.invoke"),
        result=_DELEGATED,
        mcp_name="subagent_invoke",
    ),
    make_spec(
        "subagent.background",
        "Start and manage long-running background agent tasks.",
        Shape(
            {
                "action": enum("what to do", "spawn", "status", "cancel", "result", "profiles"),
                "prompt": string("the task (spawn)", min_length=1),
                "taskId": string("the task (status, cancel, result)", min_length=1),
                "provider": string("provider override (spawn)"),
                "profile": string("persona profile name (spawn)"),
                "workingDirectory": string("working directory (spawn)"),
                "timeoutMinutes": number("timeout override (spawn); under 15 is raised to 15"),
            },
            limit=HOST_TOOL_LIMIT,
            required=("action",),
            required_when=(
                RequiredWhen("action", ("spawn",), "prompt"),
                RequiredWhen("action", ("status", "cancel", "result"), "taskId"),
            ),
        ),
        fixed_marks("Delegate", "R4", "subagent.background"),
        result=_DELEGATED,
        mcp_name="background_agent",
    ),
    make_spec(
        "persona.send",
        "Send a task to another persona (A2A), optionally waiting for the reply.",
        Shape(
            {
                "target_persona": string("destination persona", min_length=1),
                "message": string("the task or message", min_length=1),
                "await_reply": boolean("wait for the reply inline"),
            },
            limit=HOST_TOOL_LIMIT,
            required=("target_persona", "message"),
        ),
        fixed_marks("Delegate", "R3", "persona.send:*"),
        result=_DELEGATED,
        mcp_name="persona_send",
    ),
    make_spec(
        "persona.task_status",
        "Fetch the status or result of a delegated A2A task.",
        Shape(
            {
                "task_id": string("task id returned by persona.send", min_length=1),
                "wait_ms": number("poll up to this many ms for a terminal state", minimum=0),
            },
            limit=HOST_TOOL_LIMIT,
            required=("task_id",),
        ),
        fixed_marks("Read", "R1", "persona.send:*"),
        result=_DELEGATED,
        mcp_name="persona_task_status",
    ),
    make_spec(
        "persona.list",
        "List the other loaded personas available for delegation.",
        Shape({}, limit=HOST_TOOL_LIMIT),
        fixed_marks("Read", "R1", "persona.send:*"),
        result=_DELEGATED,
        mcp_name="persona_list",
    ),
)

CATALOG = Catalog(
    name="talon", capabilities={spec.name: spec for spec in (*TALOS_SPECS, *HOST_SPECS)}
)
