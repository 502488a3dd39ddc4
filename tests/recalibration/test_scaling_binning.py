"""Scaling-binning calibration (Kumar, Liang & Ma 2019): ``ScalingBinning``.

References: a row-by-row loop oracle of the binning steps written from the paper's
Algorithm 1 (the split, the equal-mass edges of ``g`` on ``T_2``, the mean of ``g`` per bin
on ``T_3``), the first-order conditions of the Platt step, and the authors' package
``uncertainty-calibration`` 0.1.4 (``tests/references/scaling_binning_peers.py``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scaling_binning_peers import N_BINS, TEST_POINTS, scaling_sets
from scipy.special import softmax

import calibration_toolbox as ct
from calibration_toolbox.datasets import make_overconfident
from calibration_toolbox.recalibration._base import log_odds
from calibration_toolbox.recalibration.scaling_binning import (
    ScalingBinning,
    _scaled,
    binned_means,
)
from tests.conftest import load_real

# Printed by `python tests/references/scaling_binning_peers.py` (its docstring has the
# environment): uncertainty-calibration 0.1.4 fitted on all 600 rows of each set.
PEER = {
    "binary": {
        "a": 1.1659422533887873,
        "b": -1.1040970615771037,
        "edges": [
            0.030567720566042837,
            0.06838598181139854,
            0.10415484458774685,
            0.16168003454681168,
            0.22470376844370604,
            0.31472935535213203,
            0.45187068972223665,
            0.5982520660708557,
            0.7807742137554379,
            1.0,
        ],
        "means": [
            0.017449948953942817,
            0.048122323523501855,
            0.08377378710537162,
            0.13491283876747487,
            0.19508944365913736,
            0.26468334221964507,
            0.3842561359031819,
            0.5262029264308397,
            0.6926136379043398,
            0.8693902545666421,
        ],
        "outputs": [
            0.017449948953942817,
            0.048122323523501855,
            0.13491283876747487,
            0.26468334221964507,
            0.3842561359031819,
            0.6926136379043398,
            0.8693902545666421,
        ],
    },
    "top-label": {
        "a": 0.6158455470951683,
        "b": -0.4814796315007103,
        "edges": [
            0.38292218917832493,
            0.42929515801387597,
            0.46030269825635306,
            0.5017601857565643,
            0.5599096487200779,
            0.6175931026703683,
            0.6696807173902275,
            0.7308059651207304,
            0.8134732877327258,
            1.0,
        ],
        "means": [
            0.3609580735976608,
            0.4065807936599025,
            0.44456945481758303,
            0.480943932324364,
            0.5308075803622472,
            0.5852942180299763,
            0.6447422472385028,
            0.697885662415408,
            0.7695439929871191,
            0.8786319046508271,
        ],
        "outputs": [
            0.4065807936599025,
            0.8786319046508271,
            0.6447422472385028,
            0.7695439929871191,
            0.697885662415408,
            0.697885662415408,
        ],
    },
}


# -- the loop oracle -------------------------------------------------------------------------
def oracle_split(n_samples, split, seed):
    """The documented rule: a seeded permutation cut into thirds, larger parts first."""
    if split == "none":
        return [list(range(n_samples))] * 3
    order = [int(i) for i in np.random.default_rng(seed).permutation(n_samples)]
    size, extra = divmod(n_samples, 3)
    parts, start = [], 0
    for part in range(3):
        stop = start + size + (1 if part < extra else 0)
        parts.append(sorted(order[start:stop]))
        start = stop
    return parts


def oracle_edges(values, weights, n_bins):
    """Nixon's equal-mass edges, one row at a time: the sorted value at position round(n j
    / B) (half to even), or (weighted) the row whose weight interval [c_(i-1), c_i) holds
    round(n j / B) mean weights."""
    pairs = sorted(zip(values, weights, strict=False))
    n = len(pairs)
    total = sum(weight for _, weight in pairs)
    edges = [0.0]
    for j in range(1, n_bins):
        position = round(n * j / n_bins)
        target = position * total / n
        running, chosen = 0.0, n - 1
        for i, (_, weight) in enumerate(pairs):
            running += weight
            if running > target:
                chosen = i
                break
        edges.append(pairs[min(chosen, n - 1)][0])
    return [*edges, 1.0]


def oracle_means(values, weights, edges):
    """The weighted mean of ``g`` per bin ``#{j : e_j <= v}``; an empty bin: its centre."""
    n_bins = len(edges) - 1
    sums, totals = [0.0] * n_bins, [0.0] * n_bins
    for value, weight in zip(values, weights, strict=False):
        b = sum(1 for edge in edges[1:-1] if edge <= value)
        sums[b] += weight * value
        totals[b] += weight
    means = [
        sums[b] / totals[b] if totals[b] > 0 else (edges[b] + edges[b + 1]) / 2
        for b in range(n_bins)
    ]
    return means, totals


def oracle_problems(prob, labels, mode):
    """(score column, 0/1 target column) of each binary problem, one row at a time."""
    n_samples, n_classes = prob.shape
    if mode == "top-label":
        top = [max(range(n_classes), key=lambda k: (prob[i, k], -k)) for i in range(n_samples)]
        scores = [float(prob[i, top[i]]) for i in range(n_samples)]
        return [(scores, [int(top[i] == labels[i]) for i in range(n_samples)])]
    columns = [1] if n_classes == 2 else range(n_classes)
    return [
        (
            [float(prob[i, k]) for i in range(n_samples)],
            [int(labels[i] == k) for i in range(n_samples)],
        )
        for k in columns
    ]


def check_against_oracle(model, prob, labels, weights, rtol=1e-12):
    n_samples = len(labels)
    weights = np.ones(n_samples) if weights is None else weights
    parts = oracle_split(n_samples, model.split, model.random_state)
    for g, (scores, targets) in enumerate(oracle_problems(prob, labels, model.mode)):
        # Step 1: (a, b) is the maximum-likelihood logistic fit on T_1 (its gradient is 0).
        a, b = model.coef_[g], model.intercept_[g]
        grad_a = grad_b = 0.0
        for i in parts[0]:
            s = min(max(scores[i], 1e-300), 1.0)
            z = math.log(s) - math.log(max(1.0 - scores[i], 1e-300))
            residual = weights[i] * (1.0 / (1.0 + math.exp(-(a * z + b))) - targets[i])
            grad_a += residual * z
            grad_b += residual
        scale = sum(weights[i] for i in parts[0])
        assert abs(grad_a) < 1e-7 * scale and abs(grad_b) < 1e-7 * scale
        values = _scaled(np.asarray(scores), a, b)  # g itself: the library's formula
        edges = oracle_edges(
            [values[i] for i in parts[1]],
            [weights[i] for i in parts[1]],
            model.bin_edges_.shape[1] - 1,
        )
        assert_array_equal(model.bin_edges_[g], edges)
        means, totals = oracle_means(
            [values[i] for i in parts[2]], [weights[i] for i in parts[2]], edges
        )
        assert_allclose(model.bin_probabilities_[g], means, rtol=rtol, atol=0)
        assert_allclose(model.bin_weights_[g], totals, rtol=rtol, atol=0)


def multiclass(n, k, seed, dtype=np.float64):
    logits, labels = make_overconfident(n, k, temperature=2.5, seed=seed)
    return softmax(logits, axis=1).astype(dtype), labels


CONFIGS = [
    ("binary", 2, "one-vs-rest"),
    ("one-vs-rest", 4, "one-vs-rest"),
    ("top-label", 5, "top-label"),
]


@pytest.mark.parametrize("split", ["three-way", "none"])
@pytest.mark.parametrize(("name", "n_classes", "mode"), CONFIGS)
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_the_loop_oracle(name, n_classes, mode, split, weighted):
    prob, labels = multiclass(301, n_classes, seed=n_classes)
    rng = np.random.default_rng(5)
    # dyadic weights: every sum of the oracle is exact
    weights = rng.integers(1, 8, len(labels)) / 4.0 if weighted else None
    model = ScalingBinning(bins=7, mode=mode, split=split, random_state=3)
    model.fit(prob, labels, sample_weight=weights)
    check_against_oracle(model, prob, labels, weights)
    # prediction: the bin value of g(s) for every row, combined as the other binnings
    for g, (scores, _) in enumerate(oracle_problems(prob, labels, mode)):
        values = _scaled(np.asarray(scores), model.coef_[g], model.intercept_[g])
        expected = [
            model.bin_probabilities_[g, sum(1 for e in model.bin_edges_[g, 1:-1] if e <= v)]
            for v in values
        ]
        out = model.predict_proba(prob)
        if mode == "top-label":
            got = out[np.arange(len(labels)), prob.argmax(axis=1)]
        elif n_classes == 2:
            got = out[:, 1]
        else:
            continue  # renormalised: below
        assert_allclose(got, expected, rtol=1e-12, atol=0)
    if mode == "one-vs-rest" and n_classes > 2:
        raw = np.empty(prob.shape)
        for g in range(n_classes):
            values = _scaled(prob[:, g], model.coef_[g], model.intercept_[g])
            bins = [sum(1 for e in model.bin_edges_[g, 1:-1] if e <= v) for v in values]
            raw[:, g] = model.bin_probabilities_[g, bins]
        assert_allclose(model.predict_proba(prob), raw / raw.sum(1, keepdims=True), rtol=1e-12)


def test_scaled_is_platts_sigmoid_of_the_log_odds():
    scores = np.array([0.0, 1e-300, 0.2, 0.5, 0.9, 1 - 2**-53, 1.0])
    got = _scaled(scores, 0.7, -0.3)
    expected = [
        1
        / (1 + math.exp(-(0.7 * (math.log(max(s, 1e-300)) - math.log(max(1 - s, 1e-300))) - 0.3)))
        for s in scores
    ]
    assert_allclose(got, expected, rtol=1e-12)


def test_float32_input_matches_its_float64_copy():
    prob, labels = multiclass(200, 3, seed=1, dtype=np.float32)
    a = ScalingBinning(bins=5).fit(prob, labels)
    b = ScalingBinning(bins=5).fit(prob.astype(np.float64), labels)
    assert_array_equal(a.bin_edges_, b.bin_edges_)
    assert_array_equal(a.predict_proba(prob), b.predict_proba(prob.astype(np.float64)))


# -- the peer ----------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(PEER))
def test_binning_step_matches_the_peer_given_its_platt(name):
    """With the peer's (a, b), the binning of ``split='none'`` is the peer's to 1e-12.

    The partition of the 600 fit rows into 10 bins of 60 is the same; the edges differ by
    definition: the peer's edge j is the midpoint between the last value of part j - 1 and
    the first of part j, ours is that first value.
    """
    X, _ = scaling_sets()[name]
    peer = PEER[name]
    scores = X if name == "binary" else X.max(axis=1)
    values = _scaled(scores, peer["a"], peer["b"])
    edges, means, totals = binned_means(values, None, values, None, N_BINS)
    assert_allclose(means, peer["means"], rtol=1e-12, atol=0)
    assert_array_equal(totals, 60)
    ordered = np.sort(values)
    peer_edges = np.asarray(peer["edges"][:-1])
    assert_array_equal(edges[1:-1], ordered[60::60])  # the first of each part
    assert (ordered[59:-1:60] < peer_edges).all() and (peer_edges < edges[1:-1]).all()


@pytest.mark.parametrize("name", list(PEER))
def test_full_fit_matches_the_peer_to_its_optimisers_tolerance(name):
    """Our Platt step is the exact optimum; the peer's lbfgs stops at scikit-learn's
    ``tol=1e-4``: its (a, b) are 4e-5 (binary) and 5e-6 (top-label) from ours, its
    log-loss 1.2e-9 and 4e-11 above ours.  So (a, b) and the outputs agree to 2e-4, and
    our loss is the lower."""
    X, y = scaling_sets()[name]
    peer = PEER[name]
    mode = "one-vs-rest" if name == "binary" else "top-label"
    model = ScalingBinning(bins=N_BINS, mode=mode, split="none").fit(X, y)
    a, b = model.coef_[0], model.intercept_[0]
    assert_allclose([a, b], [peer["a"], peer["b"]], rtol=2e-4)
    assert_allclose(model.bin_probabilities_[0], peer["means"], rtol=2e-4)
    if name == "binary":
        scores, targets = X, y
        got = model.predict_proba(TEST_POINTS)[:, 1]
    else:
        scores, targets = X.max(axis=1), X.argmax(axis=1) == y
        got = model.predict_proba(X[:6])[np.arange(6), X[:6].argmax(axis=1)]
    assert_allclose(got, peer["outputs"], rtol=2e-4)
    z = log_odds(scores)

    def loss(slope, intercept):
        logit = slope * z + intercept
        return np.mean(np.logaddexp(0, logit) - targets * logit)

    assert 0 <= loss(peer["a"], peer["b"]) - loss(a, b) < 1e-8


# -- behaviour -----------------------------------------------------------------------------
def test_three_way_split_is_disjoint_seeded_and_by_thirds():
    prob, labels = multiclass(100, 2, seed=0)
    model = ScalingBinning(bins=3, random_state=7).fit(prob, labels)
    assert model.bin_weights_.sum() == 33  # T_3: the third part of 34, 33, 33
    again = ScalingBinning(bins=3, random_state=7).fit(prob, labels)
    assert_array_equal(again.bin_probabilities_, model.bin_probabilities_)
    other = ScalingBinning(bins=3, random_state=8).fit(prob, labels)
    assert not np.array_equal(other.bin_edges_, model.bin_edges_)
    parts = oracle_split(100, "three-way", 7)
    assert sorted(parts[0] + parts[1] + parts[2]) == list(range(100))


def test_bin_values_are_means_of_g_not_label_frequencies():
    prob, labels = multiclass(600, 2, seed=2)
    model = ScalingBinning(bins=3, split="none").fit(prob, labels)
    g = _scaled(prob[:, 1], model.coef_[0], model.intercept_[0])
    bins = np.searchsorted(model.bin_edges_[0, 1:-1], g, side="right")
    g_means = [g[bins == b].mean() for b in range(3)]
    frequencies = [labels[bins == b].mean() for b in range(3)]
    assert_allclose(model.bin_probabilities_[0], g_means, rtol=1e-12)
    assert not np.allclose(g_means, frequencies, rtol=1e-3)  # histogram binning's values
    # the likelihood's score equation in b: on the fit rows, g averages to the positive rate
    assert_allclose(g.mean(), labels.mean(), rtol=1e-9)


def test_empty_bins_output_their_centre():
    # ties: many rows share one score, so equal-mass edges repeat and bins are empty
    scores = np.repeat([0.2, 0.7], [90, 10])
    labels = np.tile([0, 1], 50)
    model = ScalingBinning(bins=4, split="none").fit(scores, labels)
    edges = model.bin_edges_[0]
    empty = model.bin_weights_[0] == 0
    assert empty.any()
    centres = (edges[:-1] + edges[1:]) / 2
    assert_array_equal(model.bin_probabilities_[0, empty], centres[empty])


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), factor=st.sampled_from([0.25, 3.5, 1e6]))
def test_rescaling_every_weight_changes_nothing(seed, factor):
    prob, labels = multiclass(150, 3, seed=seed % 50)
    weights = np.random.default_rng(seed).integers(1, 5, len(labels)) / 2.0
    a = ScalingBinning(bins=4).fit(prob, labels, sample_weight=weights)
    b = ScalingBinning(bins=4).fit(prob, labels, sample_weight=weights * factor)
    # (a, b) come from an iterative optimum: equal to its tolerance, not bit for bit
    assert_allclose(b.bin_edges_, a.bin_edges_, rtol=1e-9)
    assert_allclose(b.bin_probabilities_, a.bin_probabilities_, rtol=1e-9)


def test_output_takes_at_most_b_values_and_input_is_not_mutated():
    prob, labels = multiclass(500, 2, seed=4)
    copy = prob.copy()
    model = ScalingBinning(bins=6).fit(prob, labels)
    assert len(np.unique(model.predict_proba(prob)[:, 1])) <= 6
    assert_array_equal(prob, copy)


def test_exported_and_in_the_method_table():
    from calibration_toolbox.recalibration._methods import METHODS

    assert ct.ScalingBinning is ScalingBinning is ct.recalibration.ScalingBinning
    assert METHODS["scaling-binning"].factory is ScalingBinning
    assert METHODS["scaling-binning"].needs == "probabilities"


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"split": "thirds"}, ValueError, "`split` must be 'three-way' or 'none'; got 'thirds'"),
        ({"random_state": -1}, ValueError, "`random_state`"),
        ({"random_state": 1.5}, TypeError, "`random_state`"),
        (
            {"mode": "pooled"},
            ValueError,
            "`mode` must be 'one-vs-rest' or 'top-label'; got 'pooled'",
        ),
        ({"bins": [0, 0.5, 1]}, TypeError, "`bins` must be an integer >= 1"),
        ({"bins": 0}, ValueError, "`bins`"),
    ],
)
def test_bad_settings_are_refused_by_name(params, error, message):
    prob, labels = multiclass(30, 3, seed=0)
    with pytest.raises(error, match=message):
        ScalingBinning(**params).fit(prob, labels)


def test_too_few_rows_for_three_sets():
    with pytest.raises(ValueError, match="split='three-way' needs at least 3"):
        ScalingBinning().fit([0.2, 0.8], [0, 1])
    with pytest.warns(UserWarning, match="separate"):  # one set is enough (and separates)
        ScalingBinning(split="none").fit([0.2, 0.8], [0, 1])


def _pair_ece(confidence, correct, n_bins=15):
    """ECE of (confidence, correct) pairs over 15 equal-width bins ``[lo, hi)``."""
    bins = np.minimum((confidence * n_bins).astype(np.intp), n_bins - 1)
    gaps = np.bincount(bins, weights=correct - confidence, minlength=n_bins)
    return float(np.abs(gaps).sum() / len(confidence))


@pytest.mark.parametrize(
    ("name", "before", "after"),
    [
        ("lenet-5-cifar-10", 0.119, 0.022),
        ("wideresnet-16-4-cifar-100", 0.058, 0.011),
        ("densenet-bc-100-cifar-100", 0.145, 0.014),
    ],
)
def test_top_label_on_real_files_fit_on_one_half_scored_on_the_other(name, before, after):
    """Fitted (10 bins, three-way split of 5,000 rows) on the first half of each file, the
    top-label ECE of (prediction, binned confidence) on the other half falls below a
    quarter of the uncalibrated value (the values of the stored run in the table)."""
    prob, labels = load_real(name)
    prob = prob.astype(np.float64)
    half = len(labels) // 2
    model = ScalingBinning(bins=10, mode="top-label").fit(prob[:half], labels[:half])
    test = prob[half:]
    prediction = test.argmax(axis=1)
    correct = (prediction == labels[half:]).astype(np.float64)
    confidence = model.predict_proba(test)[np.arange(len(test)), prediction]
    uncalibrated = _pair_ece(test.max(axis=1), correct)
    calibrated = _pair_ece(confidence, correct)
    assert_allclose([uncalibrated, calibrated], [before, after], atol=1e-3)
    assert calibrated < 0.25 * uncalibrated


@pytest.mark.parametrize(
    ("prob", "labels", "mode", "subject"),
    [
        (np.linspace(0.1, 0.9, 30), np.repeat([0, 1], 15), "one-vs-rest", "the two classes"),
        (  # class 2 is the only one whose column separates it
            np.array([[0.5, 0.3, 0.2], [0.2, 0.5, 0.3], [0.3, 0.2, 0.5]] * 10),
            np.array([0, 0, 2, 1, 1, 2] * 5),
            "one-vs-rest",
            "class(es) [2] from the rest",
        ),
        (  # every prediction right: one label
            np.array([[0.9, 0.1], [0.2, 0.8]] * 10),
            np.array([0, 1] * 10),
            "top-label",
            "the right predictions from the wrong ones",
        ),
    ],
)
def test_separated_scaling_set_warns_in_its_own_words(prob, labels, mode, subject):
    """One warning naming the separated problems (the exact criterion of a one-feature
    logistic fit with no finite optimum), not PlattScaling's."""
    with pytest.warns(UserWarning) as caught:
        ScalingBinning(bins=2, mode=mode, split="none").fit(prob, labels)
    messages = [str(warning.message) for warning in caught]
    assert len(messages) == 1 and f"separate {subject} perfectly" in messages[0]
    assert "ScalingBinning" in messages[0] and "PlattScaling" not in messages[0]


def test_overlapping_scaling_set_does_not_warn():
    prob, labels = multiclass(300, 3, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ScalingBinning(bins=3).fit(prob, labels)
