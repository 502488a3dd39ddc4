"""Hypothesis properties of the metrics (deterministic profile by default, see conftest)."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from calibration_toolbox import GCE, brier_score, negative_log_likelihood

SETTINGS = st.fixed_dictionaries(
    {
        "bins": st.integers(1, 12),
        "class_conditional": st.booleans(),
        "adaptive_bins": st.booleans(),
        "top_k_classes": st.sampled_from([1, 2, "all"]),
        "thresholding": st.sampled_from([0.0, 0.05, 0.3]),
    }
)


@st.composite
def predictions(draw, max_rows=40):
    n_rows = draw(st.integers(1, max_rows))
    n_classes = draw(st.integers(2, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    style = draw(st.sampled_from(["dirichlet", "grid", "peaked"]))
    if style == "dirichlet":
        prob = rng.dirichlet(np.full(n_classes, 0.5), size=n_rows)
    elif style == "grid":  # ties, zeros and values on bin edges
        counts = rng.integers(0, 3, size=(n_rows, n_classes)).astype(float)
        counts[:, 0] += 1
        prob = counts / counts.sum(axis=1, keepdims=True)
    else:
        prob = np.eye(n_classes)[rng.integers(0, n_classes, n_rows)]
    labels = rng.integers(0, n_classes, n_rows)
    return prob, labels, rng


@given(predictions(), SETTINGS, st.sampled_from([1, 2, "inf"]))
def test_gce_lies_in_unit_interval(data, settings, norm):
    prob, labels, _ = data
    value = GCE(prob, labels, norm=norm, **settings)
    assert isinstance(value, float)
    assert 0.0 <= value <= 1.0


@given(predictions(), SETTINGS)
def test_norms_are_ordered_on_the_same_bins(data, settings):
    prob, labels, _ = data
    l1, l2, linf = (GCE(prob, labels, norm=n, **settings) for n in (1, 2, "inf"))
    assert l1 <= l2 * (1 + 1e-12) + 1e-15
    assert l2 <= linf * (1 + 1e-12) + 1e-15


@given(predictions(), SETTINGS, st.sampled_from([1, 2, "inf"]))
def test_row_permutation_does_not_change_the_value(data, settings, norm):
    prob, labels, rng = data
    weights = rng.uniform(0.1, 2.0, len(prob))
    order = rng.permutation(len(prob))
    before = GCE(prob, labels, norm=norm, sample_weight=weights, **settings)
    after = GCE(prob[order], labels[order], norm=norm, sample_weight=weights[order], **settings)
    assert_allclose(after, before, rtol=1e-12, atol=1e-15)


@given(predictions(), SETTINGS, st.sampled_from([1, 2, "inf"]))
def test_integer_weights_equal_duplicated_rows_for_equal_width_bins(data, settings, norm):
    # Equal-mass positions are counted in mean weights (scale-free, below): duplicated rows
    # round them otherwise.
    prob, labels, rng = data
    settings = dict(settings, adaptive_bins=False)
    weights = rng.integers(0, 4, len(prob))
    assume(weights.sum() > 0)
    weighted = GCE(prob, labels, norm=norm, sample_weight=weights, **settings)
    rows = np.repeat(np.arange(len(prob)), weights)
    duplicated = GCE(prob[rows], labels[rows], norm=norm, **settings)
    assert_allclose(weighted, duplicated, rtol=1e-12, atol=1e-15)


@given(predictions(), SETTINGS, st.sampled_from([1, 2, "inf"]))
def test_constant_weights_equal_no_weights(data, settings, norm):
    # Equal-width and equal-mass bins alike: the equal-mass positions count mean weights.
    prob, labels, _ = data
    plain = GCE(prob, labels, norm=norm, **settings)
    for value in (2.0, 0.1, 1e-300):
        constant = np.full(len(prob), value)
        weighted = GCE(prob, labels, norm=norm, sample_weight=constant, **settings)
        assert_allclose(weighted, plain, rtol=1e-10, atol=1e-15)


@given(predictions(), SETTINGS, st.sampled_from([1, 2, "inf"]), st.floats(1e-6, 1e6))
def test_scaled_weights_give_the_same_value(data, settings, norm, scale):
    prob, labels, rng = data
    weights = rng.uniform(0.1, 2.0, len(prob))
    before = GCE(prob, labels, norm=norm, sample_weight=weights, **settings)
    after = GCE(prob, labels, norm=norm, sample_weight=scale * weights, **settings)
    assert_allclose(after, before, rtol=1e-10, atol=1e-15)


@given(predictions(), st.integers(1, 12))
def test_class_permutation_leaves_class_wise_error_unchanged(data, bins):
    prob, labels, rng = data
    order = rng.permutation(prob.shape[1])
    inverse = np.argsort(order)
    for adaptive in (False, True):
        before = GCE(prob, labels, bins=bins, adaptive_bins=adaptive, top_k_classes="all")
        after = GCE(
            prob[:, order], inverse[labels], bins=bins, adaptive_bins=adaptive, top_k_classes="all"
        )
        assert_allclose(after, before, rtol=1e-12, atol=1e-15)


@given(predictions())
def test_scoring_rules_bounds_and_weights(data):
    prob, labels, rng = data
    assert 0.0 <= brier_score(prob, labels) <= 2.0
    assert negative_log_likelihood(prob, labels) >= 0.0
    weights = rng.integers(1, 4, len(prob))
    rows = np.repeat(np.arange(len(prob)), weights)
    assert_allclose(
        brier_score(prob, labels, sample_weight=weights),
        brier_score(prob[rows], labels[rows]),
        rtol=1e-12,
        atol=1e-15,
    )
    assert_allclose(
        negative_log_likelihood(prob, labels, sample_weight=weights),
        negative_log_likelihood(prob[rows], labels[rows]),
        rtol=1e-12,
        atol=1e-15,
    )
