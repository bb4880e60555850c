"""The structure pass (`build_manifest`): every code it owns, at its trigger and its boundary,
the IR it builds, and the name/path/host grammars it relies on."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from manifests import DELETE, full_manifest, manifest_with_nodes, minimal_manifest, mutate
from strategies import json_values, scalars

from forgec.frontend import build
from forgec.frontend.build import build_manifest
from forgec.frontend.names import (
    is_iso_datetime,
    is_valid_host,
    parse_path,
    parse_template,
    template_problem,
)
from forgec.ir.nodes import (
    CapabilityNode,
    CredentialRef,
    ForeachNode,
    IfNode,
    ListExpr,
    Literal,
    Manifest,
    ObjectExpr,
    Ref,
    SetNode,
    Template,
)

S = "FORGE_MANIFEST_STRUCTURE"
OWN_CODES = {
    S,
    "FORGE_ID",
    "FORGE_VERSION",
    "FORGE_TITLE",
    "FORGE_DESCRIPTION",
    "FORGE_NETWORK_CONTRADICTION",
    "FORGE_DOMAIN_INVALID",
    "FORGE_CREDENTIAL_ID",
    "FORGE_NODE_ID",
    "FORGE_TRANSITION_BOUNDS",
    "FORGE_FOREACH_BOUNDS",
    "FORGE_INLINE_BOUNDS",
    "FORGE_NODE_BOUNDS",
    "FORGE_RETRY_BOUNDS",
    "FORGE_RETRY_BACKOFF",
    "FORGE_REF_UNSAFE",
}


def diags(raw: Any) -> list[tuple[str, str]]:
    return [(d.code, d.path) for d in build_manifest(raw)[1]]


def ret(node_id: str = "done", **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "return", "value": 1, **extra}


def set_node(node_id: str, nxt: str | None = "done", **extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"id": node_id, "type": "set", "target": "x", "value": 1}
    if nxt is not None:
        node["next"] = nxt
    node.update(extra)
    return node


def with_node(node: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    return manifest_with_nodes([node, ret()], **overrides)


def loop(body: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    node = {
        "id": "each",
        "type": "foreach",
        "source": [1, 2],
        "itemVar": "item",
        "maxItems": 10,
        "body": body,
        "next": "done",
    }
    node.update(extra)
    return node


def cap(**extra: Any) -> dict[str, Any]:
    node = {
        "id": "step",
        "type": "capability",
        "capability": "tasks.list",
        "input": {},
        "next": "done",
    }
    node.update(extra)
    return node


def cond(**condition: Any) -> dict[str, Any]:
    return {"id": "test", "type": "if", "condition": condition, "then": "done", "else": "done"}


def chain(n: int) -> list[dict[str, Any]]:
    return [set_node(f"n{i}", f"n{i + 1}") for i in range(n - 1)] + [ret(f"n{n - 1}")]


# Each case: (code, pointer, trigger manifest, boundary manifest that must be clean).
Case = tuple[str, str, Callable[[], Any], Callable[[], Any]]
CASES: dict[str, Case] = {
    "id too short": ("FORGE_ID", "/id", lambda: minimal_manifest(id="ab"), lambda: minimal_manifest(id="abc")),
    "id too long": ("FORGE_ID", "/id", lambda: minimal_manifest(id="a" * 65), lambda: minimal_manifest(id="a" * 64)),
    "id uppercase": ("FORGE_ID", "/id", lambda: minimal_manifest(id="My.tool"), lambda: minimal_manifest(id="my.tool_-9")),
    "id wrong type": ("FORGE_ID", "/id", lambda: minimal_manifest(id=123), lambda: minimal_manifest(id="123")),
    "version 0": ("FORGE_VERSION", "/version", lambda: minimal_manifest(version=0), lambda: minimal_manifest(version=1)),
    "version bool": ("FORGE_VERSION", "/version", lambda: minimal_manifest(version=True), lambda: minimal_manifest(version=1)),
    "version float": ("FORGE_VERSION", "/version", lambda: minimal_manifest(version=1.0), lambda: minimal_manifest(version=1)),
    "version 2^31": ("FORGE_VERSION", "/version", lambda: minimal_manifest(version=2**31), lambda: minimal_manifest(version=2**31 - 1)),
    "version string": ("FORGE_VERSION", "/version", lambda: minimal_manifest(version="2"), lambda: minimal_manifest(version=2)),
    "parent not below": ("FORGE_VERSION", "/parentVersion", lambda: minimal_manifest(version=2, parentVersion=2), lambda: minimal_manifest(version=2, parentVersion=1)),
    "parent bool": ("FORGE_VERSION", "/parentVersion", lambda: minimal_manifest(version=2, parentVersion=True), lambda: minimal_manifest(version=2, parentVersion=None)),
    "parent zero": ("FORGE_VERSION", "/parentVersion", lambda: minimal_manifest(version=2, parentVersion=0), lambda: minimal_manifest(version=2, parentVersion=1)),
    "title empty": ("FORGE_TITLE", "/title", lambda: minimal_manifest(title=""), lambda: minimal_manifest(title="x")),
    "title 121": ("FORGE_TITLE", "/title", lambda: minimal_manifest(title="😀" * 121), lambda: minimal_manifest(title="😀" * 120)),
    "title type": ("FORGE_TITLE", "/title", lambda: minimal_manifest(title=None), lambda: minimal_manifest(title="None")),
    "description 1001": ("FORGE_DESCRIPTION", "/description", lambda: minimal_manifest(description="d" * 1001), lambda: minimal_manifest(description="d" * 1000)),
    "description type": ("FORGE_DESCRIPTION", "/description", lambda: minimal_manifest(description=["d"]), lambda: minimal_manifest(description="d")),
    "contradiction": ("FORGE_NETWORK_CONTRADICTION", "/network/hosts", lambda: minimal_manifest(network={"mode": "forbidden", "hosts": ["example.org"]}), lambda: minimal_manifest(network={"mode": "forbidden", "hosts": []})),
    "host wildcard": ("FORGE_DOMAIN_INVALID", "/network/hosts/0", lambda: minimal_manifest(network={"mode": "allowlist", "hosts": ["*.example.org"]}), lambda: minimal_manifest(network={"mode": "allowlist", "hosts": ["www.example.org"]})),
    "hosts not a list": ("FORGE_DOMAIN_INVALID", "/network/hosts", lambda: minimal_manifest(network={"mode": "allowlist", "hosts": "example.org"}), lambda: minimal_manifest(network={"mode": "allowlist", "hosts": []})),
    "credential host": ("FORGE_DOMAIN_INVALID", "/credentialRequirements/0/hosts/0", lambda: minimal_manifest(credentialRequirements=[{"id": "key", "purpose": "p", "hosts": ["https://a.org"]}]), lambda: minimal_manifest(credentialRequirements=[{"id": "key", "purpose": "p", "hosts": ["a.org"]}])),
    "credential id": ("FORGE_CREDENTIAL_ID", "/credentialRequirements/0/id", lambda: minimal_manifest(credentialRequirements=[{"id": "API KEY", "purpose": "p", "hosts": []}]), lambda: minimal_manifest(credentialRequirements=[{"id": "api-key", "purpose": "p", "hosts": []}])),
    "credential id twice": ("FORGE_CREDENTIAL_ID", "/credentialRequirements/1/id", lambda: minimal_manifest(credentialRequirements=[{"id": "key", "purpose": "p", "hosts": []}] * 2), lambda: minimal_manifest(credentialRequirements=[{"id": "key", "purpose": "p", "hosts": []}, {"id": "key2", "purpose": "p", "hosts": []}])),
    "node id": ("FORGE_NODE_ID", "/flow/nodes/0/id", lambda: manifest_with_nodes([ret("1st")]), lambda: manifest_with_nodes([ret("first")])),
    "node id 65": ("FORGE_NODE_ID", "/flow/nodes/0/id", lambda: manifest_with_nodes([ret("a" * 65)]), lambda: manifest_with_nodes([ret("a" * 64)])),
    "node id type": ("FORGE_NODE_ID", "/flow/nodes/0/id", lambda: manifest_with_nodes([ret(7)]), lambda: manifest_with_nodes([ret("a-7_")])),  # type: ignore[arg-type]
    "transitions 0": ("FORGE_TRANSITION_BOUNDS", "/flow/maxTransitions", lambda: manifest_with_nodes([ret()], max_transitions=0), lambda: manifest_with_nodes([ret()], max_transitions=1)),
    "transitions 257": ("FORGE_TRANSITION_BOUNDS", "/flow/maxTransitions", lambda: manifest_with_nodes([ret()], max_transitions=257), lambda: manifest_with_nodes([ret()], max_transitions=256)),
    "transitions float": ("FORGE_TRANSITION_BOUNDS", "/flow/maxTransitions", lambda: manifest_with_nodes([ret()], max_transitions=8.0), lambda: manifest_with_nodes([ret()], max_transitions=8)),  # type: ignore[arg-type]
    "foreach 101": ("FORGE_FOREACH_BOUNDS", "/flow/nodes/0/maxItems", lambda: with_node(loop([ret("b")], maxItems=101)), lambda: with_node(loop([ret("b")], maxItems=100))),
    "foreach 0": ("FORGE_FOREACH_BOUNDS", "/flow/nodes/0/maxItems", lambda: with_node(loop([ret("b")], maxItems=0)), lambda: with_node(loop([ret("b")], maxItems=1))),
    "foreach bool": ("FORGE_FOREACH_BOUNDS", "/flow/nodes/0/maxItems", lambda: with_node(loop([ret("b")], maxItems=True)), lambda: with_node(loop([ret("b")], maxItems=1))),
    "body empty": ("FORGE_INLINE_BOUNDS", "/flow/nodes/0/body", lambda: with_node(loop([])), lambda: with_node(loop([ret("b")]))),
    "body 17": ("FORGE_INLINE_BOUNDS", "/flow/nodes/0/body", lambda: with_node(loop([set_node(f"b{i}", None) for i in range(17)])), lambda: with_node(loop([set_node(f"b{i}", None) for i in range(16)]))),
    "body not a list": ("FORGE_INLINE_BOUNDS", "/flow/nodes/0/body", lambda: with_node(loop(ret("b"))), lambda: with_node(loop([ret("b")]))),  # type: ignore[arg-type]
    "no nodes": ("FORGE_NODE_BOUNDS", "/flow/nodes", lambda: manifest_with_nodes([], entry="done"), lambda: manifest_with_nodes([ret()])),
    "65 nodes": ("FORGE_NODE_BOUNDS", "/flow/nodes", lambda: manifest_with_nodes(chain(65)), lambda: manifest_with_nodes(chain(64))),
    "body nodes count": ("FORGE_NODE_BOUNDS", "/flow/nodes", lambda: manifest_with_nodes([loop([set_node(f"b{i}", None) for i in range(16)]), *chain(48)[:-1], ret()]), lambda: manifest_with_nodes([loop([set_node(f"b{i}", None) for i in range(16)]), *chain(47)[:-1], ret()])),
    "attempts 4": ("FORGE_RETRY_BOUNDS", "/flow/nodes/0/retry/attempts", lambda: with_node(cap(retry={"attempts": 4, "backoffMs": 0})), lambda: with_node(cap(retry={"attempts": 3, "backoffMs": 0}))),
    "attempts 0": ("FORGE_RETRY_BOUNDS", "/flow/nodes/0/retry/attempts", lambda: with_node(cap(retry={"attempts": 0, "backoffMs": 0})), lambda: with_node(cap(retry={"attempts": 1, "backoffMs": 0}))),
    "attempts string": ("FORGE_RETRY_BOUNDS", "/flow/nodes/0/retry/attempts", lambda: with_node(cap(retry={"attempts": "2", "backoffMs": 0})), lambda: with_node(cap(retry={"attempts": 2, "backoffMs": 0}))),
    "backoff 5001": ("FORGE_RETRY_BACKOFF", "/flow/nodes/0/retry/backoffMs", lambda: with_node(cap(retry={"attempts": 2, "backoffMs": 5001})), lambda: with_node(cap(retry={"attempts": 2, "backoffMs": 5000}))),
    "backoff negative": ("FORGE_RETRY_BACKOFF", "/flow/nodes/0/retry/backoffMs", lambda: with_node(cap(retry={"attempts": 2, "backoffMs": -1})), lambda: with_node(cap(retry={"attempts": 2, "backoffMs": 0}))),
    "ref proto": ("FORGE_REF_UNSAFE", "/flow/nodes/0/value/$ref", lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$ref": "input.__proto__"}}]), lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$ref": "input.proto"}}])),
    "ref constructor": ("FORGE_REF_UNSAFE", "/flow/nodes/0/value/a/0/$ref", lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"a": [{"$ref": "input.constructor"}]}}]), lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"a": [{"$ref": "input.constructors"}]}}])),
    "ref index": ("FORGE_REF_UNSAFE", "/flow/nodes/0/value/$ref", lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$ref": "input.a[1000000]"}}]), lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$ref": "input.a[999999]"}}])),
    "ref not a string": ("FORGE_REF_UNSAFE", "/flow/nodes/0/value/$ref", lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$ref": ["input"]}}]), lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$ref": "input"}}])),
    "template empty": ("FORGE_REF_UNSAFE", "/flow/nodes/0/value/$template", lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$template": "a {{ }} b"}}]), lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$template": "a { } b"}}])),
    "template unclosed": ("FORGE_REF_UNSAFE", "/flow/nodes/0/value/$template", lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$template": "a {{input.x"}}]), lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$template": "a {{input.x}}"}}])),
    "template path": ("FORGE_REF_UNSAFE", "/flow/nodes/0/value/$template", lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$template": "{{input.x y}}"}}]), lambda: manifest_with_nodes([{"id": "r", "type": "return", "value": {"$template": "{{ input.x }}"}}])),
    "ui path": ("FORGE_REF_UNSAFE", "/ui/values/0/path", lambda: minimal_manifest(ui={"title": "t", "values": [{"label": "l", "path": "items[0]..title"}]}), lambda: minimal_manifest(ui={"title": "t", "values": [{"label": "l", "path": "items[0].title"}]})),
    "unknown field": (S, "/titel", lambda: minimal_manifest(titel="x"), lambda: minimal_manifest()),
    "missing field": (S, "/createdAt", lambda: minimal_manifest(createdAt=DELETE), lambda: minimal_manifest()),
    "missing parentVersion": (S, "/parentVersion", lambda: minimal_manifest(parentVersion=DELETE), lambda: minimal_manifest(parentVersion=None)),
    "schema constant": (S, "/schema", lambda: minimal_manifest(schema="talos.local-tool.v2"), lambda: minimal_manifest()),
    "execution constant": (S, "/execution", lambda: minimal_manifest(execution="code"), lambda: minimal_manifest()),
    "installScope constant": (S, "/installScope", lambda: minimal_manifest(installScope="cloud"), lambda: minimal_manifest()),
    "createdAt no offset": (S, "/createdAt", lambda: minimal_manifest(createdAt="2026-01-01T10:00:00"), lambda: minimal_manifest(createdAt="2026-01-01T10:00:00+02:00")),
    "createdAt bad day": (S, "/createdAt", lambda: minimal_manifest(createdAt="2026-02-30T10:00:00Z"), lambda: minimal_manifest(createdAt="2026-02-28T10:00:00.123Z")),
    "network mode": (S, "/network/mode", lambda: minimal_manifest(network={"mode": "open"}), lambda: minimal_manifest(network={"mode": "allowlist", "hosts": []})),
    "allowlist needs hosts": (S, "/network/hosts", lambda: minimal_manifest(network={"mode": "allowlist"}), lambda: minimal_manifest(network={"mode": "allowlist", "hosts": []})),
    "credentials not a list": (S, "/credentialRequirements", lambda: minimal_manifest(credentialRequirements={}), lambda: minimal_manifest(credentialRequirements=[])),
    "context 255": (S, "/modelDefaults/context", lambda: minimal_manifest(modelDefaults={"context": 255}), lambda: minimal_manifest(modelDefaults={"context": 256})),
    "context 131073": (S, "/modelDefaults/context", lambda: minimal_manifest(modelDefaults={"context": 131073}), lambda: minimal_manifest(modelDefaults={"context": 131072})),
    "privacy enum": (S, "/modelDefaults/privacy", lambda: minimal_manifest(modelDefaults={"privacy": "local"}), lambda: minimal_manifest(modelDefaults={"privacy": "local-only"})),
    "effort enum": (S, "/modelDefaults/reasoningEffort", lambda: minimal_manifest(modelDefaults={"reasoningEffort": "max"}), lambda: minimal_manifest(modelDefaults={"reasoningEffort": "high"})),
    "structuredOutput type": (S, "/modelDefaults/structuredOutput", lambda: minimal_manifest(modelDefaults={"structuredOutput": 1}), lambda: minimal_manifest(modelDefaults={"structuredOutput": True})),
    "schema keyword": (S, "/inputSchema/properties/a/pattern", lambda: minimal_manifest(inputSchema={"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}}), lambda: minimal_manifest(inputSchema={"type": "object", "properties": {"a": {"type": "string", "maxLength": 3}}})),
    "schema $ref": (S, "/outputSchema/$ref", lambda: minimal_manifest(outputSchema={"$ref": "#/x"}), lambda: minimal_manifest(outputSchema={"title": "x"})),
    "schema type": (S, "/inputSchema/type", lambda: minimal_manifest(inputSchema={"type": "int"}), lambda: minimal_manifest(inputSchema={"type": ["integer", "null"]})),
    "schema nesting 9": (S, "/inputSchema" + "/items" * 8, lambda: minimal_manifest(inputSchema=_nested_schema(9)), lambda: minimal_manifest(inputSchema=_nested_schema(8))),
    "schema min > max": (S, "/inputSchema/minLength", lambda: minimal_manifest(inputSchema={"minLength": 3, "maxLength": 2}), lambda: minimal_manifest(inputSchema={"minLength": 2, "maxLength": 2})),
    "flow maxTransitions missing": (S, "/flow/maxTransitions", lambda: minimal_manifest(flow={"entry": "done", "nodes": [ret()]}), lambda: minimal_manifest()),
    "node type": (S, "/flow/nodes/0/type", lambda: manifest_with_nodes([{"id": "a", "type": "goto"}]), lambda: manifest_with_nodes([ret("a")])),
    "node not an object": (S, "/flow/nodes/1", lambda: manifest_with_nodes([ret(), "done"]), lambda: manifest_with_nodes([ret()])),
    "missing next top": (S, "/flow/nodes/0/next", lambda: with_node(set_node("a", None)), lambda: with_node(loop([set_node("a", None)]))),
    "next wrong type": (S, "/flow/nodes/0/next", lambda: with_node(set_node("a", None, next=["done"])), lambda: with_node(set_node("a"))),
    "then required": (S, "/flow/nodes/0/then", lambda: with_node({"id": "t", "type": "if", "condition": {"op": "truthy", "left": 1}, "else": "done"}), lambda: with_node(cond(op="truthy", left=1))),
    "else required in body": (S, "/flow/nodes/0/body/0/else", lambda: with_node(loop([{"id": "t", "type": "if", "condition": {"op": "exists", "left": {"$ref": "item"}}, "then": "u"}, ret("u")])), lambda: with_node(loop([{"id": "t", "type": "if", "condition": {"op": "exists", "left": {"$ref": "item"}}, "then": "u", "else": "u"}, ret("u")]))),
    "right on truthy": (S, "/flow/nodes/0/condition/right", lambda: with_node(cond(op="truthy", left=1, right=2)), lambda: with_node(cond(op="eq", left=1, right=2))),
    "right missing on gt": (S, "/flow/nodes/0/condition/right", lambda: with_node(cond(op="gt", left=1)), lambda: with_node(cond(op="exists", left={"$ref": "input.a"}))),
    "condition op": (S, "/flow/nodes/0/condition/op", lambda: with_node(cond(op="ge", left=1, right=2)), lambda: with_node(cond(op="gte", left=1, right=2))),
    "llm op": (S, "/flow/nodes/0/op", lambda: with_node({"id": "m", "type": "llm", "op": "chat", "input": "x", "target": "t", "next": "done"}), lambda: with_node({"id": "m", "type": "llm", "op": "rank", "input": "x", "target": "t", "next": "done"})),
    "foreach in body": (S, "/flow/nodes/0/body/0/type", lambda: with_node(loop([loop([ret("b")], id="inner", next=None)])), lambda: with_node(loop([set_node("inner", None)]))),
    "fail code": (S, "/flow/nodes/0/code", lambda: manifest_with_nodes([{"id": "f", "type": "fail", "code": "no", "message": "m"}]), lambda: manifest_with_nodes([{"id": "f", "type": "fail", "code": "NO_", "message": "m"}])),
    "fail message 1001": (S, "/flow/nodes/0/message", lambda: manifest_with_nodes([{"id": "f", "type": "fail", "code": "NOPE", "message": "m" * 1001}]), lambda: manifest_with_nodes([{"id": "f", "type": "fail", "code": "NOPE", "message": "m" * 1000}])),
    "retry missing backoff": (S, "/flow/nodes/0/retry/backoffMs", lambda: with_node(cap(retry={"attempts": 2})), lambda: with_node(cap(retry={"attempts": 2, "backoffMs": 0}))),
    "unknown expression": (S, "/flow/nodes/0/value/$reff", lambda: manifest_with_nodes([ret("r", value={"$reff": "input"})]), lambda: manifest_with_nodes([ret("r", value={"$reff": "input", "other": 1})])),
    "expression with extra key": (S, "/flow/nodes/0/value/$ref", lambda: manifest_with_nodes([ret("r", value={"$ref": "input", "x": 1})]), lambda: manifest_with_nodes([ret("r", value={"x": {"$ref": "input"}})])),
    "credential operand": (S, "/flow/nodes/0/value/$credential", lambda: manifest_with_nodes([ret("r", value={"$credential": 5})]), lambda: manifest_with_nodes([ret("r", value={"$credential": "key"})])),
    "state field name": (S, "/state/fields/constructor", lambda: minimal_manifest(state={"fields": {"constructor": {}}, "maxBytes": 10}), lambda: minimal_manifest(state={"fields": {"construct": {}}, "maxBytes": 10})),
    "state maxBytes": (S, "/state/maxBytes", lambda: minimal_manifest(state={"fields": {}, "maxBytes": 65537}), lambda: minimal_manifest(state={"fields": {}, "maxBytes": 65536})),
    "trigger type": (S, "/triggers/0/type", lambda: minimal_manifest(triggers=[{"type": "hourly"}]), lambda: minimal_manifest(triggers=[{"type": "app-resume"}])),
    "cron fields": (S, "/triggers/0/cron", lambda: minimal_manifest(triggers=[{"type": "schedule", "cron": "0 9 * * * *"}]), lambda: minimal_manifest(triggers=[{"type": "schedule", "cron": "0 9 * * *"}])),
    "cron value": (S, "/triggers/0/cron", lambda: minimal_manifest(triggers=[{"type": "schedule", "cron": "61 9 * * *"}]), lambda: minimal_manifest(triggers=[{"type": "schedule", "cron": "59 23 31 12 7"}])),
    "cron on manual": (S, "/triggers/0/cron", lambda: minimal_manifest(triggers=[{"type": "manual", "cron": "0 9 * * *"}]), lambda: minimal_manifest(triggers=[{"type": "manual"}])),
    "ui title": (S, "/ui/title", lambda: minimal_manifest(ui={"title": "", "values": []}), lambda: minimal_manifest(ui={"title": "t", "values": []})),
    "ui path type": (S, "/ui/values/0/path", lambda: minimal_manifest(ui={"title": "t", "values": [{"label": "l", "path": 3}]}), lambda: minimal_manifest(ui={"title": "t", "values": [{"label": "l", "path": "x3"}]})),
    "not an object": (S, "", lambda: [minimal_manifest()], lambda: minimal_manifest()),
}  # fmt: skip


def _nested_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels - 1):
        schema = {"type": "array", "items": schema}
    return schema


@pytest.mark.parametrize("name", list(CASES))
def test_trigger_reports_the_code_at_the_field(name: str) -> None:
    code, pointer, trigger, _ = CASES[name]
    found = diags(trigger())
    assert (code, pointer) in found, found


@pytest.mark.parametrize("name", list(CASES))
def test_boundary_is_clean(name: str) -> None:
    _, _, _, boundary = CASES[name]
    assert diags(boundary()) == []


def test_every_owned_code_has_a_case() -> None:
    assert {case[0] for case in CASES.values()} == OWN_CODES


@pytest.mark.parametrize(
    "host",
    [
        "localhost",
        "10.0.0.1",
        "1.2.3.4.5",
        "[::1]",
        "::1",
        "example.org:443",
        "https://example.org",
        "example.org.",
        "Example.org",
        "exa_mple.org",
        "-example.org",
        "example-.org",
        "a..org",
        "bücher.de",
        "xn--.org",
        "a." + "b" * 64 + ".org",
        ("a" * 60 + ".") * 5 + "org",
        "example.org/path",
        "user@example.org",
        "0x7f.1",
        "",
    ],
)
def test_bad_hosts(host: str) -> None:
    assert not is_valid_host(host)
    raw = minimal_manifest(network={"mode": "allowlist", "hosts": [host]})
    assert diags(raw) == [("FORGE_DOMAIN_INVALID", "/network/hosts/0")]


@pytest.mark.parametrize(
    "host", ["example.org", "a.b.c.example.co.uk", "xn--bcher-kva.de", "1.example.org", "a-b.io"]
)
def test_good_hosts(host: str) -> None:
    assert is_valid_host(host)


@pytest.mark.parametrize(
    ("text", "segments"),
    [
        ("input", ("input",)),
        ("input.items[0].title", ("input", "items", 0, "title")),
        ("a_1[999999][0]", ("a_1", 999999, 0)),
        ("state.count", ("state", "count")),
    ],
)
def test_paths(text: str, segments: tuple[str | int, ...]) -> None:
    assert parse_path(text) == segments


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1input",
        "_x",
        "input.",
        "input..a",
        "input[01]",
        "input[-1]",
        "input[1000000]",
        "input.__proto__",
        "prototype",
        "input.constructor.x",
        "input .a",
        "input['a']",
        "a" * 65,
        "input.ä",
        "input[0]x",
    ],
)
def test_unsafe_paths(text: str) -> None:
    assert parse_path(text) is None


def test_templates() -> None:
    assert parse_template("Hi {{ input.name }}, {{n[0]}}!") == (
        "Hi ",
        ("input", "name"),
        ", ",
        ("n", 0),
        "!",
    )
    assert parse_template("no placeholders {x} }}") == ("no placeholders {x} }}",)
    assert parse_template("") == ()
    for bad in ("{{}}", "{{ }}", "a {{b", "{{a.}}", "{{{a}}}", "{{input.__proto__}}"):
        assert parse_template(bad) is None
        assert template_problem(bad)


def test_datetimes() -> None:
    good = ["2026-01-31T09:30:00Z", "2026-01-31T09:30Z", "2026-01-31T09:30:00.123456789+05:30"]
    bad = ["2026-01-31", "2026-01-31T09:30:00", "2026-01-31 09:30:00Z", "2026-01-31T24:00:00Z"]
    assert all(is_iso_datetime(s) for s in good)
    assert not any(is_iso_datetime(s) for s in bad)
    assert not is_iso_datetime("2026-01-31T09:30:00+24:00")


# --- messages and hints -----------------------------------------------------------------------


def test_unknown_field_names_the_field_and_suggests_the_right_one() -> None:
    _, found = build_manifest(with_node(set_node("a", nxet="done")))
    unknown = next(d for d in found if d.path == "/flow/nodes/0/nxet")
    assert unknown.key is True
    assert "`nxet`" in unknown.message and "set node `a`" in unknown.message
    assert unknown.hint == "did you mean `next`?"


def test_a_wrong_type_message_says_what_was_given() -> None:
    _, found = build_manifest(minimal_manifest(version=1.0))
    assert "not an integer" in found[0].message
    _, found = build_manifest(minimal_manifest(version=True))
    assert "boolean" in found[0].message


def test_huge_numbers_do_not_break_messages() -> None:
    _, found = build_manifest(minimal_manifest(version=10**5000, description=1e308))
    assert [d.code for d in found] == ["FORGE_VERSION", "FORGE_DESCRIPTION"]
    assert "very large" in found[0].message


def test_codes_of_other_passes_are_not_emitted() -> None:
    raw = manifest_with_nodes(
        [
            set_node("a", "nowhere", target="input"),
            set_node("a", "a", value={"$ref": "undefined_thing"}),
            {**cap(capability="no.such"), "compensation": "x.y"},
            ret(),
        ],
        entry="missing",
    )
    assert diags(raw) == []


# --- the IR -----------------------------------------------------------------------------------


def test_a_manifest_is_always_returned() -> None:
    for raw in (None, 3, "x", [], {}):
        manifest, found = build_manifest(raw)
        assert isinstance(manifest, Manifest)
        assert found
    manifest, _ = build_manifest(None)
    assert manifest.flow is None and manifest.triggers == ()


def test_full_manifest_builds_clean() -> None:
    manifest, found = build_manifest(full_manifest())
    assert found == []
    assert manifest.id == "demo.full-tool" and manifest.version == 3
    assert manifest.parent_version == 2
    assert manifest.network is not None and manifest.network.hosts == ("api.example.org",)
    assert manifest.flow is not None and [n.id for n in manifest.flow.nodes] == [
        "find",
        "check",
        "loop",
        "summarize",
        "save",
        "remember",
        "done",
        "none",
    ]
    loop_node = manifest.flow.nodes[2]
    assert isinstance(loop_node, ForeachNode) and loop_node.item_var == "task"
    body = loop_node.body[0]
    assert isinstance(body, SetNode) and body.next is None
    assert isinstance(body.value, Template)
    assert body.value.parts[1] == ": "
    assert [p.text for p in body.value.parts if isinstance(p, Ref)] == ["i", "task.title"]
    assert manifest.state is not None and list(manifest.state.fields) == ["lastNote"]
    assert [t.cron for t in manifest.triggers] == [None, "0 9 * * 1-5"]
    assert manifest.ui is not None and manifest.ui.values[0].segments == ("noteId",)


def test_expression_free_subtrees_are_one_literal() -> None:
    value = {"a": [1, {"b": None}], "c": "text"}
    manifest, _ = build_manifest(manifest_with_nodes([ret("r", value=value)]))
    node = manifest.flow.nodes[0]  # type: ignore[union-attr]
    assert node.value == Literal(value, "/flow/nodes/0/value")  # type: ignore[union-attr]


def test_expressions_are_built_where_they_stand() -> None:
    value = {"a": [1, {"$ref": "input.x"}], "b": {"$credential": "key"}, "c": "plain"}
    manifest, _ = build_manifest(manifest_with_nodes([ret("r", value=value)]))
    built = manifest.flow.nodes[0].value  # type: ignore[union-attr]
    assert isinstance(built, ObjectExpr)
    fields = dict(built.fields)
    assert isinstance(fields["a"], ListExpr)
    assert fields["a"].items[0] == Literal(1, "/flow/nodes/0/value/a/0")
    assert fields["a"].items[1] == Ref("input.x", ("input", "x"), "/flow/nodes/0/value/a/1")
    assert fields["b"] == CredentialRef("key", "/flow/nodes/0/value/b")
    assert fields["c"] == Literal("plain", "/flow/nodes/0/value/c")


def test_bad_fields_are_none_but_the_node_stays() -> None:
    raw = with_node(cap(retry={"attempts": 9, "backoffMs": 10}, input={"$ref": "a..b"}, target=3))
    manifest, _ = build_manifest(raw)
    node = manifest.flow.nodes[0]  # type: ignore[union-attr]
    assert isinstance(node, CapabilityNode)
    assert node.input is None and node.target is None
    assert node.retry is not None and node.retry.attempts is None and node.retry.backoff_ms == 10
    assert node.next == "done"


def test_nodes_without_usable_id_or_type_are_dropped() -> None:
    raw = manifest_with_nodes([ret("1bad"), {"id": "x", "type": "jump"}, {"type": "return"}, ret()])
    manifest, _ = build_manifest(raw)
    assert [n.id for n in manifest.flow.nodes] == ["done"]  # type: ignore[union-attr]


def test_unary_condition_has_no_right() -> None:
    manifest, _ = build_manifest(with_node(cond(op="exists", left={"$ref": "input.a"})))
    node = manifest.flow.nodes[0]  # type: ignore[union-attr]
    assert isinstance(node, IfNode) and node.condition is not None
    assert node.condition.right is None and isinstance(node.condition.left, Ref)


# --- never raises -----------------------------------------------------------------------------

JSON = json_values(
    scalars(
        floats=st.floats(allow_nan=False),
        text=st.text(max_size=10),
        extra=st.sampled_from(["$ref", "$template", "input.a", "{{x}}", "set", "foreach", "done"]),
    ),
    keys=st.text(max_size=6) | st.sampled_from(["$ref", "$template", "$credential", "id", "type"]),
    max_leaves=25,
)


def _assert_sane(raw: Any) -> None:
    before = copy.deepcopy(raw)
    manifest, found = build_manifest(raw)
    assert isinstance(manifest, Manifest)
    assert raw == before  # the input is not modified
    for d in found:
        assert d.code in OWN_CODES
        assert d.message and (d.path == "" or d.path.startswith("/"))


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_arbitrary_json_never_raises(raw: Any) -> None:
    _assert_sane(raw)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([full_manifest(), minimal_manifest()]),
    st.integers(0, 10_000),
    st.sampled_from(["replace", "delete", "add"]),
    JSON,
)
def test_mutated_manifests_never_raise(base: Any, where: int, action: str, new: Any) -> None:
    _assert_sane(mutate(base, where, action, new))


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from([full_manifest(), minimal_manifest()]),
    st.integers(0, 10_000),
    st.sampled_from(["replace", "delete", "add"]),
    JSON,
)
def test_fast_path_builds_what_the_checking_path_builds(
    base: Any, where: int, action: str, new: Any
) -> None:
    raw = mutate(base, where, action, new)
    fast = build_manifest(raw)
    with pytest.MonkeyPatch.context() as patch:
        # without the code generated from the node table, every node takes `node_checked`
        patch.setattr(build, "_FAST_TOP", {})
        patch.setattr(build, "_FAST_BODY", {})
        slow = build_manifest(raw)
    assert fast == slow


def test_hints_say_where_a_misplaced_field_belongs() -> None:
    _, found = build_manifest(minimal_manifest(nodes=[]))
    assert [d.hint for d in found] == ["`nodes` belongs in `flow`"]
    _, found = build_manifest(with_node(set_node("a", input=1)))
    assert [d.hint for d in found] == ["`input` is a field of `capability`, `llm` nodes"]


def test_a_layout_accepted_in_a_loop_body_still_needs_next_at_the_top_level() -> None:
    # The builder remembers node layouts that passed its happy-path gate, per place: a body
    # node may leave out `next`, a top-level node with the very same keys may not.
    in_body = with_node(loop([set_node("inner", None)]))
    assert diags(in_body) == []
    at_top = manifest_with_nodes([set_node("first", None), ret()])
    for _ in range(2):  # the second build meets the remembered layouts
        assert diags(at_top) == [("FORGE_MANIFEST_STRUCTURE", "/flow/nodes/0/next")]
        assert diags(in_body) == []


def test_a_remembered_id_or_layout_does_not_excuse_a_different_node() -> None:
    good = manifest_with_nodes([set_node("a1", "done"), ret()])
    assert diags(good) == []
    # same keys in the same order, but the id is bad; then the same id with an extra key
    bad_id = manifest_with_nodes([set_node("1a", "done"), ret()])
    extra_key = manifest_with_nodes([set_node("a1", "done", input=1), ret()])
    for _ in range(2):
        assert diags(bad_id) == [("FORGE_NODE_ID", "/flow/nodes/0/id")]
        assert diags(extra_key) == [("FORGE_MANIFEST_STRUCTURE", "/flow/nodes/0/input")]
        assert diags(good) == []


def test_node_count_is_reported_before_the_nodes_problems() -> None:
    nodes = [set_node(f"n{i}", f"n{i + 1}") for i in range(64)] + [ret("n64", bad=1)]
    found = diags(manifest_with_nodes(nodes))
    assert found == [
        ("FORGE_NODE_BOUNDS", "/flow/nodes"),
        ("FORGE_MANIFEST_STRUCTURE", "/flow/nodes/64/bad"),
    ]
