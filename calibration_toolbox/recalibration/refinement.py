"""Calibration and refinement of a proper score by recalibrating (Berta et al. 2025).

Above the temperature fit (``recalibration.temperature``) and the scoring rules
(``metrics.scoring``), which it composes: a proper score of the predictions splits into
the part a recalibration removes (calibration) and the score left after it (refinement).
It lives in the recalibration layer because it fits a recalibrator; nothing below imports it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry
from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError
from calibration_toolbox.metrics.scoring import brier_score, negative_log_likelihood
from calibration_toolbox.recalibration.temperature import TemperatureScaling, fitted_objective
from calibration_toolbox.scores import PredictionsLike, Scores

__all__ = ["RefinementDecomposition", "refinement_decomposition"]

_SCORES = {"log": negative_log_likelihood, "brier": brier_score}
_check_score = iv.choice(*_SCORES)
_check_method = iv.choice("temperature")


@dataclass(frozen=True)
class RefinementDecomposition:
    """A proper score split by recalibration: ``score = calibration + refinement``.

    Attributes
    ----------
    score : float
        The score of the predictions.
    calibration : float
        ``score - refinement``: what the recalibration removes (probmetrics'
        ``calib-err``).  Without ``cv``, >= 0 for the log score (the fit minimises it and
        T = 1 is a candidate); with ``cv``, or for the Brier score (the fit minimises the
        log score), it may be negative.
    refinement : float
        The score of the recalibrated predictions (probmetrics' ``refinement``).
    temperatures : tuple of float
        The fitted temperature: one, or one per fold with ``cv``.
    """

    score: float
    calibration: float
    refinement: float
    temperatures: tuple[float, ...]


def _logits_and_labels(
    prob: PredictionsLike, labels: ArrayLike, *, logits: bool, renormalize: bool, eps: float
) -> tuple[NDArray, NDArray]:
    """Logits whose softmax is the predictions, and the labels, validated once.

    Probabilities become ``log(max(p, eps))`` (so that an entry of 0 has a finite logit);
    ``Scores`` become the two columns of a binary task.
    """
    logits = iv.check_flag(logits, "logits")
    if logits and not isinstance(prob, Scores) and not iv.check_flag(renormalize, "renormalize"):
        # logits as given: no softmax to check (check_predictions would take one)
        z = iv.check_predicted_logits(prob, "prob")
        return z, iv.check_labels(labels, *z.shape)
    checked = iv.check_predictions(prob, labels, logits=logits, renormalize=renormalize)
    pairs = checked.pairs
    if pairs is not None:
        if logits:
            return iv.check_logits(pairs.log_odds), pairs.targets
        probabilities = np.column_stack([1.0 - pairs.scores, pairs.scores])
        labels = pairs.targets
    elif logits:
        return iv.check_logits(prob, "prob"), checked.labels
    else:
        probabilities, labels = checked.prob, checked.labels
    return np.log(np.maximum(probabilities, eps, dtype=np.float64)), labels


def _folds(n_samples: int, cv: object, random_state: object) -> list[NDArray] | None:
    """The held-out rows of each of ``cv`` seeded folds (None: fit and score on all rows)."""
    if cv is None:
        return None
    n_folds = iv.integer_at_least(2)(cv, "cv")
    if n_folds > n_samples:
        raise InputError(
            "{cv} must be at most the number of rows ({n}), each fold holding one at least; "
            "got {value}.",
            argument="cv",
            n=n_samples,
            value=n_folds,
        )
    rng = iv.check_random_state(random_state)
    return np.array_split(rng.permutation(n_samples), n_folds)


def _log_scores(
    z: NDArray, labels: NDArray, weights: NDArray | None
) -> tuple[float, float, tuple[float, ...]]:
    """Both log scores of a fit on all rows, read from the fit's own objective.

    The objective is the mean NLL of ``softmax(beta z)``: one pass more for ``beta = 1``,
    none for the fitted ``beta`` (the last pass of the fit is within 1e-5 of it).  1M x 10
    float32 logits: 1.3x the fit alone (scoring the calibrated logits by
    ``negative_log_likelihood`` twice took 5.3x).
    """
    low, high = TemperatureScaling().temperature_bounds
    temperature, objective = fitted_objective(z, labels, weights, low, high)
    return objective.loss_at(1.0), objective.loss_at(1.0 / temperature), (temperature,)


def _recalibrated(
    z: NDArray, labels: NDArray, weights: NDArray | None, folds: list[NDArray] | None
) -> tuple[NDArray, tuple[float, ...]]:
    """``z / T`` with T fitted on all rows, or on the other folds for each held-out fold."""
    if folds is None:
        scaler = TemperatureScaling().fit(z, labels, sample_weight=weights)
        return scaler(z), (scaler.temperature_,)
    calibrated = np.empty_like(z)
    temperatures = []
    for held_out in folds:  # one fit per fold (k fits, each over the other rows)
        fitted_on = np.ones(len(z), dtype=bool)
        fitted_on[held_out] = False
        fit_weights = None if weights is None else weights[fitted_on]
        scaler = TemperatureScaling().fit(z[fitted_on], labels[fitted_on], fit_weights)
        calibrated[held_out] = scaler(z[held_out])
        temperatures.append(scaler.temperature_)
    return calibrated, tuple(temperatures)


@_registry.metric("refinement_decomposition")
@iv.accepts_classes
def refinement_decomposition(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    score: str = "log",
    logits: bool = False,
    method: str = "temperature",
    cv: int | None = None,
    random_state: int | np.random.Generator | None = 0,
    sample_weight: ArrayLike | None = None,
    eps: float = 1e-15,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> RefinementDecomposition:
    r"""Split a proper score into calibration and refinement by temperature scaling.

    Berta, Holzmüller, Jordan & Bach (2025): with :math:`S` a proper score (the log score
    or the Brier score, :func:`~calibration_toolbox.negative_log_likelihood` and
    :func:`~calibration_toolbox.brier_score`) and :math:`\mathrm{TS}` the temperature
    scaling :math:`\mathrm{softmax}(z / T)` fitted by
    :class:`~calibration_toolbox.TemperatureScaling` (the weighted log score minimised),

    .. math::

        \mathrm{refinement} = S(\mathrm{TS}(p)), \qquad
        \mathrm{calibration} = S(p) - S(\mathrm{TS}(p)),

    so that ``score = calibration + refinement`` (to rounding).  The refinement is the
    score left once the miscalibration a monotone rescaling of the logits can fix is
    removed; the calibration term is probmetrics' ``calib-err`` (``refinement`` and
    ``calib-err`` of its ``MetricsWithCalibration`` with temperature scaling).  With
    ``cv=k`` the rows are split into k seeded folds (``random_state``; a random
    permutation cut into k near-equal parts, not stratified), T is fitted on k - 1 of
    them and applied to the held-out fold, and the refinement is the score of these
    out-of-fold predictions over all the rows (an estimate that does not see its own
    rows: it may exceed the score, giving a negative calibration term).

    Probabilities enter through the logits :math:`z = \log \max(p, \epsilon)`, and
    :math:`S(p)` is the score of :math:`\mathrm{softmax}(z)`: the score of ``p`` itself
    when no entry is below ``eps`` (an entry of exactly 0 counts as ``eps``, as in
    :func:`~calibration_toolbox.negative_log_likelihood`, and its row is renormalised).
    With ``logits=True`` the logits are used as given and the log score is exact.

    Not to be confused with: probmetrics' default ``ts-mix`` calibrator mixes the scaled
    prediction with the uniform one, by :math:`1 / (N + 1)`, before scoring; this function
    scores the temperature-scaled prediction itself (probmetrics' ``temp-scaling``).

    Parameters
    ----------
    prob : array-like, shape (N, K) or (N,), or Scores
        Probabilities (rows sum to 1), or logits with ``logits=True``; a 1-D array is
        P(y = 1) of a binary task; ``Scores(s)``: one P(y = 1) per row against 0/1 labels.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    score : {'log', 'brier'}, default 'log'
        The proper score split.
    logits : bool, default False
        ``prob`` holds logits (log-odds with ``Scores``).
    method : {'temperature'}, default 'temperature'
        The recalibration: temperature scaling (the only one).
    cv : int, optional
        Number of folds of a cross-validated fit (>= 2); None: fit and score on all rows.
    random_state : None, int or numpy.random.Generator, default 0
        Seed of the folds (``cv`` only).
    sample_weight : array-like, shape (N,), optional
        Non-negative weights of the fit and of both scores (scale-free: doubling every
        weight changes nothing; integer weights equal duplicated rows without ``cv``).
    eps : float, default 1e-15
        Floor of the probabilities before their logarithm.
    renormalize : bool, default False
        As in :func:`~calibration_toolbox.negative_log_likelihood`, before the logarithm.
    classes : array-like of str or numbers, shape (K,), optional
        As in :func:`~calibration_toolbox.ECE`: ``labels`` are then names of the columns.

    Returns
    -------
    RefinementDecomposition
        ``score``, ``calibration``, ``refinement`` (floats) and ``temperatures``.

    References
    ----------
    .. [1] E. Berta, D. Holzmüller, M. I. Jordan and F. Bach, "Rethinking Early Stopping:
       Refine, Then Calibrate", arXiv:2501.19195, 2025.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import negative_log_likelihood, refinement_decomposition
    >>> rng = np.random.default_rng(0)
    >>> labels = rng.integers(0, 3, 3000)
    >>> logits = 3.0 * (np.eye(3)[labels] + rng.normal(size=(3000, 3)))  # 3x overconfident
    >>> parts = refinement_decomposition(logits, labels, logits=True)
    >>> parts.score == negative_log_likelihood(logits, labels, logits=True)
    True
    >>> round(parts.calibration, 4), round(parts.refinement, 4), round(parts.temperatures[0], 2)
    (0.3699, 0.8176, 3.02)
    >>> folds = refinement_decomposition(logits, labels, logits=True, cv=5)
    >>> len(folds.temperatures), round(folds.refinement, 4)
    (5, 0.8185)
    """
    score_function = _SCORES[_check_score(score, "score")]
    _check_method(method, "method")
    eps = iv.positive_number(eps, "eps")
    z, labels = _logits_and_labels(prob, labels, logits=logits, renormalize=renormalize, eps=eps)
    weights = iv.check_sample_weight(sample_weight, len(z), scale_free=True)
    folds = _folds(len(z), cv, random_state)
    if folds is None and score_function is negative_log_likelihood:
        before, after, temperatures = _log_scores(z, labels, weights)
    else:
        calibrated, temperatures = _recalibrated(z, labels, weights, folds)
        before = score_function(z, labels, logits=True, sample_weight=weights)
        after = score_function(calibrated, labels, logits=True, sample_weight=weights)
    before, after = float(before), float(after)
    return RefinementDecomposition(
        score=before,
        calibration=before - after,
        refinement=after,
        temperatures=tuple(float(temperature) for temperature in temperatures),
    )
