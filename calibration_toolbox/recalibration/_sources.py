"""Block sources: calibration data read again, block by block, for every pass of a fit.

A fit whose data do not fit in memory (a memory-mapped ``.npy`` read by
:func:`calibration_toolbox.io.iter_predictions`, say) makes each pass of its solver one
pass over row blocks.  The *source* of the blocks is either a callable without
arguments that returns a fresh iterator of blocks each time it is called (``lambda:
iter_predictions(path, labels_path=labels)``), or a re-iterable collection of blocks
(a list, or any object whose ``__iter__`` starts again each time).  A block is a tuple
``(logits, labels)`` or ``(logits, labels, sample_weight)``.  A one-shot iterator (a
generator, say) is refused: its second pass would see no rows.

:func:`checked_blocks` validates each block as the in-memory ``fit`` validates its
arrays (same checks and messages, prefixed with the block's absolute rows) and checks
that every block has the classes of the first; :func:`checked_label_blocks` does the same
for the blocks of a multi-label fit (``multilabel=True``: (N, K) logits and an (N, K) 0/1
label matrix, every block with the labels of the first).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, InputTypeError, Name, within

__all__ = [
    "Block",
    "block_opener",
    "block_sum",
    "checked_blocks",
    "checked_label_blocks",
    "checked_part",
]


class Block(NamedTuple):
    """A validated block: its first row's index in the source, logits, labels, weights."""

    start: int
    logits: NDArray
    labels: NDArray
    weights: NDArray | None  # None also for a block whose weights are all 0 (see `skip`)
    # True for a block that adds nothing (every weight 0): checked, then left out.
    skip: bool


def block_opener(source: object) -> Callable[[], Iterator]:
    """A callable that starts a new pass over the blocks of ``source`` (see the module)."""
    if isinstance(source, Iterator):
        raise InputTypeError(
            "{source:is} a one-shot iterator (a generator, say), but the fit passes over "
            "the blocks several times and a second pass would see no rows. Pass a callable "
            "that returns a fresh iterator each time, e.g. {example}, or a re-iterable "
            "collection of blocks (a list).",
            argument="source",
            example=Name("lambda: iter_predictions(path, labels_path=labels)"),
        )
    if callable(source):
        return lambda: iter(source())
    if isinstance(source, Iterable):
        return lambda: iter(source)
    raise InputTypeError(
        "{source} must be a callable returning an iterator of (logits, labels[, "
        "sample_weight]) blocks, or a re-iterable collection of such blocks; got "
        "{value}.",
        argument="source",
        value=type(source).__name__,
    )


def _unpacked(block: object, index: int) -> tuple:
    """``(logits, labels, weights or None)`` of one block as yielded."""
    if not isinstance(block, tuple) or len(block) not in (2, 3):
        raise InputTypeError(
            "block {index} of {source} must be a tuple (logits, labels) or (logits, labels, "
            "sample_weight); got {kind}{length}.",
            argument="source",
            index=index,
            kind=type(block).__name__,
            length=f" of length {len(block)}" if isinstance(block, tuple) else "",
        )
    return block if len(block) == 3 else (*block, None)


def checked_part(logits, labels, weights) -> tuple[NDArray, NDArray, NDArray | None]:
    """Part of the rows (a Dask chunk) checked as ``fit`` checks its arguments."""
    logits = iv.check_fit_magnitude(iv.check_logits(logits, "X"))
    labels = iv.check_labels(labels, *logits.shape, name="y", hint=iv.LABELS_IN_PARTS)
    return logits, labels, iv.check_sample_weight(weights, len(logits))


def _checked_arrays(logits, labels, weights, start: int, n_classes: int | None) -> Block:
    """One block's arrays checked as ``fit`` checks its arguments."""
    logits = iv.check_fit_magnitude(iv.check_logits(logits, "X"))
    n_rows = len(logits)
    if n_classes is not None and logits.shape[1] != n_classes:
        raise InputError(
            "{X:has} {value} classes where the blocks before have {n_classes}.",
            argument="X",
            value=logits.shape[1],
            n_classes=n_classes,
        )
    labels = iv.check_labels(labels, n_rows, logits.shape[1], name="y", hint=iv.LABELS_IN_PARTS)
    # A block whose weights are all 0 is valid (only the total must be positive).
    skip = weights is not None and np.size(weights) == n_rows and not np.any(weights)
    weights = None if skip else iv.check_sample_weight(weights, n_rows)
    return Block(start, logits, labels, weights, skip)


def checked_blocks(open_blocks: Callable[[], Iterator]) -> Iterator[Block]:
    """One pass over the source: its non-empty blocks, each checked as ``fit`` checks.

    An error names the block's rows in the whole source ("in rows 200 to 299 of
    `source`: ..."), then the in-memory message, whose row numbers count from the block's
    first row.
    """
    start, n_classes = 0, None
    for index, raw in enumerate(open_blocks()):
        logits, labels, weights = _unpacked(raw, index)
        n_rows = np.shape(logits)[:1]
        if n_rows == (0,):
            continue  # an empty block adds nothing
        try:
            block = _checked_arrays(logits, labels, weights, start, n_classes)
        except (TypeError, ValueError) as exc:
            where = f"rows {start} to {start + n_rows[0] - 1}" if n_rows else f"block {index}"
            raise within(exc, "in {where} of {source}: ", where=where) from None
        n_classes = block.logits.shape[1]
        start += len(block.labels)
        yield block


def _checked_label_arrays(logits, labels, weights, start: int, n_labels: int | None) -> Block:
    """One multi-label block checked as ``fit(multilabel=True)`` checks its arguments."""
    checked = iv.check_multilabel(logits, labels, logits=True, names=("X", "y"), sigmoids=False)
    n_rows, width = checked.targets.shape
    if n_labels is not None and width != n_labels:
        raise InputError(
            "{X:has} {value} labels where the blocks before have {n_labels}.",
            argument="X",
            value=width,
            n_labels=n_labels,
        )
    skip = weights is not None and np.size(weights) == n_rows and not np.any(weights)
    weights = None if skip else iv.check_sample_weight(weights, n_rows)
    return Block(start, checked.log_odds, checked.targets, weights, skip)


def checked_label_blocks(open_blocks: Callable[[], Iterator]) -> Iterator[Block]:
    """One pass over a multi-label source: its non-empty blocks, each checked as ``fit``.

    As :func:`checked_blocks`, for ``(logits, labels[, sample_weight])`` blocks of (N, K)
    logits and an (N, K) 0/1 label matrix (checked by ``check_multilabel``); ``labels`` of a
    block is its ``uint8`` label matrix.
    """
    start, n_labels = 0, None
    for index, raw in enumerate(open_blocks()):
        logits, labels, weights = _unpacked(raw, index)
        n_rows = np.shape(logits)[:1]
        if n_rows == (0,):
            continue  # an empty block adds nothing
        try:
            block = _checked_label_arrays(logits, labels, weights, start, n_labels)
        except (TypeError, ValueError) as exc:
            where = f"rows {start} to {start + n_rows[0] - 1}" if n_rows else f"block {index}"
            raise within(exc, "in {where} of {source}: ", where=where) from None
        n_labels = block.labels.shape[1]
        start += len(block.labels)
        yield block


def block_sum(open_blocks: Callable[[], Iterator], function: Callable):
    """The sum of ``function(logits, labels, weights)`` over one pass of checked blocks.

    Blocks whose weights are all 0 are left out; no rows, or no positive weight, is an
    error.
    """
    total, n_rows = 0.0, 0
    for block in checked_blocks(open_blocks):
        n_rows += len(block.labels)
        if not block.skip:
            total = total + function(block.logits, block.labels, block.weights)
    if n_rows == 0:
        raise InputError("{source} yielded no rows.", argument="source")
    if isinstance(total, float):
        raise InputError(
            "{sample_weight} must have a positive sum; got all zeros.", argument="sample_weight"
        )
    return total
