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

whose per-entry weights ``c`` and ``d`` each class documents.  The loss is convex; it is
minimised from the identity map (``W = I``, ``b = 0``) by SciPy's L-BFGS-B with the
analytic gradient, so the fitted penalised loss, and hence the training NLL, is never
above the identity map's.  Each evaluation is one pass over the features in row blocks
(a few MiB of scratch space per thread whatever the size of the calibration set); for a
diagonal ``W`` the blocks are shared by ``n_jobs`` threads, with the same result to the
last bit for any number of threads.  The optimiser
works in coordinates preconditioned by the curvature of the loss, refreshed twice on the
way (see ``_Coordinates``), which makes the number of iterations small and insensitive
to the scale or offset of the features.  The passes before the first refresh and until
the second compute in float32, at about half the cost; the last stage computes in
float64, so the fit is as exact as a float64-only one.

Adding a constant to every score leaves the softmax unchanged, so ``b`` and, for a full
``W``, the columns of ``W`` are determined only up to such shifts; the stored map is the
equivalent one with the smallest penalty, and where the penalty does not decide, ``b``
(and each column of a full ``W``) sums to zero.
"""

from __future__ import annotations

import numbers
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import log_softmax

from calibration_toolbox import _validation as iv
from calibration_toolbox.recalibration._base import Recalibrator
from calibration_toolbox.recalibration._linear_fit import PenalisedNLL, minimise
from calibration_toolbox.recalibration._softmax_nll import SoftmaxNLL, map_blocks

__all__ = ["DirichletCalibration", "MatrixScaling", "VectorScaling"]

# Ridge added, as FALLBACK_RIDGE * (mean((W - I)**2) + mean(b**2)), when the
# maximum-likelihood map does not exist or is not unique and the user's penalty leaves
# some parameters free (see `_LinearSoftmaxRecalibrator.fit`).
FALLBACK_RIDGE = 1e-2

# log of the smallest positive float64: calibrated probabilities below it are 0.
_LOG_TINY = float(np.log(np.finfo(np.float64).smallest_subnormal))


def _available_cores() -> int:
    """CPUs this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _check_optional_integer(value: object, name: str, smallest: int) -> int | None:
    """``value`` as an int, or None; a ValueError unless it is None or an integer >= smallest."""
    if value is None:
        return None
    if (
        isinstance(value, (bool, np.bool_))
        or not isinstance(value, numbers.Integral)
        or value < smallest
    ):
        raise ValueError(f"`{name}` must be None or an integer >= {smallest}; got {value!r}.")
    return int(value)


def _check_penalty(value: object, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be a non-negative number; got {value!r}.")
    if not (np.isfinite(value) and value >= 0):
        raise ValueError(f"`{name}` must be a non-negative finite number; got {value!r}.")
    return float(value)


class _LinearSoftmaxRecalibrator(Recalibrator):
    """Shared fit and prediction; subclasses define the features, shape and penalty."""

    _fitted_attributes = ("coef_", "intercept_", "n_classes_", "n_iter_", "n_passes_", "ridge_")

    # -- hooks -------------------------------------------------------------------------
    def _is_diagonal(self) -> bool:
        raise NotImplementedError

    def _penalty(self, n_classes: int) -> tuple[NDArray, NDArray]:
        """Per-entry penalty weights on ``W - I`` and on ``b``."""
        raise NotImplementedError

    def _validated_input(self, X: ArrayLike) -> NDArray:
        return iv.check_logits(X, "X")

    def _features(self, block: NDArray) -> NDArray:
        """Features of a block of validated input, in the input's dtype."""
        return block

    def _output(self, scores: NDArray) -> NDArray:
        return scores

    # -- shared checks -----------------------------------------------------------------
    def _check_common(self) -> tuple[float, int]:
        tol, max_iter = self.tol, self.max_iter
        if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real):
            raise TypeError(f"`tol` must be a positive number; got {tol!r}.")
        if not (np.isfinite(tol) and tol > 0):
            raise ValueError(f"`tol` must be a positive finite number; got {tol!r}.")
        if isinstance(max_iter, (bool, np.bool_)) or not isinstance(max_iter, numbers.Integral):
            raise TypeError(f"`max_iter` must be an integer >= 1; got {max_iter!r}.")
        if max_iter < 1:
            raise ValueError(f"`max_iter` must be an integer >= 1; got {max_iter!r}.")
        _check_optional_integer(self.num_classes, "num_classes", 2)
        return float(tol), int(max_iter)

    def _threads(self) -> int:
        """Threads for the passes over a diagonal map (``n_jobs``; None: every core)."""
        n_jobs = _check_optional_integer(self.n_jobs, "n_jobs", 1)
        return _available_cores() if n_jobs is None else n_jobs

    def _check_num_classes(self, n_classes: int) -> None:
        if self.num_classes is not None and n_classes != self.num_classes:
            raise ValueError(
                f"`X` has {n_classes} classes but `num_classes` is {self.num_classes}."
            )

    # -- fit ---------------------------------------------------------------------------
    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None):
        """Fit the map on calibration data ``X`` (N, K) and labels ``y`` (N,); returns self."""
        tol, max_iter = self._check_common()
        threads = self._threads()
        diagonal = self._is_diagonal()
        data = self._validated_input(X)
        n_samples, n_classes = data.shape
        self._check_num_classes(n_classes)
        penalty_matrix, penalty_intercept = self._penalty(n_classes)
        labels = iv.check_labels(y, n_samples, n_classes, name="y")
        weights = iv.check_sample_weight(sample_weight, n_samples)
        features = self._features(data)

        class_weight = np.bincount(labels, weights=weights, minlength=n_classes)
        free = np.count_nonzero(penalty_matrix == 0) + np.count_nonzero(penalty_intercept == 0)
        n_positive = n_samples if weights is None else int(np.count_nonzero(weights))
        ridge = 0.0
        absent = np.flatnonzero(class_weight == 0)
        if absent.size:
            if free:
                ridge = FALLBACK_RIDGE
                consequence = (
                    "the maximum-likelihood map sends their probability to 0 with unbounded "
                    f"parameters, so a ridge penalty {FALLBACK_RIDGE:g} * (mean((W - I)**2) + "
                    "mean(b**2)) is added"
                )
            else:
                consequence = "their calibrated probabilities are bounded by the penalty alone"
            warnings.warn(
                f"classes {absent.tolist()} never occur in `y` (or have zero weight); "
                f"{consequence}.",
                UserWarning,
                stacklevel=2,
            )
        elif n_positive < free:
            ridge = FALLBACK_RIDGE
            warnings.warn(
                f"{n_positive} calibration samples are fewer than the {free} unpenalised "
                f"parameters, so the maximum-likelihood map is not unique; a ridge penalty "
                f"{FALLBACK_RIDGE:g} * (mean((W - I)**2) + mean(b**2)) is added. Set "
                "`reg_lambda`/`reg_mu` to choose the regularisation yourself.",
                UserWarning,
                stacklevel=2,
            )

        nll = SoftmaxNLL(features, labels, weights, diagonal)
        # Threads only for a diagonal map: a full map's passes are BLAS matrix products,
        # which BLAS already spreads over the cores (threads of our own on top measured
        # 1.5-2x slower).
        threads = min(threads, len(nll.chunks)) if diagonal else 1

        def run(ridge):
            objective = PenalisedNLL(
                nll,
                penalty_matrix + ridge / nll.identity.size,
                penalty_intercept + ridge / n_classes,
            )
            if threads == 1:
                return minimise(objective, tol, max_iter)
            with ThreadPoolExecutor(threads) as pool:
                return minimise(objective, tol, max_iter, pool)

        matrix, intercept, final, identity, n_iter, result = run(ridge)
        if ridge == 0 and free:
            # A set that is not separable has, at every map, a sample whose label is not
            # ranked strictly first (probability <= 1/2), so its NLL is at least
            # log(2) * (smallest positive normalised weight); a lower NLL proves that the
            # set is separable and the likelihood keeps growing along a ray.
            min_weight = (
                1.0 / n_samples if weights is None else weights[weights > 0].min() / weights.sum()
            )
            if final.loss < np.log(2.0) * min_weight:
                separated = "the calibration set is separated perfectly"
            # Part of the set can be separated from the rest (a class whose few samples lie
            # on the hull of the features, say): the likelihood then still grows along a
            # ray, which shows as calibrated probabilities that underflow to 0 where the
            # identity map's did not.
            elif final.log_smallest < _LOG_TINY <= identity.log_smallest:
                separated = "part of the calibration set is separated from the rest"
            else:
                separated = None
            if separated:
                ridge = FALLBACK_RIDGE
                warnings.warn(
                    f"{separated}, so the likelihood keeps growing as the map's parameters "
                    f"grow without bound; a ridge penalty {FALLBACK_RIDGE:g} * "
                    "(mean((W - I)**2) + mean(b**2)) is added.",
                    UserWarning,
                    stacklevel=2,
                )
                matrix, intercept, final, identity, more_iter, result = run(ridge)
                n_iter += more_iter
        if not result.success:
            # L-BFGS-B also stops when rounding defeats its line search; that is a
            # converged fit when the gradient is already negligible.
            gradient = np.max(np.abs(result.jac))
            if n_iter >= max_iter or not gradient <= np.sqrt(tol):
                warnings.warn(
                    f"{type(self).__name__} did not converge ({result.message}); the map "
                    f"reached after {n_iter} iterations is used.",
                    UserWarning,
                    stacklevel=2,
                )

        self.coef_ = self._store_matrix(matrix)
        self.intercept_ = intercept
        self.n_classes_ = int(n_classes)
        self.n_iter_ = n_iter
        self.n_passes_ = int(nll.passes)
        self.ridge_ = float(ridge)
        return self

    def _store_matrix(self, matrix: NDArray) -> NDArray:
        return matrix

    def _map_matrix(self) -> NDArray:
        return self.coef_

    # -- predict -----------------------------------------------------------------------
    def _calibrated_logits(self, X: ArrayLike) -> NDArray:
        data = self._validated_input(X)
        self._check_n_classes(data.shape[1])
        matrix = self._map_matrix()
        intercept = np.asarray(self.intercept_, dtype=np.float64)
        diagonal = matrix.ndim == 1
        out = np.empty(data.shape, dtype=data.dtype)
        for rows in map_blocks(len(data), data.shape[1], diagonal):
            block = self._features(data[rows]).astype(np.float64, copy=False)
            scores = block * matrix if diagonal else block @ matrix.T
            scores += intercept
            out[rows] = self._output(scores)
        return out


def _offdiagonal_penalty(n_classes: int, reg_lambda: float, reg_mu: float):
    """ODIR weights: lambda / (K (K - 1)) off the diagonal, 0 on it, mu / K on ``b``."""
    penalty_matrix = np.full((n_classes, n_classes), reg_lambda / (n_classes * (n_classes - 1)))
    np.fill_diagonal(penalty_matrix, 0.0)
    return penalty_matrix, np.full(n_classes, reg_mu / n_classes)


class VectorScaling(_LinearSoftmaxRecalibrator):
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
        Maximum number of L-BFGS-B iterations.
    tol : float, default 1e-8
        L-BFGS-B's ``gtol`` on the gradient with respect to the map applied to standardised
        logits.
    n_jobs : int or None, default None
        Threads that share each pass over the data for a diagonal map (None: every
        CPU this process may use).  The rows are split into chunks fixed by the data's
        shape alone, so the fitted map is the same, to the last bit, for any ``n_jobs``.

    Attributes
    ----------
    coef_ : ndarray of shape (K,)
        Fitted ``a``.
    intercept_ : ndarray of shape (K,)
        Fitted ``b``.
    n_classes_ : int
        Number of classes seen in ``fit``.
    n_iter_ : int
        L-BFGS-B iterations.
    n_passes_ : int
        Passes over the calibration logits (objective evaluations).
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
    ):
        self.reg_lambda = reg_lambda
        self.num_classes = num_classes
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs

    def _is_diagonal(self) -> bool:
        return True

    def _penalty(self, n_classes: int) -> tuple[NDArray, NDArray]:
        reg_lambda = _check_penalty(self.reg_lambda, "reg_lambda")
        weight = np.full(n_classes, reg_lambda / n_classes)
        return weight, weight.copy()


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
    package ``dirichletcal`` uses the same penalty with ``reg_norm=True, ref_row=False``
    (its default sums instead of averaging).  With far more parameters than samples and a
    weak penalty (K = 100, 5,000 samples, ``lambda`` of order 1) the optimum is poorly
    conditioned and L-BFGS-B needs hundreds of iterations; ``lambda`` of order
    ``1e3``-``1e4`` both fits faster and generalises better there.

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
    num_classes : int or None, default None
        Number of classes; when given, ``fit`` checks that ``X`` has that many columns.
    max_iter : int, default 1000
        Maximum number of L-BFGS-B iterations.
    tol : float, default 1e-8
        L-BFGS-B's ``gtol`` on the gradient with respect to the map applied to standardised
        logits.

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
        Fitted ``W``.
    intercept_ : ndarray of shape (K,)
        Fitted ``b``.
    n_classes_ : int
        Number of classes seen in ``fit``.
    n_iter_ : int
        L-BFGS-B iterations.
    n_passes_ : int
        Passes over the calibration logits (objective evaluations).
    ridge_ : float
        Ridge weight added because the maximum-likelihood map does not exist (else 0).

    References
    ----------
    .. [1] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and P. Flach,
       "Beyond temperature scaling: Obtaining well-calibrated multiclass probabilities with
       Dirichlet calibration", NeurIPS, 2019.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

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
    """

    def __init__(
        self,
        reg_lambda: float = 0.0,
        reg_mu: float = 0.0,
        *,
        num_classes: int | None = None,
        max_iter: int = 1000,
        tol: float = 1e-8,
    ):
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.num_classes = num_classes
        self.max_iter = max_iter
        self.tol = tol

    def _is_diagonal(self) -> bool:
        return False

    def _threads(self) -> int:
        # A full map: its passes are BLAS matrix products, threaded by BLAS.
        return 1

    def _penalty(self, n_classes: int) -> tuple[NDArray, NDArray]:
        return _offdiagonal_penalty(
            n_classes,
            _check_penalty(self.reg_lambda, "reg_lambda"),
            _check_penalty(self.reg_mu, "reg_mu"),
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
        Probabilities are clipped below at ``eps`` before the logarithm (the default of
        :func:`calibration_toolbox.negative_log_likelihood`).
    num_classes : int or None, default None
        Number of classes; when given, ``fit`` checks that ``X`` has that many columns.
    max_iter : int, default 1000
        Maximum number of L-BFGS-B iterations.
    tol : float, default 1e-8
        L-BFGS-B's ``gtol`` on the gradient with respect to the map applied to standardised
        log-probabilities.
    n_jobs : int or None, default None
        Threads that share each pass over the data when ``matrix_type='diagonal'`` (None:
        every CPU this process may use); a full map's passes are BLAS matrix products,
        which use BLAS's own threads.  The rows are split into chunks fixed by the data's
        shape alone, so the fitted map is the same, to the last bit, for any ``n_jobs``.

    Attributes
    ----------
    coef_ : ndarray of shape (K, K)
        Fitted ``W`` (a diagonal matrix for ``matrix_type='diagonal'``).
    intercept_ : ndarray of shape (K,)
        Fitted ``b``.
    n_classes_ : int
        Number of classes seen in ``fit``.
    n_iter_ : int
        L-BFGS-B iterations.
    n_passes_ : int
        Passes over the calibration features (objective evaluations).
    ridge_ : float
        Ridge weight added because the maximum-likelihood map does not exist (else 0).

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
    ):
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.matrix_type = matrix_type
        self.eps = eps
        self.num_classes = num_classes
        self.max_iter = max_iter
        self.tol = tol
        self.n_jobs = n_jobs

    def _is_diagonal(self) -> bool:
        return iv.check_choice(self.matrix_type, "matrix_type", ("full", "diagonal")) == "diagonal"

    def _penalty(self, n_classes: int) -> tuple[NDArray, NDArray]:
        penalty_matrix, penalty_intercept = _offdiagonal_penalty(
            n_classes,
            _check_penalty(self.reg_lambda, "reg_lambda"),
            _check_penalty(self.reg_mu, "reg_mu"),
        )
        if self._is_diagonal():
            penalty_matrix = np.zeros(n_classes)
        return penalty_matrix, penalty_intercept

    def _check_eps(self) -> float:
        eps = self.eps
        if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, numbers.Real):
            raise TypeError(f"`eps` must be a number in (0, 1); got {eps!r}.")
        if not 0 < eps < 1:
            raise ValueError(f"`eps` must be a number in (0, 1); got {eps!r}.")
        return float(eps)

    def _validated_input(self, X: ArrayLike) -> NDArray:
        self._check_eps()
        return iv.check_prob(X, name="X")[0]

    def _features(self, block: NDArray) -> NDArray:
        # The same dtype as the input, so a float32 set costs one float32 copy; at least the
        # smallest normal number of that dtype, so that log never sees 0.
        floor = max(float(self.eps), float(np.finfo(block.dtype).tiny))
        features = np.maximum(block, block.dtype.type(floor))
        return np.log(features, out=features)

    def _output(self, scores: NDArray) -> NDArray:
        return log_softmax(scores, axis=1)

    def _store_matrix(self, matrix: NDArray) -> NDArray:
        return np.diag(matrix) if matrix.ndim == 1 else matrix

    def _map_matrix(self) -> NDArray:
        if self._is_diagonal():
            return np.ascontiguousarray(np.diagonal(self.coef_))
        return self.coef_
