"""Speed of ``by_group(ECE, ...)`` over 100 groups against one ungrouped ECE call.

The issue asks for at most 3x one ungrouped call at 1,000,000 rows.  Timed in the same run,
best of ``--repeat`` rounds: ``by_group(ECE, prob, labels, groups)`` (100 groups: the rows
binned once, one ``bincount`` over (group, cell)); one ``ECE(prob, labels)`` call (the
reference); ``by_group`` on a boolean (N, 100) matrix of the same groups; 100 ECE calls on
each group's rows (what a user writes without ``by_group``); and the one-pass floor
``prob.sum()``.  Synthetic: 1,000,000 x 10 softmax probabilities (float32 and float64);
real: each file of the shared data, grouped by true class and by 100 random groups.

Run from the repository root: ``python benchmarks/bench_groups.py [--repeat 5] [DATA]``.
"""

from __future__ import annotations

import argparse
import itertools
import os
from pathlib import Path

import numpy as np
from _timing import best_time
from scipy.special import softmax

from calibration_toolbox import ECE, by_group

N_ROWS, N_CLASSES, N_GROUPS = 1_000_000, 10, 100


def per_group_calls(prob, labels, groups):
    order = np.argsort(groups, kind="stable")
    bounds = np.searchsorted(groups[order], np.arange(groups.max() + 2))
    for start, stop in itertools.pairwise(bounds):
        rows = order[start:stop]
        ECE(prob[rows], labels[rows])


def report(title, prob, labels, groups, repeat, loops=True):
    matrix = groups[:, None] == np.arange(groups.max() + 1)
    ungrouped = best_time(lambda: ECE(prob, labels), repeat)
    grouped = best_time(lambda: by_group(ECE, prob, labels, groups), repeat)
    overlapping = best_time(lambda: by_group(ECE, prob, labels, matrix), repeat)
    floor = best_time(lambda: prob.sum(), repeat)
    rows = [
        (f"by_group(ECE), {groups.max() + 1} group labels", grouped),
        ("by_group(ECE), the same groups as a boolean matrix", overlapping),
        ("ECE, one ungrouped call (the reference)", ungrouped),
    ]
    if loops:
        rows.append(
            (
                "one ECE call per group's rows",
                best_time(lambda: per_group_calls(prob, labels, groups), max(1, repeat // 2)),
            )
        )
    print(title)
    for name, seconds in rows:
        print(
            f"  {name:<52} {seconds * 1e3:9.1f} ms  / ECE {seconds / ungrouped:5.2f}"
            f"  / prob.sum() {seconds / floor:6.1f}"
        )
    print(f"  prob.sum() (one pass): {floor * 1e3:.2f} ms")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    default = os.environ.get(
        "CALIBRATION_TOOLBOX_DATA", Path(__file__).parents[2] / "shared" / "data"
    )
    parser.add_argument("data", nargs="?", default=default)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    logits = 2 * rng.normal(size=(N_ROWS, N_CLASSES))
    labels = rng.integers(0, N_CLASSES, N_ROWS)
    groups = rng.integers(0, N_GROUPS, N_ROWS)
    for dtype in ("float32", "float64"):
        prob = softmax(logits, axis=1).astype(dtype)
        title = f"synthetic {N_ROWS:,} x {N_CLASSES} {dtype}, {N_GROUPS} random groups"
        report(title, prob, labels, groups, args.repeat)
    for path in sorted(Path(args.data).glob("*.npz")):
        with np.load(path) as data:
            keys = (
                ("probs_test", "y_test")
                if "probs_test" in data
                else ("predictions", "ground_truth")
            )
            prob, labels = data[keys[0]], data[keys[1]]
        n_rows = len(labels)
        report(
            f"{path.stem}: {n_rows:,} x {prob.shape[1]}, by true class",
            prob,
            labels,
            labels,
            args.repeat,
        )
        random_groups = np.random.default_rng(1).integers(0, N_GROUPS, n_rows)
        report(f"{path.stem}: 100 random groups", prob, labels, random_groups, args.repeat)


if __name__ == "__main__":
    main()
