"""Speed of the tests with p-values (KS, Kuiper, Spiegelhalter) on 1,000,000 rows.

The floor (issue 20) is ``np.sort`` of the 1,000,000 float32 confidences, timed in the same
run and in alternation with each test (``_timing.paired_times``: the median of the per-pair
ratios, with its 25th and 75th percentiles); the goal is at most 2x.  Each test is timed on
(score, target) pairs (``Scores``), weighted, and on a float32 (N, 10) probability matrix
(validation and top label included, as the issue's "each test"); then on two real files,
their rows tiled to 1,000,000.  The clinical summary (slope and intercept, Hosmer-Lemeshow,
ICI) is timed too, against the same floor, with no goal.
Run: ``python benchmarks/bench_tests.py [--repeat 7]``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from _timing import paired_times
from scipy.special import softmax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package first
from calibration_toolbox import ICI, Scores, calibration_slope_intercept, hosmer_lemeshow
from calibration_toolbox.stats import ks_test, kuiper_test, spiegelhalter_test

N_ROWS, N_CLASSES = 1_000_000, 10
GOAL = 2.0
TESTS = {"ks_test": ks_test, "kuiper_test": kuiper_test, "spiegelhalter_test": spiegelhalter_test}
REAL_FILES = ("wideresnet-16-4-cifar-10", "lenet-5-cifar-100")
DATA_DIR = Path(
    os.environ.get(
        "CALIBRATION_TOOLBOX_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"
    )
)


def synthetic(rng):
    logits = rng.normal(size=(N_ROWS, N_CLASSES)) * 3
    prob = softmax(logits, axis=1).astype(np.float32)
    prob /= prob.sum(axis=1, keepdims=True)
    labels = (rng.random(N_ROWS)[:, None] > prob.cumsum(axis=1)).sum(axis=1)
    return prob, np.minimum(labels, N_CLASSES - 1)


def load_real(name):
    """The file's probabilities and labels tiled to N_ROWS rows; None when absent."""
    path = DATA_DIR / f"{name}.npz"
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        prob, labels = data["predictions"].astype(np.float32), data["ground_truth"]
    copies = N_ROWS // len(prob)
    return np.tile(prob, (copies, 1)), np.tile(labels, copies)


def report(name, function, floor, repeat, goal):
    ours, floor_time, ratio, (low, high) = paired_times(function, floor, repeat)
    verdict = "" if goal is None else ("  ok" if ratio <= goal else f"  ABOVE {goal}x")
    print(
        f"  {name:<52} {ours * 1e3:8.1f} ms  floor {floor_time * 1e3:6.1f} ms  "
        f"ratio {ratio:5.2f} [{low:.2f}, {high:.2f}]{verdict}"
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    rng = np.random.default_rng(0)
    prob, labels = synthetic(rng)
    confidence = prob.max(axis=1)
    correct = prob.argmax(axis=1) == labels
    weights = rng.random(N_ROWS)

    def floor():
        return np.sort(confidence)

    print(f"synthetic, {N_ROWS:,} rows; floor np.sort of the float32 confidences; goal {GOAL}x")
    for name, test in TESTS.items():
        report(f"{name}(Scores(conf), correct)", lambda t=test: t(Scores(confidence), correct),
               floor, repeat, GOAL)  # fmt: skip
        report(f"{name}(Scores, weighted)",
               lambda t=test: t(Scores(confidence), correct, sample_weight=weights),
               floor, repeat, GOAL)  # fmt: skip
        report(f"{name}(prob, labels)  [N x 10 float32]", lambda t=test: t(prob, labels),
               floor, repeat, GOAL)  # fmt: skip
    print("clinical summary (no goal)")
    few = max(3, repeat // 2)
    report("calibration_slope_intercept(Scores(conf), correct, clip)",
           lambda: calibration_slope_intercept(Scores(confidence), correct, clip=1e-7),
           floor, few, None)  # fmt: skip
    report("hosmer_lemeshow(Scores(conf), correct)",
           lambda: hosmer_lemeshow(Scores(confidence), correct), floor, few, None)  # fmt: skip
    report("ICI(Scores(conf), correct)", lambda: ICI(Scores(confidence), correct),
           floor, few, None)  # fmt: skip
    for name in REAL_FILES:
        loaded = load_real(name)
        if loaded is None:
            print(f"note: {name}.npz not found in ../shared/data; its rows are skipped")
            continue
        real_prob, real_labels = loaded
        real_confidence = real_prob.max(axis=1)
        print(f"{name}, tiled to {len(real_prob):,} rows (ties: each score 100 times)")
        for test_name, test in TESTS.items():
            report(f"{test_name}(prob, labels)",
                   lambda t=test, p=real_prob, y=real_labels: t(p, y),
                   lambda c=real_confidence: np.sort(c), repeat, GOAL)  # fmt: skip


if __name__ == "__main__":
    main()
