"""Speed of the selective-prediction measures as a ratio to ``np.sort`` of the confidences.

Issue 21 asks, at 1,000,000 rows, for the risk-coverage family at most 2x ``np.sort(conf)``.
Timed, best of ``--repeat`` rounds, against ``np.sort`` of the same float32 confidences in
the same run: each measure of ``Scores(s)`` (float32 scores, calibrated 0/1 targets), with
weights, and with scores of few distinct values (an LLM's verbalised confidence, 0.05
apart); then the top label of a (1,000,000, 10) float32 matrix, against the floor of
``prob.max(axis=1)`` followed by ``np.sort`` (the confidences the measures sort must first
be taken); then the six real files of ../shared/data (10,000 rows each).  Run:
``python benchmarks/bench_selective.py [--repeat 7] [DATA]``.
"""

from __future__ import annotations

import argparse
import functools
import os
from pathlib import Path

import numpy as np
from _timing import print_ratios

from calibration_toolbox import (
    AUGRC,
    AURC,
    EAURC,
    Scores,
    confidence_auroc,
    coverage_at_risk,
    risk_at_coverage,
    risk_coverage_curve,
)
from calibration_toolbox.io import load_predictions


def _cases(prob_or_scores, labels, weights=None):
    cases = {
        "risk_coverage_curve": lambda: risk_coverage_curve(prob_or_scores, labels),
        "AURC": lambda: AURC(prob_or_scores, labels),
        "EAURC": lambda: EAURC(prob_or_scores, labels),
        "AUGRC": lambda: AUGRC(prob_or_scores, labels),
        "coverage_at_risk(risk=0.05)": lambda: coverage_at_risk(prob_or_scores, labels, risk=0.05),
        "risk_at_coverage(coverage=0.9)": lambda: risk_at_coverage(
            prob_or_scores, labels, coverage=0.9
        ),
        "confidence_auroc": lambda: confidence_auroc(prob_or_scores, labels),
    }
    if weights is not None:
        for name, measure in (
            ("risk_coverage_curve", risk_coverage_curve),
            ("AURC", AURC),
            ("confidence_auroc", confidence_auroc),
        ):
            cases[f"{name}(sample_weight)"] = functools.partial(
                measure, prob_or_scores, labels, sample_weight=weights
            )
    return cases


def _report(title, floor, cases, repeat):
    print(f"{title}: each measure beside its floor")
    print_ratios(cases, floor, "the floor", repeat, width=36)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("data", nargs="?", default=None)
    arguments = parser.parse_args()
    repeat = arguments.repeat
    rng = np.random.default_rng(0)
    n = 1_000_000
    scores = rng.random(n).astype(np.float32)
    targets = rng.random(n) < scores
    weights = rng.uniform(0.5, 2.0, n)
    cases = _cases(Scores(scores), targets, weights)
    _report("1,000,000 float32 scores, np.sort", lambda: np.sort(scores), cases, repeat)
    verbal = (np.round(scores * 20) / 20).astype(np.float32)
    cases = _cases(Scores(verbal), targets)
    title = "1,000,000 float32 scores of 21 values, np.sort"
    _report(title, lambda: np.sort(verbal), cases, repeat)
    prob = rng.dirichlet(np.full(10, 0.3), n).astype(np.float32)
    labels = rng.integers(0, 10, n)
    cases = {"AURC(prob (N, 10), labels)": lambda: AURC(prob, labels)}
    title = "(1,000,000, 10) float32 matrix, np.sort(prob.max(axis=1))"
    _report(title, lambda: np.sort(prob.max(axis=1)), cases, repeat)
    default = Path(__file__).resolve().parents[2] / "shared" / "data"
    folder = Path(arguments.data or os.environ.get("CALIBRATION_TOOLBOX_DATA", default))
    paths = sorted(folder.glob("*.npz"))
    if not paths:
        print(f"no real predictions found in {folder}: skipped")
    for path in paths:
        prob, labels = load_predictions(path)  # the arrays' keys are recognised
        cases = {name: _cases(prob, labels)[name] for name in ("AURC", "confidence_auroc")}
        title = f"{path.stem} ({len(labels):,} rows), np.sort(max)"
        _report(title, lambda prob=prob: np.sort(prob.max(axis=1)), cases, repeat)


if __name__ == "__main__":
    main()
