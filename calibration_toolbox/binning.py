"""Bin assignment and per-(group, bin) sums.

Two binning schemes (see the user guide's *Conventions*):

* **equal width**: edges ``linspace(0, 1, B + 1)`` or any increasing edges from 0 to 1;
  bins are ``(lo, hi]`` with the first bin closed at 0, so a score on an interior edge goes
  to the lower bin, 1.0 to the last bin and 0.0 to the first;
* **equal mass** (Nixon et al. 2019): per score set, the edges are the sorted scores at
  positions ``round_half_even(n * j / B)``, ``j = 1 .. B - 1`` (clipped to ``n - 1``), and a
  score ``s`` goes to bin ``#{j : e_j <= s}``.  Tied scores share a bin.  With weights the
  positions are counted in mean weights (:func:`adaptive_edges`), so that the edges do not
  depend on the weights' scale.

Sums are returned as additive arrays (weighted count, score sum, target sum per group and
bin), so tables from disjoint batches can be added.
"""

from __future__ import annotations

import sys

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "BinSums",
    "BlockTotals",
    "adaptive_edges",
    "add_counts",
    "assign_bins",
    "bin_sums",
    "grouped_searchsorted",
    "is_uniform",
    "sort_rows_with_flags",
    "sort_rows_with_positions",
]

# Unsigned integers as wide as each float type.  For floats >= 0 the bit patterns order like
# the values, and for floats in [0, 1] the top bit is free.
_KEY_TYPES = {np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def is_uniform(edges: NDArray) -> bool:
    """Whether ``edges`` is exactly ``linspace(0, 1, len(edges))``."""
    return bool(np.array_equal(edges, np.linspace(0.0, 1.0, len(edges))))


def assign_bins(
    scores: NDArray,
    edges: NDArray,
    uniform: bool | None = None,
    *,
    out: NDArray | None = None,
    scratch: NDArray | None = None,
) -> NDArray:
    """Equal-width bin index of each score: bin ``b`` is ``(edges[b], edges[b + 1]]``.

    Scores at or below ``edges[1]`` (0 included) go to bin 0.  The result is always the
    one ``searchsorted`` gives on ``edges``; with uniform edges it comes from one
    multiplication, and only scores within rounding distance of an edge are searched.
    A loop over row blocks may pass its own C-contiguous buffers of the scores' shape:
    ``out`` (``intp``, the result) and ``scratch`` (float64), used for uniform edges and
    float32 scores (a fresh MiB-sized array per block is a fresh mapping of memory, its
    pages faulted in anew: 20-30 % of the multi-label ECE at 1,000,000 x 20).
    """
    n_bins = len(edges) - 1
    if uniform is None:
        uniform = is_uniform(edges)
    if not uniform:
        return _search_bins(scores, edges)
    if scores.dtype == np.float32 and n_bins < _EXACT_FLOAT32_BINS:
        return _float32_bins(scores, edges, out, scratch)
    scaled = np.multiply(scores, n_bins, dtype=np.float64)
    # scores * B and the linspace edges are each within about B * eps of the exact values,
    # so floor(scores * B) (= ceil - 1 off the integers) is the bin except within a few
    # B * eps of an integer (0 and 1 included), where the edges are searched.  The
    # truncation and the distance |frac - 1/2| from the middle of the bin are 5 passes
    # where rint, ceil and clip were 8: binned and counted in cache-sized blocks, 20e6
    # uniform scores took 404 ms against 1014 ms before, in the same run (p.max(axis=1)
    # of the same 1e6 x 20 array: 165 ms; a loaded machine).
    # C order whatever the layout of ``scores``: the flat positions below index both
    index = scaled.astype(np.intp, order="C")
    scaled -= index
    scaled -= 0.5
    np.abs(scaled, out=scaled)
    near_edge = np.flatnonzero(scaled >= 0.5 - 8 * n_bins * np.finfo(np.float64).eps)
    del scaled  # bounded memory: at most two N-sized temporaries at a time
    if len(near_edge):
        index.reshape(-1)[near_edge] = _search_bins(scores.reshape(-1)[near_edge], edges)
    return index


#: Up to this many bins, float32 scores times B are exact in float64 (24 + 27 bits) and a
#: score lies on the same side of every linspace edge as of the exact b / B (below).
_EXACT_FLOAT32_BINS = 1 << 27


def _float32_bins(
    scores: NDArray, edges: NDArray, out: NDArray | None, scratch: NDArray | None
) -> NDArray:
    """:func:`assign_bins` of float32 scores on ``linspace(0, 1, B + 1)``, B < 2**27.

    ``s * B`` is exact in float64 (a 24-bit significand times an integer below 2**27).
    Where it is no integer, the bin is its floor: ``s = m 2**q`` (m an integer), so
    ``|s B - b| = |m B - b 2**-q| 2**q >= 2**q`` for every integer b, that is
    ``|s - b / B| >= 2**q / B >= (b / B) 2**-24 / B``, far beyond the linspace edge's
    distance ``(b / B) 2**-51`` from ``b / B``: ``s`` is on the same side of ``edges[b]``
    as of ``b / B``.  Where ``s B`` is an integer (0 and 1 included; a score exactly on
    ``b / B``), ``edges[b]`` may round either way and the edges are searched.  Three passes
    (multiply, truncate, compare) where the general rule takes six; with the buffers
    reused, the multi-label ECE at 1,000,000 x 20 float32 went from 190 ms to 166 ms of
    CPU (best of 9; ``p.max(axis=1)``: 52 ms).
    """
    scaled = np.multiply(scores, len(edges) - 1, out=scratch, dtype=np.float64)
    # C order whatever the layout of ``scores``: the flat positions below index both
    if out is None:
        index = scaled.astype(np.intp, order="C")
    else:
        index = out
        np.copyto(index, scaled, casting="unsafe")  # truncation: the floor of s B >= 0
    on_edge = np.flatnonzero(scaled == index)
    del scaled
    if len(on_edge):
        index.reshape(-1)[on_edge] = _search_bins(scores.reshape(-1)[on_edge], edges)
    return index


def _search_bins(scores: NDArray, edges: NDArray) -> NDArray:
    index = np.searchsorted(edges, scores, side="left")
    index -= 1
    np.maximum(index, 0, out=index)
    return index


def grouped_searchsorted(
    edges: NDArray, groups: NDArray, values: NDArray, side: str = "right"
) -> NDArray:
    """``searchsorted(edges[g], v, side)`` for each pair ``(g, v)``.

    ``edges`` is ``(G, m)`` with each row sorted.  Values are visited group by group after
    one stable sort of the group indices, so the cost is one vectorised search per group.
    """
    result = np.empty(len(values), dtype=np.intp)
    if len(edges) <= np.iinfo(np.int16).max:
        groups = groups.astype(np.int16)  # NumPy's stable sort is a radix sort for 16 bits
    order = np.argsort(groups, kind="stable")
    sorted_groups = groups[order]
    present = np.flatnonzero(np.bincount(sorted_groups, minlength=len(edges)))
    bounds = np.searchsorted(sorted_groups, np.append(present, len(edges)))
    for group, start, stop in zip(present, bounds[:-1], bounds[1:], strict=True):
        rows = order[start:stop]
        result[rows] = np.searchsorted(edges[group], values[rows], side=side)
    return result


def adaptive_edges(
    sorted_scores: NDArray,
    starts: NDArray,
    stops: NDArray,
    n_bins: int,
    cumulative_weight: NDArray | None = None,
    positive_rows: NDArray | None = None,
) -> tuple[NDArray, NDArray]:
    """Equal-mass edges of several score sets stored as sorted runs of one array.

    Parameters
    ----------
    sorted_scores : ndarray, shape (M,)
        Scores, sorted within each run ``sorted_scores[starts[g]:stops[g]]``.
    starts, stops : ndarray, shape (G,)
        Run boundaries; runs are in increasing position order and may be empty.
    n_bins : int
        Number of bins B.
    cumulative_weight : ndarray, shape (M,), optional
        Inclusive cumulative sum of the weights in the same order.  The edge ``e_j`` of a
        weighted set of n rows (of positive weight) and total weight W is the element whose
        weight interval ``[c_(i-1), c_i)`` holds ``round_half_even(n j / B) * W / n``: the
        unweighted position, counted in units of the mean weight.  The edges are therefore
        those of the unweighted set when all weights are equal, and do not change when
        every weight is multiplied by a constant (``sample_weight=c * w`` gives the value
        of ``w``, as for every other measure); integer weights give the edges of the set
        with duplicated rows only where the two positions round alike.
    positive_rows : ndarray, shape (G,), optional
        The number n of rows of positive weight of each run (default: its length, for
        runs that hold only such rows).

    Returns
    -------
    interior : ndarray, shape (G, B - 1)
        Edges ``e_1 .. e_(B-1)`` of each set (``linspace`` for an empty set).
    full : ndarray, shape (G, B + 1)
        The same with 0 and 1 added at the ends, for tables and plots.
    """
    n_groups = len(starts)
    sizes = stops - starts
    full = np.tile(np.linspace(0.0, 1.0, n_bins + 1), (n_groups, 1))
    nonempty = np.flatnonzero(sizes > 0)
    if n_bins == 1 or len(nonempty) == 0:
        return full[:, 1:-1], full
    first, last = starts[nonempty], stops[nonempty] - 1
    rows = sizes[nonempty] if positive_rows is None else positive_rows[nonempty]
    # (n * j) / B is exact for n * j < 2**53, so np.round's half-to-even is applied to
    # the exact quotient, as Nixon et al.'s reference rounds n * j / B.
    targets = np.round(np.outer(rows, np.arange(1, n_bins)) / n_bins)
    if cumulative_weight is None:
        positions = first[:, None] + targets.astype(np.intp)
    else:
        positions = _weighted_positions(cumulative_weight, first, last, rows, targets)
    np.minimum(positions, last[:, None], out=positions)
    full[nonempty, 1:-1] = sorted_scores[positions]
    return full[:, 1:-1], full


def _weighted_positions(
    cumulative_weight: NDArray, first: NDArray, last: NDArray, rows: NDArray, targets: NDArray
) -> NDArray:
    """The element of each run whose weight interval holds ``targets`` mean weights.

    Where a target falls on an interval's end in exact arithmetic (equal or integer
    weights), the cumulative sums and the target may round to either side of each other;
    the target is raised by 4 units in the last place per row summed up to the run's end,
    the bound of the sequential sums' rounding, so that the element after the end is
    taken, as exactly.  A weight below that share of the running total (2**-50 of it per
    row) can be passed over: such a row has no say in any bin's mean.
    """
    before = np.where(first > 0, cumulative_weight[np.maximum(first - 1, 0)], 0.0)
    mean_weight = (cumulative_weight[last] - before) / rows
    slack = 1.0 + 4 * np.finfo(np.float64).eps * (last + 1)
    held = (before[:, None] + targets * mean_weight[:, None]) * slack[:, None]
    return np.searchsorted(cumulative_weight, held, side="right")


def sort_rows_with_flags(buffer: NDArray, shape: tuple[int, int], flagged: NDArray) -> NDArray:
    """Sort rows of scores in place, each entry carrying a 0/1 flag, without an argsort.

    ``buffer`` is a 1-D float32/float64 array of scores in [0, 1] whose first
    ``shape[0] * shape[1]`` entries are the rows (anything after them is left as it is);
    the entries at the flat indices ``flagged`` have flag 1.  Each score's bit pattern,
    which orders like the value for floats >= 0, is shifted left by one and the flag is put
    in the freed lowest bit: one plain sort per row then orders the scores and carries the
    flags, and ties are ties again once the keys are shifted back (-0.0 becomes +0.0, its
    sign bit being shifted out).

    Returns the flags in the sorted order, as integers of the keys' width, aligned with
    ``buffer`` (so their run sums are exact counts, with no cast).
    """
    keys = buffer.view(_KEY_TYPES[buffer.dtype])
    keys <<= 1
    keys[flagged] |= 1
    keys[: shape[0] * shape[1]].reshape(shape).sort(axis=1)
    flags = keys & 1
    keys >>= 1
    return flags


_LITTLE_ENDIAN = sys.byteorder == "little"
#: Rows of at most this many entries can carry their positions in the low 32 bits of a
#: packed key.
_PACKED_POSITIONS = 1 << 32


def sort_rows_with_positions(
    scores: NDArray, flags: NDArray
) -> tuple[NDArray, NDArray, NDArray] | None:
    """Each row of float32 scores (G, n) sorted, with its 0/1 flags and original positions.

    One plain sort of 64-bit keys: the score's bit pattern shifted left by one (which
    orders like the value for floats >= 0, -0.0 becoming +0.0) with the flag in the freed
    lowest bit, in the high 32 bits, and the position in the row in the low 32 bits.  On
    1,000,000 float32 scores that sort takes 1.4x ``np.sort`` of the scores where
    ``np.argsort`` takes 2.5x (and the argsort then needs two gathers more).  Tied scores
    come out flag 0 first, then by position: an order fixed by the data (an argsort's
    order of ties is not, it depends on the machine's sort).  ``None`` unless the
    scores are float32 and a row holds fewer than 2**32 entries (the caller then sorts
    another way).  ``scores`` and ``flags`` are not modified.

    Returns the sorted scores (float32), their flags (uint32 0/1) and their positions
    (intp), each of the shape of ``scores``.
    """
    if scores.dtype != np.float32 or scores.shape[1] >= _PACKED_POSITIONS:
        return None
    keys = np.empty(scores.shape, dtype=np.uint64)
    # The two 32-bit halves of each key, written and read in place (no 64-bit shifts).
    halves = keys.view(np.uint32).reshape(*scores.shape, 2)
    low, high = (
        (halves[..., 0], halves[..., 1]) if _LITTLE_ENDIAN else (halves[..., 1], halves[..., 0])
    )
    np.left_shift(scores.view(np.uint32), 1, out=high)
    np.bitwise_or(high, flags, out=high, casting="unsafe")  # bool or 0/1 integers
    low[...] = np.arange(scores.shape[1], dtype=np.uint32)
    keys.sort(axis=1)
    positions = low.astype(np.intp)
    sorted_flags = high & np.uint32(1)
    sorted_scores = np.right_shift(high, 1).view(np.float32)
    return sorted_scores, sorted_flags, positions


def add_counts(totals: NDArray, flat_index: NDArray, weights: NDArray | None) -> None:
    """Add the (weighted) count of each cell of ``flat_index`` to ``totals``, in place.

    Without weights ``totals`` holds integers (exact whatever the batches); with weights,
    floats added entry after entry in the given order (``np.add.at``), so that batches
    added one after the other give bit for bit what one ``bincount`` over all the entries
    gives, and as fast (3.5 ms against 6.5 ms for 1,000,000 entries in 150 cells).
    """
    if weights is None:
        totals += np.bincount(flat_index, minlength=len(totals))
    else:
        np.add.at(totals, flat_index, weights)


class BinSums:
    """Weighted count, score sum and target sum per cell of a flattened (group, bin) index.

    Entries are added in batches (:meth:`add`), e.g. row block by row block, and the sums
    are the same, bit for bit, as those of all the entries added at once (see
    :func:`add_counts`).  ``targets`` are booleans, or ``None`` when only counts and score
    sums are wanted; the counts and target sums come from one count over the index
    ``2 * cell + target``.
    """

    def __init__(self, n_cells: int, weighted: bool, targets: bool = True):
        self.n_cells = n_cells
        self.targets = targets
        count_type = np.float64 if weighted else np.int64
        self.joint_counts = np.zeros(2 * n_cells if targets else n_cells, dtype=count_type)
        self.score_sums = np.zeros(n_cells)

    def add(
        self,
        flat_index: NDArray,
        scores: NDArray,
        targets: NDArray | None,
        weights: NDArray | None,
    ) -> None:
        """Add a batch of entries: their cells, scores, targets and weights."""
        if weights is None:
            np.add.at(self.score_sums, flat_index, scores.astype(np.float64, copy=False))
        else:
            np.add.at(self.score_sums, flat_index, weights * scores)
        if self.targets:
            flat_index = flat_index * 2
            flat_index += targets
        add_counts(self.joint_counts, flat_index, weights)

    def totals(self) -> tuple[NDArray, NDArray, NDArray | None]:
        """Float64 counts, score sums and target sums (``None`` without targets) per cell."""
        if not self.targets:
            return self.joint_counts.astype(np.float64), self.score_sums, None
        by_target = self.joint_counts.reshape(self.n_cells, 2).astype(np.float64)
        return by_target.sum(axis=1), self.score_sums, by_target[:, 1].copy()


class BlockTotals:
    """Sums of canonical row blocks added one block after the other, in float64.

    ``add(s_0)``, ``add(s_1)``, ... leave ``sums`` = ``((s_0 + s_1) + s_2) + ...`` (see
    :func:`calibration_toolbox._rows.canonical_rows`): the definition shared by one call,
    a stream of batches and Dask chunks.  ``sums`` is ``None`` before the first block.
    """

    def __init__(self, sums: list[NDArray] | None = None):
        self.sums = sums

    def add(self, *block_sums: NDArray) -> None:
        """Add the sums of the next canonical block."""
        if self.sums is None:
            self.sums = [np.array(part, dtype=np.float64) for part in block_sums]
            return
        for total, part in zip(self.sums, block_sums, strict=True):
            total += part

    def copy(self) -> BlockTotals:
        """An independent copy (the sums of the blocks so far)."""
        return BlockTotals(None if self.sums is None else [part.copy() for part in self.sums])


def bin_sums(
    flat_index: NDArray,
    n_cells: int,
    scores: NDArray,
    targets: NDArray | None,
    weights: NDArray | None,
) -> tuple[NDArray, NDArray, NDArray | None]:
    """Weighted count, score sum and target sum per cell, of one batch (see :class:`BinSums`)."""
    sums = BinSums(n_cells, weights is not None, targets is not None)
    sums.add(flat_index, scores, targets, weights)
    return sums.totals()
