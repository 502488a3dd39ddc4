r"""Selective prediction: the risk-coverage curve of a confidence and the areas under it.

A model that may abstain keeps the rows whose confidence (the top-label probability, or
``Scores``) is at least a threshold t and answers only those.  Over every threshold,
:func:`risk_coverage_curve` gives the share of the rows kept (coverage) and the share of
wrong answers among them (selective risk); :func:`AURC`, :func:`EAURC` and :func:`AUGRC`
summarise the curve, :func:`coverage_at_risk` and :func:`risk_at_coverage` read one working
point off it, and :func:`confidence_auroc` says how well the confidence ranks the right
answers above the wrong ones.

Ties are never split: the rows of one confidence are kept or dropped together, so the
curve has one point per distinct confidence (fd-shifts' tie-aware ``RiskCoverageStats``,
Traub et al. 2024), and its value does not depend on the order of the rows.  Every
quantity here needs all the rows sorted by confidence, so none streams.

References
----------
Geifman, Y. and El-Yaniv, R. (2017). Selective classification for deep neural networks.
NeurIPS.

Geifman, Y., Uziel, G. and El-Yaniv, R. (2019). Bias-reduced uncertainty estimation for
deep neural classifiers.  ICLR.

Traub, J., Bungert, T. J., Lüth, C. T., Baumgartner, M., Maier-Hein, K. H., Maier-Hein, L.
and Jaeger, P. F. (2024). Overcoming common flaws in the evaluation of selective
classification systems.  NeurIPS.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry
from calibration_toolbox import _validation as iv
from calibration_toolbox._docstrings import with_fragments
from calibration_toolbox._errors import InputError, InputTypeError
from calibration_toolbox.binning import sort_rows_with_positions
from calibration_toolbox.scores import PredictionsLike

__all__ = [
    "AUGRC",
    "AURC",
    "EAURC",
    "RiskCoverageCurve",
    "confidence_auroc",
    "coverage_at_risk",
    "risk_at_coverage",
    "risk_coverage_curve",
]

_OPTIMA = ("oracle", "geifman")
_EPS = float(np.finfo(np.float64).eps)


def _slack(groups: _Groups) -> float:
    """The relative rounding of a ratio of cumulative weighted sums over the rows.

    A risk or coverage equal to the asked level in exact arithmetic meets it whatever the
    weights: a cumulative sum of n weights rounds within about n units in the last place
    (120 equal weights of 1e308 put a risk of exactly 0.3 above it).
    """
    return max(8, groups.rows) * _EPS


_check_convention = iv.choice("fd-shifts", "torch-uncertainty", "mapie")
_check_generalized_convention = iv.choice("fd-shifts", "torch-uncertainty")
_check_optimal = iv.choice(*_OPTIMA)


@dataclass(frozen=True)
class RiskCoverageCurve:
    r"""The tie-aware risk-coverage curve of :func:`risk_coverage_curve`.

    One point per distinct confidence :math:`t_1 > t_2 > \dots > t_G`, the rows with
    confidence :math:`\ge t_g` kept, preceded by the end point of coverage 0 (nothing
    kept, threshold :math:`+\infty`).  With :math:`w_i` the weights (1 without
    ``sample_weight``), :math:`W = \sum_i w_i` and :math:`e_i = 1` for a wrong answer:

    .. math:: c_g = \frac{1}{W} \sum_{s_i \ge t_g} w_i, \qquad
              r_g = \frac{\sum_{s_i \ge t_g} w_i e_i}{\sum_{s_i \ge t_g} w_i}, \qquad
              g_g = \frac{1}{W} \sum_{s_i \ge t_g} w_i e_i.

    Attributes
    ----------
    coverage : ndarray, shape (G + 1,)
        :math:`0, c_1, \dots, c_G`, increasing; :math:`c_G = 1`.
    risk : ndarray, shape (G + 1,)
        The selective risk :math:`r_1, r_1, r_2, \dots, r_G`: the end point of coverage 0
        has no kept row, and carries the risk of the most confident group (fd-shifts'
        convention, so that the trapezoid rule over the points is the AURC);
        :math:`r_G` is the error rate of all the rows.
    generalized_risk : ndarray, shape (G + 1,)
        :math:`0, g_1, \dots, g_G`: the weighted share of all the rows that are wrong
        *and* kept (Traub et al. 2024); :math:`g_g = c_g r_g`.
    thresholds : ndarray, shape (G + 1,)
        :math:`+\infty, t_1, \dots, t_G`, decreasing: a point keeps the rows whose
        confidence is at least its threshold.
    aurc, augrc : float
        The trapezoid rule over the points: :func:`AURC` and :func:`AUGRC` of the rows
        (to rounding).
    """

    def __eq__(self, other: object) -> bool:
        """Equal fields, compared element by element."""
        if not isinstance(other, RiskCoverageCurve):
            return NotImplemented
        return all(
            np.array_equal(mine, theirs)
            for mine, theirs in zip(
                dataclasses.astuple(self), dataclasses.astuple(other), strict=True
            )
        )

    __hash__ = None

    coverage: NDArray
    risk: NDArray
    generalized_risk: NDArray
    thresholds: NDArray

    @property
    def aurc(self) -> float:
        """The trapezoid rule over (``coverage``, ``risk``): :func:`AURC` of the rows."""
        return _trapezoid(self.coverage, self.risk)

    @property
    def augrc(self) -> float:
        """The trapezoid rule over (``coverage``, ``generalized_risk``): :func:`AUGRC`."""
        return _trapezoid(self.coverage, self.generalized_risk)


# -- the one sort -------------------------------------------------------------------------------
class _Groups:
    """The rows grouped by distinct confidence, most confident first (one sort).

    ``kept`` and ``kept_wrong`` are the cumulative (weighted) counts of the rows of
    confidence at least each group's, ``values`` the groups' confidences, ``total`` and
    ``wrong`` the sums over all the rows.
    """

    __slots__ = ("kept", "kept_wrong", "rows", "total", "values", "wrong")

    def __init__(self, scores: NDArray, targets: NDArray, weights: NDArray | None):
        if weights is None:
            self._unweighted(scores, targets)
        else:
            self._weighted(scores, targets, weights)
        self.total = float(self.kept[-1])
        self.wrong = float(self.kept_wrong[-1])
        self.rows = len(scores)

    def _unweighted(self, scores: NDArray, targets: NDArray) -> None:
        # Without weights a row is a count, and one sort of integer keys does: the bits of
        # a score in [0, 1] (float32 or float64) keep their order as an unsigned integer
        # whose top bit is free (the sign's: -0.0 shifts out to the key of 0.0), so
        # `bits << 1 | right` sorts by score, the wrong rows first within a tie, with no
        # argsort and no gather: 1.4 times np.sort of 1,000,000 float32 scores, where
        # argsort + gather + cumsum took 3.1 and a second sort of the wrong rows with a
        # binary search 3.2; with few distinct scores (np.sort is quicker there) the
        # groups are found over the runs of one key: 1.4 times np.sort for 21 scores,
        # where the row-by-row count took 2.1.
        if scores.dtype not in (np.float32, np.float64):
            scores = scores.astype(np.float64)
        unsigned = np.uint32 if scores.dtype == np.float32 else np.uint64
        keys = scores.view(unsigned) << 1
        keys |= targets.astype(unsigned, copy=False)
        keys.sort()  # our own buffer: no copy
        if np.count_nonzero(keys[1:] != keys[:-1]) < len(keys) // 8:
            starts, wrong_before, total_wrong = _tie_groups_by_runs(keys)
        else:
            starts, wrong_before, total_wrong = _tie_groups_by_rows(keys)
        self.values = (keys[starts] >> 1).view(scores.dtype)
        self.kept = (len(keys) - starts).astype(np.float64)
        self.kept_wrong = (total_wrong - wrong_before).astype(np.float64)

    def _weighted(self, scores: NDArray, targets: NDArray, weights: NDArray) -> None:
        # Float32 scores: one sort of packed keys (score bits, outcome, row position)
        # gives the sorted scores, outcomes and order, and needs one gather (the weights)
        # where an argsort needs three.  The sums run from the most confident row down, so
        # each group's kept weight is a sum of its own rows and those above (never a total
        # minus a near-equal prefix); the groups are found on the contiguous ascending
        # scores (a comparison over a reversed view is ten times slower).
        packed = sort_rows_with_positions(scores[None, :], targets[None, :])
        if packed is None:
            order = np.argsort(scores)
            ascending, right = scores[order], targets[order]
        else:
            ascending, right, order = (column[0] for column in packed)
        ordered = weights[order[::-1]]
        group_starts = np.concatenate([[0], np.flatnonzero(ascending[1:] != ascending[:-1]) + 1])
        ends = (len(ascending) - 1 - group_starts)[::-1]  # each group's last descending row
        self.values = ascending[::-1][ends]
        self.kept = np.cumsum(ordered)[ends]
        self.kept_wrong = np.cumsum(ordered * (right[::-1] == 0))[ends]


def _tie_groups_by_rows(keys: NDArray) -> tuple[NDArray, NDArray, int]:
    """Each tie group's first row, the wrong rows before it, and all the wrong rows.

    ``keys`` are sorted ``score bits << 1 | right``: a group starts where the bits change,
    and a cumulative count of the right rows gives the wrong ones before each start.
    Groups most confident first.
    """
    bits = keys >> 1
    starts = np.flatnonzero(np.concatenate([[True], bits[1:] != bits[:-1]]))[::-1]
    right_before = np.concatenate([[0], np.cumsum(keys & 1)])  # right among keys[:i]
    return starts, starts - right_before[starts], len(keys) - int(right_before[-1])


def _tie_groups_by_runs(keys: NDArray) -> tuple[NDArray, NDArray, int]:
    """As :func:`_tie_groups_by_rows`, over the runs of one key (few distinct scores).

    A run is one score and one outcome; past finding the runs, every array has one entry
    per run (42 for 21 distinct scores), where the row-by-row count takes three passes
    over the rows more.
    """
    runs = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    run_keys = keys[runs]
    run_wrong = np.where(run_keys & 1, 0, np.diff(runs, append=len(keys)))
    wrong_before = np.concatenate([[0], np.cumsum(run_wrong)])
    run_bits = run_keys >> 1
    first = np.flatnonzero(np.concatenate([[True], run_bits[1:] != run_bits[:-1]]))[::-1]
    return runs[first], wrong_before[first], int(wrong_before[-1])


def _groups(prob, labels, logits, sample_weight, renormalize) -> _Groups:
    scores, targets, weights = iv.top_label_pairs(
        prob, labels, logits, sample_weight, renormalize, scale_free=True
    )
    return _Groups(scores, targets, weights)


def _curve_of(groups: _Groups) -> RiskCoverageCurve:
    risk = groups.kept_wrong / groups.kept
    return RiskCoverageCurve(
        coverage=np.concatenate([[0.0], groups.kept / groups.total]),
        risk=np.concatenate([risk[:1], risk]),
        generalized_risk=np.concatenate([[0.0], groups.kept_wrong / groups.total]),
        thresholds=np.concatenate([[np.inf], groups.values.astype(np.float64)]),
    )


def _trapezoid(coverage: NDArray, risk: NDArray) -> float:
    """The trapezoid rule over the points (as ``numpy.trapezoid``)."""
    return float(np.sum(np.diff(coverage) * (risk[1:] + risk[:-1])) / 2)


def _area(coverage: NDArray, risk: NDArray, start: float) -> float:
    """The trapezoid rule over the points, after a first one of coverage 0 and risk ``start``.

    As :func:`_trapezoid` of the curve, without concatenating its end point (1,000,000
    points: four copies fewer).
    """
    inner = np.sum(np.diff(coverage) * (risk[1:] + risk[:-1]))
    return float((inner + coverage[0] * (risk[0] + start)) / 2)


def _aurc_of(groups: _Groups) -> float:
    risk = groups.kept_wrong / groups.kept
    return _area(groups.kept / groups.total, risk, risk[0])


def _augrc_of(groups: _Groups) -> float:
    return _area(groups.kept / groups.total, groups.kept_wrong / groups.total, 0.0)


# -- the row-by-row conventions of torch-uncertainty and MAPIE --------------------------------
def _row_rates(scores: NDArray, errors: NDArray) -> NDArray:
    """The error rate of the k most confident rows, k = 1..n, ties in row order.

    The rows are sorted by decreasing confidence with a stable sort (MAPIE's
    ``argsort(-confidence, kind="stable")``; torch-uncertainty's ``torch.argsort`` does
    not say which order it gives tied rows).
    """
    ordered = errors[np.argsort(-scores, kind="stable")]
    return np.cumsum(ordered) / np.arange(1, len(errors) + 1)


def _row_by_row_area(scores: NDArray, errors: NDArray, convention: str, generalized=False):
    r"""The area of one point per row: torch-uncertainty's trapezoid or MAPIE's mean.

    torch-uncertainty: the trapezoid rule over :math:`(k / n, R_k)` (:math:`(k / n,
    R_k k / n)` for the generalized risk), divided by the width :math:`1 - 1/n` it
    spans.  MAPIE: :math:`\frac1n \sum_k R_k`, one minus its ``auarc``.
    """
    rates = _row_rates(scores, errors)
    n = len(rates)
    if convention == "mapie":
        return float(np.mean(rates))
    if n < 2:
        raise InputError(
            "{prob} must hold at least 2 rows with convention={convention!r} (its area "
            "spans the coverages 1/n to 1); got {n} row.",
            argument="prob",
            convention=convention,
            n=n,
        )
    coverage = np.arange(1, n + 1) / n
    return _trapezoid(coverage, rates * coverage if generalized else rates) / (1 - 1 / n)


def _unweighted_pairs(prob, labels, logits, sample_weight, renormalize, convention):
    """The confidences and 0/1 errors, for a convention that takes no weights."""
    if sample_weight is not None:
        raise InputError(
            "{sample_weight} does not apply with convention={convention!r}: its curve has "
            "one point per row, so a weight is no duplicated row; got sample_weight.",
            argument="sample_weight",
            convention=convention,
        )
    scores, targets, _ = iv.top_label_pairs(
        prob, labels, logits, None, renormalize, scale_free=True
    )
    return scores, (targets == 0).astype(np.float64)


# -- shared docstring text --------------------------------------------------------------------
_PARAMETERS = """\
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``: the
        confidence is the largest probability, the answer its class (the first on ties).
        ``Scores(confidence)``: one confidence per row, with 0/1 correctness as
        ``labels``.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; with ``Scores``, 1 where the answer was right.
"""

_OPTIONS = """\
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.  Never guessed.
    sample_weight : array-like, shape (N,), optional
        Non-negative row weights: every count is a weighted count (only their ratios
        count: integer weights give the value of duplicated rows).
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names.
"""

_REFERENCES = """\
    .. [1] Y. Geifman and R. El-Yaniv, "Selective classification for deep neural
       networks", NeurIPS 2017.
    .. [2] J. Traub, T. J. Bungert, C. T. Lüth, M. Baumgartner, K. H. Maier-Hein, L.
       Maier-Hein and P. F. Jaeger, "Overcoming common flaws in the evaluation of
       selective classification systems", NeurIPS 2024 (fd-shifts' ``RiskCoverageStats``).
"""

_FRAGMENTS = {"{parameters}": _PARAMETERS, "{options}": _OPTIONS, "{references}": _REFERENCES}


# -- the public functions ---------------------------------------------------------------------
@_registry.metric("risk_coverage_curve")
@iv.accepts_classes
@with_fragments(_FRAGMENTS)
def risk_coverage_curve(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> RiskCoverageCurve:
    r"""The risk-coverage curve: coverage and selective risk at every confidence threshold.

    Keeping the rows whose confidence :math:`s_i` is at least a threshold :math:`t`,
    coverage is the weighted share of the rows kept and the selective risk the weighted
    share of wrong answers among them (Geifman & El-Yaniv 2017):

    .. math:: c(t) = \frac{\sum_i w_i [s_i \ge t]}{\sum_i w_i}, \qquad
              r(t) = \frac{\sum_i w_i e_i [s_i \ge t]}{\sum_i w_i [s_i \ge t]},

    :math:`e_i = 1` for a wrong answer.  The thresholds are the distinct confidences, so
    rows of one confidence are kept or dropped together (ties never split, as
    fd-shifts' ``RiskCoverageStats``), and a point of coverage 0 ends the curve
    (:class:`RiskCoverageCurve` says what it carries).  One sort of the confidences.

    Parameters
    ----------
    {parameters}
    {options}

    Returns
    -------
    RiskCoverageCurve
        ``coverage`` (increasing, from 0 to 1), ``risk``, ``generalized_risk`` and
        ``thresholds`` (decreasing, from :math:`+\infty`).

    Raises
    ------
    ValueError
        For invalid input (NaN or inf, labels out of range, mismatched shapes, ...).

    References
    ----------
    {references}

    Examples
    --------
    >>> from calibration_toolbox import Scores, risk_coverage_curve
    >>> curve = risk_coverage_curve(Scores([0.9, 0.8, 0.8, 0.6]), [1, 1, 0, 0])
    >>> curve.thresholds
    array([inf, 0.9, 0.8, 0.6])
    >>> curve.coverage
    array([0.  , 0.25, 0.75, 1.  ])
    >>> curve.risk.round(4)
    array([0.    , 0.    , 0.3333, 0.5   ])
    """
    return _curve_of(_groups(prob, labels, logits, sample_weight, renormalize))


@_registry.metric("AURC")
@iv.accepts_classes
@with_fragments(_FRAGMENTS)
def AURC(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    convention: str = "fd-shifts",
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Area under the risk-coverage curve (Geifman & El-Yaniv 2017), raw (not per mille).

    ``convention="fd-shifts"`` (default): the trapezoid rule over the points of
    :func:`risk_coverage_curve`, one per distinct confidence, ties never split, the end
    point of coverage 0 carrying the risk of the most confident group:

    .. math:: \mathrm{AURC} = \sum_{g=1}^{G} (c_g - c_{g-1})\,
              \frac{r_g + r_{g-1}}{2}, \qquad c_0 = 0,\ r_0 = r_1,

    fd-shifts' ``RiskCoverageStats.aurc`` (Traub et al. 2024) divided by its display
    scale of 1000.  For an error rate :math:`0 < \bar e < 1` it lies between the AURC
    of the oracle confidence (1 on right answers, 0 on wrong ones) and that of the
    reversed oracle, :math:`\bar e^2 / 2 \le \mathrm{AURC} \le 1 - (1 - \bar e)^2 / 2`;
    a constant confidence gives the error rate :math:`\bar e` itself (the risk of
    answering every row), a confidence worse than chance more.

    The row-by-row conventions ignore ties: one point per row, the rows sorted by
    decreasing confidence (tied rows in their order, by a stable sort), :math:`R_k` the
    error rate of the first :math:`k` of the :math:`n`.  They depend on the order of
    tied rows and take no ``sample_weight`` (a weight is no duplicated row when every
    row is a point):

    * ``convention="torch-uncertainty"``: torch-uncertainty 0.13's ``AURC``, the
      trapezoid rule over :math:`(k / n, R_k)`, divided by the width :math:`1 - 1/n` it
      spans (torch's unstable sort may order tied rows otherwise);
    * ``convention="mapie"``: :math:`\frac1n \sum_k R_k`, one minus MAPIE 1.6's
      ``mapie.metrics.uncertainty.auarc`` (the area under the accuracy-rejection
      curve, by the same stable sort).

    The three agree as the rows grow many and distinct; on 10,000 real CIFAR rows they
    differ in the fourth digit (the README's "Selective prediction" table).

    Parameters
    ----------
    {parameters}
    convention : {{'fd-shifts', 'torch-uncertainty', 'mapie'}}, default 'fd-shifts'
        Whose curve and area (above).
    {options}

    Returns
    -------
    float
        The area, in [0, 1]; lower is better.

    Raises
    ------
    ValueError
        For invalid input, ``sample_weight`` with a row-by-row convention, or a single
        row with ``convention='torch-uncertainty'``.

    References
    ----------
    {references}

    Examples
    --------
    >>> from calibration_toolbox import AURC, Scores
    >>> confidence, correct = Scores([0.9, 0.8, 0.8, 0.6]), [1, 1, 0, 0]
    >>> AURC(confidence, correct)  # 0.5 * (0 + 1/3) / 2 + 0.25 * (1/3 + 1/2) / 2
    0.1875
    >>> round(AURC(confidence, correct, convention="torch-uncertainty"), 6)
    0.194444
    >>> round(AURC(confidence, correct, convention="mapie"), 6)  # (0 + 0 + 1/3 + 1/2) / 4
    0.208333
    """
    convention = _check_convention(convention, "convention")
    if convention == "fd-shifts":
        return _aurc_of(_groups(prob, labels, logits, sample_weight, renormalize))
    pairs = _unweighted_pairs(prob, labels, logits, sample_weight, renormalize, convention)
    return _row_by_row_area(*pairs, convention)


def _oracle_aurc(error_rate: float) -> float:
    """The tie-aware AURC of the oracle confidence: two points, (1 - e, 0) and (1, e)."""
    return error_rate if error_rate in (0.0, 1.0) else error_rate**2 / 2


def _geifman_optimum(error_rate: float) -> float:
    """Geifman et al.'s optimal AURC, ``e + (1 - e) log(1 - e)`` (1 when every answer is wrong)."""
    if error_rate >= 1:
        return 1.0
    return float(error_rate + (1 - error_rate) * np.log1p(-error_rate))


@_registry.metric("EAURC")
@iv.accepts_classes
@with_fragments(_FRAGMENTS)
def EAURC(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    optimal: str = "oracle",
    convention: str = "fd-shifts",
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Excess AURC: the AURC minus that of an optimal ranking at the same error rate.

    Geifman et al. (2019) subtract the AURC of the optimal confidence :math:`\kappa^*`,
    which ranks every right answer above every wrong one, so that models of different
    error rates compare on their ranking alone:
    :math:`\mathrm{E\text{-}AURC} = \mathrm{AURC} - \mathrm{AURC}^*`.

    ``optimal="oracle"`` (default): :math:`\mathrm{AURC}^*` is the :func:`AURC` (same
    ``convention``) of the oracle confidence, 1 on the right answers and 0 on the wrong
    ones.  In the tie-aware convention that is :math:`\bar e^2 / 2` for an error rate
    :math:`0 < \bar e < 1` (0 and 1 at the ends), the least AURC of any confidence, so
    the excess is never negative.  The row-by-row conventions split the oracle's ties
    too (wrong rows last, in row order), which ranks them strictly: their optimum comes
    close to Geifman's form below.

    ``optimal="geifman"``: Geifman et al.'s closed form
    :math:`\mathrm{AURC}^* = \bar e + (1 - \bar e) \ln(1 - \bar e)`, the area of a
    ranking without ties as the rows grow many, as fd-shifts' ``aurc_optimal`` (for 0/1
    residuals) and ``eaurc`` compute it.  A confidence with ties (plateaus) can go below
    it: the excess may then be negative (fd-shifts says so too), and so can a ranking
    without ties, whose trapezoids lie under Geifman's curve by a term of order 1/n.
    It exceeds the oracle's :math:`\bar e^2 / 2` by about :math:`\bar e^3 / 6` for a
    small error rate, much more for a large one: 0.00409 against 0.00397 at
    :math:`\bar e = 0.0891` (WRN-16-4 on CIFAR-10), 0.616 against 0.383 at 0.875
    (LeNet-5 on CIFAR-100).

    Parameters
    ----------
    {parameters}
    optimal : {{'oracle', 'geifman'}}, default 'oracle'
        The optimal AURC subtracted (above).
    convention : {{'fd-shifts', 'torch-uncertainty', 'mapie'}}, default 'fd-shifts'
        The convention of the AURC (:func:`AURC`).
    {options}

    Returns
    -------
    float
        The excess, raw (not per mille); 0 for an oracle ranking.

    Raises
    ------
    ValueError
        For invalid input, or as :func:`AURC`.

    References
    ----------
    .. [1] Y. Geifman, G. Uziel and R. El-Yaniv, "Bias-reduced uncertainty estimation
       for deep neural classifiers", ICLR 2019.
    {references}

    Examples
    --------
    >>> from calibration_toolbox import EAURC, Scores
    >>> confidence, correct = Scores([0.9, 0.8, 0.8, 0.6]), [1, 1, 0, 0]
    >>> EAURC(confidence, correct)  # 0.1875 - 0.5 ** 2 / 2
    0.0625
    >>> round(EAURC(confidence, correct, optimal="geifman"), 6)  # 0.1875 - 0.153426
    0.034074
    """
    optimal = _check_optimal(optimal, "optimal")
    convention = _check_convention(convention, "convention")
    if convention != "fd-shifts":
        scores, errors = _unweighted_pairs(
            prob, labels, logits, sample_weight, renormalize, convention
        )
        aurc, error_rate = _row_by_row_area(scores, errors, convention), float(errors.mean())
        oracle = _row_by_row_area(1 - errors, errors, convention) if optimal == "oracle" else None
    else:
        scores, targets, weights = iv.top_label_pairs(
            prob, labels, logits, sample_weight, renormalize, scale_free=True
        )
        groups = _Groups(scores, targets, weights)
        aurc, error_rate = _aurc_of(groups), groups.wrong / groups.total
        oracle = _oracle_aurc(error_rate) if optimal == "oracle" else None
    return aurc - (_geifman_optimum(error_rate) if oracle is None else oracle)


@_registry.metric("AUGRC")
@iv.accepts_classes
@with_fragments(_FRAGMENTS)
def AUGRC(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    convention: str = "fd-shifts",
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Area under the generalized risk-coverage curve (Traub et al. 2024), raw.

    The generalized risk counts the wrong answers kept over *all* the rows,
    :math:`g(t) = \sum_i w_i e_i [s_i \ge t] / \sum_i w_i` (the risk of a silent
    failure: answered and wrong), where the selective risk divides by the rows kept.
    The trapezoid rule over the points of :func:`risk_coverage_curve`, ties never split,
    from :math:`(0, 0)`:

    .. math:: \mathrm{AUGRC} = \sum_{g=1}^{G} (c_g - c_{g-1})\,
              \frac{g_g + g_{g-1}}{2}, \qquad c_0 = g_0 = 0,

    fd-shifts' ``RiskCoverageStats.augrc`` divided by its display scale of 1000
    (``convention="fd-shifts"``, the default).  Its oracle value is
    :math:`\bar e^2 / 2`, a constant confidence gives :math:`\bar e / 2`; it is at most
    :math:`\bar e` and at most the AURC.  ``convention="torch-uncertainty"``:
    torch-uncertainty 0.13's ``AUGRC``, one point per row as in :func:`AURC`, the
    trapezoid rule over :math:`(k / n, R_k k / n)` divided by :math:`1 - 1/n`.

    Parameters
    ----------
    {parameters}
    convention : {{'fd-shifts', 'torch-uncertainty'}}, default 'fd-shifts'
        Whose curve and area (above).
    {options}

    Returns
    -------
    float
        The area, in [0, 1]; lower is better.

    Raises
    ------
    ValueError
        For invalid input, or as :func:`AURC` with ``convention='torch-uncertainty'``.

    References
    ----------
    {references}

    Examples
    --------
    >>> from calibration_toolbox import AUGRC, Scores
    >>> round(AUGRC(Scores([0.9, 0.8, 0.8, 0.6]), [1, 1, 0, 0]), 6)
    0.15625
    """
    convention = _check_generalized_convention(convention, "convention")
    if convention == "fd-shifts":
        return _augrc_of(_groups(prob, labels, logits, sample_weight, renormalize))
    pairs = _unweighted_pairs(prob, labels, logits, sample_weight, renormalize, convention)
    return _row_by_row_area(*pairs, convention, generalized=True)


def _check_level(value: object, name: str, *, zero: bool) -> float:
    """A number in [0, 1] (``zero``) or (0, 1], as a float."""
    interval = "[0, 1]" if zero else "(0, 1]"
    if not iv._is_real_number(value):
        raise InputTypeError(
            "{argument} must be a number in {interval}; got {value}.",
            argument=name,
            interval=interval,
            value=type(value).__name__,
        )
    number = float(value)
    if not (0 <= number <= 1 and (zero or number > 0)):
        raise InputError(
            "{argument} must be a number in {interval}; got {value!r}.",
            argument=name,
            interval=interval,
            value=value,
        )
    return number


@_registry.metric("coverage_at_risk")
@iv.accepts_classes
@with_fragments(_FRAGMENTS)
def coverage_at_risk(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    risk: float,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""The largest coverage whose selective risk is at most ``risk``.

    .. math:: \max \{c_g : r_g \le \rho\}

    over the points of :func:`risk_coverage_curve` (one per distinct confidence, ties
    never split): the share of the rows a threshold on the confidence can answer while
    keeping the error rate among them at most :math:`\rho`.  The risk need not fall
    with the threshold, so this is the best of all the thresholds, not the first one
    met.  0.0 when no threshold meets the risk (only abstaining on every row does).  A
    risk above :math:`\rho` by less than the rounding of the weighted sums (N units in
    the last place, at least 8) meets it.

    Parameters
    ----------
    {parameters}
    risk : float in [0, 1]
        The largest acceptable selective risk :math:`\rho`.
    {options}

    Returns
    -------
    float
        The coverage, in [0, 1].

    Raises
    ------
    ValueError
        For invalid input, or ``risk`` outside [0, 1].

    References
    ----------
    {references}

    Examples
    --------
    >>> from calibration_toolbox import Scores, coverage_at_risk
    >>> confidence, correct = Scores([0.9, 0.8, 0.8, 0.6]), [1, 1, 0, 0]
    >>> coverage_at_risk(confidence, correct, risk=0.4)
    0.75
    >>> coverage_at_risk(confidence, [0, 1, 1, 1], risk=0.1)
    0.0
    """
    level = _check_level(risk, "risk", zero=True)
    groups = _groups(prob, labels, logits, sample_weight, renormalize)
    meets = groups.kept_wrong / groups.kept <= level * (1 + _slack(groups))
    return float(groups.kept[meets].max() / groups.total) if meets.any() else 0.0


@_registry.metric("risk_at_coverage")
@iv.accepts_classes
@with_fragments(_FRAGMENTS)
def risk_at_coverage(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    coverage: float,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""The selective risk at the highest threshold that keeps at least ``coverage``.

    .. math:: r_{g^*}, \qquad g^* = \min \{g : c_g \ge \gamma\}

    over the points of :func:`risk_coverage_curve`: the rows are kept from the most
    confident down, a whole group of tied confidences at a time, until their share
    reaches :math:`\gamma`; the risk is the error rate of the rows kept then.  Ties are
    not split, so the coverage actually kept may exceed :math:`\gamma` (no
    interpolation between points).  A coverage below :math:`\gamma` by less than the
    rounding of the weighted sums (N units in the last place, at least 8) reaches it.

    Parameters
    ----------
    {parameters}
    coverage : float in (0, 1]
        The least share of the rows to answer, :math:`\gamma`.
    {options}

    Returns
    -------
    float
        The selective risk, in [0, 1].

    Raises
    ------
    ValueError
        For invalid input, or ``coverage`` outside (0, 1].

    References
    ----------
    {references}

    Examples
    --------
    >>> from calibration_toolbox import Scores, risk_at_coverage
    >>> confidence, correct = Scores([0.9, 0.8, 0.8, 0.6]), [1, 1, 0, 0]
    >>> risk_at_coverage(confidence, correct, coverage=0.5)  # keeps 0.9, 0.8, 0.8
    0.3333333333333333
    """
    level = _check_level(coverage, "coverage", zero=False)
    groups = _groups(prob, labels, logits, sample_weight, renormalize)
    # the first point whose coverage (the curve's own) reaches the share; the last is 1
    point = int(np.searchsorted(groups.kept / groups.total, level * (1 - _slack(groups))))
    return float(groups.kept_wrong[point] / groups.kept[point])


@_registry.metric("confidence_auroc")
@iv.accepts_classes
@with_fragments(_FRAGMENTS)
def confidence_auroc(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""AUROC of the confidence for telling right answers from wrong ones.

    The probability that a right answer has a higher confidence than a wrong one, ties
    counted one half (the Mann-Whitney statistic over the weighted pairs):

    .. math:: \mathrm{AUROC} = \frac{\sum_{i: e_i = 0} \sum_{j: e_j = 1} w_i w_j
              \left([s_i > s_j] + \tfrac12 [s_i = s_j]\right)}
              {\sum_{i: e_i = 0} w_i \sum_{j: e_j = 1} w_j},

    scikit-learn's ``roc_auc_score(correct, confidence, sample_weight=w)``: the area
    under the ROC curve whose points are the distinct confidences (the failure-detection
    AUROC of Traub et al. 2024).  One sort, grouped as :func:`risk_coverage_curve`.

    Parameters
    ----------
    {parameters}
    {options}

    Returns
    -------
    float
        The AUROC, in [0, 1]; 0.5 for a confidence that does not rank.

    Raises
    ------
    ValueError
        For invalid input, or answers all right or all wrong (no pair to rank).

    References
    ----------
    .. [1] H. B. Mann and D. R. Whitney, "On a test of whether one of two random
       variables is stochastically larger than the other", Annals of Mathematical
       Statistics 18(1), 1947.
    {references}

    Examples
    --------
    >>> from calibration_toolbox import Scores, confidence_auroc
    >>> confidence_auroc(Scores([0.9, 0.8, 0.8, 0.6]), [1, 1, 0, 0])  # (2 + 1.5) / 4
    0.875
    """
    groups = _groups(prob, labels, logits, sample_weight, renormalize)
    right = groups.total - groups.wrong
    if not (groups.wrong > 0 and right > 0):
        raise InputError(
            "{labels} must hold both right and wrong answers for the AUROC of the "
            "confidence; got only {kind} ones.",
            argument="labels",
            kind="right" if groups.wrong == 0 else "wrong",
        )
    wrong_in = np.diff(groups.kept_wrong, prepend=0.0)
    right_in = np.diff(groups.kept, prepend=0.0) - wrong_in
    # the wrong weight below each group: all of it minus what is kept at its threshold
    wrong_below = groups.wrong - groups.kept_wrong
    return float(np.sum(right_in * (wrong_below + wrong_in / 2)) / (right * groups.wrong))
