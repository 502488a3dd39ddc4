"""Temperature scaling: exact optimum, peers, invariants, robustness.

The estimator contract (fitting, persistence, parameters) is in test_recalibrator_contract.py.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import brentq
from scipy.special import log_softmax, softmax

from calibration_toolbox import (
    ECE,
    EnsembleTemperatureScaling,
    TemperatureScaling,
    negative_log_likelihood,
)
from tests import oracle
from tests.conftest import load_real


def synthetic(seed=2024, n=600, k=4, scale=2.5):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = scale * (1.5 * np.eye(k)[labels] + rng.normal(size=(n, k)))
    return logits, labels


def loop_gradient(beta, logits, labels, weights=None):
    """d/d(beta) of the mean NLL of softmax(beta z), written as a plain loop."""
    weights = np.ones(len(logits)) if weights is None else weights
    total = 0.0
    for z, y, w in zip(logits, labels, weights, strict=True):
        p = softmax(beta * z)
        total += w * (float(p @ z) - z[y])
    return total / weights.sum()


def test_temperature_is_the_exact_optimum():
    logits, labels = synthetic()
    fitted = TemperatureScaling().fit(logits, labels)
    beta = brentq(loop_gradient, 0.05, 20, args=(logits, labels), xtol=1e-15, rtol=1e-15)
    assert_allclose(fitted.temperature_, 1 / beta, rtol=1e-10)
    assert fitted.n_passes_ <= 10  # a handful of passes over the data


def test_temperature_matches_peers():
    # Made by tests/references/temperature_peers.py (peers not a dependency): torch
    # 2.13.0+cpu, LBFGS on log T with strong-Wolfe line search, tolerance_grad=1e-14,
    # tolerance_change=1e-16, cross_entropy(z / T) in float64:
    #   T = 1.6458590118492284
    # netcal 1.4.0 netcal.scaling.TemperatureScaling(detection=False).fit(softmax(z), y):
    #   weights = [0.6075855073717759] (= 1 / T, its own stopping rule)
    logits, labels = synthetic()
    temperature = TemperatureScaling().fit(logits, labels).temperature_
    assert_allclose(temperature, 1.6458590118492284, rtol=1e-10)
    assert_allclose(1 / temperature, 0.6075855073717759, rtol=1e-5)


def test_weighted_fit_is_the_weighted_optimum():
    logits, labels = synthetic(n=300)
    weights = np.random.default_rng(1).integers(0, 4, 300)
    fitted = TemperatureScaling().fit(logits, labels, sample_weight=weights)
    beta = brentq(
        loop_gradient,
        0.05,
        20,
        args=(logits, labels, weights.astype(float)),
        xtol=1e-15,
        rtol=1e-15,
    )
    assert_allclose(fitted.temperature_, 1 / beta, rtol=1e-10)


def test_scaled_logits_scale_the_temperature():
    logits, labels = synthetic()
    base = TemperatureScaling().fit(logits, labels).temperature_
    huge = TemperatureScaling().fit(logits * 4000, labels)  # magnitudes ~1e4
    assert_allclose(huge.temperature_, 4000 * base, rtol=1e-9)
    probs = huge.predict_proba(logits * 4000)
    assert np.isfinite(probs).all()
    assert_allclose(probs.sum(axis=1), 1, rtol=1e-12)


def test_float32_logits_keep_float32_and_agree_with_float64():
    logits, labels = synthetic()
    logits32 = logits.astype(np.float32)
    fitted = TemperatureScaling().fit(logits32, labels)
    exact = TemperatureScaling().fit(logits32.astype(np.float64), labels)
    assert_allclose(fitted.temperature_, exact.temperature_, rtol=1e-12)
    assert fitted(logits32).dtype == np.float32


def test_separable_set_warns_and_stays_bounded():
    labels = np.arange(30) % 3
    logits = 5.0 * np.eye(3)[labels]
    with pytest.warns(UserWarning, match="separated perfectly"):
        fitted = TemperatureScaling().fit(logits, labels)
    assert fitted.temperature_ == 1e-4
    probs = fitted.predict_proba(logits)
    assert np.isfinite(probs).all()
    assert_array_equal(probs.argmax(axis=1), labels)


def test_uninformative_logits_warn_at_the_upper_bound():
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 3, 200)
    logits = -4.0 * np.eye(3)[labels] + rng.normal(size=(200, 3))  # anti-informative
    with pytest.warns(UserWarning, match=r"largest as T -> inf.*upper bound 10 of"):
        fitted = TemperatureScaling(temperature_bounds=(0.1, 10)).fit(logits, labels)
    assert fitted.temperature_ == 10


INFINITE_OPTIMUM = "largest as T -> inf, where every prediction is uniform"
TIED = "tied within every calibration row"
LOOK_LIKE_PROBABILITIES = "`X` is taken as logits, but every row is a probability vector"


@pytest.mark.parametrize("method", [TemperatureScaling, EnsembleTemperatureScaling])
def test_optimum_at_infinite_temperature_is_bounded(method):
    # f'(beta = 0) is exactly 0: the likelihood is largest at beta = 0, T = inf (this raised
    # ZeroDivisionError while the warning was written).
    # (These logits are also probability vectors, which warns too.)
    logits, labels = np.array([[0.6, 0.4]] * 10), np.array([0] * 5 + [1] * 5)
    with pytest.warns(UserWarning, match=LOOK_LIKE_PROBABILITIES):
        with pytest.warns(UserWarning, match=INFINITE_OPTIMUM):
            fitted = method().fit(logits, labels)
    assert fitted.temperature_ == 1e4
    probs = fitted.predict_proba(logits)
    assert np.isfinite(probs).all()
    assert_allclose(probs, 0.5, rtol=0, atol=1e-4)
    assert_allclose(probs.sum(axis=1), 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("n_samples", [30, 5000])  # without and with the warm start
@pytest.mark.parametrize("weighted", [False, True])
def test_tied_logits_say_so_and_leave_t_at_1(n_samples, weighted):
    labels = np.arange(n_samples) % 3
    weights = np.linspace(0, 2, n_samples) if weighted else None
    for logits in (np.zeros((n_samples, 3)), np.full((n_samples, 3), 7.0)):
        with pytest.warns(UserWarning, match=TIED) as record:
            fitted = TemperatureScaling().fit(logits, labels, weights)
        assert not any("separated" in str(w.message) for w in record)
        assert fitted.temperature_ == 1.0
        assert_allclose(fitted.predict_proba(logits), 1 / 3, rtol=0, atol=1e-15)
    with pytest.warns(UserWarning, match=TIED):
        ensemble = EnsembleTemperatureScaling().fit(np.zeros((n_samples, 3)), labels, weights)
    assert ensemble.temperature_ == 1.0
    assert_allclose(ensemble.predict_proba(np.zeros((2, 3))), 1 / 3, rtol=0, atol=1e-15)


def test_one_untied_row_of_zero_weight_leaves_the_set_tied():
    logits, labels = np.zeros((6, 3)), np.arange(6) % 3
    logits[0] = [0.0, 1.0, 2.0]
    with pytest.warns(UserWarning, match=TIED):
        TemperatureScaling().fit(logits, labels, np.r_[0.0, np.ones(5)])
    with pytest.warns(UserWarning, match=INFINITE_OPTIMUM):
        TemperatureScaling().fit(logits, labels)  # that row counts: label 0 ranked last


@given(st.integers(0, 2**32 - 1), st.integers(2, 6), st.floats(0.1, 20))
def test_keeps_argmax_and_never_raises_validation_nll(seed, n_classes, scale):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, 50)
    logits = scale * (np.eye(n_classes)[labels] + rng.normal(size=(50, n_classes)))
    if (logits.argmax(axis=1) == labels).all():
        return  # separable: covered by its own test
    fitted = TemperatureScaling().fit(logits, labels)
    assert_array_equal(fitted.predict(logits), logits.argmax(axis=1))
    before = negative_log_likelihood(logits, labels, logits=True)
    after = negative_log_likelihood(fitted(logits), labels, logits=True)
    assert after <= before + 1e-12
    assert_allclose(
        after, oracle.nll_from_logits(logits / fitted.temperature_, labels), rtol=1e-12
    )


def test_calibrated_logits_are_the_logits_over_the_temperature():
    logits, labels = synthetic()
    scaler = TemperatureScaling(temperature_bounds=(0.01, 100)).fit(logits, labels)
    assert_allclose(scaler(logits), logits / scaler.temperature_, rtol=1e-15)
    assert_allclose(scaler.predict_proba(logits), softmax(scaler(logits), axis=1), rtol=1e-15)


@pytest.mark.parametrize(
    ("bounds", "error", "message"),
    [
        ((2, 10), ValueError, r"`temperature_bounds` must satisfy 0 < low <= 1 <= high"),
        ((0, 10), ValueError, r"`temperature_bounds` must satisfy"),
        ((0.1, np.inf), ValueError, r"`temperature_bounds` must satisfy"),
        (5, TypeError, r"`temperature_bounds` must be a pair of numbers"),
    ],
)
def test_bad_bounds(bounds, error, message):
    logits, labels = synthetic(n=50)
    with pytest.raises(error, match=message):
        TemperatureScaling(temperature_bounds=bounds).fit(logits, labels)


@pytest.mark.parametrize(
    "name", ["lenet-5-cifar-100", "wideresnet-16-4-cifar-100", "densenet-bc-100-cifar-100"]
)
def test_real_overconfident_models_improve_on_held_out_half(name):
    prob, labels = load_real(name)
    logits = np.log(np.maximum(prob.astype(np.float64), 1e-30))  # softmax(log p) = p
    order = np.random.default_rng(0).permutation(len(labels))
    fit_rows, test_rows = order[:5000], order[5000:]
    scaler = TemperatureScaling().fit(logits[fit_rows], labels[fit_rows])
    assert scaler.temperature_ > 1  # these networks are overconfident
    before = negative_log_likelihood(
        log_softmax(logits[test_rows], axis=1), labels[test_rows], logits=True
    )
    after = negative_log_likelihood(scaler(logits[test_rows]), labels[test_rows], logits=True)
    assert after < before
    assert ECE(scaler.predict_proba(logits[test_rows]), labels[test_rows]) < ECE(
        prob[test_rows], labels[test_rows]
    )


@pytest.mark.parametrize(("n_samples", "n_classes"), [(300_000, 10), (30_000, 100)])
def test_fit_memory_is_row_blocks_not_copies(n_samples, n_classes):
    # The passes add block sums; they used to keep five N-sized float64 arrays (1.7x the
    # bytes of float32 logits).  What remains is the finiteness check's boolean mask.
    rng = np.random.default_rng(12)
    labels = rng.integers(0, n_classes, n_samples)
    logits = rng.normal(size=(n_samples, n_classes)).astype(np.float32)
    logits[np.arange(n_samples), labels] += 2
    weights = rng.uniform(0.5, 1.5, n_samples)
    for sample_weight in (None, weights):
        tracemalloc.start()
        try:
            TemperatureScaling().fit(logits, labels, sample_weight)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 0.4 * logits.nbytes


def test_uninformative_logits_converge_to_a_large_temperature():
    # 1M x 10 logits that carry no information: the optimum is a large T, where f'(beta)
    # is a small difference of terms of order 1. Summing the margin terms over all rows
    # apart from the rest left f' too noisy for the Newton polish (RuntimeError).
    logits = np.random.default_rng(0).normal(size=(1_000_000, 10)).astype(np.float32)
    labels = np.random.default_rng(1).integers(0, 10, 1_000_000)
    scaler = TemperatureScaling().fit(logits, labels)
    wide = logits.astype(np.float64)

    def derivative(beta):
        log_p = log_softmax(beta * wide, axis=1)
        p = np.exp(log_p)
        expected = np.einsum("ij,ij->i", p, wide)
        return float(np.mean(expected - wide[np.arange(len(labels)), labels]))

    beta = 1 / scaler.temperature_
    assert 1_000 < scaler.temperature_ < 1e4
    assert abs(derivative(beta)) < 1e-12


def calibrated_at(temperature, n=20_000, k=10, seed=5):
    """Float32 logits ``T z`` with labels drawn from ``softmax(z)``: the true temperature is T."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k))
    z[np.arange(n), rng.integers(0, k, n)] += 3
    labels = np.argmax(z + rng.gumbel(size=z.shape), axis=1)  # Gumbel-max: y ~ softmax(z)
    return (temperature * z).astype(np.float32), labels


def vector_gradient(beta, logits, labels):
    """d/d(beta) of the mean NLL of softmax(beta z) (vectorised, float64)."""
    wide = logits.astype(np.float64)
    p = softmax(beta * wide, axis=1)
    return float(np.mean(np.einsum("ij,ij->i", p, wide) - wide[np.arange(len(labels)), labels]))


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0, 4.0])
def test_passes_do_not_depend_on_where_the_optimum_lies(temperature):
    # From T = 1 the passes grew with the distance to the optimum (3 at T = 1, 6-9 at 0.5,
    # 2 and 4 on 1M x 10); a warm start on a subsample and Halley's steps take 2 or 3.
    logits, labels = calibrated_at(temperature)
    fitted = TemperatureScaling().fit(logits, labels)
    beta = brentq(vector_gradient, 0.05, 20, args=(logits, labels), xtol=1e-15, rtol=1e-15)
    assert_allclose(fitted.temperature_, 1 / beta, rtol=1e-10)
    assert_allclose(fitted.temperature_, temperature, rtol=0.05)
    assert fitted.n_passes_ <= 4


def test_confident_real_model_takes_few_passes():
    prob, labels = load_real("densenet-bc-100-cifar-100")
    logits = np.log(np.maximum(prob, np.float32(1e-30)))
    fitted = TemperatureScaling().fit(logits, labels)
    beta = brentq(vector_gradient, 0.05, 20, args=(logits, labels), xtol=1e-15, rtol=1e-15)
    assert_allclose(fitted.temperature_, 1 / beta, rtol=1e-10)
    assert fitted.n_passes_ <= 4  # 11 from T = 1 before


def test_optimum_below_the_bounds_is_reported():
    logits, labels = calibrated_at(0.3, n=3000)
    beta = brentq(vector_gradient, 0.05, 20, args=(logits, labels), xtol=1e-15, rtol=1e-15)
    with pytest.warns(UserWarning, match=f"optimal temperature {1 / beta:.3g} lies outside"):
        fitted = TemperatureScaling(temperature_bounds=(0.5, 2)).fit(logits, labels)
    assert fitted.temperature_ == 0.5
