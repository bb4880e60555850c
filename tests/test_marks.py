"""Marks (SPEC §6) from the reachable steps, and the passes' promise never to raise.

The marks tests build small tools and assert what a person would see on the consent card:
powers, risk, labels, hosts, credentials, model needs, compensation. The hypothesis test
mutates a rich valid manifest at random (replace, delete, duplicate, rename anywhere in it) and
checks every pass runs to the end with diagnostics, never a traceback.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from manifests import manifest_with_nodes
from strategies import json_values

import forgec
from forgec.ir.marks import Marks, ModelNeeds

DONE = {"id": "done", "type": "return", "value": {"ok": True}}


def marks_of(nodes: list[dict[str, Any]], target: str = "talos", **kw: Any) -> Marks:
    report = forgec.check(orjson.dumps(manifest_with_nodes(nodes, **kw)), target=target)
    assert report.ok, [d.to_json() for d in report.diagnostics]
    assert report.marks is not None
    return report.marks


def cap(node_id: str, name: str, payload: Any, nxt: str = "done", **extra: Any) -> dict[str, Any]:
    node = {"id": node_id, "type": "capability", "capability": name, "input": payload}
    node.update({"target": node_id + "Out", "next": nxt, **extra})
    return node


def test_no_steps_is_r0_and_asks_nothing() -> None:
    assert marks_of([DONE]) == Marks()


def test_talos_powers_risk_and_capabilities() -> None:
    nodes = [
        cap("load", "tasks.list", {"status": "open"}, "save"),
        cap("save", "notes.create", {"title": "Review", "body": "x"}),
        DONE,
    ]
    marks = marks_of(nodes)
    assert marks.powers == ("Read", "Write")
    assert marks.risk == "R2" and not marks.always_asks
    assert marks.capabilities == ("notes.create", "tasks.list")
    assert marks.labels == ()
    assert not marks.compensated  # notes.create writes and cannot be undone


def test_compensated_when_every_write_declares_its_undo() -> None:
    create = cap("make", "tasks.create", {"title": "x"}, compensation="tasks.setStatus")
    assert marks_of([create, DONE]).compensated


def test_unreachable_steps_grant_nothing() -> None:
    nodes = [DONE, cap("stray", "memory.create", {"text": "x"})]
    report = forgec.check(orjson.dumps(manifest_with_nodes(nodes, entry="done")))
    assert report.marks == Marks()


def test_operation_decides_talon_marks_and_the_worst_case_counts_when_computed() -> None:
    read = cap("get", "memory.access", {"operation": "read", "key": "k"})
    marks = marks_of([read, DONE], target="talon")
    assert (marks.powers, marks.risk, marks.labels) == (("Read",), "R1", ("memory.access:thread",))
    computed = cap("get", "memory.access", {"operation": {"$ref": "input.op"}, "key": "k"})
    marks = marks_of([computed, DONE], target="talon")
    assert (marks.powers, marks.risk) == (("Write",), "R3")


def test_network_step_is_r4_and_may_reach_every_allowlisted_host() -> None:
    cred = [{"id": "api-key", "purpose": "p", "hosts": ["api.example.org"]}]
    headers = {"Authorization": {"$credential": "api-key"}}
    call = cap("call", "net.http", {"method": "GET", "url": "https://api.example.org/"})
    call["input"]["headers"] = headers
    network = {"mode": "allowlist", "hosts": ["cdn.example.org", "api.example.org"]}
    marks = marks_of([call, DONE], target="talon", network=network, credentialRequirements=cred)
    assert marks.powers == ("Network",)
    assert marks.risk == "R4" and marks.always_asks
    assert marks.labels == ("net.http:egress",)
    # a redirect may land on any allowlisted host, so the literal URL does not narrow it
    assert marks.network == ("api.example.org", "cdn.example.org")
    assert marks.credentials == ("api-key",)


def test_allowlist_without_a_network_step_reaches_nothing() -> None:
    network = {"mode": "allowlist", "hosts": ["api.example.org"]}
    assert marks_of([DONE], network=network).network == ()


def test_model_needs_take_the_strictest_privacy_and_highest_effort() -> None:
    def llm(node_id: str, nxt: str, **req: Any) -> dict[str, Any]:
        node: dict[str, Any] = {
            "id": node_id,
            "type": "llm",
            "op": "summarize",
            "input": {"$ref": "input.text"},
            "target": node_id + "Out",
            "next": nxt,
        }
        if req:
            node["requirements"] = req
        return node

    nodes = [
        llm("a", "b", privacy="local-preferred"),
        llm("b", "c", reasoningEffort="high"),
        llm("c", "done"),
        DONE,
    ]
    defaults = {"privacy": "remote-allowed", "reasoningEffort": "low"}
    marks = marks_of(nodes, modelDefaults=defaults)
    assert marks.model == ModelNeeds(
        privacy="local-preferred", reasoning_effort="high", structured_output=False, steps=3
    )
    assert marks.powers == () and marks.risk == "R0"  # model steps add no power


# --- never raises ----------------------------------------------------------------------------

RICH: dict[str, Any] = manifest_with_nodes(
    [
        {
            "id": "load",
            "type": "capability",
            "capability": "tasks.list",
            "input": {"status": "open", "query": {"$ref": "input.q"}},
            "target": "tasks",
            "retry": {"attempts": 2, "backoffMs": 100},
            "next": "pick",
        },
        {
            "id": "pick",
            "type": "if",
            "condition": {"op": "gt", "left": {"$ref": "tasks.items[0].due"}, "right": "2026"},
            "then": "each",
            "else": "ask",
        },
        {
            "id": "each",
            "type": "foreach",
            "source": {"$ref": "tasks.items"},
            "itemVar": "task",
            "indexVar": "i",
            "maxItems": 5,
            "body": [
                {
                    "id": "mark",
                    "type": "capability",
                    "capability": "tasks.setStatus",
                    "input": {"id": {"$ref": "task.id"}, "status": "done"},
                    "compensation": "tasks.setStatus",
                    "next": "tell",
                },
                {
                    "id": "tell",
                    "type": "set",
                    "target": "state.count",
                    "value": {"$template": "{{i}}: {{task.title}}"},
                },
            ],
            "next": "ask",
        },
        {
            "id": "ask",
            "type": "llm",
            "op": "summarize",
            "input": {"tasks": {"$ref": "tasks"}},
            "target": "summary",
            "requirements": {"structuredOutput": True, "privacy": "local-only"},
            "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "next": "call",
        },
        {
            "id": "call",
            "type": "capability",
            "capability": "net.http",
            "input": {
                "method": "POST",
                "url": "https://api.example.org/v1",
                "headers": {"Authorization": {"$credential": "api-key"}},
                "body": {"$template": "{{summary.text}}"},
            },
            "target": "resp",
            "next": "done",
        },
        {"id": "done", "type": "return", "value": {"summary": {"$ref": "summary"}}},
        {"id": "oops", "type": "fail", "code": "NOPE", "message": "never"},
    ],
    network={"mode": "allowlist", "hosts": ["api.example.org"]},
    credentialRequirements=[{"id": "api-key", "purpose": "p", "hosts": ["api.example.org"]}],
    state={"fields": {"count": {"type": "string"}}, "maxBytes": 1024},
    modelDefaults={"structuredOutput": False, "reasoningEffort": "low"},
)

# Values a mutation puts in: ids and names the flow uses, expression objects, wrong types.
ATOMS = st.sampled_from(
    [
        None,
        True,
        0,
        -1,
        3,
        257,
        1.5,
        "",
        "done",
        "load",
        "pick",
        "each",
        "mark",
        "tell",
        "ask",
        "call",
        "oops",
        "input",
        "state.count",
        "state.nope",
        "tasks.create",
        "net.http",
        "memory_access",
        "forbidden",
        "allowlist",
        "https://evil.example.net/x",
        "api.example.org",
        "x" * 300,
    ]
)
# refs, credentials and templates are leaves here: the marks pass reads them where they sit
JSON = json_values(
    st.one_of(
        ATOMS,
        st.builds(
            lambda p: {"$ref": p}, st.sampled_from(["input.x", "tasks", "nope", "a..b", "i"])
        ),
        st.builds(lambda c: {"$credential": c}, st.sampled_from(["api-key", "other"])),
        st.builds(
            lambda t: {"$template": t}, st.sampled_from(["{{summary}}", "{{", "{{ task.id }}"])
        ),
    ),
    keys=st.sampled_from(["id", "type", "next", "$ref", "value", "body"]),
    max_size=3,
    max_leaves=6,
)


def _children(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return list(value)
    if isinstance(value, list):
        return list(range(len(value)))
    return []


@st.composite
def mutated(draw: st.DrawFn) -> dict[str, Any]:
    doc = copy.deepcopy(RICH)
    for _ in range(draw(st.integers(1, 4))):
        parent: Any = doc
        key: Any = None
        flow = doc.get("flow")
        if draw(st.integers(0, 3)) > 0 and isinstance(flow, dict) and "nodes" in flow:
            parent, key = flow, "nodes"  # most mutations go into the flow, where passes work
        # walk down a random path, stopping anywhere
        while True:
            children = _children(parent if key is None else parent[key])
            if not children or draw(st.integers(0, 3)) == 0:
                break
            parent = parent if key is None else parent[key]
            key = draw(st.sampled_from(children))
        if key is None:
            continue
        op = draw(st.sampled_from(["replace", "delete", "duplicate", "rename"]))
        if op == "replace":
            parent[key] = draw(JSON)
        elif op == "delete":
            if isinstance(parent, dict):
                del parent[key]
            else:
                parent.pop(key)
        elif op == "duplicate" and isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
        elif op == "rename" and isinstance(parent, dict):
            parent[
                draw(st.sampled_from(["next", "then", "else", "id", "target", "hosts", "x"]))
            ] = parent.pop(key)
    return doc


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.sampled_from(["talos", "talon"]))
def test_passes_never_raise_on_mutated_manifests(doc: dict[str, Any], target: str) -> None:
    report = forgec.check(orjson.dumps(doc), target=target)
    for d in report.diagnostics:
        assert d.code and d.message and d.path is not None
    if report.ok:
        assert report.marks is not None


def test_rich_manifest_checks_clean_on_talon() -> None:
    report = forgec.check(orjson.dumps(RICH), target="talon")
    # tasks.list → model → net.http: the flow analysis rightly says private data leaves
    assert [d.code for d in report.diagnostics] == [
        "FORGEC_FLOW_PRIVATE_EGRESS",
        "FORGE_UNREACHABLE_NODE",
    ]
    assert report.marks is not None and report.marks.risk == "R4"
