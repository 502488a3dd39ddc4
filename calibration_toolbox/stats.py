"""How sure a calibration number is: bootstrap intervals, the consistency test, bin intervals.

* :func:`bootstrap` -- a confidence interval of any metric of the library, resampling rows
  as multinomial row weights passed to the metric's own ``sample_weight``; for the
  equal-width binned metrics the rows are validated and binned once and each resample is
  one ``bincount``.
* :func:`paired_bootstrap` -- the interval and p-value of the difference of a metric
  between two models on the same rows, both evaluated on each resample's same rows.
* :func:`paired_score_test` -- the paired t (Diebold-Mariano) or Wilcoxon test of two
  models' per-row Brier or log scores.
* :func:`consistency_test` -- the p-value of "the model is calibrated" by redrawing the
  labels from the predicted distributions (consistency resampling).
* :func:`bin_intervals`, :func:`consistency_bands` -- per-bin intervals of a
  :class:`~calibration_toolbox.CalibrationTable` (also its methods ``intervals`` and
  ``consistency_bands``): the error bars and the consistency bars of a reliability diagram.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _dask, _scipy
from calibration_toolbox import _registry as registry
from calibration_toolbox import _validation as iv
from calibration_toolbox._arrays import is_dask_input
from calibration_toolbox._docstrings import with_fragments
from calibration_toolbox._errors import InputError, InputTypeError, Name
from calibration_toolbox._warnings import warn
from calibration_toolbox.metrics._engine import (
    EntryCells,
    checked_call,
    checked_table,
    dask_cells,
    dask_cells_job,
    entry_cells,
)
from calibration_toolbox.metrics._intervals import ConfidenceInterval, check_confidence
from calibration_toolbox.metrics._table import bin_intervals, consistency_bands, reduce_tables
from calibration_toolbox.metrics.corp import (
    SCORING_RULES,
    CORPDecomposition,
    PooledForecasts,
    continuous_band,
    corp_terms,
    discrete_band,
    null_refits,
    pav_fit,
    pooled_forecasts,
    with_reference,
)
from calibration_toolbox.metrics.cumulative import walk_extremes
from calibration_toolbox.metrics.scoring import row_losses
from calibration_toolbox.scores import PredictionsLike, Scores

__all__ = [
    "BootstrapResult",
    "CORPReliability",
    "CalibrationTestResult",
    "ConfidenceInterval",
    "ConsistencyTestResult",
    "PairedBootstrapResult",
    "PairedScoreTestResult",
    "bin_intervals",
    "bootstrap",
    "consistency_bands",
    "consistency_test",
    "corp_reliability",
    "corp_test",
    "ks_test",
    "kuiper_test",
    "paired_bootstrap",
    "paired_score_test",
    "spiegelhalter_test",
]

# BCa's acceleration comes from a jackknife: leave-one-out up to this many rows (as many
# metric evaluations as rows), the delete-a-group jackknife with this many groups above.
_LEAVE_ONE_OUT_MAX_ROWS = 1000
_JACKKNIFE_GROUPS = 1000
# Resampled tables reduced at once: bounded memory whatever the number of cells.
_TABLE_CHUNK_ELEMENTS = 1 << 20

_METHODS = ("percentile", "basic", "BCa")
_check_resamples = iv.integer_at_least(1)


@dataclass(frozen=True)
class BootstrapResult:
    """Result of :func:`bootstrap`.

    Attributes
    ----------
    estimate : float
        The metric on the data as given (with the user's ``sample_weight``).
    confidence_interval : ConfidenceInterval
        ``(low, high)`` at the requested level by the requested method.
    standard_error : float
        Standard deviation of the bootstrap distribution (``ddof=1``).
    bootstrap_distribution : ndarray, shape (n_resamples,)
        The metric on each resample (read-only).
    method : str
        ``'percentile'``, ``'basic'`` or ``'BCa'``.
    """

    estimate: float
    confidence_interval: ConfidenceInterval
    standard_error: float
    bootstrap_distribution: NDArray
    method: str


@dataclass(frozen=True)
class ConsistencyTestResult:
    """Result of :func:`consistency_test`.

    Attributes
    ----------
    statistic : float
        The metric on the observed labels.
    pvalue : float
        ``(1 + #{null >= statistic}) / (n_resamples + 1)``.
    null_distribution : ndarray, shape (n_resamples,)
        The metric on each set of labels redrawn from the predictions (read-only).
    """

    statistic: float
    pvalue: float
    null_distribution: NDArray


# -- argument checks -------------------------------------------------------------------------
def _check_metric(metric: object) -> Callable:
    if not callable(metric):
        raise InputTypeError(
            "{metric} must be a callable metric(prob, labels, ...) such as ECE; got {value}.",
            argument="metric",
            value=type(metric).__name__,
        )
    return metric


def _check_method(method: object) -> str:
    names = {name.lower(): name for name in _METHODS}
    if isinstance(method, str) and method.lower() in names:
        return names[method.lower()]
    expected = ", ".join(repr(name) for name in _METHODS)
    if not isinstance(method, str):
        raise InputTypeError(
            "{method} must be one of {expected}; got {value}.",
            argument="method",
            expected=expected,
            value=type(method).__name__,
        )
    raise InputError(
        "{method} must be one of {expected}; got {value!r}.",
        argument="method",
        expected=expected,
        value=method,
    )


def _as_number(value: object) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputTypeError(
            "{metric} must return a number; got {value}.",
            argument="metric",
            value=type(value).__name__,
        ) from None


def _n_rows(prob: PredictionsLike) -> int:
    if isinstance(prob, iv.CheckedInput):  # checked already (the validated handle)
        return prob.n_samples
    return np.shape(prob.values if isinstance(prob, Scores) else prob)[0]


def _read_only(array: NDArray) -> NDArray:
    array.setflags(write=False)
    return array


# -- evaluating a metric under many row weightings --------------------------------------------
# A resample is the row indices drawn with replacement (rng.integers): its row weights,
# bincount(draws) * user weights, are multinomial(n, 1/n) counts.  Drawing them with
# rng.multinomial costs 4.6 ms per resample at n = 100,000 against 0.37 ms this way.
def _draws(rng: np.random.Generator, n_rows: int, n_resamples: int) -> Iterator[NDArray]:
    for _ in range(n_resamples):
        yield rng.integers(0, n_rows, n_rows)


def _weights_of(draws: NDArray, n_rows: int, weights: NDArray | None) -> NDArray:
    """The row weights of a resample: each row's count among ``draws`` times its weight."""
    counts = np.bincount(draws, minlength=n_rows).astype(np.float64)
    return counts if weights is None else counts * weights


class _MetricCalls:
    """The metric called once per row weighting (any metric that takes ``sample_weight``)."""

    def __init__(self, metric, prob, labels, weights, options):
        self.metric, self.prob, self.labels, self.options = metric, prob, labels, options
        self.n_rows = _n_rows(prob)
        self.weights = weights
        self.weightless = 0  # weightings of total weight 0 so far: NaN for want of rows

    def from_draws(self, draws: Iterable[NDArray]) -> NDArray:
        return self.from_weights(_weights_of(rows, self.n_rows, self.weights) for rows in draws)

    def from_weights(self, weightings: Iterable[NDArray]) -> NDArray:
        values = []
        for weights in weightings:
            if not weights.sum() > 0:  # every drawn row has weight 0: no value
                self.weightless += 1
                values.append(np.nan)
                continue
            value = self.metric(self.prob, self.labels, sample_weight=weights, **self.options)
            values.append(_as_number(value))
        return np.array(values, dtype=np.float64)


class _TableSums:
    """Equal-width binned metrics: rows validated and binned once, then one bincount each.

    Each weighting gives the weighted (count, score sum) of every (cell, target) pair; the
    tables are reduced by the engine's own reduction, many at once.  Measured at 100,000 x
    10 float32 (ECE, benchmarks/bench_stats.py): 0.75 ms per resample, against 3.3 ms for
    a weighted ECE call and 7.8 ms for an ECE call on a resampled copy.
    """

    def __init__(self, cells: EntryCells, n_rows: int, weights: NDArray | None):
        self.cells, self.n_rows, self.weights = cells, n_rows, weights
        self.n_joint = 2 * cells.n_groups * cells.n_bins
        # One entry per row, in row order (top label, Scores): a resample's sums come from
        # the drawn rows directly, without a weight per row.
        self.rows_are_entries = len(cells.rows) == n_rows and bool(
            np.array_equal(cells.rows, np.arange(n_rows))
        )
        self.chunk = max(1, _TABLE_CHUNK_ELEMENTS // (2 * self.n_joint))
        self.weightless = 0  # weightings of total weight 0 so far: NaN for want of rows

    def _sums_of_draws(self, draws: NDArray) -> tuple[NDArray, NDArray, float]:
        joint = self.cells.joint_cells[draws]
        scores = self.cells.scores[draws]
        if self.weights is None:
            counts = np.bincount(joint, minlength=self.n_joint)
            return counts, np.bincount(joint, weights=scores, minlength=self.n_joint), 1.0
        weights = self.weights[draws]
        counts = np.bincount(joint, weights=weights, minlength=self.n_joint)
        scores *= weights
        sums = np.bincount(joint, weights=scores, minlength=self.n_joint)
        return counts, sums, weights.sum()

    def _sums_of_weights(self, weights: NDArray) -> tuple[NDArray, NDArray, float]:
        entry_weights = weights[self.cells.rows]
        joint = self.cells.joint_cells
        counts = np.bincount(joint, weights=entry_weights, minlength=self.n_joint)
        entry_weights *= self.cells.scores
        sums = np.bincount(joint, weights=entry_weights, minlength=self.n_joint)
        return counts, sums, weights.sum()

    def from_draws(self, draws: Iterable[NDArray]) -> NDArray:
        if self.rows_are_entries:
            return self._reduce(self._sums_of_draws(rows) for rows in draws)
        return self.from_weights(_weights_of(rows, self.n_rows, self.weights) for rows in draws)

    def from_weights(self, weightings: Iterable[NDArray]) -> NDArray:
        return self._reduce(self._sums_of_weights(weights) for weights in weightings)

    def _reduce(self, sums: Iterable[tuple[NDArray, NDArray, float]]) -> NDArray:
        values = []
        chunk = []
        for item in sums:
            chunk.append(item)
            if len(chunk) == self.chunk:
                values.append(self._reduce_chunk(chunk))
                chunk = []
        if chunk:
            values.append(self._reduce_chunk(chunk))
        return np.concatenate(values)

    def _reduce_chunk(self, chunk: list[tuple[NDArray, NDArray, float]]) -> NDArray:
        cells = self.cells
        shape = (len(chunk), cells.n_groups, cells.n_bins, 2)
        by_target = np.array([item[0] for item in chunk], dtype=np.float64).reshape(shape)
        score_sums = np.array([item[1] for item in chunk]).reshape(shape).sum(axis=-1)
        values = reduce_tables(
            by_target.sum(axis=-1),
            score_sums,
            by_target[..., 1],
            cells.n_classes,
            cells.class_conditional,
            cells.norm,
            debias=cells.debias,
        )
        totals = np.array([item[2] for item in chunk])
        self.weightless += int(np.count_nonzero(~(totals > 0)))
        return np.where(totals > 0, values, np.nan)


def _table_call(metric: Callable, metric_options: dict) -> dict | None:
    """The GCE call ``metric(..., **metric_options)`` stands for, if bootstrap may tabulate it.

    The metric's registry row declares it (``bootstrap='table'``: fixed-edge tables summed
    anew for each weighting); a ``functools.partial`` of it keeps its row, its bound
    keywords among the options.  None (the metric is called once per weighting) for any
    other callable, and for options that only the metric's own call can judge: a name it
    does not take, a required one missing, ``classes`` bound by a partial.
    """
    spec = registry.spec_of(metric)
    if spec is None or spec.bootstrap != "table":
        return None
    given = {**spec.options, **metric_options}
    parameters = inspect.signature(spec.function).parameters
    required = {
        name
        for name, parameter in list(parameters.items())[2:]
        if parameter.default is inspect.Parameter.empty
    }
    taken = set(parameters) - {"classes", "sample_weight"}
    if not required <= set(given) <= taken:
        return None
    return registry.gce_settings(spec, metric_options)


def _tabulated_call(metric, prob, labels, sample_weight, settings: dict, metric_options: dict):
    """The estimate and the resampling cells of a GCE call, its rows validated once.

    The engine checks the call as the metric's own call does, and its checked rows give
    the metric's own table and reduction (the estimate, to the bit) and the cells.  None
    when a check fails: the metric's call then raises its own error.  A Dask array, which
    the metric takes and the cells cannot, gets the metric's errors, then the refusal.
    """
    engine = {key: settings.pop(key, False) for key in ("logits", "renormalize")}
    try:
        checked, weights, options = checked_call(
            prob, labels, sample_weight=sample_weight, **engine, **settings
        )
    except (TypeError, ValueError):
        return None
    table = checked_table(checked, weights, options)
    estimate = _as_number(table.calibration_error(options.norm, options.debias))
    return estimate, entry_cells(checked, options), checked.n_samples, weights


def _dask_refusal(metric: Callable, model: str) -> InputTypeError:
    """The error of a bootstrap on Dask arrays of a metric it cannot tabulate."""
    spec = registry.spec_of(metric)
    name = getattr(metric, "__name__", None) if spec is None else spec.name
    tabulated = ", ".join(row.name for row in registry.tabulated_bootstrap())
    return InputTypeError(
        "{argument:is} a Dask array, and the bootstrap of {metric} does not run on Dask "
        "arrays: only a metric tabulated from fixed edges ({tabulated}, with "
        "adaptive_bins=False) is resampled from per-row cells gathered in one pass. Call "
        ".compute() first if the arrays fit in memory, or use one of those metrics.",
        argument=model,
        metric=Name(name or type(metric).__name__),
        tabulated=tabulated,
    )


def _dask_evaluators(metric, probs: dict, labels, sample_weight, metric_options) -> dict:
    """``(estimate, evaluator)`` of each Dask ``prob`` (by its name), their cells in one pass.

    Every model's table and entry cells (:func:`dask_cells_job`) are gathered chunk by
    chunk in one ``dask.compute`` (the models' chunks read together, the labels' and the
    weights' once); then each model is resampled in memory as NumPy input is: the same
    estimate, cells and weights, to the last bit.
    """
    settings = _table_call(metric, metric_options)
    if settings is None:
        raise _dask_refusal(metric, next(iter(probs)))
    jobs, options = {}, {}
    for model, prob in probs.items():
        given = dict(settings)
        engine = {key: given.pop(key, False) for key in ("logits", "renormalize")}
        try:
            jobs[model], options[model] = dask_cells_job(
                prob, labels, sample_weight=sample_weight, **engine, **given
            )
        except (InputError, InputTypeError) as error:
            if len(probs) == 1:  # bootstrap: the metric's own error
                raise
            raise error.within("{model}: ", model=Name(model)) from None
    results = _dask.block_sums_together(list(jobs.values()))
    evaluators = {}
    for (model, model_options), result in zip(options.items(), results, strict=True):
        table, cells, n_rows, weights = dask_cells(result, model_options)
        estimate = _as_number(table.calibration_error(model_options.norm, model_options.debias))
        evaluators[model] = estimate, _TableSums(cells, n_rows, weights)
    return evaluators


def _evaluator(metric, prob, labels, sample_weight, metric_options):
    """The metric of the data as given, and the fastest way to evaluate it under many weightings.

    The data and the options are validated once: by the engine for a metric whose
    registry row declares the table path (:func:`_tabulated_call`), else by the metric's
    own call.  Equal-mass bins (ACE, TACE, ``adaptive_bins=True``) are not fixed per row:
    those metrics are called once per weighting, and re-cut their bins each time.
    """
    if is_dask_input(prob):
        return _dask_evaluators(metric, {"prob": prob}, labels, sample_weight, metric_options)[
            "prob"
        ]
    settings = _table_call(metric, metric_options)
    tabulated = None
    if settings is not None:
        tabulated = _tabulated_call(metric, prob, labels, sample_weight, settings, metric_options)
    if tabulated is None:
        estimate = _as_number(metric(prob, labels, sample_weight=sample_weight, **metric_options))
        weights = iv.check_sample_weight(sample_weight, _n_rows(prob))  # the call checked them
        return estimate, _MetricCalls(metric, prob, labels, weights, metric_options)
    estimate, cells, n_rows, weights = tabulated
    if cells is None:
        return estimate, _MetricCalls(metric, prob, labels, weights, metric_options)
    return estimate, _TableSums(cells, n_rows, weights)


# -- intervals from a bootstrap distribution --------------------------------------------------
def _jackknife_weightings(
    n_rows: int, weights: NDArray | None, rng: np.random.Generator
) -> Iterator[NDArray]:
    """Row weights with one row (n <= 1000) or one random group of rows (1000 groups) at 0."""
    if n_rows <= _LEAVE_ONE_OUT_MAX_ROWS:
        order, n_groups = np.arange(n_rows), n_rows
    else:
        order, n_groups = rng.permutation(n_rows), _JACKKNIFE_GROUPS
    base = np.ones(n_rows) if weights is None else weights
    for group in range(n_groups):
        kept = base.copy()
        kept[order[group::n_groups]] = 0.0
        yield kept


def _bca_levels(
    distribution: NDArray, estimate: float, jackknife: NDArray, alpha: float
) -> NDArray:
    """Adjusted lower and upper levels of the BCa interval (Efron 1987)."""
    # Bias correction from the share of the distribution below the estimate, ties halved.
    below = np.count_nonzero(distribution < estimate) + np.count_nonzero(distribution <= estimate)
    bias = _scipy.special.ndtri(below / (2 * len(distribution)))
    deviations = jackknife.mean() - jackknife
    spread = np.sum(deviations**2)
    acceleration = np.sum(deviations**3) / (6 * spread**1.5) if spread > 0 else 0.0
    z = _scipy.special.ndtri(np.array([alpha / 2, 1 - alpha / 2]))
    return _scipy.special.ndtr(bias + (bias + z) / (1 - acceleration * (bias + z)))


def _interval(method, distribution, estimate, alpha, jackknife) -> ConfidenceInterval:
    if np.isnan(distribution).any():
        return ConfidenceInterval(np.nan, np.nan)
    if method == "BCa":
        levels = _bca_levels(distribution, estimate, jackknife, alpha)
        if np.isnan(levels).any():
            warn(
                "the BCa interval is undefined: the bootstrap distribution lies entirely on "
                "one side of the estimate. Use method='percentile' or 'basic'."
            )
            return ConfidenceInterval(np.nan, np.nan)
    else:
        levels = np.array([alpha / 2, 1 - alpha / 2])
    low, high = np.percentile(distribution, 100 * levels)
    if method == "basic":
        low, high = 2 * estimate - high, 2 * estimate - low
    return ConfidenceInterval(float(low), float(high))


def _class_indices(labels: ArrayLike, metric_options: dict) -> ArrayLike:
    """``labels`` as column indices when ``metric_options`` names the classes (it pops them).

    The metrics take names with ``classes=``; the resampling code draws and reweights
    rows of indices, so the names are mapped once here, by the metrics' own lookup.
    """
    classes = metric_options.pop("classes", None)
    if classes is None:
        return labels
    return iv.check_class_names(labels, classes)


def bootstrap(
    metric: Callable[..., float],
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    method: str = "percentile",
    random_state: int | np.random.Generator | None = None,
    sample_weight: ArrayLike | None = None,
    **metric_options: object,
) -> BootstrapResult:
    r"""Bootstrap confidence interval of a calibration metric.

    Each resample draws the N rows with replacement; row *i* drawn :math:`c_i` times
    (:math:`c \sim \mathrm{Multinomial}(N, 1/N)`) gets the weight :math:`c_i w_i` (``w`` the
    user's ``sample_weight``, 1 by default), passed to the metric's own ``sample_weight``:

    .. math:: \theta^*_r = \mathrm{metric}(p, y;\ c^{(r)} w), \quad r = 1..R.

    The rows are the resampled units; a row's weight scales it in every resample (a weight
    of 2 is not two rows drawn independently: repeat the rows for that).  The interval of
    level :math:`1 - \alpha` is, with :math:`q_a` the ``a``-quantile of the
    :math:`\theta^*` (linear interpolation, as ``np.percentile``):

    * ``'percentile'``: :math:`(q_{\alpha/2},\ q_{1-\alpha/2})`;
    * ``'basic'``: :math:`(2\hat\theta - q_{1-\alpha/2},\ 2\hat\theta - q_{\alpha/2})`;
    * ``'BCa'`` (Efron 1987): :math:`(q_{a_1}, q_{a_2})` with
      :math:`a_j = \Phi(z_0 + (z_0 + z_j) / (1 - a (z_0 + z_j)))`,
      :math:`z_j = \Phi^{-1}(\alpha/2), \Phi^{-1}(1-\alpha/2)`, the bias correction
      :math:`z_0 = \Phi^{-1}((\#\{\theta^* < \hat\theta\} + \#\{\theta^* \le \hat\theta\})
      / 2R)` and the acceleration :math:`a = \sum_g d_g^3 / (6 (\sum_g d_g^2)^{3/2})`,
      :math:`d_g = \bar\theta_{(\cdot)} - \theta_{(g)}`, from a jackknife: leave-one-out
      for N <= 1000 (N more metric evaluations), otherwise the delete-a-group jackknife
      with 1000 random groups of equal size (drawn from ``random_state`` after the
      resamples), as leave-one-out would cost N evaluations on N - 1 rows.

    These are the formulas of ``scipy.stats.bootstrap`` (the tests check the three
    intervals against it on the same distribution).  SciPy's function is not called:
    it resamples the data arrays and calls the statistic on each copy, where here the
    resample is a weight vector (so a binned metric is binned only once), and its BCa
    jackknife is always leave-one-out, N calls on N - 1 rows.

    **Speed.** For the equal-width binned metrics (``ECE``, ``RMSCE``, ``MCE``, ``SCE``,
    ``ToprCE``, ``GCE`` without ``adaptive_bins``) the rows are validated, their scores
    extracted and binned once; a resample is then a ``bincount`` of the drawn rows' (bin,
    target) cells and the tables are reduced together: at N = 100,000, K = 10, ``ECE``
    with 1,000 resamples takes 0.07 times as long as 1,000 ``ECE`` calls on resampled
    copies (``benchmarks/bench_stats.py``).  Any other metric is called once
    per resample with the weights.  Equal-mass bins (``ACE``, ``TACE``,
    ``GCE(adaptive_bins=True)``) are re-cut on every resample, as the edges depend on the
    (weighted) data: they take the second path.

    **Dask arrays** chunked along rows are taken by the tabulated metrics (the registry
    rows of ``bootstrap='table'``): one pass (one ``dask.compute``) checks and tabulates
    each canonical row block in the workers, by the in-memory code, and gathers its
    per-row cells (:func:`~calibration_toolbox.metrics._engine.dask_cells_job`); the
    resamples are then drawn in memory as for NumPy input, so that for the same
    ``random_state`` the estimate, the distribution and the interval are those of the
    NumPy input to the last bit, at any chunking.  The cells cost 24 bytes per entry
    (row index, cell, score: one entry per row for the top label, K for class-wise
    measures) and 8 more per row with ``sample_weight``; they are held twice while the
    blocks' cells are joined.  Any other metric on a Dask array is refused (call
    ``.compute()`` first).

    Parameters
    ----------
    metric : callable
        A metric of the library taking ``(prob, labels, ..., sample_weight=...)`` and
        returning a number: ``ECE``, ``RMSCE``, ``MCE``, ``ACE``, ``SCE``, ``TACE``,
        ``ToprCE``, ``GCE``, ``brier_score``, ``negative_log_likelihood``, ...
    prob, labels
        The predictions and labels, as the metric takes them (``Scores`` included).
    n_resamples : int, default 1000
        Number of bootstrap resamples R, at least 1.
    confidence_level : float in (0, 1), default 0.95
        Confidence level of the interval.
    method : {'percentile', 'basic', 'BCa'}, default 'percentile'
        How the interval is read from the distribution (case-insensitive).
    random_state : None, int or numpy.random.Generator
        Seed of the resampling; the same seed gives the same result.
    sample_weight : array-like, shape (N,), optional
        The user's non-negative row weights, multiplied into every resample's weights.
    **metric_options
        Passed to the metric on every call (``bins=``, ``logits=``, ``r=``, ...);
        ``classes=`` (labels given as class names) is applied once, before resampling.

    Returns
    -------
    BootstrapResult
        ``estimate``, ``confidence_interval`` (``low``, ``high``), ``standard_error``,
        ``bootstrap_distribution`` and ``method``.  A resample whose drawn rows all have
        weight 0 has the value NaN, and the interval is then NaN too.

    See Also
    --------
    consistency_test : whether the model is calibrated, rather than how large the error is.

    Notes
    -----
    The binned errors are biased upwards on small samples and bounded below by 0, so the
    bootstrap distribution of a nearly calibrated model sits above the estimate: a
    percentile interval of an error near 0 says little about calibration itself, for
    which :func:`consistency_test` is the test.

    References
    ----------
    .. [1] B. Efron, "Better Bootstrap Confidence Intervals", Journal of the American
       Statistical Association 82(397), 1987.
    .. [2] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", Chapman &
       Hall, 1993.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import ECE, Scores
    >>> from calibration_toolbox.stats import bootstrap
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.uniform(size=2000)
    >>> outcome = rng.uniform(size=2000) < scores**2  # overconfident
    >>> result = bootstrap(ECE, Scores(scores), outcome, bins=10, random_state=1)
    >>> low, high = result.confidence_interval
    >>> bool(low < result.estimate < high), round(result.standard_error, 2)
    (True, 0.01)
    """
    metric = _check_metric(metric)
    n_resamples = _check_resamples(n_resamples, "n_resamples")
    confidence_level = check_confidence(confidence_level, "confidence_level")
    method = _check_method(method)
    rng = iv.check_random_state(random_state)
    labels = _class_indices(labels, metric_options)
    estimate, evaluator = _evaluator(metric, prob, labels, sample_weight, metric_options)
    n_rows, weights = evaluator.n_rows, evaluator.weights
    distribution = _read_only(evaluator.from_draws(_draws(rng, n_rows, n_resamples)))
    weightless = evaluator.weightless
    jackknife = None
    if method == "BCa":
        jackknife = evaluator.from_weights(_jackknife_weightings(n_rows, weights, rng))
    interval = _interval(method, distribution, estimate, 1 - confidence_level, jackknife)
    missing = int(np.count_nonzero(np.isnan(distribution)))
    if missing:
        warn(_no_value(missing - weightless, weightless, n_resamples))
    standard_error = float(np.std(distribution, ddof=1)) if n_resamples > 1 else np.nan
    return BootstrapResult(estimate, interval, standard_error, distribution, method)


def _no_value(returned_nan: int, weightless: int, n_resamples: int) -> str:
    """Why some resamples have no value: the metric returned NaN, or they had no weight."""
    causes = []
    if weightless:
        causes.append(
            f"{weightless} of {n_resamples} resamples drew only rows of weight 0 and have no "
            "value (use more rows with positive weight)"
        )
    if returned_nan:
        causes.append(f"the metric returned NaN on {returned_nan} of {n_resamples} resamples")
    return f"{'; '.join(causes)}; the interval is NaN."


# -- two models on the same rows --------------------------------------------------------------
# The draws shared by the two models are held a batch at a time: at most this many drawn row
# indices (64 MiB of int64), so memory does not grow with the number of resamples.
_SHARED_DRAW_ELEMENTS = 1 << 23
# Up to this many rows a tabulated model gathers each drawn row (see _shared_resamples).
_GATHERED_ROWS = 1 << 15


@dataclass(frozen=True)
class PairedBootstrapResult:
    """Result of :func:`paired_bootstrap`.

    Attributes
    ----------
    estimate_a, estimate_b : float
        The metric of each model on the data as given (with the user's ``sample_weight``).
    difference : float
        ``estimate_a - estimate_b`` (negative: model A has the smaller value).
    confidence_interval : ConfidenceInterval
        ``(low, high)`` of the difference at ``confidence_level`` by ``method``.
    standard_error : float
        Standard deviation of the bootstrap distribution of the difference (``ddof=1``).
    pvalue : float
        Two-sided p-value of "no difference", from the centred distribution (Hall and
        Wilson 1991): ``(1 + #{|d*_r - d| >= |d|}) / (R + 1)``.
    bootstrap_distribution : ndarray, shape (n_resamples,)
        The difference on each resample (read-only).
    bootstrap_distribution_a, bootstrap_distribution_b : ndarray, shape (n_resamples,)
        Each model's metric on the same resamples (read-only): their difference is
        ``bootstrap_distribution``.
    method : str
        ``'percentile'``, ``'basic'`` or ``'BCa'``.
    confidence_level : float
        The level of the interval.
    n_resamples : int
        The number of resamples R.
    """

    estimate_a: float
    estimate_b: float
    difference: float
    confidence_interval: ConfidenceInterval
    standard_error: float
    pvalue: float
    bootstrap_distribution: NDArray
    bootstrap_distribution_a: NDArray
    bootstrap_distribution_b: NDArray
    method: str
    confidence_level: float
    n_resamples: int


def _check_same_rows(prob_a: PredictionsLike, prob_b: PredictionsLike) -> None:
    """Refuse two models of different numbers of rows (not the same rows), before any check.

    Inputs of no row count (a scalar, ragged lists) are left to the metric's own checks.
    """
    try:
        n_a, n_b = _n_rows(prob_a), _n_rows(prob_b)
    except (IndexError, TypeError, ValueError):
        return
    if n_a != n_b:
        raise InputError(
            "{prob_b} must hold the predictions of the rows of {prob_a} (one row each, the "
            "same rows); got {n_b} rows against {n_a}.",
            argument="prob_b",
            n_a=n_a,
            n_b=n_b,
        )


def _model_evaluator(model: str, metric, prob, labels, sample_weight, metric_options):
    """:func:`_evaluator` of one model, its input errors said to be that model's."""
    try:
        return _evaluator(metric, prob, labels, sample_weight, metric_options)
    except (InputError, InputTypeError) as error:
        raise error.within("{model}: ", model=Name(model)) from None


def _both_evaluators(metric, probs: dict, labels, sample_weight, metric_options) -> list:
    """``(estimate, evaluator)`` of each model; the Dask models' cells in one pass."""
    lazy = [model for model, prob in probs.items() if is_dask_input(prob)]
    if lazy and _table_call(metric, metric_options) is None:
        raise _dask_refusal(metric, lazy[0])
    if not lazy:
        return [
            _model_evaluator(model, metric, prob, labels, sample_weight, metric_options)
            for model, prob in probs.items()
        ]
    # A model in memory beside a Dask one is chunked alike: one pass for both (its labels
    # and weights may be Dask arrays too), and the same result as in memory.
    probs = {model: _chunked_like(prob, probs[lazy[0]]) for model, prob in probs.items()}
    found = _dask_evaluators(metric, probs, labels, sample_weight, metric_options)
    return [found[model] for model in probs]


def _chunked_like(prob: PredictionsLike, lazy: PredictionsLike) -> PredictionsLike:
    """``prob`` as a Dask array with the row chunks of the Dask predictions ``lazy``."""
    import dask.array as da

    if is_dask_input(prob):
        return prob
    rows = (lazy.values if isinstance(lazy, Scores) else lazy).chunks[0]
    if isinstance(prob, Scores):
        return Scores(da.from_array(np.asarray(prob.values), chunks=rows))
    array = np.asarray(prob)
    if array.ndim not in (1, 2) or array.shape[0] != sum(rows):
        return prob  # refused by its model's checks, as in memory
    return da.from_array(array, chunks=(rows, *array.shape[1:]))


def _batches(items: Iterable[NDArray], n_rows: int) -> Iterator[list[NDArray]]:
    """``items`` (draws or weightings of ``n_rows`` each) in lists of bounded memory."""
    size = max(1, _SHARED_DRAW_ELEMENTS // max(n_rows, 1))
    batch = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _paired_values(evaluators, items: Iterable[NDArray], n_rows: int, through: str):
    """Each evaluator's values under the same draws or weightings, a bounded batch at a time.

    ``through``: ``'from_draws'`` (``items`` are draws) or ``'from_weights'``.
    """
    values: tuple[list, list] = ([], [])
    for batch in _batches(items, n_rows):
        for evaluator, found in zip(evaluators, values, strict=False):
            found.append(getattr(evaluator, through)(batch))
    return tuple(np.concatenate(found) for found in values)


def _shared_resamples(evaluators, draws: Iterable[NDArray], n_rows: int, weights):
    """Both models' values on the same draws.

    Up to :data:`_GATHERED_ROWS` rows, each model's tabulated rows gather the drawn rows
    (what :func:`bootstrap` does); above, a draw's row weights are made once for both and
    each model's table summed from them, as the gathers leave the cache: per resample at
    1,000,000 x 10 (ECE, process time), 28.5 ms per model to gather against 9.5 ms for the
    weights once and 6.0 ms per model to sum them; at 10,000 rows 0.066 ms per model
    against 0.089 + 0.065 ms.
    """
    gathered = n_rows <= _GATHERED_ROWS and all(
        getattr(evaluator, "rows_are_entries", False) for evaluator in evaluators
    )
    if gathered:
        return _paired_values(evaluators, draws, n_rows, "from_draws")
    weightings = (_weights_of(rows, n_rows, weights) for rows in draws)
    return _paired_values(evaluators, weightings, n_rows, "from_weights")


def _centred_pvalue(distribution: NDArray, estimate: float) -> float:
    """Two-sided bootstrap p-value of "no difference" from the centred distribution."""
    if np.isnan(distribution).any():
        return np.nan
    extreme = np.count_nonzero(np.abs(distribution - estimate) >= abs(estimate))
    return float((1 + extreme) / (len(distribution) + 1))


def paired_bootstrap(
    metric: Callable[..., float],
    prob_a: PredictionsLike,
    prob_b: PredictionsLike,
    labels: ArrayLike,
    *,
    n_resamples: int = 1000,
    confidence_level: float = 0.95,
    method: str = "percentile",
    random_state: int | np.random.Generator | None = None,
    sample_weight: ArrayLike | None = None,
    **metric_options: object,
) -> PairedBootstrapResult:
    r"""Paired bootstrap of the difference of a metric between two models on the same rows.

    Each resample draws the N rows once, and both models are evaluated on that same draw
    (row weights :math:`c_i w_i` as in :func:`bootstrap`):

    .. math:: \delta^*_r = \mathrm{metric}(p^A, y;\ c^{(r)} w)
              - \mathrm{metric}(p^B, y;\ c^{(r)} w), \quad r = 1..R,

    against the estimate :math:`\hat\delta = \mathrm{metric}(p^A, y; w) -
    \mathrm{metric}(p^B, y; w)`.  The interval of :math:`\delta` is read from the
    :math:`\delta^*` as :func:`bootstrap` reads its interval (``'percentile'``, ``'basic'``,
    ``'BCa'``, the BCa jackknife's row weightings shared by the two models too).  Rows
    that are easy or hard for both models move both values together in a resample, so the
    difference varies less than that of two independent bootstraps: the paired interval is
    the narrower one whenever the two models' errors are positively correlated across
    resamples (on WRN-16-4 against VGG-16 on the CIFAR-10 test set, ECE with 15 bins and
    1,000 resamples: 0.0101 wide against 0.0121 for two independent bootstraps,
    ``tests/test_stats_paired.py``).

    The p-value of "no difference" is the two-sided test of the centred bootstrap
    distribution (Hall and Wilson 1991: resample :math:`\delta^* - \hat\delta`, which
    holds under the null hypothesis, and compare it with :math:`\hat\delta`), with the
    ``+1`` correction of :func:`consistency_test`:

    .. math:: p = \frac{1 + \#\{r : |\delta^*_r - \hat\delta| \ge |\hat\delta|\}}{R + 1}.

    It is the test dual to the ``'basic'`` interval (up to its interpolation of quantiles),
    whatever ``method``: read "which is better at the level" from the interval of the
    method chosen.  A model against itself gives :math:`\delta^*_r = 0` exactly, the
    interval [0, 0] and p = 1.

    **Speed.** The metrics that :func:`bootstrap` tabulates (equal-width binned) are
    tabulated for each model: the rows of both models are validated and binned once, and
    the draw itself (``rng.integers``) is made once for both.  Above 32,768 rows a draw's
    row counts are made once and each model's table is summed from them, rather than
    gathered row by row: at N = 1,000,000, ``ECE`` with 1,000 resamples takes 0.80 times
    as long as an unpaired :func:`bootstrap` of one model (28.5 s against 35.7 s, best
    of 3); at the 10,000 rows of CIFAR-10, 2.0 times (``benchmarks/bench_paired.py``).
    Each model's values are those :func:`bootstrap` gives it with the same
    ``random_state`` (to rounding).

    **Dask arrays** (either model, or both, chunked along rows; a model in memory is
    chunked alike) are taken by the tabulated metrics as :func:`bootstrap` takes them:
    both models' chunks are read in the same single pass (one ``dask.compute``, the
    labels and weights read once), each model's per-row cells gathered, then resampled
    in memory: for the same ``random_state`` every field of the result equals that of
    the NumPy input to the last bit.  Memory: 24 bytes per row and model for the top
    label (24 K for class-wise measures), 8 per row and model with ``sample_weight``.
    At 1,000,000 x 10 float32 in chunks of 100,000 rows (threads, 200 resamples) the Dask
    input took 1.1 times as long as the NumPy input (median of 3 alternated rounds,
    ``benchmarks/bench_paired.py --dask``): the pass is small beside the resampling.

    Parameters
    ----------
    metric : callable
        A metric of the library, as :func:`bootstrap` takes it.
    prob_a, prob_b
        The predictions of the two models on the same rows, in the same order, as the
        metric takes them (``Scores`` included; each may be of its own form).
    labels : array-like, shape (N,)
        The labels of the rows, shared by both models.
    n_resamples : int, default 1000
        Number of bootstrap resamples R, at least 1.
    confidence_level : float in (0, 1), default 0.95
        Confidence level of the interval.
    method : {'percentile', 'basic', 'BCa'}, default 'percentile'
        How the interval is read from the distribution (case-insensitive).
    random_state : None, int or numpy.random.Generator
        Seed of the resampling; the same seed gives the same result.
    sample_weight : array-like, shape (N,), optional
        The user's non-negative row weights, the same for both models.
    **metric_options
        Passed to the metric on every call for both models (``bins=``, ``logits=``, ...);
        ``classes=`` is applied once, before resampling.

    Returns
    -------
    PairedBootstrapResult
        ``estimate_a``, ``estimate_b``, ``difference``, ``confidence_interval``,
        ``standard_error``, ``pvalue``, the distributions, ``method``,
        ``confidence_level`` and ``n_resamples``.

    Raises
    ------
    ValueError
        When the two models do not hold the same number of rows, or for invalid input
        (the metric's own error, after the name of the model it concerns).

    See Also
    --------
    bootstrap : the interval of one model's metric.
    paired_score_test : the paired t test of the per-row scores (Brier, log).

    References
    ----------
    .. [1] B. Efron and R. J. Tibshirani, "An Introduction to the Bootstrap", Chapman &
       Hall, 1993 (chapter 16, hypothesis testing with the bootstrap).
    .. [2] P. Hall and S. R. Wilson, "Two Guidelines for Bootstrap Hypothesis Testing",
       Biometrics 47(2), 1991.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import ECE, Scores
    >>> from calibration_toolbox.stats import paired_bootstrap
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.uniform(size=5000)
    >>> outcome = rng.uniform(size=5000) < truth
    >>> calibrated = Scores(truth)
    >>> overconfident = Scores(0.5 + 1.4 * (truth - 0.5).clip(-0.35, 0.35))
    >>> result = paired_bootstrap(
    ...     ECE, calibrated, overconfident, outcome, bins=10, random_state=1
    ... )
    >>> round(result.difference, 4), round(result.pvalue, 4)
    (-0.0573, 0.001)
    >>> low, high = result.confidence_interval
    >>> bool(high < 0)  # A, the calibrated model, has the smaller ECE at the 95 % level
    True
    >>> same = paired_bootstrap(ECE, calibrated, calibrated, outcome, bins=10, random_state=1)
    >>> same.difference, tuple(same.confidence_interval), same.pvalue
    (0.0, (0.0, 0.0), 1.0)
    """
    metric = _check_metric(metric)
    n_resamples = _check_resamples(n_resamples, "n_resamples")
    confidence_level = check_confidence(confidence_level, "confidence_level")
    method = _check_method(method)
    rng = iv.check_random_state(random_state)
    _check_same_rows(prob_a, prob_b)
    labels = _class_indices(labels, metric_options)
    evaluated = _both_evaluators(
        metric, {"prob_a": prob_a, "prob_b": prob_b}, labels, sample_weight, metric_options
    )
    return _paired_resamples(evaluated, n_resamples, confidence_level, method, rng)


def _paired_from_cells(
    estimates: tuple[float, float],
    cells: tuple[EntryCells, EntryCells],
    n_rows: int,
    *,
    n_resamples: int,
    confidence_level: float,
    random_state: int | np.random.Generator | None,
    method: str = "percentile",
) -> PairedBootstrapResult:
    """:func:`paired_bootstrap` of a tabulated metric from both models' estimates and cells.

    For rows gathered elsewhere (``compare --stream``: the cells of each block, joined in
    row order; no sample weights): the same resamples as :func:`paired_bootstrap` of the
    same rows, so the same result to the last bit for the same ``random_state``.
    """
    n_resamples = _check_resamples(n_resamples, "n_resamples")
    confidence_level = check_confidence(confidence_level, "confidence_level")
    method = _check_method(method)
    rng = iv.check_random_state(random_state)
    evaluated = [
        (estimate, _TableSums(model_cells, n_rows, None))
        for estimate, model_cells in zip(estimates, cells, strict=True)
    ]
    return _paired_resamples(evaluated, n_resamples, confidence_level, method, rng)


def _paired_resamples(
    evaluated: list, n_resamples: int, confidence_level: float, method: str, rng
) -> PairedBootstrapResult:
    """The paired resamples of both models' ``(estimate, evaluator)``, and the result."""
    (estimate_a, evaluator_a), (estimate_b, evaluator_b) = evaluated
    # Both models' rows were checked against the labels: as many rows each.
    evaluators, weights = (evaluator_a, evaluator_b), evaluator_a.weights
    n_rows = evaluator_a.n_rows
    draws = _draws(rng, n_rows, n_resamples)
    values_a, values_b = _shared_resamples(evaluators, draws, n_rows, weights)
    difference, distribution = estimate_a - estimate_b, _read_only(values_a - values_b)
    jackknife = None
    if method == "BCa":
        weightings = _jackknife_weightings(n_rows, weights, rng)
        jackknife_a, jackknife_b = _paired_values(evaluators, weightings, n_rows, "from_weights")
        jackknife = jackknife_a - jackknife_b
    interval = _interval(method, distribution, difference, 1 - confidence_level, jackknife)
    missing = int(np.count_nonzero(np.isnan(distribution)))
    if missing:
        weightless = max(evaluator_a.weightless, evaluator_b.weightless)
        warn(_no_value(missing - weightless, weightless, n_resamples))
    standard_error = float(np.std(distribution, ddof=1)) if n_resamples > 1 else np.nan
    return PairedBootstrapResult(
        estimate_a,
        estimate_b,
        difference,
        interval,
        standard_error,
        _centred_pvalue(distribution, difference),
        distribution,
        _read_only(values_a),
        _read_only(values_b),
        method,
        confidence_level,
        n_resamples,
    )


_PAIRED_TESTS = ("t", "wilcoxon")


@dataclass(frozen=True)
class PairedScoreTestResult:
    """Result of :func:`paired_score_test`.

    Attributes
    ----------
    statistic : float
        Student's t of the mean score difference (``test='t'``), or the Wilcoxon
        signed-rank statistic (``test='wilcoxon'``, SciPy's: the smaller of the two rank
        sums).
    pvalue : float
        Two-sided p-value of "the models have the same expected score".
    mean_difference : float
        The (weighted) mean of ``score_a - score_b`` over the rows: negative when model A
        has the lower (better) score.
    standard_error : float
        Standard error of ``mean_difference``.
    confidence_interval : ConfidenceInterval
        Student's interval of the mean difference at ``confidence_level``,
        ``mean_difference -/+ t_{df, 1 - alpha/2} * standard_error`` (whichever the test).
    df : float
        Degrees of freedom of Student's t: the rows of positive weight minus 1.
    score_a, score_b : float
        Each model's mean score (the Brier score, the NLL) on the rows.
    score : str
        ``'brier'`` or ``'log'``.
    test : str
        ``'t'`` or ``'wilcoxon'``.
    confidence_level : float
        The level of the interval.
    """

    statistic: float
    pvalue: float
    mean_difference: float
    standard_error: float
    confidence_interval: ConfidenceInterval
    df: float
    score_a: float
    score_b: float
    score: str
    test: str
    confidence_level: float


def _score_differences(prob_a, prob_b, labels, score, options) -> tuple[NDArray, NDArray]:
    """Each model's per-row scores (checked as the metric checks them), model by model."""
    losses = []
    for model, prob in (("prob_a", prob_a), ("prob_b", prob_b)):
        try:
            losses.append(row_losses(prob, labels, score, **options))
        except (InputError, InputTypeError) as error:
            raise error.within("{model}: ", model=Name(model)) from None
    return losses[0], losses[1]


def _mean_and_error(differences: NDArray, weights: NDArray | None) -> tuple[float, float]:
    r"""The weighted mean of the differences and its standard error (rows of weight > 0).

    :math:`\bar d = \sum_i w_i d_i / \sum_i w_i`, :math:`\mathrm{se}^2 = \frac{n}{n - 1}
    \sum_i w_i^2 (d_i - \bar d)^2 / (\sum_i w_i)^2`: with unit weights :math:`s^2 / n`.
    """
    n_rows = len(differences)
    if weights is None:
        weights = np.ones(n_rows)
    mean = float(np.dot(weights, differences) / weights.sum())
    spread = np.dot(weights**2, (differences - mean) ** 2) / weights.sum() ** 2
    return mean, float(np.sqrt(spread * n_rows / (n_rows - 1)))


def _t_test(mean: float, error: float, df: int) -> tuple[float, float]:
    """Student's t and its two-sided p-value; differences all equal have no spread."""
    if error > 0:
        statistic = mean / error
        return statistic, float(2 * _scipy.special.stdtr(df, -abs(statistic)))
    if mean == 0:  # every difference 0: no evidence of any difference
        return 0.0, 1.0
    return float(np.copysign(np.inf, mean)), 0.0


def _wilcoxon_test(differences: NDArray) -> tuple[float, float]:
    """SciPy's signed-rank test (its defaults: zeros dropped, exact or normal p-value)."""
    if not np.any(differences):  # every difference 0: nothing to rank
        return 0.0, 1.0
    # scipy.stats costs the command line 0.7 s and 22 MB at start-up (see
    # tests/cli/test_cli.py): _scipy imports it here, when this test first asks for it.
    result = _scipy.stats.wilcoxon(differences)
    return float(result.statistic), float(result.pvalue)


def _kept_rows(losses_a: NDArray, losses_b: NDArray, weights: NDArray | None):
    """Both models' scores and the weights of the rows of positive weight, checked for a test."""
    if weights is not None:
        positive = weights > 0
        losses_a, losses_b, weights = losses_a[positive], losses_b[positive], weights[positive]
    if not (np.isfinite(losses_a).all() and np.isfinite(losses_b).all()):
        raise InputError(
            "{prob_a} or {prob_b} gives a row an infinite score (a label of probability "
            "0 under the log score with {eps}=0): the test needs finite scores; keep the "
            "default eps.",
            argument="eps",
        )
    if len(losses_a) < 2:
        raise InputError(
            "the paired test needs at least 2 rows of positive weight; got {count}.",
            argument="sample_weight",
            count=len(losses_a),
        )
    return losses_a, losses_b, weights


def paired_score_test(
    prob_a: PredictionsLike,
    prob_b: PredictionsLike,
    labels: ArrayLike,
    *,
    score: str = "brier",
    test: str = "t",
    confidence_level: float = 0.95,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    eps: float = 1e-15,
    classes: ArrayLike | None = None,
) -> PairedScoreTestResult:
    r"""Paired test of two models' scores on the same rows (Diebold-Mariano, independent rows).

    Each row i gets each model's score, the Brier term
    :math:`S_i = \sum_k (p_{ik} - 1[y_i = k])^2` or the log score
    :math:`S_i = -\log p_{i, y_i}` (the terms whose means are
    :func:`~calibration_toolbox.brier_score` and
    :func:`~calibration_toolbox.negative_log_likelihood`), and the test is of the
    differences :math:`d_i = S^A_i - S^B_i`.  With independent rows the Diebold-Mariano
    statistic (its variance without autocorrelation terms) is Student's paired t:

    .. math:: t = \frac{\bar d}{s_d / \sqrt n}, \qquad
              p = 2\, P(T_{n-1} \ge |t|),

    computed as ``scipy.stats.ttest_rel(score_a, score_b)`` computes it (the tests check
    it to 1e-12), with the t distribution of ``scipy.special.stdtr`` and ``stdtrit`` (the
    functions ``scipy.stats.t`` evaluates).  ``test='wilcoxon'`` runs
    ``scipy.stats.wilcoxon`` on the differences instead (its defaults: zero differences
    dropped, an exact p-value for fewer than 50 rows without ties or zeros, the normal
    approximation otherwise): a test of the median difference, robust to a few rows of
    huge log loss.

    **Weights.** With ``sample_weight`` the mean is the weighted mean
    :math:`\bar d = \sum_i w_i d_i / \sum_i w_i` (that of duplicated rows for integer
    weights), and its standard error the linearisation (sandwich) estimator of a weighted
    mean of n independent rows of positive weight,

    .. math:: \mathrm{se}^2 = \frac{n}{n-1} \frac{\sum_i w_i^2 (d_i - \bar d)^2}{(\sum_i w_i)^2},

    with ``n - 1`` degrees of freedom: the rows are the independent units, a weight scales
    a row (``2 * w`` gives the result of ``w``; a row of weight 2 is not two independent
    rows: repeat it for that), as for the other tests of this module.  With unit weights
    it is :math:`s_d^2 / n`, the t test above.  The signed-rank test has no weighted form
    here (ranks of weighted rows are not SciPy's test): ``test='wilcoxon'`` refuses
    weights.

    Parameters
    ----------
    prob_a, prob_b : array-like, shape (N, K) or (N,), or Scores
        The predictions of the two models on the same rows, as
        :func:`~calibration_toolbox.brier_score` takes them (logits with ``logits=True``).
    labels : array-like of int, shape (N,)
        The true classes of the rows (0/1 targets with ``Scores``).
    score : {'brier', 'log'}, default 'brier'
        The scoring rule.
    test : {'t', 'wilcoxon'}, default 't'
        Student's paired t test, or Wilcoxon's signed-rank test.
    confidence_level : float in (0, 1), default 0.95
        Level of the interval of the mean difference.
    logits : bool, default False
        Both models' ``prob`` hold logits; the log score is then exact (log-softmax).
    sample_weight : array-like, shape (N,), optional
        Non-negative row weights (see above); not with ``test='wilcoxon'``.
    renormalize : bool, default False
        Divide each row of probabilities by its sum first.
    eps : float, default 1e-15
        Lower clip of the label's probability under the log score, as for the NLL.
    classes : array-like, shape (K,), optional
        Class names in column order; ``labels`` are then names.

    Returns
    -------
    PairedScoreTestResult
        ``statistic``, ``pvalue``, ``mean_difference``, ``standard_error``,
        ``confidence_interval``, ``df``, ``score_a``, ``score_b``, ``score``, ``test`` and
        ``confidence_level``.  Differences that are all 0 (a model against itself) give
        the statistic 0 and p = 1 (SciPy's t test returns NaN there); all equal and
        nonzero, an infinite t and p = 0.

    Raises
    ------
    ValueError
        For invalid input, models of different rows, weights with ``test='wilcoxon'``,
        fewer than 2 rows of positive weight, or an infinite score (``eps=0``).

    See Also
    --------
    paired_bootstrap : the paired interval of any metric's difference (ECE, ...).

    References
    ----------
    .. [1] F. X. Diebold and R. S. Mariano, "Comparing Predictive Accuracy", Journal of
       Business & Economic Statistics 13(3), 1995.
    .. [2] F. Wilcoxon, "Individual Comparisons by Ranking Methods", Biometrics Bulletin
       1(6), 1945.
    .. [3] T. Lumley, "Complex Surveys: A Guide to Analysis Using R", Wiley, 2010
       (the linearisation variance of a weighted mean).

    Examples
    --------
    >>> from calibration_toolbox import Scores
    >>> from calibration_toolbox.stats import paired_score_test
    >>> a, b = Scores([0.9, 0.8, 0.3, 0.2]), Scores([0.6, 0.7, 0.5, 0.4])
    >>> result = paired_score_test(a, b, [1, 1, 0, 0])
    >>> round(result.mean_difference, 4), round(result.statistic, 4), round(result.pvalue, 4)
    (-0.12, -4.8323, 0.0169)
    """
    score = iv.choice(*SCORING_RULES)(score, "score")
    test = iv.choice(*_PAIRED_TESTS)(test, "test")
    confidence_level = check_confidence(confidence_level, "confidence_level")
    eps = iv.check_fraction(eps, "eps")
    _check_same_rows(prob_a, prob_b)
    if classes is not None:
        labels = iv.check_class_names(labels, classes)
    options = {"logits": logits, "renormalize": renormalize, "eps": eps}
    losses_a, losses_b = _score_differences(prob_a, prob_b, labels, score, options)
    weights = iv.check_sample_weight(sample_weight, len(losses_a), scale_free=True)
    if weights is not None and test == "wilcoxon":
        raise InputError(
            "{sample_weight} cannot weight the signed-rank test (ranks of weighted rows are "
            "no test of SciPy's): use test='t', or repeat the rows.",
            argument="sample_weight",
        )
    return _paired_losses_test(losses_a, losses_b, weights, score, test, confidence_level)


def _paired_losses_test(
    losses_a: NDArray,
    losses_b: NDArray,
    weights: NDArray | None,
    score: str,
    test: str,
    confidence_level: float,
) -> PairedScoreTestResult:
    """:func:`paired_score_test` of both models' per-row scores (checked arguments).

    For scores gathered elsewhere (``compare --stream``: each block's rows scored by
    ``row_losses``, joined in row order): the same test, to the last bit.
    """
    losses_a, losses_b, weights = _kept_rows(losses_a, losses_b, weights)
    differences = losses_a - losses_b
    mean, error = _mean_and_error(differences, weights)
    df = len(differences) - 1
    if test == "t":
        statistic, pvalue = _t_test(mean, error, df)
    else:
        statistic, pvalue = _wilcoxon_test(differences)
    half = float(_scipy.special.stdtrit(df, 0.5 + confidence_level / 2)) * error
    return PairedScoreTestResult(
        statistic,
        pvalue,
        mean,
        error,
        ConfidenceInterval(mean - half, mean + half),
        float(df),
        _weighted_mean(losses_a, weights),
        _weighted_mean(losses_b, weights),
        score,
        test,
        confidence_level,
    )


# -- consistency resampling -------------------------------------------------------------------
def _label_sampler(
    prob: PredictionsLike, labels: ArrayLike, options: dict
) -> Callable[[np.random.Generator], NDArray]:
    """Draw labels from the predicted distributions, one uniform number per row.

    A row's label is the first class whose cumulative probability exceeds ``u * total``
    (inverse-CDF sampling; a class of probability 0 is never drawn); with ``Scores`` the
    target is 1 where ``u < s``.
    """
    checked = iv.check_predictions(
        prob,
        labels,
        logits=options.get("logits", False),
        renormalize=options.get("renormalize", False),
    )
    if checked.pairs is not None:
        scores = checked.pairs.scores.astype(np.float64)
        return lambda rng: (rng.random(len(scores)) < scores).astype(np.intp)
    cumulative = np.cumsum(checked.prob, axis=1, dtype=np.float64)
    last = cumulative.shape[1] - 1

    def draw(rng: np.random.Generator) -> NDArray:
        thresholds = rng.random(len(cumulative)) * cumulative[:, -1]
        drawn = np.count_nonzero(cumulative <= thresholds[:, None], axis=1)
        return np.minimum(drawn, last)

    return draw


def consistency_test(
    metric: Callable[..., float],
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    n_resamples: int = 1000,
    random_state: int | np.random.Generator | None = None,
    **metric_options: object,
) -> ConsistencyTestResult:
    r"""Consistency-resampling test of "the model is calibrated" (Bröcker & Smith 2007).

    Under the null hypothesis each label is drawn from the row's predicted distribution.
    The test redraws all the labels that way ``n_resamples`` times (Vaicenavicius et al.
    2019's consistency resampling, with the predictions kept as they are), computes the
    metric on each redrawn set, and compares the observed value with that null
    distribution:

    .. math:: p = \frac{1 + \#\{r : \theta^{(r)}_0 \ge \hat\theta\}}{R + 1},

    the ``+1`` correction making the p-value valid (never 0) for any R.  A label is drawn
    by inverse-CDF sampling: the first class whose cumulative probability exceeds ``u``
    times the row total, ``u`` uniform on [0, 1); with ``Scores`` (one score per row
    against a 0/1 target) the target is 1 with probability ``s``.  ``logits`` and
    ``renormalize`` in ``metric_options`` apply to the drawing as to the metric.  The
    metric is called once per redrawn set.

    Not to be confused with a bootstrap interval (:func:`bootstrap`): this tests whether
    the error is compatible with a perfectly calibrated model of the same predictions, as
    a binned error is positive even then.

    Parameters
    ----------
    metric : callable
        A metric of the library taking ``(prob, labels, ...)``, larger meaning worse.
    prob, labels
        The predictions and observed labels, as the metric takes them.
    n_resamples : int, default 1000
        Number of redrawn label sets R, at least 1.
    random_state : None, int or numpy.random.Generator
        Seed of the redrawing; the same seed gives the same result.
    **metric_options
        Passed to the metric on every call (``bins=``, ``logits=``, ``sample_weight=``...);
        ``classes=`` (labels given as class names) is applied once, to the observed labels.

    Returns
    -------
    ConsistencyTestResult
        ``statistic`` (the observed metric), ``pvalue`` and ``null_distribution``.

    References
    ----------
    .. [1] J. Bröcker and L. A. Smith, "Increasing the Reliability of Reliability
       Diagrams", Weather and Forecasting 22(3), 2007.
    .. [2] J. Vaicenavicius, D. Widmann, C. Andersson, F. Lindsten, J. Roll and T. B.
       Schön, "Evaluating model calibration in classification", AISTATS, 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import ECE, Scores
    >>> from calibration_toolbox.stats import consistency_test
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.uniform(size=1000)
    >>> calibrated = rng.uniform(size=1000) < scores
    >>> result = consistency_test(ECE, Scores(scores), calibrated, bins=10, random_state=1)
    >>> bool(result.pvalue > 0.05)
    True
    >>> overconfident = rng.uniform(size=1000) < scores**2
    >>> consistency_test(ECE, Scores(scores), overconfident, n_resamples=99).pvalue
    0.01
    """
    metric = _check_metric(metric)
    n_resamples = _check_resamples(n_resamples, "n_resamples")
    rng = iv.check_random_state(random_state)
    labels = _class_indices(labels, metric_options)
    statistic = _as_number(metric(prob, labels, **metric_options))
    draw = _label_sampler(prob, labels, metric_options)
    null = np.array(
        [_as_number(metric(prob, draw(rng), **metric_options)) for _ in range(n_resamples)]
    )
    pvalue = (1 + np.count_nonzero(null >= statistic)) / (n_resamples + 1)
    return ConsistencyTestResult(statistic, float(pvalue), _read_only(null))


# -- CORP: the MCB test and the consistency band ---------------------------------------------
#: Above this many rows (of positive weight) ``band='auto'`` takes an asymptotic band.
CORP_ASYMPTOTIC_ROWS = 100_000
#: Forecast values at which a band is evaluated, at most (evenly spaced distinct values).
_CORP_BAND_POINTS = 1000
#: The asymptotic bands by the kind of forecasts they assume.
_ASYMPTOTIC_BANDS = {"continuous": continuous_band, "discrete": discrete_band}
_CORP_BANDS = ("auto", "resampling", *_ASYMPTOTIC_BANDS)
_check_alpha = iv.number_between(0.0, 1.0)


def _corp_null(prob, labels, score, n_resamples, random_state, logits, sample_weight):
    """The validated pooled forecasts, the scoring rule, the checked count and generator."""
    rule = iv.choice(*SCORING_RULES)(score, "score")
    n_resamples = _check_resamples(n_resamples, "n_resamples")
    rng = iv.check_random_state(random_state)
    pairs = iv.top_label_pairs(
        prob, labels, logits, sample_weight, False, scale_free=True, weightless=True
    )
    pooled = pooled_forecasts(*pairs)
    return pooled, rule, n_resamples, rng


@with_reference
def corp_test(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    score: str = "brier",
    n_resamples: int = 1000,
    random_state: int | np.random.Generator | None = None,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
) -> ConsistencyTestResult:
    r"""Test of calibration by CORP's miscalibration (Dimitriadis, Gneiting & Jordan 2021).

    The statistic is the MCB of :func:`~calibration_toolbox.corp_decomposition` (the top
    label's confidence against correctness, or ``Scores``).  Under the hypothesis of
    calibration each outcome is Bernoulli(forecast): the outcomes are redrawn that way
    ``n_resamples`` times, the forecasts kept, the PAV fit and the MCB recomputed, and

    .. math:: p = \frac{1 + \#\{r : \mathrm{MCB}^{(r)} \ge \widehat{\mathrm{MCB}}\}}{R + 1},

    the Monte Carlo p-value with the ``+1`` correction (valid, never 0, for any R).  The
    draws are vectorised over the resamples (a value held by n unweighted rows gets one
    Binomial(n, value) event count); the PAV refit is one ``isotonic_regression`` call
    per resample.  MCB is itself biased upward on small samples: the null distribution
    holds that bias too, so the test is exact in level whatever N.  A forecast of 0 on an
    event (1 on a non-event) gives an infinite MCB under the log score, and p = 1/(R+1).

    Parameters
    ----------
    prob, labels
        As :func:`~calibration_toolbox.corp_decomposition` takes them.
    score : {'brier', 'log'}, default 'brier'
        The scoring rule of the MCB.
    n_resamples : int, default 1000
        Number of redrawn outcome sets R, at least 1.
    random_state : None, int or numpy.random.Generator
        Seed of the redrawing.
    logits : bool, default False
        ``prob`` holds logits (log-odds for ``Scores``).
    sample_weight : array-like, shape (N,), optional
        Row weights (a redrawn event adds its row's weight).

    Returns
    -------
    ConsistencyTestResult
        ``statistic`` (the observed MCB), ``pvalue`` and ``null_distribution``.

    References
    ----------
    {corp_reference}

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import Scores
    >>> from calibration_toolbox.stats import corp_test
    >>> rng = np.random.default_rng(0)
    >>> forecasts = rng.uniform(size=2000)
    >>> calibrated = rng.uniform(size=2000) < forecasts
    >>> result = corp_test(Scores(forecasts), calibrated, n_resamples=199, random_state=1)
    >>> bool(result.pvalue > 0.05)
    True
    >>> overconfident = rng.uniform(size=2000) < 0.5 + 0.5 * (forecasts - 0.5)
    >>> corp_test(Scores(forecasts), overconfident, n_resamples=99, random_state=1).pvalue
    0.01
    """
    pooled, rule, n_resamples, rng = _corp_null(
        prob, labels, score, n_resamples, random_state, logits, sample_weight
    )
    statistic = corp_terms(pooled, rule).miscalibration
    _, null = null_refits(pooled, rule, n_resamples, rng, np.empty(0, dtype=np.intp))
    pvalue = (1 + np.count_nonzero(null >= statistic)) / (n_resamples + 1)
    return ConsistencyTestResult(statistic, float(pvalue), _read_only(null))


@dataclass(frozen=True)
class CORPReliability:
    """The CORP reliability curve, its consistency band and decomposition (the diagram's data).

    Attributes
    ----------
    forecasts : ndarray
        The distinct forecast values, ascending.
    recalibrated : ndarray
        The PAV fit at each (a non-decreasing step function; its blocks are the bins).
    weights : ndarray
        The weighted count of rows at each distinct value.
    decomposition : CORPDecomposition
        Score, MCB, DSC and UNC (:func:`~calibration_toolbox.corp_decomposition`).
    band_forecasts, band_low, band_high : ndarray
        The consistency band: where the PAV fit of a calibrated model's outcomes falls with
        probability ``1 - alpha`` at each of these forecasts (at most 1,000 of the distinct
        values, evenly spaced in rank).
    band : str
        ``'resampling'``, ``'continuous'`` or ``'discrete'`` (the asymptotics).
    alpha : float
        1 minus the band's pointwise level.
    pvalue : float or None
        :func:`corp_test`'s p-value from the same resamples; None with the asymptotic band.
    score : str
        The scoring rule of ``decomposition`` (``'brier'`` or ``'log'``): the ``score``
        argument of :func:`corp_reliability`, kept so that a diagram names the rule of the
        numbers it prints.
    """

    forecasts: NDArray
    recalibrated: NDArray
    weights: NDArray
    decomposition: CORPDecomposition
    band_forecasts: NDArray
    band_low: NDArray
    band_high: NDArray
    band: str
    alpha: float
    pvalue: float | None
    score: str


def _corp_band(pooled: PooledForecasts) -> str:
    """The band of ``band='auto'``: resampling up to ``CORP_ASYMPTOTIC_ROWS`` rows.

    Above, the asymptotics of the forecasts' kind: discrete when the rows number at least
    8 times the square of the distinct values (``detect_regionmethod`` of the authors'
    ``reliabilitydiag``), continuous otherwise.
    """
    rows = pooled.weights.sum() if pooled.row_values is None else pooled.row_values.size
    if rows <= CORP_ASYMPTOTIC_ROWS:
        return "resampling"
    return "discrete" if rows >= 8 * pooled.values.size**2 else "continuous"


@with_reference
def corp_reliability(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    score: str = "brier",
    alpha: float = 0.1,
    band: str = "auto",
    n_resamples: int = 100,
    random_state: int | np.random.Generator | None = None,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
) -> CORPReliability:
    r"""CORP reliability curve with the consistency band (Dimitriadis, Gneiting & Jordan 2021).

    The curve is the PAV fit of :func:`~calibration_toolbox.corp_decomposition` against the
    forecasts; its bins are the PAV blocks, chosen by the data.  The consistency band is
    positioned around the diagonal: under calibration (outcomes redrawn as
    Bernoulli(forecast), forecasts kept), the pointwise ``alpha / 2`` and ``1 - alpha / 2``
    quantiles of the refitted PAV curves (``band='resampling'``, the quantiles of NumPy's
    default linear rule over ``n_resamples`` refits); a curve that leaves the band signals
    miscalibration there.  The asymptotic bands take the limit law of the isotonic fit
    instead: ``band='continuous'``,
    :math:`x \pm q_{1-\alpha/2} (4 x (1 - x) / (n\, g(x)))^{1/3}` with Chernoff's quantile
    q and the estimated density g of the forecasts (Gaussian kernel, reflected at 0 and 1),
    for continuous forecasts; ``band='discrete'``,
    :math:`x \pm z_{1-\alpha/2} \sqrt{x (1 - x) / n_x}` at a value x held by
    :math:`n_x` rows, for few distinct values each held by many rows.  ``'auto'`` resamples
    up to ``CORP_ASYMPTOTIC_ROWS`` = 100,000 rows of positive weight (the library's
    threshold: at 100,000 rows the resampling band takes about 0.5 s, and the resampling
    and continuous bands' widths agree within 20 % at 20,000); above, it takes the
    authors' rule of their R package ``reliabilitydiag``: discrete when the rows number
    at least 8 times the square of the distinct values, continuous otherwise.

    Parameters
    ----------
    prob, labels, score, logits, sample_weight
        As :func:`corp_test`.
    alpha : float, default 0.1
        The band has pointwise level ``1 - alpha`` (the paper's figures: 90 %).
    band : {'auto', 'resampling', 'continuous', 'discrete'}, default 'auto'
        How the band is computed.
    n_resamples : int, default 100
        Resamples of the resampling band (and of its p-value).
    random_state : None, int or numpy.random.Generator
        Seed of the resampling.

    Returns
    -------
    CORPReliability

    References
    ----------
    {corp_reference}
    .. [2] F. T. Wright, "The asymptotic behavior of monotone regression estimates", Annals
       of Statistics 9(2), 1981.
    """
    pooled, rule, n_resamples, rng = _corp_null(
        prob, labels, score, n_resamples, random_state, logits, sample_weight
    )
    alpha = _check_alpha(alpha, "alpha")
    band = iv.choice(*_CORP_BANDS)(band, "band")
    if band == "auto":
        band = _corp_band(pooled)
    fit = pav_fit(pooled)
    decomposition = corp_terms(pooled, rule, fit)
    n_values = pooled.values.size
    at = np.unique(np.linspace(0, n_values - 1, min(n_values, _CORP_BAND_POINTS)).round())
    at = at.astype(np.intp)
    pvalue = None
    if band in _ASYMPTOTIC_BANDS:
        low, high = _ASYMPTOTIC_BANDS[band](pooled, alpha, at)
    else:
        fits, null = null_refits(pooled, rule, n_resamples, rng, at)
        low, high = np.quantile(fits, [alpha / 2, 1 - alpha / 2], axis=0)
        statistic = decomposition.miscalibration
        pvalue = float((1 + np.count_nonzero(null >= statistic)) / (n_resamples + 1))
    return CORPReliability(
        pooled.values,
        fit,
        pooled.weights,
        decomposition,
        pooled.values[at],
        low,
        high,
        band,
        alpha,
        pvalue,
        rule,
    )


# -- tests of calibration with p-values: Tygert's cumulative tests, Spiegelhalter's Z ------
#: p-values are floored at machine epsilon (as mcgrad reports them): the series below stay
#: exact further out, but the Brownian limit behind them is far less accurate than that in
#: its extreme tail, so a smaller number would promise digits it does not have.
_EPSILON = float(np.finfo(np.float64).eps)
#: Each distribution is a series that converges fast below its switch (a theta-function
#: series in exp(-c / x**2)) and one above it (the method of images, in normal tails).
#: Both agree to 1e-15 at the switch, where 8 and 12 terms leave under 1e-40 out.
_MAX_ABS_SWITCH = 1.0
_RANGE_SWITCH = 2.0
_FOURIER_TERMS = np.arange(8)
_IMAGE_TERMS = np.arange(1, 13)


@dataclass(frozen=True)
class CalibrationTestResult:
    r"""Result of :func:`ks_test`, :func:`kuiper_test` and :func:`spiegelhalter_test`.

    Attributes
    ----------
    statistic : float
        The test's measure on its own scale: the largest absolute value (KS) or the range
        (Kuiper) of the cumulative walk, :func:`~calibration_toolbox.KSCE` and
        :func:`~calibration_toolbox.KuiperCE`; for Spiegelhalter the Brier score minus its
        expectation under calibration, :math:`\sum_i w_i (y_i - s_i)(1 - 2 s_i) / \sum_i w_i`.
    sigma : float
        The standard deviation that scales it, under the hypothesis of calibration.
    scaled_statistic : float
        ``statistic / sigma``: Tygert's scaled KS or Kuiper statistic, Spiegelhalter's Z.
    pvalue : float
        The p-value of "the model is calibrated", at least machine epsilon (2.2e-16).
    """

    statistic: float
    sigma: float
    scaled_statistic: float
    pvalue: float


def _max_abs_brownian_sf(x: float) -> float:
    r""":math:`P(\max_{0 \le t \le 1} |B(t)| \ge x)` for a standard Brownian motion B.

    Below 1 the theta-function series :math:`1 - \frac4\pi \sum_{k \ge 0}
    \frac{(-1)^k}{2k+1} e^{-(2k+1)^2 \pi^2 / (8 x^2)}`; from 1 on, the method of images
    :math:`4 \sum_{k \ge 1} (-1)^{k+1} \bar\Phi((2k-1) x)` (:math:`\bar\Phi` the normal
    tail, ``scipy.special.ndtr(-z)``), accurate to the last digits far into the tail.
    Not the Kolmogorov distribution (``scipy.stats.kstwobign``), which is that of the
    largest absolute value of a Brownian *bridge*.
    """
    if x <= 0:
        return 1.0
    if x < _MAX_ABS_SWITCH:
        odd = 2 * _FOURIER_TERMS + 1
        signs = (-1.0) ** _FOURIER_TERMS
        cdf = 4 / np.pi * np.sum(signs / odd * np.exp(-((odd * np.pi / x) ** 2) / 8))
        return float(1 - cdf)
    signs = (-1.0) ** (_IMAGE_TERMS + 1)
    return float(4 * np.sum(signs * _scipy.special.ndtr(-(2 * _IMAGE_TERMS - 1) * x)))


def _brownian_range_sf(x: float) -> float:
    r""":math:`P(\max_{t} B(t) - \min_{t} B(t) \ge x)` over :math:`0 \le t \le 1` (Feller 1951).

    Below 2 the theta-function series :math:`1 - \sum_{k \ge 0} \bigl(\frac{8}{x^2} +
    \frac{2}{(k + 1/2)^2 \pi^2}\bigr) e^{-2 (k + 1/2)^2 \pi^2 / x^2}` (the series Tygert
    2022 and mcgrad evaluate); from 2 on, the integral of Feller's density
    :math:`8 \sum_{k \ge 1} (-1)^{k-1} k^2 \varphi(k x)`, that is
    :math:`8 \sum_{k \ge 1} (-1)^{k-1} k \bar\Phi(k x)`.
    """
    if x <= 0:
        return 1.0
    if x < _RANGE_SWITCH:
        half = _FOURIER_TERMS + 0.5
        weights = 8 / x**2 + 2 / (half * np.pi) ** 2
        return float(1 - np.sum(weights * np.exp(-2 * (half * np.pi / x) ** 2)))
    signs = (-1.0) ** (_IMAGE_TERMS - 1)
    return float(8 * np.sum(signs * _IMAGE_TERMS * _scipy.special.ndtr(-_IMAGE_TERMS * x)))


def _two_sided_normal_sf(z: float) -> float:
    r""":math:`P(|Z| \ge |z|) = 2 \bar\Phi(|z|)` for a standard normal Z."""
    return 2 * float(_scipy.special.ndtr(-abs(z)))


def _weighted_mean(values: NDArray, weights: NDArray | None) -> float:
    """``sum(w * values) / sum(w)``, the plain mean without weights."""
    if weights is None:
        return float(np.mean(values))
    return float(np.dot(weights, values) / weights.sum())


def _null_sd(variances: NDArray, weights: NDArray | None) -> float:
    """``sqrt(sum(w**2 * variances)) / sum(w)``: the sd of a weighted mean of independent terms."""
    if weights is None:
        return float(np.sqrt(np.sum(variances)) / len(variances))
    return float(np.sqrt(np.dot(weights**2, variances)) / weights.sum())


def _tested(
    statistic: float, sigma: float, sf: Callable[[float], float], degenerate: str
) -> CalibrationTestResult:
    """The result of a test whose statistic / sigma has survival function ``sf``."""
    if not sigma > 0:
        raise InputError(
            "{prob} gives the test a variance of 0 under calibration (every score of "
            "positive weight is {degenerate}): the test is undefined.",
            argument="prob",
            degenerate=degenerate,
        )
    scaled = statistic / sigma
    return CalibrationTestResult(statistic, sigma, scaled, max(sf(scaled), _EPSILON))


def _cumulative_test(prob, labels, logits, sample_weight, renormalize, kuiper: bool):
    """KS (``kuiper=False``) or Kuiper test of the top-label walk."""
    scores, targets, weights = iv.top_label_pairs(
        prob, labels, logits, sample_weight, renormalize, scale_free=True
    )
    high, low = walk_extremes(scores, targets, weights)
    scores = scores.astype(np.float64, copy=False)
    sigma = _null_sd(scores * (1 - scores), weights)
    if kuiper:
        return _tested(high - low, sigma, _brownian_range_sf, "0 or 1")
    return _tested(max(high, -low), sigma, _max_abs_brownian_sf, "0 or 1")


_TEST_PARAMETERS = """\
    prob : array-like, shape (N, K), or Scores
        Predicted probabilities (rows sum to 1), logits with ``logits=True``: the test is
        of the top label (confidence against correct).  ``Scores(s)``: one score per row
        against 0/1 ``labels`` (for a binary classifier, P(y = 1) against y).
    labels : array-like of int, shape (N,)
        True classes in ``[0, K)``; 0/1 targets with ``Scores``.
    logits : bool, default False
        ``prob`` holds logits; the softmax is applied first.  Never guessed.
    sample_weight : array-like, shape (N,), optional
        Non-negative weights, only their ratios count (``2 * w`` gives the result of
        ``w``).  They weight each row's term and its variance as Tygert's weighted
        sampling does: the statistic is that of duplicated rows for integer weights, its
        sigma is not (a row of weight 2 is one Bernoulli draw counted twice, of variance
        :math:`4 s (1 - s)`, not two draws).
    renormalize : bool, default False
        Divide each row of ``prob`` by its sum first.  Not with ``logits=True``.
    classes : array-like of str or numbers, shape (K,), optional
        Class names in the column order of ``prob``; ``labels`` are then names.

    Returns
    -------
    CalibrationTestResult
        ``statistic``, ``sigma``, ``scaled_statistic`` and ``pvalue``.

    Raises
    ------
    ValueError
        For invalid input (as the metrics), or when every score (of positive weight) is 0
        or 1: sigma is then 0 and the test undefined.
"""

_CUMULATIVE_NOTES = r"""
    Sort the n (score, target) pairs by score and walk from the origin :math:`h_0 = 0`:

    .. math:: h_j = \frac{\sum_{i \le j} w_{(i)} (y_{(i)} - s_{(i)})}{\sum_i w_i}, \qquad
              \sigma = \frac{\sqrt{\sum_i w_i^2 s_i (1 - s_i)}}{\sum_i w_i}

    (unit weights: :math:`\sigma = \sqrt{\sum_i s_i (1 - s_i)} / n`, the standard deviation
    of :math:`h_n` under calibration).  Under calibration :math:`h / \sigma`, with time
    the accumulated variance, tends to a standard Brownian motion on [0, 1] (Arrieta-Ibarra,
    Gujral, Tannen, Tygert and Xu 2022), which gives the p-value.  It is asymptotic: with
    few rows, or with most of the variance in a few rows, it is approximate.  The walk is
    that of :func:`~calibration_toolbox.KSCE` and :func:`~calibration_toolbox.KuiperCE`,
    read at the last row of each run of tied scores, so the order of tied rows cannot
    change the result; the maximum over these points is at most that over all the rows,
    so ties make the p-value larger, never smaller.

    Peers: mcgrad 0.1.5's ``ecce_sigma`` / ``ecce_pvalue`` are this Kuiper test (same
    walk, origin and weighted sigma; where scores are tied its walk depends on the sort's
    order of the tied rows).  It reports machine epsilon from a scaled statistic of
    8.267 on, where this test computes the tail (5.4e-16 there).  MAPIE 1.6.0's
    ``kolmogorov_smirnov_*`` and ``kuiper_*`` multiply each score by
    :math:`1 + 10^{-8} \varepsilon_i` (:math:`\varepsilon_i` normal, seed 1) before
    walking and subtracting, and start the walk at :math:`h_1`, without the origin: its
    Kuiper range misses 0 when the walk keeps one sign; it has no weights.
"""

_test_docstring = with_fragments(
    {"{parameters}": _TEST_PARAMETERS, "{cumulative}": _CUMULATIVE_NOTES}
)


@iv.accepts_classes
@_test_docstring
def ks_test(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> CalibrationTestResult:
    r"""Kolmogorov-Smirnov test of calibration (Tygert's scaled ECCE-MAD), with its p-value.

    The statistic is the largest absolute value of the walk, :math:`\max_j |h_j|`
    (:func:`~calibration_toolbox.KSCE` of the top label), its p-value that of the largest
    absolute value of a standard Brownian motion on [0, 1] (not of a Brownian bridge, as
    the two-sample KS test):

    .. math:: p = P\Bigl(\max_{0 \le t \le 1} |B(t)| \ge x\Bigr)
              = 4 \sum_{k \ge 1} (-1)^{k+1} \bar\Phi\bigl((2k - 1) x\bigr), \qquad
              x = \frac{\max_j |h_j|}{\sigma}.
    {cumulative}

    Parameters
    ----------
    {parameters}

    See Also
    --------
    kuiper_test : the range of the same walk.
    spiegelhalter_test : a test of the Brier score.

    References
    ----------
    .. [1] I. Arrieta-Ibarra, P. Gujral, J. Tannen, M. Tygert and C. Xu, "Metrics of
       Calibration for Probabilistic Predictions", Journal of Machine Learning Research,
       23(351), 2022.
    .. [2] M. Tygert, "Calibration of P-values for calibration and for deviation of a
       subpopulation from the full population", arXiv:2202.00100, 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from calibration_toolbox import Scores
    >>> from calibration_toolbox.stats import ks_test
    >>> rng = np.random.default_rng(0)
    >>> scores = rng.uniform(size=10_000)
    >>> calibrated = rng.uniform(size=10_000) < scores
    >>> bool(ks_test(Scores(scores), calibrated).pvalue > 0.05)
    True
    >>> overconfident = rng.uniform(size=10_000) < 0.5 + (scores - 0.5) / 2
    >>> result = ks_test(Scores(scores), overconfident)
    >>> bool(result.pvalue < 1e-6), bool(result.scaled_statistic > 5)
    (True, True)
    """
    return _cumulative_test(prob, labels, logits, sample_weight, renormalize, kuiper=False)


@iv.accepts_classes
@_test_docstring
def kuiper_test(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> CalibrationTestResult:
    r"""Kuiper test of calibration (Tygert's scaled ECCE-R), with its p-value.

    The statistic is the range of the walk, origin included, :math:`\max_j h_j - \min_j h_j`
    (:func:`~calibration_toolbox.KuiperCE` of the top label), its p-value that of the range
    of a standard Brownian motion on [0, 1] (Feller 1951):

    .. math:: p = P\Bigl(\max_t B(t) - \min_t B(t) \ge x\Bigr)
              = 8 \sum_{k \ge 1} (-1)^{k-1} k \, \bar\Phi(k x), \qquad
              x = \frac{\max_j h_j - \min_j h_j}{\sigma}.
    {cumulative}

    Parameters
    ----------
    {parameters}

    See Also
    --------
    ks_test : the largest absolute value of the same walk.

    References
    ----------
    .. [1] I. Arrieta-Ibarra, P. Gujral, J. Tannen, M. Tygert and C. Xu, "Metrics of
       Calibration for Probabilistic Predictions", Journal of Machine Learning Research,
       23(351), 2022.
    .. [2] W. Feller, "The Asymptotic Distribution of the Range of Sums of Independent
       Random Variables", Annals of Mathematical Statistics 22(3), 1951.
    .. [3] M. Tygert, "Calibration of P-values for calibration and for deviation of a
       subpopulation from the full population", arXiv:2202.00100, 2022.

    Examples
    --------
    >>> from calibration_toolbox import Scores
    >>> from calibration_toolbox.stats import kuiper_test
    >>> result = kuiper_test(Scores([0.2, 0.4, 0.6, 0.8]), [0, 1, 0, 1])
    >>> round(result.statistic, 6), round(result.sigma, 6)
    (0.15, 0.223607)
    >>> round(result.pvalue, 4)
    0.9997
    """
    return _cumulative_test(prob, labels, logits, sample_weight, renormalize, kuiper=True)


@iv.accepts_classes
@with_fragments({"{parameters}": _TEST_PARAMETERS})
def spiegelhalter_test(
    prob: PredictionsLike,
    labels: ArrayLike,
    *,
    logits: bool = False,
    sample_weight: ArrayLike | None = None,
    renormalize: bool = False,
    classes: ArrayLike | None = None,
) -> CalibrationTestResult:
    r"""Spiegelhalter's Z test of calibration (1986), two-sided, with its p-value.

    The Brier score of the (score, target) pairs minus its expectation under calibration,
    scaled by its standard deviation under calibration:

    .. math:: Z = \frac{\sum_i w_i (y_i - s_i)(1 - 2 s_i)}
                       {\sqrt{\sum_i w_i^2 (1 - 2 s_i)^2 s_i (1 - s_i)}}, \qquad
              p = 2 \bar\Phi(|Z|),

    as :math:`(y - s)^2 - s (1 - s) = (y - s)(1 - 2 s)`.  ``statistic`` is the numerator
    over :math:`\sum_i w_i`, ``sigma`` the denominator over it, ``scaled_statistic`` Z.
    The normal tail is ``scipy.special.ndtr(-z)``, as ``scipy.stats.norm.sf`` computes it.
    Z is positive when the Brier score is larger than a calibrated model's; it is blind to
    miscalibration that leaves the Brier score at its expectation (a model of scores 1/2
    only: sigma is 0 and the test refused).

    MAPIE 1.6.0's ``spiegelhalter_p_value`` is one-sided, :math:`1 - \Phi(Z)`; its
    ``spiegelhalter_statistic`` is Z (no weights).

    Parameters
    ----------
    {parameters}

    See Also
    --------
    ks_test, kuiper_test : tests of the cumulative walk.

    References
    ----------
    .. [1] D. J. Spiegelhalter, "Probabilistic prediction in patient management and
       clinical trials", Statistics in Medicine 5(5), 1986.

    Examples
    --------
    >>> from calibration_toolbox import Scores
    >>> from calibration_toolbox.stats import spiegelhalter_test
    >>> result = spiegelhalter_test(Scores([0.1, 0.9, 0.21, 0.9, 0.5]), [0, 1, 0, 1, 0])
    >>> round(result.scaled_statistic, 3), round(result.pvalue, 3)
    (-0.757, 0.449)
    """
    scores, targets, weights = iv.top_label_pairs(
        prob, labels, logits, sample_weight, renormalize, scale_free=True
    )
    scores = scores.astype(np.float64, copy=False)
    slopes = 1 - 2 * scores
    statistic = _weighted_mean((targets - scores) * slopes, weights)
    sigma = _null_sd(slopes**2 * scores * (1 - scores), weights)
    return _tested(statistic, sigma, _two_sided_normal_sf, "0, 1/2 or 1")
