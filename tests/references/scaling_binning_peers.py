"""Peer references for ScalingBinning: the authors' package ``uncertainty-calibration``.

Prints the values that ``tests/recalibration/test_scaling_binning.py`` holds in ``PEER``.
Rerun from the repository root in the peers environment of ``requirements.txt`` (1.), or
in a scratch environment with just the pins below::

    python3 -m venv scaling-venv
    scaling-venv/bin/pip install uncertainty-calibration==0.1.4 numpy==2.4.6 scipy==1.17.1 \
        scikit-learn==1.9.1
    scaling-venv/bin/python tests/references/scaling_binning_peers.py

Versions of the stored run: python 3.11.7, numpy 2.4.6, scipy 1.17.1, scikit-learn 1.9.1,
uncertainty-calibration 0.1.4 (imported as ``calibration``).

The peer fits all three steps on the same rows (``ScalingBinning(split='none')`` here):
``calibration.PlattBinnerCalibrator(n, 10).train_calibration(scores, labels)`` on a binary
set and ``calibration.PlattBinnerTopCalibrator(n, 10)`` on a 3-class set (the confidence
against the correctness).  Its Platt step is ``utils.get_platt_scaler``, scikit-learn's
``LogisticRegression(C=1e10, solver='lbfgs')`` on the clipped log-odds; the same call with
``get_clf=True`` gives the fitted ``(a, b)``, and ``utils.get_equal_bins`` the edges.

Sets (``scaling_sets()``, which the test imports): 600 rows, so that 10 bins of 60 rows
are the same partition under ``np.array_split`` and Nixon's ``round(n j / B)``.

For each set the script prints ``a``, ``b``, the peer's edges (its 9 midpoints and 1.0),
its 10 bin means, and its output on ``TEST_POINTS`` (binary) or on the first 6 rows
(top-label: the confidence only).
"""

from __future__ import annotations

import numpy as np

N_ROWS = 600
N_BINS = 10
TEST_POINTS = np.array([0.03, 0.2, 0.35, 0.5, 0.65, 0.8, 0.97])


def scaling_sets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{'binary': (scores (N,), labels), 'top-label': (probabilities (N, 3), labels)}``."""
    rng = np.random.default_rng(20191208)
    scores = rng.uniform(0.02, 0.98, N_ROWS)
    labels = (rng.uniform(size=N_ROWS) < scores**2).astype(np.int64)
    logits = 2.0 * rng.normal(size=(N_ROWS, 3))
    prob = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    # The label follows the probabilities tempered by 0.5: the confidences are overconfident.
    tempered = np.sqrt(prob) / np.sqrt(prob).sum(axis=1, keepdims=True)
    classes = (rng.uniform(size=(N_ROWS, 1)) > np.cumsum(tempered, axis=1)).sum(axis=1)
    return {"binary": (scores, labels), "top-label": (prob, classes.astype(np.int64))}


def main() -> None:
    import calibration
    from calibration import utils

    sets = scaling_sets()
    for name, (X, y) in sets.items():
        if name == "binary":
            scores, targets = X, y
            model = calibration.PlattBinnerCalibrator(N_ROWS, N_BINS)
            model.train_calibration(X, y)
            outputs = model.calibrate(TEST_POINTS)
        else:
            scores, targets = X.max(axis=1), X.argmax(axis=1) == y
            model = calibration.PlattBinnerTopCalibrator(N_ROWS, N_BINS)
            model.train_calibration(X, y)
            outputs = model.calibrate(X[:6])
        platt, clf = utils.get_platt_scaler(scores, targets, get_clf=True)
        bins = utils.get_equal_bins(platt(scores), num_bins=N_BINS)
        means = [float(v) for v in utils.get_discrete_calibrator(platt(scores), bins)(bins)]
        print(f"{name!r}: {{")
        print(f"    'a': {float(clf.coef_[0, 0])!r},")
        print(f"    'b': {float(clf.intercept_[0])!r},")
        print(f"    'edges': {[float(e) for e in bins]!r},")
        print(f"    'means': {means!r},")
        print(f"    'outputs': {[float(v) for v in outputs]!r},")
        print("},")


if __name__ == "__main__":
    main()
