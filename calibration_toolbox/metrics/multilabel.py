r"""Multi-label targets: K independent labels per row, one probability (a sigmoid) each.

An (N, K) 0/1 label matrix ``labels`` beside (N, K) probabilities ``prob``, where
``prob[i, k]`` is P(label k of row i is 1) and the rows need not sum to 1.  Each label is a
binary task; the measures here are the binary measures of the K labels, averaged:

* :func:`multilabel_calibration_table` -- the per-label binary calibration table: one score
  set per label (column k's scores against column k's 0/1 targets), the engine's
  :class:`~calibration_toolbox.CalibrationTable` with ``class_conditional=True``: the
  class-wise table of all entries, the targets read from the matrix rather than
  ``1[y == k]``;
* :func:`multilabel_calibration_error` -- its macro (over labels) or micro (all N x K pairs
  pooled) reduction;
* :func:`multilabel_brier_score`, :func:`multilabel_log_loss` -- the binary Brier score and
  log loss over the N x K (probability, target) pairs.

Which reading applies: these functions read ``labels`` as K independent 0/1 labels, and
refuse (N,) class labels (the multiclass measures' input) and one-hot rows beside
probability rows that sum to 1 (a softmax with its one-hot label: a multiclass call).  The
multiclass measures refuse an (N, K) label matrix, and name these functions.

Imports: NumPy, SciPy, ``_registry``, ``_validation``, ``_rows``, ``binning`` and
``metrics._table``; imported by ``metrics``.
"""

from __future__ import annotations

import functools
from typing import Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _arrays, _dask, _registry, _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._docstrings import with_fragments
from calibration_toolbox._rows import CACHE_BLOCK_ELEMENTS, block_rows, row_blocks
from calibration_toolbox.binning import assign_bins, is_uniform
from calibration_toolbox.metrics._table import CalibrationTable, Norm, reduce_tables, zeroed

__all__ = [
    "multilabel_brier_score",
    "multilabel_calibration_error",
    "multilabel_calibration_table",
    "multilabel_log_loss",
]

_INPUTS = """\
    prob : array-like, shape (N, K)
        Per-label probabilities P(label k = 1), rows not normalised (one sigmoid per
        label); with ``logits=True``, per-label logits (their sigmoid is taken, never a
        softmax).  One label: a single column (N, 1).  A Dask array chunked along rows
        (with ``labels`` and ``sample_weight`` as Dask or NumPy arrays) is reduced chunk
        by chunk in the workers, each chunk checked as an in-memory call checks its rows,
        and the chunks' sums added: the in-memory value to rounding.
    labels : array-like of 0/1 or bool, shape (N, K)
        The label matrix: ``labels[i, k]`` is 1 where label k applies to row i.  (N,)
        class labels are refused (a multiclass task: ECE, SCE, brier_score, ...), and so
        are one-hot rows beside probability rows that sum to 1 (a softmax).
"""
_KEYWORDS = """\
    logits : bool, default False
        ``prob`` holds per-label logits.
    sample_weight : array-like, shape (N,), optional
        Non-negative weight of each row, given to each of its K (probability, target)
        pairs; integer weights equal duplicated rows.
"""
#: The shared parameters, at any indentation (Python 3.13 strips a docstring's own).
_doc = with_fragments({"{inputs}": _INPUTS, "{keywords}": _KEYWORDS})


@_registry.metric("multilabel_calibration_table")
@_doc
def multilabel_calibration_table(
    prob: ArrayLike,
    labels: ArrayLike,
    *,
    bins: Union[int, ArrayLike, str] = 15,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
) -> CalibrationTable:
    """Per-label binary calibration table: one group per label, equal-width bins.

    Group k bins column k's N probabilities against column k's 0/1 targets: the weighted
    count, score sum and target sum of each (label, bin) cell, with the bins of
    :func:`~calibration_toolbox.GCE` (``(lo, hi]``, 0 in the first bin).  It is a
    class-conditional :class:`~calibration_toolbox.CalibrationTable` of all entries
    (``multilabel=True``): ``table.calibration_error()`` is the macro ECE, tables of row
    batches add up (``+``, ``sum``: the streaming form), and
    ``ReliabilityDiagram.from_table(table)`` draws one panel per label.

    Parameters
    ----------
    {inputs}
    bins : int, array-like or 'auto', default 15
        Number of equal-width bins, or increasing edges from 0 to 1 (as in GCE).
    {keywords}

    Returns
    -------
    CalibrationTable
        Shape ``(K, n_bins)`` sums, ``class_conditional=True``, ``multilabel=True``.

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel, D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019 (one score set per class).

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import multilabel_calibration_table
    >>> prob = np.array([[0.9, 0.2], [0.6, 0.7], [0.3, 0.8]])
    >>> labels = np.array([[1, 0], [0, 1], [1, 1]])
    >>> table = multilabel_calibration_table(prob, labels, bins=2)
    >>> table.counts
    array([[1., 2.],
           [1., 2.]])
    >>> table.target_sums
    array([[1., 1.],
           [0., 2.]])
    """
    if _arrays.is_dask_array(prob):
        return _dask_table(prob, labels, bins, logits, sample_weight)
    checked = iv.check_multilabel(prob, labels, logits=logits)
    n_samples, n_labels = checked.prob.shape
    edges = iv.check_bins(bins, n_samples=n_samples)
    iv.check_table_cells(n_labels, len(edges) - 1)
    weights = iv.check_sample_weight(sample_weight, n_samples)
    return _table(checked, weights, edges)


class _BlockBuffers:
    """A row block's bin indices (``intp``) and float64 scratch, reused from block to block.

    Up to :data:`CACHE_BLOCK_ELEMENTS` values each (a few MiB whatever N): freshly
    allocated per block, each would be a new mapping whose pages are faulted in anew.
    """

    def __init__(self, shape: tuple[int, int], block_elements: int):
        rows = min(shape[0], block_rows(shape[1], block_elements))
        self.index = np.empty((rows, shape[1]), dtype=np.intp)
        self.scratch = np.empty((rows, shape[1]))

    def of(self, n_rows: int) -> tuple[NDArray, NDArray]:
        """The buffers' first ``n_rows`` rows (C-contiguous)."""
        return self.index[:n_rows], self.scratch[:n_rows]


def _as_float64(block: NDArray, scratch: NDArray) -> NDArray:
    """The block in float64: itself, or converted into the scratch buffer (bincount's weights)."""
    if block.dtype == np.float64:
        return block
    np.copyto(scratch, block)
    return scratch


def _table(checked: iv.MultiLabel, weights: NDArray | None, edges: NDArray) -> CalibrationTable:
    """The per-label table of checked predictions: one ``bincount`` pair per row block.

    Each entry's cell is ``2 * (k * B + bin) + target``, so one unweighted count gives the
    counts and the target sums together and one count weighted by the scores the score
    sums; row blocks keep the temporaries in cache.
    """
    prob, targets = checked.prob, checked.targets
    n_labels, n_bins = prob.shape[1], len(edges) - 1
    uniform = is_uniform(edges)
    offsets = np.arange(n_labels) * (2 * n_bins)
    n_cells = 2 * n_labels * n_bins
    counts = np.zeros(n_cells, dtype=np.int64 if weights is None else np.float64)
    score_sums = np.zeros(n_cells)
    buffers = _BlockBuffers(prob.shape, CACHE_BLOCK_ELEMENTS)
    for rows in row_blocks(*prob.shape, CACHE_BLOCK_ELEMENTS):
        block = prob[rows]
        cells, scratch = buffers.of(len(block))
        cells = assign_bins(block, edges, uniform, out=cells, scratch=scratch)
        cells *= 2
        cells += targets[rows]
        cells += offsets
        flat = cells.reshape(-1)
        if weights is None:
            counts += np.bincount(flat, minlength=n_cells)
            scores = _as_float64(block, scratch).reshape(-1)
        else:
            row_weights = weights[rows, None]
            counts += np.bincount(
                flat,
                weights=np.repeat(row_weights, n_labels, axis=1).reshape(-1),
                minlength=n_cells,
            )
            scores = (block * row_weights).reshape(-1)
        score_sums += np.bincount(flat, weights=scores, minlength=n_cells)
    by_target = counts.reshape(n_labels, n_bins, 2).astype(np.float64)
    return CalibrationTable(
        edges=np.broadcast_to(edges, (n_labels, n_bins + 1)).copy(),
        counts=by_target.sum(axis=2),
        score_sums=score_sums.reshape(n_labels, n_bins, 2).sum(axis=2),
        target_sums=by_target[:, :, 1].copy(),
        n_classes=n_labels,
        class_conditional=True,
        adaptive_bins=False,
        top_k_classes=None,
        multilabel=True,
    )


@_registry.metric("multilabel_calibration_error")
@_doc
def multilabel_calibration_error(
    prob: ArrayLike,
    labels: ArrayLike,
    *,
    bins: Union[int, ArrayLike, str] = 15,
    norm: Norm = 1,
    average: str = "macro",
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
) -> float:
    r"""Multi-label calibration error: the binary ECE of each label, macro or micro averaged.

    Per label k, with the equal-width bins of :func:`~calibration_toolbox.GCE` over the
    N pairs :math:`(p_{ik}, y_{ik})`:
    :math:`E_k = \sum_b \frac{n_{kb}}{N} \lvert \bar y_{kb} - \bar p_{kb} \rvert^q`.

    * ``average='macro'``: :math:`(\frac1K \sum_k E_k)^{1/q}` (the largest gap over labels
      and bins for the max norm): the class-conditional reduction of GCE, so with
      ``norm=1`` it is the mean over labels of each label's binary ECE, and on one-hot
      labels beside a softmax it would equal ``SCE`` (the class-wise ECE);
    * ``average='micro'``: the ECE of all N x K pairs pooled into one set,
      :math:`(\sum_b \frac{n_b}{NK} \lvert \bar y_b - \bar p_b \rvert^q)^{1/q}`.

    The binary ECE of a label is the positive-class ECE (torchmetrics'
    ``binary_calibration_error``, netcal's binary ECE), not the top-label one of
    ``ECE(np.column_stack([1 - p, p]), y)``.

    Parameters
    ----------
    {inputs}
    bins : int, array-like or 'auto', default 15
        Number of equal-width bins, or increasing edges from 0 to 1 (as in GCE).
    norm : {1, 2, 'inf'}, default 1
        Norm over the bins (also ``'max'``, ``np.inf``).
    average : {'macro', 'micro'}, default 'macro'
        Mean over labels of the per-label errors, or the error of the pooled pairs.  The
        per-label values: ``multilabel_calibration_table`` (one group per label).
    {keywords}

    Returns
    -------
    float

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel, D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019 (class-conditional GCE).
    .. [2] M. P. Naeini, G. Cooper, M. Hauskrecht, "Obtaining Well Calibrated
       Probabilities Using Bayesian Binning", AAAI, 2015.
    .. [3] scikit-learn, "Multiclass and multioutput algorithms": macro and micro averaging.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import multilabel_calibration_error
    >>> prob = np.array([[0.9, 0.2], [0.6, 0.7], [0.3, 0.8]])
    >>> labels = np.array([[1, 0], [0, 1], [1, 1]])
    >>> round(multilabel_calibration_error(prob, labels, bins=2), 6)
    0.316667
    >>> round(multilabel_calibration_error(prob, labels, bins=2, average="micro"), 6)
    0.1
    """
    p = iv.check_norm(norm)
    average = iv.choice("macro", "micro")(average, "average")
    if _arrays.is_dask_array(prob):
        table = _dask_table(prob, labels, bins, logits, sample_weight)
    else:
        checked = iv.check_multilabel(prob, labels, logits=logits)
        n_samples = len(checked.targets)
        edges = iv.check_bins(bins, n_samples=n_samples)
        iv.check_table_cells(checked.targets.shape[1], len(edges) - 1)
        weights = iv.check_sample_weight(sample_weight, n_samples, scale_free=True)
        table = _table(checked, weights, edges)
    n_labels = table.counts.shape[0]
    if average == "macro":
        return table.calibration_error(norm)
    pooled = (part.sum(axis=0, keepdims=True) for part in _sums(table))
    return float(reduce_tables(*pooled, n_labels, False, p))


def _sums(table: CalibrationTable) -> tuple[NDArray, NDArray, NDArray]:
    return table.counts, table.score_sums, table.target_sums


def _row_totals(checked: iv.MultiLabel, weights: NDArray | None, losses) -> float:
    """Weighted sum over rows of ``losses(rows)``, each row's K losses summed, block by block.

    Rows of weight 0 are absent: an infinite loss there must not become ``0 * inf = NaN``.
    """
    total = 0.0
    for rows in row_blocks(*checked.prob.shape, CACHE_BLOCK_ELEMENTS):
        per_row = np.einsum("ij->i", losses(rows))
        if weights is None:
            total += per_row.sum()
        else:
            positive = weights[rows] > 0
            total += np.dot(weights[rows][positive], per_row[positive])
    return total


def _mean_over_pairs(
    prob: ArrayLike, labels: ArrayLike, logits: object, sample_weight: ArrayLike | None, losses
) -> float:
    """The weighted mean of ``losses(checked, rows)`` over the N x K pairs."""
    if _arrays.is_dask_array(prob):
        n_labels = _dask.row_chunked(prob, "prob")
        chunk = functools.partial(_chunk_pairs, losses, logits)
        total, weight = _dask.block_sums(prob, labels, sample_weight, chunk, n_labels)
        return float(total / (weight * n_labels))
    checked = iv.check_multilabel(prob, labels, logits=logits)
    n_samples, n_labels = checked.prob.shape
    weights = iv.check_sample_weight(sample_weight, n_samples, scale_free=True)
    total = _row_totals(checked, weights, lambda rows: losses(checked, rows))
    weight = n_samples if weights is None else weights.sum()
    return float(total / (weight * n_labels))


@_registry.metric("multilabel_brier_score")
@_doc
def multilabel_brier_score(
    prob: ArrayLike,
    labels: ArrayLike,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
) -> float:
    r"""Multi-label Brier score: the binary Brier score over the N x K pairs, in [0, 1].

    .. math:: \mathrm{BS} = \frac{1}{N K} \sum_i \sum_k (p_{ik} - y_{ik})^2

    (weighted: each row's K pairs carry its weight).  Every label has the same N rows, so
    the macro average (the mean over labels of each label's binary Brier score,
    scikit-learn's ``brier_score_loss`` per column) and the micro average (scikit-learn's
    ``brier_score_loss`` of the raveled arrays) are this same number.  It is the
    multiclass :func:`~calibration_toolbox.brier_score` divided by K on the same arrays
    (that one sums over the K classes of a row).

    Parameters
    ----------
    {inputs}
    {keywords}

    Returns
    -------
    float

    References
    ----------
    .. [1] G. W. Brier, "Verification of forecasts expressed in terms of probability",
       Monthly Weather Review 78(1), 1950.

    Examples
    --------
    >>> from calibration_toolbox import multilabel_brier_score
    >>> round(multilabel_brier_score([[0.9, 0.2], [0.6, 0.7]], [[1, 0], [0, 1]]), 6)
    0.125
    """

    def squared_errors(checked: iv.MultiLabel, rows: slice) -> NDArray:
        errors = checked.prob[rows].astype(np.float64)
        errors -= checked.targets[rows]
        errors *= errors
        return errors

    return _mean_over_pairs(prob, labels, logits, sample_weight, squared_errors)


@_registry.metric("multilabel_log_loss")
@_doc
def multilabel_log_loss(
    prob: ArrayLike,
    labels: ArrayLike,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    eps: float = 1e-15,
) -> float:
    r"""Multi-label log loss (binary cross-entropy) over the N x K pairs, in nats.

    .. math:: \mathrm{NLL} = -\frac{1}{N K} \sum_i \sum_k
       [y_{ik} \log p_{ik} + (1 - y_{ik}) \log(1 - p_{ik})]

    (weighted: each row's K pairs carry its weight): the mean of PyTorch's
    ``BCEWithLogitsLoss``, scikit-learn's ``log_loss`` of the raveled arrays, and (every
    label has the same N rows) the mean over labels of each label's binary log loss.
    From logits it is exact: ``-log_expit(z)`` for a present label, ``-log_expit(-z)`` for
    an absent one.  From probabilities, the probability of the outcome is clipped below at
    ``eps`` (``eps=0``: unclipped, ``inf`` for a probability 0 on the outcome).

    Parameters
    ----------
    {inputs}
    {keywords}
    eps : float, default 1e-15
        Lower clip of the outcome's probability, in [0, 1) (not used with ``logits=True``).

    Returns
    -------
    float

    References
    ----------
    .. [1] I. J. Good, "Rational Decisions", Journal of the Royal Statistical Society B
       14(1), 1952.

    Examples
    --------
    >>> from calibration_toolbox import multilabel_log_loss
    >>> round(multilabel_log_loss([[0.9, 0.2], [0.6, 0.7]], [[1, 0], [0, 1]]), 6)
    0.400367
    >>> round(multilabel_log_loss([[2.0, -1.0]], [[1, 0]], logits=True), 6)
    0.220095
    """
    eps = iv.check_fraction(eps, "eps")

    def log_losses(checked: iv.MultiLabel, rows: slice) -> NDArray:
        present = checked.targets[rows] == 1
        if checked.log_odds is not None:
            log_odds = checked.log_odds[rows].astype(np.float64)
            return -_scipy.special.log_expit(np.where(present, log_odds, -log_odds))
        scores = checked.prob[rows].astype(np.float64)
        outcome = np.where(present, scores, 1.0 - scores)
        with np.errstate(divide="ignore"):
            return -np.log(np.maximum(outcome, eps))

    return _mean_over_pairs(prob, labels, logits, sample_weight, log_losses)


# -- Dask arrays chunked along rows: each chunk reduced in the workers, the sums added --------
def _dask_table(prob, labels, bins, logits: object, sample_weight) -> CalibrationTable:
    """The per-label table of Dask arrays: each chunk's table (the in-memory one), added.

    The tables of the canonical row blocks are added in block order (``_dask.block_sums``);
    the counts are those of the in-memory call exactly, the sums to rounding.  Each chunk
    is checked as an in-memory call checks its rows (so the refusal of one-hot labels
    beside a softmax applies to each chunk's rows).
    """
    n_labels = _dask.row_chunked(prob, "prob")
    edges = iv.check_bins(bins, n_samples=int(prob.shape[0]))
    iv.check_table_cells(n_labels, len(edges) - 1)
    chunk = functools.partial(_chunk_table, edges, logits)
    table, _ = _dask.block_sums(prob, labels, sample_weight, chunk, n_labels, zero=zeroed)
    return table


def _chunk_table(edges: NDArray, logits: object, prob, labels, weights):
    """One chunk's per-label table and its total weight (in a worker)."""
    checked = iv.check_multilabel(prob, labels, logits=logits)
    weights = iv.check_sample_weight(weights, len(checked.targets))
    total = float(len(checked.targets) if weights is None else weights.sum())
    return _table(checked, weights, edges), total


def _chunk_pairs(losses, logits: object, prob, labels, weights) -> tuple[float, float]:
    """One chunk's weighted sum of the pairs' ``losses`` and its total weight (in a worker)."""
    checked = iv.check_multilabel(prob, labels, logits=logits)
    weights = iv.check_sample_weight(weights, len(checked.targets))
    total = _row_totals(checked, weights, lambda rows: losses(checked, rows))
    return total, float(len(checked.targets) if weights is None else weights.sum())
