"""Input checks shared by every public function.

Every check raises ``ValueError`` (bad value or shape) or ``TypeError`` (wrong kind of
object) with a message of the form ``"`name` must be ...; got ..."``, and returns plain
values.  Public functions call these once at their boundary; private helpers receive
validated arrays.

Probabilities are checked by the blocked pass of :func:`calibration_toolbox._rows.scan_rows`,
which also takes the label's probability and the top label while each block is in cache:
:func:`check_predictions` returns what it learnt beside the arrays.

Whatever the input's form, what :func:`check_predictions` returns is a
:class:`CheckedInput`, whose views give each consumer what it needs without asking which
form it holds: ``top_label()`` (confidence and correctness of each row, or the pairs of
``Scores``), ``entries(rows)`` (scores and their 0/1 targets, K a row or one for pairs),
``pairs`` (the pairs of ``Scores``, else ``None``), ``needs_scan`` and
``with_values_checked()`` (whether the values are still to be checked, and checking them),
``taken`` and ``joined`` (rows selected or concatenated, as a stream keeps them).

The validated handle: the :class:`Predictions` that ``check_predictions(prob, labels,
top_label=True)`` returns for an in-memory array is accepted back, as
``check_predictions(checked, None)``, by every function that validates its input (the
metrics, ``stats.bootstrap``, ``CalibrationAccumulator.update``): ``ECE(checked, None)``
gives the bits of ``ECE(prob, labels)`` without checking the values again, so that a caller
computing several measures of one input (the command line) checks it once.  What would
make the handle mean something else is refused: labels other than ``None`` (or its own),
``logits=True``, ``renormalize=True`` (pass them when making it), and a top-label measure
given a handle made without ``top_label=True`` (for which a 1-D ``prob`` is refused).
"""

from __future__ import annotations

import functools
import numbers
from typing import Callable, NamedTuple, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _scipy
from calibration_toolbox._arrays import as_numpy, as_real_array
from calibration_toolbox._errors import InputError, InputTypeError, Name, Text, within
from calibration_toolbox._limits import MAX_BINS, MAX_FIT_LOGIT, MAX_TABLE_CELLS
from calibration_toolbox._rows import RowSummary, row_blocks, scan_rows
from calibration_toolbox._typing import Function
from calibration_toolbox._warnings import ProbabilitiesAsLogitsWarning, warn
from calibration_toolbox.scores import PredictionsLike, Scores

__all__ = [
    "LABELS_IN_PARTS",
    "NO_ROW_COUNT",
    "CheckedInput",
    "MultiLabel",
    "NotFittedError",
    "Pairs",
    "PendingPredictions",
    "Predictions",
    "accepts_classes",
    "auto_bin_count",
    "check_bins",
    "check_bins_parameter",
    "check_class_names",
    "check_fit_magnitude",
    "check_flag",
    "check_fraction",
    "check_label_scores",
    "check_labels",
    "check_logits",
    "check_logits_flag",
    "check_multilabel",
    "check_norm",
    "check_predicted_logits",
    "check_predictions",
    "check_prob",
    "check_random_state",
    "check_sample_weight",
    "check_table_cells",
    "check_top_k",
    "checks_after_values",
    "choice",
    "labels_from_file",
    "top_label_pairs",
]

# Largest |row sum - 1| accepted for probabilities stored at each precision.  A float32
# softmax over 1,000 classes is off by at most ~6e-5; values saved in float32 and cast to
# float64 keep that float32 error, so the float64 bound is loose on purpose.
ROW_SUM_TOLERANCE = {
    np.dtype(np.float16): 1e-2,
    np.dtype(np.float32): 1e-4,
    np.dtype(np.float64): 1e-6,
}
# The dtypes computations run in: float32 and float64 are kept, anything else is widened.
_WORKING_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


class NotFittedError(ValueError, AttributeError):
    """Raised when a recalibrator is used before ``fit``."""


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: The default row selection of a view: every row.
_ALL_ROWS = slice(None)


class CheckedInput:
    """What every validated input offers, whatever form it came in: one interface.

    :func:`check_predictions` returns :class:`Predictions` (values checked),
    :class:`PendingPredictions` (values to be checked by the pass that uses them) or
    :class:`Pairs` (``Scores``); a consumer takes what it needs through these views rather
    than by asking which of them it holds.
    """

    __slots__ = ()

    @property
    def n_samples(self) -> int:
        """Number of rows N."""
        return len(self[0])

    @property
    def n_classes(self) -> int:
        """Number of classes K (2 for pairs: the target is 0 or 1)."""
        return 2

    @property
    def needs_scan(self) -> bool:
        """Whether the values are still to be checked (by :meth:`with_values_checked`)."""
        return False

    @property
    def pairs(self) -> Pairs | None:
        """The (score, target) pairs when the input was ``Scores``, else ``None``."""
        return None

    @property
    def entry_columns(self) -> int:
        """Entries per row of :meth:`entries`: K, or 1 for pairs."""
        return self.n_classes

    def with_values_checked(self) -> CheckedInput:
        """The same rows, their values checked now if they were still to be (else itself)."""
        return self

    def top_label(self) -> tuple[NDArray, NDArray]:
        """(score, target) of each row: (confidence, correct), or the pairs themselves."""
        raise NotImplementedError

    def entries(self, rows: slice = _ALL_ROWS) -> tuple[NDArray, NDArray]:
        """Scores ``(n, entry_columns)`` of the rows ``rows`` and their 0/1 targets."""
        raise NotImplementedError

    def taken(self, take: Callable[[NDArray], NDArray]) -> CheckedInput:
        """The input with ``take`` (a row selection, a copy) applied to each per-row array."""
        raise NotImplementedError

    def joined(self, other: CheckedInput) -> CheckedInput:
        """The rows of ``self`` then those of ``other`` (an input of the same form)."""
        raise NotImplementedError


class _ProbabilityRows(CheckedInput):
    """The views of validated ``(N, K)`` probabilities and their labels."""

    __slots__ = ()

    @property
    def n_classes(self) -> int:
        """Number of classes K."""
        return self[0].shape[1]

    def entries(self, rows: slice = _ALL_ROWS) -> tuple[NDArray, NDArray]:
        """The probabilities of the rows ``rows`` and the one-hot rows of their labels."""
        prob = self[0][rows]
        return prob, self[1][rows, None] == np.arange(prob.shape[1])

    def taken(self, take: Callable[[NDArray], NDArray]) -> PendingPredictions:
        """The rows ``take`` gives of the checked arrays, their values to be gathered again."""
        return PendingPredictions(take(self[0]), take(self[1]), np.inf)

    def joined(self, other: CheckedInput) -> PendingPredictions:
        """The rows of both (checked already: the pass that uses them only gathers)."""
        return PendingPredictions(
            np.concatenate([self[0], other[0]]), np.concatenate([self[1], other[1]]), np.inf
        )


class _PredictionFields(NamedTuple):
    prob: NDArray
    """float32 or float64 ``(N, K)`` probabilities (the input itself when it already was)."""
    labels: NDArray
    """``intp`` labels in ``[0, K)``."""
    rows: RowSummary
    """The label's probability of each row, and the top label when it was asked for."""


class Predictions(_PredictionFields, _ProbabilityRows):
    """Validated predictions: what :func:`check_predictions` returns (the validated handle)."""

    __slots__ = ()

    def top_label(self) -> tuple[NDArray, NDArray]:
        """Confidence and correctness (first-index argmax == label) of each row."""
        return self.rows.confidence, self.rows.correct(self.prob, self.labels)


class _PendingFields(NamedTuple):
    prob: NDArray
    """float32 or float64 ``(N, K)`` probabilities, their values not checked yet."""
    labels: NDArray
    """``intp`` labels in ``[0, K)``."""
    tolerance: float
    """Largest ``|row sum - 1|`` accepted (``inf``: the rows were checked already)."""


class PendingPredictions(_PendingFields, _ProbabilityRows):
    """Predictions whose shape and labels are checked, and whose values are still to be.

    What :func:`check_predictions` returns with ``defer_scan=True``: the values are checked
    by :meth:`scan`, in a pass that can use each row block as it goes (the equal-width
    tables bin the rows as they are checked, in memory that does not grow with N).
    """

    __slots__ = ()

    @property
    def needs_scan(self) -> bool:
        """Whether the values are still to be checked (a finite tolerance)."""
        return self.tolerance != np.inf

    def with_values_checked(self) -> PendingPredictions:
        """The rows, their values checked now (with :meth:`scan`'s errors) if still to be."""
        if not self.needs_scan:
            return self
        self.scan()
        return self._replace(tolerance=np.inf)

    def top_label(self) -> tuple[NDArray, NDArray]:
        """Confidence and correctness of each row, the values checked on the way."""
        return self.checked(top_label=True).top_label()

    def scan(self, *, top_label: bool = False, **blocks: object) -> RowSummary:
        """Check the values, raising :func:`check_predictions`'s error for the first bad row.

        ``blocks`` (``each_block``, ``chunk_rows``, ``block_elements``) are passed to
        :func:`calibration_toolbox._rows.scan_rows`, which hands the checked rows over
        block by block; without them the summary of all the rows is returned.
        """
        if not self.needs_scan:  # checked already: the pass gathers, and checks nothing
            return scan_rows(
                self.prob, np.inf, labels=self.labels, top_label=top_label, **blocks
            ).summary
        return _scanned_rows(
            self.prob, "prob", self.tolerance, labels=self.labels, top_label=top_label, **blocks
        )

    def checked(self, top_label: bool = False) -> Predictions:
        """The checked :class:`Predictions`, with the top label when asked for."""
        return Predictions(self.prob, self.labels, self.scan(top_label=top_label))


class _PairFields(NamedTuple):
    scores: NDArray
    """float32 or float64 ``(N,)`` scores in [0, 1] (the input itself when it already was)."""
    targets: NDArray
    """``intp`` targets in {0, 1}."""
    log_odds: NDArray | None
    """The finite log-odds the scores came from with ``logits=True``, else ``None``."""


class Pairs(_PairFields, CheckedInput):
    """Validated (score, target) pairs: what :func:`check_predictions` returns for ``Scores``."""

    __slots__ = ()

    @property
    def pairs(self) -> Pairs:
        """The pairs themselves."""
        return self

    @property
    def entry_columns(self) -> int:
        """One entry per row: the score against the target."""
        return 1

    def top_label(self) -> tuple[NDArray, NDArray]:
        """The scores and their targets: binned as given."""
        return self.scores, self.targets

    def entries(self, rows: slice = _ALL_ROWS) -> tuple[NDArray, NDArray]:
        """The scores of the rows ``rows`` as one column, and their targets."""
        return self.scores[rows, None], self.targets[rows, None]

    def taken(self, take: Callable[[NDArray], NDArray]) -> Pairs:
        """The pairs ``take`` gives (and their log-odds)."""
        return Pairs(*(None if field is None else take(field) for field in self))

    def joined(self, other: CheckedInput) -> Pairs:
        """The pairs of both (log-odds kept when both have them)."""
        return Pairs(
            *(
                None if mine is None else np.concatenate([mine, theirs])
                for mine, theirs in zip(self, other, strict=True)
            )
        )


def check_prob(prob: ArrayLike, *, logits: bool = False, name: str = "prob") -> NDArray:
    """Validate probabilities (or logits) and return an ``(N, K)`` float array.

    Parameters
    ----------
    prob : array-like
        ``(N, K)`` probabilities, or ``(N,)`` / ``(N, 1)`` probabilities of the positive
        class of a binary task (expanded to ``[1 - p, p]``).  With ``logits=True``, logits
        of the same shapes (a single column is the logit of the positive class).
    logits : bool
        Whether ``prob`` holds logits; the softmax is applied after the checks.
    name : str
        Argument name used in error messages.

    Returns
    -------
    ndarray
        float32 or float64 probabilities; the input itself when it is already a valid
        float array of that shape (never modified).
    """
    array, tolerance = _probability_rows(prob, logits, False, name)
    _scanned_rows(array, name, tolerance)
    return array


def check_predictions(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    logits: bool = False,
    renormalize: bool = False,
    top_label: bool = False,
    defer_scan: bool = False,
    classes: ArrayLike | None = None,
) -> Predictions | Pairs | PendingPredictions:
    """Validate ``prob`` (as :func:`check_prob`) and ``labels`` (as :func:`check_labels`).

    With ``renormalize=True`` each row of probabilities in [0, 1] is divided by its sum
    (into a new array) before the row sums are checked.  The label's probability of each
    row, and the top label with ``top_label=True``, are taken in the validation pass itself
    (:func:`calibration_toolbox._rows.scan_rows`).

    ``top_label=True`` is for the top-label measures, for which a 1-D (or one-column)
    ``prob`` is ambiguous: it is refused, with the two explicit forms in the message.
    ``prob`` wrapped in :class:`~calibration_toolbox.Scores` is checked as (score, target)
    pairs and returned as :class:`Pairs`.  With ``defer_scan=True`` the values of
    probabilities are not checked yet: :class:`PendingPredictions` checks them when scanned.
    With ``classes`` (the class names in column order), ``labels`` are names, mapped to
    column indices by :func:`check_labels`.
    """
    if classes is not None:
        labels = _NamedLabels(labels, classes)
    if isinstance(prob, Predictions):
        return _checked_handle(prob, labels, logits, renormalize, top_label, defer_scan)
    if isinstance(prob, Scores):
        return _checked_pairs(prob, labels, logits, renormalize)
    if isinstance(prob, (Pairs, PendingPredictions)):
        raise TypeError(
            "`prob` must be an array, Scores or checked Predictions (values scanned); got "
            f"{type(prob).__name__}: pass the arrays or Scores it was made from."
        )
    try:
        if top_label:
            prob = _refuse_one_column(prob, logits)
        array, tolerance = _probability_rows(prob, logits, renormalize, "prob")
        pending = PendingPredictions(array, check_labels(labels, *array.shape), tolerance)
    except (TypeError, ValueError):
        _refuse_swapped(prob, labels)
        raise
    return pending if defer_scan else pending.checked(top_label)


def _checked_handle(
    handle: Predictions,
    labels: object,
    logits: object,
    renormalize: object,
    top_label: bool,
    defer_scan: bool,
) -> Predictions | PendingPredictions:
    """The validated handle ``handle`` as a metric's validation would return it, unscanned.

    Whatever could make the handle mean something else than the arrays it was made from
    is refused: other labels, ``logits=True`` (its probabilities are a softmax already),
    ``renormalize=True`` (its rows sum to 1 already), and a top-label measure on a handle
    made without the top label (a 1-D ``prob`` is ambiguous for those measures: it is
    refused when the handle is made with ``top_label=True``).
    """
    if labels is not None and labels is not handle.labels:
        given = "names with `classes`" if isinstance(labels, _NamedLabels) else "labels"
        raise ValueError(
            "`labels` must be None when `prob` is checked Predictions, which hold their "
            f"labels (pass `classes` when making them); got {given}."
        )
    for name, value in (("logits", logits), ("renormalize", renormalize)):
        if check_flag(value, name):
            raise ValueError(
                f"`{name}` must be False when `prob` is checked Predictions, whose rows are "
                f"probabilities already (pass {name}=True to check_predictions when making "
                "them); got True."
            )
    if top_label and handle.rows.confidence is None:
        raise ValueError(
            "`prob` must be checked Predictions with the top label for a top-label measure; "
            "got Predictions made without it. Make them with check_predictions(prob, labels, "
            "top_label=True)."
        )
    if defer_scan:  # the pass that uses the rows gathers them and checks nothing
        return PendingPredictions(handle.prob, handle.labels, np.inf)
    return handle


def _refuse_swapped(prob: ArrayLike, labels: ArrayLike) -> None:
    """Raise when ``prob`` looks like labels and ``labels`` like predictions.

    Only called once the checks have failed, so the usual call pays nothing: whole numbers,
    one per row, as ``prob``, beside a probability matrix (or binary probabilities that are
    not whole numbers) of the same length as ``labels`` is scikit-learn's order
    ``f(y_true, y_prob)``.
    """
    if isinstance(labels, _NamedLabels):
        return
    try:
        given, other = as_numpy(prob), as_numpy(labels)
    except (TypeError, ValueError):
        return
    if not (_one_whole_number_per_row(given) and len(other) == len(given)):
        return
    if _looks_like_predictions(other):
        raise InputError(
            "{prob} and {labels} look swapped: {prob:holds} whole numbers of shape "
            "{prob_shape}, as class labels do, and {labels:holds} probabilities of shape "
            "{labels_shape}. The metrics take (prob, labels); scikit-learn's take (y_true, "
            "y_prob): pass the predictions first.",
            argument="prob",
            prob_shape=given.shape,
            labels_shape=other.shape,
        )


def _one_whole_number_per_row(array: NDArray) -> bool:
    """Whether ``array`` is one finite whole number per row: what labels look like."""
    one_column = array.ndim == 1 or (array.ndim == 2 and array.shape[1] == 1)
    if not one_column or array.size == 0 or array.dtype.kind not in "biuf":
        return False
    return bool(np.isfinite(array).all() and (array == np.round(array)).all())


def _looks_like_predictions(array: NDArray) -> bool:
    """Whether ``array`` is a probability matrix, or binary probabilities not all whole."""
    if array.dtype.kind != "f" or array.size == 0:
        return array.ndim == 2 and array.shape[1] >= 2 and array.dtype.kind in "biuf"
    if array.ndim == 2 and array.shape[1] >= 2:
        return True
    return array.ndim == 1 and not _one_whole_number_per_row(array)


def checks_after_values(checked: CheckedInput, checks):
    """``checks()`` (of the arguments after the predictions), once the predictions are known.

    With :class:`PendingPredictions` the values of ``prob`` are checked later, in the pass
    that uses them; if a check of another argument fails, they are checked first, so that a
    bad value of ``prob`` is reported before it, as when every value was checked first.
    """
    try:
        return checks()
    except (TypeError, ValueError):
        checked.with_values_checked()
        raise


def _refuse_one_column(prob: ArrayLike, logits: object) -> NDArray:
    """``prob`` as an array, unless it is 1-D or one column: ambiguous for a top-label measure."""
    array = as_real_array(prob, "prob")
    if array.ndim == 1 or (array.ndim == 2 and array.shape[1] == 1):
        name, two_columns, option = "p", "[1 - p, p]", ""
        if logits is True:
            name, two_columns, option = "z", "[np.zeros_like(z), z]", ", logits=True"
        raise InputError(
            "{prob:is} 1-D, which is ambiguous for a top-label measure. To bin the scores as "
            "given against y (an LLM's confidence against correctness, P(event) against the "
            "event; what scikit-learn's calibration_curve and torchmetrics' "
            "binary_calibration_error compute), pass ECE(Scores({name}), y{option}); for the "
            "top-label error of a binary classifier, pass "
            "ECE(np.column_stack({two_columns}), y{option}).",
            argument="prob",
            name=name,
            option=option,
            two_columns=two_columns,
        )
    return array


def _checked_pairs(
    scores: Scores, labels: ArrayLike, logits: object, renormalize: object
) -> Pairs:
    """(score, target) pairs: scores in [0, 1] (or finite log-odds), targets in {0, 1}."""
    if check_logits_flag(logits, renormalize):
        log_odds = _predicted_logits(_one_score_per_row(scores.values), "Scores")
        array = _scipy.special.expit(log_odds)
    else:
        if renormalize:
            raise InputError(
                "{renormalize=True} divides each row of probabilities by its sum; Scores "
                "hold one score per row, so there is nothing to renormalise."
            )
        log_odds = None
        array, _ = _as_float_array(_one_score_per_row(scores.values), "Scores", "scores")
        _check_range(array, "Scores")
    targets = check_labels(labels, len(array), 2, pairs=True)
    return Pairs(array, targets, log_odds)


def _one_score_per_row(values: ArrayLike) -> NDArray:
    """The values of ``Scores`` as an array of shape (N,) or (N, 1)."""
    array = as_real_array(values, "Scores")
    if not (array.ndim == 1 or (array.ndim == 2 and array.shape[1] == 1)):
        raise InputError(
            "{Scores} must hold one score per row, shape (N,) or (N, 1); got shape "
            "{shape}. A (N, K) probability matrix is passed as it is, {without_scores}.",
            argument="Scores",
            shape=array.shape,
        )
    return array


def _check_range(array: NDArray, name: str) -> None:
    """Raise the error of :func:`_raise_range` unless every value is in [0, 1] (no NaN)."""
    if not (array.min() >= 0 and array.max() <= 1):
        _raise_range(array, name)


def _scanned_rows(
    array: NDArray,
    name: str,
    tolerance: float,
    *,
    labels: NDArray | None = None,
    top_label: bool = False,
    **blocks: object,
) -> RowSummary:
    """The row summary of valid probabilities; the error for the first invalid row."""
    summary, problem = scan_rows(array, tolerance, labels=labels, top_label=top_label, **blocks)
    if problem is None:
        return summary
    if problem.out_of_range:
        _raise_range(array, name)
    raise InputError(
        "rows of {argument} must sum to 1 (within {tolerance:g}); row {row} sums to "
        "{row_sum!r}. If the rows were rounded when saved (e.g. to a CSV), divide "
        "each row by its sum (the metrics do it with {renormalize_flag}).",
        argument=name,
        row=problem.row,
        tolerance=tolerance,
        row_sum=problem.row_sum,
    )


def _probability_rows(
    prob: ArrayLike, logits: bool, renormalize: bool, name: str
) -> tuple[NDArray, float]:
    """Probabilities before the row checks, and the tolerance of their row sums.

    Logits go through the softmax; a binary column is expanded to ``[1 - p, p]``.
    """
    if check_logits_flag(logits, renormalize):
        array = _scipy.special.softmax(check_predicted_logits(prob, name), axis=1)
        return array, ROW_SUM_TOLERANCE[array.dtype]
    array, source_dtype = _as_float_array(prob, name, "probabilities")
    if array.ndim == 1:
        _check_range(array, name)
        array = np.stack([1 - array, array], axis=1)
    elif renormalize:  # a checked flag (check_logits_flag)
        array = _renormalized(array, name)
    # float16 input is checked at float16's precision, integer (one-hot) input as float64.
    return array, ROW_SUM_TOLERANCE.get(source_dtype, ROW_SUM_TOLERANCE[array.dtype])


def check_logits_flag(logits: object, renormalize: object = False) -> bool:
    """Check the ``logits`` and ``renormalize`` flags of a metric; return ``logits``.

    ``renormalize=True`` divides probabilities by their row sums: with logits it is an error.
    """
    renormalize = check_flag(renormalize, "renormalize")
    if check_flag(logits, "logits") and renormalize:
        raise InputError(
            "{renormalize=True} divides probabilities by their row sums; it does not apply "
            "with {logits_flag}."
        )
    return bool(logits)


def _renormalized(array: NDArray, name: str) -> NDArray:
    """A new array: the rows of ``array`` (values in [0, 1]) divided by their sums.

    Sums are taken in float64 and the quotient is stored in the input's dtype, in row
    blocks, so a float32 array gets no float64 copy.
    """
    _check_range(array, name)
    out = np.empty_like(array)
    for rows in row_blocks(*array.shape):
        sums = array[rows].sum(axis=1, dtype=np.float64)
        if not sums.min() > 0:
            row = rows.start + int(np.flatnonzero(sums <= 0)[0])
            raise InputError(
                "row {row} of {argument} sums to 0; {renormalize_flag} needs rows with a "
                "positive sum.",
                argument=name,
                row=row,
            )
        np.divide(array[rows], sums[:, None], out=out[rows], casting="same_kind")
    return out


def check_logits(logits: ArrayLike, name: str = "logits") -> NDArray:
    """Validate finite logits and return an ``(N, K)`` float array (never a copy if avoidable).

    A 1-D array (or one column) holds the logit of the positive class of a binary task and
    becomes the two columns ``[0, z]``, whose softmax is ``[1 - sigmoid(z), sigmoid(z)]``.
    """
    array, _ = _finite_logits(logits, name)
    return _binary_logit_columns(array)


def check_fit_magnitude(logits: NDArray, name: str = "X") -> NDArray:
    """Checked logits, refused if any exceeds :data:`~calibration_toolbox._limits.MAX_FIT_LOGIT`.

    For the softmax fits, whose float32 passes sum squared logits (a metric takes logits of
    any finite magnitude).  Two reductions; the row is found only for the message.
    """
    if max(-float(logits.min()), float(logits.max())) <= MAX_FIT_LOGIT:
        return logits
    row = int(np.argmax(np.abs(logits).max(axis=1) > MAX_FIT_LOGIT))
    raise InputError(
        "{argument} holds a logit of magnitude {value:.3g} in row {row}; the softmax fits "
        "take logits of magnitude at most 2**48 (2.8e14; their passes sum squared logits "
        "in float32). Real logits lie within a few hundred: these are not a model's logits.",
        argument=name,
        row=row,
        value=float(np.abs(logits[row]).max()),
    )


def check_predicted_logits(
    logits: ArrayLike, name: str = "prob", *, advice: Callable[[int], str] | None = None
) -> NDArray:
    """:func:`check_logits`, warning when every row is a probability vector.

    For the metrics' ``logits=True``: logits are never guessed, but probabilities passed
    as logits give a wrong number (their softmax is nearly uniform), so a ``UserWarning``
    is issued when every row lies in [0, 1] and sums to 1 within the dtype's tolerance (a
    1-D array: when every value lies in [0, 1]).  ``advice(ndim)`` (a recalibrator's fit,
    which takes logits without a flag) replaces the metrics' advice to drop ``logits=True``.
    """
    return _binary_logit_columns(_predicted_logits(logits, name, advice))


def _predicted_logits(
    logits: ArrayLike, name: str, advice: Callable[[int], Text] | None = None
) -> NDArray:
    """Finite logits as given, (N, K) or (N,); a warning if they look like probabilities."""
    array, source_dtype = _finite_logits(logits, name)
    tolerance = ROW_SUM_TOLERANCE.get(source_dtype, ROW_SUM_TOLERANCE[array.dtype])
    if _all_rows_are_probabilities(array, tolerance):
        shape = "value lies in [0, 1]" if array.ndim == 1 else "row is a probability vector"
        if advice is None:
            warn(
                Text(
                    "{argument} was passed with {logits_flag}, but every {shape}: if it holds "
                    "probabilities, drop {logits_flag} (the softmax of probabilities is not the "
                    "model's prediction).",
                    argument=name,
                    fields={"shape": shape},
                ),
                ProbabilitiesAsLogitsWarning,
            )
        else:
            warn(
                Text(
                    "{argument:is} taken as logits, but every {shape}: {advice}",
                    argument=name,
                    fields={"shape": shape, "advice": advice(array.ndim)},
                ),
                ProbabilitiesAsLogitsWarning,
            )
    return array


def _all_rows_are_probabilities(array: NDArray, tolerance: float) -> bool:
    """Whether every value is in [0, 1] and (2-D) every row sums to 1 within ``tolerance``."""
    # Real logits almost always have a value outside [0, 1] in the first rows: deciding on
    # one row block first makes the check cost microseconds rather than a pass.
    first = array[:1024] if array.ndim == 1 else array[next(row_blocks(*array.shape))]
    for values in (first, array):
        if not (values.min() >= 0 and values.max() <= 1):
            return False
    if array.ndim == 1:
        return True
    return all(
        np.abs(np.einsum("ij->i", array[rows]) - 1).max() <= tolerance
        for rows in row_blocks(*array.shape)
    )


def _finite_logits(logits: ArrayLike, name: str) -> tuple[NDArray, np.dtype]:
    """Finite logits, ``(N, K)`` or ``(N,)``, and the dtype they were given in."""
    array, source_dtype = _as_float_array(logits, name, "logits")
    row = _first_nonfinite_row(array)
    if row is not None:
        raise InputError(
            "{argument} must be finite; row {row} holds NaN or inf.", argument=name, row=row
        )
    return array, source_dtype


def _first_nonfinite_row(array: NDArray) -> int | None:
    """The first row holding NaN or inf, found block by block (no N x K mask), or None.

    A block's minimum and maximum are finite exactly when all its values are (NaN
    propagates through both): two reductions in cache instead of an N x K boolean array,
    which was the largest allocation of a temperature fit (95 MiB at 1e7 x 10 float32).
    """
    rows_2d = array.reshape(len(array), -1)
    for rows in row_blocks(*rows_2d.shape):
        block = rows_2d[rows]
        if not (np.isfinite(block.min()) and np.isfinite(block.max())):
            return rows.start + int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])
    return None


def _binary_logit_columns(array: NDArray) -> NDArray:
    """``[0, z]`` for a 1-D array of positive-class logits ``z``; 2-D arrays as they are."""
    if array.ndim == 1:
        array = np.stack([np.zeros_like(array), array], axis=1)
    return array


def _as_float_array(value: ArrayLike, name: str, kind: str) -> tuple[NDArray, np.dtype]:
    """A float32/float64 array, (N, K) with K >= 2 or (N,), and the dtype it was given in.

    A single column (N, 1) is returned as the binary column (N,).
    """
    array = as_real_array(value, name)
    if array.ndim == 0 or array.ndim > 2:
        raise InputError(
            "{argument} must be a 2-D array of shape (n_samples, n_classes) or a 1-D array of "
            "positive-class {kind}; got shape {shape}.",
            argument=name,
            kind=kind,
            shape=array.shape,
        )
    if array.shape[0] == 0:
        raise InputError("{argument:is} empty; at least one sample is needed.", argument=name)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim == 2 and array.shape[1] < 2:
        raise InputError(
            "{argument} must have n_classes >= 2 columns; got {value}.",
            argument=name,
            value=array.shape[1],
        )
    source_dtype = array.dtype
    if source_dtype not in _WORKING_TYPES:
        # bool / integer one-hot rows and float16 are widened; float32 and float64 are kept.
        array = array.astype(np.float32 if source_dtype == np.float16 else np.float64)
    return array, source_dtype


def _raise_range(array: NDArray, name: str) -> None:
    flat = array.reshape(len(array), -1)
    bad_nan = np.isnan(flat).any(axis=1)
    if bad_nan.any():
        raise InputError(
            "{argument} must not contain NaN; row {row} does.",
            argument=name,
            row=int(np.flatnonzero(bad_nan)[0]),
        )
    if np.isinf(flat).any():
        row = int(np.flatnonzero(np.isinf(flat).any(axis=1))[0])
        raise InputError(
            "{argument} must not contain inf; row {row} does. If {argument:holds} logits, "
            "pass {logits_flag}.",
            argument=name,
            row=row,
        )
    outside = ((flat < 0) | (flat > 1)).any(axis=1)
    row = int(np.flatnonzero(outside)[0])
    raise InputError(
        "{argument} must hold probabilities in [0, 1]; row {row} has values from "
        "{low!r} to {high!r}. If {argument:holds} logits, pass {logits_flag}.",
        argument=name,
        row=row,
        low=float(flat[row].min()),
        high=float(flat[row].max()),
    )


class _NamedLabels(NamedTuple):
    """Labels given as class names, with the names of the classes (see :func:`accepts_classes`)."""

    names: ArrayLike
    classes: ArrayLike


def accepts_classes(metric: Function) -> Function:
    """Decorate a public metric ``metric(prob, labels, ..., classes=None)`` to take names.

    With ``classes`` (the class names in the column order of ``prob``), ``labels`` may be
    names: the wrapper hands them on, with ``classes``, to the validation every metric goes
    through (:func:`check_predictions` and :func:`check_labels`), which maps each name to
    its column.  ``classes`` is consumed here: the decorated body never sees it, so a metric
    gets names with nothing in its body, and any metric it calls gets them too.
    """

    @functools.wraps(metric)
    def with_classes(*args, **kwargs):
        classes = kwargs.pop("classes", None)
        if classes is not None:
            if len(args) > 1:
                args = (args[0], _NamedLabels(args[1], classes), *args[2:])
            elif "labels" in kwargs:
                kwargs["labels"] = _NamedLabels(kwargs["labels"], classes)
        return metric(*args, **kwargs)

    return cast(Function, with_classes)  # the signature of `metric`, `classes` in it


class MultiLabel(NamedTuple):
    """Checked multi-label predictions: (N, K) probabilities, 0/1 targets and the logits."""

    prob: NDArray | None
    """float32 or float64 probabilities, one independent probability per (row, label); None
    for logits checked with ``sigmoids=False`` (a fit that reads only the logits)."""
    targets: NDArray
    """The 0/1 label matrix as ``uint8``, of the shape of ``prob``."""
    log_odds: NDArray | None
    """The logits as given (``logits=True``), else None."""


_MULTILABEL_NAMES = "multilabel_calibration_error, multilabel_brier_score, multilabel_log_loss"


def check_multilabel(
    prob: ArrayLike,
    labels: ArrayLike,
    *,
    logits: object,
    names: tuple[str, str] = ("prob", "labels"),
    sigmoids: bool = True,
) -> MultiLabel:
    """Validate multi-label predictions: ``prob`` (N, K) in [0, 1] (or logits), ``labels`` 0/1.

    ``labels`` must be an (N, K) matrix of 0/1 (bool, integers or whole floats), one column
    per label of ``prob``; (N,) class labels are refused (they belong to the multiclass
    measures), and so is the one reading that cannot be told from a multiclass call: every
    row of ``labels`` holds exactly one 1 and every row of ``prob`` (probabilities) sums to
    1, i.e. one-hot labels beside a softmax.  With ``logits=True``, ``prob`` holds one
    logit per label and the probabilities are their sigmoids (never a softmax).  ``names``
    are the caller's names of the two arguments, those the messages give (a recalibrator's
    ``("X", "y")``).  ``sigmoids=False``: with logits, the probabilities are not computed
    (``prob`` is None), for a caller that reads only ``log_odds`` (a fit): one (N, K) array
    and a pass of ``expit`` saved.
    """
    logits = check_flag(logits, "logits")
    words = _argument_words(names)
    if isinstance(prob, (Scores, Predictions, Pairs, PendingPredictions)):
        raise InputTypeError(
            "{prob} must be an (N, K) array of per-label probabilities for a multi-label "
            "measure; got {value}. Scores (one score per row against a 0/1 target) is a "
            "one-label task: pass its values as a single column, np.reshape(s, (-1, 1)).",
            argument=names[0],
            value=type(prob).__name__,
            **words,
        )
    array = as_real_array(prob, names[0])
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise InputError(
            "{prob} must be a non-empty 2-D array of shape (n_samples, n_labels) for a "
            "multi-label measure; got shape {shape}. One label: pass a single column, "
            "np.reshape(p, (-1, 1)).",
            argument=names[0],
            shape=array.shape,
            **words,
        )
    if array.dtype not in _WORKING_TYPES:
        array = array.astype(np.float32 if array.dtype == np.float16 else np.float64)
    targets = _multilabel_targets(labels, array.shape, names)
    if logits:
        # one logit per label: warned about when every value lies in [0, 1], as 1-D logits
        log_odds = _predicted_logits(array.reshape(-1), names[0]).reshape(array.shape)
        prob = _scipy.special.expit(log_odds) if sigmoids else None
        return MultiLabel(prob, targets, log_odds)
    _check_range(array, names[0])
    _refuse_one_hot_softmax(array, targets, names)
    return MultiLabel(array, targets, None)


def check_label_scores(X: ArrayLike, n_labels: int, name: str = "X", *, logits: bool) -> NDArray:
    """The input of a fitted multi-label map: (N, ``n_labels``) finite scores, one per label.

    Logits, or (``logits=False``) probabilities in [0, 1]; never a 1-D array read as a
    binary logit (a recalibrator fitted on ``n_labels`` labels takes as many columns).
    """
    array, _ = _finite_logits(X, name)
    if array.ndim != 2 or array.shape[1] != n_labels:
        raise InputError(
            "{argument} must be an (N, {n_labels}) array of one {kind} per label, the labels "
            "of the fit; got shape {shape}.",
            argument=name,
            n_labels=n_labels,
            kind="logit" if logits else "probability",
            shape=array.shape,
        )
    if not logits:
        _check_range(array, name)
    return array


def _argument_words(names: tuple[str, str]) -> dict[str, Name]:
    """The fields that render ``{prob}`` and ``{labels}`` as the caller's ``names``."""
    return {"prob": Name(names[0]), "labels": Name(names[1])}


def _multilabel_targets(
    labels: ArrayLike, shape: tuple[int, int], names: tuple[str, str]
) -> NDArray:
    """The (N, K) 0/1 label matrix as ``uint8``; (N,) class labels refused."""
    words = _argument_words(names)
    array = as_real_array(labels, names[1])
    if array.ndim == 1 and shape[1] > 1:
        raise InputError(
            "{labels} must be an (N, K) 0/1 label matrix for a multi-label measure, one "
            "column per label of {prob}; got shape {shape}, one class per row. Class labels "
            "go to the multiclass measures (ECE, SCE, brier_score, negative_log_likelihood), "
            "whose {prob} is a softmax.",
            argument=names[1],
            shape=array.shape,
            **words,
        )
    if array.shape != shape:
        raise InputError(
            "{labels} must have the shape of {prob}, {expected}; got {shape}.",
            argument=names[1],
            expected=shape,
            shape=array.shape,
            **words,
        )
    if array.dtype == bool:
        return array.view(np.uint8)
    if not ((array == 0) | (array == 1)).all():
        raise InputError(
            "{labels} must hold only 0 and 1 (label absent or present); got {value!r}.",
            argument=names[1],
            value=array[(array != 0) & (array != 1)][0].item(),
            **words,
        )
    return array.astype(np.uint8)


def _refuse_one_hot_softmax(prob: NDArray, targets: NDArray, names: tuple[str, str]) -> None:
    """Refuse one-hot label rows beside probability rows that sum to 1: a multiclass call.

    The count of ones decides first (``N`` ones are needed for one per row), so a real
    multi-label matrix costs one count.
    """
    n_samples, n_labels = targets.shape
    if n_labels < 2 or np.count_nonzero(targets) != n_samples:
        return
    if not (np.count_nonzero(targets, axis=1) == 1).all():
        return
    if not _all_rows_are_probabilities(prob, ROW_SUM_TOLERANCE[prob.dtype]):
        return
    raise InputError(
        "{labels:holds} exactly one 1 per row and every row of {prob} sums to 1: one-hot "
        "labels beside a softmax, a multiclass task, not {n_labels} independent labels. "
        "For the multiclass measures pass the class indices, labels.argmax(axis=1), to "
        "ECE, SCE (the class-wise error: the multi-label macro ECE of these rows), "
        "brier_score or negative_log_likelihood; a multi-label model gives one sigmoid per "
        "label, whose rows do not sum to 1.",
        argument=names[1],
        n_labels=n_labels,
        **_argument_words(names),
    )


def top_label_pairs(
    prob, labels, logits, sample_weight, renormalize, *, scale_free: bool, weightless=False
) -> tuple[NDArray, NDArray, NDArray | None]:
    """Validated top-label (score, target) pairs and weights, rows of weight 0 removed.

    The validation of the measures of one score per row (the clinical summary, CORP,
    SmoothECE's curve) and of the tests of :mod:`calibration_toolbox.stats`: a plain 1-D
    ``prob`` is refused as by every top-label measure (``scale_free``: as
    :func:`check_sample_weight`); ``weightless=True`` keeps the rows of weight 0 (so that a
    message can name a row, or the caller weighs them itself).
    """
    checked = check_predictions(
        prob, labels, logits=logits, renormalize=renormalize, top_label=True
    )
    scores, targets = checked.top_label()
    weights = check_sample_weight(sample_weight, checked.n_samples, scale_free=scale_free)
    if weights is not None and not weightless and not weights.all():
        # Compressing three arrays by an all-true mask cost 0.8x np.sort of 1,000,000
        # float32 scores (the weighted KS test's), for nothing.
        positive = weights > 0
        scores, targets, weights = scores[positive], targets[positive], weights[positive]
    return scores, targets, weights


def check_labels(
    labels: ArrayLike,
    n_samples: int,
    n_classes: int,
    name: str = "labels",
    *,
    pairs: bool = False,
    classes: ArrayLike | None = None,
    hint: str = "",
    multilabel_hint: str = _MULTILABEL_NAMES,
) -> NDArray:
    """Validate integer class labels in ``[0, n_classes)`` and return them as ``intp``.

    With ``pairs=True`` the labels are the 0/1 targets of :class:`Scores` (``n_classes``
    is 2), and the messages say so.  With ``classes`` (or labels wrapped with their
    classes by :func:`accepts_classes`), the labels are class names, mapped to column
    indices by :func:`check_class_names`; without it, names are a ``TypeError`` that says
    to pass ``classes`` (where: ``hint``, e.g. " to the constructor").  A 2-D 0/1 matrix
    is refused with the advice of :func:`_one_hot_hint`, whose multi-label way out is
    ``multilabel_hint`` (the caller's: the multi-label measures by default, a
    recalibrator's ``multilabel=True``).
    """
    kind = "0/1 targets with Scores" if pairs else "class indices"
    array = as_real_array(_label_indices(labels, classes, n_classes, name, hint), name)
    if array.dtype == bool:
        array = array.astype(np.intp)
    if array.ndim == 2 and array.shape[1] == 1:
        array = array[:, 0]
    if array.ndim != 1:
        raise InputError(
            "{argument} must be a 1-D array of {kind}; got shape {shape}.{hint}",
            argument=name,
            kind=kind,
            shape=array.shape,
            hint=_one_hot_hint(array, name, multilabel_hint),
        )
    if array.shape[0] != n_samples:
        raise InputError(
            "{argument} must have one entry per row of the predictions ({n_samples}); "
            "got {value}.",
            argument=name,
            n_samples=n_samples,
            value=array.shape[0],
        )
    if not np.issubdtype(array.dtype, np.integer):
        _check_whole(array, name, kind)
    low, high = array.min(), array.max()
    if low < 0 or high >= n_classes:
        bad = (low if low < 0 else high).item()
        if pairs:
            raise InputError(
                "{argument} must be 0/1 targets {with_scores}; got {bad!r}.",
                argument=name,
                bad=bad,
            )
        raise InputError(
            "{argument} must lie in [0, {value}] for {n_classes} classes; got {bad!r}.",
            argument=name,
            value=n_classes - 1,
            n_classes=n_classes,
            bad=bad,
        )
    return array.astype(np.intp, copy=False)


def _one_hot_hint(array: NDArray, name: str, multilabel: str = _MULTILABEL_NAMES) -> str:
    """Advice for a 0/1 label matrix: one-hot labels (one 1 per row), or multi-label ones.

    A multiclass measure reads (N,) class indices: a one-hot matrix is refused with the
    argmax to pass, or with ``multilabel`` (what reads independent labels: the multi-label
    measures, or a recalibrator's ``multilabel=True``), since one 1 per row can be either;
    a 0/1 matrix with another count of ones per row is a multi-label target.
    """
    if array.ndim != 2 or array.size == 0 or array.dtype.kind not in "biuf":
        return ""
    if not ((array == 0) | (array == 1)).all():
        return ""
    if (array.sum(axis=1) == 1).all():
        return (
            f" One-hot labels of a multiclass task: pass {name}.argmax(axis=1), the index "
            f"of each row's 1; independent labels (one sigmoid each): {multilabel}."
        )
    return (
        " A 0/1 matrix with other than one 1 per row is a multi-label target (independent "
        f"labels, one sigmoid each): use {multilabel}."
    )


def _label_indices(
    labels: ArrayLike, classes: ArrayLike | None, n_classes: int, name: str, hint: str = ""
) -> ArrayLike:
    """Labels given as names mapped to their columns; other labels as they are."""
    if isinstance(labels, _NamedLabels):
        labels, classes = labels
    if classes is not None:
        return check_class_names(labels, classes, n_classes, name)
    if _holds_text(labels):
        _refuse_names(labels, name, hint)
    return labels


def _check_whole(array: NDArray, name: str, kind: str) -> None:
    """Raise unless every value of the float ``array`` is a finite whole number."""
    if not np.isfinite(array).all():
        raise InputError(
            "{argument} must be finite {kind}; got NaN or inf.", argument=name, kind=kind
        )
    whole = array == np.round(array)
    if not whole.all():
        bad = array[np.flatnonzero(~whole)[0]]
        raise InputError(
            "{argument} must be integer {kind}; got {value!r}.",
            argument=name,
            kind=kind,
            value=float(bad),
        )


def _text_kind(array: NDArray) -> bool:
    """Whether an array holds text: str, bytes or Python objects (a pandas column of str)."""
    return array.dtype.kind in "USO"


def _holds_text(labels: ArrayLike) -> bool:
    if isinstance(labels, np.ndarray):
        return _text_kind(labels)
    try:
        return _text_kind(np.asarray(labels))
    except (ValueError, TypeError):  # ragged: reported by the checks that follow
        return False


def _first_names(values: NDArray, count: int = 5) -> str:
    """The first ``count`` distinct names of ``values`` (sorted), for a message."""
    names = np.unique(values.astype(str).ravel())
    shown = ", ".join(repr(str(name)) for name in names[:count])
    return shown + (", ..." if len(names) > count else "")


def labels_from_file(
    labels: NDArray, classes: ArrayLike | None, n_classes: int, source: str, first_row: int = 0
) -> NDArray:
    """Labels read from a file: names mapped by ``classes``, numbers as they are.

    Without ``classes``, text cells that are all numbers (a CSV column read as text) become
    floats and names are a ``TypeError`` that says to pass ``classes`` (``--classes`` on the
    command line); the message starts with ``source`` (the file).
    """
    try:
        if classes is not None:
            if _text_kind(labels) and not _text_kind(np.asarray(classes)):
                classes = np.asarray(classes).astype(str)  # a CSV's cells are text
            return check_class_names(labels, classes, n_classes, first_row=first_row)
        if _text_kind(labels):
            try:
                return labels.astype(np.float64)
            except ValueError:
                _refuse_names(labels, "labels", _ON_THE_COMMAND_LINE)
    except (TypeError, ValueError) as error:
        raise within(error, "{source}: ", source=source) from None
    return labels


# The hint of labels read from a file: in the command line's words, its own options.
_ON_THE_COMMAND_LINE = " (`--classes` on the command line)"
#: The ``hint`` of :func:`check_labels` for the labels of a block (``fit_blocks``) or of a
#: Dask chunk, where ``classes`` is not used: names there are refused without "Pass classes".
LABELS_IN_PARTS = " (a block or a Dask chunk)"


def _refuse_names(labels: ArrayLike, name: str, hint: str = "") -> None:
    """The error for labels that are class names when no ``classes`` were given."""
    names = _first_names(np.asarray(labels))
    if hint == LABELS_IN_PARTS:
        raise InputTypeError(
            "{argument} must hold class indices in blocks and Dask chunks, where {classes} "
            "is not used; got class names ({names}). Map each name to its column first, "
            "e.g. {mapping} when the columns are in sorted order.",
            argument=name,
            names=names,
            mapping=Name("np.searchsorted(classes, names)"),
        )
    where = "{pass_classes}" if hint == _ON_THE_COMMAND_LINE else "Pass {classes}{hint}"
    raise InputTypeError(
        "{argument} must hold real numbers (class indices) unless {classes:is} given; got "
        f"class names ({{names}}). {where}: the class names in the column order "
        "of the predictions, e.g. {classes_example} when column 0 is 'cat'.",
        argument=name,
        names=names,
        hint=hint,
    )


def check_class_names(
    labels: ArrayLike,
    classes: ArrayLike,
    n_classes: int | None = None,
    name: str = "labels",
    *,
    first_row: int = 0,
) -> NDArray:
    """The column index of each label, looked up by name among ``classes``.

    ``classes`` names the classes in column order (``classes[k]`` is the class of column
    k); with ``classes`` every label is a name, whatever its type: strings (str, bytes, or
    objects, compared as ``str``) or numbers (``classes=[3, 7]`` maps the label 7 to column
    1).  Integer labels with string names are a ``TypeError``, not indices: a label is
    never silently read two ways.  One sort of the names and one binary search per label.

    Parameters
    ----------
    labels : array-like
        The labels, as names.
    classes : array-like, shape (K,)
        Distinct names of the classes, in column order.
    n_classes : int, optional
        Number of columns of the predictions; ``len(classes)`` must equal it.
    name : str
        Argument name used in error messages.
    first_row : int
        Row number of ``labels[0]`` in messages (a block of a larger file).

    Returns
    -------
    ndarray of intp
        The column index of each label, of the shape of ``labels``.

    Examples
    --------
    >>> from calibration_toolbox._validation import check_class_names
    >>> check_class_names(["dog", "cat", "dog"], ["cat", "dog"]).tolist()
    [1, 0, 1]
    """
    names = _class_names(classes, n_classes)
    values = np.asarray(labels)
    if _text_kind(values) != _text_kind(names):
        raise InputTypeError(
            "{argument} are looked up by name in {classes} when it is given; got {labels_dtype} "
            "labels and {names_dtype} class names. Integer labels are column indices "
            "already: pass {classes} only with labels that are names.",
            argument=name,
            labels_dtype=values.dtype,
            names_dtype=names.dtype,
        )
    if _text_kind(values):
        values = values.astype(str)
    order = np.argsort(names, kind="stable")
    sorted_names = names[order]
    where = np.minimum(np.searchsorted(sorted_names, values), len(names) - 1)
    found = sorted_names[where] == values
    if not found.all():
        row = int(np.flatnonzero(~found.ravel())[0])
        raise InputError(
            "{argument:holds} {label!r} (row {row}), which is not in {classes} ({names}).",
            argument=name,
            row=first_row + row,
            label=values.ravel()[row].item(),
            names=_first_names(names, 8),
        )
    return order[where].astype(np.intp, copy=False)


def _class_names(classes: ArrayLike, n_classes: int | None) -> NDArray:
    """``classes`` as a 1-D array of distinct names (str when they are text)."""
    if isinstance(classes, str):
        raise InputTypeError(
            "{classes} must be a sequence of class names, one per column; got the string "
            "{given} (split it: {split}).",
            argument="classes",
            given=_describe(classes),
            split=_describe(classes.split(",")),
        )
    names = np.asarray(classes)
    if _text_kind(names):
        names = names.astype(str)
    elif names.dtype.kind not in "biuf":
        raise InputTypeError(
            "{classes} must hold names (str) or numbers; got {value}.",
            argument="classes",
            value=_describe(classes),
        )
    if names.ndim != 1 or len(names) == 0:
        raise InputError(
            "{classes} must be a 1-D sequence of class names; got {value}.",
            argument="classes",
            value=_describe(classes),
        )
    if n_classes is not None and len(names) != n_classes:
        raise InputError(
            "{classes} must name every column of the predictions ({n_classes}), in order; "
            "got {value} names.",
            argument="classes",
            n_classes=n_classes,
            value=len(names),
        )
    sorted_names = np.sort(names)
    repeated = sorted_names[1:][sorted_names[1:] == sorted_names[:-1]]
    if len(repeated):
        raise InputError(
            "{classes} must be distinct names; {value!r} repeats.",
            argument="classes",
            value=repeated[0].item(),
        )
    return names


def optional_class_names(value: object, name: str) -> object:
    """Checker of a ``classes`` setting: ``None``, or distinct names (str or numbers)."""
    if value is None:
        return value
    if not isinstance(value, str) and np.ndim(value) != 1:
        raise InputTypeError(
            "{argument} must be a sequence of class names (str or numbers), one per column; "
            "got {value}.",
            argument=name,
            value=_describe(value),
        )
    _class_names(value, None)
    return value


#: Weights whose largest value lies within 2**±256 are used as given by a scale-free measure:
#: their sum over 2**60 rows, its square and their products with scores as small as 2**-256
#: stay normal float64 numbers, and no copy is made (800,000 float64 weights are 6.1 MiB).
_SAFE_EXPONENT = 256


def check_sample_weight(
    sample_weight: ArrayLike | None, n_samples: int, *, scale_free: bool = False
) -> NDArray | None:
    """Validate non-negative finite weights with a positive sum; ``None`` stays ``None``.

    ``scale_free=True`` is for a measure that only the weights' ratios change: weights whose
    largest value lies outside 2**±256 are returned multiplied by the power of two that
    brings it into [0.5, 1). That is exact (the measure is unchanged to the last bit), keeps
    their sum finite (weights of 1e308) and lifts subnormal weights (5e-324) to normal
    numbers, whose products with the scores keep their digits. Otherwise (a measure that
    counts weights as rows: equal-mass edges, debiasing, Platt's targets; or weights summed
    over blocks) weights that float64 cannot carry through are refused: a sum that
    overflows, or only subnormal values.
    """
    if sample_weight is None:
        return None
    array = as_real_array(sample_weight, "sample_weight")
    if array.ndim != 1 or array.shape[0] != n_samples:
        raise InputError(
            "{sample_weight} must be a 1-D array with one weight per sample ({n_samples}); "
            "got shape {shape}.",
            argument="sample_weight",
            n_samples=n_samples,
            shape=array.shape,
        )
    array = array.astype(np.float64, copy=False)
    if not np.isfinite(array).all():
        raise InputError(
            "{sample_weight} must be finite; got NaN or inf.", argument="sample_weight"
        )
    if array.min() < 0:
        raise InputError(
            "{sample_weight} must be non-negative; got {value!r}.",
            argument="sample_weight",
            value=float(array.min()),
        )
    largest = array.max()
    if not largest > 0:
        raise InputError(
            "{sample_weight} must have a positive sum; got all zeros.", argument="sample_weight"
        )
    exponent = np.frexp(largest)[1]
    if scale_free and abs(exponent) > _SAFE_EXPONENT:
        return np.ldexp(array, -exponent)
    _check_representable(array, largest)
    return array


def _check_representable(weights: NDArray, largest: float) -> None:
    """Refuse weights counted as rows that float64 cannot carry through the sums."""
    with np.errstate(over="ignore"):
        total = weights.sum()
    if not np.isfinite(total):
        raise InputError(
            "{sample_weight} sums to more than float64 holds (largest weight {value!r}); "
            "this measure counts weights as rows, so their scale matters: divide them by a "
            "common factor first.",
            argument="sample_weight",
            value=float(largest),
        )
    if largest < np.finfo(np.float64).tiny:
        raise InputError(
            "{sample_weight} holds only subnormal numbers (largest {value!r}, below "
            "float64's smallest normal number {tiny!r}), whose products with the scores lose "
            "their digits; this measure counts weights as rows, so their scale matters: "
            "multiply them by a common factor first.",
            argument="sample_weight",
            value=float(largest),
            tiny=float(np.finfo(np.float64).tiny),
        )


def check_flag(value: object, name: str) -> bool:
    """Return ``value`` as a ``bool`` if it is ``True`` or ``False`` (NumPy's included)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InputTypeError(
            "{argument} must be True or False; got {value}.", argument=name, value=_describe(value)
        )
    return bool(value)


def check_random_state(random_state: object) -> np.random.Generator:
    """A generator from None, an integer seed or a ``numpy.random.Generator``."""
    try:
        return np.random.default_rng(random_state)
    except (TypeError, ValueError):
        raise InputTypeError(
            "{random_state} must be None, an integer seed or a numpy.random.Generator; "
            "got {value}.",
            argument="random_state",
            value=type(random_state).__name__,
        ) from None


#: Why a caller that passes no row count cannot resolve ``bins="auto"`` (the default reason).
NO_ROW_COUNT = "this call does not see the rows before its bins are fixed"


def auto_bin_count(n_samples: int) -> int:
    """The cube-root rule: the smallest integer ``B >= 1`` with ``B ** 3 >= n_samples``.

    That is ``ceil(N ** (1/3))`` in exact arithmetic, the rule scikit-learn's
    ``calibration_curve(n_bins="cube_root")`` adopted in 2026 (scikit-learn PR #33856,
    with ``N = len(y_true)``, the rows), whose ``int(np.ceil(n ** (1/3)))`` gives the same
    count for every N up to 10**7.  The last step is on integers, so that a perfect cube
    gives its root wherever the floating-point root rounds.
    """
    count = int(np.ceil(np.cbrt(n_samples)))
    # np.cbrt is within a unit in the last place of the root: step to the exact count.
    if count > 1 and (count - 1) ** 3 >= n_samples:
        count -= 1
    elif count**3 < n_samples:
        count += 1
    return max(count, 1)


def _resolved_bins(bins: str, n_samples: int | None, unknown_rows: str) -> int:
    """The bin count of ``bins="auto"`` for ``n_samples`` rows; any other string refused."""
    if bins != "auto":
        raise InputError(
            "{bins} must be an integer >= 1, an increasing array of edges from 0 to 1, or "
            "'auto' (the cube-root rule, ceil(N ** (1/3)) for N rows); got {value!r}.",
            argument="bins",
            value=bins,
        )
    if n_samples is None:
        raise InputError(
            "{bins}='auto' chooses ceil(N ** (1/3)) bins for N rows, and {why}; pass a "
            "number of bins or an array of edges.",
            argument="bins",
            why=Text(unknown_rows),
        )
    return auto_bin_count(n_samples)


def check_bins_parameter(bins: object, name: str = "bins") -> object:
    """An estimator's ``bins``: ``'auto'`` as given (its fit resolves it), else checked edges.

    The checker of a parameter fixed before the rows are seen (``HistogramBinning``): the
    fit calls :func:`check_bins` with its ``n_samples``.
    """
    if isinstance(bins, str) and bins == "auto":
        return bins
    return check_bins(bins, name)


def check_bins(
    bins: object,
    name: str = "bins",
    *,
    adaptive_bins: bool = False,
    n_samples: int | None = None,
    unknown_rows: str = NO_ROW_COUNT,
) -> NDArray:
    """Return bin edges: ``linspace(0, 1, bins + 1)`` for an int, or validated edges.

    ``bins="auto"`` is the cube-root rule (:func:`auto_bin_count`) of the ``n_samples``
    rows of the call (rows, not the sum of the weights: the count, like the measure, does
    not change when every weight is doubled); a caller that cannot know ``n_samples`` yet
    passes None and, in ``unknown_rows``, the reason the error gives.  Equal-mass bins
    (``adaptive_bins``) take their edges from the data: only a number of bins (or
    ``'auto'``) is accepted then.  Called as ``check(value, name)``, it is also the
    checker of an estimator's ``bins`` parameter (the messages name `bins`, the only such
    parameter).
    """
    if isinstance(bins, str):
        bins = _resolved_bins(bins, n_samples, unknown_rows)
    if adaptive_bins and not _is_integer(bins):
        raise InputTypeError(
            "{bins} must be an integer >= 1 with adaptive_bins=True; got {value!r}.",
            argument="bins",
            value=bins,
        )
    if isinstance(bins, (bool, np.bool_)):
        raise InputTypeError(
            "{bins} must be an integer >= 1 or an array of edges; got {value!r}.",
            argument="bins",
            value=bins,
        )
    if isinstance(bins, numbers.Integral):
        if bins < 1:
            raise InputError(
                "{bins} must be an integer >= 1 or an increasing array of edges in [0, 1]; "
                "got {value!r}.",
                argument="bins",
                value=bins,
            )
        _check_bin_count(int(bins), repr(bins))
        return np.linspace(0.0, 1.0, int(bins) + 1)
    if isinstance(bins, numbers.Real):
        raise InputTypeError(
            "{bins} must be an integer >= 1 or an increasing array of edges in [0, 1]; "
            "got {value!r}.",
            argument="bins",
            value=bins,
        )
    edges = as_real_array(bins, "bins").astype(np.float64)
    if (
        edges.ndim != 1
        or edges.size < 2
        or edges[0] != 0
        or edges[-1] != 1
        or not (np.diff(edges) > 0).all()
    ):
        raise InputError(
            "{bins} must be an integer >= 1 or an increasing array of edges from 0 to 1; "
            "got {value}.",
            argument="bins",
            value=_describe(bins),
        )
    _check_bin_count(edges.size - 1, _describe(bins))
    return edges


def _check_bin_count(n_bins: int, given: str) -> None:
    """Refuse more bins than :data:`~calibration_toolbox._limits.MAX_BINS`, before allocating."""
    if n_bins > MAX_BINS:
        raise InputError(
            "{bins} must be at most {limit:,} bins (the limit of a binned measure's table); "
            "got {value}.",
            argument="bins",
            limit=MAX_BINS,
            value=given,
        )


def check_table_cells(n_sets: int, n_bins: int) -> None:
    """Refuse a table of more cells than :data:`~calibration_toolbox._limits.MAX_TABLE_CELLS`.

    ``n_sets`` score sets (one per class of a class-wise measure, or one) of ``n_bins``
    bins each: checked before the table is allocated, naming ``bins``.
    """
    if n_sets * n_bins > MAX_TABLE_CELLS:
        raise InputError(
            "{bins} times the score sets must be at most {limit:,} table cells (about 400 "
            "MiB of sums); got {n_bins:,} bins for each of {n_sets:,} classes, "
            "{cells:,} cells: use fewer bins.",
            argument="bins",
            limit=MAX_TABLE_CELLS,
            n_bins=n_bins,
            n_sets=n_sets,
            cells=n_sets * n_bins,
        )


def check_norm(norm: object) -> float:
    """Return the norm as 1.0, 2.0 or inf; accepts 1, 2, 'l1', 'l2', 'inf', 'max', np.inf."""
    names = {"l1": 1.0, "l2": 2.0, "inf": np.inf, "max": np.inf, "linf": np.inf}
    if isinstance(norm, str) and norm.lower() in names:
        return names[norm.lower()]
    if _is_real_number(norm):
        if float(norm) in (1.0, 2.0, np.inf):
            return float(norm)
    raise InputError(
        "{norm} must be 1, 2 or 'inf' (also 'l1', 'l2', 'max'); got {value!r}.",
        argument="norm",
        value=norm,
    )


def check_top_k(top_k_classes: object, n_classes: int) -> int | None:
    """Return the number of top classes kept per row, or ``None`` for all classes."""
    if isinstance(top_k_classes, str):
        if top_k_classes == "all":
            return None
        raise InputError(
            "{top_k_classes} must be an integer in [1, {n_classes}] or 'all'; got {value!r}.",
            argument="top_k_classes",
            n_classes=n_classes,
            value=top_k_classes,
        )
    if top_k_classes is None:
        return None
    if _is_integer(top_k_classes):
        if 1 <= top_k_classes <= n_classes:
            return None if top_k_classes == n_classes else int(top_k_classes)
        raise InputError(
            "{top_k_classes} must be an integer in [1, {n_classes}] or 'all'; got {value!r}.",
            argument="top_k_classes",
            n_classes=n_classes,
            value=top_k_classes,
        )
    raise InputTypeError(
        "{top_k_classes} must be an integer in [1, {n_classes}] or 'all'; got {value}.",
        argument="top_k_classes",
        n_classes=n_classes,
        value=_describe(top_k_classes),
    )


def _check_choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of the string ``choices`` (see :func:`choice`)."""
    expected = " or ".join(repr(choice) for choice in choices)
    if not isinstance(value, str):
        raise InputTypeError(
            "{argument} must be {expected}; got {value}.",
            argument=name,
            expected=expected,
            value=_describe(value),
        )
    if value not in choices:
        raise InputError(
            "{argument} must be {expected}; got {value!r}.",
            argument=name,
            expected=expected,
            value=value,
        )
    return value


def check_fraction(value: object, name: str) -> float:
    """Return ``value`` as a float in [0, 1) (a threshold, a clip level).

    Examples
    --------
    >>> from calibration_toolbox._validation import check_fraction
    >>> check_fraction(0.01, "thresholding")
    0.01
    """
    if not _is_real_number(value):
        raise InputTypeError(
            "{argument} must be a number in [0, 1); got {value}.",
            argument=name,
            value=_describe(value),
        )
    number = float(value)
    if not 0 <= number < 1:
        raise InputError(
            "{argument} must be a number in [0, 1); got {value!r}.", argument=name, value=value
        )
    return number


# -- parameter checkers ----------------------------------------------------------------------
# An estimator declares each ``__init__`` parameter once with one of these (see
# ``Recalibrator._parameters``).  A checker is called as ``check(value, name)`` and returns
# the checked value; a wrong type raises ``TypeError``, a wrong value ``ValueError``, and
# the message names the parameter.
def _is_real_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _is_integer(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def nonnegative_number(value: object, name: str) -> float:
    """A finite number ``>= 0``, as a float."""
    if not _is_real_number(value):
        raise InputTypeError(
            "{argument} must be a non-negative number; got {value}.",
            argument=name,
            value=_describe(value),
        )
    if not (np.isfinite(value) and value >= 0):
        raise InputError(
            "{argument} must be a non-negative finite number; got {value!r}.",
            argument=name,
            value=value,
        )
    return float(value)


def positive_number(value: object, name: str) -> float:
    """A finite number ``> 0``, as a float."""
    if not _is_real_number(value):
        raise InputTypeError(
            "{argument} must be a positive number; got {value}.",
            argument=name,
            value=_describe(value),
        )
    if not (np.isfinite(value) and value > 0):
        raise InputError(
            "{argument} must be a positive finite number; got {value!r}.",
            argument=name,
            value=value,
        )
    return float(value)


def number_between(low: float, high: float):
    """Checker of a number in the open interval ``(low, high)``, returned as a float."""

    def check(value: object, name: str) -> float:
        if not _is_real_number(value):
            raise InputTypeError(
                "{argument} must be a number in ({low:g}, {high:g}); got {value!r}.",
                argument=name,
                low=low,
                high=high,
                value=value,
            )
        if not low < value < high:
            raise InputError(
                "{argument} must be a number in ({low:g}, {high:g}); got {value!r}.",
                argument=name,
                low=low,
                high=high,
                value=value,
            )
        return float(value)

    return check


def integer_at_least(smallest: int):
    """Checker of an integer ``>= smallest`` (NumPy integers included), returned as an int."""

    def check(value: object, name: str) -> int:
        if not _is_integer(value):
            raise InputTypeError(
                "{argument} must be an integer >= {smallest}; got {value}.",
                argument=name,
                smallest=smallest,
                value=_describe(value),
            )
        if value < smallest:
            raise InputError(
                "{argument} must be an integer >= {smallest}; got {value!r}.",
                argument=name,
                smallest=smallest,
                value=value,
            )
        return int(value)

    return check


def optional_integer_at_least(smallest: int):
    """Checker of ``None`` or an integer ``>= smallest``."""
    integer = integer_at_least(smallest)

    def check(value: object, name: str) -> int | None:
        if value is None:
            return None
        try:
            return integer(value, name)
        except (TypeError, ValueError) as exc:
            kind = InputTypeError if isinstance(exc, TypeError) else InputError
            raise kind(
                "{argument} must be None or an integer >= {smallest}; got {value}.",
                argument=name,
                smallest=smallest,
                value=_describe(value),
            ) from None

    return check


def choice(*options: str):
    """Checker of one of the strings ``options``: ``choice("a", "b")(value, name)``."""

    def check(value: object, name: str) -> str:
        return _check_choice(value, name, options)

    return check


def number_pair(requirement: str, holds):
    """Checker of a pair of numbers ``(low, high)`` for which ``holds(low, high)`` is true.

    ``requirement`` says what ``holds`` tests, for the error message; the pair is returned
    as a tuple of floats.
    """

    def check(value: object, name: str) -> tuple[float, float]:
        try:
            low, high = value
        except (TypeError, ValueError):
            low = high = None
        if not (_is_real_number(low) and _is_real_number(high)):
            raise InputTypeError(
                "{argument} must be a pair of numbers (low, high); got {value}.",
                argument=name,
                value=_describe(value),
            )
        if not holds(float(low), float(high)):
            raise InputError(
                "{argument} must satisfy {requirement}; got {value}.",
                argument=name,
                requirement=requirement,
                value=_describe(value),
            )
        return float(low), float(high)

    return check
