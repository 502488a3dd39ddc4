"""calibration_toolbox.stats: two models on the same rows (paired bootstrap, paired score test)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats as scipy_stats
from scipy.special import logsumexp, softmax

from calibration_toolbox import (
    ACE,
    ECE,
    SCE,
    Scores,
    brier_score,
    negative_log_likelihood,
)
from calibration_toolbox import stats as stats_module
from calibration_toolbox.stats import (
    bootstrap,
    paired_bootstrap,
    paired_score_test,
)
from tests.conftest import load_real


def two_models(rng, n, k=4):
    """Two models of the same labels: B is A's logits sharpened, plus noise."""
    logits = 2 * rng.normal(size=(n, k))
    prob_a = softmax(logits, axis=1)
    labels = np.array([rng.choice(k, p=row) for row in prob_a])
    prob_b = softmax(1.6 * logits + rng.normal(size=(n, k)), axis=1)
    return prob_a, prob_b, labels


def via_calls(metric):
    """The same metric, unknown to the registry: evaluated by one call per resample."""

    def call(prob, labels, **options):
        return metric(prob, labels, **options)

    return call


# -- one draw for both models ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("metric", "options"),
    [
        (ECE, {}),
        (ECE, {"bins": 7}),
        (SCE, {"bins": 5}),
        (ACE, {"bins": 4}),
        (brier_score, {}),
        (via_calls(ECE), {"bins": 10}),
    ],
)
@pytest.mark.parametrize("n_rows", [300, stats_module._GATHERED_ROWS + 1])
def test_each_model_gets_the_draws_of_its_own_bootstrap(rng, metric, options, n_rows):
    # Pins "one draw for both": each model's resampled values are those bootstrap draws
    # for it with the same seed (the gathered path below _GATHERED_ROWS, weights above).
    prob_a, prob_b, labels = two_models(rng, n_rows)
    resamples = 30 if n_rows < 1000 else 4
    paired = paired_bootstrap(
        metric, prob_a, prob_b, labels, n_resamples=resamples, random_state=5, **options
    )
    for prob, values, estimate in (
        (prob_a, paired.bootstrap_distribution_a, paired.estimate_a),
        (prob_b, paired.bootstrap_distribution_b, paired.estimate_b),
    ):
        alone = bootstrap(metric, prob, labels, n_resamples=resamples, random_state=5, **options)
        assert estimate == alone.estimate
        assert_allclose(values, alone.bootstrap_distribution, rtol=1e-12, atol=1e-15)
    assert paired.difference == paired.estimate_a - paired.estimate_b
    assert_array_equal(
        paired.bootstrap_distribution,
        paired.bootstrap_distribution_a - paired.bootstrap_distribution_b,
    )


def test_interval_and_pvalue_are_read_from_the_difference(rng):
    prob_a, prob_b, labels = two_models(rng, 400)
    result = paired_bootstrap(ECE, prob_a, prob_b, labels, n_resamples=199, random_state=0)
    d, estimate = result.bootstrap_distribution, result.difference
    assert_allclose(result.confidence_interval, np.percentile(d, [2.5, 97.5]), rtol=1e-12)
    assert result.standard_error == pytest.approx(np.std(d, ddof=1), rel=1e-12)
    # The centred two-sided p-value, counted by a loop (the oracle).
    extreme = sum(1 for value in d if abs(value - estimate) >= abs(estimate))
    assert result.pvalue == (1 + extreme) / 200
    basic = paired_bootstrap(
        ECE, prob_a, prob_b, labels, n_resamples=199, random_state=0, method="basic"
    )
    low, high = np.percentile(d, [2.5, 97.5])
    assert_allclose(basic.confidence_interval, (2 * estimate - high, 2 * estimate - low))
    assert (result.method, result.n_resamples, result.confidence_level) == (
        "percentile",
        199,
        0.95,
    )


def test_bca_takes_the_jackknife_of_the_difference(rng):
    # Leave-one-out of both models on the same rows, by a loop of metric calls (the oracle).
    prob_a, prob_b, labels = two_models(rng, 60)
    result = paired_bootstrap(
        ECE, prob_a, prob_b, labels, n_resamples=300, random_state=2, method="BCa", bins=5
    )
    kept = [np.arange(60) != i for i in range(60)]
    jackknife = np.array(
        [ECE(prob_a[k], labels[k], bins=5) - ECE(prob_b[k], labels[k], bins=5) for k in kept]
    )
    expected = stats_module._interval(
        "BCa", result.bootstrap_distribution, result.difference, 0.05, jackknife
    )
    assert_allclose(result.confidence_interval, expected, rtol=1e-12)


@given(
    n_rows=st.integers(2, 60),
    seed=st.integers(0, 2**32 - 1),
    method=st.sampled_from(["percentile", "basic", "BCa"]),
    metric=st.sampled_from([ECE, ACE, brier_score, negative_log_likelihood]),
    weighted=st.booleans(),
)
def test_a_model_against_itself_differs_by_exactly_zero(n_rows, seed, method, metric, weighted):
    rng = np.random.default_rng(seed)
    prob = rng.dirichlet(np.ones(3), size=n_rows)
    labels = rng.integers(0, 3, n_rows)
    weights = rng.uniform(0.5, 2.0, n_rows) if weighted else None
    result = paired_bootstrap(
        metric,
        prob,
        prob.copy(),
        labels,
        n_resamples=20,
        method=method,
        random_state=seed,
        sample_weight=weights,
    )
    assert result.difference == 0.0
    assert tuple(result.confidence_interval) == (0.0, 0.0)
    assert not np.any(result.bootstrap_distribution)
    assert result.pvalue == 1.0
    assert result.standard_error == 0.0


def test_weights_are_shared_and_scale_free(rng):
    prob_a, prob_b, labels = two_models(rng, 200)
    weights = rng.integers(0, 4, 200).astype(float)
    result = paired_bootstrap(
        ECE, prob_a, prob_b, labels, sample_weight=weights, n_resamples=50, random_state=3
    )
    rows = np.repeat(np.arange(200), weights.astype(int))  # weight 2 == the row twice
    assert result.estimate_a == pytest.approx(ECE(prob_a[rows], labels[rows]), rel=1e-12)
    assert result.estimate_b == pytest.approx(ECE(prob_b[rows], labels[rows]), rel=1e-12)
    doubled = paired_bootstrap(
        ECE, prob_a, prob_b, labels, sample_weight=2 * weights, n_resamples=50, random_state=3
    )
    assert_allclose(doubled.bootstrap_distribution, result.bootstrap_distribution, rtol=1e-12)


def test_scores_logits_and_class_names(rng):
    scores_a, scores_b = rng.uniform(size=300), rng.uniform(size=300)
    outcome = rng.uniform(size=300) < scores_a
    result = paired_bootstrap(
        ECE, Scores(scores_a), Scores(scores_b), outcome, n_resamples=20, random_state=0
    )
    assert result.estimate_a == ECE(Scores(scores_a), outcome)
    prob_a, prob_b, labels = two_models(rng, 300)
    logits = paired_bootstrap(
        negative_log_likelihood,
        np.log(prob_a),
        np.log(prob_b),
        labels,
        logits=True,
        n_resamples=10,
        random_state=0,
    )
    assert logits.estimate_a == pytest.approx(negative_log_likelihood(prob_a, labels), rel=1e-12)
    names = np.array(["cat", "dog", "emu", "owl"])
    named = paired_bootstrap(
        ECE, prob_a, prob_b, names[labels], classes=names, n_resamples=10, random_state=0
    )
    plain = paired_bootstrap(ECE, prob_a, prob_b, labels, n_resamples=10, random_state=0)
    assert_array_equal(named.bootstrap_distribution, plain.bootstrap_distribution)


def test_inputs_are_not_modified_and_results_are_read_only(rng):
    prob_a, prob_b, labels = two_models(rng, 100)
    weights = rng.uniform(size=100)
    copies = [array.copy() for array in (prob_a, prob_b, labels, weights)]
    result = paired_bootstrap(
        ECE, prob_a, prob_b, labels, sample_weight=weights, n_resamples=10, method="BCa"
    )
    for array, copy in zip((prob_a, prob_b, labels, weights), copies, strict=False):
        assert_array_equal(array, copy)
    for array in (
        result.bootstrap_distribution,
        result.bootstrap_distribution_a,
        result.bootstrap_distribution_b,
    ):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0


def test_paired_interval_of_wrn_against_vgg_is_narrower_than_unpaired():
    # The same 10,000 CIFAR-10 test images, in the same order, in both files.
    prob_a, labels_a = load_real("wideresnet-16-4-cifar-10")
    prob_b, labels_b = load_real("vgg16-cifar-10")
    assert_array_equal(labels_a, labels_b)
    paired = paired_bootstrap(ECE, prob_a, prob_b, labels_a, n_resamples=1000, random_state=0)
    alone_a = bootstrap(ECE, prob_a, labels_a, n_resamples=1000, random_state=1)
    alone_b = bootstrap(ECE, prob_b, labels_a, n_resamples=1000, random_state=2)
    unpaired = alone_a.bootstrap_distribution - alone_b.bootstrap_distribution
    low, high = np.percentile(unpaired, [2.5, 97.5])
    paired_width = paired.confidence_interval.high - paired.confidence_interval.low
    assert paired_width < 0.9 * (high - low)
    assert paired.standard_error < np.std(unpaired, ddof=1)
    # ECE 0.0537 (WRN-16-4) against 0.0398 (VGG-16): VGG-16 is better calibrated.
    assert paired.estimate_a == pytest.approx(0.0537162954211235, rel=1e-12)
    assert paired.estimate_b == pytest.approx(0.0397800668567419, rel=1e-12)
    assert paired.confidence_interval.low > 0
    assert paired.pvalue == 1 / 1001


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_resamples": 0}, ValueError, "`n_resamples` must be an integer >= 1"),
        ({"confidence_level": 1.0}, ValueError, "`confidence_level`"),
        ({"method": "student"}, ValueError, "`method` must be one of 'percentile'"),
        ({"random_state": "seed"}, TypeError, "`random_state`"),
        ({"sample_weight": [1.0, -1.0, 1.0]}, ValueError, "`sample_weight`"),
        ({"bins": 0}, ValueError, "`prob_a`: `bins`"),
    ],
)
def test_paired_bootstrap_bad_input(kwargs, error, match):
    prob = [[0.9, 0.1], [0.3, 0.7], [0.5, 0.5]]
    with pytest.raises(error, match=match):
        paired_bootstrap(ECE, prob, prob, [0, 1, 1], **kwargs)


def test_paired_bootstrap_names_the_model_at_fault():
    good = [[0.9, 0.1], [0.3, 0.7], [0.5, 0.5]]
    with pytest.raises(ValueError, match=r"`prob_b` must hold .* got 2 rows against 3"):
        paired_bootstrap(ECE, good, good[:2], [0, 1, 1])
    with pytest.raises(ValueError, match=r"^`prob_b`: rows of `prob` must sum to 1"):
        paired_bootstrap(ECE, good, [[0.9, 0.3], [0.3, 0.7], [0.5, 0.5]], [0, 1, 1])
    with pytest.raises(ValueError, match=r"^`prob_a`: `labels`"):
        paired_bootstrap(ECE, good, good, [0, 1, 5])
    with pytest.raises(TypeError, match="`metric` must be a callable"):
        paired_bootstrap("ECE", good, good, [0, 1, 1])
    with pytest.raises(ValueError, match=r"^`prob_a`: `prob` must be a 2-D array"):
        paired_bootstrap(ECE, 5, 5, [0])  # no row count: the metric's own check


# -- the paired score test -------------------------------------------------------------------


def brier_rows(prob, labels):
    return ((prob - np.eye(prob.shape[1])[labels]) ** 2).sum(axis=1)


def log_rows(prob, labels):
    return -np.log(prob[np.arange(len(labels)), labels])


def test_hand_computed_t_test():
    # Brier terms of Scores, (s - y)^2: A = .01 .04 .09 .04, B = .16 .09 .25 .16, so
    # d = -.15 -.05 -.16 -.12, mean -0.12, squared deviations .0009 .0049 .0016 0:
    # s^2 = .0074 / 3, se = sqrt(.0074 / 12), t = -0.12 / se on 3 degrees of freedom,
    # whose CDF is 1/2 + (x / (1 + x^2) + atan(x)) / pi with x = t / sqrt(3).
    a, b = Scores([0.9, 0.8, 0.3, 0.2]), Scores([0.6, 0.7, 0.5, 0.4])
    result = paired_score_test(a, b, [1, 1, 0, 0])
    se = math.sqrt(0.0074 / 12)
    t = -0.12 / se
    x = abs(t) / math.sqrt(3)
    pvalue = 2 * (0.5 - (x / (1 + x * x) + math.atan(x)) / math.pi)
    assert result.mean_difference == pytest.approx(-0.12, rel=1e-12)
    assert result.standard_error == pytest.approx(se, rel=1e-12)
    assert result.statistic == pytest.approx(t, rel=1e-12)
    assert result.pvalue == pytest.approx(pvalue, rel=1e-12)
    assert result.df == 3.0
    assert result.score_a == pytest.approx(0.045, rel=1e-12)
    assert result.score_b == pytest.approx(0.165, rel=1e-12)
    assert (result.score, result.test, result.confidence_level) == ("brier", "t", 0.95)


@pytest.mark.parametrize("score", ["brier", "log"])
def test_t_test_equals_scipy_ttest_rel_on_real_predictions(score):
    prob_a, labels = load_real("wideresnet-16-4-cifar-10")
    prob_b, _ = load_real("vgg16-cifar-10")
    rows = brier_rows if score == "brier" else log_rows
    a = rows(prob_a.astype(np.float64), labels)
    b = rows(prob_b.astype(np.float64), labels)
    theirs = scipy_stats.ttest_rel(a, b)
    ours = paired_score_test(prob_a, prob_b, labels, score=score)
    assert ours.statistic == pytest.approx(theirs.statistic, rel=1e-12)
    assert ours.pvalue == pytest.approx(theirs.pvalue, rel=1e-9)  # p ~ 1e-19: its tail
    assert ours.df == theirs.df
    assert_allclose(ours.confidence_interval, theirs.confidence_interval(0.95), rtol=1e-12)
    assert ours.mean_difference == pytest.approx(np.mean(a - b), rel=1e-12)
    metric = brier_score if score == "brier" else negative_log_likelihood
    assert ours.score_a == pytest.approx(metric(prob_a, labels), rel=1e-12)
    assert ours.score_b == pytest.approx(metric(prob_b, labels), rel=1e-12)


def test_t_test_equals_scipy_on_a_small_case_with_a_large_pvalue(rng):
    prob_a, prob_b, labels = two_models(rng, 40, k=3)
    ours = paired_score_test(prob_a, prob_b, labels, score="log", confidence_level=0.9)
    theirs = scipy_stats.ttest_rel(log_rows(prob_a, labels), log_rows(prob_b, labels))
    assert ours.statistic == pytest.approx(theirs.statistic, rel=1e-12)
    assert ours.pvalue == pytest.approx(theirs.pvalue, rel=1e-12)
    assert_allclose(ours.confidence_interval, theirs.confidence_interval(0.9), rtol=1e-12)


@pytest.mark.parametrize("n_rows", [12, 300])  # SciPy's exact and normal p-values
def test_wilcoxon_equals_scipy(rng, n_rows):
    prob_a, prob_b, labels = two_models(rng, n_rows, k=3)
    ours = paired_score_test(prob_a, prob_b, labels, score="log", test="wilcoxon")
    theirs = scipy_stats.wilcoxon(log_rows(prob_a, labels) - log_rows(prob_b, labels))
    assert ours.statistic == theirs.statistic
    assert ours.pvalue == pytest.approx(theirs.pvalue, rel=1e-12)
    assert ours.test == "wilcoxon"


def test_logits_give_the_exact_log_score(rng):
    logits_a, logits_b = 3 * rng.normal(size=(2, 200, 5))
    labels = rng.integers(0, 5, 200)
    ours = paired_score_test(logits_a, logits_b, labels, score="log", logits=True)

    def losses(z):
        return logsumexp(z, axis=1) - z[np.arange(200), labels]

    theirs = scipy_stats.ttest_rel(losses(logits_a), losses(logits_b))
    assert ours.statistic == pytest.approx(theirs.statistic, rel=1e-12)


def test_weights_scale_free_zero_rows_dropped_and_hand_computed(rng):
    prob_a, prob_b, labels = two_models(rng, 50)
    plain = paired_score_test(prob_a, prob_b, labels)
    ones = paired_score_test(prob_a, prob_b, labels, sample_weight=np.ones(50))
    assert ones.statistic == pytest.approx(plain.statistic, rel=1e-12)
    weights = rng.uniform(0.1, 3.0, 50)
    weights[:5] = 0.0
    weighted = paired_score_test(prob_a, prob_b, labels, sample_weight=weights)
    doubled = paired_score_test(prob_a, prob_b, labels, sample_weight=2 * weights)
    assert doubled.statistic == pytest.approx(weighted.statistic, rel=1e-12)
    assert doubled.pvalue == pytest.approx(weighted.pvalue, rel=1e-12)
    kept = paired_score_test(
        prob_a[5:], prob_b[5:], labels[5:], sample_weight=weights[5:]
    )  # rows of weight 0 are absent
    assert kept.statistic == pytest.approx(weighted.statistic, rel=1e-12)
    assert kept.df == weighted.df == 44
    # The weighted mean is that of duplicated rows; its sandwich error by hand.
    d = brier_rows(prob_a, labels) - brier_rows(prob_b, labels)
    w, d = weights[5:], d[5:]
    mean = np.sum(w * d) / np.sum(w)
    se = math.sqrt(45 / 44 * np.sum(w**2 * (d - mean) ** 2) / np.sum(w) ** 2)
    assert weighted.mean_difference == pytest.approx(mean, rel=1e-12)
    assert weighted.standard_error == pytest.approx(se, rel=1e-12)
    assert weighted.pvalue == pytest.approx(2 * scipy_stats.t.sf(abs(mean / se), 44), rel=1e-12)
    counts = rng.integers(1, 4, 50)
    rows = np.repeat(np.arange(50), counts)
    duplicated = paired_score_test(prob_a[rows], prob_b[rows], labels[rows])
    integer = paired_score_test(prob_a, prob_b, labels, sample_weight=counts)
    assert integer.mean_difference == pytest.approx(duplicated.mean_difference, rel=1e-12)


@given(
    n_rows=st.integers(2, 40),
    seed=st.integers(0, 2**32 - 1),
    score=st.sampled_from(["brier", "log"]),
)
def test_swapping_the_models_negates_the_test(n_rows, seed, score):
    rng = np.random.default_rng(seed)
    prob_a, prob_b = rng.dirichlet(np.ones(3), size=(2, n_rows))
    labels = rng.integers(0, 3, n_rows)
    forward = paired_score_test(prob_a, prob_b, labels, score=score)
    backward = paired_score_test(prob_b, prob_a, labels, score=score)
    assert backward.mean_difference == -forward.mean_difference
    assert backward.statistic == -forward.statistic
    assert backward.pvalue == pytest.approx(forward.pvalue, rel=1e-12)
    same = paired_score_test(prob_a, prob_a.copy(), labels, score=score)
    assert (same.statistic, same.pvalue, same.mean_difference) == (0.0, 1.0, 0.0)


def test_differences_all_equal_give_an_infinite_t():
    a, b = Scores([0.5, 0.5, 0.5]), Scores([0.6, 0.6, 0.6])
    result = paired_score_test(a, b, [0, 0, 0])  # d = 0.25 - 0.36 on every row
    assert result.statistic == -np.inf
    assert result.pvalue == 0.0
    same = paired_score_test(a, a, [0, 0, 0], test="wilcoxon")
    assert (same.statistic, same.pvalue) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"score": "spherical"}, ValueError, "`score` must be 'brier' or 'log'"),
        ({"test": "sign"}, ValueError, "`test` must be 't' or 'wilcoxon'"),
        ({"confidence_level": 0.0}, ValueError, "`confidence_level`"),
        ({"eps": 1.5}, ValueError, "`eps`"),
        ({"sample_weight": [1.0, 2.0]}, ValueError, "`sample_weight` must be a 1-D array"),
        ({"sample_weight": [1, 1, 1], "test": "wilcoxon"}, ValueError, "signed-rank"),
        ({"sample_weight": [0, 0, 1]}, ValueError, "at least 2 rows of positive weight"),
        ({"score": "log", "eps": 0}, ValueError, "infinite score"),
    ],
)
def test_paired_score_test_bad_input(kwargs, error, match):
    prob_a = [[1.0, 0.0], [0.3, 0.7], [0.5, 0.5]]
    prob_b = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]]
    with pytest.raises(error, match=match):
        paired_score_test(prob_a, prob_b, [1, 1, 0], **kwargs)


def test_paired_score_test_names_the_model_and_leaves_inputs_alone(rng):
    with pytest.raises(ValueError, match=r"`prob_b` must hold .* got 2 rows against 3"):
        paired_score_test([0.2, 0.4, 0.9], [0.2, 0.4], [0, 1, 1])
    with pytest.raises(ValueError, match=r"^`prob_b`: `prob`"):
        paired_score_test([0.2, 0.4, 0.9], [0.2, 1.4, 0.9], [0, 1, 1])
    with pytest.raises(ValueError, match=r"^`prob_a`: `prob` must be a 2-D array"):
        paired_score_test(5, [[0.5, 0.5]], [0])
    prob_a, prob_b, labels = two_models(rng, 30)
    copies = [array.copy() for array in (prob_a, prob_b, labels)]
    names = np.array(["a", "b", "c", "d"])
    named = paired_score_test(prob_a, prob_b, names[labels], classes=names)
    assert named.statistic == paired_score_test(prob_a, prob_b, labels).statistic
    for array, copy in zip((prob_a, prob_b, labels), copies, strict=False):
        assert_array_equal(array, copy)


@pytest.mark.parametrize("method", ["percentile", "basic", "BCa"])
@pytest.mark.parametrize("metric", [ECE, SCE])
def test_paired_from_cells_is_paired_bootstrap(metric, method):
    """The private entry of ``compare --stream``: estimates and cells in, the same result.

    Over 1,000 rows, so that BCa's jackknife groups are a permutation drawn after the
    resamples (the same generator's state in both); every field to the last bit.
    """
    rng = np.random.default_rng(8)
    prob_a, prob_b, labels = two_models(rng, 1_200)
    expected = paired_bootstrap(
        metric, prob_a, prob_b, labels, bins=10, n_resamples=60, method=method, random_state=4
    )
    settings = stats_module._table_call(metric, {"bins": 10})
    found = [
        stats_module._tabulated_call(metric, prob, labels, None, dict(settings), {})
        for prob in (prob_a, prob_b)
    ]
    result = stats_module._paired_from_cells(
        (found[0][0], found[1][0]),
        (found[0][1], found[1][1]),
        len(labels),
        n_resamples=60,
        confidence_level=0.95,
        random_state=4,
        method=method,
    )
    assert result.difference == expected.difference
    assert tuple(result.confidence_interval) == tuple(expected.confidence_interval)
    assert (result.pvalue, result.standard_error) == (expected.pvalue, expected.standard_error)
    for name in ("", "_a", "_b"):
        field = f"bootstrap_distribution{name}"
        assert_array_equal(getattr(result, field), getattr(expected, field))
    assert (result.estimate_a, result.estimate_b) == (expected.estimate_a, expected.estimate_b)


@pytest.mark.parametrize("score", ["brier", "log"])
def test_paired_losses_test_is_paired_score_test(score):
    """The private entry of ``compare --stream``: per-row scores in, the same test."""
    rng = np.random.default_rng(9)
    prob_a, prob_b, labels = two_models(rng, 500)
    expected = paired_score_test(prob_a, prob_b, labels, score=score)
    losses = stats_module._score_differences(prob_a, prob_b, labels, score, {})
    result = stats_module._paired_losses_test(*losses, None, score, "t", 0.95)
    assert result == expected
