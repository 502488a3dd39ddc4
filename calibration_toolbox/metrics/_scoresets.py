"""The score set of a binned call: the third layer of the binned engine.

Which entries of the predictions a binned metric bins, as flat arrays (group, score,
target, weight): :func:`score_set` (the top label, each row's top-r entries, all N x K
entries, or (score, target) pairs), :func:`top_label_entries` (each row's confidence and
correctness), :func:`kept_entries` (thresholding, exact in the scores' dtype by
:func:`cut_for`), and :func:`flat_cells`, the flat (group, bin) index of each entry.

Imports: NumPy, ``_validation`` (the checked types), ``binning`` and ``metrics._options``;
imported by ``_kernels``, ``_engine`` and ``smooth``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox import _validation as iv
from calibration_toolbox.binning import assign_bins
from calibration_toolbox.metrics._options import GCEOptions

__all__ = ["cut_for", "flat_cells", "kept_entries", "score_set", "top_label_entries"]


def cut_for(value: float, dtype: np.dtype) -> np.generic:
    """The largest value of ``dtype`` not above ``value``: ``x > cut`` then means ``x > value``.

    Comparing a float32 array with a float64 scalar is done in float32 by older NumPy
    (value-based casting), which would move the threshold; this keeps it exact everywhere.
    """
    cut = dtype.type(value)
    if float(cut) > value:
        cut = np.nextafter(cut, dtype.type(-np.inf))
    return cut


def score_set(checked: iv.CheckedInput, weights: NDArray | None, options: GCEOptions):
    """Flat arrays (group, score, target, weight) of the kept entries.

    (score, target) pairs are the score set as they are; the top label gives one entry
    per row (confidence, correctness); otherwise the entries are picked by row and column.
    """
    if checked.pairs is not None:
        groups, scores, targets, rows = None, *checked.top_label(), None
    elif options.top_k == 1:
        groups, scores, targets = top_label_entries(checked, options.class_conditional)
        rows = None
    else:
        groups, scores, targets, rows = _picked_entries(checked, options)
    entry_weights = None if weights is None else (weights if rows is None else weights[rows])
    groups, scores, targets, entry_weights = kept_entries(
        options.thresholding, groups, scores, targets, entry_weights
    )
    if groups is None:
        groups = np.zeros(len(scores), dtype=np.intp)
    return groups, scores, targets, entry_weights


def top_label_entries(checked: iv.Predictions, class_conditional: bool):
    """Group (predicted class, or None when pooled), confidence and correctness per row."""
    prob, labels, summary = checked
    if not class_conditional:
        return None, summary.confidence, summary.correct(prob, labels)
    groups = summary.prediction
    if groups is None:
        groups = np.argmax(prob, axis=1)
    return groups, summary.confidence, groups == labels


def _picked_entries(checked: iv.Predictions, options: GCEOptions):
    """Group, score, target and row of each row's top-r entries, or of all N x K entries."""
    prob, labels, _ = checked
    n_samples, n_classes = prob.shape
    top_k = options.top_k
    if top_k is None:
        rows, columns = np.divmod(np.arange(n_samples * n_classes), n_classes)
    else:
        # Stable sort of -p: the r largest entries, ties resolved by the lower class index.
        order = np.argsort(-prob, axis=1, kind="stable")[:, :top_k]
        rows = np.repeat(np.arange(n_samples), top_k)
        columns = order.reshape(-1)
    groups = columns if options.class_conditional else None
    return groups, prob[rows, columns], labels[rows] == columns, rows


def kept_entries(threshold: float, groups, scores, targets, weights):
    """The entries whose score is above ``threshold`` (all of them for 0)."""
    if threshold > 0:
        keep = scores > cut_for(threshold, scores.dtype)
        scores, targets = scores[keep], targets[keep]
        groups = None if groups is None else groups[keep]
        weights = None if weights is None else weights[keep]
    return groups, scores, targets, weights


def flat_cells(options: GCEOptions, groups: NDArray | None, scores: NDArray) -> NDArray:
    """Flat (group, bin) index of each entry (the bin alone when pooled)."""
    cells = assign_bins(scores, options.edges, options.uniform)
    if options.class_conditional:
        cells += groups * options.n_bins
    return cells
