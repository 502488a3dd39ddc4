"""CORP: the score decomposition of Dimitriadis, Gneiting & Jordan (PNAS 2021).

Data flow: validate -> the (score, target) pairs of the top label (or ``Scores``) -> one sort
that pools tied scores into distinct forecast values with their weighted counts of events
and non-events -> the weighted pool-adjacent-violators fit of the event rate on the
forecast (``scipy.optimize.isotonic_regression`` over the pooled values) -> three scores
(original, recalibrated, climatology) from the pooled counts, and their differences.

The pooled values and their PAV fit are the CORP reliability diagram's data too
(:mod:`calibration_toolbox.plot`) and the null refits of
:func:`calibration_toolbox.stats.corp_test`: they are computed here only.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry, _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._docstrings import with_fragments
from calibration_toolbox.binning import sort_rows_with_flags, sort_rows_with_positions
from calibration_toolbox.scores import PredictionsLike

__all__ = [
    "CORP_REFERENCE",
    "CORPDecomposition",
    "PooledForecasts",
    "calibrated_events",
    "chernoff_quantile",
    "continuous_band",
    "corp_decomposition",
    "corp_terms",
    "discrete_band",
    "null_refits",
    "pav_fit",
    "pooled_forecasts",
    "score_totals",
    "with_reference",
]

#: The paper, cited by every CORP docstring (a ``with_fragments`` fragment).
CORP_REFERENCE = """\
.. [1] T. Dimitriadis, T. Gneiting and A. I. Jordan, "Stable reliability diagrams for
   probabilistic classifiers", PNAS 118(8), e2016191118, 2021.
"""
with_reference = with_fragments({"{corp_reference}": CORP_REFERENCE})

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
    row_values: NDArray | None = None
    """With weights: the distinct value's index of each positive-weight row (else None)."""
    row_weights: NDArray | None = None
    """With weights: the weight of each of those rows, in the same order."""

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
        ends = np.append(starts[1:], buffer.size)
        counts = (ends - starts).astype(np.float64)
        # Exact integer counts from one cumulative sum read at the ends of the runs: on
        # 1,000,000 distinct scores np.add.reduceat of the flags took 25 ms, this 4-12.
        events = np.diff(np.cumsum(flags, dtype=np.int64)[ends - 1], prepend=0)
        events = events.astype(np.float64)
        return PooledForecasts(buffer[starts].astype(np.float64), counts, events)
    if not weights.all():  # (a compression by an all-true mask costs a pass of each)
        positive = weights > 0
        scores, targets, weights = scores[positive], targets[positive], weights[positive]
    packed = sort_rows_with_positions(scores[None, :], targets[None, :])
    if packed is None:  # float64 scores
        order = np.argsort(scores)
        sorted_scores, sorted_targets = scores[order], targets[order]
    else:
        # One sort of packed keys, one gather: 4.8x np.sort of 1,000,000 float32 scores
        # with the argsort and its three gathers.
        sorted_scores, sorted_targets, order = (part[0] for part in packed)
    sorted_weights = weights[order]
    starts = _run_starts(sorted_scores)
    totals = np.add.reduceat(sorted_weights, starts)
    events = np.add.reduceat(np.where(sorted_targets != 0, sorted_weights, 0.0), starts)
    row_values = np.cumsum(np.r_[False, sorted_scores[1:] != sorted_scores[:-1]])
    return PooledForecasts(
        sorted_scores[starts].astype(np.float64), totals, events, row_values, sorted_weights
    )


def pav_fit(pooled: PooledForecasts, out: NDArray | None = None) -> NDArray:
    """The weighted PAV fit of the event rate on the forecast, one value per distinct value.

    A non-decreasing step function; each block's value is the weighted event rate of its
    rows (0 or 1 exactly for a pure block), clipped into [0, 1] against rounding (into
    ``out`` if given).
    """
    fit = _scipy.optimize.isotonic_regression(
        pooled.event_rates, weights=pooled.weights, increasing=True
    ).x
    return np.clip(fit, 0.0, 1.0, out=out)


def score_totals(forecasts: NDArray, events: NDArray, weights: NDArray, rule: str) -> NDArray:
    """Total score of forecasts made ``weights`` times of which ``events`` were events.

    Brier: ``e (1 - f)^2 + (w - e) f^2``; log: ``-e log f - (w - e) log(1 - f)`` with
    ``0 log 0 = 0`` (``scipy.special.xlogy``), ``inf`` for a forecast of 0 on an event or
    of 1 on a non-event.  Broadcasts (one total per forecast value, or per resample).
    """
    nonevents = weights - events
    if rule == "brier":
        return events * (1.0 - forecasts) ** 2 + nonevents * forecasts**2
    return -(
        _scipy.special.xlogy(events, forecasts) + _scipy.special.xlogy(nonevents, 1.0 - forecasts)
    )


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


@_registry.metric("corp_decomposition")
@iv.accepts_classes
@with_reference
def corp_decomposition(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    score: str = "brier",
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
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
    calibrated model gets MCB > 0) and DSC too.
    :func:`calibration_toolbox.stats.corp_test` gives the MCB's distribution under
    calibration (labels redrawn as Bernoulli(forecast)).

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
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names, looked up
        among them (the rule of :func:`~calibration_toolbox.ECE`).

    Returns
    -------
    CORPDecomposition
        ``score``, ``miscalibration``, ``discrimination``, ``uncertainty`` as Python floats.

    References
    ----------
    {corp_reference}

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
    scores, targets, weights = iv.top_label_pairs(
        prob, labels, logits, sample_weight, renormalize, scale_free=True, weightless=True
    )
    return corp_terms(pooled_forecasts(scores, targets, weights), rule)


# -- resampling under calibration -------------------------------------------------------------
#: Resampled values drawn at once (resamples x distinct values, or x rows with weights):
#: about 32 MB of float64 at a time whatever N.
_DRAWN_ELEMENTS = 1 << 22


def calibrated_events(
    pooled: PooledForecasts, n_resamples: int, rng: np.random.Generator
) -> Iterator[NDArray]:
    """Event counts per distinct value when each outcome is drawn as Bernoulli(forecast).

    Yields blocks of shape (resamples, distinct values), ``n_resamples`` rows in all.
    Without weights the event count of a value held by n rows is Binomial(n, value), one
    draw per value (the same law as n Bernoulli draws); with weights each row is drawn
    and its weight added to its value's count.  The uniforms are drawn into one buffer
    kept between blocks (a fresh 32 MB array per block of 4 resamples of 1,000,000 values
    cost 37 ms of page faults and draws against 27 ms), so a yielded block is valid only
    until the next one is drawn.
    """
    n_values = pooled.values.size
    width = n_values if pooled.row_values is None else pooled.row_values.size
    step = max(1, _DRAWN_ELEMENTS // width)
    uniforms = np.empty((min(step, n_resamples), width))
    for start in range(0, n_resamples, step):
        count = min(step, n_resamples - start)
        drawn = rng.random(out=uniforms[:count])  # the draws of rng.random((count, width))
        if pooled.row_values is None:
            yield _binomial_counts(pooled, drawn, rng)
            continue
        drawn = drawn < pooled.values[pooled.row_values]
        cells = pooled.row_values + n_values * np.arange(count)[:, None]
        sums = np.bincount(
            cells[drawn],
            weights=np.broadcast_to(pooled.row_weights, drawn.shape)[drawn],
            minlength=count * n_values,
        )
        yield sums.reshape(count, n_values)


def _binomial_counts(
    pooled: PooledForecasts, uniforms: NDArray, rng: np.random.Generator
) -> NDArray:
    """Draws of Binomial(rows of each value, value), as float64 (resamples x values).

    A value held by one row (most, for continuous forecasts) is one of ``uniforms``
    against the value: on 1,000,000 values 4x faster than ``rng.binomial``, which draws
    the others (after the uniforms, as before).
    """
    several = np.flatnonzero(pooled.weights != 1)
    drawn = (uniforms < pooled.values).astype(np.float64)
    if several.size:
        drawn[:, several] = rng.binomial(
            pooled.weights[several].astype(np.int64),
            pooled.values[several],
            (len(uniforms), several.size),
        )
    return drawn


def _null_miscalibration(
    pooled: PooledForecasts, events: NDArray, refits: NDArray, rule: str, squares: float
) -> NDArray:
    """Total MCB (times the weight) of each resample's events and PAV refit.

    Brier: the PAV fit f is the event rate of each of its blocks, so sum(w f^2) = sum(e f)
    and the difference of the two scores is sum(w x^2) - 2 sum(e x) + sum(e f): two
    products of the events instead of two scores over every value (4 ms against 16 ms for
    four resamples of 1,000,000 values); ``squares`` is sum(w x^2), the same for every
    resample.
    """
    if rule == "brier":
        as_given = squares - 2 * np.einsum("rg,g->r", events, pooled.values)
        return as_given + np.einsum("rg,rg->r", events, refits)
    with np.errstate(divide="ignore"):
        as_given = score_totals(pooled.values, events, pooled.weights, rule).sum(axis=1)
    return as_given - score_totals(refits, events, pooled.weights, rule).sum(axis=1)


def null_refits(
    pooled: PooledForecasts, rule: str, n_resamples: int, rng: np.random.Generator, at: NDArray
) -> tuple[NDArray, NDArray]:
    """PAV refits and MCBs of ``n_resamples`` outcome sets drawn under calibration.

    Returns the refits at the distinct-value positions ``at`` (resamples x positions) and
    the miscalibration of each resample, the forecasts kept as given.  One
    ``isotonic_regression`` call per resample (it fits one sequence; the draws and the
    scores are vectorised over the resamples).  The refits of a block are clipped into
    one buffer kept between blocks (``np.vstack`` of fresh ones cost 2 ms a resample of
    1,000,000 values, of about 40).
    """
    total = pooled.weights.sum()
    squares = pooled.weights @ pooled.values**2
    fits = np.empty((n_resamples, at.size))
    miscalibration = np.empty(n_resamples)
    buffer = None
    done = 0
    for events in calibrated_events(pooled, n_resamples, rng):
        buffer = (
            np.empty_like(events) if buffer is None else buffer
        )  # the first block is the largest
        refits = buffer[: len(events)]
        for resample, refit in zip(events, refits, strict=True):
            pav_fit(pooled._replace(events=resample), out=refit)
        rows = slice(done, done + len(events))
        fits[rows] = refits[:, at]
        difference = _null_miscalibration(pooled, events, refits, rule, squares)
        miscalibration[rows] = np.maximum(difference, 0.0) / total
        done += len(events)
    return fits, miscalibration


# -- the asymptotic band -------------------------------------------------------------------
#: Fourier inversion grid of Chernoff's density: 1/Ai(i s 2**-1/3) is below 5e-9 past
#: s = 16; the CDF on z in [0, 3] (1 - F(3) < 1e-11) gives quantiles within 2e-5 of the
#: values of Groeneboom & Wellner (2001) (0.95: 0.8451, 0.975: 0.9982).
_FOURIER_GRID = np.linspace(0.0, 16.0, 1001)
_CHERNOFF_GRID = np.linspace(0.0, 3.0, 601)
#: Bins of the forecasts' histogram behind the density estimate of the asymptotic band.
_DENSITY_BINS = 1024


@functools.cache
def _chernoff_cdf() -> NDArray:
    """Chernoff's CDF on the grid ``_CHERNOFF_GRID`` (computed once: about 80 ms)."""
    # scipy.integrate (0.13-0.25 s to import, through _scipy when first used) is needed by
    # the asymptotic CORP band alone.
    transform = 2 ** (1 / 3) / _scipy.special.airy(1j * 2 ** (-1 / 3) * _FOURIER_GRID)[0]
    points = np.concatenate([_CHERNOFF_GRID, -_CHERNOFF_GRID])
    phases = np.exp(-1j * np.outer(points, _FOURIER_GRID))
    g = _scipy.integrate.trapezoid((phases * transform).real, _FOURIER_GRID, axis=1) / np.pi
    density = 0.5 * g[: _CHERNOFF_GRID.size] * g[_CHERNOFF_GRID.size :]
    cdf = 0.5 + _scipy.integrate.cumulative_trapezoid(density, _CHERNOFF_GRID, initial=0.0)
    cdf.setflags(write=False)
    return cdf


def chernoff_quantile(probability: float) -> float:
    r"""Quantile of Chernoff's distribution, :math:`Z = \arg\max_t \{W(t) - t^2\}`.

    Its density is :math:`f(z) = \tfrac12 g(z) g(-z)`, where g has the Fourier transform
    :math:`\hat g(s) = 2^{1/3} / \mathrm{Ai}(i\, 2^{-1/3} s)` (Groeneboom 1989); g is
    obtained by the trapezoid rule on that transform, the CDF by the trapezoid rule on f.
    For ``probability`` in [0.5, 1 - 1e-11) (the distribution is symmetric).
    """
    return float(np.interp(probability, _chernoff_cdf(), _CHERNOFF_GRID))


def _forecast_density(pooled: PooledForecasts, at: NDArray) -> NDArray:
    """Density of the forecasts at ``at``: a Gaussian kernel estimate reflected at 0 and 1.

    Weighted histogram on 1024 bins, smoothed with Silverman's bandwidth (at least two
    bins) by one convolution; the reflection keeps the mass of forecasts near 0 or 1.
    """
    share = pooled.weights / pooled.weights.sum()
    mean = share @ pooled.values
    spread = np.sqrt(max(share @ (pooled.values - mean) ** 2, 0.0))
    n_effective = _effective_size(pooled)
    width = 1.0 / _DENSITY_BINS
    bandwidth = max(0.9 * spread * n_effective ** (-0.2), 2 * width)
    histogram = np.histogram(pooled.values, _DENSITY_BINS, (0.0, 1.0), weights=share)[0]
    reach = min(int(np.ceil(4 * bandwidth / width)), _DENSITY_BINS)
    kernel = np.exp(-0.5 * (np.arange(-reach, reach + 1) * width / bandwidth) ** 2)
    kernel /= kernel.sum() * width
    padded = np.concatenate([histogram[reach - 1 :: -1], histogram, histogram[: -reach - 1 : -1]])
    smooth = np.convolve(padded, kernel, mode="same")[reach:-reach]
    cells = np.minimum((at * _DENSITY_BINS).astype(np.intp), _DENSITY_BINS - 1)
    return smooth[cells]


def _effective_size(pooled: PooledForecasts) -> float:
    """Kish's effective number of rows, (sum w)^2 / sum w^2 (N without weights)."""
    if pooled.row_weights is None:
        return float(pooled.weights.sum())
    return float(pooled.row_weights.sum() ** 2 / (pooled.row_weights**2).sum())


def discrete_band(pooled: PooledForecasts, alpha: float, at: NDArray) -> tuple[NDArray, NDArray]:
    r"""The consistency band at the distinct forecasts ``at`` (indices) for discrete forecasts.

    With few distinct values, each held by many rows, the PAV fit under calibration pools
    no two values in the limit, and at a value x held by :math:`n_x` rows it is their event
    rate: :math:`\sqrt{n_x} (\hat x - x) \to N(0, x (1 - x))` (the discrete asymptotics of
    Dimitriadis, Gneiting & Jordan 2021); the band is
    :math:`x \pm z_{1 - \alpha/2} \sqrt{x (1 - x) / n_x}`, clipped to [0, 1], with Kish's
    effective :math:`n_x` under weights, as the continuous band.
    """
    values = pooled.values[at]
    if pooled.row_weights is None:
        counts = pooled.weights[at]
    else:  # Kish's effective count of each value's rows, (sum w)^2 / sum w^2
        squares = np.bincount(
            pooled.row_values, pooled.row_weights**2, minlength=pooled.values.size
        )
        counts = pooled.weights[at] ** 2 / squares[at]
    half_width = _scipy.special.ndtri(1 - alpha / 2) * np.sqrt(values * (1 - values) / counts)
    return np.clip(values - half_width, 0.0, 1.0), np.clip(values + half_width, 0.0, 1.0)


def continuous_band(pooled: PooledForecasts, alpha: float, at: NDArray) -> tuple[NDArray, NDArray]:
    r"""The consistency band of the PAV fit at the distinct forecasts ``at`` (indices).

    Under calibration (event rate x at forecast x), the isotonic fit at x satisfies
    :math:`n^{1/3} (\hat x - x) \to (4 x (1 - x) / g(x))^{1/3} Z` (Brunk 1970; Wright
    1981), with g the density of the forecasts (estimated) and Z Chernoff's distribution;
    the band is :math:`x \pm q_{1 - \alpha/2} (4 x (1 - x) / (n g(x)))^{1/3}`, clipped to
    [0, 1], with Kish's effective n under weights.
    """
    values = pooled.values[at]
    density = np.maximum(_forecast_density(pooled, values), np.finfo(np.float64).tiny)
    scale = (4 * values * (1 - values) / (_effective_size(pooled) * density)) ** (1 / 3)
    half_width = chernoff_quantile(1 - alpha / 2) * scale
    return np.clip(values - half_width, 0.0, 1.0), np.clip(values + half_width, 0.0, 1.0)
