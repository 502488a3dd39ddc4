"""Venn-Abers predictors: the tables against one isotonic fit per test score and label."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import isotonic_regression
from venn_abers_peers import synthetic_binary

import calibration_toolbox as ct
from calibration_toolbox.recalibration import venn_abers
from tests.conftest import load_real

# python tests/references/venn_abers_peers.py (venn-abers 1.5.4, float64 inputs): per seeded
# binary set, the sums of p0, p1 and p = p1 / (1 - p0 + p1) over the 200 test scores and
# (p0, p1) of the first three; then lenet-5-cifar-10 rows 0-999 calibrating rows 1000-1999,
# one-vs-rest: the sums of p0 and p1, the sum of the squared normalised probabilities and
# the first row.  The peer builds the same tables (p0 read at side 'right', p1 at 'left').
VENN_ABERS = {
    0: (
        59.150255098072435,
        71.14662570918392,
        66.09696794890081,
        [0.36538461538461536, 0.0, 0.0],
        [0.38461538461538464, 0.0975609756097561, 0.015384615384615385],
    ),
    1: (
        64.9316728307289,
        75.63923729941305,
        71.03227058618018,
        [0.21739130434782608, 0.8888888888888888, 0.0],
        [0.2391304347826087, 1.0, 0.03333333333333333],
    ),
    2: (
        56.85673246437586,
        66.88675098155804,
        62.79604563469186,
        [0.058823529411764705, 0.058823529411764705, 0.6363636363636364],
        [0.08823529411764706, 0.1, 0.6875],
    ),
}
VENN_ABERS_LENET = (
    942.431943635142,
    1130.2115906657732,
    391.2389988268802,
    [
        0.017485489776082913,
        0.004515126743774933,
        0.04766308663385831,
        0.15315692235786946,
        0.08442411501518227,
        0.5933595765049359,
        0.030989215436594,
        0.05499628063846159,
        0.002493014766501497,
        0.01091717212673939,
    ],
)


def brute_force_pair(scores, labels, test, weights=None):
    """(p0, p1) of each test score: an isotonic fit on calibration + (s, y), y = 0, 1."""
    weights = np.ones(len(scores)) if weights is None else np.asarray(weights, float)
    pairs = np.empty((len(test), 2))
    for row, s in enumerate(test):  # the slow oracle loops on purpose
        for label in (0, 1):
            x = np.append(scores, s)
            t = np.append(labels, label).astype(float)
            w = np.append(weights, 1.0)
            distinct, inverse = np.unique(x, return_inverse=True)
            totals = np.bincount(inverse, weights=w)
            positives = np.bincount(inverse, weights=w * t)
            fit = isotonic_regression(positives / totals, weights=totals).x
            pairs[row, label] = fit[np.searchsorted(distinct, s)]
    return pairs


def test_hand_computed_example():
    # Calibration (0.1, 0), (0.3, 1), (0.4, 0), (0.6, 1), (0.8, 1), (0.9, 1); test 0.2 with
    # label 0: fit 0, 0 | 0.5, 0.5 | 1, 1, 1, so p0 = 0; label 1: 0 | 2/3, 2/3, 2/3 | 1...,
    # so p1 = 2/3 and p = (2/3) / (1 + 2/3) = 0.4.
    scores = np.array([0.1, 0.3, 0.4, 0.6, 0.8, 0.9])
    labels = np.array([0, 1, 0, 1, 1, 1])
    venn = ct.VennAbersCalibration().fit(scores, labels)
    p0, p1 = venn.predict_interval([0.2])
    assert_allclose([p0[0], p1[0]], [0.0, 2 / 3], rtol=1e-15)
    assert_allclose(venn.predict_proba([0.2])[0, 1], 0.4, rtol=1e-15)
    brier = ct.VennAbersCalibration(merge="brier").fit(scores, labels)
    assert_allclose(brier.predict_proba([0.2])[0, 1], 2 / 3 + (0 - 4 / 9) / 2, rtol=1e-15)


@pytest.mark.parametrize("seed", range(40))
def test_tables_equal_one_isotonic_fit_per_test_score(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    # Few distinct values: many ties among the calibration scores and with the test scores.
    levels = int(rng.integers(1, 15))
    scores = rng.integers(0, levels, n) / levels
    labels = (rng.random(n) < rng.random()).astype(int)
    weights = None if seed % 3 else rng.choice([0.25, 1.0, 2.0, 3.5], n)
    test = np.concatenate([np.unique(scores), rng.random(20), [0.0, 1.0]])
    venn = ct.VennAbersCalibration().fit(scores, labels, sample_weight=weights)
    p0, p1 = venn.predict_interval(test)
    expected = brute_force_pair(scores, labels, test, weights)
    assert_allclose(p0, expected[:, 0], rtol=1e-12, atol=1e-14)
    assert_allclose(p1, expected[:, 1], rtol=1e-12, atol=1e-14)
    assert (p0 <= p1).all()


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 1), st.integers(1, 3)), min_size=1, max_size=12
    ),
    st.lists(st.integers(-1, 13), min_size=1, max_size=6),
)
def test_property_pairs_match_the_oracle(rows, tests):
    scores = np.array([row[0] / 6 for row in rows])
    labels = np.array([row[1] for row in rows])
    weights = np.array([float(row[2]) for row in rows])
    test = np.clip(np.array(tests) / 12, 0, 1)
    venn = ct.VennAbersCalibration().fit(scores, labels, sample_weight=weights)
    p0, p1 = venn.predict_interval(test)
    expected = brute_force_pair(scores, labels, test, weights)
    assert_allclose(np.stack([p0, p1], axis=1), expected, rtol=1e-12, atol=1e-14)
    # Both maps are non-decreasing in the score.
    order = np.argsort(test, kind="stable")
    assert (np.diff(p0[order]) >= -1e-15).all() and (np.diff(p1[order]) >= -1e-15).all()


# The same rows one-vs-one: sums of p0 and p1 over the 45 pairs, the squared probabilities
# and the first row (the peer couples the pairs by Price et al.'s formula, as here).
VENN_ABERS_LENET_OVO = (
    19507.17049491581,
    23215.807956266144,
    330.0717674265348,
    [
        0.021153198781876735,
        0.0037028382488973662,
        0.10108559150945966,
        0.17485099195871828,
        0.12522061331747394,
        0.4461977693724733,
        0.026255691465837304,
        0.09111528032245012,
        0.003149606642539269,
        0.007268418380273931,
    ],
)


@pytest.mark.parametrize("seed", sorted(VENN_ABERS))
def test_binary_matches_venn_abers_package(seed):
    scores, labels, test = synthetic_binary(seed)
    sum_p0, sum_p1, sum_p, first_p0, first_p1 = VENN_ABERS[seed]
    venn = ct.VennAbersCalibration().fit(scores, labels)
    p0, p1 = venn.predict_interval(test)
    assert_allclose([p0.sum(), p1.sum()], [sum_p0, sum_p1], rtol=1e-13)
    assert_allclose(venn.predict_proba(test)[:, 1].sum(), sum_p, rtol=1e-13)
    assert_allclose(p0[:3], first_p0, rtol=1e-13, atol=1e-15)
    assert_allclose(p1[:3], first_p1, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("multiclass", ["ovr", "ovo"])
def test_multiclass_matches_venn_abers_package_on_real_predictions(multiclass):
    prob, labels = load_real("lenet-5-cifar-10")
    prob = prob[:2000].astype(np.float64)
    venn = ct.VennAbersCalibration(multiclass=multiclass).fit(prob[:1000], labels[:1000])
    p0, p1 = venn.predict_interval(prob[1000:])
    probs = venn.predict_proba(prob[1000:])
    reference = VENN_ABERS_LENET if multiclass == "ovr" else VENN_ABERS_LENET_OVO
    sum_p0, sum_p1, squares, first_row = reference
    assert_allclose([p0.sum(), p1.sum(), (probs**2).sum()], [sum_p0, sum_p1, squares], rtol=1e-13)
    assert_allclose(probs[0], first_row, rtol=1e-12)


def test_one_vs_rest_is_one_binary_predictor_per_class():
    rng = np.random.default_rng(5)
    prob = rng.dirichlet(np.ones(3), 60)
    labels = rng.integers(0, 3, 60)
    venn = ct.VennAbersCalibration().fit(prob, labels)
    p0, p1 = venn.predict_interval(prob[:10])
    merged = np.empty((10, 3))
    for k in range(3):
        expected = brute_force_pair(prob[:, k], labels == k, prob[:10, k])
        assert_allclose(p0[:, k], expected[:, 0], rtol=1e-12, atol=1e-14)
        assert_allclose(p1[:, k], expected[:, 1], rtol=1e-12, atol=1e-14)
        merged[:, k] = expected[:, 1] / (1 - expected[:, 0] + expected[:, 1])
    expected_probs = merged / merged.sum(axis=1, keepdims=True)
    assert_allclose(venn.predict_proba(prob[:10]), expected_probs, rtol=1e-12)


def test_one_vs_one_couples_the_pairwise_predictors():
    rng = np.random.default_rng(9)
    prob = rng.dirichlet(np.ones(3), 90)
    labels = rng.integers(0, 3, 90)
    test = rng.dirichlet(np.ones(3), 8)
    venn = ct.VennAbersCalibration(multiclass="ovo").fit(prob, labels)
    p0, p1 = venn.predict_interval(test)
    pairwise = np.empty((8, 3))
    for problem, (i, j) in enumerate([(0, 1), (0, 2), (1, 2)]):
        rows = (labels == i) | (labels == j)
        score = prob[rows, j] / (prob[rows, i] + prob[rows, j])
        expected = brute_force_pair(
            score, labels[rows] == j, test[:, j] / (test[:, i] + test[:, j])
        )
        assert_allclose(p0[:, problem], expected[:, 0], rtol=1e-12, atol=1e-14)
        assert_allclose(p1[:, problem], expected[:, 1], rtol=1e-12, atol=1e-14)
        pairwise[:, problem] = expected[:, 1] / (1 - expected[:, 0] + expected[:, 1])
    r = {(0, 1): 1 - pairwise[:, 0], (0, 2): 1 - pairwise[:, 1], (1, 2): 1 - pairwise[:, 2]}
    r.update({(j, i): 1 - value for (i, j), value in list(r.items())})
    coupled = np.stack(
        [1 / (sum(1 / r[k, other] for other in range(3) if other != k) - 1) for k in range(3)],
        axis=1,
    )
    assert_allclose(venn.predict_proba(test), coupled / coupled.sum(1, keepdims=True), rtol=1e-12)


def test_one_vs_one_pair_without_rows_is_the_test_row_alone():
    prob = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1]])
    with pytest.warns(UserWarning, match=r"classes \[2\] never occur"):
        venn = ct.VennAbersCalibration(multiclass="ovo").fit(prob, [0, 0, 1])
    p0, p1 = venn.predict_interval(prob)
    assert_array_equal(p0[:, 2], 0.0)  # the pair (1, 2): class 2 never occurs, class 1 once
    expected = brute_force_pair(
        prob[2:, 2] / prob[2:, 1:].sum(1), [0], prob[:, 2] / prob[:, 1:].sum(1)
    )
    assert_allclose(p1[:, 2], expected[:, 1], rtol=1e-15)
    with pytest.warns(UserWarning, match=r"classes \[1, 2\] never occur"):
        single = ct.VennAbersCalibration(multiclass="ovo").fit(prob, [0, 0, 0])
    p0, p1 = single.predict_interval(prob)
    assert_array_equal(p0[:, 2], 0.0)
    assert_array_equal(p1[:, 2], 1.0)  # no row of class 1 or 2: the test row alone


def test_cross_predictor_merges_the_fold_predictors():
    rng = np.random.default_rng(7)
    scores = rng.random(90)
    labels = (rng.random(90) < scores).astype(int)
    test = rng.random(15)
    for merge in ("log", "brier"):
        venn = ct.VennAbersCalibration(cv=3, merge=merge, random_state=4).fit(scores, labels)
        folds = np.array_split(np.random.default_rng(4).permutation(90), 3)
        pairs = np.stack([brute_force_pair(scores[f], labels[f], test) for f in folds])
        p0, p1 = pairs[..., 0], pairs[..., 1]
        if merge == "log":
            high = np.exp(np.log(p1).mean(axis=0))
            low = np.exp(np.log(1 - p0).mean(axis=0))
            expected = high / (low + high)
            interval = venn.predict_interval(test)
            assert_allclose(interval[1], high, rtol=1e-12)
            assert_allclose(interval[0], 1 - low, rtol=1e-12, atol=1e-15)
        else:
            expected = p1.mean(0) + ((p0**2).mean(0) - (p1**2).mean(0)) / 2
        assert_allclose(venn.predict_proba(test)[:, 1], expected, rtol=1e-12)


@pytest.mark.parametrize("steps", [1, 50])
def test_bisection_and_stepping_find_the_same_tangents(steps, monkeypatch):
    # With one stepping pass most tangents are found by bisection; with many, by stepping.
    monkeypatch.setattr(venn_abers, "_STEPS", steps)
    rng = np.random.default_rng(11)
    scores = rng.random(400)
    labels = (rng.random(400) < scores**3).astype(int)
    test = np.concatenate([scores[:50], rng.random(50)])
    p0, p1 = ct.VennAbersCalibration().fit(scores, labels).predict_interval(test)
    expected = brute_force_pair(scores, labels, test)
    assert_allclose(p0, expected[:, 0], rtol=1e-12, atol=1e-14)
    assert_allclose(p1, expected[:, 1], rtol=1e-12, atol=1e-14)


def test_upper_table_on_a_small_diagram():
    # The cumulative maximum over tangent slopes, read directly (one score per point).
    weights = np.array([1.0, 1.0, 1.0, 1.0])
    positives = np.array([1.0, 0.0, 0.0, 0.0])
    vertices = isotonic_regression(positives / weights, weights=weights).blocks
    upper = venn_abers._upper_table(weights, positives, vertices)
    scores = np.arange(4.0)
    expected = brute_force_pair(scores, positives, scores - 0.5)[:, 1]
    assert_allclose(upper[:4], expected, rtol=1e-15)
    assert upper[-1] == 1.0


def test_save_and_load_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    prob = rng.dirichlet(np.ones(4), 80)
    labels = rng.integers(0, 4, 80)
    venn = ct.VennAbersCalibration(cv=2).fit(prob, labels)
    path = tmp_path / "venn.json"
    venn.save(path)
    loaded = ct.load_recalibrator(path)
    assert_array_equal(loaded.predict_proba(prob), venn.predict_proba(prob))


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="`merge` must be"):
        ct.VennAbersCalibration(merge="mean").fit([0.2, 0.8], [0, 1])
    with pytest.raises(ValueError, match="`cv` must be at most the number of rows"):
        ct.VennAbersCalibration(cv=3).fit([0.2, 0.8], [0, 1])
    with pytest.raises(ValueError, match="`cv` must be None or an integer >= 2"):
        ct.VennAbersCalibration(cv=1).fit([0.2, 0.8], [0, 1])
    with pytest.raises(ValueError, match="`cv` must be at most the number of rows"):
        ct.VennAbersCalibration(cv=2).fit([0.2, 0.8], [0, 1], sample_weight=[1.0, 0.0])


def test_inputs_are_not_mutated():
    scores = np.array([0.3, 0.1, 0.3, 0.9])
    labels = np.array([0, 0, 1, 1])
    copies = scores.copy(), labels.copy()
    venn = ct.VennAbersCalibration().fit(scores, labels)
    venn.predict_proba(scores)
    assert_array_equal(scores, copies[0])
    assert_array_equal(labels, copies[1])
