"""Bin-free cumulative calibration errors (KS, Kuiper) and the monotone bin sweep.

KS is Gupta et al. 2021's, Kuiper Arrieta-Ibarra et al. 2022's, the sweep Roelofs et al.
2022's.

The cumulative measures sort one score set by score and walk through it, adding
``(target - score) / n`` at each row: a calibrated model's walk stays near 0.  The walk is
read only at the last row of each run of tied scores, so the order of tied rows (which the
sort does not fix) cannot change the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry
from calibration_toolbox import _validation as iv
from calibration_toolbox._docstrings import with_fragments
from calibration_toolbox._errors import InputError
from calibration_toolbox._rows import SORT_CHUNK_ELEMENTS, row_blocks
from calibration_toolbox.binning import (
    adaptive_edges,
    sort_rows_with_flags,
    sort_rows_with_positions,
)
from calibration_toolbox.metrics._table import reduce_tables
from calibration_toolbox.metrics.gce import GCE
from calibration_toolbox.scores import PredictionsLike, Scores

__all__ = ["KSCE", "ECESweep", "ECESweepResult", "KuiperCE"]

_VARIANTS = ("top-r", "within-top-r", "class-wise")
#: ECESweep's rules: Roelofs et al.'s released code, and this library's earlier rule.
_SWEEP_RULES = ("roelofs", "largest")
#: Largest bin count ECESweep tries by default with rule='largest' (see its docstring).
_DEFAULT_MAX_BINS = 1000
#: Bins examined by the first step of the rule='roelofs' sweep (one vectorised pass over
#: several bin counts: 2**9 bins are the counts 2 .. 31) and at most by any step (each step
#: doubles it): 2**18 bins keep a step's temporaries near 20 MB.  The work past the chosen
#: count is then at most about that of the counts up to it.
_FIRST_STEP_BINS = 1 << 9
_SWEEP_STEP_BINS = 1 << 18
#: Candidates each side of j / b searched for the smallest v with fl(v * b) >= j (it lies
#: within one unit in the last place of j / b; three are searched).
_ULPS = 3


# -- validated score sets -------------------------------------------------------------------
def _checked_sets(
    prob, labels, *, variant, r, logits, sample_weight, renormalize
) -> tuple[iv.CheckedInput, NDArray | None, str, int]:
    """Validated predictions, weights, variant and r of a cumulative measure."""
    variant = iv.choice(*_VARIANTS)(variant, "variant")
    r = iv.integer_at_least(1)(r, "r")
    if variant == "class-wise" and r != 1:
        raise InputError(
            "{r} applies to variant='top-r' and 'within-top-r'; got r={value} with "
            "variant='class-wise'.",
            argument="r",
            value=r,
        )
    top_label = variant != "class-wise" and r == 1
    if isinstance(prob, Scores) and not top_label:
        raise ValueError(
            "Scores hold one score per row, the top-label form (variant='top-r', r=1, the "
            f"default); variant={variant!r} with r={r} needs a (N, K) probability matrix."
        )
    checked = iv.check_predictions(
        prob, labels, logits=logits, renormalize=renormalize, top_label=top_label
    )
    if r > checked.n_classes:
        raise InputError(
            "{r} must be an integer in [1, {n_classes}] for {n_classes} classes; got {value}.",
            argument="r",
            n_classes=checked.n_classes,
            value=r,
        )
    weights = iv.check_sample_weight(sample_weight, checked.n_samples, scale_free=True)
    return checked, weights, variant, r


def _ranked_pairs(checked: iv.Predictions, r: int, within: bool) -> tuple[NDArray, NDArray]:
    """(score, target) of each row for the r-th ranked class, or for the r largest.

    Classes are ranked by probability, ties by the lower class index (as the first-index
    argmax).  The label's rank is the number of entries above it plus the tied entries of
    lower index, so no argsort of the rows is needed.
    """
    prob, labels, summary = checked
    n_samples, n_classes = prob.shape
    scores = np.empty(n_samples, dtype=np.float64 if within else prob.dtype)
    targets = np.empty(n_samples, dtype=bool)
    columns = np.arange(n_classes)
    for rows in row_blocks(n_samples, n_classes):
        block = prob[rows]
        label_scores = summary.label_scores[rows, None]
        rank = np.count_nonzero(block > label_scores, axis=1)
        rank += np.count_nonzero((block == label_scores) & (columns < labels[rows, None]), axis=1)
        largest = np.partition(block, n_classes - r, axis=1)[:, n_classes - r :]
        if within:
            targets[rows] = rank < r
            # A sum of probabilities is at most 1 but for rounding.
            np.minimum(largest.sum(axis=1, dtype=np.float64), 1.0, out=scores[rows])
        else:
            targets[rows] = rank == r - 1
            scores[rows] = largest[:, 0]
    return scores, targets


# -- the walk ---------------------------------------------------------------------------------
def _walk_extremes(
    sorted_scores: NDArray, steps: NDArray, total: float
) -> tuple[NDArray, NDArray]:
    """Largest and smallest value of each row's walk ``cumsum(steps) / total`` (0 included).

    Rows of ``sorted_scores`` are sorted; the walk is read at the last entry of each run of
    equal scores only (elsewhere it is replaced by the starting 0).  ``steps`` is consumed.
    """
    walk = np.cumsum(steps, axis=1, out=steps)
    walk /= total
    walk[:, :-1][sorted_scores[:, 1:] == sorted_scores[:, :-1]] = 0.0
    return np.maximum(walk.max(axis=1), 0.0), np.minimum(walk.min(axis=1), 0.0)


def _sorted_walk_extremes(
    scores: NDArray, targets: NDArray, weights: NDArray | None
) -> tuple[NDArray, NDArray]:
    """Walk extremes of the score sets in the rows of ``scores`` (G, n), targets alike."""
    if weights is None:
        # The targets ride in the lowest bit of the scores' bit patterns through one plain
        # sort: on 1,000,000 float32 scores this takes 0.9x np.sort of the scores, where
        # an argsort takes 2.1x and a stable argsort 3.4x (then two gathers).
        buffer = np.array(scores, order="C")  # the sort runs in place
        flags = sort_rows_with_flags(
            buffer.reshape(-1), buffer.shape, np.flatnonzero(targets.reshape(-1))
        )
        steps = np.subtract(flags.reshape(buffer.shape), buffer, dtype=np.float64)
        return _walk_extremes(buffer, steps, scores.shape[1])
    packed = sort_rows_with_positions(scores, targets)
    if packed is None:  # float64 scores
        order = np.argsort(scores, axis=1)
        sorted_scores = np.take_along_axis(scores, order, axis=1)
        sorted_targets = np.take_along_axis(targets, order, axis=1)
    else:
        # One sort of packed keys and one gather of the weights: on 1,000,000 float32
        # scores the weighted KS test took 2.4x np.sort of the scores with the argsort.
        sorted_scores, sorted_targets, order = packed
    steps = np.subtract(sorted_targets, sorted_scores, dtype=np.float64)
    steps *= weights[order]
    return _walk_extremes(sorted_scores, steps, float(weights.sum()))


def walk_extremes(
    scores: NDArray, targets: NDArray, weights: NDArray | None
) -> tuple[float, float]:
    r"""Largest and smallest value of one validated score set's walk (0 included).

    The walk of :func:`KSCE` and :func:`KuiperCE`, :math:`h_j = \sum_{i \le j} w_{(i)}
    (y_{(i)} - s_{(i)}) / \sum_i w_i` over the scores sorted ascending, read at the ends of
    the runs of tied scores; for the tests with p-values of :mod:`calibration_toolbox.stats`,
    which receive the pairs validated.  ``scores`` and ``targets`` are not modified.
    """
    highs, lows = _sorted_walk_extremes(scores[None, :], targets[None, :], weights)
    return float(highs[0]), float(lows[0])


def _class_walk_extremes(
    checked: iv.Predictions, weights: NDArray | None
) -> tuple[NDArray, NDArray]:
    """Walk extremes of each class's column against ``labels == k``, a few classes at once."""
    prob, labels, _ = checked
    n_samples, n_classes = prob.shape
    highs, lows = np.empty(n_classes), np.empty(n_classes)
    step = max(1, SORT_CHUNK_ELEMENTS // n_samples)  # bounded memory at many classes
    for start in range(0, n_classes, step):
        classes = np.arange(start, min(start + step, n_classes))
        columns = np.ascontiguousarray(prob[:, classes].T)
        targets = labels == classes[:, None]
        highs[classes], lows[classes] = _sorted_walk_extremes(columns, targets, weights)
    return highs, lows


def _walks(
    prob, labels, variant, r, logits, sample_weight, renormalize
) -> tuple[NDArray, NDArray]:
    """Validate a KSCE/KuiperCE call; the walk extremes of each of its score sets."""
    checked, weights, variant, r = _checked_sets(
        prob,
        labels,
        variant=variant,
        r=r,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
    )
    if variant == "class-wise":
        return _class_walk_extremes(checked, weights)
    if r == 1:
        scores, targets = checked.top_label()
    else:
        scores, targets = _ranked_pairs(checked, r, within=variant == "within-top-r")
    return _sorted_walk_extremes(scores[None, :], targets[None, :], weights)


_SHARED_PARAMETERS = """\
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``.  For the
        top-label form also ``Scores(s)``: one score per row against 0/1 ``labels``.  A
        plain 1-D array is refused as ambiguous by the top-label form (pass ``Scores(p)``,
        or ``np.column_stack([1 - p, p])`` for a binary classifier) and read as P(y = 1) of
        a binary task by the other variants.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    variant : {'top-r', 'within-top-r', 'class-wise'}, default 'top-r'
        The score set (see above); with the default ``r=1`` the top label.
    r : int, default 1
        Rank used by 'top-r' (the r-th largest probability) and 'within-top-r' (the sum of
        the r largest), in ``[1, K]``; must be 1 with 'class-wise'.
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.  Never guessed.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights: each row's step is ``w_i (y_i - s_i) / sum(w)``, so integer
        weights give the value of duplicated rows.
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names, looked up
        among them (the rule of :func:`~calibration_toolbox.ECE`).

    Returns
    -------
    float
        The calibration error, in [0, 1].
"""

_SHARED_SETS = r"""
    Score sets (``variant`` and ``r``; ranks break ties by the lower class index):

    * ``'top-r'`` with ``r=1`` (the default): the top label, :math:`s_i = \max_k p_{ik}`
      and :math:`y_i = 1[\arg\max_k p_{ik} = \text{label}_i]`; with ``Scores(s)`` the
      scores and 0/1 labels as given;
    * ``'top-r'``: :math:`s_i` the r-th largest probability of row i, :math:`y_i` whether
      the label is the r-th ranked class (Gupta et al.'s "top-r");
    * ``'within-top-r'``: :math:`s_i` the sum of the r largest probabilities (clipped at 1
      for rounding), :math:`y_i` whether the label is among those r classes;
    * ``'class-wise'``: one walk per class k with :math:`s_i = p_{ik}` and
      :math:`y_i = 1[\text{label}_i = k]`; the per-class errors are **averaged** over the
      K classes (Gupta et al. define the per-class statistic and no reduction; the mean is
      this library's choice, as for the class-wise binned errors such as ``SCE``).
"""


_shared_docstring = with_fragments({"{parameters}": _SHARED_PARAMETERS, "{sets}": _SHARED_SETS})


@_registry.metric("KSCE")
@iv.accepts_classes
@_shared_docstring
def KSCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    variant: str = "top-r",
    r: int = 1,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Kolmogorov-Smirnov calibration error (Gupta et al. 2021), bin-free.

    Sort the n (score, target) pairs of a score set by score, :math:`s_{(1)} \le \dots \le
    s_{(n)}`, and walk through them:

    .. math:: h_j = \frac1n \sum_{i \le j} \bigl(y_{(i)} - s_{(i)}\bigr), \qquad
              \mathrm{KS} = \max_{j \in E} \lvert h_j \rvert,

    the largest gap between the cumulative sums of targets and of scores, where :math:`E`
    holds the last position of each run of tied scores: the walk is read only where the
    score changes, so the order of tied rows cannot change the value.  With weights each
    step is :math:`w_{(i)} (y_{(i)} - s_{(i)}) / \sum_i w_i`.  Computed by one sort of the
    scores, :math:`O(n \log n)`.

    {sets}

    Not to be confused with the two-sample Kolmogorov-Smirnov statistic between the score
    distributions of two classes (a discrimination measure; ``scipy.stats.ks_2samp``), nor
    with KS-based tests of uniformity of PIT values.  Unlike the binned errors, KS has no
    bins to choose; it is the largest deviation of the cumulative reliability curve, not an
    average gap.

    Parameters
    ----------
    {parameters}

    See Also
    --------
    KuiperCE : the range (max minus min) of the same walk.

    References
    ----------
    .. [1] K. Gupta, A. Rahimi, T. Ajanthan, T. Mensink, C. Sminchisescu and R. Hartley,
       "Calibration of Neural Networks using Splines", ICLR, 2021.

    Examples
    --------
    >>> from calibration_toolbox import KSCE, Scores
    >>> round(KSCE(Scores([0.2, 0.4, 0.6, 0.8]), [0, 1, 0, 1]), 6)
    0.1
    >>> prob = [[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]]
    >>> round(KSCE(prob, [0, 1, 1, 0]), 6)
    0.275
    >>> round(KSCE(prob, [0, 1, 1, 0], variant="class-wise"), 6)
    0.2
    """
    highs, lows = _walks(prob, labels, variant, r, logits, sample_weight, renormalize)
    return float(np.maximum(highs, -lows).mean())


@_registry.metric("KuiperCE")
@iv.accepts_classes
@_shared_docstring
def KuiperCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    variant: str = "top-r",
    r: int = 1,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Kuiper calibration error (Arrieta-Ibarra et al. 2022): the range of the KS walk.

    With the walk :math:`h_j` of :func:`KSCE` read at the ends :math:`E` of the runs of
    tied scores, and the starting point :math:`h_0 = 0`:

    .. math:: \mathrm{Kuiper} = \max_{j \in E \cup \{0\}} h_j
              - \min_{j \in E \cup \{0\}} h_j .

    It is at least KS and at most twice KS; unlike KS it sees a model that is overconfident
    on low scores and underconfident on high scores as strongly as one that errs one way.

    {sets}

    Not to be confused with Kuiper's two-sample test between two score distributions
    (a discrimination or drift statistic), nor with the Kuiper test of uniformity on the
    circle.

    Parameters
    ----------
    {parameters}

    See Also
    --------
    KSCE : the largest absolute value of the same walk.

    References
    ----------
    .. [1] I. Arrieta-Ibarra, P. Gujral, J. Tannen, M. Tygert and C. Xu, "Metrics of
       Calibration for Probabilistic Predictions", Journal of Machine Learning Research,
       23(351), 2022.

    Examples
    --------
    >>> from calibration_toolbox import KuiperCE, Scores
    >>> round(KuiperCE(Scores([0.2, 0.4, 0.6, 0.8]), [0, 1, 0, 1]), 6)
    0.15
    """
    highs, lows = _walks(prob, labels, variant, r, logits, sample_weight, renormalize)
    return float((highs - lows).mean())


# -- the monotone sweep -----------------------------------------------------------------------
@dataclass(frozen=True)
class ECESweepResult:
    """Result of :func:`ECESweep`: the error and the bin count it was computed with.

    ``float(result)`` is ``result.value``, so the result can stand where a number is
    expected (formatting, comparisons after ``float``).

    Attributes
    ----------
    value : float
        The binned calibration error with ``n_bins`` bins.
    n_bins : int
        The bin count chosen, :math:`b^*` (see :func:`ECESweep` for each rule).
    """

    value: float
    n_bins: int

    def __float__(self) -> float:
        return self.value


def _stable_order(scores: NDArray) -> NDArray:
    """``np.argsort(scores, kind="stable")`` of scores in [0, 1].

    float32 scores and their row numbers are packed in one uint64 key (the bit patterns of
    non-negative floats sort as integers) and sorted by NumPy's plain sort: on 50,000 real
    float32 confidences 1.7 ms against 3.7 ms for the stable argsort (np.sort: 1.0 ms).
    """
    if scores.dtype != np.float32 or len(scores) >= 1 << 32:
        return np.argsort(scores, kind="stable")
    keys = (scores + np.float32(0.0)).view(np.uint32).astype(np.uint64)  # -0.0 becomes 0.0
    keys <<= np.uint64(32)
    keys |= np.arange(len(scores), dtype=np.uint64)
    keys.sort()
    return (keys & np.uint64(0xFFFFFFFF)).astype(np.intp)


class _SortedPairs:
    """The positive-weight (score, target) pairs sorted by score, with cumulative sums.

    Tied scores keep their input order (a stable sort): the rank split of rule='roelofs'
    may cut a run of ties, and then this order decides which rows fall on which side.
    """

    def __init__(self, scores: NDArray, targets: NDArray, weights: NDArray | None):
        if weights is not None:
            positive = weights > 0  # the engine's equal-mass bins ignore them too
            scores, targets, weights = scores[positive], targets[positive], weights[positive]
        order = _stable_order(scores)
        # float64 once, so that every search below compares as the engine does (float64
        # edges) without a per-search cast of the scores.
        self.scores = scores[order].astype(np.float64)
        self.targets = targets[order]
        # the weighted sums (unit weights: the counts 0, 1, ..., n and the plain values)
        self.inclusive_weight = None
        self.weighted_scores, self.weighted_targets = self.scores, self.targets.astype(float)
        self.weight = np.arange(len(order) + 1, dtype=np.float64)
        if weights is not None:
            row_weights = weights[order]
            self.inclusive_weight = np.cumsum(row_weights)
            self.weight[1:] = self.inclusive_weight
            self.weighted_scores = row_weights * self.scores
            self.weighted_targets *= row_weights
        self.target = np.zeros(len(order) + 1)
        np.cumsum(self.weighted_targets, out=self.target[1:])

    def first_rows(self, n_bins: int, adaptive_bins: bool) -> NDArray:
        """Sorted position of the first row of bins 1 .. n_bins - 1 (the engine's rule)."""
        n = len(self.scores)
        if adaptive_bins:
            interior, _ = adaptive_edges(
                self.scores, np.array([0]), np.array([n]), n_bins, self.inclusive_weight
            )
            # bin = #{j : e_j <= s}: bin j starts at the first score >= e_j
            return np.searchsorted(self.scores, interior[0], side="left")
        # bins (lo, hi] with 0 in the first: bin j starts at the first score > e_j
        return np.searchsorted(self.scores, np.linspace(0.0, 1.0, n_bins + 1)[1:-1], "right")

    def is_monotone(self, n_bins: int, adaptive_bins: bool) -> bool:
        """Whether the accuracies of the non-empty bins are non-decreasing in bin order."""
        bounds = np.concatenate([[0], self.first_rows(n_bins, adaptive_bins), [len(self.scores)]])
        counts = np.diff(self.weight[bounds])
        nonempty = counts > 0
        accuracy = np.diff(self.target[bounds])[nonempty] / counts[nonempty]
        return bool((accuracy[1:] >= accuracy[:-1]).all())


def _largest_monotone_bin_count(pairs: _SortedPairs, adaptive_bins: bool, max_bins: int) -> int:
    """The largest b in 1 .. max_bins whose bins are monotone (1 always is).

    Every b is tried, not only up to the first failure: monotonicity is not monotone in b.
    Each try costs the edges and one search of them (O(b log n)); 1,000 tries on 1,000,000
    scores take about 0.1 s (see benchmarks/bench_cumulative.py).
    """
    monotone = [b for b in range(2, max_bins + 1) if pairs.is_monotone(b, adaptive_bins)]
    return max(monotone, default=1)


# -- Roelofs et al.'s rule: rank-split bins, sweep up to the first failure ------------------
def _smallest_reaching(n_bins: NDArray, index: NDArray) -> NDArray:
    """The smallest float64 ``v`` with ``fl(v * b) >= j``, elementwise (``b``, ``j >= 1``).

    A row whose value (rank fraction or score) is ``v`` falls in bin ``floor(fl(v * b))``,
    so bin ``j`` starts at the first value ``>= v``.  ``v`` lies within an ulp of ``j / b``:
    the neighbours of ``j / b`` are searched (a loop over ``2 * _ULPS + 1`` candidates, not
    over bins).
    """
    guess = index / n_bins
    below, above = [guess], [guess]
    for _ in range(_ULPS):
        below.append(np.nextafter(below[-1], -np.inf))
        above.append(np.nextafter(above[-1], np.inf))
    candidates = np.stack(below[:0:-1] + above)  # increasing along axis 0
    reached = candidates * n_bins >= index  # monotone in the candidate: first True is v
    return candidates[reached.argmax(axis=0), np.arange(len(guess))]


def _rank_bins(
    pairs: _SortedPairs, values: NDArray, counts: NDArray
) -> tuple[NDArray, NDArray, NDArray]:
    """Sorted bounds ``[lower, upper)`` of every bin of every bin count, and its count's index.

    Bin ``j`` of count ``b`` holds the rows whose ``floor(fl(value * b))`` is ``j`` (the last
    bin also those above): ``value`` is the rank fraction (equal mass) or the score (equal
    width), non-decreasing in the sorted order.
    """
    owner = np.repeat(np.arange(len(counts)), counts)
    first = np.cumsum(counts) - counts
    index = np.arange(len(owner)) - first[owner]
    lower = np.zeros(len(owner), dtype=np.intp)
    inner = index > 0
    lower[inner] = np.searchsorted(
        values, _smallest_reaching(counts[owner[inner]], index[inner]), side="left"
    )
    upper = np.roll(lower, -1)
    upper[first + counts - 1] = len(pairs.scores)
    return lower, upper, owner


def _non_monotone(pairs: _SortedPairs, values: NDArray, counts: NDArray) -> NDArray:
    """For each bin count, whether a non-empty bin's accuracy is below the previous one's."""
    lower, upper, owner = _rank_bins(pairs, values, counts)
    weight = pairs.weight[upper] - pairs.weight[lower]
    nonempty = weight > 0
    accuracy = (pairs.target[upper] - pairs.target[lower])[nonempty] / weight[nonempty]
    owner = owner[nonempty]
    drops = (accuracy[1:] < accuracy[:-1]) & (owner[1:] == owner[:-1])
    failed = np.zeros(len(counts), dtype=bool)
    failed[owner[1:][drops]] = True
    return failed


def _first_failure_bin_count(pairs: _SortedPairs, values: NDArray, max_bins: int) -> int:
    """The last b of 1, 2, ..., max_bins before the first whose bin accuracies decrease.

    The counts are examined in steps (several counts per vectorised pass, each step twice as
    many bins as the one before, up to ``_SWEEP_STEP_BINS``); the cost is that of all the
    bins of the counts examined, O(b* ** 2) for b* bins chosen.  Targets that never decrease
    in the sorted order make every count monotone: then ``max_bins`` at once.
    """
    if (pairs.targets[1:] >= pairs.targets[:-1]).all():
        return max_bins
    start, step_bins = 2, _FIRST_STEP_BINS
    while start <= max_bins:
        # width counts from start hold about width * (start + width / 2) bins
        width = max(1, int(np.sqrt(start * start + 2 * step_bins) - start))
        counts = np.arange(start, min(start + width, max_bins + 1))
        failed = _non_monotone(pairs, values, counts)
        if failed.any():
            return int(counts[failed.argmax()]) - 1
        start, step_bins = int(counts[-1]) + 1, min(2 * step_bins, _SWEEP_STEP_BINS)
    return max_bins


def _rank_bin_error(pairs: _SortedPairs, values: NDArray, n_bins: int, p: float) -> float:
    """The binned error of the top label with ``n_bins`` bins of the rank (or width) rule."""
    lower, upper, _ = _rank_bins(pairs, values, np.array([n_bins]))
    weight = pairs.weight[upper] - pairs.weight[lower]
    starts = lower[weight > 0]  # the non-empty bins tile the sorted rows
    counts = weight[weight > 0]
    score_sums = np.add.reduceat(pairs.weighted_scores, starts)
    target_sums = np.add.reduceat(pairs.weighted_targets, starts)
    return float(reduce_tables(counts[None], score_sums[None], target_sums[None], 1, False, p))


def _roelofs_sweep(
    pairs: _SortedPairs, adaptive_bins: bool, p: float, max_bins: int | None
) -> ECESweepResult:
    """Roelofs et al.'s ECE_sweep: counts 2, 3, ... up to n - 1, until the first failure."""
    n = len(pairs.scores)
    limit = max(1, n - 1 if max_bins is None else min(max_bins, n - 1))
    # the rank fraction of a row is the weight of the rows before it over the total: i / n
    # (float64 division) for unit weights, as the authors' np.arange(n) / n
    values = pairs.weight[:-1] / pairs.weight[-1] if adaptive_bins else pairs.scores
    n_bins = _first_failure_bin_count(pairs, values, limit)
    return ECESweepResult(_rank_bin_error(pairs, values, n_bins, p), n_bins)


@_registry.metric("ECESweep")
@iv.accepts_classes
def ECESweep(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    adaptive_bins: bool = True,
    norm: Union[int, float, str] = 2,
    max_bins: int | None = None,
    rule: str = "roelofs",
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> ECESweepResult:
    r"""Monotone-sweep ECE of the top label (Roelofs et al. 2022).

    The number of bins is chosen from the data, as large as possible while the per-bin
    accuracies :math:`\bar y_1, \dots, \bar y_b` stay non-decreasing in the bin order, and
    the error is the binned error with that many bins:

    .. math:: \mathrm{ECE}_{\mathrm{sweep}} = \Bigl(\sum_{k=1}^{b^*}
              \frac{n_k}{N} \lvert \bar y_k - \bar s_k \rvert^p\Bigr)^{1/p}.

    ``rule='roelofs'`` (the default) is the rule of the authors' released code (``caltrain``,
    ``CalibrationMetric(ce_type='em_ece_sweep')``, which made the paper's figures, with
    ``norm=2``), reproduced exactly:

    * bins: the N scores sorted, row :math:`i = 0, \dots, N-1` of the sorted order goes to
      bin :math:`\min(b - 1, \lfloor (i / N)\, b \rfloor)` (in float64, as the authors
      compute it): equal mass by rank, so a run of tied scores can be split between two
      bins; tied rows keep their input order (the authors' ``np.argsort`` leaves that order
      to NumPy's unstable sort).  With ``adaptive_bins=False`` (``'ew_ece_sweep'``) score
      :math:`s` goes to bin :math:`\min(b - 1, \lfloor s\, b \rfloor)`: bins
      :math:`[j/b, (j+1)/b)` with 1 in the last;
    * sweep: :math:`b = 2, 3, \dots` up to :math:`N - 1`, **stopping at the first** count
      whose non-empty bins have a strictly smaller accuracy after a larger one (equal
      accuracies count as monotone); :math:`b^*` is the count before it (1 if 2 fails,
      :math:`N - 1` if none fails, 1 for :math:`N \le 2`):

      .. math:: b^* = \max\{b \le b_{\max} : \text{every } b' \le b
                \text{ has } \bar y^{(b')}_1 \le \dots \le \bar y^{(b')}_{b'}\};

    * error: the plain binned :math:`\ell_p` error at :math:`b^*`, no debiasing, empty bins
      (equal-width only) skipped.

    ``rule='largest'`` is this library's earlier rule (the default before; its results are
    unchanged with ``rule='largest', norm=1``): the largest :math:`b` in
    :math:`1 .. b_{\max}` whose bins are monotone, trying every count since a count may be
    monotone after a smaller one failed, on the engine's bins of :func:`GCE` (equal mass by
    Nixon et al.'s rule with tied scores sharing a bin, or equal width ``(lo, hi]``), with
    :math:`b_{\max} = \min(N, 1000)` by default; the value is ``GCE(prob, labels,
    bins=n_bins, class_conditional=False, adaptive_bins=adaptive_bins, top_k_classes=1,
    norm=norm)``.  The two rules choose different counts on many data sets.

    Choices of this library: sample weights (the authors have none) make the rank fraction
    :math:`i / N` the weight of the rows before row :math:`i` over the total (whole rows
    per bin, so integer weights are not exactly duplicated rows under ``'roelofs'``, where a
    duplicated row's copies can fall in two bins); rows of zero weight are dropped;
    ``norm='inf'`` is the largest gap over the non-empty bins; accuracies are compared
    exactly for unit and integer weights, within rounding for other weights.  Scores are
    compared in float64 (the authors' equal-width rule multiplies in the scores' dtype, so
    on float32 input a score within float32 rounding of an edge :math:`j/b` can fall on
    the other side).  The sweep examines several counts per vectorised step; its cost is
    :math:`O(N \log N + b^{*2} \log N)`: milliseconds at the few tens of bins of real
    models, but 5.5 s for 100,000 nearly separable scores that stay monotone up to 5,263
    bins (``max_bins`` bounds it; targets that never decrease in score order make every
    count monotone and are recognised at once).

    Not to be confused with a plain ECE at a fixed bin count (``ECE``, ``GCE``), nor with
    ECE curves over many bin counts: the bin count here is a function of the data.

    Parameters
    ----------
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``; or
        ``Scores(s)``: one score per row against 0/1 ``labels``.  A plain 1-D array is
        refused as ambiguous, as by :func:`ECE`.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    adaptive_bins : bool, default True
        Equal-mass bins (``'em_ece_sweep'``); ``False`` for equal-width bins
        (``'ew_ece_sweep'``).
    norm : {1, 2, 'inf'}, default 2
        The :math:`\ell_p` norm of the error at :math:`b^*` (as in :func:`GCE`); 2 as in
        the paper's figures and the authors' code (the default was 1 before).
    max_bins : int, optional
        Largest bin count tried, :math:`b_{\max}`; default :math:`N - 1` with
        ``'roelofs'`` (the authors' range; a given value is clipped to it) and
        :math:`\min(N, 1000)` with ``'largest'`` (clipped to N).
    rule : {'roelofs', 'largest'}, default 'roelofs'
        How :math:`b^*` is chosen (see above).
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights; every count is a weighted count.
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names, looked up
        among them (the rule of :func:`~calibration_toolbox.ECE`).

    Returns
    -------
    ECESweepResult
        ``value`` (a float in [0, 1]) and ``n_bins`` (:math:`b^*`).

    References
    ----------
    .. [1] R. Roelofs, N. Cain, J. Shlens and M. C. Mozer, "Mitigating Bias in Calibration
       Error Estimation", AISTATS, 2022.  Code: github.com/google-research/google-research,
       folder ``caltrain``.

    Examples
    --------
    >>> from calibration_toolbox import ECESweep, Scores
    >>> scores, targets = Scores([0.1, 0.3, 0.5, 0.7, 0.9, 0.95]), [0, 0, 1, 0, 1, 1]
    >>> result = ECESweep(scores, targets)
    >>> result.n_bins, round(result.value, 6)
    (3, 0.136168)
    >>> round(float(result), 6)
    0.136168

    Here 3 bins have accuracies 0, 0.5, 1 and 4 bins 0, 1, 0.5, 1: the sweep stops.  The
    earlier rule goes on, and finds 5 bins monotone (0, 0, 0.5, 1, 1):

    >>> result = ECESweep(scores, targets, rule="largest", norm=1)
    >>> result.n_bins, round(result.value, 6)
    (5, 0.125)
    """
    adaptive_bins = iv.check_flag(adaptive_bins, "adaptive_bins")
    p = iv.check_norm(norm)
    max_bins = iv.optional_integer_at_least(1)(max_bins, "max_bins")
    rule = iv.choice(*_SWEEP_RULES)(rule, "rule")
    checked = iv.check_predictions(
        prob, labels, logits=logits, renormalize=renormalize, top_label=True
    )
    # the sweep's largest count is the total weight's: weights count as rows here
    weights = iv.check_sample_weight(sample_weight, checked.n_samples)
    pairs = _SortedPairs(*checked.top_label(), weights)
    if rule == "roelofs":
        return _roelofs_sweep(pairs, adaptive_bins, p, max_bins)
    limit = min(len(pairs.scores), _DEFAULT_MAX_BINS if max_bins is None else max_bins)
    n_bins = _largest_monotone_bin_count(pairs, adaptive_bins, limit)
    value = GCE(
        prob,
        labels,
        bins=n_bins,
        class_conditional=False,
        adaptive_bins=adaptive_bins,
        top_k_classes=1,
        norm=norm,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
    )
    return ECESweepResult(value, n_bins)
