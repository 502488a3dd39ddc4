"""Streaming: per-(class, bin) sums added batch by batch, in memory that does not grow with N.

Every binned calibration measure with fixed edges reduces to per-(group, bin) weighted
counts, score sums and target sums (:class:`~calibration_toolbox.CalibrationTable`), and
the Brier score and the log-likelihood to two weighted sums: all of them add across
batches.  :class:`CalibrationAccumulator` keeps those sums, updated with one batch
at a time, and gives the metrics of all the rows seen.  It stores no rows.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

import numpy as np
from numpy.typing import ArrayLike

from calibration_toolbox import _validation as iv
from calibration_toolbox.binning import BinSums
from calibration_toolbox.metrics import gce, scoring
from calibration_toolbox.scores import Scores

__all__ = ["CalibrationAccumulator"]

#: The tables an accumulator can keep: GCE's options of each.
_TABLE_OPTIONS = {
    "top_label": {"class_conditional": False, "top_k_classes": 1},
    "predicted_class": {"class_conditional": True, "top_k_classes": 1},
    "class_wise": {"class_conditional": True, "top_k_classes": "all"},
}
#: The named metrics an accumulator gives: the table and its reduction.
_METRICS = {
    "ECE": ("top_label", {"norm": 1}),
    "RMSCE": ("top_label", {"norm": 2}),
    "MCE": ("top_label", {"norm": "inf"}),
    "OCE": ("top_label", {"norm": 1, "part": "over"}),
    "UCE": ("top_label", {"norm": 1, "part": "under"}),
    "debiased_L2": ("top_label", {"norm": 2, "debias": True}),
    "TopLabelECE": ("predicted_class", {"norm": 1, "average": "weighted"}),
    "SCE": ("class_wise", {"norm": 1}),
    "class_wise_debiased_L2": ("class_wise", {"norm": 2, "debias": True}),
}
#: What does not stream, and why.
_NOT_STREAMED = {
    "ACE": "its equal-mass edges depend on all the rows",
    "TACE": "its equal-mass edges depend on all the rows",
    "TCE": "its equal-mass edges depend on all the rows (on fixed edges: 'debiased_L2')",
    "CWCE": (
        "its equal-mass edges depend on all the rows (on fixed edges: 'class_wise_debiased_L2')"
    ),
    "KSCE": "it walks the scores sorted over all the rows",
    "KuiperCE": "it walks the scores sorted over all the rows",
    "ECESweep": "its bin counts are chosen from all the rows",
    "SmoothECE": "its kernel smoothing and bandwidth need all the rows",
    "MMCE": "its kernel couples every pair of rows",
    "SKCE": "its kernel couples every pair of rows",
}


@dataclass
class _Sums:
    """What an accumulator has added up: the tables' sums and the scoring rules' sums."""

    n_classes: int | None = None
    top_label: BinSums | None = None
    predicted_class: BinSums | None = None
    class_wise: gce.CalibrationTable | None = None
    n_samples: int = 0
    total_weight: float = 0.0
    brier: float = 0.0
    nll: float = 0.0
    options: dict = field(default_factory=dict)


class CalibrationAccumulator:
    r"""Calibration metrics of predictions that arrive in batches, in O(K x bins) memory.

    ``update(prob, labels, sample_weight)`` adds a batch's per-(group, bin) sums (the
    tables of :func:`~calibration_toolbox.calibration_table`) and its Brier and
    log-likelihood sums; the metrics of all the rows seen are then read from the sums:
    ECE, RMSCE, MCE (any norm), OCE/UCE, the debiased L2 error, TopLabelECE, SCE and its
    debiased L2 version, the Brier score, the NLL and the accuracy.  No row is kept.

    Parameters
    ----------
    bins : int or array-like, default 15
        Number of equal-width bins, or their increasing edges from 0 to 1 (bins
        ``(lo, hi]``, 0 in the first).  Equal-mass bins cannot stream: their edges depend on
        all the rows.
    n_classes : int, optional
        Number of classes K; by default the first batch's.  A batch with another K is an
        error.
    logits : bool, default False
        Batches hold logits; the softmax is applied (the NLL is exact from the logits).
    renormalize : bool, default False
        Divide each row by its sum first (see :func:`~calibration_toolbox.ECE`).
    scores : bool, default False
        Batches are one score per row against 0/1 labels
        (:class:`~calibration_toolbox.Scores`; a plain 1-D array is read as ``Scores``):
        only the ``'top_label'`` table exists then.
    tables : sequence of str, optional
        The tables kept, each one pass over a batch: ``'top_label'`` (the confidence:
        ECE, RMSCE, MCE, OCE, UCE, debiased L2, accuracy), ``'predicted_class'`` (the
        confidence per predicted class: TopLabelECE), ``'class_wise'`` (every entry per
        class: SCE, class-wise debiased L2).  By default all that apply.
    eps : float, default 1e-15
        Lower clip of the label's probability in the NLL (see
        :func:`~calibration_toolbox.negative_log_likelihood`).

    Attributes
    ----------
    n_samples : int
        Rows added so far.
    n_classes : int or None
        K, once known.

    Notes
    -----
    Each metric equals the in-memory function on the concatenated batches with the same
    weights.  The top-label tables are added entry by entry in row order, as one call does,
    so ECE, RMSCE, MCE, OCE, UCE and TopLabelECE are equal to the last bit whatever the
    batches.  The class-wise table, the Brier score and the NLL are summed by row blocks in
    one call, so a batch boundary inside a block changes the order of the float additions:
    equal to about 1e-15 relative (to the last bit when every batch is a whole number of
    blocks).  ``acc_a + acc_b`` (for tree reductions) adds two sets of sums: equal up to
    the order of the additions; counts without weights are exact.

    Every batch is checked as the in-memory call checks it, with the same errors, and a
    batch that fails leaves the sums as they were.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import ECE, CalibrationAccumulator
    >>> rng = np.random.default_rng(0)
    >>> prob = rng.dirichlet(np.ones(3), size=1000)
    >>> labels = rng.integers(0, 3, size=1000)
    >>> accumulator = CalibrationAccumulator(bins=10)
    >>> for rows in np.array_split(np.arange(1000), 7):
    ...     _ = accumulator.update(prob[rows], labels[rows])
    >>> accumulator.metric("ECE") == ECE(prob, labels, bins=10)
    True
    >>> sorted(accumulator.results())[:4]
    ['ECE', 'MCE', 'OCE', 'RMSCE']
    """

    def __init__(
        self,
        bins: Union[int, ArrayLike] = 15,
        *,
        n_classes: int | None = None,
        logits: bool = False,
        renormalize: bool = False,
        scores: bool = False,
        tables: Sequence[str] | None = None,
        eps: float = 1e-15,
    ):
        self.edges = iv.check_bins(bins)
        self.logits = iv.check_logits_flag(logits, renormalize)
        self.renormalize = bool(renormalize)
        self.scores = iv.check_flag(scores, "scores")
        if self.scores and self.renormalize:
            raise ValueError(
                "`renormalize=True` divides each row of probabilities by its sum; with "
                "scores=True there is one score per row, so there is nothing to renormalise."
            )
        self.tables = _check_tables(tables, self.scores)
        self.eps = iv.check_fraction(eps, "eps")
        self._sums = _Sums()
        if n_classes is not None:
            n_classes = iv.integer_at_least(2)(n_classes, "n_classes")
            if self.scores and n_classes != 2:
                raise ValueError(f"`n_classes` must be 2 with scores=True; got {n_classes}.")
            self._sums.n_classes = n_classes

    @property
    def n_samples(self) -> int:
        """Rows added so far."""
        return self._sums.n_samples

    @property
    def n_classes(self) -> int | None:
        """K (fixed by the constructor or the first batch), or ``None`` before."""
        return self._sums.n_classes

    def update(
        self, prob: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> CalibrationAccumulator:
        """Add a batch: its rows are checked as the in-memory metrics check them.

        Parameters
        ----------
        prob : array-like, shape (n, K), or Scores
            The batch's probabilities (logits with ``logits=True``); with
            ``scores=True``, one score per row (``Scores`` or a 1-D array).
        labels : array-like of int, shape (n,)
            True classes in ``[0, K)`` (0/1 targets with ``scores=True``).
        sample_weight : array-like, shape (n,), optional
            Non-negative weights of the batch's rows (with a positive sum).

        Returns
        -------
        CalibrationAccumulator
            ``self``.  On an error nothing of the batch is added.
        """
        prob = self._reading(prob)
        checked, weights, _ = gce._checked_call(
            prob,
            labels,
            logits=self.logits,
            sample_weight=sample_weight,
            renormalize=self.renormalize,
            bins=self.edges,
            norm=1,
            thresholding=0.0,
            adaptive_bins=False,
            **_TABLE_OPTIONS["top_label"],
        )
        self._check_n_classes(checked.n_classes)
        logit_rows = None
        if self.logits and not self.scores:
            logit_rows = iv.check_predicted_logits(prob, "prob")  # checked already: no error
        sums = copy.deepcopy(self._sums)  # the batch is added to a copy, kept if all goes well
        _add_batch(sums, checked, weights, self, logit_rows)
        self._sums = sums
        return self

    def merge(self, other: CalibrationAccumulator) -> CalibrationAccumulator:
        """Add the sums of ``other`` (built with the same options) to ``self``; return ``self``."""
        self._sums = _merged(self, other)
        return self

    def __add__(self, other: object) -> CalibrationAccumulator:
        """A new accumulator holding the sums of both (same options), for tree reductions."""
        if not isinstance(other, CalibrationAccumulator):
            return NotImplemented
        result = copy.copy(self)
        result._sums = _merged(self, other)
        return result

    def table(self, kind: str = "top_label") -> gce.CalibrationTable:
        """The :class:`~calibration_toolbox.CalibrationTable` ``kind`` of all the rows seen.

        ``'top_label'`` is ``calibration_table(prob, labels, bins, class_conditional=False)``,
        ``'predicted_class'`` the same with ``class_conditional=True`` and
        ``'class_wise'`` with ``class_conditional=True, top_k_classes='all'``.
        """
        sums = self._filled()
        kind = iv.check_choice(kind, "kind", self.tables)
        if kind == "class_wise":
            return sums.class_wise
        counts, score_sums, target_sums = getattr(sums, kind).totals()
        n_bins = len(self.edges) - 1
        options = sums.options[kind]
        return gce.CalibrationTable(
            edges=np.array(np.broadcast_to(self.edges, (len(counts) // n_bins, n_bins + 1))),
            counts=counts.reshape(-1, n_bins),
            score_sums=score_sums.reshape(-1, n_bins),
            target_sums=target_sums.reshape(-1, n_bins),
            n_classes=sums.n_classes,
            class_conditional=options.class_conditional,
            adaptive_bins=False,
            top_k_classes=options.top_k,
            thresholding=0.0,
            scores=self.scores,
        )

    def metric(self, name: str) -> float:
        """The metric ``name`` of all the rows seen: a key of :meth:`results`.

        Names of measures that cannot stream (ACE, TACE, TCE, CWCE, KSCE, KuiperCE,
        ECESweep, SmoothECE, MMCE, SKCE) raise ``ValueError`` saying why and what streams.
        """
        if name in _NOT_STREAMED:
            raise ValueError(
                f"{name} cannot be computed from streamed sums: {_NOT_STREAMED[name]}. "
                f"The accumulator gives {', '.join(self._available())}; for the measures "
                "that need all rows, call them on the full arrays (memory-mapped if need be)."
            )
        if name not in self._available():
            raise ValueError(
                f"`name` must be one of {', '.join(self._available())} for this accumulator "
                f"(tables={self.tables}); got {name!r}."
            )
        sums = self._filled()
        if name == "brier_score":
            return float(sums.brier / sums.total_weight)
        if name == "negative_log_likelihood":
            return float(sums.nll / sums.total_weight)
        if name == "accuracy":
            table = self.table("top_label")
            return float(table.target_sums.sum() / table.counts.sum())
        kind, reduction = _METRICS[name]
        return self.table(kind).calibration_error(**reduction)

    def results(self) -> dict[str, float]:
        """Every metric the sums determine, by name, with ``n_samples`` and ``total_weight``."""
        values = {name: self.metric(name) for name in self._available()}
        values["n_samples"] = self.n_samples
        values["total_weight"] = float(self._filled().total_weight)
        return values

    def _available(self) -> list[str]:
        names = [name for name, (kind, _) in _METRICS.items() if kind in self.tables]
        if "top_label" in self.tables and not self.scores:
            names.append("accuracy")
        return [*names, "brier_score", "negative_log_likelihood"]

    def _filled(self) -> _Sums:
        if self._sums.n_samples == 0:
            raise ValueError("no batch has been added yet: call update(prob, labels) first.")
        return self._sums

    def _reading(self, prob):
        """``prob`` as the engine reads it: ``Scores`` exactly when ``scores=True``."""
        if self.scores:
            return prob if isinstance(prob, Scores) else Scores(prob)
        if isinstance(prob, Scores):
            raise TypeError(
                "`prob` is Scores, but this accumulator was built for (N, K) predictions; "
                "build it with scores=True to bin one score per row."
            )
        return prob

    def _check_n_classes(self, n_classes: int) -> None:
        if self._sums.n_classes not in (None, n_classes):
            raise ValueError(
                f"`prob` must have {self._sums.n_classes} columns, the number of classes of "
                f"this accumulator (fixed by its first batch or n_classes); got {n_classes}."
            )

    def _same_options(self, other: CalibrationAccumulator) -> None:
        options = ("logits", "renormalize", "scores", "tables", "eps")
        gce._check_same_options(self, other, options, "accumulators merge")
        if self.edges.shape != other.edges.shape or not np.array_equal(self.edges, other.edges):
            raise ValueError("accumulators merge only when built with the same bin edges.")
        if None not in (self.n_classes, other.n_classes) and self.n_classes != other.n_classes:
            raise ValueError(
                "accumulators merge only with the same number of classes; got "
                f"{self.n_classes} and {other.n_classes}."
            )


def _check_tables(tables: Sequence[str] | None, scores: bool) -> tuple[str, ...]:
    """The tables kept, checked: all that apply by default; only 'top_label' for Scores."""
    allowed = ("top_label",) if scores else tuple(_TABLE_OPTIONS)
    if tables is None:
        return allowed
    if isinstance(tables, str) or not all(isinstance(kind, str) for kind in tables):
        raise TypeError(f"`tables` must be a sequence of table names; got {tables!r}.")
    for kind in tables:
        if kind not in allowed:
            raise ValueError(
                f"`tables` must hold names among {allowed}"
                + (" (Scores give one score per row: no class-wise table)" if scores else "")
                + f"; got {kind!r}."
            )
    return tuple(kind for kind in allowed if kind in tables)


def _add_batch(sums: _Sums, checked, weights, accumulator: CalibrationAccumulator, logit_rows):
    """Add one checked batch to ``sums`` (its values are checked by the first pass)."""
    if sums.n_classes is None or not sums.options:
        sums.n_classes = checked.n_classes
        sums.options = {
            kind: gce._GCEOptions.checked(
                checked.n_classes,
                bins=accumulator.edges,
                adaptive_bins=False,
                norm=1,
                thresholding=0.0,
                **options,
            )
            for kind, options in _TABLE_OPTIONS.items()
        }
    for kind in accumulator.tables:
        options = sums.options[kind]
        if kind == "class_wise":
            table = gce._table(checked, weights, options)
            sums.class_wise = table if sums.class_wise is None else sums.class_wise + table
        else:
            bin_sums = getattr(sums, kind)
            if bin_sums is None:
                bin_sums = BinSums(options.n_groups(checked.n_classes) * options.n_bins, True)
                setattr(sums, kind, bin_sums)
            gce._top_label_equal_width(checked, weights, options, sums=bin_sums)
        checked = _as_checked(checked)
    sums.brier += scoring._brier_total(checked, weights)
    sums.nll += scoring._nll_total(_as_checked(checked), weights, accumulator.eps, logit_rows)
    sums.n_samples += checked.n_samples
    sums.total_weight += scoring._total_weight(checked.n_samples, weights)


def _as_checked(checked):
    """Pending predictions whose values a pass has checked: later passes skip the row sums."""
    if isinstance(checked, iv.PendingPredictions):
        return checked._replace(tolerance=np.inf)
    return checked


def _merged(first: CalibrationAccumulator, second: CalibrationAccumulator) -> _Sums:
    """The sums of both accumulators (their options checked to be the same)."""
    if not isinstance(second, CalibrationAccumulator):
        raise TypeError(f"`other` must be a CalibrationAccumulator; got {type(second).__name__}.")
    first._same_options(second)
    a, b = first._sums, second._sums
    if b.n_samples == 0:
        return copy.deepcopy(a)
    if a.n_samples == 0:
        return copy.deepcopy(b)
    merged = copy.deepcopy(a)
    for kind in ("top_label", "predicted_class"):
        mine, theirs = getattr(merged, kind), getattr(b, kind)
        if mine is not None:
            mine.joint_counts = mine.joint_counts + theirs.joint_counts
            mine.score_sums = mine.score_sums + theirs.score_sums
    if merged.class_wise is not None:
        merged.class_wise = merged.class_wise + b.class_wise
    merged.n_samples += b.n_samples
    merged.total_weight += b.total_weight
    merged.brier += b.brier
    merged.nll += b.nll
    return merged
