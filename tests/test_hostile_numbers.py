"""Hostile numbers at every entry point: masked arrays, weights at float64's extremes.

The entry points are taken from the metric registry and the recalibrators' ``__all__``, so
a new metric or recalibrator is checked without editing this file.
"""

from __future__ import annotations

import numpy as np
import pytest

import calibration_toolbox as ct
from calibration_toolbox import CalibrationAccumulator, Scores, recalibration, stats
from calibration_toolbox import _registry as registry

RNG = np.random.default_rng(19)
N = 120
LOGITS = RNG.normal(size=(N, 3)) * 2
PROB = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)
LABELS = (RNG.random((N, 1)) > PROB.cumsum(axis=1)).sum(axis=1)  # drawn from PROB

#: the options a metric needs beyond (prob, labels), and beyond them to take weights
_REQUIRED = {"ToprCE": {"r": 1}}
# SKCE takes weights with the biased estimator and a given bandwidth only
_WEIGHTED = {"SKCE": {"estimator": "biased", "bandwidth": 0.5}}
METRICS = [
    pytest.param(getattr(ct, row.name), _REQUIRED.get(row.name, {}), id=row.name)
    for row in registry.public()
]
WEIGHTED_METRICS = [
    pytest.param(
        getattr(ct, row.name),
        {**_REQUIRED.get(row.name, {}), **_WEIGHTED.get(row.name, {})},
        id=row.name,
    )
    for row in registry.public()
]
#: recalibrators fitted on probabilities; the others take logits
_ON_PROBABILITIES = {
    "BetaCalibration",
    "DirichletCalibration",
    "HistogramBinning",
    "IsotonicCalibration",
}
RECALIBRATORS = [
    pytest.param(getattr(recalibration, name), name in _ON_PROBABILITIES, id=name)
    for name in recalibration.__all__
    if isinstance(getattr(recalibration, name), type) and name != "Recalibrator"
]
MASKED = "is a masked array \\(numpy.ma\\), whose mask would be ignored"


def masked(values: np.ndarray) -> np.ma.MaskedArray:
    """``values`` with its first row masked."""
    array = np.ma.masked_array(values, mask=np.zeros(np.shape(values), dtype=bool))
    array.mask[0] = True
    return array


@pytest.mark.parametrize(("metric", "options"), METRICS)
def test_every_metric_refuses_masked_predictions(metric, options):
    with pytest.raises(TypeError, match=f"`prob` {MASKED}"):
        metric(masked(PROB), LABELS, **options)


@pytest.mark.parametrize(("metric", "options"), METRICS)
def test_every_metric_refuses_masked_labels(metric, options):
    with pytest.raises(TypeError, match=f"`labels` {MASKED}"):
        metric(PROB, masked(LABELS), **options)


@pytest.mark.parametrize(("metric", "options"), WEIGHTED_METRICS)
def test_every_metric_refuses_masked_weights(metric, options):
    with pytest.raises(TypeError, match=f"`sample_weight` {MASKED}"):
        metric(PROB, LABELS, sample_weight=masked(np.ones(N)), **options)


def test_scores_accumulator_and_stats_refuse_masked_arrays():
    with pytest.raises(TypeError, match=f"`Scores` {MASKED}"):
        ct.ECE(Scores(masked(PROB[:, 0])), LABELS == 0)
    with pytest.raises(TypeError, match=f"`prob` {MASKED}"):
        CalibrationAccumulator().update(masked(PROB), LABELS)
    with pytest.raises(TypeError, match=f"`prob` {MASKED}"):
        stats.bootstrap(ct.ECE, masked(PROB), LABELS, n_resamples=10, random_state=0)


@pytest.mark.parametrize(("recalibrator", "on_probabilities"), RECALIBRATORS)
def test_every_recalibrator_refuses_masked_arrays(recalibrator, on_probabilities):
    X = PROB if on_probabilities else LOGITS
    with pytest.raises(TypeError, match=f"`X` {MASKED}"):
        recalibrator().fit(masked(X), LABELS)
    with pytest.raises(TypeError, match=f"`y` {MASKED}"):
        recalibrator().fit(X, masked(LABELS))
    with pytest.raises(TypeError, match=f"`sample_weight` {MASKED}"):
        recalibrator().fit(X, LABELS, sample_weight=masked(np.ones(N)))
    fitted = recalibrator().fit(X, LABELS)
    with pytest.raises(TypeError, match=f"`X` {MASKED}"):
        fitted.predict_proba(masked(X))
