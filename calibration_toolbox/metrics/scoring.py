"""Proper scoring rules: Brier score and negative log-likelihood."""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _arrays, _dask, _registry, _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._rows import HAND_OVER_ROWS, canonical_blocks, canonical_rows, row_blocks
from calibration_toolbox.scores import PredictionsLike, Scores

__all__ = ["brier_score", "negative_log_likelihood"]


def _weighted_sum(values: NDArray, weights: NDArray | None) -> float:
    if weights is None:
        return values.sum()
    # Rows of weight 0 are absent: an infinite loss there must not become 0 * inf = NaN.
    positive = weights > 0
    return np.dot(weights[positive], values[positive])


@_registry.metric("brier_score")
@iv.accepts_classes
def brier_score(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Multiclass Brier score (Brier 1950): mean squared distance to the one-hot label.

    .. math:: \mathrm{BS} = \frac1N \sum_i \sum_k (p_{ik} - 1[y_i = k])^2 \in [0, 2].

    On a binary task this is twice the single-probability form
    :math:`\frac1N \sum_i (p_i - y_i)^2` of scikit-learn's ``brier_score_loss``, since both
    columns contribute the same squared error.  With ``Scores(s)`` (one score per row
    against a 0/1 target) it is that single-probability form,
    :math:`\frac1N \sum_i (s_i - y_i)^2`.

    Parameters
    ----------
    prob : array-like, shape (N, K) or (N,), or Scores
        Probabilities (logits with ``logits=True``); a 1-D array is P(y = 1) (two columns
        ``[1 - p, p]``); :class:`~calibration_toolbox.Scores` gives the single-probability
        form (log-odds with ``logits=True``).
    labels : array-like of int, shape (N,)
        True classes; 0/1 targets with ``Scores``.
    logits : bool, default False
        ``prob`` holds logits.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights of a weighted mean over samples.
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first (into a new array), to accept
        probabilities rounded when saved, e.g. to a CSV.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names, looked up
        among them (the rule of :func:`~calibration_toolbox.ECE`).

    Returns
    -------
    float

    References
    ----------
    .. [1] G. W. Brier, "Verification of forecasts expressed in terms of probability",
       Monthly Weather Review 78(1), 1950.

    Examples
    --------
    >>> from calibration_toolbox import brier_score
    >>> brier_score([[0.9, 0.1], [0.6, 0.4]], [0, 1])
    0.37
    >>> brier_score([0.1, 0.4], [0, 1])  # 1-D: P(y = 1), twice sklearn's 0.185
    0.37
    >>> from calibration_toolbox import Scores
    >>> round(brier_score(Scores([0.1, 0.4]), [0, 1]), 6)  # sklearn's brier_score_loss
    0.185
    """
    sums = (
        functools.partial(_dask_sums, _brier_sums) if _arrays.is_dask_input(prob) else _brier_sums
    )
    total, weight = sums(
        prob, labels, logits=logits, sample_weight=sample_weight, renormalize=renormalize
    )
    return float(total / weight)


def _dask_sums(sums, prob, labels, *, sample_weight, **options):
    """``(weighted sum, total weight)`` of ``sums`` over Dask arrays, each chunk in a worker.

    ``sums`` is :func:`_brier_sums` or :func:`_nll_sums`, the in-memory function, run on
    each canonical row block by the chunk executor (``_dask.block_sums``).
    """
    chunk = functools.partial(_chunk_sums, sums, **options)
    return _dask.block_sums(prob, labels, sample_weight, chunk, _dask.n_classes(prob))


def _chunk_sums(sums, prob, labels, weights, **options):
    """``sums`` of one chunk's rows (the executor passes the weights by position)."""
    return sums(prob, labels, sample_weight=weights, scale_free=False, **options)


def _brier_sums(prob, labels, *, logits, sample_weight, renormalize, scale_free=True):
    """Validate, then the weighted sum of the Brier terms and the sum of the weights.

    The weights are scaled (``check_sample_weight``) in memory; a Dask chunk's
    (``scale_free=False``) are summed with the other chunks' as they are.
    """
    checked = iv.check_predictions(
        prob, labels, logits=logits, renormalize=renormalize, defer_scan=True
    )
    weights = iv.checks_after_values(
        checked,
        lambda: iv.check_sample_weight(sample_weight, checked.n_samples, scale_free=scale_free),
    )
    return _brier_total(checked, weights), _total_weight(checked, weights)


def _total_weight(checked, weights: NDArray | None, total=0):
    """The denominator of a weighted mean over the rows: N, or the weights' block sums.

    Weights are summed per canonical row block and the blocks one after the other
    (:func:`_block_total`), onto ``total`` (the blocks before these rows).
    """
    if weights is None:
        return total + checked.n_samples
    return _block_total(weights, None, checked.n_classes, total)


def _block_total(terms: NDArray, weights: NDArray | None, n_classes: int, total=0.0) -> float:
    """``total`` plus the weighted sums of ``terms`` over each canonical row block in turn.

    The definition of every streamed sum over rows (see
    :func:`~calibration_toolbox._rows.canonical_rows`): a stream of batches and Dask
    chunks add the same block sums in the same order.
    """
    for rows, _ in canonical_blocks(len(terms), n_classes):
        total += _weighted_sum(terms[rows], None if weights is None else weights[rows])
    return total


def _brier_total(checked: iv.CheckedInput, weights: NDArray | None, total=0.0) -> float:
    """Weighted sum over the rows of the Brier terms (checking pending rows on the way).

    Summed per canonical row block, onto ``total`` (:func:`_block_total`).
    """
    pairs = checked.pairs
    if pairs is not None:
        errors = pairs.scores.astype(np.float64)
        errors -= pairs.targets
        return _block_total(errors * errors, weights, 2, total)
    return _row_total(checked, weights, _brier_terms, total=total)


def _brier_terms(block: NDArray, label_scores: NDArray) -> NDArray:
    """``sum_k (p_k - y_k)^2 = sum_k p_k^2 - 2 p_label + 1`` of each row, in float64."""
    wide = block.astype(np.float64)
    return np.einsum("ij,ij->i", wide, wide) - 2 * label_scores.astype(np.float64) + 1


def _row_total(
    checked: iv.PendingPredictions,
    weights: NDArray | None,
    row_terms,
    chunk_rows: int = 0,
    total=0.0,
):
    """``total`` plus the weighted sum of ``row_terms(block, label_scores)`` over the rows.

    The rows are checked and summed row block by row block, or ``chunk_rows`` rows at a
    time for terms of the label scores alone (memory does not grow with N: the per-row
    terms were N-sized float64 arrays, 0.7x a float32 input for the Brier score).  The
    blocks restart at each canonical row block, whose sum (the blocks' sums one after the
    other, from zero) is added to the total when the block ends (:func:`_block_total`).
    """
    step, n_rows = canonical_rows(checked.n_classes), checked.n_samples
    sums = [total, 0.0]  # the total over the canonical blocks done; the current block's sum

    def add(rows: slice, summary) -> None:
        terms = row_terms(checked.prob[rows], summary.label_scores)
        sums[1] += _weighted_sum(terms, None if weights is None else weights[rows])
        if rows.stop % step == 0 or rows.stop == n_rows:
            sums[0] += sums[1]
            sums[1] = 0.0

    checked.scan(each_block=add, chunk_rows=chunk_rows, canonical=True)
    return sums[0]


@_registry.metric("negative_log_likelihood")
@iv.accepts_classes
def negative_log_likelihood(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    eps: float = 1e-15,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Negative log-likelihood (log loss, cross-entropy) of the labels, in nats.

    .. math:: \mathrm{NLL} = -\frac1N \sum_i \log p_{i, y_i}.

    From logits it is computed exactly as ``logsumexp(z_i) - z_{i, y_i}`` (no softmax
    round trip).  From probabilities, ``p`` is clipped below at ``eps`` so that a zero
    probability on the label costs ``-log(eps)`` rather than infinity; ``eps=0`` gives the
    unclipped value (``inf`` when a label has probability 0).  The rows are not renormalised
    (old scikit-learn's ``log_loss`` clipped at 1e-15 *and* renormalised).

    With ``Scores(s)`` (one score per row against a 0/1 target ``y``) it is the binary log
    loss :math:`-\frac1N \sum_i [y_i \log s_i + (1 - y_i) \log(1 - s_i)]`, the probability
    of the outcome clipped below at ``eps`` likewise; from log-odds ``z``
    (``logits=True``) it is exact, ``-log_expit(z)`` or ``-log_expit(-z)``.

    Parameters
    ----------
    prob : array-like, shape (N, K) or (N,), or Scores
        Probabilities, or logits with ``logits=True``; a 1-D array is the positive class
        (two columns ``[1 - p, p]``, the same value as ``Scores(p)``).
    labels : array-like of int, shape (N,)
        True classes; 0/1 targets with ``Scores``.
    logits : bool, default False
        ``prob`` holds logits.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights of a weighted mean over samples.
    eps : float, default 1e-15
        Lower clip of the label's probability, in [0, 1) (checked, but not used, with
        ``logits=True``).
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first (into a new array), to accept
        probabilities rounded when saved, e.g. to a CSV.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names, looked up
        among them (the rule of :func:`~calibration_toolbox.ECE`).

    Returns
    -------
    float

    References
    ----------
    .. [1] I. J. Good, "Rational Decisions", Journal of the Royal Statistical Society B
       14(1), 1952.

    Examples
    --------
    >>> from calibration_toolbox import negative_log_likelihood
    >>> round(negative_log_likelihood([[0.9, 0.1], [0.6, 0.4]], [0, 1]), 6)
    0.510826
    >>> round(negative_log_likelihood([[2.0, 0.0], [0.5, 0.1]], [0, 1], logits=True), 6)
    0.519972
    >>> from calibration_toolbox import Scores
    >>> round(negative_log_likelihood(Scores([0.1, 0.4]), [0, 1]), 6)
    0.510826
    """
    eps = iv.check_fraction(eps, "eps")
    sums = functools.partial(_dask_sums, _nll_sums) if _arrays.is_dask_input(prob) else _nll_sums
    total, weight = sums(
        prob, labels, logits=logits, sample_weight=sample_weight, renormalize=renormalize, eps=eps
    )
    return float(total / weight)


def _nll_sums(prob, labels, *, logits, sample_weight, renormalize, eps, scale_free=True):
    """Validate, then the weighted sum of the losses and the sum of the weights.

    The weights are scaled as :func:`_brier_sums` scales them.
    """
    if isinstance(prob, Scores):
        checked = iv.check_predictions(prob, labels, logits=logits, renormalize=renormalize)
        weights = iv.check_sample_weight(sample_weight, checked.n_samples, scale_free=scale_free)
        logit_rows = None
    elif iv.check_logits_flag(logits, renormalize):
        logit_rows = iv.check_predicted_logits(prob, "prob")
        checked = iv.Predictions(logit_rows, iv.check_labels(labels, *logit_rows.shape), None)
        weights = iv.check_sample_weight(sample_weight, len(logit_rows), scale_free=scale_free)
    else:
        checked = iv.check_predictions(prob, labels, renormalize=renormalize, defer_scan=True)
        weights = iv.checks_after_values(
            checked,
            lambda: iv.check_sample_weight(
                sample_weight, checked.n_samples, scale_free=scale_free
            ),
        )
        logit_rows = None
    total = _nll_total(checked, weights, eps, logit_rows)
    return total, _total_weight(checked, weights)


def _logit_losses(scores: NDArray, labels: NDArray) -> NDArray:
    """``logsumexp(z_i) - z_(i, y_i)`` of each row of checked logits, in float64."""
    losses = np.empty(len(scores))
    for rows in row_blocks(*scores.shape):
        losses[rows] = _scipy.special.logsumexp(scores[rows].astype(np.float64), axis=1)
    losses -= scores[np.arange(len(scores)), labels]
    return losses


def _nll_total(
    checked, weights: NDArray | None, eps: float, logit_rows: NDArray | None = None, total=0.0
):
    """Weighted sum of the losses over the rows of checked predictions, pairs or logits.

    Probabilities: ``-log max(p_label, eps)`` (pending rows are checked on the way);
    ``logit_rows``, the checked logits the probabilities came from: exact from them;
    :class:`~calibration_toolbox._validation.Pairs`: :func:`_pair_losses`.  Summed per
    canonical row block, onto ``total`` (:func:`_block_total`).
    """
    if checked.pairs is not None:
        return _block_total(_pair_losses(checked.pairs, eps), weights, 2, total)
    if logit_rows is not None:
        losses = _logit_losses(logit_rows, checked.labels)
        return _block_total(losses, weights, checked.n_classes, total)

    def losses(rows: NDArray, label_scores: NDArray) -> NDArray:
        with np.errstate(divide="ignore"):
            return -np.log(np.maximum(label_scores.astype(np.float64), eps))

    # Handing 131-row blocks over one by one at K = 1,000 cost 12% (18 ms against 16 ms).
    return _row_total(checked, weights, losses, chunk_rows=HAND_OVER_ROWS, total=total)


def _pair_losses(pairs: iv.Pairs, eps: float) -> NDArray:
    """``-log q`` per row, q the probability given to the outcome: s if y = 1, else 1 - s.

    From log-odds z exactly, ``-log_expit(z)`` or ``-log_expit(-z)``; from scores, q is
    clipped below at ``eps``.
    """
    if pairs.log_odds is not None:
        log_odds = pairs.log_odds.astype(np.float64)
        return -_scipy.special.log_expit(np.where(pairs.targets == 1, log_odds, -log_odds))
    scores = pairs.scores.astype(np.float64)
    outcome = np.where(pairs.targets == 1, scores, 1.0 - scores)
    with np.errstate(divide="ignore"):
        return -np.log(np.maximum(outcome, eps))


def row_losses(
    prob: PredictionsLike,
    labels: ArrayLike,
    score: str,
    *,
    logits: bool = False,
    renormalize: bool = False,
    eps: float = 1e-15,
) -> NDArray:
    """Each row's term of :func:`brier_score` (``'brier'``) or of the NLL (``'log'``), float64.

    The terms whose mean is the metric (unit weights): the rows are checked as the metric
    checks them, and each term is the metric's own (:func:`_brier_terms`, the pairs'
    squared error; :func:`_logit_losses` exactly from logits, :func:`_pair_losses`, the
    label's probability clipped at ``eps``).  ``score`` must be checked by the caller.
    """
    exact = score == "log" and not isinstance(prob, Scores)
    if exact and iv.check_logits_flag(logits, renormalize):
        logit_rows = iv.check_predicted_logits(prob, "prob")
        return _logit_losses(logit_rows, iv.check_labels(labels, *logit_rows.shape))
    checked = iv.check_predictions(prob, labels, logits=logits, renormalize=renormalize)
    pairs = checked.pairs
    if pairs is not None:
        if score == "log":
            return _pair_losses(pairs, eps)
        errors = pairs.scores.astype(np.float64)
        errors -= pairs.targets
        return errors * errors
    label_scores = checked.rows.label_scores
    if score == "brier":
        return _brier_terms(checked.prob, label_scores)
    with np.errstate(divide="ignore"):
        return -np.log(np.maximum(label_scores.astype(np.float64), eps))
