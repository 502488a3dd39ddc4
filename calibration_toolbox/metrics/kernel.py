"""Kernel calibration measures: MMCE (Kumar et al. 2018) and SKCE (Widmann et al. 2019).

Both are quadratic forms of the residuals (observed minus predicted) under a Laplacian
kernel of the predictions.  MMCE lives on the top label (confidence, correctness), where the
values are scalars: sorting them turns the n x n form into one recurrence, O(n log n).
SKCE lives on the whole probability vector: its quadratic estimators work on tiles of
pairs of row blocks (memory bounded, never n x n at once); its linear and block estimators
are one pass over pairs of neighbouring rows.
"""

from __future__ import annotations

import itertools
import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry
from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, InputTypeError
from calibration_toolbox.scores import PredictionsLike, Scores

__all__ = ["MMCE", "SKCE"]

#: exp(-x) is 0 in float64 for x above this: pairs of scores further apart than this many
#: bandwidths add exactly nothing to MMCE (np.exp(-746.0) == 0.0).
_UNDERFLOW = 746.0

#: Width, in units of the bandwidth, of the value blocks of the MMCE recurrence: within a
#: block the scale factors exp(+-(r - r_ref) / h) stay within exp(+-32) ~ 1e+-14 of 1.
_MMCE_BLOCK_WIDTH = 64.0
#: Values held at once by a tile of pairwise differences (rows x rows x K), 2**18 float64
#: (2 MiB): the quadratic SKCE estimators' working memory, whatever n.
_TILE_ELEMENTS = 1 << 18
#: Rows whose pairwise distances give the median heuristic: all rows up to this many, else
#: a fixed-seed subsample of this many (523,776 pairs; 20 ms at K = 10); fewer rows for
#: K > 16, so that the distance matrix costs at most _MEDIAN_WORK values.
_MEDIAN_ROWS = 1024
_MEDIAN_WORK = 1 << 24
#: Pairs of rows handled at once by the linear and block estimators (row blocks in cache).
_PAIR_BLOCK_ROWS = 1 << 14
_ESTIMATORS = ("unbiased", "biased", "linear", "block")


def _dot(left: NDArray, right: NDArray) -> float:
    """Dot product of two 1-D float64 arrays, without BLAS.

    On the shared 2-core machine, under load, ``np.dot`` of two 16,384-vectors took up to
    16 ms (OpenBLAS threads waiting for a busy core) where this einsum takes 0.01 ms; it
    made the linear SKCE on 1,000,000 rows 8x slower (487 ms against 60 ms).
    """
    return float(np.einsum("a,a->", left, right))


def _check_bandwidth(bandwidth: object, allow_none: bool) -> float | None:
    """A positive finite bandwidth (or ``None`` for the median heuristic, where allowed)."""
    if bandwidth is None and allow_none:
        return None
    what = (
        "a positive number or None (the median heuristic)" if allow_none else "a positive number"
    )
    if not isinstance(bandwidth, numbers.Real) or isinstance(bandwidth, (bool, np.bool_)):
        raise InputTypeError(
            "{bandwidth} must be {what}; got {value!r}.",
            argument="bandwidth",
            what=what,
            value=bandwidth,
        )
    if not (np.isfinite(bandwidth) and bandwidth > 0):
        raise InputError(
            "{bandwidth} must be {what}; got {value!r}.",
            argument="bandwidth",
            what=what,
            value=bandwidth,
        )
    return float(bandwidth)


def _refuse_weights(sample_weight: ArrayLike | None, why: str) -> None:
    if sample_weight is not None:
        raise InputError(
            "{sample_weight:is} not supported {why}.", argument="sample_weight", why=why
        )


# -- MMCE -------------------------------------------------------------------------------------


def _sorted_residuals(
    scores: NDArray, targets: NDArray, weights: NDArray | None
) -> tuple[NDArray, NDArray]:
    """Scores sorted ascending and their (weighted) residuals ``w * (target - score)``, float64.

    Without weights one sort of integer keys does it: for floats in [+0, 1] the bit
    patterns order like the values and leave the top bit free, so ``bits << 1 | target``
    sorts by score and carries the target along (-0.0's sign bit is shifted out, leaving
    +0).  On 1,000,000 float32 scores it takes the time of ``np.sort(scores)`` (31 ms),
    where ``np.argsort`` and a gather take 71 ms.
    """
    if weights is not None:
        order = np.argsort(scores, kind="stable")
        values = scores[order].astype(np.float64)
        return values, weights[order] * (targets[order] - values)
    bit_type = np.uint32 if scores.dtype == np.float32 else np.uint64
    keys = scores.view(bit_type) << bit_type(1)
    keys |= targets.astype(bit_type)
    keys.sort()
    values = (keys >> bit_type(1)).view(scores.dtype).astype(np.float64)
    return values, (keys & bit_type(1)) - values


def _tied_form(gaps: NDArray, residuals: NDArray) -> float:
    """``sum_{i != j} d_i d_j [r_i = r_j]``: the form where distinct values' kernel is 0.

    With every positive gap above ``_UNDERFLOW`` bandwidths, ``exp(-gap / h)`` is 0 in
    float64, so only tied values pair (kernel 1): per run of ties, ``(sum d)^2 - sum d^2``.
    """
    runs = np.concatenate([[0], np.cumsum(gaps > 0)])
    run_sums = np.bincount(runs, weights=residuals)
    return _dot(run_sums, run_sums) - _dot(residuals, residuals)


def _off_diagonal_form(values: NDArray, residuals: NDArray, bandwidth: float) -> float:
    r"""``sum_{i != j} d_i d_j exp(-|r_i - r_j| / h)`` for ``values`` r sorted ascending.

    For sorted values the kernel factorises, :math:`e^{-(r_j - r_i)/h} =
    e^{(r_i - c)/h}\, e^{-(r_j - c)/h}` for any centre c, so
    :math:`S_j = \sum_{i<j} d_i e^{-(r_j - r_i)/h}` is an exclusive cumulative sum of
    :math:`d_i e^{(r_i - c)/h}` divided by :math:`e^{(r_j - c)/h}`, and the form is
    :math:`2 \sum_j d_j S_j` (the full sum adds :math:`\sum_i d_i^2`).  One centre for all
    values would overflow (:math:`e^{1/h}` for h < 1/709), so the values are cut into
    blocks of width 64 h, each with its own centre: within a block the factors lie in
    :math:`e^{\pm 32}`, and the cumulative sum's rounding error is relative to the largest
    recent term, of order :math:`\epsilon` times the block size.  The sum carried from one
    block to the next is rescaled by :math:`e^{-(c' - c)/h}`: this is the stable recurrence
    :math:`S_j = (S_{j-1} + d_{j-1})\, e^{-(r_j - r_{j-1})/h}` taken a block at a time,
    vectorised within the block.  The Python loop is over the blocks that hold values
    (each value's block is ``floor((r - r_0) / (64 h))``): one at the default h = 0.4, at
    most ``min(n, 1 / (64 h) + 1)``.  Where every positive gap between values exceeds
    ``_UNDERFLOW`` bandwidths the kernel of distinct values is 0 in float64 and only ties
    pair (:func:`_tied_form`): h = 1e-300 or 5e-324 give that limit, ``sum d_i^2`` for
    distinct values, with no block at all.
    """
    gaps = np.diff(values)
    positive = gaps[gaps > 0]
    if positive.size == 0 or positive.min() > _UNDERFLOW * bandwidth:
        return _tied_form(gaps, residuals)
    width = _MMCE_BLOCK_WIDTH * bandwidth
    first = values[0]
    offsets = np.floor((values - first) / width)  # each value's block, finite: see above
    starts = np.flatnonzero(np.diff(offsets)) + 1
    bounds = np.concatenate([[0], starts, [len(values)]])
    total = 0.0
    carry = 0.0  # sum_{i before the block} d_i exp((r_i - centre) / h), at the block's centre
    previous_centre = first
    for start, end in itertools.pairwise(bounds):
        centre = first + (offsets[start] + 0.5) * width
        carry *= np.exp(-(centre - previous_centre) / bandwidth)
        scale = np.exp((values[start:end] - centre) / bandwidth)
        weighted = residuals[start:end] * scale
        exclusive = np.empty_like(weighted)
        exclusive[0] = carry
        np.cumsum(weighted[:-1], out=exclusive[1:])
        exclusive[1:] += carry
        total += 2.0 * _dot(residuals[start:end] / scale, exclusive)
        carry = float(exclusive[-1] + weighted[-1])
        previous_centre = centre
    return total


def _mmce_pairs(prob: PredictionsLike, labels: ArrayLike, logits: object, renormalize: object):
    """(score, target) pairs of the top label (confidence, correct) or of ``Scores``."""
    checked = iv.check_predictions(
        prob, labels, logits=logits, renormalize=renormalize, top_label=True
    )
    return checked.top_label()


@_registry.metric("MMCE")
@iv.accepts_classes
def MMCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    bandwidth: float = 0.4,
    unbiased: bool = False,
    squared: bool = False,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Maximum mean calibration error of the top label (Kumar, Sarawagi & Jain 2018).

    With the confidence :math:`r_i = \max_k p_{ik}`, the correctness
    :math:`c_i = 1[\arg\max_k p_{ik} = y_i]` (first index on ties) and the Laplacian kernel
    :math:`k(a, b) = \exp(-\lvert a - b \rvert / h)`:

    .. math:: \mathrm{MMCE} = \sqrt{\frac{1}{n^2} \sum_{i,j} (c_i - r_i)(c_j - r_j)\,
              k(r_i, r_j)}.

    With ``sample_weight`` w (normalised, :math:`W = \sum_i w_i`) the sum is
    :math:`\frac{1}{W^2} \sum_{i,j} w_i w_j (\dots)`: integer weights equal duplicated
    rows and scaling the weights changes nothing.  ``unbiased=True`` drops the diagonal,
    :math:`U = \frac{1}{n(n-1)} \sum_{i \ne j} (\dots)`, an unbiased estimator of the
    squared population MMCE, which can be negative: the value returned is then
    :math:`\sqrt{\max(U, 0)}` (as ``GCE(debias=True)`` does), or the signed U itself with
    ``squared=True``.

    Computed exactly in O(n log n) time and O(n) memory by one sort of the confidences and
    a cumulative-sum form of the kernel sum (never an n x n matrix).  Ties in the
    confidence need no rule: the kernel is symmetric and equals 1 between tied values.

    Not to be confused with the MMCE *training loss* of the paper, which weighs correct and
    incorrect rows separately; nor with netcal's ``MMCE``, which computes the same formula
    as here for (N, K) input (the n x n matrix, in the input's dtype) but, for 1-D input,
    takes each value as the confidence even below 0.5 (this function refuses 1-D input as
    ambiguous: pass ``Scores(p)`` for that reading, ``np.column_stack([1 - p, p])`` for
    the top label).

    Parameters
    ----------
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``; or
        ``Scores(s)``: one score per row against a 0/1 target, used as (r, c) directly.
        A plain 1-D array is refused as ambiguous.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    bandwidth : float, default 0.4
        Kernel width h > 0; 0.4 is the paper's choice and netcal's (its ``exp(-2.5 |.|)``).
    unbiased : bool, default False
        Drop the i = j terms and divide by n(n - 1) (needs N >= 2; not with weights).
    squared : bool, default False
        Return the estimate of the squared MMCE (signed, for ``unbiased=True``).
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.  Never guessed.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights (not with ``unbiased=True``, whose pair count has no weighted
        form that both equals duplicated rows and ignores a common scale).
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first (into a new array).
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names, looked up
        among them (the rule of :func:`~calibration_toolbox.ECE`).

    Returns
    -------
    float
        MMCE in [0, 1] (``squared=False``), or its square (signed when unbiased).

    References
    ----------
    .. [1] A. Kumar, S. Sarawagi and U. Jain, "Trainable Calibration Measures for Neural
       Networks from Kernel Mean Embeddings", ICML, 2018.

    Examples
    --------
    >>> from calibration_toolbox import MMCE, Scores

    Confidences (0.9, 0.6, 0.7), correct (1, 0, 1), residuals d = (0.1, -0.6, 0.3):
    the form is 0.46 + 2 (-0.06 e^{-0.75} + 0.03 e^{-0.5} - 0.18 e^{-0.25}) = 0.159340,
    and MMCE = sqrt(0.159340 / 9):

    >>> round(MMCE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7]], [0, 1, 1]), 6)
    0.133058
    >>> round(MMCE(Scores([0.9, 0.6, 0.7]), [1, 0, 1]), 6)
    0.133058
    """
    bandwidth = _check_bandwidth(bandwidth, allow_none=False)
    unbiased = iv.check_flag(unbiased, "unbiased")
    squared = iv.check_flag(squared, "squared")
    if unbiased:
        _refuse_weights(sample_weight, "with unbiased=True (see the docstring)")
    scores, targets = _mmce_pairs(prob, labels, logits, renormalize)
    n = len(scores)
    weights = iv.check_sample_weight(sample_weight, n, scale_free=True)
    if weights is not None:
        weights = weights / weights.sum()
    if unbiased and n < 2:
        raise InputError(
            "{prob} needs at least 2 rows with unbiased=True; got {n}.", argument="prob", n=n
        )
    values, residuals = _sorted_residuals(scores, targets, weights)
    total = _off_diagonal_form(values, residuals, bandwidth)
    if unbiased:
        estimate = total / (n * (n - 1.0))
    else:
        total += _dot(residuals, residuals)
        estimate = total if weights is not None else total / (n * float(n))
    if squared:
        return float(estimate)
    return float(np.sqrt(max(estimate, 0.0)))


# -- SKCE -------------------------------------------------------------------------------------


def _residuals(prob: NDArray, labels: NDArray) -> NDArray:
    """``e_y - p`` in float64, shape (n, K)."""
    residuals = -prob.astype(np.float64)
    residuals[np.arange(len(labels)), labels] += 1.0
    return residuals


def _distances(left: NDArray, right: NDArray) -> NDArray:
    """Euclidean distances ``||left_a - right_b||`` from the differences themselves.

    The Gram form ``|a|^2 + |b|^2 - 2 a.b`` is faster but loses half the digits for close
    rows (a distance of 0 comes out near 1e-8), which moves the kernel of duplicated rows.
    """
    differences = left[:, None, :] - right[None, :, :]
    return np.sqrt(np.einsum("abk,abk->ab", differences, differences))


def _tile_rows(n_classes: int) -> int:
    return max(1, int(np.sqrt(_TILE_ELEMENTS / n_classes)))


def _tiles(n: int, n_classes: int):
    """Pairs of row slices (I, J) with J at or after I, covering the upper triangle."""
    step = _tile_rows(n_classes)
    starts = range(0, n, step)
    for a in starts:
        for b in starts:
            if b >= a:
                yield slice(a, min(a + step, n)), slice(b, min(b + step, n))


def _median_rows(n_classes: int) -> int:
    """Rows whose pairs give the median heuristic: 1024 up to K = 16, fewer for more classes.

    Their distance matrix takes rows**2 * K work (at most 2**24, with at least 128 rows).
    """
    return max(128, min(_MEDIAN_ROWS, int(np.sqrt(_MEDIAN_WORK / n_classes))))


def _median_heuristic(prob: NDArray) -> float:
    """Median of ``||p_i - p_j||`` over the pairs i < j of (a fixed subsample of) the rows.

    The square distance matrix is summed column by column (exact differences, a loop over
    the K classes); its off-diagonal entries hold each pair twice, which leaves the median
    unchanged.  On 1,000,000 x 10 this takes 20 ms, where the tiles of the quadratic
    estimators took 52 ms (tile bookkeeping and the triangle's gather).
    """
    n, n_classes = prob.shape
    size = _median_rows(n_classes)
    rows = prob
    if n > size:
        rows = prob[np.sort(np.random.default_rng(0).choice(n, size, replace=False))]
    rows = rows.astype(np.float64)
    m = len(rows)
    squares = np.zeros((m, m))
    for column in rows.T:
        difference = column[:, None] - column[None, :]
        difference *= difference
        squares += difference
    # the entries off the diagonal: drop the last entry, then the first of each row of n + 1
    off_diagonal = squares.reshape(-1)[:-1].reshape(m - 1, m + 1)[:, 1:]
    median = float(np.median(np.sqrt(off_diagonal))) if m > 1 else 0.0
    if not median > 0:
        raise InputError(
            "the median heuristic for {bandwidth} is 0 (the predictions compared are all "
            "equal); pass bandwidth= explicitly."
        )
    return median


def _laplacian(distance: NDArray, bandwidth: float) -> NDArray:
    """``exp(-distance / bandwidth)``; a quotient beyond float64 (bandwidth 5e-324) gives 0."""
    with np.errstate(over="ignore"):
        return np.exp(-(distance / bandwidth))


def _quadratic_sum(
    prob: NDArray, residuals: NDArray, weights: NDArray | None, bandwidth: float, diagonal: bool
) -> float:
    """``sum_{i,j} w_i w_j h_ij`` over all pairs (with ``diagonal``) or over i != j, tiled."""
    total = 0.0
    rows = prob.astype(np.float64)
    for first, second in _tiles(len(prob), prob.shape[1]):
        kernel = _laplacian(_distances(rows[first], rows[second]), bandwidth)
        h = (residuals[first] @ residuals[second].T) * kernel
        if first == second and not diagonal:
            np.fill_diagonal(h, 0.0)
        if weights is None:
            tile = float(h.sum())
        else:
            tile = float(weights[first] @ h @ weights[second])
        total += tile if first == second else 2.0 * tile
    return total


def _pair_sum(
    left: NDArray, right: NDArray, left_labels: NDArray, right_labels: NDArray, bandwidth: float
) -> float:
    """``sum_a h(left_a, right_a)`` over aligned rows, in row blocks."""
    total = 0.0
    for start in range(0, len(left), _PAIR_BLOCK_ROWS):
        block = slice(start, start + _PAIR_BLOCK_ROWS)
        first = _residuals(left[block], left_labels[block])
        second = _residuals(right[block], right_labels[block])
        differences = left[block].astype(np.float64) - right[block]
        distance = np.sqrt(np.einsum("ak,ak->a", differences, differences))
        inner = np.einsum("ak,ak->a", first, second)
        total += _dot(inner, _laplacian(distance, bandwidth))
    return total


def _block_estimate(prob: NDArray, labels: NDArray, bandwidth: float, block_size: int) -> float:
    """Mean over the full blocks of ``block_size`` rows of the unbiased estimate within each.

    All pairs at the same lag inside every block are aligned at once: the loop is over the
    ``block_size - 1`` lags, not over rows.
    """
    n_blocks = len(prob) // block_size
    if n_blocks == 0:
        raise InputError(
            "{block_size} must be at most the number of rows ({n_rows}); got {given}.",
            argument="block_size",
            n_rows=len(prob),
            given=block_size,
        )
    if block_size == 2:  # the linear estimator: views of the even and odd rows, no copy
        used = 2 * n_blocks
        total = _pair_sum(
            prob[0:used:2], prob[1:used:2], labels[0:used:2], labels[1:used:2], bandwidth
        )
        return total / n_blocks
    n_classes = prob.shape[1]
    blocks = prob[: n_blocks * block_size].reshape(n_blocks, block_size, n_classes)
    block_labels = labels[: n_blocks * block_size].reshape(n_blocks, block_size)
    total = 0.0
    for lag in range(1, block_size):
        total += _pair_sum(
            blocks[:, :-lag].reshape(-1, n_classes),
            blocks[:, lag:].reshape(-1, n_classes),
            block_labels[:, :-lag].reshape(-1),
            block_labels[:, lag:].reshape(-1),
            bandwidth,
        )
    return total / (n_blocks * block_size * (block_size - 1) / 2)


@_registry.metric("SKCE")
@iv.accepts_classes
def SKCE(
    prob: ArrayLike,
    labels: ArrayLike,
    *,
    estimator: str = "unbiased",
    bandwidth: float | None = None,
    block_size: int = 2,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Squared kernel calibration error (Widmann, Lindsten & Zachariah 2019).

    With the matrix kernel :math:`k(p, q) = \exp(-\lVert p - q \rVert_2 / h)\, I_K` and
    :math:`e_y` the one-hot vector of label y, each pair of rows has

    .. math:: h_{ij} = (e_{y_i} - p_i)^\top (e_{y_j} - p_j)\,
              \exp(-\lVert p_i - p_j \rVert_2 / h),

    and the estimators of :math:`\mathrm{SKCE} = \mathrm{KCE}^2` are

    * ``'unbiased'``: :math:`\frac{1}{n(n-1)} \sum_{i \ne j} h_{ij}` (can be negative);
    * ``'biased'``: :math:`\frac{1}{n^2} \sum_{i,j} h_{ij}` (at least 0);
    * ``'linear'``: :math:`\frac{1}{m} \sum_{a=1}^{m} h_{2a-1,\,2a}`, m = floor(n / 2),
      consecutive rows paired in the order given (O(n));
    * ``'block'``: the mean, over the floor(n / B) blocks of B = ``block_size`` consecutive
      rows, of the unbiased estimator within each block (O(nB)); B = 2 is ``'linear'``.

    Rows after the last full pair or block are not used by ``'linear'`` and ``'block'``,
    whose value depends on the row order (shuffle first if the order carries meaning).
    The quadratic estimators work on tiles of row pairs of about 2**18 values, so memory
    stays bounded whatever n; their time is O(n^2 K).

    ``bandwidth=None`` is the median heuristic: the median of
    :math:`\lVert p_i - p_j \rVert_2` over all pairs i < j of the rows when there are at
    most M of them, else over the pairs of M rows drawn without replacement with a fixed
    seed (``np.random.default_rng(0)``), where M = 1024 for K <= 16 and
    ``max(128, floor(sqrt(2**24 / K)))`` beyond (409 rows at K = 100, 129 at K = 1000),
    so that it costs at most about 2**24 operations.  Deterministic, but above M rows it
    depends on the row order, like the drawn rows: pass ``bandwidth`` for a value that
    does not.  Widmann et al. use the median heuristic over all pairs.

    Not to be confused with the *kernel calibration error* KCE itself (the square root of
    the population SKCE), nor with MMCE (:func:`MMCE`), a scalar kernel on the top label
    only.

    Parameters
    ----------
    prob : array-like, shape (N, K) or (N,)
        Predicted probabilities (rows sum to 1), or P(y = 1) of a binary task (two columns
        ``[1 - p, p]``); logits with ``logits=True``.  Not ``Scores``: SKCE compares whole
        probability vectors (pass a binary ``np.column_stack([1 - s, s])``).
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``.
    estimator : {'unbiased', 'biased', 'linear', 'block'}, default 'unbiased'
    bandwidth : float or None, default None
        Kernel width h > 0, or ``None`` for the median heuristic.
    block_size : int, default 2
        Rows per block of the ``'block'`` estimator (2 to N).
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.  Never guessed.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights, with ``estimator='biased'`` and an explicit ``bandwidth``
        only: :math:`\frac{1}{W^2} \sum_{i,j} w_i w_j h_{ij}`, so integer weights equal
        duplicated rows.  (The other estimators pair rows or exclude i = j in ways with no
        weighted form that equals duplication; the median heuristic would change with it.)
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first (into a new array).
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names, looked up
        among them (the rule of :func:`~calibration_toolbox.ECE`).

    Returns
    -------
    float
        The estimate of the squared kernel calibration error.

    References
    ----------
    .. [1] D. Widmann, F. Lindsten and D. Zachariah, "Calibration tests in multi-class
       classification: A unifying framework", NeurIPS, 2019.

    Examples
    --------
    >>> from calibration_toolbox import SKCE
    >>> prob = [[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]]
    >>> round(SKCE(prob, [0, 1, 1, 0], bandwidth=1.0), 6)
    -0.128526
    >>> round(SKCE(prob, [0, 1, 1, 0], bandwidth=1.0, estimator="biased"), 6)
    0.041105
    """
    estimator = iv.choice(*_ESTIMATORS)(estimator, "estimator")
    bandwidth = _check_bandwidth(bandwidth, allow_none=True)
    block_size = iv.integer_at_least(2)(block_size, "block_size")
    if estimator != "biased":
        _refuse_weights(sample_weight, f"with estimator={estimator!r}; use 'biased'")
    elif bandwidth is None:
        _refuse_weights(sample_weight, "with the median heuristic; pass bandwidth=")
    if isinstance(prob, Scores):
        raise ValueError(
            "SKCE compares whole probability vectors and does not take Scores; for a "
            "binary classifier's P(y = 1) pass np.column_stack([1 - p, p]) (or p itself)."
        )
    checked = iv.check_predictions(prob, labels, logits=logits, renormalize=renormalize)
    prob, labels = checked.prob, checked.labels
    weights = iv.check_sample_weight(sample_weight, len(prob), scale_free=True)
    if bandwidth is None:
        bandwidth = _median_heuristic(prob)
    if estimator in ("linear", "block"):
        size = 2 if estimator == "linear" else block_size
        if estimator == "linear" and len(prob) < 2:
            raise InputError(
                "{prob} needs at least 2 rows for SKCE; got {value}.",
                argument="prob",
                value=len(prob),
            )
        return float(_block_estimate(prob, labels, bandwidth, size))
    residuals = _residuals(prob, labels)
    n = len(prob)
    if estimator == "biased":
        total = _quadratic_sum(prob, residuals, weights, bandwidth, diagonal=True)
        normaliser = n * float(n) if weights is None else float(weights.sum()) ** 2
        return float(total / normaliser)
    if n < 2:
        raise InputError("{prob} needs at least 2 rows for SKCE; got {n}.", argument="prob", n=n)
    return float(
        _quadratic_sum(prob, residuals, None, bandwidth, diagonal=False) / (n * (n - 1.0))
    )
