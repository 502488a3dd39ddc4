"""probmetrics' structured matrix scaling: PROBMETRICS_SMS of test_structured_matrix.py.

Rerun from the repository root in a scratch environment (probmetrics imports scikit-learn;
the package needs torch, whose CPU wheel is installed first)::

    pip install torch==2.13.0
    pip install probmetrics==1.3.0
    python tests/references/sms_probmetrics.py [folder of the shared real predictions]

Versions of the stored run: python 3.11.7, numpy 2.4.6, scipy 1.17.1, scikit-learn 1.9.1,
torch 2.13.0+cpu, probmetrics 1.3.0.

probmetrics' ``SMSCalibrator()`` (its defaults: ridge, lambda = rho = tau = 1, the 'bfgs'
solver) first fits its ``ts-mix`` calibrator: temperature scaling of ``log p`` by 30
bisection steps on ``log(1/T)`` in [-16, 16] (``1/T`` good to about 3e-8 relative), whose
output is mixed with the uniform distribution, weight ``1/(n + 1)``.  It then casts the log
of that to float32 (``utils.multiclass_probs_to_logits``) and minimises the mean cross-entropy
of ``softmax((I + D) x + b)`` plus ``K/n`` times the sums of squares of ``b`` and of the
diagonal of ``D`` and ``K (K - 1)/n`` times that of the off-diagonal of ``D``, by torchmin's
BFGS with its default tolerances (gradient 1e-5).  It is fitted on the probabilities of
:func:`seeded_set` and on the first 3,000 rows of ``lenet-5-cifar-10``; per set it prints its
``1/T``, its ``[I + D | b]``, the mean log-loss of its predictions on the fitted rows and its
predictions for the first five rows.
"""

from __future__ import annotations

import numpy as np
from scipy.special import softmax

REAL_ROWS = 3000


def seeded_set() -> tuple[np.ndarray, np.ndarray]:
    """Seeded (logits, labels) with 4 classes: over-confident, with class offsets."""
    rng = np.random.default_rng(11)
    labels = rng.integers(0, 4, 800)
    logits = 3.0 * (np.eye(4)[labels] + rng.normal(size=(800, 4))) + [0.0, 0.5, -0.5, 1.0]
    return logits, labels


def main() -> None:
    from importlib.metadata import version

    from _common import data_dir, load_real, versions
    from probmetrics.calibrators.logistic import SMSCalibrator

    print(
        "#",
        versions("numpy", "scipy", "sklearn", "torch") + f", probmetrics {version('probmetrics')}",
    )
    logits, labels = seeded_set()
    prob, real_labels = load_real(data_dir(), "lenet-5-cifar-10")
    sets = {
        "seeded": (softmax(logits, axis=1), labels),
        "lenet-5-cifar-10": (prob[:REAL_ROWS].astype(np.float64), real_labels[:REAL_ROWS]),
    }
    np.set_printoptions(precision=17, floatmode="unique", linewidth=100)
    print("PROBMETRICS_SMS = {")
    for name, (p, y) in sets.items():
        calibrator = SMSCalibrator().fit(p, y)
        q = calibrator.predict_proba(p)
        loss = -np.mean(np.log(q[np.arange(len(y)), y]))
        print(f'    "{name}": (')
        print(f"        {float(calibrator.ts_.cal_.invtemp_)!r},")
        print(f"        {calibrator.W_.tolist()!r},")
        print(f"        {float(loss)!r},")
        print(f"        {q[:5].tolist()!r},")
        print("    ),")
    print("}")


if __name__ == "__main__":
    main()
