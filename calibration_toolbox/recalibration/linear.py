r"""Vector scaling, matrix scaling and Dirichlet calibration: a linear map, then a softmax.

The three recalibrators share one model and one fitting routine.  With features
``x_i`` (the logits, or the log-probabilities for Dirichlet calibration) the calibrated
probabilities are

.. math::

    \hat p_i = \operatorname{softmax}(W x_i + b),

where ``W`` is a full ``K x K`` matrix (matrix scaling, full Dirichlet calibration) or a
diagonal one, ``W = diag(a)`` (vector scaling, diagonal Dirichlet calibration).  The
parameters minimise the weighted mean negative log-likelihood plus a quadratic penalty

.. math::

    \frac{\sum_i w_i\,[\log\sum_k e^{s_{ik}} - s_{i y_i}]}{\sum_i w_i}
    + \sum_{k,j} c_{kj} (W - I)_{kj}^2 + \sum_k d_k b_k^2,
    \qquad s_i = W x_i + b,

whose per-entry weights ``c`` and ``d`` each class documents.  Each class stores the map
in ``coef_`` and ``intercept_``: ``coef_`` is the vector ``a`` (shape (K,)) for a
diagonal map and the matrix ``W`` (shape (K, K)) for a full one.

The loss is convex; it is minimised from the identity map (``W = I``, ``b = 0``) by
SciPy's L-BFGS-B with the analytic gradient, so the fitted penalised loss, and hence the
training NLL, is never above the identity map's.  Features of a spread above 16 (logits of
magnitude 1e2 and more) start from the best multiple ``t I`` of the identity instead
(temperature scaling's optimum), so that the fit does not depend on their units.  Each
evaluation is one pass over the features in row blocks (a few MiB of scratch space per
thread whatever the size of the calibration set; ``_softmax_nll``); for a diagonal ``W``
the blocks are shared by ``n_jobs`` threads, with the same result to the last bit for any
number of threads.  The optimiser works in coordinates preconditioned by the curvature of
the loss (``_preconditioner``), refreshed twice on the way, which makes the number of iterations
small and insensitive to the scale or offset of the features.  The passes before the
first refresh and until the second compute in float32, at about half the cost; the last
stage computes in float64, so the fit is as exact as a float64-only one
(``_linear_fit``).

Stopping rule (``tol``): the last stage stops when every entry of the gradient of the
penalised loss in its preconditioned coordinates is at most ``tol`` in absolute value, or
when an iteration lowers the penalised loss by less than ``1e-6 * tol`` relative (or
after ``max_iter`` iterations, all stages together).  With the curvature weights ``h_ik
= w_i p_ik (1 - p_ik)`` at the start of that stage (normalised weights ``w``, calibrated
probabilities ``p``), the coordinates are ``c_k = b_k + sum_j m_kj W_kj`` and ``V_kj =
s_kj W_kj``, where ``m_kj`` is the ``h_k``-weighted mean of feature ``j`` and ``s_kj`` its
``h_k``-weighted standard deviation (each with the penalty's curvature added to the
weights' total and to the spread), rotated by an orthogonal map that removes the
directions along which the softmax does not change.  The gradient in ``c_k`` is the
gradient in ``b_k``, and a unit step in any coordinate moves the scores about as much as
a unit step in ``b_k``: ``tol`` is on the scale of the scores, not of the features
(logits of 1e4 or 1e-2 alike).

Adding a constant to every score leaves the softmax unchanged, so ``b`` and, for a full
``W``, the columns of ``W`` are determined only up to such shifts; the stored map is the
equivalent one with the smallest penalty, and where the penalty does not decide, ``b``
(and each column of a full ``W``) sums to zero.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Literal, NamedTuple, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _arrays, _dask, _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, Text
from calibration_toolbox._warnings import warn
from calibration_toolbox.recalibration._base import (
    COEFFICIENT_LIMIT,
    N_CLASSES_FIELD,
    Checker,
    Field,
    Recalibrator,
    array_field,
    flag_field,
    integer_field,
    number_field,
)
from calibration_toolbox.recalibration._linear_fit import MapFit, PenalisedNLL, minimise
from calibration_toolbox.recalibration._softmax_nll import SoftmaxNLL, map_blocks
from calibration_toolbox.recalibration._softmax_parts import PartsNLL, RowCounts
from calibration_toolbox.recalibration._sources import block_opener, block_sum, checked_part
from calibration_toolbox.recalibration.temperature import TemperatureScaling

__all__ = ["DirichletCalibration", "MatrixScaling", "VectorScaling"]

# Ridge added, as FALLBACK_RIDGE * (mean((W - I)**2) + mean(b**2)), when the
# maximum-likelihood map does not exist or is not unique and the user's penalty leaves
# some parameters free (see `_fit_map`).
FALLBACK_RIDGE = 1e-2
_RIDGE_NOTICE = f"a ridge penalty {FALLBACK_RIDGE:g} * (mean((W - I)**2) + mean(b**2)) is added"

# A training NLL below this times the smallest normalised weight proves separation (see
# `_separation`).
_SEPARATED_SHARE = float(np.log(2.0))

# log of the smallest positive float64: calibrated probabilities below it are 0.
_LOG_TINY = float(np.log(np.finfo(np.float64).smallest_subnormal))


# Settings of every linear recalibrator, then those of the classes whose passes use
# threads of their own (a diagonal map): declared with the shared checkers of _validation.
_FIT_CHECKS = {
    "num_classes": iv.optional_integer_at_least(2),
    "max_iter": iv.integer_at_least(1),
    "tol": iv.positive_number,
}
_THREAD_CHECKS = {"n_jobs": iv.optional_integer_at_least(1)}
# Coefficients and intercepts of a loaded map are finite and bounded (see COEFFICIENT_LIMIT).
_COEFFICIENTS = {"low": -COEFFICIENT_LIMIT, "high": COEFFICIENT_LIMIT}
# The fitted state shared by the three classes, after the map's own `coef_`.
_MAP_SCHEMA = {
    "intercept_": array_field(("K",), **_COEFFICIENTS),
    "n_classes_": N_CLASSES_FIELD,
    "n_iter_": integer_field(0),
    "n_passes_": integer_field(0),
    "ridge_": number_field(0.0),
}


def _available_cores() -> int:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _threads(n_jobs: int | None) -> int:
    """Threads for the passes over a diagonal map (``n_jobs``; None: every core)."""
    return _available_cores() if n_jobs is None else n_jobs


# -- the model a fit describes ---------------------------------------------------------------
class _Penalty(NamedTuple):
    """Weights of the mean squared entries of ``W - I`` on the diagonal, off it, and of ``b``.

    The penalty is ``diagonal * mean_k (W_kk - 1)**2 + off_diagonal * mean_{k != j}
    W_kj**2 + intercept * mean_k b_k**2`` (a diagonal map has no off-diagonal entries).
    """

    diagonal: float
    off_diagonal: float
    intercept: float

    def weights(self, n_classes: int, diagonal_map: bool) -> tuple[NDArray, NDArray]:
        """Per-entry weights on ``W - I`` (shaped like ``W``) and on ``b``."""
        intercept = np.full(n_classes, self.intercept / n_classes)
        if diagonal_map:
            return np.full(n_classes, self.diagonal / n_classes), intercept
        matrix = np.full((n_classes, n_classes), self.off_diagonal / (n_classes * (n_classes - 1)))
        np.fill_diagonal(matrix, self.diagonal / n_classes)
        return matrix, intercept


@dataclasses.dataclass(frozen=True)
class _LinearModel:
    """What a fit needs, computed once at ``fit`` from the checked parameters.

    The map is ``softmax(W x + b)`` with ``W = diag(a)`` when ``diagonal``; the features
    ``x`` are the logits when ``eps`` is None, else the log-probabilities ``log(max(p,
    eps))``.
    """

    diagonal: bool
    eps: float | None
    penalty: _Penalty
    # Threads that share each pass over a diagonal map (a full map's are BLAS's own).
    threads: int
    num_classes: int | None
    max_iter: int
    tol: float
    # Structured matrix scaling: the features are temperature-scaled, mixed log-probabilities
    # and the penalty is SMS's ridge (see `MatrixScaling`).
    structured: bool = False


def _features(data: NDArray, eps: float | None) -> NDArray:
    """The map's features of validated input: logits as they are, or ``log(max(p, eps))``."""
    if eps is None:
        return data
    # The same dtype as the input, so a float32 set costs one float32 copy; at least the
    # smallest normal number of that dtype, so that log never sees 0.
    floor = max(eps, float(np.finfo(data.dtype).tiny))
    features = np.maximum(data, data.dtype.type(floor))
    return np.log(features, out=features)


def _checked_input(X: ArrayLike, probabilities: bool) -> NDArray:
    """``X`` validated as (N, K) probabilities or logits (the only array checks here)."""
    if probabilities:
        return iv.check_prob(X, name="X")
    return iv.check_logits(X, "X")


def _check_num_classes(model: _LinearModel, n_classes: int) -> None:
    if model.num_classes is not None and n_classes != model.num_classes:
        raise InputError(
            "{X:has} {n_classes} classes but {num_classes:is} {value}.",
            argument="X",
            n_classes=n_classes,
            value=model.num_classes,
        )


# -- the fit, with its fallback ridge ----------------------------------------------------------
def _ridge_before_fit(class_weight: NDArray, n_positive: int, free: int) -> float:
    """``FALLBACK_RIDGE`` (with a warning) when the data alone leave the map undetermined.

    That is when a class never occurs (its probability then goes to 0 with unbounded
    parameters, unless the penalty bounds every parameter) or when fewer samples have a
    positive weight than there are unpenalised (``free``) parameters.  Else 0.
    """
    absent = np.flatnonzero(class_weight == 0)
    if absent.size:
        if free:
            consequence = (
                "the maximum-likelihood map sends their probability to 0 with unbounded "
                f"parameters, so {_RIDGE_NOTICE}"
            )
        else:
            consequence = "their calibrated probabilities are bounded by the penalty alone"
        warn(
            Text(
                "classes {absent} never occur in {y} (or have zero weight); {consequence}.",
                fields={"absent": absent.tolist(), "consequence": consequence},
            )
        )
        return FALLBACK_RIDGE if free else 0.0
    if n_positive < free:
        warn(
            Text(
                "{n_positive} calibration samples are fewer than the {free} unpenalised "
                "parameters, so the maximum-likelihood map is not unique; "
                "{notice}. Set {reg_lambda}/{reg_mu} to choose the regularisation yourself.",
                fields={"n_positive": n_positive, "free": free, "notice": _RIDGE_NOTICE},
            )
        )
        return FALLBACK_RIDGE
    return 0.0


def _separation(fitted: MapFit, min_weight: float) -> str | None:
    """What the fitted map shows to be separated (so the likelihood is unbounded), or None.

    ``min_weight`` is the smallest positive normalised sample weight.
    """
    # A set that is not separable has, at every map, a sample whose label is not ranked
    # strictly first (probability <= 1/2), so its NLL is at least log(2) * (smallest
    # positive normalised weight); a lower NLL proves that the set is separable and the
    # likelihood keeps growing along a ray.
    if fitted.final.loss < _SEPARATED_SHARE * min_weight:
        return "the calibration set is separated perfectly"
    # Part of the set can be separated from the rest (a class whose few samples lie on the
    # hull of the features, say): the likelihood then still grows along a ray, which shows
    # as calibrated probabilities that underflow to 0 where the identity map's did not.
    if fitted.final.log_smallest < _LOG_TINY <= fitted.identity.log_smallest:
        return "part of the calibration set is separated from the rest"
    return None


def _fit_map(
    nll: SoftmaxNLL | PartsNLL, model: _LinearModel, rows: RowCounts
) -> tuple[MapFit, float]:
    """The fitted map and the ridge added to the model's penalty (0 or FALLBACK_RIDGE)."""
    penalty_matrix, penalty_intercept = model.penalty.weights(nll.n_classes, model.diagonal)
    free = np.count_nonzero(penalty_matrix == 0) + np.count_nonzero(penalty_intercept == 0)
    ridge = _ridge_before_fit(nll.class_weight, rows.n_positive, free)
    # Threads only for a diagonal map: a full map's passes are BLAS matrix products,
    # which BLAS already spreads over the cores (threads of our own on top measured
    # 1.5-2x slower).
    threads = min(model.threads, len(nll.chunks)) if model.diagonal else 1
    with ThreadPoolExecutor(threads) if threads > 1 else contextlib.nullcontext() as pool:

        def run(ridge: float, separated_below: float | None = None) -> MapFit:
            objective = PenalisedNLL(
                nll,
                penalty_matrix + ridge / nll.identity.size,
                penalty_intercept + ridge / nll.n_classes,
            )
            return minimise(objective, model.tol, model.max_iter, pool, separated_below)

        if ridge or not free:
            return run(ridge), ridge
        min_weight = rows.smallest_weight / rows.class_weight.sum()
        # A pass whose NLL proves the set separable (see `_separation`) ends the fit there:
        # the refit below replaces it.
        fitted = run(ridge, _SEPARATED_SHARE * min_weight)
        separated = _separation(fitted, min_weight)
        if not separated:
            return fitted, ridge
        warn(
            f"{separated}, so the likelihood keeps growing as the map's parameters grow "
            f"without bound; {_RIDGE_NOTICE}."
        )
        refit = run(FALLBACK_RIDGE)
        return refit._replace(n_iter=fitted.n_iter + refit.n_iter), FALLBACK_RIDGE


def _warn_if_not_converged(name: str, fitted: MapFit, model: _LinearModel) -> None:
    result = fitted.result
    if result.success:
        return
    # L-BFGS-B also stops when rounding defeats its line search; that is a converged fit
    # when the gradient is already negligible.
    gradient = np.max(np.abs(result.jac))
    if fitted.n_iter >= model.max_iter or not gradient <= np.sqrt(model.tol):
        warn(
            f"{name} did not converge ({result.message}); the map reached after "
            f"{fitted.n_iter} iterations is used."
        )


#: ``fit`` of the three linear maps returns ``self``: a ``MatrixScaling`` for a type checker too.
_LinearT = TypeVar("_LinearT", bound="_LinearSoftmaxRecalibrator")


class _LinearSoftmaxRecalibrator(Recalibrator):
    """Shared fit and prediction of ``softmax(W x + b)``.

    Each class declares its settings' checks (``_parameters``: name -> check) and
    turns the checked settings into one :class:`_LinearModel` (``_model``); whether it
    takes probabilities (features ``log p``, output the calibrated log-probabilities) or
    logits is ``_takes_probabilities``.  The fitted state alone drives prediction: a
    diagonal map is a ``coef_`` of shape (K,), a full one of shape (K, K).
    """

    _takes_probabilities: ClassVar[bool] = False

    def _model(self, **params: Any) -> _LinearModel:
        raise NotImplementedError

    def _checked_model(self) -> _LinearModel:
        params = self._checked_params()
        del params["classes"]  # the labels' names, not the model's (see `_fit_labels`)
        return self._model(**params)

    def fit(
        self: _LinearT, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> _LinearT:
        """Fit the map on calibration data ``X`` (N, K) and labels ``y`` (N,); returns self."""
        model = self._checked_model()
        if self._takes_probabilities:
            data = _checked_input(X, True)
        else:
            data = self._fit_logits(X)
        n_samples, n_classes = data.shape
        _check_num_classes(model, n_classes)
        labels = self._fit_labels(y, n_samples, n_classes)
        weights = iv.check_sample_weight(sample_weight, n_samples, scale_free=True)
        features, model = self._fit_features(data, labels, weights, model)
        nll = SoftmaxNLL(features, labels, weights, model.diagonal)
        return self._fit_nll(nll, model, RowCounts.of(features, labels, weights))

    def _fit_features(
        self, data: NDArray, labels: NDArray, weights: NDArray | None, model: _LinearModel
    ) -> tuple[NDArray, _LinearModel]:
        """The map's features of the checked calibration data, and the model to fit them."""
        return _features(data, model.eps), model

    def _prediction_features(self, block: NDArray) -> NDArray:
        """The map's features of a block of checked input, as at ``fit``."""
        eps = float(self.eps_) if self._takes_probabilities else None
        return _features(block, eps).astype(np.float64, copy=False)

    def _fit_nll(self, nll: SoftmaxNLL | PartsNLL, model: _LinearModel, rows: RowCounts):
        """Fit the map whose NLL is ``nll`` and store it; returns self."""
        n_classes = nll.n_classes
        fitted, ridge = _fit_map(nll, model, rows)
        _warn_if_not_converged(type(self).__name__, fitted, model)
        self.coef_ = fitted.matrix
        self.intercept_ = fitted.intercept
        if model.eps is not None:
            self.eps_ = model.eps
        self.n_classes_ = int(n_classes)
        self.n_iter_ = fitted.n_iter
        self.n_passes_ = int(nll.passes)
        self.ridge_ = float(ridge)
        return self

    def _calibrated_logits(self, X: ArrayLike) -> NDArray:
        data = _checked_input(X, self._takes_probabilities)
        self._check_n_classes(data.shape[1])
        matrix = np.asarray(self.coef_, dtype=np.float64)
        intercept = np.asarray(self.intercept_, dtype=np.float64)
        diagonal = matrix.ndim == 1
        out = np.empty(data.shape, dtype=data.dtype)
        for rows in map_blocks(len(data), data.shape[1], diagonal):
            block = self._prediction_features(data[rows])
            scores = block * matrix if diagonal else block @ matrix.T
            scores += intercept
            # Probabilities in, calibrated log-probabilities out.
            out[rows] = (
                _scipy.special.log_softmax(scores, axis=1) if self._takes_probabilities else scores
            )
        return out


def _checked_part(function, logits, labels, weights):
    """``(function(logits, labels, weights), total weight)`` of a Dask chunk, checked."""
    logits, labels, weights = checked_part(logits, labels, weights)
    weight = float(len(labels) if weights is None else weights.sum())
    return function(logits, labels, weights), weight


def _dask_sum(X, y, sample_weight, function):
    """The sum of ``function`` over the row chunks, each in a worker (see :mod:`._dask`)."""
    return _dask.fit_sums(X, y, sample_weight, functools.partial(_checked_part, function))[0]


class VectorScaling(_dask.LazyPredictions, _LinearSoftmaxRecalibrator):
    r"""Vector scaling (Guo et al. 2017): ``softmax(a * z + b)`` with per-class ``a``, ``b``.

    The ``2K`` parameters minimise the (weighted) mean negative log-likelihood of the
    calibration labels plus an optional ridge penalty towards the identity map,

    .. math::

        \frac{\sum_i w_i\,[\operatorname{logsumexp}(a \odot z_i + b)
        - (a_{y_i} z_{i y_i} + b_{y_i})]}{\sum_i w_i}
        + \lambda\,\Big(\frac1K\sum_k (a_k - 1)^2 + \frac1K\sum_k b_k^2\Big),

    by L-BFGS-B with the analytic gradient, starting from ``a = 1, b = 0``.  With
    ``reg_lambda=0`` this is the exact maximum-likelihood fit.  Unlike temperature scaling,
    vector scaling can change the predicted class.

    When the maximum-likelihood map does not exist or is not unique (``reg_lambda=0`` and
    a class never occurs in ``y``, fewer calibration samples than the ``2K`` parameters,
    or a set that the map separates perfectly, detected by a training NLL below
    ``log 2`` times the smallest normalised weight, or in part, detected by calibrated
    training probabilities that underflow to 0 where the identity's did not), a
    ``UserWarning`` is issued and the fit uses ``reg_lambda = 0.01`` in the penalty above
    (recorded in ``ridge_``).  A class that never occurs also warns when
    ``reg_lambda > 0``: its probabilities are then held up by the penalty alone.

    Parameters
    ----------
    reg_lambda : float, default 0.0
        Weight ``lambda`` of the ridge penalty above (on ``a - 1`` and ``b``, each averaged
        over the ``K`` classes).
    num_classes : int or None, default None
        Number of classes; when given, ``fit`` checks that ``X`` has that many columns.
    max_iter : int, default 1000
        Maximum number of L-BFGS-B iterations, all stages together (a refit with the
        fallback ridge, see above, has as many again).
    tol : float, default 1e-8
        Stopping tolerance of the last (float64) L-BFGS-B stage: the largest entry of the
        penalised loss's gradient in the optimiser's preconditioned coordinates, in which
        every parameter moves the scores as an intercept does (see "Stopping rule" in
        ``calibration_toolbox.recalibration.linear``); an iteration that lowers the
        penalised loss by less than ``1e-6 * tol`` relative also stops the fit.
    n_jobs : int or None, default None
        Threads that share each pass over the data for a diagonal map (None: every
        CPU this process may use).  The rows are split into chunks fixed by the data's
        shape alone, so the fitted map is the same, to the last bit, for any ``n_jobs``.
        Sets of fewer than ``2**22`` values (N x K) are one chunk, passed over by one
        thread.

    classes : sequence of str (or of numbers), optional
        Names of the classes, in the column order of ``X``: ``y`` is then given as names
        (``fit``, ``score``), ``classes_`` holds these names and ``predict`` returns them.
        Saved with the fitted state.  Default: ``y`` holds column indices (as it does in
        ``fit_blocks`` and on Dask arrays).

    Attributes
    ----------
    coef_ : ndarray of shape (K,)
        Fitted ``a`` (the diagonal of ``W``).
    intercept_ : ndarray of shape (K,)
        Fitted ``b``.
    n_classes_ : int
        Number of classes seen in ``fit``.
    n_iter_ : int
        L-BFGS-B iterations (of both fits when the fallback ridge was added after a first).
    n_passes_ : int
        Passes over the calibration logits (each evaluates the loss and its gradient).
    ridge_ : float
        Ridge weight added because the maximum-likelihood map does not exist (else 0).

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import softmax
    >>> from calibration_toolbox.recalibration.linear import VectorScaling
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.integers(0, 3, 20000)
    >>> logits = 3.0 * (np.eye(3)[labels] + rng.normal(size=(20000, 3))) + [0.0, 1.5, 3.0]
    >>> scaler = VectorScaling(num_classes=3).fit(logits, labels)   # 3x too confident,
    >>> np.round(scaler.coef_, 1), np.round(scaler.intercept_, 1)   # offsets removed
    (array([0.3, 0.3, 0.3]), array([ 0.5,  0. , -0.5]))
    >>> probs = softmax(scaler(logits), axis=1)       # callable style
    >>> np.allclose(probs, scaler.predict_proba(logits))
    True
    """

    def __init__(
        self,
        reg_lambda: float = 0.0,
        *,
        num_classes: int | None = None,
        max_iter: int = 1000,
        tol: float = 1e-8,
        n_jobs: int | None = None,
        classes: ArrayLike | None = None,
    ):
        self.reg_lambda = reg_lambda
        self.num_classes = num_classes
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.classes = classes

    _parameters: ClassVar[dict[str, Checker]] = {
        "reg_lambda": iv.nonnegative_number,
        **_FIT_CHECKS,
        **_THREAD_CHECKS,
    }
    _fitted_schema: ClassVar[dict[str, Field]] = {
        "coef_": array_field(("K",), **_COEFFICIENTS),
        **_MAP_SCHEMA,
    }

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> VectorScaling:
        """Fit ``a`` and ``b`` on calibration logits ``X`` (N, K) and labels ``y`` (N,).

        ``X`` may be a Dask array chunked along rows (``y`` and ``sample_weight`` Dask or
        NumPy arrays): every pass is then one reduction over the chunks, computed in the
        workers (each chunk checked there as ``X`` is here; only the loss, the gradient
        and the curvature sums travel), plus one first reduction for the class weights.
        The fitted map is that of the in-memory fit up to the order of the additions.
        """
        if not _arrays.is_dask_array(X):
            return super().fit(X, y, sample_weight)
        _dask.row_chunked(X, "X")
        return self._fit_parts(functools.partial(_dask_sum, X, y, sample_weight))

    def fit_blocks(self, source: object) -> VectorScaling:
        """Fit ``a`` and ``b`` on calibration data read block by block from ``source``.

        ``source`` is as in :meth:`TemperatureScaling.fit_blocks
        <calibration_toolbox.TemperatureScaling.fit_blocks>` (a callable returning a fresh
        iterator of ``(logits, labels[, sample_weight])`` blocks, or a list of blocks);
        every pass of L-BFGS-B is one pass over the blocks, each checked as :meth:`fit`
        checks its arguments, plus one first pass for the class weights.  The fitted map
        is that of :meth:`fit` on the concatenated blocks up to the order of the
        additions.
        """
        return self._fit_parts(functools.partial(block_sum, block_opener(source)))

    def _fit_parts(self, reduce) -> VectorScaling:
        model = self._checked_model()
        self._class_names = None  # blocks and chunks hold column indices (`classes` unused)
        nll = PartsNLL(reduce)
        _check_num_classes(model, nll.n_classes)
        return self._fit_nll(nll, model, nll.counts)

    def _model(self, *, reg_lambda, num_classes, max_iter, tol, n_jobs) -> _LinearModel:
        return _LinearModel(
            diagonal=True,
            eps=None,
            penalty=_Penalty(diagonal=reg_lambda, off_diagonal=0.0, intercept=reg_lambda),
            threads=_threads(n_jobs),
            num_classes=num_classes,
            max_iter=max_iter,
            tol=tol,
        )


# -- structured matrix scaling (Berta, Holzmueller, Jordan & Bach) ----------------------------
def _structured_penalty(n_samples: int, n_classes: int, reg_lambda: float, reg_mu: float):
    """SMS's ridge, plus ODIR's ``reg_lambda`` and ``reg_mu``, as weights of mean squares.

    SMS adds ``K/n`` times the sums of squares of ``b`` and of ``W_kk - 1`` and ``K (K -
    1)/n`` times that of the off-diagonal entries (probmetrics' ``SMSCalibrator`` defaults,
    lambda = rho = tau = 1); a sum over ``m`` entries is ``m`` times their mean.
    """
    k = n_classes
    pairs = k * (k - 1)
    return _Penalty(
        diagonal=k * k / n_samples,
        off_diagonal=reg_lambda + pairs * pairs / n_samples,
        intercept=reg_mu + k * k / n_samples,
    )


def _mixed_log_probabilities(logits: NDArray, inverse_temperature: float, mixture: float):
    """``log((1 - alpha) softmax(beta z) + alpha / K)`` row by row, in float64."""
    scaled = inverse_temperature * np.asarray(logits, dtype=np.float64)
    log_prob = _scipy.special.log_softmax(scaled, axis=1)
    if mixture == 0.0:
        return log_prob
    uniform = np.log(mixture / logits.shape[1])
    return np.logaddexp(np.log1p(-mixture) + log_prob, uniform, out=log_prob)


#: The features of a plain (not structured) map; files written before ``structured``
#: existed lack these fields and load as plain maps.
_PLAIN_FEATURES = {"structured_": False, "inverse_temperature_": 1.0, "mixture_": 0.0}


class MatrixScaling(_LinearSoftmaxRecalibrator):
    r"""Matrix scaling with ODIR regularisation (Kull et al. 2019): ``softmax(W z + b)``.

    ``W`` (K x K) and ``b`` (K) minimise the (weighted) mean negative log-likelihood plus
    the Off-Diagonal and Intercept Regularisation of Kull et al. (2019),

    .. math::

        \frac{\sum_i w_i\,[\operatorname{logsumexp}(W z_i + b)
        - (W z_i + b)_{y_i}]}{\sum_i w_i}
        + \frac{\lambda}{K(K-1)} \sum_{k \ne j} W_{kj}^2 + \frac{\mu}{K} \sum_k b_k^2,

    i.e. ``lambda`` times the mean squared off-diagonal entry and ``mu`` times the mean
    squared intercept (the diagonal is not penalised), by L-BFGS-B with the analytic
    gradient from ``W = I, b = 0``.  ``reg_lambda = reg_mu = 0`` is the plain
    maximum-likelihood fit, which over-fits easily: ``K (K + 1)`` parameters.  Kull et al.
    choose ``lambda`` and ``mu`` by cross-validation on the calibration set.  Their
    package ``dirichletcal`` uses the same penalty with ``reg_norm=True, ref_row=False``.
    Its defaults differ twice: ``reg_norm=False`` sums instead of averaging, and
    ``ref_row=True`` subtracts the last row of ``[W | b]`` from every row before the
    likelihood and the penalty, pinning that row at 0: the likelihood is unchanged (adding
    one row to all rows leaves the softmax alone) but the penalty falls on
    ``W_kj - W_Kj`` and ``b_k - b_K``, so the penalised map is another one (even its
    identity start, rows ``e_k - e_K``, has K - 1 penalised entries -1 in the last
    column).  With far more parameters than samples and a
    weak penalty (K = 100, 5,000 samples, ``lambda`` of order 1) the optimum is poorly
    conditioned and L-BFGS-B needs hundreds of iterations; ``lambda`` of order
    ``1e3``-``1e4`` both fits faster and generalises better there.

    With ``structured=True`` this is structured matrix scaling (SMS, Berta et al. [3]_,
    the default multiclass calibrator of their package probmetrics, ``SMSCalibrator``).
    Its features are not the logits but the log-probabilities of temperature scaling mixed
    with the uniform distribution,

    .. math::

        x_i = \log\Big((1 - \alpha)\,\operatorname{softmax}(\beta z_i)
        + \frac{\alpha}{K}\Big), \qquad \alpha = \frac{1}{n + 1},

    with ``beta = 1/T`` fitted by :class:`~calibration_toolbox.TemperatureScaling` (the
    same weights) and ``n`` the number of calibration rows of positive weight; then
    ``softmax(W x + b)`` is fitted with a ridge towards the identity on every parameter,
    scaled by ``n`` and ``K``,

    .. math::

        \frac{K}{n} \sum_k b_k^2 + \frac{K}{n} \sum_k (W_{kk} - 1)^2
        + \frac{K(K-1)}{n} \sum_{k \ne j} W_{kj}^2

    (probmetrics' defaults ``lambda = rho = tau = 1`` of ``lambda K^rho / n^tau``), to
    which ``reg_lambda`` and ``reg_mu`` add ODIR's terms above (0 by default).  Every
    parameter is penalised, so the loss is strictly convex and its minimiser unique.
    probmetrics fits the same loss in float32 with a gradient tolerance of 1e-5: its map's
    loss is above ours by about 1e-7 (the tests compare them).  Files written before
    ``structured`` existed load as plain maps.

    When the penalty leaves parameters free (ODIR never penalises the diagonal) and the
    maximum-likelihood map does not exist or is not unique (a class never occurs in
    ``y``, fewer samples than free parameters, or a set that the map separates
    perfectly, detected by a training NLL below ``log 2`` times the smallest normalised
    weight, or in part, detected by calibrated training probabilities that underflow to 0
    where the identity's did not), a ``UserWarning`` is issued and
    ``0.01 * (mean((W - I)**2) + mean(b**2))`` is added to the penalty (recorded in
    ``ridge_``).

    Parameters
    ----------
    reg_lambda : float, default 0.0
        ODIR weight ``lambda`` of the mean squared off-diagonal entry of ``W``.
    reg_mu : float, default 0.0
        ODIR weight ``mu`` of the mean squared entry of ``b``.
    structured : bool, default False
        Structured matrix scaling (see above): temperature-scaled, mixed log-probability
        features and SMS's ridge.
    num_classes : int or None, default None
        Number of classes; when given, ``fit`` checks that ``X`` has that many columns.
    max_iter : int, default 1000
        Maximum number of L-BFGS-B iterations, all stages together (a refit with the
        fallback ridge, see above, has as many again).
    tol : float, default 1e-8
        Stopping tolerance of the last (float64) L-BFGS-B stage: the largest entry of the
        penalised loss's gradient in the optimiser's preconditioned coordinates, in which
        every parameter moves the scores as an intercept does (see "Stopping rule" in
        ``calibration_toolbox.recalibration.linear``); an iteration that lowers the
        penalised loss by less than ``1e-6 * tol`` relative also stops the fit.

    classes : sequence of str (or of numbers), optional
        Names of the classes, in the column order of ``X``: ``y`` is then given as names
        (``fit``, ``score``), ``classes_`` holds these names and ``predict`` returns them.
        Saved with the fitted state.  Default: ``y`` holds column indices (as it does in
        ``fit_blocks`` and on Dask arrays).

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
        Fitted ``W``.
    intercept_ : ndarray of shape (K,)
        Fitted ``b``.
    n_classes_ : int
        Number of classes seen in ``fit``.
    n_iter_ : int
        L-BFGS-B iterations (of both fits when the fallback ridge was added after a first).
    n_passes_ : int
        Passes over the calibration logits (each evaluates the loss and its gradient).
    ridge_ : float
        Ridge weight added because the maximum-likelihood map does not exist (else 0).
    structured_ : bool
        Whether the features are SMS's (the fitted ``structured``).
    inverse_temperature_ : float
        SMS's ``beta = 1/T`` (1 for a plain map).
    mixture_ : float
        SMS's weight ``alpha = 1/(n + 1)`` of the uniform distribution (0 for a plain map).

    References
    ----------
    .. [1] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and P. Flach,
       "Beyond temperature scaling: Obtaining well-calibrated multiclass probabilities with
       Dirichlet calibration", NeurIPS, 2019.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.
    .. [3] E. Berta, D. Holzmüller, M. I. Jordan and F. Bach, "Structured matrix scaling for
       multi-class calibration", AISTATS, 2026.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox.recalibration.linear import MatrixScaling
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.integers(0, 3, 20000)
    >>> logits = 3.0 * (np.eye(3)[labels] + rng.normal(size=(20000, 3)))
    >>> scaler = MatrixScaling(reg_lambda=0.1, reg_mu=0.1).fit(logits, labels)
    >>> np.round(scaler.coef_, 1) + 0.0
    array([[0.3, 0. , 0. ],
           [0. , 0.3, 0. ],
           [0. , 0. , 0.3]])
    >>> scaler.predict_proba(logits[:2]).round(1)
    array([[0.3, 0.1, 0.6],
           [0.4, 0.1, 0.5]])
    >>> sms = MatrixScaling(structured=True).fit(logits, labels)
    >>> round(1 / sms.inverse_temperature_, 1), sms.mixture_ == 1 / 20001
    (3.0, True)
    >>> bool(np.abs(sms.coef_ - np.eye(3)).max() < 0.1)  # T did the work; W stays near I
    True
    """

    def __init__(
        self,
        reg_lambda: float = 0.0,
        reg_mu: float = 0.0,
        *,
        structured: bool = False,
        num_classes: int | None = None,
        max_iter: int = 1000,
        tol: float = 1e-8,
        classes: ArrayLike | None = None,
    ):
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.structured = structured
        self.num_classes = num_classes
        self.max_iter = max_iter
        self.tol = tol
        self.classes = classes

    _parameters: ClassVar[dict[str, Checker]] = {
        "reg_lambda": iv.nonnegative_number,
        "reg_mu": iv.nonnegative_number,
        "structured": iv.check_flag,
        **_FIT_CHECKS,
    }
    _fitted_schema: ClassVar[dict[str, Field]] = {
        "coef_": array_field(("K", "K"), **_COEFFICIENTS),
        **_MAP_SCHEMA,
        "structured_": flag_field(),
        "inverse_temperature_": number_field(0.0, strict_low=True),
        "mixture_": number_field(0.0, 0.5),
    }

    def _model(
        self, *, reg_lambda, reg_mu, structured, num_classes, max_iter, tol
    ) -> _LinearModel:
        return _LinearModel(
            diagonal=False,
            eps=None,
            penalty=_Penalty(diagonal=0.0, off_diagonal=reg_lambda, intercept=reg_mu),
            # A full map: its passes are BLAS matrix products, threaded by BLAS.
            threads=1,
            num_classes=num_classes,
            max_iter=max_iter,
            tol=tol,
            structured=structured,
        )

    @classmethod
    def _decoded_state(cls, fitted: object) -> dict[str, Any]:
        if isinstance(fitted, dict) and not any(name in fitted for name in _PLAIN_FEATURES):
            fitted = {**fitted, **_PLAIN_FEATURES}  # a file written before `structured`
        return super()._decoded_state(fitted)

    def _fit_features(
        self, data: NDArray, labels: NDArray, weights: NDArray | None, model: _LinearModel
    ) -> tuple[NDArray, _LinearModel]:
        if not model.structured:
            for name, value in _PLAIN_FEATURES.items():
                setattr(self, name, value)
            return data, model
        # Rows of zero weight are not calibration data: they count for neither n nor K.
        n_classes = data.shape[1]
        n_samples = len(data) if weights is None else int(np.count_nonzero(weights))
        temperature = TemperatureScaling().fit(data, labels, weights).temperature_
        self.structured_ = True
        self.inverse_temperature_ = 1.0 / temperature
        self.mixture_ = 1.0 / (n_samples + 1)
        penalty = _structured_penalty(
            n_samples, n_classes, model.penalty.off_diagonal, model.penalty.intercept
        )
        features = _mixed_log_probabilities(data, self.inverse_temperature_, self.mixture_)
        return features, dataclasses.replace(model, penalty=penalty)

    def _prediction_features(self, block: NDArray) -> NDArray:
        if not self.structured_:
            return block.astype(np.float64, copy=False)
        return _mixed_log_probabilities(
            block, float(self.inverse_temperature_), float(self.mixture_)
        )


class DirichletCalibration(_LinearSoftmaxRecalibrator):
    r"""Dirichlet calibration (Kull et al. 2019): ``softmax(W log p + b)`` on probabilities.

    Matrix scaling applied to the log-probabilities: with ``matrix_type='full'`` ``W`` is a
    K x K matrix, with ``'diagonal'`` it is ``diag(a)`` (vector scaling of the
    log-probabilities).  ``W`` and ``b`` minimise the (weighted) mean negative
    log-likelihood plus the ODIR penalty

    .. math::

        \frac{\lambda}{K(K-1)} \sum_{k \ne j} W_{kj}^2 + \frac{\mu}{K} \sum_k b_k^2

    (with ``'diagonal'`` there are no off-diagonal entries, so only ``mu`` acts), by
    L-BFGS-B with the analytic gradient from ``W = I, b = 0``, the map that returns ``p``
    unchanged.  Probabilities below ``eps`` are raised to ``eps`` before the logarithm, so
    zeros give finite features; calling the fitted object returns the calibrated
    log-probabilities (``scipy.special.log_softmax(W log p + b)``).

    When the penalty leaves parameters free (ODIR never penalises the diagonal) and the
    maximum-likelihood map does not exist or is not unique (a class never occurs in
    ``y``, fewer samples than free parameters, or a set that the map separates
    perfectly, detected by a training NLL below ``log 2`` times the smallest normalised
    weight, or in part, detected by calibrated training probabilities that underflow to 0
    where the identity's did not), a ``UserWarning`` is issued and
    ``0.01 * (mean((W - I)**2) + mean(b**2))`` is added to the penalty (recorded in
    ``ridge_``).

    Parameters
    ----------
    reg_lambda : float, default 0.0
        ODIR weight ``lambda`` of the mean squared off-diagonal entry of ``W``.
    reg_mu : float, default 0.0
        ODIR weight ``mu`` of the mean squared entry of ``b``.
    matrix_type : {'full', 'diagonal'}, default 'full'
        Shape of ``W``.
    eps : float, default 1e-15
        Probabilities are clipped below at ``eps`` (the default of
        :func:`calibration_toolbox.negative_log_likelihood`; at the smallest normal number
        of the input's dtype if that is larger) before the logarithm, which is taken in
        the input's dtype.  ``fit`` stores it in ``eps_`` for every later prediction.
    num_classes : int or None, default None
        Number of classes; when given, ``fit`` checks that ``X`` has that many columns.
    max_iter : int, default 1000
        Maximum number of L-BFGS-B iterations, all stages together (a refit with the
        fallback ridge, see above, has as many again).
    tol : float, default 1e-8
        Stopping tolerance of the last (float64) L-BFGS-B stage: the largest entry of the
        penalised loss's gradient in the optimiser's preconditioned coordinates, in which
        every parameter moves the scores as an intercept does (see "Stopping rule" in
        ``calibration_toolbox.recalibration.linear``); an iteration that lowers the
        penalised loss by less than ``1e-6 * tol`` relative also stops the fit.
    n_jobs : int or None, default None
        Threads that share each pass over the data when ``matrix_type='diagonal'`` (None:
        every CPU this process may use); a full map's passes are BLAS matrix products,
        which use BLAS's own threads.  The rows are split into chunks fixed by the data's
        shape alone, so the fitted map is the same, to the last bit, for any ``n_jobs``.
        Sets of fewer than ``2**22`` values (N x K) are one chunk, passed over by one
        thread.

    classes : sequence of str (or of numbers), optional
        Names of the classes, in the column order of ``X``: ``y`` is then given as names
        (``fit``, ``score``), ``classes_`` holds these names and ``predict`` returns them.
        Saved with the fitted state.  Default: ``y`` holds column indices (as it does in
        ``fit_blocks`` and on Dask arrays).

    Attributes
    ----------
    coef_ : ndarray of shape (K,) or (K, K)
        Fitted ``W``: its diagonal ``a``, shape (K,), for ``matrix_type='diagonal'``;
        the matrix, shape (K, K), for ``'full'``.
    intercept_ : ndarray of shape (K,)
        Fitted ``b``.
    n_classes_ : int
        Number of classes seen in ``fit``.
    n_iter_ : int
        L-BFGS-B iterations (of both fits when the fallback ridge was added after a first).
    n_passes_ : int
        Passes over the calibration features (each evaluates the loss and its gradient).
    ridge_ : float
        Ridge weight added because the maximum-likelihood map does not exist (else 0).
    eps_ : float
        The ``eps`` the features were clipped at in ``fit``, used by every prediction.

    References
    ----------
    .. [1] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and P. Flach,
       "Beyond temperature scaling: Obtaining well-calibrated multiclass probabilities with
       Dirichlet calibration", NeurIPS, 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import softmax
    >>> from calibration_toolbox.recalibration.linear import DirichletCalibration
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.integers(0, 3, 20000)
    >>> prob = softmax(3.0 * (np.eye(3)[labels] + rng.normal(size=(20000, 3))), axis=1)
    >>> calibrator = DirichletCalibration(reg_lambda=0.1, reg_mu=0.1).fit(prob, labels)
    >>> log_prob = calibrator(prob)                    # calibrated log-probabilities
    >>> np.allclose(np.exp(log_prob).sum(axis=1), 1.0)
    True
    >>> np.round(np.diag(calibrator.coef_), 1)
    array([0.3, 0.3, 0.3])
    >>> diagonal = DirichletCalibration(matrix_type="diagonal").fit(prob, labels)
    >>> diagonal.coef_.shape                           # a diagonal map: the vector a
    (3,)
    """

    def __init__(
        self,
        reg_lambda: float = 0.0,
        reg_mu: float = 0.0,
        matrix_type: Literal["full", "diagonal"] = "full",
        *,
        eps: float = 1e-15,
        num_classes: int | None = None,
        max_iter: int = 1000,
        tol: float = 1e-8,
        n_jobs: int | None = None,
        classes: ArrayLike | None = None,
    ):
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.matrix_type = matrix_type
        self.eps = eps
        self.num_classes = num_classes
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs
        self.classes = classes

    _parameters: ClassVar[dict[str, Checker]] = {
        "reg_lambda": iv.nonnegative_number,
        "reg_mu": iv.nonnegative_number,
        "matrix_type": iv.choice("full", "diagonal"),
        "eps": iv.number_between(0.0, 1.0),
        **_FIT_CHECKS,
        **_THREAD_CHECKS,
    }
    _fitted_schema: ClassVar[dict[str, Field]] = {
        # A diagonal map stores the vector a, a full one the matrix W.
        "coef_": array_field((("K",), ("K", "K")), **_COEFFICIENTS),
        **_MAP_SCHEMA,
        "eps_": number_field(0.0, 1.0, strict_low=True),
    }
    _takes_probabilities: ClassVar = True

    def _model(
        self, *, reg_lambda, reg_mu, matrix_type, eps, num_classes, max_iter, tol, n_jobs
    ) -> _LinearModel:
        return _LinearModel(
            diagonal=matrix_type == "diagonal",
            eps=eps,
            # A diagonal map has no off-diagonal entries: only `reg_mu` acts.
            penalty=_Penalty(diagonal=0.0, off_diagonal=reg_lambda, intercept=reg_mu),
            threads=_threads(n_jobs),
            num_classes=num_classes,
            max_iter=max_iter,
            tol=tol,
        )
