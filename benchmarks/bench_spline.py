"""Time and memory of ``SplineCalibration.fit`` against ``IsotonicCalibration.fit``.

The problem: N binary rows (default 1,000,000), a float64 P(y = 1) per row and labels drawn
from a miscalibrated version of it (P(y = 1) = s**2).  Both fits take the same arrays; the
spline fit is timed against the isotonic fit in alternating rounds (the ratio goal is <= 2),
and against one ``np.sort`` of the scores (the floor both fits pay).  Memory is the peak
NumPy allocation of one fit (tracemalloc) as a ratio to the input's bytes (scores and
labels; goal <= 2), beside the peak of the validation both fits start with.  The
top-label fit on N x 10 float32 probabilities is timed too.

Run from the repository root::

    python benchmarks/bench_spline.py [--samples 1000000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from _data import make_binary, make_multiclass
from _timing import interleaved_ratio, peak_memory

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration_toolbox import IsotonicCalibration, SplineCalibration
from calibration_toolbox.recalibration.nonparametric import _fit_inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    scores, labels = make_binary(args.samples)
    print(f"binary fit, {args.samples:,} float64 scores, {args.rounds} alternating rounds")
    print("  (best, median [25%, 75%] of the per-round ratios)")
    cases = {
        "SplineCalibration.fit / IsotonicCalibration.fit": (
            lambda: SplineCalibration().fit(scores, labels),
            lambda: IsotonicCalibration().fit(scores, labels),
        ),
        "SplineCalibration.fit / np.sort(scores)": (
            lambda: SplineCalibration().fit(scores, labels),
            lambda: np.sort(scores),
        ),
        "IsotonicCalibration.fit / np.sort(scores)": (
            lambda: IsotonicCalibration().fit(scores, labels),
            lambda: np.sort(scores),
        ),
    }
    for name, (ours, floor) in cases.items():
        print(f"  {name:<50} {interleaved_ratio(ours, floor, args.rounds).text()}")

    input_bytes = scores.nbytes + labels.nbytes
    print(f"peak extra memory of one fit (tracemalloc), input {input_bytes / 2**20:.1f} MiB")
    for name, fit in (
        ("SplineCalibration", lambda: SplineCalibration().fit(scores, labels)),
        ("IsotonicCalibration", lambda: IsotonicCalibration().fit(scores, labels)),
        # What both fits pay first: the validation (no copy of a 1-D float column) and the
        # problem index of each row.
        (
            "validation alone",
            lambda: _fit_inputs(SplineCalibration(), scores, labels, None, "one-vs-rest"),
        ),
    ):
        peak = peak_memory(fit)
        print(f"  {name:<20} {peak / 2**20:7.1f} MiB  {peak / input_bytes:5.2f}x the input")

    prob, classes = make_multiclass(args.samples)
    print(f"top-label fit, {args.samples:,} x 10 float32")
    ratio = interleaved_ratio(
        lambda: SplineCalibration().fit(prob, classes),
        lambda: IsotonicCalibration(mode="top-label").fit(prob, classes),
        args.rounds,
    )
    print(f"  {'SplineCalibration / IsotonicCalibration(top-label)':<50} {ratio.text()}")


if __name__ == "__main__":
    main()
