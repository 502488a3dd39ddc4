"""Metrics on Dask arrays: each row chunk reduced in the workers, the results added in a tree.

Dask is an optional extra (``pip install calibration-toolbox[dask]``): it is imported
only when a Dask array is passed.  A Dask array is told apart by duck type
(:func:`is_dask_input`), so this module is imported by the metrics without importing dask.

The metrics that stream (the equal-width binned measures through
:func:`calibration_toolbox.metrics.gce._tabulated`, the Brier score and the
log-likelihood) call the in-memory function of each row chunk in the workers, where its
checks and errors are those of the in-memory call, and only the per-(group, bin) sums
(:class:`~calibration_toolbox.CalibrationTable`) or two numbers travel back, added
pairwise in a tree of ``dask.delayed`` tasks.  The sums are those of one in-memory call
up to the order of the float additions (equal to the last bit when the sums are exact:
counts without weights, float32 top-label confidences); see the README's *Streaming and
Dask*.  Every other function refuses a Dask array (:func:`refusal`).
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from calibration_toolbox.scores import Scores

__all__ = ["STREAMING", "is_dask_array", "is_dask_input", "refusal", "score_sums", "table"]

#: What streams over a Dask array, for the error messages.
STREAMING = (
    "ECE, RMSCE, MCE, OCE, UCE, SCE, ToprCE, TopLabelECE, GCE and calibration_table with "
    "fixed edges (adaptive_bins=False), brier_score and negative_log_likelihood"
)


def is_dask_array(value: object) -> bool:
    """Whether ``value`` is a Dask array (duck type: a task graph and chunks; no dask import)."""
    return hasattr(value, "__dask_graph__") and hasattr(value, "chunks") and hasattr(value, "ndim")


def is_dask_input(prob: object) -> bool:
    """Whether ``prob`` (or the values of ``Scores``) is a Dask array."""
    return is_dask_array(prob.values if isinstance(prob, Scores) else prob)


def refusal(name: str) -> TypeError:
    """The error of a function that does not stream, given a Dask array as ``name``."""
    return TypeError(
        f"`{name}` is a Dask array, and this call does not stream over row chunks (it needs "
        "all rows at once: equal-mass edges, sorting, kernels, fits). Call .compute() "
        f"first if the array fits in memory, or use what streams over Dask arrays: {STREAMING}."
    )


def table(prob, labels, *, logits, sample_weight, renormalize, **options):
    """The :class:`CalibrationTable` and checked options of a GCE call on Dask arrays."""
    from calibration_toolbox.metrics import gce

    n_classes = _n_classes(prob)
    checked_options = gce._GCEOptions.checked(n_classes, **options)
    if checked_options.adaptive_bins:
        raise ValueError(
            "adaptive_bins=True (ACE, TACE, TCE, CWCE) does not stream over Dask chunks: "
            "equal-mass edges depend on all the rows. Call .compute() first, or use fixed "
            "edges (adaptive_bins=False; bins an integer or an array of edges)."
        )
    chunk = functools.partial(
        _chunk_table, logits=logits, renormalize=renormalize, options=options
    )
    total, weight = _tree_sum(prob, labels, sample_weight, chunk)
    _check_total_weight(weight)
    return total, checked_options


def score_sums(prob, labels, *, logits, sample_weight, renormalize, **options):
    """``(weighted sum, total weight)`` of the Brier score (no ``eps``) or the NLL (``eps``)."""
    from calibration_toolbox.metrics import scoring

    sums = scoring._nll_sums if "eps" in options else scoring._brier_sums
    _n_classes(prob)
    chunk = functools.partial(_chunk_call, sums, logits=logits, renormalize=renormalize, **options)
    total, weight = _tree_sum(prob, labels, sample_weight, chunk)
    _check_total_weight(weight)
    return total, weight


def _n_classes(prob) -> int:
    """K of a Dask ``prob`` chunked along rows only (2 for a 1-D array or ``Scores``)."""
    values = prob.values if isinstance(prob, Scores) else prob
    if values.ndim == 2 and len(values.chunks[1]) > 1:
        raise ValueError(
            "`prob` must be chunked along rows only (each chunk holding all K columns); got "
            f"{len(values.chunks[1])} chunks along the classes. Rechunk it with "
            "prob.rechunk({1: -1})."
        )
    if values.ndim == 2 and not isinstance(prob, Scores):
        return int(values.shape[1])
    return 2


def _check_total_weight(weight: float) -> None:
    if not weight > 0:
        raise ValueError("`sample_weight` must have a positive sum; got all zeros.")


def _chunk_table(prob, labels, weights, *, logits, renormalize, options):
    """The table of one chunk (the in-memory engine, checks included) and its total weight."""
    from calibration_toolbox.metrics import gce

    table, _ = gce._tabulated(
        prob,
        labels,
        logits=logits,
        sample_weight=weights,
        renormalize=renormalize,
        **options,
    )
    return table, float(len(labels) if weights is None else weights.sum())


def _chunk_call(sums, prob, labels, weights, **options):
    return sums(prob, labels, sample_weight=weights, **options)


def _in_chunk(function, start: int, scores: bool, prob, labels, weights):
    """``function(prob, labels, weights)`` on one row chunk, its errors placed in the rows.

    A chunk whose weights are all 0 adds nothing (in memory that is an error only when
    every weight is 0, which is checked on the total).
    """
    prob = Scores(prob) if scores else prob
    try:
        if weights is not None and len(weights) and not np.any(weights):
            result, _ = function(prob, labels, None)
            return _zero(result), 0.0
        return function(prob, labels, weights)
    except (TypeError, ValueError) as exc:
        stop = start + len(labels) - 1
        raise type(exc)(
            f"in rows {start} to {stop} (one chunk of the Dask arrays): {exc}"
        ) from None


def _zero(result):
    """The same kind of result with every sum 0 (for a chunk whose weights are all 0)."""
    from calibration_toolbox.metrics.gce import CalibrationTable

    if isinstance(result, CalibrationTable):
        zeros = {name: np.zeros_like(getattr(result, name)) for name in _TABLE_SUMS}
        return dataclasses.replace(result, **zeros)
    return 0.0


_TABLE_SUMS = ("counts", "score_sums", "target_sums")


def _tree_sum(prob, labels, sample_weight, chunk):
    """Reduce every row chunk with ``chunk`` in the workers, adding the results pairwise."""
    import dask

    scores = isinstance(prob, Scores)
    values = prob.values if scores else prob
    row_chunks = values.chunks[0]
    parts = [
        _as_rows(argument, name, row_chunks)
        for argument, name in ((labels, "labels"), (sample_weight, "sample_weight"))
    ]
    starts = np.concatenate([[0], np.cumsum(row_chunks)[:-1]])
    blocks = values.to_delayed().reshape(-1)
    label_blocks = parts[0].to_delayed().reshape(-1)
    weight_blocks = [None] * len(blocks) if parts[1] is None else parts[1].to_delayed()
    # Chunks are reduced where they are made (the workers); only sums travel.
    reduce = dask.delayed(_in_chunk, pure=True)
    results = [
        reduce(chunk, int(start), scores, block, label_block, weight_block)
        for start, block, label_block, weight_block in zip(
            starts, blocks, label_blocks, weight_blocks, strict=True
        )
    ]
    add = dask.delayed(_add_pairs, pure=True)
    while len(results) > 1:
        results = [add(*results[i : i + 2]) for i in range(0, len(results), 2)]
    return dask.compute(results[0])[0]


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
        from calibration_toolbox._validation import _as_real_array

        argument = _as_real_array(argument, name)
    n_rows = sum(row_chunks)
    if argument.ndim < 1 or argument.shape[0] != n_rows:
        raise ValueError(
            f"`{name}` must have one entry per row of the predictions ({n_rows}); got shape "
            f"{argument.shape}."
        )
    if is_dask_array(argument):
        return argument.rechunk((row_chunks, *argument.shape[1:]))
    return da.from_array(argument, chunks=(row_chunks, *argument.shape[1:]))
