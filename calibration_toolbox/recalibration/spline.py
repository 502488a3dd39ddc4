"""Spline calibration (Gupta et al. 2021): the slope of a smoothed Kolmogorov-Smirnov walk.

The scores of a binary problem are sorted, the cumulative gap between labels and scores is
walked as a function of the fraction of the data passed, a natural cubic spline is fitted to
that walk by least squares, and its derivative, added to the score, is the calibrated
probability.  The multiclass reductions (top-label, one-vs-rest) are those of
:mod:`calibration_toolbox.recalibration.nonparametric`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError
from calibration_toolbox._rows import row_blocks
from calibration_toolbox.binning import sort_rows_with_flags
from calibration_toolbox.recalibration._base import (
    N_CLASSES_FIELD,
    Checker,
    Field,
    Recalibrator,
    array_field,
    choice_field,
)
from calibration_toolbox.recalibration.nonparametric import (
    _INTERPOLATION_SCALE,
    _combine,
    _fit_inputs,
    _problem_scores,
    increasing_runs,
)

__all__ = ["SplineCalibration"]

_MODES = ("top-label", "one-vs-rest")
# Rows of the walk summed or evaluated at once: a few float64 temporaries of 2**16 rows
# (0.5 MiB each) instead of arrays of N rows.
_BASIS_ROWS = 2**16


def _problem_mode(mode: str, n_columns: int) -> str:
    """The reduction used: a binary task is one map on ``p[:, 1]`` in either mode."""
    return "one-vs-rest" if n_columns <= 2 else mode


def _natural_spline(knot_values: NDArray) -> Any:
    """The natural cubic spline through ``knot_values`` at equally spaced knots on [0, 1].

    With the identity matrix as values it is the cardinal basis (one column per knot) of the
    space the fit searches; the spline is linear in its knot values.
    """
    knots = np.linspace(0.0, 1.0, len(knot_values))
    return _scipy.interpolate.CubicSpline(knots, knot_values, bc_type="natural")


def _sorted_walk(
    scores: NDArray, positive: NDArray, weights: NDArray | None
) -> tuple[NDArray, NDArray, NDArray | None, NDArray | None]:
    """The sorted scores, the walk of pooled labels minus scores, and the tie groups.

    Returns the sorted float64 scores, the walk ``h_j = sum_{i <= j} w_i (y_i - s_i) / W``
    (``y_i`` replaced by the weighted mean label of its run of tied scores, so the order of
    tied rows does not matter), the sorted weights (None without weights), and the start of
    each run of tied scores (None when all scores differ).
    """
    if weights is None:
        # One plain sort carrying the labels in the lowest bit (no argsort: 60 ms instead of
        # 430 ms at 10**6 scores), of ``scores`` itself (the caller's own copy).
        flags = sort_rows_with_flags(scores, (1, len(scores)), np.flatnonzero(positive))
        sorted_scores = np.asarray(scores, dtype=np.float64)
        # The float64 targets are written over the integer flags (same width, element by
        # element): 8 bytes a row fewer at the peak.
        targets = flags.view(np.float64) if flags.itemsize == 8 else np.empty(len(flags))
        np.copyto(targets, flags, casting="unsafe")
        del flags
        sorted_weights = None
    else:
        # Tied rows in increasing weight: their positions depend on their order, and so
        # the fit depends on the rows, not on the order they come in.
        order = np.lexsort((weights, scores))
        sorted_scores = scores[order].astype(np.float64)
        targets = positive[order].astype(np.float64)
        sorted_weights = weights[order]
        del order
    new_run = np.empty(len(sorted_scores), dtype=bool)
    new_run[0] = True
    np.not_equal(sorted_scores[1:], sorted_scores[:-1], out=new_run[1:])
    starts = None
    if not new_run.all():
        starts = np.flatnonzero(new_run)
        counts = np.diff(np.append(starts, len(sorted_scores)))
        if sorted_weights is None:
            mean_labels = np.add.reduceat(targets, starts) / counts
        else:
            mean_labels = np.add.reduceat(targets * sorted_weights, starts)
            mean_labels /= np.add.reduceat(sorted_weights, starts)
        targets = np.repeat(mean_labels, counts)
    del new_run
    walk = np.subtract(targets, sorted_scores, out=targets)
    if sorted_weights is not None:
        walk *= sorted_weights
    np.cumsum(walk, out=walk)
    walk /= len(walk) if sorted_weights is None else sorted_weights.sum()
    return sorted_scores, walk, sorted_weights, starts


def _positions(rows: slice, n_samples: int, cumulative: NDArray | None) -> NDArray:
    """The fraction of the data up to and including each row of ``rows`` (``j / N``)."""
    if cumulative is None:
        return np.arange(rows.start + 1, rows.stop + 1) / n_samples
    return cumulative[rows] / cumulative[-1]


def _knot_values(walk: NDArray, cumulative: NDArray | None, weights, basis) -> NDArray:
    """Least-squares knot values of the natural cubic spline fitted to the walk.

    On each knot interval every basis function is a cubic in the offset ``x`` from the
    interval's start (``basis.c``, SciPy's piecewise coefficients), so the normal equations
    need only the per-interval sums of ``w x^p`` (p <= 6) and ``w x^p h`` (p <= 3): eleven
    ``bincount`` passes over row blocks instead of the N x knots design matrix (evaluating
    that basis took 360 ms of a 1.7 s fit at 10**6 rows; these sums take about 60 ms).  The
    small system is solved by ``numpy.linalg.lstsq``.
    """
    starts = basis.x[:-1]
    n_intervals = len(starts)
    power_sums = np.zeros((n_intervals, 7))
    walk_sums = np.zeros((n_intervals, 4))
    n_samples = len(walk)
    for rows in row_blocks(n_samples, 1, _BASIS_ROWS):
        positions = _positions(rows, n_samples, cumulative)
        interval = np.clip(np.searchsorted(starts, positions, side="right") - 1, 0, None)
        offset = positions - starts[interval]
        term = np.ones_like(offset) if weights is None else weights[rows].copy()
        walk_term = term * walk[rows]
        for power in range(7):
            power_sums[:, power] += np.bincount(interval, term, minlength=n_intervals)
            if power < 4:
                walk_sums[:, power] += np.bincount(interval, walk_term, minlength=n_intervals)
                walk_term *= offset
            term *= offset
    # coefficients[i, p, k]: the coefficient of x**p of basis function k on interval i.
    coefficients = np.moveaxis(basis.c[::-1], 0, 1)
    powers = np.add.outer(np.arange(4), np.arange(4))
    gram = np.einsum("ipk,ipq,iql->kl", coefficients, power_sums[:, powers], coefficients)
    moments = np.einsum("ipk,ip->k", coefficients, walk_sums)
    return np.linalg.lstsq(gram, moments, rcond=None)[0]


def _calibration_table(
    scores: NDArray, positive: NDArray, weights: NDArray | None, basis
) -> tuple[NDArray, NDArray, NDArray]:
    """Distinct calibration scores, their calibrated values and the spline's knot values.

    ``scores`` is a contiguous copy that is sorted in place.

    ``basis`` is the cardinal basis of :func:`_natural_spline`, built once per fit (building
    a ``CubicSpline`` costs more than fitting a few thousand rows).
    """
    sorted_scores, walk, sorted_weights, starts = _sorted_walk(scores, positive, weights)
    cumulative = None if sorted_weights is None else np.cumsum(sorted_weights)
    knot_values = _knot_values(walk, cumulative, sorted_weights, basis)
    # The spline is linear in its knot values: its piecewise coefficients are the basis's
    # combined with them.
    slope = _scipy.interpolate.PPoly(np.tensordot(basis.c, knot_values, axes=1), basis.x)
    # The walk is no longer needed: its memory receives the calibrated values.
    values = walk
    n_samples = len(values)
    for rows in row_blocks(n_samples, 1, _BASIS_ROWS):
        values[rows] = slope(_positions(rows, n_samples, cumulative), 1)
    values += sorted_scores
    if starts is not None:  # one value per tied score: the weighted mean over its run
        if sorted_weights is None:
            counts = np.diff(np.append(starts, n_samples))
            values = np.add.reduceat(values, starts) / counts
        else:
            values = np.add.reduceat(values * sorted_weights, starts) / np.add.reduceat(
                sorted_weights, starts
            )
        sorted_scores = sorted_scores[starts]
    return sorted_scores, np.clip(values, 0.0, 1.0, out=values), knot_values


class SplineCalibration(Recalibrator):
    r"""Spline calibration (Gupta et al. 2021): the derivative of a smoothed KS walk.

    For each binary problem the calibration scores are sorted, :math:`s_{(1)} \le \dots \le
    s_{(N)}`, with their targets :math:`y_{(i)}` (1 for a positive example), and walked
    through as a function of the fraction of the data passed, :math:`t_j = j / N`:

    .. math:: h_j = \frac1N \sum_{i \le j} \bigl(y_{(i)} - s_{(i)}\bigr),

    the cumulative gap of the Kolmogorov-Smirnov calibration error (:func:`KSCE` is
    :math:`\max_j |h_j|`).  A natural cubic spline :math:`S` (second derivative 0 at both
    ends) with ``knots`` equally spaced knots on [0, 1] is fitted to the points
    :math:`(t_j, h_j)` by least squares, and the calibrated probability of the j-th score is
    the slope of the fitted cumulative label curve,

    .. math:: \gamma_j = \operatorname{clip}\bigl(s_{(j)} + S'(t_j),\; 0,\; 1\bigr),

    since the walk of the labels alone, :math:`h_j + \frac1N \sum_{i \le j} s_{(i)}`, has
    slope :math:`y` and the walk of the scores has slope :math:`s`.  Fitting the gap rather
    than the cumulative labels is the paper's choice: it is small and smooth, and the score
    is added back exactly.  The clip into [0, 1] is this library's (the paper's code clips
    the same way); the derivative of a least-squares spline may leave that interval near the
    ends.  A new score is mapped by linear interpolation between the calibrated values of
    the neighbouring calibration scores, and outside their range to the value at the nearer
    end.  The spline is fitted with ``scipy.interpolate.CubicSpline`` as basis: the knot
    values solve the least-squares problem over the N points, summed in row blocks.

    Tied scores share the weighted mean of their labels before the walk, and tied rows with
    weights are walked in increasing weight, so the order of the rows does not change the
    fit; a tied score gets the mean of its rows' values.
    With ``sample_weight`` a row's step is :math:`w_i (y_i - s_i) / W` at position
    :math:`t_j = \sum_{i \le j} w_i / W` and its point counts :math:`w_j` in the least
    squares.  Multiplying every weight by a constant changes nothing, but integer weights
    are **not** duplicated rows: a duplicated row adds several points to the walk, a weight
    one point (the paper defines no weights).

    Modes:

    * binary (two columns or a 1-D array), in either mode: one map on ``p[:, 1]`` and the
      output ``[1 - g(p_1), g(p_1)]``;
    * ``'top-label'`` (the paper's, default): one map on the confidence ``c = max_k p_k``
      against whether the predicted class is correct; the predicted class gets ``g(c)`` and
      the other classes share ``1 - g(c)`` in proportion to their probabilities, as in
      :class:`IsotonicCalibration` with ``mode='top-label'`` (the paper recalibrates the top
      score only and states no rule for the others).  The argmax may change where ``g``
      lowers the confidence below a rescaled runner-up: on ``lenet-5-cifar-10`` (fitted on
      all 10,000 rows) it changes on 22% of the rows, and the top-label KS error of the
      whole vectors falls from 0.108 to 0.024, that of the recalibrated confidences against
      the original predictions' correctness to 0.003;
    * ``'one-vs-rest'``: one map per class ``k`` on ``p[:, k]`` against ``y == k``, then the
      K values are divided by their sum (uniform where they are all 0).

    Departures from the paper's code (``kartikgupta-at-anu/spline-calibration``, checked in
    the tests against its output): it places the N points at ``t = linspace(0, 1, N)``, a
    step of :math:`1/(N-1)` for a rise of :math:`1/N`, so its slope is :math:`(N-1)/N` of
    the walk's rate; here :math:`t_j = j/N` and the slope is the rate.  Its interpolation
    between calibration scores swaps the two weights (at a calibration score it returns
    the value of the score below it); here it is the straight line.

    Parameters
    ----------
    knots : int, default 6
        Number of equally spaced knots of the natural cubic spline on [0, 1], at least 2
        (2 knots fit a straight line: one constant shift of every score).  The paper uses 6.
    mode : {'top-label', 'one-vs-rest'}, default 'top-label'
        How a multiclass task is reduced to binary problems (see above).

    classes : sequence of str (or of numbers), optional
        Names of the classes, in the column order of ``X``: ``y`` is then given as names
        (``fit``, ``score``), ``classes_`` holds these names and ``predict`` returns them.
        Saved with the fitted state.  Default: ``y`` holds column indices.

    Attributes
    ----------
    breakpoints_ : ndarray of float64
        The distinct calibration scores of every binary problem, one increasing run per
        problem (1 run for a binary task or top-label, K for one-vs-rest).
    breakpoint_values_ : ndarray of float64
        Calibrated probability at each of ``breakpoints_``, in [0, 1].
    breakpoint_offsets_ : ndarray of int
        Run ``g`` is ``breakpoints_[breakpoint_offsets_[g]:breakpoint_offsets_[g + 1]]``.
    knot_values_ : ndarray of float64, shape (G, knots)
        The fitted spline :math:`S` of each problem at its knots ``linspace(0, 1, knots)``.
    n_classes_ : int
        Number of classes seen in ``fit``.
    mode_ : str
        The reduction used (``'one-vs-rest'`` for a binary task).

    References
    ----------
    .. [1] K. Gupta, A. Rahimi, T. Ajanthan, T. Mensink, C. Sminchisescu and R. Hartley,
       "Calibration of Neural Networks using Splines", ICLR, 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox.recalibration.spline import SplineCalibration
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.uniform(size=2000)
    >>> labels = (rng.uniform(size=2000) < scores**2).astype(int)   # P(y = 1) = s**2
    >>> spline = SplineCalibration().fit(scores, labels)
    >>> spline.predict_proba([0.2, 0.5, 0.9])[:, 1].round(2)
    array([0.04, 0.25, 0.83])
    """

    _outputs_probabilities = True
    _parameters: ClassVar[dict[str, Checker]] = {
        "knots": iv.integer_at_least(2),
        "mode": iv.choice(*_MODES),
    }
    _fitted_schema: ClassVar[dict[str, Field]] = {
        "breakpoints_": array_field(("P",), low=0.0, high=1.0, rule=increasing_runs),
        "breakpoint_values_": array_field(("P",), low=0.0, high=1.0),
        "breakpoint_offsets_": array_field(("G+1",), dtype="integer"),
        "knot_values_": array_field(("G", "M")),
        "n_classes_": N_CLASSES_FIELD,
        "mode_": choice_field(*_MODES),
    }

    @classmethod
    def _fitted_dimensions(cls, state: dict[str, Any]) -> dict[str, int]:
        one_map = state["mode_"] == "top-label" or state["n_classes_"] == 2
        return {"G": 1 if one_map else state["n_classes_"]}

    def __init__(
        self,
        knots: int = 6,
        mode: str = "top-label",
        *,
        classes: ArrayLike | None = None,
    ):
        self.knots = knots
        self.mode = mode
        self.classes = classes

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> SplineCalibration:
        """Fit on calibration probabilities ``X`` (N, K) or (N,) and labels ``y`` (N,)."""
        params = self._checked_params()
        n_knots = params["knots"]
        # The shape alone (X is validated once, by _fit_inputs): 1-D, (N, 1) and (N, 2) are
        # binary tasks.
        shape = np.shape(X)
        mode = _problem_mode(params["mode"], shape[1] if len(shape) == 2 else 2)
        scores, positive, weights, n_classes = _fit_inputs(self, X, y, sample_weight, mode)
        if len(scores) < n_knots:
            raise InputError(
                "{X} must have at least {knots} rows (with positive weight), one per knot "
                "of the spline; got {n_rows}.",
                argument="X",
                knots=n_knots,
                n_rows=len(scores),
            )
        basis = _natural_spline(np.eye(n_knots))
        breakpoints, values, knot_values = [], [], []
        n_problems = scores.shape[1]
        for problem in range(n_problems):
            # A copy of the column, which the fit sorts in place; adding 0 also turns -0.0
            # into +0.0.  A binary task's scores are a view of its 1-D X (the validation
            # makes no (N, 2) copy); its integer problem indices are freed here.
            column = np.add(scores[:, problem], scores.dtype.type(0))
            is_positive = positive == problem
            if n_problems == 1:
                del scores, positive
            table = _calibration_table(column, is_positive, weights, basis)
            del column, is_positive
            breakpoints.append(table[0])
            values.append(table[1])
            knot_values.append(table[2])
        self.breakpoints_ = np.concatenate(breakpoints)
        self.breakpoint_values_ = np.concatenate(values)
        self.breakpoint_offsets_ = np.cumsum([0] + [len(run) for run in breakpoints]).astype(
            np.intp
        )
        self.knot_values_ = np.array(knot_values)
        self.n_classes_ = int(n_classes)
        self.mode_ = mode
        return self

    def _calibrated_probs(self, X: ArrayLike) -> NDArray:
        prob = iv.check_prob(X, name="X")
        self._check_n_classes(prob.shape[1])
        scores = _problem_scores(prob, self.mode_)
        columns = np.empty(scores.shape)
        offsets = self.breakpoint_offsets_
        for problem in range(scores.shape[1]):
            run = slice(offsets[problem], offsets[problem + 1])
            # Scaled by a power of two, as in IsotonicCalibration: no slope overflows.
            columns[:, problem] = np.interp(
                scores[:, problem] * _INTERPOLATION_SCALE,
                self.breakpoints_[run] * _INTERPOLATION_SCALE,
                self.breakpoint_values_[run],
            )
        return _combine(columns, prob, self.mode_)
