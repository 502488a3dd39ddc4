"""Streaming: per-(class, bin) sums added batch by batch, in memory that does not grow with N.

Every binned calibration measure with fixed edges reduces to per-(group, bin) weighted
counts, score sums and target sums (:class:`~calibration_toolbox.CalibrationTable`), and
the Brier score and the log-likelihood to two weighted sums: all of them add across
batches.  Each sum is defined over canonical row blocks
(:func:`~calibration_toolbox._rows.canonical_rows`): the sums of each block from zero,
added block after block.  :class:`CalibrationAccumulator` keeps the sums of the complete
blocks and the rows of the one block not complete yet, so it gives the metrics of all the
rows seen, equal to the in-memory call to the last bit whatever the batches.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry as registry
from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, InputTypeError
from calibration_toolbox._rows import canonical_rows
from calibration_toolbox.binning import BlockTotals
from calibration_toolbox.metrics import scoring
from calibration_toolbox.metrics._engine import checked_call
from calibration_toolbox.metrics._kernels import tabulate
from calibration_toolbox.metrics._options import GCEOptions
from calibration_toolbox.metrics._table import CalibrationTable, check_same_options, table_of_sums
from calibration_toolbox.scores import PredictionsLike, Scores

__all__ = ["CalibrationAccumulator"]

#: The tables an accumulator can keep: GCE's options of each.
_TABLE_OPTIONS = {
    "top_label": {"class_conditional": False, "top_k_classes": 1},
    "predicted_class": {"class_conditional": True, "top_k_classes": 1},
    "class_wise": {"class_conditional": True, "top_k_classes": "all"},
}
#: The named metrics an accumulator gives, from the registry rows that stream: the table
#: and its reduction, table after table (in the order of _TABLE_OPTIONS).
_METRICS = {
    name: (stream.table, stream.reduction)
    for kind in _TABLE_OPTIONS
    for name, stream in registry.streamed().items()
    if stream.table == kind
}
#: What does not stream, and why (the registry's rows).
_NOT_STREAMED = registry.not_streamed()
# bins="auto" depends on N, which the accumulator learns only at the end, while every
# batch must be binned on its edges as it arrives.
_AUTO_REFUSED = (
    "the accumulator bins each batch as it arrives, before it knows how many rows will "
    "come (with N known in advance, pass the count itself: the smallest B with B**3 >= N)"
)


class _Rows(NamedTuple):
    """Checked rows of a batch: predictions (values checked) or pairs, weights, logits."""

    checked: iv.CheckedInput
    weights: NDArray | None
    logit_rows: NDArray | None

    def __len__(self) -> int:
        return self.checked.n_samples

    def part(self, rows: slice, copy_rows: bool = False) -> _Rows:
        """The rows ``rows`` (copied, so as not to keep a large batch alive, if asked)."""
        take = (lambda array: np.array(array[rows])) if copy_rows else (lambda a: a[rows])
        arrays = (None if value is None else take(value) for value in self[1:])
        return _Rows(self.checked.taken(take), *arrays)


def _joined_rows(first: _Rows | None, second: _Rows) -> _Rows:
    """The rows of ``first`` then ``second`` (weights of 1 where one of them has none)."""
    if first is None:
        return second
    checked = first.checked.joined(second.checked)
    weights = None
    if first.weights is not None or second.weights is not None:
        weights = np.concatenate(
            [
                np.ones(len(rows)) if rows.weights is None else rows.weights
                for rows in (first, second)
            ]
        )
    logit_rows = None
    if first.logit_rows is not None:
        logit_rows = np.concatenate([first.logit_rows, second.logit_rows])
    return _Rows(checked, weights, logit_rows)


@dataclass
class _Sums:
    """What an accumulator has added up, and the rows of its partial canonical block.

    The sums are those of the complete canonical row blocks
    (:func:`~calibration_toolbox._rows.canonical_rows`): tables and scoring rules.
    """

    n_classes: int | None = None
    tables: dict[str, BlockTotals] = field(default_factory=dict)
    n_samples: int = 0
    total_weight: float = 0.0
    brier: float = 0.0
    nll: float = 0.0
    options: dict = field(default_factory=dict)
    partial: _Rows | None = None

    def copied(self) -> _Sums:
        """A copy whose sums can be added to (the rows are shared: they are never changed)."""
        tables = {kind: totals.copy() for kind, totals in self.tables.items()}
        return dataclasses.replace(self, tables=tables)


class CalibrationAccumulator:
    r"""Calibration metrics of predictions that arrive in batches, in bounded memory.

    ``update(prob, labels, sample_weight)`` adds a batch's per-(group, bin) sums (the
    tables of :func:`~calibration_toolbox.calibration_table`) and its Brier and
    log-likelihood sums; the metrics of all the rows seen are then read from the sums:
    ECE, RMSCE, MCE (any norm), OCE/UCE, the debiased L2 error, TopLabelECE, SCE and its
    debiased L2 version, the Brier score, the NLL and the accuracy.  Memory is
    O(K x bins + R x K) whatever the number of rows: the only rows kept are those of one
    partial canonical row block of R = max(1, 2**22 // K) rows (16 MiB of float32).

    Parameters
    ----------
    bins : int or array-like, default 15
        Number of equal-width bins, or their increasing edges from 0 to 1 (bins
        ``(lo, hi]``, 0 in the first); ``'auto'`` is refused, as its count depends on
        all the rows.  Equal-mass bins cannot stream: their edges depend on
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
    weights, to the last bit, whatever the batches.  In both, every sum (the tables, the
    Brier and log-likelihood sums, the total weight) is that of the canonical row blocks
    ``[j R, (j + 1) R)``: each block summed from zero, by the same code on the same rows,
    and the block sums added in turn, ``((s_0 + s_1) + s_2) + ...``.  The accumulator sums
    each block once it is complete and keeps the rows of the last one; :meth:`results`
    sums those without consuming them.  (Bit for bit when every batch has weights, or none
    has: a batch without weights among weighted ones counts as weights of 1.)
    ``acc_a + acc_b`` (for tree reductions) adds the blocks' sums of both, then the rows
    each keeps: equal up to the order of the additions; counts without weights are exact.

    Every batch is checked as the in-memory call checks it, with the same errors, and a
    batch that fails leaves the sums as they were.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import ECE, SCE, CalibrationAccumulator
    >>> rng = np.random.default_rng(0)
    >>> prob = rng.dirichlet(np.ones(3), size=1000)
    >>> labels = rng.integers(0, 3, size=1000)
    >>> accumulator = CalibrationAccumulator(bins=10)
    >>> for rows in np.array_split(np.arange(1000), 7):
    ...     _ = accumulator.update(prob[rows], labels[rows])
    >>> accumulator.metric("ECE") == ECE(prob, labels, bins=10)
    True
    >>> accumulator.metric("SCE") == SCE(prob, labels, bins=10)
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
        self.edges = iv.check_bins(bins, unknown_rows=_AUTO_REFUSED)
        self.logits = iv.check_logits_flag(logits, renormalize)
        self.renormalize = bool(renormalize)
        self.scores = iv.check_flag(scores, "scores")
        if self.scores and self.renormalize:
            raise InputError(
                "{renormalize=True} divides each row of probabilities by its sum; with "
                "scores=True there is one score per row, so there is nothing to renormalise."
            )
        self.tables = _check_tables(tables, self.scores)
        self.eps = iv.check_fraction(eps, "eps")
        self._sums = _Sums()
        if n_classes is not None:
            n_classes = iv.integer_at_least(2)(n_classes, "n_classes")
            if self.scores and n_classes != 2:
                raise InputError(
                    "{n_classes} must be 2 with scores=True; got {value}.",
                    argument="n_classes",
                    value=n_classes,
                )
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
        self, prob: PredictionsLike, labels: ArrayLike, sample_weight: ArrayLike | None = None
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
        checked, weights, _ = checked_call(
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
        # The values, with the in-memory errors, before anything is added.
        checked = checked.with_values_checked()
        sums = self._sums.copied()  # the batch is added to a copy, kept if all goes well
        _add_rows(sums, _Rows(checked, weights, logit_rows), self)
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

    def table(self, kind: str = "top_label") -> CalibrationTable:
        """The :class:`~calibration_toolbox.CalibrationTable` ``kind`` of all the rows seen.

        ``'top_label'`` is ``calibration_table(prob, labels, bins, class_conditional=False)``,
        ``'predicted_class'`` the same with ``class_conditional=True`` and
        ``'class_wise'`` with ``class_conditional=True, top_k_classes='all'``.
        """
        kind = iv.choice(*self.tables)(kind, "kind")
        sums = self._finished()
        return table_of_sums(
            sums.tables[kind].sums, sums.options[kind], sums.n_classes, self.scores
        )

    def metric(self, name: str) -> float:
        """The metric ``name`` of all the rows seen: a key of :meth:`results`.

        Names of measures that cannot stream (their registry rows say why: ACE, TACE, TCE,
        CWCE, ToprCE, KSCE, KuiperCE, ECESweep, SmoothECE, MMCE, SKCE) raise ``ValueError``
        saying why and what streams; a name that is no ``str`` (a list of names) raises
        ``TypeError``.
        """
        if not isinstance(name, str):  # a list would be refused as unhashable, not as a name
            raise InputTypeError(
                "{name} must be a str, one of {available}; got {given!r}. Call {metric} once "
                "per name, or {results} for all of them.",
                argument="name",
                available=", ".join(self._available()),
                given=name,
            )
        if name in _NOT_STREAMED:
            raise ValueError(
                f"{name} cannot be computed from streamed sums: {_NOT_STREAMED[name]}. "
                f"The accumulator gives {', '.join(self._available())}; for the measures "
                "that need all rows, call them on the full arrays (memory-mapped if need be)."
            )
        if name not in self._available():
            raise InputError(
                "{name} must be one of {available} for this accumulator "
                "(tables={tables}); got {given!r}.",
                argument="name",
                available=", ".join(self._available()),
                tables=self.tables,
                given=name,
            )
        sums = self._finished()
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
        values["total_weight"] = float(self._finished().total_weight)
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

    def __getstate__(self) -> dict:
        """The state without the cached finished sums (recomputed when asked for)."""
        state = dict(self.__dict__)
        state.pop("_finished_sums", None)
        return state

    def _finished(self) -> _Sums:
        """The sums with the partial canonical block added (on a copy, kept until an update)."""
        sums = self._filled()
        cached = getattr(self, "_finished_sums", None)
        if cached is not None and cached[0] is sums:
            return cached[1]
        finished = sums
        if sums.partial is not None:
            finished = sums.copied()
            _add_blocks(finished, sums.partial, self)
        self._finished_sums = (sums, finished)
        return finished

    def _reading(self, prob):
        """``prob`` as the engine reads it: ``Scores`` exactly when ``scores=True``."""
        if self.scores:
            return prob if isinstance(prob, Scores) else Scores(prob)
        if isinstance(prob, Scores):
            raise InputTypeError(
                "{prob:is} Scores, but this accumulator was built for (N, K) predictions; "
                "build it with scores=True to bin one score per row.",
                argument="prob",
            )
        return prob

    def _check_n_classes(self, n_classes: int) -> None:
        if self._sums.n_classes not in (None, n_classes):
            raise InputError(
                "{prob} must have {n_classes} columns, the number of classes of "
                "this accumulator (fixed by its first batch or n_classes); got {given}.",
                argument="prob",
                n_classes=self._sums.n_classes,
                given=n_classes,
            )

    def _same_options(self, other: CalibrationAccumulator) -> None:
        options = ("logits", "renormalize", "scores", "tables", "eps")
        check_same_options(self, other, options, "accumulators merge")
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
        raise InputTypeError(
            "{tables} must be a sequence of table names; got {value!r}.",
            argument="tables",
            value=tables,
        )
    for kind in tables:
        if kind not in allowed:
            raise InputError(
                "{tables} must hold names among {allowed}{why}; got {kind!r}.",
                argument="tables",
                allowed=allowed,
                why=" (Scores give one score per row: no class-wise table)" if scores else "",
                kind=kind,
            )
    return tuple(kind for kind in allowed if kind in tables)


def _add_rows(sums: _Sums, rows: _Rows, accumulator: CalibrationAccumulator) -> None:
    """Add a checked batch: complete canonical blocks are summed, the rest is kept.

    The kept rows (fewer than one canonical block, R x K values) are the accumulator's
    only rows; with them at the front, the batch's rows fill the partial block, then whole
    blocks are summed as one in-memory call sums them, and the rows left over are kept.
    """
    _set_options(sums, rows.checked.n_classes, accumulator)
    step = canonical_rows(sums.n_classes)
    kept = 0 if sums.partial is None else len(sums.partial)
    sums.n_samples += len(rows)
    if kept + len(rows) < step:
        sums.partial = _joined_rows(sums.partial, rows.part(slice(None), copy_rows=True))
        return
    head = step - kept
    _add_blocks(sums, _joined_rows(sums.partial, rows.part(slice(0, head))), accumulator)
    whole = head + (len(rows) - head) // step * step
    if whole > head:
        _add_blocks(sums, rows.part(slice(head, whole)), accumulator)
    sums.partial = rows.part(slice(whole, None), copy_rows=True) if whole < len(rows) else None


def _add_blocks(sums: _Sums, rows: _Rows, accumulator: CalibrationAccumulator) -> None:
    """Add the canonical blocks of ``rows`` (which start a block) to the sums, in turn."""
    checked, weights = rows.checked, rows.weights
    for kind in accumulator.tables:
        totals = sums.tables.setdefault(kind, BlockTotals())
        tabulate(checked, weights, sums.options[kind], totals)
    sums.brier = scoring._brier_total(checked, weights, total=sums.brier)
    sums.nll = scoring._nll_total(checked, weights, accumulator.eps, rows.logit_rows, sums.nll)
    sums.total_weight = scoring._total_weight(checked, weights, sums.total_weight)


def _set_options(sums: _Sums, n_classes: int, accumulator: CalibrationAccumulator) -> None:
    """Fix K and the checked options of the tables at the first batch."""
    if sums.n_classes is not None and sums.options:
        return
    sums.n_classes = n_classes
    sums.options = {
        kind: GCEOptions.checked(
            n_classes,
            bins=accumulator.edges,
            adaptive_bins=False,
            norm=1,
            thresholding=0.0,
            **options,
        )
        for kind, options in _TABLE_OPTIONS.items()
    }


def _merged(first: CalibrationAccumulator, second: CalibrationAccumulator) -> _Sums:
    """The sums of both accumulators (their options checked to be the same).

    The complete blocks' sums are added, then the rows each keeps are added as a batch.
    """
    if not isinstance(second, CalibrationAccumulator):
        raise InputTypeError(
            "{other} must be a CalibrationAccumulator; got {value}.",
            argument="other",
            value=type(second).__name__,
        )
    first._same_options(second)
    a, b = first._sums, second._sums
    if b.n_samples == 0:
        return a.copied()
    if a.n_samples == 0:
        return b.copied()
    merged = a.copied()
    for kind, totals in b.tables.items():
        if totals.sums is not None:
            merged.tables.setdefault(kind, BlockTotals()).add(*totals.sums)
    merged.total_weight += b.total_weight
    merged.brier += b.brier
    merged.nll += b.nll
    merged.n_samples += b.n_samples - (0 if b.partial is None else len(b.partial))
    if b.partial is not None:
        _add_rows(merged, b.partial, first)
    return merged
