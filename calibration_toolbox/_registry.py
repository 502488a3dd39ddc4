"""What a metric is, one row each: the registry every consumer of the metrics derives from.

Each public metric has one :class:`MetricSpec` row here: its settings (the GCE options of a
named binned metric, with the table reduction where it is not GCE's), whether it takes
``bins``, the input forms it accepts (``Scores``; class-wise, i.e. one column per class),
whether it needs a ``groups`` input (one group per row, or a membership matrix: a
statistic over groups of rows), whether it streams (the
:class:`~calibration_toolbox.CalibrationAccumulator` table and reduction, or the reason it
cannot), whether it runs on Dask arrays, how
:func:`~calibration_toolbox.stats.bootstrap` can resample it, and its name on the command
line.  Two rows are named settings of :func:`~calibration_toolbox.GCE` that the
accumulator and the command line give (``debiased_L2``, ``class_wise_debiased_L2``).

The metric itself declares that it is its row's function, where it is defined
(``@metric("ECE")`` above the public wrapper); ``stats``, ``streaming``, the command line
and the messages that list metrics read the rows.  The rows are data here rather than
arguments of the decorator because modules below the metrics (``scores``, ``_arrays``)
state what accepts ``Scores`` and what streams over Dask before any metric is imported,
and because their order is the order every list derived from them is written in.  Adding
a binned named metric: its row here, its wrapper (``@metric(name)``), its export.

This module imports no other module of the package.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeVar

__all__ = [
    "ROWS",
    "MetricSpec",
    "Stream",
    "accepting_scores",
    "class_wise",
    "command_line",
    "equal_mass",
    "gce_settings",
    "grouped",
    "metric",
    "multilabel",
    "not_streamed",
    "on_dask",
    "public",
    "spec_of",
    "streamed",
]


@dataclass(frozen=True)
class Stream:
    """How the accumulator gives a metric: its name there, its table and its reduction.

    Attributes
    ----------
    name : str
        The key of :meth:`CalibrationAccumulator.results`.
    table : str or None
        The accumulator's table (``'top_label'``, ``'predicted_class'``, ``'class_wise'``);
        None for the scoring rules, which are sums of their own.
    reduction : mapping
        Keyword arguments of :meth:`CalibrationTable.calibration_error`.
    """

    name: str
    table: str | None = None
    reduction: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricSpec:
    """One metric's row: what it is and what every consumer may do with it.

    Attributes
    ----------
    name : str
        The library's name (the function's), or that of a named setting of ``of``.
    settings : mapping or None
        The GCE options of a named binned metric (``part``/``average``: its table
        reduction where it is not GCE's); None where the options are the caller's (GCE,
        calibration_table); empty for a metric that is no GCE call.
    binned : bool
        Whether it takes ``bins``.
    scores : bool
        Whether it accepts ``Scores`` (GCE and calibration_table: with
        ``class_conditional=False, top_k_classes=1`` only).
    class_wise : bool
        Whether it needs one column per class, an (N, K) matrix.
    multilabel : bool
        Whether its labels are an (N, K) 0/1 matrix of independent labels (one sigmoid per
        column of ``prob``) rather than (N,) class labels.
    groups : bool
        Whether it requires a ``groups`` input, its third argument: one group label per
        row (N,) or a boolean membership matrix (N, G) (a statistic over groups of rows,
        not of one set of rows); every caller that calls each row passes it.
    stream : Stream or None
        How the accumulator gives it; None if it does not.
    not_streamed : str or None
        Why the accumulator cannot give it (None: it streams, or it is no single value of
        the accumulator, as GCE and calibration_table, whose tables it gives).
    dask : bool
        Whether it runs on Dask arrays, chunk by chunk (fixed edges only).
    bootstrap : {'table', 'calls'} or None
        How :func:`~calibration_toolbox.stats.bootstrap` resamples it: ``'table'``, the
        rows binned once and each resample's fixed-edge table summed by ``bincount``;
        ``'calls'``, one call per row weighting; None where it returns no number.
    command_line : str or None
        Its name in ``--metrics`` (``Top<r>CE``: ToprCE with ``r``).
    from_logits : bool
        Whether, with ``logits=True``, it is computed from the logits themselves (the NLL:
        an exact log-softmax), so that a caller holding the softmax of the logits must
        still pass it the logits for the same number.
    synonyms : mapping
        Its own option names for GCE options (``r`` is ``top_k_classes``).
    options : mapping
        Keyword arguments fixed on the call (a named setting's; a ``functools.partial``'s
        bound keywords, in :func:`spec_of`).
    of : str or None
        The public metric a named setting calls.
    function : callable or None
        The public function, bound by :func:`metric` where it is defined.
    higher_is_better : bool
        Whether a larger value is better (a coverage, an AUROC); the calibration errors,
        the scoring rules and the selective risks are losses (lower is better).  The
        scikit-learn scorers take their sign from it.
    """

    name: str
    settings: Mapping[str, object] | None = field(default_factory=dict)
    binned: bool = False
    scores: bool = False
    class_wise: bool = False
    multilabel: bool = False
    groups: bool = False
    stream: Stream | None = None
    not_streamed: str | None = None
    dask: bool = False
    bootstrap: str | None = "calls"
    command_line: str | None = None
    from_logits: bool = False
    synonyms: Mapping[str, str] = field(default_factory=dict)
    options: Mapping[str, object] = field(default_factory=dict)
    of: str | None = None
    function: Callable | None = None
    higher_is_better: bool = False

    @property
    def public(self) -> bool:
        """Whether the row is a public function of the package (not a named setting)."""
        return self.of is None


# The decorated function's own type, kept by `metric` (this leaf imports no _typing).
_Metric = TypeVar("_Metric", bound=Callable[..., object])

_MULTILABEL = (
    "its labels are an (N, K) 0/1 matrix, which the accumulator does not take; "
    "multilabel_calibration_table's tables of the batches add up (+)"
)
_EQUAL_MASS = "its equal-mass edges depend on all the rows"
_SORTED = "it walks the scores sorted over all the rows"
_PAIRS = "its kernel couples every pair of rows"
_SMOOTHED = "its smoothed calibration curve and bandwidth need all the rows"
_SEGMENTS = "it walks each group's scores sorted over all the rows of the group"
_SELECTIVE = "it needs all rows sorted by confidence (its thresholds are the distinct ones)"
_TOP_LABEL = {"class_conditional": False, "adaptive_bins": False, "top_k_classes": 1}
_CLASS_WISE = {"class_conditional": True, "adaptive_bins": False, "top_k_classes": "all"}
_ECE = {**_TOP_LABEL, "norm": 1}


def _binned(name: str, settings: Mapping | None, **row: object) -> MetricSpec:
    return MetricSpec(name, settings=settings, binned=True, **row)


def _fixed_edges(name: str, settings: Mapping | None, **row: object) -> MetricSpec:
    """A binned metric with fixed edges: it runs on Dask chunks."""
    return _binned(name, settings, dask=True, **row)


def _top_label(name: str, reduction: Mapping, **row: object) -> MetricSpec:
    """A binned error of the confidence on fixed edges: its table is the top label's."""
    settings = {**_TOP_LABEL, "norm": reduction["norm"]}
    if "part" in reduction:  # OCE, UCE: their `adaptive_bins` is their caller's
        del settings["adaptive_bins"]
    stream = Stream(name, "top_label", reduction)
    return _fixed_edges(name, {**settings, **reduction}, scores=True, stream=stream, **row)


_TABLE: list[MetricSpec] = [
    _top_label("ECE", {"norm": 1}, bootstrap="table", command_line="ECE"),
    _top_label("RMSCE", {"norm": 2}, bootstrap="table", command_line="RMSCE"),
    _top_label("MCE", {"norm": "inf"}, bootstrap="table", command_line="MCE"),
    # Bootstrap calls OCE and UCE: its table path reduces with GCE's own reduction, not
    # with `part`.
    _top_label("OCE", {"norm": 1, "part": "over"}, command_line="OCE"),
    _top_label("UCE", {"norm": 1, "part": "under"}, command_line="UCE"),
    _binned(
        "TCE",
        {**_TOP_LABEL, "adaptive_bins": True, "norm": 2, "debias": True},
        scores=True,
        not_streamed=f"{_EQUAL_MASS} (on fixed edges: 'debiased_L2')",
        command_line="TCE",
    ),
    _fixed_edges(
        "SCE",
        {**_CLASS_WISE, "norm": 1},
        class_wise=True,
        stream=Stream("SCE", "class_wise", {"norm": 1}),
        bootstrap="table",
        command_line="SCE",
    ),
    _binned(
        "ACE",
        {**_CLASS_WISE, "adaptive_bins": True, "norm": 1},
        class_wise=True,
        not_streamed=_EQUAL_MASS,
        command_line="ACE",
    ),
    _binned(
        "TACE",
        {**_CLASS_WISE, "adaptive_bins": True, "norm": 1},
        class_wise=True,
        not_streamed=_EQUAL_MASS,
        command_line="TACE",
        synonyms={"threshold": "thresholding"},
    ),
    _fixed_edges(
        "ToprCE",
        {"class_conditional": True, "adaptive_bins": False, "norm": 1},
        class_wise=True,
        not_streamed="the accumulator keeps no table of each row's r largest entries",
        bootstrap="table",
        command_line="Top<r>CE",
        synonyms={"r": "top_k_classes"},
    ),
    _binned(
        "CWCE",
        {**_CLASS_WISE, "adaptive_bins": True, "norm": 2, "debias": True},
        class_wise=True,
        not_streamed=f"{_EQUAL_MASS} (on fixed edges: 'class_wise_debiased_L2')",
        command_line="CWCE",
    ),
    # Bootstrap calls it: the table path reduces with GCE's own reduction, not `average`.
    _fixed_edges(
        "TopLabelECE",
        {**_TOP_LABEL, "class_conditional": True, "norm": 1, "average": "weighted"},
        class_wise=True,
        stream=Stream("TopLabelECE", "predicted_class", {"norm": 1, "average": "weighted"}),
        command_line="TopLabelECE",
    ),
    _fixed_edges(
        "expected_calibration_error",
        _ECE,
        scores=True,
        stream=Stream("ECE", "top_label", {"norm": 1}),
        bootstrap="table",
    ),
    _fixed_edges("GCE", None, scores=True, bootstrap="table", synonyms={"bin": "bins"}),
    _fixed_edges("calibration_table", None, scores=True, bootstrap=None),
    _fixed_edges(
        "debiased_L2",
        {},
        scores=True,
        stream=Stream("debiased_L2", "top_label", {"norm": 2, "debias": True}),
        bootstrap="table",
        command_line="DebiasedL2",
        options={"class_conditional": False, "norm": 2, "debias": True},
        of="GCE",
    ),
    _fixed_edges(
        "class_wise_debiased_L2",
        {},
        class_wise=True,
        stream=Stream("class_wise_debiased_L2", "class_wise", {"norm": 2, "debias": True}),
        bootstrap="table",
        options={"class_conditional": True, "top_k_classes": "all", "norm": 2, "debias": True},
        of="GCE",
    ),
    _binned("brier_decomposition", {}, scores=True, bootstrap=None),
    MetricSpec(
        "corp_decomposition",
        scores=True,
        not_streamed="its isotonic fit pools the scores sorted over all the rows",
        bootstrap=None,
        command_line="CORP",
    ),
    MetricSpec("KSCE", scores=True, not_streamed=_SORTED, command_line="KSCE"),
    MetricSpec("KuiperCE", scores=True, not_streamed=_SORTED, command_line="KuiperCE"),
    MetricSpec(
        "ECESweep", scores=True, not_streamed="its bin counts are chosen from all the rows"
    ),
    MetricSpec("MMCE", scores=True, not_streamed=_PAIRS, command_line="MMCE"),
    MetricSpec("SKCE", class_wise=True, not_streamed=_PAIRS, command_line="SKCE"),
    MetricSpec(
        "SmoothECE",
        scores=True,
        not_streamed="its kernel smoothing and bandwidth need all the rows",
        command_line="SmoothECE",
    ),
    # The curve SmoothECE integrates, as data: no single number, so nothing to resample.
    MetricSpec(
        "smooth_reliability_curve",
        scores=True,
        not_streamed="its kernel smoothing and bandwidth need all the rows",
        bootstrap=None,
    ),
    # A proper score split by a temperature fit: three numbers, no single one to resample.
    MetricSpec(
        "refinement_decomposition",
        scores=True,
        not_streamed="its temperature fit needs all the rows",
        bootstrap=None,
        command_line="Refine",
        from_logits=True,
    ),
    MetricSpec(
        "calibration_slope_intercept",
        scores=True,
        not_streamed="its logistic fits iterate over all the rows",
        bootstrap=None,
    ),
    _binned(
        "hosmer_lemeshow",
        {},
        scores=True,
        not_streamed=f"{_EQUAL_MASS} (its groups of risk)",
        bootstrap=None,
    ),
    MetricSpec("ICI", scores=True, not_streamed=_SMOOTHED, command_line="ICI"),
    MetricSpec("E50", scores=True, not_streamed=_SMOOTHED, command_line="E50"),
    MetricSpec("E90", scores=True, not_streamed=_SMOOTHED, command_line="E90"),
    # Selective prediction: the risk-coverage curve and what is read off it.
    MetricSpec("risk_coverage_curve", scores=True, not_streamed=_SELECTIVE, bootstrap=None),
    MetricSpec("AURC", scores=True, not_streamed=_SELECTIVE, command_line="AURC"),
    MetricSpec("EAURC", scores=True, not_streamed=_SELECTIVE, command_line="EAURC"),
    MetricSpec("AUGRC", scores=True, not_streamed=_SELECTIVE, command_line="AUGRC"),
    MetricSpec("coverage_at_risk", scores=True, not_streamed=_SELECTIVE, higher_is_better=True),
    MetricSpec("risk_at_coverage", scores=True, not_streamed=_SELECTIVE),
    MetricSpec(
        "confidence_auroc",
        scores=True,
        not_streamed=_SELECTIVE,
        command_line="ConfAUROC",
        higher_is_better=True,
    ),
    MetricSpec(
        "brier_score",
        scores=True,
        stream=Stream("brier_score"),
        dask=True,
        command_line="Brier",
    ),
    MetricSpec(
        "negative_log_likelihood",
        scores=True,
        stream=Stream("negative_log_likelihood"),
        dask=True,
        command_line="NLL",
        from_logits=True,
    ),
    # A statistic over groups of rows (groups given): the worst group's scaled Kuiper range,
    # several numbers (sigmas, error, p-value) and no single one to resample.
    MetricSpec(
        "multicalibration_error",
        scores=True,
        groups=True,
        not_streamed=_SEGMENTS,
        bootstrap=None,
        command_line="MultiCal",
    ),
    # Independent labels, an (N, K) 0/1 matrix: the binary measures of each label, averaged.
    _fixed_edges("multilabel_calibration_error", {}, multilabel=True, not_streamed=_MULTILABEL),
    _fixed_edges(
        "multilabel_calibration_table",
        {},
        multilabel=True,
        not_streamed=_MULTILABEL,
        bootstrap=None,
    ),
    MetricSpec("multilabel_brier_score", multilabel=True, not_streamed=_MULTILABEL, dask=True),
    MetricSpec(
        "multilabel_log_loss",
        multilabel=True,
        not_streamed=_MULTILABEL,
        from_logits=True,
        dask=True,
    ),
]

_ROWS: dict[str, MetricSpec] = {row.name: row for row in _TABLE}
#: Every row by name, in the registry's order (read-only view; functions bound on import).
ROWS: Mapping[str, MetricSpec] = MappingProxyType(_ROWS)
_BY_FUNCTION: dict[Callable, str] = {}


def metric(name: str) -> Callable[[_Metric], _Metric]:
    """Declare the decorated public function as the function of the row ``name``.

    Put it above every other decorator, so that the registered object is the public one.
    The named settings of the function (rows whose ``of`` is ``name``) call it too.
    """
    if name not in _ROWS or not _ROWS[name].public:
        raise KeyError(f"no public metric {name!r} in the registry")

    def declare(function: _Metric) -> _Metric:
        for key, row in _ROWS.items():
            if key == name or row.of == name:
                _ROWS[key] = dataclasses.replace(row, function=function)
        _BY_FUNCTION[function] = name
        return function

    return declare


def spec_of(function: object) -> MetricSpec | None:
    """The row of a metric: a public function, or a ``functools.partial`` of one.

    A partial's bound keywords are merged into the row's ``options`` (the outer partial's
    over the inner one's); a partial that binds positional arguments, or any other
    callable, gives None.
    """
    options: dict[str, object] = {}
    while isinstance(function, functools.partial):
        if function.args:
            return None
        options = {**function.keywords, **options}
        function = function.func
    try:
        name = _BY_FUNCTION.get(function)
    except TypeError:  # an unhashable callable is no metric of the registry
        return None
    if name is None:
        return None
    row = _ROWS[name]
    return dataclasses.replace(row, options={**row.options, **options}) if options else row


def public() -> list[MetricSpec]:
    """The rows of the public functions, in the registry's order."""
    return [row for row in _ROWS.values() if row.public]


def accepting_scores() -> list[MetricSpec]:
    """The public metrics that accept ``Scores``."""
    return [row for row in public() if row.scores]


def class_wise() -> list[MetricSpec]:
    """The public metrics that need one column per class."""
    return [row for row in public() if row.class_wise]


def multilabel() -> list[MetricSpec]:
    """The public metrics of multi-label targets (an (N, K) 0/1 label matrix)."""
    return [row for row in public() if row.multilabel]


def grouped() -> list[MetricSpec]:
    """The public metrics that require a ``groups`` input (their third argument)."""
    return [row for row in public() if row.groups]


def on_dask() -> list[MetricSpec]:
    """The public metrics that run on Dask arrays."""
    return [row for row in public() if row.dask]


def tabulated_bootstrap() -> list[MetricSpec]:
    """The public metrics whose bootstrap sums fixed-edge tables (``bootstrap='table'``)."""
    return [row for row in public() if row.bootstrap == "table"]


def streamed() -> dict[str, Stream]:
    """What the accumulator gives, by its name there (a name given by two rows once)."""
    return {row.stream.name: row.stream for row in _ROWS.values() if row.stream is not None}


def not_streamed() -> dict[str, str]:
    """The public metrics the accumulator cannot give, with the reason."""
    return {row.name: row.not_streamed for row in public() if row.not_streamed is not None}


def equal_mass() -> list[MetricSpec]:
    """The public binned metrics whose bins are equal-mass (their edges depend on the rows)."""
    return [row for row in public() if row.settings and row.settings.get("adaptive_bins")]


def command_line() -> list[MetricSpec]:
    """The rows with a name on the command line, in the registry's order."""
    return [row for row in _ROWS.values() if row.command_line is not None]


def _defaults(function: Callable, names: Mapping[str, str]) -> dict[str, object]:
    """The defaults of ``function``'s parameters among GCE's ``names``."""
    return {
        name: parameter.default
        for name, parameter in inspect.signature(function).parameters.items()
        if name in names and parameter.default is not inspect.Parameter.empty
    }


def gce_settings(spec: MetricSpec, options: Mapping[str, object]) -> dict[str, object] | None:
    """The GCE keyword arguments that ``spec``'s call with ``options`` stands for.

    GCE's positional options (``bins`` ... ``thresholding``) with their defaults, the
    metric's own defaults, its row's settings, its fixed options, then ``options``, every
    synonym under its GCE name.  None for a row that is no GCE call, or when one option
    is given under two names or a synonym as None (the metric's own call judges those).
    """
    if spec.bootstrap != "table" or (spec.settings is None and spec.name != "GCE"):
        return None
    gce = _ROWS["GCE"]
    parameters = list(inspect.signature(gce.function).parameters.values())[2:]
    positional = {p.name: p.name for p in parameters if p.kind is p.POSITIONAL_OR_KEYWORD}
    names = {**positional, **spec.synonyms}
    settings = {**_defaults(gce.function, positional), **_defaults(spec.function, positional)}
    settings.update(spec.settings or {})
    given = {**spec.options, **options}
    for name, value in given.items():
        key = names.get(name, name)
        if key != name and (key in given or value is None):
            return None
        settings[key] = value
    return settings
