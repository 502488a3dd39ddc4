"""Time and memory of ``HistogramBinning(mode='top-label')`` fit and prediction.

The problem: N x 10 float32 softmax probabilities (default N = 1,000,000) with labels drawn
independently of them.  The top-label fit (one histogram per predicted class) is timed in
alternating rounds against the one-vs-rest fit of the same class and against one row
``argmax`` of the probabilities (a pass both modes pay in some form); prediction against
the one-vs-rest prediction.  Memory is the peak NumPy allocation of one fit (tracemalloc)
as a ratio to the input's bytes.

Run from the repository root::

    python benchmarks/bench_histogram_top_label.py [--samples 1000000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from _data import make_multiclass
from _timing import interleaved_ratio, peak_memory

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from calibration_toolbox import HistogramBinning


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    prob, labels = make_multiclass(args.samples)
    print(f"{args.samples:,} x 10 float32, {args.rounds} alternating rounds")
    print("  (best, median [25%, 75%] of the per-round ratios)")
    for adaptive in (False, True):
        top = HistogramBinning(15, adaptive, mode="top-label")
        rest = HistogramBinning(15, adaptive)
        kind = "equal mass" if adaptive else "equal width"
        cases = {
            f"top-label fit / one-vs-rest fit ({kind})": (
                lambda top=top: top.fit(prob, labels),
                lambda rest=rest: rest.fit(prob, labels),
            ),
            f"top-label fit / np.argmax(prob, 1) ({kind})": (
                lambda top=top: top.fit(prob, labels),
                lambda: np.argmax(prob, axis=1),
            ),
            f"top-label predict / one-vs-rest predict ({kind})": (
                lambda top=top: top.predict_proba(prob),
                lambda rest=rest: rest.predict_proba(prob),
            ),
        }
        for name, (ours, floor) in cases.items():
            print(f"  {name:<52} {interleaved_ratio(ours, floor, args.rounds).text()}")

    input_bytes = prob.nbytes + labels.nbytes
    print(f"peak extra memory of one fit (tracemalloc), input {input_bytes / 2**20:.1f} MiB")
    for name, model in (
        ("top-label, equal mass", HistogramBinning(15, True, mode="top-label")),
        ("one-vs-rest, equal mass", HistogramBinning(15, True)),
    ):
        peak = peak_memory(lambda model=model: model.fit(prob, labels))
        print(f"  {name:<24} {peak / 2**20:7.1f} MiB  {peak / input_bytes:5.2f}x the input")


if __name__ == "__main__":
    main()
