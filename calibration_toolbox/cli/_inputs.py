"""The predictions of a report or a recalibration: read, checked, split into fit and test rows.

Every check of the inputs runs on the whole file, before any row is selected, so that a row
number in a message is the file's.
"""

from __future__ import annotations

import math
import os
import textwrap
from dataclasses import dataclass

import numpy as np

from calibration_toolbox import __version__
from calibration_toolbox._errors import within
from calibration_toolbox._validation import Predictions, check_predictions, check_prob
from calibration_toolbox._warnings import warn
from calibration_toolbox.cli._options import FileOptions, ReportRequest, input_kind
from calibration_toolbox.cli._parser import UsageError
from calibration_toolbox.datasets import load_example
from calibration_toolbox.io import read_predictions as read_file
from calibration_toolbox.scores import Scores

__all__ = [
    "Inputs",
    "Part",
    "check_same_columns",
    "check_split",
    "check_values",
    "checked_view",
    "class_names",
    "file_options",
    "file_title",
    "fit_rows",
    "load_inputs",
    "metric_view",
    "read_predictions",
    "renormalized",
    "same_file_and_keys",
    "same_rows_message",
    "warn_same_rows",
]


@dataclass(frozen=True)
class Part:
    """Predictions as read (1-D: P(y = 1), the log-odds or scores; else (N, K)) and labels."""

    predictions: np.ndarray
    labels: np.ndarray | None
    checked: Predictions | None = None
    """The rows as checked once, the validated handle the metrics take back for
    ``(metric_view(predictions), labels)`` (``metric(checked, None)``, no value checked
    again); None without labels or with ``--scores``."""

    def rows(self, selected: np.ndarray, checked: bool = True) -> Part:
        """The rows ``selected``, with their handle (gathered, unchecked) if ``checked``."""
        handle = None
        if checked and self.checked is not None:
            handle = self.checked.taken(lambda values: values[selected]).checked(top_label=True)
        return Part(self.predictions[selected], self.labels[selected], handle)


@dataclass(frozen=True)
class Inputs:
    """What a report is computed on: the rows to report on and those to fit methods on."""

    title: str
    file: str
    test: Part
    fit: Part | None
    """The rows the methods are fitted on (None: no method asked for)."""
    fit_text: str | None
    logits: bool
    scores: bool = False
    """One score per row against a 0/1 target (``--scores``), reported through ``Scores``."""
    test_rows: np.ndarray | None = None
    """FILE's rows that ``test`` holds, as a boolean mask of every row of FILE (the rows not
    fitted on by ``--split``); None when ``test`` is every row of FILE."""

    @property
    def kind(self) -> str:
        """``'scores'``, ``'logits'`` or ``'probabilities'``: what the file holds."""
        return input_kind(self.logits, self.scores)


def metric_view(predictions: np.ndarray, scores: bool, logits: bool):
    """The predictions as the metrics take them.

    ``Scores`` with ``--scores``; a single column (P(y = 1), or the log-odds with
    ``--logits``) as the two columns ``[1 - p, p]`` (logits ``[0, z]``) of a binary
    classifier, since the top-label measures refuse a 1-D array as ambiguous.
    """
    if scores:
        return Scores(predictions)
    if predictions.ndim == 1:
        first = np.zeros_like(predictions) if logits else 1 - predictions
        return np.column_stack([first, predictions])
    return predictions


def load_inputs(request: ReportRequest) -> Inputs:
    """The report's inputs: the embedded example (no FILE) or the file, split for a method."""
    file, fit = request.file, request.fit
    if file.path is None:
        return _example(bool(fit.methods))
    whole = read_predictions(file)
    title = file_title(file, one_column=whole.predictions.ndim == 1)
    if not fit.methods:
        return Inputs(title, file.path, whole, None, None, file.logits, file.scores)
    text = fit.text(file)
    if fit.apart:
        fit_part = read_predictions(fit.file(file))
        check_same_columns(whole, fit_part, text, file.path)
        warn_same_rows(whole, fit_part, text, file.path)
        return Inputs(title, file.path, whole, fit_part, text, file.logits, file.scores)
    fit_rows_, test_rows = _split(len(whole.labels), file.path, fit.fraction, fit.seed)
    test, fit_part = whole.rows(test_rows), whole.rows(fit_rows_, checked=False)
    test_mask = np.zeros(len(whole.labels), dtype=bool)
    test_mask[test_rows] = True
    return Inputs(title, file.path, test, fit_part, text, file.logits, file.scores, test_mask)


def warn_same_rows(
    scored: Part, fit: Part, fit_text: str, path: str, file_option: str = "--fit-on"
) -> None:
    """Warn when the rows fitted on are the rows scored (equal predictions and labels)."""
    same = np.array_equal(scored.predictions, fit.predictions) and (
        scored.labels is None or np.array_equal(scored.labels, fit.labels)
    )
    if same:
        warn(same_rows_message(fit_text, path, file_option))


def same_file_and_keys(fit: FileOptions, scored: FileOptions) -> bool:
    """Whether the fit rows are FILE's own arrays (a file read in blocks is not compared)."""
    try:
        same_file = os.path.samefile(fit.path, scored.path)
    except OSError:  # a missing file: the reader says so in its words
        return False
    return same_file and fit.keys() == scored.keys()


def same_rows_message(fit_text: str, path: str, file_option: str = "--fit-on") -> str:
    """The warning of a fit on the very rows that are then scored (``file_option``: its file)."""
    return (
        f"fitted on {fit_text}, the very rows of {path} that are scored: the numbers after "
        "recalibration are in-sample, not a held-out measure; name the validation arrays "
        f"with --fit-prob-key and --fit-labels-key, or a validation file with {file_option}."
    )


def file_title(file: FileOptions, one_column: bool) -> str:
    """The report's first line for FILE: the version, the file and how it was read."""
    title = f"calibration-toolbox {__version__}: {file.path}"
    if file.scores:
        return title + "; one score per row against a 0/1 target (--scores), binned as given"
    if one_column:
        return title + "; one column read as P(y = 1) of a binary classifier (--scores: as given)"
    return title


def _example(fitting: bool) -> Inputs:
    example = load_example()
    test_rows, fit_rows = example.test_rows, example.calibration_rows
    title = (
        f"calibration-toolbox {__version__}: embedded example, metrics on its "
        f"{test_rows.size:,} test rows\n{textwrap.fill(example.description, width=79)}"
    )
    logits, labels = example.logits[test_rows], example.labels[test_rows]
    test = Part(logits, labels, checked_view(logits, labels, logits=True, scores=False))
    fit = Part(example.logits[fit_rows], example.labels[fit_rows]) if fitting else None
    text = "the example's validation rows" if fitting else None
    return Inputs(title, "embedded example", test, fit, text, True)


def read_predictions(file: FileOptions, optional_labels: bool = False) -> Part:
    """Predictions and labels of a file, checked whole once (``--renormalize`` applied).

    A single column of predictions becomes a 1-D array: P(y = 1), or the log-odds.
    ``optional_labels``: labels only when asked for or named by the file (else None: logits
    are left to the recalibrator that takes them; probabilities are checked here, since a
    method fitted on logits takes their log, which no value outside [0, 1] has).
    """
    predictions, labels = read_file(
        file.path, labels_path=file.labels, optional_labels=optional_labels, **file_options(file)
    )
    if predictions.ndim == 2 and predictions.shape[1] == 1:
        predictions = predictions[:, 0]
    if labels is None:
        if not file.logits:
            _check_probabilities(file, predictions)
        return Part(predictions, None)
    if file.renormalize:  # the rows divided and checked in one pass
        checked = renormalized(file, predictions, labels)
        return Part(checked.prob, labels, checked)
    return Part(predictions, labels, check_values(file, predictions, labels))


def _check_probabilities(file: FileOptions, predictions: np.ndarray) -> None:
    """Predictions without labels, checked as probabilities (rows, or P(y = 1) per row)."""
    try:
        check_prob(predictions)
    except (ValueError, TypeError) as error:
        raise within(error, "{file}: ", file=file.path) from None


def file_options(file: FileOptions) -> dict[str, object]:
    """The reading options as :func:`~calibration_toolbox.io.load_predictions` takes them.

    ``--classes`` or ``--classes-file`` become a list of names.
    """
    return {
        "prob_key": file.prob_key,
        "labels_key": file.labels_key,
        "prob_column": file.prob_column,
        "labels_column": file.labels_column,
        "pred_column": file.pred_column,
        "scores": file.scores,
        "classes": class_names(file.classes, file.classes_file),
        "sep": file.sep,
    }


def class_names(text: str | None, names_file: str | None) -> list | None:
    """The names of ``--classes a,b,c`` or of ``--classes-file`` (one per line, blanks skipped).

    Names that are all whole numbers written as such (``--classes 3,7``) are numbers, so
    that they match integer labels in a ``.npz`` or ``.parquet``; a ``.csv``'s labels are
    text and are compared as text either way.
    """
    if text is None and names_file is None:
        return None
    if names_file is not None:
        with open(names_file, encoding="utf-8-sig") as handle:
            names = [line.strip() for line in handle if line.strip()]
        if not names:
            raise ValueError(f"--classes-file {names_file} holds no class names.")
    else:
        names = [name.strip() for name in text.split(",")]
    if all(name.lstrip("-").isdigit() and str(int(name)) == name for name in names):
        return [int(name) for name in names]
    return names


def check_values(
    file: FileOptions, predictions: np.ndarray, labels: np.ndarray
) -> Predictions | None:
    """Every check of the values (finite, labels in range, distributions) on the whole file.

    The one pass that checks the file: its result is the handle the metrics take back
    (see :func:`checked_view`).
    """
    try:
        return checked_view(predictions, labels, file.logits, file.scores)
    except (ValueError, TypeError) as error:
        raise within(error, "{file}: ", file=file.path) from None


def checked_view(
    predictions: np.ndarray, labels: np.ndarray, logits: bool, scores: bool
) -> Predictions | None:
    """The predictions as the metrics take them (:func:`metric_view`), checked once.

    The validated handle (the probabilities, their softmax with ``logits``, and the top
    label of each row), which every metric takes back as ``metric(checked, None)`` without
    checking the values again; None with ``scores``, whose pairs are checked here but not
    handed on (the metrics take ``Scores`` only as such).
    """
    view = metric_view(predictions, scores, logits)
    checked = check_predictions(view, labels, logits=logits, top_label=True)
    return None if scores else checked


def check_same_columns(test: Part, fit: Part, fit_text: str, path: str) -> None:
    """The fit rows (``fit_text``) have as many columns of predictions as FILE (``path``)."""
    shapes = test.predictions.shape[1:], fit.predictions.shape[1:]
    if shapes[0] != shapes[1]:
        columns = [f"{shape[0]} columns" if shape else "one column" for shape in shapes]
        raise ValueError(
            f"{fit_text} holds {columns[1]} of predictions but {path} holds {columns[0]}."
        )


def renormalized(file: FileOptions, predictions: np.ndarray, labels: np.ndarray) -> Predictions:
    """``--renormalize``: each row divided by its sum, checked as the metrics check it.

    The handle of the rows divided (``prob``), as :func:`checked_view` makes it.
    """
    if file.scores or file.logits or predictions.ndim == 1:
        what = "--scores" if file.scores else "--logits" if file.logits else "one column"
        raise UsageError(f"--renormalize is for rows of probabilities, not with {what}.")
    try:
        return check_predictions(predictions, labels, renormalize=True, top_label=True)
    except (ValueError, TypeError) as error:
        raise within(error, "{file}: ", file=file.path) from None


# SplitMix64 (Steele, Lea and Flood 2014): the state advances by the golden-ratio constant
# and each output is the state mixed by two xor-shift-multiply rounds.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB))


def fit_rows(first_row: int, n_rows: int, fraction: float, seed: int) -> np.ndarray:
    """Which of the rows ``first_row, ..., first_row + n_rows - 1`` of a file are fitted on.

    Row ``i`` (from 0) is a fit row when the ``i``-th output of SplitMix64 seeded with
    ``seed`` (mod 2**64), read as a number in [0, 1) (its top 53 bits / 2**53), is below
    ``fraction``: a row's side depends on the seed and its index only, so a file read whole
    and the same file read in blocks of any size are split alike, with no permutation of
    all the rows.  About ``fraction`` of the rows are fitted on, not exactly.

    The ``i``-th output is ``mix(seed + (i + 1) * 0x9E3779B97F4A7C15)`` (mod 2**64), where
    ``mix(z)`` is ``z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
    z *= 0x94D049BB133111EB; z ^= z >> 31``.

    References
    ----------
    G. L. Steele, D. Lea and C. H. Flood, "Fast splittable pseudorandom number generators",
    OOPSLA 2014.
    """
    # uint64 arrays wrap modulo 2**64 without a warning (NumPy scalars would warn).
    state = np.arange(first_row + 1, first_row + n_rows + 1, dtype=np.uint64)
    state *= _GOLDEN
    state += np.uint64(seed % 2**64)
    state ^= state >> np.uint64(30)
    state *= _MIX[0]
    state ^= state >> np.uint64(27)
    state *= _MIX[1]
    state ^= state >> np.uint64(31)
    state >>= np.uint64(11)
    return state < np.uint64(math.ceil(fraction * 2**53))


def check_split(n_fit: int, n_rows: int, path: str, fraction: float, seed: int) -> None:
    """Refuse a split that leaves no row to fit on or none to report on."""
    if 0 < n_fit < n_rows:
        return
    side = "to fit on" if n_fit == 0 else "to report on"
    raise ValueError(
        f"--split {fraction:g} --seed {seed} leaves no row {side} among the {n_rows} rows "
        f"of {path}."
    )


def _split(n_rows: int, path: str, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The fit rows and the test rows of a file read whole (see :func:`fit_rows`)."""
    fitted_on = fit_rows(0, n_rows, fraction, seed)
    fit = np.flatnonzero(fitted_on)
    check_split(len(fit), n_rows, path, fraction, seed)
    return fit, np.flatnonzero(~fitted_on)
