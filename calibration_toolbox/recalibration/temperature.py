"""Temperature scaling (Guo et al. 2017)."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize, root_scalar

from calibration_toolbox import _validation as iv
from calibration_toolbox._rows import COLUMN_LOOP_MAX_K, block_rows, row_blocks
from calibration_toolbox._warnings import warn
from calibration_toolbox.recalibration._base import (
    Checker,
    Field,
    Recalibrator,
    integer_field,
    number_field,
)

__all__ = ["TEMPERATURE_BOUNDS", "TemperatureScaling"]


def _bounds_hold(low: float, high: float) -> bool:
    return 0 < low <= 1 <= high < math.inf


#: Checker of ``temperature_bounds``: a pair ``(low, high)`` with ``0 < low <= 1 <= high < inf``.
TEMPERATURE_BOUNDS = iv.number_pair("0 < low <= 1 <= high < inf", _bounds_hold)


class _TemperatureNLL:
    r"""Weighted mean NLL of ``softmax(beta * z)`` and its first two derivatives in ``beta``.

    With a per-row shift ``c`` (the row maximum for ``beta >= 0``, the minimum otherwise,
    so that ``beta * (z - c) <= 0`` never overflows), ``d = z - c`` and
    ``m = c - z_label``, the loss of a row is ``log sum_k exp(beta d_k) + beta m``; its
    derivative is ``E[d] + m`` and its second derivative ``Var[d] >= 0`` under
    ``softmax(beta z)``: the loss is convex in ``beta``.  Each row's margin is added to its
    own terms before the rows are summed: near the optimum ``E[d] + m`` is a small
    difference of two terms of order 1, and summing the two over all rows separately first
    left ``f'`` with a rounding error larger than the Newton polish's tolerance (a
    1M x 10 fit on logits that carry no information then failed to converge).

    Each pass goes through the logits in float64 row blocks, recomputing each block's
    shift while it is in cache, and adds the block's weighted sums: the working memory is
    two block-sized buffers whatever N (a pass used to keep five N-sized float64 arrays:
    63 MiB, 1.7x the bytes of 1M x 10 float32 logits, now 0 beyond the blocks).  Recomputing
    the shift per pass costs about 13% at K = 100 (100k x 100: 350 -> 400 ms); at K = 10 the
    fit got faster (1M x 10: 347 -> 263 ms; weighted 2x faster), at K = 1,000 the same.
    """

    def __init__(self, logits: NDArray, labels: NDArray, weights: NDArray | None):
        self.logits = logits
        self.labels = labels
        self.weights = weights
        self.total_weight = float(len(labels) if weights is None else weights.sum())
        self.passes = 0
        self._cache: dict[float, tuple[float, float, float]] = {}
        n_samples, n_classes = logits.shape
        # For small K a block is processed transposed, (K, rows), so that the sums over the
        # classes are contiguous reductions; two float64 buffers serve every block.
        self.class_axis = 0 if n_classes <= COLUMN_LOOP_MAX_K else 1
        rows_per_block = min(n_samples, block_rows(n_classes))
        shape = (n_classes, rows_per_block)
        self._d = np.empty(shape if self.class_axis == 0 else shape[::-1])
        self._e = np.empty_like(self._d)
        self._within_block = np.arange(rows_per_block)

    def _shifted(self, rows: slice, positive: bool) -> tuple[NDArray, NDArray]:
        """``d = z - c`` of a row block (a view of a float64 buffer) and the shift ``c``."""
        width = rows.stop - rows.start
        extreme = np.maximum if positive else np.minimum
        if self.class_axis == 0:
            d = self._d[:, :width]
            d[...] = self.logits[rows].T
            shift = extreme.reduce(d, axis=0)
            d -= shift
        else:
            d = self._d[:width]
            d[...] = self.logits[rows]
            shift = extreme.reduce(d, axis=1)
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

    def ranks_every_label_first(self) -> bool:
        """Whether every row of positive weight has its label's logit as the row maximum."""
        for rows in row_blocks(*self.logits.shape):
            _, shift = self._shifted(rows, True)
            ranked_below = self._margins(rows, shift) > 0
            if self.weights is not None:
                ranked_below &= self.weights[rows] > 0
            if ranked_below.any():
                return False
        return True

    def __call__(self, beta: float) -> tuple[float, float, float]:
        if beta in self._cache:  # the optimisers ask for f, f' and f'' at the same points
            return self._cache[beta]
        self.passes += 1
        sums = np.zeros(3)
        terms = np.empty((3, self._d.shape[1 - self.class_axis]))
        for rows in row_blocks(*self.logits.shape):
            d, shift = self._shifted(rows, beta >= 0)
            e = self._e[: d.shape[0], : d.shape[1]]
            np.multiply(d, beta, out=e)
            np.exp(e, out=e)
            s0 = np.add.reduce(e, axis=self.class_axis)
            e *= d
            s1 = np.add.reduce(e, axis=self.class_axis)
            e *= d
            s2 = np.add.reduce(e, axis=self.class_axis)
            loss, mean_d, var_d = terms[:, : len(s0)]
            np.log(s0, out=loss)
            np.divide(s1, s0, out=mean_d)
            np.subtract(s2 / s0, mean_d**2, out=var_d)
            margins = self._margins(rows, shift)
            loss += beta * margins
            mean_d += margins
            sums += self._sum(terms[:, : len(s0)], rows)
        loss_sum, mean_sum, var_sum = sums
        values = (
            loss_sum / self.total_weight,
            mean_sum / self.total_weight,
            var_sum / self.total_weight,
        )
        self._cache[beta] = values
        return values


class TemperatureScaling(Recalibrator):
    r"""Temperature scaling (Guo et al. 2017): ``softmax(z / T)`` with one ``T > 0``.

    ``T`` minimises the (weighted) negative log-likelihood of the calibration labels.  The
    loss is convex in ``beta = 1 / T``; it is minimised over ``beta`` itself, from
    ``beta = 1``, by SciPy's trust-region Newton method (``trust-exact``, ``gtol=1e-12``)
    with the analytic first and second derivatives in ``beta``, each evaluation costing one
    pass over the logits in float64 row blocks (bounded memory).  Where ``trust-exact``
    stops because the loss no longer resolves its steps while the derivative still does,
    Newton's method on the derivative (``scipy.optimize.root_scalar``) finishes the root.
    If every calibration label is ranked first, the optimum is ``T -> 0`` and no
    optimisation runs.  Dividing by ``T > 0`` never changes the argmax.

    Parameters
    ----------
    temperature_bounds : tuple of float, default (1e-4, 1e4)
        Range of ``T``.  When the optimum lies outside, ``T`` is set to the nearest bound
        with a ``UserWarning``: a calibration set that the logits separate perfectly has its
        optimum at ``T -> 0``, and logits that carry no information at ``T -> inf``.

    Attributes
    ----------
    temperature_ : float
        Fitted temperature.
    n_classes_ : int
        Number of classes seen in ``fit``.
    n_passes_ : int
        Passes over the calibration logits that the fit took.

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

    _parameters: ClassVar[dict[str, Checker]] = {"temperature_bounds": TEMPERATURE_BOUNDS}
    _fitted_schema: ClassVar[dict[str, Field]] = {
        "temperature_": number_field(0.0, strict_low=True),
        "n_classes_": integer_field(2),
        "n_passes_": integer_field(0),
    }

    def __init__(self, temperature_bounds: tuple[float, float] = (1e-4, 1e4)):
        self.temperature_bounds = temperature_bounds

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> TemperatureScaling:
        """Fit ``T`` on calibration logits ``X`` (N, K) and labels ``y`` (N,)."""
        low, high = self._checked_params()["temperature_bounds"]
        logits = iv.check_logits(X, "X")
        labels = iv.check_labels(y, *logits.shape, name="y")
        weights = iv.check_sample_weight(sample_weight, len(logits))
        objective = _TemperatureNLL(logits, labels, weights)
        if objective.ranks_every_label_first():
            warn(
                "the logits rank every calibration label first (the set is separated "
                "perfectly), so the likelihood keeps growing as T -> 0; T is set to its lower "
                f"bound {low:g}."
            )
            temperature = low
        else:
            temperature = self._minimise(objective, low, high)
        self.temperature_ = float(temperature)
        self.n_classes_ = int(logits.shape[1])
        self.n_passes_ = int(objective.passes)
        return self

    @staticmethod
    def _minimise(objective: _TemperatureNLL, low: float, high: float) -> float:
        # Newton's method with a trust region on the convex loss in beta = 1 / T, from T = 1.
        result = minimize(
            lambda beta: objective(beta[0])[:2],
            np.ones(1),
            jac=True,
            hess=lambda beta: np.array([[objective(beta[0])[2]]]),
            method="trust-exact",
            options={"gtol": 1e-12, "maxiter": 200},
        )
        beta = float(result.x[0])
        if not result.success and not (beta <= 1 / high or beta >= 1 / low):
            # trust-exact stops once f no longer resolves its steps (f is flat to rounding
            # there) although f' still does: finish the root of f' with Newton's method.
            polished = root_scalar(
                lambda b: objective(b)[1],
                fprime=lambda b: objective(b)[2],
                x0=beta,
                method="newton",
                xtol=1e-300,
                rtol=1e-14,
                maxiter=20,
            )
            if not polished.converged:
                raise RuntimeError(f"temperature scaling did not converge: {result.message}")
            beta = float(polished.root)
        if beta <= 1 / high or beta >= 1 / low:
            bound = high if beta <= 1 / high else low
            found = "inf" if beta <= 0 else f"{1 / beta:.3g}"
            warn(
                f"the optimal temperature {found} lies outside temperature_bounds "
                f"({low:g}, {high:g}); T is set to {bound:g}."
            )
            return bound
        return 1 / beta

    def _calibrated_logits(self, X: ArrayLike) -> NDArray:
        logits = iv.check_logits(X, "X")
        self._check_n_classes(logits.shape[1])
        return logits / logits.dtype.type(self.temperature_)
