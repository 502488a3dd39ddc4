"""Speed of ``ECE(Scores(s), y)`` on 1,000,000 float32 scores, as ratios to one pass.

The floors are one NumPy reduction over the same scores, in the same run: ``s.max()`` and
``np.add.reduce(s)``.  Also timed: the two shared binning steps the call is made of
(:func:`~calibration_toolbox.binning.assign_bins` and
:func:`~calibration_toolbox.binning.bin_sums`), so that the cost of the pairs path itself
(validation, no copy of the scores) is the rest; and the peak extra memory (tracemalloc) as
a multiple of the scores' bytes.  Run: ``python benchmarks/bench_pairs.py [--repeat 15]``.
"""

from __future__ import annotations

import argparse
import tracemalloc

import numpy as np
from _timing import median_time

from calibration_toolbox import ECE, Scores
from calibration_toolbox.binning import assign_bins, bin_sums


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    repeat = parser.parse_args().repeat
    rng = np.random.default_rng(0)
    scores = rng.random(1_000_000).astype(np.float32)
    targets = rng.random(1_000_000) < scores
    edges = np.linspace(0, 1, 16)
    bins = assign_bins(scores, edges, True)

    ours = median_time(lambda: ECE(Scores(scores), targets), repeat)
    parts = {
        "assign_bins": median_time(lambda: assign_bins(scores, edges, True), repeat),
        "bin_sums": median_time(lambda: bin_sums(bins, 15, scores, targets, None), repeat),
    }
    floors = {
        "s.max()": median_time(scores.max, repeat),
        "np.add.reduce(s)": median_time(lambda: np.add.reduce(scores), repeat),
    }
    print(f"ECE(Scores(s), y), 1,000,000 float32 scores: {ours * 1e3:.2f} ms")
    for name, seconds in floors.items():
        print(f"  / {name:<18} {seconds * 1e3:7.3f} ms   ratio {ours / seconds:7.1f}")
    for name, seconds in parts.items():
        print(f"  of which {name:<12} {seconds * 1e3:7.3f} ms   share {seconds / ours:5.2f}")
    tracemalloc.start()
    ECE(Scores(scores), targets)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    print(f"  peak extra memory {peak / scores.nbytes:.2f}x the scores' bytes")


if __name__ == "__main__":
    main()
