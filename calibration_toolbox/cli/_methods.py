"""The recalibration methods of the command line by name (``--method``), and their input.

Each method takes what its class documents: temperature, ensemble, vector and matrix
scaling and Platt scaling (``input='logits'``, its default) take logits; Dirichlet, beta,
isotonic calibration, histogram binning and spline calibration take probabilities.
:func:`method_input` converts the file's predictions to that, and :func:`conversion_lines`
says so in words.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from calibration_toolbox import _scipy, recalibration
from calibration_toolbox._warnings import ProbabilitiesAsLogitsWarning
from calibration_toolbox.recalibration import Recalibrator

__all__ = [
    "METHODS",
    "Method",
    "conversion_lines",
    "fitted",
    "method_input",
    "method_of",
    "parameters",
    "parse_methods",
    "progress",
]

# A probability of exactly 0 becomes log(1e-300) = -690.8: finite logits whose softmax differs
# from the probabilities by at most 1e-300 per entry.
_LOG_FLOOR = 1e-300


@dataclass(frozen=True)
class Method:
    """One recalibration method: its name, its class and what it is fitted on."""

    name: str
    title: str
    factory: Callable[[], Recalibrator]
    needs: str
    """``'logits'`` or ``'probabilities'``: what the class's ``fit`` and ``predict_proba`` take."""


METHODS: dict[str, Method] = {
    method.name: method
    for method in (
        Method("temperature", "temperature scaling", recalibration.TemperatureScaling, "logits"),
        Method(
            "ensemble",
            "ensemble temperature scaling",
            recalibration.EnsembleTemperatureScaling,
            "logits",
        ),
        Method("vector", "vector scaling", recalibration.VectorScaling, "logits"),
        Method("matrix", "matrix scaling", recalibration.MatrixScaling, "logits"),
        Method(
            "dirichlet",
            "Dirichlet calibration",
            recalibration.DirichletCalibration,
            "probabilities",
        ),
        Method("platt", "Platt scaling", recalibration.PlattScaling, "logits"),
        Method("beta", "beta calibration", recalibration.BetaCalibration, "probabilities"),
        Method(
            "isotonic", "isotonic calibration", recalibration.IsotonicCalibration, "probabilities"
        ),
        Method("histogram", "histogram binning", recalibration.HistogramBinning, "probabilities"),
        Method(
            "venn-abers",
            "Venn-Abers calibration",
            recalibration.VennAbersCalibration,
            "probabilities",
        ),
        Method("spline", "spline calibration", recalibration.SplineCalibration, "probabilities"),
    )
}


def parse_methods(text: str | None) -> tuple[Method, ...]:
    """The methods of ``--method a,b`` in order, each once (None: no recalibration)."""
    if text is None:
        return ()
    methods = {}
    for name in (name.strip().lower() for name in text.split(",")):
        if name not in METHODS:
            raise ValueError(
                f"--method: unknown method {name!r}; valid names: {', '.join(METHODS)}."
            )
        methods.setdefault(name, METHODS[name])
    return tuple(methods.values())


def method_of(model: Recalibrator) -> Method:
    """The method of a loaded recalibrator, with the input its fitted state says it takes.

    Platt scaling stores what it was fitted on in ``input_`` (``'logits'`` or
    ``'probabilities'``); every other class takes one kind only.
    """
    method = next((method for method in METHODS.values() if type(model) is method.factory), None)
    if method is None:
        raise ValueError(f"the model is a {type(model).__name__}, not a built-in recalibrator.")
    needs = getattr(model, "input_", method.needs)
    return Method(method.name, method.title, method.factory, needs)


def _conversion(needs: str, logits: bool, one_column: bool) -> str | None:
    """What the predictions go through on their way to a method, in words (None: nothing)."""
    if logits == (needs == "logits"):
        return None
    if needs == "logits":
        if one_column:
            return "the log-odds log(p / (1 - p)) of P(y = 1) (0 and 1 floored at 1e-300)"
        return "the log-probabilities log(p) (zeros floored at 1e-300)"
    if one_column:
        return "the probabilities sigmoid(z) of the log-odds (--logits)"
    return "the probabilities softmax(z) of the logits (--logits)"


def method_input(predictions: np.ndarray, method: Method, logits: bool) -> np.ndarray:
    """The predictions as ``method`` takes them (see :func:`conversion_lines`).

    A single column (P(y = 1), the log-odds, or ``--scores``) stays one column: every
    recalibrator reads a 1-D array as a binary task.  float64 first, as 1e-300 is 0 in
    float32.
    """
    if logits == (method.needs == "logits"):
        return predictions
    values = np.asarray(predictions, dtype=np.float64)
    if method.needs == "probabilities":
        return (
            _scipy.special.expit(values)
            if values.ndim == 1
            else _scipy.special.softmax(values, axis=1)
        )
    if values.ndim == 1:
        return np.log(np.maximum(values, _LOG_FLOOR)) - np.log(np.maximum(1 - values, _LOG_FLOOR))
    return np.log(np.maximum(values, _LOG_FLOOR))


def conversion_lines(
    methods: Sequence[Method], logits: bool, one_column: bool, done: str = "fitted on"
) -> list[str]:
    """One line per conversion of the input: ``"vector, matrix: fitted on ..."``.

    ``done`` says what was done with the converted predictions (``"applied to"`` for a
    model read from a file).
    """
    methods_by_note: dict[str, list[str]] = {}
    for method in methods:
        note = _conversion(method.needs, logits, one_column)
        if note is not None:
            methods_by_note.setdefault(note, []).append(method.name)
    return [f"{', '.join(names)}: {done} {note}" for note, names in methods_by_note.items()]


def progress(text: str) -> None:
    """Say what a long step is doing on stderr, only when stderr is a terminal.

    The line is overwritten by the next one (a carriage return) and cleared by ``progress("")``;
    nothing reaches a file, a pipe or a test's captured stderr.
    """
    if sys.stderr.isatty():
        sys.stderr.write(f"\r\033[K{'calibration-toolbox: ' + text + ' ...' if text else ''}")
        sys.stderr.flush()


def fitted(method: Method, predictions: np.ndarray, labels: np.ndarray, logits: bool):
    """``method`` fitted on the predictions (converted as it needs them) and labels.

    With ``logits`` (``--logits``), the file's own check has said already if its rows look
    like probabilities: the fit's warning of the same is left out.
    """
    progress(f"fitting {method.title} on {len(labels):,} rows")
    try:
        with warnings.catch_warnings():
            if logits:
                warnings.simplefilter("ignore", ProbabilitiesAsLogitsWarning)
            return method.factory().fit(method_input(predictions, method, logits), labels)
    finally:
        progress("")


def parameters(model: Recalibrator) -> dict[str, object]:
    """The small fitted numbers of ``model``: its floats, and arrays of at most 3 entries."""
    small = {}
    for name, value in model.to_dict()["fitted"].items():
        if isinstance(value, float):
            small[name.rstrip("_")] = value
        elif isinstance(value, dict) and len(value["data"]) <= 3 and value["dtype"][1] == "f":
            small[name.rstrip("_")] = value["data"]
    return small
