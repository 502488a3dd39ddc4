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

from typing import Any, ClassVar, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize
from scipy.special import expit, log_expit, logit

from calibration_toolbox import _validation as iv
from calibration_toolbox._warnings import warn
from calibration_toolbox.recalibration._base import (
    COEFFICIENT_LIMIT,
    Checker,
    Field,
    Recalibrator,
    array_field,
    choice_field,
    integer_field,
    log_in_place,
    normalised_probs,
)

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


class _WeightedLogisticLoss:
    r"""Weighted mean cross-entropy of targets ``t`` in [0, 1] under ``sigmoid(X w + c)``.

    With ``z = X w + c`` and weights normalised to sum to 1,

    .. math:: L = \sum_i w_i \left[\log(1 + e^{z_i}) - t_i z_i\right], \qquad
              \nabla_w L = X^\top r, \quad \partial_c L = \textstyle\sum_i r_i, \quad
              r_i = w_i (\sigma(z_i) - t_i).

    The Hessian ``[X 1]^T diag(w sigma (1 - sigma)) [X 1]`` is positive semi-definite, so
    ``L`` is convex.  Parameters are ``[w_1, ..., w_d, c]`` (``[w_1, ..., w_d]`` without
    intercept).
    """

    def __init__(
        self, features: NDArray, targets: NDArray, weights: NDArray, fit_intercept: bool = True
    ):
        self.features = features
        self.targets = targets
        self.weights = weights / weights.sum()
        self.fit_intercept = fit_intercept

    def linear(self, params: NDArray) -> NDArray:
        """``z = X w + c`` (column by column: no BLAS threads for a few columns)."""
        n_features = self.features.shape[1]
        intercept = params[n_features] if self.fit_intercept else 0.0
        return _linear_predictor(self.features, params[:n_features], intercept)

    def __call__(self, params: NDArray) -> tuple[float, NDArray]:
        """Loss and gradient at ``params``."""
        z = self.linear(params)
        loss = np.einsum("i,i->", self.weights, np.logaddexp(0.0, z) - self.targets * z)
        residual = self.weights * (expit(z) - self.targets)
        gradient = np.einsum("i,ij->j", residual, self.features)
        if self.fit_intercept:
            gradient = np.append(gradient, residual.sum())
        return float(loss), gradient

    def hessian(self, params: NDArray) -> NDArray:
        """Hessian of the loss at ``params``."""
        z = self.linear(params)
        curvature = self.weights * expit(z) * expit(-z)
        weighted = self.features * curvature[:, None]
        block = np.einsum("ij,ik->jk", weighted, self.features)
        if not self.fit_intercept:
            return block
        n_features = self.features.shape[1]
        hessian = np.empty((n_features + 1, n_features + 1))
        hessian[:n_features, :n_features] = block
        hessian[n_features, :n_features] = hessian[:n_features, n_features] = weighted.sum(axis=0)
        hessian[n_features, n_features] = curvature.sum()
        return hessian


def _linear_predictor(features: NDArray, coef: NDArray, intercept: float) -> NDArray:
    z = np.full(len(features), float(intercept))
    for column, slope in enumerate(coef):
        z += slope * features[:, column]
    return z


class _LogisticFit(NamedTuple):
    coef: NDArray
    intercept: float
    at_infinity: bool


def _fit_logistic(
    features: NDArray,
    targets: NDArray,
    weights: NDArray,
    *,
    fit_intercept: bool,
    nonnegative: bool,
) -> _LogisticFit:
    """Minimise :class:`_WeightedLogisticLoss` over the coefficients and intercept.

    ``features`` (n, d) float64, ``targets`` in [0, 1] and ``weights > 0`` (n,).  The
    features are centred (only with an intercept, which absorbs the shift) and scaled to unit
    weighted spread, which makes the problem well conditioned whatever the magnitude of the
    scores (logits of 1e4 included) and keeps the sign of each coefficient, so that
    ``nonnegative`` is the bound ``w >= 0`` in either scale.

    The unconstrained Newton optimum is kept when it lies inside the box and does not
    separate 0/1 targets; otherwise L-BFGS-B minimises inside the box (slopes within
    ``+-_SLOPE_BOUND``, ``>= 0`` if ``nonnegative``).  ``at_infinity`` reports that the
    likelihood's supremum is not attained: the box was reached or, for 0/1 targets, the
    fitted map separates the two classes strictly (scaling it up would still lower the loss).
    """
    n_features = features.shape[1]
    total = weights.sum()
    if fit_intercept:
        centre = np.einsum("i,ij->j", weights, features) / total
    else:
        centre = np.zeros(n_features)
    standard = features - centre
    spread = np.sqrt(np.einsum("i,ij,ij->j", weights, standard, standard) / total)
    # A column constant up to rounding would turn its rounding noise into a unit-scale feature.
    constant = spread <= 1e-10 * np.abs(features).max(axis=0)
    scale = np.where(constant, 1.0, spread)
    standard /= scale
    objective = _WeightedLogisticLoss(standard, targets, weights, fit_intercept)

    bounds = [(0.0 if nonnegative else -_SLOPE_BOUND, _SLOPE_BOUND)] * n_features
    start = np.zeros(n_features + fit_intercept)
    if fit_intercept:
        intercept_bound = _SLOPE_BOUND * (1.0 + np.abs(standard).max(axis=0).sum())
        bounds.append((-intercept_bound, intercept_bound))
        base_rate = np.clip(np.einsum("i,i->", weights, targets) / total, 1e-4, 1 - 1e-4)
        start[-1] = logit(base_rate)
    low, high = np.array(bounds).T
    params = _newton(objective, start)
    if (
        params is None
        or not np.all((params > low) & (params < high))
        or _separates(objective, params)
    ):
        # A bound binds (a coefficient would be negative) or the likelihood keeps improving
        # towards infinity: minimise in the box.
        result = minimize(
            objective,
            start if params is None else np.clip(params, low, high),
            jac=True,
            method="L-BFGS-B",
            bounds=bounds,
            options={"maxiter": 1000, "ftol": 1e-15, "gtol": 1e-10},
        )
        params = result.x
        projected_gradient = np.clip(params - objective(params)[1], low, high) - params
        # L-BFGS-B may stop on a rounding-limited line search once the gradient is negligible.
        if not result.success and np.abs(projected_gradient).max() > 1e-6:
            raise RuntimeError(f"the logistic fit did not converge: {result.message}")
    params = _newton_polish(objective, params, low, high)

    at_bound = bool((np.abs(params) >= 0.999999 * np.maximum(np.abs(low), high)).any())
    coef = params[:n_features] / scale
    intercept = float(params[n_features] - coef @ centre) if fit_intercept else 0.0
    return _LogisticFit(coef, intercept, at_bound or _separates(objective, params))


def _newton(objective: _WeightedLogisticLoss, start: NDArray) -> NDArray | None:
    """Unconstrained minimum by SciPy's trust-region Newton method, or ``None`` if not found.

    With the exact Hessian it converges in a few iterations to a gradient at rounding level.
    It is tried first because SciPy's L-BFGS-B calls LAPACK on tiny matrices, which wakes
    OpenBLAS threads on every iteration (~1-2 ms per iteration on a busy 2-core machine, 100x
    the arithmetic); the box is needed only when the unconstrained optimum leaves it.
    """
    with np.errstate(over="ignore"):
        result = minimize(
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


def _separates(objective: _WeightedLogisticLoss, params: NDArray) -> bool:
    """Whether 0/1 targets lie strictly on their sides of ``z = 0`` (so scaling up helps)."""
    targets = objective.targets
    if not np.all((targets == 0) | (targets == 1)):
        return False
    z = objective.linear(params)
    return bool(np.all(np.where(targets == 1, z > 0, z < 0)))


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


class _OneVsRestLogistic(Recalibrator):
    """A logistic map of one score per model: binary, or one-vs-rest and renormalised.

    Subclasses give, from their checked parameters, the input kind, the fitting design and
    whether targets are smoothed, and the map features of a score column (fixed per class);
    everything else (targets, fitting, warnings, prediction) is shared.  The input kind is
    stored at fit (``input_``), and prediction reads it from there.
    """

    # -- hooks ---------------------------------------------------------------------------
    def _input_kind(self, params: dict[str, Any]) -> str:
        raise NotImplementedError

    def _map_features(self, scores: NDArray) -> NDArray:
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
        """Validated scores, one column per model ((N, 1) if binary, else (N, K)), and K."""
        if kind == "logits":
            values = iv.check_logits(X, "X")
            if values.shape[1] == 2:
                # The binary logit log(p1 / p0); a 1-D input z arrives as [0, z].
                return (values[:, 1].astype(np.float64) - values[:, 0])[:, None], 2
        else:
            values = iv.check_prob(X, name="X")
            if values.shape[1] == 2:
                return values[:, 1:], 2
        return values, values.shape[1]

    @staticmethod
    def _targets(positive: NDArray, weights: NDArray, smoothed: bool) -> NDArray:
        if not smoothed:
            return positive.astype(np.float64)
        # Platt (1999), section 2.2: a prior on the labels, with weighted counts.
        n_positive = weights[positive].sum()
        n_negative = weights[~positive].sum()
        return np.where(positive, (n_positive + 1) / (n_positive + 2), 1 / (n_negative + 2))

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None):
        """Fit on calibration scores ``X`` ((N, K) or (N,)) and labels ``y`` (N,).

        Returns
        -------
        self
        """
        params = self._checked_params()
        kind = self._input_kind(params)
        scores, n_classes = self._score_columns(X, kind)
        labels = iv.check_labels(y, len(scores), n_classes, name="y")
        weights = iv.check_sample_weight(sample_weight, len(scores))
        if weights is not None:
            # Rows of weight 0 are absent; they must not count in separation checks.
            kept = weights > 0
            scores, labels, weights = scores[kept], labels[kept], weights[kept]
        else:
            weights = np.ones(len(scores))
        design = self._design(params)
        smoothed = self._smoothed(params)
        binary = n_classes == 2
        n_models = 1 if binary else n_classes
        n_map_features = design.transform.shape[0]
        coef = np.empty((n_models, n_map_features))
        intercept = np.empty(n_models)
        absent, unbounded = [], []
        for model in range(n_models):
            positive = labels == (1 if binary else model)
            both_labels = bool(positive.any() and not positive.all())
            if not both_labels and (binary or not positive.any()):
                absent.append((0 if positive.any() else 1) if binary else model)
            features = self._map_features(np.asarray(scores[:, model], dtype=np.float64))
            fit = _fit_logistic(
                np.einsum("ij,jk->ik", features, design.transform) + design.offset,
                self._targets(positive, weights, smoothed),
                weights,
                fit_intercept=design.fit_intercept,
                nonnegative=design.nonnegative,
            )
            coef[model] = design.transform @ fit.coef
            intercept[model] = fit.intercept + design.offset @ fit.coef
            # A single-label model is at infinity by nature and reported as an absent class.
            if fit.at_infinity and both_labels:
                unbounded.append(1 if binary else model)
        self._warn(absent, unbounded, binary)
        self.coef_ = coef
        self.intercept_ = intercept
        self.n_classes_ = int(n_classes)
        self.input_ = kind
        return self

    def _warn(self, absent: list[int], unbounded: list[int], binary: bool) -> None:
        name = type(self).__name__
        if absent:
            if binary:
                text = f"only class {1 - absent[0]} occurs in `y`"
            else:
                text = f"class(es) {_short_list(absent)} never occur in `y`"
            warn(
                f"{text}, so a {name} fit sees a single label and pushes the missing "
                "class's calibrated probability towards 0 as far as the map allows. Calibrate "
                "on a set that contains every class."
            )
        if unbounded:
            subject = "the two classes" if binary else f"class(es) {_short_list(unbounded)}"
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
            features = self._map_features(np.asarray(scores[:, model], dtype=np.float64))
            z = _linear_predictor(features, self.coef_[model], self.intercept_[model])
            if n_classes == 2:
                return np.stack([log_expit(-z), log_expit(z)], axis=1)
            positive_log_probs[:, model] = log_expit(z)
        # Renormalisation ignores a common factor per row; dividing by the row maximum first
        # keeps a row whose one-vs-rest probabilities all underflow from becoming 0 / 0.
        positive_log_probs -= positive_log_probs.max(axis=1, keepdims=True)
        return log_in_place(normalised_probs(np.exp(positive_log_probs)))


def _short_list(items: list[int]) -> str:
    return str(items) if len(items) <= 10 else f"{items[:10]} and {len(items) - 10} more"


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

    Parameters
    ----------
    input : {'logits', 'probabilities'}, default 'logits'
        What ``X`` holds; the score is a logit column or a probability column.
    smoothed_targets : bool, default True
        Use Platt's smoothed targets instead of the 0/1 labels.

    Attributes
    ----------
    coef_ : ndarray, shape (n_models, 1)
        Slope ``a`` of each model (one model if binary, else one per class).
    intercept_ : ndarray, shape (n_models,)
        Intercept ``b`` of each model.
    n_classes_ : int
        Number of classes seen in ``fit``.
    input_ : {'logits', 'probabilities'}
        What ``X`` held in ``fit``, and so must hold in prediction.

    References
    ----------
    .. [1] J. Platt, "Probabilistic Outputs for Support Vector Machines and Comparisons to
       Regularized Likelihood Methods", Advances in Large Margin Classifiers, 1999.
    .. [2] H.-T. Lin, C.-J. Lin and R. C. Weng, "A note on Platt's probabilistic outputs for
       support vector machines", Machine Learning 68, 2007.

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
    """

    _parameters: ClassVar[dict[str, Checker]] = {
        "input": iv.choice("logits", "probabilities"),
        "smoothed_targets": iv.flag,
    }
    _fitted_schema: ClassVar[dict[str, Field]] = {
        "coef_": array_field(("M", 1), low=-COEFFICIENT_LIMIT, high=COEFFICIENT_LIMIT),
        "intercept_": array_field(("M",), low=-COEFFICIENT_LIMIT, high=COEFFICIENT_LIMIT),
        "n_classes_": integer_field(2),
        "input_": choice_field("logits", "probabilities"),
    }

    def __init__(self, input: str = "logits", smoothed_targets: bool = True):
        self.input = input
        self.smoothed_targets = smoothed_targets

    def _input_kind(self, params: dict[str, Any]) -> str:
        return params["input"]

    def _map_features(self, scores: NDArray) -> NDArray:
        return scores[:, None]

    def _design(self, params: dict[str, Any]) -> _Design:
        return _Design(np.eye(1), np.zeros(1), fit_intercept=True, nonnegative=False)

    def _smoothed(self, params: dict[str, Any]) -> bool:
        return params["smoothed_targets"]

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> PlattScaling:
        """Fit on logits or probabilities ``X`` ((N, K) or (N,)) and labels ``y`` (N,).

        Returns
        -------
        self
        """
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
        "n_classes_": integer_field(2),
        "input_": choice_field("probabilities"),
    }

    def __init__(self, parameters: str = "abm"):
        self.parameters = parameters

    def _input_kind(self, params: dict[str, Any]) -> str:
        return "probabilities"

    def _map_features(self, scores: NDArray) -> NDArray:
        clipped = np.clip(scores, BETA_EPS, 1 - BETA_EPS)
        return np.stack([np.log(clipped), -np.log1p(-clipped)], axis=1)

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
