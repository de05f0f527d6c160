"""Timing shared by the benchmarks."""

from __future__ import annotations

import time


def best(fn, repeat: int):
    """(the fastest wall time of ``repeat`` calls after one warm-up, the last result)."""
    out = fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out
