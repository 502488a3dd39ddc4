"""Temperature scaling (Guo et al. 2017)."""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any, ClassVar, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _arrays, _dask, _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, Text
from calibration_toolbox._rows import COLUMN_LOOP_MAX_K, block_rows, row_blocks
from calibration_toolbox._warnings import warn
from calibration_toolbox.recalibration._base import (
    COEFFICIENT_LIMIT,
    N_CLASSES_FIELD,
    Checker,
    Field,
    Recalibrator,
    integer_field,
    number_field,
    short_list,
)
from calibration_toolbox.recalibration._sources import (
    block_opener,
    checked_blocks,
    checked_label_blocks,
    checked_part,
)

__all__ = ["TEMPERATURE_BOUNDS", "TEMPERATURE_FIELD", "TemperatureScaling", "fitted_objective"]

#: A fitted ``temperature_``: ``1 / T`` multiplies the logits, a slope bounded as every
#: fitted coefficient is (:data:`COEFFICIENT_LIMIT`).  A file with a denormal ``T`` (5e-324)
#: made ``z / T`` infinite and every prediction NaN.
TEMPERATURE_FIELD = number_field(1 / COEFFICIENT_LIMIT, COEFFICIENT_LIMIT)


def _one_per_label(name: str, state: dict) -> Text | None:
    """Schema rule: an array ``temperature_`` (multi-label) holds one float per label."""
    value = state[name]
    if not isinstance(value, np.ndarray):
        return None
    if value.dtype == np.float64 and value.shape == (state["n_classes_"],):
        return None
    return Text(
        "{argument} must be a number, or a float array of one temperature per label "
        "(shape ({n_labels},)); got dtype {dtype} and shape {shape}.",
        argument=name,
        fields={"n_labels": state["n_classes_"], "dtype": str(value.dtype), "shape": value.shape},
    )


# ``temperature_``: one number, or (multi-label) one per label, each as TEMPERATURE_FIELD.
_TEMPERATURES_FIELD = Field(
    "any",
    f"{TEMPERATURE_FIELD.requirement}, or an array of such numbers (one per label)",
    TEMPERATURE_FIELD.low,
    TEMPERATURE_FIELD.high,
    rule=_one_per_label,
)


def _bounds_hold(low: float, high: float) -> bool:
    return 0 < low <= 1 <= high < math.inf


#: Checker of ``temperature_bounds``: a pair ``(low, high)`` with ``0 < low <= 1 <= high < inf``.
TEMPERATURE_BOUNDS = iv.number_pair("0 < low <= 1 <= high < inf", _bounds_hold)

# The warm start (see `_warm_start`) fits every s-th row first, s a power of two up to 16
# that leaves at least this many rows, itself from a warm start on every s-th of those
# rows, and so on; it is solved to a relative accuracy of about _WARM_START_ACCURACY (its
# optimum differs from the full one by about 1/sqrt(rows) anyway).  1M x 10 float32 logits
# with true temperatures 0.5, 1, 2, 4: 3-9 passes over every row before (trust-exact from
# beta = 1), 2-3 with the warm start.
_WARM_START_ROWS = 1024
_WARM_START_ACCURACY = 1e-8
# Relative accuracy of the fitted beta (see `_root`).
_ACCURACY = 1e-15
_MAX_PASSES = 100
# Upper end of the search for an optimum beyond the lower bound of T (for the warning).
_LARGEST_BETA = 1e300


class _Objective:
    """The mean NLL of ``softmax(beta z)`` and its derivatives from weighted sums over rows.

    A subclass says how one pass gets the sums (``_sums``: the six numbers of
    :meth:`_TemperatureNLL.sums` and the total weight): over an array, over the blocks of
    a source, over the chunks of a Dask array.  Calls are cached per ``beta``; ``passes``
    counts the passes made, ``ranked_below`` and ``spread`` are known after the first.
    """

    def __init__(self):
        self.passes = 0
        self.ranked_below: bool | None = None  # known after the first pass
        self.spread: bool | None = None
        self._cache: dict[float, Derivatives] = {}

    def _sums(self, beta: float) -> tuple[NDArray, float]:
        raise NotImplementedError

    def __call__(self, beta: float) -> Derivatives:
        """The loss and its derivatives at ``beta >= 0`` (one pass, cached per ``beta``)."""
        if beta in self._cache:
            return self._cache[beta]
        self.passes += 1
        sums, total_weight = self._sums(beta)
        self.ranked_below = bool(sums[4] > 0)
        self.spread = bool(sums[5] > 0)
        values = Derivatives(*(sums[:4] / total_weight))
        self._cache[beta] = values
        return values

    def loss_at(self, beta: float) -> float:
        """The loss at ``beta``: from a cached pass within 1e-4 of it, else one more pass.

        Within ``|s| <= 1e-4 beta`` of a cached ``b``, the Taylor series of the loss to
        its third derivative (the cached four numbers) leaves a remainder of order
        ``s^4`` (1e-16 of the loss), so the fitted ``beta``, one last step from the pass
        before it (the steps of ``_root`` end below 1e-5 of ``beta``), costs no pass.
        """
        if self._cache:
            near = min(self._cache, key=lambda cached: abs(cached - beta))
            step = beta - near
            if abs(step) <= 1e-4 * beta:
                d = self._cache[near]
                return d.loss + step * (d.slope + step * (d.curvature / 2 + step * d.skew / 6))
        return self(beta).loss


class _TemperatureNLL(_Objective):
    r"""Weighted mean NLL of ``softmax(beta * z)``, ``beta >= 0``, and three derivatives.

    With the row maximum ``c`` as a per-row shift (so that ``beta * (z - c) <= 0`` never
    overflows), ``d = z - c`` and ``m = c - z_label``, the loss of a row is ``log sum_k
    exp(beta d_k) + beta m``; its derivatives are ``E[d] + m``, ``Var[d] >= 0`` and the
    third central moment of ``d`` under ``softmax(beta z)``: the loss is convex in
    ``beta``.  Each pass also records whether some row of positive weight ranks its label
    below another class (``ranked_below``; if none does, the loss decreases towards
    ``beta -> inf``).  Each row's margin is added to its own terms before the rows are
    summed: near the optimum ``E[d] + m`` is a small
    difference of two terms of order 1, and summing the two over all rows separately first
    left ``f'`` with a rounding error larger than the root finder's tolerance (a 1M x 10
    fit on logits that carry no information then failed to converge).  The third
    derivative (Halley's steps) costs one more product and sum per entry: about 10% of a
    pass (1M x 10, fastest of 15 on a loaded machine: 86 -> 98 ms, 123 -> 135 ms), for
    a pass fewer: 1M x 10 at T = 0.5, 1, 2, 4 and the DenseNet CIFAR-100 set take
    2, 2, 2, 2, 3 passes with Halley's steps, 3, 3, 3, 3, 4 with Newton's.

    Each pass goes through the logits in float64 row blocks, recomputing each block's
    shift while it is in cache, and adds the block's weighted sums: the working memory is
    two block-sized buffers whatever N (a pass used to keep five N-sized float64 arrays:
    63 MiB, 1.7x the bytes of 1M x 10 float32 logits, now 0 beyond the blocks).  Recomputing
    the shift per pass costs about 13% at K = 100 (100k x 100: 350 -> 400 ms); at K = 10 the
    fit got faster (1M x 10: 347 -> 263 ms; weighted 2x faster), at K = 1,000 the same.
    """

    def __init__(self, logits: NDArray, labels: NDArray, weights: NDArray | None):
        super().__init__()
        self.logits = logits
        self.labels = labels
        self.weights = weights
        self.total_weight = float(len(labels) if weights is None else weights.sum())
        n_samples, n_classes = logits.shape
        # For small K a block is processed transposed, (K, rows), so that the sums over the
        # classes are contiguous reductions; two float64 buffers serve every block.
        self.class_axis = 0 if n_classes <= COLUMN_LOOP_MAX_K else 1
        rows_per_block = min(n_samples, block_rows(n_classes))
        shape = (n_classes, rows_per_block)
        self._d = np.empty(shape if self.class_axis == 0 else shape[::-1])
        self._e = np.empty_like(self._d)
        self._within_block = np.arange(rows_per_block)

    def _shifted(self, rows: slice) -> tuple[NDArray, NDArray]:
        """``d = z - c`` of a row block (a view of a float64 buffer) and the shift ``c``."""
        width = rows.stop - rows.start
        if self.class_axis == 0:
            d = self._d[:, :width]
            d[...] = self.logits[rows].T
            shift = np.maximum.reduce(d, axis=0)
            d -= shift
        else:
            d = self._d[:width]
            d[...] = self.logits[rows]
            shift = np.maximum.reduce(d, axis=1)
            d -= shift[:, None]
        return d, shift

    def _sum(self, values: NDArray, rows: slice) -> NDArray:
        """Weighted sums over a block's rows of each row of ``values`` (shape (terms, rows))."""
        if self.weights is None:
            return np.add.reduce(values, axis=1)
        return values @ self.weights[rows]

    def _margins(self, rows: slice, shift: NDArray) -> NDArray:
        """``m = c - z_label`` of a block's rows."""
        width = rows.stop - rows.start
        label_logits = self.logits[rows][self._within_block[:width], self.labels[rows]]
        return shift - label_logits

    def sums(self, beta: float) -> NDArray:
        """The weighted sums over the rows of the loss and its derivatives at ``beta``.

        Six numbers: the four sums of :class:`Derivatives` (not yet divided by the total
        weight), then 1.0 if a row of positive weight ranks its label below another
        class, else 0.0, and 1.0 if a row of positive weight has two different logits
        (is not tied), else 0.0 (so that the sums of row blocks or chunks add).
        """
        sums = np.zeros(4)
        flags = np.zeros(2)
        terms = np.empty((4, self._d.shape[1 - self.class_axis]))
        for rows in row_blocks(*self.logits.shape):
            d, shift = self._shifted(rows)
            e = self._e[: d.shape[0], : d.shape[1]]
            np.multiply(d, beta, out=e)
            np.exp(e, out=e)
            s0 = np.add.reduce(e, axis=self.class_axis)
            moments = []
            for _ in range(3):  # sum_k e d**j, j = 1, 2, 3
                e *= d
                moments.append(np.add.reduce(e, axis=self.class_axis) / s0)
            mean_d, second, third = moments
            loss, slope, curvature, skew = terms[:, : len(s0)]
            np.log(s0, out=loss)
            # Cumulants of d under softmax(beta z): the derivatives of log sum_k exp(beta d_k).
            np.subtract(second, mean_d**2, out=curvature)
            np.subtract(third, mean_d * (3 * second - 2 * mean_d**2), out=skew)
            margins = self._margins(rows, shift)
            np.multiply(margins, beta, out=slope)
            loss += slope
            np.add(mean_d, margins, out=slope)
            sums += self._sum(terms[:, : len(s0)], rows)
            if not flags[0]:
                flags = np.maximum(flags, self._flags(rows, margins, d))
        return np.append(sums, flags)

    def _sums(self, beta: float) -> tuple[NDArray, float]:
        return self.sums(beta), self.total_weight

    def _flags(self, rows: slice, margins: NDArray, d: NDArray) -> NDArray:
        """Two flags (1.0 or 0.0) of a block's rows of positive weight: see :meth:`sums`.

        Whether one ranks its label below another class, and whether one has a logit below
        its maximum (is not tied).

        The second question, one more reduction over the block, is asked only while the
        first has no answer yet (a label ranked below another logit is not tied): on the
        usual calibration set it is answered in the first block.
        """
        positive = None if self.weights is None else self.weights[rows] > 0
        below = margins > 0
        if positive is not None:
            below &= positive
        if below.any():
            return np.ones(2)
        spread = np.minimum.reduce(d, axis=self.class_axis) < 0
        if positive is not None:
            spread &= positive
        return np.array([0.0, float(spread.any())])


class Derivatives(NamedTuple):
    """The mean NLL ``f`` of ``softmax(beta z)`` and its first three derivatives in ``beta``."""

    loss: float
    slope: float
    curvature: float
    skew: float


def _warm_start(logits: NDArray, labels: NDArray, weights: NDArray | None, low: float) -> float:
    """Where the passes over every row start: the optimal ``beta`` of every ``s``-th row.

    ``s`` is the largest power of two up to 16 that leaves at least ``_WARM_START_ROWS``
    rows; with fewer rows (or none of positive weight among them) the start is
    ``beta = 0``, whose first step is the closed-form ``-f'(0) / f''(0)`` (the mean margin
    of the labels over the mean variance of the logits across the classes).
    """
    stride = 1
    while stride < 16 and len(labels) // (2 * stride) >= _WARM_START_ROWS:
        stride *= 2
    rows = slice(None, None, stride)
    sub_weights = None if weights is None else weights[rows]
    if stride == 1 or (sub_weights is not None and not sub_weights.any()):
        return 0.0
    logits, labels = logits[rows], labels[rows]
    start = _warm_start(logits, labels, sub_weights, low)
    subsample = _TemperatureNLL(logits, labels, sub_weights)
    return _root(subsample, start, 0.0, 1 / low, _WARM_START_ACCURACY)[0]


def _start_from(logits: NDArray, labels: NDArray, weights: NDArray | None, low: float) -> float:
    """A warm start from part of the rows: their optimal ``beta``.

    The rows are a source's first block or a Dask array's first chunk, solved from their
    own warm start; 0 if they rank every label first (their optimum is then ``beta ->
    inf``, no start for the whole set).
    """
    objective = _TemperatureNLL(logits, labels, weights)
    start = _warm_start(logits, labels, weights, low)
    beta, _ = _root(objective, start, 0.0, 1 / low, _WARM_START_ACCURACY)
    return beta if objective.ranked_below else 0.0


class _BlockNLL(_Objective):
    """The objective of a fit on a block source: each pass is one pass over its blocks.

    Each block is checked as ``fit`` checks its arrays (see
    :func:`~calibration_toolbox.recalibration._sources.checked_blocks`), in every pass, and
    its sums (:meth:`_TemperatureNLL.sums`, in float64 row blocks) are added.  The first
    pass records the number of rows and classes; a later pass that sees other numbers is
    an error (a source that does not restart).
    """

    def __init__(self, open_blocks):
        super().__init__()
        self.open_blocks = open_blocks
        self.n_rows: int | None = None  # after the first pass
        self.n_classes: int | None = None

    def _sums(self, beta: float) -> tuple[NDArray, float]:
        sums, total_weight, n_rows, n_classes = np.zeros(6), 0.0, 0, None
        for block in checked_blocks(self.open_blocks):
            n_rows += len(block.labels)
            n_classes = block.logits.shape[1]
            if not block.skip:
                part = _TemperatureNLL(block.logits, block.labels, block.weights)
                sums += part.sums(beta)
                total_weight += part.total_weight
        self._check_rows(n_rows, n_classes)
        if not total_weight > 0:
            raise InputError(
                "{sample_weight} must have a positive sum; got all zeros.",
                argument="sample_weight",
            )
        return sums, total_weight

    def _check_rows(self, n_rows: int, n_classes: int | None) -> None:
        if n_rows == 0:
            raise InputError("{source} yielded no rows.", argument="source")
        if self.n_rows is None:
            self.n_rows, self.n_classes = n_rows, n_classes
        elif (n_rows, n_classes) != (self.n_rows, self.n_classes):
            raise InputError(
                "{source} yielded {n_rows} rows of {n_classes} classes in pass "
                "{passes}, but {first_rows} rows of {first_classes} classes in the "
                "first: it must yield the same blocks each time it is opened (a callable "
                "that returns a fresh iterator, not the same one again).",
                argument="source",
                n_rows=n_rows,
                n_classes=n_classes,
                passes=self.passes,
                first_rows=self.n_rows,
                first_classes=self.n_classes,
            )


def _block_start(open_blocks, low: float) -> float:
    """The warm start of a block fit: :func:`_start_from` the first block of positive weight."""
    blocks = checked_blocks(open_blocks)
    try:
        for block in blocks:
            if not block.skip:
                return _start_from(block.logits, block.labels, block.weights, low)
    finally:
        blocks.close()
    return 0.0


def _chunk_sums(beta: float, logits, labels, weights) -> tuple[NDArray, float]:
    """The sums of one Dask chunk at ``beta`` and its total weight (run in a worker)."""
    objective = _TemperatureNLL(*checked_part(logits, labels, weights))
    return objective.sums(beta), objective.total_weight


def _chunk_start(low: float, logits, labels, weights) -> float:
    """:func:`_start_from` one Dask chunk (run in a worker)."""
    logits, labels, weights = checked_part(logits, labels, weights)
    return _start_from(logits, labels, weights, low)


class _DaskNLL(_Objective):
    """The objective of a fit on Dask arrays: each pass is one tree reduction.

    The chunks' sums are computed in the workers; six floats and a weight travel per chunk.
    """

    def __init__(self, logits, labels, weights):
        super().__init__()
        self.logits, self.labels, self.weights = logits, labels, weights

    def _sums(self, beta: float) -> tuple[NDArray, float]:
        chunk = functools.partial(_chunk_sums, beta)
        return _dask.fit_sums(self.logits, self.labels, self.weights, chunk)


def _halley_step(derivatives: Derivatives) -> tuple[float, int]:
    """Halley's step towards the root of ``f'`` and its order of convergence (3).

    Newton's step (order 2) where Halley's correction is large; NaN where ``f''``
    vanishes.
    """
    slope, curvature, skew = derivatives.slope, derivatives.curvature, derivatives.skew
    if not curvature > 0:
        return math.nan, 2
    # Python floats: where the softmax is nearly one-hot (huge scores at the bound) the
    # curvature nearly vanishes and the correction may be inf (then Newton's step).
    newton = -float(slope) / float(curvature)
    correction = 1 + 0.5 * newton * float(skew) / float(curvature)
    if 0.5 <= correction <= 2:
        return newton / correction, 3
    return newton, 2


def _root(objective, start: float, lower: float, upper: float, accuracy: float):
    """Root of the increasing ``f'`` in ``[lower, upper]`` by safeguarded Halley steps.

    Returns ``(beta, side)``: ``side`` is 0 for a root inside, -1 if ``f'(lower) >= 0``
    (the root is at or below ``lower``), +1 if ``f'(upper) <= 0``.  ``f'`` is evaluated
    at a bound only when a step leads there.  A step that leaves the bracket known so far
    is replaced by bisection (geometric where both ends are positive).  The iteration
    stops after a step ``s`` of at most ``accuracy**(1 / order) * beta``: the relative
    error after a step of order 3 (Halley's) is about ``(s / beta)**3``, after one of
    order 2 (Newton's) ``(s / beta)**2``, so about ``accuracy``.  With a start within 1%
    of the root that takes two passes.
    """
    below, above = lower, upper  # the root lies in [below, above]
    known_below = known_above = False  # f' evaluated there?
    beta = min(max(start, lower), upper)
    for _ in range(_MAX_PASSES):
        derivatives = objective(beta)
        slope = derivatives.slope
        if slope == 0:
            return beta, 0
        if slope > 0:
            if beta <= lower:
                return lower, -1
            above, known_above = beta, True
        else:
            # f' < 0 everywhere when every label is ranked first.
            if beta >= upper or not objective.ranked_below:
                return upper, 1
            below, known_below = beta, True
        step, order = _halley_step(derivatives)
        if abs(step) <= accuracy ** (1 / order) * beta:
            return beta + step, 0
        beta = _safeguarded(beta + step, below, above, known_below, known_above)
    raise RuntimeError(f"temperature scaling did not converge in {_MAX_PASSES} passes.")


def _safeguarded(proposal: float, below, above, known_below: bool, known_above: bool) -> float:
    """``proposal`` if strictly inside the bracket, else the bracket's end it passes.

    The end only if ``f'`` was not evaluated there yet (a bound), else the bracket's
    midpoint.
    """
    if below < proposal < above:
        return proposal
    if proposal >= above and not known_above:
        return above
    if proposal <= below and not known_below:
        return below
    return math.sqrt(below * above) if below > 0 else 0.5 * (below + above)


def _fit_temperature(objective, start: float, low: float, high: float) -> float:
    """The fitted ``T`` in ``[low, high]`` (warning at a bound); see :class:`TemperatureScaling`.

    The passes start at ``beta = start`` (see :func:`_warm_start`).
    """
    beta, side = _root(objective, start, 1 / high, 1 / low, _ACCURACY)
    if not objective.spread:
        warn(
            Text(
                "the logits are tied within every calibration row, so every temperature gives "
                "the same uniform predictions and the same likelihood; T is left at 1. Check "
                "that {X:holds} the model's logits."
            )
        )
        return 1.0
    if not objective.ranked_below:
        warn(
            "the logits rank every calibration label first (the set is separated "
            "perfectly), so the likelihood keeps growing as T -> 0; T is set to its lower "
            f"bound {low:g}."
        )
        return low
    if side == 0:
        return 1 / beta
    # Outside the bounds (rare): the optimum itself, for the warning.
    if side < 0:
        beta, side = _root(objective, 1 / high, 0.0, 1 / high, _ACCURACY)
    else:
        beta, side = _root(objective, 1 / low, 1 / low, _LARGEST_BETA, _ACCURACY)
    if side < 0 or beta == 0:
        warn(
            "the likelihood is largest as T -> inf, where every prediction is uniform (the "
            "logits tell nothing about the labels, or rank them below the other classes); T "
            "is set to the upper bound "
            f"{high:g} of temperature_bounds ({low:g}, {high:g})."
        )
        return high
    bound = high if beta <= 1 / high else low
    warn(
        f"the optimal temperature {1 / beta:.3g} lies outside temperature_bounds "
        f"({low:g}, {high:g}); T is set to {bound:g}."
    )
    return bound


def fitted_objective(
    logits: NDArray, labels: NDArray, weights: NDArray | None, low: float, high: float
) -> tuple[float, _TemperatureNLL]:
    """The fitted ``T`` of checked arrays, and the objective it minimised.

    ``objective(beta).loss`` is the weighted mean NLL of ``softmax(beta * logits)``, one
    pass over the rows (cached per ``beta``: the fit's last ``beta`` costs nothing more), so
    that ``refinement_decomposition`` reads both of its log scores from the fit's own sums.
    """
    start = _warm_start(logits, labels, weights, low)
    objective = _TemperatureNLL(logits, labels, weights)
    return _fit_temperature(objective, start, low, high), objective


class TemperatureScaling(_dask.LazyPredictions, Recalibrator):
    r"""Temperature scaling (Guo et al. 2017): ``softmax(z / T)`` with one ``T > 0``.

    ``T`` minimises the (weighted) negative log-likelihood of the calibration labels.  The
    loss ``f`` is convex in ``beta = 1 / T``; ``beta`` is the root of ``f'``, found by
    Halley's method with the analytic first three derivatives in ``beta``, safeguarded by
    bisection of the bracket found so far, each evaluation costing one pass over the
    logits in float64 row blocks (bounded memory).  The passes start at the optimum of
    every ``s``-th row (``s`` a power of two up to 16 leaving at least 1,024 rows; found
    the same way from a subsample of those rows), within about ``1 / sqrt(N / s)`` of the
    full optimum, so that two or three passes over every row reach it to about ``1e-15``
    relative wherever it lies.  On fewer than 2,048 rows the passes start at ``beta =
    0``, whose first step is the closed-form estimate ``-f'(0) / f''(0)``.  If every
    calibration label is ranked first, the optimum is ``T -> 0`` (the fit stops after its
    first pass).  Dividing by ``T > 0`` never changes the argmax.

    Parameters
    ----------
    temperature_bounds : tuple of float, default (1e-4, 1e4)
        Range of ``T``.  When the optimum lies outside, ``T`` is set to the nearest bound
        with a ``UserWarning``: a calibration set that the logits separate perfectly has its
        optimum at ``T -> 0``, and logits that carry no information at ``T -> inf`` (``T``
        is then ``high``, whose predictions are all but uniform).  Logits tied within every
        row give the same uniform predictions and likelihood at every ``T``: ``T`` is left
        at 1, with a ``UserWarning`` that says so.

    multilabel : bool, default False
        Multi-label task: ``X`` holds one logit per label (N, K), ``y`` an (N, K) 0/1 label
        matrix (a 2-D ``y`` is read so only when this is True), and each label has its
        own ``T_k``, fitted as ``K`` independent binary fits of ``sigmoid(z_k / T_k)``
        (``recalibration.temperature.label_temperatures``); ``predict_proba`` gives the
        independent sigmoids, ``predict`` the 0/1 matrix ``p >= 1/2``, ``score`` the mean
        over the labels of the mean binary log-likelihood.  ``fit`` on NumPy arrays only,
        without ``classes``.

    classes : sequence of str (or of numbers), optional
        Names of the classes, in the column order of ``X``: ``y`` is then given as names
        (``fit``, ``score``), ``classes_`` holds these names and ``predict`` returns them.
        Saved with the fitted state.  Default: ``y`` holds column indices (as it does in
        ``fit_blocks`` and on Dask arrays).

    Attributes
    ----------
    temperature_ : float, or ndarray of shape (K,)
        Fitted temperature (one per label with ``multilabel=True``).
    n_classes_ : int
        Number of classes seen in ``fit``.
    n_passes_ : int
        Passes over all the calibration logits that the fit took (those of the warm start,
        over at most a sixteenth of the rows, are not counted).  With ``multilabel=True``:
        the two at the bounds and SciPy's Halley steps, each over all the labels, and each
        evaluation of a label left to brentq (a pass over that label's column).

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import softmax
    >>> from calibration_toolbox import TemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.integers(0, 3, 2000)
    >>> logits = 3.0 * (np.eye(3)[labels] + rng.normal(size=(2000, 3)))  # 3x overconfident
    >>> scaler = TemperatureScaling().fit(logits, labels)
    >>> round(scaler.temperature_, 2)
    3.08
    >>> probs = softmax(scaler(logits), axis=1)       # callable style
    >>> np.allclose(probs, scaler.predict_proba(logits))
    True
    """

    # A float, or (multilabel=True) a float64 array of one T per label: typed Any so that
    # code reading the usual float keeps its type.
    temperature_: Any

    _parameters: ClassVar[dict[str, Checker]] = {
        "temperature_bounds": TEMPERATURE_BOUNDS,
        "multilabel": iv.check_flag,
    }
    _fitted_schema: ClassVar[dict[str, Field]] = {
        "temperature_": _TEMPERATURES_FIELD,
        "n_classes_": N_CLASSES_FIELD,
        "n_passes_": integer_field(0),
    }

    def __init__(
        self,
        temperature_bounds: tuple[float, float] = (1e-4, 1e4),
        *,
        multilabel: bool = False,
        classes: ArrayLike | None = None,
    ):
        self.temperature_bounds = temperature_bounds
        self.multilabel = multilabel
        self.classes = classes

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> TemperatureScaling:
        """Fit ``T`` on calibration logits ``X`` (N, K) and labels ``y`` (N,)."""
        params = self._checked_params()
        low, high = params["temperature_bounds"]
        if params["multilabel"]:
            return self._fit_labels_matrix(X, y, sample_weight, low, high)
        if _arrays.is_dask_array(X):
            n_classes = _dask.row_chunked(X, "X")
            start = _dask.on_first_chunk(X, y, sample_weight, functools.partial(_chunk_start, low))
            objective = _DaskNLL(X, y, sample_weight)
            return self._fitted(
                _fit_temperature(objective, start, low, high), n_classes, objective
            )
        logits = self._fit_logits(X)
        labels = self._fit_labels(y, *logits.shape)
        weights = iv.check_sample_weight(sample_weight, len(logits), scale_free=True)
        temperature, objective = fitted_objective(logits, labels, weights, low, high)
        return self._fitted(temperature, logits.shape[1], objective)

    def _fit_labels_matrix(self, X, y, sample_weight, low: float, high: float):
        """``multilabel=True``: one ``T`` per label (:func:`label_temperatures`)."""
        if self.classes is not None:
            raise InputError(
                "{argument} is not supported with multilabel=True yet: pass no class names.",
                argument="classes",
            )
        if _arrays.is_dask_array(X):
            objective = _DaskLabelNLL(X, y, sample_weight)
            if objective.n_labels < 2:
                raise InputError(
                    "{X:has} one label: with multilabel=True give two labels or more (one "
                    "label is a binary task: TemperatureScaling on its logit).",
                    argument="X",
                )
            return self._fitted_labels(objective, low, high)
        checked = iv.check_multilabel(X, y, logits=True, names=("X", "y"), sigmoids=False)
        if checked.targets.shape[1] < 2:
            raise InputError(
                "{X:has} one label: with multilabel=True give two labels or more (one "
                "label is a binary task: TemperatureScaling on its logit, np.ravel(X)).",
                argument="X",
            )
        weights = iv.check_sample_weight(sample_weight, len(checked.targets), scale_free=True)
        return self._fitted_labels(
            _LabelNLL(checked.log_odds, checked.targets, weights), low, high
        )

    def _fitted_labels(self, objective, low: float, high: float) -> TemperatureScaling:
        """One ``T`` per label from ``objective`` (in memory, or over blocks), set on ``self``."""
        beta, at_bound = _label_betas(objective, 1 / high, 1 / low)
        temperatures = 1 / beta
        if at_bound.any():
            warn(
                Text(
                    "the optimum of label(s) {which} lies at or beyond the bounds "
                    "[{low:g}, {high:g}] of T (at T -> 0 for a label the logits separate, "
                    "at T -> inf for one they carry no information about); T is set to the "
                    "nearest bound there.",
                    fields={
                        "which": short_list(np.flatnonzero(at_bound).tolist()),
                        "low": low,
                        "high": high,
                    },
                )
            )
        self._class_names = None
        self.temperature_ = temperatures
        self.n_classes_ = len(temperatures)
        self.n_passes_ = objective.passes
        return self

    @property
    def _per_label(self) -> bool:
        return isinstance(getattr(self, "temperature_", None), np.ndarray)

    def predict_proba(self, X: ArrayLike) -> NDArray:
        """Calibrated probabilities (N, K): a softmax, or (multi-label) one sigmoid per label."""
        if self._per_label and not _arrays.is_dask_array(X):
            return _scipy.special.expit(self(X))
        return super().predict_proba(X)

    def predict(self, X: ArrayLike) -> NDArray:
        """The class of largest probability, or (multi-label) the 0/1 matrix ``p >= 1/2``."""
        if self._per_label and not _arrays.is_dask_array(X):
            return (self(X) >= 0).astype(np.uint8)
        return super().predict(X)

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """Mean log-likelihood; (multi-label) the mean over the labels of each label's."""
        if not self._per_label:
            return super().score(X, y, sample_weight)
        return label_log_likelihood(self(X), y, sample_weight)

    def fit_blocks(self, source: object) -> TemperatureScaling:
        """Fit ``T`` on calibration data read block by block from ``source``.

        For data larger than memory: every pass of the solver is one pass over the blocks,
        each block in float64 row blocks, so memory is that of one block.  ``source`` is
        a callable without arguments that returns a fresh iterator of blocks, e.g.
        ``lambda: iter_predictions(path, labels_path=labels)``, or a re-iterable
        collection of blocks (a list); a block is ``(logits, labels)`` or ``(logits,
        labels, sample_weight)``.  A one-shot iterator (a generator) is a ``TypeError``:
        its second pass would see no rows.  Each block is checked, in every pass, as
        :meth:`fit` checks its arguments (the same errors, prefixed with the block's rows
        in the whole source); a block whose weights are all 0 adds nothing.

        The fitted ``T`` is that of :meth:`fit` on the concatenated blocks (the same
        optimum; the sums are added block by block, so the two agree to about 1e-15
        relative).  The passes start at the optimum of the first block of positive
        weight (found by a few passes over that block only), so their number depends on
        how much that block resembles the rest: usually 2 to 4, as in :meth:`fit`; a
        first block unlike the rest (a file sorted by label, say) may take a few more.
        ``n_passes_`` counts the passes over every block.

        With ``multilabel=True`` a block is ``(logits, labels[, sample_weight])`` of (N, K)
        per-label logits and an (N, K) 0/1 label matrix, every block with the labels of the
        first: one ``T`` per label as :meth:`fit` finds them (the bounds pass, then SciPy's
        Halley over the labels, brentq on one label's column where it does not settle),
        each pass one pass over the blocks; the temperatures are those of :meth:`fit` on the
        concatenated blocks to rounding (the same passes, the sums added block by block).
        """
        params = self._checked_params()
        low, high = params["temperature_bounds"]
        open_blocks = block_opener(source)
        if params["multilabel"]:
            objective = _BlockLabelNLL(open_blocks)
            if objective.n_labels < 2:
                raise InputError(
                    "{X:has} one label: with multilabel=True give two labels or more (one "
                    "label is a binary task: TemperatureScaling on its logit).",
                    argument="X",
                )
            return self._fitted_labels(objective, low, high)
        start = _block_start(open_blocks, low)
        objective = _BlockNLL(open_blocks)
        temperature = _fit_temperature(objective, start, low, high)
        return self._fitted(temperature, objective.n_classes, objective)

    def _fitted(self, temperature: float, n_classes: int, objective) -> TemperatureScaling:
        if not isinstance(objective, _TemperatureNLL):
            self._class_names = None  # blocks and chunks hold column indices
        self.temperature_ = float(temperature)
        self.n_classes_ = int(n_classes)
        self.n_passes_ = int(objective.passes)
        return self

    def _calibrated_logits(self, X: ArrayLike) -> NDArray:
        if self._per_label:
            logits = iv.check_label_scores(X, self.n_classes_, logits=True)
            return logits / self.temperature_.astype(logits.dtype)
        logits = iv.check_logits(X, "X")
        self._check_n_classes(logits.shape[1])
        return logits / logits.dtype.type(self.temperature_)


def label_log_likelihood(
    calibrated_logits: NDArray, y: ArrayLike, sample_weight: ArrayLike | None
) -> float:
    """A per-label recalibrator's ``score``, from its calibrated logits (N, K).

    The mean over the labels of each label's weighted mean binary log-likelihood of
    ``sigmoid(calibrated_logits)`` against the 0/1 matrix ``y``, in float64 row blocks as the
    fit's passes.
    """
    checked = iv.check_multilabel(
        calibrated_logits, y, logits=True, names=("X", "y"), sigmoids=False
    )
    weights = iv.check_sample_weight(sample_weight, len(checked.targets), scale_free=True)
    ones = np.ones(checked.targets.shape[1])
    loss = _LabelNLL(checked.log_odds, checked.targets, weights).sums(ones, loss=True)[0]
    return -float(loss.mean())


class _LabelNLL:
    r"""Per label, the weighted mean binary NLL of ``sigmoid(beta_k z_ik)`` and its derivatives.

    The loss of label ``k`` is the weighted mean over the rows of ``softplus(beta_k z) - y
    beta_k z``, convex in ``beta_k``; its derivatives in ``beta_k`` are the means of
    ``(s - y) z``, ``s (1 - s) z^2`` and ``s (1 - s) (1 - 2 s) z^3`` with ``s =
    sigmoid(beta_k z)``.  Each pass goes through the (N, K) logits in float64 row blocks
    (three block-sized buffers, whatever N), as :class:`_TemperatureNLL` does, and counts
    itself in ``passes``; :meth:`derivatives` keeps the last pass (SciPy's Newton asks for
    the value, the derivative and the second derivative at one point, one call each).
    """

    def __init__(self, log_odds: NDArray, targets: NDArray, weights: NDArray | None):
        self.log_odds = log_odds
        self.targets = targets
        self.weights = weights
        n_samples, n_labels = log_odds.shape
        self.total_weight = float(n_samples if weights is None else weights.sum())
        self.passes = 0
        self._buffers = np.empty((3, min(n_samples, block_rows(n_labels)), n_labels))
        self._last: tuple[bytes, NDArray] | None = None

    def _sum(self, values: NDArray, rows: slice) -> NDArray:
        if self.weights is None:
            return np.add.reduce(values, axis=0)
        return self.weights[rows] @ values

    def sums(self, beta: NDArray, *, loss: bool = False) -> NDArray:
        """Shape (4, K): the means of the loss (0 unless ``loss``), slope, curvature, skew."""
        self.passes += 1
        means = np.zeros((4, self.log_odds.shape[1]))
        for rows in row_blocks(*self.log_odds.shape):
            z, s, t = (buffer[: rows.stop - rows.start] for buffer in self._buffers)
            z[...] = self.log_odds[rows]
            y = self.targets[rows]
            np.multiply(z, beta, out=s)
            if loss:
                np.multiply(s, y, out=t)
                np.logaddexp(0.0, s, out=s)
                s -= t
                means[0] += self._sum(s, rows)
                np.multiply(z, beta, out=s)
            p = _scipy.special.expit(s, out=s)
            np.subtract(p, y, out=t)
            t *= z
            means[1] += self._sum(t, rows)
            np.subtract(1.0, p, out=t)
            t *= p
            t *= z
            t *= z
            means[2] += self._sum(t, rows)
            p *= -2.0
            p += 1.0
            p *= z
            p *= t
            means[3] += self._sum(p, rows)
        return means / self.total_weight

    @property
    def n_labels(self) -> int:
        return self.log_odds.shape[1]

    def column(self, label: int) -> _LabelNLL:
        """The objective of label ``label`` alone (its own passes)."""
        return _LabelNLL(self.log_odds[:, [label]], self.targets[:, [label]], self.weights)

    def derivatives(self, beta: NDArray) -> NDArray:
        """:meth:`sums` without the loss; the last pass reused at the same ``beta``."""
        key = beta.tobytes()
        if self._last is None or self._last[0] != key:
            self._last = (key, self.sums(beta))
        return self._last[1]


class _BlockLabelNLL:
    """:class:`_LabelNLL` over the blocks of a source: every pass one pass over the blocks.

    Each block is checked in every pass (:func:`checked_label_blocks`); its weighted sums
    (its means times its total weight) are added, then divided by the total weight of all
    the blocks, so the means are those of the concatenated rows to rounding.  ``columns``:
    the labels kept (None: all), for one label's own root.
    """

    def __init__(self, open_blocks, columns: list[int] | None = None):
        self.open_blocks = open_blocks
        self.columns = columns
        self.passes = 0
        self._last: tuple[bytes, NDArray] | None = None
        first = next(checked_label_blocks(open_blocks), None)
        if first is None:
            raise InputError("{source} yielded no rows.", argument="source")
        self._n_labels = first.labels.shape[1] if columns is None else len(columns)

    @property
    def n_labels(self) -> int:
        return self._n_labels

    def column(self, label: int) -> _BlockLabelNLL:
        """The objective of label ``label`` alone (its own passes over the blocks)."""
        return _BlockLabelNLL(self.open_blocks, [label])

    def sums(self, beta: NDArray, *, loss: bool = False) -> NDArray:
        """Shape (4, K): :meth:`_LabelNLL.sums` of the concatenated blocks."""
        self.passes += 1
        total, weight = np.zeros((4, self.n_labels)), 0.0
        for block in checked_label_blocks(self.open_blocks):
            if block.skip:
                continue
            log_odds, targets = block.logits, block.labels
            if self.columns is not None:
                log_odds, targets = log_odds[:, self.columns], targets[:, self.columns]
            part = _LabelNLL(log_odds, targets, block.weights)
            total += part.sums(beta, loss=loss) * part.total_weight
            weight += part.total_weight
        if weight == 0:
            raise InputError(
                "{sample_weight} must have a positive sum; got all zeros.",
                argument="sample_weight",
            )
        return total / weight

    derivatives = _LabelNLL.derivatives


def _label_chunk_sums(beta: NDArray, columns, loss: bool, logits, labels, weights):
    """One Dask chunk's weighted sums of :meth:`_LabelNLL.sums` and its weight (in a worker).

    The chunk is checked as ``fit(multilabel=True)`` checks its arguments.
    """
    checked = iv.check_multilabel(logits, labels, logits=True, names=("X", "y"), sigmoids=False)
    log_odds, targets = checked.log_odds, checked.targets
    if columns is not None:
        log_odds, targets = log_odds[:, columns], targets[:, columns]
    part = _LabelNLL(log_odds, targets, iv.check_sample_weight(weights, len(targets)))
    return part.sums(beta, loss=loss) * part.total_weight, part.total_weight


class _DaskLabelNLL:
    """:class:`_LabelNLL` over Dask arrays chunked along rows: each pass one tree reduction.

    Each chunk's sums are computed in the workers (:func:`_label_chunk_sums`); 4 x K floats
    and a weight travel per chunk.  ``columns``: the labels kept (None: all).
    """

    def __init__(self, logits, labels, weights, columns: list[int] | None = None):
        self.logits, self.labels, self.weights = logits, labels, weights
        self.columns = columns
        self.passes = 0
        self._last: tuple[bytes, NDArray] | None = None
        width = _dask.row_chunked(logits, "X")
        self._n_labels = width if columns is None else len(columns)

    @property
    def n_labels(self) -> int:
        return self._n_labels

    def column(self, label: int) -> _DaskLabelNLL:
        """The objective of label ``label`` alone (its own passes over the chunks)."""
        return _DaskLabelNLL(self.logits, self.labels, self.weights, [label])

    def sums(self, beta: NDArray, *, loss: bool = False) -> NDArray:
        """Shape (4, K): :meth:`_LabelNLL.sums` of all the rows."""
        self.passes += 1
        chunk = functools.partial(_label_chunk_sums, beta, self.columns, loss)
        total, weight = _dask.fit_sums(self.logits, self.labels, self.weights, chunk)
        return total / weight

    derivatives = _LabelNLL.derivatives


# SciPy's Newton (Halley) steps on log(beta_k) stop once every step is below this: the
# error left after the last step is of the order of its cube, far below rounding.
_LOG_BETA_TOLERANCE = 1e-9


def _halley_roots(objective: _LabelNLL, beta: NDArray, inside: NDArray) -> NDArray:
    """The roots in ``t = log(beta_k)`` of the labels ``inside``: SciPy's vectorised Halley.

    ``h(t) = f'(e^t)`` has the root of ``f'`` (in ``t`` the tolerance is relative in
    ``beta``), ``h'(t) = beta f''(beta)`` and ``h''(t) = beta f''(beta) + beta^2
    f'''(beta)``.  The other labels hold still at ``beta`` (``h = 0``).  Returns ``t``,
    NaN where a label did not converge.
    """

    def at(t: NDArray) -> tuple[NDArray, NDArray]:
        trial = np.where(inside, np.exp(t), beta)
        return trial, objective.derivatives(trial)

    def value(t: NDArray) -> NDArray:
        return np.where(inside, at(t)[1][1], 0.0)

    def slope(t: NDArray) -> NDArray:
        trial, d = at(t)
        return np.where(inside, trial * d[2], 1.0)

    def curvature(t: NDArray) -> NDArray:
        trial, d = at(t)
        return np.where(inside, trial * d[2] + trial**2 * d[3], 0.0)

    start = np.where(inside, 0.0, np.log(beta))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # a label that fails is redone
        try:
            result = _scipy.optimize.newton(
                value,
                start,
                fprime=slope,
                fprime2=curvature,
                tol=_LOG_BETA_TOLERANCE,
                maxiter=_MAX_PASSES,
                full_output=True,
            )
        except RuntimeError:  # no label converged
            return np.full(len(beta), np.nan)
    return np.where(result.converged, result.root, np.nan)


def _column_root(objective: _LabelNLL, label: int, lower: float, upper: float) -> float:
    """One label's root of ``f'``, bracketed by ``[lower, upper]`` (SciPy's brentq)."""
    column = objective.column(label)
    root = _scipy.optimize.brentq(
        lambda b: column.sums(np.array([b]))[1, 0],
        lower,
        upper,
        xtol=1e-300,
        rtol=4 * np.finfo(float).eps,
    )
    objective.passes += column.passes
    return root


def _label_betas(objective: _LabelNLL, lower: float, upper: float) -> tuple[NDArray, NDArray]:
    """The optimal ``beta_k`` in ``[lower, upper]`` of each label (:func:`label_temperatures`).

    Also the labels whose optimum lies at or beyond a bound (a boolean mask).
    """
    n_labels = objective.n_labels
    at_lower = objective.sums(np.full(n_labels, lower))[1]
    at_upper = objective.sums(np.full(n_labels, upper))[1]
    flat = (at_lower >= 0) & (at_upper <= 0)  # f' = 0 throughout: every beta fits
    inside = (at_lower < 0) & (at_upper > 0)
    beta = np.where(flat, 1.0, np.where(at_lower >= 0, lower, upper))
    at_bound = ~(flat | inside)
    if not inside.any():
        return beta, at_bound
    roots = np.full(n_labels, np.nan)
    if n_labels > 1:  # SciPy's Newton is vectorised for more than one value only
        roots = _halley_roots(objective, beta, inside)
    settled = inside & (roots >= math.log(lower) - 1e-12) & (roots <= math.log(upper) + 1e-12)
    beta[settled] = np.clip(np.exp(roots[settled]), lower, upper)
    for label in np.flatnonzero(inside & ~settled):  # left by Halley: bracketed, one column
        beta[label] = _column_root(objective, label, lower, upper)
    return beta, at_bound


def label_temperatures(
    log_odds: NDArray, targets: NDArray, weights: NDArray | None, low: float, high: float
) -> NDArray:
    r"""One fitted temperature per label: ``K`` independent binary fits, batched.

    Label ``k`` is predicted as ``sigmoid(z_ik / T_k)`` (one sigmoid per label, no softmax);
    ``beta_k = 1 / T_k`` minimises the weighted mean binary NLL of that label's column,

    .. math:: f_k(\beta) = \frac{\sum_i w_i [\log(1 + e^{\beta z_{ik}})
              - y_{ik} \beta z_{ik}]}{\sum_i w_i},

    convex in ``beta`` (temperature scaling of Guo et al. 2017, per label), so ``f_k'`` is
    non-decreasing and its signs at the bounds ``[1 / high, 1 / low]`` say where the
    optimum lies, as a bracketing method would: ``f_k' >= 0`` at ``1 / high``, at or below
    it (``T_k = high``); ``f_k' <= 0`` at ``1 / low``, at or beyond it (``T_k = low``: a
    label the logits separate); both (``f_k' = 0`` throughout, a column of zero logits),
    ``T_k = 1``.  The labels in between have their roots of ``f_k'`` found together by
    :func:`scipy.optimize.newton` (Halley's method, vectorised over the labels) on ``log
    beta_k``, each step one pass over the (N, K) logits in float64 row blocks; a label it
    does not settle inside its bracket is solved by :func:`scipy.optimize.brentq` on its
    own column.

    Parameters
    ----------
    log_odds : ndarray, shape (N, K)
        One logit per (row, label), checked by the caller.
    targets : ndarray, shape (N, K)
        The 0/1 label matrix.
    weights : ndarray, shape (N,), or None
        Non-negative row weights of positive sum.
    low, high : float
        Bounds of every ``T_k``.

    Returns
    -------
    ndarray, shape (K,)
        The fitted ``T_k``.

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import expit
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.normal(size=(5000, 2))
    >>> targets = (rng.random((5000, 2)) < expit(truth)).astype(np.uint8)
    >>> T = label_temperatures(truth * [1.0, 3.0], targets, None, 1e-4, 1e4)
    >>> np.round(T, 1)
    array([1., 3.])
    """
    return 1 / _label_betas(_LabelNLL(log_odds, targets, weights), 1 / high, 1 / low)[0]
