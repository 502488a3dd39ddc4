r"""The optimiser's coordinates: a curvature preconditioner and the flat directions dropped.

L-BFGS-B on a linear softmax map converges in few iterations, whatever the scale or offset
of the features, when it works in coordinates in which the loss's curvature is about
equal in every direction.  :func:`whitening` builds them (:class:`Coordinates`) from the
curvature moments of one pass (:class:`~calibration_toolbox.recalibration._softmax_nll.Curvature`);
:class:`Coordinates` also drops, by an orthogonal block reflector, the directions along
which the softmax, hence the objective, is exactly flat.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox.recalibration._softmax_nll import Curvature, FeatureMoments

__all__ = ["Coordinates", "whitening"]

# Weight of a uniform softmax's curvature in the first preconditioner (see `whitening`).
_UNIFORM_SHARE = 1e-2
# Smallest |gradient| * unit in `Coordinates.set_unit`: L-BFGS-B's first step is at most
# 1e10 times the gradient, so a smaller product would shorten that step.
_SMALLEST_STEP = 1e-9


class Coordinates:
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
        1) directions (see ``canonical`` in ``_linear_fit``).  L-BFGS-B never moves along
        them (the gradient is orthogonal to them), so they are dropped: a block reflector
        ``H``, an orthogonal map exchanging the span of the flat directions with that of
        the coordinates of one row of ``(V, c)`` (its ``c`` entry alone for a diagonal
        map), sends the other coordinates isometrically onto the complement.  The iterates are
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
        """The map ``(W, b)`` at the optimiser's variables ``u``."""
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
        """The gradient in the optimiser's variables from the one in ``(W, b)``."""
        full = self._full_gradient(grad_matrix, grad_intercept)
        return self._reflect(full)[self.keep] * self.unit


def whitening(
    curvature: Curvature,
    penalty_matrix: NDArray,
    penalty_intercept: NDArray,
    moments: FeatureMoments | None = None,
) -> Coordinates:
    """Coordinates from the curvature moments of a pass and the penalty's weights.

    With ``moments`` (the feature moments of the same pass), a little of the curvature of
    a uniform softmax, ``h = w / K``, which does not depend on the map, is added first:
    logits so large that the softmax saturates have no curvature at the identity map to
    precondition with.  (Added to later refreshes too, it measured 1.5-2x the passes on
    the shared predictions: the fit passes ``moments`` for the first preconditioner only.)
    """
    h0, h1, h2 = curvature
    diagonal = h1.ndim == 1
    if moments is not None:
        level = _UNIFORM_SHARE / len(h0)
        first, second = level * moments.first, level * moments.second
        if not diagonal:
            first, second = first[None, :], second[None, :]
        h0, h1, h2 = h0 + level, h1 + first, h2 + second
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
    return Coordinates(centre, scale, np.maximum(intercept_curvature, floor))
