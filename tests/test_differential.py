"""The proof that lowering is right: on generated flows and inputs, the VM running the lowered
Program and the tree-walking reference interpreter (`reference_interp.py`) agree on status,
output, error code and node, transitions, compensations, retry waits and the host's final data.

Flows are generated DAGs: node i only leads to nodes after it, the last node ends the run,
loop bodies likewise inside themselves. They mix set/if/foreach/capability/return/fail with
refs that may be missing, comparisons that may be ill-typed, retries against injected
transient failures, compensated writes, and tight transition limits.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from reference_interp import build_ir, lower_dict, reference_run

from forgec.runtime import run
from forgec.runtime.memory_host import MemoryHost

VARS = ("a", "b", "c", "state.s")
COND_OPS = ("eq", "neq", "truthy", "exists", "contains", "gt", "gte", "lt", "lte")
PATHS = (
    "state.s",
    "state.n",
    "input.x",
    "input.items",
    "input.flag",
    "input.items[0]",
    "input.nope",
    "a",
    "b",
    "c",
    "a",
    "b",
    "c.title",
)
LOOP_PATHS = ("it", "i", "it.title")

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, 2.5, "", "x", "ab"])
)


@st.composite
def values(draw: st.DrawFn, in_loop: bool = False, depth: int = 0) -> Any:
    paths = PATHS + (LOOP_PATHS if in_loop else ())
    kind = draw(st.sampled_from(["lit", "ref", "ref", "tpl", "obj", "list"][: 4 if depth else 6]))
    if kind == "lit":
        return draw(st.one_of(scalars, st.lists(scalars, max_size=3)))
    if kind == "ref":
        return {"$ref": draw(st.sampled_from(paths))}
    if kind == "tpl":
        return {"$template": "v={{" + draw(st.sampled_from(paths)) + "}}!"}
    if kind == "obj":
        keys = draw(st.lists(st.sampled_from("pqr"), unique=True, min_size=1, max_size=3))
        return {k: draw(values(in_loop, depth + 1)) for k in keys}
    return [draw(values(in_loop, depth + 1)) for _ in range(draw(st.integers(1, 3)))]


@st.composite
def steps(
    draw: st.DrawFn, nid: str, later: list[str], in_loop: bool, force: str | None = None
) -> dict[str, Any]:
    """One node whose successors are among `later` (None ends a loop iteration)."""
    enders = ["return", "fail"]
    if later:
        # mostly steps that continue, so runs get deep enough to call, retry and undo
        kinds = ["capability", "set", "capability", "if", "if", "fail", "llm"]
        if in_loop:
            kinds += enders
    elif in_loop:
        kinds = ["capability", "set", *enders]
    else:
        kinds = enders
    kind = force or draw(st.sampled_from(kinds))

    def nxt() -> dict[str, Any]:
        if not later:
            return {}
        if in_loop and draw(st.booleans()):
            return {}  # ends the iteration
        return {"next": draw(st.sampled_from(later))}

    if kind == "set":
        return {
            "id": nid,
            "type": "set",
            "target": draw(st.sampled_from(VARS)),
            "value": draw(values(in_loop)),
            **nxt(),
        }
    if kind == "if":
        op = draw(st.sampled_from(COND_OPS))
        cond: dict[str, Any] = {"op": op, "left": draw(values(in_loop))}
        if op not in ("truthy", "exists"):
            cond["right"] = draw(values(in_loop))
        branch = later or []
        return {
            "id": nid,
            "type": "if",
            "condition": cond,
            "then": draw(st.sampled_from(branch)),
            "else": draw(st.sampled_from(branch)),
        }
    if kind == "capability":
        which = draw(st.sampled_from(["create", "list", "create", "note"]))
        node: dict[str, Any] = {"id": nid, "type": "capability"}
        if which == "create":
            node |= {
                "capability": "tasks.create",
                "input": {"title": draw(st.sampled_from(["t", {"$template": "t {{a}}"}]))},
            }
            if draw(st.booleans()):
                node["compensation"] = "tasks.setStatus"
        elif which == "list":
            node |= {"capability": "tasks.list", "input": {}}
        else:
            node |= {"capability": "notes.create", "input": {"title": "n", "body": "b"}}
        if draw(st.booleans()):
            node["target"] = draw(st.sampled_from(VARS))
        if draw(st.booleans()):
            node["retry"] = {
                "attempts": draw(st.integers(1, 3)),
                "backoffMs": draw(st.sampled_from([0, 5])),
            }
        return node | nxt()
    if kind == "llm":
        node = {
            "id": nid,
            "type": "llm",
            "op": draw(st.sampled_from(["classify", "summarize"])),
            "input": draw(values(in_loop)),
            "target": draw(st.sampled_from(VARS)),
        }
        if draw(st.booleans()):
            node["requirements"] = {
                "privacy": draw(st.sampled_from(["local-only", "remote-allowed"]))
            }
        return node | nxt()
    if kind == "return":
        return {"id": nid, "type": "return", "value": draw(values(in_loop))}
    return {
        "id": nid,
        "type": "fail",
        "code": draw(st.sampled_from(["STOP_A", "STOP_B"])),
        "message": "stopped",
    }


@st.composite
def flows(draw: st.DrawFn) -> dict[str, Any]:
    count = draw(st.integers(2, 8))
    ids = [f"n{i}" for i in range(count)]
    nodes = []
    for i, nid in enumerate(ids):
        later = ids[i + 1 :]
        if later and draw(st.integers(0, 4)) == 0:
            body_ids = [f"{nid}b{j}" for j in range(draw(st.integers(1, 4)))]
            body = [draw(steps(bid, body_ids[j + 1 :], True)) for j, bid in enumerate(body_ids)]
            nodes.append(
                {
                    "id": nid,
                    "type": "foreach",
                    "source": draw(
                        st.sampled_from([{"$ref": "input.items"}, {"$ref": "a"}, [1, 2]])
                    ),
                    "itemVar": "it",
                    "indexVar": "i",
                    "maxItems": draw(st.integers(1, 5)),
                    "body": body,
                    "next": draw(st.sampled_from(later)),
                }
            )
        else:
            nodes.append(draw(steps(nid, later, False, "capability" if i == 0 else None)))
    # a prelude defines the flow variables, so most refs resolve and runs get further
    prelude = [
        {"id": "p0", "type": "set", "target": "a", "value": {"$ref": "input.items"}, "next": "p1"},
        {"id": "p1", "type": "set", "target": "b", "value": {"$ref": "input.x"}, "next": "p2"},
        {"id": "p2", "type": "set", "target": "c", "value": {"title": "z"}, "next": "n0"},
    ]
    return {
        "id": "diff-tool",
        "version": 1,
        "title": "Differential",
        "flow": {
            "entry": "p0",
            "maxTransitions": draw(st.sampled_from([256, 256, 12, 6, 5, 4])),
            "nodes": prelude + nodes,
        },
        "modelDefaults": {"reasoningEffort": "low"},
        "state": {
            "fields": {"s": {"type": "string"}, "n": {"type": "integer", "default": 7}},
            "maxBytes": 65536,
        },
    }


inputs = st.fixed_dictionaries(
    {
        "x": st.one_of(st.integers(-2, 2), st.sampled_from(["x", "ab"])),
        "flag": st.booleans(),
        "items": st.lists(
            st.one_of(
                st.integers(0, 3), st.fixed_dictionaries({"title": st.sampled_from(["p", "q"])})
            ),
            max_size=6,
        ),
    }
)

failures = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "tasks.create",
                "tasks.list",
                "notes.create",
                "compensate:tasks.create",
                "tasks.create",
            ]
        ),
        st.sampled_from([True, True, False]),  # mostly transient: retries get exercised
        st.integers(1, 3),
    ),
    min_size=1,
    max_size=3,
)


def answer(op: str, input: Any, requirements: Any, schema: Any) -> Any:
    """A deterministic model: what it was asked, so both runs can be compared."""
    return {"op": op, "privacy": requirements.get("privacy"), "input": input}


def make_host(plan: list[tuple[str, bool, int]]) -> MemoryHost:
    host = MemoryHost(clock=lambda: "2026-01-01T00:00:00Z", model=answer, model_is_local=False)
    host.states["diff-tool"] = {"s": "saved"}
    for capability, transient, times in plan:
        host.fail(capability, transient=transient, times=times)
    return host


def comparable(result: dict[str, Any]) -> dict[str, Any]:
    error = result["error"]
    return {
        "status": result["status"],
        "output": result["output"],
        "error": (error["code"], error["node"]) if error else None,
        "transitions": result["transitions"],
        "compensations": result["compensations"],
    }


@settings(max_examples=200, deadline=None)
@given(flow=flows(), value=inputs, plan=failures)
def test_vm_agrees_with_the_reference_interpreter(
    flow: dict[str, Any], value: dict[str, Any], plan: list[tuple[str, bool, int]]
) -> None:
    vm_host, ref_host = make_host(plan), make_host(plan)
    vm_waits: list[float] = []
    ref_waits: list[float] = []
    program = lower_dict(flow)
    got = run(program, value, host=vm_host, consent=lambda r: True, sleep=vm_waits.append)
    expected = reference_run(build_ir(flow), value, ref_host, sleep=ref_waits.append)
    assert comparable(got.to_json()) == comparable(expected)
    assert vm_waits == ref_waits
    assert vm_host.tasks == ref_host.tasks and vm_host.notes == ref_host.notes
    assert vm_host.states == ref_host.states
    assert [(c.kind, c.name, c.node, c.attempt) for c in vm_host.calls] == [
        (c.kind, c.name, c.node, c.attempt) for c in ref_host.calls
    ]
