"""The estimator contract, checked the same way for every recalibrator."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import softmax

import calibration_toolbox as ct
from calibration_toolbox.datasets import make_overconfident

# (class, whether it is fitted on logits rather than probabilities)
RECALIBRATORS = [
    (ct.TemperatureScaling, True),
    (ct.EnsembleTemperatureScaling, True),
    (ct.VectorScaling, True),
    (ct.MatrixScaling, True),
    (ct.PlattScaling, True),
    (ct.DirichletCalibration, False),
    (ct.BetaCalibration, False),
    (ct.IsotonicCalibration, False),
    (ct.HistogramBinning, False),
]


def data(on_logits, n=600, k=4):
    logits, labels = make_overconfident(n, k, temperature=2.5, seed=3)
    return (logits if on_logits else softmax(logits, axis=1)), labels


@pytest.mark.parametrize(
    ("cls", "on_logits"), RECALIBRATORS, ids=lambda c: getattr(c, "__name__", "")
)
def test_contract(cls, on_logits, tmp_path):
    X, y = data(on_logits)
    estimator = cls()
    with pytest.raises(ct.NotFittedError, match="not fitted yet"):
        estimator.predict_proba(X)
    clone = pytest.importorskip("sklearn.base").clone(estimator)
    assert clone.get_params() == estimator.get_params()
    copy = X.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a well-posed problem fits without warnings
        assert estimator.fit(X, y) is estimator
    assert_array_equal(X, copy)  # the input is not modified
    probs = estimator.predict_proba(X)
    assert probs.shape == X.shape and np.isfinite(probs).all()
    assert_allclose(probs.sum(axis=1), 1, rtol=1e-12)
    assert_allclose(softmax(estimator(X), axis=1), probs, rtol=1e-12, atol=1e-300)
    assert_array_equal(estimator.predict(X), np.argmax(estimator(X), axis=1))
    # fitted state round-trips through JSON with identical predictions
    path = tmp_path / "state.json"
    estimator.save(path)
    json.loads(path.read_text())
    for loaded in (ct.load_recalibrator(path), cls.from_dict(estimator.to_dict())):
        assert type(loaded) is cls
        assert_array_equal(loaded.predict_proba(X), probs)
    with pytest.raises(ValueError, match="has 5 classes but this"):
        estimator.predict_proba(data(on_logits, n=20, k=5)[0])


@pytest.mark.parametrize(
    ("cls", "on_logits"), RECALIBRATORS, ids=lambda c: getattr(c, "__name__", "")
)
def test_sample_weight_two_equals_duplicated_rows(cls, on_logits):
    X, y = data(on_logits, n=300)
    weights = np.random.default_rng(0).integers(1, 3, len(y))
    rows = np.repeat(np.arange(len(y)), weights)
    weighted = cls().fit(X, y, sample_weight=weights).predict_proba(X)
    duplicated = cls().fit(X[rows], y[rows]).predict_proba(X)
    assert_allclose(weighted, duplicated, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(
    ("cls", "on_logits"), RECALIBRATORS, ids=lambda c: getattr(c, "__name__", "")
)
def test_improves_held_out_calibration_of_an_overconfident_model(cls, on_logits):
    X, y = data(on_logits, n=4000, k=4)
    fit, test = slice(0, 2000), slice(2000, None)
    before = ct.ECE(X[test], y[test], logits=on_logits)
    after = ct.ECE(cls().fit(X[fit], y[fit]).predict_proba(X[test]), y[test])
    assert after < before / 2
