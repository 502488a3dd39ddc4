"""The binned engine: validate once, then tabulate in memory or over Dask chunks.

The named internal API of the binned metrics (``gce``'s public functions, ``stats``,
``streaming``, ``decomposition`` call it):

* :func:`tabulated` -- the :class:`~calibration_toolbox.CalibrationTable` and the checked
  options of a GCE call: arrays in memory are validated by :func:`checked_call` and
  tabulated by :func:`checked_table`; a Dask array is tabulated chunk by chunk in the
  workers (:func:`_dask_table`, through the generic executor ``_dask.block_sums``), each
  chunk by this same in-memory path;
* :func:`checked_call` -- the validated arrays, weights and
  :class:`~calibration_toolbox.metrics._options.GCEOptions` of a call (the one validation);
* :func:`checked_table` -- the table of checked rows, by the kernel
  :func:`~calibration_toolbox.metrics._kernels.tabulate` picks;
* :func:`entry_cells` -- the score set of a call with the (group, bin) cell of each entry
  (:class:`EntryCells`), for ``stats.bootstrap`` to re-weight rows by ``bincount`` alone;
* :func:`dask_cells_job`, :func:`dask_cells` -- the same table and cells of Dask arrays,
  gathered block by block in one pass (``stats.bootstrap`` and ``paired_bootstrap``).

Imports: NumPy, ``_arrays``, ``_dask`` (the generic chunk executor, which imports no
metric), ``_validation`` and the layers below (``metrics._options``, ``metrics._table``,
``metrics._scoresets``, ``metrics._kernels``); imported by ``gce`` and the modules above it.
"""

from __future__ import annotations

import dataclasses
import functools
import numbers
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _dask, _registry
from calibration_toolbox import _validation as iv
from calibration_toolbox._arrays import is_dask_input
from calibration_toolbox.binning import bin_sums
from calibration_toolbox.metrics._kernels import tabulate
from calibration_toolbox.metrics._options import GCEOptions
from calibration_toolbox.metrics._scoresets import flat_cells, score_set
from calibration_toolbox.metrics._table import CalibrationTable, table_of_sums, zeroed
from calibration_toolbox.scores import PredictionsLike, Scores

__all__ = [
    "EntryCells",
    "checked_call",
    "checked_table",
    "dask_cells",
    "dask_cells_job",
    "entry_cells",
    "tabulated",
]


def tabulated(
    prob, labels, *, logits, sample_weight, renormalize, scale_free=False, **options
) -> tuple[CalibrationTable, GCEOptions]:
    """The table and checked options of a GCE call: where every binned metric is tabulated.

    ``scale_free=True`` (a metric reduced from the table, not the table itself, whose
    weighted counts a caller reads) scales the weights where the options make the measure
    scale-free (equal-width bins, no debiasing): see ``check_sample_weight``.

    The one place where a Dask array is told apart (by duck type, without importing dask):
    its chunks are tabulated in the workers and the tables added (:func:`_dask_table`); its
    weights are summed over the chunks as they are.
    """
    if is_dask_input(prob):
        return _dask_table(
            prob,
            labels,
            logits=logits,
            sample_weight=sample_weight,
            renormalize=renormalize,
            **options,
        )
    checked, weights, checked_options = checked_call(
        prob,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
        scale_free=scale_free,
        **options,
    )
    return checked_table(checked, weights, checked_options), checked_options


def checked_call(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    logits: object,
    sample_weight: ArrayLike | None,
    renormalize: object,
    scale_free: bool = False,
    **options: object,
) -> tuple[iv.Predictions, NDArray | None, GCEOptions]:
    """The validated arrays, weights and options of a GCE call.

    ``scale_free=True``: the weights are scaled (``check_sample_weight``) unless the options
    count them as rows (equal-mass edges, debiasing).
    """
    top_k_classes = options["top_k_classes"]
    top_label = isinstance(top_k_classes, numbers.Integral) and top_k_classes == 1
    if isinstance(prob, Scores) and not (
        top_label and not iv.check_flag(options["class_conditional"], "class_conditional")
    ):
        raise _class_wise_refusal()
    checked = iv.check_predictions(
        prob, labels, logits=logits, renormalize=renormalize, top_label=top_label, defer_scan=True
    )
    weights, gce_options = iv.checks_after_values(
        checked,
        lambda: _weights_and_options(sample_weight, checked, scale_free, options),
    )
    if isinstance(checked, iv.PendingPredictions) and not gce_options.bins_rows_as_checked:
        checked = checked.checked(top_label)
    return checked, weights, gce_options


def _weights_and_options(
    sample_weight: ArrayLike | None,
    checked: iv.CheckedInput,
    scale_free: bool,
    options: dict[str, object],
) -> tuple[NDArray | None, GCEOptions]:
    """The checked options, then the weights, scaled where the options leave them scale-free."""
    gce_options = GCEOptions.checked(checked.n_classes, n_samples=checked.n_samples, **options)
    counted = gce_options.adaptive_bins or gce_options.debias  # weights count as rows
    weights = iv.check_sample_weight(
        sample_weight, checked.n_samples, scale_free=scale_free and not counted
    )
    return weights, gce_options


def _class_wise_refusal() -> ValueError:
    """The error of a class-wise GCE call given ``Scores``, naming the registry's metrics."""
    class_wise = ", ".join(row.name for row in _registry.class_wise() if row.binned)
    acceptors = [row for row in _registry.accepting_scores() if row.binned]
    named = ", ".join(row.name for row in acceptors if row.settings)  # ECE, ...: rows of GCE
    either = "/".join(row.name for row in acceptors if row.settings is None)
    return ValueError(
        "class-wise measures (class_conditional=True, or top_k_classes other than 1: "
        f"{class_wise}) need a (N, K) probability matrix; Scores holds one score per row. "
        f"Bin Scores with {named}, or {either} with class_conditional=False and "
        "top_k_classes=1; pass a binary classifier's P(y = 1) here as "
        "np.column_stack([1 - p, p])."
    )


def checked_table(
    checked: iv.CheckedInput, weights: NDArray | None, options: GCEOptions
) -> CalibrationTable:
    """The per-(group, bin) sums, by the fastest path for the options."""
    edges, *sums = tabulate(checked, weights, options)
    return table_of_sums(sums, options, checked.n_classes, checked.pairs is not None, edges)


@dataclass(frozen=True)
class EntryCells:
    """Where each entry of a binned metric's score set falls, for reweighting the rows.

    Built once by :func:`entry_cells`, so that ``calibration_toolbox.stats`` can recompute
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


def entry_cells(checked: iv.CheckedInput, gce_options: GCEOptions) -> EntryCells | None:
    """The score set of a checked GCE call with its cells; ``None`` for equal mass.

    ``checked`` and ``gce_options`` are :func:`checked_call`'s (the rows are not checked
    again).  Equal-mass edges depend on the weights, so those bins are not fixed per entry.
    """
    if gce_options.adaptive_bins:
        return None
    if isinstance(checked, iv.PendingPredictions):
        checked = checked.checked(top_label=gce_options.top_k == 1)
    # The row index rides through `score_set` as the entries' "weights", so each entry's
    # row is picked exactly as a weight would be.
    groups, scores, targets, rows = score_set(checked, np.arange(checked.n_samples), gce_options)
    n_bins = gce_options.n_bins
    cells = flat_cells(gce_options, groups, scores)
    cells *= 2
    cells += targets
    return EntryCells(
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


def _dask_table(prob, labels, *, logits, sample_weight, renormalize, **options):
    """The table and checked options of a GCE call on Dask arrays chunked along rows.

    Each row chunk is tabulated in the workers by :func:`_chunk_table` (the in-memory
    engine, checks included) and the tables are added in canonical-block order, as one
    in-memory call adds them (``_dask.block_sums``): the same table to the last bit.
    """
    n_classes, checked_options, options = _dask_options(prob, options)
    chunk = functools.partial(
        _chunk_table, logits=logits, renormalize=renormalize, options=options
    )
    total, _ = _dask.block_sums(prob, labels, sample_weight, chunk, n_classes, zero=zeroed)
    return total, checked_options


def _dask_options(prob, options: dict) -> tuple[int, GCEOptions, dict]:
    """K, the checked options and the options each chunk gets, of a GCE call on Dask arrays.

    Equal-mass edges are refused (they depend on all the rows); ``bins='auto'`` is
    resolved once from all the rows, so that every chunk bins alike.
    """
    n_classes = _dask.n_classes(prob)
    checked_options = GCEOptions.checked(n_classes, n_samples=_dask_rows(prob), **options)
    if checked_options.adaptive_bins:
        equal_mass = ", ".join(row.name for row in _registry.equal_mass())
        raise ValueError(
            f"adaptive_bins=True ({equal_mass}) does not stream over Dask chunks: "
            "equal-mass edges depend on all the rows. Call .compute() first, or use fixed "
            "edges (adaptive_bins=False; bins an integer or an array of edges)."
        )
    if isinstance(options["bins"], str):  # 'auto', resolved once from all the rows
        options = {**options, "bins": checked_options.n_bins}
    return n_classes, checked_options, options


@dataclass(frozen=True)
class _BlockCells:
    """A canonical row block's entry cells (its own rows from 0) and its checked weights."""

    n_rows: int
    cells: EntryCells
    weights: NDArray | None


@dataclass(frozen=True)
class _TableAndCells:
    """The table of some canonical row blocks and their entry cells, block after block.

    ``+`` adds the tables (as ``_dask.block_sums`` adds any result, in block order) and
    keeps the blocks' cells in that order, joined once at the end (:func:`dask_cells`).
    """

    table: CalibrationTable
    blocks: tuple[_BlockCells, ...]

    def __add__(self, other: _TableAndCells) -> _TableAndCells:
        return _TableAndCells(self.table + other.table, self.blocks + other.blocks)


def _chunk_cells(prob, labels, weights, *, logits, renormalize, options):
    """One block's table and entry cells (the in-memory path of ``stats.bootstrap``)."""
    checked, checked_weights, checked_options = checked_call(
        prob, labels, logits=logits, sample_weight=weights, renormalize=renormalize, **options
    )
    table = checked_table(checked, checked_weights, checked_options)
    block = _BlockCells(checked.n_samples, entry_cells(checked, checked_options), checked_weights)
    return _TableAndCells(table, (block,)), len(labels) if weights is None else weights.sum()


def _zeroed_cells(result: _TableAndCells) -> _TableAndCells:
    """A block whose weights are all 0: its table adds nothing, its rows weigh 0."""
    blocks = tuple(
        dataclasses.replace(block, weights=np.zeros(block.n_rows)) for block in result.blocks
    )
    return _TableAndCells(zeroed(result.table), blocks)


def dask_cells_job(prob, labels, *, logits, sample_weight, renormalize, **options):
    """The table and entry cells of a GCE call on Dask arrays, as a job of one pass.

    Returns ``(job, checked options)``: ``job`` is for ``_dask.block_sums_together``
    (several models' jobs computed in one pass), whose result :func:`dask_cells` turns
    into what :func:`checked_table` and :func:`entry_cells` give the same rows in memory,
    to the last bit: each canonical row block is checked, tabulated and given its cells
    by the in-memory path, the tables added in block order, the cells joined in it.
    """
    n_classes, checked_options, options = _dask_options(prob, options)
    chunk = functools.partial(
        _chunk_cells, logits=logits, renormalize=renormalize, options=options
    )
    return (prob, labels, sample_weight, chunk, n_classes, _zeroed_cells), checked_options


def dask_cells(
    result, options: GCEOptions
) -> tuple[CalibrationTable, EntryCells, int, NDArray | None]:
    """``(table, cells, N, checked weights)`` of a computed :func:`dask_cells_job`.

    ``options`` are the job's checked options.  The table of an explicit score set (top-r
    entries, ``options.bins_rows_as_checked`` false) is summed in memory over all the
    entries at once, from the cells, as :func:`checked_table` sums it; the others are the
    block sums, as in memory.
    """
    total, _ = result
    blocks = total.blocks
    starts = np.cumsum([0] + [block.n_rows for block in blocks])
    cells = dataclasses.replace(
        blocks[0].cells,
        rows=np.concatenate(
            [block.cells.rows + start for block, start in zip(blocks, starts, strict=False)]
        ),
        joint_cells=np.concatenate([block.cells.joint_cells for block in blocks]),
        scores=np.concatenate([block.cells.scores for block in blocks]),
    )
    weights = None
    if blocks[0].weights is not None:
        weights = np.concatenate([block.weights for block in blocks])
    table = total.table
    if not options.bins_rows_as_checked:
        table = _score_set_table(table, cells, weights)
    return table, cells, int(starts[-1]), weights


def _score_set_table(table: CalibrationTable, cells: EntryCells, weights) -> CalibrationTable:
    """``table`` with the sums of the entries added at once, in entry order (``bin_sums``)."""
    entry_weights = None if weights is None else weights[cells.rows]
    counts, score_sums, target_sums = bin_sums(
        cells.joint_cells >> 1,
        cells.n_groups * cells.n_bins,
        cells.scores,
        cells.joint_cells & 1,
        entry_weights,
    )
    shape = table.counts.shape
    return dataclasses.replace(
        table,
        counts=counts.reshape(shape),
        score_sums=score_sums.reshape(shape),
        target_sums=target_sums.reshape(shape),
    )


def _dask_rows(prob) -> int | None:
    """The rows of a Dask array, or None while its chunk sizes are unknown (NaN)."""
    rows = (prob.values if isinstance(prob, Scores) else prob).shape[0]
    return int(rows) if np.isfinite(rows) else None


def _chunk_table(prob, labels, weights, *, logits, renormalize, options):
    """The table of one chunk (the in-memory engine, checks included) and its total weight."""
    table, _ = tabulated(
        prob,
        labels,
        logits=logits,
        sample_weight=weights,
        renormalize=renormalize,
        **options,
    )
    return table, len(labels) if weights is None else weights.sum()
