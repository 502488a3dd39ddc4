"""General Calibration Error: one engine, named metrics as one-line calls.

Data flow: validate -> extract the score set (top-r or all entries, thresholding) ->
assign bins -> weighted per-(group, bin) sums (:class:`CalibrationTable`) -> reduce with
the norm.  The conventions are those of the README's *Conventions* section.
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass
from typing import Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _arrays, _dask
from calibration_toolbox import _validation as iv
from calibration_toolbox._docstrings import with_fragments
from calibration_toolbox._errors import InputError, InputTypeError, Name
from calibration_toolbox._rows import (
    ALL_ENTRIES_BLOCK_ELEMENTS,
    BINNING_BATCH_ENTRIES,
    CACHE_BLOCK_ELEMENTS,
    HAND_OVER_ROWS,
    RowSummary,
    block_rows,
    canonical_blocks,
    canonical_rows,
    row_blocks,
)
from calibration_toolbox.binning import (
    BinSums,
    BlockTotals,
    adaptive_edges,
    add_counts,
    assign_bins,
    bin_sums,
    grouped_searchsorted,
    is_uniform,
    sort_rows_with_flags,
)
from calibration_toolbox.scores import PredictionsLike, Scores

__all__ = [
    "ACE",
    "CWCE",
    "ECE",
    "GCE",
    "MCE",
    "OCE",
    "RMSCE",
    "SCE",
    "TACE",
    "TCE",
    "UCE",
    "CalibrationTable",
    "TopLabelECE",
    "ToprCE",
    "calibration_table",
    "expected_calibration_error",
]

Norm = Union[int, float, str]


# -- Shared docstring text of the public functions ---------------------------------------
# Each token below stands on a line of its own in a docstring and is replaced by its text
# (already indented for a numpydoc section) by `_shared_docstring`.
_DOC_FRAGMENTS = {
    "{predictions}": """\
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``; the measure
        bins each row's largest entry against whether its class is the label.  Or
        ``Scores(s)``: one score per row, binned as given against 0/1 ``labels`` (an LLM's
        confidence and whether its answer was right; P(event) and whether it happened),
        log-odds with ``logits=True``.  A plain 1-D array is refused as ambiguous: pass
        ``Scores(p)``, or ``np.column_stack([1 - p, p])`` for a binary classifier.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
""",
    "{gce_predictions}": """\
    prob : array-like, shape (N, K) or (N,), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``.  A 1-D array
        is P(y = 1) of a binary task (two columns ``[1 - p, p]``) for the class-wise
        options, and refused as ambiguous with ``top_k_classes=1``.  ``Scores(s)``: one
        score per row binned as given against 0/1 ``labels``, with
        ``class_conditional=False`` and ``top_k_classes=1`` only (see
        :class:`~calibration_toolbox.Scores`).
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
""",
    "{class_wise_predictions}": """\
    prob : array-like, shape (N, K) or (N,)
        Predicted probabilities (rows sum to 1), or P(y = 1) of a binary task (two columns
        ``[1 - p, p]``); logits with ``logits=True``.  Not ``Scores``: a class-wise
        measure needs one column per class.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``.
""",
    "{equal_width_bins}": """\
    bins : int or array-like, default 15
        Number of equal-width bins, or their increasing edges from 0 to 1.  Bins are
        ``(lo, hi]`` with 0 in the first bin.
""",
    "{equal_mass_bins}": """\
    bins : int, default 15
        Number of equal-mass bins of each class (Nixon et al.'s rule, see :func:`GCE`).
""",
    "{either_bins}": """\
    bins : int or array-like, default 15
        Number of bins, or increasing equal-width edges from 0 to 1 (as :func:`ECE`).
    adaptive_bins : bool, default False
        Equal-mass bins of the confidences (Nixon et al.'s rule, see :func:`GCE`).
""",
    "{keywords}": """\
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.  Never guessed.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights; every count becomes a weighted count.
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first (into a new array), to accept
        probabilities rounded when saved, e.g. to a CSV.  Values must still lie in [0, 1]
        and every row must have a positive sum.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob`` (``classes[k]`` names column k);
        ``labels`` are then names, looked up among them: ``ECE(prob, ["dog", "cat"],
        classes=["cat", "dog"])`` equals ``ECE(prob, [1, 0])``.  With ``classes`` every
        label is a name (numbers too: ``classes=[3, 7]`` maps the label 7 to column 1);
        integer labels with string names are a ``TypeError``, a name not in ``classes``
        a ``ValueError`` naming it and its row, and ``classes`` must name every column.
""",
    "{returns}": """\
    Returns
    -------
    float
        The calibration error, in [0, 1].
""",
}


_shared_docstring = with_fragments(_DOC_FRAGMENTS)


@dataclass(frozen=True)
class CalibrationTable:
    """Per-(group, bin) weighted sums behind every binned calibration metric.

    A *group* is one score set: the pooled set (``class_conditional=False``, one group) or
    the set of class ``k`` (``class_conditional=True``, group ``k``).  The sums are
    additive: tables of disjoint batches with the same edges add up.

    Attributes
    ----------
    edges : ndarray, shape (n_groups, n_bins + 1)
        Bin edges of each group.  Equal-width bins are ``(edges[b], edges[b + 1]]`` with
        0 in the first bin; equal-mass bins are ``[edges[b], edges[b + 1])`` with 1 in the
        last bin (their outer edges are 0 and 1).
    counts : ndarray, shape (n_groups, n_bins)
        Weighted number of scores in each bin.
    score_sums : ndarray, shape (n_groups, n_bins)
        Weighted sum of the scores (confidences; with ``Scores``, the scores) in each bin.
    target_sums : ndarray, shape (n_groups, n_bins)
        Weighted sum of the targets (1 where the class is the label; with ``Scores``, the
        0/1 labels) in each bin.
    n_classes : int
        Number of classes K (2 for ``Scores``: a 0/1 target); class-conditional errors
        are averaged over all K classes.
    class_conditional : bool
        Whether there is one group per class.
    adaptive_bins : bool
        Whether the bins are equal-mass.
    top_k_classes : int or None, default 1
        Entries kept per row (``None``: all K entries, ``top_k_classes='all'``).
    thresholding : float, default 0.0
        Entries ``p <= thresholding`` were dropped (0: none).
    scores : bool, default False
        Whether the table bins :class:`~calibration_toolbox.Scores` (one score per row
        against a 0/1 target) rather than the entries of a probability matrix.

    Notes
    -----
    ``table_a + table_b`` is the table of the two batches together, for tables built with
    the same edges and options (else ``ValueError`` naming the option that differs);
    ``sum(tables)`` works too.  The float sums of the result equal those of one call on
    the concatenated rows up to rounding (the order of the additions differs); counts
    without weights are exact.  Equal-mass tables do not add: their edges depend on the
    rows.  One call sums fixed-edge tables per canonical row block of
    ``R = max(1, 2**22 // K)`` rows, the blocks in turn; tables of batches that are whole
    blocks, added in block order, are that call's bit for bit, and
    :class:`~calibration_toolbox.CalibrationAccumulator` (any batches) and Dask arrays
    (any chunks) give it bit for bit.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import calibration_table
    >>> prob = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
    >>> labels = np.array([0, 1, 1, 0])
    >>> halves = [
    ...     calibration_table(prob[rows], labels[rows], bins=2, class_conditional=False)
    ...     for rows in (slice(0, 2), slice(2, 4))
    ... ]
    >>> (halves[0] + halves[1]).calibration_error()
    0.25
    """

    edges: NDArray
    counts: NDArray
    score_sums: NDArray
    target_sums: NDArray
    n_classes: int
    class_conditional: bool
    adaptive_bins: bool
    top_k_classes: int | None = 1
    thresholding: float = 0.0
    scores: bool = False

    def __add__(self, other: object) -> CalibrationTable:
        """The table of both batches: the sums added, after checking the tables match."""
        if not isinstance(other, CalibrationTable):
            return NotImplemented
        _check_addable(self, other)
        return dataclasses.replace(
            self,
            counts=self.counts + other.counts,
            score_sums=self.score_sums + other.score_sums,
            target_sums=self.target_sums + other.target_sums,
        )

    def __radd__(self, other: object) -> CalibrationTable:
        """``0 + table`` is ``table``, so that ``sum(tables)`` works."""
        if isinstance(other, numbers.Integral) and not isinstance(other, bool) and other == 0:
            return self
        return NotImplemented

    @property
    def n_groups(self) -> int:
        """Number of score sets (1 when pooled, K when class-conditional)."""
        return self.counts.shape[0]

    @property
    def n_bins(self) -> int:
        """Number of bins per group."""
        return self.counts.shape[1]

    @property
    def set_sizes(self) -> NDArray:
        """Weighted number of scores in each group, shape ``(n_groups,)``."""
        return self.counts.sum(axis=1)

    def _mean(self, sums: NDArray) -> NDArray:
        out = np.full(sums.shape, np.nan)
        np.divide(sums, self.counts, out=out, where=self.counts > 0)
        return out

    @property
    def mean_score(self) -> NDArray:
        """Mean score (confidence) per bin; NaN for an empty bin."""
        return self._mean(self.score_sums)

    @property
    def mean_target(self) -> NDArray:
        """Mean target (accuracy) per bin; NaN for an empty bin."""
        return self._mean(self.target_sums)

    def calibration_error(
        self, norm: Norm = 1, debias: bool = False, *, part: str = "both", average: str = "macro"
    ) -> float:
        r"""Reduce the table to the calibration error for ``norm`` 1, 2 or 'inf'.

        Per group: ``E = sum_b (n_b / n) |mean target_b - mean score_b|^p`` (the largest
        gap over non-empty bins for the max norm).  Pooled: ``E^(1/p)``; class-conditional:
        ``(sum_k E_k / K)^(1/p)`` (the largest ``E_k`` for the max norm), where a class with
        no scores contributes 0 and still counts in K.

        Parameters
        ----------
        norm : {1, 2, 'inf'}, default 1
            Norm over the bins; also ``'l1'``, ``'l2'``, ``'max'`` and ``np.inf``.
        debias : bool, default False
            With ``norm=2``, the debiased estimate of the squared error (Broecker 2012;
            Ferro & Fricker 2012; Kumar et al. 2019): per bin
            ``gap_b^2 - acc_b (1 - acc_b) / (n_b - 1)``, 0 for a bin with ``n_b < 2``,
            where ``acc_b`` is the mean target and ``n_b`` the (weighted) count, so that
            ``E = sum_b (n_b / n) (...)`` is unbiased for the squared error of the bins;
            each set's ``E`` is clipped at 0 (as Kumar et al.'s ``calibration`` package
            does per class) before the average and the square root.  With weights, ``n_b``
            is the weighted count: integer weights equal duplicated rows, but scaling all
            weights changes the value.  Any other norm: ``ValueError``.
        part : {'both', 'over', 'under'}, default 'both'
            ``'over'`` keeps only the bins whose mean score is above their mean target
            (over-confident), ``'under'`` only those below; the other bins count as gap 0.
            For ``norm=1`` the two parts add up to the whole error.  Not with ``debias``.
        average : {'macro', 'weighted'}, default 'macro'
            How class-conditional sets are averaged: ``1 / K`` each (the GCE rule), or by
            each set's share ``n_k / sum_k n_k`` of the scores (Gupta & Ramdas's top-label
            ECE when the groups are the predicted classes).  Pooled tables ignore it.

        Returns
        -------
        float
            The calibration error.
        """
        p = iv.check_norm(norm)
        debias = _check_debias(debias, p)
        part = iv.check_choice(part, "part", ("both", "over", "under"))
        average = iv.check_choice(average, "average", ("macro", "weighted"))
        if debias and part != "both":
            raise InputError(
                "{debias=True} is for the whole error (part='both'); got {part!r}.",
                argument="debias",
                part=part,
            )
        return float(
            _reduce_tables(
                self.counts,
                self.score_sums,
                self.target_sums,
                self.n_classes,
                self.class_conditional,
                p,
                debias=debias,
                part=part,
                average=average,
            )
        )

    def intervals(
        self, method: str = "wilson", confidence_level: float = 0.95
    ) -> tuple[NDArray, NDArray]:
        """Confidence interval of every bin's accuracy (the reliability diagram's error bars).

        See :func:`calibration_toolbox.stats.bin_intervals`; ``(low, high)`` arrays of shape
        ``(n_groups, n_bins)``, NaN for an empty bin.
        """
        from calibration_toolbox.stats import bin_intervals  # stats imports this module

        return bin_intervals(self, method=method, confidence_level=confidence_level)

    def consistency_bands(self, confidence_level: float = 0.95) -> tuple[NDArray, NDArray]:
        """Range of every bin's accuracy expected if the bin were calibrated.

        See :func:`calibration_toolbox.stats.consistency_bands`; ``(low, high)`` arrays of
        shape ``(n_groups, n_bins)``, NaN for an empty bin.
        """
        from calibration_toolbox.stats import consistency_bands  # stats imports this module

        return consistency_bands(self, confidence_level=confidence_level)


def _check_addable(first: CalibrationTable, second: CalibrationTable) -> None:
    """Raise ``ValueError`` naming what differs unless the two tables can be added."""
    if first.adaptive_bins or second.adaptive_bins:
        raise ValueError(
            "equal-mass tables (adaptive_bins=True) do not add: their edges depend on the "
            "rows of each batch. Build the tables with fixed edges (bins=15, "
            "bins=np.linspace(0, 1, 16) or any increasing array of edges from 0 to 1), or "
            "stream the batches through CalibrationAccumulator."
        )
    _check_same_options(
        first,
        second,
        ("n_classes", "class_conditional", "top_k_classes", "thresholding", "scores"),
        "CalibrationTables add",
    )
    if first.edges.shape != second.edges.shape or not np.array_equal(first.edges, second.edges):
        raise ValueError(
            "CalibrationTables add only when built with the same bin edges; got "
            f"{first.n_bins} and {second.n_bins} bins"
            + (" with different edges." if first.n_bins == second.n_bins else ".")
        )


def _check_same_options(first, second, options: tuple[str, ...], what: str) -> None:
    """Raise ``ValueError`` naming the first attribute of ``options`` that differs."""
    for option in options:
        values = getattr(first, option), getattr(second, option)
        if values[0] != values[1]:
            raise InputError(
                "{what} only when built with the same options; {argument} differs: "
                "{first!r} and {second!r}.",
                argument=option,
                what=what,
                first=values[0],
                second=values[1],
            )


def _reduce_tables(
    counts: NDArray,
    score_sums: NDArray,
    target_sums: NDArray,
    n_classes: int,
    class_conditional: bool,
    p: float,
    *,
    debias: bool = False,
    part: str = "both",
    average: str = "macro",
) -> NDArray:
    """The reduction of :meth:`CalibrationTable.calibration_error` on stacked tables.

    The arrays have shape ``(..., n_groups, n_bins)`` and the options are checked; the
    result has the leading shape (``calibration_toolbox.stats.bootstrap`` reduces all its
    resampled tables at once).
    """
    gaps = _bin_gaps(counts, score_sums, target_sums, part)
    if p == np.inf:
        return gaps.max(axis=(-2, -1))
    sizes = counts.sum(axis=-1)
    if debias:
        weighted = _debiased_terms(counts, target_sums, gaps).sum(axis=-1)
    else:
        weighted = (counts * gaps**p).sum(axis=-1)
    per_group = np.zeros_like(sizes)
    np.divide(weighted, sizes, out=per_group, where=sizes > 0)
    if debias:
        np.maximum(per_group, 0.0, out=per_group)
    return _class_average(per_group, sizes, n_classes, class_conditional, average) ** (1 / p)


def _bin_gaps(counts: NDArray, score_sums: NDArray, target_sums: NDArray, part: str) -> NDArray:
    """``|mean target - mean score|`` per bin (0 when empty or not of the ``part``)."""
    differences = target_sums - score_sums  # > 0: under-confident
    if part == "over":
        differences = np.minimum(differences, 0.0)
    elif part == "under":
        differences = np.maximum(differences, 0.0)
    # |T/n - S/n| computed as |T - S| / n: one division per bin.
    gaps = np.zeros_like(counts)
    np.divide(np.abs(differences), counts, out=gaps, where=counts > 0)
    return gaps


def _debiased_terms(counts: NDArray, target_sums: NDArray, gaps: NDArray) -> NDArray:
    """``n_b (gap_b^2 - acc_b (1 - acc_b) / (n_b - 1))`` per bin, 0 where ``n_b < 2``."""
    enough = counts >= 2
    accuracy = np.zeros_like(counts)
    np.divide(target_sums, counts, out=accuracy, where=enough)
    variance = np.zeros_like(counts)
    np.divide(accuracy * (1.0 - accuracy), counts - 1.0, out=variance, where=enough)
    return np.where(enough, counts * (gaps**2 - variance), 0.0)


def _class_average(
    per_group: NDArray, sizes: NDArray, n_classes: int, class_conditional: bool, average: str
) -> NDArray:
    """The pooled value, or the class average of ``per_group`` (1/K, or by set size)."""
    if not class_conditional:
        return per_group[..., 0]
    if average == "macro":
        return per_group.sum(axis=-1) / n_classes
    total_size = sizes.sum(axis=-1)
    averaged = np.zeros_like(total_size)
    np.divide((per_group * sizes).sum(axis=-1), total_size, out=averaged, where=total_size > 0)
    return averaged


def _check_debias(debias: object, norm: float) -> bool:
    """Return ``debias`` as a bool; the debiased estimator exists for the L2 norm only."""
    debias = iv.check_flag(debias, "debias")
    if debias and norm != 2:
        shown = "'inf'" if norm == np.inf else int(norm)
        raise InputError(
            "{debias=True} needs norm=2 (the debiased estimator corrects the squared gaps); "
            "got norm={shown}.",
            argument="debias",
            shown=shown,
        )
    return debias


def _cut_for(value: float, dtype: np.dtype) -> np.generic:
    """The largest value of ``dtype`` not above ``value``: ``x > cut`` then means ``x > value``.

    Comparing a float32 array with a float64 scalar is done in float32 by older NumPy
    (value-based casting), which would move the threshold; this keeps it exact everywhere.
    """
    cut = dtype.type(value)
    if float(cut) > value:
        cut = np.nextafter(cut, dtype.type(-np.inf))
    return cut


@iv.accepts_classes
@_shared_docstring
def calibration_table(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    class_conditional: bool = True,
    adaptive_bins: bool = False,
    top_k_classes: Union[int, str] = 1,
    thresholding: float = 0.0,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> CalibrationTable:
    """Per-(group, bin) table of weighted counts, score sums and target sums.

    The arguments are those of :func:`GCE` (without ``norm``); the table reduces to
    ``GCE`` with :meth:`CalibrationTable.calibration_error`, and the reliability diagram
    draws from it.

    Parameters
    ----------
    {gce_predictions}
    bins, class_conditional, adaptive_bins, top_k_classes, thresholding
        As in :func:`GCE`.
    {keywords}

    Returns
    -------
    CalibrationTable
        Weighted counts, score sums and target sums per (group, bin), and the edges.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import calibration_table
    >>> prob = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
    >>> table = calibration_table(prob, [0, 1, 1, 0], bins=2, class_conditional=False)
    >>> table.counts
    array([[0., 4.]])
    >>> table.mean_score, table.mean_target
    (array([[ nan, 0.75]]), array([[nan, 0.5]]))
    >>> table.calibration_error()
    0.25

    One score per row against a 0/1 target, e.g. P(click) and whether the click
    happened (one group; the table a reliability diagram of the scores draws):

    >>> from calibration_toolbox import Scores
    >>> table = calibration_table(
    ...     Scores([0.1, 0.2, 0.7, 0.9]), [0, 1, 1, 1], bins=2, class_conditional=False
    ... )
    >>> table.mean_score, table.mean_target
    (array([[0.15, 0.8 ]]), array([[0.5, 1. ]]))
    """
    table, _ = _tabulated(
        prob,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
        bins=bins,
        class_conditional=class_conditional,
        adaptive_bins=adaptive_bins,
        top_k_classes=top_k_classes,
        norm=1,
        thresholding=thresholding,
    )
    return table


def _tabulated(
    prob, labels, *, logits, sample_weight, renormalize, **options
) -> tuple[CalibrationTable, _GCEOptions]:
    """The table and checked options of a GCE call: where every binned metric is tabulated.

    The one place where a Dask array is told apart (by duck type, without importing dask):
    its chunks are tabulated in the workers and the tables added (``_dask.table``).
    """
    if _arrays.is_dask_input(prob):
        return _dask.table(
            prob,
            labels,
            logits=logits,
            sample_weight=sample_weight,
            renormalize=renormalize,
            **options,
        )
    checked, weights, checked_options = _checked_call(
        prob,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
        **options,
    )
    return _table(checked, weights, checked_options), checked_options


@dataclass(frozen=True)
class _GCEOptions:
    """The validated options of one GCE call (see :func:`GCE`), built by :meth:`checked`."""

    edges: NDArray
    """Equal-width bin edges; with ``adaptive_bins`` only their number counts."""
    uniform: bool
    """Whether ``edges`` is ``linspace(0, 1, n_bins + 1)`` (bins found by one product)."""
    class_conditional: bool
    adaptive_bins: bool
    top_k: int | None
    """Entries kept per row, or ``None`` for all K of them."""
    norm: float
    """1.0, 2.0 or ``inf``."""
    thresholding: float
    """Entries ``p <= thresholding`` are dropped (0: none)."""
    debias: bool = False
    """The debiased L2 estimator (``norm`` is 2)."""

    @classmethod
    def checked(
        cls,
        n_classes: int,
        *,
        bins: object,
        class_conditional: object,
        adaptive_bins: object,
        top_k_classes: object,
        norm: object,
        thresholding: object,
        debias: object = False,
    ) -> _GCEOptions:
        """Validate the arguments of a GCE call on ``n_classes`` classes."""
        class_conditional = iv.check_flag(class_conditional, "class_conditional")
        adaptive_bins = iv.check_flag(adaptive_bins, "adaptive_bins")
        edges = iv.check_bins(bins, adaptive_bins)
        norm = iv.check_norm(norm)
        return cls(
            edges=edges,
            uniform=is_uniform(edges),
            class_conditional=class_conditional,
            adaptive_bins=adaptive_bins,
            top_k=iv.check_top_k(top_k_classes, n_classes),
            norm=norm,
            thresholding=iv.check_fraction(thresholding, "thresholding"),
            debias=_check_debias(debias, norm),
        )

    @property
    def n_bins(self) -> int:
        """Number of bins per score set."""
        return len(self.edges) - 1

    def n_groups(self, n_classes: int) -> int:
        """Number of score sets: one per class, or one pooled set."""
        return n_classes if self.class_conditional else 1

    @property
    def bins_rows_as_checked(self) -> bool:
        """Whether the table is summed row block by row block as the scan checks them.

        Equal-width bins of the top label or of all entries: the bins of an entry do not
        depend on the other entries, so memory need not grow with N.
        """
        return not self.adaptive_bins and self.top_k in (1, None)


def _checked_call(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    logits: object,
    sample_weight: ArrayLike | None,
    renormalize: object,
    **options: object,
) -> tuple[iv.Predictions, NDArray | None, _GCEOptions]:
    """The validated arrays, weights and options of a GCE call."""
    top_k_classes = options["top_k_classes"]
    top_label = isinstance(top_k_classes, numbers.Integral) and top_k_classes == 1
    if isinstance(prob, Scores) and not (
        top_label and not iv.check_flag(options["class_conditional"], "class_conditional")
    ):
        raise ValueError(
            "class-wise measures (class_conditional=True, or top_k_classes other than 1: "
            "SCE, ACE, TACE, ToprCE, CWCE, TopLabelECE) need a (N, K) probability matrix; "
            "Scores holds one score per row. Bin Scores with ECE, RMSCE, MCE, OCE, UCE, TCE, "
            "or GCE/calibration_table with class_conditional=False and top_k_classes=1; "
            "pass a binary classifier's "
            "P(y = 1) here as np.column_stack([1 - p, p])."
        )
    checked = iv.check_predictions(
        prob, labels, logits=logits, renormalize=renormalize, top_label=top_label, defer_scan=True
    )
    weights, gce_options = iv.checks_after_values(
        checked,
        lambda: (
            iv.check_sample_weight(sample_weight, checked.n_samples),
            _GCEOptions.checked(checked.n_classes, **options),
        ),
    )
    if isinstance(checked, iv.PendingPredictions) and not gce_options.bins_rows_as_checked:
        checked = checked.checked(top_label)
    return checked, weights, gce_options


def _table(
    checked: iv.Predictions | iv.Pairs, weights: NDArray | None, options: _GCEOptions
) -> CalibrationTable:
    """The per-(group, bin) sums, by the fastest path for the options."""
    n_bins = options.n_bins
    if options.bins_rows_as_checked:
        return _table_of_sums(
            _streamed_sums(checked, weights, options),
            options,
            checked.n_classes,
            isinstance(checked, iv.Pairs),
        )
    if options.top_k is None and options.class_conditional and weights is None:
        edges, *sums = _all_entries_equal_mass(
            checked.prob, checked.labels, n_bins, options.thresholding
        )
    else:
        edges, *sums = _score_set_sums(checked, weights, options)
    return _table_of_sums(sums, options, checked.n_classes, isinstance(checked, iv.Pairs), edges)


def _streamed_sums(checked, weights: NDArray | None, options: _GCEOptions, totals=None):
    """Flat sums of the equal-width top-label or all-entries table, per canonical block.

    Given ``totals`` (:class:`~calibration_toolbox.binning.BlockTotals` of the canonical
    blocks before these rows), the rows' blocks are added to it: the streaming hook.
    """
    if options.top_k is None:
        return _all_entries_equal_width(checked, weights, options, totals)
    return _top_label_equal_width(checked, weights, options, totals)


def _table_of_sums(sums, options: _GCEOptions, n_classes: int, scores: bool, edges=None):
    """The :class:`CalibrationTable` of flat sums (``edges``: the options' fixed edges)."""
    n_bins = options.n_bins
    counts, score_sums, target_sums = (np.reshape(part, (-1, n_bins)) for part in sums)
    if edges is None:
        edges = np.broadcast_to(options.edges, (len(counts), n_bins + 1))
    return CalibrationTable(
        edges=np.array(edges, dtype=np.float64),
        counts=counts,
        score_sums=score_sums,
        target_sums=target_sums,
        n_classes=n_classes,
        class_conditional=options.class_conditional,
        adaptive_bins=options.adaptive_bins,
        top_k_classes=options.top_k,
        thresholding=options.thresholding,
        scores=scores,
    )


def _score_set_sums(
    checked: iv.Predictions | iv.Pairs, weights: NDArray | None, options: _GCEOptions
):
    """Edges and sums of the explicit score set (top-r entries, pairs, weighted equal-mass)."""
    n_groups, n_bins = options.n_groups(checked.n_classes), options.n_bins
    groups, scores, targets, entry_weights = _score_set(checked, weights, options)
    if options.adaptive_bins:
        return _equal_mass_sums(groups, scores, targets, entry_weights, n_groups, n_bins)
    sums = bin_sums(
        _cells(options, groups, scores), n_groups * n_bins, scores, targets, entry_weights
    )
    return (np.broadcast_to(options.edges, (n_groups, n_bins + 1)), *sums)


def _cells(options: _GCEOptions, groups: NDArray | None, scores: NDArray) -> NDArray:
    """Flat (group, bin) index of each entry (the bin alone when pooled)."""
    cells = assign_bins(scores, options.edges, options.uniform)
    if options.class_conditional:
        cells += groups * options.n_bins
    return cells


def _kept_entries(threshold: float, groups, scores, targets, weights):
    """The entries whose score is above ``threshold`` (all of them for 0)."""
    if threshold > 0:
        keep = scores > _cut_for(threshold, scores.dtype)
        scores, targets = scores[keep], targets[keep]
        groups = None if groups is None else groups[keep]
        weights = None if weights is None else weights[keep]
    return groups, scores, targets, weights


def _top_label_equal_width(
    checked: iv.Predictions | iv.PendingPredictions | iv.Pairs,
    weights: NDArray | None,
    options: _GCEOptions,
    totals: BlockTotals | None = None,
) -> list[NDArray]:
    """Equal-width sums of the top label (or of pairs): counts, score sums, target sums.

    Probabilities are binned as the scan checks them (:func:`_scan_blocks`), so memory
    stays a few row blocks whatever N.  The sums of each canonical row block
    (:func:`~calibration_toolbox._rows.canonical_rows`) are added entry after entry from
    zero (:class:`~calibration_toolbox.binning.BinSums`), and the blocks' sums one after
    the other (:class:`~calibration_toolbox.binning.BlockTotals`): the rows of a stream's
    or a Dask chunk's complete blocks give the same bits.  Given ``totals`` (of the blocks
    before these rows, which start a canonical block), the blocks are added to it.
    """
    totals = BlockTotals() if totals is None else totals
    n_cells = options.n_groups(checked.n_classes) * options.n_bins
    block = [BinSums(n_cells, weights is not None)]

    def add(rows: slice, last: bool, groups, scores, targets) -> None:
        row_weights = None if weights is None else weights[rows]
        groups, scores, targets, row_weights = _kept_entries(
            options.thresholding, groups, scores, targets, row_weights
        )
        block[0].add(_cells(options, groups, scores), scores, targets, row_weights)
        if last:
            totals.add(*block[0].totals())
            block[0] = BinSums(n_cells, weights is not None)

    if isinstance(checked, iv.Pairs):
        for rows, last in canonical_blocks(checked.n_samples, 2, CACHE_BLOCK_ELEMENTS):
            add(rows, last, None, checked.scores[rows], checked.targets[rows])
    else:
        prob, labels = checked.prob, checked.labels
        ends = _canonical_ends(checked)

        def add_block(rows: slice, summary: RowSummary) -> None:
            block = iv.Predictions(prob[rows], labels[rows], summary)
            add(rows, ends(rows), *_top_label_entries(block, options.class_conditional))

        _scan_blocks(checked, add_block, top_label=True, chunk_rows=HAND_OVER_ROWS)
    return totals.sums


def _canonical_ends(checked):
    """Whether a run of rows handed over by a canonical scan ends a canonical block."""
    step, n_rows = canonical_rows(checked.n_classes), checked.n_samples
    return lambda rows: rows.stop % step == 0 or rows.stop == n_rows


def _scan_blocks(
    checked: iv.Predictions | iv.PendingPredictions, each_block, **blocks: object
) -> None:
    """Scan the rows (checking them if pending), handing each block's summary to ``each_block``.

    The runs handed over never cross a canonical row block, and end at its last row.
    """
    if isinstance(checked, iv.Predictions):  # checked already: the scan gathers, not checks
        checked = iv.PendingPredictions(checked.prob, checked.labels, np.inf)
    checked.scan(each_block=each_block, canonical=True, **blocks)


def _score_set(checked: iv.Predictions | iv.Pairs, weights: NDArray | None, options: _GCEOptions):
    """Flat arrays (group, score, target, weight) of the kept entries.

    (score, target) pairs are the score set as they are; the top label gives one entry
    per row (confidence, correctness); otherwise the entries are picked by row and column.
    """
    if isinstance(checked, iv.Pairs):
        groups, scores, targets, rows = None, checked.scores, checked.targets, None
    elif options.top_k == 1:
        groups, scores, targets = _top_label_entries(checked, options.class_conditional)
        rows = None
    else:
        groups, scores, targets, rows = _picked_entries(checked, options)
    entry_weights = None if weights is None else (weights if rows is None else weights[rows])
    groups, scores, targets, entry_weights = _kept_entries(
        options.thresholding, groups, scores, targets, entry_weights
    )
    if groups is None:
        groups = np.zeros(len(scores), dtype=np.intp)
    return groups, scores, targets, entry_weights


@dataclass(frozen=True)
class _EntryCells:
    """Where each entry of a binned metric's score set falls, for reweighting the rows.

    Built once by :func:`_entry_cells`, so that ``calibration_toolbox.stats`` can recompute
    the table (and the metric) for many row weights by ``bincount`` alone, with no new
    validation, score-set extraction or binning.
    """

    rows: NDArray
    """Row of each entry (``intp``)."""
    joint_cells: NDArray
    """``2 * cell + target`` of each entry, ``cell`` its flat (group, bin) index."""
    scores: NDArray
    """float64 score of each entry."""
    n_groups: int
    n_bins: int
    n_classes: int
    class_conditional: bool
    norm: float
    debias: bool


def _entry_cells(prob: ArrayLike, labels: ArrayLike, **options: object) -> _EntryCells | None:
    """The score set of ``GCE(prob, labels, **options)`` with its cells; ``None`` for equal mass.

    ``options`` are GCE's (``bins``, ..., ``logits``, ``renormalize``; no weights).
    Equal-mass edges depend on the weights, so those bins are not fixed per entry.
    """
    engine_keys = ("logits", "renormalize")
    checked, _, gce_options = _checked_call(
        prob,
        labels,
        sample_weight=None,
        **{key: options.pop(key, False) for key in engine_keys},
        **options,
    )
    if gce_options.adaptive_bins:
        return None
    if isinstance(checked, iv.PendingPredictions):
        checked = checked.checked(top_label=gce_options.top_k == 1)
    # The row index rides through `_score_set` as the entries' "weights", so each entry's
    # row is picked exactly as a weight would be.
    groups, scores, targets, rows = _score_set(checked, np.arange(checked.n_samples), gce_options)
    n_bins = gce_options.n_bins
    cells = _cells(gce_options, groups, scores)
    cells *= 2
    cells += targets
    return _EntryCells(
        rows=rows,
        joint_cells=cells,
        scores=scores.astype(np.float64),
        n_groups=gce_options.n_groups(checked.n_classes),
        n_bins=n_bins,
        n_classes=checked.n_classes,
        class_conditional=gce_options.class_conditional,
        norm=gce_options.norm,
        debias=gce_options.debias,
    )


def _top_label_entries(checked: iv.Predictions, class_conditional: bool):
    """Group (predicted class, or None when pooled), confidence and correctness per row."""
    prob, labels, summary = checked
    if not class_conditional:
        return None, summary.confidence, summary.correct(prob, labels)
    groups = summary.prediction
    if groups is None:
        groups = np.argmax(prob, axis=1)
    return groups, summary.confidence, groups == labels


def _picked_entries(checked: iv.Predictions, options: _GCEOptions):
    """Group, score, target and row of each row's top-r entries, or of all N x K entries."""
    prob, labels, _ = checked
    n_samples, n_classes = prob.shape
    top_k = options.top_k
    if top_k is None:
        rows, columns = np.divmod(np.arange(n_samples * n_classes), n_classes)
    else:
        # Stable sort of -p: the r largest entries, ties resolved by the lower class index.
        order = np.argsort(-prob, axis=1, kind="stable")[:, :top_k]
        rows = np.repeat(np.arange(n_samples), top_k)
        columns = order.reshape(-1)
    groups = columns if options.class_conditional else None
    return groups, prob[rows, columns], labels[rows] == columns, rows


def _equal_mass_sums(groups, scores, targets, weights, n_groups, n_bins):
    """Equal-mass binning of arbitrary score sets (one per group)."""
    if weights is not None:
        positive = weights > 0
        groups, scores, targets, weights = (
            groups[positive],
            scores[positive],
            targets[positive],
            weights[positive],
        )
    order = np.lexsort((scores, groups))
    sorted_scores = scores[order]
    bounds = np.searchsorted(groups[order], np.arange(n_groups + 1))
    cumulative = None if weights is None else np.cumsum(weights[order])
    interior, full = adaptive_edges(sorted_scores, bounds[:-1], bounds[1:], n_bins, cumulative)
    flat = grouped_searchsorted(interior, groups, scores, side="right")
    flat += groups * n_bins
    return (full, *bin_sums(flat, n_groups * n_bins, scores, targets, weights))


def _all_entries_equal_mass(prob, labels, n_bins, threshold):
    """Class-wise equal-mass sums over all entries, from one sort of each column.

    Each class's score set is its column (less the entries at or below the threshold, a
    prefix of the sorted column), so the bins are runs of the sorted column.  The label's
    entries are flagged through the sort (:func:`sort_rows_with_flags`), so counts, score
    sums and target sums are all run sums of the sorted columns.  The columns are copied
    and sorted a few at a time (:func:`row_blocks` over the classes: one column, or as many
    as fill a cache block), so the working memory is a few columns whatever K: on
    1,000,000 x 10 float32, 164 MiB (4.3x the input) when all columns were sorted at once,
    19 MiB (0.5x) a column at a time, for the same time.
    """
    n_samples, n_classes = prob.shape
    cut = _cut_for(threshold, prob.dtype) if threshold > 0 else None
    # One spare slot after the columns keeps every run start a valid reduceat index.
    buffer = np.zeros(min(block_rows(n_samples), n_classes) * n_samples + 1, dtype=prob.dtype)
    chunks = [
        _equal_mass_columns(prob, labels, classes, n_bins, cut, buffer)
        for classes in row_blocks(n_classes, n_samples)
    ]
    full, counts, score_sums, target_sums = (
        np.concatenate(parts) for parts in zip(*chunks, strict=True)
    )
    return (
        full,
        counts.astype(np.float64).reshape(-1),
        score_sums.reshape(-1),
        target_sums.reshape(-1),
    )


def _equal_mass_columns(prob, labels, classes: slice, n_bins: int, cut, buffer: NDArray):
    """Edges, counts, score sums and target sums of the classes ``classes``, each ``(m, .)``.

    The columns are copied into the start of ``buffer`` and sorted there.
    """
    n_samples, n_classes = prob.shape
    n_chunk = classes.stop - classes.start
    size = n_chunk * n_samples
    scores = buffer[: size + 1]
    scores[size] = 0
    columns = scores[:size].reshape(n_chunk, n_samples)
    columns[...] = prob[:, classes].T
    in_chunk = labels >= classes.start
    in_chunk &= labels < classes.stop
    label_rows = np.flatnonzero(in_chunk)
    del in_chunk
    label_entries = labels[label_rows]
    label_entries -= classes.start
    label_entries *= n_samples
    label_entries += label_rows
    del label_rows
    targets = sort_rows_with_flags(scores, columns.shape, label_entries)
    del label_entries

    chunk_index = np.arange(n_chunk)
    if cut is None:
        kept_from = np.zeros(n_chunk, dtype=np.intp)
    else:
        kept_from = grouped_searchsorted(columns, chunk_index, np.full(n_chunk, cut), "right")
    row_offsets = chunk_index * n_samples
    interior, full = adaptive_edges(
        scores[:size], row_offsets + kept_from, row_offsets + n_samples, n_bins
    )
    # The edges are scores of the columns, so searching them in the columns' own dtype is
    # exact and spares NumPy a float64 copy of each column.
    bin_starts = grouped_searchsorted(
        columns,
        np.repeat(chunk_index, n_bins - 1),
        interior.reshape(-1).astype(prob.dtype),
        side="left",
    ).reshape(n_chunk, n_bins - 1)
    # A class with no entry above the cut has the linspace edges, which may fall inside
    # its dropped prefix: all its bins start after the prefix (and are empty).
    np.maximum(bin_starts, kept_from[:, None], out=bin_starts)
    # Runs per class: the dropped prefix, then the B bins.
    runs = np.column_stack([np.zeros(n_chunk, np.intp), kept_from, bin_starts])
    counts = np.diff(np.column_stack([runs[:, 1:], np.full(n_chunk, n_samples)]), axis=1)
    runs += row_offsets[:, None]
    last = classes.stop == n_classes
    score_sums = _run_sums(scores, runs.reshape(-1), last, np.float64)
    target_sums = _run_sums(targets, runs.reshape(-1), last, targets.dtype)
    empty = counts == 0  # reduceat gives the first element, not 0, for an empty run
    score_sums = score_sums.reshape(n_chunk, -1)[:, 1:]
    target_sums = target_sums.reshape(n_chunk, -1)[:, 1:].astype(np.float64)
    score_sums[empty] = 0.0
    target_sums[empty] = 0.0
    return full, counts, score_sums, target_sums


def _run_sums(values: NDArray, starts: NDArray, last: bool, dtype) -> NDArray:
    """Sums of the runs of ``values`` (columns, then a spare 0 slot) beginning at ``starts``.

    reduceat sums each run in one call (pairwise for floats), so a run's sum depends on
    its values alone.  The last run of a chunk but the last one ends where the next
    class's column would start; the very last run takes in the spare 0, as when all
    columns were summed at once (a 0 more can change a pairwise float64 sum by an ulp).
    """
    if last:
        return np.add.reduceat(values, starts, dtype=dtype)
    return np.add.reduceat(values, np.append(starts, len(values) - 1), dtype=dtype)[:-1]


def _all_entries_equal_width(
    checked: iv.Predictions | iv.PendingPredictions,
    weights: NDArray | None,
    options: _GCEOptions,
    totals: BlockTotals | None = None,
) -> list[NDArray]:
    """Equal-width sums over all N x K entries: flat counts, score sums and target sums.

    Without thresholding most softmax entries fall in the first bin; only the entries above
    its upper edge are binned one by one, and the first bin's count and score sum are the
    column totals minus the other bins.  Targets come from the N label entries alone.  Each
    row block is read as the scan checks it (:func:`_scan_blocks`), in memory that does
    not grow with N.  All this is done per canonical row block from zero, and the blocks'
    sums are added one after the other (to ``totals`` when given; see
    :func:`_top_label_equal_width`).
    """
    prob = checked.prob
    subtract_first_bin = options.thresholding == 0
    cut = _cut_for(options.edges[1] if subtract_first_bin else options.thresholding, prob.dtype)
    totals = BlockTotals() if totals is None else totals
    sums = _AllEntrySums(checked, weights, options, cut, subtract_first_bin, totals)
    _scan_blocks(checked, sums.add_block, block_elements=ALL_ENTRIES_BLOCK_ELEMENTS)
    return totals.sums


class _AllEntrySums:
    """The sums of :func:`_all_entries_equal_width`, added row block by row block.

    Per block, while it is in cache: the entries above ``cut`` (flat index and score) are
    set aside and, with ``column_totals_too``, the (weighted) column totals are added.  The
    entries set aside, and the label entries (the only entries with target 1), are binned
    together once some :data:`BINNING_BATCH_ENTRIES` have gathered (:meth:`bin_pending`), and
    with weights the positive-weight entries above the cut are counted per class then
    (exact, so an empty first bin is known to be empty rather than a subtraction residue).
    Binning them per block cost some 25 NumPy calls a block (the figures are beside
    :data:`BINNING_BATCH_ENTRIES`).  Score sums are added entry after entry
    (:class:`~calibration_toolbox.binning.BinSums`), so they do not depend on the blocks.
    At the end of each canonical row block its sums go to ``totals`` and start from zero.
    """

    def __init__(
        self, checked, weights, options: _GCEOptions, cut, column_totals_too: bool, totals
    ):
        self.prob, self.labels = checked.prob, checked.labels
        self.weights, self.options, self.cut = weights, options, cut
        self.column_totals_too, self.totals = column_totals_too, totals
        n_classes = self.prob.shape[1]
        self.ends = _canonical_ends(checked)
        block_size = min(len(self.prob), block_rows(n_classes, ALL_ENTRIES_BLOCK_ELEMENTS))
        self.wide = np.empty((block_size if column_totals_too else 0, n_classes))
        self.pending_from = 0  # first row whose entries are pending
        self.pending_rows = 0
        self.pending: list[tuple[NDArray, NDArray]] = []
        self.pending_labels: list[NDArray] = []
        self.n_pending = 0
        self._start_block()

    def _start_block(self) -> None:
        """Sums from zero for the next canonical block, which starts at ``pending_from``."""
        n_classes = self.prob.shape[1]
        n_cells = self.options.n_groups(n_classes) * self.options.n_bins
        self.above = BinSums(n_cells, self.weights is not None, targets=False)
        self.column_totals = np.zeros(n_classes)
        self.entries_above = np.zeros(n_classes)
        count_type = np.int64 if self.weights is None else np.float64
        self.label_counts = np.zeros(n_cells, dtype=count_type)
        self.block_from = self.pending_from

    def add_block(self, rows: slice, summary: RowSummary) -> None:
        """Add a checked row block, whose label scores are ``summary.label_scores``."""
        block = np.ascontiguousarray(self.prob[rows])
        above = np.flatnonzero(block > self.cut)
        scores = block.reshape(-1)[above]
        above += rows.start * block.shape[1]
        self.pending.append((above, scores))
        self.pending_labels.append(summary.label_scores.copy())
        self.pending_rows = rows.stop
        if self.column_totals_too:
            wide = self.wide[: len(block)]
            np.copyto(wide, block)
            if self.weights is None:
                self.column_totals += np.einsum("ij->j", wide)
            else:
                self.column_totals += np.einsum("i,ij->j", self.weights[rows], wide)
        self.n_pending += len(above) + len(block)
        if self.ends(rows):
            self._finish_block(rows.stop)
        elif self.n_pending >= BINNING_BATCH_ENTRIES:
            self.bin_pending()

    def _finish_block(self, stop: int) -> None:
        """Add the sums of the canonical block ending at ``stop`` to the totals."""
        self.bin_pending()
        counts, score_sums, _ = self.above.totals()
        if self.column_totals_too:
            rows = slice(self.block_from, stop)
            _fill_first_bin(
                counts,
                score_sums,
                self.column_totals,
                self.entries_above,
                None if self.weights is None else self.weights[rows],
                stop - self.block_from,
                self.options,
            )
        self.totals.add(counts, score_sums, self.label_counts)
        self._start_block()

    def bin_pending(self) -> None:
        """Bin the entries set aside: those above the cut, and the label entries."""
        if not self.pending:
            return
        options, n_classes = self.options, self.prob.shape[1]
        above, scores = (_joined(parts) for parts in zip(*self.pending, strict=True))
        label_scores = _joined(self.pending_labels)
        rows = slice(self.pending_from, self.pending_rows)
        self.pending, self.pending_labels, self.n_pending = [], [], 0
        self.pending_from = rows.stop

        entry_rows = above // n_classes  # several times faster than np.divmod here
        columns = above - entry_rows * n_classes
        weights = None if self.weights is None else self.weights[entry_rows]
        self.above.add(_cells(options, columns, scores), scores, None, weights)
        if weights is not None and self.column_totals_too:
            self.entries_above += np.bincount(columns, weights=weights > 0, minlength=n_classes)
        row_weights = None if self.weights is None else self.weights[rows]
        # The label entries' classes are their groups; their targets are all 1 (not needed).
        labels, label_scores, _, label_weights = _kept_entries(
            options.thresholding, self.labels[rows], label_scores, label_scores, row_weights
        )
        add_counts(self.label_counts, _cells(options, labels, label_scores), label_weights)


def _joined(parts: list[NDArray] | tuple[NDArray, ...]) -> NDArray:
    """The arrays end to end (the array itself, not a copy, when there is one)."""
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _fill_first_bin(
    counts: NDArray,
    score_sums: NDArray,
    column_totals: NDArray,
    entries_above: NDArray,
    weights: NDArray | None,
    n_samples: int,
    options: _GCEOptions,
) -> None:
    """Set the first bin of each group (in place) to the group's totals minus its other bins."""
    n_classes, n_bins = len(column_totals), options.n_bins
    counts = counts.reshape(-1, n_bins)
    score_sums = score_sums.reshape(-1, n_bins)
    if weights is None:
        set_size = positive_rows = n_samples
        # unweighted counts are exact integers: the entries above are the other bins
        entries_above = counts[:, 1:].sum(axis=1)
        if not options.class_conditional:
            entries_above = np.array([entries_above.sum()])
    else:
        set_size, positive_rows = weights.sum(), np.count_nonzero(weights)
    if options.class_conditional:
        group_sizes = np.full(n_classes, float(set_size))
        first_bin_entries = positive_rows - entries_above
        group_totals = column_totals
    else:
        group_sizes = np.array([set_size * n_classes])
        first_bin_entries = np.array([positive_rows * n_classes - entries_above.sum()])
        group_totals = column_totals.sum(keepdims=True)
    occupied = first_bin_entries > 0
    counts[:, 0] = np.where(occupied, group_sizes - counts[:, 1:].sum(axis=1), 0.0)
    score_sums[:, 0] = np.where(occupied, group_totals - score_sums[:, 1:].sum(axis=1), 0.0)


# The defaults of `GCE(bins=)` and `TACE(thresholding=)`, which have a synonym (`bin=`,
# `threshold=`): instances of their own, equal to 15 and 0.01 and shown so in signatures,
# so that an explicit `bins=15, bin=10` is an error rather than a comparison with 15.
class _DefaultInt(int):
    """A default that ``is`` tells apart from the same number passed explicitly."""


class _DefaultFloat(float):
    """A default that ``is`` tells apart from the same number passed explicitly."""


_DEFAULT_BINS = _DefaultInt(15)
_DEFAULT_TACE_THRESHOLD = _DefaultFloat(0.01)


def _one_spelling(value, default, synonym, name: str, synonym_name: str):
    """``value``, or ``synonym`` when only the synonym was given (``None``: not given).

    Giving both is an error whatever the values, the default value of ``name`` included.
    """
    if synonym is None:
        return value
    if value is not default:
        raise InputTypeError(
            "pass {argument} or its synonym {synonym}, not both.",
            argument=name,
            synonym=Name(synonym_name),
        )
    return synonym


@iv.accepts_classes
@_shared_docstring
def GCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = _DEFAULT_BINS,
    class_conditional: bool = True,
    adaptive_bins: bool = False,
    top_k_classes: Union[int, str] = 1,
    norm: Norm = 1,
    thresholding: float = 0.0,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
    bin: Union[int, ArrayLike, None] = None,
    debias: bool = False,
) -> float:
    r"""General Calibration Error (Nixon et al. 2019), the engine behind every binned metric.

    1. **Score set.** Row *i* keeps its ``top_k_classes`` largest entries (ties go to the
       lower class index) or all K entries (``'all'``); with ``thresholding > 0`` entries
       ``p <= thresholding`` are dropped too.  Entry *(i, k)* has score ``prob[i, k]`` and
       target ``1[labels[i] == k]``.
    2. **Grouping.** One pooled set, or one set :math:`S_k` per class (``class_conditional``).
    3. **Per set**, with bins of width ``1 / bins`` or of equal mass,

       .. math:: E = \sum_b \frac{n_b}{n}\,\lvert \bar y_b - \bar s_b \rvert^p
                 \quad (p = 1, 2), \qquad E = \max_b \lvert \bar y_b - \bar s_b \rvert
                 \quad (p = \infty).

    4. **Reduce.** Pooled :math:`E^{1/p}`; class-conditional
       :math:`(\frac1K \sum_k E_k)^{1/p}` (:math:`\max_k E_k` for the max norm), a class with
       an empty set counting as 0.

    Parameters
    ----------
    {gce_predictions}
    bins : int or array-like, default 15
        Number of bins, or increasing equal-width edges from 0 to 1.  Equal-width bins are
        ``(lo, hi]`` with 0 in the first bin.  ``bin=`` is accepted as a synonym.
    class_conditional : bool, default True
        One score set per class (averaged over the K classes) instead of one pooled set.
    adaptive_bins : bool, default False
        Equal-mass bins (Nixon et al.'s reference rule) instead of equal-width ones.
    top_k_classes : int or 'all', default 1
        How many of each row's largest entries enter the score set.
    norm : {1, 2, 'inf'}, default 1
        Norm over the bins; also ``'l1'``, ``'l2'``, ``'max'`` and ``np.inf``.
    thresholding : float in [0, 1), default 0
        Drop entries ``p <= thresholding`` (0 keeps everything, exact zeros included).
    {keywords}
    bin : int or array-like, optional
        Synonym of ``bins`` (the spelling of the original README); giving both is an error.
    debias : bool, default False
        With ``norm=2`` only (any other norm: ``ValueError``), the debiased estimator of
        Broecker 2012, Ferro & Fricker 2012 and Kumar et al. 2019 [3]_: each bin's squared
        gap less the sampling variance of its accuracy,

        .. math:: E = \max\Big(0, \sum_b \frac{n_b}{n} \Big[(\bar y_b - \bar s_b)^2
                  - \frac{\bar y_b (1 - \bar y_b)}{n_b - 1}\Big]\Big),

        a bin with :math:`n_b < 2` contributing 0; each set's :math:`E` is clipped at 0
        before the class average and the square root (as Kumar et al.'s ``calibration``
        package does per class).  With weights :math:`n_b` is the weighted count (integer
        weights equal duplicated rows; scaling all weights changes the value).  See
        :meth:`CalibrationTable.calibration_error`.

    {returns}

    See Also
    --------
    calibration_table : the per-(group, bin) table this value is reduced from.

    Notes
    -----
    With thresholding each class is normalised by its own kept count, as Nixon et al.
    define TACE and implement it; when nothing is dropped this equals the normalisation by
    ``N * K`` of their written formula.  Equal-mass edges depend on the data, so with
    weights they are the edges of the set in which each row is repeated ``weight`` times:
    integer weights equal duplicated rows, but scaling all weights changes the edges.

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel and D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.
    .. [3] A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration", NeurIPS, 2019;
       J. Broecker, "Estimating reliability and resolution of probability forecasts through
       decomposition of the empirical score", Climate Dynamics, 2012; C. A. T. Ferro and
       T. E. Fricker, "A bias-corrected decomposition of the Brier score", Quarterly
       Journal of the Royal Meteorological Society, 2012.

    Examples
    --------
    >>> from calibration_toolbox import GCE
    >>> prob = [[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]]
    >>> labels = [0, 1, 1, 0]
    >>> GCE(prob, labels, bins=2, class_conditional=False)
    0.25
    >>> GCE(prob, labels, bins=2, class_conditional=True, top_k_classes="all")
    0.25
    """
    bins = _one_spelling(bins, _DEFAULT_BINS, bin, "bins", "bin")
    return _binned_error(
        prob,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
        bins=bins,
        class_conditional=class_conditional,
        adaptive_bins=adaptive_bins,
        top_k_classes=top_k_classes,
        norm=norm,
        thresholding=thresholding,
        debias=debias,
    )


def _binned_error(
    prob, labels, *, logits, sample_weight, renormalize, part="both", average="macro", **options
) -> float:
    """Validate, tabulate and reduce: GCE, and the named metrics with their table reduction."""
    table, checked_options = _tabulated(
        prob,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
        **options,
    )
    return table.calibration_error(
        checked_options.norm, checked_options.debias, part=part, average=average
    )


# The named metrics: GCE with the settings of the README's table, one row each, and the
# table reduction (`part`, `average` of CalibrationTable.calibration_error) where it is not
# GCE's.  ToprCE's `top_k_classes` is its `r`, TACE's `thresholding` and OCE/UCE's
# `adaptive_bins` their own options: the callers give them.
_NAMED_METRICS = {
    "ECE": {"class_conditional": False, "adaptive_bins": False, "top_k_classes": 1, "norm": 1},
    "RMSCE": {"class_conditional": False, "adaptive_bins": False, "top_k_classes": 1, "norm": 2},
    "MCE": {"class_conditional": False, "adaptive_bins": False, "top_k_classes": 1, "norm": "inf"},
    "ACE": {"class_conditional": True, "adaptive_bins": True, "top_k_classes": "all", "norm": 1},
    "SCE": {"class_conditional": True, "adaptive_bins": False, "top_k_classes": "all", "norm": 1},
    "ToprCE": {"class_conditional": True, "adaptive_bins": False, "norm": 1},
    "TACE": {"class_conditional": True, "adaptive_bins": True, "top_k_classes": "all", "norm": 1},
    "TCE": {
        "class_conditional": False,
        "adaptive_bins": True,
        "top_k_classes": 1,
        "norm": 2,
        "debias": True,
    },
    "CWCE": {
        "class_conditional": True,
        "adaptive_bins": True,
        "top_k_classes": "all",
        "norm": 2,
        "debias": True,
    },
    "OCE": {"class_conditional": False, "top_k_classes": 1, "norm": 1, "part": "over"},
    "UCE": {"class_conditional": False, "top_k_classes": 1, "norm": 1, "part": "under"},
    "TopLabelECE": {
        "class_conditional": True,
        "adaptive_bins": False,
        "top_k_classes": 1,
        "norm": 1,
        "average": "weighted",
    },
}


def _named_metric(
    name,
    prob,
    labels,
    bins,
    logits,
    sample_weight,
    renormalize,
    top_k=1,
    thresholding=0.0,
    adaptive_bins=False,
):
    """The metric ``name`` of ``_NAMED_METRICS``: its row of settings, binned and reduced."""
    settings = {
        "top_k_classes": top_k,
        "adaptive_bins": adaptive_bins,
        **_NAMED_METRICS[name],
        "thresholding": thresholding,
    }
    return _binned_error(
        prob,
        labels,
        bins=bins,
        **settings,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
    )


@iv.accepts_classes
@_shared_docstring
def ECE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Expected Calibration Error of the top label, equal-width bins (Naeini 2015; Guo 2017).

    With the confidence :math:`c_i = \max_k p_{ik}`, the correctness
    :math:`a_i = 1[\arg\max_k p_{ik} = y_i]` and, for the rows whose confidence falls in bin
    :math:`b` (:math:`n_b` of N), their mean accuracy :math:`\mathrm{acc}_b` and mean
    confidence :math:`\mathrm{conf}_b`:

    .. math:: \mathrm{ECE} = \sum_b \frac{n_b}{N}\,
              \lvert \mathrm{acc}_b - \mathrm{conf}_b \rvert.

    With ``Scores(s)`` the score and target of row *i* are :math:`c_i = s_i` and
    :math:`a_i = y_i` themselves (:class:`~calibration_toolbox.Scores`).  The same as
    ``GCE(prob, labels, bins=bins, class_conditional=False, adaptive_bins=False,
    top_k_classes=1, norm=1, thresholding=0.0)``.

    Parameters
    ----------
    {predictions}
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] M. P. Naeini, G. Cooper and M. Hauskrecht, "Obtaining Well Calibrated
       Probabilities Using Bayesian Binning", AAAI, 2015.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

    Examples
    --------
    >>> from calibration_toolbox import ECE, Scores
    >>> ECE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25

    An LLM's confidence in its answers and whether each was right:

    >>> round(ECE(Scores([0.9, 0.8, 0.6, 0.3]), [1, 0, 1, 0], bins=2), 6)
    0.15
    """
    return _named_metric("ECE", prob, labels, bins, logits, sample_weight, renormalize)


@iv.accepts_classes
@_shared_docstring
def RMSCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Root-mean-square calibration error of the top label (Hendrycks et al. 2019).

    With the per-bin accuracy and confidence of :func:`ECE`:

    .. math:: \mathrm{RMSCE} = \sqrt{\sum_b \frac{n_b}{N}\,
              (\mathrm{acc}_b - \mathrm{conf}_b)^2}.

    The same as ``GCE(prob, labels, bins=bins, class_conditional=False,
    adaptive_bins=False, top_k_classes=1, norm=2, thresholding=0.0)``.

    Parameters
    ----------
    {predictions}
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] D. Hendrycks, M. Mazeika and T. Dietterich, "Deep Anomaly Detection with Outlier
       Exposure", ICLR, 2019.

    Examples
    --------
    >>> from calibration_toolbox import RMSCE
    >>> RMSCE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25
    """
    return _named_metric("RMSCE", prob, labels, bins, logits, sample_weight, renormalize)


@iv.accepts_classes
@_shared_docstring
def MCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Maximum Calibration Error of the top label (Naeini et al. 2015).

    With the per-bin accuracy and confidence of :func:`ECE`, the largest gap over the
    non-empty bins:

    .. math:: \mathrm{MCE} = \max_{b:\, n_b > 0}
              \lvert \mathrm{acc}_b - \mathrm{conf}_b \rvert.

    The same as ``GCE(prob, labels, bins=bins, class_conditional=False,
    adaptive_bins=False, top_k_classes=1, norm='inf', thresholding=0.0)``.

    Parameters
    ----------
    {predictions}
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] M. P. Naeini, G. Cooper and M. Hauskrecht, "Obtaining Well Calibrated
       Probabilities Using Bayesian Binning", AAAI, 2015.

    Examples
    --------
    >>> from calibration_toolbox import MCE
    >>> MCE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25
    """
    return _named_metric("MCE", prob, labels, bins, logits, sample_weight, renormalize)


@iv.accepts_classes
@_shared_docstring
def ACE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: int = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Adaptive Calibration Error (Nixon et al. 2019): class-wise, equal-mass bins.

    Each class's column :math:`p_{\cdot k}` is cut into ``bins`` bins of equal mass; in bin
    :math:`b` of class :math:`k` (:math:`n_{kb}` of the N rows), :math:`\bar p_{kb}` is the
    mean probability and :math:`\bar y_{kb}` the fraction of rows whose label is k:

    .. math:: \mathrm{ACE} = \frac1K \sum_k \sum_b \frac{n_{kb}}{N}\,
              \lvert \bar y_{kb} - \bar p_{kb} \rvert.

    The same as ``GCE(prob, labels, bins=bins, class_conditional=True,
    adaptive_bins=True, top_k_classes='all', norm=1, thresholding=0.0)``.  Not netcal's
    ``ACE`` (an unweighted average over bins).

    Parameters
    ----------
    {class_wise_predictions}
    {equal_mass_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel and D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019.

    Examples
    --------
    >>> from calibration_toolbox import ACE
    >>> ACE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25
    """
    return _named_metric("ACE", prob, labels, bins, logits, sample_weight, renormalize)


@iv.accepts_classes
@_shared_docstring
def SCE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Static Calibration Error (Nixon et al. 2019), the class-wise ECE of Kull et al. 2019.

    The equal-width ECE of each class's column, averaged over the K classes: with
    :math:`n_{kb}`, :math:`\bar p_{kb}` and :math:`\bar y_{kb}` as in :func:`ACE` but for
    equal-width bins,

    .. math:: \mathrm{SCE} = \frac1K \sum_k \sum_b \frac{n_{kb}}{N}\,
              \lvert \bar y_{kb} - \bar p_{kb} \rvert.

    The same as ``GCE(prob, labels, bins=bins, class_conditional=True,
    adaptive_bins=False, top_k_classes='all', norm=1, thresholding=0.0)``.

    Parameters
    ----------
    {class_wise_predictions}
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel and D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019.
    .. [2] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and P. Flach,
       "Beyond temperature scaling: Obtaining well-calibrated multiclass probabilities with
       Dirichlet calibration", NeurIPS, 2019.

    Examples
    --------
    >>> from calibration_toolbox import SCE
    >>> SCE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25
    """
    return _named_metric("SCE", prob, labels, bins, logits, sample_weight, renormalize)


@iv.accepts_classes
@_shared_docstring
def ToprCE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    r: int,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Top-r calibration error (Nixon et al. 2019): class-wise ECE of each row's r largest.

    The entries kept are the ``r`` largest of each row (ties to the lower class index); the
    kept entries of class :math:`k` (:math:`n_k` of them) are binned with equal width, and
    with :math:`n_{kb}`, :math:`\bar p_{kb}`, :math:`\bar y_{kb}` the count, mean
    probability and fraction labelled k of bin :math:`b`:

    .. math:: \mathrm{ToprCE} = \frac1K \sum_k \sum_b \frac{n_{kb}}{n_k}\,
              \lvert \bar y_{kb} - \bar p_{kb} \rvert,

    a class never among the r largest counting as 0.  The same as ``GCE(prob, labels,
    bins=bins, class_conditional=True, adaptive_bins=False, top_k_classes=r, norm=1,
    thresholding=0.0)``.  Not the top-r error of Gupta et al. 2021, which uses only the r-th
    ranked prediction.

    ``r`` is keyword-only and has no default: the third positional argument is ``bins``,
    as in every other metric, and an old call ``ToprCE(prob, labels, 2)`` (which meant
    ``r=2`` when ``r`` came first) raises ``TypeError`` instead of silently meaning
    ``bins=2``.

    Parameters
    ----------
    {class_wise_predictions}
    {equal_width_bins}
    r : int
        Number of each row's largest entries kept, in ``[1, K]`` (keyword-only, required).
    {keywords}

    {returns}

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel and D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019.

    Examples
    --------
    >>> from calibration_toolbox import ToprCE
    >>> ToprCE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2, r=1)
    0.25
    """
    top_k = iv.integer_at_least(1)(r, "r")  # named `r` in its errors
    return _named_metric("ToprCE", prob, labels, bins, logits, sample_weight, renormalize, top_k)


@iv.accepts_classes
@_shared_docstring
def TACE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: int = 15,
    *,
    thresholding: float = _DEFAULT_TACE_THRESHOLD,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
    threshold: float | None = None,
) -> float:
    r"""Thresholded Adaptive Calibration Error (Nixon et al. 2019).

    :func:`ACE` over the entries above ``thresholding`` (0.01 by default), each class
    normalised by its own kept count: with :math:`n_k` the kept entries of class k and
    :math:`n_{kb}`, :math:`\bar p_{kb}`, :math:`\bar y_{kb}` those of its equal-mass bin b,

    .. math:: \mathrm{TACE} = \frac1K \sum_k \sum_b \frac{n_{kb}}{n_k}\,
              \lvert \bar y_{kb} - \bar p_{kb} \rvert.

    The same as ``GCE(prob, labels, bins=bins, class_conditional=True,
    adaptive_bins=True, top_k_classes='all', norm=1, thresholding=thresholding)``.

    Parameters
    ----------
    {class_wise_predictions}
    {equal_mass_bins}
    thresholding : float in [0, 1), default 0.01
        Entries ``p <= thresholding`` are dropped (keyword-only, named as in :func:`GCE`).
    {keywords}
    threshold : float, optional
        The former name of ``thresholding``, still accepted; giving both is an error.  (It
        was the fourth positional argument: a positional threshold now raises
        ``TypeError``.)

    {returns}

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel and D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019.

    Examples
    --------
    >>> from calibration_toolbox import TACE
    >>> TACE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25
    >>> prob = [[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]]
    >>> round(TACE(prob, [0, 1, 1, 0], bins=2, thresholding=0.15), 6)  # 0.1 is dropped
    0.408333
    """
    thresholding = _one_spelling(
        thresholding, _DEFAULT_TACE_THRESHOLD, threshold, "thresholding", "threshold"
    )
    return _named_metric(
        "TACE", prob, labels, bins, logits, sample_weight, renormalize, thresholding=thresholding
    )


@iv.accepts_classes
@_shared_docstring
def expected_calibration_error(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Top-label expected calibration error; the same as :func:`ECE`.

    .. math:: \mathrm{ECE} = \sum_b \frac{n_b}{N}\,
              \lvert \mathrm{acc}_b - \mathrm{conf}_b \rvert.

    Parameters
    ----------
    {predictions}
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

    Examples
    --------
    >>> from calibration_toolbox.metrics import expected_calibration_error
    >>> expected_calibration_error([[0.9, 0.1], [0.6, 0.4]], [0, 1], bins=2)
    0.25
    """
    return ECE(
        prob, labels, bins, logits=logits, sample_weight=sample_weight, renormalize=renormalize
    )


@iv.accepts_classes
@_shared_docstring
def OCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    adaptive_bins: bool = False,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Over-confidence part of the top-label ECE: the bins where confidence exceeds accuracy.

    With the per-bin accuracy and confidence of :func:`ECE`:

    .. math:: \mathrm{OCE} = \sum_b \frac{n_b}{N}\,
              \max(\mathrm{conf}_b - \mathrm{acc}_b,\ 0),

    so that ``OCE + UCE == ECE`` on the same bins (to rounding: the two parts are sums
    of complementary subsets of ECE's terms).  The same as ``calibration_table(prob, labels,
    bins, class_conditional=False, adaptive_bins=adaptive_bins,
    top_k_classes=1).calibration_error(1, part='over')``: one binning, reduced.

    Not to be confused with the overconfidence error "OE" of Thulasidasan et al. 2019,
    which weights each bin's excess by its confidence as well,
    :math:`\sum_b \frac{n_b}{N} \mathrm{conf}_b \max(\mathrm{conf}_b - \mathrm{acc}_b, 0)`,
    and so is not a part of the ECE.

    Parameters
    ----------
    {predictions}
    {either_bins}
    {keywords}

    {returns}

    See Also
    --------
    UCE : the under-confidence part.

    References
    ----------
    .. [1] S. Thulasidasan, G. Chennupati, J. Bilmes, T. Bhattacharya and S. Michalak, "On
       Mixup Training: Improved Calibration and Predictive Uncertainty for Deep Neural
       Networks", NeurIPS, 2019.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

    Examples
    --------
    >>> from calibration_toolbox import ECE, OCE, UCE
    >>> prob, labels = [[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0]
    >>> OCE(prob, labels, bins=2), UCE(prob, labels, bins=2), ECE(prob, labels, bins=2)
    (0.25, 0.0, 0.25)
    """
    return _named_metric(
        "OCE",
        prob,
        labels,
        bins,
        logits,
        sample_weight,
        renormalize,
        adaptive_bins=adaptive_bins,
    )


@iv.accepts_classes
@_shared_docstring
def UCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    adaptive_bins: bool = False,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Under-confidence part of the top-label ECE: the bins where accuracy exceeds confidence.

    With the per-bin accuracy and confidence of :func:`ECE`:

    .. math:: \mathrm{UCE} = \sum_b \frac{n_b}{N}\,
              \max(\mathrm{acc}_b - \mathrm{conf}_b,\ 0),

    so that ``OCE + UCE == ECE`` on the same bins (to rounding).  The same as
    ``calibration_table(prob, labels, bins, class_conditional=False,
    adaptive_bins=adaptive_bins, top_k_classes=1).calibration_error(1, part='under')``.

    Not to be confused with the "UCE" of Laves et al. 2019, the *uncertainty* calibration
    error, which bins a predictive uncertainty against the error rate.

    Parameters
    ----------
    {predictions}
    {either_bins}
    {keywords}

    {returns}

    See Also
    --------
    OCE : the over-confidence part.

    References
    ----------
    .. [1] S. Thulasidasan, G. Chennupati, J. Bilmes, T. Bhattacharya and S. Michalak, "On
       Mixup Training: Improved Calibration and Predictive Uncertainty for Deep Neural
       Networks", NeurIPS, 2019.

    Examples
    --------
    >>> from calibration_toolbox import UCE
    >>> round(UCE([[0.6, 0.4], [0.7, 0.3]], [0, 0], bins=2), 12)  # accuracy 1, confidence 0.65
    0.35
    """
    return _named_metric(
        "UCE",
        prob,
        labels,
        bins,
        logits,
        sample_weight,
        renormalize,
        adaptive_bins=adaptive_bins,
    )


@iv.accepts_classes
@_shared_docstring
def TCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: int = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Top-label calibration error of Kumar et al. 2019: debiased L2, equal-mass bins.

    With the confidences binned in ``bins`` equal-mass bins and, per bin, :math:`n_b`,
    :math:`\mathrm{acc}_b`, :math:`\mathrm{conf}_b` as in :func:`ECE`:

    .. math:: \mathrm{TCE} = \sqrt{\max\Big(0, \sum_b \frac{n_b}{N}
              \Big[(\mathrm{acc}_b - \mathrm{conf}_b)^2
              - \frac{\mathrm{acc}_b (1 - \mathrm{acc}_b)}{n_b - 1}\Big]\Big)},

    a bin with fewer than 2 rows contributing 0.  The same as ``GCE(prob, labels,
    bins=bins, class_conditional=False, adaptive_bins=True, top_k_classes=1, norm=2,
    debias=True)``.

    "Top-label" is Kumar et al.'s word for the confidence (the largest probability against
    whether it was right); not :func:`TopLabelECE` (Gupta & Ramdas 2022, conditioned on
    the predicted class).  The bins are Nixon et al.'s equal-mass bins (see :func:`GCE`),
    not those of Kumar's ``calibration`` package (``np.array_split`` of the sorted scores,
    edges at midpoints): the estimator is the same on the same edges, the edges differ
    (README, *Reproducing published numbers*).

    Parameters
    ----------
    {predictions}
    {equal_mass_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration", NeurIPS, 2019.
    .. [2] J. Broecker, "Estimating reliability and resolution of probability forecasts
       through decomposition of the empirical score", Climate Dynamics, 2012.

    Examples
    --------
    >>> from calibration_toolbox import TCE
    >>> prob = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]]
    >>> round(TCE(prob, [1, 1, 0, 0], bins=2), 12)  # gaps 0.35, 0.85; accuracies 1, 0
    0.65

    A bin with accuracy 1/2 has sampling variance ``0.5 * 0.5 / (2 - 1)``, which here
    outweighs both squared gaps (the plain L2 error on the same bins is 0.35):

    >>> TCE(prob, [0, 1, 0, 0], bins=2)
    0.0
    """
    return _named_metric("TCE", prob, labels, bins, logits, sample_weight, renormalize)


@iv.accepts_classes
@_shared_docstring
def CWCE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: int = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Class-wise (marginal) calibration error of Kumar et al. 2019: debiased L2, equal mass.

    Each class's column is binned in ``bins`` equal-mass bins; with :math:`n_{kb}`,
    :math:`\bar p_{kb}`, :math:`\bar y_{kb}` as in :func:`ACE`,

    .. math:: E_k = \max\Big(0, \sum_b \frac{n_{kb}}{N}
              \Big[(\bar y_{kb} - \bar p_{kb})^2
              - \frac{\bar y_{kb} (1 - \bar y_{kb})}{n_{kb} - 1}\Big]\Big), \qquad
              \mathrm{CWCE} = \sqrt{\frac1K \sum_k E_k},

    a bin with fewer than 2 rows contributing 0.  The same as ``GCE(prob, labels,
    bins=bins, class_conditional=True, adaptive_bins=True, top_k_classes='all', norm=2,
    debias=True)``.  Each :math:`E_k` is clipped at 0 before the average, as in Kumar's
    ``calibration`` package (its marginal error is the mean of the per-class L2 errors
    squared).  Not the class-wise ECE of Kull et al. 2019 (:func:`SCE`: L1, equal width,
    not debiased).  The bins are Nixon et al.'s, not the package's (see :func:`TCE`).

    Parameters
    ----------
    {class_wise_predictions}
    {equal_mass_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration", NeurIPS, 2019.

    Examples
    --------
    >>> from calibration_toolbox import CWCE
    >>> prob = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]]
    >>> round(CWCE(prob, [1, 1, 0, 0], bins=2), 12)  # each class: gaps 0.35 and 0.85
    0.65
    """
    return _named_metric("CWCE", prob, labels, bins, logits, sample_weight, renormalize)


@iv.accepts_classes
@_shared_docstring
def TopLabelECE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Top-label ECE of Gupta & Ramdas 2022: the confidence ECE within each predicted class.

    The rows predicted as class :math:`k` (:math:`N_k` of N, first-index argmax) have their
    confidences binned with equal width; with :math:`n_{kb}`, :math:`\mathrm{acc}_{kb}`,
    :math:`\mathrm{conf}_{kb}` the count, accuracy and mean confidence of bin b of class k,

    .. math:: \mathrm{TopLabelECE} = \sum_k \frac{N_k}{N} \sum_b \frac{n_{kb}}{N_k}\,
              \lvert \mathrm{acc}_{kb} - \mathrm{conf}_{kb} \rvert
              = \sum_{k, b} \frac{n_{kb}}{N}\,
              \lvert \mathrm{acc}_{kb} - \mathrm{conf}_{kb} \rvert.

    The table is ``calibration_table(prob, labels, bins, class_conditional=True,
    top_k_classes=1)`` (groups: the predicted classes), reduced with
    ``calibration_error(1, average='weighted')``.

    Not the confidence :func:`ECE` (which pools all predicted classes in one binning), and
    not ``ToprCE(r=1)``, the same per-class errors averaged uniformly over the K classes
    (weights 1/K, a class never predicted counting as 0).  On densenet-bc-100 CIFAR-100
    (10,000 rows, 100 classes, 15 bins) ECE = 0.1422, ToprCE(r=1) = 0.1585 and
    TopLabelECE = 0.1608.

    Parameters
    ----------
    prob : array-like, shape (N, K)
        Predicted probabilities (rows sum to 1); logits with ``logits=True``.  Not a 1-D
        array nor ``Scores``: the measure needs the predicted class of each row.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``.
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] C. Gupta and A. Ramdas, "Top-label calibration and multiclass-to-binary
       reductions", ICLR, 2022.

    Examples
    --------
    Three rows predicted as class 0 (confidences 0.9, 0.8, 0.6; two right: gap 0.1) and
    one as class 1 (confidence 0.7, right: gap 0.3):

    >>> from calibration_toolbox import ECE, TopLabelECE, ToprCE
    >>> prob = [[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]]
    >>> labels = [1, 0, 0, 1]
    >>> round(TopLabelECE(prob, labels, bins=2), 12)  # 3/4 * 0.1 + 1/4 * 0.3
    0.15
    >>> round(ToprCE(prob, labels, bins=2, r=1), 12)  # (0.1 + 0.3) / 2
    0.2
    >>> ECE(prob, labels, bins=2)  # pooled: mean confidence 0.75, accuracy 0.75
    0.0
    """
    return _named_metric("TopLabelECE", prob, labels, bins, logits, sample_weight, renormalize)
