"""The nonparametric fits on a binary task's 1-D column: same fitted state, less memory.

Before, the validation expanded a 1-D (or one-column) ``X`` into the float64 ``(N, 2)``
array ``[1 - p, p]`` and every fit read its second column; now the fits read the column
itself.  Fitting on that ``(N, 2)`` array, passed as such, still takes the old path, so the
fitted state on ``p`` must equal, bit for bit, the state on ``[1 - p, p]``.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from calibration_toolbox import (
    HistogramBinning,
    IsotonicCalibration,
    SplineCalibration,
    VennAbersCalibration,
)
from calibration_toolbox import _validation as iv
from calibration_toolbox.recalibration import nonparametric

MAKERS = {
    "isotonic": IsotonicCalibration,
    "isotonic-centred": lambda: IsotonicCalibration(centred=True),
    "isotonic-top-label": lambda: IsotonicCalibration(mode="top-label"),
    "isotonic-pooled": lambda: IsotonicCalibration(mode="pooled"),
    "spline": SplineCalibration,
    "histogram": HistogramBinning,
    "histogram-equal-mass": lambda: HistogramBinning(adaptive_bins=True),
    "histogram-top-label": lambda: HistogramBinning(mode="top-label"),
    "venn-abers": VennAbersCalibration,
    "venn-abers-cv": lambda: VennAbersCalibration(cv=3),
}


def _state(estimator) -> dict:
    return {
        name: value
        for name, value in vars(estimator).items()
        if name.endswith("_") and not name.startswith("_")
    }


def _assert_same_bits(first: dict, second: dict) -> None:
    assert first.keys() == second.keys()
    for name, value in first.items():
        other = second[name]
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and value.shape == other.shape, name
            assert value.tobytes() == other.tobytes(), name
        else:
            assert value == other, name


def _binary_problem(dtype, seed=3, n=2000):
    rng = np.random.default_rng(seed)
    scores = rng.random(n).astype(dtype)
    scores[: n // 5] = np.round(scores[: n // 5], 2)  # ties
    scores[:3] = [-0.0, 0.0, 1.0]
    labels = (rng.random(n) < scores).astype(np.int64)
    weights = rng.integers(0, 4, n).astype(np.float64)  # with rows of weight 0
    return scores, labels, weights


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", MAKERS)
def test_fit_on_the_column_equals_the_fit_on_both_columns(name, dtype, weighted):
    scores, labels, weights = _binary_problem(dtype)
    weights = weights if weighted else None
    both = MAKERS[name]().fit(np.stack([1 - scores, scores], axis=1), labels, weights)
    for given in (scores, scores[:, None]):
        fitted = MAKERS[name]().fit(given, labels, weights)
        _assert_same_bits(_state(both), _state(fitted))
        assert_array_equal(fitted.predict_proba(scores), both.predict_proba(scores))


def test_the_caller_s_column_is_read_and_not_modified():
    scores, labels, _ = _binary_problem(np.float64)
    given = scores.copy()
    prob, _, _ = nonparametric._weighted_rows(
        IsotonicCalibration(), given, labels, None, expand_binary=False
    )
    assert prob is given
    for make in MAKERS.values():
        make().fit(given, labels)
    assert given.tobytes() == scores.tobytes()


def test_the_column_is_still_range_checked():
    with pytest.raises(ValueError, match="X"):
        iv.check_prob(np.array([0.2, 1.5]), name="X", expand_binary=False)
    with pytest.raises(ValueError, match="NaN"):
        IsotonicCalibration().fit(np.array([0.2, np.nan]), [0, 1])


def _peak(call) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_validation_copies_nothing_of_a_float_column():
    # It built the (N, 2) float64 array [1 - p, p]: 24 bytes a row at its peak.
    scores, labels, _ = _binary_problem(np.float64, n=200_000)
    peak = _peak(
        lambda: nonparametric._weighted_rows(
            IsotonicCalibration(), scores, labels, None, expand_binary=False
        )
    )
    assert peak < len(scores)  # below 1 byte a row


# Peak of fit (tracemalloc) on 200,000 float64 scores and int64 labels (3.2 MB), as a
# multiple of those input bytes: (main before this change, now).
FIT_PEAKS = {
    "isotonic": (4.5, 3.6),
    "spline": (2.7, 2.3),
    "histogram": (5.3, 4.4),
    "histogram-equal-mass": (2.7, 1.8),
    "venn-abers": (9.0, 8.1),
}


@pytest.mark.parametrize("name", FIT_PEAKS)
def test_binary_fit_peak_memory(name):
    rng = np.random.default_rng(0)
    scores = rng.random(200_000)
    labels = (rng.random(len(scores)) < scores**2).astype(np.int64)
    MAKERS[name]().fit(scores[:100], labels[:100])  # scipy's modules are loaded lazily
    peak = _peak(lambda: MAKERS[name]().fit(scores, labels))
    assert peak < FIT_PEAKS[name][1] * (scores.nbytes + labels.nbytes)
