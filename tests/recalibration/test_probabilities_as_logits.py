"""Recalibrators fitted on logits warn when given probabilities (as the metrics do)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.special import logit, softmax

from calibration_toolbox import (
    ECE,
    BetaCalibration,
    DirichletCalibration,
    EnsembleTemperatureScaling,
    IsotonicCalibration,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
)

LOGIT_METHODS = [TemperatureScaling, VectorScaling, MatrixScaling, EnsembleTemperatureScaling]
ROWS = r"`X` is taken as logits, but every row is a probability vector: .*`np\.log\(p\)`"
VALUES = r"`X` is taken as logits, but every value lies in \[0, 1\]: .*scipy\.special\.logit"


def _problem(seed=0, n=600, k=3):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = 2.5 * (np.eye(k)[labels] + rng.normal(size=(n, k)))
    return logits, labels


@pytest.mark.parametrize("method", LOGIT_METHODS)
def test_probability_rows_passed_as_logits_warn(method):
    logits, labels = _problem()
    prob = softmax(logits, axis=1)
    with pytest.warns(UserWarning, match=ROWS) as record:
        method().fit(prob, labels)
    # The metrics' mechanism: one warning, attributed to the caller's line.
    messages = [w for w in record if "taken as logits" in str(w.message)]
    assert len(messages) == 1 and messages[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        method().fit(np.log(prob), labels)  # what the warning says to pass: silent
        method().fit(logits, labels)


@pytest.mark.parametrize("method", LOGIT_METHODS)
def test_one_probability_per_row_passed_as_log_odds_warns(method):
    logits, labels = _problem(k=2)
    p = softmax(logits, axis=1)[:, 1]
    with pytest.warns(UserWarning, match=VALUES):
        method().fit(p, labels)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        method().fit(logit(p), labels)
        method().fit(np.log(np.stack([1 - p, p], axis=1)), labels)


def test_the_advice_gives_the_better_fit():
    # An LLM-like binary set: P(y = 1) overconfident by a temperature of 2.
    rng = np.random.default_rng(7)
    margin = rng.normal(1.0, 1.5, 4000)
    labels = (rng.random(4000) < 1 / (1 + np.exp(-margin))).astype(int)
    p = 1 / (1 + np.exp(-2 * margin))
    with pytest.warns(UserWarning, match=VALUES):
        wrong = TemperatureScaling().fit(p, labels).predict_proba(p)
    right = TemperatureScaling().fit(logit(p), labels).predict_proba(logit(p))
    assert ECE(right, labels) < 0.5 * ECE(wrong, labels)


@pytest.mark.parametrize("method", [DirichletCalibration, IsotonicCalibration, BetaCalibration])
def test_methods_that_take_probabilities_do_not_warn(method):
    logits, labels = _problem()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        method().fit(softmax(logits, axis=1), labels)


def test_values_outside_the_simplex_do_not_warn():
    logits, labels = _problem()
    nearly = softmax(logits, axis=1)
    nearly[0] *= 1.01  # one row that does not sum to 1: logits, however small
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TemperatureScaling().fit(nearly, labels)
        binary, positive = _problem(k=2)
        p = softmax(binary, axis=1)[:, 1]
        p[0] = 1.5  # one value outside [0, 1]: log-odds, however small the others
        TemperatureScaling().fit(p, positive)
