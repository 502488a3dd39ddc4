"""select_recalibrator: its table against a loop written out, its folds, its warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import softmax

import calibration_toolbox as ct
from calibration_toolbox._warnings import UncalibratedBestWarning
from calibration_toolbox.datasets import make_overconfident
from calibration_toolbox.recalibration._methods import METHODS
from calibration_toolbox.recalibration.select import stratified_folds

FAST = ["temperature", "vector", "platt", "beta", "isotonic", "histogram", "dirichlet"]


def _oracle_scores(X, labels, folds, methods, logits, score, weights=None):
    """Each method fitted on the other folds and scored on its fold, one pair at a time."""
    probabilities = softmax(X, axis=1) if logits else X
    log_probabilities = X if logits else np.log(np.maximum(X, 1e-300))
    rows = []
    for name in ["uncalibrated", *methods]:
        row = []
        for fold in range(folds.max() + 1):
            test, train = folds == fold, folds != fold
            w_train = None if weights is None else weights[train]
            w_test = None if weights is None else weights[test]
            if name == "uncalibrated":
                p = probabilities[test]
            else:
                method = METHODS[name]
                data = log_probabilities if method.needs == "logits" else probabilities
                model = method.factory().fit(data[train], labels[train], sample_weight=w_train)
                p = model.predict_proba(data[test])
            if score == "brier":
                onehot = np.eye(X.shape[1])[labels[test]]
                per_row = ((p - onehot) ** 2).sum(axis=1)
            else:
                per_row = -np.log(np.maximum(p[np.arange(test.sum()), labels[test]], 1e-15))
            row.append(np.average(per_row, weights=w_test))
        rows.append(row)
    return np.array(rows)


@pytest.mark.parametrize("score", ["log", "brier"])
@pytest.mark.parametrize("logits", [True, False])
def test_the_table_is_the_loop_written_out(score, logits):
    X, labels = make_overconfident(900, 4, temperature=2.0, seed=1)
    X = X if logits else softmax(X, axis=1)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, len(labels))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UncalibratedBestWarning)
        result = ct.select_recalibrator(
            X,
            labels,
            FAST,
            logits=logits,
            cv=3,
            score=score,
            sample_weight=weights,
            random_state=3,
        )
    expected = _oracle_scores(X, labels, result.folds, FAST, logits, score, weights)
    # NLL of a method on logits is exact from its logits, the oracle's from clipped
    # probabilities: equal where no calibrated probability of a label falls below 1e-15.
    assert_allclose(result.fold_scores, expected, rtol=1e-10)
    assert result.names == ("uncalibrated", *FAST)
    assert_allclose(result.mean, expected.mean(axis=1), rtol=1e-10)
    assert_allclose(result.spread, expected.std(axis=1, ddof=1), rtol=1e-8)
    best = int(np.argmin(expected.mean(axis=1)))
    assert result.best == result.names[best]
    table = result.table()
    assert [row["name"] for row in table] == list(result.names)
    assert table[best]["mean"] == min(row["mean"] for row in table)


def test_the_best_is_refitted_on_all_rows():
    logits, labels = make_overconfident(1500, 5, temperature=2.5, seed=4)
    result = ct.select_recalibrator(
        logits, labels, ["temperature", "histogram"], logits=True, random_state=0
    )
    assert result.best == "temperature" and result.needs == "logits"
    direct = ct.TemperatureScaling().fit(logits, labels)
    assert result.recalibrator.temperature_ == direct.temperature_
    assert result.mean[1] < result.mean[0] - result.spread[1]


def test_a_calibrated_model_warns_that_nothing_beats_uncalibrated():
    rng = np.random.default_rng(5)
    probabilities = rng.dirichlet(np.ones(3), size=1200)
    labels = (rng.random(1200)[:, None] > np.cumsum(probabilities, axis=1)).sum(axis=1)
    with pytest.warns(UncalibratedBestWarning, match="does not beat the uncalibrated"):
        result = ct.select_recalibrator(probabilities, labels, ["isotonic", "histogram"])
    # Perfectly calibrated probabilities: the nonparametric maps only add variance.
    assert result.best == "uncalibrated" and result.recalibrator is None


@given(
    counts=st.lists(st.integers(0, 40), min_size=1, max_size=5),
    cv=st.integers(2, 6),
    seed=st.integers(0, 2**16),
)
def test_folds_are_stratified(counts, cv, seed):
    labels = np.repeat(np.arange(len(counts)), counts)
    folds = stratified_folds(labels, cv, np.random.default_rng(seed))
    assert folds.shape == labels.shape
    for k, count in enumerate(counts):
        per_fold = np.bincount(folds[labels == k], minlength=cv)
        assert per_fold.sum() == count and per_fold.max() - per_fold.min() <= (count > 0)


def test_folds_depend_on_the_random_state_only():
    labels = np.repeat([0, 1, 2], [30, 20, 10])
    first = stratified_folds(labels, 5, np.random.default_rng(7))
    assert_array_equal(first, stratified_folds(labels, 5, np.random.default_rng(7)))
    assert not np.array_equal(first, stratified_folds(labels, 5, np.random.default_rng(8)))


def test_recalibrator_instances_keep_their_settings_and_are_not_fitted():
    logits, labels = make_overconfident(600, 3, seed=6)
    chosen = ct.MatrixScaling(reg_lambda=10.0)
    result = ct.select_recalibrator(
        logits, labels, [chosen, ct.TemperatureScaling()], logits=True, cv=3, random_state=1
    )
    assert result.names == ("uncalibrated", "matrix", "temperature")
    assert not hasattr(chosen, "n_classes_")
    if result.best == "matrix":
        assert result.recalibrator.reg_lambda == 10.0


def test_the_default_methods_are_the_method_table():
    logits, labels = make_overconfident(400, 3, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result = ct.select_recalibrator(logits, labels, logits=True, cv=2, random_state=0)
    assert result.names == ("uncalibrated", *METHODS)
    assert np.all(np.isfinite(result.fold_scores))


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"methods": ["bbq"]}, ValueError, "`methods`: unknown method 'bbq'"),
        ({"methods": "temperature"}, TypeError, "`methods` must be a sequence"),
        ({"methods": []}, ValueError, "`methods` must name at least one method"),
        ({"methods": ["platt", "platt"]}, ValueError, "each once"),
        ({"methods": [object()]}, TypeError, "`methods` must be a recalibrator"),
        ({"cv": 1}, ValueError, "`cv` must be an integer >= 2"),
        ({"cv": 10_000}, ValueError, "`cv` must be at most the number of rows"),
        ({"score": "ece"}, ValueError, "`score` must be"),
        ({"logits": "yes"}, TypeError, "`logits` must be True or False"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, error, match):
    logits, labels = make_overconfident(100, 3, seed=8)
    with pytest.raises(error, match=match):
        ct.select_recalibrator(logits, labels, **{"logits": True, **kwargs})


def test_inputs_are_not_mutated():
    logits, labels = make_overconfident(300, 3, seed=9)
    weights = np.ones(300)
    copies = logits.copy(), labels.copy(), weights.copy()
    ct.select_recalibrator(
        logits, labels, ["temperature"], logits=True, sample_weight=weights, random_state=0
    )
    for array, copy in zip((logits, labels, weights), copies, strict=True):
        assert_array_equal(array, copy)
