"""Speed of vector and matrix scaling fits, as multiples of one log-softmax pass.

Run from the repository root::

    python benchmarks/bench_linear.py [--repeats 3]

For each case the script times ``scipy.special.log_softmax(logits, axis=1)`` over the same
float32 array (the floor: one pass that reads every logit and exponentiates it) and the
fit, and prints the medians and their ratio (the goal is a fit within 15 passes' worth),
with the fit's objective evaluations ("passes", each one pass over the logits in row
blocks; the first stages compute in float32, the last in float64) and their mean cost in
floor units ("per pass").
The synthetic logits are overconfident (three times too large) with per-class offsets,
so the fitted map is far from the identity.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import median_time
from scipy.special import log_softmax

from calibration_toolbox.recalibration.linear import MatrixScaling, VectorScaling

# (label, estimator factory, N, K).  VectorScaling spreads its passes over every core by
# default (``n_jobs``); the single-thread row shows what the threads add.  The floor,
# scipy's log_softmax, runs on one core.
CASES = (
    ("VectorScaling", VectorScaling, 50_000, 1_000),
    ("VectorScaling n_jobs=1", lambda: VectorScaling(n_jobs=1), 50_000, 1_000),
    ("MatrixScaling", MatrixScaling, 50_000, 100),
)


def make_logits(n_samples: int, n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n_samples)
    logits = rng.normal(size=(n_samples, n_classes)).astype(np.float32)
    logits[np.arange(n_samples), labels] += 2.5
    logits += rng.normal(scale=0.5, size=n_classes).astype(np.float32)
    logits *= 3.0
    return logits, labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    header = (
        f"{'case':<38} {'log_softmax s':>13} {'fit s':>8} {'passes':>7} "
        f"{'per pass':>8} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for name, cls, n_samples, n_classes in CASES:
        logits, labels = make_logits(n_samples, n_classes)
        floor = median_time(lambda logits=logits: log_softmax(logits, axis=1), args.repeats)
        fitted: list = []
        fit = median_time(
            lambda cls=cls, logits=logits, labels=labels, fitted=fitted: fitted.append(
                cls().fit(logits, labels)
            ),
            args.repeats,
        )
        label = f"{name} {n_samples:,}x{n_classes:,} f32"
        passes = fitted[-1].n_passes_
        print(
            f"{label:<38} {floor:>13.3f} {fit:>8.3f} {passes:>7d} "
            f"{fit / passes / floor:>8.2f} {fit / floor:>6.1f}"
        )


if __name__ == "__main__":
    main()
