"""The clinical summary of calibration: slope and intercept, Hosmer-Lemeshow, ICI / E50 / E90.

What clinical prediction papers report beside discrimination (Van Calster et al. 2016 and
2019; Austin & Steyerberg 2019), for one risk per row (``Scores``: P(event) against the
event) or the top label of an (N, K) matrix (confidence against correct):

* :func:`calibration_slope_intercept` -- the logistic recalibration of the log-odds, with
  Wald intervals: a fit, not a test;
* :func:`hosmer_lemeshow` -- the chi-squared statistic over groups of risk, with its
  p-value: a test, but one over the equal-mass table of the binned engine, so it lives with
  the measures it shares that table with, and the three come as one report;
* :func:`ICI`, :func:`E50`, :func:`E90` -- the mean, median and 90th percentile of the
  distance between a smoothed calibration curve and the scores, on the kernel smoother of
  :func:`~calibration_toolbox.SmoothECE`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry, _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._docstrings import with_fragments
from calibration_toolbox._errors import InputError
from calibration_toolbox.metrics._intervals import ConfidenceInterval, check_confidence
from calibration_toolbox.metrics.gce import calibration_table
from calibration_toolbox.metrics.smooth import smoothed_residuals
from calibration_toolbox.scores import PredictionsLike

__all__ = [
    "E50",
    "E90",
    "ICI",
    "CalibrationSlopeIntercept",
    "HosmerLemeshowResult",
    "calibration_slope_intercept",
    "hosmer_lemeshow",
]

_check_clip = iv.number_between(0.0, 0.5)
_check_groups = iv.integer_at_least(3)
#: The largest |score| (gradient of the mean log-likelihood) of a converged fit: the root's
#: own rounding is about 1e-16 times the largest |log-odds|.
_SCORE_TOLERANCE = 1e-10


# -- calibration slope and intercept ---------------------------------------------------------
@dataclass(frozen=True)
class CalibrationSlopeIntercept:
    r"""Result of :func:`calibration_slope_intercept` (1 and 0 for a calibrated model).

    Attributes
    ----------
    slope : float
        :math:`b` of :math:`\operatorname{logit} P(y = 1) = a + b \operatorname{logit}(s)`.
    slope_interval : ConfidenceInterval
        Its Wald interval, ``slope -/+ z * slope_se``.
    slope_se : float
        Its standard error, from the observed information of the two-parameter fit.
    intercept : float
        Calibration-in-the-large: :math:`a` of
        :math:`\operatorname{logit} P(y = 1) = a + \operatorname{logit}(s)` (the slope
        fixed at 1, the log-odds an offset).
    intercept_interval : ConfidenceInterval
        Its Wald interval.
    intercept_se : float
        Its standard error, from the observed information of the one-parameter fit.
    confidence_level : float
        The level of both intervals.
    """

    slope: float
    slope_interval: ConfidenceInterval
    slope_se: float
    intercept: float
    intercept_interval: ConfidenceInterval
    intercept_se: float
    confidence_level: float


def _log_odds(scores: NDArray, weights: NDArray | None, clip: float | None) -> NDArray:
    """``logit(s)`` in float64; a score of 0 or 1 of positive weight refused (or clipped).

    With ``clip`` the scores are first clipped to ``[clip, 1 - clip]``.
    """
    scores = scores.astype(np.float64)
    if clip is not None:
        np.clip(scores, clip, 1 - clip, out=scores)
    infinite = (scores <= 0) | (scores >= 1)
    if weights is not None:
        infinite &= weights > 0
    outside = np.flatnonzero(infinite)
    if outside.size:
        raise InputError(
            "{prob} must hold scores strictly between 0 and 1 for the logistic "
            "recalibration (their log-odds are infinite); got {value!r} (row {row}): pass "
            "{clip=} (for example 1e-7) to clip them to [clip, 1 - clip].",
            argument="prob",
            row=int(outside[0]),
            value=float(scores[outside[0]]),
        )
    return _scipy.special.logit(scores)


def _check_overlap(log_odds: NDArray, targets: NDArray) -> None:
    """Refuse targets that a threshold on the scores separates: no finite slope fits them.

    With an intercept and one covariate the maximum-likelihood slope exists exactly when
    the outcomes overlap: where every event's log-odds lies at or above every non-event's
    (or at or below: complete or quasi-complete separation, Albert and Anderson 1984), the
    likelihood grows without bound along the slope.  Decided here exactly, before any fit,
    rather than from the numbers of a fit run off to infinity (which depend on the BLAS
    kernel: with OpenBLAS's Haswell kernel a separated set gave slope 95.2, standard error
    4.6e53, and no error).  ``log_odds`` and ``targets`` are the rows of positive weight.
    """
    if log_odds.min() == log_odds.max():
        raise InputError(
            "{prob} must hold at least two distinct scores for the logistic recalibration's "
            "slope; every row has the same score.",
            argument="prob",
        )
    events = targets.astype(bool)
    above = log_odds[events].min() >= log_odds[~events].max()
    if above or log_odds[events].max() <= log_odds[~events].min():
        raise InputError(
            "the logistic recalibration did not converge: the scores separate the labels "
            "(every event's score is {side} every non-event's), so no finite slope fits "
            "them.",
            argument="labels",
            side="at or above" if above else "at or below",
        )


def _logistic_fit(design: NDArray, offset, targets, weights) -> tuple[NDArray, NDArray]:
    """Maximum-likelihood ``beta`` of ``logit P(y) = design @ beta + offset``, its covariance.

    The root of the score (the gradient of the mean negative log-likelihood, convex) by
    MINPACK's hybrid Powell method with the analytic Hessian, which converges to the last
    digits where a minimiser stops once the likelihood no longer decreases in float64; the
    covariance is the inverse of the observed information at the root.
    """
    weights = np.ones(len(targets)) if weights is None else weights
    shares = weights / weights.sum()
    targets = targets.astype(np.float64)

    def score_and_information(beta):
        eta = design @ beta + offset
        fitted = _scipy.special.expit(eta)
        curvature = shares * fitted * (1 - fitted)
        return design.T @ (shares * (fitted - targets)), (design * curvature[:, None]).T @ design

    fit = _scipy.optimize.root(
        score_and_information,
        np.zeros(design.shape[1]),
        jac=True,
        method="hybr",
        options={"xtol": 1e-13},
    )
    score, information = score_and_information(fit.x)
    # MINPACK reports "xtol too small" when the root is reached to the last digits, so
    # convergence is judged by the score itself (a mean of terms of the order of 1)
    if not (np.isfinite(fit.x).all() and np.abs(score).max() < _SCORE_TOLERANCE):
        raise InputError(
            "the logistic recalibration did not converge ({message}): the labels may be "
            "separated by the scores.",
            argument="labels",
            message=fit.message,
        )
    try:
        covariance = np.linalg.inv(information * weights.sum())
    except np.linalg.LinAlgError:  # no information left: the fit ran off to infinity
        covariance = np.full_like(information, np.nan)
    # Far out on separated labels the information is singular, or so nearly that its
    # inverse has a negative variance (as it had under NumPy 1.23 and SciPy 1.12)
    if not (np.isfinite(covariance).all() and (np.diag(covariance) > 0).all()):
        raise InputError(
            "the logistic recalibration did not converge (its information matrix is "
            "singular): the labels may be separated by the scores.",
            argument="labels",
        )
    return fit.x, covariance


@_registry.metric("calibration_slope_intercept")
@iv.accepts_classes
def calibration_slope_intercept(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    confidence_level: float = 0.95,
    clip: float | None = None,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> CalibrationSlopeIntercept:
    r"""Calibration slope and intercept: the logistic recalibration of the log-odds.

    With :math:`x_i = \operatorname{logit}(s_i)` the log-odds of each score (the top-label
    confidence, or ``Scores``), two logistic regressions of the targets, the clinical
    convention (Van Calster et al. 2016, 2019; Steyerberg 2019):

    .. math:: \text{slope: } \operatorname{logit} P(y_i = 1) = a + b\, x_i, \qquad
              \text{intercept: } \operatorname{logit} P(y_i = 1) = a_0 + x_i,

    the intercept (calibration-in-the-large) fitted with the slope fixed at 1, :math:`x_i`
    an offset, so it says whether the average risk is right; :math:`b < 1` means the
    scores are too extreme (overfitting), :math:`b > 1` too moderate.  Maximum likelihood
    as the root of the score equations (``scipy.optimize.root``, analytic Hessian);
    the Wald interval of each is :math:`\hat\theta \pm z_{1 - \alpha/2} \sqrt{(I^{-1})
    _{\theta\theta}}`, :math:`I` the observed information of its own fit.  A calibrated
    model gives slope 1 and intercept 0 (up to sampling noise).

    Parameters
    ----------
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``: the top label
        (confidence against correct).  ``Scores(p)``: a risk per row against 0/1
        ``labels`` (a binary risk model: P(event) and the event).
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    confidence_level : float, default 0.95
        Level of the Wald intervals, in (0, 1).
    clip : float in (0, 0.5), optional
        Clip the scores to ``[clip, 1 - clip]`` before the logit.  By default a score of 0
        or 1 is refused (its log-odds are infinite); float32 confidences often round to
        1.0.
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.  Never guessed.
    sample_weight : array-like, shape (N,), optional
        Non-negative case weights of the likelihood: integer weights give the fit and the
        intervals of duplicated rows (so their scale counts, as a number of rows does).
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names.

    Returns
    -------
    CalibrationSlopeIntercept
        ``slope``, ``slope_interval``, ``slope_se``, ``intercept``, ``intercept_interval``,
        ``intercept_se`` and ``confidence_level``.

    Raises
    ------
    ValueError
        For invalid input, a score of 0 or 1 without ``clip``, targets of one class only,
        a single distinct score, targets that the scores separate (every event at or
        above every non-event, or at or below: decided exactly, before the fit), or a fit
        that does not converge.

    References
    ----------
    .. [1] B. Van Calster, D. Nieboer, Y. Vergouwe, B. De Cock, M. J. Pencina and E. W.
       Steyerberg, "A calibration hierarchy for risk models was defined: from utopia to
       empirical data", Journal of Clinical Epidemiology 74, 2016.
    .. [2] B. Van Calster, D. J. McLernon, M. van Smeden, L. Wynants and E. W. Steyerberg,
       "Calibration: the Achilles heel of predictive analytics", BMC Medicine 17(230), 2019.
    .. [3] D. R. Cox, "Two further applications of a model for binary regression",
       Biometrika 45(3/4), 1958.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.special import expit
    >>> from calibration_toolbox import Scores, calibration_slope_intercept
    >>> rng = np.random.default_rng(0)
    >>> log_odds = rng.normal(0, 2, size=20_000)
    >>> events = rng.uniform(size=20_000) < expit(log_odds)
    >>> too_extreme = calibration_slope_intercept(Scores(expit(2 * log_odds)), events)
    >>> round(too_extreme.slope, 2), round(too_extreme.intercept, 2)
    (0.5, -0.01)
    >>> bool(too_extreme.slope_interval.high < 1)
    True
    """
    level = check_confidence(confidence_level, "confidence_level")
    clip = None if clip is None else _check_clip(clip, "clip")
    scores, targets, weights = iv.top_label_pairs(
        prob, labels, logits, sample_weight, renormalize, scale_free=False, weightless=True
    )
    log_odds = _log_odds(scores, weights, clip)
    if weights is not None:
        positive = weights > 0
        log_odds, targets, weights = log_odds[positive], targets[positive], weights[positive]
    if targets.all() or not targets.any():
        raise InputError(
            "{labels} must hold both outcomes (0 and 1, or correct and wrong) for the "
            "logistic recalibration; got only {value}.",
            argument="labels",
            value=int(targets[0]),
        )
    _check_overlap(log_odds, targets)
    ones = np.ones((len(log_odds), 1))
    (a_b, covariance) = _logistic_fit(np.column_stack([ones, log_odds]), 0.0, targets, weights)
    (a0,), covariance0 = _logistic_fit(ones, log_odds, targets, weights)
    z = float(_scipy.special.ndtri(0.5 + level / 2))
    slope, slope_se = float(a_b[1]), float(np.sqrt(covariance[1, 1]))
    intercept, intercept_se = float(a0), float(np.sqrt(covariance0[0, 0]))
    return CalibrationSlopeIntercept(
        slope,
        ConfidenceInterval(slope - z * slope_se, slope + z * slope_se),
        slope_se,
        intercept,
        ConfidenceInterval(intercept - z * intercept_se, intercept + z * intercept_se),
        intercept_se,
        level,
    )


# -- Hosmer-Lemeshow ----------------------------------------------------------------------------
@dataclass(frozen=True)
class HosmerLemeshowResult:
    r"""Result of :func:`hosmer_lemeshow`.

    Attributes
    ----------
    statistic : float
        The Hosmer-Lemeshow :math:`\hat C`.
    dof : int
        Degrees of freedom: the number of non-empty groups, minus 2 with ``in_sample``.
    pvalue : float
        ``P(chi2(dof) >= statistic)``.
    n_groups : int
        The non-empty groups (``bins`` unless tied scores left some empty).
    """

    statistic: float
    dof: int
    pvalue: float
    n_groups: int


@_registry.metric("hosmer_lemeshow")
@iv.accepts_classes
def hosmer_lemeshow(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    bins: int | str = 10,
    in_sample: bool = False,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> HosmerLemeshowResult:
    r"""Hosmer-Lemeshow goodness-of-fit test over groups of risk ("deciles of risk").

    The scores are cut into ``bins`` equal-mass groups (the library's equal-mass bins,
    :func:`~calibration_toolbox.calibration_table` with ``adaptive_bins=True``: edges at
    the ranks ``round(n j / G)``, tied scores kept in one group, so a group may be empty
    where many scores tie); in group g with :math:`n_g` rows, :math:`O_g` events and
    :math:`E_g = \sum_{i \in g} s_i` expected events:

    .. math:: \hat C = \sum_g \frac{(O_g - E_g)^2}{E_g (1 - E_g / n_g)}
              = \sum_g n_g \frac{(\bar y_g - \bar s_g)^2}{\bar s_g (1 - \bar s_g)},
              \qquad p = P(\chi^2_{\nu} \ge \hat C),

    G the number of non-empty groups (``bins`` without heavy ties).  Degrees of freedom:
    :math:`\nu = G` (the default, ``in_sample=False``) for predictions of rows the model
    was not fitted on, a held-out test set, the saved predictions this library is for
    (Hosmer, Lemeshow & Sturdivant 2013, and pycaleva's ``outsample=True``): there
    nothing was fitted, and G - 2 makes the test reject calibrated models too often
    (measured: 13% of 300 calibrated sets of 1,000 rows at the 5% level, 7% with G);
    :math:`\nu = G - 2` (``in_sample=True``), Hosmer & Lemeshow's (1980) for a logistic
    model fitted on these same rows, its two coefficients estimated from them, and the
    default of pycaleva and calzone: pass it to reproduce their p-values.  The p-value is
    ``scipy.special.chdtrc``, as ``scipy.stats.chi2.sf`` computes it.  It depends on the
    grouping (Hosmer et al. 1997 show different packages' ties give different p-values)
    and has little power at small n; the cumulative tests of
    :mod:`calibration_toolbox.stats` need no groups.

    Parameters
    ----------
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities, logits with ``logits=True``: the top label.  ``Scores(p)``:
        one risk per row against 0/1 ``labels``.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    bins : int or 'auto', default 10
        The number of groups G, at least 3; ``'auto'`` the cube-root rule of the binned
        measures (``ceil(N ** (1/3))`` for N rows; at least 3 non-empty groups needed).
    in_sample : bool, default False
        Whether the model was fitted on these rows (dof G - 2); False, the default, for
        held-out predictions (dof G).
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.
    sample_weight : array-like, shape (N,), optional
        Non-negative case weights: the counts become weighted counts and the groups hold
        equal weight (the weighted equal-mass bins of the other measures), so integer
        weights give the test of duplicated rows (their scale counts).
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names.

    Returns
    -------
    HosmerLemeshowResult
        ``statistic``, ``dof``, ``pvalue`` and ``n_groups``.

    Raises
    ------
    ValueError
        For invalid input, fewer than 3 non-empty groups, or a group whose mean score is 0
        or 1 (its binomial variance is 0).

    References
    ----------
    .. [1] D. W. Hosmer and S. Lemeshow, "Goodness of fit tests for the multiple logistic
       regression model", Communications in Statistics - Theory and Methods 9(10), 1980.
    .. [2] D. W. Hosmer, T. Hosmer, S. Le Cessie and S. Lemeshow, "A comparison of
       goodness-of-fit tests for the logistic regression model", Statistics in Medicine
       16(9), 1997.
    .. [3] D. W. Hosmer, S. Lemeshow and R. X. Sturdivant, "Applied Logistic Regression",
       3rd edition, Wiley, 2013 (section 5.2.2, external validation).

    Examples
    --------
    >>> from calibration_toolbox import Scores, hosmer_lemeshow
    >>> scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    >>> result = hosmer_lemeshow(Scores(scores), [0, 0, 1, 0, 1, 1], bins=3)
    >>> round(result.statistic, 4), result.dof, round(result.pvalue, 4)
    (2.1871, 3, 0.5344)
    """
    if not isinstance(bins, str):  # 'auto' (or a wrong string) is calibration_table's
        bins = _check_groups(bins, "bins")
    table = calibration_table(
        prob,
        labels,
        bins=bins,
        adaptive_bins=True,
        class_conditional=False,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
    )
    fitted = 2 if iv.check_flag(in_sample, "in_sample") else 0
    return _hosmer_lemeshow_of(table.counts[0], table.score_sums[0], table.target_sums[0], fitted)


def _hosmer_lemeshow_of(counts: NDArray, expected: NDArray, observed: NDArray, fitted: int):
    """The test from each group's (weighted) count, expected and observed events."""
    nonempty = counts > 0
    counts, expected, observed = counts[nonempty], expected[nonempty], observed[nonempty]
    if len(counts) < 3:
        raise InputError(
            "{prob} must give at least 3 non-empty groups for the test (dof = groups - 2); "
            "got {n_groups}: the scores take too few distinct values.",
            argument="prob",
            n_groups=len(counts),
        )
    # in means, n_g (ybar - sbar)^2 / (sbar (1 - sbar)): no square of a weighted count,
    # which overflows for weights near 2**900 where the statistic itself does not
    mean_score, mean_target = expected / counts, observed / counts
    variances = mean_score * (1 - mean_score)
    if not (variances > 0).all():
        raise InputError(
            "{prob} has a group whose scores are all 0 or all 1 (its binomial variance is "
            "0): the test is undefined.",
            argument="prob",
        )
    statistic = float(np.sum(counts * ((mean_target - mean_score) ** 2 / variances)))
    dof = len(counts) - fitted
    return HosmerLemeshowResult(
        statistic, dof, float(_scipy.special.chdtrc(dof, statistic)), len(counts)
    )


# -- ICI, E50, E90 ------------------------------------------------------------------------------
def _weighted_quantile(values: NDArray, weights: NDArray | None, q: float) -> float:
    """The smallest value whose share of the total weight at or below it reaches ``q``.

    R's ``quantile(type = 1)``, NumPy's ``method="inverted_cdf"`` (whose ``weights=``
    needs NumPy 2, above this package's floor); unit weights give the plain order
    statistic ``x_(ceil(q n))``.
    """
    order = np.argsort(values)
    cumulative = np.cumsum(np.ones(len(values)) if weights is None else weights[order])
    position = np.searchsorted(cumulative, q * cumulative[-1] * (1 - 1e-15), side="left")
    return float(values[order][min(position, len(values) - 1)])


def _curve_distances(prob, labels, bandwidth, logits, sample_weight, renormalize):
    """|smoothed calibration curve - score| at each score, and the weights."""
    if bandwidth is not None:
        bandwidth = iv.positive_number(bandwidth, "bandwidth")
    scores, targets, weights = iv.top_label_pairs(
        prob, labels, logits, sample_weight, renormalize, scale_free=True
    )
    residuals, _ = smoothed_residuals(scores, targets, weights, bandwidth)
    return np.abs(residuals), weights


_ICI_TEXT = r"""
    With :math:`\hat c` a smoothed calibration curve (the expected target given the
    score) and :math:`s_i` the scores (the top-label confidence, or ``Scores``), Austin &
    Steyerberg (2019) summarise the distances :math:`d_i = |\hat c(s_i) - s_i|` by their
    mean (ICI, the integrated calibration index: the integral of the distance over the
    distribution of the scores), median (E50) and 90th percentile (E90).  The curve here
    is the kernel smoother of :func:`~calibration_toolbox.SmoothECE`: the Nadaraya-Watson
    regression of :math:`y` on :math:`s` with the reflected Gaussian kernel, whose default
    bandwidth is SmoothECE's fixed point :math:`\sigma^*` (the hyperparameter-free choice
    of Blasiok & Nakkiran 2024; ``bandwidth=`` sets another).  Austin & Steyerberg fit
    loess (R's ``loess``, span 0.75, degree 2): a local quadratic fit over the nearest
    75% of the rows, much smoother than :math:`\sigma^*` for large n, so the two agree on
    a smooth miscalibration and differ on noise: on calibrated data the kernel curve at
    :math:`\sigma^*` follows more of the noise, which gives ICI a larger floor.  With
    :math:`\sum_i w_i d_i / \sum_i w_i` ICI is close to, but not, ``SmoothECE`` at the same
    bandwidth: SmoothECE integrates :math:`|\hat c - t|` over the *smoothed* density of
    the scores, ICI averages it over the scores themselves.  Weighted quantiles are the
    inverted CDF (R's type 1; Austin & Steyerberg's R code uses ``quantile``'s default
    type 7, which interpolates between the two order statistics around the quantile).
"""

_ICI_PARAMETERS = """\
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities, logits with ``logits=True``: the top label.  ``Scores(p)``:
        one risk per row against 0/1 ``labels``.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    bandwidth : float, optional
        The kernel's standard deviation; ``None`` (default): SmoothECE's fixed point.
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights of the smoother and of the mean or quantile (their ratios only
        count: integer weights give the value of duplicated rows).
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names.

    Returns
    -------
    float
        The summary of the distances, in [0, 1].

    References
    ----------
    .. [1] P. C. Austin and E. W. Steyerberg, "The Integrated Calibration Index (ICI) and
       related metrics for quantifying the calibration of logistic regression models",
       Statistics in Medicine 38(21), 2019.
    .. [2] J. Blasiok and P. Nakkiran, "Smooth ECE: Principled Reliability Diagrams via
       Kernel Smoothing", ICLR, 2024.
"""

_ici_docstring = with_fragments({"{text}": _ICI_TEXT, "{parameters}": _ICI_PARAMETERS})


@_registry.metric("ICI")
@iv.accepts_classes
@_ici_docstring
def ICI(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    bandwidth: float | None = None,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Integrated calibration index (Austin & Steyerberg 2019): the mean distance.

    .. math:: \mathrm{ICI} = \frac{\sum_i w_i |\hat c(s_i) - s_i|}{\sum_i w_i}.
    {text}

    Parameters
    ----------
    {parameters}

    See Also
    --------
    E50, E90 : the median and the 90th percentile of the same distances.

    Examples
    --------
    >>> from calibration_toolbox import ICI, Scores
    >>> round(ICI(Scores([0.2, 0.4, 0.6, 0.8]), [1, 1, 1, 1]), 6)
    0.5
    """
    distances, weights = _curve_distances(
        prob, labels, bandwidth, logits, sample_weight, renormalize
    )
    return float(np.average(distances, weights=weights))


@_registry.metric("E50")
@iv.accepts_classes
@_ici_docstring
def E50(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    bandwidth: float | None = None,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""E50 (Austin & Steyerberg 2019): the median distance of the calibration curve.

    The weighted median of :math:`|\hat c(s_i) - s_i|` (the smallest distance with half
    the weight at or below it).
    {text}

    Parameters
    ----------
    {parameters}

    See Also
    --------
    ICI, E90 : the mean and the 90th percentile of the same distances.

    Examples
    --------
    >>> from calibration_toolbox import E50, Scores
    >>> round(E50(Scores([0.2, 0.4, 0.6, 0.8]), [1, 1, 1, 1]), 4)
    0.4754
    """
    distances, weights = _curve_distances(
        prob, labels, bandwidth, logits, sample_weight, renormalize
    )
    return _weighted_quantile(distances, weights, 0.5)


@_registry.metric("E90")
@iv.accepts_classes
@_ici_docstring
def E90(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    bandwidth: float | None = None,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""E90 (Austin & Steyerberg 2019): the 90th percentile of the calibration curve's distance.

    The smallest distance :math:`|\hat c(s_i) - s_i|` with 90% of the weight at or below
    it.
    {text}

    Parameters
    ----------
    {parameters}

    See Also
    --------
    ICI, E50 : the mean and the median of the same distances.

    Examples
    --------
    >>> from calibration_toolbox import E90, Scores
    >>> round(E90(Scores([0.2, 0.4, 0.6, 0.8]), [1, 1, 1, 1]), 4)
    0.5645
    """
    distances, weights = _curve_distances(
        prob, labels, bandwidth, logits, sample_weight, renormalize
    )
    return _weighted_quantile(distances, weights, 0.9)
