"""Speed of ``SmoothECE`` on 1,000,000 float32 scores, as a ratio to ``np.sort`` of them.

The floor is ``np.sort`` of the same 1,000,000 float32 confidences, timed in alternation with
each call in the same run (issue 9 asks for at most 5x).  Timed: ``SmoothECE(Scores(s), y)`` on
calibrated targets (the fixed point falls below 1/64, so the second grid stage runs), on
miscalibrated targets (one stage), with a fixed bandwidth, and the top label of a (1,000,000,
10) float32 matrix.
Run: ``python benchmarks/bench_smooth.py [--repeat 7]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import print_ratios

from calibration_toolbox import Scores, SmoothECE


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    rng = np.random.default_rng(0)
    n = 1_000_000
    scores = rng.random(n).astype(np.float32)
    calibrated = rng.random(n) < scores
    overconfident = rng.random(n) < scores**2
    prob = rng.dirichlet(np.full(10, 0.3), n).astype(np.float32)
    labels = rng.integers(0, 10, n)
    confidence = prob.max(axis=1)

    cases = {
        "SmoothECE(Scores(s), calibrated y)": lambda: SmoothECE(Scores(scores), calibrated),
        "SmoothECE(Scores(s), overconfident y)": lambda: SmoothECE(Scores(scores), overconfident),
        "SmoothECE(Scores(s), y, bandwidth=0.05)": lambda: SmoothECE(
            Scores(scores), calibrated, bandwidth=0.05
        ),
        "SmoothECE(prob (N, 10), labels)": lambda: SmoothECE(prob, labels),
    }
    print("1,000,000 float32 scores")
    print_ratios(cases, lambda: np.sort(confidence), "np.sort(conf)", repeat)


if __name__ == "__main__":
    main()
