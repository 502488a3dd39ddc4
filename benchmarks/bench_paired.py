"""Speed of ``paired_bootstrap(ECE, ...)``: two models on the same rows, against ``bootstrap``.

Issue 21 asks for a paired bootstrap of ECE with 1,000 resamples at 1,000,000 rows in at most
twice the time of an unpaired one (one model).  Timed in the same run, best of ``--repeat``
rounds each: ``bootstrap(ECE, prob_a, ...)``, ``paired_bootstrap(ECE, prob_a, prob_b, ...)``,
and the floor every bootstrap of the rows pays, the draws alone (``rng.integers(0, n, n)``
per resample).  Synthetic: 1,000,000 x 10 float32 softmax rows of two models of the same
labels; real: WRN-16-4 against VGG-16 on the CIFAR-10 test set (10,000 rows, from
``../shared/data``, skipped when absent).

``--dask`` (the ``dask`` extra) also times both calls on the synthetic rows as Dask arrays
(chunks of ``--chunk`` rows, threads) against the same rows in memory, in alternated
rounds (``_timing.alternated_times``): the Dask input pays one pass gathering the per-row
cells, then resamples as the NumPy input does.  Run: ``python benchmarks/bench_paired.py
[--repeat 3] [--resamples 1000] [--rows 1000000] [--dask] [--chunk 100000]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from _timing import alternated_times, best_time
from scipy.special import softmax

from calibration_toolbox import ECE
from calibration_toolbox.stats import bootstrap, paired_bootstrap

N_CLASSES = 10
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def draws_only(n_rows: int, n_resamples: int) -> None:
    rng = np.random.default_rng(0)
    for _ in range(n_resamples):
        rng.integers(0, n_rows, n_rows)


def synthetic(n_rows: int):
    rng = np.random.default_rng(0)
    labels = rng.integers(0, N_CLASSES, n_rows)
    signal = 2 * rng.normal(size=(n_rows, N_CLASSES))
    signal[np.arange(n_rows), labels] += 2.0
    noise = rng.normal(size=(n_rows, N_CLASSES))
    prob_a = softmax(signal, axis=1).astype(np.float32)
    prob_b = softmax(1.5 * signal + noise, axis=1).astype(np.float32)
    return prob_a, prob_b, labels


def real():
    files = DATA / "wideresnet-16-4-cifar-10.npz", DATA / "vgg16-cifar-10.npz"
    if not all(path.exists() for path in files):
        return None
    with np.load(files[0]) as wrn, np.load(files[1]) as vgg:
        return wrn["predictions"], vgg["probs_test"], wrn["ground_truth"]


def report(title: str, prob_a, prob_b, labels, n_resamples: int, repeat: int) -> None:
    n_rows = len(labels)
    floor = best_time(lambda: draws_only(n_rows, n_resamples), repeat)
    unpaired = best_time(
        lambda: bootstrap(ECE, prob_a, labels, n_resamples=n_resamples, random_state=0), repeat
    )
    paired = best_time(
        lambda: paired_bootstrap(
            ECE, prob_a, prob_b, labels, n_resamples=n_resamples, random_state=0
        ),
        repeat,
    )
    print(f"{title}: {n_rows:,} x {prob_a.shape[1]}, {n_resamples} resamples, best of {repeat}")
    rows = [
        ("the draws alone (floor)", floor),
        ("bootstrap(ECE), one model", unpaired),
        ("paired_bootstrap(ECE), two models", paired),
    ]
    for name, seconds in rows:
        print(
            f"  {name:<36} {seconds:8.3f} s  / floor {seconds / floor:5.2f}"
            f"  / unpaired {seconds / unpaired:5.2f}"
        )


def dask_report(prob_a, prob_b, labels, n_resamples: int, repeat: int, chunk: int) -> None:
    import dask
    import dask.array as da

    lazy_a, lazy_b = (da.from_array(prob, chunks=(chunk, -1)) for prob in (prob_a, prob_b))
    common = {"n_resamples": n_resamples, "random_state": 0}
    calls = {
        "bootstrap(ECE)": (
            lambda: bootstrap(ECE, lazy_a, labels, **common),
            lambda: bootstrap(ECE, prob_a, labels, **common),
        ),
        "paired_bootstrap(ECE)": (
            lambda: paired_bootstrap(ECE, lazy_a, lazy_b, labels, **common),
            lambda: paired_bootstrap(ECE, prob_a, prob_b, labels, **common),
        ),
    }
    print(
        f"Dask (chunks of {chunk:,} rows, threads) against NumPy input: {len(labels):,} x "
        f"{prob_a.shape[1]}, {n_resamples} resamples, {repeat} alternated rounds"
    )
    with dask.config.set(scheduler="threads"):
        for name, (on_dask, in_memory) in calls.items():
            lazy_times, memory_times = alternated_times(on_dask, in_memory, repeat)
            best, median = (
                min(lazy_times) / min(memory_times),
                np.median(lazy_times) / np.median(memory_times),
            )
            print(
                f"  {name:<22} Dask {min(lazy_times):8.3f} s, NumPy {min(memory_times):8.3f} s"
                f"  / NumPy: best {best:5.2f}, median {median:5.2f}"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--dask", action="store_true", help="also time Dask input")
    parser.add_argument("--chunk", type=int, default=100_000)
    args = parser.parse_args()
    rows = synthetic(args.rows)
    report("synthetic", *rows, args.resamples, args.repeat)
    if args.dask:
        dask_report(*rows, args.resamples, args.repeat, args.chunk)
    data = real()
    if data is None:
        print(f"real data: not found in {DATA}")
    else:
        report("WRN-16-4 vs VGG-16, CIFAR-10", *data, args.resamples, args.repeat)


if __name__ == "__main__":
    main()
