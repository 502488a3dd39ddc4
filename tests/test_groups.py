"""Calibration by group (calibration_toolbox.groups): by_group and multicalibration_error."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from multicalibration_peers import segment_sets
from numpy.testing import assert_allclose, assert_array_equal

from calibration_toolbox import (
    ACE,
    ECE,
    GCE,
    KSCE,
    MCE,
    RMSCE,
    SCE,
    Scores,
    ToprCE,
    brier_score,
    by_group,
    calibration_table,
    multicalibration_error,
    negative_log_likelihood,
)
from calibration_toolbox.stats import kuiper_test
from tests.conftest import load_real

# PYTHONPATH=. python tests/references/multicalibration_peers.py (scratch environment):
# python 3.11.7, numpy 2.4.6, scipy 1.17.1, pandas 3.1.1, mcgrad 0.1.5
# name: {segments: ((column, value), ...), ecce, sigma, scaled: per segment,
#        summary: (mce_sigma, mce, mce_relative, mce_pvalue, mde, mde_relative)}
MCGRAD_MCE = {
    "segment_a2": {
        "segments": (("a", 1), ("a", 0), ("a", 2), ("b", 1), ("b", 0)),
        "ecce": (
            0.036240415069512553,
            0.018453305336747293,
            0.014882852900395083,
            0.1176656095107578,
            0.04377096528113508,
            0.02922746118173118,
        ),
        "sigma": (
            0.0078200714480704,
            0.013299182603809186,
            0.013541807359439242,
            0.013806322383044132,
            0.011172718274377479,
            0.010948436981855629,
        ),
        "scaled": (
            4.6342818361915175,
            1.3875518433337286,
            1.0990300264477675,
            8.522588872418748,
            3.9176648158680893,
            2.669555593201896,
        ),
        "summary": (
            8.522588872418748,
            0.06664725390484436,
            14.140152879387063,
            2.220446049250313e-16,
            0.039100357240352,
            8.295691069381613,
        ),
    },
    "weighted": {
        "segments": (("a", 2), ("a", 0), ("a", 1), ("b", 0), ("b", 1)),
        "ecce": (
            0.05231458318827689,
            0.08245679634873906,
            0.048869825822090575,
            0.030522009537093914,
            0.019155311554391315,
            0.09130572820897769,
        ),
        "sigma": (
            0.010692686794029014,
            0.018708637443819565,
            0.018355072668289583,
            0.01849382270110506,
            0.015046935241412752,
            0.0151957840733697,
        ),
        "scaled": (
            4.892557333437493,
            4.407418583868,
            2.6624697545610156,
            1.6503894316706158,
            1.273037415730436,
            6.008622376320094,
        ),
        "summary": (
            6.008622376320094,
            0.0642483171335851,
            14.648759387589127,
            7.484254327394524e-09,
            0.05346343397014507,
            12.189782008368264,
        ),
    },
}
MCGRAD_P_ATOL = 1e-15


def problem(rng, n=3000, k=4, n_groups=5):
    prob = rng.dirichlet(np.full(k, 0.7), size=n)
    labels = rng.integers(0, k, n)
    return prob, labels, rng.integers(0, n_groups, n)


def loop_values(metric, prob, labels, groups, weights=None, **options):
    """The definition: one call per group on a copy of its rows (a loop over the groups)."""
    values = []
    for name in np.unique(groups):
        rows = np.flatnonzero(groups == name)
        w = None if weights is None else weights[rows]
        values.append(metric(prob[rows], labels[rows], sample_weight=w, **options))
    return np.array(values)


TABLE_METRICS = [
    (ECE, {}),
    (RMSCE, {"bins": 7}),
    (MCE, {}),
    (SCE, {}),
    (ToprCE, {"r": 2}),
    (GCE, {"class_conditional": True, "top_k_classes": "all", "norm": 2, "debias": True}),
    (functools.partial(ECE, bins=np.array([0, 0.3, 0.5, 0.9, 1.0])), {}),
]
CALL_METRICS = [(ACE, {}), (KSCE, {}), (brier_score, {}), (negative_log_likelihood, {})]
ids = {"ids": lambda value: getattr(value, "__name__", "partial") if callable(value) else ""}


@pytest.mark.parametrize(("metric", "options"), TABLE_METRICS, **ids)
@pytest.mark.parametrize("weighted", [False, True])
def test_the_table_path_gives_each_groups_own_call(rng, metric, options, weighted):
    prob, labels, groups = problem(rng)
    weights = rng.uniform(0.1, 3, len(labels)) if weighted else None
    result = by_group(metric, prob, labels, groups, sample_weight=weights, **options)
    assert result.method == "table"
    expected = loop_values(metric, prob, labels, groups, weights, **options)
    assert_allclose(result.values, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("metric", "options"), CALL_METRICS, **ids)
def test_other_metrics_are_called_per_group(rng, metric, options):
    prob, labels, groups = problem(rng, n=800)
    weights = rng.uniform(0.1, 3, len(labels))
    result = by_group(metric, prob, labels, groups, sample_weight=weights, **options)
    assert result.method == "calls"
    assert_array_equal(result.values, loop_values(metric, prob, labels, groups, weights))


def test_string_labels_counts_worst_and_table(rng):
    prob, labels, codes = problem(rng)
    names = np.array(["north", "east", "south", "west", "up"])[codes]
    weights = rng.integers(1, 4, len(labels)).astype(float)
    result = by_group(ECE, prob, labels, names, sample_weight=weights)
    assert result.names.tolist() == ["east", "north", "south", "up", "west"]
    assert_array_equal(result.counts, [np.sum(names == n) for n in result.names])
    assert_allclose(result.weighted_counts, [weights[names == n].sum() for n in result.names])
    assert result.worst == int(np.argmax(result.values))
    assert result.worst_name == result.names[result.worst]
    assert result.worst_value == max(result.values)
    table = result.table()
    assert list(table) == result.names.tolist()
    assert table["east"]["value"] == result.values[0]
    assert isinstance(table["east"]["count"], int)


def test_overlapping_groups_of_a_boolean_matrix(rng):
    prob, labels, _ = problem(rng, n=1500)
    matrix = rng.random((1500, 4)) < [0.5, 0.2, 0.9, 0.0]
    for metric in (ECE, SCE, KSCE):
        result = by_group(metric, prob, labels, matrix, group_names=["a", "b", "c", "none"])
        expected = [metric(prob[column], labels[column]) for column in matrix.T[:3]]
        assert_allclose(result.values[:3], expected, rtol=1e-12)
        assert np.isnan(result.values[3]) and result.counts[3] == 0
        assert result.names.tolist() == ["a", "b", "c", "none"]
        assert_array_equal(result.counts, matrix.sum(axis=0))


@pytest.mark.parametrize("metric", [ECE, SCE, KSCE], **ids)
def test_weight_two_is_a_duplicated_row(rng, metric):
    prob, labels, groups = problem(rng, n=600)
    weights = rng.integers(0, 3, 600)
    repeated = np.repeat(np.arange(600), weights)
    weighted = by_group(metric, prob, labels, groups, sample_weight=weights.astype(float))
    duplicated = by_group(metric, prob[repeated], labels[repeated], groups[repeated])
    assert_allclose(weighted.values, duplicated.values, rtol=1e-12)
    assert_array_equal(weighted.weighted_counts, duplicated.counts)


def test_a_group_of_weight_zero_has_no_value(rng):
    prob, labels, groups = problem(rng, n=500, n_groups=3)
    weights = np.where(groups == 1, 0.0, 1.0)
    for metric in (ECE, KSCE):
        result = by_group(metric, prob, labels, groups, sample_weight=weights)
        assert np.isnan(result.values[1]) and result.weighted_counts[1] == 0
        assert result.worst != 1


def test_scores_and_logits(rng):
    scores = rng.uniform(size=1000)
    targets = (rng.uniform(size=1000) < scores**2).astype(int)
    groups = rng.integers(0, 3, 1000)
    result = by_group(ECE, Scores(scores), targets, groups)
    expected = [ECE(Scores(scores[groups == g]), targets[groups == g]) for g in range(3)]
    assert result.method == "table"
    assert_allclose(result.values, expected, rtol=1e-12)
    logits = rng.normal(size=(1000, 3)) * 3
    labels = rng.integers(0, 3, 1000)
    for metric in (ECE, negative_log_likelihood):
        result = by_group(metric, logits, labels, groups, logits=True)
        expected = loop_values(metric, logits, labels, groups, logits=True)
        assert_allclose(result.values, expected, rtol=1e-12)


def test_inputs_are_not_modified(rng):
    prob, labels, groups = problem(rng, n=300)
    weights = rng.uniform(size=300)
    copies = [array.copy() for array in (prob, labels, groups, weights)]
    by_group(SCE, prob, labels, groups, sample_weight=weights)
    by_group(KSCE, prob, labels, groups, sample_weight=weights)
    multicalibration_error(prob, labels, groups, sample_weight=weights)
    for array, copy in zip((prob, labels, groups, weights), copies, strict=True):
        assert_array_equal(array, copy)


@given(
    n_groups=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
    class_wise=st.booleans(),
    weighted=st.booleans(),
)
def test_groups_that_partition_the_rows_sum_to_the_global_table(
    n_groups, seed, class_wise, weighted
):
    rng = np.random.default_rng(seed)
    prob, labels, groups = problem(rng, n=200, k=3, n_groups=n_groups)
    weights = rng.uniform(0, 2, 200) if weighted else None
    options = {"class_conditional": class_wise, "top_k_classes": "all" if class_wise else 1}
    metric = functools.partial(GCE, bins=6, **options)
    result = by_group(metric, prob, labels, groups, sample_weight=weights)
    whole = calibration_table(prob, labels, bins=6, sample_weight=weights, **options)
    total = sum(result.tables)
    for name in ("counts", "score_sums", "target_sums"):
        assert_allclose(getattr(total, name), getattr(whole, name), rtol=1e-12, atol=1e-12)
    assert_array_equal(total.edges, whole.edges)


@pytest.mark.parametrize(
    ("groups", "options", "error", "message"),
    [
        (np.zeros(3), {}, ValueError, r"`groups` must be one label per row, shape \(10,\)"),
        (np.zeros((10, 2)), {}, TypeError, "`groups` as a matrix must be boolean"),
        (np.zeros((10, 2), bool), {"group_names": ["a"]}, ValueError, "`group_names` must be 2"),
        (np.zeros(10), {"group_names": ["a"]}, TypeError, "`group_names` names the columns"),
        (np.full(10, np.nan), {}, TypeError, "`groups` labels must be integers"),
        (np.zeros((10, 0), bool), {}, ValueError, "`groups` as a matrix needs a column"),
    ],
)
def test_bad_groups_are_refused(groups, options, error, message):
    prob = np.full((10, 2), 0.5)
    with pytest.raises(error, match=message):
        by_group(ECE, prob, np.zeros(10, int), groups, **options)


def test_a_metric_without_one_number_is_refused():
    prob = np.full((4, 2), 0.5)
    with pytest.raises(ValueError, match="`metric` calibration_table returns no single number"):
        by_group(calibration_table, prob, np.zeros(4, int), np.zeros(4))
    with pytest.raises(TypeError, match="`metric` must be a metric function"):
        by_group("ECE", prob, np.zeros(4, int), np.zeros(4))


def test_real_predictions_by_true_class():
    prob, labels = load_real("wideresnet-16-4-cifar-10")
    for metric in (ECE, SCE):
        result = by_group(metric, prob, labels, labels)
        expected = [metric(prob[labels == k], labels[labels == k]) for k in range(10)]
        assert_allclose(result.values, expected, rtol=1e-12)
        assert_array_equal(result.counts, np.bincount(labels))


# -- multicalibration ---------------------------------------------------------------------------
def mcgrad_segments(a, b, segments):
    return np.column_stack([{"a": a, "b": b}[column] == value for column, value in segments])


@pytest.mark.parametrize("name", list(MCGRAD_MCE))
def test_multicalibration_matches_mcgrad(name):
    scores, targets, a, b, weights = segment_sets()[name]
    peer = MCGRAD_MCE[name]
    matrix = mcgrad_segments(a, b, peer["segments"])
    result = multicalibration_error(Scores(scores), targets, matrix, sample_weight=weights)
    assert_allclose(result.statistics, peer["ecce"], rtol=1e-12)
    assert_allclose(result.sigma, peer["sigma"], rtol=1e-12)
    assert_allclose(result.scaled, peer["scaled"], rtol=1e-12)
    sigmas, error, relative, pvalue, mde, mde_relative = peer["summary"]
    assert_allclose(
        [result.sigmas, result.error, result.relative, result.mde, result.mde_relative],
        [sigmas, error, relative, mde, mde_relative],
        rtol=1e-12,
    )
    assert_allclose(result.pvalue, pvalue, rtol=1e-12, atol=MCGRAD_P_ATOL)


def test_each_segment_is_the_kuiper_test_of_its_rows(rng):
    prob, labels, groups = problem(rng, n=2000)
    weights = rng.uniform(0.1, 2, 2000)
    result = multicalibration_error(prob, labels, groups, sample_weight=weights)
    assert result.names.tolist() == ["all", "0", "1", "2", "3", "4"]
    tests = [kuiper_test(prob, labels, sample_weight=weights)] + [
        kuiper_test(prob[groups == g], labels[groups == g], sample_weight=weights[groups == g])
        for g in range(5)
    ]
    assert_allclose(result.statistics, [t.statistic for t in tests], rtol=1e-12)
    assert_allclose(result.scaled, [t.scaled_statistic for t in tests], rtol=1e-12)
    assert_allclose(result.pvalues, [t.pvalue for t in tests], rtol=1e-12)
    assert result.sigmas == max(t.scaled_statistic for t in tests)
    assert result.mde == 5 * tests[0].sigma
    without = multicalibration_error(prob, labels, groups, include_all=False)
    assert without.names.tolist() == ["0", "1", "2", "3", "4"]


def test_multicalibration_finds_the_miscalibrated_group(rng):
    scores = rng.uniform(size=6000)
    group = rng.integers(0, 3, 6000)
    events = rng.uniform(size=6000) < np.where(group == 2, scores**2, scores)
    result = multicalibration_error(Scores(scores), events, group)
    assert result.names[result.worst] == "2"
    assert result.pvalue < 1e-6


def test_a_segment_of_constant_scores_follows_mcgrad():
    # sigma 0: a range of 0 scales to 0 and a positive range to inf, as mcgrad's.
    scores = np.array([0.0, 0.0, 1.0, 1.0, 0.3, 0.6, 0.2, 0.9])
    targets = np.array([0, 0, 1, 0, 1, 0, 0, 1])
    groups = np.array([0, 0, 1, 1, 2, 2, 2, 2])
    result = multicalibration_error(Scores(scores), targets, groups)
    assert result.scaled[1] == 0.0 and result.scaled[2] == np.inf
    assert result.sigmas == np.inf and result.names[result.worst] == "1"


def test_dask_arrays_are_refused_with_the_way_out(rng):
    da = pytest.importorskip("dask.array")
    prob, labels, groups = problem(rng, n=100)
    with pytest.raises(TypeError, match=r"`prob` must be an array in memory.*\.compute\(\)"):
        by_group(ECE, da.from_array(prob, chunks=50), labels, groups)
    with pytest.raises(TypeError, match="`groups` must be an array in memory"):
        by_group(ECE, prob, labels, da.from_array(groups, chunks=50))
