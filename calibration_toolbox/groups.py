"""Calibration by group: a metric on each group of rows, and multicalibration.

* :func:`~calibration_toolbox.by_group` -- any metric of the library that returns one
  number, evaluated on each group of rows (group labels, or a boolean matrix of possibly
  overlapping groups), with each group's count, weighted count and the worst group. The
  fixed-edge binned metrics (the registry rows whose bootstrap takes the table path:
  ``ECE``, ``RMSCE``, ``MCE``, ``SCE``, ``ToprCE``, GCE on fixed edges, ...) bin the rows
  once and sum every group's table with one ``bincount`` over (group, cell); any other
  metric is called once per group on that group's rows.
* :func:`~calibration_toolbox.multicalibration_error` -- the multicalibration error of Guy
  et al. (mcgrad): the Kuiper statistic of each group scaled by its standard deviation under
  calibration, the largest over the groups, with its p-value and minimum detectable error.

Why one door (:func:`~calibration_toolbox.by_group`) rather than a ``groups=`` keyword on
every measure: a keyword that turns a metric's Python ``float`` into per-group arrays would
make its return type depend on an argument (the ``Union`` return STYLE.md warns about), and
would have to be repeated, validated and documented on some forty signatures; ``by_group``
takes any of them, returns one result type, and keeps the fast path in one place.

Imports: NumPy, ``_registry``, ``_validation``, ``_errors``, ``_arrays``, the binned engine
(``metrics._engine``, ``metrics._table``), ``metrics.cumulative`` and ``stats`` (the table
path of the bootstrap and the Kuiper test's distribution); imported by the package.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry as registry
from calibration_toolbox import _validation as iv
from calibration_toolbox import stats
from calibration_toolbox._arrays import is_dask_input
from calibration_toolbox._errors import InputError, InputTypeError
from calibration_toolbox.metrics._engine import (
    EntryCells,
    checked_call,
    entry_cells,
)
from calibration_toolbox.metrics._table import CalibrationTable, reduce_tables, table_of_sums
from calibration_toolbox.metrics.cumulative import walk_extremes
from calibration_toolbox.scores import PredictionsLike, Scores

__all__ = ["GroupResult", "MulticalibrationResult", "by_group", "multicalibration_error"]


@dataclass(frozen=True)
class GroupResult:
    """Result of :func:`by_group`: one value per group, its counts and the worst group.

    Attributes
    ----------
    metric : str
        The metric's name (its registry row's, else the callable's ``__name__``).
    names : ndarray, shape (G,)
        The groups' names: the sorted distinct labels, or ``group_names`` (default
        ``0 .. G-1``) of a boolean matrix.
    values : ndarray of float, shape (G,)
        The metric on each group's rows; NaN for a group without a row of positive weight.
    counts : ndarray of int, shape (G,)
        Rows in each group.
    weighted_counts : ndarray of float, shape (G,)
        Total weight of each group's rows (``counts`` without weights).
    method : {'table', 'calls'}
        ``'table'``: the rows binned once and each group's table summed by ``bincount``;
        ``'calls'``: the metric called once per group on the group's rows.
    tables : tuple of CalibrationTable or None
        Each group's table (``'table'`` only; made when first read): the tables of groups
        that partition the rows add up to the table of all the rows.
    """

    metric: str
    names: NDArray
    values: NDArray
    counts: NDArray
    weighted_counts: NDArray
    method: str
    # The stacked (counts, score sums, target sums) and the maker of one group's table:
    # making 100 tables took half of a by_group call on 10,000 rows, so only when read.
    _sums: tuple[NDArray, NDArray, NDArray] | None = field(default=None, repr=False)
    _table_of: Callable | None = field(default=None, repr=False)

    @functools.cached_property
    def tables(self) -> tuple[CalibrationTable, ...] | None:
        """Each group's table (``method='table'``), else None."""
        if self._sums is None:
            return None
        return tuple(self._table_of(sums) for sums in zip(*self._sums, strict=True))

    @property
    def worst(self) -> int:
        """Index of the worst group: the largest value, the first on ties (-1: none).

        Every metric here is an error or a loss; groups without a value are skipped.
        """
        finite = np.isfinite(self.values)
        if not finite.any():
            return -1
        return int(np.argmax(np.where(finite, self.values, -np.inf)))

    @property
    def worst_name(self) -> object:
        """The worst group's name (None if no group has a value)."""
        return None if self.worst < 0 else self.names[self.worst].item()

    @property
    def worst_value(self) -> float:
        """The worst group's value (NaN if no group has one)."""
        return np.nan if self.worst < 0 else float(self.values[self.worst])

    def table(self) -> dict[object, dict[str, float]]:
        """Each group's ``value``, ``count`` and ``weighted_count``, by name, in order."""
        return {
            name.item(): {
                "value": float(value),
                "count": int(count),
                "weighted_count": float(weight),
            }
            for name, value, count, weight in zip(
                self.names, self.values, self.counts, self.weighted_counts, strict=True
            )
        }


@dataclass(frozen=True)
class _Members:
    """Who is in which group: the (row, group) pairs.

    ``rows`` is None for group labels (row ``i`` is in group ``groups[i]``, every row once).
    """

    names: NDArray
    rows: NDArray | None
    groups: NDArray

    @property
    def n_groups(self) -> int:
        return len(self.names)

    def member_rows(self) -> NDArray:
        """The row of each pair."""
        return np.arange(len(self.groups)) if self.rows is None else self.rows

    def counts(self, weights: NDArray | None) -> tuple[NDArray, NDArray]:
        counts = np.bincount(self.groups, minlength=self.n_groups)
        if weights is None:
            return counts, counts.astype(np.float64)
        pair_weights = weights if self.rows is None else weights[self.rows]
        return counts, np.bincount(self.groups, pair_weights, minlength=self.n_groups)

    def segments(self) -> list[NDArray]:
        """The rows of each group, ascending (one stable sort of the pairs by group)."""
        order = np.argsort(self.groups, kind="stable")
        rows = order if self.rows is None else self.rows[order]
        bounds = np.searchsorted(self.groups[order], np.arange(self.n_groups + 1))
        return [rows[bounds[g] : bounds[g + 1]] for g in range(self.n_groups)]


def _n_rows(prob: object) -> int:
    values = prob.values if isinstance(prob, Scores) else prob
    shape = np.shape(values)
    if not shape:
        raise InputError("{prob} must be an array with one row per sample; got a scalar.")
    return shape[0]


def check_groups(groups: ArrayLike, n_rows: int, group_names: ArrayLike | None) -> _Members:
    """The (row, group) pairs of ``groups``: labels (N,) or a boolean matrix (N, G)."""
    if is_dask_input(groups):
        raise InputTypeError("{argument} must be an array in memory.", argument="groups")
    array = np.asarray(groups)
    if array.ndim not in (1, 2) or array.shape[0] != n_rows:
        raise InputError(
            "{argument} must be one label per row, shape ({n_rows},), or a boolean matrix "
            "(N, G) of memberships, N = {n_rows}; got shape {shape}.",
            argument="groups",
            n_rows=n_rows,
            shape=array.shape,
        )
    if array.ndim == 2:
        return _matrix_members(array, group_names)
    if group_names is not None:
        raise InputTypeError(
            "{group_names} names the columns of a boolean matrix of groups; labels (N,) "
            "are their own names.",
            argument="group_names",
        )
    return _label_members(array)


# Integer labels spanning at most this many values per row are coded by a lookup table
# (one pass) instead of np.unique's sort: 0.4 s of a 0.9 s by_group at 1,000,000 rows.
_DENSE_SPAN_PER_ROW = 4


def _label_members(array: NDArray) -> _Members:
    if (
        array.dtype == object
        or array.dtype.kind not in "biuUSf"
        or (array.dtype.kind == "f" and not np.all(np.isfinite(array)))
    ):
        raise InputTypeError(
            "{argument} labels must be integers, strings, booleans or finite floats; "
            "got an array of dtype {dtype}.",
            argument="groups",
            dtype=array.dtype,
        )
    if array.dtype.kind in "iu" and len(array):
        low, high = int(array.min()), int(array.max())
        if high - low <= _DENSE_SPAN_PER_ROW * len(array):
            shifted = array - low if low else array
            present = np.bincount(shifted, minlength=high - low + 1) > 0
            codes = np.cumsum(present) - 1
            names = np.flatnonzero(present) + low
            return _Members(names.astype(array.dtype), None, codes[shifted])
    names, codes = np.unique(array, return_inverse=True)
    return _Members(names, None, codes.reshape(-1))


def _matrix_members(array: NDArray, group_names: ArrayLike | None) -> _Members:
    if array.dtype != bool:
        raise InputTypeError(
            "{argument} as a matrix must be boolean, one column per group (True: the row "
            "is in the group); got dtype {dtype}.",
            argument="groups",
            dtype=array.dtype,
        )
    n_groups = array.shape[1]
    names = np.arange(n_groups) if group_names is None else np.asarray(group_names)
    if n_groups == 0:
        raise InputError(
            "{argument} as a matrix needs a column per group; got 0.", argument="groups"
        )
    if names.shape != (n_groups,) or len(np.unique(names)) != n_groups:
        raise InputError(
            "{group_names} must be {n_groups} distinct names, one per column of {groups}; "
            "got shape {shape}.",
            argument="group_names",
            n_groups=n_groups,
            shape=names.shape,
        )
    # flatnonzero and a division: np.nonzero of a 1,000,000 x 100 matrix took 0.36 s, this 0.12.
    flat = np.flatnonzero(array)
    rows = flat // n_groups
    flat -= rows * n_groups
    return _Members(names, rows, flat)


def _metric_name(metric: Callable) -> str:
    spec = registry.spec_of(metric)
    return spec.name if spec is not None else getattr(metric, "__name__", repr(metric))


def _check_metric(metric: object) -> Callable:
    if not callable(metric):
        raise InputTypeError(
            "{argument} must be a metric function of the library (ECE, brier_score, ...); "
            "got {value!r}.",
            argument="metric",
            value=metric,
        )
    spec = registry.spec_of(metric)
    if spec is not None and spec.bootstrap is None:
        raise InputError(
            "{argument} {name} returns no single number; by_group takes a metric that "
            "does (ECE, SCE, brier_score, ...).",
            argument="metric",
            name=spec.name,
        )
    return metric


def _rows_of(prob: PredictionsLike, rows: NDArray) -> PredictionsLike:
    if isinstance(prob, Scores):
        return Scores(np.asarray(prob.values)[rows])
    return np.asarray(prob)[rows]


def _called(metric, prob, labels, weights, members: _Members, options) -> NDArray:
    """One call per group on its rows; NaN for a group without a row of positive weight."""
    labels = np.asarray(labels)
    values = np.full(members.n_groups, np.nan)
    for group, rows in enumerate(members.segments()):  # a loop over groups, not rows
        group_weights = None if weights is None else weights[rows]
        if len(rows) == 0 or (group_weights is not None and not group_weights.sum() > 0):
            continue
        value = metric(_rows_of(prob, rows), labels[rows], sample_weight=group_weights, **options)
        values[group] = float(value)
    return values


def _entries_of(cells: EntryCells, members: _Members) -> tuple[NDArray, NDArray]:
    """Every (entry, group) pair: each member row's entries of the score set, with its group."""
    member_rows = members.member_rows()
    n_rows = len(members.groups) if members.rows is None else int(members.rows.max(initial=-1)) + 1
    entry_rows = cells.rows
    if len(entry_rows) == n_rows and np.array_equal(entry_rows, np.arange(n_rows)):
        return member_rows, members.groups  # one entry per row, in row order (top label)
    order = None
    if len(entry_rows) > 1 and np.any(entry_rows[1:] < entry_rows[:-1]):
        order = np.argsort(entry_rows, kind="stable")
        entry_rows = entry_rows[order]
    starts = np.searchsorted(entry_rows, np.arange(n_rows + 1))
    per_row = np.diff(starts)[member_rows]
    groups = np.repeat(members.groups, per_row)
    offsets = np.arange(len(groups)) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    entries = np.repeat(starts[member_rows], per_row) + offsets
    return (entries if order is None else order[entries]), groups


def _table_values(cells, weights, members: _Members):
    """Each group's sums and value, the rows binned once: one bincount over (group, cell)."""
    entries, groups = _entries_of(cells, members)
    n_joint = 2 * cells.n_groups * cells.n_bins
    keys = groups * n_joint + cells.joint_cells[entries]
    scores = cells.scores[entries]
    entry_weights = None if weights is None else weights[cells.rows[entries]]
    if entry_weights is not None:
        scores *= entry_weights
    size = members.n_groups * n_joint
    by_target = np.bincount(keys, entry_weights, minlength=size).astype(np.float64)
    shape = (members.n_groups, cells.n_groups, cells.n_bins, 2)
    by_target = by_target.reshape(shape)
    score_sums = np.bincount(keys, scores, minlength=size).reshape(shape).sum(axis=-1)
    counts, target_sums = by_target.sum(axis=-1), by_target[..., 1]
    values = reduce_tables(
        counts,
        score_sums,
        target_sums,
        cells.n_classes,
        cells.class_conditional,
        cells.norm,
        debias=cells.debias,
    )
    return (counts, score_sums, target_sums), values


def _tabulated(metric, prob, labels, sample_weight, members: _Members, options):
    """The table path, or None where the metric must be called (see stats.bootstrap)."""
    settings = stats._table_call(metric, options)
    if settings is None:
        return None
    engine = {key: settings.pop(key, False) for key in ("logits", "renormalize")}
    try:
        checked, weights, gce_options = checked_call(
            prob, labels, sample_weight=sample_weight, **engine, **settings
        )
    except (TypeError, ValueError):
        return None  # the metric's own call raises its own error
    cells = entry_cells(checked, gce_options)
    if cells is None:  # equal-mass edges depend on each group's rows
        return None
    table_of = functools.partial(
        table_of_sums,
        options=gce_options,
        n_classes=checked.n_classes,
        scores=checked.pairs is not None,
    )
    sums, values = _table_values(cells, weights, members)
    return (sums, table_of), values, weights


def by_group(
    metric: Callable,
    prob: PredictionsLike,
    labels: ArrayLike,
    groups: ArrayLike,
    *,
    group_names: ArrayLike | None = None,
    sample_weight: ArrayLike | None = None,
    **metric_options: object,
) -> GroupResult:
    r"""A metric on each group of rows, with each group's count and the worst group.

    For groups :math:`G_1, \dots, G_m` of rows, the value of group :math:`g` is the metric
    of its rows alone, :math:`v_g = \mathrm{metric}(\{(p_i, y_i, w_i) : i \in G_g\})`,
    exactly the call ``metric(prob[rows], labels[rows], sample_weight=w[rows])``; the worst
    group is :math:`\arg\max_g v_g` (every metric of the library is an error or a loss:
    larger is worse).

    The fixed-edge binned metrics (``ECE``, ``RMSCE``, ``MCE``, ``SCE``, ``ToprCE``,
    ``expected_calibration_error``, GCE with fixed edges and the debiased L2 settings: the
    registry rows whose bootstrap takes the table path) are validated and binned once, and
    every group's table is summed by one ``bincount`` over the (group, bin, target) cells,
    then reduced as the metric reduces its table (the values equal the calls' up to
    rounding: the sums are added in another order).  Any other metric (and equal-mass
    bins, whose edges depend on each group's rows) is called once per group on the
    group's rows.

    Parameters
    ----------
    metric : callable
        A metric of the library that returns one number (``ECE``, ``SCE``,
        ``brier_score``, ``KSCE``, ...) or a ``functools.partial`` of one; any callable
        ``metric(prob, labels, sample_weight=..., **metric_options)`` is called per group.
    prob : array-like, shape (N, K), or Scores
        What the metric takes: probabilities, logits with ``logits=True``, or ``Scores``.
    labels : array-like, shape (N,)
        True classes (0/1 targets with ``Scores``).
    groups : array-like, shape (N,) or (N, G)
        A group label per row (integers, strings, booleans or finite floats: the groups
        partition the rows), or a boolean matrix with one column per group (True: the row
        is in the group; groups may overlap and leave rows out).
    group_names : array-like, shape (G,), optional
        Names of the columns of a boolean matrix (default ``0 .. G-1``).
    sample_weight : array-like, shape (N,), optional
        Non-negative row weights, passed on to the metric for each group's rows.
    **metric_options
        The metric's options (``bins=``, ``logits=True``, ``norm=``...).

    Returns
    -------
    GroupResult
        ``names``, ``values``, ``counts``, ``weighted_counts``, ``worst`` (its index),
        ``worst_name``, ``worst_value``, ``method``, ``tables`` and ``table()`` (a mapping
        by group name).

    Raises
    ------
    ValueError
        For ``groups`` of the wrong shape, ``group_names`` of the wrong length, a metric
        that returns no single number, or the metric's own errors.
    TypeError
        For ``groups`` that are neither labels nor a boolean matrix, or a metric that is no
        callable.

    Notes
    -----
    Why no ``groups=`` keyword on the metrics: it would change their Python ``float`` into
    per-group arrays depending on an argument (a return type that depends on a flag), on
    some forty signatures; ``by_group`` is the one door, with one result type.

    Cost: the table path is one validation, one binning and two ``bincount`` passes over
    the (row, group) memberships (measured: ``benchmarks/bench_groups.py``); the call path
    is one call per group on its rows (a loop over groups, each call vectorised).

    References
    ----------
    .. [1] U. Hébert-Johnson, M. Kim, O. Reingold and G. Rothblum, "Multicalibration:
       Calibration for the (Computationally-Identifiable) Masses", ICML 2018.
    .. [2] C. Guo, G. Pleiss, Y. Sun and K. Q. Weinberger, "On Calibration of Modern
       Neural Networks", ICML 2017 (ECE).

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import ECE, by_group
    >>> prob = np.array([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]])
    >>> labels = np.array([0, 1, 1, 0])
    >>> result = by_group(ECE, prob, labels, ["a", "a", "b", "b"], bins=2)
    >>> result.table()
    {'a': {'value': 0.25, 'count': 2, 'weighted_count': 2.0}, 'b': {'value': 0.25, 'count': 2, 'weighted_count': 2.0}}
    >>> result.worst_name, result.method
    ('a', 'table')
    """  # noqa: E501
    metric = _check_metric(metric)
    if is_dask_input(prob):
        raise InputTypeError(
            "{prob} must be an array in memory for by_group; call .compute() first.",
            argument="prob",
        )
    members = check_groups(groups, _n_rows(prob), group_names)
    tabulated = _tabulated(metric, prob, labels, sample_weight, members, metric_options)
    if tabulated is None:
        weights = iv.check_sample_weight(sample_weight, _n_rows(prob))
        values = _called(metric, prob, labels, weights, members, metric_options)
        tables, method = (None, None), "calls"
    else:
        tables, values, weights = tabulated
        method = "table"
        no_weight = members.counts(weights)[1] <= 0
        values = np.where(no_weight, np.nan, values)
    counts, weighted = members.counts(weights)
    return GroupResult(
        _metric_name(metric), members.names, values, counts, weighted, method, *tables
    )


@dataclass(frozen=True)
class MulticalibrationResult:
    r"""Result of :func:`multicalibration_error`.

    Attributes
    ----------
    sigmas : float
        The multicalibration error in standard deviations: the largest scaled Kuiper
        statistic over the segments, :math:`\max_s \mathrm{ECCE}_s / \sigma_s` (mcgrad's
        ``mce_sigma``).
    error : float
        On the scale of the scores: ``sigmas`` times the global sigma (mcgrad's ``mce``).
    relative : float
        ``error`` as a percentage of :math:`\min(\bar y, 1 - \bar y)`, the (weighted)
        prevalence (mcgrad's ``mce_relative``).
    pvalue : float
        The Kuiper p-value of ``sigmas`` (the smallest over the segments; not adjusted for
        testing many segments, as mcgrad), at least machine epsilon.
    mde : float
        Minimum detectable error: 5 global sigmas (mcgrad's ``mde``); ``mde_relative`` the
        same in percent of the prevalence.
    mde_relative : float
    names : ndarray, shape (S,)
        The segments: ``'all'`` (every row, first, with ``include_all=True``), then the
        groups.
    statistics, sigma, scaled, pvalues : ndarray, shape (S,)
        Per segment: the Kuiper range of the walk (mcgrad's ``segments_ecce``), its sigma,
        their ratio (``segments_ecce_sigma``; 0 for 0/0, inf for a positive range over a
        zero sigma) and its p-value; NaN for a segment without a row of positive weight.
    counts : ndarray of int, shape (S,)
        Rows in each segment.
    worst : int
        Index of the segment of largest ``scaled`` (the first on ties).
    """

    sigmas: float
    error: float
    relative: float
    pvalue: float
    mde: float
    mde_relative: float
    names: NDArray
    statistics: NDArray
    sigma: NDArray
    scaled: NDArray
    pvalues: NDArray
    counts: NDArray
    worst: int


def _segment_walk(scores, targets, weights) -> tuple[float, float]:
    """Kuiper range and sigma of one segment's walk (weights of the segment's rows)."""
    if weights is not None:
        positive = weights > 0
        scores, targets, weights = scores[positive], targets[positive], weights[positive]
    if len(scores) == 0:
        return np.nan, np.nan
    high, low = walk_extremes(scores, targets, weights)
    scores = scores.astype(np.float64, copy=False)
    return high - low, stats._null_sd(scores * (1 - scores), weights)


def _scaled(statistics: NDArray, sigma: NDArray) -> NDArray:
    """Range over sigma, with mcgrad's conventions for sigma 0 (0/0 -> 0, x/0 -> inf)."""
    scaled = np.full_like(statistics, np.nan)
    positive = sigma > 0
    np.divide(statistics, sigma, out=scaled, where=positive)
    scaled[(sigma == 0) & (statistics == 0)] = 0.0
    scaled[(sigma == 0) & (statistics > 0)] = np.inf
    return scaled


def _kuiper_pvalue(scaled: float) -> float:
    if np.isnan(scaled):
        return np.nan
    return max(stats._brownian_range_sf(scaled), stats._EPSILON) if scaled > 0 else 1.0


@registry.metric("multicalibration_error")
@iv.accepts_classes
def multicalibration_error(
    prob: PredictionsLike,
    labels: ArrayLike,
    groups: ArrayLike,
    *,
    group_names: ArrayLike | None = None,
    include_all: bool = True,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> MulticalibrationResult:
    r"""Multicalibration error (Guy et al. 2025, mcgrad): the worst segment's scaled Kuiper.

    For each segment :math:`S` (a group of rows, and the whole population), the Kuiper
    statistic of its top-label walk and its standard deviation under calibration,

    .. math:: h^S_j = \frac{\sum_{i \in S, i \le j} w_i (y_i - s_i)}{\sum_{i \in S} w_i},
              \quad \mathrm{ECCE}_S = \max_j h^S_j - \min_j h^S_j, \quad
              \sigma_S = \frac{\sqrt{\sum_{i \in S} w_i^2 s_i (1 - s_i)}}{\sum_{i \in S} w_i}

    (rows sorted by score, the walk from the origin:
    :func:`~calibration_toolbox.stats.kuiper_test` of the segment's rows), and

    .. math:: \mathrm{MCE}_\sigma = \max_S \mathrm{ECCE}_S / \sigma_S, \qquad
              \mathrm{MCE} = \mathrm{MCE}_\sigma \, \sigma_{\mathrm{all}}, \qquad
              \mathrm{MDE} = 5 \, \sigma_{\mathrm{all}},

    with the p-value :math:`P(\max_t B(t) - \min_t B(t) \ge \mathrm{MCE}_\sigma)` of the
    range of a standard Brownian motion (the Kuiper test's).

    Parameters
    ----------
    prob : array-like, shape (N, K), or Scores
        Probabilities (the top label: confidence against correct), logits with
        ``logits=True``, or ``Scores(p)`` against 0/1 ``labels`` (a binary P(y = 1), as
        mcgrad).
    labels : array-like, shape (N,)
        True classes (0/1 targets with ``Scores``).
    groups : array-like, shape (N,) or (N, G)
        Group labels or a boolean membership matrix, as :func:`by_group`.
    group_names : array-like, shape (G,), optional
        Names of the columns of a boolean matrix.
    include_all : bool, default True
        Count the whole population as a segment (first, named ``'all'``), as mcgrad does.
    logits, sample_weight, renormalize
        As :func:`~calibration_toolbox.stats.kuiper_test` (weights: only their ratios
        count).
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names.

    Returns
    -------
    MulticalibrationResult

    Notes
    -----
    mcgrad 0.1.5's ``MulticalibrationError`` forms its segments itself from feature
    columns (each value of up to ``max_values_per_segment_feature=3`` values per feature,
    their combinations up to ``max_depth=3``, segments of at least
    ``min_samples_per_segment=10`` rows); here the segments are given.  Its default
    ``precision_dtype='float32'`` rounds the scores to float32; with ``'float64'`` it
    agrees with this function to 1e-12 (``tests/references/multicalibration_peers.py``).
    Where scores are tied its walk depends on the order of its sort; here the walk is read
    at the ends of runs of tied scores (as :func:`~calibration_toolbox.stats.kuiper_test`).

    References
    ----------
    .. [1] I. Guy, D. Haimovich, F. Linder, N. Okati, L. Perini, N. Tax and M. Tygert,
       "Measuring multi-calibration", arXiv:2506.11251, 2025.
    .. [2] I. Arrieta-Ibarra, P. Gujral, J. Tannen, M. Tygert and C. Xu, "Metrics of
       Calibration for Probabilistic Predictions", JMLR 23(351), 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import Scores, multicalibration_error
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.uniform(size=4000)
    >>> group = rng.integers(0, 2, 4000)
    >>> events = rng.uniform(size=4000) < np.where(group == 1, scores**2, scores)
    >>> result = multicalibration_error(Scores(scores), events, group)
    >>> result.names.tolist(), int(result.worst)
    (['all', '0', '1'], 2)
    >>> bool(result.pvalue < 1e-6), bool(result.sigmas > 5)
    (True, True)
    """
    include_all = iv.check_flag(include_all, "include_all")
    scores, targets, weights = iv.top_label_pairs(
        prob, labels, logits, sample_weight, renormalize, scale_free=True, weightless=True
    )
    members = check_groups(groups, len(scores), group_names)
    segments = members.segments()
    names = [str(name) for name in members.names.tolist()]
    if include_all:
        segments, names = [slice(None), *segments], ["all", *names]
    walks = [
        _segment_walk(scores[rows], targets[rows], None if weights is None else weights[rows])
        for rows in segments
    ]
    statistics, sigma = (np.array(part, dtype=np.float64) for part in zip(*walks, strict=True))
    scaled = _scaled(statistics, sigma)
    pvalues = np.array([_kuiper_pvalue(value) for value in scaled])
    counts = np.array([len(scores[rows]) for rows in segments])
    if np.all(np.isnan(scaled)):
        raise InputError(
            "{groups} leaves no segment with a row of positive weight.", argument="groups"
        )
    worst = int(np.argmax(np.where(np.isnan(scaled), -np.inf, scaled)))
    whole_sigma = _segment_walk(scores, targets, weights)[1]
    prevalence = stats._weighted_mean(targets.astype(np.float64), weights)
    prevalence = min(prevalence, 1 - prevalence)
    sigmas = float(scaled[worst])
    return MulticalibrationResult(
        sigmas=sigmas,
        error=sigmas * whole_sigma,
        relative=100 * sigmas * whole_sigma / prevalence if prevalence > 0 else np.inf,
        pvalue=float(pvalues[worst]),
        mde=5 * whole_sigma,
        mde_relative=500 * whole_sigma / prevalence if prevalence > 0 else np.inf,
        names=np.array(names),
        statistics=statistics,
        sigma=sigma,
        scaled=scaled,
        pvalues=pvalues,
        counts=counts,
        worst=worst,
    )
