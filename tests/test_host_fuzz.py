"""Hostile inputs at the bridge: whatever JSON a flow hands any capability, the host answers
with a result or a `HostError` carrying a RUN_* code and a message — never another exception."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import json_values, scalars

from forgec.host import HostOptions, open_host
from forgec.host.bridge import TALON_TOOLS
from forgec.host.config import ChannelConfig, HostConfig
from forgec.host.handlers import HANDLERS
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="fuzz", tool_version=1, node_id="n", allowed_hosts=())
CAPABILITIES = sorted(HANDLERS)
assert set(TALON_TOOLS) < set(CAPABILITIES)
LABELS = (
    "schedule.manage:own",
    "channel.send:*",
    "memory.access:thread",
    "db.query:own",
    "subagent.invoke",
    "subagent.background",
    "persona.send:*",
    "net.http:egress",
)

JSON = json_values(
    scalars(integers=st.integers(-(10**6), 10**6), floats=None, text=st.text(max_size=20)),
    keys=st.text(max_size=8),
)
FIELDS = [
    "action",
    "operation",
    "key",
    "value",
    "namespace",
    "scheduleId",
    "cronExpr",
    "prompt",
    "promptFile",
    "label",
    "sql",
    "params",
    "limit",
    "channelId",
    "content",
    "name",
    "input",
    "taskId",
    "task_id",
    "wait_ms",
    "target_persona",
    "message",
    "title",
    "notes",
    "status",
    "id",
    "query",
    "text",
    "tags",
    "body",
    "due",
    "method",
    "url",
    "headers",
    "timeoutMs",
]
inputs = st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=5) | JSON


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    cfg = HostConfig(channels={"general": ChannelConfig("general", "slack")}, db_query_time_ms=200)
    h = open_host(
        HostOptions(db=tmp_path_factory.mktemp("fuzz") / "h.db", config=cfg, persona_labels=LABELS)
    )
    yield h
    h.close()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(capability=st.sampled_from(CAPABILITIES), inp=inputs)
def test_any_input_gets_a_result_or_a_run_error(host, capability: str, inp) -> None:
    try:
        host.call(capability, inp, CTX)
    except HostError as exc:
        assert exc.code.startswith("RUN_") and exc.message
