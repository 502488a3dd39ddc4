"""Speed and memory of the metric engine and temperature scaling, as ratios to a floor.

Each ratio divides the median time of our call by the median time of a NumPy primitive
over the same array, measured in the same run (so machine load mostly cancels out):

* ``ECE``, ``SCE`` on 1,000,000 x 10 float32 probabilities: ``p.max(axis=1)``
* ``ACE`` on the same array: ``np.sort(p, axis=0)``
* ``ECE`` on 50,000 x 1,000 float32 probabilities: ``p.sum()``
* ``ECE(..., logits=True)`` on 1,000,000 x 10 float32 logits: ``scipy.special.softmax``
  (the check that warns when the "logits" are probabilities is part of it)
* ``TemperatureScaling.fit`` on 1,000,000 x 10 float32 logits: one
  ``scipy.special.log_softmax`` pass

Then the same three metric rows (``SCE`` and ``ACE`` with their floors, and ``ECE`` against
``p.sum()`` and ``p.max(axis=1)``) on real predictions: the float32 softmax outputs of
public CIFAR models in ``../shared/data`` beside the repository (``CALIBRATION_TOOLBOX_DATA``
overrides it; the section is skipped with a note when the folder is absent).  Their 10,000
rows are stacked to 1,000,000 rows at K = 10 and 500,000 at K = 100 (the bytes of the
synthetic 50,000 x 1,000), so that the call, not its fixed cost, is timed; the values, and
so the share of tiny entries and the very confident rows of real models, are the files'.

Ours and the floor are timed in alternation (``--repeat`` pairs) and each ratio is the
median of the per-pair ratios, with the spread (the 25th and 75th percentiles) beside it.
Peak extra memory is measured with tracemalloc (NumPy reports its allocations there) as a
multiple of the input's bytes.  Run: ``python benchmarks/bench_engine.py [--repeat 7]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from _timing import paired_times, peak_memory
from scipy.special import log_softmax, softmax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package first
from calibration_toolbox import ACE, ECE, SCE, TemperatureScaling

GOALS = {
    "ECE 1Mx10 / p.max(axis=1)": 0.7,
    "SCE 1Mx10 / p.max(axis=1)": 1.2,
    "ACE 1Mx10 / np.sort(p, axis=0)": 1.2,
    "ECE 50kx1000 / p.sum()": 2.0,
    "ECE logits=True 1Mx10 / softmax": 1.5,
    "TemperatureScaling.fit 1Mx10 / log_softmax": 2.5,
}
REAL_FILES = ("wideresnet-16-4-cifar-10", "densenet-bc-100-cifar-100")
REAL_ROWS = {10: 1_000_000, 100: 500_000}
DATA_DIR = Path(
    os.environ.get(
        "CALIBRATION_TOOLBOX_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"
    )
)
MEMORY_GOALS = {"ECE 1Mx10": 1.0, "SCE 1Mx10": 1.0, "TemperatureScaling.fit 1Mx10": 3.0}


def make_probabilities(n_samples, n_classes, seed):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n_samples, n_classes)).astype(np.float32) * 3
    logits[np.arange(n_samples), rng.integers(0, n_classes, n_samples)] += 4
    labels = rng.integers(0, n_classes, n_samples)
    return logits, softmax(logits, axis=1).astype(np.float32), labels


def load_real(name):
    """The file's probabilities and labels, stacked to ``REAL_ROWS`` rows; None when absent."""
    path = DATA_DIR / f"{name}.npz"
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        prob, labels = data["predictions"], data["ground_truth"]
    copies = REAL_ROWS[prob.shape[1]] // len(prob)
    return np.tile(prob.astype(np.float32), (copies, 1)), np.tile(labels, copies)


def real_rows(repeat):
    """(name, ours, floor, ratio, spread, goal) of the metric rows on each real file present."""
    rows = []
    for name in REAL_FILES:
        loaded = load_real(name)
        if loaded is None:
            print(f"note: {name}.npz not found in ../shared/data; its real-data rows are skipped")
        else:
            rows += real_file_rows(name, *loaded, repeat)
    return rows


def real_file_rows(name, prob, labels, repeat):
    """The metric rows of one real file, each against its floor."""
    shape = f"{name} {len(prob) // 1000}kx{prob.shape[1]}"
    few = max(3, repeat // 2)
    cases = (
        ("SCE", SCE, "p.max(axis=1)", lambda: prob.max(axis=1), repeat, 1.2),
        ("ACE", ACE, "np.sort(p, axis=0)", lambda: np.sort(prob, axis=0), few, 1.2),
        # The goals of the synthetic rows hold for their shapes only (p.sum() is the floor
        # of a wide K = 1,000 array, where the top label costs a pass): none here.
        ("ECE", ECE, "p.sum()", lambda: prob.sum(), repeat, None),
        ("ECE", ECE, "p.max(axis=1)", lambda: prob.max(axis=1), repeat, None),
    )
    rows = []
    for metric_name, metric, floor_name, floor, times, goal in cases:
        timed = paired_times(lambda metric=metric: metric(prob, labels), floor, times)
        rows.append((f"{metric_name} {shape} / {floor_name}", *timed, goal))
    return rows


def synthetic_rows(repeat):
    """(name, ours, floor, ratio, spread, goal) of the rows of ``GOALS``."""
    logits, prob, labels = make_probabilities(1_000_000, 10, 0)
    _, wide, wide_labels = make_probabilities(50_000, 1_000, 1)
    few = max(3, repeat // 2)
    cases = (
        ("ECE 1Mx10 / p.max(axis=1)", lambda: ECE(prob, labels), lambda: prob.max(axis=1), repeat),
        ("SCE 1Mx10 / p.max(axis=1)", lambda: SCE(prob, labels), lambda: prob.max(axis=1), repeat),
        (
            "ACE 1Mx10 / np.sort(p, axis=0)",
            lambda: ACE(prob, labels),
            lambda: np.sort(prob, 0),
            few,
        ),
        ("ECE 50kx1000 / p.sum()", lambda: ECE(wide, wide_labels), lambda: wide.sum(), repeat),
        (
            "ECE logits=True 1Mx10 / softmax",
            lambda: ECE(logits, labels, logits=True),
            lambda: softmax(logits, axis=1),
            repeat,
        ),
        (
            "TemperatureScaling.fit 1Mx10 / log_softmax",
            lambda: TemperatureScaling().fit(logits, labels),
            lambda: log_softmax(logits, axis=1),
            few,
        ),
    )
    rows = [
        (name, *paired_times(ours, floor, times), GOALS[name])
        for name, ours, floor, times in cases
    ]
    return rows, (logits, prob, labels)


def print_ratios(rows):
    print(f"{'benchmark':<62}{'ours ms':>9}{'floor ms':>9}{'ratio':>7}{'spread':>12}{'goal':>6}")
    for name, ours, floor, ratio, (low, high), goal in rows:
        print(
            f"{name:<62}{ours * 1e3:>9.1f}{floor * 1e3:>9.1f}{ratio:>7.2f}"
            f"{f'{low:.2f}-{high:.2f}':>12}{'' if goal is None else f'{goal:.1f}':>6}"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--no-real", action="store_true", help="skip the real-data rows")
    args = parser.parse_args()

    rows, (logits, prob, labels) = synthetic_rows(args.repeat)
    if not args.no_real:
        rows += real_rows(args.repeat)
    print_ratios(rows)

    print(f"\n{'peak extra memory / input bytes':<46}{'MiB':>10}{'ratio':>8}{'goal':>7}")
    for name, function, array in (
        ("ECE 1Mx10", lambda: ECE(prob, labels), prob),
        ("SCE 1Mx10", lambda: SCE(prob, labels), prob),
        ("ACE 1Mx10", lambda: ACE(prob, labels), prob),
        ("TemperatureScaling.fit 1Mx10", lambda: TemperatureScaling().fit(logits, labels), logits),
    ):
        peak = peak_memory(function)
        goal = MEMORY_GOALS.get(name)
        print(
            f"{name:<46}{peak / 2**20:>10.1f}{peak / array.nbytes:>8.2f}"
            f"{'' if goal is None else f'{goal:.1f}':>7}"
        )
    passes = TemperatureScaling().fit(logits, labels).n_passes_
    print(f"\nTemperatureScaling.fit passes over the logits: {passes}")


if __name__ == "__main__":
    main()
