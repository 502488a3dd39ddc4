"""Time and memory of VennAbersCalibration at 1,000,000 binary rows (issue 22).

The problem: 1,000,000 float64 scores ``s`` uniform on (0, 1) with labels drawn with
probability ``s**2`` (an overconfident score), seeded; the same rows calibrate and are
predicted.  Floors, timed in alternating rounds in the same run (best, median and spread of
the per-round ratios, ``_timing.print_ratios``):

* ``fit`` against ``IsotonicCalibration().fit`` on the same rows (goal: <= 3x); both sort
  the scores and pool ties, and the Venn-Abers fit adds its two tables (one isotonic fit
  and a bisection over the vertices of its convex minorant, for each label);
* ``predict_proba`` against one ``np.searchsorted`` of the 1,000,000 scores into the
  sorted calibration scores (goal: <= 2x): prediction is that search, one comparison for
  the scores tied with a calibration score, and two gathers;
* peak memory (tracemalloc) of ``fit`` and of ``predict_proba``, as a ratio to the bytes of
  the scores passed (goal: <= 2x).

Run from the repository root::

    python benchmarks/bench_venn_abers.py [--rows 1000000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from _data import make_binary
from _timing import print_peak_memory, print_ratios

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main(argv: list[str] | None = None) -> None:
    from calibration_toolbox import IsotonicCalibration, VennAbersCalibration

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e6)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    scores, labels = make_binary(int(args.rows))
    print(f"VennAbersCalibration, {len(scores):,} binary rows (float64 scores)")
    print_ratios(
        {"VennAbersCalibration().fit": lambda: VennAbersCalibration().fit(scores, labels)},
        lambda: IsotonicCalibration().fit(scores, labels),
        "IsotonicCalibration().fit",
        args.repeat,
    )
    venn = VennAbersCalibration().fit(scores, labels)
    known = np.sort(scores)
    print_ratios(
        {"VennAbersCalibration.predict_proba": lambda: venn.predict_proba(scores)},
        lambda: np.searchsorted(known, scores),
        "np.searchsorted",
        args.repeat,
    )
    print_peak_memory(
        {
            "fit": lambda: VennAbersCalibration().fit(scores, labels),
            "predict_proba": lambda: venn.predict_proba(scores),
        },
        scores.nbytes,
    )


if __name__ == "__main__":
    main()
