"""The clinical summary: calibration slope and intercept, Hosmer-Lemeshow, ICI / E50 / E90."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from pvalue_peers import clinical_sets, synthetic_sets
from scipy import optimize
from scipy import stats as scipy_stats
from scipy.special import expit, logit, ndtr

from calibration_toolbox import (
    E50,
    E90,
    ICI,
    Scores,
    SmoothECE,
    calibration_slope_intercept,
    hosmer_lemeshow,
)
from calibration_toolbox.stats import spiegelhalter_test
from tests.conftest import load_real

SUMMARIES = [ICI, E50, E90]
ids = {"ids": lambda function: function.__name__}

# python tests/references/pvalue_peers.py (scratch environment):
# python 3.11.7, numpy 2.4.6, scipy 1.17.1, statsmodels 0.15.0, calzone-tool 0.1.0,
# pycaleva 0.8.2
# name: (slope, its se, intercept with slope 1, its se), statsmodels GLM
STATSMODELS = {
    "recalibrate": (
        0.8374423702232794,
        0.0635724927822236,
        0.2473777055758856,
        0.07487783654210686,
    ),
    "calibrated": (
        1.0380418126929243,
        0.06390191874102986,
        0.01883222132896075,
        0.0528428142439804,
    ),
    "weighted": (0.871637142443962, 0.05345768851680387, 0.3775027568993078, 0.06148778684716389),
}
# name: (slope, intercept with fix_slope, Spiegelhalter z, its p, lowess ICI)
CALZONE = {
    "recalibrate": (
        0.8374423702232794,
        0.24737770557588565,
        2.821850980468275,
        0.004774735833865451,
        0.04442136605418614,
    ),
    "calibrated": (
        1.0380418126929243,
        0.01883222132896073,
        -0.15533947054941552,
        0.8765537002622306,
        0.011691514279133194,
    ),
}
# name: (Hosmer-Lemeshow statistic, p, dof), pycaleva, 10 qcut groups
PYCALEVA = {
    "recalibrate": (25.864157273293614, 0.0011080090099468975, 8),
    "calibrated": (6.0128620596054985, 0.6457910725471216, 8),
    "walk_calibrated": (18.318496088160515, 0.01896139943331665, 8),
    "walk_overconfident": (149.32740652057043, 0.0, 8),
    "walk_underconfident": (47.99869234711068, 9.885215657146063e-08, 8),
    "walk_small": (27.67928928666999, 0.0005392331358120561, 8),
}
# statsmodels' IRLS stops at its tolerance: the estimates agree to 1e-15, the standard
# errors (the information at its own last iterate) to 1e-10.
SE_RTOL = 1e-9


def risks_and_events(rng, n, slope=1.0, intercept=0.0):
    log_odds = rng.normal(-0.5, 1.5, n)
    events = rng.uniform(size=n) < expit(intercept + slope * log_odds)
    return expit(log_odds), events


# -- calibration slope and intercept ---------------------------------------------------------
def nll(beta, x, y, w, offset):
    eta = beta[0] + (beta[1] * x if offset is None else x)
    return np.sum(w * (np.logaddexp(0, eta) - y * eta))


def brute_force_fit(risks, events, weights=None, *, fixed_slope):
    """Nelder-Mead on the log-likelihood, and the Hessian by central differences."""
    x, y = logit(risks), events.astype(float)
    w = np.ones(len(x)) if weights is None else weights
    offset = x if fixed_slope else None
    start = np.array([0.0, 1.0])[: 1 if fixed_slope else 2]
    fit = optimize.minimize(
        nll, start, args=(x, y, w, offset), method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000},
    )  # fmt: skip
    step, size = 1e-4, len(start)
    hessian = np.empty((size, size))
    for i in range(size):
        for j in range(size):
            ei, ej = np.eye(size)[i] * step, np.eye(size)[j] * step
            hessian[i, j] = (
                nll(fit.x + ei + ej, x, y, w, offset) - nll(fit.x + ei - ej, x, y, w, offset)
                - nll(fit.x - ei + ej, x, y, w, offset) + nll(fit.x - ei - ej, x, y, w, offset)
            ) / (4 * step * step)  # fmt: skip
    return fit.x[-1], np.sqrt(np.diag(np.linalg.inv(hessian)))[-1]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("weighted", [False, True])
def test_slope_and_intercept_match_a_brute_force_fit(seed, weighted):
    rng = np.random.default_rng(seed)
    risks, events = risks_and_events(rng, 400, slope=0.7, intercept=0.4)
    weights = rng.uniform(0.2, 3, 400) if weighted else None
    result = calibration_slope_intercept(Scores(risks), events, sample_weight=weights)
    slope, slope_se = brute_force_fit(risks, events, weights, fixed_slope=False)
    intercept, intercept_se = brute_force_fit(risks, events, weights, fixed_slope=True)
    assert_allclose([result.slope, result.intercept], [slope, intercept], rtol=1e-7, atol=1e-8)
    assert_allclose([result.slope_se, result.intercept_se], [slope_se, intercept_se], rtol=1e-5)
    z = scipy_stats.norm.ppf(0.975)
    assert_allclose(result.slope_interval, [slope - z * slope_se, slope + z * slope_se], 1e-5)


@pytest.mark.parametrize("name", list(STATSMODELS))
def test_slope_and_intercept_match_statsmodels(name):
    risks, events, weights = clinical_sets()[name]
    slope, slope_se, intercept, intercept_se = STATSMODELS[name]
    result = calibration_slope_intercept(Scores(risks), events, sample_weight=weights)
    assert_allclose([result.slope, result.intercept], [slope, intercept], rtol=1e-12)
    assert_allclose([result.slope_se, result.intercept_se], [slope_se, intercept_se], SE_RTOL)


@pytest.mark.parametrize("name", list(CALZONE))
def test_calzone_values(name):
    risks, events, _ = clinical_sets()[name]
    slope, intercept, z, z_p, _ = CALZONE[name]
    result = calibration_slope_intercept(Scores(risks), events)
    assert_allclose([result.slope, result.intercept], [slope, intercept], rtol=1e-12)
    test = spiegelhalter_test(Scores(risks), events)  # calzone's is two-sided too
    assert_allclose([test.scaled_statistic, test.pvalue], [z, z_p], rtol=1e-12)


def flat(result):
    return np.hstack(dataclasses.astuple(result))


def test_integer_weights_equal_duplicated_rows():
    rng = np.random.default_rng(11)
    risks, events = risks_and_events(rng, 300, slope=1.3)
    counts = rng.integers(1, 4, 300)
    weighted = calibration_slope_intercept(Scores(risks), events, sample_weight=counts)
    duplicated = calibration_slope_intercept(
        Scores(np.repeat(risks, counts)), np.repeat(events, counts)
    )
    assert_allclose(flat(weighted), flat(duplicated), rtol=1e-10)


def test_calibrated_intervals_cover_one_and_zero_about_95_percent_of_the_time():
    covered = np.zeros(2, dtype=int)
    for seed in range(200):
        risks, events = risks_and_events(np.random.default_rng(seed), 500)
        result = calibration_slope_intercept(Scores(risks), events)
        covered += [
            result.slope_interval.low <= 1 <= result.slope_interval.high,
            result.intercept_interval.low <= 0 <= result.intercept_interval.high,
        ]
    # binomial(200, 0.95): 190 on average, sd 3.1
    assert ((covered >= 178) & (covered <= 200)).all(), covered


def test_top_label_form_and_the_level():
    rng = np.random.default_rng(12)
    prob = rng.dirichlet(np.ones(3), size=400)
    labels = rng.integers(0, 3, 400)
    result = calibration_slope_intercept(prob, labels, confidence_level=0.8)
    same = calibration_slope_intercept(
        Scores(prob.max(axis=1)), prob.argmax(axis=1) == labels, confidence_level=0.8
    )
    assert result == same and result.confidence_level == 0.8
    z = scipy_stats.norm.ppf(0.9)
    assert_allclose(result.slope_interval.high - result.slope, z * result.slope_se, rtol=1e-12)


def test_scores_of_zero_or_one_are_refused_unless_clipped():
    risks, events = np.array([0.2, 1.0, 0.5, 0.7]), np.array([0, 1, 1, 0])
    with pytest.raises(ValueError, match=r"strictly between 0 and 1 .*row 1.*`clip=`"):
        calibration_slope_intercept(Scores(risks), events)
    # the row named is the caller's, rows of weight 0 counted (and a weightless 1.0 kept)
    with pytest.raises(ValueError, match=r"got 1.0 \(row 3\)"):
        calibration_slope_intercept(
            Scores([1.0, 0.2, 0.5, 1.0, 0.7]), [1, 0, 1, 1, 0], sample_weight=[0, 1, 1, 1, 1]
        )
    clipped = calibration_slope_intercept(Scores(risks), events, clip=1e-7)
    assert clipped == calibration_slope_intercept(Scores([0.2, 1 - 1e-7, 0.5, 0.7]), events)


def test_slope_bad_input():
    with pytest.raises(ValueError, match="both outcomes"):
        calibration_slope_intercept(Scores([0.2, 0.6]), [1, 1])
    with pytest.raises(ValueError, match="did not converge"):  # separated
        calibration_slope_intercept(Scores([0.1, 0.2, 0.8, 0.9]), [0, 0, 1, 1])
    with pytest.raises(ValueError, match="`confidence_level`"):
        calibration_slope_intercept(Scores([0.2, 0.6]), [0, 1], confidence_level=1.5)
    with pytest.raises(ValueError, match="`clip`"):
        calibration_slope_intercept(Scores([0.2, 0.6]), [0, 1], clip=0.7)
    with pytest.raises(ValueError, match=r"ambiguous|Scores"):
        calibration_slope_intercept(np.array([0.2, 0.6]), [0, 1])


# -- Hosmer-Lemeshow ----------------------------------------------------------------------------
def hosmer_lemeshow_oracle(risks, events, groups):
    """Deciles of risk by a loop over sorted rows (n divisible by groups, no ties)."""
    order = np.argsort(risks)
    size = len(risks) // groups
    statistic = 0.0
    for g in range(groups):
        rows = order[g * size : (g + 1) * size]
        observed, expected = events[rows].sum(), risks[rows].sum()
        statistic += (observed - expected) ** 2 / (expected * (1 - expected / size))
    return statistic, scipy_stats.chi2.sf(statistic, groups - 2)


@pytest.mark.parametrize("groups", [3, 5, 10, 20])
def test_hosmer_lemeshow_matches_the_loop(groups):
    risks, events = risks_and_events(np.random.default_rng(groups), 1200, slope=0.8)
    result = hosmer_lemeshow(Scores(risks), events, bins=groups, in_sample=True)
    statistic, pvalue = hosmer_lemeshow_oracle(risks, events.astype(float), groups)
    assert_allclose([result.statistic, result.pvalue], [statistic, pvalue], rtol=1e-12)
    assert result.dof == groups - 2 and result.n_groups == groups


@pytest.mark.parametrize("name", list(PYCALEVA))
def test_hosmer_lemeshow_matches_pycaleva(name):
    sets = {**clinical_sets(), **{f"walk_{k}": v for k, v in synthetic_sets().items()}}
    risks, events, _ = sets[name]
    statistic, pvalue, dof = PYCALEVA[name]
    result = hosmer_lemeshow(Scores(risks), events, in_sample=True)  # pycaleva's default
    assert_allclose(result.statistic, statistic, rtol=1e-12)
    # pycaleva's p-value is 1 - cdf: absolute error 1e-16, 0.0 below it
    assert_allclose(result.pvalue, pvalue, rtol=1e-12, atol=1e-15)
    assert result.dof == dof
    held_out = hosmer_lemeshow(Scores(risks), events)  # the default: predictions held out
    assert held_out.dof == dof + 2 and held_out.statistic == result.statistic
    assert held_out.pvalue == scipy_stats.chi2.sf(result.statistic, dof + 2)


SEPARATED = (
    r"the logistic recalibration did not converge: the scores separate the labels \(every "
    r"event's score is {side} every non-event's\), so no finite slope fits them"
)


@pytest.mark.parametrize(
    ("scores", "events", "weights", "side"),
    [
        ([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1], None, "at or above"),
        ([0.1, 0.2, 0.8, 0.9], [1, 1, 0, 0], None, "at or below"),
        ([0.1, 0.5, 0.5, 0.9], [0, 0, 1, 1], None, "at or above"),  # quasi-complete: a tie
        # a row of weight 0 does not count: the rows that do are separated
        ([0.1, 0.95, 0.2, 0.8, 0.9], [0, 0, 0, 1, 1], [1, 0, 1, 1, 1], "at or above"),
    ],
)
def test_separated_labels_are_refused_whatever_the_blas_kernel(scores, events, weights, side):
    # The refusal was read from the numbers of a fit run off to infinity (a singular or
    # negative covariance): with OpenBLAS's Haswell kernel the first case returned slope
    # 95.2 with a standard error of 4.6e53 instead. Separation is now decided exactly
    # (Albert and Anderson 1984), before any fit.
    with pytest.raises(ValueError, match=SEPARATED.format(side=side)):
        calibration_slope_intercept(Scores(scores), events, sample_weight=weights)


def test_one_distinct_score_is_refused_as_such():
    with pytest.raises(ValueError, match=r"`prob` must hold at least two distinct scores"):
        calibration_slope_intercept(
            Scores([0.3, 0.3, 0.3, 0.9]), [0, 1, 0, 1], sample_weight=[1, 1, 1, 0]
        )


def test_overlapping_outcomes_are_fitted():
    # one event below one non-event: the likelihood has a finite maximum
    result = calibration_slope_intercept(Scores([0.1, 0.3, 0.2, 0.8, 0.9]), [0, 0, 1, 1, 1])
    assert np.isfinite(result.slope) and np.isfinite(result.slope_se) and result.slope > 0


def test_hosmer_lemeshow_ties_weights_and_errors():
    # ties: the 6 rows at 0.5 share a group, leaving an empty one: 4 groups, dof 2
    risks = np.array([0.1, 0.2, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.8, 0.9])
    events = np.array([0, 0, 1, 0, 1, 0, 1, 1, 1, 0])
    result = hosmer_lemeshow(Scores(risks), events, bins=5, in_sample=True)
    assert result.n_groups < 5 and result.dof == result.n_groups - 2
    assert hosmer_lemeshow(Scores(risks), events, bins=5).dof == result.n_groups
    counts = np.array([1, 2, 1, 3, 1, 1, 2, 1, 1, 2])
    weighted = hosmer_lemeshow(Scores(risks), events, bins=5, sample_weight=counts, in_sample=True)
    assert weighted.statistic != result.statistic
    duplicated = hosmer_lemeshow(
        Scores(np.repeat(risks, counts)), np.repeat(events, counts), bins=5, in_sample=True
    )
    assert_allclose(weighted.statistic, duplicated.statistic, rtol=1e-12)
    assert weighted.dof == duplicated.dof
    with pytest.raises(ValueError, match="at least 3 non-empty groups"):
        hosmer_lemeshow(Scores([0.5, 0.5, 0.2]), [0, 1, 1], bins=3)
    with pytest.raises(ValueError, match="`bins`"):
        hosmer_lemeshow(Scores(risks), events, bins=2)
    with pytest.raises(ValueError, match="all 0 or all 1"):
        hosmer_lemeshow(
            Scores([0, 0, 0, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95]), [0] * 4 + [1] * 5, bins=3
        )


def test_hosmer_lemeshow_rejects_miscalibration_and_is_uniform_when_calibrated():
    risks, events = risks_and_events(np.random.default_rng(1), 5000)
    too_extreme = expit(2 * logit(risks))
    assert hosmer_lemeshow(Scores(too_extreme), events).pvalue < 1e-6
    sets = [risks_and_events(np.random.default_rng(seed), 5000) for seed in range(200)]
    held_out = [hosmer_lemeshow(Scores(r), e).pvalue for r, e in sets]  # the default
    assert scipy_stats.kstest(held_out, "uniform").pvalue > 1e-3
    # dof G - 2 on predictions fitted elsewhere rejects calibrated models too often
    in_sample = [hosmer_lemeshow(Scores(r), e, in_sample=True).pvalue for r, e in sets]
    assert scipy_stats.kstest(in_sample, "uniform", alternative="greater").pvalue < 1e-3
    assert np.mean(np.array(in_sample) < 0.05) > 0.05


# -- ICI, E50, E90 ------------------------------------------------------------------------------
def reflected_kernel(t, s, bandwidth):
    """The density at t of s + bandwidth Z folded into [0, 1], summed over mirror images."""
    images = np.arange(-3, 4)
    centres = np.concatenate([2 * images + s[:, None], 2 * images - s[:, None]], axis=1)
    z = (t[:, None, None] - centres[None]) / bandwidth
    return np.exp(-0.5 * z * z).sum(axis=2) / (bandwidth * np.sqrt(2 * np.pi))


def distances_oracle(scores, targets, weights, bandwidth):
    """|Nadaraya-Watson of y - s at each score| with the reflected Gaussian kernel, O(n^2)."""
    kernel = reflected_kernel(scores, scores, bandwidth) * weights[None, :]
    return np.abs(kernel @ (targets - scores) / kernel.sum(axis=1))


def type_one_quantile(values, weights, q):
    order = np.argsort(values)
    cumulative = np.cumsum(weights[order])
    return values[order][np.searchsorted(cumulative, q * cumulative[-1] * (1 - 1e-15))]


@pytest.mark.parametrize("bandwidth", [0.2, 0.05, 0.02])
@pytest.mark.parametrize("weighted", [False, True])
def test_summaries_match_the_kernel_oracle(bandwidth, weighted):
    rng = np.random.default_rng(int(bandwidth * 100))
    scores = rng.beta(2, 3, 300)
    targets = (rng.uniform(size=300) < scores**1.3).astype(float)
    weights = rng.uniform(0.2, 2, 300) if weighted else np.ones(300)
    distances = distances_oracle(scores, targets, weights, bandwidth)
    options = {"bandwidth": bandwidth, "sample_weight": weights if weighted else None}
    assert_allclose(
        ICI(Scores(scores), targets, **options), np.average(distances, weights=weights), 1e-5
    )
    # the quantiles: the same order statistic (one distance), to the grid's accuracy
    assert_allclose(
        E50(Scores(scores), targets, **options),
        type_one_quantile(distances, weights, 0.5),
        1e-4,
    )
    assert_allclose(
        E90(Scores(scores), targets, **options),
        type_one_quantile(distances, weights, 0.9),
        1e-4,
    )


def test_default_bandwidth_is_the_smooth_ece_fixed_point():
    rng = np.random.default_rng(21)
    scores = rng.uniform(size=2000)
    targets = rng.uniform(size=2000) < scores**2
    sigma = SmoothECE(Scores(scores), targets)
    for summary in SUMMARIES:
        assert summary(Scores(scores), targets) == summary(
            Scores(scores), targets, bandwidth=sigma
        )
    # ICI is close to SmoothECE at the same bandwidth (the scores' own distribution, not
    # its smoothing): within 10% here
    assert_allclose(ICI(Scores(scores), targets), sigma, rtol=0.1)


def test_a_known_curve_is_recovered():
    # targets from s**2: the distance of the true curve is |c(s) - s| = s - s**2
    rng = np.random.default_rng(22)
    scores = rng.uniform(0.05, 0.95, 200_000)
    targets = rng.uniform(size=200_000) < scores**2
    exact = scores - scores**2
    ici = ICI(Scores(scores), targets, bandwidth=0.03)
    assert_allclose(ici, exact.mean(), rtol=0.02)
    # the quantiles carry the smoothing's bias and noise where s - s**2 is flat
    assert_allclose(E50(Scores(scores), targets, bandwidth=0.03), np.median(exact), rtol=0.05)
    assert_allclose(E90(Scores(scores), targets, bandwidth=0.03), np.quantile(exact, 0.9), 0.05)


@pytest.mark.parametrize("summary", SUMMARIES, **ids)
def test_summary_weights_scale_and_duplicates(summary):
    rng = np.random.default_rng(23)
    scores = rng.uniform(size=200)
    targets = rng.uniform(size=200) < scores
    counts = rng.integers(1, 4, 200)
    weighted = summary(Scores(scores), targets, sample_weight=counts, bandwidth=0.1)
    duplicated = summary(
        Scores(np.repeat(scores, counts)), np.repeat(targets, counts), bandwidth=0.1
    )
    assert_allclose(weighted, duplicated, rtol=1e-10)
    scaled = summary(Scores(scores), targets, sample_weight=5.0 * counts, bandwidth=0.1)
    assert_allclose(scaled, weighted, rtol=1e-12)


@given(
    st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans()), min_size=1, max_size=50),
    st.floats(0.01, 1.0),
)
def test_summary_properties(rows, bandwidth):
    scores = np.array([score for score, _ in rows])
    targets = np.array([target for _, target in rows])
    values = [summary(Scores(scores), targets, bandwidth=bandwidth) for summary in SUMMARIES]
    assert all(0 <= value <= 1 for value in values)
    assert values[1] <= values[2] + 1e-12  # E50 <= E90
    ranked = sorted(
        distances_oracle(scores, targets.astype(float), np.ones(len(scores)), bandwidth)
    )
    assert ranked[0] - 1e-6 <= values[0] <= ranked[-1] + 1e-6


def test_summaries_top_label_and_real_predictions():
    prob, labels = load_real("lenet-5-cifar-100")
    pairs = Scores(prob.max(axis=1)), prob.argmax(axis=1) == labels
    for summary in SUMMARIES:
        assert summary(prob, labels) == summary(*pairs)
    assert 0 < E50(prob, labels) <= E90(prob, labels)


@pytest.mark.parametrize("summary", SUMMARIES, **ids)
def test_summary_bad_input(summary):
    with pytest.raises(ValueError, match="`bandwidth`"):
        summary(Scores([0.2, 0.6]), [0, 1], bandwidth=0)
    with pytest.raises(ValueError, match=r"ambiguous|Scores"):
        summary(np.array([0.2, 0.6]), [0, 1])
    with pytest.raises(ValueError, match="`sample_weight`"):
        summary(Scores([0.2, 0.6]), [0, 1], sample_weight=[-1, 1])


def test_inputs_are_not_mutated():
    rng = np.random.default_rng(24)
    prob = rng.dirichlet(np.ones(3), size=100)
    labels = rng.integers(0, 3, 100)
    weights = rng.uniform(size=100)
    copies = prob.copy(), labels.copy(), weights.copy()
    for function in [*SUMMARIES, calibration_slope_intercept, hosmer_lemeshow]:
        function(prob, labels, sample_weight=weights)
    for array, copy in zip((prob, labels, weights), copies, strict=True):
        np.testing.assert_array_equal(array, copy)


def test_normal_quantile_of_the_interval():
    # the Wald interval's z is the normal quantile (ndtr is its inverse)
    result = calibration_slope_intercept(Scores([0.2, 0.4, 0.6, 0.7]), [0, 1, 0, 1])
    z = (result.slope_interval.high - result.slope) / result.slope_se
    assert_allclose(ndtr(z), 0.975, rtol=1e-12)


def test_hosmer_lemeshow_of_weights_near_the_top_of_float64():
    # weighted counts of 1e271: their squares overflow, the statistic does not
    rng = np.random.default_rng(25)
    risks, events = risks_and_events(rng, 500, slope=0.8)
    weights = np.ones(500)
    result = hosmer_lemeshow(Scores(risks), events, sample_weight=weights)
    huge = hosmer_lemeshow(Scores(risks), events, sample_weight=weights * 2.0**900)
    assert_allclose(huge.statistic, result.statistic * 2.0**900, rtol=1e-12)
    assert huge.pvalue == 0.0 and huge.dof == result.dof
