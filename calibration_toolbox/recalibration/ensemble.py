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

_LOSSES = ("nll", "mse")


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


class _MixtureWeightBrier:
    r"""Weighted mean Brier score of the three-component mixture and its gradient.

    With ``P_j`` the ``(N, K)`` probabilities of component ``j`` (``softmax(z / T)``,
    ``softmax(z)``, ``1 / K``) and ``Y`` the one-hot
    labels, the loss ``L(w) = sum_i v_i ||sum_j w_j P_ij - Y_i||^2`` is the quadratic
    ``w' G w - 2 b' w + 1`` with ``G_jl = sum_i v_i <P_ij, P_il>`` and ``b_j = sum_i v_i
    P_ij[y_i]``: the 3 x 3 sums are taken once, in row blocks, and every evaluation is
    exact arithmetic on them.
    """

    def __init__(
        self, logits: NDArray, labels: NDArray, temperature: float, weights: NDArray | None
    ):
        n_samples, n_classes = logits.shape
        row_weights = np.full(n_samples, 1.0 / n_samples) if weights is None else weights
        row_weights = row_weights / row_weights.sum()
        gram = np.zeros((3, 3))
        hits = np.zeros(3)
        for rows in row_blocks(n_samples, 3 * n_classes):
            block = logits[rows].astype(np.float64)
            scaled = _scipy.special.softmax(block / temperature, axis=1)
            plain = _scipy.special.softmax(block, axis=1)
            at_label = (np.arange(len(block)), labels[rows])
            weight = row_weights[rows]
            gram[0, 0] += weight @ np.einsum("ij,ij->i", scaled, scaled)
            gram[0, 1] += weight @ np.einsum("ij,ij->i", scaled, plain)
            gram[1, 1] += weight @ np.einsum("ij,ij->i", plain, plain)
            hits[0] += weight @ scaled[at_label]
            hits[1] += weight @ plain[at_label]
        gram[1, 0] = gram[0, 1]
        # The uniform component: <P_j, 1/K> = 1/K for every probability vector.
        gram[2, :] = gram[:, 2] = hits[2] = 1.0 / n_classes
        self.gram, self.hits = gram, hits

    def __call__(self, mixing: NDArray) -> tuple[float, NDArray]:
        gram_mixing = self.gram @ mixing
        loss = float(mixing @ gram_mixing - 2.0 * self.hits @ mixing + 1.0)
        return loss, 2.0 * (gram_mixing - self.hits)

    def polished(self, mixing: NDArray) -> NDArray:
        """The exact minimiser on the face of the simplex where ``mixing`` is positive.

        SLSQP stops a few 1e-10 from a quadratic's optimum; on its support ``S`` the
        optimum solves ``G_SS w_S - b_S + mu 1 = 0, sum w_S = 1`` (a linear system).  It
        is returned where it stays on the simplex and lowers the loss, else ``mixing``.
        """
        support = np.flatnonzero(mixing > 0)
        size = len(support)
        system = np.zeros((size + 1, size + 1))
        system[:size, :size] = self.gram[np.ix_(support, support)]
        system[:size, size] = system[size, :size] = 1.0
        right = np.append(self.hits[support], 1.0)
        try:
            solution = np.linalg.solve(system, right)
        except np.linalg.LinAlgError:  # two components equal on every row
            return mixing
        candidate = np.zeros(3)
        candidate[support] = solution[:size]
        if candidate.min() < 0 or self(candidate)[0] > self(mixing)[0]:
            return mixing
        return candidate / candidate.sum()


class _TemperatureBrier:
    r"""Weighted mean Brier score of ``softmax(beta z)`` and its derivative in ``beta``.

    ``d/d beta ||p - Y_i||^2 = 2 sum_k (p_k - Y_ik) p_k (z_k - sum_l p_l z_l)``.
    """

    def __init__(self, logits: NDArray, labels: NDArray, weights: NDArray | None):
        self.logits, self.labels = logits, labels
        n_samples = len(logits)
        self.weights = np.full(n_samples, 1.0 / n_samples) if weights is None else weights
        self.weights = self.weights / self.weights.sum()

    def __call__(self, beta: float) -> tuple[float, float]:
        n_samples, n_classes = self.logits.shape
        loss = slope = 0.0
        for rows in row_blocks(n_samples, 2 * n_classes):
            block = self.logits[rows].astype(np.float64)
            prob = _scipy.special.softmax(beta * block, axis=1)
            error = prob.copy()
            error[np.arange(len(block)), self.labels[rows]] -= 1.0
            centred = block - np.einsum("ij,ij->i", prob, block)[:, None]
            weight = self.weights[rows]
            loss += weight @ np.einsum("ij,ij->i", error, error)
            slope += 2.0 * (weight @ np.einsum("ij,ij,ij->i", error, prob, centred))
        return float(loss), float(slope)


def _brier_temperature(objective: _TemperatureBrier, bounds: tuple[float, float]) -> float:
    """The ``T`` in ``bounds`` that minimises the Brier score of ``softmax(z / T)``.

    Brent's bounded search on ``log beta`` finds the basin; the root of the derivative there
    (Brent's method again, on the sign of the analytic slope) gives ``beta`` to rounding.
    """
    low, high = np.log(1.0 / bounds[1]), np.log(1.0 / bounds[0])
    result = _scipy.optimize.minimize_scalar(
        lambda log_beta: objective(np.exp(log_beta))[0],
        bounds=(low, high),
        method="bounded",
        options={"xatol": 1e-10},
    )
    log_beta = float(result.x)

    def slope(point: float) -> float:
        return objective(np.exp(point))[1]

    for width in (1e-8, 1e-6, 1e-4, 1e-2):
        below, above = max(log_beta - width, low), min(log_beta + width, high)
        if slope(below) < 0.0 < slope(above):
            log_beta = _scipy.optimize.brentq(slope, below, above, xtol=1e-300, rtol=1e-15)
            break
    return float(np.exp(-log_beta))


def _kkt_violation(mixing: NDArray, gradient: NDArray) -> float:
    """Largest violation of the optimality conditions on the simplex.

    With ``lambda = -sum_j w_j dL/dw_j`` the Lagrange multiplier of ``sum_j w_j = 1``, ``w``
    is optimal iff ``dL/dw_j >= -lambda`` for every ``j``, with equality where ``w_j > 0``.
    For the NLL, ``sum_j w_j dL/dw_j = -1`` at every ``w``.
    """
    shifted = gradient - float(mixing @ gradient)
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


def _fitted_mixing(objective) -> NDArray:
    """The weights on the simplex that minimise ``objective`` (SLSQP, analytic gradient)."""
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
    if hasattr(objective, "polished"):
        mixing = objective.polished(mixing)
    loss, gradient = objective(mixing)
    # SLSQP often ends on a rounding-limited line search at the optimum: judge the point
    # by the optimality conditions rather than by the optimizer's flag.
    if _kkt_violation(mixing, gradient) > 1e-6:
        warn(f"the ensemble weights may not be optimal ({result.message}).")
        temperature_only = np.array([1.0, 0.0, 0.0])
        if objective(temperature_only)[0] < loss:
            mixing = temperature_only
    return mixing


class EnsembleTemperatureScaling(Recalibrator):
    r"""Ensemble temperature scaling (Zhang, Kailkhura & Han 2020).

    A mixture of the temperature-scaled, the uncalibrated and the uniform prediction,

    .. math:: p = w_1 \, \mathrm{softmax}(z / T) + w_2 \, \mathrm{softmax}(z) + w_3 / K,
              \qquad w_j \ge 0, \; w_1 + w_2 + w_3 = 1.

    With ``loss='nll'`` (the default) ``T`` is fitted first by :class:`TemperatureScaling`
    (same ``temperature_bounds``; its warnings pass through), then the weights minimise the
    weighted negative log-likelihood of the calibration labels.  With ``loss='mse'`` both
    stages minimise the weighted Brier score (the squared error to the one-hot labels,
    summed over the K classes and averaged over the rows)

    .. math:: \frac{\sum_i v_i \sum_k (p_{ik} - 1[y_i = k])^2}{\sum_i v_i}

    instead: ``T`` by Brent's bounded search in ``log(1/T)`` polished to the root of the
    analytic derivative, then the weights.  The Mix-n-Match authors' code
    (``util_calibration.py``: ``ets_calibrate``, ``temperature_scaling`` and
    ``ensemble_scaling`` with ``loss='mse'``) fits both stages so by default; its mean over
    the ``N K`` entries is this Brier score divided by K.  ``'nll'`` stays the default here:
    it is the loss temperature scaling is defined by (Guo et al. 2017) and the one this
    class fitted before ``loss`` existed, and unlike the squared error it grows without
    bound as the probability of the true class goes to 0.

    Either loss is convex in ``w`` (the Brier score is a quadratic); it is minimised on the
    simplex by SciPy's SLSQP (bounds ``0 <= w_j <= 1``, the constraint ``sum_j w_j = 1``,
    analytic gradient), so a weight whose optimum is 0 comes out as 0 (up to rounding);
    the Brier score's optimum is then solved exactly on the face of the simplex SLSQP ends
    on (a 3 x 3 linear system).  The result is checked against the optimality conditions;
    should they fail, a ``UserWarning`` names the optimizer's message and the weights fall
    back to plain temperature scaling ``(1, 0, 0)`` where that is better.

    Both softmax terms rank the classes as ``z`` does, so the argmax is kept (unless
    ``w_3 = 1``, where every class ties).  Calling the object returns the log-probabilities
    ``log p``, computed in log space so that logits of magnitude 1e4 stay finite.

    Parameters
    ----------
    temperature_bounds : tuple of float, default (1e-4, 1e4)
        Range of ``T``, passed to :class:`TemperatureScaling`.
    loss : {'nll', 'mse'}, default 'nll'
        What ``T`` and the weights minimise: the negative log-likelihood or the Brier
        score (see above).

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
    .. [3] J. Zhang, "Mix-n-Match-Calibration", ``util_calibration.py``,
       github.com/zhang64-llnl/Mix-n-Match-Calibration (the authors' code).

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

    The squared-error fit of the Mix-n-Match code:

    >>> mse = EnsembleTemperatureScaling(loss="mse").fit(logits, labels)
    >>> round(mse.temperature_, 2), mse.weights_.round(3).tolist()
    (3.04, [0.962, 0.023, 0.015])
    """

    _parameters: ClassVar[dict[str, Checker]] = {
        "temperature_bounds": TEMPERATURE_BOUNDS,
        "loss": iv.choice(*_LOSSES),
    }
    _fitted_schema: ClassVar[dict[str, Field]] = {
        "temperature_": TEMPERATURE_FIELD,
        "weights_": array_field((3,), low=0.0, high=1.0, rule=_on_simplex),
        "n_classes_": N_CLASSES_FIELD,
    }

    def __init__(
        self,
        temperature_bounds: tuple[float, float] = (1e-4, 1e4),
        *,
        loss: str = "nll",
        classes: ArrayLike | None = None,
    ):
        self.temperature_bounds = temperature_bounds
        self.loss = loss
        self.classes = classes

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> EnsembleTemperatureScaling:
        """Fit ``T`` and the weights on calibration logits ``X`` (N, K) and labels ``y``."""
        params = self._checked_params()
        if params["loss"] == "nll":
            scaler = TemperatureScaling(
                temperature_bounds=params["temperature_bounds"], classes=self.classes
            )
            temperature = scaler.fit(X, y, sample_weight).temperature_
            logits = iv.check_logits(X, "X")
        else:
            logits = self._fit_logits(X)
        labels = self._fit_labels(y, *logits.shape)
        weights = iv.check_sample_weight(sample_weight, len(logits), scale_free=True)
        n_classes = logits.shape[1]
        if params["loss"] == "nll":
            scaled, plain = _label_log_probs(logits, labels, temperature)
            log_components = np.stack(
                [scaled, plain, np.full(len(logits), -np.log(n_classes))], axis=1
            )
            objective = _MixtureWeightNLL(log_components, weights)
        else:
            temperature = _brier_temperature(
                _TemperatureBrier(logits, labels, weights), params["temperature_bounds"]
            )
            objective = _MixtureWeightBrier(logits, labels, temperature, weights)
        self.temperature_ = float(temperature)
        self.weights_ = _fitted_mixing(objective)
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
