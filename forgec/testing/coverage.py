"""Coverage of the Program, not of lines (SPEC §22): what the cases of a tool reached.

The items of a tool, from its canonical manifest:
- `node X` for every reachable node (entered by some case);
- `if X then` and `if X else` (the node entered right after the `if`);
- `foreach X 0`, `foreach X 1`, `foreach X many` (iterations of one run of the loop: the times
  its body's first node is entered before the run leaves the body);
- `retry X attempt N` for N = 2 … attempts of a step with `retry` (attempt N was made);
- `compensation X` for a step that declares one (its undo ran, whatever its outcome);
- `fail X` for every `fail` node.

Each case's run gives a trace (the node ids entered, `forgec.runtime.run(trace=...)`), its
calls (with their attempt) and its compensations; `Coverage.add(result)` marks what they
reached. Cost: linear in the trace of each case.
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.define
class Coverage:
    """The items of one tool and which its cases reached."""

    tool: str
    items: list[str]
    reached: set[str] = attrs.field(factory=set)
    _ifs: dict[str, tuple[str, str]] = attrs.field(factory=dict)
    _loops: dict[str, tuple[str, frozenset[str]]] = attrs.field(factory=dict)

    @classmethod
    def of(cls, manifest: dict[str, Any], reachable: set[str] | None = None) -> Coverage:
        flow = manifest.get("flow") or {}
        items: list[str] = []
        ifs: dict[str, tuple[str, str]] = {}
        loops: dict[str, tuple[str, frozenset[str]]] = {}

        def visit(nodes: list[dict[str, Any]]) -> None:
            for node in nodes:
                nid = node["id"]
                if reachable is not None and nid not in reachable:
                    continue
                kind = node.get("type")
                items.append(f"node {nid}")
                if kind == "if":
                    ifs[nid] = (node["then"], node["else"])
                    items.extend([f"if {nid} then", f"if {nid} else"])
                elif kind == "foreach":
                    body = node.get("body") or []
                    if body:
                        loops[nid] = (body[0]["id"], frozenset(b["id"] for b in body))
                    items.extend([f"foreach {nid} 0", f"foreach {nid} 1", f"foreach {nid} many"])
                    visit(body)
                elif kind == "capability":
                    attempts = (node.get("retry") or {}).get("attempts", 1)
                    items.extend([f"retry {nid} attempt {n}" for n in range(2, attempts + 1)])
                    if node.get("compensation"):
                        items.append(f"compensation {nid}")
                elif kind == "fail":
                    items.append(f"fail {nid}")

        visit(flow.get("nodes") or [])
        return cls(str(manifest.get("id")), items, set(), ifs, loops)

    def add(self, case: Any) -> None:
        """Mark what one case's run (a `forgec.testing.runner.CaseResult`) reached."""
        trace: list[str] = case.trace
        reached = self.reached
        for i, nid in enumerate(trace):
            reached.add(f"node {nid}")
            arms = self._ifs.get(nid)
            if arms is not None and i + 1 < len(trace):
                after = trace[i + 1]
                if after == arms[0]:
                    reached.add(f"if {nid} then")
                if after == arms[1]:
                    reached.add(f"if {nid} else")
            loop = self._loops.get(nid)
            if loop is not None:
                first, body = loop
                count = 0
                j = i + 1
                while j < len(trace) and trace[j] in body:
                    count += trace[j] == first
                    j += 1
                reached.add(f"foreach {nid} {'0' if count == 0 else '1' if count == 1 else 'many'}")
            if f"fail {nid}" in self.items:
                reached.add(f"fail {nid}")
        for call in case.calls:
            for n in range(2, call.attempt + 1):
                reached.add(f"retry {call.node} attempt {n}")
        for node in case.compensation_nodes:
            reached.add(f"compensation {node}")

    @property
    def missed(self) -> list[str]:
        return [item for item in self.items if item not in self.reached]

    @property
    def percent(self) -> float:
        if not self.items:
            return 100.0
        covered = sum(1 for item in self.items if item in self.reached)
        return 100.0 * covered / len(self.items)

    def to_json(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "percent": round(self.percent, 1),
            "items": len(self.items),
            "covered": len(self.items) - len(self.missed),
            "missed": self.missed,
        }
