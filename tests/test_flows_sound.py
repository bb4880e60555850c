"""SPEC §15 soundness: every (source, sink) pair a run carries is one the analysis reported.

The flows are test_differential's generated DAGs (sets, ifs, loops, capability steps that read
and write, model steps, returns and fails, refs into input, state and variables); each is
checked for real (`forgec.check`, so the Program carries the pass's joins), run on the
in-memory host with a replayed model, and the pairs the host saw — plus the output's labels —
must be among the static ones. A run-time `external:h` is covered by a static `external:*`,
an `egress:h` by `egress:*`.
"""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from test_differential import flows, inputs, make_host

import forgec
from forgec.backend import lower_report
from forgec.runtime import run


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
