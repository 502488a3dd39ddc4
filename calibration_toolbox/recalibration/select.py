"""Choosing a recalibration method by its cross-validated score on held-out predictions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, InputTypeError
from calibration_toolbox._warnings import UncalibratedBestWarning, warn
from calibration_toolbox.metrics.scoring import brier_score, negative_log_likelihood
from calibration_toolbox.recalibration._base import Recalibrator
from calibration_toolbox.recalibration._methods import METHODS, converted, input_of, method_for

__all__ = ["RecalibratorSelection", "UncalibratedBestWarning", "select_recalibrator"]

UNCALIBRATED = "uncalibrated"
_SCORES = ("log", "brier")


@dataclass(frozen=True)
class RecalibratorSelection:
    """The cross-validated table of :func:`select_recalibrator` and its choice.

    Attributes
    ----------
    names : tuple of str
        ``'uncalibrated'`` first, then each method's name, in the order given.
    fold_scores : ndarray, shape (n_methods + 1, cv)
        The held-out score of each method (rows as ``names``) on each fold.
    mean, spread : ndarray, shape (n_methods + 1,)
        Mean over the folds and the sample standard deviation (``ddof=1``) over the folds.
    score : {'log', 'brier'}
        The score (lower is better).
    best : str
        The name of the lowest mean score (``'uncalibrated'`` possibly).
    recalibrator : Recalibrator or None
        The best method refitted on all rows (None when ``best`` is ``'uncalibrated'``).
    needs : str or None
        What ``recalibrator`` takes, ``'logits'`` or ``'probabilities'`` (None likewise).
    folds : ndarray of int, shape (N,)
        The fold of each row.
    """

    names: tuple[str, ...]
    fold_scores: NDArray
    mean: NDArray
    spread: NDArray
    score: str
    best: str
    recalibrator: Recalibrator | None
    needs: str | None
    folds: NDArray

    def __repr__(self) -> str:
        """The table in a few lines: each method's mean score and spread, and the choice."""
        width = max(len(name) for name in self.names)
        lines = [f"RecalibratorSelection(score={self.score!r}, best={self.best!r})"]
        lines += [
            f"  {name:<{width}}  {mean:.6g} (spread {spread:.3g})"
            for name, mean, spread in zip(self.names, self.mean, self.spread, strict=True)
        ]
        return "\n".join(lines)

    def table(self) -> list[dict[str, Any]]:
        """One row per method: ``name``, ``mean``, ``spread`` and ``fold_scores`` (floats)."""
        return [
            {
                "name": name,
                "mean": float(self.mean[index]),
                "spread": float(self.spread[index]),
                "fold_scores": [float(value) for value in self.fold_scores[index]],
            }
            for index, name in enumerate(self.names)
        ]


def _candidates(methods: object) -> list[tuple[str, Recalibrator]]:
    """(name, unfitted recalibrator) of each method: a name of METHODS or an instance."""
    if methods is None:
        methods = list(METHODS)
    if isinstance(methods, (str, Recalibrator)) or not isinstance(methods, Sequence):
        raise InputTypeError(
            "{argument} must be a sequence of method names or recalibrators; got {value}.",
            argument="methods",
            value=type(methods).__name__,
        )
    candidates = []
    for method in methods:
        if isinstance(method, str):
            if method not in METHODS:
                raise InputError(
                    "{argument}: unknown method {value}; valid names: {names}.",
                    argument="methods",
                    value=repr(method),
                    names=", ".join(METHODS),
                )
            candidates.append((method, METHODS[method].make()))
        else:
            input_of(method, "methods")
            known = method_for(method)
            name = type(method).__name__ if known is None else known.name
            candidates.append((name, type(method)(**method.get_params(deep=False))))
    names = [name for name, _ in candidates]
    if not names or len(set(names)) != len(names) or UNCALIBRATED in names:
        raise InputError(
            "{argument} must name at least one method, each once; got {value}.",
            argument="methods",
            value=", ".join(names) or "none",
        )
    return candidates


def stratified_folds(labels: NDArray, cv: int, rng: np.random.Generator) -> NDArray:
    """The fold (0..cv-1) of each row: each class's rows shuffled and dealt round-robin.

    Each fold holds ``floor`` or ``ceil`` of ``n_k / cv`` rows of class ``k``.
    """
    permutation = rng.permutation(len(labels))
    order = permutation[np.argsort(labels[permutation], kind="stable")]
    sorted_labels = labels[order]
    starts = np.searchsorted(sorted_labels, sorted_labels, side="left")
    folds = np.empty(len(labels), dtype=np.intp)
    folds[order] = (np.arange(len(labels)) - starts) % cv
    return folds


def _scored(model, inputs, labels, weights, score: str) -> float:
    if score == "log":
        return -model.score(inputs, labels, sample_weight=weights)
    return brier_score(model.predict_proba(inputs), labels, sample_weight=weights)


def _uncalibrated(probabilities, labels, weights, score: str) -> float:
    if score == "log":
        return negative_log_likelihood(probabilities, labels, sample_weight=weights)
    return brier_score(probabilities, labels, sample_weight=weights)


def select_recalibrator(
    X: ArrayLike,
    y: ArrayLike,
    methods: Sequence[Union[str, Recalibrator]] | None = None,
    *,
    logits: bool = False,
    cv: int = 5,
    score: str = "log",
    sample_weight: ArrayLike | None = None,
    random_state: Any = 0,
) -> RecalibratorSelection:
    r"""Choose a recalibration method by its cross-validated held-out score.

    The rows of held-out predictions ``X`` are split into ``cv`` stratified folds (each
    class's rows shuffled by ``random_state`` and dealt round-robin).  Each method is
    fitted on ``cv - 1`` folds and scored on the remaining one; the uncalibrated
    predictions are scored on the same folds.  With fold scores :math:`s_{m,j}`,

    .. math:: \bar s_m = \frac{1}{J} \sum_j s_{m,j}, \qquad
       \sigma_m = \sqrt{\frac{1}{J - 1} \sum_j (s_{m,j} - \bar s_m)^2},

    the best method is the one of least :math:`\bar s_m`, refitted on all rows.  The score
    is the negative log-likelihood (``'log'``: ``-Recalibrator.score``, exact from logits,
    see :func:`~calibration_toolbox.negative_log_likelihood`) or the Brier score
    (``'brier'``); lower is better.  An
    :class:`~calibration_toolbox.recalibration.UncalibratedBestWarning` is issued when the
    best does not beat the uncalibrated predictions beyond its spread,
    :math:`\bar s_{\mathrm{uncal}} - \bar s_{\mathrm{best}} \le \sigma_{\mathrm{best}}`.

    Each method gets the predictions as it takes them (logits or probabilities, converted
    as the command line converts them, see ``recalibration._methods.converted``).

    Parameters
    ----------
    X : array-like, shape (N, K) or (N,)
        Held-out predictions: probabilities, or logits with ``logits=True`` (a 1-D array:
        P(y = 1), or the log-odds).
    y : array-like, shape (N,)
        Class indices 0..K-1.
    methods : sequence of str or Recalibrator, optional
        Command-line method names (``'temperature'``, ``'isotonic'``, ...) or recalibrators
        (their settings are copied).  Default: every method of the command line.
    logits : bool, default False
        Whether ``X`` holds logits.
    cv : int, default 5
        The number of folds, at least 2 and at most N.
    score : {'log', 'brier'}, default 'log'
        The held-out score.
    sample_weight : array-like, shape (N,), optional
        Row weights, of the fits and of the scores.
    random_state : None, int or numpy.random.Generator, default 0
        The shuffle of the folds: the same folds, so the same table, on every call by
        default (as the command line's ``--seed``); ``None`` draws fresh folds.

    Returns
    -------
    RecalibratorSelection
        The table (``names``, ``fold_scores``, ``mean``, ``spread``), ``best`` and the
        refitted ``recalibrator``.

    References
    ----------
    .. [1] Stone, M. (1974). Cross-validatory choice and assessment of statistical
       predictions.  JRSS B 36, 111-147.
    .. [2] Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On calibration of
       modern neural networks.  ICML.  (The methods compared by held-out NLL.)

    Examples
    --------
    >>> from calibration_toolbox.datasets import make_overconfident
    >>> from calibration_toolbox.recalibration import select_recalibrator
    >>> logits, labels = make_overconfident(2000, 4, temperature=2.5, seed=0)
    >>> result = select_recalibrator(
    ...     logits, labels, ["temperature", "vector"], logits=True, random_state=0
    ... )
    >>> result.names
    ('uncalibrated', 'temperature', 'vector')
    >>> bool(result.mean[1] < result.mean[0])
    True
    """
    candidates = _candidates(methods)
    logits = iv.check_flag(logits, "logits")
    score = iv.choice(*_SCORES)(score, "score")
    # (N, K) either way: a 1-D X becomes [0, z] or [1 - p, p], which every method reads as
    # the binary task of z or p.
    predictions = iv.check_logits(X, "X") if logits else iv.check_prob(X, name="X")
    n_rows = len(predictions)
    cv = iv.integer_at_least(2)(cv, "cv")
    if cv > n_rows:
        raise InputError(
            "{argument} must be at most the number of rows, {n_rows}; got {value}.",
            argument="cv",
            n_rows=n_rows,
            value=cv,
        )
    labels = iv.check_labels(y, n_rows, predictions.shape[1], "y")
    weights = iv.check_sample_weight(sample_weight, n_rows)
    folds = stratified_folds(labels, cv, iv.check_random_state(random_state))
    inputs = {
        needs: converted(predictions, needs, logits) for needs in ("logits", "probabilities")
    }
    names = (UNCALIBRATED, *(name for name, _ in candidates))
    fold_scores = np.empty((len(names), cv))
    for fold in range(cv):
        test = folds == fold
        train = ~test
        fold_weights = (None, None) if weights is None else (weights[train], weights[test])
        fold_scores[0, fold] = _uncalibrated(
            inputs["probabilities"][test], labels[test], fold_weights[1], score
        )
        for row, (_, template) in enumerate(candidates, start=1):
            data = inputs[input_of(template)]
            model = type(template)(**template.get_params(deep=False))
            model.fit(data[train], labels[train], sample_weight=fold_weights[0])
            fold_scores[row, fold] = _scored(
                model, data[test], labels[test], fold_weights[1], score
            )
    return _result(names, fold_scores, score, candidates, inputs, labels, weights, folds)


def _result(names, fold_scores, score, candidates, inputs, labels, weights, folds):
    mean = fold_scores.mean(axis=1)
    spread = fold_scores.std(axis=1, ddof=1)
    best_index = int(np.argmin(mean))
    best = names[best_index]
    recalibrator = needs = None
    if best_index:
        template = candidates[best_index - 1][1]
        needs = input_of(template)
        recalibrator = type(template)(**template.get_params(deep=False))
        recalibrator.fit(inputs[needs], labels, sample_weight=weights)
    if mean[0] - mean[best_index] <= spread[best_index]:
        warn(
            f"the best method, {best}, does not beat the uncalibrated predictions beyond its "
            f"spread over the folds (mean {score} score {mean[best_index]:.6g} +- "
            f"{spread[best_index]:.2g}; uncalibrated {mean[0]:.6g}).",
            UncalibratedBestWarning,
        )
    return RecalibratorSelection(
        names, fold_scores, mean, spread, score, best, recalibrator, needs, folds
    )
