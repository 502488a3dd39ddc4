"""Wall-clock timing and traced memory shared by the benchmark scripts (run them from the
repository root)."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np


def run_times(function, repeat: int) -> list[float]:
    """Seconds taken by each of ``repeat`` calls of ``function()``."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


def median_time(function, repeat: int) -> float:
    return float(np.median(run_times(function, repeat)))


def best_time(function, repeat: int) -> float:
    return min(run_times(function, repeat))


def peak_memory(function) -> int:
    """Peak bytes NumPy and Python allocate during ``function()`` (tracemalloc)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak
