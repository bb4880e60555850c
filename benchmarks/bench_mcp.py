"""The MCP face at 10, 100 and 1000 enabled tools (issue 13).

    python benchmarks/bench_mcp.py [--sizes 10,100,1000] [--repeat N]

For each size, on a fresh store in a temporary folder:
- install + enable time per tool (the store's full check, lowering and hash, then `enable`);
- the server's start (process, store read for the first snapshot, handshake) as the client sees it;
- `tools/list` latency over stdio: the real Python SDK client against `forgec mcp serve` as a
  subprocess, median of N (the first listing is reported apart), and the same request as a bare
  JSON-RPC line on the pipes — the server's and the pipe's share, without the client library's
  own parsing and validation of a thousand tools;
- a `tools/call` of a small forged tool (`greet`: one `if`, one `return`, a ui card) against the
  bare in-process `forgec.runtime.run` of the same Program on the same reference host; the
  difference is the server's overhead (JSON-RPC over a pipe, lookup, input validation, consent
  record, host opening, result shaping), and `tools/call` of an unknown name (a refusal, no
  run) shows how much of it is the stdio round trip alone.

Targets: `tools/list` of 1000 tools under 100 ms; call overhead under 2 ms over the bare run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402
from _timing import median_seconds  # noqa: E402
from mcp_face_tools import greet_manifest  # noqa: E402

from forgec.store import Store  # noqa: E402

GREET_INPUT = {"name": "Ann"}


def fill(path: Path, n: int) -> float:
    """Install and enable N greet tools; seconds per tool."""
    start = time.perf_counter()
    with Store(path) as store:
        for i in range(n):
            manifest = dict(greet_manifest(), id=f"t{i:05d}")
            result = store.install(orjson.dumps(manifest), target="talos")
            assert result.installed, result.to_json()
            store.enable(manifest["id"], consent=True)
    return (time.perf_counter() - start) / n


def bare_run(path: Path, db: Path, repeat: int) -> float:
    """Median seconds of `forgec.runtime.run` of t00000's Program, host opened once."""
    from forgec.runtime import Program, run
    from forgec.store.running import open_host_for

    with Store(path) as store:
        stored = store.get("t00000")
    program = Program.from_json(stored.program)
    host = open_host_for(db=db, persona_labels=())
    try:

        def once() -> None:
            result = run(program, GREET_INPUT, host=host, consent=lambda request: True)
            assert result.ok

        return median_seconds(once, repeat=repeat, warmup=20)
    finally:
        host.close()


async def _timed(fn: Any, repeat: int, warmup: int) -> float:
    for _ in range(warmup):
        await fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def over_stdio(path: Path, db: Path, n: int, repeat: int) -> dict[str, float]:
    import anyio
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "forgec", "mcp", "serve", "--store", str(path), "--db", str(db)],
        env={"PYTHONPATH": str(ROOT), "HOME": str(path.parent)},
    )

    async def main() -> dict[str, float]:
        with open(os.devnull, "w") as log:
            started = time.perf_counter()
            async with Client(stdio_client(params, errlog=log), mode="legacy") as client:  # type: ignore[arg-type]
                start_s = time.perf_counter() - started  # process start, store read, handshake
                start = time.perf_counter()
                first = await client.list_tools()
                first_s = time.perf_counter() - start
                assert len(first.tools) == n, len(first.tools)

                async def listing() -> None:
                    await client.list_tools()

                async def call() -> None:
                    result = await client.call_tool("dynamic_t00000", GREET_INPUT)
                    assert not result.is_error, result.content

                async def refusal() -> None:
                    result = await client.call_tool("no_such_tool", {})
                    assert result.is_error

                return {
                    "start": start_s,
                    "first_list": first_s,
                    "list": await _timed(listing, repeat, 2),
                    "call": await _timed(call, repeat * 3, 10),
                    "roundtrip": await _timed(refusal, repeat * 3, 10),
                }

    return anyio.run(main)


def raw_stdio(path: Path, db: Path, n: int, repeat: int) -> dict[str, float]:
    """The same requests as bare JSON-RPC lines on the server's pipes: what the server and the
    pipe cost, without any client library's parsing and validation of the answer."""
    import subprocess

    proc = subprocess.Popen(
        [sys.executable, "-m", "forgec", "mcp", "serve", "--store", str(path), "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={"PYTHONPATH": str(ROOT), "HOME": str(path.parent)},
    )
    assert proc.stdin is not None and proc.stdout is not None
    ids = iter(range(1, 1_000_000))

    def request(method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = next(ids)
        line = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        proc.stdin.write(line + b"\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        while True:
            answer = orjson.loads(proc.stdout.readline())  # type: ignore[union-attr]
            if answer.get("id") == rid:
                return dict(answer)

    try:
        request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        )
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.flush()
        assert len(request("tools/list", {})["result"]["tools"]) == n
        call = {"name": "dynamic_t00000", "arguments": GREET_INPUT}
        assert not request("tools/call", call)["result"].get("isError")
        return {
            "list": median_seconds(lambda: request("tools/list", {}), repeat=repeat, warmup=2),
            "call": median_seconds(
                lambda: request("tools/call", call), repeat=repeat * 3, warmup=10
            ),
        }
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    print(
        "SDK = the Python SDK client (end to end, its own parsing and validation included); "
        "raw = bare JSON-RPC lines on the pipes"
    )
    header = (
        f"{'tools':>6} {'install+enable':>15} {'start':>9} {'first list':>11} {'list SDK':>9} {'list raw':>9} "
        f"{'call SDK':>9} {'call raw':>9} {'bare run':>9} {'overhead':>9} {'ratio':>6} "
        f"{'refusal SDK':>12}"
    )
    print(header)
    verdicts: list[str] = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            path, db = Path(tmp) / "tools.db", Path(tmp) / "host.db"
            per_tool = fill(path, n)
            bare = bare_run(path, db, args.repeat * 3)
            got = over_stdio(path, db, n, args.repeat)
            raw = raw_stdio(path, db, n, args.repeat)
        overhead = raw["call"] - bare
        ms = 1e3
        print(
            f"{n:>6} {per_tool * ms:>9.2f} ms/t {got['start'] * ms:>6.0f} ms "
            f"{got['first_list'] * ms:>8.1f} ms "
            f"{got['list'] * ms:>6.1f} ms {raw['list'] * ms:>6.1f} ms "
            f"{got['call'] * ms:>6.2f} ms {raw['call'] * ms:>6.2f} ms {bare * ms:>6.3f} ms "
            f"{overhead * ms:>6.2f} ms {raw['call'] / bare:>5.0f}x {got['roundtrip'] * ms:>9.2f} ms"
        )
        if n == 1000:
            verdicts.append(
                f"tools/list of 1000 tools: raw {raw['list'] * ms:.1f} ms "
                f"({'meets' if raw['list'] < 0.1 else 'MISSES'} the 100 ms target), "
                f"through the Python SDK client {got['list'] * ms:.1f} ms"
            )
        verdicts.append(
            f"call overhead at {n} tools (raw call - bare run): {overhead * ms:.2f} ms "
            f"({'meets' if overhead < 0.002 else 'MISSES'} the 2 ms target)"
        )
    print()
    print("\n".join(verdicts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
