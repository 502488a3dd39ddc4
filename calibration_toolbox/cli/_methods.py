"""The recalibration methods of the command line by name (``--method``), and their input.

Each method takes what its class documents: temperature, ensemble, vector and matrix
scaling and Platt scaling (``input='logits'``, its default) take logits; Dirichlet, beta,
isotonic calibration, histogram binning, Venn-Abers and spline calibration take
probabilities. :func:`method_input` converts the file's predictions to that, and
:func:`conversion_lines` says so in words.  The table itself and the conversion live a
layer below, in :mod:`calibration_toolbox.recalibration._methods` (the recalibration
package chooses among the same methods); they are re-exported here for the command line's
modules.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from dataclasses import replace

from numpy.typing import NDArray

from calibration_toolbox._warnings import ProbabilitiesAsLogitsWarning, UncalibratedBestWarning
from calibration_toolbox.recalibration import Recalibrator, select_recalibrator
from calibration_toolbox.recalibration._methods import METHODS, Method, method_for, method_input

__all__ = [
    "AUTO",
    "AUTO_FOLDS",
    "METHODS",
    "Method",
    "conversion_lines",
    "fitted",
    "method_input",
    "method_of",
    "parameters",
    "parse_methods",
    "progress",
    "selected",
]

#: The folds of ``--method auto``'s cross-validation on the fit rows.
AUTO_FOLDS = 5


def _resolved_later() -> Recalibrator:
    raise RuntimeError("--method auto is resolved to a method before any fit")


#: ``--method auto``: a stand-in, replaced by the method :func:`selected` chooses once the
#: fit rows are read.
AUTO = Method(
    "auto", "the method chosen by cross-validation on the fit rows", _resolved_later, "logits"
)


def parse_methods(text: str | None) -> tuple[Method, ...]:
    """The methods of ``--method a,b`` in order, each once (None: no recalibration)."""
    if text is None:
        return ()
    methods = {}
    names = [name.strip().lower() for name in text.split(",")]
    if AUTO.name in names:
        if len(names) > 1:
            raise ValueError(
                "--method auto chooses one method by cross-validation on the fit rows; "
                "give it alone."
            )
        return (AUTO,)
    for name in names:
        if name not in METHODS:
            raise ValueError(
                f"--method: unknown method {name!r}; valid names: {', '.join(METHODS)}, auto."
            )
        methods.setdefault(name, METHODS[name])
    return tuple(methods.values())


def method_of(model: Recalibrator) -> Method:
    """The method of a loaded recalibrator, with the input its fitted state says it takes.

    The method is the one of :data:`METHODS` whose class and settings the model has, as
    fitted (:func:`~calibration_toolbox.recalibration._methods.method_for`: a top-label
    ``HistogramBinning`` is ``histogram-top-label``).  Platt scaling stores what it was
    fitted on in ``input_`` (``'logits'`` or ``'probabilities'``); every other class takes
    one kind only.
    """
    method = method_for(model)
    if method is None:
        raise ValueError(f"the model is a {type(model).__name__}, not a built-in recalibrator.")
    return replace(method, needs=getattr(model, "input_", method.needs))


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


def fitted(method: Method, predictions: NDArray, labels: NDArray, logits: bool):
    """``method`` fitted on the predictions (converted as it needs them) and labels.

    With ``logits`` (``--logits``), the file's own check has said already if its rows look
    like probabilities: the fit's warning of the same is left out.
    """
    progress(f"fitting {method.title} on {len(labels):,} rows")
    try:
        with warnings.catch_warnings():
            if logits:
                warnings.simplefilter("ignore", ProbabilitiesAsLogitsWarning)
            return method.make().fit(method_input(predictions, method, logits), labels)
    finally:
        progress("")


def selected(
    predictions: NDArray, labels: NDArray, logits: bool, seed: int
) -> tuple[tuple[Method, ...], dict]:
    """``--method auto``: the method of least cross-validated NLL on the fit rows.

    :func:`~calibration_toolbox.recalibration.select_recalibrator` over every method of
    :data:`METHODS` on :data:`AUTO_FOLDS` folds shuffled by ``seed``; returns the chosen
    method (none when the uncalibrated predictions score best) and the document's
    ``selection`` entry (the table).  The folds' fits warn as the refit on all the fit
    rows does, so their warnings are left out; that the best does not beat the
    uncalibrated predictions beyond its spread is warned of.
    """
    progress(f"choosing a method by {AUTO_FOLDS}-fold cross-validation on {len(labels):,} rows")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("always", UncalibratedBestWarning)
            result = select_recalibrator(
                predictions, labels, logits=logits, cv=AUTO_FOLDS, random_state=seed
            )
    finally:
        progress("")
    selection = {
        "score": "NLL",
        "folds": AUTO_FOLDS,
        "seed": seed,
        "best": result.best,
        "table": result.table(),
    }
    return (() if result.recalibrator is None else (METHODS[result.best],)), selection


def parameters(model: Recalibrator) -> dict[str, object]:
    """The small fitted numbers of ``model``: its floats, and arrays of at most 3 entries."""
    small = {}
    for name, value in model.to_dict()["fitted"].items():
        if isinstance(value, float):
            small[name.rstrip("_")] = value
        elif isinstance(value, dict) and len(value["data"]) <= 3 and value["dtype"][1] == "f":
            small[name.rstrip("_")] = value["data"]
    return small
