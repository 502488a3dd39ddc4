"""Speed of ``refinement_decomposition`` and of the smooth curve's bootstrap band.

Issue 20's floors, best of several rounds in the same run:

- ``refinement_decomposition(z, y, logits=True)`` (log score, fit on all rows) against one
  ``TemperatureScaling().fit(z, y)`` on the same 1,000,000 x 10 float32 logits (at most
  1.5x), at true temperatures 0.5, 1, 2 and 4, and on the shared real files (all rows,
  their log-probabilities);
- ``smooth_reliability_curve(..., n_resamples=100)`` against ``np.sort`` of the same
  1,000,000 float32 confidences (at most 100x), and the curve alone (no band).

Run from the repository root: ``python benchmarks/bench_refinement_smooth.py [--rounds 5]``
(the real files: ``../shared/data`` beside the checkout, or ``CALIBRATION_TOOLBOX_DATA``;
skipped when absent).
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import best_time
from bench_fits import DATA_DIR, synthetic

from calibration_toolbox import (
    Scores,
    TemperatureScaling,
    refinement_decomposition,
    smooth_reliability_curve,
)

REAL = ("densenet-bc-100-cifar-100", "wideresnet-16-4-cifar-10", "lenet-5-cifar-100")


def _real(name: str):
    path = DATA_DIR / f"{name}.npz"
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        return data["predictions"], data["ground_truth"]


def refinement(rounds: int) -> None:
    print("refinement_decomposition (log) / one TemperatureScaling().fit (issue: <= 1.5x)")
    cases = [(f"1Mx10 f32 T={t:g}", *synthetic(t)) for t in (0.5, 1.0, 2.0, 4.0)]
    for name in REAL:
        found = _real(name)
        if found is not None:
            prob, labels = found
            cases.append((name, np.log(np.maximum(prob, np.float32(1e-15))), labels))
    for name, logits, labels in cases:
        fit = best_time(lambda z=logits, y=labels: TemperatureScaling().fit(z, y), rounds)
        split = best_time(
            lambda z=logits, y=labels: refinement_decomposition(z, y, logits=True), rounds
        )
        print(
            f"  {name:<28} fit {fit * 1e3:8.1f} ms  split {split * 1e3:8.1f} ms  "
            f"ratio {split / fit:5.2f}"
        )


def band(rounds: int) -> None:
    print("smooth_reliability_curve / np.sort of the confidences (issue: band <= 100x)")
    rng = np.random.default_rng(0)
    n = 1_000_000
    scores = rng.random(n).astype(np.float32)
    cases = {
        "uniform, targets p**2": (scores, rng.random(n) < scores**2),
        "uniform, calibrated": (scores, rng.random(n) < scores),
    }
    found = _real("wideresnet-16-4-cifar-10")
    if found is not None:
        prob, labels = found
        cases["wideresnet-16-4-cifar-10 (10k rows)"] = (
            prob.max(axis=1),
            prob.argmax(axis=1) == labels,
        )
    for name, (confidence, correct) in cases.items():
        floor = best_time(lambda s=confidence: np.sort(s), rounds)
        curve = best_time(
            lambda s=confidence, y=correct: smooth_reliability_curve(Scores(s), y), rounds
        )
        banded = best_time(
            lambda s=confidence, y=correct: smooth_reliability_curve(
                Scores(s), y, n_resamples=100, random_state=0
            ),
            max(1, rounds // 3),
        )
        print(
            f"  {name:<36} sort {floor * 1e3:7.2f} ms  curve {curve / floor:6.1f}x  "
            f"band(100) {banded / floor:6.1f}x ({banded:.2f} s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    refinement(rounds)
    band(rounds)


if __name__ == "__main__":
    main()
