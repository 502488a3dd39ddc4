"""brier_decomposition: the Stephenson et al. identity, a hand example, binary forms, weights."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from calibration_toolbox import BrierDecomposition, Scores, brier_decomposition, brier_score
from tests.conftest import load_real


def assemble(parts: BrierDecomposition) -> float:
    return (
        parts.reliability
        - parts.resolution
        + parts.uncertainty
        + parts.within_bin_variance
        - 2 * parts.within_bin_covariance
    )


def loop_decomposition(prob, labels, edges, weights):
    """Slow oracle: per class and bin, the definitions of Murphy and Stephenson et al."""
    prob = np.asarray(prob, dtype=float)
    total = weights.sum()
    terms = np.zeros(5)
    for k in range(prob.shape[1]):
        forecast, outcome = prob[:, k], (labels == k).astype(float)
        base_rate = np.dot(weights, outcome) / total
        terms[2] += base_rate * (1 - base_rate)
        cells = np.maximum(np.searchsorted(edges, forecast, side="left") - 1, 0)
        for b in range(len(edges) - 1):
            rows = cells == b
            n_b = weights[rows].sum()
            if n_b == 0:
                continue
            mean_f = np.dot(weights[rows], forecast[rows]) / n_b
            mean_o = np.dot(weights[rows], outcome[rows]) / n_b
            terms[0] += n_b * (mean_f - mean_o) ** 2 / total
            terms[1] += n_b * (mean_o - base_rate) ** 2 / total
            terms[3] += np.dot(weights[rows], (forecast[rows] - mean_f) ** 2) / total
            terms[4] += (
                np.dot(weights[rows], (forecast[rows] - mean_f) * (outcome[rows] - mean_o)) / total
            )
    return terms


def test_hand_example():
    # bin (0, 0.5]: forecasts 0.1, 0.3 with outcomes 0, 1; bin (0.5, 1]: 0.8, 0.6 with 1, 1
    parts = brier_decomposition(Scores([0.1, 0.3, 0.8, 0.6]), [0, 1, 1, 1], bins=2)
    expected = {
        "brier_score": 0.7 / 4,
        "reliability": (2 * 0.3**2 + 2 * 0.3**2) / 4,
        "resolution": (2 * 0.25**2 + 2 * 0.25**2) / 4,
        "uncertainty": 0.75 * 0.25,
        "within_bin_variance": 4 * 0.1**2 / 4,
        "within_bin_covariance": (0.1 * 0.5 + 0.1 * 0.5) / 4,
    }
    assert_allclose(
        [getattr(parts, name) for name in expected], list(expected.values()), rtol=1e-14
    )
    assert all(type(getattr(parts, name)) is float for name in expected)
    with pytest.raises(dataclasses.FrozenInstanceError):
        parts.reliability = 0.0


@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 60),
    st.integers(2, 6),
    st.sampled_from([1, 3, 15, 40]),
    st.booleans(),
)
def test_terms_add_up_to_brier_score(seed, n, n_classes, n_bins, weighted):
    rng = np.random.default_rng(seed)
    prob = rng.dirichlet(np.full(n_classes, 0.7), n)
    labels = rng.integers(0, n_classes, n)
    weights = rng.random(n) * (rng.random(n) < 0.8) + 1e-3 if weighted else None
    parts = brier_decomposition(prob, labels, bins=n_bins, sample_weight=weights)
    expected = brier_score(prob, labels, sample_weight=weights)
    # brier_score sums p^2 - 2 p_label + 1 (terms of order 1): its own rounding is ~1e-16
    # absolute, which is all atol allows for when the score is tiny.
    assert_allclose(parts.brier_score, expected, rtol=1e-12, atol=1e-15)
    assert_allclose(assemble(parts), expected, rtol=1e-12, atol=1e-15)
    oracle = loop_decomposition(
        prob, labels, np.linspace(0, 1, n_bins + 1), np.ones(n) if weights is None else weights
    )
    got = [
        parts.reliability,
        parts.resolution,
        parts.uncertainty,
        parts.within_bin_variance,
        parts.within_bin_covariance,
    ]
    assert_allclose(got, oracle, rtol=1e-10, atol=1e-15)


@given(st.integers(0, 2**32 - 1), st.integers(1, 40))
def test_integer_weights_equal_duplicated_rows(seed, n):
    rng = np.random.default_rng(seed)
    prob = rng.dirichlet(np.ones(3), n)
    labels = rng.integers(0, 3, n)
    weights = rng.integers(0, 4, n)
    weights[0] += 1
    weighted = brier_decomposition(prob, labels, sample_weight=weights)
    repeated = brier_decomposition(np.repeat(prob, weights, 0), np.repeat(labels, weights))
    assert_allclose(
        dataclasses.astuple(weighted), dataclasses.astuple(repeated), rtol=1e-10, atol=1e-15
    )
    order = rng.permutation(n)
    shuffled = brier_decomposition(prob[order], labels[order], sample_weight=weights[order])
    assert_allclose(
        dataclasses.astuple(shuffled), dataclasses.astuple(weighted), rtol=1e-10, atol=1e-15
    )


def test_binary_forms():
    rng = np.random.default_rng(9)
    p = rng.random(300)
    y = (rng.random(300) < p**1.5).astype(int)
    one_d = brier_decomposition(p, y)
    two_columns = brier_decomposition(np.column_stack([1 - p, p]), y)
    single = brier_decomposition(Scores(p), y)
    assert_allclose(dataclasses.astuple(one_d), dataclasses.astuple(two_columns), rtol=1e-13)
    assert_allclose(one_d.brier_score, brier_score(p, y), rtol=1e-12)
    assert_allclose(single.brier_score, brier_score(Scores(p), y), rtol=1e-12)
    assert_allclose(assemble(single), single.brier_score, rtol=1e-12)
    # with edges symmetric about 1/2 and no forecast on an edge, the column 1 - p is the
    # mirror image of p: every term is twice the single-probability one
    assert_allclose(
        dataclasses.astuple(one_d), 2 * np.array(dataclasses.astuple(single)), rtol=1e-12
    )


def test_real_predictions_identity_and_edges():
    prob, labels = load_real("lenet-5-cifar-100")
    edges = np.array([0.0, 0.01, 0.1, 0.5, 0.9, 1.0])
    for bins in (15, edges):
        parts = brier_decomposition(prob, labels, bins=bins)
        expected = brier_score(prob, labels)
        assert_allclose(parts.brier_score, expected, rtol=1e-12)
        assert_allclose(assemble(parts), expected, rtol=1e-12)
    logits = np.log(prob.astype(np.float64)[:2000])
    assert_allclose(
        brier_decomposition(logits, labels[:2000], logits=True).brier_score,
        brier_score(logits, labels[:2000], logits=True),
        rtol=1e-12,
    )


def test_one_bin_per_forecast_value_leaves_no_within_bin_terms():
    # forecasts 0.2 (x2) and 0.7 (x2) in different bins: Murphy's three terms suffice
    parts = brier_decomposition(Scores([0.2, 0.2, 0.7, 0.7]), [0, 1, 1, 1], bins=2)
    assert parts.within_bin_variance == 0.0
    assert parts.within_bin_covariance == 0.0
    assert_allclose(
        parts.reliability - parts.resolution + parts.uncertainty, parts.brier_score, 1e-14
    )


def test_input_is_not_modified():
    prob = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]], dtype=np.float32)
    copy = prob.copy()
    brier_decomposition(prob, [0, 2], sample_weight=[1.0, 2.0])
    np.testing.assert_array_equal(prob, copy)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"bins": 0}, ValueError, "`bins` must be an integer >= 1"),
        ({"bins": [0.0, 0.7, 0.5, 1.0]}, ValueError, "`bins` must be"),
        ({"sample_weight": [1.0, -1.0]}, ValueError, "`sample_weight` must be non-negative"),
        ({"renormalize": "yes"}, TypeError, "`renormalize` must be True or False"),
    ],
)
def test_bad_input(kwargs, error, match):
    with pytest.raises(error, match=match):
        brier_decomposition([[0.9, 0.1], [0.3, 0.7]], [0, 1], **kwargs)
