"""Smooth ECE (Blasiok & Nakkiran 2024): the calibration error of kernel-smoothed residuals.

Data flow: validate -> (score, target) pairs (the top label, or ``Scores``) -> weighted
residual masses ``w_i (y_i - f_i) / sum(w)`` spread linearly onto a uniform grid of [0, 1]
-> one DCT-I of the grid -> for each bandwidth, the reflected Gaussian smoothing is a
multiplication of that spectrum, one inverse DCT-I and a trapezoid sum of ``|g|``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry, _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._docstrings import with_fragments
from calibration_toolbox.scores import PredictionsLike

__all__ = [
    "CURVE_INTERVALS",
    "SmoothECE",
    "SmoothReliabilityCurve",
    "smooth_reliability_curve",
    "smoothed_residuals",
]

#: A bandwidth above which the smoothing is flat: exp(-(pi * 100)**2 / 2) is 0 in float64.
_FLAT_BANDWIDTH = 100.0

#: Grid intervals of each stage of the fixed-point search, and the smallest bandwidth each
#: serves: a grid of L intervals is used for bandwidths >= _POINTS_PER_BANDWIDTH / L, where
#: linear binning and the trapezoid rule are accurate to 1e-6 of the value or better (measured
#: against the exact integral, tests/metrics/test_smooth.py).  A DCT-I of 2**14 + 1 points takes
#: 0.17 ms here and of 2**20 + 1 points 55 ms, so the fine stages are used only when the
#: fixed point lies below them (sigma* < 1/64 means roughly n > 10**6 calibrated rows).
_GRID_STAGES = (1 << 14, 1 << 17, 1 << 20)
_POINTS_PER_BANDWIDTH = 256


def _linear_bins(scores: NDArray, intervals: int) -> tuple[NDArray, NDArray]:
    """The grid node left of each score and the fraction of the way to the next node."""
    position = np.multiply(scores, intervals, dtype=np.float64)
    left = position.astype(np.intp)  # floor: scores are >= 0
    np.minimum(left, intervals - 1, out=left)
    position -= left
    return left, position


def _node_masses(left: NDArray, to_left: NDArray, to_right: NDArray, n_nodes: int) -> NDArray:
    """The masses of the nodes: each row's ``to_left`` and ``to_right``, the ends doubled.

    ``to_left`` goes to the node left of the row's score, ``to_right`` to the next.  The
    doubled ends make the vector the even extension of period 2 whose DCT-I is the
    spectrum: a mass at 0 or 1 is its own mirror image.
    """
    nodes = np.bincount(left, weights=to_left, minlength=n_nodes)
    nodes[1:] += np.bincount(left, weights=to_right, minlength=n_nodes)[:-1]
    nodes[[0, -1]] *= 2
    return nodes


def _split(fraction: NDArray, masses: NDArray) -> tuple[NDArray, NDArray]:
    """Linear binning: the parts of each mass on the node left of its score and the next."""
    to_right = fraction * masses
    return masses - to_right, to_right


#: A damping below which a cosine mode is lost in the rounding of the constant mode.
_NEGLIGIBLE_MODE = 2.0**-64


class _Spectrum:
    """Masses on a grid of ``[0, 1]``, as the DCT-I coefficients of their even extension.

    Each row's mass is split between the two grid nodes around its score in proportion to
    its distance to each (linear binning: the total mass and its first moment are kept),
    so that smoothing with the reflected Gaussian kernel is a multiplication.
    """

    def __init__(self, nodes: NDArray):
        self.intervals = len(nodes) - 1
        self.coefficients = _scipy.fft.dct(nodes, type=1)
        self.squared_frequencies = np.square(np.pi * np.arange(len(nodes)))

    def smoothed(self, bandwidth: float, step: int = 1) -> NDArray:
        """The smoothed density at every ``step``-th node (mass per unit of score)."""
        # The reflected Gaussian kernel is the Neumann heat kernel of [0, 1]: its cosine
        # modes cos(pi k t) are damped by exp(-(pi k sigma)^2 / 2).
        # Above _FLAT_BANDWIDTH every mode but the constant is damped to exactly 0 in float64,
        # so a larger bandwidth gives the same value (1e300 squared would be inf, 0 * inf NaN).
        bandwidth = min(bandwidth, _FLAT_BANDWIDTH)
        damping = np.exp(self.squared_frequencies * (-0.5 * bandwidth * bandwidth))
        damped = self.coefficients * damping
        kept = self.intervals // step
        if damping[kept] < _NEGLIGIBLE_MODE:
            # The modes from `kept` on are below the rounding of the others: the DCT-I of
            # the first kept + 1 is the full one at every step-th node (cos(pi k j step / L)
            # = cos(pi k j / kept)), for a transform `step` times shorter.
            density = _scipy.fft.dct(damped[: kept + 1], type=1)
        else:
            density = _scipy.fft.dct(damped, type=1)[::step]
        density *= 0.5  # the DCT gives 2 g at the nodes
        return density

    def error(self, bandwidth: float) -> float:
        r"""``\int_0^1 |g_\sigma(t)| dt`` of the smoothed density ``g_\sigma``."""
        density = self.smoothed(bandwidth)
        np.abs(density, out=density)
        inner = density.sum() - 0.5 * (density[0] + density[-1])
        return float(inner / self.intervals)


def _residual_masses(targets: NDArray, scores: NDArray, weights: NDArray | None) -> NDArray:
    """``w_i (y_i - f_i) / sum(w)``: each row's share of the residual measure."""
    masses = targets - scores.astype(np.float64)
    if weights is not None:
        masses *= weights / weights.sum()
    else:
        masses /= len(masses)
    return masses


def _residual_spectrum(
    scores: NDArray, targets: NDArray, weights: NDArray | None, n_nodes: int
) -> _Spectrum:
    """The spectrum of the weighted residual masses ``w_i (y_i - f_i) / sum(w)``."""
    left, fraction = _linear_bins(scores, n_nodes - 1)
    masses = _residual_masses(targets, scores, weights)
    return _Spectrum(_node_masses(left, *_split(fraction, masses), n_nodes))


def smoothed_residuals(
    scores: NDArray, targets: NDArray, weights: NDArray | None, bandwidth: float | None
) -> tuple[NDArray, float]:
    r"""SmoothECE's smoothed residual :math:`\hat r_\sigma(s_i)` at each score, and sigma.

    :math:`\hat r_\sigma = g_\sigma / \hat\delta_\sigma`, the Nadaraya-Watson regression
    of :math:`y - s` on :math:`s` with the reflected Gaussian kernel of :func:`SmoothECE`
    (residual and score densities each smoothed on SmoothECE's grid and linearly
    interpolated at the scores); the smoothed calibration curve is :math:`s + \hat r_\sigma
    (s)`.  ``bandwidth=None``: SmoothECE's fixed point.  The pairs are validated, rows of
    weight 0 removed.
    """
    if bandwidth is None:
        bandwidth, _ = _fixed_point(scores, targets, weights)
    intervals = _grid_for(bandwidth)
    left, fraction = _linear_bins(scores, intervals)
    shares = np.full(len(scores), 1 / len(scores)) if weights is None else weights / weights.sum()
    residual, density = (
        _Spectrum(_node_masses(left, *_split(fraction, masses), intervals + 1)).smoothed(bandwidth)
        for masses in (_residual_masses(targets, scores, weights), shares)
    )
    nodes = np.linspace(0.0, 1.0, intervals + 1)
    at = scores.astype(np.float64)
    return np.interp(at, nodes, residual) / np.interp(at, nodes, density), float(bandwidth)


def _grid_for(bandwidth: float) -> int:
    """Intervals of the coarsest stage grid that serves ``bandwidth`` (the finest if none)."""
    for intervals in _GRID_STAGES:
        if bandwidth * intervals >= _POINTS_PER_BANDWIDTH:
            return intervals
    return _GRID_STAGES[-1]


def _fixed_point(
    scores: NDArray, targets: NDArray, weights: NDArray | None
) -> tuple[float, float]:
    """The bandwidth ``sigma`` in (0, 1] with ``smECE_sigma = sigma``, and its value.

    Stage by stage, from the coarsest grid: the fixed point is in the stage's range
    ``[lower, upper]`` when ``smECE_lower > lower`` (``smECE_sigma - sigma`` decreases).
    """
    upper = 1.0
    for intervals in _GRID_STAGES:
        spectrum = _residual_spectrum(scores, targets, weights, intervals + 1)
        lower = _POINTS_PER_BANDWIDTH / intervals
        if spectrum.error(lower) > lower:
            return _root_between(spectrum, lower, upper)
        upper = lower
    # The fixed point lies below the finest stage's bandwidth; the value there is a lower
    # bound within that bandwidth (smECE decreases with sigma).
    return upper, spectrum.error(upper)


def _root_between(spectrum: _Spectrum, lower: float, upper: float) -> tuple[float, float]:
    """The root of ``smECE_sigma - sigma`` in ``[lower, upper]`` and ``smECE`` there."""

    def excess(sigma: float) -> float:
        return spectrum.error(sigma) - sigma

    if excess(upper) >= 0:  # residuals of one sign and total 1: sigma* = 1
        return upper, spectrum.error(upper)
    root = _scipy.optimize.brentq(excess, lower, upper, xtol=1e-15, rtol=4 * np.finfo(float).eps)
    return root, spectrum.error(root)


def _checked_pairs(prob, labels, logits, sample_weight, renormalize, bandwidth):
    """The validated (score, target) pairs of the top label or ``Scores``, weights > 0 only."""
    scores, targets, weights = iv.top_label_pairs(
        prob, labels, logits, sample_weight, renormalize, scale_free=True
    )
    if bandwidth is not None:
        bandwidth = iv.positive_number(bandwidth, "bandwidth")
    return scores, targets, weights, bandwidth


_REFERENCES = with_fragments(
    {
        "{references}": """\
References
----------
.. [1] J. Blasiok and P. Nakkiran, "Smooth ECE: Principled Reliability Diagrams via
   Kernel Smoothing", International Conference on Learning Representations (ICLR),
   2024.
"""
    }
)


@_registry.metric("SmoothECE")
@iv.accepts_classes
@_REFERENCES
def SmoothECE(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    bandwidth: float | None = None,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Smooth ECE of Blasiok & Nakkiran (2024) of the top label (or of ``Scores``).

    On the pairs (confidence :math:`f_i`, correct :math:`y_i`) with weights :math:`w_i`
    (1 by default), the residuals :math:`y_i - f_i` are smoothed with the reflected Gaussian
    kernel :math:`K_\sigma(t, f)` on [0, 1] (the density at t of :math:`f + \sigma Z`,
    :math:`Z \sim N(0, 1)`, folded back into [0, 1] at both ends, i.e. summed over all
    mirror images :math:`\pm f + 2j`), and the error is

    .. math::

        \mathrm{smECE}_\sigma = \int_0^1 |\hat r_\sigma(t)|\, \hat\delta_\sigma(t)\, dt
        = \int_0^1 \Bigl| \sum_i \frac{w_i}{W} K_\sigma(t, f_i) (y_i - f_i) \Bigr| dt,

    with :math:`\hat\delta_\sigma(t) = \sum_i \frac{w_i}{W} K_\sigma(t, f_i)` the smoothed
    density of the scores, :math:`\hat r_\sigma` the Nadaraya-Watson smoothing of the
    residuals and :math:`W = \sum_i w_i`: the L1 norm of the smoothed residual measure.
    ``smECE_sigma`` decreases as sigma grows; by default the bandwidth is its fixed point
    :math:`\sigma^*` with :math:`\mathrm{smECE}_{\sigma^*} = \sigma^*` (the paper's
    hyperparameter-free SmoothECE), so the value returned is also the bandwidth used.

    Computation: the residual masses are split linearly between the two nearest nodes of a
    uniform grid of [0, 1] of L intervals (L = 2**14 for sigma >= 1/64, 2**17 down to 1/512,
    2**20 below: at least 256 nodes per bandwidth), the reflected smoothing is applied
    exactly to the grid masses through a DCT-I (the kernel's cosine modes
    :math:`\cos \pi k t` decay as :math:`e^{-(\pi k \sigma)^2/2}`; a mass on an end node
    is its own mirror image and counts twice in the even extension), and the integral is
    the trapezoid rule on the nodes: the relative error against the exact integral is
    below 1e-6 (tests/metrics/test_smooth.py checks it against adaptive quadrature of the image
    sum).  The fixed point is found by Brent's method on sigma (to 1e-15); if it lies below
    256 / 2**20 (2.4e-4: residuals cancelling almost exactly, or about 1e10 calibrated
    rows), the value at sigma = 2.4e-4 is returned, a lower bound within 2.4e-4 of it.

    Not to be confused with: the authors' ``relplot.smECE`` (version 1.0.3) computes the
    same quantity on a grid of about 1,000 nodes with a 10-step bisection on sigma (its
    bandwidth is up to 2**-10 above the fixed point).  At the same bandwidth it agrees with
    this function to 0.5% on data away from 0 and 1; but its mirror extension counts the
    mass on the end nodes once instead of twice, so scores within one grid step (1e-3) of
    0 or 1 are half weighted: on wideresnet-16-4-cifar-10, where 70% of the confidences
    exceed 0.999, relplot gives 0.0757 and this function 0.0537 (the exact value: every
    smoothed residual is negative there, so it is the mean of confidence minus accuracy).
    The *smooth calibration error* smCE of Blasiok et al. 2023 (a supremum over Lipschitz
    functions) and the kernel measures ``MMCE`` / ``SKCE`` are different quantities.

    Parameters
    ----------
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``: the measure
        uses each row's largest entry against whether its class (the first one on ties) is
        the label.  Or ``Scores(s)``: one score per row against 0/1 ``labels``.  A plain
        1-D array is refused as ambiguous: pass ``Scores(p)``, or
        ``np.column_stack([1 - p, p])`` for a binary classifier.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    bandwidth : float, optional
        The kernel's standard deviation sigma > 0.  ``None`` (default): the fixed point.
    logits : bool, default False
        ``prob`` holds logits (log-odds with ``Scores``); the softmax is applied first.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights: each row's residual mass is multiplied by its weight
        (integer weights give the value of duplicated rows).
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names, looked up
        among them (the rule of :func:`~calibration_toolbox.ECE`).

    Returns
    -------
    float
        The smooth ECE, in [0, 1].

    {references}

    Examples
    --------
    >>> from calibration_toolbox import Scores, SmoothECE

    Every residual has the same sign, so smoothing cannot cancel any of it: the value is
    the mean residual 0.6 at any bandwidth.  Two residuals +0.6 and -0.6 at 0.4 and 0.6
    cancel in part: :math:`0.6\,\mathrm{erf}(0.1 / (\sigma \sqrt 2))` far from the ends.
    Top label: residuals +0.1, -0.8 and -0.7 (the fixed point is wide enough that the
    smoothed residual is negative everywhere, so the value is 1.4 / 3).

    >>> round(SmoothECE(Scores([0.2, 0.6]), [1, 1]), 12)
    0.6
    >>> round(SmoothECE(Scores([0.4, 0.6]), [1, 0], bandwidth=0.05), 6)
    0.5727
    >>> round(SmoothECE([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3]], [0, 0, 1]), 6)
    0.466667
    """
    pairs = _checked_pairs(prob, labels, logits, sample_weight, renormalize, bandwidth)
    scores, targets, weights, bandwidth = pairs
    if bandwidth is None:
        return _fixed_point(scores, targets, weights)[1]
    intervals = _grid_for(bandwidth)
    return _residual_spectrum(scores, targets, weights, intervals + 1).error(bandwidth)


#: ``alpha`` of the band: a number strictly between 0 and 1.
_check_alpha = iv.number_between(0.0, 1.0)

#: Intervals of the grid the curve is given on: every stage grid's nodes include these.
CURVE_INTERVALS = 1 << 10

#: Below this share of the largest density the curve is undefined (NaN): the ratio of two
#: smoothed sums that small loses digits to the DCT's rounding (about 1e-16 of the peak).
#: Measured: curves of weightings equal up to rounding differ by 4e-13 relative above it,
#: by 7e-8 above 1e-9 of the peak (tests/test_hostile_numbers.py holds 1e-12).
_DENSITY_FLOOR = 1e-4


@dataclass(frozen=True)
class SmoothReliabilityCurve:
    r"""The kernel-smoothed reliability curve that :func:`SmoothECE` integrates.

    On the grid :math:`t_j = j / 1024`, with :math:`\hat\delta_\sigma` and
    :math:`\hat r_\sigma` of :func:`SmoothECE`:
    ``accuracy`` :math:`= t + \hat r_\sigma(t)`, ``residual`` :math:`= \hat r_\sigma(t)`,
    ``density`` :math:`= \hat\delta_\sigma(t)`, so that
    :math:`\int_0^1 |\mathrm{accuracy}(t) - t|\, \mathrm{density}(t)\, dt` is ``value``.

    Attributes
    ----------
    grid : ndarray, shape (1025,)
        The scores :math:`t_j` the curve is evaluated at.
    accuracy : ndarray, shape (1025,)
        The smoothed accuracy (mean target) :math:`t + \hat r_\sigma(t)`, which may leave
        [0, 1] where the scores near t all lie on one side of it (the residual of a score
        is carried to t: relplot's centred fit does the same); NaN where the
        density is below 1e-4 of its largest value (scarcely any score within reach of
        the kernel: the ratio of the two smoothed sums would lose its digits there).
    residual : ndarray, shape (1025,)
        :math:`\hat r_\sigma(t)`, the Nadaraya-Watson smoothing of ``target - score``
        (NaN where ``accuracy`` is).
    density : ndarray, shape (1025,)
        :math:`\hat\delta_\sigma(t)`, the reflected-kernel density of the scores
        (integrates to 1 over [0, 1]).
    bandwidth : float
        The kernel's sigma (the fixed point of :func:`SmoothECE` unless given).
    value : float
        ``SmoothECE`` at ``bandwidth``.
    low, high : ndarray, shape (1025,), or None
        The pointwise percentile bootstrap band of ``accuracy`` (``n_resamples`` resamples
        of the rows, the bandwidth held fixed); None when ``n_resamples=0``.
    confidence_level : float
        The band's level, ``1 - alpha``.
    """

    def __eq__(self, other: object) -> bool:
        """Equal fields, arrays compared element by element (NaN equal to NaN)."""
        if not isinstance(other, SmoothReliabilityCurve):
            return NotImplemented
        return all(
            np.array_equal(mine, theirs, equal_nan=True)
            if isinstance(mine, np.ndarray)
            else mine == theirs
            for mine, theirs in zip(
                dataclasses.astuple(self), dataclasses.astuple(other), strict=True
            )
        )

    __hash__ = None

    grid: NDArray
    accuracy: NDArray
    residual: NDArray
    density: NDArray
    bandwidth: float
    value: float
    low: NDArray | None
    high: NDArray | None
    confidence_level: float


class _CurveGrid:
    """The linear binning of the pairs on one stage grid, kept for every row resampling.

    The four per-row parts (the weight and the weighted residual, each split between the
    two nodes around the score) are computed once; a resample multiplies them by its
    counts and sums them per node (four ``bincount``), and the node totals are normalised
    by their sum (the resample's weight) on the grid rather than row by row: one
    resample of 1,000,000 rows takes about 25 ms, where weighting the rows first took 43
    (and multiplying by the integer counts, cast anew for each part, 60).
    """

    def __init__(self, scores: NDArray, targets: NDArray, weights: NDArray, bandwidth: float):
        self.intervals = _grid_for(bandwidth)
        self.n_nodes = self.intervals + 1
        self.left, fraction = _linear_bins(scores, self.intervals)
        density = _split(fraction, weights)
        residuals = targets - scores.astype(np.float64)
        self.parts = (*density, *(part * residuals for part in density))
        self._buffers = [np.empty_like(part) for part in self.parts]
        self.bandwidth = bandwidth
        self.step = self.intervals // CURVE_INTERVALS

    def curve(self, counts: NDArray | None = None) -> tuple[NDArray, NDArray]:
        """The smoothed residual and the density on the curve's grid (rows ``counts`` times)."""
        if counts is None:
            parts = self.parts
        else:  # into buffers kept between resamples (a float64 product: no int cast per part)
            counts = counts.astype(np.float64)
            parts = [
                np.multiply(part, counts, out=out)
                for part, out in zip(self.parts, self._buffers, strict=True)
            ]
        density = _node_masses(self.left, parts[0], parts[1], self.n_nodes)
        residual = _node_masses(self.left, parts[2], parts[3], self.n_nodes)
        total = density.sum() - 0.5 * (density[0] + density[-1])  # the ends are doubled
        residual, density = (
            _Spectrum(nodes / total).smoothed(self.bandwidth, self.step)
            for nodes in (residual, density)
        )
        defined = density > _DENSITY_FLOOR * density.max()
        ratio = np.full_like(density, np.nan)
        np.divide(residual, density, out=ratio, where=defined)
        return ratio, density


def _band(curves: _CurveGrid, n: int, rng, n_resamples: int, alpha: float):
    """Pointwise percentile band of the accuracy over ``n_resamples`` resamples of n rows."""
    grid = np.linspace(0.0, 1.0, CURVE_INTERVALS + 1)
    resampled = np.empty((n_resamples, CURVE_INTERVALS + 1))
    for index in range(n_resamples):  # one resample at a time: memory O(N + grid)
        counts = np.bincount(rng.integers(0, n, size=n), minlength=n)
        resampled[index] = curves.curve(counts)[0]
    resampled += grid
    # A grid point that a resample leaves undefined (NaN) is left out of its percentiles;
    # where every resample leaves it undefined, so is the band.
    levels = [alpha / 2, 1 - alpha / 2]
    undefined = np.isnan(resampled)
    complete = ~undefined.any(axis=0)
    partial = ~complete & ~undefined.all(axis=0)
    low = np.full(grid.shape, np.nan)
    high = np.full(grid.shape, np.nan)
    # np.nanquantile loops in Python over the columns of an array with a NaN (0.23 s for
    # 100 resamples of the 1025 points, 2-4x np.sort of 1,000,000 scores): only the
    # columns with a NaN take it, the others np.quantile (the same values).
    low[complete], high[complete] = np.quantile(resampled[:, complete], levels, axis=0)
    if partial.any():
        low[partial], high[partial] = np.nanquantile(resampled[:, partial], levels, axis=0)
    return low, high


@_registry.metric("smooth_reliability_curve")
@iv.accepts_classes
@_REFERENCES
def smooth_reliability_curve(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    bandwidth: float | None = None,
    n_resamples: int = 0,
    alpha: float = 0.05,
    random_state: int | np.random.Generator | None = None,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> SmoothReliabilityCurve:
    r"""The smooth reliability curve of Blasiok & Nakkiran (2024), with a bootstrap band.

    The curve :func:`SmoothECE` integrates, as data: on the pairs (confidence
    :math:`f_i`, correct :math:`y_i`) with weights :math:`w_i`, the reflected Gaussian
    kernel :math:`K_\sigma` of :func:`SmoothECE` gives the density of the scores and the
    smoothed residual,

    .. math::

        \hat\delta_\sigma(t) = \sum_i \frac{w_i}{W} K_\sigma(t, f_i), \qquad
        \hat r_\sigma(t) = \frac{\sum_i w_i K_\sigma(t, f_i) (y_i - f_i)}
        {\sum_i w_i K_\sigma(t, f_i)},

    and the curve is the smoothed accuracy :math:`t + \hat r_\sigma(t)`, so that
    :math:`\mathrm{smECE}_\sigma = \int_0^1 |\hat r_\sigma(t)| \hat\delta_\sigma(t)\, dt`
    is the gap to the diagonal weighted by the density.  Same grid, same linear binning,
    same DCT smoothing and same fixed-point bandwidth as :func:`SmoothECE` (one code);
    the curve is given at the 1025 nodes :math:`j / 1024` of that grid (exact there, no
    interpolation).

    The band: ``n_resamples`` bootstrap resamples of the rows (N rows drawn with
    replacement by ``random_state``, each keeping its weight), each smoothed at the same
    bandwidth; at each grid point, the ``alpha / 2`` and ``1 - alpha / 2`` percentiles of
    the resampled accuracies (a pointwise band, as relplot's diagram draws).

    Not to be confused with: relplot 1.0.3's ``prepare_rel_diagram`` draws the
    Nadaraya-Watson smoothing of :math:`y` itself, :math:`\sum K y / \sum K`, which
    differs from :math:`t + \hat r_\sigma(t)` by :math:`t - \sum K f / \sum K` (largest
    near 0 and 1, where the kernel's mass is one-sided), and the mean of its bootstrap
    curves rather than the curve of the data; its residual smoothing (the one its
    ``smECE`` integrates) is :math:`-\hat r_\sigma`, on a grid of about 1,000 nodes.

    Parameters
    ----------
    prob : array-like, shape (N, K), or Scores
        As in :func:`SmoothECE`: the top label of probabilities (logits with
        ``logits=True``), or ``Scores(s)`` against 0/1 ``labels``.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    bandwidth : float, optional
        The kernel's sigma > 0.  ``None`` (default): the fixed point of :func:`SmoothECE`.
    n_resamples : int, default 0
        Bootstrap resamples of the band (0: no band).
    alpha : float, default 0.05
        One minus the band's level, in (0, 1).
    random_state : None, int or numpy.random.Generator
        Seed of the resampling.
    logits : bool, default False
        ``prob`` holds logits (log-odds with ``Scores``); the softmax is applied first.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights, as in :func:`SmoothECE` (integer weights give the curve of
        duplicated rows; a row of weight 0 is absent, also from the resamples).
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names.

    Returns
    -------
    SmoothReliabilityCurve
        ``grid``, ``accuracy``, ``residual``, ``density``, ``bandwidth``, ``value``,
        ``low``, ``high`` and ``confidence_level``.

    {references}

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import Scores, SmoothECE, smooth_reliability_curve
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.uniform(0.5, 1.0, 2000)
    >>> correct = rng.random(2000) < scores - 0.1  # over-confident by 0.1
    >>> curve = smooth_reliability_curve(Scores(scores), correct, n_resamples=50, random_state=0)
    >>> curve.value == SmoothECE(Scores(scores), correct)
    True
    >>> round(curve.bandwidth, 6) == round(curve.value, 6)  # the fixed point
    True
    >>> i = 768  # t = 0.75
    >>> float(curve.grid[i]), bool(curve.low[i] < curve.accuracy[i] < curve.high[i])
    (0.75, True)
    >>> round(float(curve.accuracy[i]), 3)
    0.655
    """
    pairs = _checked_pairs(prob, labels, logits, sample_weight, renormalize, bandwidth)
    scores, targets, weights, bandwidth = pairs
    n_resamples = iv.integer_at_least(0)(n_resamples, "n_resamples")
    alpha = _check_alpha(alpha, "alpha")
    rng = iv.check_random_state(random_state)
    if bandwidth is None:
        bandwidth, value = _fixed_point(scores, targets, weights)
    else:
        value = _residual_spectrum(scores, targets, weights, _grid_for(bandwidth) + 1).error(
            bandwidth
        )
    weights = np.ones(len(scores)) if weights is None else weights
    curves = _CurveGrid(scores, targets, weights, bandwidth)
    residual, density = curves.curve()
    grid = np.linspace(0.0, 1.0, CURVE_INTERVALS + 1)
    low = high = None
    if n_resamples:
        low, high = _band(curves, len(weights), rng, n_resamples, alpha)
    return SmoothReliabilityCurve(
        grid=grid,
        accuracy=grid + residual,
        residual=residual,
        density=density,
        bandwidth=float(bandwidth),
        value=float(value),
        low=low,
        high=high,
        confidence_level=1.0 - alpha,
    )
