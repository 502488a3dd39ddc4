"""Vector and matrix scaling on logits of large magnitude: the fit does not depend on units.

The data are of the kind of dirichletcal's multinomial test (two or three Gaussian
clusters at corners of a hypercube, of separation 100, 1 % of the labels redrawn at
random, features used as logits), made here with NumPy at a magnitude of about 1, then
multiplied by ``c``.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import (
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
    negative_log_likelihood,
)

MAGNITUDES = [1e2, 1e4, 1e5]


def cluster_logits(n_classes: int, n: int = 1000, seed: int = 0):
    """Features of largest magnitude about 1, and labels (1 % redrawn at random)."""
    rng = np.random.default_rng(seed)
    corners = 2.0 * np.eye(n_classes) - 1.0  # class k's feature k is high: logits
    labels = rng.integers(0, n_classes, n)
    mixing = 2.0 * rng.random((n_classes, n_classes)) - 1.0
    features = 100.0 * corners[labels] + rng.normal(size=(n, n_classes)) @ mixing
    redrawn = rng.random(n) < 0.01
    labels[redrawn] = rng.integers(0, n_classes, redrawn.sum())
    return features / np.abs(features).max(), labels


def fitted_nll(method, logits, labels):
    probs = method().fit(logits, labels).predict_proba(logits)
    assert np.isfinite(probs).all()
    assert_allclose(probs.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    return negative_log_likelihood(probs, labels), probs


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("method", [VectorScaling, MatrixScaling])
@pytest.mark.parametrize("magnitude", MAGNITUDES)
def test_large_logits_reach_the_optimum_at_unit_scale(method, n_classes, magnitude):
    logits, labels = cluster_logits(n_classes)
    optimum, unit_probs = fitted_nll(method, logits, labels)
    nll, probs = fitted_nll(method, magnitude * logits, labels)
    assert nll <= optimum + 1e-6
    assert_allclose(probs, unit_probs, rtol=0, atol=1e-5)  # the same map, in other units
    wide = TemperatureScaling(temperature_bounds=(1e-4, 1e9))
    scaled = wide.fit(magnitude * logits, labels).predict_proba(magnitude * logits)
    assert nll <= negative_log_likelihood(scaled, labels) + 1e-9


def test_large_logits_fit_in_blocks_as_in_memory():
    logits, labels = cluster_logits(3)
    logits = 1e4 * logits
    whole = VectorScaling().fit(logits, labels)
    blocks = [(logits[i : i + 300], labels[i : i + 300]) for i in range(0, 1000, 300)]
    parts = VectorScaling().fit_blocks(blocks)
    assert_allclose(parts.predict_proba(logits), whole.predict_proba(logits), rtol=0, atol=1e-7)
