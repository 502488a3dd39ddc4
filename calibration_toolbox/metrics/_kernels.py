"""The tabulation kernels of the binned engine, behind one dispatcher: :func:`tabulate`.

Given checked rows, their weights and the checked options, :func:`tabulate` picks the
kernel that computes the flat per-(group, bin) sums (count, score sum, target sum) of the
table the fastest, and returns them with the edges:

* equal-width bins of the top label or of (score, target) pairs
  (:func:`_top_label_equal_width`) and of all N x K entries
  (:func:`_all_entries_equal_width`, :class:`_AllEntrySums`): the rows are binned as the
  scan checks them, canonical row block after canonical row block, so memory does not
  grow with N and a stream or a Dask chunk of whole blocks gives the same bits;
* class-wise equal-mass bins of all entries without weights, from one sort of each column
  (:func:`_all_entries_equal_mass`);
* every other score set, extracted explicitly (:func:`_score_set_sums`: top-r entries,
  weighted equal mass).

Imports: NumPy, ``_validation`` (the checked types and the scan), ``_rows`` (the block-size
policy), ``binning`` and the layers below (``metrics._options``, ``metrics._scoresets``);
imported by ``metrics._engine`` and ``streaming`` (which adds blocks to its totals).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox import _validation as iv
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
    bin_sums,
    grouped_searchsorted,
    sort_rows_with_flags,
)
from calibration_toolbox.metrics._options import GCEOptions
from calibration_toolbox.metrics._scoresets import (
    cut_for,
    flat_cells,
    kept_entries,
    score_set,
    top_label_entries,
)

__all__ = ["tabulate"]


def tabulate(
    checked: iv.Predictions | iv.PendingPredictions | iv.Pairs,
    weights: NDArray | None,
    options: GCEOptions,
    totals: BlockTotals | None = None,
) -> tuple:
    """``(edges, counts, score_sums, target_sums)`` of the table, by the kernel for the options.

    The sums are flat over the (group, bin) cells; ``edges`` is ``None`` for the options'
    fixed edges, else the ``(n_groups, n_bins + 1)`` edges of the groups.  Equal-width bins
    of the top label or of all entries (``options.bins_rows_as_checked``) accept pending
    rows (checked by the scan) and ``totals``: the
    :class:`~calibration_toolbox.binning.BlockTotals` of the canonical blocks before these
    rows (which start a canonical block), to which the rows' blocks are added (the
    streaming hook).  The other kernels need checked rows.
    """
    if options.bins_rows_as_checked:
        kernel = _all_entries_equal_width if options.top_k is None else _top_label_equal_width
        return (None, *kernel(checked, weights, options, totals))
    if options.top_k is None and options.class_conditional and weights is None:
        return _all_entries_equal_mass(
            checked.prob, checked.labels, options.n_bins, options.thresholding
        )
    return _score_set_sums(checked, weights, options)


def _top_label_equal_width(
    checked: iv.Predictions | iv.PendingPredictions | iv.Pairs,
    weights: NDArray | None,
    options: GCEOptions,
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
        groups, scores, targets, row_weights = kept_entries(
            options.thresholding, groups, scores, targets, row_weights
        )
        block[0].add(flat_cells(options, groups, scores), scores, targets, row_weights)
        if last:
            totals.add(*block[0].totals())
            block[0] = BinSums(n_cells, weights is not None)

    if checked.pairs is not None:
        scores, targets = checked.top_label()
        for rows, last in canonical_blocks(checked.n_samples, 2, CACHE_BLOCK_ELEMENTS):
            add(rows, last, None, scores[rows], targets[rows])
    else:
        prob, labels = checked.prob, checked.labels
        ends = _canonical_ends(checked)

        def add_block(rows: slice, summary: RowSummary) -> None:
            block = iv.Predictions(prob[rows], labels[rows], summary)
            add(rows, ends(rows), *top_label_entries(block, options.class_conditional))

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


def _all_entries_equal_width(
    checked: iv.Predictions | iv.PendingPredictions,
    weights: NDArray | None,
    options: GCEOptions,
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
    cut = cut_for(options.edges[1] if subtract_first_bin else options.thresholding, prob.dtype)
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
        self, checked, weights, options: GCEOptions, cut, column_totals_too: bool, totals
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
        self.above.add(flat_cells(options, columns, scores), scores, None, weights)
        if weights is not None and self.column_totals_too:
            self.entries_above += np.bincount(columns, weights=weights > 0, minlength=n_classes)
        row_weights = None if self.weights is None else self.weights[rows]
        # The label entries' classes are their groups; their targets are all 1 (not needed).
        labels, label_scores, _, label_weights = kept_entries(
            options.thresholding, self.labels[rows], label_scores, label_scores, row_weights
        )
        add_counts(self.label_counts, flat_cells(options, labels, label_scores), label_weights)


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
    options: GCEOptions,
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
    cut = cut_for(threshold, prob.dtype) if threshold > 0 else None
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


def _score_set_sums(
    checked: iv.Predictions | iv.Pairs, weights: NDArray | None, options: GCEOptions
):
    """Edges and sums of the explicit score set (top-r entries, pairs, weighted equal-mass)."""
    n_groups, n_bins = options.n_groups(checked.n_classes), options.n_bins
    groups, scores, targets, entry_weights = score_set(checked, weights, options)
    if options.adaptive_bins:
        return _equal_mass_sums(groups, scores, targets, entry_weights, n_groups, n_bins)
    sums = bin_sums(
        flat_cells(options, groups, scores), n_groups * n_bins, scores, targets, entry_weights
    )
    return (np.broadcast_to(options.edges, (n_groups, n_bins + 1)), *sums)


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
