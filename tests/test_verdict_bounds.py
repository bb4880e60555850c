"""The verdict is bounded too (SPEC §16, docs/analysis.md "The verdict"): for adversarial
pairs within the limits — 2^20 paths of branch diamonds, loops of 16-step bodies, a value that
doubles 60 times, 63 steps near the 64 KiB manifest limit, a ladder of 63 `limit`s of one read
(the count matching's most neighbourhoods) — the verdict (proof and witness runs)
takes under 2 s and the process under 512 MiB, in a child under RLIMIT_AS.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

from verdict_worst import FAMILIES

MEMORY = 512 << 20
BOUND_S = 2.0

_CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import orjson
from verdict_worst import FAMILIES, pair
from forgec.api import check
from forgec.store.verdict import verdict
out = {}
for family in FAMILIES:
    v1, v2 = pair(family)
    old, new = check(orjson.dumps(v1)), check(orjson.dumps(v2))
    assert old.ok and new.ok, family
    verdict(old, new)  # warm: imports, lowering tables
    started = time.process_time()
    found = verdict(old, new)
    out[family] = {"cpu": time.process_time() - started, "gains": len(found.gains) + found.more}
out["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(json.dumps(out))
"""


def test_every_adversarial_pair_is_judged_within_the_bound() -> None:
    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limits,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result.pop("peak_mb") < MEMORY >> 20
    assert set(result) == set(FAMILIES)
    for family, figures in result.items():
        assert figures["cpu"] < BOUND_S, (family, figures)
        assert figures["gains"] >= 1, family  # every step changed: never "No new power"


_SEARCH = r"""
import json, resource, sys, time
sys.path.insert(0, sys.argv[1])
import orjson
from hypothesis import HealthCheck, given, settings, target, strategies as st
from verdict_worst import blocks
from forgec.api import check
from forgec.store.verdict import verdict
worst = {"cpu": 0.0}
KINDS = st.lists(st.tuples(st.sampled_from(["diamond", "loop", "write"]), st.integers(1, 15)), min_size=4, max_size=40)
@settings(max_examples=int(sys.argv[2]), deadline=None, database=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(KINDS)
def search(kinds):
    old, new = check(orjson.dumps(blocks(kinds, "p"))), check(orjson.dumps(blocks(kinds, "q")))
    assert old.ok and new.ok, [d.message for d in old.errors][:3]
    started = time.process_time()
    verdict(old, new)
    cpu = time.process_time() - started
    target(cpu)
    worst["cpu"] = max(worst["cpu"], cpu)
search()
worst["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(json.dumps(worst))
"""


def test_a_search_for_the_slowest_verdict_finds_none_over_the_bound() -> None:
    """Hypothesis (`target` on CPU time) over flows of diamonds, loops and writes up to the
    node limit, every step changed in v2, in a child under RLIMIT_AS 512 MiB."""

    def limits() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))

    proc = subprocess.run(
        [sys.executable, "-c", _SEARCH, str(Path(__file__).parent), "25"],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limits,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["peak_mb"] < MEMORY >> 20
    assert result["cpu"] < BOUND_S, result
