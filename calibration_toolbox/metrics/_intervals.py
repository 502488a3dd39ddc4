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
from scipy.special import betaincinv, ndtri

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
        low[nonempty], high[nonempty] = _wilson(successes, counts, float(ndtri(1 - alpha / 2)))
    else:
        low[nonempty], high[nonempty] = _clopper_pearson(successes, counts, alpha)
    return ConfidenceInterval(low, high)


def calibrated_bands(
    counts: NDArray, mean_score: NDArray, confidence_level: object
) -> ConfidenceInterval:
    """Binomial range of each bin's accuracy if it were calibrated; NaN where it rounds to empty.

    Counts are rounded to integers; ``confidence_level`` is checked here; see
    :func:`~calibration_toolbox.stats.consistency_bands`.
    """
    # scipy.stats takes 0.5 s to import here: imported when a band is asked for, so that
    # importing the package does not pay for it.
    from scipy.stats import binom

    alpha = 1 - check_confidence(confidence_level, "confidence_level")
    counts = np.rint(counts)
    low = np.full(counts.shape, np.nan)
    high = np.full(counts.shape, np.nan)
    nonempty = counts > 0
    n = counts[nonempty]
    share = np.clip(mean_score[nonempty], 0.0, 1.0)
    low[nonempty] = binom.ppf(alpha / 2, n, share) / n
    high[nonempty] = binom.ppf(1 - alpha / 2, n, share) / n
    return ConfidenceInterval(low, high)


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
    low[some] = betaincinv(successes[some], counts[some] - successes[some] + 1, alpha / 2)
    short = successes < counts
    high[short] = betaincinv(successes[short] + 1, counts[short] - successes[short], 1 - alpha / 2)
    return low, high


# The public home of the result type, as before the engine had layers.
ConfidenceInterval.__module__ = "calibration_toolbox.stats"
