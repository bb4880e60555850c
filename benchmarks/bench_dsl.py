"""Benchmark of the `.forge` front end (issue 3's performance targets).

1. Compiling a 64-node `.forge` file end to end (parse + build + every check, `forgec.check`)
   against lark's bare LALR parse of the same text (a parse tree, no transformer): target ≤ 1.5×.
2. A cold `forgec compile` (a new Python process each time): target < 200 ms.

Run: `python benchmarks/bench_dsl.py [--runs N]`. Prints medians and the ratios.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from _timing import median_seconds

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def sixty_four_nodes() -> str:
    """A realistic 64-node tool: a chain of calls, model steps, tests and a loop."""
    lines = [
        "tool bench-64 {",
        "  version 1",
        '  title "Sixty-four nodes"',
        '  description "A long flow for the benchmark."',
        '  created "2026-11-02T09:00:00Z"',
        "  parent null",
        "  network forbidden",
        '  input {type: "object", properties: {q: {type: "string"}}, required: ["q"]}',
        "",
        "  flow entry n0 max 256 {",
    ]
    count = 64
    i = 0
    while i < count - 4:
        nxt = f"n{i + 1}"
        kind = i % 4
        if kind == 0:
            lines.append(
                f"    n{i}: r{i} = call tasks.list {{query: $input.q, limit: 10}} -> {nxt}"
            )
        elif kind == 1:
            lines.append(
                f'    n{i}: s{i} = llm summarize {{text: "Item {{{{input.q}}}}", n: {i}}} -> {nxt}'
            )
        elif kind == 2:
            lines.append(f'    n{i}: if $input.q == "x{i}" then {nxt} else {nxt}')
        else:
            lines.append(f'    n{i}: v{i} = {{a: [1, 2.5, "three"], b: $input.q}} -> {nxt}')
        i += 1
    lines.append(f"    n{i}: for item, k in $r0.items max 3 {{")
    lines.append(f"      n{i + 1}: t{i} = llm classify $item -> n{i + 2}")
    lines.append(f"      n{i + 2}: last = $k")
    lines.append(f"    }} -> n{i + 3}")
    lines.append(f"    n{i + 3}: return {{done: true}}")
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--cold-runs", type=int, default=10)
    args = ap.parse_args()

    from lark import Lark

    from forgec.api import check
    from forgec.frontend.dsl import GRAMMAR_PATH, parser

    text = sixty_four_nodes()
    report = check(text, path="bench.forge")
    nodes = sum(1 for n in report.manifest["flow"]["nodes"]) if report.manifest else 0
    assert report.ok, [d.message for d in report.errors]
    bare = Lark(GRAMMAR_PATH.read_text(encoding="utf-8"), parser="lalr", lexer="contextual")
    parser()  # the tree-less parser, loaded once per process like the CLI does
    for _ in range(3):
        bare.parse(text)
        check(text, path="bench.forge")
    t_bare = median_seconds(lambda: bare.parse(text), repeat=args.runs)
    t_full = median_seconds(lambda: check(text, path="bench.forge"), repeat=args.runs)
    print(f"64-node .forge ({len(text)} bytes, {nodes} top-level nodes + 2 in a loop body)")
    print(f"  lark bare LALR parse          median {t_bare * 1000:7.2f} ms")
    print(f"  forgec end to end (all checks) median {t_full * 1000:7.2f} ms")
    print(f"  ratio {t_full / t_bare:.2f}x   (target <= 1.5x)")

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "bench.forge"
        src.write_text(text, encoding="utf-8")
        cmd = [
            sys.executable,
            "-m",
            "forgec",
            "compile",
            str(src),
            "-o",
            str(Path(tmp) / "o.talostool"),
        ]
        startup = [sys.executable, "-c", "pass"]
        subprocess.run(cmd, check=True, cwd=ROOT)
        t_cold = median_seconds(
            lambda: subprocess.run(cmd, check=True, cwd=ROOT), repeat=args.cold_runs
        )
        t_py = median_seconds(lambda: subprocess.run(startup, check=True), repeat=args.cold_runs)
    print(f"cold `forgec compile`           median {t_cold * 1000:7.1f} ms   (target < 200 ms)")
    print(f"  of which Python start-up      median {t_py * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
