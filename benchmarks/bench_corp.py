"""Speed of CORP (decomposition, band, test) as a ratio to ``np.sort`` of the confidences.

Issue 20 asks, at 1,000,000 rows, for the decomposition at most 3x ``np.sort(conf)`` and the
consistency band at 100 resamples at most 100x.  Timed, best of ``--repeat`` rounds, against
``np.sort`` of the same float32 confidences in the same run: ``corp_decomposition`` of
``Scores(s)`` (float32 scores, calibrated targets), with weights, and of the top label of a
(1,000,000, 10) float32 matrix; ``stats.corp_reliability`` with ``band='resampling'`` at 100
resamples and with the asymptotic band; ``stats.corp_test`` at 100 resamples; then the same
calls on the six real files of ../shared/data (10,000 rows each), against their ``np.sort``.
Run: ``python benchmarks/bench_corp.py [--repeat 5] [DATA]``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
from _timing import best_time

from calibration_toolbox import Scores, corp_decomposition
from calibration_toolbox.io import load_predictions
from calibration_toolbox.stats import corp_reliability, corp_test


def _cases(prob_or_scores, labels, weights=None):
    return {
        "corp_decomposition": lambda: corp_decomposition(prob_or_scores, labels),
        "corp_decomposition(sample_weight)": lambda: corp_decomposition(
            prob_or_scores, labels, sample_weight=weights
        ),
        "corp_reliability(band='resampling', 100)": lambda: corp_reliability(
            prob_or_scores, labels, band="resampling", n_resamples=100, random_state=0
        ),
        "corp_reliability(band='continuous')": lambda: corp_reliability(
            prob_or_scores, labels, band="continuous"
        ),
        "corp_test(n_resamples=100)": lambda: corp_test(
            prob_or_scores, labels, n_resamples=100, random_state=0
        ),
    }


def _report(title, floor, cases, repeat):
    print(f"{title}: np.sort {floor * 1e3:.2f} ms")
    for name, function in cases.items():
        seconds = best_time(function, repeat)
        print(f"  {name:<42} {seconds * 1e3:9.1f} ms   ratio {seconds / floor:7.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("data", nargs="?", default=None)
    arguments = parser.parse_args()
    repeat = arguments.repeat
    rng = np.random.default_rng(0)
    n = 1_000_000
    scores = rng.random(n).astype(np.float32)
    targets = rng.random(n) < scores
    weights = rng.uniform(0.5, 2.0, n)
    floor = best_time(lambda: np.sort(scores), repeat)
    _report("1,000,000 float32 scores", floor, _cases(Scores(scores), targets, weights), repeat)
    prob = rng.dirichlet(np.full(10, 0.3), n).astype(np.float32)
    labels = rng.integers(0, 10, n)
    confidence = prob.max(axis=1)
    floor = best_time(lambda: np.sort(confidence), repeat)
    cases = {"corp_decomposition(prob (N, 10), labels)": lambda: corp_decomposition(prob, labels)}
    _report("(1,000,000, 10) float32 matrix", floor, cases, repeat)
    default = Path(__file__).resolve().parents[2] / "shared" / "data"
    folder = Path(arguments.data or os.environ.get("CALIBRATION_TOOLBOX_DATA", default))
    paths = sorted(folder.glob("*.npz"))
    if not paths:
        print(f"no real predictions found in {folder}: skipped")
    for path in paths:
        name = path.stem
        prob, labels = load_predictions(path)  # the arrays' keys are recognised
        confidence = prob.max(axis=1)
        floor = best_time(lambda confidence=confidence: np.sort(confidence), repeat)
        real = _cases(prob, labels, np.ones(len(labels)))
        _report(f"{name} ({len(labels):,} rows)", floor, real, repeat)


if __name__ == "__main__":
    main()
