"""CORP: the score decomposition of Dimitriadis, Gneiting & Jordan (PNAS 2021).

Data flow: validate -> the (score, target) pairs of the top label (or ``Scores``) -> one sort
that pools tied scores into distinct forecast values with their weighted counts of events
and non-events -> the weighted pool-adjacent-violators fit of the event rate on the
forecast (``scipy.optimize.isotonic_regression`` over the pooled values) -> three scores
(original, recalibrated, climatology) from the pooled counts, and their differences.

The pooled values and their PAV fit are the CORP reliability diagram's data too
(:mod:`calibration_toolbox.plot`) and the null refits of :func:`calibration_toolbox.stats.
corp_test`: they are computed here only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import isotonic_regression
from scipy.special import xlogy

from calibration_toolbox import _registry
from calibration_toolbox import _validation as iv
from calibration_toolbox.binning import sort_rows_with_flags
from calibration_toolbox.scores import PredictionsLike

__all__ = [
    "CORPDecomposition",
    "PooledForecasts",
    "checked_pairs",
    "corp_decomposition",
    "corp_terms",
    "pav_fit",
    "pooled_forecasts",
    "score_totals",
]

#: The scoring rules of the decomposition, by their name in ``score=``.
SCORING_RULES = ("brier", "log")


@dataclass(frozen=True)
class CORPDecomposition:
    r"""The CORP decomposition of a mean score (the result of :func:`corp_decomposition`).

    ``score == miscalibration - discrimination + uncertainty`` up to rounding.

    Attributes
    ----------
    score : float
        :math:`\bar S`, the mean score of the forecasts as given.
    miscalibration : float
        MCB :math:`= \bar S - \bar S_{\mathrm{rc}}`, the part that the PAV recalibration
        removes; >= 0, and ``inf`` under the log score when a forecast of 0 (or 1) meets an
        event (a non-event).
    discrimination : float
        DSC :math:`= \bar S_{\mathrm{mg}} - \bar S_{\mathrm{rc}}`, what the recalibrated
        forecasts gain over the climatology; >= 0.
    uncertainty : float
        UNC :math:`= \bar S_{\mathrm{mg}}`, the mean score of the constant forecast
        :math:`\bar y` (the weighted event rate).
    """

    score: float
    miscalibration: float
    discrimination: float
    uncertainty: float


class PooledForecasts(NamedTuple):
    """Distinct forecast values, ascending, with the weighted counts of their rows.

    Rows of weight 0 are left out (they have no say in any mean).
    """

    values: NDArray
    """float64 distinct forecasts, ascending."""
    weights: NDArray
    """Weighted count of the rows of each value (float64)."""
    events: NDArray
    """Weighted count of those rows whose target is 1 (float64)."""

    @property
    def event_rates(self) -> NDArray:
        """The observed event rate of each distinct value."""
        return self.events / self.weights


def _run_starts(sorted_scores: NDArray) -> NDArray:
    """The first position of each run of equal values in ``sorted_scores`` (non-empty)."""
    changes = np.flatnonzero(sorted_scores[1:] != sorted_scores[:-1]) + 1
    return np.concatenate([[0], changes])


def pooled_forecasts(
    scores: NDArray, targets: NDArray, weights: NDArray | None = None
) -> PooledForecasts:
    """Pool the (score, target) pairs by distinct score: the tie-pooling of CORP.

    Parameters
    ----------
    scores : ndarray, shape (n,)
        Validated float32/float64 scores in [0, 1] (not modified).
    targets : ndarray, shape (n,)
        Their 0/1 (or boolean) targets.
    weights : ndarray, shape (n,), optional
        Validated non-negative weights with a positive sum.

    Returns
    -------
    PooledForecasts
    """
    if weights is None:
        # The targets ride in the lowest bit of the scores' bit patterns through one plain
        # sort (binning.sort_rows_with_flags): no argsort and no gathers.
        buffer = np.array(scores, order="C")
        flags = sort_rows_with_flags(buffer, (1, buffer.size), np.flatnonzero(targets))
        starts = _run_starts(buffer)
        counts = np.diff(np.append(starts, buffer.size)).astype(np.float64)
        events = np.add.reduceat(flags, starts).astype(np.float64)
        return PooledForecasts(buffer[starts].astype(np.float64), counts, events)
    positive = weights > 0
    scores, targets, weights = scores[positive], targets[positive], weights[positive]
    order = np.argsort(scores)
    sorted_scores = scores[order]
    sorted_weights = weights[order]
    starts = _run_starts(sorted_scores)
    totals = np.add.reduceat(sorted_weights, starts)
    events = np.add.reduceat(np.where(targets[order] != 0, sorted_weights, 0.0), starts)
    return PooledForecasts(sorted_scores[starts].astype(np.float64), totals, events)


def pav_fit(pooled: PooledForecasts) -> NDArray:
    """The weighted PAV fit of the event rate on the forecast, one value per distinct value.

    A non-decreasing step function; each block's value is the weighted event rate of its
    rows (0 or 1 exactly for a pure block), clipped into [0, 1] against rounding.
    """
    fit = isotonic_regression(pooled.event_rates, weights=pooled.weights, increasing=True).x
    return np.clip(fit, 0.0, 1.0)


def score_totals(forecasts: NDArray, events: NDArray, weights: NDArray, rule: str) -> NDArray:
    """Total score of forecasts made ``weights`` times of which ``events`` were events.

    Brier: ``e (1 - f)^2 + (w - e) f^2``; log: ``-e log f - (w - e) log(1 - f)`` with
    ``0 log 0 = 0`` (``scipy.special.xlogy``), ``inf`` for a forecast of 0 on an event or
    of 1 on a non-event.  Broadcasts (one total per forecast value, or per resample).
    """
    nonevents = weights - events
    if rule == "brier":
        return events * (1.0 - forecasts) ** 2 + nonevents * forecasts**2
    return -(xlogy(events, forecasts) + xlogy(nonevents, 1.0 - forecasts))


def corp_terms(
    pooled: PooledForecasts, rule: str, fit: NDArray | None = None
) -> CORPDecomposition:
    """The decomposition from the pooled forecasts (and their PAV fit, if computed already).

    MCB = S - S_rc and DSC = S_mg - S_rc are >= 0 in exact arithmetic (the forecasts as
    given and the climatology are both monotone maps of the forecast, among which the PAV
    fit has the least score); a rounding error below 0 is set to 0.
    """
    if fit is None:
        fit = pav_fit(pooled)
    total = pooled.weights.sum()
    events = pooled.events.sum()
    with np.errstate(divide="ignore"):  # an infinite log score is the value, not an error
        score = score_totals(pooled.values, pooled.events, pooled.weights, rule).sum() / total
    recalibrated = score_totals(fit, pooled.events, pooled.weights, rule).sum() / total
    climatology = score_totals(min(events / total, 1.0), events, total, rule) / total
    return CORPDecomposition(
        score=float(score),
        miscalibration=float(max(score - recalibrated, 0.0)),
        discrimination=float(max(climatology - recalibrated, 0.0)),
        uncertainty=float(climatology),
    )


def checked_pairs(
    prob: PredictionsLike,
    labels: ArrayLike,
    sample_weight: ArrayLike | None,
    logits: bool = False,
) -> tuple[NDArray, NDArray, NDArray | None]:
    """Validated (score, target) pairs of a CORP call (top label, or ``Scores``) and weights.

    A plain 1-D ``prob`` is refused as for every top-label measure.
    """
    checked = iv.check_predictions(prob, labels, logits=logits, top_label=True)
    weights = iv.check_sample_weight(sample_weight, checked.n_samples, scale_free=True)
    scores, targets = checked.top_label()
    return scores, targets, weights


@_registry.metric("corp_decomposition")
def corp_decomposition(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    score: str = "brier",
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
) -> CORPDecomposition:
    r"""CORP decomposition of the Brier or log score (Dimitriadis, Gneiting & Jordan 2021).

    The forecast :math:`x_i` of each row is the top-label confidence
    :math:`\max_k p_{ik}` and its outcome :math:`y_i` whether the predicted class (first
    index on ties) is the label; ``Scores(s)`` gives one forecast per row against 0/1
    ``labels``.  Rows of equal forecast are pooled first; the event rate of the pooled
    values is then regressed on the forecast by weighted isotonic regression (the
    pool-adjacent-violators algorithm, PAV), giving the recalibrated forecasts
    :math:`\hat x_i`, a non-decreasing step function of :math:`x_i`.  With the mean score
    :math:`\bar S = \frac1W \sum_i w_i S(x_i, y_i)`, that of the recalibrated forecasts
    :math:`\bar S_{\mathrm{rc}}` and that of the climatology
    :math:`\bar S_{\mathrm{mg}} = \frac1W \sum_i w_i S(\bar y, y_i)`
    (:math:`\bar y = \frac1W \sum_i w_i y_i`):

    .. math::

        \mathrm{MCB} = \bar S - \bar S_{\mathrm{rc}}, \quad
        \mathrm{DSC} = \bar S_{\mathrm{mg}} - \bar S_{\mathrm{rc}}, \quad
        \mathrm{UNC} = \bar S_{\mathrm{mg}}, \qquad
        \bar S = \mathrm{MCB} - \mathrm{DSC} + \mathrm{UNC}

    (to rounding, about 1e-16 times the score).  Both MCB and DSC are >= 0, because the PAV
    fit has the least mean score (for every proper score at once) among all non-decreasing
    maps of the forecast, two of which are the identity and the constant :math:`\bar y`;
    a difference that rounding puts below 0 (a few units in the last place) is set to 0.
    The scores are the single-probability forms: Brier :math:`S(x, y) = (x - y)^2` (half
    the two-column :func:`~calibration_toolbox.brier_score` of a binary task, and not
    :func:`~calibration_toolbox.brier_score` of a K-class matrix, which scores all K
    columns), log :math:`S(x, y) = -y \log x - (1 - y) \log(1 - x)`.

    **Forecasts of exactly 0 or 1 under the log score.**  The recalibrated forecast is 0 or
    1 only on a block whose rows are all non-events or all events, where its score is 0
    (:math:`0 \log 0 = 0`); so :math:`\bar S_{\mathrm{rc}}` and UNC are always finite.  A
    forecast *as given* of 0 on an event (or of 1 on a non-event, e.g. a confidence of 1.0
    on a wrong answer) has an infinite log score: then ``score`` and ``miscalibration`` are
    ``inf`` (the identity still holds) and ``discrimination`` and ``uncertainty`` are
    finite.  Nothing is clipped, unlike :func:`~calibration_toolbox.negative_log_likelihood`
    (``eps=1e-15``): to score that way, pass ``np.clip(p, eps, 1 - eps)``.

    **Known bias.**  CORP sees only miscalibration that a non-decreasing map can fix: a
    model whose event rate is not monotone in its forecast is credited for the best
    monotone fit, so MCB is biased *downward* against non-monotone miscalibration.  On a
    small sample the PAV fit follows the noise of the outcomes (it overfits, most at the
    ends of the range and where forecasts are sparse): MCB is then biased *upward* (a
    calibrated model gets MCB > 0) and DSC too.  :func:`calibration_toolbox.stats.
    corp_test` gives the MCB's distribution under calibration (labels redrawn as
    Bernoulli(forecast)).

    Not to be confused with the binned Brier decomposition
    (:func:`~calibration_toolbox.brier_decomposition`, Murphy 1973 with the within-bin
    terms), whose reliability depends on the bins and needs two extra terms to add up.

    Parameters
    ----------
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities (rows sum to 1); ``Scores(s)`` for one forecast per row
        against 0/1 ``labels``.  A plain 1-D array is refused as ambiguous (pass
        ``Scores(p)``, or ``np.column_stack([1 - p, p])`` for a binary classifier's top
        label).
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    score : {'brier', 'log'}, default 'brier'
        The proper scoring rule decomposed.
    logits : bool, default False
        ``prob`` holds logits (log-odds for ``Scores``); the softmax (logistic function)
        is applied first, and the forecasts are its probabilities.  Never guessed.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights: every mean above and the PAV fit are weighted (integer
        weights give the decomposition of duplicated rows; only their ratios matter).

    Returns
    -------
    CORPDecomposition
        ``score``, ``miscalibration``, ``discrimination``, ``uncertainty`` as Python floats.

    References
    ----------
    .. [1] T. Dimitriadis, T. Gneiting and A. I. Jordan, "Stable reliability diagrams for
       probabilistic classifiers", PNAS 118(8), e2016191118, 2021.

    Examples
    --------
    >>> from calibration_toolbox import Scores, corp_decomposition
    >>> parts = corp_decomposition(Scores([0.1, 0.3, 0.6, 0.8]), [0, 1, 0, 1])
    >>> round(parts.score, 12), parts.uncertainty
    (0.225, 0.25)

    PAV pools the middle two forecasts (0.3 with an event, 0.6 without) to 0.5:

    >>> round(parts.miscalibration, 12), parts.discrimination
    (0.1, 0.125)
    >>> round(parts.miscalibration - parts.discrimination + parts.uncertainty, 12)
    0.225
    """
    rule = iv.choice(*SCORING_RULES)(score, "score")
    scores, targets, weights = checked_pairs(prob, labels, sample_weight, logits)
    return corp_terms(pooled_forecasts(scores, targets, weights), rule)
