"""Temperature scaling: exact optimum, peers, invariants, robustness, estimator contract."""

from __future__ import annotations

import json

import numpy as np
import oracle
import pytest
from conftest import load_real
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import brentq
from scipy.special import log_softmax, softmax

from calibration_toolbox import (
    ECE,
    NotFittedError,
    TemperatureScaling,
    load_recalibrator,
    negative_log_likelihood,
)


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


def test_weighted_fit_is_the_weighted_optimum_and_duplicates_rows():
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
    rows = np.repeat(np.arange(300), weights)
    duplicated = TemperatureScaling().fit(logits[rows], labels[rows])
    assert_allclose(fitted.temperature_, duplicated.temperature_, rtol=1e-10)
    doubled = TemperatureScaling().fit(logits, labels, sample_weight=2.0 * weights)
    assert_allclose(doubled.temperature_, fitted.temperature_, rtol=1e-12)


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


def test_binary_one_column_logits():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 400)
    z = 4 * (labels - 0.5) + 2 * rng.normal(size=400)
    one = TemperatureScaling().fit(z, labels)
    two = TemperatureScaling().fit(np.column_stack([np.zeros(400), z]), labels)
    assert_allclose(one.temperature_, two.temperature_, rtol=1e-12)


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
    with pytest.warns(UserWarning, match="lies outside temperature_bounds"):
        fitted = TemperatureScaling(temperature_bounds=(0.1, 10)).fit(logits, labels)
    assert fitted.temperature_ == 10


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


def test_estimator_contract():
    logits, labels = synthetic()
    scaler = TemperatureScaling(temperature_bounds=(0.01, 100))
    assert scaler.get_params() == {"temperature_bounds": (0.01, 100)}
    assert repr(scaler) == "TemperatureScaling(temperature_bounds=(0.01, 100))"
    with pytest.raises(NotFittedError, match="not fitted yet; call `fit`"):
        scaler.predict_proba(logits)
    with pytest.raises(NotFittedError):
        scaler(logits)
    assert scaler.fit(logits, labels) is scaler
    assert_allclose(scaler.predict_proba(logits), softmax(scaler(logits), axis=1), rtol=1e-15)
    assert_allclose(scaler(logits), logits / scaler.temperature_, rtol=1e-15)
    assert scaler.set_params(temperature_bounds=(0.5, 2)) is scaler
    with pytest.raises(ValueError, match="invalid parameter 'bounds' for TemperatureScaling"):
        scaler.set_params(bounds=(1, 2))
    with pytest.raises(ValueError, match="`X` has 5 classes but this TemperatureScaling was"):
        scaler(np.zeros((3, 5)))


def test_sklearn_clone_works():
    base = pytest.importorskip("sklearn.base")
    scaler = TemperatureScaling(temperature_bounds=(0.1, 10))
    clone = base.clone(scaler)
    assert clone is not scaler and clone.get_params() == scaler.get_params()


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


def test_save_and_load_without_pickle(tmp_path):
    logits, labels = synthetic()
    scaler = TemperatureScaling().fit(logits, labels)
    path = tmp_path / "scaler.json"
    scaler.save(path)
    data = json.loads(path.read_text())
    assert data["class"] == "TemperatureScaling"
    for loaded in (
        TemperatureScaling.load(path),
        load_recalibrator(path),
        TemperatureScaling.from_dict(scaler.to_dict()),
    ):
        assert loaded.temperature_ == scaler.temperature_
        assert_array_equal(loaded.predict_proba(logits), scaler.predict_proba(logits))
    with pytest.raises(ValueError, match="not a recalibrator description"):
        TemperatureScaling.from_dict({"class": "TemperatureScaling"})
    with pytest.raises(NotFittedError):
        TemperatureScaling().to_dict()


def test_inputs_are_not_modified():
    logits, labels = synthetic()
    copy = logits.copy()
    TemperatureScaling().fit(logits, labels).predict_proba(logits)
    assert_array_equal(logits, copy)


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
