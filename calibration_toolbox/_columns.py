"""Which named columns (or fields, or arrays) of a file hold the predictions and the labels.

One rule for every format whose columns have names (``.csv`` with a header, ``.parquet``,
``.jsonl``): ``prob_column`` is one name, a list of names (one column per class) or a
prefix ending in ``*`` (the matching columns in file order); ``labels_column`` one name.
Each format gives its defaults; the names it looks for by default are here too.

The top-label layout (a predicted label beside the true one and a confidence, as published
ImageNet prediction dumps and evaluation harnesses write them) is recognised by the name
of its predicted-label column (:data:`PREDICTED_LABEL_KEYS`, or ``pred_column``), never
from the values: it is read as one score per row, the confidence, against whether the
predicted label is the true one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from calibration_toolbox._errors import InputError

if TYPE_CHECKING:  # the key names are read by the command line's parser: no NumPy import
    from numpy.typing import NDArray

__all__ = [
    "CSV_LABEL_COLUMNS",
    "LABEL_KEYS",
    "PREDICTED_LABEL_KEYS",
    "PREDICTION_KEYS",
    "TRUE_LABEL_KEYS",
    "Selection",
    "hits",
    "predicted_label",
    "prob_columns",
    "select",
]

PREDICTION_KEYS = (
    "prob",
    "probs",
    "probabilities",
    "predictions",
    "probs_test",
    "logits",
    "scores",
    "y_prob",
    "y_score",
    "confidence",
    "confidences",
)
"""Names of the predictions array of a ``.npz`` (and column of a ``.parquet`` or ``.jsonl``)."""

LABEL_KEYS = (
    "labels",
    "label",
    "y",
    "y_true",
    "targets",
    "target",
    "ground_truth",
    "y_test",
    "correct",
    "outcome",
)
"""Names of the labels array of a ``.npz`` (and column of a ``.parquet`` or ``.jsonl``)."""

PREDICTED_LABEL_KEYS = ("pred_label", "predicted_label", "pred_class", "predicted_class", "y_pred")
"""Names of a predicted-label column: its presence makes a file the top-label layout."""

TRUE_LABEL_KEYS = ("true_label", *LABEL_KEYS)
"""Names of the true label beside a predicted one (the top-label layout)."""

CSV_LABEL_COLUMNS = ("label", "labels", "y")
"""Header names of the labels column of a ``.csv`` (without a header: the last column)."""


@dataclass(frozen=True)
class Selection:
    """The columns read: the predictions (one or more), the labels, the predicted label.

    With ``predicted`` (the top-label layout) the predictions are one column of scores and
    the target of row i is ``predicted[i] == labels[i]``.
    """

    prob: list[str]
    labels: str | None
    """None: no labels (``optional_labels``, and the file names none)."""
    predicted: str | None = None


def _named(path: Path, names: Sequence[str], given, option: str) -> str:
    if not isinstance(given, str) or given not in names:
        raise InputError(
            "{argument} {given!r} is not a column of {path}; it holds {value}.",
            argument=option,
            given=given,
            path=path,
            value=list(names),
        )
    return given


def _first(names: Sequence[str], defaults: Sequence[str]) -> str | None:
    return next((name for name in defaults if name in names), None)


def _cannot_tell(path: Path, names: Sequence[str], option: str) -> ValueError:
    return InputError(
        "cannot tell which column of {path} to use ({names}); pass {argument}.",
        argument=option,
        path=path,
        names=list(names),
    )


def prob_columns(path: Path, names: Sequence[str], prob_column, exclude: str) -> list[str]:
    """The columns ``prob_column`` names: one name, a list of names, or a prefix ``p_*``.

    A prefix matches the columns that start with it, in file order, except ``exclude``
    (the labels column).
    """
    if isinstance(prob_column, str) and prob_column.endswith("*"):
        prefix = prob_column[:-1]
        matched = [name for name in names if name.startswith(prefix) and name != exclude]
        if not matched:
            raise InputError(
                "{prob_column} {given!r} matches no column of {path} ({names}).",
                argument="prob_column",
                given=prob_column,
                path=path,
                names=list(names),
            )
        return matched
    wanted = [prob_column] if isinstance(prob_column, str) else list(prob_column)
    return [_named(path, names, name, "prob_column") for name in wanted]


def select(
    path: Path,
    names: Sequence[str],
    *,
    prob_column=None,
    labels_column: str | None = None,
    pred_column: str | None = None,
    scores: bool = False,
    label_names: Sequence[str] = LABEL_KEYS,
    by_position: bool = False,
    optional_labels: bool = False,
) -> Selection:
    """The columns of ``names`` to read, from the options or the default names.

    Labels: ``labels_column``, else the first of ``label_names`` present, else (with
    ``by_position``, a ``.csv``) the last column; with ``optional_labels`` (predictions to
    calibrate), only a column so named, else none.  Predictions: ``prob_column``, else the
    first of :data:`PREDICTION_KEYS` present, else (``by_position``) every other column.
    The top-label layout (a column named in :data:`PREDICTED_LABEL_KEYS`, or
    ``pred_column``) is :func:`_top_label`'s.
    """
    predicted = predicted_label(path, names, pred_column, scores)
    if predicted is not None:
        return _top_label(path, names, prob_column, labels_column, predicted)
    if labels_column is not None:
        labels = _named(path, names, labels_column, "labels_column")
    else:
        labels = _first(names, label_names)
    if labels is None and by_position and not optional_labels:
        chosen = [] if prob_column is None else prob_columns(path, names, prob_column, "")
        rest = [name for name in names if name not in chosen]
        labels = rest[-1] if rest else None
    if labels is None and not optional_labels:
        raise _cannot_tell(path, names, "labels_column")
    if prob_column is not None:
        return Selection(prob_columns(path, names, prob_column, labels), labels)
    if by_position:
        return Selection([name for name in names if name != labels], labels)
    prob = _first(names, PREDICTION_KEYS)
    if prob is None:
        raise _cannot_tell(path, names, "prob_column")
    return Selection([prob], labels)


def predicted_label(path: Path, names: Sequence[str], pred_column, scores: bool) -> str | None:
    """The predicted-label column (``pred_column``, or named in :data:`PREDICTED_LABEL_KEYS`).

    None when there is none (not the top-label layout); an error without ``scores``.
    """
    if pred_column is not None:
        predicted = _named(path, names, pred_column, "pred_column")
    else:
        predicted = _first(names, PREDICTED_LABEL_KEYS)
    if predicted is not None and not scores:
        raise InputError(
            "{path} holds predicted labels (column {predicted!r}): it is read as one score "
            "per row against whether the predicted label is the true one; {pass_scores}.",
            path=path,
            predicted=predicted,
        )
    return predicted


def _top_label(path: Path, names: Sequence[str], prob_column, labels_column, predicted):
    """Top-label layout: the true label named, and one score column.

    The score column is ``prob_column`` (one name), else the first of
    :data:`PREDICTION_KEYS` present, else the only column left.
    """
    if labels_column is not None:
        labels = _named(path, names, labels_column, "labels_column")
    else:
        labels = _first([name for name in names if name != predicted], TRUE_LABEL_KEYS)
    if labels is None:
        raise _cannot_tell(path, names, "labels_column")
    if prob_column is not None:
        prob = prob_columns(path, names, prob_column, labels)
    else:
        others = [name for name in names if name not in (labels, predicted)]
        named = _first(others, PREDICTION_KEYS)
        prob = [named] if named is not None else others
    if len(prob) != 1:
        raise InputError(
            "{path} holds predicted labels (column {predicted!r}) and needs one column of "
            "scores; got {prob}: pass {prob_column} with one name.",
            path=path,
            predicted=predicted,
            prob=prob,
        )
    return Selection(prob, labels, predicted)


def hits(predicted: NDArray, labels: NDArray) -> NDArray:
    """The 0/1 target of the top-label layout: 1.0 where ``predicted`` equals ``labels``.

    Names are compared as text; a column of names beside one of numbers, as text too.
    """
    if (predicted.dtype.kind in "USO") != (labels.dtype.kind in "USO"):
        predicted, labels = predicted.astype(str), labels.astype(str)
    return (predicted == labels).astype("float64")
