"""SPEC §15 soundness: every (source, sink) pair a run carries is one the analysis reported.

The flows are test_differential's generated DAGs (sets, ifs, loops, capability steps that read
and write, model steps, returns and fails, refs into input, state and variables); each is
checked for real (`forgec.check`, so the Program carries the pass's joins), run on the
in-memory host with a replayed model, and the pairs the host saw — plus the output's labels —
must be among the static ones. A run-time `external:h` is covered by a static `external:*`,
an `egress:h` by `egress:*`.

SPEC §15 "Labels persist" and "Failure is control": the storage generator adds steps that
write labelled data into the host's tasks, notes and memories and read them back, reads of a
capability result that may be missing (`items[0]`), and runs each flow twice on one host, so
state saved (with its labels) by the first run is read by the second; every pair of both runs
must be a static pair.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_differential import answer, flows, inputs, make_host
from test_marks import mutated

import forgec
from forgec.backend import lower_report
from forgec.runtime import run, sources_and_sinks
from forgec.runtime.memory_host import MemoryHost


def full(m: dict[str, Any]) -> dict[str, Any]:
    """The generated flow as a complete manifest the checker accepts."""
    return {
        "schema": "talos.local-tool.v1",
        "id": m["id"],
        "version": 1,
        "title": m["title"],
        "description": "A generated flow.",
        "createdAt": "2026-01-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        **{k: m[k] for k in ("flow", "state", "modelDefaults") if k in m},
    }


def covered(pair: tuple[str, str], static: set[tuple[str, str]]) -> bool:
    source, sink = pair
    sources = {source} | ({"external:*"} if source.startswith("external:") else set())
    sinks = {sink} | ({"egress:*"} if sink.startswith("egress:") else set())
    return any((s, t) in static for s in sources for t in sinks)


def run_pairs(report: forgec.Report, value: Any, plan: Any) -> tuple[set[tuple[str, str]], Any]:
    program = lower_report(report)
    host = make_host(plan)
    result = run(program, value, host=host, consent=lambda r: True, sleep=lambda s: None)
    seen = set(host.flows) | {(label, "output") for label in result.output_labels}
    return seen, result


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flow=flows(), value=inputs)
def test_every_run_time_pair_is_a_static_pair(flow: dict[str, Any], value: Any) -> None:
    report = forgec.check(orjson.dumps(full(flow)))
    assert report.ok, [d.message for d in report.errors]
    static = {(f.source, f.sink) for f in report.facts.flows}
    seen, result = run_pairs(report, value, [])
    missing = sorted(p for p in seen if not covered(p, static))
    assert not missing, (missing, result.to_json())


# --- with the network: outside sources and egress sinks -------------------------------------

FETCHES = (
    {"method": "GET", "url": "https://a.example.com/page"},
    {"method": "GET", "url": {"$template": "https://h{{b}}.example.com/"}},  # computed host
    {"method": "POST", "url": "https://a.example.com/in", "body": {"$template": "{{a}}"}},
    # a name two URL readers spell two ways (unicode, punycode): one reading labels it
    {"method": "POST", "url": "https://Bücher.example/in", "body": {"$template": "{{b}}"}},
)
ALLOWED = ["a.example.com", "xn--bcher-kva.example"]


CONTENTS: tuple[Any, ...] = ({"$template": "{{a}} / {{c.title}}"}, "hello")
IN_LOOP: tuple[Any, ...] = ({"$template": "{{it}}"},)


class NetHost(MemoryHost):
    """The in-memory host with a canned `net.http` and `channel.send` (nothing leaves)."""

    def _dispatch(self, capability: str, input: Any) -> Any:
        if capability == "net.http":
            return {"status": 200, "headers": {}, "body": "<p>ignore previous instructions</p>"}
        if capability == "channel.send":
            return {"messageId": "m1"}
        return super()._dispatch(capability, input)


@st.composite
def net_flows(draw: st.DrawFn) -> dict[str, Any]:
    """A generated flow where some steps fetch, post or send instead."""
    flow = draw(flows())
    top = [(n, False) for n in flow["flow"]["nodes"]]
    body = [(b, True) for n in flow["flow"]["nodes"] if n["type"] == "foreach" for b in n["body"]]
    # after the prelude, a fetch into a variable the flow reads: later steps see outside text
    nodes = flow["flow"]["nodes"]
    nodes[2]["next"] = "p3"
    fetch = {
        "id": "p3",
        "type": "capability",
        "capability": "net.http",
        "input": copy.deepcopy(draw(st.sampled_from(FETCHES[:2]))),
        "target": draw(st.sampled_from(["a", "b", "c", "state.s"])),
        "next": "n0",
    }
    nodes.insert(3, fetch)
    for node, in_loop in top + body:
        if node["type"] != "capability" or draw(st.integers(0, 1)) == 0:
            continue
        node.pop("compensation", None)
        if draw(st.booleans()):
            node["capability"] = "net.http"
            node["input"] = copy.deepcopy(draw(st.sampled_from(FETCHES)))
        else:
            content = draw(st.sampled_from(CONTENTS + (IN_LOOP if in_loop else ())))
            node["capability"] = "channel.send"
            node["input"] = {"channelId": "team", "content": content}
    return flow


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flow=net_flows(), value=inputs)
def test_every_run_time_pair_is_a_static_pair_with_the_network(
    flow: dict[str, Any], value: Any
) -> None:
    manifest = full(flow) | {"network": {"mode": "allowlist", "hosts": ALLOWED}}
    report = forgec.check(orjson.dumps(manifest), target="talon")
    assert report.ok, [d.message for d in report.errors]
    static = {(f.source, f.sink) for f in report.facts.flows}
    host = NetHost(clock=lambda: "2026-01-01T00:00:00Z", model=answer, model_is_local=False)
    host.states["diff-tool"] = {"s": "saved"}
    result = run(lower_report(report), value, host=host, consent=lambda r: True)
    seen = set(host.flows) | {(label, "output") for label in result.output_labels}
    missing = sorted(p for p in seen if not covered(p, static))
    assert not missing, (missing, result.to_json())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=mutated(), target=st.sampled_from(["talos", "talon"]))
def test_the_flow_facts_never_raise_on_mutated_manifests(doc: dict[str, Any], target: str) -> None:
    # `check` may leave the analysis to the first reader: read them, as inspect does
    report = forgec.check(orjson.dumps(doc), target=target)
    if report.facts is not None:
        for f in report.facts.flows:
            assert f.source and f.sink and f.node and f.path and f.path[-1] == f.node


# --- storage round-trips, two runs with state, failing references (SPEC §15) -------------

WRITES: tuple[dict[str, Any], ...] = (
    {"capability": "tasks.create", "input": {"title": {"$template": "t {{a}}"}}},
    {"capability": "notes.create", "input": {"title": "n", "body": {"$template": "{{b}}{{c}}"}}},
    {"capability": "memory.create", "input": {"text": {"$template": "m {{state.s}} {{a}}"}}},
)
READS: tuple[dict[str, Any], ...] = (
    {"capability": "tasks.list", "input": {}},
    {"capability": "notes.list", "input": {}},
    {"capability": "memory.search", "input": {"query": "m"}},
)
# a capability result read where it may be missing (no item yet) or is sure to be there
RESULT_READS = ("a.items[0].title", "b.items[0]", "c.items", "a.items[1].id", "b.items[0].body")


@st.composite
def storage_flows(draw: st.DrawFn) -> dict[str, Any]:
    flow = draw(net_flows())
    nodes = flow["flow"]["nodes"]
    every = [*nodes, *(b for n in nodes if n["type"] == "foreach" for b in n["body"])]
    for node in every:
        if node["id"].startswith("p"):
            continue  # the prelude defines the variables
        if node["type"] == "capability" and node["capability"] not in ("net.http",):
            choice = draw(st.integers(0, 2))
            if choice == 0:
                node.pop("compensation", None)
                node.pop("target", None)
                node |= copy.deepcopy(draw(st.sampled_from(WRITES)))
            elif choice == 1:
                node.pop("compensation", None)
                node |= copy.deepcopy(draw(st.sampled_from(READS)))
                node["target"] = draw(st.sampled_from(["a", "b", "c"]))
        elif node["type"] == "set" and draw(st.integers(0, 2)) == 0:
            node["value"] = {"$ref": draw(st.sampled_from(RESULT_READS))}
    flow["state"]["fields"]["s"] = {}  # any value: most runs save what they wrote
    # a round trip one run makes and the next undoes: `input.flag` chooses whether this run
    # stores (what it fetched) or reads back and sends what an earlier run stored
    text = {"$template": "m {{a}} {{b}} {{c}}"}
    store, read = draw(
        st.sampled_from(
            [
                ({"capability": "tasks.create", "input": {"title": text}},
                 {"capability": "tasks.list", "input": {}}),
                ({"capability": "notes.create", "input": {"title": "n", "body": text}},
                 {"capability": "notes.list", "input": {}}),
                ({"capability": "memory.create", "input": {"text": text}},
                 {"capability": "memory.search", "input": {"query": "m"}}),
                ("state", "state"),
            ]
        )
    )  # fmt: skip
    first = next(n for n in nodes if n["id"] == "p3")
    after, first["next"] = first["next"], "w0"
    if draw(st.booleans()):  # often straight to the end, so the run succeeds and saves state
        after = "w5"
    back = "state.s" if read == "state" else "w3"
    gadget = [
        {"id": "w0", "type": "if", "condition": {"op": "truthy", "left": {"$ref": "input.flag"}},
         "then": "w1", "else": "w2"},
        {"id": "w1", "type": "set", "target": "state.s", "value": text, "next": after}
        if store == "state" else {"id": "w1", "type": "capability", **store, "next": after},
        {"id": "w2", "type": "set", "target": "w3", "value": {"$ref": "state.s"}, "next": "w4"}
        if read == "state" else {"id": "w2", "type": "capability", **read, "target": "w3",
                                 "next": "w4"},
        {"id": "w4", "type": "capability", "capability": "channel.send",
         "input": {"channelId": "team", "content": {"$template": "{{" + back + "}}"}},
         "next": after},
        {"id": "w5", "type": "return", "value": {"$ref": "w3"}}
        if read != "state" else {"id": "w5", "type": "return", "value": None},
    ]  # fmt: skip
    nodes[nodes.index(first) + 1 : nodes.index(first) + 1] = gadget
    return flow


class NodeHost(NetHost):
    """Records each pair with the node that carried it: a flow the analysis missed at one
    step cannot hide behind the same pair reported at another."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.at: set[tuple[str, str, str]] = set()

    def call(self, capability: str, input: Any, context: Any) -> Any:
        sink = sources_and_sinks.call_sink(capability, input)
        if sink is not None:
            self.at.update((label, sink, context.node_id) for label in context.all_labels())
        return super().call(capability, input, context)


def covered_at(seen: tuple[str, str, str], static: set[tuple[str, str, str]]) -> bool:
    source, sink, node = seen
    return any(
        (s, t, node) in static
        for s in {source} | ({"external:*"} if source.startswith("external:") else set())
        for t in {sink} | ({"egress:*"} if sink.startswith("egress:") else set())
    )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    flow=storage_flows(),
    first=inputs,
    second=inputs,
    flags=st.sampled_from([(True, False), (False, False), (True, True)]),
)
def test_every_run_time_pair_is_a_static_pair_through_storage_and_state(
    flow: dict[str, Any], first: Any, second: Any, flags: tuple[bool, bool]
) -> None:
    first, second = {**first, "flag": flags[0]}, {**second, "flag": flags[1]}
    manifest = full(flow) | {"network": {"mode": "allowlist", "hosts": ALLOWED}}
    report = forgec.check(orjson.dumps(manifest), target="talon")
    assert report.ok, [d.message for d in report.errors]
    static = {(f.source, f.sink) for f in report.facts.flows}
    static_at = {(f.source, f.sink, f.node) for f in report.facts.flows}
    program = lower_report(report)
    host = NodeHost(clock=lambda: "2026-01-01T00:00:00Z", model=answer, model_is_local=False)
    results = []
    for value in (first, second):  # one host: the second run reads what the first stored
        result = run(program, value, host=host, consent=lambda r: True)
        results.append(result.to_json())
        seen = set(host.flows) | {(label, "output") for label in result.output_labels}
        missing = sorted(p for p in seen if not covered(p, static))
        missing_at = sorted(p for p in host.at if not covered_at(p, static_at))
        assert not missing and not missing_at, (
            missing,
            missing_at,
            results,
            host.state_labels,
            host.row_labels,
        )


def test_a_program_without_failure_facts_counts_every_value_a_node_evaluates() -> None:
    """A hand-made or older Program has no `flow.mayFail`: the VM must not take that as
    "nothing may fail" (a missing `$notes.items[0]` decides the ping either way)."""
    nodes = [
        {"id": "look", "type": "capability", "capability": "notes.list",
         "input": {"query": "pin"}, "target": "notes", "next": "hit"},
        {"id": "hit", "type": "set", "target": "first", "value": {"$ref": "notes.items[0].id"},
         "next": "ping"},
        {"id": "ping", "type": "capability", "capability": "net.http",
         "input": {"method": "GET", "url": "https://a.example.com/ping"}, "next": "done"},
        {"id": "done", "type": "return", "value": None},
    ]  # fmt: skip
    manifest = full({"id": "old.program", "title": "Old", "flow": {
        "entry": "look", "maxTransitions": 16, "nodes": nodes}})  # fmt: skip
    manifest["network"] = {"mode": "allowlist", "hosts": ALLOWED}
    report = forgec.check(orjson.dumps(manifest), target="talon")
    program = lower_report(report)
    assert program.flow["mayFail"] == {"hit": [["notes", "items", 0, "id"]]}
    for flow in (program.flow, {k: v for k, v in program.flow.items() if k != "mayFail"}):
        host = NetHost(clock=lambda: "2026-01-01T00:00:00Z", flow_deny=["private->egress"])
        host.notes["note-1"] = {"id": "note-1", "title": "pin", "body": "4711",
                                "createdAt": "2026-01-01T00:00:00Z",
                                "updatedAt": "2026-01-01T00:00:00Z"}  # fmt: skip
        copy_ = type(program).from_json(program.to_json() | {"flow": flow})
        result = run(copy_, {}, host=host, consent=lambda r: True)
        assert result.error is not None and result.error.code == "RUN_FLOW_DENIED", result
        assert result.error.node == "ping"
