"""Peer values of the multi-label measures: scikit-learn and torchmetrics on seeded sets.

Environment: a scratch Python 3.11 venv outside the repository,
``pip install torch==2.13.0`` (the CPU wheel) then
``pip install torchmetrics==1.9.0 scikit-learn==1.9.1 numpy==2.4.6 scipy==1.17.1``.
Run from the repository root: ``python tests/references/multilabel_peers.py``; it prints
``MULTILABEL_PEERS``, the literal that ``tests/metrics/test_multilabel.py`` holds.

* scikit-learn 1.9.1: ``brier_score_loss`` and ``log_loss`` (``labels=[0, 1]``) of the
  raveled (N * K,) arrays (the micro form; with every label on the same N rows it is the
  macro form too), with ``sample_weight`` repeated over each row's K pairs.
* torchmetrics 1.9.0 has no multi-label calibration error (``MultilabelCalibrationError``
  does not exist; its calibration error is binary or multiclass top-label): the per-label
  values are ``binary_calibration_error`` of each column (float64, ``n_bins=B``,
  ``norm='l1'``), averaged over the columns for the macro form, and of the raveled pairs
  for the micro form.  Its bins are ``[lo, hi)`` (ours ``(lo, hi]``): on these continuous
  scores no score lies on an edge, so the two agree.
"""

from __future__ import annotations

import numpy as np

N_BINS = 10


def synthetic_sets():
    """Seeded (prob, labels, weights) sets: (N, K) per-label probabilities, 0/1 labels."""
    sets = {}
    for name, (n, k, seed) in {"small": (40, 3, 0), "wide": (500, 7, 1)}.items():
        rng = np.random.default_rng(seed)
        truth = rng.uniform(size=(n, k))
        prob = np.clip(truth + rng.normal(scale=0.15, size=(n, k)), 0.001, 0.999)
        labels = (rng.uniform(size=(n, k)) < truth).astype(np.int64)
        weights = rng.uniform(0.1, 3.0, size=n)
        sets[name] = (prob, labels, weights)
    return sets


def _peers(prob, labels, weights):
    import torch
    from sklearn.metrics import brier_score_loss, log_loss
    from torchmetrics.functional.classification import binary_calibration_error

    k = prob.shape[1]
    pair_weights = np.repeat(weights, k)

    def torch_ece(scores, targets):
        value = binary_calibration_error(
            torch.from_numpy(scores), torch.from_numpy(targets), n_bins=N_BINS, norm="l1"
        )
        return float(value)

    per_label = [torch_ece(prob[:, j].copy(), labels[:, j].copy()) for j in range(k)]
    return {
        "brier": float(brier_score_loss(labels.ravel(), prob.ravel())),
        "brier_weighted": float(
            brier_score_loss(labels.ravel(), prob.ravel(), sample_weight=pair_weights)
        ),
        "log_loss": float(log_loss(labels.ravel(), prob.ravel(), labels=[0, 1])),
        "log_loss_weighted": float(
            log_loss(labels.ravel(), prob.ravel(), labels=[0, 1], sample_weight=pair_weights)
        ),
        "ece_macro": float(np.mean(per_label)),
        "ece_micro": torch_ece(prob.ravel().copy(), labels.ravel().copy()),
    }


def main() -> None:
    values = {name: _peers(*arrays) for name, arrays in synthetic_sets().items()}
    print("MULTILABEL_PEERS = {")
    for name, peers in values.items():
        print(f"    {name!r}: {{")
        for key, value in peers.items():
            print(f"        {key!r}: {value!r},")
        print("    },")
    print("}")


if __name__ == "__main__":
    main()
