r"""Venn-Abers predictors on saved scores: inductive (IVAP) and cross (CVAP) forms.

A Venn-Abers predictor (Vovk, Petej & Fedorova 2015) fits, for a test score ``s``, two
isotonic regressions of the label on the score: one on the calibration rows together with
``(s, 0)`` and one together with ``(s, 1)``.  Their values at ``s`` are ``p0 <= p1``, a
multiprobability prediction whose one member is calibrated in the sense of Venn predictors;
a single probability is obtained by a minimax merge of the pair.

The construction here reads both values for every possible test score from two tables built
once per calibration set (the paper's "greatest convex minorant" tables), in O(m log m) for
m calibration rows, and answers a test score with one ``np.searchsorted``.  How the tables
are built without a scan over the rows is derived in :func:`_upper_table`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, Text
from calibration_toolbox._rows import row_blocks
from calibration_toolbox._warnings import warn
from calibration_toolbox.recalibration._base import (
    N_CLASSES_FIELD,
    Checker,
    Field,
    Recalibrator,
    array_field,
    choice_field,
    integer_field,
    normalised_probs,
)
from calibration_toolbox.recalibration.nonparametric import (
    _n_columns,
    _pooled_ties,
    _weighted_rows,
)

__all__ = ["VennAbersCalibration"]

_MERGES = ("log", "brier")
_MULTICLASS = ("ovr", "ovo")
# Passes that step pending tangent points one vertex before the bisection takes over
# (at least 1).
_STEPS = 3
# Points whose tangents are found together, and rows predicted together: about ten
# temporaries of this many floats.
_BLOCK_ROWS = 1 << 14
# Rows predicted together at the least, however many binary problems: each block is one
# Python pass over the problems (4,950 pairs at K = 100, one-vs-one), so 3 rows per block
# (2**14 values) took 94 s for 500 rows where 256 take 2 s for 5,000.
_MIN_PREDICTED_ROWS = 256


# -- the tables --------------------------------------------------------------------------
def _upper_table(weights: NDArray, positives: NDArray, vertices: NDArray) -> NDArray:
    r"""``p1`` of a test score with ``k`` distinct calibration scores below it, ``k = 0..n``.

    ``weights[i]`` and ``positives[i]`` are the total and positive weight of the i-th
    distinct calibration score (ties pooled); ``vertices`` are the block starts (and the
    end) of their isotonic regression: the vertices of the minorant G below. With the
    cumulative sums ``C_i = (W_i, Y_i)`` (``C_0 = (0, 0)``), inserting the test row of
    weight 1 and label 1 after the k-th distinct score, the isotonic value at the test row
    is, by the min-max formula of isotonic regression, ``max_{a <= k} min_{b >= k} (Y_b -
    Y_a + 1) / (W_b - W_a + 1)``: the slope from ``Q_a = C_a - (1, 1)`` to ``C_b``. By the
    threshold form of isotonic regression (the value at a row is ``>= v`` if and only if the
    row lies in the suffix that maximises the sum of ``w (t - v)``), that value is ``>= v``
    if and only if some ``a <= k`` has ``Y_a - v W_a - min_i (Y_i - v W_i) <= 1 - v``, where
    the minimum is over *all* points, so over the vertices of the greatest convex minorant G
    of the whole cumulative sum diagram (one isotonic fit). Hence

    .. math:: p_1(k) = \max_{a \le k} \nu(a), \qquad
              \nu(a) = \min_{g \in G,\ x_g > W_a - 1} \frac{Y_g - Y_a + 1}{W_g - W_a + 1},

    the slope of the tangent from ``Q_a`` to G: a cumulative maximum of tangent slopes to
    one fixed convex chain.  Two cases need no code.  Where ``Q_a`` lies above G no line
    through it stays below G (``nu(a) = -inf``), but the slope computed there is below that
    of the vertex ``g`` of G just left of ``Q_a``, which is ``<= a``: it is below the slope
    ``theta`` of G's segment under ``Q_a``, while ``Q_g = C_g - (1, 1)`` lies below that
    segment's line (``theta <= 1``), so every slope from ``Q_g`` to G is ``>= theta``; the
    cumulative maximum is unchanged.  And ``nu(a) <= 1``: the slope to ``C_n`` is.  The
    tangents are found for all ``a`` at once by a bisection over the vertices of G (about
    ``log2 |G|`` vectorised passes); everything else is cumulative sums.  A test score
    equal to a calibration score has the same ``p1`` as one just below it (the same
    derivation with the test row pooled into the tied score).

    The work is done by :func:`_upper_table_of_sums` on the cumulative sums.
    """
    return _upper_table_of_sums(_cumulative(weights), _cumulative(positives), vertices)


def _cumulative(values: NDArray) -> NDArray:
    """``[0, v_0, v_0 + v_1, ...]``: the cumulative sums after a 0, ``n + 1`` floats."""
    sums = np.empty(len(values) + 1)
    sums[0] = 0.0
    np.cumsum(values, out=sums[1:])
    return sums


def _upper_table_of_sums(cx: NDArray, cy: NDArray, vertices: NDArray) -> NDArray:
    """:func:`_upper_table` from the cumulative sums ``C = (cx, cy)`` of the diagram.

    Memory: the result (``n + 1`` floats) and the vertices' two coordinates beside the
    sums; the tangents are found, their slopes computed and their cumulative maximum taken
    for a block of points at a time (each point's tangent is its own), so the other
    temporaries are those of one block.
    """
    vx, vy = cx[vertices], cy[vertices]
    slopes = np.empty(len(cx))
    running = -np.inf  # the cumulative maximum, block after block
    for rows in row_blocks(len(cx), 1, _BLOCK_ROWS):
        qx = cx[rows] - 1.0  # Q_a = C_a - (1, 1)
        qy = cy[rows] - 1.0
        tangent = _tangent_vertices(vx, vy, qx, qy)
        block = np.subtract(vy[tangent], qy, out=slopes[rows])
        block /= np.subtract(vx[tangent], qx, out=qx)
        block[...] = np.maximum(np.maximum.accumulate(block), running)
        running = block[-1]
    return slopes


def _tangent_vertices(vx: NDArray, vy: NDArray, qx: NDArray, qy: NDArray) -> NDArray:
    """Index of the vertex of the convex chain ``(vx, vy)`` where each tangent touches.

    The tangent from ``(qx, qy)`` to the vertices right of it touches the first vertex
    ``j`` right of the point such that the point lies on or above the line of the segment
    after ``j`` (the last vertex when there is none).

    The tangent vertex of ``C_a - (1, 1)`` is nearly always the first vertex right of it or
    one of the next few (98% the first, 99.98% within 2 on a million scores of a
    miscalibrated classifier): a few passes over the pending points step them one vertex
    each, and a bisection (about ``log2`` of the vertex count passes) finishes the rest.
    """
    last = len(vx) - 1

    def segment(vertex: NDArray) -> tuple[NDArray, NDArray]:
        # The segment after each vertex, as np.diff(vx)[vertex], without that (|G|,) array.
        return vx[vertex + 1] - vx[vertex], vy[vertex + 1] - vy[vertex]

    def above(points: NDArray, vertex: NDArray) -> NDArray:
        dx, dy = segment(vertex)
        return dx * (qy[points] - vy[vertex]) >= dy * (qx[points] - vx[vertex])

    tangent = np.minimum(np.searchsorted(vx, qx, side="right"), last)
    # The first pass on whole arrays (no gathers of the points): it settles nearly all.
    step = np.minimum(tangent, last - 1)
    dx, dy = segment(step)
    settled = dx * (qy - vy[step]) >= dy * (qx - vx[step])
    del dx, dy, step
    settled |= tangent == last
    pending = np.flatnonzero(~settled)
    tangent[pending] += 1
    pending = pending[tangent[pending] < last]
    for _ in range(_STEPS - 1):
        pending = pending[~above(pending, tangent[pending])]
        tangent[pending] += 1
        pending = pending[tangent[pending] < last]
    low, high = tangent[pending], np.full(len(pending), last)
    while len(pending):
        middle = (low + high) >> 1
        on_or_above = above(pending, middle)
        high = np.where(on_or_above, middle, high)
        low = np.where(on_or_above, low, middle + 1)
        done = low == high
        tangent[pending[done]] = low[done]
        pending, low, high = pending[~done], low[~done], high[~done]
    return tangent


def _tables(pooled: list[NDArray]) -> tuple[NDArray, NDArray]:
    """``(p0, p1)`` tables of one calibration set of distinct scores, ``n + 1`` each.

    ``p1[k]`` is read with ``k`` = the number of distinct scores below the test score and
    ``p0[k]`` with ``k`` = the number at or below it.  ``p0`` is ``p1`` of the mirrored set
    (scores reversed, labels flipped): the isotonic fit of ``1 - t`` on ``-s`` is ``1 - g``.

    ``pooled`` is the list ``[weights, positives]`` (total and positive weight of each
    distinct score), emptied here: each array is freed (``positives`` overwritten by the
    negative weights) once its cumulative sums are made, so the mirrored table is built
    beside the sums and the upper table alone.
    """
    weights, positives = pooled
    pooled.clear()
    # A copy of the blocks, which are a view of an array of n + 1 indices.
    blocks = _scipy.optimize.isotonic_regression(positives / weights, weights=weights).blocks
    vertices = blocks.copy()
    del blocks
    upper = _upper_table(weights, positives, vertices)
    # The mirrored diagram's minorant has the mirrored vertices (PAV is symmetric).
    mirrored = len(weights) - vertices[::-1]
    del vertices
    negatives = np.subtract(weights, positives, out=positives)
    del positives
    cx = _cumulative(weights[::-1])
    del weights
    cy = _cumulative(negatives[::-1])
    del negatives
    lower = 1.0 - _upper_table_of_sums(cx, cy, mirrored)[::-1]
    np.clip(lower, 0.0, 1.0, out=lower)  # 1 - (1 - p) may round below 0
    return lower, upper


def _interval_at(scores: NDArray, lower: NDArray, upper: NDArray, column: NDArray):
    """``(p0, p1)`` of each test score of ``column``: one ``searchsorted``, one comparison."""
    if not len(scores):  # no calibration row: the test row alone, p0 = 0 and p1 = 1
        return np.full(len(column), lower[0]), np.full(len(column), upper[0])
    below = np.searchsorted(scores, column, side="left")
    at_or_below = below + (scores[np.minimum(below, len(scores) - 1)] == column)
    return lower[at_or_below], upper[below]


def _merged(p0: NDArray, p1: NDArray, merge: str) -> NDArray:
    r"""One probability from the ``(folds, N)`` pairs (Vovk, Petej & Fedorova 2015, §4).

    ``'log'``: ``GM(p1) / (GM(1 - p0) + GM(p1))`` with geometric means over the folds
    (``p1 / (1 - p0 + p1)`` for one); ``'brier'``: ``mean(p1) + (mean(p0^2) -
    mean(p1^2)) / 2`` (``p1 + (p0^2 - p1^2) / 2`` for one).
    """
    if merge == "brier":
        return p1.mean(axis=0) + ((p0**2).mean(axis=0) - (p1**2).mean(axis=0)) / 2
    if len(p1) == 1:
        return p1[0] / (1.0 - p0[0] + p1[0])  # > 0: p0 <= p1
    with np.errstate(divide="ignore"):
        high = np.exp(np.log(p1).mean(axis=0))
        low = np.exp(np.log1p(-p0).mean(axis=0))
    total = low + high
    # Both means are 0 only when one fold says certainly 1 and another certainly 0.
    return np.divide(high, total, out=np.full_like(total, 0.5), where=total > 0)


def _runs_rule(name: str, state: dict[str, Any]) -> Text | None:
    """Schema rule: the runs of scores increase, the tables have one entry more per run."""
    offsets, scores = state["run_offsets_"], state["scores_"]
    lower, upper = state["lower_"], state["upper_"]
    if offsets[0] != 0 or offsets[-1] != len(scores) or not (np.diff(offsets) >= 0).all():
        return Text(
            "{run_offsets_} must not decrease from 0 to len(scores_) = {n}.",
            argument="run_offsets_",
            fields={"n": len(scores)},
        )
    n_runs = len(offsets) - 1
    if len(lower) != len(scores) + n_runs or len(upper) != len(lower):
        return Text(
            "{lower_} and {upper_} must hold len(scores_) + {n_runs} entries each.",
            argument="lower_",
            fields={"n_runs": n_runs},
        )
    run_of = np.repeat(np.arange(n_runs), np.diff(offsets))
    if not (np.diff(scores)[run_of[1:] == run_of[:-1]] > 0).all():
        return Text("{argument} must increase within each run.", argument=name)
    table_run_of = np.repeat(np.arange(n_runs), np.diff(offsets) + 1)
    within = table_run_of[1:] == table_run_of[:-1]
    for table, label in ((lower, "lower_"), (upper, "upper_")):
        if not (np.diff(table)[within] >= 0).all():
            return Text("{argument} must not decrease within each run.", argument=label)
    return None


class VennAbersCalibration(Recalibrator):
    r"""Venn-Abers predictors (Vovk, Petej & Fedorova 2015): inductive or cross.

    For a binary problem with calibration rows ``(s_i, t_i)`` and a test score ``s``, let
    ``g_y`` be the isotonic regression of the label on the score fitted on the calibration
    rows together with ``(s, y)``, the test row counting as one row (weight 1), and

    .. math:: p_0 = g_0(s), \qquad p_1 = g_1(s), \qquad p_0 \le p_1 .

    The inductive predictor (IVAP, ``cv=None``) calibrates on all rows of ``fit`` and merges
    the pair into the probability that minimises the worst-case regret of the log loss,

    .. math:: p = \frac{p_1}{1 - p_0 + p_1}

    (``merge='log'``), or of the Brier loss, :math:`p = p_1 + (p_0^2 - p_1^2) / 2`
    (``merge='brier'``).  The cross predictor (CVAP, ``cv=F``) splits the rows into ``F``
    seeded folds; with saved predictions there is no scorer to retrain, so fold ``f`` is the
    calibration set of the ``f``-th IVAP and the ``F`` pairs are merged as in the paper,
    :math:`p = GM(p_1) / (GM(1 - p_0) + GM(p_1))` with geometric means over the folds (the
    Brier merge: :math:`\bar{p_1} + (\overline{p_0^2} - \overline{p_1^2}) / 2`).

    Tied calibration scores are pooled (their weighted mean label, as isotonic regression
    does), and a test score equal to a calibration score is pooled with it.  Both values
    of every possible test score are read from two tables built once in ``fit``
    (O(m log m); see :func:`~calibration_toolbox.recalibration.venn_abers._upper_table`),
    so prediction is one binary search per score.  Sample weights count as duplicated rows
    (the test row weighs 1 in the same unit), so unlike isotonic regression the fit is not
    invariant to rescaling the weights; with ``cv`` the folds are drawn over rows, so
    weights equal duplicated rows for ``cv=None`` only.

    Multiclass (``K > 2`` columns of probabilities), as in Manokhin (2017):

    * one-vs-rest (``multiclass='ovr'``): one predictor per class on ``p[:, k]`` against
      ``y == k``; the K merged probabilities are divided by their row sum;
    * one-vs-one (``'ovo'``): one predictor per pair ``i < j``, calibrated on the rows of
      class i or j with the score ``p_j / (p_i + p_j)`` (1/2 where both are 0) against
      ``y == j``, whose merged probability is :math:`r_{ji} = P(y = j \mid y \in \{i,
      j\})`; the pairs are coupled by Price, Knerr, Personnaz & Dreyfus (1995),

      .. math:: p_k \propto \Big( \sum_{l \ne k} \frac{1}{r_{kl}} - (K - 2) \Big)^{-1},

      the coupling Manokhin uses (and the ``venn-abers`` package), then normalised to sum
      to 1.  A pair without calibration rows (neither class in ``y``, or in the fold) has
      the pair ``(0, 1)`` of the isotonic fits of the test row alone.

    A binary task (two columns, or a 1-D array of P(y = 1)) has one predictor on the
    positive class, whatever ``multiclass``.

    Parameters
    ----------
    cv : int or None, default None
        None: the inductive predictor on all rows; an integer ``F >= 2``: the cross
        predictor over ``F`` folds (at most the number of rows).
    merge : {'log', 'brier'}, default 'log'
        The loss whose worst-case regret the merged probability minimises.
    multiclass : {'ovr', 'ovo'}, default 'ovr'
        How ``K > 2`` classes are reduced to binary problems: one-vs-rest or one-vs-one.
    random_state : int, default 0
        Seed of the fold assignment with ``cv``.

    classes : sequence of str (or of numbers), optional
        Names of the classes, in the column order of ``X``: ``y`` is then given as names,
        ``classes_`` holds these names and ``predict`` returns them.

    Attributes
    ----------
    scores_ : ndarray of float64
        The distinct calibration scores of every run (fold-major, then problem), each run
        increasing.
    lower_, upper_ : ndarray of float64
        The ``p0`` and ``p1`` tables: run ``r`` of ``n`` scores has ``n + 1`` entries.
    run_offsets_ : ndarray of int
        Run ``r`` is ``scores_[run_offsets_[r]:run_offsets_[r + 1]]``.
    n_classes_, n_folds_ : int
        Classes seen in ``fit``; folds (1 for the inductive predictor).
    merge_, multiclass_ : str
        ``merge`` and ``multiclass`` as fitted.

    References
    ----------
    .. [1] V. Vovk, I. Petej and V. Fedorova, "Large-scale probabilistic predictors with
       and without guarantees of validity", NeurIPS, 2015.
    .. [2] V. Vovk and I. Petej, "Venn-Abers predictors", UAI, 2014.
    .. [3] V. Manokhin, "Multi-class probabilistic classification using inductive and cross
       Venn-Abers predictors", COPA, PMLR 60, 2017.
    .. [4] D. Price, S. Knerr, L. Personnaz and G. Dreyfus, "Pairwise neural network
       classifiers with probabilistic outputs", NIPS, 1995.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox.recalibration.venn_abers import VennAbersCalibration
    >>> scores = np.array([0.1, 0.3, 0.4, 0.6, 0.8, 0.9])
    >>> labels = np.array([0, 1, 0, 1, 1, 1])
    >>> venn = VennAbersCalibration().fit(scores, labels)
    >>> p0, p1 = venn.predict_interval([0.2, 0.5, 0.95])
    >>> p0
    array([0.        , 0.33333333, 0.75      ])
    >>> p1
    array([0.66666667, 1.        , 1.        ])
    >>> venn.predict_proba([0.2, 0.5, 0.95])[:, 1]    # p1 / (1 - p0 + p1)
    array([0.4, 0.6, 0.8])
    """

    _outputs_probabilities = True
    _parameters: ClassVar[dict[str, Checker]] = {
        "cv": iv.optional_integer_at_least(2),
        "merge": iv.choice(*_MERGES),
        "multiclass": iv.choice(*_MULTICLASS),
        "random_state": iv.integer_at_least(0),
    }
    _fitted_schema: ClassVar[dict[str, Field]] = {
        "scores_": array_field(("P",), low=0.0, high=1.0, rule=_runs_rule),
        "lower_": array_field(("T",), low=0.0, high=1.0),
        "upper_": array_field(("T",), low=0.0, high=1.0),
        "run_offsets_": array_field(("R+1",), dtype="integer"),
        "n_classes_": N_CLASSES_FIELD,
        "n_folds_": integer_field(1),
        "merge_": choice_field(*_MERGES),
        "multiclass_": choice_field(*_MULTICLASS),
    }

    @classmethod
    def _fitted_dimensions(cls, state: dict[str, Any]) -> dict[str, int]:
        return {"R": state["n_folds_"] * _n_problems(state["n_classes_"], state["multiclass_"])}

    def __init__(
        self,
        cv: int | None = None,
        merge: str = "log",
        multiclass: str = "ovr",
        random_state: int = 0,
        *,
        classes: ArrayLike | None = None,
    ):
        self.cv = cv
        self.merge = merge
        self.multiclass = multiclass
        self.random_state = random_state
        self.classes = classes

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> VennAbersCalibration:
        """Fit on calibration probabilities ``X`` (N, K) or (N,) and labels ``y`` (N,)."""
        params = self._checked_params()
        # Rows of weight 0 are absent rows; weights count as rows (not scale-free), and a
        # binary task's 1-D column is kept as it is (no (N, 2) copy).
        prob, labels, weights = _weighted_rows(
            self, X, y, sample_weight, expand_binary=False, scale_free=False
        )
        folds = _fold_rows(len(prob), params["cv"], params["random_state"])
        n_classes = _n_columns(prob)
        _warn_missing(labels, weights, n_classes)
        multiclass = params["multiclass"]
        runs = [
            run
            for rows in folds
            for run in _fold_runs(prob[rows], labels[rows], _subset(weights, rows), multiclass)
        ]
        self.scores_ = _joined([run[0] for run in runs])
        self.lower_ = _joined([run[1] for run in runs])
        self.upper_ = _joined([run[2] for run in runs])
        self.run_offsets_ = np.cumsum([0] + [len(run[0]) for run in runs]).astype(np.intp)
        self.n_classes_ = int(n_classes)
        self.n_folds_ = len(folds)
        self.merge_ = params["merge"]
        self.multiclass_ = multiclass
        return self

    def _checked(self, X: ArrayLike) -> NDArray:
        """``X`` validated for prediction; a binary task's 1-D column is kept as it is."""
        prob = iv.check_prob(X, name="X", expand_binary=False)
        self._check_n_classes(_n_columns(prob))
        return prob

    def _pairs(self, prob: NDArray) -> tuple[NDArray, NDArray]:
        """``(p0, p1)`` of every fold and binary problem, shape ``(folds, N, G)``."""
        n_problems = _n_problems(self.n_classes_, self.multiclass_)
        shape = (self.n_folds_, len(prob), n_problems)
        p0, p1 = np.empty(shape), np.empty(shape)
        offsets = self.run_offsets_
        for problem in range(n_problems):
            column = _problem_column(prob, problem, self.multiclass_)
            for fold in range(self.n_folds_):
                run = fold * n_problems + problem
                start, stop = offsets[run], offsets[run + 1]
                tables = slice(start + run, stop + run + 1)
                p0[fold, :, problem], p1[fold, :, problem] = _interval_at(
                    self.scores_[start:stop], self.lower_[tables], self.upper_[tables], column
                )
        return p0, p1

    def predict_interval(self, X: ArrayLike) -> tuple[NDArray, NDArray]:
        """The pair ``(p0, p1)`` of each row: shape ``(N,)`` binary, ``(N, K)`` multiclass.

        For a multiclass task, column ``k`` is the pair of the one-vs-rest problem of class
        ``k`` (before any normalisation); with ``multiclass='ovo'`` there is one column per
        pair of classes ``i < j`` (in the order of ``itertools.combinations(range(K), 2)``),
        the pair of ``P(y = j | y in {i, j})``.  With ``cv``, the pair of geometric means whose
        log merge is the prediction: ``(1 - GM(1 - p0), GM(p1))``.
        """
        self._check_fitted()
        p0, p1 = self._pairs(self._checked(X))
        if self.n_folds_ == 1:
            low, high = p0[0], p1[0]
        else:
            with np.errstate(divide="ignore"):
                low = 0.0 - np.expm1(np.log1p(-p0).mean(axis=0))  # + 0: no -0.0
                high = np.exp(np.log(p1).mean(axis=0))
        if self.n_classes_ == 2:
            return low[:, 0], high[:, 0]
        return low, high

    def _calibrated_probs(self, X: ArrayLike) -> NDArray:
        prob = self._checked(X)
        n_classes = self.n_classes_
        out = np.empty((len(prob), n_classes))
        # A block of rows at a time (every step is row by row): beside the output, only
        # the pairs and merged columns of one block.
        width = self.n_folds_ * _n_problems(n_classes, self.multiclass_)
        block = max(_BLOCK_ROWS // width, _MIN_PREDICTED_ROWS)
        for rows in row_blocks(len(prob), 1, block):
            columns = _merged(*self._pairs(prob[rows]), self.merge_)
            if n_classes == 2:
                out[rows, 1] = columns[:, 0]
                out[rows, 0] = 1.0 - columns[:, 0]
                continue
            if self.multiclass_ == "ovo":
                columns = _coupled(columns, n_classes)
            out[rows] = normalised_probs(columns)
        return out


def _n_problems(n_classes: int, multiclass: str) -> int:
    """Binary problems of a task: 1 (binary), K (one-vs-rest) or K (K - 1) / 2 (pairs)."""
    if n_classes == 2:
        return 1
    return n_classes if multiclass == "ovr" else n_classes * (n_classes - 1) // 2


def _problem_column(prob: NDArray, problem: int, multiclass: str) -> NDArray:
    """The scores of one binary problem: ``p_k`` (one-vs-rest), ``p_j / (p_i + p_j)`` (pairs).

    A pair whose two probabilities are both 0 gets the score 1/2.  A 1-D ``prob`` is a
    binary task's positive column.
    """
    if prob.ndim == 1:
        return prob
    if prob.shape[1] == 2:
        return prob[:, 1]
    if multiclass == "ovr":
        return prob[:, problem]
    first, second = (index[problem] for index in np.triu_indices(prob.shape[1], 1))
    total = prob[:, first] + prob[:, second]
    return np.divide(prob[:, second], total, out=np.full(total.shape, 0.5), where=total > 0)


def _fold_runs(
    prob: NDArray, labels: NDArray, weights: NDArray | None, multiclass: str
) -> list[tuple[NDArray, NDArray, NDArray]]:
    """``(distinct scores, p0 table, p1 table)`` of each binary problem of one fold."""
    n_classes = _n_columns(prob)
    runs = []
    for problem in range(_n_problems(n_classes, multiclass)):
        rows, positive_class = slice(None), problem
        if n_classes == 2:
            positive_class = 1
        elif multiclass == "ovo":
            first, positive_class = (index[problem] for index in np.triu_indices(n_classes, 1))
            rows = np.flatnonzero((labels == first) | (labels == positive_class))
            if not len(rows):  # the isotonic fits of the test row alone: 0 and 1
                runs.append((np.empty(0), np.zeros(1), np.ones(1)))
                continue
        column = _problem_column(prob[rows], problem, multiclass)
        # The temporaries are freed as soon as they are used: the peak is in _tables.
        distinct, *pooled, _ = _pooled_ties(
            column[:, None],
            np.where(labels[rows] == positive_class, 0, -1),
            slice(0, 1),
            _subset(weights, rows),
        )
        del column
        lower, upper = _tables(pooled)  # which frees the pooled weights as it goes
        runs.append((distinct.astype(np.float64, copy=False), lower, upper))
    return runs


def _joined(arrays: list[NDArray]) -> NDArray:
    """The arrays end to end; a single one as it is (no copy of a one-run fitted state)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _subset(weights: NDArray | None, rows) -> NDArray | None:
    return None if weights is None else weights[rows]


def _coupled(pairwise: NDArray, n_classes: int) -> NDArray:
    r"""Class probabilities from pairwise ones (Price, Knerr, Personnaz & Dreyfus 1995).

    ``pairwise[:, g]`` is ``r_{ji} = P(y = j | y in {i, j})`` for the g-th pair ``i < j``;
    then :math:`p_k \propto 1 / (\sum_{l \ne k} 1 / r_{kl} - (K - 2))` (a ``r_{kl} = 0``
    gives ``p_k = 0``), normalised by the caller.
    """
    inverse_sums = np.zeros((len(pairwise), n_classes))
    with np.errstate(divide="ignore"):
        for problem, (first, second) in enumerate(
            zip(*np.triu_indices(n_classes, 1), strict=False)
        ):
            inverse_sums[:, first] += 1.0 / (1.0 - pairwise[:, problem])
            inverse_sums[:, second] += 1.0 / pairwise[:, problem]
        # Each 1 / r >= 1, so the denominator is >= 1 (inf where some r is 0).
        return 1.0 / (inverse_sums - (n_classes - 2))


def _fold_rows(n_samples: int, cv: int | None, random_state: int) -> list[NDArray | slice]:
    """The calibration rows of each predictor: all rows, or ``cv`` seeded folds."""
    if cv is None:
        return [slice(None)]  # a view: no copy of the rows
    if cv > n_samples:
        raise InputError(
            "{cv} must be at most the number of rows ({n}), each fold holding one at least; "
            "got {value}.",
            argument="cv",
            n=n_samples,
            value=cv,
        )
    permutation = np.random.default_rng(random_state).permutation(n_samples)
    return [np.sort(rows) for rows in np.array_split(permutation, cv)]


def _warn_missing(labels: NDArray, weights: NDArray | None, n_classes: int) -> None:
    counts = np.bincount(labels, weights=weights, minlength=n_classes)
    missing = np.flatnonzero(counts == 0) if n_classes > 2 else np.array([], dtype=int)
    if len(missing):
        warn(
            Text(
                "classes {missing} never occur in {y} (with positive weight); "
                "VennAbersCalibration's p0 for them is 0 wherever calibration scores were "
                "seen.",
                fields={"missing": missing.tolist()},
            )
        )
