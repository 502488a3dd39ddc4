"""Temperature scaling (Guo et al. 2017)."""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize

from calibration_toolbox import _validation as iv
from calibration_toolbox.recalibration._base import Recalibrator

__all__ = ["TemperatureScaling"]


class _TemperatureNLL:
    """Weighted mean NLL of ``softmax(beta * z)`` and its first two derivatives in ``beta``.

    With ``d = z - max(z)`` (per row) and ``m = max(z) - z_label`` the loss of a row is
    ``log sum_k exp(beta d_k) + beta m``; its derivative is ``E[d] + m`` and its second
    derivative ``Var[d] >= 0`` under ``softmax(beta z)``, so the loss is convex in
    ``beta``.  One pass over the logits, in float64 row blocks, gives all three values.
    """

    def __init__(self, logits: NDArray, labels: NDArray, weights: NDArray | None):
        self.logits = logits
        n_samples, n_classes = logits.shape
        self.row_max = np.empty(n_samples)
        for rows in iv.row_blocks(n_samples, n_classes):
            iv.row_max(logits[rows], self.row_max[rows])
        self.margin = self.row_max - logits[np.arange(n_samples), labels]
        self.weights = None if weights is None else weights / weights.sum()
        self.passes = 0
        self._cache: tuple[float, tuple[float, float, float]] = (np.nan, (0.0, 0.0, 0.0))

    def _mean(self, values: NDArray) -> float:
        if self.weights is None:
            return float(values.mean())
        return float(np.dot(self.weights, values))

    def __call__(self, beta: float) -> tuple[float, float, float]:
        if beta == self._cache[0]:
            return self._cache[1]
        self.passes += 1
        n_samples, n_classes = self.logits.shape
        loss = np.empty(n_samples)
        mean_d = np.empty(n_samples)
        var_d = np.empty(n_samples)
        for rows in iv.row_blocks(n_samples, n_classes):
            d = self.logits[rows].astype(np.float64)
            d -= self.row_max[rows, None]
            e = np.exp(beta * d)
            s0 = np.einsum("ij->i", e)
            e *= d
            s1 = np.einsum("ij->i", e)
            s2 = np.einsum("ij,ij->i", e, d)
            np.log(s0, out=loss[rows])
            np.divide(s1, s0, out=mean_d[rows])
            np.subtract(s2 / s0, mean_d[rows] ** 2, out=var_d[rows])
        loss += beta * self.margin
        mean_d += self.margin
        values = (self._mean(loss), self._mean(mean_d), self._mean(var_d))
        self._cache = (beta, values)
        return values


class TemperatureScaling(Recalibrator):
    r"""Temperature scaling (Guo et al. 2017): ``softmax(z / T)`` with one ``T > 0``.

    ``T`` minimises the (weighted) negative log-likelihood of the calibration labels.  The
    loss is convex in ``beta = 1 / T``; it is minimised over ``log beta`` by SciPy's
    trust-region Newton method (``trust-exact``) with the analytic gradient and Hessian, each
    iteration costing one pass over the logits in float64 row blocks (bounded memory).
    Dividing by ``T > 0`` never changes the argmax.

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

    _fitted_attributes = ("temperature_", "n_classes_", "n_passes_")

    def __init__(self, temperature_bounds: tuple[float, float] = (1e-4, 1e4)):
        self.temperature_bounds = temperature_bounds

    def _check_bounds(self) -> tuple[float, float]:
        bounds = self.temperature_bounds
        try:
            low, high = (float(b) for b in bounds)
        except (TypeError, ValueError):
            raise TypeError(
                f"`temperature_bounds` must be a pair of numbers (low, high); got {bounds!r}."
            ) from None
        if not (0 < low <= 1 <= high < np.inf):
            raise ValueError(
                f"`temperature_bounds` must satisfy 0 < low <= 1 <= high < inf; got {bounds!r}."
            )
        return low, high

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> TemperatureScaling:
        """Fit ``T`` on calibration logits ``X`` (N, K) and labels ``y`` (N,)."""
        low, high = self._check_bounds()
        logits = iv.check_logits(X, "X")
        labels = iv.check_labels(y, *logits.shape, name="y")
        weights = iv.check_sample_weight(sample_weight, len(logits))
        objective = _TemperatureNLL(logits, labels, weights)
        positive = slice(None) if weights is None else weights > 0
        if not objective.margin[positive].any():
            warnings.warn(
                "the logits rank every calibration label first (the set is separated "
                "perfectly), so the likelihood keeps growing as T -> 0; T is set to its lower "
                f"bound {low:g}.",
                UserWarning,
                stacklevel=2,
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
        # u = log(beta): beta stays positive; derivatives by the chain rule.
        def fun(u):
            beta = np.exp(u[0])
            loss, gradient, _ = objective(beta)
            return loss, np.array([beta * gradient])

        def hess(u):
            beta = np.exp(u[0])
            _, gradient, curvature = objective(beta)
            return np.array([[beta * gradient + beta**2 * curvature]])

        result = minimize(
            fun,
            np.zeros(1),
            jac=True,
            hess=hess,
            method="trust-exact",
            options={"gtol": 1e-10, "maxiter": 200},
        )
        # trust-exact may stop on a rounding-limited step once the gradient is negligible.
        if not result.success and abs(result.jac[0]) > 1e-8:
            raise RuntimeError(f"temperature scaling did not converge: {result.message}")
        temperature = float(np.exp(-result.x[0]))
        if not low <= temperature <= high:
            bound = low if temperature < low else high
            warnings.warn(
                f"the optimal temperature {temperature:.3g} lies outside temperature_bounds "
                f"({low:g}, {high:g}); T is set to {bound:g}.",
                UserWarning,
                stacklevel=3,
            )
            temperature = bound
        return temperature

    def _calibrated_logits(self, X: ArrayLike) -> NDArray:
        logits = iv.check_logits(X, "X")
        self._check_n_classes(logits.shape[1])
        return logits / logits.dtype.type(self.temperature_)
