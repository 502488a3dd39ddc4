"""Brier score decomposition: Murphy (1973) with the within-bin terms of Stephenson et al. (2008).

Data flow: validate -> the engine's per-(class, bin) table (:func:`calibration_table`'s sums:
weighted counts, forecast sums, outcome sums) -> reliability, resolution and uncertainty
from the table -> one pass over the entries in row blocks for the within-bin variance and
covariance (deviations from each bin's means) and the Brier score itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry
from calibration_toolbox import _validation as iv
from calibration_toolbox._rows import row_blocks
from calibration_toolbox.binning import assign_bins
from calibration_toolbox.metrics._engine import checked_table
from calibration_toolbox.metrics._options import GCEOptions
from calibration_toolbox.metrics._table import CalibrationTable
from calibration_toolbox.scores import PredictionsLike

__all__ = ["BrierDecomposition", "brier_decomposition"]


@dataclass(frozen=True)
class BrierDecomposition:
    r"""The five terms of the Brier score on a binning of the forecasts, and the score.

    ``brier_score == reliability - resolution + uncertainty + within_bin_variance
    - 2 * within_bin_covariance`` up to rounding.

    Attributes
    ----------
    brier_score : float
        :math:`\frac1W \sum_i w_i \sum_k (p_{ik} - o_{ik})^2` (as :func:`brier_score`).
    reliability : float
        REL, :math:`\frac1W \sum_{k, b} n_{kb} (\bar f_{kb} - \bar o_{kb})^2`.
    resolution : float
        RES, :math:`\frac1W \sum_{k, b} n_{kb} (\bar o_{kb} - \bar o_k)^2`.
    uncertainty : float
        UNC, :math:`\sum_k \bar o_k (1 - \bar o_k)`.
    within_bin_variance : float
        WBV, :math:`\frac1W \sum_{k, b} \sum_{i \in b} w_i (p_{ik} - \bar f_{kb})^2`.
    within_bin_covariance : float
        WBC, :math:`\frac1W \sum_{k, b} \sum_{i \in b} w_i (p_{ik} - \bar f_{kb})
        (o_{ik} - \bar o_{kb})`.
    """

    brier_score: float
    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float


@_registry.metric("brier_decomposition")
@iv.accepts_classes
def brier_decomposition(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> BrierDecomposition:
    r"""Reliability, resolution, uncertainty and the two within-bin terms of the Brier score.

    A K-class forecast is K binary problems, one per column k: forecast :math:`p_{ik}`,
    outcome :math:`o_{ik} = 1[y_i = k]`; the Brier score
    :math:`\frac1W \sum_i w_i \sum_k (p_{ik} - o_{ik})^2` (:func:`brier_score`, weights
    :math:`w_i`, :math:`W = \sum_i w_i`) is the sum of their scores, and each term below is
    summed over the K problems.  The forecasts of column k are binned like the class-wise
    measures (equal-width bins ``(lo, hi]`` with 0 in the first bin, the binning of
    :func:`calibration_table` with ``class_conditional=True, top_k_classes='all'``).  In
    bin b of column k, with weighted count :math:`n_{kb}`, mean forecast
    :math:`\bar f_{kb}`, observed frequency :math:`\bar o_{kb}` and overall frequency
    :math:`\bar o_k` of class k, Murphy's (1973) three terms are

    .. math::

        \mathrm{REL} = \frac1W \sum_{k,b} n_{kb} (\bar f_{kb} - \bar o_{kb})^2, \quad
        \mathrm{RES} = \frac1W \sum_{k,b} n_{kb} (\bar o_{kb} - \bar o_k)^2, \quad
        \mathrm{UNC} = \sum_k \bar o_k (1 - \bar o_k),

    and, because the forecasts of a bin are not all equal, Stephenson, Coelho & Jolliffe
    (2008) add the within-bin variance and covariance of the forecasts

    .. math::

        \mathrm{WBV} = \frac1W \sum_{k,b} \sum_{i \in b} w_i (p_{ik} - \bar f_{kb})^2,
        \quad
        \mathrm{WBC} = \frac1W \sum_{k,b} \sum_{i \in b} w_i (p_{ik} - \bar f_{kb})
        (o_{ik} - \bar o_{kb}),

    so that :math:`\mathrm{BS} = \mathrm{REL} - \mathrm{RES} + \mathrm{UNC} + \mathrm{WBV}
    - 2\,\mathrm{WBC}` exactly (to rounding, about 1e-15) for any forecasts.  A 1-D
    ``prob`` is P(y = 1) of a binary task, the two columns ``[1 - p, p]`` (each term twice
    the single-probability one, as :func:`brier_score`); ``Scores(s)`` is the
    single-probability form: one binary problem, forecast s against the 0/1 target.

    Not to be confused with: Murphy's three-term decomposition alone, which adds up to the
    Brier score only when all forecasts in a bin are equal (binned continuous forecasts
    miss WBV - 2 WBC); decompositions that use the bin centres instead of the mean forecast
    of each bin in REL (a different REL, and no exact identity); and scikit-learn's
    ``brier_score_loss``, the single-probability score (half the two-column value on a
    binary task; use ``Scores`` for it).  Resolution and uncertainty here are sums over the
    K classes, not the top label's.

    Parameters
    ----------
    prob : array-like, shape (N, K) or (N,), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``; a 1-D array
        is P(y = 1) of a binary task.  ``Scores(s)``: one forecast per row against 0/1
        ``labels``.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    bins : int, array-like or 'auto', default 15
        Number of equal-width bins, or their increasing edges from 0 to 1.  ``'auto'``:
        ``ceil(N ** (1/3))`` bins for the N rows of the call (the cube-root rule of
        scikit-learn's ``calibration_curve``, see :func:`GCE`).
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights; every count and mean is weighted (integer weights give the
        terms of duplicated rows).
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names, looked up
        among them (the rule of :func:`~calibration_toolbox.ECE`).

    Returns
    -------
    BrierDecomposition
        The Brier score and its five terms, as Python floats.

    References
    ----------
    .. [1] A. H. Murphy, "A new vector partition of the probability score", Journal of
       Applied Meteorology 12(4), 1973.
    .. [2] D. B. Stephenson, C. A. S. Coelho and I. T. Jolliffe, "Two extra components in
       the Brier score decomposition", Weather and Forecasting 23(4), 2008.

    Examples
    --------
    >>> from calibration_toolbox import Scores, brier_decomposition

    Four forecasts of rain, two bins: (0.1, 0.3) with no rain then rain, (0.8, 0.6) with
    rain twice.

    >>> parts = brier_decomposition(Scores([0.1, 0.3, 0.8, 0.6]), [0, 1, 1, 1], bins=2)
    >>> parts.brier_score, parts.reliability, parts.resolution, parts.uncertainty
    (0.175, 0.09, 0.0625, 0.1875)
    >>> parts.within_bin_variance, parts.within_bin_covariance
    (0.01, 0.025)
    >>> total = parts.reliability - parts.resolution + parts.uncertainty
    >>> round(total + parts.within_bin_variance - 2 * parts.within_bin_covariance, 12)
    0.175
    """
    checked = iv.check_predictions(prob, labels, logits=logits, renormalize=renormalize)
    weights = iv.check_sample_weight(sample_weight, checked.n_samples, scale_free=True)
    pairs = checked.pairs is not None
    options = GCEOptions.checked(
        checked.n_classes,
        bins=bins,
        class_conditional=not pairs,
        adaptive_bins=False,
        top_k_classes=1 if pairs else "all",
        norm=1,
        thresholding=0.0,
        n_samples=checked.n_samples,
    )
    table = checked_table(checked, weights, options)
    total = float(checked.n_samples if weights is None else weights.sum())
    reliability, resolution, uncertainty = _murphy_terms(table, total)
    brier, variance, covariance = _within_bin_terms(checked, weights, table, options)
    return BrierDecomposition(
        brier_score=brier / total,
        reliability=reliability,
        resolution=resolution,
        uncertainty=uncertainty,
        within_bin_variance=variance / total,
        within_bin_covariance=covariance / total,
    )


def _bin_means(table: CalibrationTable) -> tuple[NDArray, NDArray]:
    """Mean forecast and observed frequency per (group, bin); 0 for an empty bin."""
    nonempty = table.counts > 0
    mean_forecast = np.zeros_like(table.counts)
    frequency = np.zeros_like(table.counts)
    np.divide(table.score_sums, table.counts, out=mean_forecast, where=nonempty)
    np.divide(table.target_sums, table.counts, out=frequency, where=nonempty)
    return mean_forecast, frequency


def _murphy_terms(table: CalibrationTable, total: float) -> tuple[float, float, float]:
    """REL, RES and UNC, summed over the groups (classes) of the table."""
    mean_forecast, frequency = _bin_means(table)
    base_rate = table.target_sums.sum(axis=1, keepdims=True) / total
    reliability = (table.counts * (mean_forecast - frequency) ** 2).sum() / total
    resolution = (table.counts * (frequency - base_rate) ** 2).sum() / total
    uncertainty = (base_rate * (1 - base_rate)).sum()
    return float(reliability), float(resolution), float(uncertainty)


def _within_bin_terms(
    checked: iv.CheckedInput,
    weights: NDArray | None,
    table: CalibrationTable,
    options: GCEOptions,
) -> tuple[float, float, float]:
    """Weighted sums of (p - o)^2, (p - f_b)^2 and (p - f_b)(o - o_b) over all entries."""
    mean_forecast, frequency = (means.reshape(-1) for means in _bin_means(table))
    n_bins = options.n_bins
    sums = np.zeros(3)
    for rows in row_blocks(checked.n_samples, checked.entry_columns):
        forecasts, outcomes = checked.entries(rows)
        block = forecasts.astype(np.float64)
        observed = outcomes.astype(np.float64)
        cells = assign_bins(block, options.edges, options.uniform)
        cells += np.arange(block.shape[1]) * n_bins
        forecast_deviation = block - mean_forecast[cells]
        per_row = np.stack(
            [
                np.einsum("ij,ij->i", block - observed, block - observed),
                np.einsum("ij,ij->i", forecast_deviation, forecast_deviation),
                np.einsum("ij,ij->i", forecast_deviation, observed - frequency[cells]),
            ]
        )
        # einsum rather than a BLAS product: no thread is woken for a 3-row product.
        if weights is None:
            sums += np.einsum("ji->j", per_row)
        else:
            sums += np.einsum("ji,i->j", per_row, weights[rows])
    brier, variance, covariance = sums
    return float(brier), float(variance), float(covariance)
