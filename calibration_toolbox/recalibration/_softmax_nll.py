r"""One pass over the features: the softmax NLL of a linear map, its gradient, and extras.

:class:`SoftmaxNLL` evaluates, for features ``x`` (N, K), labels ``y`` and normalised
weights ``w``, the weighted mean negative log-likelihood of ``softmax(W x_i + b)`` (or
``softmax(a * x_i + b)`` for a diagonal map) and its gradient in one pass over the rows,
in row blocks that stay in cache.  On request the same pass also returns the curvature
moments that the preconditioner is built from (:class:`Curvature`), the map-free feature
moments (:class:`FeatureMoments`), the log of the smallest calibrated probability
(for the separation checks) and, for a diagonal map, the exact Hessian in ``(a, b)`` or
its product with a direction (for the Newton polish of the fit).  A pass computes in
float64 or, at about half the cost, in float32 (:data:`SINGLE`); the totals are
accumulated in float64 either way.
"""

from __future__ import annotations

import enum
import functools
import itertools
from concurrent.futures import Executor
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox._rows import (
    CACHE_BLOCK_ELEMENTS,
    GEMM_BLOCK_ELEMENTS,
    MAX_THREAD_CHUNKS,
    THREAD_CHUNK_ELEMENTS,
    block_rows,
    row_blocks,
)

__all__ = [
    "DOUBLE",
    "SINGLE",
    "Curvature",
    "Extras",
    "FeatureMoments",
    "Pass",
    "SoftmaxNLL",
    "add_cross_product",
    "map_blocks",
    "map_product",
]

# Pass precisions: float32 passes cost about half as much, accurate to about 1e-7 relative.
SINGLE = np.dtype(np.float32)
DOUBLE = np.dtype(np.float64)


# OpenBLAS runs a matrix product on one thread when m * n * k <= 65536 * 4 multiply-adds
# (its SMP_THRESHOLD_MIN times GEMM_MULTITHREAD_THRESHOLD) and on every core above.  On a
# machine whose cores are busy with other work a threaded product waits for them: on the
# shared 2-core machines a (5,000 x 100) @ (100 x 100) float32 product took 24 ms with 2
# threads against 1.2 ms on one (OPENBLAS_NUM_THREADS=1), e.T @ x 61-312 ms against 1.3
# ms, and a MatrixScaling pass on 5,000 x 100 about 190 ms against 15 ms.  So a full map's
# products go as stacks of products of at most this size (one numpy call each; numpy calls
# BLAS once per product of the stack), which no BLAS threads: 1.05 ms for the first product
# above, whatever the load.
ONE_THREAD_PRODUCT = 1 << 18
# Products of a stack whose (K, K) results are summed at once (bounds their memory).
_STACK_GROUP = 32


def _stack_rows(n_classes: int) -> int:
    """Rows per product of a stack (0: too many classes for one-thread products)."""
    rows = ONE_THREAD_PRODUCT // (n_classes * n_classes)
    return rows if rows >= 8 else 0


def map_product(block: NDArray, matrix: NDArray, out: NDArray) -> NDArray:
    """``block @ matrix.T`` into ``out`` (a (rows, K) block times a (K, K) map)."""
    rows = _stack_rows(matrix.shape[0])
    whole = len(block) - len(block) % rows if rows else 0
    if whole:
        shape = (whole // rows, rows, block.shape[1])
        np.matmul(block[:whole].reshape(shape), matrix.T, out=out[:whole].reshape(shape))
    if whole < len(block):
        np.matmul(block[whole:], matrix.T, out=out[whole:])
    return out


def add_cross_product(total: NDArray, left: NDArray, right: NDArray) -> None:
    """``total += left.T @ right`` for two (rows, K) blocks."""
    rows = _stack_rows(left.shape[1])
    whole = len(left) - len(left) % rows if rows else 0
    step = rows * _STACK_GROUP or 1  # (no stacked products when rows is 0)
    for start in range(0, whole, step):  # a few groups of products per block
        stop = min(start + step, whole)
        shape = ((stop - start) // rows, rows, left.shape[1])
        stacked = np.matmul(
            left[start:stop].reshape(shape).transpose(0, 2, 1), right[start:stop].reshape(shape)
        )
        total += stacked.sum(axis=0)
    if whole < len(left):
        total += left[whole:].T @ right[whole:]


def map_blocks(n_rows: int, n_classes: int, diagonal: bool):
    """Row blocks (``slice`` objects) for applying a diagonal or full map to ``n_rows`` rows."""
    return row_blocks(n_rows, n_classes, CACHE_BLOCK_ELEMENTS if diagonal else GEMM_BLOCK_ELEMENTS)


class Extras(enum.Flag):
    """What a pass computes besides the loss and its gradient."""

    NONE = 0
    #: :class:`Curvature` at the map (in float32 whatever the pass's precision).
    CURVATURE = enum.auto()
    #: :class:`FeatureMoments` (they do not depend on the map).
    MOMENTS = enum.auto()
    #: The log of the smallest calibrated probability (a row minimum per block).
    SMALLEST = enum.auto()
    #: The exact Hessian of the loss in ``(a, b)`` (diagonal maps only; float64).
    HESSIAN = enum.auto()


class Curvature(NamedTuple):
    """Curvature weights ``h_ik = w_i p_ik (1 - p_ik)`` summed over the samples.

    ``h0[k] = sum_i h_ik``; ``h1`` and ``h2`` have the shape of ``W``: for a full map
    ``h1[k, j] = sum_i h_ik x_ij`` and ``h2[k, j] = sum_i h_ik x_ij**2``, for a diagonal
    one ``h1[k] = sum_i h_ik x_ik`` and ``h2[k] = sum_i h_ik x_ik**2``.
    """

    h0: NDArray
    h1: NDArray
    h2: NDArray


class FeatureMoments(NamedTuple):
    """``first[j] = sum_i w_i x_ij`` and ``second[j] = sum_i w_i x_ij**2`` (K,)."""

    first: NDArray
    second: NDArray


class Pass(NamedTuple):
    """What one pass over the features returns (see :class:`SoftmaxNLL`)."""

    loss: float
    grad_matrix: NDArray
    grad_intercept: NDArray
    # The extras asked for, else None (NaN for `log_smallest`).
    curvature: Curvature | None
    moments: FeatureMoments | None
    # log of the smallest calibrated probability of any class for any sample.
    log_smallest: float
    # The (2K, 2K) Hessian in the parameters (a, b) of a diagonal map, if asked for.
    hessian: NDArray | None = None
    # The Hessian times the pass's `direction` (2K,), if one was given.
    hessian_vector: NDArray | None = None


class _ChunkSums:
    """One chunk's share of a pass; chunks are added in order, so threads change no bit."""

    def __init__(self, matrix_shape, n_classes: int, extras: Extras, product: bool = False):
        self.normaliser = 0.0  # sum_i w_i (m_i + log Z_i)
        self.grad_matrix = np.zeros(matrix_shape)
        self.grad_intercept = np.zeros(n_classes)
        self.curvature = None
        if Extras.CURVATURE in extras:
            self.curvature = Curvature(
                np.zeros(n_classes), np.zeros(matrix_shape), np.zeros(matrix_shape)
            )
        self.moments = None
        if Extras.MOMENTS in extras:
            self.moments = FeatureMoments(np.zeros(n_classes), np.zeros(n_classes))
        self.log_smallest = 0.0 if Extras.SMALLEST in extras else np.nan
        self.hessian = (
            np.zeros((2 * n_classes, 2 * n_classes)) if Extras.HESSIAN in extras else None
        )
        self.hessian_vector = np.zeros(2 * n_classes) if product else None

    def add(self, other: _ChunkSums) -> None:
        self.normaliser += other.normaliser
        self.grad_matrix += other.grad_matrix
        self.grad_intercept += other.grad_intercept
        for mine, theirs in ((self.curvature, other.curvature), (self.moments, other.moments)):
            for total, more in zip(mine or (), theirs or (), strict=True):
                total += more
        self.log_smallest = min(self.log_smallest, other.log_smallest)
        for total, more in (
            (self.hessian, other.hessian),
            (self.hessian_vector, other.hessian_vector),
        ):
            if total is not None:
                total += more


class SoftmaxNLL:
    """Weighted mean NLL of ``softmax(x W^T + b)`` (or ``softmax(x * a + b)``) and gradient.

    With normalised weights ``w`` the loss is ``sum_i w_i (m_i + log Z_i) - sum_i w_i
    s_{i y_i}``, where ``m_i`` is row ``i``'s largest score and ``Z_i = sum_k exp(s_ik -
    m_i)``.  The label term is linear in the map: ``<W, L> + <b, c>`` with the per-class
    weighted feature sums ``L`` and class weights ``c``, computed once in ``__init__``.  So
    is its gradient, ``(L, c)``, which leaves to each pass only the softmax part, ``E^T
    (x * w / Z)`` with ``E = exp(s - m)`` (matrix-vector products for a diagonal ``W``,
    one matrix product for a full one): no label lookup, no logarithm per entry, no
    division of the whole block.

    ``features`` (N, K) is read in row blocks.  A pass computes in float64, or in float32
    (scores, exponentials and row sums; the totals are still accumulated in float64):
    about half the cost, accurate to about 1e-7 relative, which is enough to approach the
    optimum before float64 passes finish it.  ``passes`` counts the passes made.
    """

    def __init__(self, features: NDArray, labels: NDArray, weights: NDArray | None, diagonal):
        self.features = features
        self.labels = labels
        n_samples, n_classes = features.shape
        self.diagonal = diagonal
        self.n_classes = n_classes
        self.identity = np.ones(n_classes) if diagonal else np.eye(n_classes)
        self.block_elements = CACHE_BLOCK_ELEMENTS if diagonal else GEMM_BLOCK_ELEMENTS
        self.passes = 0
        # Contiguous chunks of whole blocks, shared by the threads of a pool when given.
        rows_per_block = block_rows(n_classes, self.block_elements)
        n_blocks = -(-n_samples // rows_per_block)
        n_chunks = min(
            n_blocks, MAX_THREAD_CHUNKS, max(1, n_samples * n_classes // THREAD_CHUNK_ELEMENTS)
        )
        edges = rows_per_block * (np.arange(n_chunks + 1) * n_blocks // n_chunks)
        edges[-1] = n_samples
        self.chunks = [slice(int(lo), int(hi)) for lo, hi in itertools.pairwise(edges)]
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
            for rows in row_blocks(n_samples, n_classes):
                index = labels[rows, None] * n_classes + columns
                values = features[rows] * row_weight[rows, None]
                sums += np.bincount(index.ravel(), values.ravel(), n_classes * n_classes)
            self.label_features = sums.reshape(n_classes, n_classes)

    def __call__(
        self,
        matrix: NDArray,
        intercept: NDArray,
        *,
        precision: np.dtype = DOUBLE,
        extras: Extras = Extras.NONE,
        pool: Executor | None = None,
        direction: NDArray | None = None,
    ) -> Pass:
        """Loss, gradient and ``extras`` at the map ``(matrix, intercept)`` in one pass.

        The rows are split into a fixed number of chunks (see
        ``_rows.THREAD_CHUNK_ELEMENTS``), which ``pool`` (an executor, when given) processes
        in parallel and whose sums are added in order, so the result does not depend on
        ``pool``.  With ``direction`` (``(da, db)``, (2K,), a diagonal map only) the pass
        also returns the Hessian times it (:func:`_add_hessian_vector`).
        """
        self.passes += 1
        chunk = functools.partial(
            self._chunk,
            dtype=precision,
            work_matrix=matrix.astype(precision),
            work_intercept=intercept.astype(precision),
            extras=extras,
            direction=None if direction is None else direction.astype(precision),
        )
        mapped = pool.map if pool is not None else map
        parts = list(mapped(chunk, self.chunks))
        sums = parts[0]
        for part in parts[1:]:
            sums.add(part)
        if self.diagonal:
            label_term = float(np.dot(matrix, self.label_features))
        else:
            label_term = float(np.vdot(matrix, self.label_features))
        loss = sums.normaliser - label_term - float(np.dot(intercept, self.class_weight))
        sums.grad_matrix -= self.label_features
        sums.grad_intercept -= self.class_weight
        return Pass(
            loss,
            sums.grad_matrix,
            sums.grad_intercept,
            sums.curvature,
            sums.moments,
            sums.log_smallest,
            sums.hessian,
            sums.hessian_vector,
        )

    def rows_per_block(self, n_rows: int) -> int:
        """Rows per block of a pass (at most ``n_rows``)."""
        return min(n_rows, block_rows(self.n_classes, self.block_elements))

    def _chunk(
        self, chunk: slice, dtype, work_matrix, work_intercept, extras, direction
    ) -> _ChunkSums:
        """One chunk's share of a pass."""
        sums = _ChunkSums(work_matrix.shape, self.n_classes, extras, direction is not None)
        smallest = Extras.SMALLEST in extras
        buffer = np.empty((self.rows_per_block(chunk.stop - chunk.start), self.n_classes), dtype)
        float32_extras = bool(extras & (Extras.CURVATURE | Extras.MOMENTS))
        # Scratch space for the curvature: p and 1 - p of a block.
        spread = np.empty(buffer.shape, np.float32) if sums.curvature is not None else None
        complement = np.empty_like(spread) if spread is not None else None
        for rows in row_blocks(chunk.stop - chunk.start, self.n_classes, self.block_elements):
            rows = slice(chunk.start + rows.start, chunk.start + rows.stop)
            block = self.features[rows]
            if not self.diagonal:
                block = block.astype(dtype, copy=False)
            scores = buffer[: len(block)]
            top = self._shifted_scores(block, work_matrix, work_intercept, out=scores)
            if smallest:
                lowest = scores.min(axis=1)
            np.exp(scores, out=scores)
            total = scores.sum(axis=1)
            log_total = np.log(total, dtype=np.float64)
            if smallest:
                sums.log_smallest = min(sums.log_smallest, float(np.min(lowest - log_total)))
            row_weight = self.row_weight[rows]
            sums.normaliser += float(np.dot(row_weight, top + log_total))
            if float32_extras:
                self._add_float32_extras(sums, rows, scores, total, spread, complement)
            if sums.hessian is not None or direction is not None:
                _add_second_order(sums, block, scores, total, row_weight, direction)
            # Each row's softmax times its weight is scores * scale.
            scale = (row_weight / total).astype(dtype)
            if self.diagonal:
                sums.grad_intercept += scale @ scores
                scores *= block
                sums.grad_matrix += scale @ scores
            else:
                # Column sums rather than BLAS's threaded `scale @ scores` (see
                # ONE_THREAD_PRODUCT): no call of a full map's pass wakes BLAS threads.
                scores *= scale[:, None]
                sums.grad_intercept += np.add.reduce(scores, axis=0)
                add_cross_product(sums.grad_matrix, scores, block)
        return sums

    def _shifted_scores(self, block, work_matrix, work_intercept, out: NDArray) -> NDArray:
        """Scores ``s - m`` of a block written to ``out``; returns the row maxima ``m``."""
        if self.diagonal:
            np.multiply(block, work_matrix, out=out)
        else:
            map_product(block, work_matrix, out)
        out += work_intercept
        top = out.max(axis=1)
        out -= top[:, None]
        return top

    def _add_float32_extras(
        self, sums: _ChunkSums, rows: slice, scores, total, spread_buffer, spare
    ):
        """Add a block's curvature and feature moments, in float32 whatever the pass.

        ``scores`` holds ``exp(s - m)`` and ``total`` its row sums; ``spread_buffer`` and
        ``spare`` are float32 scratch blocks for the curvature.  A preconditioner needs no
        more than float32.
        """
        single_block = self.features[rows].astype(np.float32, copy=False)
        work_weight = self.row_weight[rows].astype(np.float32)
        if sums.curvature is not None:
            h0, h1, h2 = sums.curvature
            spread = spread_buffer[: len(scores)]
            inverse = (1.0 / total).astype(np.float32)
            np.multiply(scores, inverse[:, None], out=spread, casting="same_kind")
            complement = np.subtract(1.0, spread, out=spare[: len(scores)])
            spread *= complement  # p (1 - p)
            if self.diagonal:
                h0 += work_weight @ spread
                spread *= single_block
                h1 += work_weight @ spread
                spread *= single_block
                h2 += work_weight @ spread
            else:
                spread *= work_weight[:, None]
                h0 += np.add.reduce(spread, axis=0)
                add_cross_product(h1, spread, single_block)
                add_cross_product(h2, spread, np.square(single_block))
        if sums.moments is not None:
            first, second = sums.moments
            first += np.einsum("i,ik->k", work_weight, single_block)
            second += np.einsum("i,ik,ik->k", work_weight, single_block, single_block)


def _add_second_order(sums: _ChunkSums, block, exps, total, row_weight, direction) -> None:
    """Add a block's share of the Hessian and of the Hessian times ``direction``.

    ``exps`` holds ``exp(s - m)`` and ``total`` its row sums.
    """
    if sums.hessian is not None:
        _add_hessian(sums.hessian, block, exps / total[:, None], row_weight)
    if direction is not None:
        _add_hessian_vector(sums.hessian_vector, block, exps, total, row_weight, direction)


def _add_hessian_vector(product: NDArray, block, exps, total, row_weight, direction) -> None:
    r"""Add a block's share of ``H v`` (see :func:`_add_hessian`) for ``v = (da, db)``.

    With the change of the scores ``t_i = J_i v = x_i * da + db`` and ``u_i = (diag p_i -
    p_i p_i^T) t_i = p_i (t_i - p_i . t_i)``, ``H v = sum_i w_i J_i^T u_i = (sum_i w_i x_i
    u_i, sum_i w_i u_i)``: about one pass's arithmetic, no (K, K) product.  ``p_i =
    e_i / Z_i`` with ``exps`` ``e`` and ``total`` ``Z``; the ``1 / Z_i`` goes into the row
    weights (no division of the block), and the arithmetic is in ``exps``'s precision
    (``direction`` is cast to it).
    """
    n_classes = block.shape[1]
    change = np.multiply(block, direction[:n_classes], dtype=exps.dtype)
    change += direction[n_classes:]
    mean = np.einsum("ik,ik->i", exps, change) / total
    change -= mean[:, None]
    change *= exps
    scale = (row_weight / total).astype(exps.dtype)
    product[n_classes:] += scale @ change
    change *= block
    product[:n_classes] += scale @ change


def _add_hessian(hessian: NDArray, block: NDArray, prob: NDArray, row_weight: NDArray) -> None:
    r"""Add a block's share of the Hessian of the NLL of ``softmax(a * x + b)`` in ``(a, b)``.

    Row ``i``'s scores ``s_i = a * x_i + b`` have the Jacobian ``J_i = [diag(x_i), I]`` in
    ``(a, b)`` and the NLL's Hessian in the scores is ``diag(p_i) - p_i p_i^T``, so

    .. math::

        H = \sum_i w_i J_i^T (\operatorname{diag} p_i - p_i p_i^T) J_i
          = \begin{pmatrix} D(w x^2 p) & D(w x p) \\ D(w x p) & D(w p) \end{pmatrix}
            - \sum_i w_i q_i q_i^T, \qquad q_i = J_i^T p_i = (x_i p_i, p_i),

    with ``D(v)`` the diagonal matrix of the column sums of ``v``.  One product
    ``(rows, 2K)^T (rows, 2K)`` per block, in one-thread pieces (:func:`add_cross_product`).
    """
    n_classes = block.shape[1]
    scaled = block * prob  # x p
    stacked = np.concatenate([scaled, prob], axis=1)
    add_cross_product(hessian, stacked * -row_weight[:, None], stacked)
    index = np.arange(n_classes)
    hessian[index, index] += row_weight @ (scaled * block)
    cross = row_weight @ scaled
    hessian[index, index + n_classes] += cross
    hessian[index + n_classes, index] += cross
    hessian[index + n_classes, index + n_classes] += row_weight @ prob
