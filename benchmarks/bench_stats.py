"""Speed of ``bootstrap(ECE, ...)``: 1,000 resamples on 100,000 x 10, against plain ECE calls.

The reference is what a user would write without :func:`calibration_toolbox.stats.bootstrap`:
1,000 calls ``ECE(prob[rows], labels[rows])`` on resampled copies (rows drawn with
replacement), timed in the same run; the issue asks for a ratio below 1/4.  Also shown: the
same bootstrap through one ECE call per resample with the resample's weights (the path every
metric without a fixed binning takes), and the floor ``np.sort`` of the 1,000,000 float32
confidences of the other issue-9 benchmarks.  Run: ``python benchmarks/bench_stats.py
[--repeat 3] [--dtype float32]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import median_time
from scipy.special import softmax

from calibration_toolbox import ECE
from calibration_toolbox.stats import bootstrap

N_ROWS, N_CLASSES, N_RESAMPLES = 100_000, 10, 1000


def resampled_calls(prob, labels, n_resamples, seed=0):
    rng = np.random.default_rng(seed)
    n = len(labels)
    for _ in range(n_resamples):
        rows = rng.integers(0, n, n)
        ECE(prob[rows], labels[rows])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    logits = 2 * rng.normal(size=(N_ROWS, N_CLASSES))
    prob = softmax(logits, axis=1).astype(args.dtype)
    labels = rng.integers(0, N_CLASSES, N_ROWS)

    def per_resample_calls(p, y, **options):
        return ECE(p, y, **options)  # unknown to bootstrap: one call per resample

    ours = median_time(lambda: bootstrap(ECE, prob, labels, random_state=0), args.repeat)
    # 100 resamples, scaled to 1,000: these paths take seconds per hundred
    calls = 10 * median_time(
        lambda: bootstrap(per_resample_calls, prob, labels, n_resamples=100, random_state=0),
        args.repeat,
    )
    copies = 10 * median_time(lambda: resampled_calls(prob, labels, 100), args.repeat)
    confidences = rng.random(1_000_000).astype(np.float32)
    floor = median_time(lambda: np.sort(confidences), max(args.repeat, 5))

    print(f"{N_RESAMPLES} resamples of {N_ROWS:,} x {N_CLASSES} {args.dtype} probabilities")
    rows = [
        ("bootstrap(ECE) (binned once, one bincount per resample)", ours),
        ("bootstrap through one weighted ECE call per resample", calls),
        ("1,000 ECE calls on resampled copies (the reference)", copies),
    ]
    for name, seconds in rows:
        print(
            f"  {name:<58} {seconds:7.3f} s  / reference {seconds / copies:6.3f}"
            f"  / np.sort(1e6 f32) {seconds / floor:8.1f}"
        )
    print(f"  np.sort of 1,000,000 float32 confidences: {floor * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
