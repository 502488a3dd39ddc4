"""A 2-D 0/1 ``y`` given to a recalibrator without ``multilabel=True``: the refusal says it.

The advice is the validator's (``check_labels(multilabel_hint=)``, one home): a recalibrator
with a multi-label form names its own ``multilabel=True``; one without names the two that
have it; the multiclass measures still name the multi-label measures.
"""

from __future__ import annotations

import numpy as np
import pytest

from calibration_toolbox import ECE, PlattScaling, TemperatureScaling, VectorScaling

RNG = np.random.default_rng(3)
X = RNG.normal(size=(30, 3))
MATRIX = np.array([[1, 1, 0], [0, 0, 0], [1, 0, 1]] * 10)
ONE_HOT = np.eye(3, dtype=int)[np.arange(30) % 3]


@pytest.mark.parametrize("y", [MATRIX, ONE_HOT], ids=["multi-label", "one-hot"])
@pytest.mark.parametrize("cls", [TemperatureScaling, PlattScaling])
def test_a_recalibrator_with_a_multilabel_form_names_it(cls, y):
    with pytest.raises(ValueError, match=r"got shape \(30, 3\)") as caught:
        cls().fit(X, y)
    message = str(caught.value)
    assert f"{cls.__name__}(multilabel=True)" in message
    assert "multilabel_calibration_error" not in message
    if y is ONE_HOT:
        assert "y.argmax(axis=1)" in message


def test_one_without_names_those_with_it():
    with pytest.raises(ValueError) as caught:
        VectorScaling().fit(X, MATRIX)
    message = str(caught.value)
    assert "TemperatureScaling(multilabel=True) or PlattScaling(multilabel=True)" in message
    assert "VectorScaling has no multi-label form" in message


def test_the_measures_still_name_the_multilabel_measures():
    with pytest.raises(ValueError, match=r"use multilabel_calibration_error"):
        ECE(np.full((30, 3), 1 / 3), MATRIX)
