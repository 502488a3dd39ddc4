"""Platt scaling and beta calibration: binary maps, one-vs-rest for several classes.

Both methods fit a logistic regression of a binary label on a feature map of one score:

* :class:`PlattScaling` (Platt 1999): ``sigmoid(a s + b)`` on a logit or a probability;
* :class:`BetaCalibration` (Kull et al. 2017): ``sigmoid(a ln s - b ln(1 - s) + c)`` on a
  probability, with ``a, b >= 0``.

A binary task (a 1-D array, or two columns) gets one model on the positive-class score.
With ``K > 2`` classes, model ``k`` is fitted one-vs-rest on column ``k`` (label ``y == k``)
and the ``K`` calibrated probabilities of a row are renormalised to sum to 1.

Every model is fitted by the same routine, :func:`_fit_logistic`, which minimises the
weighted mean cross-entropy (convex) on standardised features with analytic derivatives:
SciPy's trust-region Newton method (``trust-exact``) when the optimum is interior, else
L-BFGS-B inside a box, followed by a few exact Newton steps on the free coordinates.  The
box enforces ``a, b >= 0`` and keeps the fit finite where the maximum-likelihood estimate
lies at infinity (a perfectly separable set or a class that never occurs); such fits come
with a ``UserWarning``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar, NamedTuple, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _arrays, _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, Text
from calibration_toolbox._rows import LOGISTIC_BLOCK_ROWS, row_blocks
from calibration_toolbox._warnings import warn
from calibration_toolbox.recalibration._base import (
    COEFFICIENT_LIMIT,
    N_CLASSES_FIELD,
    Checker,
    Field,
    Recalibrator,
    array_field,
    choice_field,
    log_in_place,
    normalised_probs,
    short_list,
)
from calibration_toolbox.recalibration.temperature import label_log_likelihood

__all__ = ["BETA_EPS", "BetaCalibration", "PlattScaling"]

#: Probabilities are clipped to ``[BETA_EPS, 1 - BETA_EPS]`` before the logarithms of beta
#: calibration (2**-52, float64's machine epsilon, as the ``betacal`` package does for
#: float64 input): ``ln s`` then stays above -36.04, so exact 0 and 1 give finite features.
BETA_EPS = float(np.finfo(np.float64).eps)

# Largest |slope| on standardised features (unit weighted standard deviation).  A slope of
# 100 moves the calibrated logit by 100 over one standard deviation of the score: a step
# function for any practical purpose, reached only where the likelihood keeps improving
# towards infinity.  The intercept gets the same bound scaled by the features' reach.
_SLOPE_BOUND = 100.0


class _Rows:
    """The rows of one logistic fit, read block by block.

    ``features(rows)`` gives the ``d`` float64 design feature columns of a slice of rows
    (computed from the stored scores on demand, so no ``(N, d)`` float64 design is kept);
    the target of a row is ``targets[0]`` where ``positive`` and ``targets[1]`` elsewhere;
    ``weights`` (``None``: all 1) are positive.  ``n_passes`` counts the passes made.
    """

    def __init__(
        self,
        features: Callable[[slice], list[NDArray]],
        n_features: int,
        positive: NDArray,
        targets: tuple[float, float],
        weights: NDArray | None = None,
    ):
        self.features = features
        self.n_features = n_features
        self.positive = positive
        self.targets = (float(targets[0]), float(targets[1]))
        self.weights = weights
        self.n_passes = 0

    @classmethod
    def from_arrays(
        cls, features: NDArray, positive: NDArray, targets: tuple[float, float], weights=None
    ) -> _Rows:
        """Rows whose ``(N, d)`` float64 design features are given as an array."""
        columns = features.T
        return cls(lambda rows: list(columns[:, rows]), len(columns), positive, targets, weights)

    @property
    def binary(self) -> bool:
        """Whether the targets are the 0/1 labels (so the classes may be separable)."""
        return self.targets == (1.0, 0.0)

    def blocks(self) -> Iterator[tuple[list[NDArray], NDArray, NDArray, NDArray | None]]:
        """One pass: ``(features, positive, targets, weights)`` of each row block."""
        self.n_passes += 1
        high, low = self.targets
        # The dozen float64 temporaries of a block stay in cache and a few MiB whatever N.
        for rows in row_blocks(len(self.positive), 1, LOGISTIC_BLOCK_ROWS):
            positive = self.positive[rows]
            weights = None if self.weights is None else self.weights[rows]
            yield self.features(rows), positive, np.where(positive, high, low), weights


def _weighted_sum(values: NDArray, weights: NDArray | None) -> float:
    return values.sum() if weights is None else np.einsum("i,i->", weights, values)


class _Standardisation(NamedTuple):
    """Centre and scale of the design features, and what the fit derives from them."""

    centre: NDArray
    scale: NDArray
    base_rate: float  # weighted mean target
    reach: NDArray  # max |standardised feature| per column


def _standardisation(rows: _Rows, fit_intercept: bool) -> _Standardisation:
    """Two passes: the weighted means, then the weighted spread around them.

    The features are centred (only with an intercept, which absorbs the shift) and scaled to
    unit weighted spread; a column constant up to rounding keeps scale 1 (its rounding
    noise must not become a unit-scale feature).
    """
    n_features = rows.n_features
    sums, peak = np.zeros(n_features), np.zeros(n_features)
    total = target_total = 0.0
    for columns, _, targets, weights in rows.blocks():
        sums += [_weighted_sum(column, weights) for column in columns]
        total += len(targets) if weights is None else weights.sum()
        target_total += _weighted_sum(targets, weights)
        peak = np.maximum(peak, [np.abs(column).max() for column in columns])
    centre = sums / total if fit_intercept else np.zeros(n_features)
    # Spread in units of the power of two above each column's peak: exact (the same bits),
    # and the squares cannot overflow (scores of 1e300 gave an infinite spread).
    exponents = np.frexp(peak)[1]
    squares, reach = np.zeros(n_features), np.zeros(n_features)
    for columns, _, _, weights in rows.blocks():
        standard = [
            np.ldexp(column, -exponent) - np.ldexp(mean, -exponent)
            for column, mean, exponent in zip(columns, centre, exponents, strict=True)
        ]
        squares += [_weighted_sum(column * column, weights) for column in standard]
        reach = np.maximum(reach, [np.abs(column).max() for column in standard])
    spread = np.ldexp(np.sqrt(squares / total), exponents)
    scale = np.where(spread <= 1e-10 * peak, 1.0, spread)
    return _Standardisation(
        centre, scale, target_total / total, np.ldexp(reach, exponents) / scale
    )


class _LossValue(NamedTuple):
    loss: float
    gradient: NDArray
    hessian: NDArray


class _WeightedLogisticLoss:
    r"""Weighted mean cross-entropy of targets ``t`` in [0, 1] under ``sigmoid(X w + c)``.

    With ``z = X w + c``, ``X`` the standardised features ``(F - centre) / scale`` and
    weights ``v`` summing to ``V``,

    .. math:: L = \frac{1}{V} \sum_i v_i \left[\log(1 + e^{z_i}) - t_i z_i\right], \qquad
              \nabla_w L = \frac{1}{V} X^\top r, \quad \partial_c L = \frac{1}{V}
              \textstyle\sum_i r_i, \quad r_i = v_i (\sigma(z_i) - t_i).

    The Hessian ``[X 1]^T diag(v sigma (1 - sigma)) [X 1] / V`` is positive semi-definite,
    so ``L`` is convex.  Parameters are ``[w_1, ..., w_d, c]`` (``[w_1, ..., w_d]`` without
    intercept).

    One pass over the row blocks gives the loss, the gradient and the Hessian together, with
    ``log(1 + e^z) = max(z, 0) + log1p(e^{-|z|})`` and ``sigma(z)`` from the same
    ``e^{-|z|}``; the sums are accumulated in float64 block by block.  The last point's
    values are kept, so SciPy's separate calls for the loss and the Hessian at one point
    make one pass.
    """

    def __init__(
        self,
        rows: _Rows,
        centre: NDArray | None = None,
        scale: NDArray | None = None,
        fit_intercept: bool = True,
    ):
        self.rows = rows
        self.centre = np.zeros(rows.n_features) if centre is None else centre
        self.scale = np.ones(rows.n_features) if scale is None else scale
        self.total_weight = len(rows.positive) if rows.weights is None else rows.weights.sum()
        self.fit_intercept = fit_intercept
        self._last: tuple[NDArray, _LossValue] | None = None

    def __call__(self, params: NDArray) -> tuple[float, NDArray]:
        """Loss and gradient at ``params``."""
        value = self.evaluate(params)
        return value.loss, value.gradient.copy()

    def hessian(self, params: NDArray) -> NDArray:
        """Hessian of the loss at ``params``."""
        return self.evaluate(params).hessian.copy()

    def _linear(
        self, columns: list[NDArray], coef: NDArray, intercept: float
    ) -> tuple[NDArray, list[NDArray]]:
        """``z`` of a block, and its standardised feature columns."""
        standard = [
            (column - mean) / scale
            for column, mean, scale in zip(columns, self.centre, self.scale, strict=True)
        ]
        return _linear_predictor(standard, coef, intercept), standard

    def separates(self, params: NDArray) -> bool:
        """Whether 0/1 targets lie strictly on their sides of ``z = 0`` (one pass).

        Scaling such a map up would lower the loss further: its optimum is at infinity.
        """
        if not self.rows.binary:
            return False
        n_features = self.rows.n_features
        intercept = params[n_features] if self.fit_intercept else 0.0
        for columns, positive, _, _ in self.rows.blocks():
            z = self._linear(columns, params[:n_features], intercept)[0]
            if not np.all(np.where(positive, z > 0, z < 0)):
                return False
        return True

    def evaluate(self, params: NDArray) -> _LossValue:
        """Loss, gradient and Hessian at ``params`` (one pass, or none if cached)."""
        params = np.array(params, dtype=np.float64)
        if self._last is not None and np.array_equal(self._last[0], params):
            return self._last[1]
        n_features = self.rows.n_features
        coef = params[:n_features]
        intercept = params[n_features] if self.fit_intercept else 0.0
        n_params = n_features + 1  # the intercept's row and column are dropped at the end
        loss, gradient, hessian = 0.0, np.zeros(n_params), np.zeros((n_params, n_params))
        for columns, _, targets, weights in self.rows.blocks():
            z, standard = self._linear(columns, coef, intercept)
            block_loss, block_gradient, block_hessian = _block_sums(standard, z, targets, weights)
            loss += block_loss
            gradient += block_gradient
            hessian += block_hessian
        kept = slice(None) if self.fit_intercept else slice(n_features)
        value = _LossValue(
            float(loss / self.total_weight),
            gradient[kept] / self.total_weight,
            hessian[kept, kept] / self.total_weight,
        )
        self._last = (params, value)
        return value


def _block_sums(
    standard: list[NDArray], z: NDArray, targets: NDArray, weights: NDArray | None
) -> tuple[float, NDArray, NDArray]:
    """Weighted sums of one block: loss terms, gradient and Hessian (intercept last).

    Each sum is a two-operand ``einsum`` or a ``sum`` over contiguous columns: no BLAS call
    (which wakes threads) and no ``(m, d)`` temporary.
    """
    decay = np.exp(-np.abs(z))  # e^{-|z|} in (0, 1]: no overflow whatever z
    denominator = 1.0 + decay
    terms = np.log1p(decay)
    terms += np.maximum(z, 0.0)  # log(1 + e^z)
    terms -= targets * z
    residual = np.where(z >= 0, 1.0, decay)
    residual /= denominator  # sigma(z)
    residual -= targets
    curvature = decay / denominator
    curvature /= denominator  # sigma(z) (1 - sigma(z))
    if weights is not None:
        terms *= weights
        residual *= weights
        curvature *= weights
    n_features = len(standard)
    gradient = np.empty(n_features + 1)
    hessian = np.empty((n_features + 1, n_features + 1))
    gradient[n_features] = residual.sum()
    hessian[n_features, n_features] = curvature.sum()
    for j, column in enumerate(standard):
        gradient[j] = np.einsum("i,i->", residual, column)
        weighted = curvature * column
        hessian[j, n_features] = hessian[n_features, j] = weighted.sum()
        for k in range(j, n_features):
            hessian[j, k] = hessian[k, j] = np.einsum("i,i->", weighted, standard[k])
    return terms.sum(), gradient, hessian


def _linear_predictor(columns, coef: NDArray, intercept: float) -> NDArray:
    """``intercept + sum_j coef[j] * columns[j]`` (a list of columns, or a 2-D array's)."""
    z = np.full(len(columns[0]), float(intercept))
    for column, slope in zip(columns, coef, strict=True):
        z += slope * column
    return z


class _LogisticFit(NamedTuple):
    coef: NDArray
    intercept: float
    at_infinity: bool
    n_passes: int  # passes over the rows


def _fit_logistic(rows: _Rows, *, fit_intercept: bool, nonnegative: bool) -> _LogisticFit:
    """Minimise :class:`_WeightedLogisticLoss` over the coefficients and intercept.

    The features are standardised (:func:`_standardisation`), which makes the problem well
    conditioned whatever the magnitude of the scores (logits of 1e4 included) and keeps the
    sign of each coefficient, so that ``nonnegative`` is the bound ``w >= 0`` in either
    scale.

    The unconstrained Newton optimum is kept when it lies inside the box and does not
    separate 0/1 targets; otherwise L-BFGS-B minimises inside the box (slopes within
    ``+-_SLOPE_BOUND``, ``>= 0`` if ``nonnegative``).  ``at_infinity`` reports that the
    likelihood's supremum is not attained: the box was reached or, for 0/1 targets, the
    fitted map separates the two classes strictly (scaling it up would still lower the loss).

    Every evaluation is one pass over the rows (:class:`_WeightedLogisticLoss`); with the
    two passes of the standardisation, a typical interior fit makes about ten passes.
    """
    n_features = rows.n_features
    standardisation = _standardisation(rows, fit_intercept)
    objective = _WeightedLogisticLoss(
        rows, standardisation.centre, standardisation.scale, fit_intercept
    )
    bounds = [(0.0 if nonnegative else -_SLOPE_BOUND, _SLOPE_BOUND)] * n_features
    start = np.zeros(n_features + fit_intercept)
    if fit_intercept:
        intercept_bound = _SLOPE_BOUND * (1.0 + standardisation.reach.sum())
        bounds.append((-intercept_bound, intercept_bound))
        start[-1] = _scipy.special.logit(np.clip(standardisation.base_rate, 1e-4, 1 - 1e-4))
    low, high = np.array(bounds).T
    params = _newton(objective, start)
    if (
        params is None
        or not np.all((params > low) & (params < high))
        or objective.separates(params)
    ):
        # A bound binds (a coefficient would be negative) or the likelihood keeps improving
        # towards infinity: minimise in the box.
        params = _minimise_in_box(objective, start if params is None else params, low, high)
    params = _newton_polish(objective, params, low, high)

    at_bound = bool((np.abs(params) >= 0.999999 * np.maximum(np.abs(low), high)).any())
    coef = params[:n_features] / standardisation.scale
    intercept = float(params[n_features] - coef @ standardisation.centre) if fit_intercept else 0.0
    at_infinity = at_bound or objective.separates(params)
    return _LogisticFit(coef, intercept, at_infinity, rows.n_passes)


def _minimise_in_box(
    objective: _WeightedLogisticLoss, start: NDArray, low: NDArray, high: NDArray
) -> NDArray:
    """L-BFGS-B inside the box ``[low, high]`` from ``start`` (clipped into it)."""
    result = _scipy.optimize.minimize(
        objective,
        np.clip(start, low, high),
        jac=True,
        method="L-BFGS-B",
        bounds=list(zip(low, high, strict=True)),
        options={"maxiter": 1000, "ftol": 1e-15, "gtol": 1e-10},
    )
    params = result.x
    projected_gradient = np.clip(params - objective(params)[1], low, high) - params
    # L-BFGS-B may stop on a rounding-limited line search once the gradient is negligible.
    if not result.success and np.abs(projected_gradient).max() > 1e-6:
        raise RuntimeError(f"the logistic fit did not converge: {result.message}")
    return params


def _newton(objective: _WeightedLogisticLoss, start: NDArray) -> NDArray | None:
    """Unconstrained minimum by SciPy's trust-region Newton method, or ``None`` if not found.

    With the exact Hessian it converges in a few iterations to a gradient at rounding level.
    It is tried first because SciPy's L-BFGS-B calls LAPACK on tiny matrices, which wakes
    OpenBLAS threads on every iteration (~1-2 ms per iteration on a busy 2-core machine, 100x
    the arithmetic); the box is needed only when the unconstrained optimum leaves it.
    """
    with np.errstate(over="ignore"):
        result = _scipy.optimize.minimize(
            objective,
            start,
            jac=True,
            hess=objective.hessian,
            method="trust-exact",
            options={"gtol": 1e-10, "maxiter": 100},
        )
    if not np.isfinite(result.x).all() or not np.abs(result.jac).max() <= 1e-8:
        return None
    return result.x


def _newton_polish(
    objective: _WeightedLogisticLoss, params: NDArray, low: NDArray, high: NDArray
) -> NDArray:
    """A few Newton steps on the coordinates strictly inside the box.

    L-BFGS-B stops once a step no longer lowers the loss measurably, which on an
    ill-conditioned pair of features (``ln s`` and ``-ln(1 - s)``) can leave the parameters
    ~1e-7 from the optimum (``trust-exact`` stops at its ``gtol``); Newton steps with the
    exact Hessian converge quadratically from there, with the bound coordinates held fixed.
    A step is kept only while it stays in the box and shrinks the gradient.
    """
    free = (params > low) & (params < high)
    gradient = objective(params)[1]
    for _ in range(4):
        if not free.any():
            break
        curvature = objective.hessian(params)[np.ix_(free, free)]
        try:
            step = np.linalg.solve(curvature, -gradient[free])
        except np.linalg.LinAlgError:
            break
        candidate = params.copy()
        candidate[free] += step
        if not np.all((candidate[free] > low[free]) & (candidate[free] < high[free])):
            break
        candidate_gradient = objective(candidate)[1]
        if not np.abs(candidate_gradient[free]).max() < np.abs(gradient[free]).max():
            break
        params, gradient = candidate, candidate_gradient
    return params


class _Design(NamedTuple):
    """How a method's fitting features derive from its map features ``M`` (n, d).

    The model is fitted on ``M @ transform + offset`` (with an intercept if
    ``fit_intercept``) and its fitted ``(w, c)`` become the map's coefficients
    ``transform @ w`` and intercept ``c + offset @ w``, so prediction always reads
    ``M @ coef + intercept``.
    """

    transform: NDArray
    offset: NDArray
    fit_intercept: bool
    nonnegative: bool


def _design_columns(map_columns: list[NDArray], design: _Design) -> list[NDArray]:
    """The fitting features ``M @ transform + offset``, column by column.

    Terms with a 0 in ``transform`` are skipped and a factor 1 is not applied: both are
    exact, so each column holds the values of the full product.
    """
    columns = []
    for weights, offset in zip(design.transform.T, design.offset, strict=True):
        column = None
        for weight, values in zip(weights, map_columns, strict=True):
            if weight != 0:
                term = values if weight == 1 else weight * values
                column = term if column is None else column + term
        columns.append(column if offset == 0 else column + offset)
    return columns


#: ``fit`` of Platt and beta calibration returns ``self``, of its own type.
_LogisticT = TypeVar("_LogisticT", bound="_OneVsRestLogistic")


class _OneVsRestLogistic(Recalibrator):
    """A logistic map of one score per model: binary, or one-vs-rest and renormalised.

    Subclasses give, from their checked parameters, the input kind, the fitting design and
    whether targets are smoothed, and the map feature columns of a score column (fixed per
    class);
    everything else (targets, fitting, warnings, prediction) is shared.  The input kind is
    stored at fit (``input_``), and prediction reads it from there.
    """

    # -- hooks ---------------------------------------------------------------------------
    def _input_kind(self, params: dict[str, Any]) -> str:
        raise NotImplementedError

    def _map_columns(self, scores: NDArray, n_features: int) -> list[NDArray]:
        """The ``n_features`` map feature columns of a score column.

        ``n_features`` is the design's in fit and the fitted ``coef_``'s in prediction, so
        that prediction reads the fitted state only.
        """
        raise NotImplementedError

    def _design(self, params: dict[str, Any]) -> _Design:
        raise NotImplementedError

    def _smoothed(self, params: dict[str, Any]) -> bool:
        return False

    @classmethod
    def _fitted_dimensions(cls, state: dict[str, Any]) -> dict[str, int]:
        n_classes = state["n_classes_"]
        return {"M": 1 if n_classes == 2 else n_classes}  # one model, or one per class

    # -- shared machinery ----------------------------------------------------------------
    @staticmethod
    def _score_columns(X: ArrayLike, kind: str) -> tuple[NDArray, int]:
        """Validated scores, one column per model ((N, 1) if binary, else (N, K)), and K.

        A binary score column is the input itself where possible (a 1-D array is not
        expanded to two columns): the fit reads it block by block.
        """
        if kind == "logits":
            values, _ = iv._finite_logits(X, "X")
            if values.ndim == 1:
                return values[:, None], 2  # the binary logit z, i.e. log(p1 / p0) of [0, z]
            if values.shape[1] == 2:
                return (values[:, 1].astype(np.float64) - values[:, 0])[:, None], 2
            return values, values.shape[1]
        values, _ = iv._as_float_array(X, "X", "probabilities")
        if values.ndim == 1:
            iv._check_range(values, "X")  # all check_prob checks of [1 - p, p]
            return values[:, None], 2
        values = iv.check_prob(X, name="X")  # rows checked at X's own precision (float16)
        if values.shape[1] == 2:
            return values[:, 1:], 2
        return values, values.shape[1]

    @staticmethod
    def _targets(
        positive: NDArray, weights: NDArray | None, smoothed: bool
    ) -> tuple[float, float]:
        """The targets of a positive and of a negative row."""
        if not smoothed:
            return 1.0, 0.0
        # Platt (1999), section 2.2: a prior on the labels, with weighted counts.
        if weights is None:
            n_positive = float(np.count_nonzero(positive))
            n_negative = len(positive) - n_positive
        else:
            n_positive = weights[positive].sum()
            n_negative = weights[~positive].sum()
        return (n_positive + 1) / (n_positive + 2), 1 / (n_negative + 2)

    def _model_rows(
        self, scores: NDArray, model: int, design: _Design, positive: NDArray, targets, weights
    ) -> _Rows:
        """The rows of model ``model``: its design features come from column ``model``."""

        def features(rows: slice) -> list[NDArray]:
            map_columns = self._map_columns(
                np.asarray(scores[rows, model], dtype=np.float64), design.transform.shape[0]
            )
            return _design_columns(map_columns, design)

        return _Rows(features, design.transform.shape[1], positive, targets, weights)

    def fit(
        self: _LogisticT, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> _LogisticT:
        """Fit on calibration scores ``X`` ((N, K) or (N,)) and labels ``y`` (N,).

        Returns
        -------
        self
        """
        params = self._checked_params()
        kind = self._input_kind(params)
        scores, n_classes = self._score_columns(X, kind)
        labels = self._fit_labels(y, len(scores), n_classes)
        # Platt's smoothed targets count the weights as rows; the plain fits are scale-free
        weights = iv.check_sample_weight(
            sample_weight, len(scores), scale_free=not self._smoothed(params)
        )
        if weights is not None and not weights.all():
            # Rows of weight 0 are absent; they must not count in separation checks.
            kept = weights > 0
            scores, labels, weights = scores[kept], labels[kept], weights[kept]
        binary = n_classes == 2
        n_models = 1 if binary else n_classes
        n_map_features = self._design(params).transform.shape[0]
        coef = np.empty((n_models, n_map_features))
        intercept = np.empty(n_models)
        absent, unbounded = [], []
        for model in range(n_models):
            positive = labels == (1 if binary else model)
            both_labels = bool(positive.any() and not positive.all())
            if not both_labels and (binary or not positive.any()):
                absent.append((0 if positive.any() else 1) if binary else model)
            coef[model], intercept[model], at_infinity = self._fit_model(
                scores, model, positive, weights, params
            )
            # A single-label model is at infinity by nature and reported as an absent class.
            if at_infinity and both_labels:
                unbounded.append(1 if binary else model)
        self._warn(absent, unbounded, binary)
        self.coef_ = coef
        self.intercept_ = intercept
        self.n_classes_ = int(n_classes)
        self.input_ = kind
        return self

    def _fit_model(
        self, scores: NDArray, model: int, positive: NDArray, weights, params: dict[str, Any]
    ) -> tuple[NDArray, float, bool]:
        """Model ``model``'s map coefficients, intercept and whether its fit is at infinity."""
        design = self._design(params)
        targets = self._targets(positive, weights, self._smoothed(params))
        fit = _fit_logistic(
            self._model_rows(scores, model, design, positive, targets, weights),
            fit_intercept=design.fit_intercept,
            nonnegative=design.nonnegative,
        )
        return (
            design.transform @ fit.coef,
            fit.intercept + design.offset @ fit.coef,
            fit.at_infinity,
        )

    def _warn(self, absent: list[int], unbounded: list[int], binary: bool) -> None:
        name = type(self).__name__
        if absent:
            if binary:
                text = f"only class {1 - absent[0]} occurs in {{y}}"
            else:
                text = f"class(es) {short_list(absent)} never occur in {{y}}"
            warn(
                Text(
                    text + ", so a {name} fit sees a single label and pushes the missing "
                    "class's calibrated probability towards 0 as far as the map allows. "
                    "Calibrate on a set that contains every class.",
                    fields={"name": name},
                )
            )
        if unbounded:
            subject = "the two classes" if binary else f"class(es) {short_list(unbounded)}"
            warn(
                f"the calibration scores separate {subject} from the rest perfectly, so the "
                f"maximum-likelihood {name} map lies at infinity; the fit was stopped at a "
                "bound (a near-step map). More calibration data or smoothed targets give a "
                "finite fit."
            )

    def _calibrated_logits(self, X: ArrayLike) -> NDArray:
        scores, n_classes = self._score_columns(X, self.input_)
        self._check_n_classes(n_classes)
        n_models = scores.shape[1]
        positive_log_probs = np.empty((len(scores), n_models))
        for model in range(n_models):
            features = self._map_columns(
                np.asarray(scores[:, model], dtype=np.float64), self.coef_.shape[1]
            )
            z = _linear_predictor(features, self.coef_[model], self.intercept_[model])
            if n_classes == 2:
                return np.stack(
                    [_scipy.special.log_expit(-z), _scipy.special.log_expit(z)], axis=1
                )
            positive_log_probs[:, model] = _scipy.special.log_expit(z)
        # Renormalisation ignores a common factor per row; dividing by the row maximum first
        # keeps a row whose one-vs-rest probabilities all underflow from becoming 0 / 0.
        positive_log_probs -= positive_log_probs.max(axis=1, keepdims=True)
        return log_in_place(normalised_probs(np.exp(positive_log_probs)))


def _warn_labels(single: list[int], unbounded: list[int]) -> None:
    """The warnings of a multi-label Platt fit: labels of one value, labels separated."""
    if single:
        warn(
            Text(
                "label(s) {which} of {y} hold a single value (always 0 or always 1), so the "
                "PlattScaling fit pushes their calibrated probability towards it as far as "
                "the map allows. Calibrate on a set where every label occurs and is absent.",
                fields={"which": short_list(single)},
            )
        )
    if unbounded:
        warn(
            Text(
                "the calibration scores separate label(s) {which} perfectly, so their "
                "maximum-likelihood Platt map lies at infinity; the fit was stopped at a "
                "bound (a near-step map). More calibration data or smoothed targets give a "
                "finite fit.",
                fields={"which": short_list(unbounded)},
            )
        )


def _platt_terms(name: str, state: dict[str, Any]) -> Text | None:
    """Schema rule: a Platt map has a linear term, and a quadratic one if fitted so."""
    if state[name].shape[1] in (1, 2):
        return None
    return Text(
        "{argument} must have 1 column (a s) or 2 (a s + a_2 s^2); got {n}.",
        argument=name,
        fields={"n": state[name].shape[1]},
    )


#: ``input_`` of a multi-label Platt fit: one logit, or one probability, per label.
_PER_LABEL_INPUTS = ("logits per label", "probabilities per label")


class PlattScaling(_OneVsRestLogistic):
    r"""Platt scaling (Platt 1999): ``sigmoid(a s + b)`` of one score per class.

    .. math:: P(y = 1 \mid s) = \frac{1}{1 + \exp(-(a s + b))}.

    A binary task (``X`` of shape (N,) or (N, 2)) has one model on the positive-class score;
    with ``K > 2`` classes, model ``k`` is fitted one-vs-rest (label ``y == k``) on column
    ``k`` and the ``K`` calibrated probabilities of each row are renormalised to sum to 1.

    The score ``s`` is

    * ``input='logits'``: the logit column ``z_k``; on a binary task the binary logit
      ``z_1 - z_0`` (a 1-D array is that logit itself).  From saved probabilities, pass
      ``log(p)`` (the binary score is then ``log(p_1 / p_0)``);
    * ``input='probabilities'``: the probability ``p_k`` itself, as scikit-learn's
      ``CalibratedClassifierCV(method='sigmoid')`` does with ``predict_proba``.  A sigmoid
      of a probability in [0, 1] is bounded away from 0 and 1 unless ``a`` is large, so
      logits usually calibrate better.

    With ``smoothed_targets=True`` (the default, Platt's section 2.2 and scikit-learn's
    sigmoid calibration) the labels are replaced by the targets

    .. math:: t_+ = \frac{N_+ + 1}{N_+ + 2}, \qquad t_- = \frac{1}{N_- + 2},

    where :math:`N_\pm` are the (weighted) numbers of positive and negative samples; this
    prior keeps ``a`` and ``b`` finite on any calibration set.  ``smoothed_targets=False``
    gives the plain maximum-likelihood logistic regression on ``s``, whose optimum lies at
    infinity when ``s`` separates the classes; the fit then stops at a bound (the logit
    moves by at most 100 per standard deviation of ``s``) with a ``UserWarning``.

    ``a`` and ``b`` minimise the weighted cross-entropy, on the score standardised to zero
    mean and unit variance, by SciPy's ``trust-exact`` Newton method with the analytic
    gradient and Hessian (L-BFGS-B inside the bound where the optimum is at infinity).

    With ``quadratic=True`` the map is quadratic in the score (quadratic scaling),

    .. math:: P(y = 1 \mid s) = \frac{1}{1 + \exp(-(a s + a_2 s^2 + b))},

    a logistic regression on the features ``(s, s^2)``, fitted the same way (the same
    targets, each feature standardised).  It is not monotone in ``s`` where ``a_2 \ne 0``
    (its vertex ``-a / (2 a_2)`` may lie inside the scores), and it can bend the map both
    ways, which one slope cannot: a logit map that is too confident at one end of the
    scores and not confident enough at the other.  Its weighted cross-entropy is convex in
    ``(a, a_2, b)``, so the fit is the unique optimum where the features are not collinear.
    It is the ``'quadratic-scaling'`` calibrator of probmetrics, the package of Berta et
    al. (2025), and the binary default of its ``LogisticCalibrator``; there it is fitted
    on the 0/1 labels (``smoothed_targets=False`` here) of the binary logit
    ``log(p) - log(1 - p)``.

    Parameters
    ----------
    input : {'logits', 'probabilities'}, default 'logits'
        What ``X`` holds; the score is a logit column or a probability column.
    smoothed_targets : bool, default True
        Use Platt's smoothed targets instead of the 0/1 labels.
    quadratic : bool, default False
        Add the term ``a_2 s^2`` to the logit (see above).
    multilabel : bool, default False
        Multi-label task: ``X`` holds one score per label (N, K), ``y`` an (N, K) 0/1 label
        matrix (a 2-D ``y`` is read so only when this is True), and label ``k`` has its own
        ``(a_k, b_k)``, fitted on its own column against its own 0/1 column (``K``
        independent binary fits, each vectorised over the rows; no renormalisation).
        ``predict_proba`` gives the independent sigmoids, ``predict`` the 0/1 matrix ``p >=
        1/2``, ``score`` the mean over the labels of the mean binary log-likelihood;
        ``input_`` is then ``'logits per label'`` or ``'probabilities per label'``.  Probability
        rows that sum to 1 beside one-hot label rows are refused (a multiclass call).

    classes : sequence of str (or of numbers), optional
        Names of the classes, in the column order of ``X``: ``y`` is then given as names
        (``fit``, ``score``), ``classes_`` holds these names and ``predict`` returns them.
        Saved with the fitted state.  Default: ``y`` holds column indices (as it does in
        ``fit_blocks`` and on Dask arrays).

    Attributes
    ----------
    coef_ : ndarray, shape (n_models, 1) or (n_models, 2)
        Slope ``a`` of each model (one model if binary, else one per class), and with
        ``quadratic`` the coefficient ``a_2`` of ``s^2`` in a second column.
    intercept_ : ndarray, shape (n_models,)
        Intercept ``b`` of each model.
    n_classes_ : int
        Number of classes seen in ``fit``.
    input_ : {'logits', 'probabilities', 'logits per label', 'probabilities per label'}
        What ``X`` held in ``fit``, and so must hold in prediction.

    References
    ----------
    .. [1] J. Platt, "Probabilistic Outputs for Support Vector Machines and Comparisons to
       Regularized Likelihood Methods", Advances in Large Margin Classifiers, 1999.
    .. [2] H.-T. Lin, C.-J. Lin and R. C. Weng, "A note on Platt's probabilistic outputs for
       support vector machines", Machine Learning 68, 2007.
    .. [3] E. Berta, D. Holzmüller, M. I. Jordan and F. Bach, "Rethinking Early Stopping:
       Refine, Then Calibrate", 2025 (arXiv:2501.19195), and its package probmetrics.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import softmax
    >>> from calibration_toolbox.recalibration.binary import PlattScaling
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.integers(0, 2, 1000)
    >>> logit = 4.0 * (2 * labels - 1 + rng.normal(size=1000))  # binary logits, overconfident
    >>> platt = PlattScaling().fit(logit, labels)
    >>> round(float(platt.coef_[0, 0]), 3), round(float(platt.intercept_[0]), 3)
    (0.551, 0.087)
    >>> platt.predict_proba(logit[:2]).round(3)
    array([[0.005, 0.995],
           [0.091, 0.909]])
    >>> np.allclose(softmax(platt(logit), axis=1), platt.predict_proba(logit))  # callable
    True

    Quadratic scaling adds ``a_2 s^2`` (here close to 0: the map is close to linear):

    >>> bent = PlattScaling(quadratic=True).fit(logit, labels)
    >>> bent.coef_.round(4), bent.intercept_.round(3)
    (array([[ 0.5514, -0.0011]]), array([0.096]))
    """

    _parameters: ClassVar[dict[str, Checker]] = {
        "input": iv.choice("logits", "probabilities"),
        "smoothed_targets": iv.check_flag,
        "quadratic": iv.check_flag,
        "multilabel": iv.check_flag,
    }
    _fitted_schema: ClassVar[dict[str, Field]] = {
        "coef_": array_field(
            ("M", "F"), low=-COEFFICIENT_LIMIT, high=COEFFICIENT_LIMIT, rule=_platt_terms
        ),
        "intercept_": array_field(("M",), low=-COEFFICIENT_LIMIT, high=COEFFICIENT_LIMIT),
        "n_classes_": N_CLASSES_FIELD,
        "input_": choice_field("logits", "probabilities", *_PER_LABEL_INPUTS),
    }

    def __init__(
        self,
        input: str = "logits",
        smoothed_targets: bool = True,
        *,
        quadratic: bool = False,
        multilabel: bool = False,
        classes: ArrayLike | None = None,
    ):
        self.input = input
        self.smoothed_targets = smoothed_targets
        self.quadratic = quadratic
        self.multilabel = multilabel
        self.classes = classes

    @classmethod
    def _fitted_dimensions(cls, state: dict[str, Any]) -> dict[str, int]:
        if state.get("input_") in _PER_LABEL_INPUTS:
            return {"M": state["n_classes_"]}  # one model per label
        return super()._fitted_dimensions(state)

    @property
    def _per_label(self) -> bool:
        return getattr(self, "input_", None) in _PER_LABEL_INPUTS

    def _fit_labels_matrix(self, X, y, sample_weight, params: dict[str, Any]) -> PlattScaling:
        """``multilabel=True``: one ``(a, b)`` per label, on the label's own 0/1 column."""
        if _arrays.is_dask_array(X) or self.classes is not None:
            raise InputError(
                "{argument} is not supported with multilabel=True yet: pass NumPy arrays "
                "and no class names.",
                argument="classes" if self.classes is not None else "X",
            )
        logits = params["input"] == "logits"
        checked = iv.check_multilabel(X, y, logits=logits, names=("X", "y"), sigmoids=False)
        n_samples, n_labels = checked.targets.shape
        if n_labels < 2:
            raise InputError(
                "{X:has} one label: with multilabel=True give two labels or more (one "
                "label is a binary task: PlattScaling on its column, np.ravel(X)).",
                argument="X",
            )
        scores = checked.log_odds if logits else checked.prob
        weights = iv.check_sample_weight(
            sample_weight, n_samples, scale_free=not params["smoothed_targets"]
        )
        present = checked.targets.astype(bool)
        if weights is not None and not weights.all():
            kept = weights > 0  # rows of weight 0 are absent
            scores, present, weights = scores[kept], present[kept], weights[kept]
        n_features = self._design(params).transform.shape[0]  # a s, and a_2 s^2 if quadratic
        coef, intercept = np.empty((n_labels, n_features)), np.empty(n_labels)
        single, unbounded = [], []
        for label in range(n_labels):  # K binary fits, each vectorised over the rows
            column = present[:, label]
            coef[label], intercept[label], at_infinity = self._fit_model(
                scores, label, column, weights, params
            )
            if not (column.any() and not column.all()):
                single.append(label)
            elif at_infinity:
                unbounded.append(label)
        _warn_labels(single, unbounded)
        self._class_names = None
        self.coef_, self.intercept_ = coef, intercept
        self.n_classes_ = n_labels
        self.input_ = _PER_LABEL_INPUTS[1 - logits]
        return self

    def _calibrated_logits(self, X: ArrayLike) -> NDArray:
        """Calibrated logits; (multi-label) each label's ``a_k s_k (+ a2_k s_k^2) + b_k``."""
        if not self._per_label:
            return super()._calibrated_logits(X)
        logits = self.input_ == _PER_LABEL_INPUTS[0]
        scores = iv.check_label_scores(X, self.n_classes_, logits=logits)
        terms = self._map_columns(scores, self.coef_.shape[1])
        return sum(term * self.coef_[:, j] for j, term in enumerate(terms)) + self.intercept_

    def predict_proba(self, X: ArrayLike) -> NDArray:
        """Calibrated probabilities (N, K): a softmax, or (multi-label) one sigmoid per label."""
        if self._per_label:
            return _scipy.special.expit(self(X))
        return super().predict_proba(X)

    def predict(self, X: ArrayLike) -> NDArray:
        """The class of largest probability, or (multi-label) the 0/1 matrix ``p >= 1/2``."""
        if self._per_label:
            return (self(X) >= 0).astype(np.uint8)
        return super().predict(X)

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """Mean log-likelihood; (multi-label) the mean over the labels of each label's."""
        if not self._per_label:
            return super().score(X, y, sample_weight)
        return label_log_likelihood(self(X), y, sample_weight)

    def _input_kind(self, params: dict[str, Any]) -> str:
        return params["input"]

    def _map_columns(self, scores: NDArray, n_features: int) -> list[NDArray]:
        return [scores] if n_features == 1 else [scores, scores * scores]

    def _design(self, params: dict[str, Any]) -> _Design:
        n_features = 2 if params["quadratic"] else 1
        return _Design(np.eye(n_features), np.zeros(n_features), True, nonnegative=False)

    def _smoothed(self, params: dict[str, Any]) -> bool:
        return params["smoothed_targets"]

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> PlattScaling:
        """Fit on logits or probabilities ``X`` ((N, K) or (N,)) and labels ``y`` (N,).

        With ``multilabel=True``, ``y`` is the (N, K) 0/1 label matrix.

        Returns
        -------
        self
        """
        params = self._checked_params()
        if params["multilabel"]:
            return self._fit_labels_matrix(X, y, sample_weight, params)
        return super().fit(X, y, sample_weight)


_BETA_DESIGNS = {
    # logit mu = a ln s - b ln(1 - s) + c with a, b >= 0.
    "abm": _Design(np.eye(2), np.zeros(2), fit_intercept=True, nonnegative=True),
    # m = 0.5 (the map fixes 1/2): c = (a - b) ln 2, i.e. a ln(2 s) - b ln(2 (1 - s)).
    "ab": _Design(np.eye(2), np.log(2.0) * np.array([1.0, -1.0]), False, True),
    # a = b: logit mu = a logit(s) + c, c = a ln((1 - m) / m).
    "am": _Design(np.ones((2, 1)), np.zeros(1), fit_intercept=True, nonnegative=True),
}


class BetaCalibration(_OneVsRestLogistic):
    r"""Beta calibration (Kull, Silva Filho and Flach 2017) of probabilities.

    .. math:: \operatorname{logit} \mu(s) = a \ln s - b \ln(1 - s) + c, \qquad a, b \ge 0,

    the family of maps between two beta-distributed class-conditional score densities; it
    contains the identity (``a = b = 1, c = 0``).  The paper writes ``c = b ln(1 - m) - a ln
    m`` with a midpoint ``m`` (``mu(m) = 1/2``).  ``parameters`` selects the variant:

    * ``'abm'``: ``a``, ``b`` and ``c`` free (the three-parameter model);
    * ``'ab'``: ``m = 1/2``, so ``c = (a - b) ln 2`` and the map reads
      ``a ln(2s) - b ln(2(1 - s))`` (no free intercept).  It always maps 1/2 to 1/2, so it
      cannot follow a base rate far from 1/2 (a rare class in one-vs-rest, for instance);
    * ``'am'``: ``a = b``, so ``logit mu = a logit(s) + c``: Platt scaling on the logit of
      ``s``, with ``a >= 0``.

    A binary task (``X`` of shape (N,) or (N, 2)) has one model on ``s = P(y = 1)``; with
    ``K > 2`` classes, model ``k`` is fitted one-vs-rest on column ``k`` and each row's
    ``K`` calibrated probabilities are renormalised to sum to 1.

    Probabilities are clipped to ``[BETA_EPS, 1 - BETA_EPS]`` (``BETA_EPS = 2**-52``) so that
    exact 0 and 1 give finite logarithms.  The weighted cross-entropy is minimised with its
    analytic gradient and Hessian by SciPy's ``trust-exact`` Newton method; when that
    unconstrained optimum has a negative ``a`` or ``b``, L-BFGS-B minimises again with the
    bounds ``a, b >= 0`` (a monotone map), in every variant.  The ``betacal`` package instead
    drops the feature whose coefficient comes out negative and refits (without a check that
    the result is the bounded optimum), and does not bound ``'ab'`` or ``'am'``.  Where the
    likelihood keeps improving towards infinity (the scores separate the classes), the fit
    stops at a bound (at most 100 per standard deviation of each feature) with a
    ``UserWarning``.

    Parameters
    ----------
    parameters : {'abm', 'ab', 'am'}, default 'abm'
        Which parameters are fitted (see above).

    classes : sequence of str (or of numbers), optional
        Names of the classes, in the column order of ``X``: ``y`` is then given as names
        (``fit``, ``score``), ``classes_`` holds these names and ``predict`` returns them.
        Saved with the fitted state.  Default: ``y`` holds column indices (as it does in
        ``fit_blocks`` and on Dask arrays).

    Attributes
    ----------
    coef_ : ndarray, shape (n_models, 2)
        ``[a, b]`` of each model (one model if binary, else one per class); ``a == b`` for
        ``'am'``.
    intercept_ : ndarray, shape (n_models,)
        ``c`` of each model; ``(a - b) ln 2`` for ``'ab'``.
    n_classes_ : int
        Number of classes seen in ``fit``.
    input_ : 'probabilities'
        What ``X`` holds (always probabilities; stored as for :class:`PlattScaling`).

    References
    ----------
    .. [1] M. Kull, T. M. Silva Filho and P. Flach, "Beta calibration: a well-founded and
       easily implemented improvement on logistic calibration for binary classifiers",
       AISTATS, 2017.
    .. [2] M. Kull, T. M. Silva Filho and P. Flach, "Beyond sigmoids: How to obtain
       well-calibrated probabilities from binary classifiers with beta calibration",
       Electronic Journal of Statistics 11(2), 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox.recalibration.binary import BetaCalibration
    >>> rng = np.random.default_rng(1)
    >>> labels = rng.integers(0, 2, 4000)
    >>> # Class-conditional Beta(4, 2) and Beta(2, 3) scores: a = 2, b = 1, c = ln(5/3) = 0.51
    >>> score = rng.beta(np.where(labels == 1, 4.0, 2.0), np.where(labels == 1, 2.0, 3.0))
    >>> beta = BetaCalibration().fit(score, labels)
    >>> beta.coef_.round(2), beta.intercept_.round(2)
    (array([[2.01, 1.11]]), array([0.44]))
    >>> beta.predict_proba([0.1, 0.5, 0.9]).round(3)
    array([[0.983, 0.017],
           [0.547, 0.453],
           [0.059, 0.941]])
    """

    _parameters: ClassVar[dict[str, Checker]] = {"parameters": iv.choice(*_BETA_DESIGNS)}
    _fitted_schema: ClassVar[dict[str, Field]] = {
        "coef_": array_field(("M", 2), low=0.0, high=COEFFICIENT_LIMIT),
        "intercept_": array_field(("M",), low=-COEFFICIENT_LIMIT, high=COEFFICIENT_LIMIT),
        "n_classes_": N_CLASSES_FIELD,
        "input_": choice_field("probabilities"),
    }

    def __init__(self, parameters: str = "abm", *, classes: ArrayLike | None = None):
        self.parameters = parameters
        self.classes = classes

    def _input_kind(self, params: dict[str, Any]) -> str:
        return "probabilities"

    def _map_columns(self, scores: NDArray, n_features: int) -> list[NDArray]:
        clipped = np.clip(scores, BETA_EPS, 1 - BETA_EPS)
        negative_log = np.log1p(-clipped)
        return [np.log(clipped, out=clipped), np.negative(negative_log, out=negative_log)]

    def _design(self, params: dict[str, Any]) -> _Design:
        return _BETA_DESIGNS[params["parameters"]]

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> BetaCalibration:
        """Fit on probabilities ``X`` ((N, K) or (N,)) and labels ``y`` (N,).

        Returns
        -------
        self
        """
        return super().fit(X, y, sample_weight)
