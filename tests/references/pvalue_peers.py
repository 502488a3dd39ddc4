"""Peer references for the tests with p-values of ``stats`` and for the clinical summary.

Prints the literals ``MCGRAD`` and ``MAPIE`` of ``tests/test_stats_tests.py`` and
``STATSMODELS``, ``CALZONE`` and ``PYCALEVA`` of ``tests/metrics/test_clinical.py``.  Rerun
from the repository root, in a scratch environment of Python 3.11 (``pip install
torch==2.13.0`` first, the CPU build, then ``pip install mapie==1.6.0 mcgrad==0.1.5
statsmodels==0.15.0 calzone-tool==0.1.0 pycaleva==0.8.2``)::

    python tests/references/pvalue_peers.py

Versions of the stored run: python 3.11.7, numpy 2.4.6, scipy 1.17.1, mapie 1.6.0,
mcgrad 0.1.5, statsmodels 0.15.0, calzone-tool 0.1.0, pycaleva 0.8.2.

For each data set, with ``s`` the scores (float64), ``y`` the 0/1 targets (int64) and ``w``
the weights where the set has them:

- mcgrad: ``mcgrad.metrics.ecce(y, s, w)`` (the range of the walk, origin included),
  ``_ecce_standard_deviation(s, y, w)`` (sigma), ``ecce_sigma(y, s, w)`` and
  ``ecce_pvalue(y, s, w)``;
- MAPIE (no weights): ``mapie.metrics.calibration``'s ``kolmogorov_smirnov_statistic``,
  ``kolmogorov_smirnov_p_value``, ``kuiper_statistic``, ``kuiper_p_value``,
  ``spiegelhalter_statistic`` and ``spiegelhalter_p_value``, each of ``(y, s)``.

For the clinical summary (``calibration_toolbox.metrics.clinical``), on
:func:`clinical_sets` (a risk ``p`` per row and the 0/1 event ``y``):

- statsmodels: ``GLM(y, [1, logit p], Binomial())`` (the slope and its standard error) and
  ``GLM(y, 1, Binomial(), offset=logit p)`` (the intercept with the slope fixed at 1),
  ``freq_weights=w`` where the set has weights, fitted by IRLS to ``tol=1e-13``;
- calzone-tool 0.1.0: ``cox_regression_analysis`` (slope; intercept with ``fix_slope``),
  ``spiegelhalter_z_test`` (two-sided), and ``lowess_regression_analysis``'s ICI (statsmodels
  lowess, span 0.5, no robustness iterations);
- pycaleva 0.8.2: ``CalibrationEvaluator(y, p, outsample=False, n_groups=10)``'s
  ``hosmerlemeshow()`` (pandas ``qcut`` deciles), on the clinical sets and on the sets
  above (named ``walk_<name>``).

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


def clinical_sets() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """Seeded binary risks (float64), events (int64) and weights or None, by name.

    ``recalibrate``: 1,000 log-odds x ~ N(0, 1.5), the model says expit(x), the events
    follow expit(0.3 + 0.8 x) (``default_rng(301)``); ``calibrated``: 2,000 log-odds
    N(-1, 1), events from the model (``default_rng(302)``); ``weighted``: 600 rows as
    ``recalibrate`` with integer weights 1 to 4 (``default_rng(303)``).
    """
    from scipy.special import expit

    sets = {}
    rng = np.random.default_rng(301)
    x = rng.normal(0, 1.5, 1_000)
    events = (rng.random(1_000) < expit(0.3 + 0.8 * x)).astype(np.int64)
    sets["recalibrate"] = expit(x), events, None
    rng = np.random.default_rng(302)
    x = rng.normal(-1, 1, 2_000)
    sets["calibrated"] = expit(x), (rng.random(2_000) < expit(x)).astype(np.int64), None
    rng = np.random.default_rng(303)
    x = rng.normal(0, 1.5, 600)
    events = (rng.random(600) < expit(0.3 + 0.8 * x)).astype(np.int64)
    sets["weighted"] = expit(x), events, rng.integers(1, 5, 600).astype(np.float64)
    return sets


def _statsmodels_fits(risks, events, weights):
    import statsmodels.api as sm
    from scipy.special import logit

    x = logit(risks)
    family = sm.families.Binomial()
    both = sm.GLM(events, np.column_stack([np.ones_like(x), x]), family, freq_weights=weights)
    both = both.fit(tol=1e-13)
    offset = sm.GLM(events, np.ones_like(x), family, offset=x, freq_weights=weights)
    offset = offset.fit(tol=1e-13)
    return both.params[1], both.bse[1], offset.params[0], offset.bse[0]


def clinical_main() -> None:
    from calzone import metrics as calzone
    from pycaleva import CalibrationEvaluator

    print("# name: (slope, its se, intercept with slope 1, its se), statsmodels GLM")
    print("STATSMODELS = {")
    for name, (risks, events, weights) in clinical_sets().items():
        values = _statsmodels_fits(risks, events, weights)
        print(f'    "{name}": {tuple(float(value) for value in values)!r},')
    print("}")
    print("# name: (slope, intercept with fix_slope, Spiegelhalter z, its p, lowess ICI)")
    print("CALZONE = {")
    for name, (risks, events, weights) in clinical_sets().items():
        if weights is not None:
            continue
        matrix = np.column_stack([1 - risks, risks])
        slope, _, _, _ = calzone.cox_regression_analysis(events.copy(), matrix)
        _, intercept, _, _ = calzone.cox_regression_analysis(events.copy(), matrix, fix_slope=True)
        z, z_p = calzone.spiegelhalter_z_test(events.copy(), matrix)
        ici = calzone.lowess_regression_analysis(events.copy(), matrix)[0]
        values = (slope, intercept, z, z_p, ici)
        print(f'    "{name}": {tuple(float(value) for value in values)!r},')
    print("}")
    print("# name: (Hosmer-Lemeshow statistic, p, dof), pycaleva, 10 qcut groups")
    print("PYCALEVA = {")
    sets = {**clinical_sets(), **{f"walk_{k}": v for k, v in synthetic_sets().items()}}
    for name, (risks, events, weights) in sets.items():
        if weights is not None:
            continue
        evaluator = CalibrationEvaluator(events, risks, outsample=False, n_groups=10)
        result = evaluator.hosmerlemeshow(verbose=False)
        values = (float(result.statistic), float(result.pvalue), int(result.dof))
        print(f'    "{name}": {values!r},')
    print("}")


def main() -> None:
    from importlib.metadata import version

    from _common import versions
    from mapie.metrics import calibration as mapie
    from mcgrad import metrics as mcgrad

    sets = synthetic_sets()
    print("#", versions("numpy", "scipy"), end="")
    names = ("mapie", "mcgrad", "statsmodels", "calzone-tool", "pycaleva")
    print("".join(f", {name} {version(name)}" for name in names))
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
    clinical_main()


if __name__ == "__main__":
    main()
