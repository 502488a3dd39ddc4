"""Ensemble temperature scaling (Zhang, Kailkhura & Han 2020, "Mix-n-Match")."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import Text
from calibration_toolbox._rows import row_blocks
from calibration_toolbox._warnings import warn
from calibration_toolbox.recalibration._base import (
    N_CLASSES_FIELD,
    Checker,
    Field,
    Recalibrator,
    array_field,
)
from calibration_toolbox.recalibration.temperature import (
    TEMPERATURE_BOUNDS,
    TEMPERATURE_FIELD,
    TemperatureScaling,
)

__all__ = ["EnsembleTemperatureScaling"]


def _label_log_probs(
    logits: NDArray, labels: NDArray, temperature: float
) -> tuple[NDArray, NDArray]:
    """``log softmax(z / T)[y]`` and ``log softmax(z)[y]`` per row, in float64 row blocks."""
    n_samples, n_classes = logits.shape
    beta = 1.0 / temperature
    scaled = np.empty(n_samples)
    plain = np.empty(n_samples)
    for rows in row_blocks(n_samples, n_classes):
        block = logits[rows].astype(np.float64)
        at_label = (np.arange(len(block)), labels[rows])
        scaled[rows] = _scipy.special.log_softmax(beta * block, axis=1)[at_label]
        plain[rows] = _scipy.special.log_softmax(block, axis=1)[at_label]
    return scaled, plain


# Cap of log(a_ij / mixture_i) in the gradient: beyond e^300 the gradient only has to point
# the right way (the loss there is hundreds of nats above the optimum), and a finite cap
# keeps a mean over up to 1e8 rows finite.
_LOG_RATIO_CAP = 300.0


class _MixtureWeightNLL:
    r"""Weighted mean NLL of the three-component mixture and its gradient in the weights.

    With ``a_ij`` the probability that component ``j`` gives the label of row ``i`` (stored
    as ``log a_ij``), the loss is ``L(w) = -sum_i v_i log sum_j w_j a_ij`` (``v`` the
    normalised sample weights), convex in ``w``; its gradient is
    ``dL/dw_j = -sum_i v_i a_ij / sum_l w_l a_il``.  Both are computed in log space, so labels
    with probability ``exp(-1e4)`` under a component give neither overflow nor NaN while
    some weight is positive.
    """

    def __init__(self, log_components: NDArray, weights: NDArray | None):
        self.log_components = log_components
        self.weights = None if weights is None else weights / weights.sum()

    def _mean(self, values: NDArray) -> NDArray:
        if self.weights is None:
            return values.mean(axis=0)
        return np.einsum("i,i...->...", self.weights, values)

    def __call__(self, mixing: NDArray) -> tuple[float, NDArray]:
        # SLSQP may step a hair below a bound of 0.
        with np.errstate(divide="ignore"):
            log_mixing = np.log(np.maximum(mixing, 0.0))
        log_mixture = _scipy.special.logsumexp(self.log_components + log_mixing, axis=1)
        log_ratio = self.log_components - log_mixture[:, None]
        np.minimum(log_ratio, _LOG_RATIO_CAP, out=log_ratio)
        return -float(self._mean(log_mixture)), -self._mean(np.exp(log_ratio))


def _kkt_violation(mixing: NDArray, gradient: NDArray) -> float:
    """Largest violation of the optimality conditions on the simplex.

    ``sum_j w_j dL/dw_j = -1`` for every ``w``, so the Lagrange multiplier of
    ``sum_j w_j = 1`` is 1 and ``w`` is optimal iff ``dL/dw_j >= -1`` for every ``j``, with
    equality where ``w_j > 0``.
    """
    shifted = gradient + 1.0
    return float(max(-shifted.min(), np.abs(shifted[mixing > 1e-9]).max(initial=0.0)))


def _on_simplex(name: str, state: dict) -> Text | None:
    """Schema rule: the mixture weights sum to 1 (up to rounding)."""
    total = float(state[name].sum())
    if abs(total - 1.0) <= 1e-9:
        return None
    return Text(
        "{argument} must sum to 1 (weights of a mixture); got a sum of {total!r}.",
        argument=name,
        fields={"total": total},
    )


def _excess(mixing: NDArray) -> NDArray:
    return np.array([mixing.sum() - 1.0])


def _excess_jacobian(mixing: NDArray) -> NDArray:
    return np.ones((1, len(mixing)))


class EnsembleTemperatureScaling(Recalibrator):
    r"""Ensemble temperature scaling (Zhang, Kailkhura & Han 2020).

    A mixture of the temperature-scaled, the uncalibrated and the uniform prediction,

    .. math:: p = w_1 \, \mathrm{softmax}(z / T) + w_2 \, \mathrm{softmax}(z) + w_3 / K,
              \qquad w_j \ge 0, \; w_1 + w_2 + w_3 = 1.

    ``T`` is fitted first by :class:`TemperatureScaling` (same ``temperature_bounds``; its
    warnings pass through), then the weights minimise the weighted negative log-likelihood
    of the calibration labels.  That loss is convex in ``w``; it is minimised on the simplex
    by SciPy's SLSQP (bounds ``0 <= w_j <= 1``, the constraint ``sum_j w_j = 1``, analytic
    gradient), so a weight whose optimum is 0 comes out as 0 (up to rounding).  The result
    is checked against the optimality conditions; should they fail, a
    ``UserWarning`` names the optimizer's message and the weights fall back to plain
    temperature scaling ``(1, 0, 0)`` where that is better.

    Both softmax terms rank the classes as ``z`` does, so the argmax is kept (unless
    ``w_3 = 1``, where every class ties).  Calling the object returns the log-probabilities
    ``log p``, computed in log space so that logits of magnitude 1e4 stay finite.

    Parameters
    ----------
    temperature_bounds : tuple of float, default (1e-4, 1e4)
        Range of ``T``, passed to :class:`TemperatureScaling`.

    classes : sequence of str (or of numbers), optional
        Names of the classes, in the column order of ``X``: ``y`` is then given as names
        (``fit``, ``score``), ``classes_`` holds these names and ``predict`` returns them.
        Saved with the fitted state.  Default: ``y`` holds column indices (as it does in
        ``fit_blocks`` and on Dask arrays).

    Attributes
    ----------
    temperature_ : float
        Fitted temperature ``T``.
    weights_ : ndarray of float64, shape (3,)
        ``(w_1, w_2, w_3)``: weights of the temperature-scaled, uncalibrated and uniform
        predictions.
    n_classes_ : int
        Number of classes seen in ``fit``.

    References
    ----------
    .. [1] J. Zhang, B. Kailkhura and T. Y.-J. Han, "Mix-n-Match: Ensemble and Compositional
       Methods for Uncertainty Calibration in Deep Learning", ICML, 2020.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox.recalibration.ensemble import EnsembleTemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.integers(0, 3, 2000)
    >>> logits = 3.0 * (np.eye(3)[labels] + rng.normal(size=(2000, 3)))  # 3x overconfident
    >>> ets = EnsembleTemperatureScaling().fit(logits, labels)
    >>> round(ets.temperature_, 2)
    3.08
    >>> bool(np.isclose(ets.weights_.sum(), 1.0))
    True
    >>> probs = ets.predict_proba(logits)
    >>> bool((probs.argmax(axis=1) == logits.argmax(axis=1)).all())
    True
    """

    _parameters: ClassVar[dict[str, Checker]] = {"temperature_bounds": TEMPERATURE_BOUNDS}
    _fitted_schema: ClassVar[dict[str, Field]] = {
        "temperature_": TEMPERATURE_FIELD,
        "weights_": array_field((3,), low=0.0, high=1.0, rule=_on_simplex),
        "n_classes_": N_CLASSES_FIELD,
    }

    def __init__(
        self,
        temperature_bounds: tuple[float, float] = (1e-4, 1e4),
        *,
        classes: ArrayLike | None = None,
    ):
        self.temperature_bounds = temperature_bounds
        self.classes = classes

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> EnsembleTemperatureScaling:
        """Fit ``T`` and the weights on calibration logits ``X`` (N, K) and labels ``y``."""
        params = self._checked_params()
        scaler = TemperatureScaling(
            temperature_bounds=params["temperature_bounds"], classes=self.classes
        )
        temperature = scaler.fit(X, y, sample_weight).temperature_
        logits = iv.check_logits(X, "X")
        labels = self._fit_labels(y, *logits.shape)
        weights = iv.check_sample_weight(sample_weight, len(logits), scale_free=True)
        n_classes = logits.shape[1]
        scaled, plain = _label_log_probs(logits, labels, temperature)
        log_components = np.stack(
            [scaled, plain, np.full(len(logits), -np.log(n_classes))], axis=1
        )
        objective = _MixtureWeightNLL(log_components, weights)
        result = _scipy.optimize.minimize(
            objective,
            np.full(3, 1.0 / 3.0),
            jac=True,
            method="SLSQP",
            bounds=[(0.0, 1.0)] * 3,
            constraints=[{"type": "eq", "fun": _excess, "jac": _excess_jacobian}],
            options={"ftol": 1e-15, "maxiter": 500},
        )
        mixing = np.clip(result.x, 0.0, 1.0)
        mixing /= mixing.sum()
        loss, gradient = objective(mixing)
        # SLSQP often ends on a rounding-limited line search at the optimum: judge the point
        # by the optimality conditions rather than by the optimizer's flag.
        if _kkt_violation(mixing, gradient) > 1e-6:
            warn(f"the ensemble weights may not be optimal ({result.message}).")
            temperature_only = np.array([1.0, 0.0, 0.0])
            if objective(temperature_only)[0] < loss:
                mixing = temperature_only
        self.temperature_ = float(temperature)
        self.weights_ = mixing
        self.n_classes_ = int(n_classes)
        return self

    def _calibrated_logits(self, X: ArrayLike) -> NDArray:
        logits = iv.check_logits(X, "X")
        self._check_n_classes(logits.shape[1])
        n_samples, n_classes = logits.shape
        beta = 1.0 / self.temperature_
        with np.errstate(divide="ignore"):
            log_weights = np.log(np.asarray(self.weights_, dtype=np.float64))
        uniform = log_weights[2] - np.log(n_classes)
        out = np.empty((n_samples, n_classes))
        for rows in row_blocks(n_samples, n_classes):
            block = logits[rows].astype(np.float64)
            scaled = _scipy.special.log_softmax(beta * block, axis=1)
            plain = _scipy.special.log_softmax(block, axis=1)
            scaled += log_weights[0]
            plain += log_weights[1]
            block = np.logaddexp(scaled, plain, out=out[rows])
            np.logaddexp(block, uniform, out=block)
        return out
