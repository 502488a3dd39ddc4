"""``refinement_decomposition``: a proper score split by temperature scaling (Berta et al. 2025).

Peer values from probmetrics 1.3.0 (``tests/references/refinement_probmetrics.py``), an
oracle written from the definition with ``TemperatureScaling`` and SciPy, and the
identities the split must keep.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import log_softmax, softmax

from calibration_toolbox import (
    Scores,
    TemperatureScaling,
    brier_score,
    negative_log_likelihood,
    refinement_decomposition,
)
from tests.conftest import load_real
from tests.references.refinement_probmetrics import REAL, synthetic_sets

# tests/references/refinement_probmetrics.py: probmetrics' calib-err / refinement with its
# temperature scaling (no mixture) fitted and scored on all rows.
PROBMETRICS = {
    "three_classes": {
        "calib-err_logloss": 0.3699306227483935,
        "calib-err_brier": 0.08548243383778209,
        "refinement_logloss": 0.8175746062872996,
        "refinement_brier": 0.4830724745666406,
    },
    "binary": {
        "calib-err_logloss": 0.02830984646392798,
        "calib-err_brier": 0.018058972092125536,
        "refinement_logloss": 0.5147463162708215,
        "refinement_brier": 0.34400907414571674,
    },
    "lenet-5-cifar-10": {
        "calib-err_logloss": 0.05837029063844468,
        "calib-err_brier": 0.01637687988128067,
        "refinement_logloss": 1.3114974370617623,
        "refinement_brier": 0.5977751893644656,
    },
}

# probmetrics fits log(1/T) by a 30-step bisection (within 1.5e-8): the log score is at its
# minimum in T, so it moves by the square of that (measured 4e-15 relative); the Brier
# score is not minimised by the fit and moves by its first power (measured 1.2e-8 on the
# calibration term, 6e-11 on the refinement).
LOG_RTOL = 1e-12
BRIER_RTOL, BRIER_ATOL = 1e-9, 1e-9
KEYS = {"log": "logloss", "brier": "brier"}


@pytest.mark.parametrize("score", ["log", "brier"])
@pytest.mark.parametrize("name", sorted(PROBMETRICS))
def test_agrees_with_probmetrics(name, score):
    prob, labels = load_real(name) if name in REAL else synthetic_sets()[name]
    parts = refinement_decomposition(prob, labels, score=score)
    peer = PROBMETRICS[name]
    key = KEYS[score]
    if score == "log":
        assert_allclose(parts.refinement, peer[f"refinement_{key}"], rtol=LOG_RTOL)
        assert_allclose(parts.calibration, peer[f"calib-err_{key}"], rtol=LOG_RTOL)
    else:
        assert_allclose(parts.refinement, peer[f"refinement_{key}"], rtol=BRIER_RTOL)
        assert_allclose(
            parts.calibration, peer[f"calib-err_{key}"], rtol=BRIER_RTOL, atol=BRIER_ATOL
        )


def _oracle(prob, labels, score, weights=None):
    """The definition, step by step: T from the fit, both scores by hand."""
    z = np.log(np.maximum(prob, 1e-15))
    scaler = TemperatureScaling().fit(z, labels, sample_weight=weights)
    weights = np.ones(len(labels)) if weights is None else weights

    def value(logits):
        if score == "log":
            per_row = -log_softmax(logits, axis=1)[np.arange(len(labels)), labels]
        else:
            per_row = ((softmax(logits, axis=1) - np.eye(z.shape[1])[labels]) ** 2).sum(axis=1)
        return float(per_row @ weights / weights.sum())

    before, after = value(z), value(z / scaler.temperature_)
    return before, before - after, after


def _problem(n=1500, k=4, temperature=2.0, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    features = 2.0 * np.eye(k)[labels] + rng.normal(size=(n, k))
    # the posterior of these features is softmax(2 x): calibrated at temperature 1
    return softmax(2.0 * temperature * features, axis=1), labels


@pytest.mark.parametrize("score", ["log", "brier"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_the_definition(score, seed):
    prob, labels = _problem(seed=seed)
    weights = np.random.default_rng(seed).uniform(0.2, 3.0, len(labels))
    for given in (None, weights):
        parts = refinement_decomposition(prob, labels, score=score, sample_weight=given)
        expected = _oracle(prob, labels, score, given)
        assert_allclose((parts.score, parts.calibration, parts.refinement), expected, rtol=1e-10)


@pytest.mark.parametrize("cv", [None, 3])
@pytest.mark.parametrize("score", ["log", "brier"])
def test_the_parts_add_up_and_the_score_is_the_packages(score, cv):
    prob, labels = _problem(seed=3)
    parts = refinement_decomposition(prob, labels, score=score, cv=cv)
    function = negative_log_likelihood if score == "log" else brier_score
    assert_allclose(parts.score, function(prob, labels), rtol=1e-12)
    assert_allclose(parts.calibration + parts.refinement, parts.score, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_log_calibration_is_not_negative_and_finds_the_temperature(seed):
    overconfident = refinement_decomposition(*_problem(n=4000, temperature=2.0, seed=seed))
    calibrated = refinement_decomposition(*_problem(n=4000, temperature=1.0, seed=seed))
    assert overconfident.calibration > 0.05 > calibrated.calibration >= 0
    assert_allclose(overconfident.temperatures[0], 2.0, rtol=0.1)
    assert_allclose(calibrated.temperatures[0], 1.0, rtol=0.1)


def test_cross_validated_fit_is_fit_on_the_other_folds():
    prob, labels = _problem(n=1000, seed=5)
    parts = refinement_decomposition(prob, labels, cv=4, random_state=7)
    z = np.log(np.maximum(prob, 1e-15))
    folds = np.array_split(np.random.default_rng(7).permutation(1000), 4)
    calibrated = np.empty_like(z)
    temperatures = []
    for held_out in folds:
        others = np.setdiff1d(np.arange(1000), held_out)
        scaler = TemperatureScaling().fit(z[others], labels[others])
        calibrated[held_out] = z[held_out] / scaler.temperature_
        temperatures.append(scaler.temperature_)
    assert_allclose(parts.temperatures, temperatures, rtol=1e-12)
    expected = negative_log_likelihood(calibrated, labels, logits=True)
    assert_allclose(parts.refinement, expected, rtol=1e-12)
    again = refinement_decomposition(prob, labels, cv=4, random_state=7)
    assert again == parts  # seeded folds
    assert refinement_decomposition(prob, labels, cv=4, random_state=8) != parts


def test_integer_weights_equal_duplicated_rows_and_scaling_changes_nothing():
    prob, labels = _problem(n=400, seed=6)
    counts = np.random.default_rng(6).integers(0, 4, 400)
    weighted = refinement_decomposition(prob, labels, sample_weight=counts)
    repeated = refinement_decomposition(np.repeat(prob, counts, axis=0), np.repeat(labels, counts))
    assert_allclose(
        (weighted.calibration, weighted.refinement),
        (repeated.calibration, repeated.refinement),
        rtol=1e-10,
    )
    doubled = refinement_decomposition(prob, labels, sample_weight=2.0 * counts)
    assert_allclose(doubled.refinement, weighted.refinement, rtol=1e-14)


def test_logits_scores_and_probabilities_agree():
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 2, 800)
    log_odds = 3.0 * (2 * labels - 1 + rng.normal(size=800))
    p = 1 / (1 + np.exp(-log_odds))
    from_logits = refinement_decomposition(
        np.column_stack([np.zeros(800), log_odds]), labels, logits=True
    )
    from_scores = refinement_decomposition(Scores(log_odds), labels, logits=True)
    from_pairs = refinement_decomposition(Scores(p), labels)
    from_columns = refinement_decomposition(np.column_stack([1 - p, p]), labels)
    assert_allclose(from_scores.refinement, from_logits.refinement, rtol=1e-12)
    assert_allclose(from_pairs.refinement, from_columns.refinement, rtol=1e-12)
    assert_allclose(from_pairs.refinement, from_logits.refinement, rtol=1e-9)


def test_zero_probabilities_count_as_eps():
    prob = np.array([[1.0, 0.0], [0.0, 1.0], [0.7, 0.3], [0.2, 0.8]])
    labels = np.array([1, 1, 0, 1])
    parts = refinement_decomposition(prob, labels)
    assert np.isfinite(parts.score) and np.isfinite(parts.refinement)
    assert_allclose(parts.score, negative_log_likelihood(prob, labels), rtol=1e-12)


@pytest.mark.parametrize("cv", [None, 2])
@pytest.mark.parametrize("score", ["log", "brier"])
def test_every_number_is_a_python_float(score, cv):
    parts = refinement_decomposition(*_problem(n=300), score=score, cv=cv)
    numbers = (parts.score, parts.calibration, parts.refinement, *parts.temperatures)
    assert all(type(number) is float for number in numbers)


def test_the_input_is_not_modified():
    prob, labels = _problem(n=300)
    before = prob.copy(), labels.copy()
    refinement_decomposition(prob, labels, cv=3)
    np.testing.assert_array_equal(prob, before[0])
    np.testing.assert_array_equal(labels, before[1])


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"score": "Log"}, ValueError, "`score` must be 'log' or 'brier'; got 'Log'"),
        ({"method": "platt"}, ValueError, "`method` must be 'temperature'; got 'platt'"),
        ({"cv": 1}, ValueError, "`cv` must be an integer >= 2"),
        ({"cv": 2.5}, TypeError, "`cv` must be an integer"),
        ({"cv": 301}, ValueError, r"`cv` must be at most the number of rows \(300\)"),
        ({"cv": 3, "random_state": "x"}, TypeError, "`random_state` must be None"),
        ({"eps": 0.0}, ValueError, "`eps` must be"),
    ],
)
def test_bad_input(kwargs, error, match):
    prob, labels = _problem(n=300)
    with pytest.raises(error, match=match):
        refinement_decomposition(prob, labels, **kwargs)
