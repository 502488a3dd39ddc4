"""Brier score and negative log-likelihood against the loop oracle and scikit-learn."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from numpy.testing import assert_allclose
from old_sklearn_log_loss import LOG_LOSS_LABELS, LOG_LOSS_PROB
from scipy.special import softmax

from calibration_toolbox import brier_score, negative_log_likelihood
from tests import oracle


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_brier_matches_oracle(dtype):
    rng = np.random.default_rng(0)
    prob = rng.dirichlet(np.ones(4), size=300).astype(dtype)
    labels = rng.integers(0, 4, 300)
    weights = rng.uniform(0, 3, 300)
    assert_allclose(brier_score(prob, labels), oracle.brier(prob, labels), rtol=1e-12)
    assert_allclose(
        brier_score(prob, labels, sample_weight=weights),
        oracle.brier(prob, labels, weights),
        rtol=1e-12,
    )


def test_brier_hand_values_and_binary_factor_two():
    assert_allclose(brier_score([[1.0, 0.0]], [0]), 0.0, atol=0)
    assert_allclose(brier_score([[0.0, 1.0]], [0]), 2.0, rtol=1e-15)
    positive = np.array([0.1, 0.4, 0.8])
    labels = np.array([0, 1, 1])
    single = np.mean((positive - labels) ** 2)  # sklearn.metrics.brier_score_loss
    assert_allclose(brier_score(positive, labels), 2 * single, rtol=1e-15)


def test_nll_from_logits_is_exact_for_large_logits():
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(200, 5)) * 1e4
    labels = rng.integers(0, 5, 200)
    value = negative_log_likelihood(logits, labels, logits=True)
    assert np.isfinite(value)
    assert_allclose(value, oracle.nll_from_logits(logits, labels), rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_nll_from_logits_matches_oracle_with_weights(dtype):
    rng = np.random.default_rng(2)
    logits = (rng.normal(size=(300, 3)) * 3).astype(dtype)
    labels = rng.integers(0, 3, 300)
    weights = rng.uniform(0, 2, 300)
    assert_allclose(
        negative_log_likelihood(logits, labels, logits=True, sample_weight=weights),
        oracle.nll_from_logits(logits, labels, weights),
        rtol=1e-12,
    )
    prob = softmax(logits.astype(np.float64), axis=1)
    assert_allclose(
        negative_log_likelihood(prob, labels, sample_weight=weights),
        oracle.nll_from_logits(logits, labels, weights),
        rtol=1e-9,
    )


def test_nll_clips_zero_probabilities_at_eps():
    prob = np.array([[1.0, 0.0], [0.5, 0.5]])
    labels = np.array([1, 0])
    assert_allclose(
        negative_log_likelihood(prob, labels), (-np.log(1e-15) - np.log(0.5)) / 2, rtol=1e-15
    )
    assert negative_log_likelihood(prob, labels, eps=0) == np.inf
    # a zero-weight row with probability 0 on its label is absent, not 0 * inf
    assert_allclose(
        negative_log_likelihood(prob, labels, eps=0, sample_weight=[0, 1]), np.log(2), rtol=1e-15
    )


# scikit-learn <= 1.1's log_loss(LOG_LOSS_LABELS, LOG_LOSS_PROB) with its default eps=1e-15,
# made by tests/references/old_sklearn_log_loss.py with scikit-learn 1.1.3 (how to rerun it:
# tests/references/README.md).
OLD_SKLEARN_LOG_LOSS = 5.9223545721065705


def test_old_sklearn_log_loss_convention_is_reproducible():
    # Old scikit-learn clipped at 1e-15 and then renormalised the rows: doing both before the
    # call reproduces its number, zeros and rows summing to 0.99 or 1.01 included.
    prob = np.array(LOG_LOSS_PROB)
    clipped = np.clip(prob, 1e-15, 1 - 1e-15)
    renormalised = clipped / clipped.sum(axis=1, keepdims=True)
    value = negative_log_likelihood(renormalised, LOG_LOSS_LABELS)
    assert_allclose(value, OLD_SKLEARN_LOG_LOSS, rtol=1e-14)
    # renormalize=True divides the clipped rows by their sums in the call itself
    value = negative_log_likelihood(clipped, LOG_LOSS_LABELS, renormalize=True)
    assert_allclose(value, OLD_SKLEARN_LOG_LOSS, rtol=1e-14)


@pytest.mark.parametrize("rule", [brier_score, negative_log_likelihood], ids=lambda f: f.__name__)
def test_docstrings_describe_every_parameter(rule):
    doc = inspect.getdoc(rule)  # without the indentation that Python 3.13 strips itself
    for name in inspect.signature(rule).parameters:
        assert f"\n{name} : " in doc, name
    assert "\nReturns\n-------\n" in doc
