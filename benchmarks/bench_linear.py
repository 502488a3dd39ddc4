"""Speed of vector and matrix scaling fits, as multiples of one log-softmax pass.

Run from the repository root::

    python benchmarks/bench_linear.py [--repeats 3]

For each case the script times ``scipy.special.log_softmax(logits, axis=1)`` over the same
float32 array (the floor: one pass that reads every logit and exponentiates it) and the
fit in alternation, round by round, and prints the best times, their ratio and the median
and spread of the per-round ratios (the goal is a fit within 15 passes' worth),
with the fit's objective evaluations ("passes", each one pass over the logits in row
blocks; the first stages compute in float32, the last in float64; a diagonal fit ends
with Newton steps, whose Hessian-vector products are float32 passes at K = 1,000) and
their mean cost in floor units ("per pass").
The synthetic logits are overconfident (three times too large) with per-class offsets,
so the fitted map is far from the identity.

With ``--real`` the script also fits the CIFAR-100 DenseNet predictions of the shared data
(``../shared/data`` beside the checkout, or ``CALIBRATION_TOOLBOX_DATA``; skipped when
absent): on a seeded 5,000 of the rows (features ``log p``), and prints the fit's time,
passes, the penalised objective at the end and the NLL on the other 5,000 rows.  These
are very confident predictions, on which the fits take far more iterations than on the
synthetic logits; the unpenalised ``MatrixScaling()`` and the weak Dirichlet penalty
stop at the iteration limit (tens of seconds) and over-fit (held-out NLL far above the
uncalibrated one; see the user guide's Speed page).
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
from _timing import interleaved_ratio
from scipy.special import log_softmax

from calibration_toolbox.recalibration.linear import (
    DirichletCalibration,
    MatrixScaling,
    VectorScaling,
)

DATA_DIR = Path(
    os.environ.get(
        "CALIBRATION_TOOLBOX_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"
    )
)
# (label, estimator factory, whether it takes probabilities) on the real predictions.
REAL_CASES = (
    ("MatrixScaling(reg_lambda=1e4, reg_mu=1e4)", lambda: MatrixScaling(1e4, 1e4), False),
    ("DirichletCalibration(1e-3, 1e-3)", lambda: DirichletCalibration(1e-3, 1e-3), True),
    ("MatrixScaling()", MatrixScaling, False),
)

# (label, estimator factory, N, K).  VectorScaling spreads its passes over every core by
# default (``n_jobs``); the single-thread row shows what the threads add.  The floor,
# scipy's log_softmax, runs on one core.
CASES = (
    ("VectorScaling", VectorScaling, 50_000, 1_000),
    ("VectorScaling n_jobs=1", lambda: VectorScaling(n_jobs=1), 50_000, 1_000),
    ("MatrixScaling", MatrixScaling, 50_000, 100),
)


def make_logits(n_samples: int, n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n_samples)
    logits = rng.normal(size=(n_samples, n_classes)).astype(np.float32)
    logits[np.arange(n_samples), labels] += 2.5
    logits += rng.normal(scale=0.5, size=n_classes).astype(np.float32)
    logits *= 3.0
    return logits, labels


def real_split(name: str = "densenet-bc-100-cifar-100", n_fit: int = 5_000):
    """(probabilities, labels, fit rows, held-out rows) of a shared file, or None."""
    path = DATA_DIR / f"{name}.npz"
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        prob, labels = data["predictions"], data["ground_truth"]
    order = np.random.default_rng(0).permutation(len(labels))
    return prob, labels, order[:n_fit], order[n_fit:]


def held_out_nll(estimator, data, labels) -> float:
    log_prob = estimator(data)  # calibrated log-probabilities or logits
    log_prob = log_softmax(log_prob.astype(np.float64), axis=1)
    return float(-np.mean(log_prob[np.arange(len(labels)), labels]))


def real_rows() -> None:
    """Fit each real case once: time, passes, objective (float64 pass) and held-out NLL."""
    split = real_split()
    if split is None:
        print(f"(real predictions not found in {DATA_DIR})")
        return
    prob, labels, fit_rows, test_rows = split
    log_prob = np.log(np.maximum(prob, np.float32(1e-30)))
    print(
        f"\n{'densenet-bc-100-cifar-100, 5,000 fit rows':<44} {'fit s':>8} {'passes':>7} "
        f"{'objective':>20} {'held-out NLL':>12}"
    )
    floor = log_softmax(log_prob[test_rows].astype(np.float64), axis=1)
    print(
        f"{'(no recalibration)':<44} {'':>8} {'':>7} {'':>20} "
        f"{-np.mean(floor[np.arange(len(test_rows)), labels[test_rows]]):>12.6f}"
    )
    for name, make, probabilities in REAL_CASES:
        data = prob if probabilities else log_prob
        estimator = make()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the unpenalised fits warn (fallback ridge)
            start = time.perf_counter()
            estimator.fit(data[fit_rows], labels[fit_rows])
            seconds = time.perf_counter() - start
        print(
            f"{name:<44} {seconds:>8.2f} {estimator.n_passes_:>7d} "
            f"{objective(estimator, data[fit_rows], labels[fit_rows]):>20.15g} "
            f"{held_out_nll(estimator, data[test_rows], labels[test_rows]):>12.6f}"
        )


def objective(estimator, data, labels) -> float:
    """The fitted map's penalised objective (with any fallback ridge), in one float64 pass."""
    from calibration_toolbox.recalibration._linear_fit import PenalisedNLL
    from calibration_toolbox.recalibration._softmax_nll import SoftmaxNLL

    n_classes = data.shape[1]
    features = data if not hasattr(estimator, "eps_") else np.log(np.maximum(data, estimator.eps_))
    off_diagonal = np.full(
        (n_classes, n_classes), estimator.reg_lambda / n_classes / (n_classes - 1)
    )
    np.fill_diagonal(off_diagonal, 0.0)
    intercept = np.full(n_classes, estimator.reg_mu / n_classes)
    ridge = estimator.ridge_
    penalised = PenalisedNLL(
        SoftmaxNLL(features, labels, None, False),
        off_diagonal + ridge / n_classes**2,
        intercept + ridge / n_classes,
    )
    return penalised.total(estimator.coef_, estimator.intercept_)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--real", action="store_true", help="also fit the real predictions")
    args = parser.parse_args()
    header = (
        f"{'case':<38} {'log_softmax s':>13} {'fit s':>8} {'passes':>7} "
        f"{'per pass':>8} {'best':>6} {'median [25%, 75%]':>19}"
    )
    print(header)
    print("-" * len(header))
    for name, cls, n_samples, n_classes in CASES:
        logits, labels = make_logits(n_samples, n_classes)
        fitted: list = []
        ratio = interleaved_ratio(
            lambda cls=cls, logits=logits, labels=labels, fitted=fitted: fitted.append(
                cls().fit(logits, labels)
            ),
            lambda logits=logits: log_softmax(logits, axis=1),
            args.repeats,
        )
        label = f"{name} {n_samples:,}x{n_classes:,} f32"
        passes = fitted[-1].n_passes_
        print(
            f"{label:<38} {ratio.floor_best:>13.3f} {ratio.ours_best:>8.3f} {passes:>7d} "
            f"{ratio.best / passes:>8.2f} {ratio.best:>6.1f} "
            f"{ratio.median:>7.1f} [{ratio.low:.1f}, {ratio.high:.1f}]"
        )
    if args.real:
        real_rows()


if __name__ == "__main__":
    main()
