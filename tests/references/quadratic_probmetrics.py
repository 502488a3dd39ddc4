"""probmetrics' quadratic scaling: the literals PROBMETRICS_QUADRATIC of test_platt_quadratic.py.

Rerun from the repository root in a scratch environment (probmetrics' logistic calibrators
import scikit-learn; the package needs torch, whose CPU wheel is installed first)::

    pip install torch==2.13.0
    pip install probmetrics==1.3.0 numba
    python tests/references/quadratic_probmetrics.py

Versions of the stored run: python 3.11.7, numpy 2.4.6, scipy 1.17.1, scikit-learn 1.9.1,
torch 2.13.0+cpu, probmetrics 1.3.0.

probmetrics' ``get_calibrator("quadratic-scaling")`` is its ``BinaryLogisticCalibrator(type=
"quadratic")``: scikit-learn's ``LogisticRegression(penalty=None, fit_intercept=False,
solver="lbfgs")`` (tolerance 1e-4) on the features ``[1, l, l^2]`` with ``l = log(p) -
log1p(-p)`` of the positive-class probability, which it first casts to float32 (its
``utils.flatten_binary_probs``), so ``l`` and ``l^2`` are float32 values and its
coefficients are good to about 1e-6.  It is fitted on
``[1 - expit(z), expit(z)]`` of :func:`bent_sets` and prints, per set, its coefficients
``(b, a, a_2)`` and its mean log-loss on the fitted rows; the test fits
``PlattScaling(quadratic=True, smoothed_targets=False)`` on the same ``l``.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit


def bent_sets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Seeded binary (P(y = 1), labels) sets whose true logit map bends."""
    sets = {}
    for name, (seed, n, bend) in {"bent": (3, 2000, 0.05), "straight": (4, 1500, 0.0)}.items():
        rng = np.random.default_rng(seed)
        z = rng.normal(scale=3.0, size=n)
        labels = (rng.uniform(size=n) < expit(0.3 * z + bend * z * z - 0.5)).astype(np.int64)
        sets[name] = expit(z), labels
    return sets


def logit_feature(p: np.ndarray) -> np.ndarray:
    """``log(p) - log1p(-p)`` in float32, as probmetrics computes it (none reaches its floor)."""
    p32 = p.astype(np.float32)
    return (np.log(p32) - np.log1p(-p32)).astype(np.float64)


def main() -> None:
    from importlib.metadata import version

    from _common import versions
    from probmetrics.calibrators import get_calibrator

    print(
        "#",
        versions("numpy", "scipy", "sklearn", "torch") + f", probmetrics {version('probmetrics')}",
    )
    print("PROBMETRICS_QUADRATIC = {")
    for name, (p, labels) in bent_sets().items():
        prob = np.stack([1 - p, p], axis=1)
        calibrator = get_calibrator("quadratic-scaling").fit(prob, labels)
        coef = calibrator.cal_.coef_[0]
        q = calibrator.predict_proba(prob)[:, 1]
        loss = -np.mean(np.where(labels == 1, np.log(q), np.log1p(-q)))
        print(f'    "{name}": ({[float(c) for c in coef]!r}, {float(loss)!r}),')
    print("}")


if __name__ == "__main__":
    main()
