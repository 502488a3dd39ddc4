r"""The softmax NLL of a diagonal map summed over parts of the rows: blocks or Dask chunks.

:class:`PartsNLL` has the interface of a diagonal
:class:`~calibration_toolbox.recalibration._softmax_nll.SoftmaxNLL` (what the fit of
:mod:`calibration_toolbox.recalibration._linear_fit` calls), but its rows come in parts:
the blocks of a source read again for every pass, or the row chunks of Dask arrays
reduced in the workers.  Each part's pass is that of a ``SoftmaxNLL`` of the part, a
weighted mean over its rows; the parts' means weighted by their total weights ``W_b``
add up to the mean over all rows, ``sum_b W_b mean_b / sum_b W_b``, for the loss, the
gradient, the curvature, the Hessian (or its product with a direction) and the feature
moments alike (the smallest log-probability is a minimum).  So a pass over parts is the
in-memory pass up to the order of the additions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox.recalibration._softmax_nll import (
    DOUBLE,
    Curvature,
    Extras,
    FeatureMoments,
    Pass,
    SoftmaxNLL,
)

__all__ = ["PartsNLL", "RowCounts", "Share"]


class Share:
    """A part's :class:`Pass` times the part's total weight, and that weight; shares add.

    ``0 + share`` is ``share`` (a part of weight 0 adds nothing).
    """

    def __init__(self, weight: float, values: tuple, log_smallest: float):
        # values: loss, gradient (matrix, intercept), then the curvature, moments and
        # Hessian or None.
        self.weight, self.values, self.log_smallest = weight, values, log_smallest

    @classmethod
    def of(cls, evaluated: Pass, weight: float) -> Share:
        values = (
            evaluated.loss * weight,
            evaluated.grad_matrix * weight,
            evaluated.grad_intercept * weight,
            None if evaluated.curvature is None else [a * weight for a in evaluated.curvature],
            None if evaluated.moments is None else [a * weight for a in evaluated.moments],
            None if evaluated.hessian is None else evaluated.hessian * weight,
            None if evaluated.hessian_vector is None else evaluated.hessian_vector * weight,
        )
        return cls(weight, values, evaluated.log_smallest)

    def __add__(self, other: Share | float) -> Share:
        if not isinstance(other, Share):
            return self
        values = tuple(
            None if mine is None else _added(mine, theirs)
            for mine, theirs in zip(self.values, other.values, strict=True)
        )
        smallest = min(self.log_smallest, other.log_smallest)
        return Share(self.weight + other.weight, values, smallest)

    __radd__ = __add__

    def mean(self) -> Pass:
        """The pass over every part: the shares' sum over the total weight."""
        loss, grad_matrix, grad_intercept, curvature, moments, hessian, product = (
            None if value is None else _divided(value, self.weight) for value in self.values
        )
        return Pass(
            float(loss),
            grad_matrix,
            grad_intercept,
            None if curvature is None else Curvature(*curvature),
            None if moments is None else FeatureMoments(*moments),
            self.log_smallest,
            hessian,
            product,
        )


def _added(mine, theirs):
    if isinstance(mine, list):
        return [a + b for a, b in zip(mine, theirs, strict=True)]
    return mine + theirs


def _divided(value, weight: float):
    return [a / weight for a in value] if isinstance(value, list) else value / weight


def part_pass(
    features, labels, weights, *, matrix, intercept, precision, extras, direction
) -> Share:
    """The :class:`Share` of one part at the map ``(matrix, intercept)``."""
    nll = SoftmaxNLL(features, labels, weights, diagonal=True)
    weight = float(len(labels) if weights is None else weights.sum())
    evaluated = nll(matrix, intercept, precision=precision, extras=extras, direction=direction)
    return Share.of(evaluated, weight)


class RowCounts(NamedTuple):
    """What the fit needs to know of the rows before its passes; counts of parts add."""

    class_weight: NDArray  # total weight of each class
    n_rows: int
    n_positive: int  # rows of positive weight
    smallest_weight: float  # smallest positive weight (inf: none)

    @classmethod
    def of(cls, features: NDArray, labels: NDArray, weights: NDArray | None) -> RowCounts:
        n_classes = features.shape[1]
        if weights is None:
            class_weight = np.bincount(labels, minlength=n_classes).astype(np.float64)
            return cls(class_weight, len(labels), len(labels), 1.0 if len(labels) else np.inf)
        positive = weights[weights > 0]
        return cls(
            np.bincount(labels, weights=weights, minlength=n_classes),
            len(labels),
            len(positive),
            float(positive.min()) if len(positive) else np.inf,
        )

    def __add__(self, other: RowCounts | float) -> RowCounts:
        if not isinstance(other, RowCounts):
            return self
        return RowCounts(
            self.class_weight + other.class_weight,
            self.n_rows + other.n_rows,
            self.n_positive + other.n_positive,
            min(self.smallest_weight, other.smallest_weight),
        )

    __radd__ = __add__


class PartsNLL:
    """A diagonal :class:`SoftmaxNLL` over parts of the rows (see the module).

    ``reduce(function)`` applies ``function(features, labels, weights)`` to every part
    (checked as ``fit`` checks its arrays) and returns the sum of the results.  A first
    reduction gets the :class:`RowCounts`; each later call is one pass.
    """

    def __init__(self, reduce: Callable):
        self.reduce = reduce
        self.diagonal = True
        counts = reduce(RowCounts.of)
        self.counts = counts
        self.n_classes = len(counts.class_weight)
        self.identity = np.ones(self.n_classes)
        self.class_weight = counts.class_weight / counts.class_weight.sum()
        # One chunk: a part's pass is not shared by threads.
        self.chunks = [slice(0, counts.n_rows)]
        self.passes = 0

    def __call__(
        self,
        matrix: NDArray,
        intercept: NDArray,
        *,
        precision: np.dtype = DOUBLE,
        extras: Extras = Extras.NONE,
        pool=None,
        direction: NDArray | None = None,
    ) -> Pass:
        """Loss, gradient and ``extras`` at ``(matrix, intercept)``: one pass over the parts."""
        self.passes += 1
        function = functools.partial(
            part_pass,
            matrix=matrix,
            intercept=intercept,
            precision=precision,
            extras=extras,
            direction=direction,
        )
        return self.reduce(function).mean()
