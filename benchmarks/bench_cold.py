"""How long does a cold `forgec check` take, in CPU time of the whole process?

Issue 19 item 7's target: a cold `forgec check examples/memory-capture.talostool` under
100 ms of CPU. Measured as user+sys of the child process (`getrusage(RUSAGE_CHILDREN)` around
each `subprocess.run`), because on a shared machine wall time mostly measures the neighbours;
min and p10 are the figures (a run can only be slowed by others, never sped up), median and
wall time are printed beside them. `PYTHONDONTWRITEBYTECODE` is removed from the child's
environment, so the `.pyc` files an installed forgec has are used (without them every module
compiles from source: about 100 ms more).

`python -c pass` runs alongside: the interpreter's own start-up, what no change to forgec can
remove. `--against PYTHON` times another interpreter (another venv or checkout) interleaved
run by run with this one (repeat the flag for more), so a before/after comparison is taken
in the same minutes.

Run by hand: `python benchmarks/bench_cold.py [--runs 40] [--against /tmp/old/bin/python]
[--command check FILE]`. Not a CI gate.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_COMMAND = ["check", str(ROOT / "examples" / "memory-capture.talostool")]


# The children run in an empty folder: `python -m` puts the current folder first on sys.path,
# so from a checkout every interpreter would import that checkout's forgec, not its own.
CWD = tempfile.mkdtemp(prefix="bench-cold-")


def one_run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU ms, wall ms) of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=CWD)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu * 1000, wall * 1000


def summary(label: str, runs: list[tuple[float, float]]) -> str:
    cpu = sorted(c for c, _ in runs)
    wall = sorted(w for _, w in runs)
    p10 = cpu[len(cpu) // 10]
    return (
        f"{label:<44} CPU min {cpu[0]:6.1f}  p10 {p10:6.1f}  median {statistics.median(cpu):6.1f}"
        f"   wall min {wall[0]:6.1f}  median {statistics.median(wall):6.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--python", default=sys.executable, help="the interpreter to time")
    parser.add_argument(
        "--against", action="append", default=[], help="another interpreter, timed interleaved"
    )
    parser.add_argument("--command", nargs="+", default=DEFAULT_COMMAND, help="forgec's args")
    args = parser.parse_args()
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    pythons = [os.path.abspath(p) for p in [args.python, *args.against]]
    for python in pythons:  # write the .pyc files before timing
        done = subprocess.run(
            [python, "-m", "forgec", *args.command], capture_output=True, env=env, cwd=CWD
        )
        print(
            f"{python}: exit {done.returncode}, {(done.stdout + done.stderr).decode().strip()[:60]}"
        )
    forgec: dict[str, list[tuple[float, float]]] = {p: [] for p in pythons}
    bare: dict[str, list[tuple[float, float]]] = {p: [] for p in pythons}
    for _ in range(args.runs):
        for python in pythons:
            forgec[python].append(one_run([python, "-m", "forgec", *args.command], env))
            bare[python].append(one_run([python, "-c", "pass"], env))
    print(f"forgec {' '.join(args.command)}; {args.runs} runs each, load {os.getloadavg()}")
    for python in pythons:
        print(summary(f"{python}", forgec[python]))
        print(summary("  python -c pass", bare[python]))


if __name__ == "__main__":
    main()
