"""select_recalibrator over the nine methods at 50,000 x 100 (the issue's target: 60 s, 2 cores).

What each method costs: one fit on a fold's training rows (40,000 x 100 of 5 folds), timed
in alternation with its floor, one softmax pass over the same array, in the same run; the
cross-validation costs about ``cv + 1`` such fits per method (5 folds and the refit).  With
``--full`` the whole ``select_recalibrator`` call is timed once as well.

    python benchmarks/bench_select.py [--rows 50000] [--classes 100] [--repeat 2] [--full]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _timing import alternated_times
from scipy.special import softmax

from calibration_toolbox import select_recalibrator
from calibration_toolbox.datasets import make_overconfident
from calibration_toolbox.recalibration._methods import METHODS, converted


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--cv", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--full", action="store_true")
    args = parser.parse_args()
    logits, labels = make_overconfident(args.rows, args.classes, temperature=2.0, seed=0)
    train = np.arange(args.rows) % args.cv != 0  # a fold's training rows
    inputs = {
        needs: converted(logits, needs, True)[train] for needs in ("logits", "probabilities")
    }
    fit_labels = labels[train]
    print(
        f"one fit on {train.sum():,} x {args.classes} (the training rows of {args.cv} folds), "
        f"best of {args.repeat} rounds, against one softmax pass over the same array:"
    )
    total = 0.0
    for name, method in METHODS.items():
        data = inputs[method.needs]

        def fit(method=method, data=data):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                method.factory().fit(data, fit_labels)

        def floor(data=data):
            softmax(data, axis=1)

        ours, floors = alternated_times(fit, floor, args.repeat)
        best = min(ours)
        total += (args.cv + 1) * best
        print(
            f"  {name:<12} {best:8.2f} s  floor {min(floors) * 1e3:7.1f} ms  "
            f"{best / min(floors):8.0f}x   x{args.cv + 1} fits: {(args.cv + 1) * best:7.1f} s"
        )
    print(f"estimated select_recalibrator (the fits alone): {total:.1f} s")
    if args.full:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            result = select_recalibrator(logits, labels, logits=True, cv=args.cv, random_state=0)
        print(f"select_recalibrator: {time.perf_counter() - start:.1f} s; best {result.best}")


if __name__ == "__main__":
    main()
