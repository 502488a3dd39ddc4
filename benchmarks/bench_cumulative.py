"""Speed of KSCE, KuiperCE and ECESweep on 1,000,000 rows, as ratios to ``np.sort``.

The floor (issue 9) is ``np.sort`` of the 1,000,000 float32 confidences, timed in alternation
with each call in the same run.  KSCE is timed on the (score, target) pairs (``Scores``), on a
float32 (N, 10) probability matrix (validation pass and confidences included), and weighted;
ECESweep with its default rule (Roelofs et al.'s sweep to the first non-monotone count) and
with ``rule='largest'`` (every count up to 1,000).
Run: ``python benchmarks/bench_cumulative.py [--repeat 7]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from _timing import print_ratios
from scipy.special import softmax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's package first
from calibration_toolbox import KSCE, ECESweep, KuiperCE, Scores

N_ROWS, N_CLASSES = 1_000_000, 10


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(N_ROWS, N_CLASSES)) * 3
    prob = softmax(logits, axis=1).astype(np.float32)
    prob /= prob.sum(axis=1, keepdims=True)
    labels = (rng.random(N_ROWS)[:, None] > prob.cumsum(axis=1)).sum(axis=1)
    labels = np.minimum(labels, N_CLASSES - 1)
    confidence = prob.max(axis=1)
    correct = prob.argmax(axis=1) == labels
    weights = rng.random(N_ROWS)

    cases = {
        "KSCE(Scores(conf), correct)": lambda: KSCE(Scores(confidence), correct),
        "KuiperCE(Scores(conf), correct)": lambda: KuiperCE(Scores(confidence), correct),
        "KSCE(prob, labels)  [N x 10 float32]": lambda: KSCE(prob, labels),
        "KSCE(Scores, weighted)": lambda: KSCE(Scores(confidence), correct, sample_weight=weights),
        "KSCE(prob, labels, r=2)": lambda: KSCE(prob, labels, r=2),
        "KSCE(prob, labels, class-wise)": lambda: KSCE(prob, labels, variant="class-wise"),
        "ECESweep(Scores(conf), correct)": lambda: ECESweep(Scores(confidence), correct),
        "ECESweep(..., rule='largest')": lambda: ECESweep(
            Scores(confidence), correct, rule="largest"
        ),
    }
    print(f"{N_ROWS:,} rows")
    print_ratios(cases, lambda: np.sort(confidence), "np.sort(conf)", repeat, width=40)


if __name__ == "__main__":
    main()
