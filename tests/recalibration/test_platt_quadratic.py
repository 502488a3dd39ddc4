"""Quadratic scaling: ``PlattScaling(quadratic=True)``, ``sigmoid(a s + a_2 s^2 + b)``.

The oracle is the optimality condition of the convex fit: at the fitted coefficients the
gradient of the weighted cross-entropy to the targets, written out here, is 0.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from quadratic_probmetrics import bent_sets, logit_feature
from scipy.special import expit, log_expit, softmax

from calibration_toolbox import negative_log_likelihood
from calibration_toolbox.recalibration.binary import PlattScaling


def curved_binary(rng, n_samples=2000):
    """Binary logits whose true recalibration map bends: logit = 0.3 z + 0.05 z^2 - 0.5."""
    z = rng.normal(scale=3.0, size=n_samples)
    labels = (rng.uniform(size=n_samples) < expit(0.3 * z + 0.05 * z * z - 0.5)).astype(int)
    return z, labels


def targets(labels, sample_weight, smoothed):
    positive = labels == 1
    if not smoothed:
        return positive.astype(float)
    weights = np.ones(len(labels)) if sample_weight is None else sample_weight
    n_pos, n_neg = weights[positive].sum(), weights[~positive].sum()
    return np.where(positive, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))


def gradient(score, target, coef, intercept, sample_weight):
    """d/d(a, a_2, b) of sum_i v_i [-t_i log q_i - (1 - t_i) log(1 - q_i)], v summing to 1."""
    weights = np.ones(len(score)) if sample_weight is None else sample_weight
    weights = weights / weights.sum()
    residual = weights * (expit(coef[0] * score + coef[1] * score**2 + intercept) - target)
    return np.array([residual @ score, residual @ score**2, residual.sum()])


@pytest.mark.parametrize("smoothed", [True, False])
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_fit_is_stationary(rng, smoothed, weighted):
    z, labels = curved_binary(rng)
    sample_weight = rng.uniform(0.2, 3.0, size=len(z)) if weighted else None
    model = PlattScaling(quadratic=True, smoothed_targets=smoothed).fit(z, labels, sample_weight)
    assert model.coef_.shape == (1, 2)
    t = targets(labels, sample_weight, smoothed)
    # Scaled by each feature's size: the gradient in the standardised features.
    scale = np.array([z.std(), (z**2).std(), 1.0])
    grad = gradient(z, t, model.coef_[0], model.intercept_[0], sample_weight)
    assert np.abs(grad / scale).max() < 1e-10
    # The bend of the truth is found (0.05 +- a few standard errors at N = 2000).
    assert 0.02 < model.coef_[0, 1] < 0.08


def test_one_vs_rest_models_are_stationary(rng):
    labels = rng.integers(0, 3, 3000)
    logits = 2.0 * (np.eye(3)[labels] + rng.normal(size=(3000, 3)))
    model = PlattScaling(quadratic=True, smoothed_targets=False).fit(logits, labels)
    assert model.coef_.shape == (3, 2)
    for k in range(3):
        score = logits[:, k]
        grad = gradient(
            score, (labels == k).astype(float), model.coef_[k], model.intercept_[k], None
        )
        assert np.abs(grad / np.array([score.std(), (score**2).std(), 1.0])).max() < 1e-10


def test_prediction_is_the_quadratic_logistic_map(rng):
    labels = rng.integers(0, 3, 1000)
    logits = 2.0 * (np.eye(3)[labels] + rng.normal(size=(1000, 3)))
    model = PlattScaling(quadratic=True).fit(logits, labels)
    q = expit(model.coef_[:, 0] * logits + model.coef_[:, 1] * logits**2 + model.intercept_)
    assert_allclose(model.predict_proba(logits), q / q.sum(axis=1, keepdims=True), rtol=1e-12)
    z, binary = curved_binary(rng, 500)
    model = PlattScaling(quadratic=True).fit(z, binary)
    q = expit(model.coef_[0, 0] * z + model.coef_[0, 1] * z**2 + model.intercept_[0])
    assert_allclose(model.predict_proba(z)[:, 1], q, rtol=1e-12)
    assert_allclose(softmax(model(z), axis=1), model.predict_proba(z), rtol=1e-12)


def test_quadratic_fits_better_than_linear_on_a_bent_map(rng):
    z, labels = curved_binary(rng, 4000)
    linear = PlattScaling(smoothed_targets=False).fit(z, labels)
    quadratic = PlattScaling(smoothed_targets=False, quadratic=True).fit(z, labels)
    nll_linear = negative_log_likelihood(linear.predict_proba(z), labels)
    nll_quadratic = negative_log_likelihood(quadratic.predict_proba(z), labels)
    assert nll_quadratic < nll_linear - 1e-3


def test_save_and_load_and_old_files(rng, tmp_path):
    z, labels = curved_binary(rng, 500)
    model = PlattScaling(quadratic=True).fit(z, labels)
    model.save(tmp_path / "quadratic.json")
    loaded = PlattScaling.load(tmp_path / "quadratic.json")
    assert loaded.quadratic is True
    assert_array_equal(loaded.predict_proba(z), model.predict_proba(z))
    # A linear map's file as the release before `quadratic` wrote it: no parameter, one column.
    linear = PlattScaling().fit(z, labels)
    description = linear.to_dict()
    del description["params"]["quadratic"]
    old = PlattScaling.from_dict(description)
    assert old.coef_.shape == (1, 1)
    assert_array_equal(old.predict_proba(z), linear.predict_proba(z))
    # A loaded map predicts from its fitted columns, whatever `quadratic` says now.
    loaded.set_params(quadratic=False)
    assert_array_equal(loaded.predict_proba(z), model.predict_proba(z))


def test_load_refuses_three_columns(rng):
    z, labels = curved_binary(rng, 200)
    description = PlattScaling(quadratic=True).fit(z, labels).to_dict()
    description["fitted"]["coef_"] = {"dtype": "<f8", "shape": [1, 3], "data": [0.1, 0.2, 0.3]}
    with pytest.raises(ValueError, match=r"`coef_` must have 1 column \(a s\) or 2"):
        PlattScaling.from_dict(description)


def test_invalid_quadratic():
    with pytest.raises(TypeError, match=r"`quadratic` must be True or False; got 'yes'\."):
        PlattScaling(quadratic="yes").fit([0.1, -0.2, 0.3], [1, 0, 1])


# tests/references/quadratic_probmetrics.py: probmetrics 1.3.0's "quadratic-scaling" (scikit-
# learn's unpenalised LBFGS logistic regression on [1, l, l^2], float32 features): its
# coefficients (b, a, a_2) and its mean log-loss (float32) on the fitted rows.
PROBMETRICS_QUADRATIC = {
    "bent": (
        [-0.41176989674568176, 0.2906228005886078, 0.04539630934596062],
        0.6103147268295288,
    ),
    "straight": (
        [-0.5443629026412964, 0.32194140553474426, -0.0006780977710150182],
        0.5825127959251404,
    ),
}


def mean_log_loss(score, labels, coef, intercept):
    z = coef[0] * score + coef[1] * score**2 + intercept
    return float(np.mean(np.where(labels == 1, -log_expit(z), -log_expit(-z))))


@pytest.mark.parametrize("name", sorted(PROBMETRICS_QUADRATIC))
def test_quadratic_matches_probmetrics(name):
    p, labels = bent_sets()[name]
    score = logit_feature(p)
    (their_b, their_a, their_a2), their_loss = PROBMETRICS_QUADRATIC[name]
    model = PlattScaling(quadratic=True, smoothed_targets=False).fit(score, labels)
    theirs = mean_log_loss(score, labels, [their_a, their_a2], their_b)
    ours = mean_log_loss(score, labels, model.coef_[0], model.intercept_[0])
    # Their LBFGS (tolerance 1e-4, float32 features) stops 1e-7 (relative) above the optimum,
    # with coefficients 1e-3 off where the loss is this flat; ours is the optimum on the same
    # (float32-valued) features (see the stationarity tests): lower, and close.
    assert_allclose(theirs, their_loss, rtol=1e-6)
    assert ours <= theirs + 1e-15
    assert_allclose(ours, theirs, rtol=1e-6)
    assert_allclose(model.coef_[0], [their_a, their_a2], rtol=0, atol=2e-3)
    assert_allclose(model.intercept_[0], their_b, rtol=0, atol=2e-3)
