"""The flow analysis is bounded by construction (SPEC §16, issue 17; docs/analysis.md states
the cost): label sets are interned, an abstract value is capped in size and depth, a loop
widens after a bounded number of rounds, the persistent cells after a bounded number of runs.

- The measured file — a loop whose body repeats `set x = [$x, $x]` — took 35–50 s to check
  with three repeats and did not finish in 10 minutes with four; `forgec inspect` (which pays
  for the flow facts even when no step sends anything) now answers within 2 s and 512 MiB,
  in a child process under RLIMIT_AS, and the caps stay sound: the input still reaches the
  result.
- A hypothesis search for the slowest flow within the manifest limits (64 nodes, 16 per
  body): doubling sets, state and table round trips, wide literals, conditions, fetches;
  `hypothesis.target` steers it towards the slowest analysis, which must stay within budget.
- `NODE_TABLE` covers every node type (no silent default: an unknown type is a KeyError,
  never "the run ends here").
"""

from __future__ import annotations

import itertools
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, target
from hypothesis import strategies as st

import forgec
from forgec.ir.rules import NODE_TYPE_NAMES
from forgec.passes.flows import NODE_TABLE

ROOT = Path(__file__).resolve().parent.parent
MEMORY = 512 << 20
BUDGET_S = 2.0  # SPEC §16: any check within the limits, on a loaded 2-core machine


def tool(nodes: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "schema": "talos.local-tool.v1",
        "id": "bounded.flows",
        "version": 1,
        "title": "Bounded",
        "description": "An adversarial flow for the flow analysis.",
        "createdAt": "2026-01-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "allowlist", "hosts": ["h.example.com"]},
        "credentialRequirements": [],
        "flow": {"entry": nodes[0]["id"], "maxTransitions": 256, "nodes": nodes},
        **extra,
    }


def doubling(repeats: int) -> dict[str, Any]:
    body = [
        {"id": f"b{i}", "type": "set", "target": "x", "value": [{"$ref": "x"}, {"$ref": "x"}]}
        for i in range(repeats)
    ]
    for a, b in itertools.pairwise(body):
        a["next"] = b["id"]
    return tool(
        [
            {"id": "s0", "type": "set", "target": "x", "value": {"$ref": "input.a"},
             "next": "loop"},
            {"id": "loop", "type": "foreach", "source": {"$ref": "input.items"}, "itemVar": "it",
             "maxItems": 10, "body": body, "next": "done"},
            {"id": "done", "type": "return", "value": {"$ref": "x"}},
        ]
    )  # fmt: skip


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


@pytest.mark.parametrize("repeats", [3, 4, 16])
def test_the_doubling_loop_is_inspected_within_the_budget(tmp_path: Path, repeats: int) -> None:
    path = tmp_path / "doubling.talostool"
    path.write_text(json.dumps(doubling(repeats)))
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "forgec", "inspect", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limits,
        cwd=ROOT,
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    flows = json.loads(done.stdout)["flows"]
    # sound under the caps: the input is in the result, by data
    assert any(f["source"] == "input" and f["via"] == "data" for f in flows), flows
    # the child's own start (imports) is part of it; the analysis itself is milliseconds
    assert elapsed < BUDGET_S + 1.5, elapsed


def test_node_table_covers_every_node_type() -> None:
    assert set(NODE_TABLE) == set(NODE_TYPE_NAMES)


# --- the worst-case search --------------------------------------------------------------

VARS = ("x", "y", "z", "state.s")
REFS = ("x", "y", "z", "state.s", "input.a", "x.k", "y.items[0]", "page.body", "it")


@st.composite
def values(draw: st.DrawFn, depth: int = 0) -> Any:
    kind = draw(st.sampled_from(["ref", "list", "obj", "tpl", "lit"] if depth < 3 else ["ref"]))
    if kind == "ref":
        return {"$ref": draw(st.sampled_from(REFS))}
    if kind == "list":
        return [draw(values(depth + 1)) for _ in range(draw(st.integers(1, 4)))]
    if kind == "obj":
        keys = draw(st.lists(st.sampled_from("kpq"), unique=True, min_size=1, max_size=3))
        return {k: draw(values(depth + 1)) for k in keys}
    if kind == "tpl":
        return {"$template": "{{" + "}}{{".join(draw(st.lists(st.sampled_from(REFS[:5]),
                                                               min_size=1, max_size=3))) + "}}"}  # fmt: skip
    return "lit"


@st.composite
def step(draw: st.DrawFn, nid: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(["set", "set", "set", "write", "read", "fetch", "if"]))
    if kind == "set":
        return {"id": nid, "type": "set", "target": draw(st.sampled_from(VARS)),
                "value": draw(values())}  # fmt: skip
    if kind == "write":
        return {"id": nid, "type": "capability", "capability": "tasks.create",
                "input": {"title": {"$template": "{{x}}{{y}}"}}}  # fmt: skip
    if kind == "read":
        return {"id": nid, "type": "capability", "capability": "tasks.list", "input": {},
                "target": draw(st.sampled_from(VARS))}  # fmt: skip
    if kind == "fetch":
        return {"id": nid, "type": "capability", "capability": "net.http",
                "input": {"method": "POST", "url": "https://h.example.com/",
                          "body": draw(values())}, "target": "page"}  # fmt: skip
    return {"id": nid, "type": "if",
            "condition": {"op": draw(st.sampled_from(["eq", "contains", "gt"])),
                          "left": draw(values(2)), "right": draw(values(2))}}  # fmt: skip


@st.composite
def adversarial(draw: st.DrawFn) -> dict[str, Any]:
    """Within the limits: at most 64 nodes, loops of at most 16 body nodes (not nested)."""
    nodes: list[dict[str, Any]] = [
        {"id": "p0", "type": "set", "target": "x", "value": {"$ref": "input.a"}},
        {"id": "p1", "type": "set", "target": "y", "value": {"k": {"$ref": "input.a"}}},
        {"id": "p2", "type": "set", "target": "z", "value": [{"$ref": "x"}]},
        {"id": "p3", "type": "set", "target": "page", "value": {"body": "b"}},
    ]
    total = len(nodes)
    while total < 60 and draw(st.integers(0, 6)):
        if draw(st.booleans()):
            size = draw(st.integers(1, 16))
            body = [draw(step(f"l{total}b{j}")) for j in range(size)]
            _chain(body)
            nodes.append({"id": f"l{total}", "type": "foreach", "source": {"$ref": "input.items"},
                          "itemVar": "it", "maxItems": 3, "body": body})  # fmt: skip
            total += size + 1
        else:
            nodes.append(draw(step(f"t{total}")))
            total += 1
    nodes.append({"id": "done", "type": "return", "value": {"$ref": "x"}})
    _chain(nodes)
    return tool(nodes, state={"fields": {"s": {"type": "string", "default": ""}}, "maxBytes": 64})


def _chain(nodes: list[dict[str, Any]]) -> None:
    """Each node goes to the next; an `if` to the next and the one after (both forward)."""
    for i, node in enumerate(nodes):
        later = [n["id"] for n in nodes[i + 1 : i + 3]]
        if node["type"] == "if":
            if not later:
                node.update(type="set", target="x", value="end")
                node.pop("condition", None)
                continue
            node["then"], node["else"] = later[0], later[-1]
        elif later:
            node["next"] = later[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=adversarial())
def test_the_flow_analysis_of_any_flow_within_the_limits_stays_within_budget(
    doc: dict[str, Any],
) -> None:
    raw = orjson.dumps(doc)
    started = time.perf_counter()
    report = forgec.check(raw, target="talon")
    facts = report.facts
    flows = facts.flows if facts is not None else ()
    elapsed = time.perf_counter() - started
    target(elapsed, label="check seconds")
    assert elapsed < BUDGET_S, (elapsed, len(raw))
    if report.ok:
        assert all(f.path and f.path[-1] == f.node for f in flows)
