"""Peer references for the tests with p-values of ``calibration_toolbox.stats``.

Prints the literals ``MCGRAD`` and ``MAPIE`` of ``tests/test_stats_tests.py``.  Rerun from
the repository root, in a scratch environment of Python 3.11 (``pip install torch==2.13.0``
first, the CPU build, then ``pip install mapie==1.6.0 mcgrad==0.1.5``)::

    python tests/references/pvalue_peers.py

Versions of the stored run: python 3.11.7, numpy 2.4.6, scipy 1.17.1, mapie 1.6.0,
mcgrad 0.1.5.

For each data set, with ``s`` the scores (float64), ``y`` the 0/1 targets (int64) and ``w``
the weights where the set has them:

- mcgrad: ``mcgrad.metrics.ecce(y, s, w)`` (the range of the walk, origin included),
  ``_ecce_standard_deviation(s, y, w)`` (sigma), ``ecce_sigma(y, s, w)`` and
  ``ecce_pvalue(y, s, w)``;
- MAPIE (no weights): ``mapie.metrics.calibration``'s ``kolmogorov_smirnov_statistic``,
  ``kolmogorov_smirnov_p_value``, ``kuiper_statistic``, ``kuiper_p_value``,
  ``spiegelhalter_statistic`` and ``spiegelhalter_p_value``, each of ``(y, s)``.

Data sets (:func:`synthetic_sets`, all seeded, no tied scores; the test imports it):

- ``calibrated``: 2,000 scores uniform on (0, 1), target drawn with probability the score
  (``default_rng(201)``);
- ``overconfident``: 2,000 scores uniform on (0.5, 1), target with probability
  ``0.5 + 0.8 (s - 0.5)`` (``default_rng(202)``);
- ``underconfident``: 300 scores uniform on (0.2, 0.8), target with probability
  ``s + 0.15``: the walk keeps one sign, so a walk without its origin (MAPIE's) has a
  smaller range (``default_rng(203)``);
- ``weighted``: 1,000 scores Beta(2, 5), calibrated targets, weights uniform on (0.1, 3)
  (``default_rng(204)``);
- ``small``: 40 scores uniform on (0, 1), target with probability ``s**2``
  (``default_rng(205)``).
"""

from __future__ import annotations

import numpy as np


def synthetic_sets() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """The seeded (scores float64, targets int64, weights or None) sets, by name."""
    sets = {}
    rng = np.random.default_rng(201)
    scores = rng.random(2_000)
    sets["calibrated"] = scores, (rng.random(2_000) < scores).astype(np.int64), None
    rng = np.random.default_rng(202)
    scores = rng.uniform(0.5, 1.0, 2_000)
    rate = 0.5 + 0.8 * (scores - 0.5)
    sets["overconfident"] = scores, (rng.random(2_000) < rate).astype(np.int64), None
    rng = np.random.default_rng(203)
    scores = rng.uniform(0.2, 0.8, 300)
    sets["underconfident"] = scores, (rng.random(300) < scores + 0.15).astype(np.int64), None
    rng = np.random.default_rng(204)
    scores = rng.beta(2.0, 5.0, 1_000)
    targets = (rng.random(1_000) < scores).astype(np.int64)
    sets["weighted"] = scores, targets, rng.uniform(0.1, 3.0, 1_000)
    rng = np.random.default_rng(205)
    scores = rng.random(40)
    sets["small"] = scores, (rng.random(40) < scores**2).astype(np.int64), None
    return sets


def main() -> None:
    from importlib.metadata import version

    from _common import versions
    from mapie.metrics import calibration as mapie
    from mcgrad import metrics as mcgrad

    sets = synthetic_sets()
    print("#", versions("numpy", "scipy"), end="")
    print(f", mapie {version('mapie')}, mcgrad {version('mcgrad')}")
    print("# name: (ecce, sigma, ecce_sigma, ecce_pvalue)")
    print("MCGRAD = {")
    for name, (scores, targets, weights) in sets.items():
        values = (
            mcgrad.ecce(targets, scores, weights),
            mcgrad._ecce_standard_deviation(scores, targets, weights),
            mcgrad.ecce_sigma(targets, scores, weights),
            mcgrad.ecce_pvalue(targets, scores, weights),
        )
        print(f'    "{name}": {tuple(float(value) for value in values)!r},')
    print("}")
    print("# name: (KS statistic, KS p, Kuiper statistic, Kuiper p, Spiegelhalter Z, its p)")
    print("MAPIE = {")
    for name, (scores, targets, weights) in sets.items():
        if weights is not None:
            continue
        values = (
            mapie.kolmogorov_smirnov_statistic(targets, scores),
            mapie.kolmogorov_smirnov_p_value(targets, scores),
            mapie.kuiper_statistic(targets, scores),
            mapie.kuiper_p_value(targets, scores),
            mapie.spiegelhalter_statistic(targets, scores),
            mapie.spiegelhalter_p_value(targets, scores),
        )
        print(f'    "{name}": {tuple(float(value) for value in values)!r},')
    print("}")


if __name__ == "__main__":
    main()
