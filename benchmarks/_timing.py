"""Wall-clock timing and traced memory shared by the benchmark scripts (run them from the
repository root)."""

from __future__ import annotations

import contextlib
import time
import tracemalloc
from typing import NamedTuple

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


class Ratio(NamedTuple):
    """Our call against its floor, timed in alternation in one run (seconds and ratios)."""

    ours_best: float
    floor_best: float
    ours_median: float
    floor_median: float
    best: float
    """``ours_best / floor_best``: each at its least disturbed."""
    median: float
    """The median of the per-round ratios (a round's two calls see the same load)."""
    low: float
    high: float
    """The 25th and 75th percentiles of the per-round ratios: the spread."""

    def text(self) -> str:
        return (
            f"{self.ours_best * 1e3:9.1f} ms  floor {self.floor_best * 1e3:8.1f} ms  "
            f"best {self.best:6.2f}x  median {self.median:6.2f}x "
            f"[{self.low:.2f}, {self.high:.2f}]"
        )


def interleaved_ratio(ours, floor, repeat: int) -> Ratio:
    """``ours()`` and ``floor()`` timed in alternation, ``repeat`` rounds after one warm-up."""
    ours(), floor()
    ours_times, floor_times = alternated_times(ours, floor, repeat)
    ratios = np.divide(ours_times, floor_times)
    low, high = np.percentile(ratios, [25, 75])
    return Ratio(
        min(ours_times),
        min(floor_times),
        float(np.median(ours_times)),
        float(np.median(floor_times)),
        min(ours_times) / min(floor_times),
        float(np.median(ratios)),
        float(low),
        float(high),
    )


def paired_times(ours, floor, repeat: int) -> tuple[float, float, float, tuple[float, float]]:
    """The median times of ``ours()`` and ``floor()`` timed in alternation, the median of the
    per-pair ratios and their 25th and 75th percentiles (see :func:`interleaved_ratio`)."""
    ratio = interleaved_ratio(ours, floor, repeat)
    return ratio.ours_median, ratio.floor_median, ratio.median, (ratio.low, ratio.high)


def print_ratios(cases: dict, floor, floor_name: str, repeat: int, width: int = 42) -> None:
    """One line per case: best times, best ratio, median ratio and spread to ``floor()``."""
    print(f"  ratios to {floor_name}, {repeat} alternating rounds (best, median [25%, 75%])")
    for name, call in cases.items():
        print(f"  {name:<{width}} {interleaved_ratio(call, floor, repeat).text()}")


def peak_memory(function) -> int:
    """Peak bytes NumPy and Python allocate during ``function()`` (tracemalloc)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def print_peak_memory(calls: dict, reference_bytes: int, reference: str = "the scores") -> None:
    """One line per call: its peak traced memory in MiB and as a multiple of the reference."""
    for name, call in calls.items():
        peak = peak_memory(call)
        print(
            f"  peak memory of {name:<14} {peak / 2**20:8.1f} MiB = "
            f"{peak / reference_bytes:.2f}x {reference}"
        )


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
