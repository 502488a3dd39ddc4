"""Speed of MMCE and SKCE(estimator='linear') on 1,000,000 x 10 float32, as ratios to one pass.

Floors, timed in alternation with each call in the same run (best, median and spread of
the per-round ratios are printed): ``np.sort`` of the 1,000,000 float32 confidences (for MMCE,
goal within 5x) and ``p.max(axis=1)`` (for the linear SKCE, goal within 2x).  Also shown:
MMCE on ``Scores`` (no top-label scan), MMCE at a small bandwidth (several value blocks),
the linear SKCE with an explicit bandwidth (without the median heuristic), and the unbiased
SKCE on 5,000 rows (quadratic; for scale).  Run: ``python benchmarks/bench_kernel.py
[--repeat 7]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import median_time, print_ratios

from calibration_toolbox import MMCE, SKCE, Scores


def predictions(n: int, n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=3.0, size=(n, n_classes)).astype(np.float32)
    prob = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    return prob, rng.integers(0, n_classes, n)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    prob, labels = predictions(1_000_000, 10)
    confidence = prob.max(axis=1)
    correct = prob.argmax(axis=1) == labels

    sort_floor = lambda: np.sort(confidence)  # noqa: E731
    max_floor = lambda: prob.max(axis=1)  # noqa: E731
    print("1,000,000 x 10 float32")
    print_ratios(
        {
            "MMCE(p, y)": lambda: MMCE(prob, labels),
            "MMCE(Scores(conf), c)": lambda: MMCE(Scores(confidence), correct),
            "MMCE(p, y, bandwidth=1e-3)": lambda: MMCE(prob, labels, bandwidth=1e-3),
        },
        sort_floor,
        "np.sort(conf)",
        repeat,
        width=36,
    )
    print_ratios(
        {
            "SKCE(p, y, estimator='linear')": lambda: SKCE(prob, labels, estimator="linear"),
            "SKCE(..., 'linear', bandwidth=0.5)": lambda: SKCE(
                prob, labels, estimator="linear", bandwidth=0.5
            ),
        },
        max_floor,
        "p.max(axis=1)",
        repeat,
        width=36,
    )
    small, small_labels = predictions(5_000, 10, seed=1)
    seconds = median_time(lambda: SKCE(small, small_labels, bandwidth=0.5), 3)
    print(f"5,000 x 10: SKCE(estimator='unbiased') {seconds * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
