"""Wall-clock timing and traced memory shared by the benchmark scripts (run them from the
repository root)."""

from __future__ import annotations

import contextlib
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


def alternated_times(ours, floor, repeat: int) -> tuple[list[float], list[float]]:
    """``repeat`` times of ``ours()`` and of ``floor()``, timed in alternation (one load)."""
    ours_times, floor_times = [], []
    for _ in range(repeat):
        ours_times += run_times(ours, 1)
        floor_times += run_times(floor, 1)
    return ours_times, floor_times


def paired_times(ours, floor, repeat: int) -> tuple[float, float, float, tuple[float, float]]:
    """``ours()`` and ``floor()`` timed in alternation, ``repeat`` pairs after one warm-up.

    Returns the median times of each, the median of the per-pair ratios and their 25th and
    75th percentiles: a ratio taken within a pair sees the same load on a shared machine.
    """
    ours(), floor()
    ours_times, floor_times = alternated_times(ours, floor, repeat)
    ratios = np.divide(ours_times, floor_times)
    low, high = np.percentile(ratios, [25, 75])
    return (
        float(np.median(ours_times)),
        float(np.median(floor_times)),
        float(np.median(ratios)),
        (float(low), float(high)),
    )


def peak_memory(function) -> int:
    """Peak bytes NumPy and Python allocate during ``function()`` (tracemalloc)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


@contextlib.contextmanager
def local_cluster(n_workers: int):
    """A ``distributed.LocalCluster`` of ``n_workers`` one-thread processes, its client the
    scheduler of every Dask computation inside the block (the dashboard on a free port: the
    default one may be taken on a shared machine)."""
    import dask
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as client,
        dask.config.set(scheduler=client.get),
    ):
        yield client
