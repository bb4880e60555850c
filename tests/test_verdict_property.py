"""The verdict's promise, searched for counterexamples (SPEC §23, issue 28): for generated
pairs v1 → v2 (v2 a mutation of v1: a literal changed, a loop bound moved, a branch swapped,
a condition changed, a step dropped, two steps swapped, ids renamed, a field computed from the
input), whenever a VM run of v2 on the in-memory host makes a call (capability or model, with
its input) that the run of v1 with the same input does not make, the verdict is not "No new
power". The runs give v1 every chance: a model that answers, a host that accepts.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from strategies import manifests

from forgec.api import check, lower
from forgec.runtime.memory_host import MemoryHost
from forgec.runtime.vm import run
from forgec.store.verdict import verdict

VALUES: list[Any] = [[], ["a"], ["a", "b"], [1, 2, 3], "x", "", 0, 2, True, None, {"k": 1}]
INPUT_VALUES = st.sampled_from(VALUES)


def _answer(op: str, input: Any, requirements: Any, schema: Any) -> Any:
    return {} if isinstance(schema, dict) and schema.get("type") == "object" else "ok"


def _computed(value: Any) -> bool:
    """Whether a node's input value is computed (a reference or a template somewhere in it)."""
    if isinstance(value, dict):
        return "$ref" in value or "$template" in value or any(map(_computed, value.values()))
    if isinstance(value, list):
        return any(map(_computed, value))
    return False


def calls(manifest: dict[str, Any], value: dict[str, Any]) -> set[tuple[str, str, bytes]]:
    """The calls a run makes, as SPEC §23 sees them: the capability (or model op) and each
    top-level input field as its literal, or `computed` where the step computes it (§23: a
    value computed another way from the same sources is no new power, docs/store.md)."""
    program = lower(manifest, target="talos")
    host = MemoryHost(model=_answer, clock=lambda: "2026-01-01T00:00:00.000000Z")
    run(program, value, host=host, consent=lambda _r: True, sleep=lambda _s: None)
    written = {n["id"]: n.get("input") for n in _steps(manifest["flow"]["nodes"])}
    out = set()
    for c in host.calls:
        if c.kind not in ("call", "model"):
            continue
        given = written.get(c.node)
        seen: Any = c.input
        if _computed(given):
            seen = "computed"
            if isinstance(given, dict) and isinstance(c.input, dict) and "$ref" not in given:
                seen = {k: "computed" if _computed(given.get(k)) else v for k, v in c.input.items()}
        out.add((c.kind, c.name, orjson.dumps(seen, option=orjson.OPT_SORT_KEYS)))
    return out


def _steps(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for node in nodes:
        out.append(node)
        out.extend(node.get("body", ()))
    return out


@st.composite
def mutated(draw: st.DrawFn, v1: dict[str, Any]) -> dict[str, Any]:
    v2 = copy.deepcopy(v1)
    nodes = v2["flow"]["nodes"]
    every = _steps(nodes)
    props = list(v2["inputSchema"]["properties"])
    kind = draw(
        st.sampled_from(
            [
                "text",
                "literal",
                "max",
                "swap-branches",
                "condition",
                "drop",
                "reorder",
                "rename",
                "computed",
            ]
        )
    )
    caps = [n for n in every if n["type"] == "capability"]
    if kind == "text":
        v2["title"] = v2["title"] + " (new)"
    elif kind == "literal" and caps:
        node = draw(st.sampled_from(caps))
        field = draw(st.sampled_from(sorted(node["input"])))
        value = node["input"][field]
        node["input"][field] = (value + 1) if isinstance(value, int) else (str(value) + "!")
    elif kind == "max":
        loops = [n for n in nodes if n["type"] == "foreach"]
        assume(loops)
        draw(st.sampled_from(loops))["maxItems"] = draw(st.integers(1, 5))
    elif kind == "swap-branches":
        ifs = [n for n in nodes if n["type"] == "if"]
        assume(ifs)
        node = draw(st.sampled_from(ifs))
        node["then"], node["else"] = node["else"], node["then"]
    elif kind == "condition":
        ifs = [n for n in nodes if n["type"] == "if"]
        assume(ifs)
        node = draw(st.sampled_from(ifs))
        node["condition"] = {
            "op": "truthy",
            "left": {"$ref": f"input.{draw(st.sampled_from(props))}"},
        }
    elif kind == "drop":
        simple = [i for i, n in enumerate(nodes[:-1]) if n["type"] in ("set", "capability", "llm")]
        assume(simple)
        i = draw(st.sampled_from(simple))
        gone = nodes.pop(i)
        for n in nodes:
            for key in ("next", "then", "else"):
                if n.get(key) == gone["id"]:
                    n[key] = gone["next"]
        if v2["flow"]["entry"] == gone["id"]:
            v2["flow"]["entry"] = gone["next"]
    elif kind == "reorder":
        pairs = [
            i
            for i in range(len(nodes) - 1)
            if nodes[i]["type"] in ("capability", "llm", "set")
            and nodes[i + 1]["type"] in ("capability", "llm", "set")
        ]
        assume(pairs)
        i = draw(st.sampled_from(pairs))
        a, b = nodes[i], nodes[i + 1]
        keep = ("id", "next")
        body_a = {k: v for k, v in a.items() if k not in keep}
        body_b = {k: v for k, v in b.items() if k not in keep}
        for k in body_a:
            a.pop(k)
        for k in body_b:
            b.pop(k)
        a.update(body_b)
        b.update(body_a)
    elif kind == "rename":
        ids = {n["id"]: f"r{n['id']}" for n in every}
        for n in every:
            n["id"] = ids[n["id"]]
            for key in ("next", "then", "else"):
                if key in n:
                    n[key] = ids[n[key]]
        v2["flow"]["entry"] = ids[v2["flow"]["entry"]]
    elif kind == "computed" and caps:
        node = draw(st.sampled_from(caps))
        field = draw(st.sampled_from(sorted(node["input"])))
        node["input"][field] = {"$ref": f"input.{draw(st.sampled_from(props))}"}
    v2["version"] = v1["version"] + 1
    return v2


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.filter_too_much,
        HealthCheck.data_too_large,
    ],
)
@given(st.data())
def test_a_new_effect_is_never_no_new_power(data: st.DataObject) -> None:
    v1 = data.draw(manifests())
    v2 = data.draw(mutated(v1))
    old = check(orjson.dumps(v1), target="talos")
    new = check(orjson.dumps(v2), target="talos")
    assume(old.ok and new.ok)
    found = verdict(old, new, was="v1", witness=False)
    assert found is not None
    assert all(g.capability != "tool" for g in found.gains)  # judged, not given up on
    props = list(v1["inputSchema"]["properties"])
    values = [{p: data.draw(INPUT_VALUES) for p in props} for _ in range(3)]
    # a test on computed values is computed too (§23): v1 may make a call under another of
    # the inputs tried (each of them, and each value given to every property at once)
    tried = values + [dict.fromkeys(props, x) for x in VALUES]
    made = set().union(*(calls(v1, x) for x in tried))
    for value in values:
        fresh = calls(v2, value) - made
        if fresh:
            assert found.new_power, (fresh, v1, v2)
            return


@st.composite
def renamed(draw: st.DrawFn, v1: dict[str, Any]) -> dict[str, Any]:
    """v1 with every node id renamed and its text changed: nothing it does is new."""
    v2 = copy.deepcopy(v1)
    every = _steps(v2["flow"]["nodes"])
    prefix = draw(st.sampled_from(["r", "step_", "x9"]))
    ids = {n["id"]: f"{prefix}{n['id']}" for n in every}
    for n in every:
        n["id"] = ids[n["id"]]
        for key in ("next", "then", "else"):
            if key in n:
                n[key] = ids[n[key]]
    v2["flow"]["entry"] = ids[v2["flow"]["entry"]]
    v2["title"] = v2["title"] + " (renamed)"
    v2["version"] = v1["version"] + 1
    return v2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_renaming_every_node_and_changing_text_is_no_new_power(data: st.DataObject) -> None:
    v1 = data.draw(manifests())
    v2 = data.draw(renamed(v1))
    old = check(orjson.dumps(v1), target="talos")
    new = check(orjson.dumps(v2), target="talos")
    assume(old.ok and new.ok)
    found = verdict(old, new, was="v1", witness=False)
    assert found is not None and not found.new_power, [g.sentence for g in found.gains]


def _ladder(prefix: str) -> dict[str, Any]:
    """Two `tasks.list` steps, `limit: 1` then `limit: 2`, then a fail; node ids PREFIX+n…"""
    nodes: list[dict[str, Any]] = [
        {
            "id": f"{prefix}n{i}",
            "type": "capability",
            "capability": "tasks.list",
            "input": {"query": "", "limit": i + 1},
            "target": f"t{i}",
            "next": f"{prefix}n{i + 1}",
        }
        for i in range(2)
    ]
    nodes.append({"id": f"{prefix}n2", "type": "fail", "code": "ABC", "message": "m"})
    return {
        "schema": "talos.local-tool.v1",
        "id": "ladder",
        "version": 1,
        "title": "t",
        "description": "d",
        "createdAt": "2026-11-02T09:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "inputSchema": {"type": "object", "properties": {"a": {"description": "a"}}},
        "flow": {"entry": f"{prefix}n0", "maxTransitions": 256, "nodes": nodes},
    }


def test_renamed_narrowing_ladder_is_no_new_power() -> None:
    """The pair the search above found on main (issue 31): each v2 call is matched to its own
    v1 call, so `limit: 2` is not counted twice against the one v1 call that allows it."""
    old = check(orjson.dumps(_ladder("")), target="talos")
    new = check(orjson.dumps({**_ladder("r"), "version": 2}), target="talos")
    assert old.ok and new.ok
    found = verdict(old, new, was="v1", witness=False)
    assert found is not None and not found.new_power, [g.sentence for g in found.gains]
