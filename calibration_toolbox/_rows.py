"""The compute kernel under every metric and fit: row blocks and the fused top-label scan.

A pass over an ``(N, K)`` array goes through it in row blocks of a fixed number of values
(:func:`row_blocks`, :func:`block_rows`), so that what a block needs stays in cache and the
temporaries stay a few MiB whatever N.  Every block and chunk size of the package is
defined here, beside the reason for its value.

:func:`scan_rows` is the one pass over probabilities that the metrics start with: it checks
the range and the row sums and, while each block is in cache, takes the label's
probability and the top label (confidence and what is needed of the argmax).  It reports
what it finds as plain values (:class:`RowScan`), for all N rows or, so that memory does
not grow with N, block by block to a consumer that uses each block as it is checked (the
equal-width tables, the Brier score, the log-likelihood); turning a problem into an error
message is the job of :mod:`calibration_toolbox._validation`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "ALL_ENTRIES_BLOCK_ELEMENTS",
    "ARGMAX_BLOCK_ELEMENTS",
    "BINNING_BATCH_ENTRIES",
    "CACHE_BLOCK_ELEMENTS",
    "CANONICAL_BLOCK_ELEMENTS",
    "COLUMN_LOOP_MAX_K",
    "GEMM_BLOCK_ELEMENTS",
    "HAND_OVER_ROWS",
    "ISOTONIC_CHUNK_ELEMENTS",
    "LOGISTIC_BLOCK_ROWS",
    "MAX_THREAD_CHUNKS",
    "SORT_CHUNK_ELEMENTS",
    "THREAD_CHUNK_ELEMENTS",
    "RowProblem",
    "RowScan",
    "RowSummary",
    "block_rows",
    "canonical_blocks",
    "canonical_rows",
    "row_blocks",
    "row_max",
    "scan_rows",
    "take_entries",
]

# -- The block-size policy ------------------------------------------------------------

#: Values per row block of a pass over an (N, K) array: 2**17 (512 KiB of float32, 1 MiB of
#: float64) stay in L2, so a block read once is reused from cache by every reduction over
#: it, and the block is large enough that NumPy's per-call overhead is small at K = 1,000.
CACHE_BLOCK_ELEMENTS = 1 << 17
#: Values per row block of the scan that takes the top label by a row argmax (K above
#: COLUMN_LOOP_MAX_K): the argmax and the row sums are two passes over the block, so the
#: block may leave L2 for L3, while fewer blocks save some 15 NumPy calls each.  On
#: 50,000 x 1,000 float32 ECE took 18.5 ms with 2**17 values per block, 16.6 ms with 2**18
#: and 14.6 ms with 2**19 (2**20: 15.0 ms; best of 15, ``p.sum()`` 8.0 ms); at K = 100 the
#: size made no difference (54-58 ms).
ARGMAX_BLOCK_ELEMENTS = 1 << 19
#: Values per row block of GCE's pass over all N x K entries with equal-width bins: that
#: pass keeps several block-sized temporaries (the contiguous copy, the indices of the
#: entries above the first edge, their bins), which 2**18 values keep in L2/L3.
ALL_ENTRIES_BLOCK_ELEMENTS = 1 << 18
#: Entries that GCE's pass over all N x K entries gathers (those above the first edge, and
#: the label entries) before binning them at once.  Binned per row block, the few thousand
#: entries of a block cost some 25 NumPy calls: SCE on the real 500,000 x 100 float32
#: CIFAR-100 predictions (1.4 % of the entries above 1/15) took 91 ms, 74 ms when binned
#: per 2**16 entries (best of 27; same time on 1,000,000 x 10, where a block alone holds
#: more).  The buffers cost 1.6 MiB of extra memory there, whatever N (2**17: 3.4 MiB more
#: on the synthetic 1,000,000 x 10 of bench_engine.py, for no gain).
BINNING_BATCH_ENTRIES = 1 << 16
#: Values per row block of a pass that multiplies each block by a full (K, K) matrix with
#: BLAS: larger blocks amortise waking BLAS threads (several ms on the shared 2-core
#: machines, for a product that takes well under 1 ms).
GEMM_BLOCK_ELEMENTS = 1 << 20
#: A threaded pass splits the rows into at most MAX_THREAD_CHUNKS chunks of at least
#: THREAD_CHUNK_ELEMENTS values (2**21, 8 MiB of float32: a chunk is worth waking a thread
#: for).  The split depends on the shape alone, so sums added chunk by chunk do not depend
#: on how many threads process the chunks.
THREAD_CHUNK_ELEMENTS = 1 << 21
MAX_THREAD_CHUNKS = 16
#: Scores sorted and pooled at once by the nonparametric fits (isotonic regression,
#: equal-mass histogram binning), a few binary problems at a time: 2**21 (16 MiB of
#: float64) bounds their working memory at many classes for little extra time.
SORT_CHUNK_ELEMENTS = 1 << 21
#: The same for isotonic regression, whose sorted, pooled chunk and PAV keep about 30 bytes
#: per score: 2**20 (one class at a time at N = 1e6) holds the one-vs-rest fit of 1e6 x 10
#: float32 probabilities to 1.1x their bytes (tracemalloc; 1.6x with 2**21) and the rise of
#: the peak RSS to 1.25x once scipy.optimize is loaded (its import adds 21 MiB; with it,
#: 2.0x, against 2.9x with 2**21), in about the same time.
ISOTONIC_CHUNK_ELEMENTS = 1 << 20
#: Rows per block of a binary logistic fit's pass (Platt, beta), which keeps about a dozen
#: float64 temporaries per block: 2**14 rows (128 KiB each) hold the fit's extra memory to
#: 0.7x its float32 input at N = 1e6 (2**17 rows: 3.7x) at the same speed (beta fit 1.4 s
#: for 1.4 s; 2**15 rows took 2.9 s, reproducibly, on the shared 2-core machine).
LOGISTIC_BLOCK_ROWS = 1 << 14
#: Rows handed at once by :func:`scan_rows` to the equal-width top-label tables, which bin
#: the rows as they are checked: whole cache blocks, as many as fit in 2**14 rows (at
#: K = 10 a block of 13,107 rows).  Binning costs some 20 NumPy calls per hand-over: per
#: 131-row block at K = 1,000, ECE on 50,000 x 1,000 took 26 ms against 18.5 ms for all
#: rows at once (best of 30); handed over 2**14 rows at a time, 18.5 ms again.
HAND_OVER_ROWS = 1 << 14
#: Values per canonical row block (:func:`canonical_rows`): every streamed sum (the
#: equal-width tables, the Brier and log-likelihood sums, the total weight) is defined as
#: the sums of each canonical block, computed from zero, added one block after the other,
#: so that one call, a stream of batches and Dask chunks give the same bits.  Each block
#: costs some 40 NumPy calls of its own: on the real predictions of bench_engine.py (float32,
#: median of 15), SCE took 72.0 ms at 500,000 x 100 and 39.7 ms at 1,000,000 x 10 as one
#: block, 76.8 / 42.7 ms with 2**20 values per block, 76.8 / 41.2 ms with 2**21 and
#: 73.1 / 40.4 ms with 2**22 (ECE 45.0 / 28.0 ms as one block, 45.4 / 27.4 ms with 2**22).
#: A stream keeps at most one block of rows: 2**22 values, 16 MiB of float32.
CANONICAL_BLOCK_ELEMENTS = 1 << 22
#: Up to this many classes the row maximum is taken column by column over a row block in
#: cache, several times faster than the strided ``max(axis=1)`` (at K = 10 NumPy's row
#: max/argmax take 15-30x as long as one ``p.sum()`` pass; the column loop roughly halves
#: top-label ECE).  At K = 1,000 the row reductions are close to the memory pass.
COLUMN_LOOP_MAX_K = 32

# Unsigned integers as wide as each float type.
_BIT_TYPES = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def block_rows(n_cols: int, block_elements: int = CACHE_BLOCK_ELEMENTS) -> int:
    """Rows in one block of about ``block_elements`` values (at least one row).

    Examples
    --------
    >>> from calibration_toolbox._rows import block_rows
    >>> block_rows(10), block_rows(10**6)
    (13107, 1)
    """
    return max(1, block_elements // max(1, n_cols))


def row_blocks(
    n_rows: int, n_cols: int, block_elements: int = CACHE_BLOCK_ELEMENTS
) -> Iterator[slice]:
    """Yield ``slice`` objects covering ``range(n_rows)`` in blocks of :func:`block_rows` rows.

    Examples
    --------
    >>> from calibration_toolbox._rows import row_blocks
    >>> list(row_blocks(5, 2, block_elements=4))
    [slice(0, 2, None), slice(2, 4, None), slice(4, 5, None)]
    """
    step = block_rows(n_cols, block_elements)
    for start in range(0, n_rows, step):
        yield slice(start, min(start + step, n_rows))


def canonical_rows(n_cols: int) -> int:
    """R(K), the rows of a canonical row block: ``max(1, CANONICAL_BLOCK_ELEMENTS // K)``.

    Canonical block ``j`` holds the rows ``[j R, (j + 1) R)`` of all the rows (the last one
    fewer).  A streamed sum is defined as ``((s_0 + s_1) + s_2) + ...`` in float64, ``s_j``
    the sum of block ``j`` computed from zero by a method that depends on its rows alone.

    Examples
    --------
    >>> from calibration_toolbox._rows import canonical_rows
    >>> canonical_rows(10), canonical_rows(1000)
    (419430, 4194)
    """
    return block_rows(n_cols, CANONICAL_BLOCK_ELEMENTS)


def canonical_blocks(
    n_rows: int, n_cols: int, block_elements: int = 0
) -> Iterator[tuple[slice, bool]]:
    """Row blocks that never cross a canonical block, each with whether it ends one.

    Within each canonical block (:func:`canonical_rows` of ``n_cols``) the blocks are those
    of :func:`row_blocks` from the canonical block's first row, so what a block holds
    depends on the canonical block alone; ``block_elements=0``: the canonical blocks.

    Examples
    --------
    >>> from calibration_toolbox._rows import canonical_blocks
    >>> [(rows.start, rows.stop, last) for rows, last in canonical_blocks(3, 2**21, 2**22)]
    [(0, 2, True), (2, 3, True)]
    """
    step = canonical_rows(n_cols)
    for start in range(0, n_rows, step):
        stop = min(start + step, n_rows)
        if not block_elements:
            yield slice(start, stop), True
            continue
        for rows in row_blocks(stop - start, n_cols, block_elements):
            yield slice(start + rows.start, start + rows.stop), rows.stop == stop - start


def take_entries(block: NDArray, columns: NDArray, within_block: NDArray, out: NDArray) -> NDArray:
    """``block[i, columns[i]]`` for each row ``i`` of a row block, into ``out``.

    ``within_block`` is ``arange`` of at least the block's rows.  A C-contiguous block is
    read by one ``take`` at flat indices, which at K = 100 gathers 2-3x faster than 2-D
    fancy indexing (the label and confidence gathers of ECE on 500,000 x 100 float32 took
    some 20 ms of its 55 ms that way).
    """
    n_rows = len(block)
    if not block.flags.c_contiguous:
        out[...] = block[within_block[:n_rows], columns]
        return out
    flat_index = within_block[:n_rows] * block.shape[1]
    flat_index += columns
    return np.take(block.reshape(-1), flat_index, out=out)


def row_max(block: NDArray, out: NDArray) -> NDArray:
    """Row maximum of a row block into ``out`` (any float dtype).

    For small K (see :data:`COLUMN_LOOP_MAX_K`) a running maximum over the columns is
    several times faster than the strided ``max(axis=1)``; the block should fit in cache
    (see :func:`row_blocks`).
    """
    if block.shape[1] > COLUMN_LOOP_MAX_K:
        return np.maximum.reduce(block, axis=1, out=out)
    np.copyto(out, block[:, 0])
    for column in range(1, block.shape[1]):
        np.maximum(out, block[:, column], out=out)
    return out


class RowSummary(NamedTuple):
    """What the scan over the rows learnt, for the metrics to reuse.

    ``label_scores`` is ``prob[i, labels[i]]`` when labels were given.  With the top label,
    ``confidence`` is the row maximum, and either ``prediction`` is the first-index argmax
    (large K) or ``tied_rows`` lists the rows whose maximum is attained more than once: the
    only rows where the label's entry being the maximum does not make it the argmax.

    A summary handed over block by block (``each_block`` of :func:`scan_rows`) describes
    the rows handed over, ``tied_rows`` counting from the first of them.
    """

    label_scores: NDArray | None = None
    confidence: NDArray | None = None
    prediction: NDArray | None = None
    tied_rows: NDArray | None = None

    def correct(self, prob: NDArray, labels: NDArray) -> NDArray:
        """Whether the first-index argmax of each row is its label."""
        if self.prediction is not None:
            return self.prediction == labels
        correct = self.label_scores == self.confidence
        if len(self.tied_rows):
            tied = self.tied_rows
            correct[tied] = np.argmax(prob[tied], axis=1) == labels[tied]
        return correct


class RowProblem(NamedTuple):
    """The first invalid row block :func:`scan_rows` met.

    ``out_of_range``: a value of the block is NaN or outside [0, 1] (``row`` is the block's
    first row).  Otherwise row ``row`` sums to ``row_sum``, off 1 by more than the tolerance.
    """

    row: int
    out_of_range: bool
    row_sum: float = float("nan")


class RowScan(NamedTuple):
    """Result of :func:`scan_rows`: the summary, or the first problem and an empty summary."""

    summary: RowSummary
    problem: RowProblem | None


class _RangeAndSums:
    """Per block without the top label: an integer range check and the row sums.

    What a block learns is written at ``part``, a slice of buffers that hold every row
    (``buffer_rows == N``) or the rows handed over at a time.
    """

    def __init__(self, array: NDArray, buffer_rows: int, step: int):
        self.bit_type = _BIT_TYPES[array.dtype]
        # The bit patterns of floats in [+0, 1] order like the values and lie at or below
        # the pattern of 1.0; NaN, values above 1 and negative values (sign bit) all lie
        # above it.  One integer maximum thus checks the range.
        self.one_bits = array.dtype.type(1).view(self.bit_type)

    def block(self, part: slice, block: NDArray) -> tuple[bool, NDArray]:
        """Whether the block's bit patterns are all in range, and its row sums."""
        return block.view(self.bit_type).max() <= self.one_bits, np.einsum("ij->i", block)

    def redo_in_floats(self, part: slice, block: NDArray) -> None:
        """Redo what the bit patterns got wrong in a block holding -0.0 (nothing here)."""

    def summary(self, label_scores: NDArray | None, n_rows: int) -> RowSummary:
        """The summary of the first ``n_rows`` rows of the buffers."""
        return RowSummary(None if label_scores is None else label_scores[:n_rows])


class _ColumnLoopTopLabel(_RangeAndSums):
    """Top label for small K: each block transposed into a (K, rows) buffer in cache.

    There the row maximum, the row sums and the count of entries equal to the maximum
    (ties) are fast contiguous reductions.
    """

    def __init__(self, array: NDArray, buffer_rows: int, step: int):
        super().__init__(array, buffer_rows, step)
        self.confidence = np.empty(buffer_rows, dtype=array.dtype)
        self.transposed = np.empty((array.shape[1], step), dtype=array.dtype)
        self.tied_blocks: list[NDArray] = []

    def block(self, part: slice, block: NDArray) -> tuple[bool, NDArray]:
        """Range check and row sums; the confidence and the tied rows on the way."""
        columns = self.transposed[:, : len(block)]
        columns[...] = block.T
        confidence = self.confidence[part]
        np.maximum.reduce(columns, axis=0, out=confidence)
        in_range = confidence.view(self.bit_type).max() <= self.one_bits and block.min() >= 0
        if in_range:
            equal_to_max = columns == confidence
            if np.count_nonzero(equal_to_max) > len(block):
                tied = np.flatnonzero(np.count_nonzero(equal_to_max, axis=0) > 1)
                self.tied_blocks.append(part.start + tied)
        return in_range, np.add.reduce(columns, axis=0)

    def summary(self, label_scores: NDArray | None, n_rows: int) -> RowSummary:
        """The summary of the first ``n_rows`` rows; the tied rows start anew after it."""
        blocks, self.tied_blocks = self.tied_blocks, []
        tied_rows = np.concatenate(blocks) if blocks else np.empty(0, dtype=np.intp)
        label_scores = None if label_scores is None else label_scores[:n_rows]
        return RowSummary(label_scores, self.confidence[:n_rows], tied_rows=tied_rows)


class _ArgmaxTopLabel(_RangeAndSums):
    """Top label for large K: an argmax at memory speed on the block's bit patterns.

    For floats in [+0, 1] an integer argmax of the bit patterns is the float argmax, and the
    largest pattern is also the range check.
    """

    def __init__(self, array: NDArray, buffer_rows: int, step: int):
        super().__init__(array, buffer_rows, step)
        self.confidence = np.empty(buffer_rows, dtype=array.dtype)
        self.prediction = np.empty(buffer_rows, dtype=np.intp)
        self.within_block = np.arange(step)

    def block(self, part: slice, block: NDArray) -> tuple[bool, NDArray]:
        """Range check and row sums; the prediction and the confidence on the way."""
        prediction = np.argmax(block.view(self.bit_type), axis=1)
        take_entries(block, prediction, self.within_block, self.confidence[part])
        self.prediction[part] = prediction
        in_range = self.confidence[part].view(self.bit_type).max() <= self.one_bits
        return in_range, np.einsum("ij->i", block)

    def redo_in_floats(self, part: slice, block: NDArray) -> None:
        """Float argmax of a block holding -0.0, whose sign bit the integers saw."""
        self.prediction[part] = np.argmax(block, axis=1)
        take_entries(block, self.prediction[part], self.within_block, self.confidence[part])

    def summary(self, label_scores: NDArray | None, n_rows: int) -> RowSummary:
        """The summary of the first ``n_rows`` rows of the buffers."""
        label_scores = None if label_scores is None else label_scores[:n_rows]
        return RowSummary(label_scores, self.confidence[:n_rows], self.prediction[:n_rows])


def _block_scan(array: NDArray, top_label: bool, buffer_rows: int, step: int) -> _RangeAndSums:
    if not top_label:
        return _RangeAndSums(array, buffer_rows, step)
    if array.shape[1] <= COLUMN_LOOP_MAX_K:
        return _ColumnLoopTopLabel(array, buffer_rows, step)
    return _ArgmaxTopLabel(array, buffer_rows, step)


def _block_problem(
    scan: _RangeAndSums, rows: slice, part: slice, block: NDArray, tolerance: float
) -> RowProblem | None:
    """Scan one block (at ``part`` of the buffers); its first problem, if any."""
    in_range, row_sums = scan.block(part, block)
    if not in_range:
        # NaN propagates through min/max, so this catches NaN, inf and out-of-range
        # values; what passes it is -0.0, a valid 0 whose sign bit the integers saw.
        if not (block.min() >= 0 and block.max() <= 1):
            return RowProblem(rows.start, out_of_range=True)
        scan.redo_in_floats(part, block)
    off = np.abs(row_sums - 1) > tolerance
    if off.any():
        row = int(np.flatnonzero(off)[0])
        return RowProblem(rows.start + row, False, float(row_sums[row]))
    return None


def scan_rows(
    array: NDArray,
    tolerance: float,
    *,
    labels: NDArray | None = None,
    top_label: bool = False,
    block_elements: int | None = None,
    each_block: Callable[[slice, RowSummary], None] | None = None,
    chunk_rows: int = 0,
    canonical: bool = False,
) -> RowScan:
    """One blocked pass over float32/float64 ``(N, K)`` probabilities.

    Checks that every value is in [0, 1] (no NaN) and that every row sums to 1 within
    ``tolerance``, and takes the label's probability of each row (when ``labels`` are
    given) and the top label (with ``top_label``), while each row block of about
    ``block_elements`` values is in cache (by default :data:`ARGMAX_BLOCK_ELEMENTS` when
    the top label is taken by a row argmax, else :data:`CACHE_BLOCK_ELEMENTS`).  Stops at
    the first invalid block.

    Without ``each_block`` what was learnt is returned for all N rows.  With it, memory
    stays bounded: ``each_block(rows, summary)`` is called on each checked block, or on
    each run of whole blocks that fits in ``chunk_rows`` rows (see
    :data:`HAND_OVER_ROWS`), with the summary of those rows (``tied_rows`` counted from
    their first row) in buffers that the next call reuses; the returned summary is empty.
    With ``canonical``, the blocks and the runs handed over restart at each canonical
    block (:func:`canonical_blocks`): a run never crosses one, and ends at its last row.

    Returns
    -------
    RowScan
        ``(summary, None)``, or ``(RowSummary(), problem)`` at the first problem.
    """
    n_rows, n_classes = array.shape
    if block_elements is None:
        by_argmax = top_label and n_classes > COLUMN_LOOP_MAX_K
        block_elements = ARGMAX_BLOCK_ELEMENTS if by_argmax else CACHE_BLOCK_ELEMENTS
    step = min(n_rows, block_rows(n_classes, block_elements))
    run_limit = n_rows
    if canonical:  # blocks and runs that depend on the rows' place in their canonical block
        run_limit = canonical_rows(n_classes)
        step = min(block_rows(n_classes, block_elements), run_limit)
    buffer_rows = n_rows
    if each_block is not None:
        buffer_rows = step * max(1, min(run_limit, chunk_rows) // max(step, 1))
    # The buffers hold no more rows than the array (the runs are set by step and buffer_rows).
    held, held_step = min(buffer_rows, n_rows), min(step, n_rows)
    scan = _block_scan(array, top_label, held, held_step)
    label_scores = None if labels is None else np.empty(held, dtype=array.dtype)
    within_block = np.arange(held_step)
    start = 0  # first row of the buffers
    if canonical:
        order = canonical_blocks(n_rows, n_classes, block_elements)
    else:
        order = (
            (rows, rows.stop == n_rows) for rows in row_blocks(n_rows, n_classes, block_elements)
        )
    for rows, last in order:
        block = array[rows]
        part = slice(rows.start - start, rows.stop - start)
        if labels is not None:
            take_entries(block, labels[rows], within_block, label_scores[part])
        problem = _block_problem(scan, rows, part, block, tolerance)
        if problem is not None:
            return RowScan(RowSummary(), problem)
        if each_block is not None and (part.stop + step > buffer_rows or last):
            each_block(slice(start, rows.stop), scan.summary(label_scores, part.stop))
            start = rows.stop
    if each_block is not None:
        return RowScan(RowSummary(), None)
    return RowScan(scan.summary(label_scores, n_rows), None)
