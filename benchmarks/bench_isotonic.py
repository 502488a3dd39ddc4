"""Time one-vs-rest isotonic calibration against scikit-learn's IsotonicRegression.

The problem: 1,000,000 x 10 float32 probabilities (softmax of overconfident logits) with
labels drawn from a calibrated version of them.  IsotonicCalibration fits all 10
one-vs-rest maps at once; scikit-learn does the same 10 fits with
``IsotonicRegression(out_of_bounds='clip')``, one per column, on the same arrays.

The script runs under any interpreter with NumPy and SciPy: each part is skipped when its
package is missing, and ``--peer-python`` runs the scikit-learn part in another interpreter
(scikit-learn is not a dependency of this project).  With a peer environment made from
``tests/references/requirements.txt`` (see ``tests/references/README.md``)::

    python -m venv PEERS && PEERS/bin/pip install -r tests/references/requirements.txt
    python benchmarks/bench_isotonic.py --peer-python PEERS/bin/python

Times are the best of ``--repeat`` runs, in seconds; the ratio is ours / scikit-learn's
(goal: <= 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
from _peers import run_json
from _timing import best_time
from scipy.special import softmax

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def make_problem(n_samples: int, n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n_samples, n_classes)).astype(np.float32)
    logits[np.arange(n_samples), rng.integers(0, n_classes, n_samples)] += 2.0
    true_prob = softmax(logits, axis=1)
    labels = (rng.random(n_samples)[:, None] > np.cumsum(true_prob, axis=1)).sum(axis=1)
    labels = np.minimum(labels, n_classes - 1)
    prob = softmax(3.0 * logits, axis=1).astype(np.float32)  # overconfident
    return prob, labels


def time_ours(prob, labels, repeat: int) -> float | None:
    try:
        from calibration_toolbox.recalibration.nonparametric import IsotonicCalibration
    except ImportError:
        return None
    return best_time(lambda: IsotonicCalibration().fit(prob, labels), repeat)


def time_sklearn(prob, labels, repeat: int) -> float | None:
    try:
        from sklearn.isotonic import IsotonicRegression
    except ImportError:
        return None

    def fit_all():
        for k in range(prob.shape[1]):
            IsotonicRegression(out_of_bounds="clip").fit(prob[:, k], labels == k)

    return best_time(fit_all, repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--peer-python", help="interpreter with scikit-learn")
    parser.add_argument("--only", choices=["ours", "sklearn"], help=argparse.SUPPRESS)
    args = parser.parse_args()

    prob, labels = make_problem(args.samples, args.classes)
    if args.only == "sklearn":
        print(json.dumps({"sklearn": time_sklearn(prob, labels, args.repeat)}))
        return

    ours = time_ours(prob, labels, args.repeat)
    theirs = None
    if args.peer_python:
        theirs = run_json(
            args.peer_python,
            __file__,
            [
                "--only=sklearn",
                f"--samples={args.samples}",
                f"--classes={args.classes}",
                f"--repeat={args.repeat}",
            ],
        )["sklearn"]
    else:
        theirs = time_sklearn(prob, labels, args.repeat)

    print(
        f"one-vs-rest isotonic fit, {args.samples:,} x {args.classes} float32, "
        f"best of {args.repeat}"
    )
    print(f"  calibration_toolbox IsotonicCalibration: {_seconds(ours)}")
    print(f"  scikit-learn IsotonicRegression x {args.classes}: {_seconds(theirs)}")
    if ours is not None and theirs is not None:
        print(f"  ratio (ours / scikit-learn): {ours / theirs:.2f}  (goal <= 2)")


def _seconds(value: float | None) -> str:
    return "skipped (package not importable)" if value is None else f"{value:.3f} s"


if __name__ == "__main__":
    main()
