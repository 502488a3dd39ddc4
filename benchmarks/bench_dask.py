"""Temperature scaling fitted from Dask arrays: 1 and 2 workers against the in-memory fit.

20,000,000 x 10 float32 logits (800 MB; ``2 (4 onehot(y) + noise)``, optimal temperature 0.5)
are generated chunk by chunk inside the workers of a ``LocalCluster`` (1, then 2 worker
processes of one thread) and persisted there, so that every pass of the fit reads them
from the workers' memory; each pass is one tree reduction of per-chunk sums (five floats
and a weight per chunk travel to the client).  The time of one plain pass over the
persisted logits (``logits.sum()``) is printed beside it.  ``--in-memory`` then fits the
same rows computed once on the client (800 MB of logits plus 160 MB of labels).

Run: ``python benchmarks/bench_dask.py [--rows 20000000] [--repeat 3] [--in-memory]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _timing import local_cluster, median_time

from calibration_toolbox import TemperatureScaling


def lazy_problem(rows: int, n_classes: int = 10):
    import dask.array as da

    rng = da.random.default_rng(3)
    labels = rng.integers(0, n_classes, size=rows, chunks=1_000_000)
    noise = rng.normal(size=(rows, n_classes), chunks=(1_000_000, n_classes))
    onehot = labels[:, None] == da.arange(n_classes)
    return (2.0 * (4.0 * onehot + noise)).astype(np.float32), labels


def on_cluster(rows: int, n_workers: int, repeat: int) -> TemperatureScaling:
    from distributed import wait

    with local_cluster(n_workers) as client:
        start = time.perf_counter()
        logits, labels = client.persist(lazy_problem(rows))
        wait([logits, labels])
        made = time.perf_counter() - start
        fitted = TemperatureScaling().fit(logits, labels)  # warm-up
        seconds = median_time(lambda: TemperatureScaling().fit(logits, labels), repeat)
        one_pass = median_time(lambda: logits.sum().compute(), repeat)
    print(
        f"  {n_workers} worker(s): fit {seconds:.2f} s (T = {fitted.temperature_:.12f}, "
        f"{fitted.n_passes_} passes + the first chunk's warm start); one logits.sum() "
        f"{one_pass:.2f} s; generating and persisting the data {made:.1f} s"
    )
    return fitted


def in_memory(rows: int, fitted: TemperatureScaling) -> None:
    import dask

    logits, labels = dask.compute(*lazy_problem(rows), scheduler="threads")
    start = time.perf_counter()
    local = TemperatureScaling().fit(logits, labels)
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    logits.sum()
    one_pass = time.perf_counter() - start
    difference = local.temperature_ / fitted.temperature_ - 1
    print(
        f"  in memory: fit {seconds:.2f} s (T = {local.temperature_:.12f}, {difference:+.1e} "
        f"to Dask's; {local.n_passes_} passes); one logits.sum() {one_pass:.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--in-memory", action="store_true")
    args = parser.parse_args()
    print(f"TemperatureScaling.fit on {args.rows:,} x 10 float32 Dask logits (chunks of 1M rows):")
    for n_workers in (1, 2):
        fitted = on_cluster(args.rows, n_workers, args.repeat)
    if args.in_memory:
        in_memory(args.rows, fitted)


if __name__ == "__main__":
    main()
