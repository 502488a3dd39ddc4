"""Per-label Platt scaling (one sigmoid per label): K fits against K separate SciPy fits."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import root
from scipy.special import expit, log_expit

import calibration_toolbox as ct


def problem(n=1500, k=3, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(n, k)) + np.array([0.0, -1.0, 1.0, 0.5])[:k]
    targets = (rng.random((n, k)) < expit(truth)).astype(np.uint8)
    # overconfident and shifted scores: a = 1/3, b = -0.5 / 3 would undo them
    return 3.0 * truth + 0.5, targets


def oracle_platt(s, y, w, smoothed=True):
    """One label's (a, b): the root of the weighted cross-entropy's gradient (SciPy's root).

    The gradient and Hessian are written from the definition, each a sum over the rows in a
    loop (no vectorised kernel shared with the package).
    """
    positive = w[y == 1].sum()
    negative = w[y == 0].sum()
    t_pos, t_neg = ((positive + 1) / (positive + 2), 1 / (negative + 2)) if smoothed else (1, 0)
    t = np.where(y == 1, t_pos, t_neg)

    def gradient(params):
        a, b = params
        g = np.zeros(2)
        for si, ti, wi in zip(s, t, w, strict=True):
            r = wi * (expit(a * si + b) - ti)
            g += [r * si, r]
        return g / w.sum()

    def hessian(params):
        a, b = params
        h = np.zeros((2, 2))
        for si, wi in zip(s, w, strict=True):
            p = expit(a * si + b)
            c = wi * p * (1 - p)
            h += c * np.array([[si * si, si], [si, 1.0]])
        return h / w.sum()

    result = root(gradient, [0.3, 0.0], jac=hessian, method="hybr", options={"xtol": 1e-14})
    assert np.abs(gradient(result.x)).max() < 1e-14  # stationary: the optimum (convex)
    return result.x


@pytest.mark.parametrize("weighted", [False, True])
def test_each_label_has_the_fit_of_its_own_column(weighted):
    scores, targets = problem(n=600)
    weights = np.random.default_rng(1).random(600) * 2 if weighted else None
    model = ct.PlattScaling(multilabel=True).fit(scores, targets, weights)
    w = np.ones(600) if weights is None else weights
    expected = np.array([oracle_platt(scores[:, k], targets[:, k], w) for k in range(3)])
    assert_allclose(model.coef_[:, 0], expected[:, 0], rtol=1e-8)
    assert_allclose(model.intercept_, expected[:, 1], rtol=1e-8, atol=1e-10)
    assert model.n_classes_ == 3 and model.input_ == "logits per label"


def test_plain_targets_and_probability_scores():
    scores, targets = problem(n=600)
    prob = expit(scores / 3)
    model = ct.PlattScaling(input="probabilities", smoothed_targets=False, multilabel=True)
    model.fit(prob, targets)
    w = np.ones(600)
    expected = np.array([oracle_platt(prob[:, k], targets[:, k], w, False) for k in range(3)])
    assert_allclose(np.c_[model.coef_, model.intercept_], expected, rtol=1e-8)
    assert model.input_ == "probabilities per label"
    assert_allclose(model.predict_proba(prob), expit(prob * expected[:, 0] + expected[:, 1]))


def test_predictions_are_independent_sigmoids_without_renormalisation():
    scores, targets = problem()
    model = ct.PlattScaling(multilabel=True).fit(scores, targets)
    z = scores * model.coef_[:, 0] + model.intercept_
    assert_array_equal(model(scores), z)
    assert_allclose(model.predict_proba(scores), expit(z), rtol=1e-15)
    assert not np.allclose(model.predict_proba(scores).sum(axis=1), 1)
    assert_array_equal(model.predict(scores), (z >= 0).astype(np.uint8))
    expected = np.mean(
        [np.mean(log_expit(np.where(targets[:, k], z[:, k], -z[:, k]))) for k in range(3)]
    )
    assert_allclose(model.score(scores, targets), expected, rtol=1e-12)


def test_round_trip_is_exact(tmp_path):
    scores, targets = problem(k=2)  # two labels: two models (a binary task has one)
    model = ct.PlattScaling(multilabel=True).fit(scores, targets)
    assert model.coef_.shape == (2, 1)
    model.save(tmp_path / "model.json")
    loaded = ct.load_recalibrator(tmp_path / "model.json")
    assert loaded.input_ == "logits per label"
    assert_array_equal(loaded.predict_proba(scores), model.predict_proba(scores))
    description = model.to_dict()
    description["fitted"]["coef_"] = {"dtype": "<f8", "shape": [1, 1], "data": [1.0]}
    (tmp_path / "bad.json").write_text(json.dumps(description))
    with pytest.raises(ValueError, match="coef_"):
        ct.load_recalibrator(tmp_path / "bad.json")


def test_ambiguous_calls_are_refused():
    scores, targets = problem()
    one_hot = np.eye(3, dtype=int)[np.argmax(scores, axis=1)]
    with pytest.raises(ValueError, match="1-D array of class indices"):
        ct.PlattScaling().fit(scores, targets)
    softmax_rows = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    with pytest.raises(ValueError, match="one-hot"):
        ct.PlattScaling(input="probabilities", multilabel=True).fit(softmax_rows, one_hot)
    with pytest.raises(ValueError, match="one label"):
        ct.PlattScaling(multilabel=True).fit(scores[:, :1], targets[:, :1])
    model = ct.PlattScaling(multilabel=True).fit(scores, targets)
    with pytest.raises(ValueError, match=r"`X` must be an \(N, 3\) array"):
        model.predict_proba(scores[:, 0])
    with pytest.raises(ValueError, match="`y`") as caught:
        ct.PlattScaling(multilabel=True).fit(scores, np.full((len(scores), 3), 2))
    assert caught.value.argument == "y"


def test_inputs_are_not_mutated():
    scores, targets = problem()
    before = scores.copy(), targets.copy()
    model = ct.PlattScaling(multilabel=True).fit(scores, targets)
    model.predict_proba(scores)
    assert_array_equal(scores, before[0])
    assert_array_equal(targets, before[1])


def test_a_single_valued_or_separated_label_is_warned_about():
    scores, targets = problem()
    targets[:, 1] = 1
    with pytest.warns(UserWarning, match=r"label\(s\) \[1\] of `y` hold a single value"):
        ct.PlattScaling(multilabel=True).fit(scores, targets)
    scores, targets = problem()
    scores[:, 2] = np.where(targets[:, 2] == 1, 1.0, -1.0)
    with pytest.warns(UserWarning, match=r"separate label\(s\) \[2\] perfectly"):
        ct.PlattScaling(multilabel=True, smoothed_targets=False).fit(scores, targets)


def test_quadratic_per_label_is_each_column_s_binary_quadratic_fit():
    # quadratic=True with multilabel=True: label k's (a, a_2, b) is the binary quadratic fit
    # of its own column (the binary fit is checked against its KKT oracle elsewhere)
    scores, targets = problem(n=800)
    model = ct.PlattScaling(multilabel=True, quadratic=True).fit(scores, targets)
    assert model.coef_.shape == (3, 2)
    probabilities = model.predict_proba(scores)
    for k in range(3):
        binary = ct.PlattScaling(quadratic=True).fit(scores[:, k], targets[:, k])
        assert_allclose(model.coef_[k], binary.coef_[0], rtol=1e-9, atol=1e-12)
        assert_allclose(model.intercept_[k], binary.intercept_[0], rtol=1e-9, atol=1e-12)
        assert_allclose(probabilities[:, k], binary.predict_proba(scores[:, k])[:, 1], rtol=1e-9)
    loaded = ct.PlattScaling.from_dict(json.loads(json.dumps(model.to_dict())))
    assert_array_equal(loaded.predict_proba(scores), probabilities)
