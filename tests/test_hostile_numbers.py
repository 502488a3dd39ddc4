"""Hostile numbers at every entry point: masked arrays, weights at float64's extremes.

The entry points are taken from the metric registry and the recalibrators' ``__all__``, so
a new metric or recalibrator is checked without editing this file.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np
import pytest

import calibration_toolbox as ct
from calibration_toolbox import CalibrationAccumulator, Scores, recalibration, stats
from calibration_toolbox import _registry as registry
from calibration_toolbox._limits import MAX_FIT_LOGIT
from calibration_toolbox.metrics._intervals import EXACT_BAND_COUNT, _large_count_quantile
from calibration_toolbox.recalibration._methods import METHODS
from tests.bounded import run_bounded
from tests.registry_calls import with_groups

RNG = np.random.default_rng(19)
N = 120
LOGITS = RNG.normal(size=(N, 3)) * 2
PROB = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)
LABELS = (RNG.random((N, 1)) > PROB.cumsum(axis=1)).sum(axis=1)  # drawn from PROB

#: the options a metric needs beyond (prob, labels), and beyond them to take weights
_REQUIRED = {
    "ToprCE": {"r": 1},
    "coverage_at_risk": {"risk": 0.3},
    "risk_at_coverage": {"coverage": 0.5},
}
# SKCE takes weights with the biased estimator and a given bandwidth only
_WEIGHTED = {"SKCE": {"estimator": "biased", "bandwidth": 0.5}}


def _read_as_multilabel(function):
    """A multi-label measure called with this module's (prob, labels): ``0.9 * prob`` as K
    independent probabilities (rows that do not sum to 1), the labels as their one-hot
    0/1 matrix (masked where the labels are)."""

    @functools.wraps(function)
    def call(prob, labels, **options):
        classes = np.arange(np.shape(prob)[1])
        if isinstance(labels, np.ma.MaskedArray):
            matrix = np.ma.masked_array(
                labels.data[:, None] == classes, mask=np.repeat(labels.mask[:, None], 3, 1)
            )
        else:
            matrix = np.asarray(labels)[:, None] == classes
        return function(0.9 * prob, matrix, **options)

    return call


def _function(row):
    function = getattr(ct, row.name)
    return _read_as_multilabel(function) if row.multilabel else function


METRICS = [
    pytest.param(_function(row), with_groups(row, PROB, _REQUIRED.get(row.name, {})), id=row.name)
    for row in registry.public()
]
WEIGHTED_METRICS = [
    pytest.param(
        _function(row),
        with_groups(row, PROB, {**_REQUIRED.get(row.name, {}), **_WEIGHTED.get(row.name, {})}),
        id=row.name,
    )
    for row in registry.public()
]
#: recalibrators fitted on probabilities; the others take logits
#: what each class is fitted on: the method table's fact (one home)
_ON_PROBABILITIES = {
    method.factory.__name__ for method in METHODS.values() if method.needs == "probabilities"
}
RECALIBRATORS = [
    pytest.param(getattr(recalibration, name), name in _ON_PROBABILITIES, id=name)
    for name in recalibration.__all__
    if isinstance(getattr(recalibration, name), type)
    and issubclass(getattr(recalibration, name), recalibration.Recalibrator)
    and name != "Recalibrator"
]
MASKED = "is a masked array \\(numpy.ma\\), whose mask would be ignored"


def masked(values: np.ndarray) -> np.ma.MaskedArray:
    """``values`` with its first row masked."""
    array = np.ma.masked_array(values, mask=np.zeros(np.shape(values), dtype=bool))
    array.mask[0] = True
    return array


@pytest.mark.parametrize(("metric", "options"), METRICS)
def test_every_metric_refuses_masked_predictions(metric, options):
    with pytest.raises(TypeError, match=f"`prob` {MASKED}"):
        metric(masked(PROB), LABELS, **options)


@pytest.mark.parametrize(("metric", "options"), METRICS)
def test_every_metric_refuses_masked_labels(metric, options):
    with pytest.raises(TypeError, match=f"`labels` {MASKED}"):
        metric(PROB, masked(LABELS), **options)


@pytest.mark.parametrize(("metric", "options"), WEIGHTED_METRICS)
def test_every_metric_refuses_masked_weights(metric, options):
    with pytest.raises(TypeError, match=f"`sample_weight` {MASKED}"):
        metric(PROB, LABELS, sample_weight=masked(np.ones(N)), **options)


def test_scores_accumulator_and_stats_refuse_masked_arrays():
    with pytest.raises(TypeError, match=f"`Scores` {MASKED}"):
        ct.ECE(Scores(masked(PROB[:, 0])), LABELS == 0)
    with pytest.raises(TypeError, match=f"`prob` {MASKED}"):
        CalibrationAccumulator().update(masked(PROB), LABELS)
    with pytest.raises(TypeError, match=f"`prob` {MASKED}"):
        stats.bootstrap(ct.ECE, masked(PROB), LABELS, n_resamples=10, random_state=0)


@pytest.mark.parametrize(("recalibrator", "on_probabilities"), RECALIBRATORS)
def test_every_recalibrator_refuses_masked_arrays(recalibrator, on_probabilities):
    X = PROB if on_probabilities else LOGITS
    with pytest.raises(TypeError, match=f"`X` {MASKED}"):
        recalibrator().fit(masked(X), LABELS)
    with pytest.raises(TypeError, match=f"`y` {MASKED}"):
        recalibrator().fit(X, masked(LABELS))
    with pytest.raises(TypeError, match=f"`sample_weight` {MASKED}"):
        recalibrator().fit(X, LABELS, sample_weight=masked(np.ones(N)))
    fitted = recalibrator().fit(X, LABELS)
    with pytest.raises(TypeError, match=f"`X` {MASKED}"):
        fitted.predict_proba(masked(X))


#: the measures that count weights as rows (their scale changes them): equal-mass edges,
#: debiasing, the sweep's largest count, the table's weighted counts, Platt's targets, the
#: clinical fit's standard errors and Hosmer-Lemeshow's chi-squared
COUNTED = {"TCE", "CWCE", "ACE", "TACE", "ECESweep", "calibration_table", "PlattScaling"}
COUNTED |= {"multilabel_calibration_table"}  # its counts are the weights' sums, as read
COUNTED |= {"calibration_slope_intercept", "hosmer_lemeshow"}
COUNTED |= {"VennAbersCalibration"}  # its test row weighs one row: weights are counts
EXTREME_WEIGHTS = [1e308, 1e-310, 5e-324]
SCALE_FREE = [case for case in WEIGHTED_METRICS if case.values[0].__name__ not in COUNTED]


def _value(result: object) -> np.ndarray:
    """The numbers of a metric's result: a float, a table's error, a result's fields."""
    if isinstance(result, float):
        return np.array([result])
    if isinstance(result, ct.CalibrationTable):
        return np.array([result.calibration_error()])
    if dataclasses.is_dataclass(result):  # brier_decomposition's parts, a curve's arrays
        parts = [np.asarray(part) for part in dataclasses.astuple(result) if part is not None]
        # (a result's names of groups are no numbers)
        return np.hstack([part for part in parts if part.dtype.kind in "biuf"]).astype(float)
    return np.array([result.value, result.n_bins], dtype=float)  # ECESweep's result


@pytest.mark.parametrize("weight", EXTREME_WEIGHTS)
@pytest.mark.parametrize(("metric", "options"), WEIGHTED_METRICS)
def test_equal_extreme_weights_give_the_unweighted_value_or_a_clear_refusal(
    metric, options, weight
):
    weights = np.full(N, weight)
    given = weights.copy()
    if metric.__name__ in COUNTED:
        with pytest.raises(
            ValueError, match=r"`sample_weight` (sums to more|holds only subnormal)"
        ):
            metric(PROB, LABELS, sample_weight=weights, **options)
    else:
        expected = _value(metric(PROB, LABELS, **options))
        actual = _value(metric(PROB, LABELS, sample_weight=weights, **options))
        # atol: a smoothed curve's ratios near its density floor round differently
        np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(weights, given)  # never mutated


@pytest.mark.parametrize(("metric", "options"), SCALE_FREE)
def test_scaling_weights_by_a_power_of_two_is_exact(metric, options):
    weights = np.random.default_rng(3).random(N)
    expected = _value(metric(PROB, LABELS, sample_weight=weights, **options))
    for factor in (2.0**900, 2.0**-1000):
        actual = _value(metric(PROB, LABELS, sample_weight=weights * factor, **options))
        np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("weight", EXTREME_WEIGHTS)
@pytest.mark.parametrize(("recalibrator", "on_probabilities"), RECALIBRATORS)
def test_recalibrators_fit_extreme_equal_weights_as_unit_weights(
    recalibrator, on_probabilities, weight
):
    X = PROB if on_probabilities else LOGITS
    weights = np.full(N, weight)
    if recalibrator.__name__ in COUNTED:
        with pytest.raises(
            ValueError, match=r"`sample_weight` (sums to more|holds only subnormal)"
        ):
            recalibrator().fit(X, LABELS, sample_weight=weights)
        return
    expected = recalibrator().fit(X, LABELS, sample_weight=np.ones(N)).predict_proba(X)
    actual = recalibrator().fit(X, LABELS, sample_weight=weights).predict_proba(X)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-6)


def test_counted_measures_still_take_weights_of_ordinary_scale():
    # weights counted as rows are refused only where float64 cannot carry them
    weights = np.full(N, 1e300)
    assert np.isfinite(ct.ACE(PROB, LABELS, sample_weight=weights))
    assert np.isfinite(ct.TCE(PROB, LABELS, sample_weight=np.full(N, 1e-300)))


CONFIDENCE = PROB.max(axis=1)
RESIDUALS = (PROB.argmax(axis=1) == LABELS) - CONFIDENCE  # correct - confidence


@pytest.mark.parametrize("bandwidth", [1e300, 1e6])
def test_smooth_ece_at_a_huge_bandwidth_is_the_absolute_mean_residual(bandwidth):
    # the flat kernel's limit: the smoothed residual is its mean everywhere (was NaN at 1e300)
    value = ct.SmoothECE(PROB, LABELS, bandwidth=bandwidth)
    np.testing.assert_allclose(value, abs(RESIDUALS.mean()), rtol=1e-9)


@pytest.mark.parametrize("bandwidth", [1e-300, 5e-324])
def test_mmce_at_a_vanishing_bandwidth_is_its_limit(bandwidth):
    # distinct confidences' kernel is 0 in float64: sqrt(sum d_i^2) / n (it raised "Maximum
    # allowed size exceeded" at 1e-300 and OverflowError at 5e-324)
    assert len(np.unique(CONFIDENCE)) == N
    value = ct.MMCE(PROB, LABELS, bandwidth=bandwidth)
    np.testing.assert_allclose(value, np.sqrt(np.sum(RESIDUALS**2)) / N, rtol=1e-12)


def test_mmce_ties_pair_at_a_vanishing_bandwidth():
    scores, targets = np.array([0.3, 0.3, 0.8]), np.array([1, 0, 1])
    d = targets - scores
    expected = np.sqrt(np.sum(d**2) + 2 * d[0] * d[1]) / 3  # the tied pair's kernel is 1
    value = ct.MMCE(Scores(scores), targets, bandwidth=1e-300)
    np.testing.assert_allclose(value, expected, rtol=1e-12)


@pytest.mark.parametrize("bandwidth", [1e-300, 5e-324])
def test_skce_at_a_vanishing_bandwidth_keeps_only_the_diagonal(bandwidth):
    # no overflow warning (5e-324 divided a distance to inf); distinct rows' kernel is 0
    residuals = np.eye(3)[LABELS] - PROB
    assert ct.SKCE(PROB, LABELS, bandwidth=bandwidth) == 0.0
    biased = ct.SKCE(PROB, LABELS, bandwidth=bandwidth, estimator="biased")
    np.testing.assert_allclose(biased, np.sum(residuals**2) / N**2, rtol=1e-12)


def test_skce_at_a_huge_bandwidth_is_the_squared_mean_residual():
    residuals = np.eye(3)[LABELS] - PROB
    biased = ct.SKCE(PROB, LABELS, bandwidth=1e300, estimator="biased")
    np.testing.assert_allclose(biased, np.sum(residuals.mean(axis=0) ** 2), rtol=1e-9)


@pytest.mark.parametrize(
    ("recalibrator", "options"),
    [
        (recalibration.PlattScaling, {"input": "probabilities"}),
        (recalibration.BetaCalibration, {}),
    ],
)
def test_binary_fits_take_float16_probabilities_at_float16_tolerance(recalibrator, options):
    # float16 rows sum to 1 within 1e-2 (as every other entry point reads them); these two
    # checked the widened float32 copy at float32's 1e-4 and refused them
    half = PROB.astype(np.float16)
    assert np.abs(half.astype(np.float64).sum(axis=1) - 1).max() > 1e-4
    fitted = recalibrator(**options).fit(half, LABELS)
    widened = half.astype(np.float64)
    widened /= widened.sum(axis=1, keepdims=True)
    expected = recalibrator(**options).fit(widened, LABELS).predict_proba(widened)
    np.testing.assert_allclose(fitted.predict_proba(half), expected, rtol=0, atol=1e-3)


# The softmax fits on logits beyond MAX_FIT_LOGIT: run in a bounded child, since the
# first step of vector scaling looped without end on logits of 1e20 (float32 squares).
_HUGE_LOGITS = """
import numpy as np, pytest, calibration_toolbox as ct
rng = np.random.default_rng(0)
logits, labels = rng.normal(size=(300, 3)), rng.integers(0, 3, 300)
pattern = (
    r"`X` holds a logit of magnitude [0-9.e+]+ in row [0-9]+; the softmax fits take "
    r"logits of magnitude at most 2\\*\\*48"
)
fits = {
    "temperature": lambda X: ct.TemperatureScaling().fit(X, labels),
    "temperature in blocks": lambda X: ct.TemperatureScaling().fit_blocks([(X, labels)]),
    "vector": lambda X: ct.VectorScaling().fit(X, labels),
    "vector in blocks": lambda X: ct.VectorScaling().fit_blocks([(X, labels)]),
    "matrix": lambda X: ct.MatrixScaling().fit(X, labels),
    "ensemble": lambda X: ct.EnsembleTemperatureScaling().fit(X, labels),
}
for scale in (1e20, 1e50, 1e300):
    for name, fit in fits.items():
        with pytest.raises(ValueError, match=pattern):
            fit(logits * scale)
        print(name, "refused")
"""


def test_softmax_fits_refuse_logits_beyond_the_limit_by_name():
    printed = run_bounded(_HUGE_LOGITS, timeout=120)
    assert printed.splitlines() == [
        f"{name} refused"
        for _ in range(3)
        for name in (
            "temperature",
            "temperature in blocks",
            "vector",
            "vector in blocks",
            "matrix",
            "ensemble",
        )
    ], printed


@pytest.mark.filterwarnings("ignore:the optimal temperature")  # beyond its bounds: clipped
@pytest.mark.parametrize(
    "recalibrator",
    [recalibration.TemperatureScaling, recalibration.VectorScaling, recalibration.MatrixScaling],
)
def test_softmax_fits_take_logits_at_the_limit(recalibrator):
    logits = LOGITS / np.abs(LOGITS).max() * MAX_FIT_LOGIT
    probabilities = recalibrator().fit(logits, LABELS).predict_proba(logits)
    assert np.isfinite(probabilities).all()


@pytest.mark.parametrize("factor", [2.0**900, 1e300, 1e-300])
def test_platt_scaling_is_the_same_fit_whatever_the_units_of_its_scores(factor):
    # its standardisation squared the scores: 1e300 gave an infinite spread, a model that
    # ignored them
    expected = recalibration.PlattScaling().fit(LOGITS, LABELS).predict_proba(LOGITS)
    scaled = LOGITS * factor
    actual = recalibration.PlattScaling().fit(scaled, LABELS).predict_proba(scaled)
    np.testing.assert_allclose(actual, expected, rtol=0, atol=1e-12)


def test_the_large_count_band_is_the_binomial_quantile_at_the_threshold():
    binom = pytest.importorskip("scipy.stats").binom
    n = np.full(11, EXACT_BAND_COUNT)
    p = np.array([1e-13, 1e-9, 1e-7, 1e-6, 1e-5, 1e-4, 0.01, 0.3, 0.5, 1 - 1e-7, 1 - 1e-12])
    for q in (1e-6, 0.025, 0.5, 0.975):
        # the Poisson, Cornish-Fisher and mirrored Poisson regimes all meet SciPy's count
        np.testing.assert_array_equal(_large_count_quantile(q, n, p), binom.ppf(q, n, p))


_HUGE_COUNTS = """
import numpy as np, calibration_toolbox as ct
rng = np.random.default_rng(0)
prob, labels = rng.dirichlet(np.ones(3), 200), rng.integers(0, 3, 200)
for weight in (1e15, 1e300):
    table = ct.calibration_table(prob, labels, sample_weight=np.full(200, weight))
    low, high = ct.stats.consistency_bands(table)
    filled = ~np.isnan(table.mean_score)
    inside = (low <= table.mean_score) & (table.mean_score <= high)
    print(bool(np.array_equal(np.isnan(low), ~filled) and inside[filled].all()))
"""


def test_consistency_bands_return_at_weighted_counts_of_1e15_and_beyond():
    # scipy's binom.ppf did not return at a count of 2.6e16 (weights of 1e15 per row)
    assert run_bounded(_HUGE_COUNTS, timeout=60) == "True\nTrue\n"


def test_a_rare_outcome_at_a_huge_count_keeps_its_poisson_band():
    # binom.ppf gave 0 for both ends at n = 1e20, p = 1e-18 (a mean count of 100)
    low, high = ct.stats.consistency_bands(
        ct.calibration_table(
            Scores([1e-18]), [0], sample_weight=[1e20], bins=2, class_conditional=False
        )
    )
    np.testing.assert_allclose([low[0, 0], high[0, 0]], [81e-20, 120e-20], rtol=0, atol=1e-20)
