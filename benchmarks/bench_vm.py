"""VM speed on a 64-node flow, against the tree-walking reference interpreter and against
hand-written Python doing the same host calls with an env dict and a transition counter.

    python benchmarks/bench_vm.py [--runs N]

Targets (issue 4): the VM is faster than the reference interpreter, and within 8× of the
hand-written Python. All three use the same in-memory host (cleared between runs), so host
work counts equally for each. Prints medians, ratios and ns per transition.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from _timing import median_seconds  # noqa: E402
from reference_interp import build_ir, lower_dict, reference_run  # noqa: E402

from forgec.runtime import CallContext, run  # noqa: E402
from forgec.runtime.memory_host import MemoryHost  # noqa: E402

LIMIT = 256


def flow() -> dict[str, Any]:
    """64 nodes: a call, 20 sets, 8 if-diamonds, a 10-node loop body with a call, 7 sets."""
    nodes: list[dict[str, Any]] = [
        {
            "id": "fetch",
            "type": "capability",
            "capability": "tasks.list",
            "input": {"limit": 5},
            "target": "tasks",
            "next": "s0",
        }
    ]
    for k in range(20):
        value = (
            {"$template": "item {{input.name}} #" + str(k)}
            if k % 2 == 0
            else {"$ref": "input.count"}
        )
        nodes.append(
            {
                "id": f"s{k}",
                "type": "set",
                "target": f"v{k}",
                "value": value,
                "next": f"s{k + 1}" if k < 19 else "d0",
            }
        )
    for k in range(8):
        after = f"d{k + 1}" if k < 7 else "loop"
        nodes += [
            {
                "id": f"d{k}",
                "type": "if",
                "condition": {"op": "gt", "left": {"$ref": "input.count"}, "right": k},
                "then": f"t{k}",
                "else": f"f{k}",
            },
            {"id": f"t{k}", "type": "set", "target": f"flag{k}", "value": True, "next": after},
            {"id": f"f{k}", "type": "set", "target": f"flag{k}", "value": False, "next": after},
        ]
    body = [
        {
            "id": "b0",
            "type": "if",
            "condition": {"op": "eq", "left": {"$ref": "it.kind"}, "right": "task"},
            "then": "b1",
            "else": "b5",
        },
        {
            "id": "b1",
            "type": "capability",
            "capability": "tasks.create",
            "input": {"title": {"$template": "{{it.title}}"}},
            "target": "made",
            "compensation": "tasks.setStatus",
            "next": "b2",
        },
        {"id": "b2", "type": "set", "target": "last", "value": {"$ref": "made.id"}, "next": "b3"},
        {"id": "b3", "type": "set", "target": "seen", "value": {"$ref": "i"}, "next": "b4"},
        {"id": "b4", "type": "set", "target": "note", "value": {"$template": "{{last}}/{{seen}}"}},
        {
            "id": "b5",
            "type": "set",
            "target": "skipped",
            "value": {"$ref": "it.title"},
            "next": "b6",
        },
        {"id": "b6", "type": "set", "target": "x6", "value": [{"$ref": "i"}, 1], "next": "b7"},
        {
            "id": "b7",
            "type": "set",
            "target": "x7",
            "value": {"k": {"$ref": "it.kind"}},
            "next": "b8",
        },
        {"id": "b8", "type": "set", "target": "x8", "value": {"$ref": "x7.k"}, "next": "b9"},
        {"id": "b9", "type": "set", "target": "x9", "value": "done"},
    ]
    nodes.append(
        {
            "id": "loop",
            "type": "foreach",
            "source": {"$ref": "input.items"},
            "itemVar": "it",
            "indexVar": "i",
            "maxItems": 20,
            "body": body,
            "next": "e0",
        }
    )
    for k in range(7):
        nodes.append(
            {
                "id": f"e{k}",
                "type": "set",
                "target": f"w{k}",
                "value": {"$ref": f"v{k}"},
                "next": f"e{k + 1}" if k < 6 else "ret",
            }
        )
    nodes.append(
        {"id": "ret", "type": "return", "value": {"last": {"$ref": "last"}, "w": {"$ref": "w6"}}}
    )
    return {
        "id": "bench",
        "version": 1,
        "title": "Bench",
        "flow": {"entry": "fetch", "maxTransitions": LIMIT, "nodes": nodes},
    }


INPUT = {
    "name": "Ada",
    "count": 5,
    "items": [{"kind": "task" if i % 2 == 0 else "other", "title": f"item {i}"} for i in range(10)],
}


class Limit(Exception):
    pass


def hand_written(input: dict[str, Any], host: MemoryHost) -> Any:
    """The same flow as a person would write it: env dict, transition counter, same calls."""
    env: dict[str, Any] = {"input": input}
    t = 1
    env["tasks"] = host.call("tasks.list", {"limit": 5}, CallContext("bench", 1, "fetch"))
    for k in range(20):
        t += 1
        if t > LIMIT:
            raise Limit
        env[V_NAMES[k]] = f"item {input['name']} #{k}" if k % 2 == 0 else input["count"]
    for k in range(8):
        t += 2
        if t > LIMIT:
            raise Limit
        env[FLAG_NAMES[k]] = input["count"] > k
    t += 1
    created = CallContext("bench", 1, "b1")
    for i, it in enumerate(input["items"]):
        env["it"], env["i"] = it, i
        t += 1
        if it["kind"] == "task":
            t += 4
            if t > LIMIT:
                raise Limit
            env["made"] = host.call("tasks.create", {"title": it["title"]}, created)
            env["last"] = env["made"]["id"]
            env["seen"] = i
            env["note"] = f"{env['last']}/{env['seen']}"
        else:
            t += 5
            if t > LIMIT:
                raise Limit
            env["skipped"] = it["title"]
            env["x6"] = [i, 1]
            env["x7"] = {"k": it["kind"]}
            env["x8"] = env["x7"]["k"]
            env["x9"] = "done"
    for k in range(7):
        t += 1
        env[W_NAMES[k]] = env[V_NAMES[k]]
    t += 1
    return {"last": env["last"], "w": env["w6"]}, t


V_NAMES = [f"v{k}" for k in range(20)]
FLAG_NAMES = [f"flag{k}" for k in range(8)]
W_NAMES = [f"w{k}" for k in range(7)]


def reset(host: MemoryHost) -> None:
    host.tasks.clear()
    host.calls.clear()
    host._seq = 0


def measure(fn: Any, host: MemoryHost, runs: int, repeats: int = 7) -> float:
    """Median seconds per run over `repeats` batches of `runs`."""

    def batch() -> None:
        for _ in range(runs):
            reset(host)
            fn()

    return median_seconds(batch, repeat=repeats) / runs


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    manifest = flow()
    ir = build_ir(manifest)
    body = next(n for n in manifest["flow"]["nodes"] if n["type"] == "foreach")["body"]
    assert len(manifest["flow"]["nodes"]) + len(body) == 64
    program = lower_dict(manifest)
    host = MemoryHost(clock=lambda: "2026-01-01T00:00:00Z")

    def yes(_r: Any) -> bool:
        return True

    vm_result = run(program, INPUT, host=host, consent=yes)
    reset(host)
    ref_result = reference_run(ir, INPUT, host)
    reset(host)
    hand_output, hand_t = hand_written(INPUT, host)
    assert vm_result.ok and vm_result.to_json() == ref_result
    assert hand_output == vm_result.output and hand_t == vm_result.transitions
    transitions = vm_result.transitions

    vm = measure(lambda: run(program, INPUT, host=host, consent=yes), host, args.runs)
    ref = measure(lambda: reference_run(ir, INPUT, host), host, args.runs)
    hand = measure(lambda: hand_written(INPUT, host), host, args.runs)
    print(f"64-node flow, {transitions} transitions per run, {args.runs} runs x 7 batches (median)")
    for name, secs in (("vm", vm), ("reference interpreter", ref), ("hand-written python", hand)):
        print(
            f"  {name:<22} {secs * 1e6:9.1f} us/run  {secs * 1e9 / transitions:8.0f} ns/transition"
        )
    print(f"  vm / hand-written      {vm / hand:6.2f}x   (target <= 8x)")
    print(f"  vm / reference         {vm / ref:6.2f}x   (target < 1x)")
    ok = vm / hand <= 8 and vm < ref
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
