"""The capabilities pass: unknown names with a useful hint, literal inputs, compensation pairs.

Each code has a trigger and a boundary; the one-cause-one-code rules of SPEC §4.1/§12 are
pinned: an unknown capability gets no input check, a step that cannot be undone gets
`FORGE_INVALID_COMPENSATION` alone, the size limit applies only to an all-literal input.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from manifests import manifest_with_nodes

import forgec

DONE = {"id": "done", "type": "return", "value": {"ok": True}}


def step(capability: str, payload: Any, **extra: Any) -> dict[str, Any]:
    node = {
        "id": "step",
        "type": "capability",
        "capability": capability,
        "input": payload,
        "target": "out",
        "next": "done",
    }
    node.update(extra)
    return node


def check(nodes: list[dict[str, Any]], target: str = "talos", **kw: Any) -> forgec.Report:
    return forgec.check(orjson.dumps(manifest_with_nodes(nodes, **kw)), target=target)


def diags(report: forgec.Report) -> list[tuple[str, str]]:
    return [(d.code, d.path) for d in report.diagnostics]


# --- unknown capabilities --------------------------------------------------------------------


def test_unknown_capability_trigger_with_hint_and_no_input_check() -> None:
    report = check([step("tasks.lst", {"bogus": 1}), DONE])
    [diag] = report.diagnostics  # the bad input field is not checked against a guess
    assert (diag.code, diag.path) == ("FORGE_CAPABILITY_UNKNOWN", "/flow/nodes/0/capability")
    assert diag.hint == "did you mean `tasks.list`?"


def test_known_capability_boundary() -> None:
    assert diags(check([step("tasks.list", {"status": "open"}), DONE])) == []


def test_mcp_name_suggests_the_dotted_name() -> None:
    report = check([step("memory_access", {"operation": "list"}), DONE], target="talon")
    [diag] = report.diagnostics
    assert diag.code == "FORGE_CAPABILITY_UNKNOWN"
    assert diag.hint is not None and "`memory.access`" in diag.hint


def test_host_tool_on_talos_points_at_the_talon_target() -> None:
    report = check([step("net.http", {"method": "GET", "url": "https://a.example.org/"}), DONE])
    [diag] = report.diagnostics
    assert diag.code == "FORGE_CAPABILITY_UNKNOWN"
    assert diag.hint is not None and "talon" in diag.hint


# --- inputs ----------------------------------------------------------------------------------


def test_unknown_input_field_is_reported_at_the_field() -> None:
    report = check([step("tasks.create", {"titel": "Call Ann"}), DONE])
    found = diags(report)
    assert ("FORGEC_CAPABILITY_INPUT", "/flow/nodes/0/input/titel") in found
    assert ("FORGEC_CAPABILITY_INPUT", "/flow/nodes/0/input/title") in found  # required
    assert diags(check([step("tasks.create", {"title": "Call Ann"}), DONE])) == []


def test_computed_fields_count_as_present_and_are_not_checked() -> None:
    payload = {"title": {"$ref": "input.title"}, "due": {"$template": "{{input.due}}"}}
    assert diags(check([step("tasks.create", payload), DONE])) == []


def test_bad_literal_value_next_to_a_computed_field() -> None:
    payload = {"title": {"$ref": "input.title"}, "status": "maybe"}
    assert diags(check([step("tasks.create", payload), DONE])) == [
        ("FORGEC_CAPABILITY_INPUT", "/flow/nodes/0/input/status")
    ]


@pytest.mark.parametrize(("length", "over"), [(1012, False), (1013, True)])
def test_size_limit_of_an_all_literal_input(length: int, over: bool) -> None:
    # {"query":"…"} is 12 bytes plus the text: 1024 bytes is the limit of tasks.list
    report = check([step("tasks.list", {"query": "x" * length}), DONE])
    assert (("FORGEC_CAPABILITY_INPUT", "/flow/nodes/0/input") in diags(report)) is over


def test_size_limit_waits_for_run_time_when_a_field_is_computed() -> None:
    # 20 000 characters, over tasks.create's 16 KiB, in a field with no length limit of its
    # own: the computed status decides the final size, so the limit waits for run time
    payload = {"title": "t", "notes": "x" * 20000, "status": {"$ref": "input.status"}}
    assert diags(check([step("tasks.create", payload), DONE])) == []


def test_non_object_inputs() -> None:
    assert diags(check([step("tasks.list", "open"), DONE])) == [
        ("FORGEC_CAPABILITY_INPUT", "/flow/nodes/0/input")
    ]
    assert diags(check([step("tasks.list", {"$template": "{{input.q}}"}), DONE])) == [
        ("FORGEC_CAPABILITY_INPUT", "/flow/nodes/0/input")
    ]
    assert diags(check([step("tasks.list", {"$ref": "input.query"}), DONE])) == []


def test_talon_literal_checks_apply() -> None:
    payload = {"action": "create", "cronExpr": "61 * * * *", "prompt": "hi"}
    report = check([step("schedule.manage", payload), DONE], target="talon")
    assert diags(report) == [("FORGEC_CAPABILITY_INPUT", "/flow/nodes/0/input/cronExpr")]


def test_unreachable_steps_are_checked_too() -> None:
    report = check([DONE, step("tasks.create", {"titel": "x"})], entry="done")
    assert ("FORGEC_CAPABILITY_INPUT", "/flow/nodes/1/input/titel") in diags(report)


# --- compensation ----------------------------------------------------------------------------


def create(compensation: str) -> dict[str, Any]:
    return step("tasks.create", {"title": "Call Ann"}, compensation=compensation)


def test_compensation_pair_boundary() -> None:
    assert diags(check([create("tasks.setStatus"), DONE])) == []


def test_compensation_mismatch() -> None:
    report = check([create("notes.update"), DONE])
    [diag] = report.diagnostics
    assert (diag.code, diag.path) == ("FORGE_COMPENSATION_MISMATCH", "/flow/nodes/0/compensation")
    assert "tasks.setStatus" in diag.message


def test_compensation_unknown_even_if_another_target_has_it() -> None:
    assert diags(check([create("tasks.delete"), DONE])) == [
        ("FORGE_COMPENSATION_UNKNOWN", "/flow/nodes/0/compensation")
    ]
    report = check([create("memory.access"), DONE])  # a talon capability, not a talos one
    assert diags(report) == [("FORGE_COMPENSATION_UNKNOWN", "/flow/nodes/0/compensation")]


@pytest.mark.parametrize("compensation", ["notes.update", "tasks.delete", "notes.create"])
def test_invalid_compensation_is_alone(compensation: str) -> None:
    node = step("notes.create", {"title": "Log", "body": "x"}, compensation=compensation)
    assert diags(check([node, DONE])) == [
        ("FORGE_INVALID_COMPENSATION", "/flow/nodes/0/compensation")
    ]


def test_no_compensation_on_a_step_without_undo_boundary() -> None:
    assert diags(check([step("notes.create", {"title": "Log", "body": "x"}), DONE])) == []


def test_talon_undo_pairs() -> None:
    payload = {"operation": "write", "key": "k", "value": 1}
    good = step("memory.access", payload, compensation="memory.access")
    assert diags(check([good, DONE], target="talon")) == []
    bad = step("memory.access", payload, compensation="schedule.manage")
    assert diags(check([bad, DONE], target="talon")) == [
        ("FORGE_COMPENSATION_MISMATCH", "/flow/nodes/0/compensation")
    ]


def test_unknown_capability_still_gets_an_unknown_compensation_name() -> None:
    node = step("tasks.lst", {}, compensation="tasks.undo")
    assert [c for c, _ in diags(check([node, DONE]))] == [
        "FORGE_CAPABILITY_UNKNOWN",
        "FORGE_COMPENSATION_UNKNOWN",
    ]
    known = step("tasks.lst", {}, compensation="notes.update")  # match cannot be judged
    assert [c for c, _ in diags(check([known, DONE]))] == ["FORGE_CAPABILITY_UNKNOWN"]
