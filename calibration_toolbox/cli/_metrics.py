"""The metrics of the command line by name (``--metrics``): one table, name -> call.

Every registry row with a command-line name is here once (:mod:`calibration_toolbox._registry`),
with what the command line passes it: the number of bins for the binned ones, ``logits``,
and the fixed options that make a library call into the named measure (``DebiasedL2`` is
``GCE(norm=2, debias=True)`` on the top label; ``Top2CE`` is ``ToprCE(r=2)``).  Names are
matched without regard to case.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import calibration_toolbox.metrics  # noqa: F401 (imported for its effect: each row's function)
from calibration_toolbox import _registry as registry
from calibration_toolbox.cli._names import DEFAULT_METRICS, METRIC_NAMES, TOP_R

__all__ = [
    "DEFAULT_METRICS",
    "DIAGRAMS",
    "METRICS",
    "RESAMPLED_DIAGRAMS",
    "Metric",
    "parse_metrics",
]


@dataclass(frozen=True)
class Metric:
    """One metric as the command line calls it.

    Attributes
    ----------
    name : str
        The name on the command line and in the report.
    function : callable
        The library's metric, ``function(prob, labels, **options)``.
    binned : bool
        Whether it takes ``bins`` (``--bins``).
    class_wise : bool
        Whether it needs one column per class (so not with ``--scores``).
    groups : bool
        Whether it is a statistic over the groups of ``report --groups COLUMN`` (its row
        declares a ``groups`` input, passed as ``groups=``), not of one set of rows: it is
        reported once over the groups, beside the per-group table.
    options : mapping
        Fixed keyword arguments that make ``function`` this measure.
    streamed : str or None
        Its name in :meth:`CalibrationAccumulator.results` when the sums determine it (the
        report of a file read in blocks); None when it needs all the rows at once.
    from_logits : bool
        Whether, with ``--logits``, it is computed from the logits themselves (the NLL), not
        from the checked softmax the other metrics take.
    diagram : str or None
        The reliability diagram of the measure's own curve (``DIAGRAMS``), drawn by
        ``--plot`` and ``--html`` when it is reported; None for the binned diagram only.
    """

    name: str
    function: Callable[..., float]
    binned: bool = True
    class_wise: bool = False
    groups: bool = False
    options: Mapping[str, object] = field(default_factory=dict)
    streamed: str | None = None
    from_logits: bool = False
    diagram: str | None = None

    def keywords(self, bins: int, logits: bool) -> dict[str, object]:
        """The keyword arguments of a call: the fixed options, ``bins`` and ``logits``."""
        keywords = {**self.options, "logits": logits}
        if self.binned:
            keywords["bins"] = bins
        return keywords

    def __call__(self, prob, labels, *, bins: int, logits: bool) -> float:
        """The metric of ``prob`` and ``labels`` as a Python float."""
        return float(self.function(prob, labels, **self.keywords(bins, logits)))


#: The report shows one number per name: a metric returning several terms is reported as one
#: name per term (``--metrics CORP`` gives the columns CORP_MCB, CORP_DSC and CORP_UNC).
TERMS: dict[str, dict[str, str]] = {
    "CORP": {"MCB": "miscalibration", "DSC": "discrimination", "UNC": "uncertainty"},
    "Refine": {"CAL": "calibration", "REF": "refinement"},
    "MultiCal": {"sigma": "sigmas", "error": "error", "p": "pvalue"},
}


#: The diagram of a measure's own curve, by its command-line name: the ``strategy`` of
#: ``ReliabilityDiagram.from_predictions`` that draws the curve the measure summarises (the
#: CORP terms: the PAV fit and its band; SmoothECE: the smoothed curve it integrates; the
#: selective measures: the risk-coverage curve).
DIAGRAMS: dict[str, str] = {
    "CORP": "corp",
    "SmoothECE": "smooth",
    **dict.fromkeys(("AURC", "EAURC", "AUGRC", "ConfAUROC"), "risk_coverage"),
}
#: The diagrams whose bands are resampled (seeded by ``--seed``).
RESAMPLED_DIAGRAMS = ("corp", "smooth")


def _term(function: Callable[..., object], field: str) -> Callable[..., float]:
    """The metric that is the term ``field`` of ``function``'s result."""

    def term(prob, labels, **options: object) -> float:
        return getattr(function(prob, labels, **options), field)

    term.__name__ = f"{getattr(function, '__name__', 'metric')}.{field}"
    return term


def _of_row(row: registry.MetricSpec, name: str, **options: object) -> Metric:
    """The command line's metric ``name`` of a registry row (``options`` added to its own)."""
    stream = None if row.stream is None else row.stream.name
    return Metric(
        name,
        row.function,
        binned=row.binned,
        class_wise=row.class_wise,
        groups=row.groups,
        options={**row.options, **options},
        streamed=stream,
        from_logits=row.from_logits,
        diagram=DIAGRAMS.get(row.command_line),
    )


_TOP_R_ROW = next(row for row in registry.command_line() if row.command_line == TOP_R)
#: The metrics of ``--metrics`` by name: the registry's rows with a command-line name, in
#: its order (``Top<r>CE`` is matched by pattern: ToprCE with ``r``).
METRICS: dict[str, Metric] = {
    row.command_line: _of_row(row, row.command_line)
    for row in registry.command_line()
    if row.command_line in METRIC_NAMES
}
#: The report's names of the terms of the multi-valued metrics (``CORP_MCB``: CORP's MCB).
TERM_METRICS: dict[str, tuple[Metric, ...]] = {
    name: tuple(
        dataclasses.replace(
            METRICS[name], name=f"{name}_{short}", function=_term(METRICS[name].function, field)
        )
        for short, field in fields.items()
    )
    for name, fields in TERMS.items()
}
_BY_LOWER_NAME = {
    **{name.lower(): metric for name, metric in METRICS.items()},
    **{term.name.lower(): term for terms in TERM_METRICS.values() for term in terms},
}
_TOP_R = re.compile(r"top([1-9][0-9]*)ce", flags=re.IGNORECASE)


def _metric(name: str) -> Metric | None:
    """The metric called ``name`` (any case), ``Top<r>CE`` included; None if unknown."""
    known = _BY_LOWER_NAME.get(name.lower())
    if known is not None:
        return known
    top_r = _TOP_R.fullmatch(name)
    if top_r is None:
        return None
    r = int(top_r.group(1))
    return _of_row(_TOP_R_ROW, f"Top{r}CE", r=r)


def parse_metrics(text: str | None) -> tuple[Metric, ...]:
    """The metrics of ``--metrics ECE,MCE,...`` in their order (None: the default list).

    Raises ``ValueError`` naming every valid name for an unknown or empty name.
    """
    names = DEFAULT_METRICS if text is None else [name.strip() for name in text.split(",")]
    metrics = {}
    for name in names:
        metric = _metric(name)
        if metric is None:
            valid = ", ".join([*METRICS, "Top<r>CE (e.g. Top2CE)"])
            raise ValueError(f"--metrics: unknown metric {name!r}; valid names: {valid}.")
        for term in TERM_METRICS.get(metric.name, (metric,)):
            metrics.setdefault(term.name, term)  # a name given twice is reported once
    return tuple(metrics.values())
