"""Timing shared by the benchmarks: the median wall time of a call, after optional warm-up runs.

A median (not a mean) so one scheduler hiccup on a shared machine does not move the figure.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], *, repeat: int, warmup: int = 0) -> float:
    """Median seconds of one `fn()` over `repeat` timed calls, after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
