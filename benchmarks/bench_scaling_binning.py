"""Time and memory of ScalingBinning at 1,000,000 binary rows (issue 22).

The problem: 1,000,000 float64 scores ``s`` uniform on (0, 1) with labels drawn with
probability ``s**2`` (an overconfident score), seeded; the same rows calibrate and are
predicted.  Floors, timed in alternating rounds in the same run (best, median and spread of
the per-round ratios, ``_timing.print_ratios``):

* ``fit`` (the default three-way split, and ``split='none'``) against
  ``IsotonicCalibration().fit`` on the same rows: both sort the scores; scaling-binning
  adds a permutation, a Platt fit (a few Newton passes over a third of the rows) and the
  log-odds and sigmoid of every row;
* ``predict_proba`` against one ``np.searchsorted`` of the 1,000,000 scores into 10 sorted
  edges: prediction is the log-odds, the sigmoid, that search and a gather;
* peak memory (tracemalloc) of ``fit`` and of ``predict_proba``, as a ratio to the bytes of
  the scores passed.

Run from the repository root::

    python benchmarks/bench_scaling_binning.py [--rows 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from _timing import print_peak_memory, print_ratios

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def make_problem(n_samples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    scores = rng.random(n_samples)
    labels = (rng.random(n_samples) < scores**2).astype(np.int64)
    return scores, labels


def main(argv: list[str] | None = None) -> None:
    from calibration_toolbox import IsotonicCalibration, ScalingBinning

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    scores, labels = make_problem(int(args.rows))
    print(f"ScalingBinning, {len(scores):,} binary rows (float64 scores)")
    print_ratios(
        {
            "ScalingBinning().fit": lambda: ScalingBinning().fit(scores, labels),
            "ScalingBinning(split='none').fit": lambda: ScalingBinning(split="none").fit(
                scores, labels
            ),
        },
        lambda: IsotonicCalibration().fit(scores, labels),
        "IsotonicCalibration().fit",
        args.repeat,
    )
    model = ScalingBinning().fit(scores, labels)
    edges = model.bin_edges_[0, 1:-1].copy()
    print_ratios(
        {"ScalingBinning.predict_proba": lambda: model.predict_proba(scores)},
        lambda: np.searchsorted(edges, scores),
        "np.searchsorted (10 edges)",
        args.repeat,
    )
    print_peak_memory(
        {
            "fit": lambda: ScalingBinning().fit(scores, labels),
            "predict_proba": lambda: model.predict_proba(scores),
        },
        scores.nbytes,
    )


if __name__ == "__main__":
    main()
