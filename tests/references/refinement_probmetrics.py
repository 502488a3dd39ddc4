"""Peer references for ``refinement_decomposition``: probmetrics' calibration/refinement split.

Prints the literals ``PROBMETRICS`` of ``tests/recalibration/test_refinement.py``.  Rerun
from the repository root, in a scratch environment with probmetrics (it brings torch and
scikit-learn)::

    pip install probmetrics==1.3.0 numba numpy==2.4.6 scipy==1.17.1
    python tests/references/refinement_probmetrics.py [DATA]

Versions of the stored run: python 3.11.7, numpy 2.4.6, scipy 1.17.1, probmetrics 1.3.0,
torch 2.14.1.

probmetrics' ``MetricsWithCalibration`` with ``get_calibrator("temp-scaling")`` (no
mixture with the uniform prediction: its headline ``ts-mix`` adds one) and the
``AllSplitter`` (fit and score on all rows), over ``CombinedMetrics([LogLoss(),
BrierLoss()])``, on float64 tensors of the probabilities; the values are its
``calib-err_*`` and ``refinement_*`` results (``logloss`` and ``brier``).  Its fit is a
30-step bisection of log(1 / T) on [-16, 16] (within 1.5e-8 of the optimum).

Data sets (:func:`synthetic_sets`, seeded; the test imports it):

- ``three_classes``: 3,000 rows, softmax of ``3 (onehot(y) + N(0, 1))`` (over-confident,
  ``default_rng(0)``);
- ``binary``: 2,000 rows, softmax of ``0.5 (onehot(y) + N(0, 1))`` (under-confident,
  ``default_rng(1)``);
- the real file ``lenet-5-cifar-10`` (float64 of its probabilities; no entry below 1e-15,
  where the two libraries' floors of log p differ).
"""

from __future__ import annotations

import numpy as np

REAL = ("lenet-5-cifar-10",)


def synthetic_sets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The seeded (float64 probabilities, int64 labels) sets, by name."""
    sets = {}
    for name, (seed, n, k, scale) in {
        "three_classes": (0, 3000, 3, 3.0),
        "binary": (1, 2000, 2, 0.5),
    }.items():
        rng = np.random.default_rng(seed)
        labels = rng.integers(0, k, n)
        logits = scale * (np.eye(k)[labels] + rng.normal(size=(n, k)))
        logits -= logits.max(axis=1, keepdims=True)
        prob = np.exp(logits)
        sets[name] = prob / prob.sum(axis=1, keepdims=True), labels
    return sets


def main() -> None:
    from importlib.metadata import version

    import torch
    from _common import data_dir, load_real, versions
    from probmetrics.calibrators import get_calibrator
    from probmetrics.distributions import CategoricalDirac, CategoricalProbs
    from probmetrics.metrics import BrierLoss, CombinedMetrics, LogLoss, MetricsWithCalibration
    from probmetrics.splitters import AllSplitter

    sets = synthetic_sets()
    folder = data_dir()
    for name in REAL:
        prob, labels = load_real(folder, name)
        sets[name] = prob.astype(np.float64), labels
    metrics = MetricsWithCalibration(
        CombinedMetrics([LogLoss(), BrierLoss()]),
        get_calibrator("temp-scaling"),
        val_splitter=AllSplitter(),
        random_state=0,
    )
    print("#", versions("numpy", "scipy") + f", probmetrics {version('probmetrics')}")
    print("PROBMETRICS = {")
    for name, (prob, labels) in sets.items():
        assert prob.min() >= 1e-15, name
        y_true = CategoricalDirac(torch.as_tensor(labels), n_classes=prob.shape[1])
        results = metrics.compute_all(y_true, CategoricalProbs(torch.as_tensor(prob)))
        print(f'    "{name}": {{')
        for key, value in results.items():
            part, score = key.split("_")[:2]  # the key without its calibrator's suffix
            print(f'        "{part}_{score}": {float(value)!r},')
        print("    },")
    print("}")


if __name__ == "__main__":
    main()
