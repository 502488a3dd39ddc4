"""The recalibration methods by name, what each is fitted on, and that input from predictions.

The one home of the method table: the command line's ``--method`` names,
:func:`~calibration_toolbox.recalibration.select_recalibrator`'s default candidates and
``CalibratedClassifier(method=<name>)`` all read :data:`METHODS`, so a method added here
joins all three.

Each method takes what its class documents: temperature, ensemble, vector and matrix
scaling and Platt scaling (``input='logits'``, its default) take logits; Dirichlet, beta,
isotonic calibration, histogram binning, Venn-Abers, spline and scaling-binning
calibration take
probabilities. :func:`method_input` converts predictions to that.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox import _method_table as method_table
from calibration_toolbox import _scipy
from calibration_toolbox._errors import InputTypeError
from calibration_toolbox.recalibration._base import LOG_FLOOR, Recalibrator, log_odds
from calibration_toolbox.recalibration.binary import BetaCalibration, PlattScaling
from calibration_toolbox.recalibration.ensemble import EnsembleTemperatureScaling
from calibration_toolbox.recalibration.linear import (
    DirichletCalibration,
    MatrixScaling,
    VectorScaling,
)
from calibration_toolbox.recalibration.nonparametric import HistogramBinning, IsotonicCalibration
from calibration_toolbox.recalibration.scaling_binning import ScalingBinning
from calibration_toolbox.recalibration.spline import SplineCalibration
from calibration_toolbox.recalibration.temperature import TemperatureScaling
from calibration_toolbox.recalibration.venn_abers import VennAbersCalibration

__all__ = [
    "LOG_FLOOR",
    "METHODS",
    "Method",
    "converted",
    "input_of",
    "method_for",
    "method_input",
]


@dataclass(frozen=True)
class Method:
    """One recalibration method: its name, its class, what it is fitted on, its settings."""

    name: str
    title: str
    factory: Callable[..., Recalibrator]
    needs: str
    """``'logits'`` or ``'probabilities'``: what the class's ``fit`` and ``predict_proba`` take."""
    settings: tuple[tuple[str, object], ...] = ()
    """Constructor keywords that make the method from its class (``(("mode", "top-label"),)``).

    A fitted model is this method when each setting is its fitted value (``mode_``), or,
    for a setting kept only as a parameter, its parameter (see :meth:`describes`).
    """

    def make(self) -> Recalibrator:
        """A new, unfitted recalibrator of this method."""
        return self.factory(**dict(self.settings))

    def describes(self, model: Recalibrator) -> bool:
        """Whether ``model`` is of this method's class with each of its settings."""
        return type(model) is self.factory and all(
            getattr(model, f"{name}_", getattr(model, name, None)) == value
            for name, value in self.settings
        )


#: The classes of the methods of :data:`calibration_toolbox._method_table.ROWS`, by name.
_CLASSES: dict[str, Callable[..., Recalibrator]] = {
    cls.__name__: cls
    for cls in (
        TemperatureScaling,
        EnsembleTemperatureScaling,
        VectorScaling,
        MatrixScaling,
        DirichletCalibration,
        PlattScaling,
        BetaCalibration,
        IsotonicCalibration,
        HistogramBinning,
        VennAbersCalibration,
        SplineCalibration,
        ScalingBinning,
    )
}

#: The methods by name, in the order of the method table's rows.
METHODS: dict[str, Method] = {
    row.name: Method(row.name, row.title, _CLASSES[row.class_name], row.needs, row.settings)
    for row in method_table.ROWS
}


def input_of(model: Recalibrator, argument: str = "method") -> str:
    """``'logits'`` or ``'probabilities'``: what an (unfitted or fitted) recalibrator takes.

    The class's entry of :data:`METHODS` (a subclass takes what its base does), except for
    Platt scaling, whose ``input`` parameter says it.  Any other object is refused with a
    ``TypeError`` naming ``argument``.
    """
    if isinstance(model, PlattScaling):
        return "probabilities" if model.input == "probabilities" else "logits"
    for method in METHODS.values():
        if isinstance(model, method.factory):
            return method.needs
    raise InputTypeError(
        "{argument} must be a recalibrator of the package or one of the names {names}; "
        "got {value}.",
        argument=argument,
        names=", ".join(METHODS),
        value=type(model).__name__,
    )


def method_for(model: Recalibrator) -> Method | None:
    """The method of :data:`METHODS` that ``model`` is (None: none of them).

    Of the methods that describe it, the one with the most settings: a top-label
    ``HistogramBinning`` is ``histogram-top-label``, a one-vs-rest one ``histogram``.
    """
    matches = [method for method in METHODS.values() if method.describes(model)]
    return max(matches, key=lambda method: len(method.settings), default=None)


def method_input(predictions: NDArray, method: Method, logits: bool) -> NDArray:
    """The predictions as ``method`` takes them (:func:`converted` to ``method.needs``)."""
    return converted(predictions, method.needs, logits)


def converted(predictions: NDArray, needs: str, logits: bool) -> NDArray:
    """The predictions as a method that takes ``needs`` (logits or probabilities) takes them.

    ``logits`` says what ``predictions`` hold.  Probabilities become logits as
    ``log(max(p, 1e-300))`` (a single column P(y = 1): the log-odds
    ``log(p) - log(1 - p)``, both floored); logits become probabilities by a softmax (a
    single column: the sigmoid).  A single column stays one column: every recalibrator
    reads a 1-D array as a binary task.  float64 first, as 1e-300 is 0 in float32.
    """
    if logits == (needs == "logits"):
        return predictions
    values = np.asarray(predictions, dtype=np.float64)
    if needs == "probabilities":
        return (
            _scipy.special.expit(values)
            if values.ndim == 1
            else _scipy.special.softmax(values, axis=1)
        )
    if values.ndim == 1:
        return log_odds(values)
    return np.log(np.maximum(values, LOG_FLOOR))
