"""Peer references for VennAbersCalibration: the ``venn-abers`` package's IVAP.

Prints the values that ``tests/recalibration/test_venn_abers.py`` holds in ``VENN_ABERS``.
Rerun from the repository root in a scratch environment with the pins below (venn-abers
brings scikit-learn)::

    python3 -m venv venn-venv
    venn-venv/bin/pip install venn-abers==1.5.4 numpy==2.4.6 scipy==1.17.1 scikit-learn==1.9.1
    venn-venv/bin/python tests/references/venn_abers_peers.py [DATA]

Versions of the stored run: python 3.11.7, numpy 2.4.6, scipy 1.17.1, scikit-learn 1.9.1,
venn-abers 1.5.4.

The peer is ``venn_abers.venn_abers.VennAbers`` (``fit(p_cal, y_cal)``,
``predict_proba(p_test)`` returning the merged ``p1 / (1 - p0 + p1)`` and the pair
``(p0, p1)``) and, for K > 2 classes one-vs-rest,
``venn_abers.venn_abers.predict_proba_prefitted_va(..., va_tpe='one_vs_rest')``.
Every input is passed as float64: the peer computes in the dtype of its input, and on the
float32 files its slopes carry float32 rounding (about 1e-7).

Sets:

(a) ``synthetic_binary(seed)``, seeds 0, 1, 2: 300 calibration scores rounded to 2 decimals
    (so ties), labels drawn with probability ``s**2``; 200 test scores, half of them equal to
    calibration scores.
(b) the first 2,000 rows of ``lenet-5-cifar-10``: rows 0-999 calibrate, rows 1,000-1,999 are
    the test rows; one-vs-rest over the 10 classes, and one-vs-one (``va_tpe='one_vs_one'``:
    the 45 pairs ``i < j`` on the rows of class i or j, score ``p_j / (p_i + p_j)``, coupled
    by ``p_k = 1 / (sum_l 1 / r_kl - (K - 2))`` and normalised).

For each set the script prints checksums of the peer's output (the sums of ``p0``, ``p1``
and the merged probabilities, and their values on the first three test rows).
"""

from __future__ import annotations

import sys
from importlib import metadata

import numpy as np
from _common import data_dir, load_real, versions


def synthetic_binary(seed: int) -> tuple[np.ndarray, ...]:
    """(calibration scores, labels, test scores) of set (a)."""
    rng = np.random.default_rng(seed)
    scores = np.round(rng.random(300), 2)
    labels = (rng.random(300) < scores**2).astype(np.int64)
    test = np.concatenate([scores[:100], rng.random(100)])
    return scores, labels, test


def real_slice(folder) -> tuple[np.ndarray, ...]:
    """(calibration probabilities, labels, test probabilities) of set (b), as float64."""
    prob, labels = load_real(folder, "lenet-5-cifar-10")
    prob = prob[:2000].astype(np.float64)
    return prob[:1000], labels[:1000], prob[1000:2000]


def main() -> None:
    from venn_abers.venn_abers import VennAbers, predict_proba_prefitted_va

    print(versions("numpy", "scipy", "sklearn") + f", venn-abers {metadata.version('venn-abers')}")
    for seed in range(3):
        scores, labels, test = synthetic_binary(seed)
        as_pairs = lambda s: np.stack([1 - s, s], axis=1)  # noqa: E731
        va = VennAbers().fit(as_pairs(scores), labels)
        merged, pair = va.predict_proba(as_pairs(test))
        sums = [float(pair[:, 0].sum()), float(pair[:, 1].sum()), float(merged[:, 1].sum())]
        print(f"binary seed {seed}: sum p0 {sums[0]!r}, sum p1 {sums[1]!r}, sum p {sums[2]!r}")
        print(f"  first rows p0 {pair[:3, 0].tolist()!r} p1 {pair[:3, 1].tolist()!r}")
    cal, cal_labels, test = real_slice(data_dir())
    probs, pairs = predict_proba_prefitted_va(cal, cal_labels, test, va_tpe="one_vs_rest")
    p0 = np.stack([pair[:, 0] for pair in pairs], axis=1)
    p1 = np.stack([pair[:, 1] for pair in pairs], axis=1)
    print(f"lenet-5-cifar-10 one-vs-rest: sum p0 {float(p0.sum())!r}, sum p1 {float(p1.sum())!r}")
    print(f"  sum of squared probabilities {float((probs**2).sum())!r}")
    print(f"  first row probabilities {probs[0].tolist()!r}")
    probs, pairs = predict_proba_prefitted_va(cal, cal_labels, test, va_tpe="one_vs_one")
    p0 = np.stack([pair[:, 0] for pair in pairs], axis=1)
    p1 = np.stack([pair[:, 1] for pair in pairs], axis=1)
    print(f"lenet-5-cifar-10 one-vs-one: sum p0 {float(p0.sum())!r}, sum p1 {float(p1.sum())!r}")
    print(f"  sum of squared probabilities {float((probs**2).sum())!r}")
    print(f"  first row probabilities {probs[0].tolist()!r}")


if __name__ == "__main__":
    sys.exit(main())
