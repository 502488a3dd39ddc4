"""The table of a binned metric: the second layer of the binned engine.

:class:`CalibrationTable` holds the per-(group, bin) weighted sums of a binned metric and
reduces them (:func:`reduce_tables`, also on stacked tables); :func:`table_of_sums` makes
one from the flat sums of a tabulation kernel; :func:`check_same_options` names the option
in which two tables (or two accumulators) differ.  Beside the table, its per-bin intervals:
:func:`bin_intervals` and :func:`consistency_bands` (exported by
``calibration_toolbox.stats``), over the binomial arithmetic of ``metrics._intervals``, and
:func:`check_table`, the check of a ``table`` argument (``plot`` uses it too).

Imports: NumPy, ``_validation``, ``metrics._options`` and ``metrics._intervals``; imported by
the layers above it (``_kernels``, ``_engine``), ``gce``, ``stats``, ``streaming``, ``plot``
and the metrics that reduce tables.
"""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass
from typing import Union

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, InputTypeError
from calibration_toolbox.metrics._intervals import (
    ConfidenceInterval,
    accuracy_intervals,
    calibrated_bands,
)
from calibration_toolbox.metrics._options import GCEOptions, check_debias

__all__ = [
    "CalibrationTable",
    "Norm",
    "bin_intervals",
    "check_same_options",
    "check_table",
    "consistency_bands",
    "reduce_tables",
    "table_of_sums",
    "zeroed",
]

Norm = Union[int, float, str]


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
    multilabel : bool, default False
        Whether the groups are the K independent labels of a multi-label task
        (:func:`~calibration_toolbox.multilabel_calibration_table`: column k against the
        0/1 column k of the label matrix) rather than the classes of a softmax.

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
    multilabel: bool = False

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
        debias = check_debias(debias, p)
        part = iv.choice("both", "over", "under")(part, "part")
        average = iv.choice("macro", "weighted")(average, "average")
        if debias and part != "both":
            raise InputError(
                "{debias=True} is for the whole error (part='both'); got {part!r}.",
                argument="debias",
                part=part,
            )
        return float(
            reduce_tables(
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
        return bin_intervals(self, method=method, confidence_level=confidence_level)

    def consistency_bands(self, confidence_level: float = 0.95) -> tuple[NDArray, NDArray]:
        """Range of every bin's accuracy expected if the bin were calibrated.

        See :func:`calibration_toolbox.stats.consistency_bands`; ``(low, high)`` arrays of
        shape ``(n_groups, n_bins)``, NaN for an empty bin.
        """
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
    check_same_options(
        first,
        second,
        (
            "n_classes",
            "class_conditional",
            "top_k_classes",
            "thresholding",
            "scores",
            "multilabel",
        ),
        "CalibrationTables add",
    )
    if first.edges.shape != second.edges.shape or not np.array_equal(first.edges, second.edges):
        raise ValueError(
            "CalibrationTables add only when built with the same bin edges; got "
            f"{first.n_bins} and {second.n_bins} bins"
            + (" with different edges." if first.n_bins == second.n_bins else ".")
        )


def check_same_options(first, second, options: tuple[str, ...], what: str) -> None:
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


def reduce_tables(
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


def table_of_sums(sums, options: GCEOptions, n_classes: int, scores: bool, edges=None):
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


def zeroed(table: CalibrationTable) -> CalibrationTable:
    """The same table with every sum 0 (what a Dask chunk whose weights are all 0 adds)."""
    zeros = {name: np.zeros_like(getattr(table, name)) for name in _SUMS}
    return dataclasses.replace(table, **zeros)


_SUMS = ("counts", "score_sums", "target_sums")


# -- per-bin intervals ------------------------------------------------------------------------
def check_table(table: object) -> CalibrationTable:
    if not isinstance(table, CalibrationTable):
        raise InputTypeError(
            "{table} must be a CalibrationTable (from calibration_table); got {value}.",
            argument="table",
            value=type(table).__name__,
        )
    return table


def bin_intervals(
    table: CalibrationTable, method: str = "wilson", confidence_level: float = 0.95
) -> ConfidenceInterval:
    r"""Confidence interval of every bin's accuracy (mean target), as drawn in error bars.

    With :math:`n` the bin's count, :math:`x` its target sum, :math:`\hat p = x / n` and
    :math:`z = \Phi^{-1}(1 - \alpha/2)`:

    * ``'wilson'`` (Wilson 1927), the score interval without continuity correction:
      :math:`\frac{\hat p + z^2/2n}{1 + z^2/n} \pm \frac{z}{1 + z^2/n}
      \sqrt{\hat p (1 - \hat p)/n + z^2/4n^2}`;
    * ``'clopper-pearson'`` (Clopper & Pearson 1934), exact:
      :math:`(B^{-1}(\alpha/2;\ x, n - x + 1),\ B^{-1}(1 - \alpha/2;\ x + 1, n - x))`
      with :math:`B^{-1}` the beta quantile, 0 when :math:`x = 0` and 1 when
      :math:`x = n`.

    Both equal ``scipy.stats.binomtest(x, n).proportion_ci(level, method)`` ('wilson',
    'exact') for integer counts.  With ``sample_weight`` the weighted count and target sum
    are used as :math:`n` and :math:`x` as they are (no effective sample size): the
    interval is right for integer (frequency) weights and not for weights scaled to sum
    to 1.  An empty bin gets NaN.

    Parameters
    ----------
    table : CalibrationTable
        The table of :func:`~calibration_toolbox.calibration_table`.
    method : {'wilson', 'clopper-pearson'}, default 'wilson'
        The interval.
    confidence_level : float in (0, 1), default 0.95
        Confidence level.

    Returns
    -------
    ConfidenceInterval
        ``low`` and ``high`` arrays of shape ``(n_groups, n_bins)``.

    References
    ----------
    .. [1] E. B. Wilson, "Probable Inference, the Law of Succession, and Statistical
       Inference", Journal of the American Statistical Association 22(158), 1927.
    .. [2] C. J. Clopper and E. S. Pearson, "The use of confidence or fiducial limits
       illustrated in the case of the binomial", Biometrika 26(4), 1934.

    Examples
    --------
    >>> from calibration_toolbox import Scores, calibration_table
    >>> table = calibration_table(
    ...     Scores([0.1, 0.2, 0.3, 0.7, 0.8, 0.9]), [0, 0, 1, 1, 1, 0],
    ...     bins=2, class_conditional=False,
    ... )
    >>> low, high = table.intervals("wilson")
    >>> low.round(3), high.round(3)
    (array([[0.061, 0.208]]), array([[0.792, 0.939]]))
    """
    table = check_table(table)
    return accuracy_intervals(table.counts, table.target_sums, method, confidence_level)


def consistency_bands(
    table: CalibrationTable, confidence_level: float = 0.95
) -> ConfidenceInterval:
    r"""Range of every bin's accuracy that a calibrated model would produce.

    Under the hypothesis that the bin is calibrated, its target sum is binomial with
    :math:`n` the bin's count and :math:`p` its mean score (Bröcker & Smith 2007's
    consistency bars, computed from the binomial instead of by resampling); the band is
    the binomial quantiles divided by :math:`n`:

    .. math:: \left(F^{-1}(\alpha/2;\ n, p) / n,\ F^{-1}(1 - \alpha/2;\ n, p) / n\right),

    :math:`F^{-1}(q) = \min\{k : F(k) \ge q\}`, so the accuracy of a calibrated bin falls
    outside with probability at most :math:`\alpha`.  An observed accuracy outside its band
    is evidence of miscalibration in that bin (one bin at a time, no multiplicity
    correction).  Weighted counts are rounded to the nearest integer (frequency weights);
    a bin whose count rounds to 0 gets NaN, like an empty bin.  The mean score is the
    bin's, not its centre.  Above a rounded count of ``2**36`` (weighted counts), the
    quantile is the Poisson quantile of the rarer outcome where its mean count is below
    ``2**20``, else the Cornish-Fisher expansion (at ``2**36`` the binomial's counts;
    SciPy's ``binom.ppf`` loses its digits, then does not return, at larger counts).

    Parameters
    ----------
    table : CalibrationTable
        The table of :func:`~calibration_toolbox.calibration_table`.
    confidence_level : float in (0, 1), default 0.95
        Probability that a calibrated bin's accuracy lies within its band.

    Returns
    -------
    ConfidenceInterval
        ``low`` and ``high`` arrays of shape ``(n_groups, n_bins)``.

    References
    ----------
    .. [1] J. Bröcker and L. A. Smith, "Increasing the Reliability of Reliability
       Diagrams", Weather and Forecasting 22(3), 2007.

    Examples
    --------
    >>> from calibration_toolbox import Scores, calibration_table
    >>> table = calibration_table(
    ...     Scores([0.1, 0.2, 0.3, 0.7, 0.8, 0.9]), [0, 0, 1, 1, 1, 0],
    ...     bins=2, class_conditional=False,
    ... )
    >>> low, high = table.consistency_bands()
    >>> low.round(3), high.round(3)
    (array([[0.   , 0.333]]), array([[0.667, 1.   ]]))
    """
    table = check_table(table)
    return calibrated_bands(table.counts, table.mean_score, confidence_level)


# The public homes of the public names defined here, as before the engine had layers:
# help(), the repr of the class and pickles name them there.
CalibrationTable.__module__ = "calibration_toolbox.metrics.gce"
bin_intervals.__module__ = consistency_bands.__module__ = "calibration_toolbox.stats"
