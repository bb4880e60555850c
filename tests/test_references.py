"""The references pass: targets, loop variables, credentials and definite assignment.

Each code has a manifest that triggers it and one at its boundary that does not; the
definite-assignment tests walk the tricky shapes (branches, loops, the loop's own variables,
reads inside templates, unreachable readers, one bad target not cascading).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from manifests import manifest_with_nodes

import forgec

DONE = {"id": "done", "type": "return", "value": {"ok": True}}
STATE = {"fields": {"count": {"type": "integer"}}, "maxBytes": 1024}


def check(manifest: dict[str, Any], target: str = "talos") -> forgec.Report:
    return forgec.check(orjson.dumps(manifest), target=target)


def found(report: forgec.Report, code: str) -> list[str]:
    """Paths of the diagnostics with `code`."""
    return [d.path for d in report.diagnostics if d.code == code]


def codes(report: forgec.Report) -> list[str]:
    return [d.code for d in report.diagnostics]


def set_node(node_id: str, target: str, value: Any, nxt: str | None = "done") -> dict[str, Any]:
    node = {"id": node_id, "type": "set", "target": target, "value": value}
    if nxt is not None:
        node["next"] = nxt
    return node


def ret(node_id: str, value: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "return", "value": value}


def branch(node_id: str, then: str, else_: str) -> dict[str, Any]:
    cond = {"op": "truthy", "left": {"$ref": "input.flag"}}
    return {"id": node_id, "type": "if", "condition": cond, "then": then, "else": else_}


def each(body: list[dict[str, Any]], nxt: str = "done", **extra: Any) -> dict[str, Any]:
    node = {
        "id": "each",
        "type": "foreach",
        "source": {"$ref": "input.items"},
        "itemVar": "item",
        "maxItems": 5,
        "body": body,
        "next": nxt,
    }
    node.update(extra)
    return node


# --- targets ---------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["input", "state", "output", "constructor", "a.b", "x[0]"])
def test_unsafe_targets(target: str) -> None:
    report = check(manifest_with_nodes([set_node("a", target, 1), DONE]))
    assert found(report, "FORGE_TARGET_UNSAFE") == ["/flow/nodes/0/target"]


@pytest.mark.parametrize("target", ["inputs", "resultValue", "state.count"])
def test_safe_targets_boundary(target: str) -> None:
    report = check(manifest_with_nodes([set_node("a", target, 1), DONE], state=STATE))
    assert codes(report) == []


def test_state_target_needs_a_declared_field() -> None:
    report = check(manifest_with_nodes([set_node("a", "state.cuont", 1), DONE], state=STATE))
    [diag] = report.diagnostics
    assert diag.code == "FORGE_TARGET_UNSAFE"
    assert diag.hint == "did you mean `state.count`?"


def test_unsafe_target_does_not_cascade_into_undefined_reads() -> None:
    nodes = [set_node("a", "total.sum", 1, "done"), ret("done", {"$ref": "total"})]
    assert codes(check(manifest_with_nodes(nodes))) == ["FORGE_TARGET_UNSAFE"]


# --- loop variables --------------------------------------------------------------------------


def test_reserved_item_var() -> None:
    body = [set_node("b", "last", {"$ref": "item"}, None)]
    report = check(manifest_with_nodes([each(body, itemVar="result"), DONE]))
    assert found(report, "FORGE_VAR_UNSAFE") == ["/flow/nodes/0/itemVar"]


def test_equal_loop_vars() -> None:
    body = [set_node("b", "last", {"$ref": "item"}, None)]
    report = check(manifest_with_nodes([each(body, indexVar="item"), DONE]))
    assert found(report, "FORGE_VAR_UNSAFE") == ["/flow/nodes/0/indexVar"]


def test_loop_vars_boundary() -> None:
    body = [set_node("b", "last", {"$template": "{{i}}: {{item}}"}, None)]
    assert codes(check(manifest_with_nodes([each(body, indexVar="i"), DONE]))) == []


# --- credentials -----------------------------------------------------------------------------

CRED = [{"id": "api-key", "purpose": "Status API", "hosts": ["api.example.org"]}]
NETWORK = {"mode": "allowlist", "hosts": ["api.example.org"]}


def http(headers: Any = None, **extra: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"method": "GET", "url": "https://api.example.org/v1/me"}
    if headers is not None:
        payload["headers"] = headers
    payload.update(extra)
    return {
        "id": "call",
        "type": "capability",
        "capability": "net.http",
        "input": payload,
        "target": "resp",
        "next": "done",
    }


def talon(nodes: list[dict[str, Any]]) -> forgec.Report:
    manifest = manifest_with_nodes(nodes, network=NETWORK, credentialRequirements=CRED)
    return check(manifest, target="talon")


def test_credential_in_a_header_is_fine() -> None:
    report = talon([http({"Authorization": {"$credential": "api-key"}}), DONE])
    assert codes(report) == []
    assert report.marks is not None and report.marks.credentials == ("api-key",)


@pytest.mark.parametrize(
    "node",
    [
        set_node("call", "key", {"$credential": "api-key"}),
        http(body={"$credential": "api-key"}),
        http({"Authorization": {"nested": {"$credential": "api-key"}}}),
        ret("call", [{"$credential": "api-key"}]),
    ],
)
def test_credential_anywhere_else_is_unsafe(node: dict[str, Any]) -> None:
    report = talon([node, DONE])
    assert "FORGE_REF_UNSAFE" in codes(report)
    assert "FORGEC_CREDENTIAL_UNDECLARED" not in codes(report)


def test_undeclared_credential_trigger_and_hint() -> None:
    report = talon([http({"Authorization": {"$credential": "api-kye"}}), DONE])
    [diag] = report.diagnostics
    assert diag.code == "FORGEC_CREDENTIAL_UNDECLARED"
    assert diag.path == "/flow/nodes/0/input/headers/Authorization"
    assert diag.hint == "did you mean `api-key`?"


# --- definite assignment ---------------------------------------------------------------------


def test_undefined_trigger_and_boundary() -> None:
    assert found(
        check(manifest_with_nodes([ret("done", {"$ref": "total"})])), "FORGEC_REF_UNDEFINED"
    )
    nodes = [set_node("sum", "total", 3), ret("done", {"$ref": "total"})]
    assert codes(check(manifest_with_nodes(nodes))) == []


def test_read_of_own_target_before_the_write_is_undefined() -> None:
    nodes = [set_node("a", "n", {"$ref": "n"}), DONE]
    assert found(check(manifest_with_nodes(nodes)), "FORGEC_REF_UNDEFINED") == [
        "/flow/nodes/0/value"
    ]


def test_written_on_one_branch_is_maybe_on_both_is_defined() -> None:
    one = [
        branch("pick", "late", "done"),
        set_node("late", "label", "late"),
        ret("done", {"$ref": "label"}),
    ]
    report = check(manifest_with_nodes(one))
    assert found(report, "FORGEC_REF_MAYBE_UNDEFINED") == ["/flow/nodes/2/value"]
    [diag] = report.diagnostics
    assert "the path pick -> done does not write it" in diag.message  # a witness
    assert report.ok  # a warning
    both = [
        branch("pick", "late", "early"),
        set_node("late", "label", "late"),
        set_node("early", "label", "early"),
        ret("done", {"$ref": "label"}),
    ]
    assert codes(check(manifest_with_nodes(both))) == []


def test_written_after_the_read_is_undefined_with_the_writer_named() -> None:
    nodes = [
        branch("pick", "use", "write"),
        ret("use", {"$ref": "x"}),
        set_node("write", "x", 1),
        ret("done", {"$ref": "x"}),
    ]
    report = check(manifest_with_nodes(nodes))
    [diag] = [d for d in report.diagnostics if d.code == "FORGEC_REF_UNDEFINED"]
    assert diag.path == "/flow/nodes/1/value"
    assert diag.hint is not None and "`write`" in diag.hint


def test_template_placeholders_are_reads() -> None:
    nodes = [ret("done", {"$template": "Hi {{ input.name }}, {{ greeting }}"})]
    report = check(manifest_with_nodes(nodes))
    assert found(report, "FORGEC_REF_UNDEFINED") == ["/flow/nodes/0/value"]


def test_loop_vars_are_defined_in_the_body_only() -> None:
    body = [set_node("b", "last", {"$ref": "item.title"}, None)]
    report = check(manifest_with_nodes([each(body), ret("done", {"$ref": "item"})]))
    assert found(report, "FORGEC_REF_UNDEFINED") == ["/flow/nodes/1/value"]


def test_written_only_in_a_loop_body_is_maybe_after_the_loop() -> None:
    body = [set_node("b", "last", {"$ref": "item"}, None)]
    report = check(manifest_with_nodes([each(body), ret("done", {"$ref": "last"})]))
    [diag] = report.diagnostics
    assert diag.code == "FORGEC_REF_MAYBE_UNDEFINED"
    assert diag.hint is not None and "loop `each`" in diag.hint


def test_accumulator_read_before_its_write_in_the_body_is_maybe() -> None:
    body = [set_node("b", "acc", {"$template": "{{acc}}{{item}}"}, None)]
    report = check(manifest_with_nodes([each(body), DONE]))
    assert found(report, "FORGEC_REF_MAYBE_UNDEFINED") == ["/flow/nodes/0/body/0/value"]
    seeded = [set_node("init", "acc", "", "each"), each(body), DONE]
    assert codes(check(manifest_with_nodes(seeded))) == []


def test_defined_before_the_loop_stays_defined_after() -> None:
    body = [set_node("b", "x", {"$ref": "item"}, None)]
    nodes = [set_node("init", "x", 0, "each"), each(body), ret("done", {"$ref": "x"})]
    assert codes(check(manifest_with_nodes(nodes))) == []


def test_state_refs_need_a_declared_field() -> None:
    report = check(manifest_with_nodes([ret("done", {"$ref": "state.cuont"})], state=STATE))
    [diag] = report.diagnostics
    assert diag.code == "FORGEC_REF_UNDEFINED" and diag.hint == "did you mean `state.count`?"
    ok = manifest_with_nodes([ret("done", {"$ref": "state.count"})], state=STATE)
    assert codes(check(ok)) == []


def test_reserved_roots_are_never_defined() -> None:
    report = check(manifest_with_nodes([ret("done", {"page": {"$ref": "output.x"}})]))
    [diag] = report.diagnostics
    assert (diag.code, diag.path) == ("FORGEC_REF_UNDEFINED", "/flow/nodes/0/value/page")
    assert "reserved" in diag.message


def test_input_is_always_defined() -> None:
    assert codes(check(manifest_with_nodes([ret("done", {"$ref": "input.items[0]"})]))) == []


def test_unreachable_readers_are_not_analysed() -> None:
    nodes = [DONE, ret("stray", {"$ref": "nothing"})]
    assert codes(check(manifest_with_nodes(nodes, entry="done"))) == ["FORGE_UNREACHABLE_NODE"]


def test_reads_in_a_loop_without_a_usable_item_var_are_not_judged() -> None:
    body = [set_node("b", "last", {"$ref": "item"}, None)]
    loop = each(body)
    del loop["itemVar"]
    assert codes(check(manifest_with_nodes([loop, DONE]))) == ["FORGE_MANIFEST_STRUCTURE"]
