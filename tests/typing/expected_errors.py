"""Calls a type checker must refuse (``# E: code``) and types it must infer (``# N: type``).

``tests/test_typing.py`` runs ``mypy --strict`` on this file beside ``user_code.py`` and
compares its messages with the comments, line by line: each ``# E:`` line gets that error,
each ``# N:`` line reveals that type (module paths left out; ``*`` ends a prefix), and no
other line gets anything.  So the check can fail, and a signature erased to ``Any`` shows.
Nothing runs at import.
"""

# ruff: noqa: F821 (reveal_type is known to type checkers only)
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from calibration_toolbox import (
    ECE,
    GCE,
    SCE,
    CalibrationAccumulator,
    MatrixScaling,
    PlattScaling,
    Scores,
    TemperatureScaling,
    ToprCE,
    calibration_table,
    load_recalibrator,
    stats,
)

prob = np.array([[0.9, 0.1], [0.4, 0.6]])
labels = np.array([0, 1])


def refused() -> None:
    SCE(Scores(prob[:, 1]), labels)  # E: arg-type
    ECE(prob, labels, bins=None)  # E: arg-type
    ECE(prob, labels, logits="yes")  # E: arg-type
    ToprCE(prob, labels)  # E: call-arg
    name: str = ECE(prob, labels)  # E: assignment
    TemperatureScaling().fit(prob)  # E: call-arg
    print(MatrixScaling().fit(prob, labels).temperature_)  # E: attr-defined
    stats.bootstrap(ECE, prob, labels, n_resamples="many")  # E: arg-type
    assert name


if TYPE_CHECKING:
    reveal_type(ECE(prob, labels))  # N: float
    reveal_type(ECE(Scores(prob[:, 1]), labels, bins=5, logits=False))  # N: float
    reveal_type(GCE(prob, labels, norm=2, debias=True))  # N: float
    reveal_type(calibration_table(prob, labels))  # N: CalibrationTable
    reveal_type(MatrixScaling().fit(prob, labels))  # N: MatrixScaling
    reveal_type(PlattScaling().fit(prob, labels))  # N: PlattScaling
    reveal_type(TemperatureScaling().set_params())  # N: TemperatureScaling
    reveal_type(TemperatureScaling.load("scaler.json"))  # N: TemperatureScaling
    reveal_type(load_recalibrator("scaler.json"))  # N: Recalibrator
    reveal_type(TemperatureScaling().predict_proba(prob))  # N: ndarray[*
    reveal_type(CalibrationAccumulator().update(prob, labels).metric("ECE"))  # N: float
    reveal_type(stats.bootstrap(ECE, prob, labels).estimate)  # N: float
