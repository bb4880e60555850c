"""The graph pass: duplicates, entry, edges, cycles (whole path), reachability, worst case.

Unit tests build IR by hand to pin the algorithms (cycle paths, loop reachability, SPEC §12's
worst case); end-to-end tests go through `forgec.check` on small manifests, one that triggers
each code and one at its boundary that does not.
"""

from __future__ import annotations

from typing import Any

import attrs
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from manifests import manifest_with_nodes

import forgec
from forgec.catalog import get_catalog
from forgec.ir.codes import REGISTRY
from forgec.ir.nodes import (
    CapabilityNode,
    Condition,
    CredentialRef,
    Flow,
    ForeachNode,
    IfNode,
    ListExpr,
    Literal,
    LlmNode,
    Manifest,
    ModelRequirements,
    Network,
    Node,
    ObjectExpr,
    Ref,
    ReturnNode,
    SetNode,
    Template,
)
from forgec.passes import PASSES
from forgec.passes.context import PassContext
from forgec.passes.graph import check_graph

# --- hand-built IR ---------------------------------------------------------------------------


def s(node_id: str, nxt: str | None = None, target: str = "x") -> SetNode:
    return SetNode(node_id, "", target, Literal(1, ""), nxt)


def r(node_id: str) -> ReturnNode:
    return ReturnNode(node_id, "", Literal(None, ""))


def branch(node_id: str, then: str, else_: str) -> IfNode:
    return IfNode(node_id, "", Condition("truthy", Literal(True, ""), None, ""), then, else_)


def loop(node_id: str, body: list[Node], nxt: str | None, max_items: int | None = 3) -> ForeachNode:
    return ForeachNode(node_id, "", Literal([], ""), "item", None, max_items, tuple(body), nxt)


def place(nodes: list[Node] | tuple[Node, ...], base: str = "/flow/nodes") -> tuple[Node, ...]:
    out: list[Node] = []
    for i, node in enumerate(nodes):
        pointer = f"{base}/{i}"
        if isinstance(node, ForeachNode):
            out.append(
                attrs.evolve(node, pointer=pointer, body=place(node.body, pointer + "/body"))
            )
        else:
            out.append(attrs.evolve(node, pointer=pointer))
    return tuple(out)


def ir(nodes: list[Node], entry: str | None = None, max_transitions: int = 256) -> Manifest:
    return Manifest(
        schema="talos.local-tool.v1",
        id="demo.tool",
        version=1,
        title="t",
        description="d",
        created_at="2026-01-01T00:00:00Z",
        parent_version=None,
        execution="declarative-flow",
        install_scope="device",
        network=Network("forbidden", ()),
        credential_requirements=(),
        model_defaults=None,
        input_schema=None,
        output_schema=None,
        flow=Flow(entry if entry is not None else nodes[0].id, max_transitions, place(nodes)),
        state=None,
        triggers=(),
        ui=None,
    )


def run_graph(manifest: Manifest) -> PassContext:
    ctx = PassContext(raw={}, catalog=get_catalog("talos"), manifest_or_none=manifest)
    check_graph(ctx)
    return ctx


def codes(ctx: PassContext) -> list[str]:
    return [d.code for d in ctx.diagnostics]


def messages(ctx: PassContext, code: str) -> list[str]:
    return [d.message for d in ctx.diagnostics if d.code == code]


# --- cycles ----------------------------------------------------------------------------------


def test_cycle_message_prints_the_whole_path_from_where_the_search_met_it() -> None:
    ctx = run_graph(ir([s("a", "b"), s("b", "c"), s("c", "a"), r("done")]))
    [message] = messages(ctx, "FORGE_CYCLE")
    assert message.endswith("a -> b -> c -> a")
    [diag] = [d for d in ctx.diagnostics if d.code == "FORGE_CYCLE"]
    assert diag.path == "/flow/nodes/2/next"  # the edge that closes the cycle


def test_two_cycles_through_one_branch_give_two_diagnostics() -> None:
    ctx = run_graph(ir([branch("a", "b", "c"), s("b", "a"), s("c", "a")]))
    found = sorted(m.rsplit(": ", 1)[1] for m in messages(ctx, "FORGE_CYCLE"))
    assert found == ["a -> b -> a", "a -> c -> a"]


def test_self_loop_and_unreachable_cycle_are_reported() -> None:
    ctx = run_graph(ir([r("done"), s("x", "x"), s("p", "q"), s("q", "p")], entry="done"))
    found = sorted(m.rsplit(": ", 1)[1] for m in messages(ctx, "FORGE_CYCLE"))
    assert found == ["p -> q -> p", "x -> x"]
    assert ctx.facts.worst_case_transitions == 1  # the reachable part is still measured


def test_cycle_inside_a_loop_body_names_the_loop() -> None:
    body: list[Node] = [s("b1", "b2"), s("b2", "b1")]
    ctx = run_graph(ir([loop("each", body, "done"), r("done")]))
    [message] = messages(ctx, "FORGE_CYCLE")
    assert "body of loop `each`" in message and message.endswith("b1 -> b2 -> b1")
    assert not ctx.facts.graph_ok


def test_acyclic_diamond_is_not_a_cycle() -> None:
    ctx = run_graph(ir([branch("a", "b", "c"), s("b", "d"), s("c", "d"), r("d")]))
    assert codes(ctx) == []
    assert ctx.facts.graph_ok
    order = ctx.facts.topo_order
    assert order[0] == "a" and order[-1] == "d" and set(order) == {"a", "b", "c", "d"}


# --- edges, entry, duplicates ----------------------------------------------------------------


def test_edge_out_of_a_body_is_missing_and_says_why() -> None:
    ctx = run_graph(ir([loop("each", [s("b1", "done")], "done"), r("done")]))
    [diag] = [d for d in ctx.diagnostics if d.code == "FORGE_EDGE_MISSING"]
    assert diag.path == "/flow/nodes/0/body/0/next"
    assert "top-level node" in diag.message


def test_edge_into_a_body_is_missing() -> None:
    ctx = run_graph(ir([s("a", "b1"), loop("each", [s("b1")], "done"), r("done")]))
    [message] = messages(ctx, "FORGE_EDGE_MISSING")
    assert "inside the body of loop `each`" in message


def test_missing_edge_hints_the_closest_id_in_scope() -> None:
    ctx = run_graph(ir([s("prep", "dnoe"), r("done")]))
    [diag] = ctx.diagnostics  # and no unreachable warning: the typo decides reachability
    assert diag.code == "FORGE_EDGE_MISSING"
    assert diag.hint == "did you mean `done`?"


def test_entry_in_a_body_is_missing() -> None:
    ctx = run_graph(ir([loop("each", [s("b1")], "done"), r("done")], entry="b1"))
    [message] = messages(ctx, "FORGE_ENTRY_MISSING")
    assert "inside the body of loop `each`" in message
    assert "FORGE_UNREACHABLE_NODE" not in codes(ctx)


def test_duplicate_across_body_and_top_level_is_one_namespace() -> None:
    ctx = run_graph(ir([loop("each", [s("done")], "done"), r("done")]))
    [diag] = [d for d in ctx.diagnostics if d.code == "FORGE_NODE_DUPLICATE"]
    assert diag.path == "/flow/nodes/1/id"
    assert "/flow/nodes/0/body/0" in diag.message
    assert "FORGE_CYCLE" not in codes(ctx) and not ctx.facts.graph_ok


# --- reachability ----------------------------------------------------------------------------


def test_body_of_an_unreachable_loop_is_unreachable_too() -> None:
    ctx = run_graph(ir([r("done"), loop("each", [s("b1", "b2"), s("b2")], "done")]))
    unreachable = [d.path for d in ctx.diagnostics if d.code == "FORGE_UNREACHABLE_NODE"]
    assert unreachable == ["/flow/nodes/1", "/flow/nodes/1/body/0", "/flow/nodes/1/body/1"]
    assert ctx.facts.reachable == {"done"}
    assert not ctx.facts.loops["each"].reachable


def test_body_reachability_starts_at_the_first_body_node() -> None:
    body: list[Node] = [s("b1"), s("b2")]  # b1 ends the iteration; b2 is never run
    ctx = run_graph(ir([loop("each", body, "done"), r("done")]))
    [diag] = ctx.diagnostics
    assert (diag.code, diag.path) == ("FORGE_UNREACHABLE_NODE", "/flow/nodes/0/body/1")
    assert ctx.facts.reachable == {"each", "b1", "done"}


# --- worst case ------------------------------------------------------------------------------


def test_worst_case_follows_spec_formula_with_loops_and_branches() -> None:
    body: list[Node] = [
        branch("pick", "long1", "short"),
        s("long1", "long2"),
        s("long2"),
        s("short"),
    ]
    nodes: list[Node] = [s("a", "each"), loop("each", body, "done", max_items=10), r("done")]
    ctx = run_graph(ir(nodes, max_transitions=256))
    # a(1) + each(1 + 10 × (pick, long1, long2 = 3)) + done(1)
    assert ctx.facts.worst_case_transitions == 33
    assert ctx.facts.worst_case_path == ["a", "each", "done"]
    assert ctx.facts.loops["each"].body_longest_path == ["pick", "long1", "long2"]
    assert codes(ctx) == []


def test_worst_case_takes_the_longer_branch() -> None:
    nodes: list[Node] = [
        branch("a", "short", "l1"),
        r("short"),
        s("l1", "l2"),
        s("l2", "end"),
        r("end"),
    ]
    ctx = run_graph(ir(nodes, max_transitions=3))
    assert ctx.facts.worst_case_path == ["a", "l1", "l2", "end"]
    [message] = messages(ctx, "FORGEC_TRANSITIONS_MAY_EXCEED")
    assert "4 transitions" in message and "a -> l1 -> l2 -> end" in message


def test_loop_without_usable_max_items_gives_no_worst_case() -> None:
    ctx = run_graph(
        ir([loop("each", [s("b")], "done", max_items=None), r("done")], max_transitions=1)
    )
    assert ctx.facts.worst_case_transitions is None
    assert "FORGEC_TRANSITIONS_MAY_EXCEED" not in codes(ctx)


# --- end to end ------------------------------------------------------------------------------


def check(manifest: dict[str, Any]) -> forgec.Report:
    return forgec.check(orjson.dumps(manifest))


def report_codes(report: forgec.Report) -> list[str]:
    return [d.code for d in report.diagnostics]


SET_X = {"id": "a", "type": "set", "target": "x", "value": 1, "next": "done"}
DONE = {"id": "done", "type": "return", "value": {"ok": True}}


def test_e2e_duplicate_trigger_and_boundary() -> None:
    dup = {"id": "done", "type": "set", "target": "x", "value": 1, "next": "end"}
    trigger = manifest_with_nodes([dup, DONE, {"id": "end", "type": "return", "value": 1}])
    assert "FORGE_NODE_DUPLICATE" in report_codes(check(trigger))
    assert report_codes(check(manifest_with_nodes([SET_X, DONE]))) == []


def test_e2e_entry_trigger_and_boundary() -> None:
    assert report_codes(check(manifest_with_nodes([DONE], entry="start"))) == [
        "FORGE_ENTRY_MISSING"
    ]
    assert report_codes(check(manifest_with_nodes([DONE], entry="done"))) == []


def test_e2e_edge_trigger_and_boundary() -> None:
    bad = {**SET_X, "next": "dnoe"}
    assert report_codes(check(manifest_with_nodes([bad, DONE]))) == ["FORGE_EDGE_MISSING"]
    assert report_codes(check(manifest_with_nodes([SET_X, DONE]))) == []


def test_e2e_cycle_trigger_and_boundary() -> None:
    cond = {"op": "truthy", "left": {"$ref": "input.again"}}
    check_node = {"id": "check", "type": "if", "condition": cond, "then": "a", "else": "done"}
    looping = {**SET_X, "next": "check"}
    report = check(manifest_with_nodes([check_node, looping, DONE]))
    [diag] = [d for d in report.diagnostics if d.code == "FORGE_CYCLE"]
    assert diag.message.endswith("check -> a -> check")
    assert diag.span is not None and diag.path == "/flow/nodes/1/next"
    assert report_codes(check(manifest_with_nodes([check_node, SET_X, DONE]))) == []


def test_e2e_unreachable_trigger_and_boundary() -> None:
    report = check(manifest_with_nodes([DONE, SET_X], entry="done"))
    assert report_codes(report) == ["FORGE_UNREACHABLE_NODE"]
    assert report.ok  # a warning: the tool still installs
    assert report_codes(check(manifest_with_nodes([SET_X, DONE], entry="a"))) == []


@pytest.mark.parametrize(("limit", "warned"), [(2, True), (3, False)])
def test_e2e_transitions_boundary(limit: int, warned: bool) -> None:
    b = {"id": "b", "type": "set", "target": "y", "value": 2, "next": "done"}
    manifest = manifest_with_nodes([{**SET_X, "next": "b"}, b, DONE], max_transitions=limit)
    assert ("FORGEC_TRANSITIONS_MAY_EXCEED" in report_codes(check(manifest))) is warned


@pytest.mark.parametrize(("limit", "warned"), [(31, True), (32, False)])
def test_e2e_transitions_count_loop_iterations(limit: int, warned: bool) -> None:
    body = [
        {"id": "b1", "type": "set", "target": "last", "value": {"$ref": "item"}, "next": "b2"},
        {"id": "b2", "type": "set", "target": "seen", "value": True},
    ]
    each = {
        "id": "each",
        "type": "foreach",
        "source": {"$ref": "input.items"},
        "itemVar": "item",
        "maxItems": 15,
        "body": body,
        "next": "done",
    }
    report = check(manifest_with_nodes([each, DONE], max_transitions=limit))
    assert report.facts.worst_case_transitions == 32  # 1 + 15 × 2 + 1
    assert ("FORGEC_TRANSITIONS_MAY_EXCEED" in report_codes(report)) is warned


# --- never raises on a best-effort IR --------------------------------------------------------

IDS = st.sampled_from(["a", "b", "c", "done", "each"])
MAYBE_ID = st.none() | IDS
VALUES = st.none() | st.sampled_from(
    [
        Literal(1, "/v"),
        Literal({"url": "https://x.example.org/"}, "/v"),
        Ref("x", ("x",), "/v"),
        Ref("", (), "/v"),
        Ref("state.n", ("state", "n"), "/v"),
        Ref("output", ("output",), "/v"),
        Template("{{x}}", ("p", Ref("x", ("x",), "/v")), "/v"),
        CredentialRef("k", "/v"),
        ObjectExpr((("headers", ObjectExpr((("A", CredentialRef("k", "/v")),), "/v")),), "/v"),
        ObjectExpr((("url", Template("", ("https://a.org/", Ref("x", ("x",), "")), "")),), "/v"),
        ListExpr((Ref("x", ("x",), "/v"),), "/v"),
    ]
)
TARGETS = st.none() | st.sampled_from(["x", "state.n", "input", "a.b", ""])
CAPS = st.none() | st.sampled_from(["tasks.create", "net.http", "nope", "memory.access"])


def leaf_nodes() -> st.SearchStrategy[Node]:
    return st.one_of(
        st.builds(SetNode, IDS, st.just(""), TARGETS, VALUES, MAYBE_ID),
        st.builds(
            CapabilityNode,
            IDS,
            st.just(""),
            CAPS,
            VALUES,
            TARGETS,
            st.none(),
            st.none() | CAPS,
            MAYBE_ID,
        ),
        st.builds(
            LlmNode,
            IDS,
            st.just(""),
            st.none(),
            VALUES,
            TARGETS,
            st.none() | st.just(ModelRequirements(structured_output=True, privacy="local-only")),
            st.none(),
            MAYBE_ID,
        ),
        st.builds(
            IfNode,
            IDS,
            st.just(""),
            st.none() | st.builds(Condition, st.none(), VALUES, VALUES, st.just("")),
            MAYBE_ID,
            MAYBE_ID,
        ),
        st.builds(ReturnNode, IDS, st.just(""), VALUES),
    )


def any_nodes() -> st.SearchStrategy[Node]:
    loops = st.builds(
        ForeachNode,
        IDS,
        st.just(""),
        VALUES,
        st.none() | st.sampled_from(["item", "input", "x"]),
        st.none() | st.sampled_from(["i", "item"]),
        st.none() | st.integers(1, 100),
        st.lists(leaf_nodes(), max_size=4).map(tuple),
        MAYBE_ID,
    )
    return leaf_nodes() | loops


@settings(max_examples=200, deadline=None)
@given(
    st.lists(any_nodes(), max_size=8),
    MAYBE_ID,
    st.none() | st.integers(1, 256),
    st.sampled_from(["talos", "talon"]),
    st.none() | st.sampled_from([Network("forbidden", ()), Network("allowlist", ("a.org",))]),
)
def test_passes_never_raise_on_a_best_effort_ir(
    nodes: list[Node], entry: str | None, limit: int | None, target: str, network: Network | None
) -> None:
    manifest = attrs.evolve(
        ir(nodes or [r("done")], entry=entry or "done", max_transitions=limit or 1),
        network=network,
        model_defaults=None,
    )
    ctx = PassContext(raw={}, catalog=get_catalog(target), manifest_or_none=manifest)
    for name, run in PASSES:
        if name not in ("structure", "secrets"):
            run(ctx)
    assert all(d.code in REGISTRY for d in ctx.diagnostics)


def test_edges_to_a_node_with_a_broken_type_or_id_are_not_missing() -> None:
    broken_type = {"id": "done", "type": "retrun", "value": 1}
    report = check(manifest_with_nodes([SET_X, broken_type]))
    assert report_codes(report) == ["FORGE_MANIFEST_STRUCTURE"]
    broken_id = {"id": "1st", "type": "return", "value": 1}
    report = check(manifest_with_nodes([{**SET_X, "next": "1st"}, broken_id]))
    assert report_codes(report) == ["FORGE_NODE_ID"]
    assert report.facts.incomplete


def test_entry_naming_a_broken_node_or_an_empty_flow_is_not_missing() -> None:
    broken = {"id": "done", "type": "retrun", "value": 1}
    assert report_codes(check(manifest_with_nodes([broken]))) == ["FORGE_MANIFEST_STRUCTURE"]
    assert report_codes(check(manifest_with_nodes([], entry="done"))) == ["FORGE_NODE_BOUNDS"]


def test_an_unusable_or_missing_successor_hides_no_unreachable_cascade() -> None:
    bad_next = {**SET_X, "next": 5}
    assert report_codes(check(manifest_with_nodes([bad_next, DONE]))) == [
        "FORGE_MANIFEST_STRUCTURE"
    ]
    no_next = {k: v for k, v in SET_X.items() if k != "next"}
    assert report_codes(check(manifest_with_nodes([no_next, DONE]))) == ["FORGE_MANIFEST_STRUCTURE"]


def test_body_of_a_loop_cut_off_by_a_missing_edge_is_not_warned_about() -> None:
    nodes: list[Node] = [s("a", "eahc"), loop("each", [s("b1")], "done"), r("done")]
    ctx = run_graph(ir(nodes))
    assert codes(ctx) == ["FORGE_EDGE_MISSING"]
    assert ctx.facts.reachable == {"a"}


def test_a_huge_bogus_id_is_shortened_in_messages() -> None:
    report = check(manifest_with_nodes([{**SET_X, "next": "z" * 5000}, DONE]))
    [diag] = report.diagnostics
    assert diag.code == "FORGE_EDGE_MISSING" and len(diag.message) < 300


def test_a_missing_edge_on_an_unreachable_node_does_not_hide_it() -> None:
    ctx = run_graph(ir([r("done"), s("stray", "nowhere")], entry="done"))
    assert sorted(codes(ctx)) == ["FORGE_EDGE_MISSING", "FORGE_UNREACHABLE_NODE"]


def _sorted_per_position(succ: list[list[int]], members: list[int] | None) -> list[int] | None:
    """The order `topological` promises, computed the plain way: every position in `graphlib`,
    the earliest ready position next."""
    import graphlib
    import heapq

    sorter: graphlib.TopologicalSorter[int] = graphlib.TopologicalSorter()
    for i in range(len(succ)) if members is None else members:
        sorter.add(i)
        for j in succ[i]:
            sorter.add(j, i)
    try:
        sorter.prepare()
    except graphlib.CycleError:
        return None
    ready = list(sorter.get_ready())
    heapq.heapify(ready)
    order = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        sorter.done(i)
        for j in sorter.get_ready():
            heapq.heappush(ready, j)
    return order


@st.composite
def _successor_lists(draw: st.DrawFn) -> list[list[int]]:
    n = draw(st.integers(1, 10))
    # mostly "next is the following node" (what runs are made of), some jumps, back edges,
    # self-loops, repeated targets (an `if` whose branches meet) and ends
    target = st.one_of(st.just(-1), st.integers(0, n - 1))
    succ = []
    for i in range(n):
        out = draw(st.lists(target, max_size=3))
        succ.append([min(i + 1, n - 1) if t == -1 else t for t in out])
    return succ


@settings(max_examples=200, deadline=None)
@given(_successor_lists(), st.integers(0, 9))
def test_topological_sorting_runs_gives_the_per_position_order(
    succ: list[list[int]], start: int
) -> None:
    from forgec.passes.graph import reach, topological

    assert topological(succ) == _sorted_per_position(succ, None)
    seen = reach(succ, start % len(succ))
    members = [i for i, s in enumerate(seen) if s]
    assert topological(succ, members) == _sorted_per_position(succ, members)
