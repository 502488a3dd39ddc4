"""Binomial intervals of per-bin accuracies: arrays of counts in, ``(low, high)`` arrays out.

The arithmetic behind :func:`~calibration_toolbox.stats.bin_intervals` (Wilson and
Clopper-Pearson intervals of each bin's accuracy) and
:func:`~calibration_toolbox.stats.consistency_bands` (the binomial range of a calibrated
bin's accuracy), and their :class:`ConfidenceInterval` result type, which
:func:`~calibration_toolbox.stats.bootstrap` returns too.  The table layer
(``metrics._table``) checks the table and calls these.

Imports: NumPy, SciPy and ``_validation`` only.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox import _scipy
from calibration_toolbox import _validation as iv

__all__ = ["ConfidenceInterval", "accuracy_intervals", "calibrated_bands", "check_confidence"]

check_confidence = iv.number_between(0.0, 1.0)


class ConfidenceInterval(NamedTuple):
    """Lower and upper end of a confidence interval (floats, or arrays per bin)."""

    low: float | NDArray
    high: float | NDArray


def accuracy_intervals(
    counts: NDArray, target_sums: NDArray, method: object, confidence_level: object
) -> ConfidenceInterval:
    """Interval ``method`` of each bin's accuracy ``target_sums / counts``; NaN where empty.

    ``method`` ('wilson' or 'clopper-pearson') and ``confidence_level`` are checked here;
    see :func:`~calibration_toolbox.stats.bin_intervals`.
    """
    method = iv.choice("wilson", "clopper-pearson")(method, "method")
    alpha = 1 - check_confidence(confidence_level, "confidence_level")
    low = np.full(counts.shape, np.nan)
    high = np.full(counts.shape, np.nan)
    nonempty = counts > 0
    counts = counts[nonempty]
    successes = np.clip(target_sums[nonempty], 0.0, counts)  # rounding of sums
    if method == "wilson":
        low[nonempty], high[nonempty] = _wilson(
            successes, counts, float(_scipy.special.ndtri(1 - alpha / 2))
        )
    else:
        low[nonempty], high[nonempty] = _clopper_pearson(successes, counts, alpha)
    return ConfidenceInterval(low, high)


#: Largest (rounded) count whose band is the binomial quantile computed by SciPy's
#: ``binom.ppf``; above it, the large-count approximation of :func:`_large_count_quantile`.
#: ``binom.ppf`` did not return at n = 2.6e16 (weighted counts of 1e15 per row), gave 0
#: for the 97.5 % quantile of n = 1e20, p = 1e-18 (mean 100), and SciPy 1.12's is off by
#: up to 14 counts at 2**40 (its CDF is not monotone there); at 2**36 SciPy 1.12's and
#: 1.17's counts and the approximation's are the same (tested).
EXACT_BAND_COUNT = 2.0**36
#: Above :data:`EXACT_BAND_COUNT`, a rarer outcome's mean count below this is Poisson.
_POISSON_MEAN = 2.0**20


def calibrated_bands(
    counts: NDArray, mean_score: NDArray, confidence_level: object
) -> ConfidenceInterval:
    """Binomial range of each bin's accuracy if it were calibrated; NaN where it rounds to empty.

    Counts are rounded to integers; ``confidence_level`` is checked here; see
    :func:`~calibration_toolbox.stats.consistency_bands`.
    """
    alpha = 1 - check_confidence(confidence_level, "confidence_level")
    counts = np.rint(counts)
    low = np.full(counts.shape, np.nan)
    high = np.full(counts.shape, np.nan)
    nonempty = counts > 0
    n = counts[nonempty]
    share = np.clip(mean_score[nonempty], 0.0, 1.0)
    low[nonempty] = _binomial_quantile(alpha / 2, n, share) / n
    high[nonempty] = _binomial_quantile(1 - alpha / 2, n, share) / n
    return ConfidenceInterval(low, high)


def _binomial_quantile(q: float, n: NDArray, p: NDArray) -> NDArray:
    """``min{k : F(k; n, p) >= q}``: SciPy's up to :data:`EXACT_BAND_COUNT`, approximated above."""
    # scipy.stats takes 0.5 s to import: _scipy imports it when a band is first asked for,
    # so that importing the package does not pay for it.
    quantile = np.empty_like(n)
    exact = n <= EXACT_BAND_COUNT
    quantile[exact] = _scipy.stats.binom.ppf(q, n[exact], p[exact])
    quantile[~exact] = _large_count_quantile(q, n[~exact], p[~exact])
    return quantile


def _large_count_quantile(q: float, n: NDArray, p: NDArray) -> NDArray:
    """The binomial quantile at counts above :data:`EXACT_BAND_COUNT`, within about a count.

    Where the rarer outcome's mean count ``mu = n min(p, 1 - p)`` is below
    :data:`_POISSON_MEAN`, the rarer count is Poisson with mean ``mu`` (error of order
    ``min(p, 1 - p)`` < 1e-6); otherwise the Cornish-Fisher expansion of the quantile with
    its continuity correction, ``n p + z sigma + (z^2 - 1)(1 - 2p)/6 - 1/2`` rounded up
    (``sigma^2 = n p (1 - p)``, error of order ``1 / sigma``).  The band's relative
    resolution at such counts, one count in 1e12, is far below its width.
    """
    z = float(_scipy.special.ndtri(q))
    sigma = np.sqrt(n * p * (1 - p))
    quantile = np.ceil(n * p + z * sigma + (z * z - 1) * (1 - 2 * p) / 6 - 0.5)
    rare_mean = n * np.minimum(p, 1 - p)
    poisson_rows = rare_mean < _POISSON_MEAN
    below = poisson_rows & (p <= 0.5)  # the count itself is the rare outcome
    above = poisson_rows & (p > 0.5)  # the count's complement n - k is
    quantile[below] = _scipy.stats.poisson.ppf(q, rare_mean[below])
    quantile[above] = n[above] - _scipy.stats.poisson.ppf(1 - q, rare_mean[above])
    return np.clip(quantile, 0.0, n)


def _wilson(successes: NDArray, counts: NDArray, z: float) -> tuple[NDArray, NDArray]:
    share = successes / counts
    z2_n = z * z / counts
    center = (share + z2_n / 2) / (1 + z2_n)
    half = z / (1 + z2_n) * np.sqrt(share * (1 - share) / counts + z2_n / (4 * counts))
    return np.maximum(center - half, 0.0), np.minimum(center + half, 1.0)


def _clopper_pearson(successes: NDArray, counts: NDArray, alpha: float) -> tuple[NDArray, NDArray]:
    low = np.zeros_like(successes)
    high = np.ones_like(successes)
    some = successes > 0
    # the beta quantile B^-1(q; a, b) is betaincinv(a, b, q)
    low[some] = _scipy.special.betaincinv(
        successes[some], counts[some] - successes[some] + 1, alpha / 2
    )
    short = successes < counts
    high[short] = _scipy.special.betaincinv(
        successes[short] + 1, counts[short] - successes[short], 1 - alpha / 2
    )
    return low, high


# The public home of the result type, as before the engine had layers.
ConfidenceInterval.__module__ = "calibration_toolbox.stats"
