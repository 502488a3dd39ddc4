"""General Calibration Error: the binned engine's public face, the named metrics as one-line calls.

Data flow: validate -> extract the score set (top-r or all entries, thresholding) ->
assign bins -> weighted per-(group, bin) sums (:class:`CalibrationTable`) -> reduce with
the norm.  The conventions are those of the user guide's *Conventions*.

This module holds what a user calls: :func:`GCE`, :func:`calibration_table`, the named
metrics and their shared docstring text.  The engine behind them is in layers, each
importing only the ones before it: ``_options`` (the options, checked once), ``_table``
(:class:`CalibrationTable`, its reductions, per-bin intervals and bands), ``_scoresets``
(which entries are binned), ``_kernels`` (the tabulation kernels behind ``tabulate``) and
``_engine`` (validate once, tabulate in memory or over Dask chunks), whose ``tabulated``
every function here calls.
"""

from __future__ import annotations

from typing import Union

from numpy.typing import ArrayLike

from calibration_toolbox import _registry
from calibration_toolbox import _validation as iv
from calibration_toolbox._docstrings import with_fragments
from calibration_toolbox.metrics._engine import tabulated
from calibration_toolbox.metrics._options import (
    DEFAULT_BINS,
    DEFAULT_TACE_THRESHOLD,
    one_spelling,
)
from calibration_toolbox.metrics._table import CalibrationTable, Norm
from calibration_toolbox.scores import PredictionsLike

__all__ = [
    "ACE",
    "CWCE",
    "ECE",
    "GCE",
    "MCE",
    "OCE",
    "RMSCE",
    "SCE",
    "TACE",
    "TCE",
    "UCE",
    "CalibrationTable",
    "TopLabelECE",
    "ToprCE",
    "calibration_table",
    "expected_calibration_error",
]


# -- Shared docstring text of the public functions ---------------------------------------
# Each token below stands on a line of its own in a docstring and is replaced by its text
# (already indented for a numpydoc section) by `_shared_docstring`.
_DOC_FRAGMENTS = {
    "{predictions}": """\
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``; the measure
        bins each row's largest entry against whether its class is the label.  Or
        ``Scores(s)``: one score per row, binned as given against 0/1 ``labels`` (an LLM's
        confidence and whether its answer was right; P(event) and whether it happened),
        log-odds with ``logits=True``.  A plain 1-D array is refused as ambiguous: pass
        ``Scores(p)``, or ``np.column_stack([1 - p, p])`` for a binary classifier.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
""",
    "{gce_predictions}": """\
    prob : array-like, shape (N, K) or (N,), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``.  A 1-D array
        is P(y = 1) of a binary task (two columns ``[1 - p, p]``) for the class-wise
        options, and refused as ambiguous with ``top_k_classes=1``.  ``Scores(s)``: one
        score per row binned as given against 0/1 ``labels``, with
        ``class_conditional=False`` and ``top_k_classes=1`` only (see
        :class:`~calibration_toolbox.Scores`).
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
""",
    "{class_wise_predictions}": """\
    prob : array-like, shape (N, K) or (N,)
        Predicted probabilities (rows sum to 1), or P(y = 1) of a binary task (two columns
        ``[1 - p, p]``); logits with ``logits=True``.  Not ``Scores``: a class-wise
        measure needs one column per class.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``.
""",
    "{equal_width_bins}": """\
    bins : int, array-like or 'auto', default 15
        Number of equal-width bins, or their increasing edges from 0 to 1.  Bins are
        ``(lo, hi]`` with 0 in the first bin.  ``'auto'``: ``ceil(N ** (1/3))`` bins for
        the N rows of the call (the cube-root rule of scikit-learn's
        ``calibration_curve``, see :func:`GCE`).
""",
    "{equal_mass_bins}": """\
    bins : int or 'auto', default 15
        Number of equal-mass bins of each class (Nixon et al.'s rule, see :func:`GCE`).
        ``'auto'``: ``ceil(N ** (1/3))`` bins for the N rows of the call (the cube-root
        rule of scikit-learn's ``calibration_curve``, see :func:`GCE`).
""",
    "{either_bins}": """\
    bins : int, array-like or 'auto', default 15
        Number of bins, or increasing equal-width edges from 0 to 1 (as :func:`ECE`).
        ``'auto'``: ``ceil(N ** (1/3))`` bins for the N rows of the call (the cube-root
        rule of scikit-learn's ``calibration_curve``, see :func:`GCE`).
    adaptive_bins : bool, default False
        Equal-mass bins of the confidences (Nixon et al.'s rule, see :func:`GCE`).
""",
    "{keywords}": """\
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.  Never guessed.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights; every count becomes a weighted count.
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first (into a new array), to accept
        probabilities rounded when saved, e.g. to a CSV.  Values must still lie in [0, 1]
        and every row must have a positive sum.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob`` (``classes[k]`` names column k);
        ``labels`` are then names, looked up among them: ``ECE(prob, ["dog", "cat"],
        classes=["cat", "dog"])`` equals ``ECE(prob, [1, 0])``.  With ``classes`` every
        label is a name (numbers too: ``classes=[3, 7]`` maps the label 7 to column 1);
        integer labels with string names are a ``TypeError``, a name not in ``classes``
        a ``ValueError`` naming it and its row, and ``classes`` must name every column.
""",
    "{returns}": """\
    Returns
    -------
    float
        The calibration error, in [0, 1].
""",
}


_shared_docstring = with_fragments(_DOC_FRAGMENTS)


@_registry.metric("calibration_table")
@iv.accepts_classes
@_shared_docstring
def calibration_table(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    class_conditional: bool = True,
    adaptive_bins: bool = False,
    top_k_classes: Union[int, str] = 1,
    thresholding: float = 0.0,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> CalibrationTable:
    """Per-(group, bin) table of weighted counts, score sums and target sums.

    The arguments are those of :func:`GCE` (without ``norm``); the table reduces to
    ``GCE`` with :meth:`CalibrationTable.calibration_error`, and the reliability diagram
    draws from it.

    Parameters
    ----------
    {gce_predictions}
    bins, class_conditional, adaptive_bins, top_k_classes, thresholding
        As in :func:`GCE`.
    {keywords}

    Returns
    -------
    CalibrationTable
        Weighted counts, score sums and target sums per (group, bin), and the edges.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import calibration_table
    >>> prob = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
    >>> table = calibration_table(prob, [0, 1, 1, 0], bins=2, class_conditional=False)
    >>> table.counts
    array([[0., 4.]])
    >>> table.mean_score, table.mean_target
    (array([[ nan, 0.75]]), array([[nan, 0.5]]))
    >>> table.calibration_error()
    0.25

    One score per row against a 0/1 target, e.g. P(click) and whether the click
    happened (one group; the table a reliability diagram of the scores draws):

    >>> from calibration_toolbox import Scores
    >>> table = calibration_table(
    ...     Scores([0.1, 0.2, 0.7, 0.9]), [0, 1, 1, 1], bins=2, class_conditional=False
    ... )
    >>> table.mean_score, table.mean_target
    (array([[0.15, 0.8 ]]), array([[0.5, 1. ]]))
    """
    table, _ = tabulated(
        prob,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
        bins=bins,
        class_conditional=class_conditional,
        adaptive_bins=adaptive_bins,
        top_k_classes=top_k_classes,
        norm=1,
        thresholding=thresholding,
    )
    return table


@_registry.metric("GCE")
@iv.accepts_classes
@_shared_docstring
def GCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = DEFAULT_BINS,
    class_conditional: bool = True,
    adaptive_bins: bool = False,
    top_k_classes: Union[int, str] = 1,
    norm: Norm = 1,
    thresholding: float = 0.0,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
    bin: Union[int, ArrayLike, None] = None,
    debias: bool = False,
) -> float:
    r"""General Calibration Error (Nixon et al. 2019), the engine behind every binned metric.

    1. **Score set.** Row *i* keeps its ``top_k_classes`` largest entries (ties go to the
       lower class index) or all K entries (``'all'``); with ``thresholding > 0`` entries
       ``p <= thresholding`` are dropped too.  Entry *(i, k)* has score ``prob[i, k]`` and
       target ``1[labels[i] == k]``.
    2. **Grouping.** One pooled set, or one set :math:`S_k` per class (``class_conditional``).
    3. **Per set**, with bins of width ``1 / bins`` or of equal mass,

       .. math:: E = \sum_b \frac{n_b}{n}\,\lvert \bar y_b - \bar s_b \rvert^p
                 \quad (p = 1, 2), \qquad E = \max_b \lvert \bar y_b - \bar s_b \rvert
                 \quad (p = \infty).

    4. **Reduce.** Pooled :math:`E^{1/p}`; class-conditional
       :math:`(\frac1K \sum_k E_k)^{1/p}` (:math:`\max_k E_k` for the max norm), a class with
       an empty set counting as 0.

    Parameters
    ----------
    {gce_predictions}
    bins : int, array-like or 'auto', default 15
        Number of bins, or increasing equal-width edges from 0 to 1.  Equal-width bins are
        ``(lo, hi]`` with 0 in the first bin.  ``bin=`` is accepted as a synonym.
        ``'auto'``: the cube-root rule, the smallest B with ``B ** 3 >= N`` for the N rows
        of the call (``ceil(N ** (1/3))`` in exact arithmetic), the rule scikit-learn's
        ``calibration_curve(n_bins="cube_root")`` adopted in 2026 (PR #33856), there too
        of the rows (``len(y_true)``).  The rows, not the sum of the weights: doubling
        every weight leaves the count, like the measure, unchanged, but integer weights
        then differ from duplicated rows (which add rows).  The same count for every
        class's score set; the table shows it (``calibration_table(...).n_bins``).
    class_conditional : bool, default True
        One score set per class (averaged over the K classes) instead of one pooled set.
    adaptive_bins : bool, default False
        Equal-mass bins (Nixon et al.'s reference rule) instead of equal-width ones.
    top_k_classes : int or 'all', default 1
        How many of each row's largest entries enter the score set.
    norm : {1, 2, 'inf'}, default 1
        Norm over the bins; also ``'l1'``, ``'l2'``, ``'max'`` and ``np.inf``.
    thresholding : float in [0, 1), default 0
        Drop entries ``p <= thresholding`` (0 keeps everything, exact zeros included).
    {keywords}
    bin : int or array-like, optional
        Synonym of ``bins`` (the spelling of the original README); giving both is an error.
    debias : bool, default False
        With ``norm=2`` only (any other norm: ``ValueError``), the debiased estimator of
        Broecker 2012, Ferro & Fricker 2012 and Kumar et al. 2019 [3]_: each bin's squared
        gap less the sampling variance of its accuracy,

        .. math:: E = \max\Big(0, \sum_b \frac{n_b}{n} \Big[(\bar y_b - \bar s_b)^2
                  - \frac{\bar y_b (1 - \bar y_b)}{n_b - 1}\Big]\Big),

        a bin with :math:`n_b < 2` contributing 0; each set's :math:`E` is clipped at 0
        before the class average and the square root (as Kumar et al.'s ``calibration``
        package does per class).  With weights :math:`n_b` is the weighted count (integer
        weights equal duplicated rows; scaling all weights changes the value).  See
        :meth:`CalibrationTable.calibration_error`.

    {returns}

    See Also
    --------
    calibration_table : the per-(group, bin) table this value is reduced from.

    Notes
    -----
    With thresholding each class is normalised by its own kept count, as Nixon et al.
    define TACE and implement it; when nothing is dropped this equals the normalisation by
    ``N * K`` of their written formula.  Equal-mass edges depend on the data; with
    weights their positions are counted in mean weights, so that scaling all weights
    leaves the edges (and, but for the debiased L2, the value) unchanged, and integer
    weights equal duplicated rows only where the two positions round alike.

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel and D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.
    .. [3] A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration", NeurIPS, 2019;
       J. Broecker, "Estimating reliability and resolution of probability forecasts through
       decomposition of the empirical score", Climate Dynamics, 2012; C. A. T. Ferro and
       T. E. Fricker, "A bias-corrected decomposition of the Brier score", Quarterly
       Journal of the Royal Meteorological Society, 2012.

    Examples
    --------
    >>> from calibration_toolbox import GCE
    >>> prob = [[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]]
    >>> labels = [0, 1, 1, 0]
    >>> GCE(prob, labels, bins=2, class_conditional=False)
    0.25
    >>> GCE(prob, labels, bins=2, class_conditional=True, top_k_classes="all")
    0.25
    """
    bins = one_spelling(bins, DEFAULT_BINS, bin, "bins", "bin")
    return _binned_error(
        prob,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
        bins=bins,
        class_conditional=class_conditional,
        adaptive_bins=adaptive_bins,
        top_k_classes=top_k_classes,
        norm=norm,
        thresholding=thresholding,
        debias=debias,
    )


def _binned_error(
    prob, labels, *, logits, sample_weight, renormalize, part="both", average="macro", **options
) -> float:
    """Validate, tabulate and reduce: GCE, and the named metrics with their table reduction."""
    table, checked_options = tabulated(
        prob,
        labels,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
        scale_free=True,
        **options,
    )
    return table.calibration_error(
        checked_options.norm, checked_options.debias, part=part, average=average
    )


def _named_metric(
    name,
    prob,
    labels,
    bins,
    logits,
    sample_weight,
    renormalize,
    top_k=1,
    thresholding=0.0,
    adaptive_bins=False,
):
    """The metric ``name``: its registry row's settings, binned and reduced.

    The settings are those of the user guide's table, with the table reduction (``part``,
    ``average`` of :meth:`CalibrationTable.calibration_error`) where it is not GCE's;
    ToprCE's ``top_k_classes`` is its ``r``, TACE's ``thresholding`` and OCE/UCE's
    ``adaptive_bins`` their own options: the callers give them.
    """
    settings = {
        "top_k_classes": top_k,
        "adaptive_bins": adaptive_bins,
        **_registry.ROWS[name].settings,
        "thresholding": thresholding,
    }
    return _binned_error(
        prob,
        labels,
        bins=bins,
        **settings,
        logits=logits,
        sample_weight=sample_weight,
        renormalize=renormalize,
    )


@_registry.metric("ECE")
@iv.accepts_classes
@_shared_docstring
def ECE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Expected Calibration Error of the top label, equal-width bins (Naeini 2015; Guo 2017).

    With the confidence :math:`c_i = \max_k p_{ik}`, the correctness
    :math:`a_i = 1[\arg\max_k p_{ik} = y_i]` and, for the rows whose confidence falls in bin
    :math:`b` (:math:`n_b` of N), their mean accuracy :math:`\mathrm{acc}_b` and mean
    confidence :math:`\mathrm{conf}_b`:

    .. math:: \mathrm{ECE} = \sum_b \frac{n_b}{N}\,
              \lvert \mathrm{acc}_b - \mathrm{conf}_b \rvert.

    With ``Scores(s)`` the score and target of row *i* are :math:`c_i = s_i` and
    :math:`a_i = y_i` themselves (:class:`~calibration_toolbox.Scores`).  The same as
    ``GCE(prob, labels, bins=bins, class_conditional=False, adaptive_bins=False,
    top_k_classes=1, norm=1, thresholding=0.0)``.

    Parameters
    ----------
    {predictions}
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] M. P. Naeini, G. Cooper and M. Hauskrecht, "Obtaining Well Calibrated
       Probabilities Using Bayesian Binning", AAAI, 2015.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

    Examples
    --------
    >>> from calibration_toolbox import ECE, Scores
    >>> ECE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25

    An LLM's confidence in its answers and whether each was right:

    >>> round(ECE(Scores([0.9, 0.8, 0.6, 0.3]), [1, 0, 1, 0], bins=2), 6)
    0.15
    """
    return _named_metric("ECE", prob, labels, bins, logits, sample_weight, renormalize)


@_registry.metric("RMSCE")
@iv.accepts_classes
@_shared_docstring
def RMSCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Root-mean-square calibration error of the top label (Hendrycks et al. 2019).

    With the per-bin accuracy and confidence of :func:`ECE`:

    .. math:: \mathrm{RMSCE} = \sqrt{\sum_b \frac{n_b}{N}\,
              (\mathrm{acc}_b - \mathrm{conf}_b)^2}.

    The same as ``GCE(prob, labels, bins=bins, class_conditional=False,
    adaptive_bins=False, top_k_classes=1, norm=2, thresholding=0.0)``.

    Parameters
    ----------
    {predictions}
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] D. Hendrycks, M. Mazeika and T. Dietterich, "Deep Anomaly Detection with Outlier
       Exposure", ICLR, 2019.

    Examples
    --------
    >>> from calibration_toolbox import RMSCE
    >>> RMSCE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25
    """
    return _named_metric("RMSCE", prob, labels, bins, logits, sample_weight, renormalize)


@_registry.metric("MCE")
@iv.accepts_classes
@_shared_docstring
def MCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Maximum Calibration Error of the top label (Naeini et al. 2015).

    With the per-bin accuracy and confidence of :func:`ECE`, the largest gap over the
    non-empty bins:

    .. math:: \mathrm{MCE} = \max_{b:\, n_b > 0}
              \lvert \mathrm{acc}_b - \mathrm{conf}_b \rvert.

    The same as ``GCE(prob, labels, bins=bins, class_conditional=False,
    adaptive_bins=False, top_k_classes=1, norm='inf', thresholding=0.0)``.

    Parameters
    ----------
    {predictions}
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] M. P. Naeini, G. Cooper and M. Hauskrecht, "Obtaining Well Calibrated
       Probabilities Using Bayesian Binning", AAAI, 2015.

    Examples
    --------
    >>> from calibration_toolbox import MCE
    >>> MCE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25
    """
    return _named_metric("MCE", prob, labels, bins, logits, sample_weight, renormalize)


@_registry.metric("ACE")
@iv.accepts_classes
@_shared_docstring
def ACE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: int = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Adaptive Calibration Error (Nixon et al. 2019): class-wise, equal-mass bins.

    Each class's column :math:`p_{\cdot k}` is cut into ``bins`` bins of equal mass; in bin
    :math:`b` of class :math:`k` (:math:`n_{kb}` of the N rows), :math:`\bar p_{kb}` is the
    mean probability and :math:`\bar y_{kb}` the fraction of rows whose label is k:

    .. math:: \mathrm{ACE} = \frac1K \sum_k \sum_b \frac{n_{kb}}{N}\,
              \lvert \bar y_{kb} - \bar p_{kb} \rvert.

    The same as ``GCE(prob, labels, bins=bins, class_conditional=True,
    adaptive_bins=True, top_k_classes='all', norm=1, thresholding=0.0)``.  Not netcal's
    ``ACE`` (an unweighted average over bins).

    Parameters
    ----------
    {class_wise_predictions}
    {equal_mass_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel and D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019.

    Examples
    --------
    >>> from calibration_toolbox import ACE
    >>> ACE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25
    """
    return _named_metric("ACE", prob, labels, bins, logits, sample_weight, renormalize)


@_registry.metric("SCE")
@iv.accepts_classes
@_shared_docstring
def SCE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Static Calibration Error (Nixon et al. 2019), the class-wise ECE of Kull et al. 2019.

    The equal-width ECE of each class's column, averaged over the K classes: with
    :math:`n_{kb}`, :math:`\bar p_{kb}` and :math:`\bar y_{kb}` as in :func:`ACE` but for
    equal-width bins,

    .. math:: \mathrm{SCE} = \frac1K \sum_k \sum_b \frac{n_{kb}}{N}\,
              \lvert \bar y_{kb} - \bar p_{kb} \rvert.

    The same as ``GCE(prob, labels, bins=bins, class_conditional=True,
    adaptive_bins=False, top_k_classes='all', norm=1, thresholding=0.0)``.

    Parameters
    ----------
    {class_wise_predictions}
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel and D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019.
    .. [2] M. Kull, M. Perello-Nieto, M. Kängsepp, T. Silva Filho, H. Song and P. Flach,
       "Beyond temperature scaling: Obtaining well-calibrated multiclass probabilities with
       Dirichlet calibration", NeurIPS, 2019.

    Examples
    --------
    >>> from calibration_toolbox import SCE
    >>> SCE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25
    """
    return _named_metric("SCE", prob, labels, bins, logits, sample_weight, renormalize)


@_registry.metric("ToprCE")
@iv.accepts_classes
@_shared_docstring
def ToprCE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    r: int,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Top-r calibration error (Nixon et al. 2019): class-wise ECE of each row's r largest.

    The entries kept are the ``r`` largest of each row (ties to the lower class index); the
    kept entries of class :math:`k` (:math:`n_k` of them) are binned with equal width, and
    with :math:`n_{kb}`, :math:`\bar p_{kb}`, :math:`\bar y_{kb}` the count, mean
    probability and fraction labelled k of bin :math:`b`:

    .. math:: \mathrm{ToprCE} = \frac1K \sum_k \sum_b \frac{n_{kb}}{n_k}\,
              \lvert \bar y_{kb} - \bar p_{kb} \rvert,

    a class never among the r largest counting as 0.  The same as ``GCE(prob, labels,
    bins=bins, class_conditional=True, adaptive_bins=False, top_k_classes=r, norm=1,
    thresholding=0.0)``.  Not the top-r error of Gupta et al. 2021, which uses only the r-th
    ranked prediction.

    ``r`` is keyword-only and has no default: the third positional argument is ``bins``,
    as in every other metric, and an old call ``ToprCE(prob, labels, 2)`` (which meant
    ``r=2`` when ``r`` came first) raises ``TypeError`` instead of silently meaning
    ``bins=2``.

    Parameters
    ----------
    {class_wise_predictions}
    {equal_width_bins}
    r : int
        Number of each row's largest entries kept, in ``[1, K]`` (keyword-only, required).
    {keywords}

    {returns}

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel and D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019.

    Examples
    --------
    >>> from calibration_toolbox import ToprCE
    >>> ToprCE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2, r=1)
    0.25
    """
    top_k = iv.integer_at_least(1)(r, "r")  # named `r` in its errors
    return _named_metric("ToprCE", prob, labels, bins, logits, sample_weight, renormalize, top_k)


@_registry.metric("TACE")
@iv.accepts_classes
@_shared_docstring
def TACE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: int = 15,
    *,
    thresholding: float = DEFAULT_TACE_THRESHOLD,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
    threshold: float | None = None,
) -> float:
    r"""Thresholded Adaptive Calibration Error (Nixon et al. 2019).

    :func:`ACE` over the entries above ``thresholding`` (0.01 by default), each class
    normalised by its own kept count: with :math:`n_k` the kept entries of class k and
    :math:`n_{kb}`, :math:`\bar p_{kb}`, :math:`\bar y_{kb}` those of its equal-mass bin b,

    .. math:: \mathrm{TACE} = \frac1K \sum_k \sum_b \frac{n_{kb}}{n_k}\,
              \lvert \bar y_{kb} - \bar p_{kb} \rvert.

    The same as ``GCE(prob, labels, bins=bins, class_conditional=True,
    adaptive_bins=True, top_k_classes='all', norm=1, thresholding=thresholding)``.

    Parameters
    ----------
    {class_wise_predictions}
    {equal_mass_bins}
    thresholding : float in [0, 1), default 0.01
        Entries ``p <= thresholding`` are dropped (keyword-only, named as in :func:`GCE`).
    {keywords}
    threshold : float, optional
        The former name of ``thresholding``, still accepted; giving both is an error.  (It
        was the fourth positional argument: a positional threshold now raises
        ``TypeError``.)

    {returns}

    References
    ----------
    .. [1] J. Nixon, M. W. Dusenberry, L. Zhang, G. Jerfel and D. Tran, "Measuring
       Calibration in Deep Learning", CVPR Workshops, 2019.

    Examples
    --------
    >>> from calibration_toolbox import TACE
    >>> TACE([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0], bins=2)
    0.25
    >>> prob = [[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]]
    >>> round(TACE(prob, [0, 1, 1, 0], bins=2, thresholding=0.15), 6)  # 0.1 is dropped
    0.408333
    """
    thresholding = one_spelling(
        thresholding, DEFAULT_TACE_THRESHOLD, threshold, "thresholding", "threshold"
    )
    return _named_metric(
        "TACE", prob, labels, bins, logits, sample_weight, renormalize, thresholding=thresholding
    )


@_registry.metric("expected_calibration_error")
@iv.accepts_classes
@_shared_docstring
def expected_calibration_error(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Top-label expected calibration error; the same as :func:`ECE`.

    .. math:: \mathrm{ECE} = \sum_b \frac{n_b}{N}\,
              \lvert \mathrm{acc}_b - \mathrm{conf}_b \rvert.

    Parameters
    ----------
    {predictions}
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

    Examples
    --------
    >>> from calibration_toolbox.metrics import expected_calibration_error
    >>> expected_calibration_error([[0.9, 0.1], [0.6, 0.4]], [0, 1], bins=2)
    0.25
    """
    return ECE(
        prob, labels, bins, logits=logits, sample_weight=sample_weight, renormalize=renormalize
    )


@_registry.metric("OCE")
@iv.accepts_classes
@_shared_docstring
def OCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    adaptive_bins: bool = False,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Over-confidence part of the top-label ECE: the bins where confidence exceeds accuracy.

    With the per-bin accuracy and confidence of :func:`ECE`:

    .. math:: \mathrm{OCE} = \sum_b \frac{n_b}{N}\,
              \max(\mathrm{conf}_b - \mathrm{acc}_b,\ 0),

    so that ``OCE + UCE == ECE`` on the same bins (to rounding: the two parts are sums
    of complementary subsets of ECE's terms).  The same as ``calibration_table(prob, labels,
    bins, class_conditional=False, adaptive_bins=adaptive_bins,
    top_k_classes=1).calibration_error(1, part='over')``: one binning, reduced.

    Not to be confused with the overconfidence error "OE" of Thulasidasan et al. 2019,
    which weights each bin's excess by its confidence as well,
    :math:`\sum_b \frac{n_b}{N} \mathrm{conf}_b \max(\mathrm{conf}_b - \mathrm{acc}_b, 0)`,
    and so is not a part of the ECE.

    Parameters
    ----------
    {predictions}
    {either_bins}
    {keywords}

    {returns}

    See Also
    --------
    UCE : the under-confidence part.

    References
    ----------
    .. [1] S. Thulasidasan, G. Chennupati, J. Bilmes, T. Bhattacharya and S. Michalak, "On
       Mixup Training: Improved Calibration and Predictive Uncertainty for Deep Neural
       Networks", NeurIPS, 2019.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern Neural
       Networks", ICML, 2017.

    Examples
    --------
    >>> from calibration_toolbox import ECE, OCE, UCE
    >>> prob, labels = [[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]], [0, 1, 1, 0]
    >>> OCE(prob, labels, bins=2), UCE(prob, labels, bins=2), ECE(prob, labels, bins=2)
    (0.25, 0.0, 0.25)
    """
    return _named_metric(
        "OCE",
        prob,
        labels,
        bins,
        logits,
        sample_weight,
        renormalize,
        adaptive_bins=adaptive_bins,
    )


@_registry.metric("UCE")
@iv.accepts_classes
@_shared_docstring
def UCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    adaptive_bins: bool = False,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Under-confidence part of the top-label ECE: the bins where accuracy exceeds confidence.

    With the per-bin accuracy and confidence of :func:`ECE`:

    .. math:: \mathrm{UCE} = \sum_b \frac{n_b}{N}\,
              \max(\mathrm{acc}_b - \mathrm{conf}_b,\ 0),

    so that ``OCE + UCE == ECE`` on the same bins (to rounding).  The same as
    ``calibration_table(prob, labels, bins, class_conditional=False,
    adaptive_bins=adaptive_bins, top_k_classes=1).calibration_error(1, part='under')``.

    Not to be confused with the "UCE" of Laves et al. 2019, the *uncertainty* calibration
    error, which bins a predictive uncertainty against the error rate.

    Parameters
    ----------
    {predictions}
    {either_bins}
    {keywords}

    {returns}

    See Also
    --------
    OCE : the over-confidence part.

    References
    ----------
    .. [1] S. Thulasidasan, G. Chennupati, J. Bilmes, T. Bhattacharya and S. Michalak, "On
       Mixup Training: Improved Calibration and Predictive Uncertainty for Deep Neural
       Networks", NeurIPS, 2019.

    Examples
    --------
    >>> from calibration_toolbox import UCE
    >>> round(UCE([[0.6, 0.4], [0.7, 0.3]], [0, 0], bins=2), 12)  # accuracy 1, confidence 0.65
    0.35
    """
    return _named_metric(
        "UCE",
        prob,
        labels,
        bins,
        logits,
        sample_weight,
        renormalize,
        adaptive_bins=adaptive_bins,
    )


@_registry.metric("TCE")
@iv.accepts_classes
@_shared_docstring
def TCE(
    prob: PredictionsLike,
    labels: ArrayLike,
    bins: int = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Top-label calibration error of Kumar et al. 2019: debiased L2, equal-mass bins.

    With the confidences binned in ``bins`` equal-mass bins and, per bin, :math:`n_b`,
    :math:`\mathrm{acc}_b`, :math:`\mathrm{conf}_b` as in :func:`ECE`:

    .. math:: \mathrm{TCE} = \sqrt{\max\Big(0, \sum_b \frac{n_b}{N}
              \Big[(\mathrm{acc}_b - \mathrm{conf}_b)^2
              - \frac{\mathrm{acc}_b (1 - \mathrm{acc}_b)}{n_b - 1}\Big]\Big)},

    a bin with fewer than 2 rows contributing 0.  The same as ``GCE(prob, labels,
    bins=bins, class_conditional=False, adaptive_bins=True, top_k_classes=1, norm=2,
    debias=True)``.

    "Top-label" is Kumar et al.'s word for the confidence (the largest probability against
    whether it was right); not :func:`TopLabelECE` (Gupta & Ramdas 2022, conditioned on
    the predicted class).  The bins are Nixon et al.'s equal-mass bins (see :func:`GCE`),
    not those of Kumar's ``calibration`` package (``np.array_split`` of the sorted scores,
    edges at midpoints): the estimator is the same on the same edges, the edges differ
    (the user guide, *Reproducing published numbers*).

    Parameters
    ----------
    {predictions}
    {equal_mass_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration", NeurIPS, 2019.
    .. [2] J. Broecker, "Estimating reliability and resolution of probability forecasts
       through decomposition of the empirical score", Climate Dynamics, 2012.

    Examples
    --------
    >>> from calibration_toolbox import TCE
    >>> prob = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]]
    >>> round(TCE(prob, [1, 1, 0, 0], bins=2), 12)  # gaps 0.35, 0.85; accuracies 1, 0
    0.65

    A bin with accuracy 1/2 has sampling variance ``0.5 * 0.5 / (2 - 1)``, which here
    outweighs both squared gaps (the plain L2 error on the same bins is 0.35):

    >>> TCE(prob, [0, 1, 0, 0], bins=2)
    0.0
    """
    return _named_metric("TCE", prob, labels, bins, logits, sample_weight, renormalize)


@_registry.metric("CWCE")
@iv.accepts_classes
@_shared_docstring
def CWCE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: int = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Class-wise (marginal) calibration error of Kumar et al. 2019: debiased L2, equal mass.

    Each class's column is binned in ``bins`` equal-mass bins; with :math:`n_{kb}`,
    :math:`\bar p_{kb}`, :math:`\bar y_{kb}` as in :func:`ACE`,

    .. math:: E_k = \max\Big(0, \sum_b \frac{n_{kb}}{N}
              \Big[(\bar y_{kb} - \bar p_{kb})^2
              - \frac{\bar y_{kb} (1 - \bar y_{kb})}{n_{kb} - 1}\Big]\Big), \qquad
              \mathrm{CWCE} = \sqrt{\frac1K \sum_k E_k},

    a bin with fewer than 2 rows contributing 0.  The same as ``GCE(prob, labels,
    bins=bins, class_conditional=True, adaptive_bins=True, top_k_classes='all', norm=2,
    debias=True)``.  Each :math:`E_k` is clipped at 0 before the average, as in Kumar's
    ``calibration`` package (its marginal error is the mean of the per-class L2 errors
    squared).  Not the class-wise ECE of Kull et al. 2019 (:func:`SCE`: L1, equal width,
    not debiased).  The bins are Nixon et al.'s, not the package's (see :func:`TCE`).

    Parameters
    ----------
    {class_wise_predictions}
    {equal_mass_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] A. Kumar, P. Liang and T. Ma, "Verified Uncertainty Calibration", NeurIPS, 2019.

    Examples
    --------
    >>> from calibration_toolbox import CWCE
    >>> prob = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]]
    >>> round(CWCE(prob, [1, 1, 0, 0], bins=2), 12)  # each class: gaps 0.35 and 0.85
    0.65
    """
    return _named_metric("CWCE", prob, labels, bins, logits, sample_weight, renormalize)


@_registry.metric("TopLabelECE")
@iv.accepts_classes
@_shared_docstring
def TopLabelECE(
    prob: ArrayLike,
    labels: ArrayLike,
    bins: Union[int, ArrayLike] = 15,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> float:
    r"""Top-label ECE of Gupta & Ramdas 2022: the confidence ECE within each predicted class.

    The rows predicted as class :math:`k` (:math:`N_k` of N, first-index argmax) have their
    confidences binned with equal width; with :math:`n_{kb}`, :math:`\mathrm{acc}_{kb}`,
    :math:`\mathrm{conf}_{kb}` the count, accuracy and mean confidence of bin b of class k,

    .. math:: \mathrm{TopLabelECE} = \sum_k \frac{N_k}{N} \sum_b \frac{n_{kb}}{N_k}\,
              \lvert \mathrm{acc}_{kb} - \mathrm{conf}_{kb} \rvert
              = \sum_{k, b} \frac{n_{kb}}{N}\,
              \lvert \mathrm{acc}_{kb} - \mathrm{conf}_{kb} \rvert.

    The table is ``calibration_table(prob, labels, bins, class_conditional=True,
    top_k_classes=1)`` (groups: the predicted classes), reduced with
    ``calibration_error(1, average='weighted')``.

    Not the confidence :func:`ECE` (which pools all predicted classes in one binning), and
    not ``ToprCE(r=1)``, the same per-class errors averaged uniformly over the K classes
    (weights 1/K, a class never predicted counting as 0).  On densenet-bc-100 CIFAR-100
    (10,000 rows, 100 classes, 15 bins) ECE = 0.1422, ToprCE(r=1) = 0.1585 and
    TopLabelECE = 0.1608.

    Parameters
    ----------
    prob : array-like, shape (N, K)
        Predicted probabilities (rows sum to 1); logits with ``logits=True``.  Not a 1-D
        array nor ``Scores``: the measure needs the predicted class of each row.
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``.
    {equal_width_bins}
    {keywords}

    {returns}

    References
    ----------
    .. [1] C. Gupta and A. Ramdas, "Top-label calibration and multiclass-to-binary
       reductions", ICLR, 2022.

    Examples
    --------
    >>> from calibration_toolbox import ECE, TopLabelECE, ToprCE

    Three rows predicted as class 0 (confidences 0.9, 0.8, 0.6; two right: gap 0.1) and
    one as class 1 (confidence 0.7, right: gap 0.3):

    >>> prob = [[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]]
    >>> labels = [1, 0, 0, 1]
    >>> round(TopLabelECE(prob, labels, bins=2), 12)  # 3/4 * 0.1 + 1/4 * 0.3
    0.15
    >>> round(ToprCE(prob, labels, bins=2, r=1), 12)  # (0.1 + 0.3) / 2
    0.2
    >>> ECE(prob, labels, bins=2)  # pooled: mean confidence 0.75, accuracy 0.75
    0.0
    """
    return _named_metric("TopLabelECE", prob, labels, bins, logits, sample_weight, renormalize)
