"""calibration_toolbox.stats: bootstrap, consistency test, per-bin intervals."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats as scipy_stats
from scipy.special import softmax

from calibration_toolbox import (
    ACE,
    ECE,
    GCE,
    MCE,
    RMSCE,
    SCE,
    TACE,
    CalibrationTable,
    Scores,
    ToprCE,
    brier_score,
    calibration_table,
    negative_log_likelihood,
)
from calibration_toolbox.stats import bin_intervals, bootstrap, consistency_bands, consistency_test


def softmax_case(rng, n, k, scale=2.0):
    logits = scale * rng.normal(size=(n, k))
    prob = softmax(logits, axis=1)
    labels = np.array([rng.choice(k, p=row) for row in prob])
    return prob, labels, logits


def via_calls(metric):
    """The same metric, unknown to bootstrap: evaluated by one call per resample."""

    def call(prob, labels, **options):
        return metric(prob, labels, **options)

    return call


# -- bootstrap: the fast (table) path equals one metric call per resample ----------------------

FAST_CASES = [
    (ECE, {}),
    (ECE, {"bins": 7}),
    (ECE, {"bins": [0.0, 0.5, 0.8, 0.9, 1.0]}),
    (RMSCE, {"bins": 10}),
    (MCE, {"bins": 10}),
    (SCE, {"bins": 5}),
    (ToprCE, {"bins": 5, "r": 2}),
    (GCE, {"bins": 4, "top_k_classes": 2, "norm": 2, "thresholding": 0.05}),
    (GCE, {"bin": 6, "class_conditional": False, "top_k_classes": "all", "norm": "inf"}),
    (GCE, {"class_conditional": True}),
]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(("metric", "options"), FAST_CASES)
def test_fast_path_equals_metric_calls_with_the_same_weights(rng, metric, options, weighted):
    prob, labels, _ = softmax_case(rng, 300, 4)
    weights = rng.uniform(0.5, 2.0, size=300) if weighted else None
    kwargs = dict(n_resamples=40, random_state=7, sample_weight=weights, **options)
    fast = bootstrap(metric, prob, labels, **kwargs)
    calls = bootstrap(via_calls(metric), prob, labels, **kwargs)
    assert fast.estimate == metric(prob, labels, sample_weight=weights, **options)
    assert_allclose(
        fast.bootstrap_distribution, calls.bootstrap_distribution, rtol=1e-12, atol=1e-15
    )
    assert_allclose(fast.confidence_interval, calls.confidence_interval, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n_rows", [200, 1500])  # leave-one-out, then grouped jackknife
def test_fast_path_equals_metric_calls_for_bca(rng, n_rows):
    prob, labels, _ = softmax_case(rng, n_rows, 3)
    kwargs = dict(n_resamples=30, random_state=3, method="BCa", bins=5)
    fast = bootstrap(ECE, prob, labels, **kwargs)
    calls = bootstrap(via_calls(ECE), prob, labels, **kwargs)
    assert_allclose(fast.confidence_interval, calls.confidence_interval, rtol=1e-12)
    assert np.isfinite(fast.confidence_interval).all()


def test_fast_path_for_scores_and_logits(rng):
    prob, labels, logits = softmax_case(rng, 400, 3)
    scores, correct = prob.max(axis=1), prob.argmax(axis=1) == labels
    for args, options in [
        ((Scores(scores), correct), {"bins": 8}),
        ((logits, labels), {"logits": True}),
        ((prob.astype(np.float32), labels), {}),
    ]:
        fast = bootstrap(ECE, *args, n_resamples=25, random_state=1, **options)
        calls = bootstrap(via_calls(ECE), *args, n_resamples=25, random_state=1, **options)
        assert_allclose(fast.bootstrap_distribution, calls.bootstrap_distribution, rtol=1e-12)


@pytest.mark.parametrize(
    ("metric", "options"),
    [(ACE, {"bins": 5}), (TACE, {"bins": 5}), (brier_score, {}), (negative_log_likelihood, {})],
)
def test_other_metrics_are_resampled_through_their_weights(rng, metric, options):
    prob, labels, _ = softmax_case(rng, 120, 3)
    result = bootstrap(metric, prob, labels, n_resamples=5, random_state=4, **options)
    draws = np.random.default_rng(4)
    expected = [
        metric(
            prob,
            labels,
            sample_weight=np.bincount(draws.integers(0, 120, 120), minlength=120),
            **options,
        )
        for _ in range(5)
    ]
    assert_allclose(result.bootstrap_distribution, expected, rtol=1e-12)


def test_a_resample_with_integer_weights_equals_the_resampled_copy(rng):
    # the multinomial weights are the classical bootstrap: duplicated rows
    prob, labels, _ = softmax_case(rng, 150, 3)
    result = bootstrap(ECE, prob, labels, n_resamples=3, random_state=11, bins=6)
    draws = np.random.default_rng(11)
    for value in result.bootstrap_distribution:
        rows = draws.integers(0, 150, 150)
        assert_allclose(value, ECE(prob[rows], labels[rows], bins=6), rtol=1e-12)


# -- bootstrap: the interval ------------------------------------------------------------------


def test_constant_data_gives_a_degenerate_interval():
    # every row the same: every resample equals the estimate (by hand: |0.75 - 1| = 0.25)
    result = bootstrap(ECE, Scores(np.full(20, 0.75)), np.ones(20), n_resamples=50, random_state=0)
    assert result.estimate == 0.25
    assert_array_equal(result.bootstrap_distribution, 0.25)
    assert result.confidence_interval == (0.25, 0.25)
    assert result.standard_error == 0.0


@pytest.mark.parametrize("method", ["percentile", "basic", "BCa"])
def test_interval_equals_scipy_bootstrap_on_the_same_distribution(rng, method):
    n = 60
    prob, labels, _ = softmax_case(rng, n, 3)
    ours = bootstrap(brier_score, prob, labels, n_resamples=300, random_state=2, method=method)

    def statistic(rows, axis=-1):
        rows = np.asarray(rows)
        flat = rows.reshape(-1, rows.shape[-1])
        values = [
            brier_score(prob, labels, sample_weight=np.bincount(r, minlength=n)) for r in flat
        ]
        return np.reshape(values, rows.shape[:-1])

    theirs = scipy_stats.bootstrap(
        (np.arange(n),),
        statistic,
        n_resamples=0,
        bootstrap_result=ours,
        method=method,
        vectorized=True,
    )
    assert_allclose(ours.confidence_interval, tuple(theirs.confidence_interval), rtol=1e-12)
    assert_allclose(ours.standard_error, theirs.standard_error, rtol=1e-12)


def test_result_is_frozen_and_read_only(rng):
    prob, labels, _ = softmax_case(rng, 50, 3)
    result = bootstrap(ECE, prob, labels, n_resamples=10, random_state=0)
    with pytest.raises(AttributeError):
        result.estimate = 0.0
    with pytest.raises(ValueError, match="read-only"):
        result.bootstrap_distribution[0] = 0.0
    low, high = result.confidence_interval
    assert result.confidence_interval.low == low and result.confidence_interval.high == high


def test_same_random_state_same_result_and_inputs_untouched(rng):
    prob, labels, _ = softmax_case(rng, 200, 3)
    weights = rng.uniform(size=200)
    copies = prob.copy(), labels.copy(), weights.copy()
    runs = [
        bootstrap(ECE, prob, labels, n_resamples=20, random_state=5, sample_weight=weights)
        for _ in range(2)
    ]
    assert_array_equal(runs[0].bootstrap_distribution, runs[1].bootstrap_distribution)
    assert runs[0].confidence_interval == runs[1].confidence_interval
    other = bootstrap(ECE, prob, labels, n_resamples=20, random_state=6, sample_weight=weights)
    assert not np.array_equal(other.bootstrap_distribution, runs[0].bootstrap_distribution)
    generator = bootstrap(
        ECE,
        prob,
        labels,
        n_resamples=20,
        random_state=np.random.default_rng(5),
        sample_weight=weights,
    )
    assert_array_equal(generator.bootstrap_distribution, runs[0].bootstrap_distribution)
    for before, after in zip(copies, (prob, labels, weights), strict=True):
        assert_array_equal(before, after)


def test_weight_zero_rows_never_count(rng):
    prob, labels, _ = softmax_case(rng, 100, 3)
    weights = np.ones(100)
    weights[50:] = 0.0
    result = bootstrap(ECE, prob, labels, n_resamples=30, random_state=0, sample_weight=weights)
    assert result.estimate == ECE(prob[:50], labels[:50])
    assert np.isfinite(result.bootstrap_distribution).all()


def test_a_resample_of_weight_zero_rows_only_is_nan_with_a_warning():
    scores = Scores([0.2, 0.9])
    with pytest.warns(UserWarning, match="weight 0"):
        result = bootstrap(
            ECE, scores, [0, 1], n_resamples=40, random_state=0, sample_weight=[1.0, 0.0]
        )
    assert np.isnan(result.bootstrap_distribution).any()
    assert np.isnan(result.confidence_interval).all()


def test_a_metric_that_returns_nan_is_blamed_not_the_rows_of_weight_zero():
    def undefined(prob, labels, sample_weight=None):
        return float("nan")  # a user's metric, undefined on these rows

    prob, labels = np.array([0.2, 0.9, 0.6]), np.array([0, 1, 1])
    with pytest.warns(UserWarning, match="weight") as caught:
        bootstrap(ECE, Scores(prob[:2]), labels[:2], n_resamples=40, random_state=0,
                  sample_weight=[1.0, 0.0])  # fmt: skip
    assert "the metric returned NaN" not in str(caught[0].message)
    with pytest.warns(UserWarning) as caught:
        result = bootstrap(undefined, prob, labels, n_resamples=20, random_state=0,
                           sample_weight=[1.0, 0.0, 1.0])  # fmt: skip
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "weight 0" not in message
    assert message.startswith("the metric returned NaN on 20 of 20 resamples;")
    assert np.isnan(result.confidence_interval).all()


def coverage(metric, true_value, n_seeds, n_rows, **options):
    covered = 0
    for seed in range(n_seeds):
        draws = np.random.default_rng(seed)
        scores = draws.uniform(size=n_rows)
        outcome = draws.uniform(size=n_rows) < scores**2
        low, high = bootstrap(
            metric, Scores(scores), outcome, n_resamples=200, random_state=seed, **options
        ).confidence_interval
        covered += low <= true_value <= high
    return covered / n_seeds


def test_interval_covers_the_true_value_at_about_the_nominal_rate():
    # s ~ U(0, 1), P(y = 1 | s) = s^2: every bin's gap has the same sign, so the binned ECE
    # of the population is E[s - s^2] = 1/2 - 1/3 = 1/6 for any equal-width bins, and the
    # single-probability Brier score is E[(s - y)^2] = 1/3 - 2/4 + 1/3 = 1/6 too.  With 200
    # seeds the coverage of a 95% interval has a standard deviation of 0.015 (measured:
    # 0.935 percentile, 0.925 BCa, 0.94 basic for ECE; 0.95 percentile, 0.94 BCa for Brier).
    assert 0.90 <= coverage(ECE, 1 / 6, 200, 500, bins=5) <= 0.99
    assert 0.90 <= coverage(ECE, 1 / 6, 200, 500, bins=5, method="BCa") <= 0.99
    assert 0.88 <= coverage(brier_score, 1 / 6, 100, 500) <= 1.0


# -- consistency test -------------------------------------------------------------------------


def test_pvalues_are_about_uniform_for_a_calibrated_model():
    pvalues = []
    for seed in range(150):
        draws = np.random.default_rng(seed)
        prob = softmax(draws.normal(size=(300, 3)), axis=1)
        labels = (draws.uniform(size=300)[:, None] > np.cumsum(prob, axis=1)).sum(axis=1)
        result = consistency_test(ECE, prob, labels, n_resamples=99, random_state=seed, bins=5)
        pvalues.append(result.pvalue)
    assert scipy_stats.kstest(pvalues, "uniform").pvalue > 0.01


def test_pvalue_is_tiny_for_a_temperature_2_model(rng):
    _, labels, logits = softmax_case(rng, 2000, 5)
    overconfident = softmax(2 * logits, axis=1)  # labels drawn from softmax(logits)
    result = consistency_test(ECE, overconfident, labels, n_resamples=199, random_state=0)
    assert result.pvalue == 1 / 200
    assert result.statistic == ECE(overconfident, labels)
    assert result.null_distribution.max() < result.statistic


def test_labels_are_drawn_from_the_predicted_distribution(rng):
    prob = rng.dirichlet(np.ones(4), size=500)
    prob[:, 3] = 0.0
    prob /= prob.sum(axis=1, keepdims=True)
    labels = np.zeros(500, dtype=int)
    means = {
        k: consistency_test(
            lambda p, y, k=k: np.mean(y == k), prob, labels, n_resamples=400, random_state=1
        ).null_distribution.mean()
        for k in range(4)
    }
    # mean over 400 x 500 draws: standard error below 0.001
    assert_allclose([means[k] for k in range(4)], prob.mean(axis=0), atol=0.004)
    assert means[3] == 0.0


def test_consistency_test_with_scores_logits_and_weights(rng):
    scores = rng.uniform(size=300)
    targets = rng.uniform(size=300) < scores
    by_scores = consistency_test(ECE, Scores(scores), targets, n_resamples=30, random_state=2)
    log_odds = np.log(scores / (1 - scores))
    by_log_odds = consistency_test(
        ECE, Scores(log_odds), targets, n_resamples=30, random_state=2, logits=True
    )
    assert_allclose(by_scores.null_distribution, by_log_odds.null_distribution, rtol=1e-9)
    weighted = consistency_test(
        ECE,
        Scores(scores),
        targets,
        n_resamples=30,
        random_state=2,
        sample_weight=np.full(300, 2.0),
    )
    assert_allclose(weighted.null_distribution, by_scores.null_distribution, rtol=1e-12)
    again = consistency_test(ECE, Scores(scores), targets, n_resamples=30, random_state=2)
    assert_array_equal(again.null_distribution, by_scores.null_distribution)


# -- per-bin intervals ------------------------------------------------------------------------


def table_of(counts, target_sums, score_sums=None):
    counts = np.array([counts], dtype=float)
    target_sums = np.array([target_sums], dtype=float)
    score_sums = counts / 2 if score_sums is None else np.array([score_sums], dtype=float)
    return CalibrationTable(
        edges=np.linspace(0, 1, counts.shape[1] + 1)[None],
        counts=counts,
        score_sums=score_sums,
        target_sums=target_sums,
        n_classes=2,
        class_conditional=False,
        adaptive_bins=False,
    )


@pytest.mark.parametrize("level", [0.8, 0.95, 0.99])
@pytest.mark.parametrize(
    ("method", "scipy_method"), [("wilson", "wilson"), ("clopper-pearson", "exact")]
)
def test_bin_intervals_equal_scipy_binomtest(method, scipy_method, level):
    counts, successes = [1, 5, 10, 10, 10, 37, 200], [0, 5, 0, 3, 10, 20, 151]
    low, high = table_of(counts, successes).intervals(method, confidence_level=level)
    for b, (n, x) in enumerate(zip(counts, successes, strict=True)):
        expected = scipy_stats.binomtest(x, n).proportion_ci(level, method=scipy_method)
        assert_allclose(
            [low[0, b], high[0, b]], [expected.low, expected.high], rtol=1e-12, atol=1e-15
        )


def test_bin_intervals_nan_for_empty_bins_and_weighted_counts_as_n(rng):
    scores = rng.uniform(0.5, 1, size=40)
    targets = rng.uniform(size=40) < scores
    table = calibration_table(Scores(scores), targets, bins=4, class_conditional=False)
    low, high = table.intervals()
    assert np.isnan(low[0, :2]).all() and np.isnan(high[0, :2]).all()  # scores above 0.5
    assert (low[0, 2:] <= table.mean_target[0, 2:]).all()
    assert (table.mean_target[0, 2:] <= high[0, 2:]).all()
    doubled = calibration_table(
        Scores(scores), targets, bins=4, class_conditional=False, sample_weight=np.full(40, 2.0)
    )
    repeated = calibration_table(
        Scores(np.repeat(scores, 2)), np.repeat(targets, 2), bins=4, class_conditional=False
    )
    for method in ("wilson", "clopper-pearson"):
        assert_allclose(doubled.intervals(method), repeated.intervals(method), rtol=1e-12)
    assert_allclose(
        bin_intervals(table, "clopper-pearson"), table.intervals("clopper-pearson"), rtol=0
    )


def test_consistency_bands_are_binomial_quantiles():
    table = table_of([0, 4, 50], [0, 1, 30], score_sums=[0.0, 0.4, 35.0])
    low, high = table.consistency_bands(confidence_level=0.9)
    assert np.isnan(low[0, 0]) and np.isnan(high[0, 0])
    # by hand for n = 4, p = 0.1: P(X = 0) = 0.6561 >= 0.05, P(X <= 1) = 0.9477 < 0.95
    assert (low[0, 1], high[0, 1]) == (0.0, 0.5)
    assert low[0, 2] == scipy_stats.binom.ppf(0.05, 50, 0.7) / 50
    assert high[0, 2] == scipy_stats.binom.ppf(0.95, 50, 0.7) / 50
    assert_array_equal(consistency_bands(table, 0.9), (low, high))


def test_consistency_bands_hold_a_calibrated_bin_at_the_level():
    draws = np.random.default_rng(0)
    inside = 0
    for _ in range(400):
        scores = draws.uniform(0.6, 0.7, size=60)
        targets = draws.uniform(size=60) < scores
        table = calibration_table(
            Scores(scores), targets, bins=[0, 0.6, 0.7, 1], class_conditional=False
        )
        low, high = table.consistency_bands(0.9)
        inside += low[0, 1] <= table.mean_target[0, 1] <= high[0, 1]
    assert inside / 400 >= 0.88


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_resamples": 0}, ValueError, "`n_resamples` must be an integer >= 1"),
        ({"n_resamples": 2.5}, TypeError, "`n_resamples` must be an integer >= 1"),
        ({"confidence_level": 0}, ValueError, r"`confidence_level` must be a number in \(0, 1\)"),
        ({"confidence_level": 1.0}, ValueError, "`confidence_level`"),
        ({"confidence_level": 95}, ValueError, "`confidence_level`"),
        ({"confidence_level": "0.95"}, TypeError, "`confidence_level`"),
        ({"method": "bias-corrected"}, ValueError, "`method` must be one of 'percentile'"),
        ({"method": 1}, TypeError, "`method`"),
        ({"random_state": "seed"}, TypeError, "`random_state`"),
        ({"sample_weight": [1.0, -1.0, 1.0]}, ValueError, "`sample_weight`"),
        ({"bins": 0}, ValueError, "`bins`"),
    ],
)
def test_bootstrap_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        bootstrap(ECE, [[0.9, 0.1], [0.3, 0.7], [0.5, 0.5]], [0, 1, 1], **kwargs)


def test_bad_metric_and_method_spelling():
    prob, labels = [[0.9, 0.1], [0.3, 0.7]], [0, 1]
    with pytest.raises(TypeError, match="`metric` must be a callable"):
        bootstrap("ECE", prob, labels)
    with pytest.raises(TypeError, match="`metric` must be a callable"):
        consistency_test(None, prob, labels)
    with pytest.raises(TypeError, match="`metric` must return a number"):
        bootstrap(lambda p, y, **kw: "x", prob, labels)
    assert bootstrap(ECE, prob, labels, method="bca", n_resamples=5).method == "BCa"
    with pytest.raises(ValueError, match="ambiguous"):
        bootstrap(ECE, [0.9, 0.2], labels)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_resamples": 0}, ValueError, "`n_resamples`"),
        ({"random_state": 1.5}, TypeError, "`random_state`"),
    ],
)
def test_consistency_test_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        consistency_test(ECE, [[0.9, 0.1], [0.3, 0.7]], [0, 1], **kwargs)


def test_interval_bad_input():
    table = table_of([3, 4], [1, 2])
    with pytest.raises(ValueError, match="`method` must be 'wilson' or 'clopper-pearson'"):
        table.intervals("agresti")
    with pytest.raises(ValueError, match="`confidence_level`"):
        table.intervals(confidence_level=1.5)
    with pytest.raises(ValueError, match="`confidence_level`"):
        table.consistency_bands(confidence_level=0.0)
    with pytest.raises(TypeError, match="`table` must be a CalibrationTable"):
        bin_intervals(np.ones((1, 2)))
    with pytest.raises(TypeError, match="`table` must be a CalibrationTable"):
        consistency_bands([[1.0]])


def test_class_names_with_classes_equal_the_column_indices(rng):
    # Labels as names reach the resampling code as column indices (they used to be refused).
    prob = rng.dirichlet(np.ones(3), size=200)
    indices = rng.integers(0, 3, size=200)
    names = np.array(["cat", "dog", "emu"])[indices]
    named = {"classes": ["cat", "dog", "emu"], "n_resamples": 30, "random_state": 4}
    by_name = bootstrap(ECE, prob, names, **named)
    by_index = bootstrap(ECE, prob, indices, n_resamples=30, random_state=4)
    assert_array_equal(by_name.bootstrap_distribution, by_index.bootstrap_distribution)
    by_name = consistency_test(ECE, prob, names, **named)
    by_index = consistency_test(ECE, prob, indices, n_resamples=30, random_state=4)
    assert_array_equal(by_name.null_distribution, by_index.null_distribution)
    assert by_name.statistic == by_index.statistic
