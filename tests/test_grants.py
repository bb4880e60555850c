"""The one grant rule (`forgec.ir.capabilities.grants`): what the MCP listing shows for a set of
persona labels is exactly what the bridge then lets through, for every host tool.

Measured before: with `persona.send:researcher` the listing showed `persona_send`,
`persona_task_status` and `persona_list` (it read any `<x>:*` label as a family) and the bridge
refused every call of them (`RUN_LABEL_DENIED`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forgec.catalog  # noqa: F401  (the cron, SQL and URL rules the shapes name)
from forgec.host import HostOptions, open_host
from forgec.host.config import HostConfig
from forgec.ir import capabilities as rows
from forgec.mcp.listing import host_entries
from forgec.runtime.host import CallContext, HostError

CTX = CallContext(tool_id="t", tool_version=1, node_id="n")
ROW_LABELS = sorted({row.label for row in rows.ROWS if row.label is not None})
# labels a person might write: the rows', near misses, other channels, other families
CANDIDATES = [
    *ROW_LABELS,
    "channel.send:alerts",
    "channel.send:general",
    "channel.send:",
    "channel.send:a b",
    "persona.send:researcher",
    "db.query:*",
    "memory.access:*",
    "subagent.invoke:*",
    "net.http:*",
    "schedule.manage",
]
# the smallest input each host tool accepts (for channel.send: the channel to try)
MINIMAL: dict[str, dict[str, Any]] = {
    "schedule.manage": {"action": "list"},
    "channel.send": {"channelId": "alerts", "content": "hi"},
    "memory.access": {"operation": "list"},
    "net.http": {"method": "GET", "url": "https://example.org/"},
    "db.query": {"sql": "SELECT 1 FROM threads"},
    "subagent.invoke": {"name": "x"},
    "subagent.background": {"action": "profiles"},
    "persona.send": {"target_persona": "p", "message": "m"},
    "persona.task_status": {"task_id": "a2a-x"},
    "persona.list": {},
}


def test_every_host_tool_has_a_minimal_input() -> None:
    assert set(MINIMAL) == {row.name for row in rows.rows_of("talon") if row.label is not None}
    for name, inp in MINIMAL.items():
        assert rows.BY_NAME[name].shape.check(inp, frozenset(), runtime=True) == []


def test_a_label_of_no_family_lists_nothing() -> None:
    assert host_entries(["persona.send:researcher"]) == []
    assert not rows.known_label("persona.send:researcher")
    listed = {e.internal for e in host_entries(["persona.send:*"])}
    assert listed == {"persona.send", "persona.task_status", "persona.list"}


@settings(max_examples=40, deadline=None)
@given(labels=st.sets(st.sampled_from(CANDIDATES), max_size=4))
def test_listed_exactly_when_the_bridge_grants(tmp_path_factory: Any, labels: set[str]) -> None:
    db = Path(tmp_path_factory.mktemp("g")) / "h.db"
    cfg = HostConfig(persona="alice", thread="t1")
    listed = {e.internal for e in host_entries(labels)}
    with open_host(HostOptions(db=db, config=cfg, persona_labels=tuple(labels))) as host:
        for name in MINIMAL:
            inp = dict(MINIMAL[name])
            if name == "channel.send":
                # the listing grants some channel: call the one a label names, if any
                named = [x.split(":", 1)[1] for x in labels if x.startswith("channel.send:")]
                valid = [
                    c for c in named if c not in ("*",) and rows.known_label(f"channel.send:{c}")
                ]
                inp["channelId"] = valid[0] if valid else "alerts"
            try:
                host.check_call(name, inp)
                granted = True
            except HostError as exc:
                granted = exc.code != "RUN_LABEL_DENIED"
            assert (name in listed) == granted, (name, sorted(labels))


@pytest.mark.parametrize("label", CANDIDATES)
def test_warning_and_grant_agree(label: str) -> None:
    # a label `forgec mcp serve` does not warn about grants some tool, and the other way round
    from forgec.commands.mcp import known_label

    grants_some = any(rows.grants([label], row.name) for row in rows.rows_of("talon") if row.label)
    assert known_label(label) == grants_some
