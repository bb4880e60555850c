"""The cost of SPEC §21's labels per call: a model's own call through the bridge's call API
(`forgec.host.agentcall.call_as_agent`) against the same call with no labels, and against what
a forged tool's step costs the VM (its label join and the same deny check).

    python benchmarks/bench_agent_labels.py [--runs N]

All on the in-memory host (`notes.create`, three `[flows] deny` rules, a context of eight
labels), so the host's own work is small and the label work shows. Prints medians in µs:
- `bare call`: `host.call` with an empty `CallContext` (no labels, nothing to check);
- `agent call`: `call_as_agent` (labels on every argument, control labels, the deny check, the
  result's origin labels) — its overhead is `agent call − bare call`;
- `deny check`: `sources_and_sinks.call_denied` alone, the guard forged steps and agent calls share;
- `forged step`: one step of a 32-step forged tool whose input carries the same eight labels
  (the VM's label trees, `per_argument`, the deny check), per step, less a bare call.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from _timing import median_seconds  # noqa: E402
from reference_interp import lower_dict  # noqa: E402

from forgec.host.agentcall import AgentContext, call_as_agent  # noqa: E402
from forgec.runtime import CallContext, run  # noqa: E402
from forgec.runtime import sources_and_sinks as fl  # noqa: E402
from forgec.runtime.memory_host import MemoryHost  # noqa: E402

DENY = ("private->egress", "untrusted->egress", "untrusted->destination")
LABELS = frozenset(
    {"input", "private:notes.list", "private:tasks.list", "private:db.query"}
    | {f"private:x{i}" for i in range(4)}
)
ARGS = {"title": "digest", "body": "today's notes"}
STEPS = 32


def _program() -> object:
    nodes = [
        {
            "id": f"s{i}",
            "type": "capability",
            "capability": "notes.create",
            "input": {"title": "digest", "body": {"$ref": "input.text"}},
            "next": f"s{i + 1}" if i + 1 < STEPS else "done",
        }
        for i in range(STEPS)
    ]
    nodes.append({"id": "done", "type": "return", "value": "ok"})
    doc = {
        "schema": "talos.local-tool.v1",
        "id": "bench.labels",
        "version": 1,
        "title": "Bench",
        "description": "Bench.",
        "createdAt": "2026-01-01T00:00:00Z",
        "parentVersion": None,
        "execution": "declarative-flow",
        "installScope": "device",
        "network": {"mode": "forbidden"},
        "credentialRequirements": [],
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "flow": {"entry": "s0", "maxTransitions": 128, "nodes": nodes},
    }
    return lower_dict(doc)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    runs = parser.parse_args().runs
    host = MemoryHost(flow_deny=DENY)
    bare_ctx = CallContext(tool_id="b", tool_version=1, node_id="n")
    ctx = AgentContext.start(LABELS)
    checked = CallContext(
        tool_id="b",
        tool_version=1,
        node_id="n",
        labels={k: tuple(sorted(LABELS)) for k in ARGS},
        control_labels=tuple(sorted(LABELS)),
    )

    def reset() -> None:
        host.notes.clear()
        host.calls.clear()

    def bare() -> None:
        host.call("notes.create", ARGS, bare_ctx)

    def agent() -> None:
        call_as_agent(host, "notes.create", ARGS, ctx, caller="bench")

    def check() -> None:
        fl.call_denied(DENY, "notes.create", ARGS, checked)

    program = _program()

    def forged() -> None:
        run(program, {"text": "x"}, host=host, consent=lambda r: True, input_labels=LABELS)
        reset()

    us = 1e6
    t_bare = median_seconds(lambda: (bare(), reset()), repeat=runs, warmup=200) * us
    t_agent = median_seconds(lambda: (agent(), reset()), repeat=runs, warmup=200) * us
    t_check = median_seconds(check, repeat=runs, warmup=200) * us
    t_forged = median_seconds(forged, repeat=max(runs // 20, 20), warmup=5) * us / STEPS
    print(f"bare call        {t_bare:8.2f} µs")
    print(f"agent call       {t_agent:8.2f} µs  (overhead {t_agent - t_bare:6.2f} µs per call)")
    print(f"deny check       {t_check:8.2f} µs  (the shared guard alone)")
    print(f"forged step      {t_forged:8.2f} µs  (overhead {t_forged - t_bare:6.2f} µs per step)")


if __name__ == "__main__":
    main()
