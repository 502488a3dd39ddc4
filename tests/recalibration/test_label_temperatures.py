"""Per-label temperatures (one sigmoid per label): the batched fit against K scalar fits."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.optimize import brentq
from scipy.special import expit

from calibration_toolbox.recalibration.temperature import label_temperatures


def problem(n=3000, k=5, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(n, k))
    targets = (rng.random((n, k)) < expit(truth)).astype(np.uint8)
    scales = np.array([0.5, 1.0, 2.0, 4.0, 3.0])[:k]
    return truth * scales, targets, scales


def oracle_temperature(z, y, w):
    """One label's T: the root of its NLL's derivative in beta (brentq), summed in a loop."""

    def slope(beta):
        total = 0.0
        for zi, yi, wi in zip(z, y, w, strict=True):
            total += wi * (expit(beta * zi) - yi) * zi
        return total / w.sum()

    return 1 / brentq(slope, 1e-3, 1e3, xtol=1e-300, rtol=4 * np.finfo(float).eps)


@pytest.mark.parametrize("weighted", [False, True])
def test_batched_fit_equals_separate_scalar_fits(weighted):
    logits, targets, scales = problem(n=800)
    weights = np.random.default_rng(1).random(800) * 2 if weighted else None
    fitted = label_temperatures(logits, targets, weights, 1e-4, 1e4)
    w = np.ones(800) if weights is None else weights
    expected = [oracle_temperature(logits[:, k], targets[:, k], w) for k in range(5)]
    assert_allclose(fitted, expected, rtol=1e-12)
    assert_allclose(fitted, scales, rtol=0.3)  # the overconfidence put into the logits


def test_stationary_point_kkt():
    logits, targets, _ = problem()
    beta = 1 / label_temperatures(logits, targets, None, 1e-4, 1e4)
    gradient = ((expit(logits * beta) - targets) * logits).mean(axis=0)
    assert_allclose(gradient, 0, atol=1e-13)


def test_a_separated_label_stops_at_the_bound_and_the_others_are_untouched():
    logits, targets, _ = problem(k=3)
    separated = logits.copy()
    separated[:, 1] = np.where(targets[:, 1] == 1, 1.0, -1.0)
    fitted = label_temperatures(separated, targets, None, 1e-2, 1e2)
    assert fitted[1] == 1e-2
    alone = label_temperatures(logits[:, [0, 2]], targets[:, [0, 2]], None, 1e-2, 1e2)
    assert_allclose(fitted[[0, 2]], alone, rtol=1e-12)


def test_inputs_are_not_mutated():
    logits, targets, _ = problem(k=2)
    before = logits.copy(), targets.copy()
    label_temperatures(logits, targets, None, 1e-4, 1e4)
    assert (logits == before[0]).all() and (targets == before[1]).all()
