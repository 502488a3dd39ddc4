"""Peer references for (score, target) pairs: scikit-learn's and torchmetrics' binned errors.

Writes ``tests/data/pairs_peer_reference.npz``, read by ``tests/test_pairs.py``, and prints
every value.  Rerun from the repository root, in the *peers* environment of
``tests/references/requirements.txt``::

    python tests/references/pairs_peers.py [OUTPUT]

Versions of the stored run: python 3.11.7, numpy 2.4.6, scipy 1.17.1, scikit-learn 1.9.1,
torch 2.13.0+cpu, torchmetrics 1.9.0.

Data sets (all seeded; the small ones are stored, the large one is regenerated):

(a) the example of issue 13: 200,000 confidences uniform on (0.05, 1), correct with
    probability ``confidence**2`` (``numpy.random.default_rng(13)``).  Not stored (1.8 MB):
    :func:`issue_example` rebuilds it and the npz keeps the SHA-256 of its bytes, which the
    test checks before using it.
(b) a binary classifier's P(y = 1) on both sides of 0.5: ``z ~ N(0, 2)``, score
    ``sigmoid(2 z)`` (overconfident), label drawn from ``sigmoid(z)``; 5,000 rows
    (``default_rng(1313)``).  Stored, with the log-odds ``2 z``.
(c) 22 hand-written scores: the 16 edges of 15 equal-width bins, exact 0.0 and 1.0 repeated,
    and a few interior scores, to show where the conventions differ.  Stored.

Peers, on each set with 15 bins:

- ``sklearn.calibration.calibration_curve(y, s, n_bins=15, strategy='uniform')`` and
  ``strategy='quantile'``: ``prob_true`` and ``prob_pred`` of the non-empty bins.  Both
  strategies assign a score to bin ``searchsorted(edges[1:-1], s)`` (side 'left'), i.e.
  bins ``(lo, hi]`` with 0 in the first bin, as this library's equal-width bins.  Its
  quantile edges are ``np.percentile`` (linear interpolation); this library's equal-mass
  edges are order statistics ``s_(round_half_even(n j / B))`` with bins ``[lo, hi)``.  The
  edges differ, but when ``n % B == 0`` and no scores are tied both partitions put the
  ``n j / B`` smallest scores below edge j, so the bins coincide: the quantile strategy is
  also run on the first 199,995 rows of (a) and the first 4,995 rows of (b).  Its
  percentiles are taken at ``np.linspace(0, 1, 16) * 100``, not ``np.linspace(0, 100, 16)``;
  the two differ in the last place, which moves edges that fall on a score (set (c)).
- ``torchmetrics.functional.classification.binary_calibration_error(
  torch.tensor(s, dtype=torch.float64), torch.tensor(y), n_bins=15, norm=...)`` for norm
  'l1', 'l2' and 'max' (float64 throughout on this path).  Its bins are ``[lo, hi)``
  (``bucketize(right=True) - 1``) with 1.0 alone in a 16th bin, on edges
  ``torch.linspace(0, 1, 16, dtype=float64)``, whose edge 11 is one unit in the last place
  above ``np.linspace``'s (so a score of exactly ``np.linspace(0, 1, 16)[11]`` stays in the
  lower bin there too).

Also printed and stored for (a): the binned error of confidence against correct by a loop
over the 15 bins (``(lo, hi]``, ``math.fsum``; the issue's 0.176) and what the 1-D call
``calibration_toolbox.ECE(confidence, correct)`` returned when the script was run (the
issue's silent 0.003, a top-label reading of P(y = 1); once that call is refused, the same
reading through ``ECE(np.column_stack([1 - confidence, confidence]), correct)``).
The stored run gives 0.17251 for the loop and 0.00326 for the 1-D call.  The issue quotes
0.176 for the loop: that is another draw of the same recipe (the population value is
E[c - c^2] = 0.17417 and seeds 0..9 spread from 0.1730 to 0.1764; seed 0 gives 0.1764).
"""

from __future__ import annotations

import hashlib
import math
import sys
from pathlib import Path

import numpy as np
from scipy.special import expit

REPOSITORY = Path(__file__).resolve().parents[2]
OUTPUT = REPOSITORY / "tests" / "data" / "pairs_peer_reference.npz"
N_BINS = 15
NORMS = ("l1", "l2", "max")


def issue_example() -> tuple[np.ndarray, np.ndarray]:
    """Data set (a): (confidence float64, correct int64) of issue 13."""
    rng = np.random.default_rng(13)
    confidence = rng.uniform(0.05, 1.0, 200_000)
    correct = (rng.random(200_000) < confidence**2).astype(np.int64)
    return confidence, correct


def sha256(*arrays: np.ndarray) -> str:
    """Hex SHA-256 of the arrays' bytes (C order, native little-endian)."""
    digest = hashlib.sha256()
    for array in arrays:
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def binary_classifier() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Data set (b): (log-odds 2 z, score sigmoid(2 z), label drawn from sigmoid(z))."""
    rng = np.random.default_rng(1313)
    z = rng.normal(0.0, 2.0, 5_000)
    labels = (rng.random(5_000) < expit(z)).astype(np.int64)
    return 2.0 * z, expit(2.0 * z), labels


def edge_case() -> tuple[np.ndarray, np.ndarray]:
    """Data set (c): every edge of 15 equal-width bins, 0.0 and 1.0 repeated, a few others."""
    scores = np.concatenate([np.linspace(0.0, 1.0, N_BINS + 1), [0.0, 1.0, 1.0, 0.5, 0.03, 0.97]])
    labels = np.array([0, 0, 1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1])
    return scores, labels


def loop_binned_error(scores: np.ndarray, targets: np.ndarray, p: float) -> float:
    """Binned error on 15 equal-width (lo, hi] bins (0 in the first), one bin at a time."""
    edges = np.linspace(0.0, 1.0, N_BINS + 1)
    n = len(scores)
    terms, gaps = [], []
    for b in range(N_BINS):
        lower = -math.inf if b == 0 else edges[b]
        members = (scores > lower) & (scores <= edges[b + 1])
        count = int(members.sum())
        if count == 0:
            continue
        gap = abs(math.fsum(targets[members]) / count - math.fsum(scores[members]) / count)
        gaps.append(gap)
        terms.append(count / n * gap**p if p != math.inf else 0.0)
    if p == math.inf:
        return max(gaps)
    return math.fsum(terms) ** (1.0 / p)


def peers(name: str, scores: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """Every peer value on one data set, keyed ``<name>_<what>``."""
    import torch
    from sklearn.calibration import calibration_curve
    from torchmetrics.functional.classification import binary_calibration_error

    found = {}
    for strategy in ("uniform", "quantile"):
        prob_true, prob_pred = calibration_curve(labels, scores, n_bins=N_BINS, strategy=strategy)
        found[f"{name}_sklearn_{strategy}_prob_true"] = prob_true
        found[f"{name}_sklearn_{strategy}_prob_pred"] = prob_pred
    for norm in NORMS:
        value = binary_calibration_error(
            torch.tensor(scores, dtype=torch.float64),
            torch.tensor(labels),
            n_bins=N_BINS,
            norm=norm,
        )
        assert value.dtype == torch.float64, value.dtype
        found[f"{name}_torchmetrics_{norm}"] = np.float64(value.item())
    for norm, p in zip(NORMS, (1.0, 2.0, math.inf), strict=True):
        found[f"{name}_loop_{norm}"] = np.float64(loop_binned_error(scores, labels, p))
    return found


def quantile_prefix(name: str, scores: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    """scikit-learn's quantile strategy on the first n - n % 15 rows (bins coincide there)."""
    from sklearn.calibration import calibration_curve

    n = len(scores) - len(scores) % N_BINS
    prob_true, prob_pred = calibration_curve(
        labels[:n], scores[:n], n_bins=N_BINS, strategy="quantile"
    )
    return {
        f"{name}_quantile_prefix_rows": np.int64(n),
        f"{name}_sklearn_quantile_prefix_prob_true": prob_true,
        f"{name}_sklearn_quantile_prefix_prob_pred": prob_pred,
    }


def todays_one_dimensional_ece(confidence: np.ndarray, correct: np.ndarray) -> float:
    """``calibration_toolbox.ECE(confidence, correct)`` of this checkout (issue 13's trap).

    Once that call is refused, the same reading through the two columns ``[1 - p, p]``.
    """
    sys.path.insert(0, str(REPOSITORY))
    import calibration_toolbox as ct

    try:
        return ct.ECE(confidence, correct)
    except ValueError as error:
        print(f"ECE(confidence, correct) is refused: {error}")
        return ct.ECE(np.column_stack([1.0 - confidence, confidence]), correct)


def main() -> None:
    # The peers are imported here and in the functions that call them, so that pytest can
    # collect this file (--doctest-modules) where they are not installed.
    import sklearn
    import torch
    import torchmetrics

    output = Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT
    print(
        f"python {sys.version.split()[0]}, numpy {np.__version__}, "
        f"scikit-learn {sklearn.__version__}, torch {torch.__version__}, "
        f"torchmetrics {torchmetrics.__version__}"
    )
    confidence, correct = issue_example()
    logodds_b, scores_b, labels_b = binary_classifier()
    scores_c, labels_c = edge_case()
    stored = {
        "a_sha256": np.str_(sha256(confidence, correct)),
        "b_logodds": logodds_b,
        "b_scores": scores_b,
        "b_labels": labels_b,
        "c_scores": scores_c,
        "c_labels": labels_c,
        "a_ece_one_dimensional": np.float64(todays_one_dimensional_ece(confidence, correct)),
        "torchmetrics_edges": torch.linspace(0.0, 1.0, N_BINS + 1, dtype=torch.float64).numpy(),
    }
    for name, scores, labels in (
        ("a", confidence, correct),
        ("b", scores_b, labels_b),
        ("c", scores_c, labels_c),
    ):
        stored.update(peers(name, scores, labels))
    stored.update(quantile_prefix("a", confidence, correct))
    stored.update(quantile_prefix("b", scores_b, labels_b))
    np.set_printoptions(precision=17, linewidth=100)
    for key, value in stored.items():
        if key not in ("b_logodds", "b_scores", "b_labels", "c_scores", "c_labels"):
            print(f"{key} = {value!r}")
    np.savez_compressed(output, **stored)
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
