"""Streaming and Dask: the accumulator against the in-memory metrics, Dask with 1 and 2 workers.

1. ``CalibrationAccumulator`` over 1,000,000 x 10 float32 probabilities in 10 batches
   (all three tables, Brier and NLL) against the in-memory calls that give the same numbers
   (``ECE + SCE`` alone, and ``ECE + TopLabelECE + SCE + brier_score +
   negative_log_likelihood``), as ratios of median times in the same run.
2. ECE, SCE and the Brier score on a 20,000,000 x 10 float32 Dask array (800 MB) generated
   chunk by chunk inside the workers of a ``LocalCluster`` (1, then 2 worker processes of
   one thread; never materialised on the client), against the in-memory call on the same
   rows computed once on the client (``--in-memory`` when it fits: 800 MB plus the call's
   temporaries).

Run: ``python benchmarks/bench_streaming.py [--repeat 5] [--rows 20000000] [--in-memory]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _timing import local_cluster, median_time
from scipy.special import softmax

from calibration_toolbox import (
    ECE,
    SCE,
    CalibrationAccumulator,
    TopLabelECE,
    brier_score,
    negative_log_likelihood,
)


def streaming(repeat: int) -> None:
    rng = np.random.default_rng(0)
    prob = softmax(rng.normal(scale=2.0, size=(1_000_000, 10)), axis=1).astype(np.float32)
    labels = rng.integers(0, 10, size=1_000_000)
    batches = np.array_split(np.arange(1_000_000), 10)
    batches = [(prob[rows], labels[rows]) for rows in batches]

    def stream():
        accumulator = CalibrationAccumulator()
        for batch in batches:
            accumulator.update(*batch)
        return accumulator.results()

    def ece_sce():
        return ECE(prob, labels), SCE(prob, labels)

    def same_numbers():
        return (
            ECE(prob, labels),
            TopLabelECE(prob, labels),
            SCE(prob, labels),
            brier_score(prob, labels),
            negative_log_likelihood(prob, labels),
        )

    calls = {"accumulator": stream, "ECE + SCE": ece_sce, "the five calls": same_numbers}
    times = {name: median_time(call, repeat) for name, call in calls.items()}
    print(f"1M x 10 float32 in 10 batches: accumulator {times['accumulator'] * 1e3:.0f} ms")
    for name in ("ECE + SCE", "the five calls"):
        ratio = times["accumulator"] / times[name]
        print(f"  / {name} in memory ({times[name] * 1e3:.0f} ms): {ratio:.2f}")


def lazy_problem(rows: int):
    import dask.array as da

    rng = da.random.default_rng(1)
    raw = rng.random((rows, 10), chunks=(1_000_000, 10), dtype=np.float32)
    prob = raw / raw.sum(axis=1, keepdims=True)
    labels = rng.integers(0, 10, size=rows, chunks=1_000_000)
    return prob, labels


def on_cluster(rows: int, n_workers: int, repeat: int) -> dict[str, float]:
    prob, labels = lazy_problem(rows)
    metrics = {"ECE": ECE, "SCE": SCE, "brier_score": brier_score}
    with local_cluster(n_workers):
        values = {name: metric(prob, labels) for name, metric in metrics.items()}  # warm-up
        times = {
            name: median_time(lambda metric=metric: metric(prob, labels), repeat)
            for name, metric in metrics.items()
        }
        start = time.perf_counter()
        prob.sum().compute()
        times["one pass generating the data (prob.sum())"] = time.perf_counter() - start
    for name, seconds in times.items():
        shown = f" = {values[name]:.6f}" if name in values else ""
        print(f"  {n_workers} worker(s): {name}{shown}: {seconds:.2f} s")
    return values


def in_memory(rows: int, values: dict[str, float]) -> None:
    import dask

    prob, labels = lazy_problem(rows)
    prob, labels = dask.compute(prob, labels, scheduler="threads")
    for name, metric in {"ECE": ECE, "SCE": SCE, "brier_score": brier_score}.items():
        start = time.perf_counter()
        value = metric(prob, labels)
        seconds = time.perf_counter() - start
        difference = value / values[name] - 1
        print(f"  in memory: {name} = {value:.6f} ({difference:+.1e} to Dask's): {seconds:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--in-memory", action="store_true")
    args = parser.parse_args()
    streaming(args.repeat)
    print(f"Dask, {args.rows:,} x 10 float32 generated in the workers (chunks of 1,000,000 rows):")
    for n_workers in (1, 2):
        values = on_cluster(args.rows, n_workers, max(1, args.repeat // 2))
    if args.in_memory:
        in_memory(args.rows, values)


if __name__ == "__main__":
    main()
