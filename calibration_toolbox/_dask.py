"""A generic executor over the row chunks of Dask arrays: the per-chunk function is passed in.

Dask is an optional extra (``pip install calibration-toolbox[dask]``): it is imported
only when a Dask array is passed.  A Dask array is told apart by duck type
(:func:`calibration_toolbox._arrays.is_dask_input`), so this module is imported by the
metrics without importing dask, and it imports no metric: each caller passes the function
that reduces one chunk.

:func:`block_sums` runs a metric's in-memory per-chunk function (the binned engine's
table of a chunk, ``metrics._engine``; the Brier score's or the log-likelihood's two sums,
``metrics.scoring``) in the workers, where its checks and errors are those of the
in-memory call, on each canonical row block (:func:`calibration_toolbox._rows.canonical_rows`)
that a chunk holds whole; the rows of the blocks that chunk edges cut are joined in a task
of their own.  Only the per-chunk results (a :class:`~calibration_toolbox.CalibrationTable`
or two numbers per block), and the rows of cut blocks, travel; the blocks' results are
added in block order, as one in-memory call adds them, so the result is that call's to the
last bit (:func:`_block_sum_graph`); see the user guide's *Streaming and Dask*.
:func:`block_sums_together` computes several such sums in one pass (two models' tables
and entry cells, for ``stats.paired_bootstrap``).  The fits' passes (:func:`fit_sums`)
add their chunks' sums pairwise in a tree.  Every other function
refuses a Dask array (:func:`calibration_toolbox._arrays.dask_refusal`).
"""

from __future__ import annotations

import copy
import functools

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox._arrays import as_real_array, is_dask_array
from calibration_toolbox._errors import InputError, within
from calibration_toolbox._rows import canonical_rows
from calibration_toolbox.scores import Scores

__all__ = [
    "LazyPredictions",
    "block_sums",
    "block_sums_together",
    "fit_sums",
    "n_classes",
    "on_first_chunk",
    "row_chunked",
]


def block_sums(prob, labels, sample_weight, chunk, n_classes: int, *, zero=None):
    """``(result, total weight)`` of a metric over Dask arrays chunked along rows.

    ``chunk(prob, labels, weights)`` is the metric's in-memory function of some rows,
    returning ``(result, weight)`` (results add with ``+``); it runs in the workers on
    each canonical row block of ``R = canonical_rows(n_classes)`` rows, and the blocks'
    results are added in block order (:func:`_block_sum_graph`): bit for bit those of one
    in-memory call.  A block whose weights are all 0 adds ``zero(result)`` (``0.0`` by
    default) of its unweighted result; an error names the rows it comes from; a total
    weight that is not positive is refused, as in memory.
    """
    return block_sums_together([(prob, labels, sample_weight, chunk, n_classes, zero)])[0]


def block_sums_together(jobs) -> list:
    """:func:`block_sums` of several ``(prob, labels, sample_weight, chunk, n_classes, zero)``.

    One ``dask.compute`` of all their graphs: a chunk that several jobs read (the labels
    and weights of two models' predictions on the same rows) is computed once, and each
    job's chunks are read in the same pass.  A list of ``(result, total weight)``.
    """
    import dask

    graphs = []
    for prob, labels, sample_weight, chunk, n_classes, zero in jobs:
        chunk = functools.partial(_weighted, chunk, _no_sums if zero is None else zero)
        graphs.append(_block_sum_graph(prob, labels, sample_weight, chunk, n_classes))
    totals = dask.compute(*graphs)
    for _, weight in totals:
        _check_total_weight(weight)
    return list(totals)


def n_classes(prob) -> int:
    """K of a Dask ``prob`` chunked along rows only (2 for a 1-D array or ``Scores``)."""
    if isinstance(prob, Scores):
        row_chunked(prob.values, "prob")
        return 2
    return row_chunked(prob, "prob")


def row_chunked(values, name: str) -> int:
    """K of a Dask array (2 when 1-D) after checking that it is chunked along rows only."""
    if values.ndim == 2 and len(values.chunks[1]) > 1:
        raise InputError(
            "{argument} must be chunked along rows only (each chunk holding all K columns); "
            "got {value} chunks along the classes. Rechunk it with "
            "{name}.rechunk({{1: -1}}).",
            argument=name,
            value=len(values.chunks[1]),
            name=name,
        )
    if values.ndim not in (1, 2) or any(np.isnan(size) for size in values.chunks[0]):
        raise InputError(
            "{argument} must be a 1-D or 2-D Dask array with known chunk sizes; got shape "
            "{shape} (for unknown sizes call {name}.compute_chunk_sizes() first).",
            argument=name,
            shape=values.shape,
            name=name,
        )
    return int(values.shape[1]) if values.ndim == 2 else 2


def fit_sums(X, y, sample_weight, chunk):
    """``(sums, total weight)`` of one pass of a fit over Dask arrays.

    ``chunk(X, y, weights)`` of each row chunk (it checks its arrays as the in-memory fit
    does) runs in the workers and returns ``(sums, weight)``; only those travel, added in
    a tree.  An error names the chunk's rows; a chunk whose weights are all 0 adds nothing.
    """
    chunk = functools.partial(_weighted, chunk, _no_sums)
    total, weight = _tree_sum(X, y, sample_weight, chunk, names=("y", "sample_weight"))
    _check_total_weight(weight)
    return total, weight


def on_first_chunk(X, y, sample_weight, function):
    """``function(X, y, weights)`` of the first row chunk, computed in a worker.

    For a warm start: only its result travels.  A first chunk whose weights are all 0
    gives 0.0.
    """
    import dask

    start, block, label_block, weight_block = _chunk_tasks(
        X, y, sample_weight, ("y", "sample_weight")
    )[0]
    task = dask.delayed(_on_chunk, pure=True)
    return dask.compute(task(function, start, block, label_block, weight_block))[0]


def _on_chunk(function, start: int, logits, labels, weights):
    if weights is not None and len(weights) and not np.any(weights):
        return 0.0
    return _located(function, start, len(labels), logits, labels, weights)


def _check_total_weight(weight: float) -> None:
    if not weight > 0:
        raise InputError(
            "{sample_weight} must have a positive sum; got all zeros.", argument="sample_weight"
        )


def _weighted(chunk, zero, prob, labels, weights):
    """``chunk(prob, labels, weights)``, but a chunk whose weights are all 0 adds nothing.

    In memory all-zero weights are an error only when every weight is 0, which is checked
    on the total; such a chunk is still computed unweighted, for its checks and the kind
    of its result, of which ``zero`` makes the sum that adds nothing.
    """
    if weights is not None and len(weights) and not np.any(weights):
        result, _ = chunk(prob, labels, None)
        return zero(result), 0.0
    return chunk(prob, labels, weights)


def _no_sums(result) -> float:
    """The number that adds nothing, for a result that is a number (or numbers)."""
    return 0.0


def _in_chunk(function, start: int, scores: bool, prob, labels, weights, where="one chunk"):
    """``function(prob, labels, weights)`` on one row chunk, its errors placed in the rows.

    ``where`` names the rows in an error: ``'one chunk'`` or ``'part of a chunk'`` (cut at
    a canonical block's edge).
    """
    prob = Scores(prob) if scores else prob
    return _located(function, start, len(labels), prob, labels, weights, where=where)


def _located(function, start: int, n_rows: int, *arrays, where: str = "one chunk"):
    """``function(*arrays)`` of one row chunk, an error in it placed in the chunk's rows."""
    try:
        return function(*arrays)
    except (TypeError, ValueError) as exc:
        stop = start + n_rows - 1
        context = "in rows {start} to {stop} ({where} of the Dask arrays): "
        raise within(exc, context, start=start, stop=stop, where=where) from None


def _chunk_tasks(values, labels, sample_weight, names) -> list[tuple]:
    """``(first row, chunk, labels chunk, weights chunk or None)`` of every row chunk.

    The chunks are ``dask.delayed`` objects (made where the graph puts them: the
    workers); ``names`` are those of ``labels`` and ``sample_weight`` for the messages.
    """
    row_chunks = values.chunks[0]
    parts = [
        _as_rows(argument, name, row_chunks)
        for argument, name in zip((labels, sample_weight), names, strict=True)
    ]
    starts = np.concatenate([[0], np.cumsum(row_chunks)[:-1]]).astype(int).tolist()
    blocks = values.to_delayed().reshape(-1)
    label_blocks = parts[0].to_delayed().reshape(-1)
    weight_blocks = [None] * len(blocks) if parts[1] is None else parts[1].to_delayed()
    return list(zip(starts, blocks, label_blocks, weight_blocks, strict=True))


def _tree_sum(prob, labels, sample_weight, chunk, names=("labels", "sample_weight")):
    """Reduce every row chunk with ``chunk`` in the workers, adding the results pairwise."""
    import dask

    scores = isinstance(prob, Scores)
    values = prob.values if scores else prob
    # Chunks are reduced where they are made (the workers); only sums travel.
    reduce = dask.delayed(_in_chunk, pure=True)
    results = [
        reduce(chunk, start, scores, block, label_block, weight_block)
        for start, block, label_block, weight_block in _chunk_tasks(
            values, labels, sample_weight, names
        )
    ]
    add = dask.delayed(_add_pairs, pure=True)
    while len(results) > 1:
        results = [add(*results[i : i + 2]) for i in range(0, len(results), 2)]
    return dask.compute(results[0])[0]


def _block_sum_graph(prob, labels, sample_weight, chunk, n_classes: int):
    """The delayed ``(sums, weight)`` of the metric's canonical row blocks, added in turn.

    Bit for bit those of one in-memory call (see
    :func:`calibration_toolbox._rows.canonical_rows`).  Each row chunk (in the workers)
    sums its whole canonical blocks one by one with ``chunk`` (the in-memory function: a
    single block gives its block sums) and keeps the rows of the blocks its edges cut (at
    most R rows at each end, checked there); a task per cut block joins its pieces, in
    row order, and sums it; a last task adds every block's sums in block order.  Only
    sums and the rows of cut blocks travel.
    """
    import dask

    scores = isinstance(prob, Scores)
    values = prob.values if scores else prob
    step, n_rows = canonical_rows(n_classes), values.shape[0]
    tasks = _chunk_tasks(values, labels, sample_weight, ("labels", "sample_weight"))
    split = dask.delayed(_chunk_blocks, pure=True)
    parts = [split(chunk, step, n_rows, scores, *task) for task in tasks]
    pieces: dict[int, list] = {}
    starts = [task[0] for task in tasks] + [n_rows]
    for index, part in enumerate(parts):
        for block in _cut_blocks(starts[index], starts[index + 1], step, n_rows):
            pieces.setdefault(block, []).append(part)
    join = dask.delayed(_cut_block_sums, pure=True)
    cut = {block: join(chunk, step, scores, block, found) for block, found in pieces.items()}
    return dask.delayed(_blocks_in_order, pure=True)(parts, cut)


def _blocks_of(start: int, stop: int, step: int, n_rows: int):
    """``(block, rows, whole)`` of the canonical blocks that rows ``[start, stop)`` touch."""
    for block in range(start // step, -(-stop // step) if stop > start else start // step):
        rows = slice(max(start, block * step), min(stop, (block + 1) * step))
        yield block, rows, rows == slice(block * step, min(n_rows, (block + 1) * step))


def _cut_blocks(start: int, stop: int, step: int, n_rows: int) -> list[int]:
    """The canonical blocks that rows ``[start, stop)`` (a chunk) hold only part of."""
    return [block for block, _, whole in _blocks_of(start, stop, step, n_rows) if not whole]


def _chunk_blocks(chunk, step: int, n_rows: int, scores: bool, start: int, prob, labels, weights):
    """A chunk's whole blocks' results by block, and the (checked) rows of its cut blocks."""
    results, rows_of = {}, {}
    for block, rows, whole in _blocks_of(start, start + len(labels), step, n_rows):
        local = slice(rows.start - start, rows.stop - start)
        part = (prob[local], labels[local], None if weights is None else weights[local])
        where = "one chunk" if local == slice(0, len(labels)) else "part of a chunk"
        result = _in_chunk(chunk, rows.start, scores, *part, where=where)  # checks cut rows too
        if whole:
            results[block] = result
        else:
            rows_of[block] = part
    return results, rows_of


def _cut_block_sums(chunk, step: int, scores: bool, block: int, parts):
    """The results of a canonical block cut by chunk edges: its pieces joined in row order."""
    pieces = [part[1][block] for part in parts]
    joined = [
        None if pieces[0][field] is None else np.concatenate([piece[field] for piece in pieces])
        for field in range(3)
    ]
    return _in_chunk(chunk, block * step, scores, *joined)


def _blocks_in_order(parts, cut: dict):
    """Every block's ``(sums, weight)`` added one block after the other, in block order."""
    by_block = dict(cut)
    for results, _ in parts:
        by_block.update(results)
    total = None
    for block in sorted(by_block):
        total = by_block[block] if total is None else _add_pairs(total, by_block[block])
    return total


def _add_pairs(first, second=None):
    """Add two ``(sums, weight)`` results element by element (one result is passed through)."""
    if second is None:
        return first
    return first[0] + second[0], first[1] + second[1]


def _as_rows(argument, name: str, row_chunks):
    """``labels`` / ``sample_weight`` as a Dask array with the row chunks of ``prob``."""
    import dask.array as da

    if argument is None:
        return None
    if not is_dask_array(argument):
        argument = as_real_array(argument, name)
    n_rows = sum(row_chunks)
    if argument.ndim < 1 or argument.shape[0] != n_rows:
        raise InputError(
            "{argument} must have one entry per row of the predictions ({n_rows}); got shape "
            "{shape}.",
            argument=name,
            n_rows=n_rows,
            shape=argument.shape,
        )
    if is_dask_array(argument):
        return argument.rechunk((row_chunks, *argument.shape[1:]))
    return da.from_array(argument, chunks=(row_chunks, *argument.shape[1:]))


def _call_method(recalibrator, method: str, block):
    """``recalibrator.method(block)`` on one in-memory chunk (in a worker)."""
    return getattr(recalibrator, method)(block)


class LazyPredictions:
    """Mixin of a recalibrator: its predictions of a Dask array are lazy Dask arrays.

    ``__call__``, ``predict_proba`` and ``predict`` of a Dask array chunked along rows
    return a Dask array made by ``map_blocks``: each chunk is computed by the in-memory
    method of a copy of the fitted recalibrator (so a later refit changes nothing), in
    the workers, when the result is computed.  Whether it is fitted and has the
    array's classes is checked at the call.
    """

    def __call__(self, X: ArrayLike) -> NDArray:
        if is_dask_array(X):
            return self._lazy("__call__", X)
        return super().__call__(X)

    def predict_proba(self, X: ArrayLike) -> NDArray:
        if is_dask_array(X):
            return self._lazy("predict_proba", X)
        return super().predict_proba(X)

    def predict(self, X: ArrayLike) -> NDArray:
        if is_dask_array(X):
            return self._lazy("predict", X)
        return super().predict(X)

    def _lazy(self, method: str, X):
        self._check_fitted()
        n_classes = row_chunked(X, "X")
        self._check_n_classes(n_classes)
        function = functools.partial(_call_method, copy.deepcopy(self), method)
        if method == "predict":
            meta = np.empty(0, dtype=np.intp)
            return X.map_blocks(function, drop_axis=1 if X.ndim == 2 else (), meta=meta)
        dtype = X.dtype if X.dtype in (np.float32, np.float64) else np.dtype(np.float64)
        meta = np.empty((0, 0), dtype=dtype)
        chunks = (X.chunks[0], (n_classes,))
        if X.ndim == 1:  # one logit per row: two columns out
            return X.map_blocks(function, new_axis=1, chunks=chunks, meta=meta)
        return X.map_blocks(function, chunks=chunks, meta=meta)
