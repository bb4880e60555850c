"""The capability catalogs: marks, input rules, SQL/cron/URL checks, schemas, suggestions."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import json_values, scalars

from forgec.catalog import get_catalog, suggest, unknown_capability_hint
from forgec.catalog.base import StepMarks
from forgec.catalog.cron import check_cron
from forgec.catalog.sql import check_select
from forgec.catalog.urls import check_url, url_host
from forgec.ir.shapes import compact_json_size

TALOS = get_catalog("talos")
TALON = get_catalog("talon")
NONE: frozenset[str] = frozenset()


def problems(catalog: Any, name: str, literal: Any, computed: frozenset[str] = NONE) -> list[str]:
    spec = catalog.get(name)
    assert spec is not None, name
    return [p.message for p in spec.shape.check(literal, computed)]


# -- the tables ------------------------------------------------------------------------------

TALOS_ROWS = {
    # name: (power, risk, input limit, undo)
    "tasks.list": ("Read", "R1", 1024, None),
    "tasks.create": ("Write", "R2", 16384, "tasks.setStatus"),
    "tasks.setStatus": ("Write", "R2", 1024, "tasks.setStatus"),
    "notes.list": ("Read", "R1", 1024, None),
    "notes.create": ("Write", "R2", 32768, None),
    "notes.update": ("Write", "R2", 32768, "notes.update"),
    "memory.search": ("Read", "R2", 1024, None),
    "memory.create": ("Write", "R3", 32768, None),
}


def test_talos_has_exactly_the_seed_table() -> None:
    assert set(TALOS.capabilities) == set(TALOS_ROWS)
    for name, (power, risk, limit, undo) in TALOS_ROWS.items():
        spec = TALOS.capabilities[name]
        assert spec.step_marks({}) == StepMarks(power, risk, None)
        assert (spec.input_limit, spec.undo, spec.needs_network) == (limit, undo, False)


HOST_ROWS = {
    # name: (mcp name, literal input, expected marks, undo)
    "schedule.manage": (
        "schedule_manage",
        {"action": "create"},
        StepMarks("Write", "R3", "schedule.manage:own"),
        "schedule.manage",
    ),
    "channel.send": (
        "channel_send",
        {"channelId": "ops"},
        StepMarks("Send", "R3", "channel.send:ops"),
        None,
    ),
    "memory.access": (
        "memory_access",
        {"operation": "write"},
        StepMarks("Write", "R3", "memory.access:thread"),
        "memory.access",
    ),
    "net.http": ("net_http", {}, StepMarks("Network", "R4", "net.http:egress"), None),
    "db.query": ("db_query", {}, StepMarks("Read", "R2", "db.query:own"), None),
    "subagent.invoke": (
        "subagent_invoke",
        {},
        StepMarks("Delegate", "R3", "subagent.invoke"),
        None,
    ),
    "subagent.background": (
        "background_agent",
        {"action": "status"},
        StepMarks("Delegate", "R4", "subagent.background"),
        None,
    ),
    "persona.send": ("persona_send", {}, StepMarks("Delegate", "R3", "persona.send:*"), None),
    "persona.task_status": (
        "persona_task_status",
        {},
        StepMarks("Read", "R1", "persona.send:*"),
        None,
    ),
    "persona.list": ("persona_list", {}, StepMarks("Read", "R1", "persona.send:*"), None),
}


def test_talon_is_talos_plus_the_ten_host_tools() -> None:
    assert set(TALON.capabilities) == set(TALOS_ROWS) | set(HOST_ROWS)
    for name in TALOS_ROWS:
        assert TALON.capabilities[name] == TALOS.capabilities[name]
    for name, (mcp, literal, marks, undo) in HOST_ROWS.items():
        spec = TALON.capabilities[name]
        assert (spec.mcp_name, spec.step_marks(literal), spec.undo) == (mcp, marks, undo)
        assert spec.needs_network == (name == "net.http")
        assert TALON.by_mcp_name(mcp) is spec


@pytest.mark.parametrize(
    ("name", "literal", "power", "risk"),
    [
        ("schedule.manage", {"action": "list"}, "Read", "R1"),
        ("schedule.manage", {"action": "delete"}, "Write", "R3"),
        ("schedule.manage", {}, "Write", "R3"),  # action computed: worst case
        ("schedule.manage", {"action": "lsit"}, "Write", "R3"),  # invalid: worst case
        ("schedule.manage", {"action": ["list"]}, "Write", "R3"),
        ("memory.access", {"operation": "read"}, "Read", "R1"),
        ("memory.access", {"operation": "list"}, "Read", "R1"),
        ("memory.access", {"operation": "delete"}, "Write", "R3"),
        ("memory.access", {}, "Write", "R3"),
    ],
)
def test_operation_dependent_marks(name: str, literal: Any, power: str, risk: str) -> None:
    marks = TALON.capabilities[name].step_marks(literal)
    assert (marks.power, marks.risk) == (power, risk)


@pytest.mark.parametrize(
    ("literal", "label"),
    [
        ({"channelId": "team-updates"}, "channel.send:team-updates"),
        ({}, "channel.send:*"),  # computed channel
        ({"channelId": 3}, "channel.send:*"),
        ({"channelId": "a,b"}, "channel.send:*"),  # not a channel name: no label injection
    ],
)
def test_channel_label(literal: Any, label: str) -> None:
    assert TALON.capabilities["channel.send"].step_marks(literal).label == label


# -- TALOS inputs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "literal"),
    [
        ("tasks.list", {}),
        ("tasks.list", {"status": "done", "query": "milk", "limit": 100}),
        ("tasks.create", {"title": "Buy milk"}),
        ("tasks.create", {"title": "é" * 200, "notes": "", "due": "2026-12-01", "status": "open"}),
        ("tasks.create", {"title": "x", "due": None}),
        ("tasks.setStatus", {"id": "t1", "status": "cancelled"}),
        ("notes.list", {"limit": 1}),
        ("notes.create", {"title": "n", "body": ""}),
        ("notes.update", {"id": "n1", "body": "new"}),
        ("memory.search", {"query": "birthday", "limit": 50}),
        ("memory.create", {"text": "likes tea", "tags": ["food", "prefs"]}),
    ],
)
def test_good_talos_inputs(name: str, literal: Any) -> None:
    assert problems(TALOS, name, literal) == []
    jsonschema.validate(literal, TALOS.capabilities[name].input_schema)


@pytest.mark.parametrize(
    ("name", "literal", "expected"),
    [
        ("tasks.list", {"limit": 0}, "`limit` is 0, must be from 1 to 100"),
        ("tasks.list", {"limit": 101}, "`limit` is 101, must be from 1 to 100"),
        ("tasks.list", {"limit": 5.0}, "`limit` must be an integer, not a number"),
        ("tasks.list", {"limit": True}, "`limit` must be an integer, not a boolean"),
        ("tasks.list", {"status": "closed"}, "expected one of `open`, `done`, `cancelled`"),
        ("tasks.list", {"qeury": "x"}, "unknown field `qeury` (did you mean `query`?)"),
        ("tasks.create", {}, "missing required field `title`"),
        ("tasks.create", {"title": ""}, "`title` must not be empty"),
        ("tasks.create", {"title": "x" * 201}, "201 characters long, at most 200"),
        ("tasks.create", {"title": "x", "due": "tomorrow"}, "not a date (expected YYYY-MM-DD)"),
        ("tasks.create", {"title": "x", "due": "2026-02-30"}, "not a valid calendar date"),
        ("tasks.create", {"title": "x", "due": "2026-12-01T10:00:00Z"}, "not a date"),
        ("tasks.create", {"title": "x", "status": "Done"}, "(did you mean `done`?)"),
        ("tasks.setStatus", {"id": "t1"}, "missing required field `status`"),
        ("notes.create", {"title": "t"}, "missing required field `body`"),
        ("notes.update", {"title": "t"}, "missing required field `id`"),
        ("memory.search", {"query": "x", "limit": 51}, "must be from 1 to 50"),
        ("memory.search", {}, "missing required field `query`"),
        ("memory.create", {"text": "x", "tags": ["a", 1]}, "`tags[1]` must be a string"),
        ("memory.create", {"text": "x", "tags": "a"}, "`tags` must be a list, not a string"),
        ("tasks.list", [], "the input must be an object, not a list"),
        ("tasks.list", "x", "the input must be an object, not a string"),
    ],
)
def test_bad_talos_inputs(name: str, literal: Any, expected: str) -> None:
    found = problems(TALOS, name, literal)
    assert any(expected in message for message in found), found
    if literal != {"limit": 5.0}:  # the one static rule JSON Schema does not share
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(
                literal,
                TALOS.capabilities[name].input_schema,
                format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER,
            )


def test_integral_floats_are_integers_only_at_run_time() -> None:
    spec = TALOS.capabilities["tasks.list"]
    assert spec.shape.check({"limit": 5.0}, NONE)
    assert spec.shape.check({"limit": 5.0}, runtime=True) == []
    assert spec.shape.check({"limit": 5.5}, runtime=True)


def test_title_counts_code_points_not_bytes() -> None:
    emoji = "🦊" * 200  # 800 bytes of UTF-8, 200 code points
    assert problems(TALOS, "tasks.create", {"title": emoji}) == []
    assert problems(TALOS, "tasks.create", {"title": emoji + "x"})


def test_every_problem_is_listed() -> None:
    found = problems(TALOS, "tasks.create", {"title": "", "due": "x", "status": "?", "extra": 1})
    assert len(found) == 4


@pytest.mark.parametrize(("name", "limit"), [(name, row[2]) for name, row in TALOS_ROWS.items()])
def test_size_limit_at_the_byte(name: str, limit: int) -> None:
    field = {"tasks.list": "query", "notes.list": "query", "memory.search": "query"}.get(
        name, "title" if name != "memory.create" else "text"
    )
    base: dict[str, Any] = {
        "tasks.setStatus": {"id": "", "status": "open"},
        "notes.create": {"body": "b"},
        "notes.update": {"id": "n"},
    }.get(name, {})
    if name == "tasks.setStatus":
        field = "id"
    literal = {**base, field: "x"}
    literal[field] = "x" * (limit - compact_json_size(literal) + 1)
    assert compact_json_size(literal) == limit
    size_problems = [m for m in problems(TALOS, name, literal) if "bytes" in m]
    assert size_problems == []
    literal[field] += "x"
    size_problems = [m for m in problems(TALOS, name, literal) if "bytes" in m]
    assert size_problems == [
        f"the input is {limit + 1} bytes as compact JSON, over this capability's limit of "
        f"{limit} bytes"
    ]


def test_size_counts_utf8_bytes() -> None:
    literal = {"query": "é" * 510}  # 510 code points, 1020 bytes
    assert compact_json_size(literal) == 1032
    assert any("1032 bytes" in m for m in problems(TALOS, "tasks.list", literal))


def test_size_is_not_checked_when_a_field_is_computed() -> None:
    literal = {"query": "x" * 5000}
    assert not [
        m for m in problems(TALOS, "tasks.list", literal, frozenset({"limit"})) if "bytes" in m
    ]


def test_computed_fields_count_as_present_and_must_be_known() -> None:
    assert problems(TALOS, "tasks.setStatus", {"id": "t"}, frozenset({"status"})) == []
    found = problems(TALOS, "tasks.setStatus", {"id": "t"}, frozenset({"status", "stauts"}))
    assert found == ["unknown field `stauts` (did you mean `status`?); known fields: id, status"]


def test_nested_expressions_are_left_to_run_time() -> None:
    literal = {"text": "x", "tags": ["a", {"$ref": "input.tag"}]}
    assert problems(TALOS, "memory.create", literal) == []
    runtime = TALOS.capabilities["memory.create"].shape.check(literal, runtime=True)
    assert [p.path for p in runtime] == [("tags", 1)]


def test_runtime_check_sees_every_value_and_the_size() -> None:
    spec = TALOS.capabilities["tasks.create"]
    assert spec.shape.check({"title": "ok", "due": "2026-01-31"}, runtime=True) == []
    found = spec.shape.check({"title": {"$ref": "input.x"}, "notes": "x" * 17000}, runtime=True)
    assert [p.path for p in found] == [("title",), ()]


# -- Talon inputs ----------------------------------------------------------------------------

GOOD_TALON = [
    ("schedule.manage", {"action": "create", "cronExpr": "0 9 * * 1-5", "prompt": "stand-up"}),
    (
        "schedule.manage",
        {"action": "create", "cronExpr": "*/15 * * * *", "promptFile": "memory-grooming"},
    ),
    ("schedule.manage", {"action": "update", "scheduleId": "s1", "label": "weekly"}),
    ("schedule.manage", {"action": "cancel", "scheduleId": "s1"}),
    ("schedule.manage", {"action": "list"}),
    ("channel.send", {"channelId": "ops", "content": "**done**", "replyTo": "t-1"}),
    ("memory.access", {"operation": "write", "value": {"any": ["json"]}, "namespace": "fact"}),
    ("memory.access", {"operation": "write", "key": "k", "value": None}),
    ("memory.access", {"operation": "read", "key": "k"}),
    ("memory.access", {"operation": "list"}),
    ("net.http", {"method": "GET", "url": "https://api.example.org/v1?q=1"}),
    (
        "net.http",
        {
            "method": "POST",
            "url": "http://example.org:8080/x",
            "headers": {"Content-Type": "application/json", "Authorization": {"$credential": "gh"}},
            "body": "{}",
            "timeoutMs": 120000,
        },
    ),
    (
        "db.query",
        {"sql": "SELECT * FROM memory_items WHERE key = ?", "params": ["k"], "limit": 1000},
    ),
    ("subagent.invoke", {"name": "memory-retriever", "input": {"query": "x"}}),
    ("subagent.background", {"action": "spawn", "prompt": "refactor", "timeoutMinutes": 5}),
    ("subagent.background", {"action": "result", "taskId": "b1"}),
    ("subagent.background", {"action": "profiles"}),
    ("persona.send", {"target_persona": "researcher", "message": "find x", "await_reply": True}),
    ("persona.task_status", {"task_id": "a2a-1", "wait_ms": 0}),
    ("persona.list", {}),
]


@pytest.mark.parametrize(("name", "literal"), GOOD_TALON)
def test_good_talon_inputs(name: str, literal: Any) -> None:
    assert problems(TALON, name, literal) == []
    assert TALON.capabilities[name].shape.check(literal, runtime=True) == []
    jsonschema.validate(literal, TALON.capabilities[name].input_schema)


BAD_TALON = [
    ("schedule.manage", {}, "missing required field `action`"),
    ("schedule.manage", {"action": "create"}, "`cronExpr`, required when `action` is `create`"),
    ("schedule.manage", {"action": "update"}, "`scheduleId`, required when `action` is `update`"),
    ("schedule.manage", {"action": "cancel"}, "`scheduleId`, required when `action` is `cancel`"),
    ("schedule.manage", {"action": "delete"}, "`scheduleId`, required when `action` is `delete`"),
    ("schedule.manage", {"action": "pause"}, "expected one of `create`"),
    (
        "schedule.manage",
        {"action": "create", "cronExpr": "* * * * *", "prompt": "a", "promptFile": "b"},
        "`prompt` and `promptFile` are mutually exclusive",
    ),
    ("schedule.manage", {"action": "create", "cronExpr": "* * * *"}, "this one has 4"),
    ("schedule.manage", {"action": "list", "promptFile": "../secrets"}, "is not a basename"),
    ("schedule.manage", {"action": "list", "promptFile": "a/b"}, "is not a basename"),
    ("schedule.manage", {"action": "list", "promptFile": "a\\b"}, "is not a basename"),
    ("schedule.manage", {"action": "list", "promptFile": ".."}, "is not a basename"),
    ("channel.send", {"channelId": "ops"}, "missing required field `content`"),
    ("channel.send", {"channelId": "a b", "content": "x"}, "is not a channel name"),
    ("memory.access", {"operation": "read"}, "`key`, required when `operation` is `read`"),
    ("memory.access", {"operation": "delete"}, "`key`, required when `operation` is `delete`"),
    ("memory.access", {"operation": "write", "key": "k"}, "`value`, required when"),
    ("net.http", {"url": "https://example.org"}, "missing required field `method`"),
    ("net.http", {"method": "get", "url": "https://example.org"}, "did you mean `GET`?"),
    ("net.http", {"method": "GET", "url": "ftp://example.org/x"}, "only http: and https:"),
    ("net.http", {"method": "GET", "url": "file:///etc/passwd"}, "only http: and https:"),
    ("net.http", {"method": "GET", "url": "example.org/x"}, "only http: and https:"),
    ("net.http", {"method": "GET", "url": "https://e.org", "timeoutMs": 120001}, "1 to 120000"),
    (
        "net.http",
        {"method": "GET", "url": "https://e.org", "headers": {"A": 1}},
        "`headers.A` must be a string",
    ),
    (
        "net.http",
        {"method": "GET", "url": "https://e.org", "headers": {"A": "x\r\nB: y"}},
        "line break",
    ),
    (
        "net.http",
        {"method": "GET", "url": "https://e.org", "headers": {"Bad Name": "x"}},
        "not a valid header name",
    ),
    ("net.http", {"method": "GET", "url": "https://e.org", "headers": "A: b"}, "must be an object"),
    ("db.query", {}, "missing required field `sql`"),
    ("db.query", {"sql": "DELETE FROM memory_items"}, "only SELECT is allowed, not DELETE"),
    ("db.query", {"sql": "SELECT 1", "limit": 1001}, "from 1 to 1000"),
    ("db.query", {"sql": "SELECT 1", "params": [[1]]}, "a statement parameter is a string"),
    ("subagent.invoke", {"input": {}}, "missing required field `name`"),
    ("subagent.invoke", {"name": "x", "input": [1]}, "`input` must be an object"),
    (
        "subagent.background",
        {"action": "spawn"},
        "`prompt` or `tool`, required when `action` is `spawn`",
    ),
    ("subagent.background", {"action": "status"}, "`taskId`, required when `action` is `status`"),
    ("subagent.background", {"action": "cancel"}, "`taskId`, required when"),
    ("subagent.background", {"action": "result"}, "`taskId`, required when"),
    ("persona.send", {"target_persona": "x", "await_reply": "yes"}, "must be a boolean"),
    ("persona.send", {"message": "m"}, "missing required field `target_persona`"),
    ("persona.task_status", {"task_id": "t", "wait_ms": -1}, "must be at least 0"),
    ("persona.list", {"filter": "x"}, "this capability takes no input fields"),
]


@pytest.mark.parametrize(("name", "literal", "expected"), BAD_TALON)
def test_bad_talon_inputs(name: str, literal: Any, expected: str) -> None:
    found = problems(TALON, name, literal)
    assert any(expected in message for message in found), found


def test_talon_timeout_minutes_under_15_is_not_refused() -> None:
    assert (
        problems(
            TALON, "subagent.background", {"action": "spawn", "prompt": "p", "timeoutMinutes": 1}
        )
        == []
    )


def test_required_by_operation_waits_for_a_literal_operation() -> None:
    # the action is computed: which fields it needs is known only at run time
    assert problems(TALON, "schedule.manage", {}, frozenset({"action"})) == []
    # a computed field satisfies the rule
    assert (
        problems(TALON, "schedule.manage", {"action": "create"}, frozenset({"cronExpr", "prompt"}))
        == []
    )
    # exclusivity is about presence, so computed fields count
    found = problems(
        TALON, "schedule.manage", {"action": "list"}, frozenset({"prompt", "promptFile"})
    )
    assert any("mutually exclusive" in m for m in found)


def test_talon_schemas_express_the_conditional_rules() -> None:
    schema = TALON.capabilities["schedule.manage"].input_schema
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"action": "create"}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"action": "list", "prompt": "a", "promptFile": "b"}, schema)
    jsonschema.validate({"action": "delete", "scheduleId": "s"}, schema)


def test_every_schema_is_valid_draft7() -> None:
    for spec in TALON.capabilities.values():
        jsonschema.Draft7Validator.check_schema(spec.input_schema)
        jsonschema.Draft7Validator.check_schema(spec.result_schema)


def test_reference_results_match_result_schemas() -> None:
    task = {
        "id": "t1",
        "title": "x",
        "notes": "",
        "due": None,
        "status": "open",
        "createdAt": "2026-11-29T10:00:00Z",
        "updatedAt": "2026-11-29T10:00:00Z",
    }
    jsonschema.validate(task, TALOS.capabilities["tasks.create"].result_schema)
    jsonschema.validate({"items": [task]}, TALOS.capabilities["tasks.list"].result_schema)
    jsonschema.validate(
        {**task, "previousStatus": "done"}, TALOS.capabilities["tasks.setStatus"].result_schema
    )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {**task, "status": "closed"}, TALOS.capabilities["tasks.create"].result_schema
        )
    jsonschema.validate(
        {"rows": [{"key": "k"}], "truncated": False}, TALON.capabilities["db.query"].result_schema
    )
    jsonschema.validate(
        {"key": "k", "deleted": True}, TALON.capabilities["memory.access"].result_schema
    )


# -- SQL -------------------------------------------------------------------------------------

SQL_OK = [
    "SELECT * FROM memory_items",
    "select key, value from memory_items where namespace = 'fact' order by created_at desc limit 5",
    "SELECT m.id, t.title FROM messages m JOIN threads t ON t.id = m.thread_id WHERE m.role = ?",
    "SELECT s.* FROM schedules AS s LEFT JOIN threads USING (id)",
    "SELECT count(*), max(created_at) FROM messages GROUP BY thread_id HAVING count(*) > 1",
    "SELECT * FROM memory_items;",
    "SELECT * FROM memory_items; -- trailing comment",
    "-- leading comment\nSELECT /* inline */ * FROM memory_items",
    "SELECT 'a;b' FROM memory_items",
    "SeLeCt * FrOm MEMORY_ITEMS",
    'SELECT * FROM "memory_items"',
    "SELECT json_extract(value, '$.x'), lower(key), coalesce(a, b) FROM memory_items",
    "SELECT * FROM memory_items WHERE key IN ('a', 'b') AND id BETWEEN 1 AND 9",
    "SELECT * FROM memory_items /* ; DELETE FROM memory_items */",
]

SQL_REFUSED = [
    ("SELECT 1 UNION SELECT 2", "UNION"),
    ("SELECT * FROM memory_items UNION ALL SELECT * FROM threads", "UNION"),
    ("SELECT * FROM memory_items EXCEPT SELECT * FROM threads", "EXCEPT"),
    ("SELECT * FROM memory_items INTERSECT SELECT * FROM threads", "INTERSECT"),
    ("WITH a AS (SELECT 1) SELECT * FROM memory_items", "WITH"),
    ("SELECT * FROM memory_items WHERE id IN (SELECT id FROM threads)", "subqueries"),
    ("SELECT * FROM memory_items WHERE EXISTS (SELECT 1 FROM threads)", "subqueries"),
    ("SELECT * FROM (SELECT * FROM memory_items)", "subqueries"),
    ("SELECT (SELECT count(*) FROM threads) FROM memory_items", "subqueries"),
    ("SELECT * FROM memory_items WHERE id IN sqlite_master", "`IN table`"),
    ("SELECT 1; DROP TABLE x", "only one statement"),
    ("SELECT * FROM memory_items;;", "only one statement"),
    ("; SELECT * FROM memory_items", "only one statement"),
    ("SELECT * FROM memory_items -- ;\nDELETE FROM memory_items", "not valid SQL"),
    ("SELECT * FROM memory_items /* */ ; DELETE FROM memory_items", "only one statement"),
    ("ATTACH DATABASE '/tmp/x.db' AS x", "not ATTACH"),
    ("PRAGMA table_info(memory_items)", "not PRAGMA"),
    ("INSERT INTO memory_items VALUES (1)", "not INSERT"),
    ("UPDATE memory_items SET value = 1", "not UPDATE"),
    ("DELETE FROM memory_items", "not DELETE"),
    ("CREATE TABLE x (a)", "not CREATE"),
    ("DROP TABLE memory_items", "not DROP"),
    ("VACUUM", "not VACUUM"),
    ("REPLACE INTO memory_items VALUES (1)", "not REPLACE"),
    ("EXPLAIN SELECT * FROM memory_items", "not EXPLAIN"),
    ("VALUES (1)", "not VALUES"),
    ("SELECT * FROM sqlite_master", "table `sqlite_master` is not allowed"),
    ('SELECT * FROM "sqlite_master"', "table `sqlite_master` is not allowed"),
    ("SELECT * FROM [sqlite_schema]", "table `sqlite_schema` is not allowed"),
    ("SELECT * FROM `users`", "table `users` is not allowed"),
    ("SELECT * FROM memory_items, secrets", "table `secrets` is not allowed"),
    ("SELECT * FROM memory_items JOIN personas ON 1", "table `personas` is not allowed"),
    ("SELECT * FROM temp.memory_items", "write the table name alone"),
    ("SELECT * FROM main.memory_items", "write the table name alone"),
    ("SELECT * FROM json_each('[1]')", "table-valued function `json_each`"),
    ("SELECT * FROM pragma_table_info('memory_items')", "table-valued function"),
    ("SELECT load_extension('/tmp/evil')", "function `load_extension` is not allowed"),
    ("SELECT \"load_extension\"('x')", "function `load_extension` is not allowed"),
    ("SELECT readfile('/etc/passwd') FROM memory_items", "function `readfile`"),
    ("SELECT zeroblob(1000000000)", "function `zeroblob`"),
    ("SELECT fts3_tokenizer('x')", "function `fts3_tokenizer`"),
    ("SELECT 1 /* unterminated", "not valid SQL"),
    ("SELECT * FROM", "not valid SQL"),
    ("", "empty"),
    ("  -- nothing\n", "empty"),
]


@pytest.mark.parametrize("sql", SQL_OK)
def test_sql_accepted(sql: str) -> None:
    assert check_select(sql) == []


@pytest.mark.parametrize(("sql", "expected"), SQL_REFUSED)
def test_sql_refused(sql: str, expected: str) -> None:
    found = check_select(sql)
    assert any(expected in message for message in found), found


# the one authorizer is the host's (forgec.host.dbquery): tests/test_host_dbquery.py


# -- cron ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "expr",
    [
        "* * * * *",
        "0 9 * * 1-5",
        "*/15 * * * *",
        "0 0 1,15 * *",
        "0-59/5 0-23 1-31 1-12 0-7",
        "0 0 * JAN-MAR mon-fri",
        "30 4 29 2 *",
        "0 12 * * 7",
        "  5   4 * * sun ",
        "0\t9 * * *",
    ],
)
def test_cron_ok(expr: str) -> None:
    assert check_cron(expr) == []


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("* * * *", "this one has 4"),
        ("* * * * * *", "this one has 6"),
        ("@daily", "macros are not accepted"),
        ("60 * * * *", "minute value 60 is out of range 0-59"),
        ("0 24 * * *", "hour value 24"),
        ("0 0 0 * *", "day of month value 0"),
        ("0 0 32 * *", "day of month value 32"),
        ("0 0 * 13 *", "month value 13"),
        ("0 0 * * 8", "day of week value 8"),
        ("*/0 * * * *", "step `0`"),
        ("5-1 * * * *", "runs backwards"),
        ("0 0 L * *", "`L` is not a valid day of month value"),
        ("0 0 * * 5#2", "not a valid day of week value"),
        ("H * * * *", "not a valid minute value"),
        ("0 0 ? * *", "not a valid day of month value"),
        ("0 0 30 2 *", "never run"),
        ("1,,2 * * * *", "empty item"),
        ("", "this one has 0"),
        ("0\u3000 9 * * *", "plain ASCII"),
        ("0 9 * * *\n0 10 * * *", "plain ASCII"),
    ],
)
def test_cron_bad(expr: str, expected: str) -> None:
    found = check_cron(expr)
    assert any(expected in message for message in found), found


# -- URLs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://api.example.org/v1", "api.example.org"),
        ("HTTPS://API.Example.ORG:8443/x?y=1#z", "api.example.org"),
        ("http://user:pw@example.org/", None),  # the host refuses userinfo: so does the checker
        ("https://example.org", "example.org"),
        ("http://[::1]:8080/", "::1"),
        ("ftp://example.org/", None),
        ("javascript:alert(1)", None),
        ("//example.org/x", None),
        ("https:///path", None),
        ("https://example.org:99999/", None),
        ("https://example.org:0/", None),
        ("https://evil.org\\@example.org/", None),
        ("https://a@b@example.org/", None),
        ("https://exa mple.org/", None),
        ("https://example.org/\nHost: evil", None),
        ("https://[::1/", None),
        ("", None),
    ],
)
def test_url_host(url: str, host: str | None) -> None:
    assert url_host(url) == host
    assert (check_url(url) == []) == (host is not None)


# -- suggestions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("catalog", "name", "expected"),
    [
        (TALON, "memory_access", "memory.access"),
        (TALON, "background_agent", "subagent.background"),
        (TALON, "persona_task_status", "persona.task_status"),
        (TALON, "Net.HTTP", "net.http"),
        (TALOS, "tasks_create", "tasks.create"),
        (TALOS, "tasks.setstatus", "tasks.setStatus"),
        (TALOS, "task.create", "tasks.create"),
        (TALOS, "notes.lst", "notes.list"),
        (TALOS, "launch.missiles", None),
        (TALOS, "tasks.create", None),  # known: nothing to suggest
    ],
)
def test_suggest(catalog: Any, name: str, expected: str | None) -> None:
    assert suggest(catalog, name) == expected


def test_unknown_capability_hint_names_the_other_target() -> None:
    assert unknown_capability_hint(TALON, "memory_access") == "did you mean `memory.access`?"
    hint = unknown_capability_hint(TALOS, "memory_access")
    assert hint == "`memory.access` is a capability of the `talon` target (`--target talon`)"
    assert unknown_capability_hint(TALOS, "db.query") is not None
    assert unknown_capability_hint(TALOS, "qqqq") is None


# -- robustness ------------------------------------------------------------------------------

JSON = json_values(
    scalars(floats=st.floats(), text=st.text(max_size=20)), keys=st.text(max_size=10)
)
FIELD_NAMES = st.sampled_from(
    ["action", "operation", "sql", "url", "cronExpr", "headers", "title", "limit", "x", "$ref"]
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(TALON.capabilities)),
    literal=JSON | st.dictionaries(FIELD_NAMES, JSON, max_size=5),
    computed=st.frozensets(FIELD_NAMES, max_size=3),
)
def test_check_input_never_raises(name: str, literal: Any, computed: frozenset[str]) -> None:
    spec = TALON.capabilities[name]
    for found in (spec.shape.check(literal, computed), spec.shape.check(literal, runtime=True)):
        assert all(isinstance(p.message, str) and p.message for p in found)
    if isinstance(literal, dict):
        spec.step_marks(literal)


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=60))
def test_sql_cron_url_never_raise(text: str) -> None:
    assert isinstance(check_select(text), list)
    assert isinstance(check_cron(text), list)
    assert isinstance(check_url(text), list)
    url_host(text)


def test_importing_the_targets_is_cheap() -> None:
    code = (
        "import sys, forgec.catalog.targets; "
        "print(sorted(m for m in ('sqlglot', 'croniter', 'jsonschema', 'lark') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_sqlite_tokenizer_guard_agrees_on_statement_ends() -> None:
    import sqlglot

    from forgec.catalog.sql import _sqlite_sees_two_statements

    dialect = sqlglot.Dialect.get_or_raise("sqlite")
    assert _sqlite_sees_two_statements("SELECT 1; SELECT 2", dialect)
    assert _sqlite_sees_two_statements("SELECT 1; -- c\nDELETE FROM x", dialect)
    assert not _sqlite_sees_two_statements("SELECT ';' FROM t; -- done", dialect)
    assert not _sqlite_sees_two_statements("SELECT 1 /* ; */ FROM t", dialect)


def test_huge_and_deep_values_give_problems_not_tracebacks() -> None:
    spec = TALON.capabilities["memory.access"]
    deep: list[Any] = []
    for _ in range(50_000):
        deep = [deep]
    found = spec.shape.check({"operation": "write", "value": deep}, runtime=True)
    assert [p.message for p in found] == ["the input is nested too deeply to be JSON"]
    assert spec.shape.check({"operation": "write", "value": 2**70}, runtime=True) == []


# the docs' capability tables are generated from the rows: tests/test_generated_docs.py


def test_messages_as_a_person_reads_them(snapshot: Any) -> None:
    lines = []
    for name, literal, _ in BAD_TALON:
        for problem in TALON.capabilities[name].shape.check(literal, NONE):
            path = "/".join(map(str, problem.path))
            lines.append(f"{name} /{path}: {problem.message}")
    for sql, _ in SQL_REFUSED:
        lines.append(f"sql {sql!r}: {'; '.join(check_select(sql))}")
    assert "\n".join(lines) == snapshot
