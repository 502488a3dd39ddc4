"""Ensemble temperature scaling (Zhang, Kailkhura & Han 2020).

The estimator contract shared by every recalibrator is in test_recalibrator_contract.py.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, check_grad, minimize
from scipy.special import log_softmax, logsumexp, softmax

from calibration_toolbox import ECE, _scipy, negative_log_likelihood
from calibration_toolbox.recalibration.ensemble import (
    EnsembleTemperatureScaling,
    _fitted_mixing,
    _MixtureWeightBrier,
)
from calibration_toolbox.recalibration.temperature import TemperatureScaling
from tests.conftest import load_real


def overconfident_logits(rng, n_samples=1000, n_classes=4, scale=3.0, dtype=np.float64):
    labels = rng.integers(0, n_classes, n_samples)
    logits = scale * (np.eye(n_classes)[labels] + rng.normal(size=(n_samples, n_classes)))
    return logits.astype(dtype), labels


def mixture_nll(logits, labels, temperature, weights, sample_weight=None):
    """The fitted loss written out directly from the model's definition."""
    n_classes = logits.shape[1]
    prob = (
        weights[0] * softmax(logits / temperature, axis=1)
        + weights[1] * softmax(logits, axis=1)
        + weights[2] / n_classes
    )
    losses = -np.log(prob[np.arange(len(labels)), labels])
    return float(np.average(losses, weights=sample_weight))


def assert_normalised(prob):
    assert np.isfinite(prob).all()
    assert prob.min() >= 0
    assert_allclose(prob.sum(axis=1), 1.0, rtol=0, atol=1e-12)


# -- the weight objective, written out independently --------------------------------------
def label_components(logits, labels, temperature):
    """Per row, the probability of the label under each term of the mixture (N, 3)."""
    rows = np.arange(len(labels))
    return np.stack(
        [
            softmax(logits / temperature, axis=1)[rows, labels],
            softmax(logits, axis=1)[rows, labels],
            np.full(len(labels), 1 / logits.shape[1]),
        ],
        axis=1,
    )


def mixture_nll_and_gradient(mixing, components, sample_weight=None):
    """-sum_i v_i log(sum_j w_j a_ij) and its gradient -sum_i v_i a_ij / sum_l w_l a_il."""
    mixture = components @ mixing
    v = np.full(len(components), 1 / len(components))
    if sample_weight is not None:
        v = sample_weight / sample_weight.sum()
    return -float(v @ np.log(mixture)), -(v / mixture) @ components


def test_written_out_gradient_matches_finite_differences(rng):
    # Self-check of the test's own objective, which the checks below rely on.
    logits, labels = overconfident_logits(rng, n_samples=300)
    components = label_components(logits, labels, 2.0)
    sample_weight = rng.random(300)
    for mixing in ([1 / 3, 1 / 3, 1 / 3], [0.7, 0.2, 0.1], [0.5, 1.2, 0.3]):
        mixing = np.array(mixing)
        gradient = mixture_nll_and_gradient(mixing, components, sample_weight)[1]
        error = check_grad(
            lambda w: mixture_nll_and_gradient(w, components, sample_weight)[0],
            lambda w: mixture_nll_and_gradient(w, components, sample_weight)[1],
            mixing,
        )
        assert error < 1e-6 * max(1.0, np.linalg.norm(gradient))


def simplex_fit(components, sample_weight):
    """Independent fit: the written-out NLL over the simplex by scipy's trust-constr."""
    result = minimize(
        lambda w: mixture_nll_and_gradient(w, components, sample_weight),
        np.full(3, 1 / 3),
        jac=True,
        method="trust-constr",
        bounds=Bounds(np.full(3, 1e-300), np.ones(3)),
        constraints=[LinearConstraint(np.ones((1, 3)), 1.0, 1.0)],
        options={"gtol": 1e-12, "xtol": 1e-14, "maxiter": 3000},
    )
    mixing = np.maximum(result.x, 0)
    return mixing / mixing.sum()


def fitted_with(temperature, mixing, n_classes=3):
    """A fitted estimator with the given state, through the public `from_dict`."""
    logits, labels = overconfident_logits(np.random.default_rng(0), 50, n_classes)
    state = EnsembleTemperatureScaling().fit(logits, labels).to_dict()
    state["fitted"]["temperature_"] = temperature
    state["fitted"]["weights_"]["data"] = list(mixing)
    state["fitted"]["n_classes_"] = n_classes
    return EnsembleTemperatureScaling.from_dict(state)


@pytest.mark.parametrize("temperature", [1e-4, 0.3])
@pytest.mark.parametrize(
    "mixing", [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]
)
def test_log_probabilities_match_log_softmax_at_extreme_logits(rng, temperature, mixing):
    # Labels with probability exp(-2e8) under the scaled term: log space keeps it finite.
    logits = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 0.0], [0.0, 1e4, 0.0]])
    logits = np.concatenate([logits, 7.0 * rng.normal(size=(200, 3))])
    ets = fitted_with(temperature, mixing)
    with np.errstate(divide="ignore"):
        log_mixing = np.log(mixing)
    terms = np.stack(
        [
            log_mixing[0] + log_softmax(logits / temperature, axis=1),
            log_mixing[1] + log_softmax(logits, axis=1),
            np.broadcast_to(log_mixing[2] - np.log(3), logits.shape),
        ]
    )
    expected = logsumexp(terms, axis=0)
    log_prob = ets(logits)
    assert np.isfinite(log_prob).all()
    # Near 0 both lose relative precision (log of a sum close to 1): atol of a few eps.
    assert_allclose(log_prob, expected, rtol=1e-12, atol=1e-15)
    assert_allclose(ets.predict_proba(logits), np.exp(expected), rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize(
    ("labels", "warning"),
    [([1, 0, 1], "largest as T -> inf"), ([0, 1, 1], "separated perfectly")],
)
def test_fit_is_finite_at_extreme_logits(labels, warning):
    # T at a bound of (1e-4, 1e4): some labels have probability exp(-2e8) under a term.
    logits = np.array([[1e4, -1e4, 0.0], [-1e4, 1e4, 0.0], [0.0, 1e4, 0.0]])
    with pytest.warns(UserWarning, match=warning):
        ets = EnsembleTemperatureScaling().fit(logits, labels)
    assert np.isfinite(ets.weights_).all()
    assert_allclose(ets.weights_.sum(), 1.0, rtol=0, atol=1e-15)
    assert np.isfinite(ets(logits)).all()


# -- the fit --------------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_weights_minimise_the_nll_over_the_simplex(rng, weighted):
    logits, labels = overconfident_logits(rng, n_samples=800)
    sample_weight = rng.random(800) if weighted else None
    ets = EnsembleTemperatureScaling().fit(logits, labels, sample_weight)
    assert ets.weights_.shape == (3,) and ets.weights_.min() >= 0
    assert_allclose(ets.weights_.sum(), 1.0, rtol=0, atol=1e-15)
    temperature = TemperatureScaling().fit(logits, labels, sample_weight).temperature_
    assert ets.temperature_ == temperature
    fitted = mixture_nll(logits, labels, temperature, ets.weights_, sample_weight)
    # No point of a 0.01 grid over the simplex does better, temperature scaling included.
    steps = np.arange(101) / 100
    grid = np.array([(a, b, 1 - a - b) for a in steps for b in steps if a + b <= 1 + 1e-12])
    grid = np.clip(grid, 0, 1)
    rows = np.arange(len(labels))
    components = np.stack(
        [
            softmax(logits / temperature, axis=1)[rows, labels],
            softmax(logits, axis=1)[rows, labels],
            np.full(len(labels), 0.25),
        ]
    )
    grid_nll = np.average(-np.log(grid @ components), axis=1, weights=sample_weight)
    assert fitted <= grid_nll.min() + 1e-10
    assert fitted <= mixture_nll(logits, labels, temperature, [1, 0, 0], sample_weight)


def em_mixture_weights(components, sample_weight=None, iterations=20000):
    """Independent oracle: EM for mixture weights increases the likelihood monotonically."""
    v = np.full(len(components), 1 / len(components))
    if sample_weight is not None:
        v = sample_weight / sample_weight.sum()
    mixing = np.full(3, 1 / 3)
    for _ in range(iterations):
        joint = components + np.log(np.maximum(mixing, 1e-300))
        responsibilities = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        mixing = v @ responsibilities
    return mixing


@pytest.mark.parametrize("scale", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_weights_match_an_em_oracle_and_the_optimality_conditions(rng, scale, weighted):
    # scale < 1 makes the model underconfident, so the raw and uniform terms get weight.
    n_samples, n_classes = 600, 4
    labels = rng.integers(0, n_classes, n_samples)
    logits = 2.0 * np.eye(n_classes)[labels] + rng.normal(size=(n_samples, n_classes))
    noisy = rng.random(n_samples) < 0.2
    labels[noisy] = rng.integers(0, n_classes, noisy.sum())
    logits *= scale
    sample_weight = rng.random(n_samples) if weighted else None
    ets = EnsembleTemperatureScaling().fit(logits, labels, sample_weight)
    components = label_components(logits, labels, ets.temperature_)
    fitted, gradient = mixture_nll_and_gradient(ets.weights_, components, sample_weight)
    oracle = em_mixture_weights(np.log(components), sample_weight, iterations=3000)
    assert fitted <= mixture_nll_and_gradient(oracle, components, sample_weight)[0] + 1e-12
    independent = simplex_fit(components, sample_weight)
    expected = mixture_nll_and_gradient(independent, components, sample_weight)[0]
    assert fitted <= expected + 1e-12 * abs(expected)
    # dL/dw_j >= -1 everywhere, with equality on the support (multiplier of sum w = 1).
    assert gradient.min() >= -1 - 1e-6
    assert_allclose(gradient[ets.weights_ > 1e-6], -1.0, rtol=0, atol=1e-6)


def test_non_optimal_weights_warn_and_fall_back(rng, monkeypatch):
    logits, labels = overconfident_logits(rng)

    def stuck(*args, **kwargs):
        return OptimizeResult(
            x=np.array([0.0, 0.0, 1.0]), success=False, message="Iteration limit reached"
        )

    # the package reaches SciPy's minimize through calibration_toolbox._scipy
    monkeypatch.setattr(_scipy.optimize, "minimize", stuck)
    with pytest.warns(UserWarning, match=r"may not be optimal \(Iteration limit reached\)"):
        ets = EnsembleTemperatureScaling().fit(logits, labels)
    assert_array_equal(ets.weights_, [1.0, 0.0, 0.0])


def test_underconfident_logits_use_the_raw_and_uniform_terms(rng):
    # Labels drawn from softmax(z) mixed with 30 % uniform noise: w = (?, 0.7, 0.3) fits.
    n_samples, n_classes = 4000, 5
    logits = 2.0 * rng.normal(size=(n_samples, n_classes))
    prob = 0.7 * softmax(logits, axis=1) + 0.3 / n_classes
    labels = (rng.random(n_samples)[:, None] > np.cumsum(prob, axis=1)).sum(axis=1)
    labels = np.minimum(labels, n_classes - 1)
    ets = EnsembleTemperatureScaling().fit(logits, labels)
    assert ets.weights_[2] > 0.1
    assert mixture_nll(logits, labels, ets.temperature_, ets.weights_) < mixture_nll(
        logits, labels, ets.temperature_, [1, 0, 0]
    )


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_keeps_the_argmax_and_returns_log_probabilities(rng, dtype):
    logits, labels = overconfident_logits(rng, dtype=dtype)
    ets = EnsembleTemperatureScaling().fit(logits, labels)
    test_logits, _ = overconfident_logits(rng, n_samples=500, dtype=dtype)
    log_prob = ets(test_logits)
    assert log_prob.dtype == np.float64
    assert_allclose(np.exp(log_prob).sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert_allclose(ets.predict_proba(test_logits), np.exp(log_prob), rtol=1e-12, atol=0)
    assert_array_equal(ets.predict(test_logits), test_logits.argmax(axis=1))
    expected = (
        ets.weights_[0] * softmax(test_logits.astype(float) / ets.temperature_, axis=1)
        + ets.weights_[1] * softmax(test_logits.astype(float), axis=1)
        + ets.weights_[2] / 4
    )
    assert_allclose(np.exp(log_prob), expected, rtol=1e-12, atol=1e-300)


# -- robustness ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_logits_of_magnitude_1e4(rng, dtype):
    logits, labels = overconfident_logits(rng, n_samples=400, scale=3e3, dtype=dtype)
    logits[:, 0] = 1e4 * np.sign(logits[:, 0])
    ets = EnsembleTemperatureScaling().fit(logits, labels)
    prob = ets.predict_proba(logits)
    assert_normalised(prob)
    assert not np.isnan(ets(logits)).any()
    assert_array_equal(prob.argmax(axis=1), logits.argmax(axis=1))
    assert_allclose(ets.weights_.sum(), 1.0, rtol=0, atol=1e-15)


def test_perfectly_separable_set_warns_and_stays_finite():
    labels = np.arange(60) % 3
    logits = 5.0 * np.eye(3)[labels]
    with pytest.warns(UserWarning, match="separated perfectly"):
        ets = EnsembleTemperatureScaling().fit(logits, labels)
    assert ets.temperature_ == 1e-4
    assert ets.weights_[0] > 0.999
    prob = ets.predict_proba(logits)
    assert_normalised(prob)
    assert_array_equal(prob.argmax(axis=1), labels)


def test_class_that_never_occurs(rng):
    logits, labels = overconfident_logits(rng, n_samples=400, n_classes=5)
    labels[labels == 3] = 0
    ets = EnsembleTemperatureScaling().fit(logits, labels)
    prob = ets.predict_proba(logits)
    assert_normalised(prob)
    assert prob[:, 3].min() > 0


# -- errors ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bounds", "error", "message"),
    [
        ((2.0, 3.0), ValueError, r"`temperature_bounds` must satisfy 0 < low <= 1 <= high"),
        (5.0, TypeError, r"`temperature_bounds` must be a pair of numbers"),
    ],
)
def test_invalid_temperature_bounds(bounds, error, message):
    with pytest.raises(error, match=message):
        EnsembleTemperatureScaling(temperature_bounds=bounds).fit(np.eye(3), [0, 1, 2])


# -- real predictions ------------------------------------------------------------------------
@pytest.mark.parametrize(
    "model",
    [
        "densenet-bc-100-cifar-100",
        "lenet-5-cifar-10",
        "vgg16-cifar-10",
        "wideresnet-16-4-cifar-10",
        "wideresnet-16-4-cifar-100",
    ],
)
def test_real_predictions_calibrate(model):
    prob, labels = load_real(model)
    logits = np.log(prob)  # the saved softmax outputs, up to a per-row constant
    order = np.random.default_rng(0).permutation(len(labels))
    fit, held_out = order[: len(order) // 2], order[len(order) // 2 :]
    # Overconfident on the calibration half.
    accuracy = np.mean(prob[fit].argmax(axis=1) == labels[fit])
    assert prob[fit].max(axis=1).mean() > accuracy and ECE(prob[fit], labels[fit]) > 0.03
    ets = EnsembleTemperatureScaling().fit(logits[fit], labels[fit])
    calibrated = ets.predict_proba(logits[held_out])
    assert_normalised(calibrated)
    assert_array_equal(calibrated.argmax(axis=1), prob[held_out].argmax(axis=1))
    before = negative_log_likelihood(prob[held_out], labels[held_out])
    assert negative_log_likelihood(calibrated, labels[held_out]) < before


# -- loss="mse": the squared-error fit of the Mix-n-Match code ---------------------------------
# tests/references/ensemble_mixnmatch.py: the authors' util_calibration.py (temperature_scaling
# and ensemble_scaling with loss 'mse', as its ets_calibrate runs them): T, the weights, and
# its loss mse_w there (the squared error averaged over the N x K entries).
MIXNMATCH = {
    "seed-7": (
        2.921164530449536,
        [0.9939392686351501, 0.001952389008939695, 0.00410834235591015],
        0.12622601177505371,
    ),
    "seed-8": (
        2.98924139621018,
        [0.998491528824068, 0.0, 0.001508471175932003],
        0.12791221226253383,
    ),
    "lenet-5-cifar-10": (1.4050995510502349, [1.0, 0.0, 0.0], 0.05977698891946031),
}


def mixnmatch_set(name):
    if name == "lenet-5-cifar-10":
        prob, labels = load_real(name)
        return np.log(prob.astype(np.float64)), labels
    rng = np.random.default_rng(int(name.removeprefix("seed-")))
    n_samples, n_classes = 3000, 5
    labels = rng.integers(0, n_classes, n_samples)
    logits = 3.0 * (np.eye(n_classes)[labels] + rng.normal(size=(n_samples, n_classes)))
    return logits, labels


def entry_mse(prob, labels, sample_weight=None):
    """The squared error to the one-hot labels, averaged over the rows and the K entries."""
    errors = ((prob - np.eye(prob.shape[1])[labels]) ** 2).mean(axis=1)
    return float(np.average(errors, weights=sample_weight))


def ensemble_probs(logits, temperature, weights):
    return (
        weights[0] * softmax(logits / temperature, axis=1)
        + weights[1] * softmax(logits, axis=1)
        + weights[2] / logits.shape[1]
    )


@pytest.mark.parametrize("name", ["seed-7", "seed-8", "lenet-5-cifar-10"])
def test_mse_matches_mixnmatch(name):
    logits, labels = mixnmatch_set(name)
    temperature, weights, loss = MIXNMATCH[name]
    weights = np.array(weights)
    model = EnsembleTemperatureScaling(loss="mse").fit(logits, labels)
    assert_allclose(
        entry_mse(ensemble_probs(logits, temperature, weights), labels), loss, rtol=1e-13
    )

    # Their optimisers (finite-difference gradients) stop near each stage's optimum: each
    # stage's loss agrees to 1e-10 and ours is not above theirs; T and the weights agree to
    # the accuracy of their stopping rules.
    def tempered(t):
        return entry_mse(softmax(logits / t, axis=1), labels)

    assert tempered(model.temperature_) <= tempered(temperature) * (1 + 1e-15)
    assert_allclose(tempered(model.temperature_), tempered(temperature), rtol=1e-12)
    assert_allclose(model.temperature_, temperature, rtol=1e-6)
    # The weights at their T: as the fit makes them at ours.
    at_their_t = _fitted_mixing(_MixtureWeightBrier(logits, labels, temperature, None))
    assert entry_mse(ensemble_probs(logits, temperature, at_their_t), labels) <= loss * (1 + 1e-15)
    assert_allclose(at_their_t, weights, rtol=0, atol=1e-5)
    assert_allclose(model.weights_, weights, rtol=0, atol=1e-5)
    assert_allclose(entry_mse(model.predict_proba(logits), labels), loss, rtol=1e-10)


def brier_components(logits, temperature):
    return [
        softmax(logits / temperature, axis=1),
        softmax(logits, axis=1),
        np.full(logits.shape, 1 / logits.shape[1]),
    ]


@pytest.mark.parametrize("weighted", [False, True])
def test_mse_fit_is_optimal(rng, weighted):
    logits, labels = overconfident_logits(rng, n_samples=1500, n_classes=6)
    sample_weight = rng.uniform(0.2, 3.0, size=len(labels)) if weighted else None
    model = EnsembleTemperatureScaling(loss="mse").fit(logits, labels, sample_weight)
    one_hot = np.eye(6)[labels]

    # The temperature: the Brier score of softmax(z / T) is stationary there (central
    # differences of the direct formula).
    def tempered(temperature):
        return entry_mse(softmax(logits / temperature, axis=1), labels, sample_weight)

    step = 1e-5 * model.temperature_
    slope = (tempered(model.temperature_ + step) - tempered(model.temperature_ - step)) / step
    assert abs(slope) < 1e-8
    # The weights: the KKT conditions on the simplex, from the gradient written out directly.
    components = brier_components(logits, model.temperature_)
    mixed = sum(w * c for w, c in zip(model.weights_, components, strict=True))
    row_weights = np.ones(len(labels)) if sample_weight is None else sample_weight
    gradient = np.array(
        [
            np.average(2 * ((mixed - one_hot) * c).sum(axis=1), weights=row_weights)
            for c in components
        ]
    )
    shifted = gradient - model.weights_ @ gradient
    assert shifted.min() > -1e-10
    assert np.abs(shifted[model.weights_ > 1e-9]).max() < 1e-10


def test_mse_and_nll_fits_differ_and_nll_is_the_default(rng):
    logits, labels = overconfident_logits(rng, n_samples=1500)
    default = EnsembleTemperatureScaling().fit(logits, labels)
    nll = EnsembleTemperatureScaling(loss="nll").fit(logits, labels)
    mse = EnsembleTemperatureScaling(loss="mse").fit(logits, labels)
    assert default.temperature_ == nll.temperature_
    assert_array_equal(default.weights_, nll.weights_)
    assert abs(mse.temperature_ - nll.temperature_) > 1e-3
    assert entry_mse(mse.predict_proba(logits), labels) < entry_mse(
        nll.predict_proba(logits), labels
    )
    assert negative_log_likelihood(nll.predict_proba(logits), labels) < negative_log_likelihood(
        mse.predict_proba(logits), labels
    )


def test_invalid_loss():
    with pytest.raises(ValueError, match=r"`loss` must be 'nll' or 'mse'; got 'ce'\."):
        EnsembleTemperatureScaling(loss="ce").fit(np.eye(3), [0, 1, 2])


def test_a_file_written_before_loss_still_loads(rng):
    logits, labels = overconfident_logits(rng, n_samples=300)
    model = EnsembleTemperatureScaling().fit(logits, labels)
    description = model.to_dict()
    del description["params"]["loss"]
    loaded = EnsembleTemperatureScaling.from_dict(description)
    assert loaded.loss == "nll"
    assert_array_equal(loaded.predict_proba(logits), model.predict_proba(logits))
