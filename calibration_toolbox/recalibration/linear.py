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

import functools
import itertools
import numbers
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize
from scipy.special import log_softmax

from calibration_toolbox import _validation as iv
from calibration_toolbox.recalibration._base import Recalibrator

__all__ = ["DirichletCalibration", "MatrixScaling", "VectorScaling"]

# Ridge added, as FALLBACK_RIDGE * (mean((W - I)**2) + mean(b**2)), when the
# maximum-likelihood map does not exist or is not unique and the user's penalty leaves
# some parameters free (see `_LinearSoftmaxRecalibrator.fit`).
FALLBACK_RIDGE = 1e-2

# Row blocks of about 2**17 float64 values (1 MiB): large enough that NumPy's per-call
# overhead is small at K = 1,000, small enough that a block's temporaries stay in cache.
_BLOCK_ELEMENTS = 1 << 17
# Full-matrix maps multiply each block by W with BLAS; larger blocks amortise the cost of
# waking BLAS threads (several ms on the shared machines).
_GEMM_BLOCK_ELEMENTS = 1 << 20
# A pass splits the rows into at most _MAX_CHUNKS chunks of at least _CHUNK_ELEMENTS
# values, fixed by the shape alone so that the sums, added chunk by chunk, do not depend
# on how many threads process the chunks.
_CHUNK_ELEMENTS = 1 << 21
_MAX_CHUNKS = 16
# L-BFGS-B stages, each restarted in coordinates weighted by the curvature where the last
# one stopped: (float32 passes, maximum iterations or None, (gtol, ftol) or None for the
# user's tolerance).  float32 passes cost about half as much; their rounding (about 1e-8
# of the loss, relative) limits how close they can get, so the float32 stage stops when
# an iteration gains less than that (ftol), and float64 passes finish.  (With ftol 1e-10
# the float32 stage could spend 30 passes in line searches lost in rounding.)
_STAGES = ((True, 5, None), (True, None, (3e-6, 1e-8)), (False, None, None))
# Most trial steps per line search of a float32 stage (L-BFGS-B's default is 20): a line
# search that rounding defeats then ends the stage after a few passes.
_SINGLE_LINE_SEARCH = 5
# Weight of a uniform softmax's curvature in the first preconditioner (see _SoftmaxNLL).
_UNIFORM_SHARE = 1e-2
# Bound on the relative error of a float32 pass's loss (rounding of about 1e-7 per entry).
_SINGLE_ERROR = 1e-5
# Smallest |gradient| * unit in `_Coordinates.set_unit`: L-BFGS-B's first step is at most
# 1e10 times the gradient, so a smaller product would shorten that step.
_SMALLEST_STEP = 1e-9
# log of the smallest positive float64: calibrated probabilities below it are 0.
_LOG_TINY = float(np.log(np.finfo(np.float64).smallest_subnormal))


class _Pass(NamedTuple):
    """What one pass over the features returns (see :class:`_SoftmaxNLL`)."""

    loss: float
    grad_matrix: NDArray
    grad_intercept: NDArray
    # Curvature moments (h0, h1, h2) when asked for, else None.
    curvature: tuple | None
    # log of the smallest calibrated probability of any class for any sample.
    log_smallest: float


class _SoftmaxNLL:
    """Weighted mean NLL of ``softmax(x W^T + b)`` (or ``softmax(x * a + b)``) and gradient.

    With normalised weights ``w`` the loss is ``sum_i w_i (m_i + log Z_i) - sum_i w_i
    s_{i y_i}``, where ``m_i`` is row ``i``'s largest score and ``Z_i = sum_k exp(s_ik -
    m_i)``.  The label term is linear in the map: ``<W, L> + <b, c>`` with the per-class
    weighted feature sums ``L`` and class weights ``c``, computed once in ``__init__``.  So
    is its gradient, ``(L, c)``, which leaves to each pass only the softmax part, ``E^T
    (x * w / Z)`` with ``E = exp(s - m)`` (matrix-vector products for a diagonal ``W``,
    one matrix product for a full one): no label lookup, no logarithm per entry, no
    division of the whole block.

    ``features`` (N, K) is read in row blocks.  A pass computes in float64, or, with
    ``single=True``, in float32 (scores, exponentials and row sums; the totals are still
    accumulated in float64): about half the cost, accurate to about 1e-7 relative, which
    is enough to approach the optimum before float64 passes finish it.
    """

    def __init__(self, features: NDArray, labels: NDArray, weights: NDArray | None, diagonal):
        self.features = features
        self.labels = labels
        n_samples, n_classes = features.shape
        self.diagonal = diagonal
        self.n_classes = n_classes
        self.identity = np.ones(n_classes) if diagonal else np.eye(n_classes)
        self.block_elements = _BLOCK_ELEMENTS if diagonal else _GEMM_BLOCK_ELEMENTS
        self.passes = 0
        # Contiguous chunks of whole blocks, processed by `pool` (an executor) when given.
        block_rows = max(1, self.block_elements // n_classes)
        n_blocks = -(-n_samples // block_rows)
        n_chunks = min(n_blocks, _MAX_CHUNKS, max(1, n_samples * n_classes // _CHUNK_ELEMENTS))
        edges = block_rows * (np.arange(n_chunks + 1) * n_blocks // n_chunks)
        edges[-1] = n_samples
        self.chunks = [slice(int(lo), int(hi)) for lo, hi in itertools.pairwise(edges)]
        self.pool = None
        # Normalised weights (summing to 1), read block by block in every pass.
        row_weight = (
            np.full(n_samples, 1.0 / n_samples) if weights is None else weights / weights.sum()
        )
        self.row_weight = row_weight
        self.class_weight = np.bincount(labels, weights=row_weight, minlength=n_classes)
        if diagonal:
            label_feature = features[np.arange(n_samples), labels].astype(np.float64)
            self.label_features = np.bincount(
                labels, weights=row_weight * label_feature, minlength=n_classes
            )
        else:
            # One bincount per row block over the flattened (label, feature) index.
            sums = np.zeros(n_classes * n_classes)
            columns = np.arange(n_classes)
            for rows in iv.row_blocks(n_samples, n_classes):
                index = labels[rows, None] * n_classes + columns
                values = features[rows] * row_weight[rows, None]
                sums += np.bincount(index.ravel(), values.ravel(), n_classes * n_classes)
            self.label_features = sums.reshape(n_classes, n_classes)

    def __call__(
        self,
        matrix: NDArray,
        intercept: NDArray,
        *,
        single: bool = False,
        curvature: bool = False,
        moments: bool = False,
    ) -> _Pass:
        """Loss, gradient and extras at the map ``(matrix, intercept)`` in one pass.

        With ``curvature=True`` the pass also returns the curvature weights ``h_ik = w_i
        p_ik (1 - p_ik)`` summed over samples with ``1``, ``x_ij`` and ``x_ij**2`` (shapes
        ``(K,)`` and that of ``W``), for :func:`_whitening`; with ``moments=True`` a little
        of the same for a uniform softmax is added, for maps (the identity) whose softmax
        saturates.

        The rows are split into a fixed number of chunks (see ``_CHUNK_ELEMENTS``), whose
        sums are added in order, so the result does not depend on ``pool``.
        """
        self.passes += 1
        n_classes = self.n_classes
        dtype = np.dtype(np.float32 if single else np.float64)
        chunk = functools.partial(
            self._chunk,
            dtype=dtype,
            work_matrix=matrix.astype(dtype),
            work_intercept=intercept.astype(dtype),
            curvature=curvature or moments,
            # Wanted from float64 passes and the identity map's.
            smallest=moments or not single,
            moments=moments,
        )
        mapped = self.pool.map if self.pool is not None else map
        parts = list(mapped(chunk, self.chunks))
        normaliser, grad_matrix, grad_intercept, extra, log_smallest = parts[0]
        for part in parts[1:]:
            normaliser += part[0]
            grad_matrix += part[1]
            grad_intercept += part[2]
            if extra is not None:
                for total, more in zip(extra, part[3], strict=True):
                    total += more
            log_smallest = min(log_smallest, part[4])
        if self.diagonal:
            label_term = float(np.dot(matrix, self.label_features))
        else:
            label_term = float(np.vdot(matrix, self.label_features))
        loss = normaliser - label_term - float(np.dot(intercept, self.class_weight))
        grad_matrix -= self.label_features
        grad_intercept -= self.class_weight
        if moments:
            # Add a little of the curvature moments of a uniform softmax, h = w / K, which
            # do not depend on the map: logits so large that the softmax saturates have
            # no curvature at the identity map to precondition with.  (Added to later
            # refreshes too, it measured 1.5-2x the passes on the shared predictions.)
            h0, h1, h2, column1, column2 = extra
            level = _UNIFORM_SHARE / n_classes
            column1, column2 = level * column1, level * column2
            if not self.diagonal:
                column1, column2 = column1[None, :], column2[None, :]
            extra = (h0 + level, h1 + column1, h2 + column2)
        return _Pass(loss, grad_matrix, grad_intercept, extra, log_smallest)

    def _chunk(self, chunk, dtype, work_matrix, work_intercept, curvature, smallest, moments):
        """One chunk's share of a pass.

        Returns ``sum_i w_i (m_i + log Z_i)``, the softmax parts of the two gradients, the
        curvature moments (or None) and the log of the smallest probability.
        """
        n_classes = self.n_classes
        grad_matrix = np.zeros(work_matrix.shape)
        grad_intercept = np.zeros(n_classes)
        log_smallest = 0.0 if smallest else np.nan
        if curvature:
            h0 = np.zeros(n_classes)
            h1, h2 = np.zeros_like(grad_matrix), np.zeros_like(grad_matrix)
        if moments:
            column1, column2 = np.zeros(n_classes), np.zeros(n_classes)
        normaliser = 0.0  # sum_i w_i (m_i + log Z_i)
        n_rows = chunk.stop - chunk.start
        block_rows = min(n_rows, max(1, self.block_elements // n_classes))
        buffer = np.empty((block_rows, n_classes), dtype)
        if curvature:
            curve_buffer = np.empty((block_rows, n_classes), np.float32)
            spare = np.empty_like(curve_buffer)
        for rows in iv.row_blocks(n_rows, n_classes, self.block_elements):
            rows = slice(chunk.start + rows.start, chunk.start + rows.stop)
            block = self.features[rows]
            if not self.diagonal:
                block = block.astype(dtype, copy=False)
            scores = buffer[: len(block)]
            if self.diagonal:
                np.multiply(block, work_matrix, out=scores)
            else:
                np.matmul(block, work_matrix.T, out=scores)
            scores += work_intercept
            top = scores.max(axis=1)
            scores -= top[:, None]
            if smallest:
                lowest = scores.min(axis=1)
            np.exp(scores, out=scores)
            total = scores.sum(axis=1)
            log_total = np.log(total, dtype=np.float64)
            if smallest:
                log_smallest = min(log_smallest, float(np.min(lowest - log_total)))
            row_weight = self.row_weight[rows]
            normaliser += float(np.dot(row_weight, top + log_total))
            # Each row's softmax times its weight is scores * scale.
            scale = (row_weight / total).astype(dtype)
            if curvature:
                # In float32 whatever the pass: a preconditioner needs no more.
                single_block = self.features[rows].astype(np.float32, copy=False)
                spread = curve_buffer[: len(block)]
                inverse = (1.0 / total).astype(np.float32)
                np.multiply(scores, inverse[:, None], out=spread, casting="same_kind")
                complement = np.subtract(1.0, spread, out=spare[: len(block)])
                spread *= complement  # p (1 - p)
                work_weight = row_weight.astype(np.float32)
                h0 += work_weight @ spread
                if self.diagonal:
                    spread *= single_block
                    h1 += work_weight @ spread
                    spread *= single_block
                    h2 += work_weight @ spread
                else:
                    spread *= work_weight[:, None]
                    h1 += spread.T @ single_block
                    h2 += spread.T @ np.square(single_block)
                if moments:
                    column1 += work_weight @ single_block
                    column2 += work_weight @ np.square(single_block)
            grad_intercept += scale @ scores
            if self.diagonal:
                scores *= block
                grad_matrix += scale @ scores
            else:
                scores *= scale[:, None]
                grad_matrix += scores.T @ block
        extra = None
        if curvature:
            extra = (h0, h1, h2, column1, column2) if moments else (h0, h1, h2)
        return normaliser, grad_matrix, grad_intercept, extra, log_smallest


class _Coordinates:
    """The optimiser's variables ``V = W * scale`` and ``c = b + rowsum(W * centre)``.

    A block-diagonal preconditioner for L-BFGS-B.  Near a map, the Hessian block of row
    ``k`` of ``(W, b)`` is ``sum_i h_ik [x_i, 1][x_i, 1]^T`` plus the penalty's curvature,
    with ``h_ik = w_i p_ik (1 - p_ik)``.  Shifting ``b`` by ``W``'s row times the centre
    ``h1 / (h0 + 2 d)`` removes the coupling between ``W`` and ``b`` (large when the
    features have an offset, like log-probabilities), and scaling each entry of ``W`` by
    the square root of its remaining curvature relative to that of ``b`` equalises the
    scales within a row (logits of 1e4 or 1e-2 alike).  On 50,000 x 1,000 logits this
    takes a quarter of the iterations of plain standardisation of the features.
    """

    def __init__(self, centre: NDArray, scale: NDArray, row_curvature: NDArray | None = None):
        self.centre, self.scale = centre, scale
        self.diagonal = centre.ndim == 1
        self.n_matrix = centre.size
        # Curvature of each row's coordinates (all alike after the scaling), for `set_unit`.
        self.row_curvature = row_curvature
        # The optimiser sees the coordinates in the complement of the flat directions,
        # divided by `unit` (see `_quotient` and `set_unit`).
        self.unit = 1.0
        self._quotient()

    def _quotient(self) -> None:
        """Drop the directions along which the objective is exactly flat.

        Adding ``t 1`` to ``b`` or, for a full ``W``, ``1 v^T`` to ``W`` leaves the softmax
        unchanged, and the optimiser's objective is exactly flat along these ``K + 1`` (or
        1) directions (see :func:`_canonical`).  L-BFGS-B never moves along them (the
        gradient is orthogonal to them), so they are dropped: a block reflector ``H``, an
        orthogonal map exchanging the span of the flat directions with that of the
        coordinates of one row of ``(V, c)`` (its ``c`` entry alone for a diagonal map),
        sends the other coordinates isometrically onto the complement.  The iterates are
        those of L-BFGS-B on all the coordinates, with fewer variables: below OpenBLAS's
        threshold for threading vector operations (10,000 entries) for a full map up to
        ``K = 100``, where the threads that L-BFGS-B's vector operations wake were
        measured to slow the passes by up to 2x on a 2-core machine.

        In these coordinates, column ``j < K`` of the flat directions moves ``V[:, j]`` by
        ``scale[:, j]`` and ``c`` by ``centre[:, j]``; column ``K`` moves ``c`` by 1.  The
        ``V`` parts are disjoint, so with the orthonormal vectors ``scale[:, j] / |scale[:,
        j]|`` (in ``V``'s column ``j``) and the unit vectors of ``c``, the directions are
        ``Psi M`` with a small ``2K x (K + 1)`` matrix ``M``, and ``A = Psi Q`` (``M = QR``)
        is an orthonormal basis of their span that is never formed: every product costs
        ``O(K^2)`` time and memory.
        """
        n_classes = len(self.centre)
        size = self.n_matrix + n_classes
        classes = np.arange(n_classes)
        if self.diagonal:
            compact = np.ones((n_classes, 1))
            # Every row holds the same share of the flat direction.
            held = np.array([self.n_matrix])
            held_compact = np.array([0])
        else:
            self.norms = np.linalg.norm(self.scale, axis=0)
            compact = np.zeros((2 * n_classes, n_classes + 1))
            compact[classes, classes] = self.norms
            compact[n_classes:, :n_classes] = self.centre
            compact[n_classes:, n_classes] = 1.0
            # The row holding the least of the flat directions (the best conditioned H).
            share = np.sum((self.scale / self.norms) ** 2, axis=1) + np.sum(self.centre**2, axis=1)
            row = int(np.argmin(share))
            held = np.append(row * n_classes + classes, self.n_matrix + row)
            held_compact = np.append(classes, n_classes + row)
        self.compact_basis = np.linalg.qr(compact)[0]
        # Rows `held` of A.
        basis_held = self.compact_basis[held_compact].copy()
        if not self.diagonal:
            basis_held[:n_classes] *= (self.scale[row] / self.norms)[:, None]
        # H = I - 2 Z (Z^T Z)^+ Z^T with Z = A - B O maps A onto B O, where B holds the
        # unit vectors of `held` and O is the orthogonal polar factor of B^T A (so that
        # A^T B O is symmetric and Z^T Z = 2 (I - A^T B O)).
        left, _, right = np.linalg.svd(basis_held)
        self.polar = left @ right
        gram = 2.0 * (np.eye(len(held)) - basis_held.T @ self.polar)
        self.reflector_gram = np.linalg.pinv((gram + gram.T) / 2, hermitian=True)
        self.held = held
        self.keep = np.ones(size, dtype=bool)
        self.keep[held] = False

    def _basis(self, weights: NDArray) -> NDArray:
        """``A @ weights``, a vector of all the coordinates."""
        compact = self.compact_basis @ weights
        if self.diagonal:
            return np.concatenate([np.zeros(self.n_matrix), compact])
        n_classes = len(self.centre)
        matrix = self.scale * (compact[:n_classes] / self.norms)
        return np.concatenate([matrix.ravel(), compact[n_classes:]])

    def _basis_adjoint(self, values: NDArray) -> NDArray:
        """``A^T @ values``."""
        if self.diagonal:
            return self.compact_basis.T @ values[self.n_matrix :]
        n_classes = len(self.centre)
        matrix = values[: self.n_matrix].reshape(n_classes, n_classes)
        columns = np.einsum("kj,kj->j", self.scale, matrix) / self.norms
        return self.compact_basis.T @ np.concatenate([columns, values[self.n_matrix :]])

    def _reflect(self, values: NDArray) -> NDArray:
        """``H @ values``."""
        folded = self.reflector_gram @ (
            self._basis_adjoint(values) - self.polar.T @ values[self.held]
        )
        reflected = values - 2.0 * self._basis(folded)
        reflected[self.held] += 2.0 * (self.polar @ folded)
        return reflected

    def set_unit(self, grad_matrix: NDArray, grad_intercept: NDArray) -> None:
        """Scale the coordinates so that L-BFGS-B's first step is the Cauchy step.

        L-BFGS-B's first trial step is ``-gradient / |gradient|``, of unit length.  With the
        unit set here it is ``-t g``, ``t = |g|^2 / g^T D g``, the step that minimises the
        model with the rows' curvatures ``D`` along ``-g``, rather than a length that
        depends on the scale of the problem.  (L-BFGS-B also caps that step at ``1e10``
        times ``|g|``, hence the lower bound on ``|g| * unit``.)  ``H`` is an isometry and
        the gradient is orthogonal to the flat directions, so ``|g|`` is the same in all
        the coordinates.
        """
        self.unit = 1.0
        gradient = self._full_gradient(grad_matrix, grad_intercept)
        rows = self.row_curvature if self.diagonal else self.row_curvature[:, None]
        curvature = np.concatenate(
            [np.broadcast_to(rows, self.centre.shape).ravel(), rows.ravel()]
        )
        squared = float(gradient @ gradient)
        along = float(gradient @ (curvature * gradient))
        if np.isfinite(along) and squared > 0 and along > 0:
            norm = np.sqrt(squared)
            self.unit = max(squared / along * norm, _SMALLEST_STEP / norm)

    def _row_sum(self, values: NDArray) -> NDArray:
        return values if self.diagonal else values.sum(axis=1)

    def to_map(self, u: NDArray) -> tuple[NDArray, NDArray]:
        full = np.zeros(len(self.keep))
        full[self.keep] = u * self.unit
        full = self._reflect(full)
        matrix = full[: self.n_matrix].reshape(self.centre.shape) / self.scale
        return matrix, full[self.n_matrix :] - self._row_sum(matrix * self.centre)

    def from_map(self, matrix: NDArray, intercept: NDArray) -> NDArray:
        """The coordinates of an equivalent map (the same probabilities)."""
        shifted = intercept + self._row_sum(matrix * self.centre)
        full = np.concatenate([(matrix * self.scale).ravel(), shifted])
        return self._reflect(full)[self.keep] / self.unit

    def _full_gradient(self, grad_matrix: NDArray, grad_intercept: NDArray) -> NDArray:
        column = grad_intercept if self.diagonal else grad_intercept[:, None]
        grad_v = (grad_matrix - column * self.centre) / self.scale
        return np.concatenate([grad_v.ravel(), grad_intercept])

    def gradient(self, grad_matrix: NDArray, grad_intercept: NDArray) -> NDArray:
        full = self._full_gradient(grad_matrix, grad_intercept)
        return self._reflect(full)[self.keep] * self.unit


def _whitening(h0, h1, h2, penalty_matrix, penalty_intercept) -> _Coordinates:
    """Coordinates from curvature moments ``h0`` (K), ``h1``, ``h2`` (shaped like ``W``)."""
    diagonal = h1.ndim == 1
    intercept_curvature = h0 + 2 * penalty_intercept
    column = intercept_curvature if diagonal else intercept_curvature[:, None]
    floor = 1e-12 * max(float(intercept_curvature.max()), 1e-300)
    safe_column = np.maximum(column, floor)
    centre = h1 / safe_column
    matrix_curvature = h2 - h1 * centre + 2 * penalty_matrix
    # Rows (classes) that the data barely inform keep a finite, comparable scale.
    matrix_floor = 1e-12 * max(float(matrix_curvature.max()), 1e-300)
    # Relative to the row's intercept curvature: equalising the rows as well measured
    # worse (about twice the iterations at K = 1,000), the rows being coupled.
    scale = np.sqrt(np.maximum(matrix_curvature, matrix_floor) / safe_column)
    return _Coordinates(centre, scale, np.maximum(intercept_curvature, floor))


def _canonical(matrix, intercept, penalty_matrix, penalty_intercept):
    """The equivalent map (same probabilities) with the smallest penalty.

    ``softmax`` is unchanged by adding a constant to every score, so the likelihood is
    unchanged by ``b -> b + c 1`` and, for a full ``W``, by ``W -> W + 1 v^T``.  Each shift
    minimises the penalty (a weighted mean), or, where the penalty does not depend on it,
    makes the entries sum to 0 (the smallest scores, hence the smallest rounding errors).
    The optimiser minimises the likelihood plus this minimised penalty, whose gradient is
    the penalty's gradient at the shifted map (envelope theorem): the objective is exactly
    flat along the shifts instead of weakly curved by a small penalty, which would slow
    L-BFGS-B to a crawl, and drifting along a flat direction cannot inflate the scores.
    """
    intercept = intercept - _weighted_mean(intercept, intercept, penalty_intercept)
    if matrix.ndim == 2:
        deviation = matrix - np.eye(len(matrix))
        matrix = matrix - _weighted_mean(deviation, matrix, penalty_matrix)
    return matrix, intercept


def _weighted_mean(values: NDArray, fallback: NDArray, weights: NDArray) -> NDArray:
    """Weighted mean of ``values`` over the first axis; mean of ``fallback`` where unweighted."""
    total = weights.sum(axis=0)
    weighted = np.einsum("k...,k...->...", weights, values) / np.where(total > 0, total, 1.0)
    return np.where(total > 0, weighted, fallback.mean(axis=0))


class _PenalisedNLL:
    """NLL + penalty as a function of the optimiser's variables (see :func:`_canonical`)."""

    def __init__(self, nll: _SoftmaxNLL, penalty_matrix: NDArray, penalty_intercept: NDArray):
        self.nll = nll
        self.penalty_matrix, self.penalty_intercept = penalty_matrix, penalty_intercept

    def canonical(self, matrix: NDArray, intercept: NDArray) -> tuple[NDArray, NDArray]:
        return _canonical(matrix, intercept, self.penalty_matrix, self.penalty_intercept)

    def penalty(self, matrix: NDArray, intercept: NDArray) -> tuple[float, NDArray, NDArray]:
        deviation = matrix - self.nll.identity
        value = float(
            np.sum(self.penalty_matrix * deviation**2)
            + np.sum(self.penalty_intercept * intercept**2)
        )
        return value, 2 * self.penalty_matrix * deviation, 2 * self.penalty_intercept * intercept

    def total(
        self, matrix, intercept, evaluated: _Pass | None = None
    ) -> tuple[float, NDArray, NDArray]:
        """Value and gradient in ``(W, b)`` at a canonical map (``evaluated``: its pass)."""
        evaluated = evaluated or self.nll(matrix, intercept)
        value, penalty_matrix, penalty_intercept = self.penalty(matrix, intercept)
        return (
            evaluated.loss + value,
            evaluated.grad_matrix + penalty_matrix,
            evaluated.grad_intercept + penalty_intercept,
        )

    def in_coordinates(
        self, coordinates: _Coordinates, start=None, first=None, single: bool = False
    ):
        """``fun(u) -> (value, gradient)`` for L-BFGS-B; ``first`` is the pass at ``start``.

        ``fun.last`` holds the latest ``(u, pass)`` evaluated.
        """

        def fun(u):
            matrix, intercept = self.canonical(*coordinates.to_map(u))
            if start is not None and np.array_equal(u, start):
                evaluated = first
            else:
                evaluated = self.nll(matrix, intercept, single=single)
            fun.last = (u.copy(), evaluated)
            value, grad_matrix, grad_intercept = self.total(matrix, intercept, evaluated)
            if not np.isfinite(value):
                return np.inf, np.zeros_like(u)
            return value, coordinates.gradient(grad_matrix, grad_intercept)

        fun.last = None
        return fun


def _minimise(objective: _PenalisedNLL, tol: float, max_iter: int):
    """Minimise NLL + penalty from the identity map.

    Returns ``(W, b, final pass, identity pass, L-BFGS-B result, iterations)``; the final
    pass is a float64 one at ``(W, b)``.  L-BFGS-B runs in preconditioned coordinates
    (:class:`_Coordinates`) in stages (``_STAGES``), each restarted where the previous one
    stopped with the curvature there: float32 passes while the map is far from the
    optimum, float64 passes to finish.  The first preconditioner is the curvature at the
    identity map.  Each stage's coordinates are scaled so that L-BFGS-B's first step is
    the Cauchy step of the preconditioner's model (:meth:`_Coordinates.set_unit`).
    """
    nll = objective.nll
    matrix, intercept = nll.identity.copy(), np.zeros(nll.n_classes)
    evaluated = nll(matrix, intercept, single=_STAGES[0][0], moments=True)
    identity = evaluated
    n_iter = 0
    for stage, (single, stage_iter, stage_tol) in enumerate(_STAGES):
        last_stage = stage == len(_STAGES) - 1
        coordinates = _whitening(
            *evaluated.curvature, objective.penalty_matrix, objective.penalty_intercept
        )
        first = objective.total(matrix, intercept, evaluated)
        coordinates.set_unit(*first[1:])
        start = coordinates.from_map(matrix, intercept)
        fun = objective.in_coordinates(coordinates, start, evaluated, single=single)
        gtol, ftol = stage_tol or (tol, tol * 1e-6)
        result = minimize(
            fun,
            start,
            jac=True,
            method="L-BFGS-B",
            options={
                "maxiter": max(1, min(stage_iter or max_iter, max_iter - n_iter)),
                "gtol": gtol * coordinates.unit,
                "ftol": ftol,
                "maxcor": 20,
                "maxls": _SINGLE_LINE_SEARCH if single else 20,
            },
        )
        n_iter += int(result.nit)
        matrix, intercept = objective.canonical(*coordinates.to_map(result.x))
        if last_stage or n_iter >= max_iter or (result.success and not single):
            break
        evaluated = nll(matrix, intercept, single=_STAGES[stage + 1][0], curvature=True)
    last_u, evaluated = fun.last
    if not np.array_equal(last_u, result.x) or single:
        evaluated = nll(matrix, intercept)
    value = evaluated.loss + objective.penalty(matrix, intercept)[0]
    if value > identity.loss - _SINGLE_ERROR * abs(identity.loss):
        # Too close to call in float32: the identity map's loss in float64.
        identity = identity._replace(loss=nll(nll.identity, np.zeros(nll.n_classes)).loss)
    if not np.isfinite(value) or value > identity.loss:
        # Never return a map worse than the identity (L-BFGS-B's line search should already
        # guarantee this; rounding in a flat region is the only way it could fail).
        matrix, intercept = nll.identity.copy(), np.zeros(nll.n_classes)
        evaluated = identity
    return matrix, intercept, evaluated, identity, result, n_iter


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

        nll = _SoftmaxNLL(features, labels, weights, diagonal)
        # Threads only for a diagonal map: a full map's passes are BLAS matrix products,
        # which BLAS already spreads over the cores (threads of our own on top measured
        # 1.5-2x slower).
        threads = min(threads, len(nll.chunks)) if diagonal else 1

        def run(ridge):
            objective = _PenalisedNLL(
                nll,
                penalty_matrix + ridge / nll.identity.size,
                penalty_intercept + ridge / n_classes,
            )
            if threads == 1:
                return _minimise(objective, tol, max_iter)
            with ThreadPoolExecutor(threads) as nll.pool:
                try:
                    return _minimise(objective, tol, max_iter)
                finally:
                    nll.pool = None

        matrix, intercept, final, identity, result, n_iter = run(ridge)
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
                matrix, intercept, final, identity, result, more_iter = run(ridge)
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
        block_elements = _BLOCK_ELEMENTS if diagonal else _GEMM_BLOCK_ELEMENTS
        for rows in iv.row_blocks(len(data), data.shape[1], block_elements):
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
        return iv.check_prob(X, name="X")

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
