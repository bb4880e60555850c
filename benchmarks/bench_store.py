"""The tool store at scale (issue 13): install + enable per tool, and listing, for N tools.

For N in 10 / 100 / 1000 it builds a fresh store of N enabled tools and prints: the mean time
to install and enable one tool, `Store.tools()` (what `forgec tools list` reads) and
`Store.enabled_versions()` (what `tools/list` of `forgec mcp serve` reads, hash verification
included). The MCP target is 1000 tools listed in under 100 ms.

    PYTHONPATH=. python benchmarks/bench_store.py [--sizes 10,100,1000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _timing import median_seconds
from manifests import manifest_with_nodes

from forgec.store import Store


def _source(i: int) -> bytes:
    nodes = [
        {
            "id": "fetch",
            "type": "capability",
            "capability": "tasks.list",
            "input": {"limit": 5},
            "target": "found",
            "next": "done",
        },
        {"id": "done", "type": "return", "value": {"$ref": "found"}},
    ]
    return orjson.dumps(manifest_with_nodes(nodes, id=f"bench.tool{i:05d}"))


def bench(n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "tools.db") as store:
        sources = [_source(i) for i in range(n)]
        start = time.perf_counter()
        for i, source in enumerate(sources):
            result = store.install(source)
            assert result.ok, result.report.diagnostics
            store.enable(f"bench.tool{i:05d}", consent=True)
        per_tool = (time.perf_counter() - start) / n
        repeat = 3 if n >= 1000 else 7
        listing = median_seconds(store.tools, repeat=repeat, warmup=1)
        enabled = median_seconds(store.enabled_versions, repeat=repeat, warmup=1)
        assert len(store.enabled_versions()) == n
    return {"install+enable": per_tool, "tools()": listing, "enabled_versions()": enabled}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000")
    args = parser.parse_args()
    print(f"{'tools':>6}  {'install+enable/tool':>20}  {'tools()':>10}  {'enabled_versions()':>18}")
    for n in (int(s) for s in args.sizes.split(",")):
        r = bench(n)
        print(
            f"{n:>6}  {r['install+enable'] * 1e3:>17.2f} ms  {r['tools()'] * 1e3:>7.1f} ms"
            f"  {r['enabled_versions()'] * 1e3:>15.1f} ms"
        )


if __name__ == "__main__":
    main()
