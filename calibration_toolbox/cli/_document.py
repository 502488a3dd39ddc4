"""The report as a document: the JSON of ``report --format json``, and the tables under it.

The document's shape is the contract shared with the HTML page (``_html.render_report``):
``tool``, ``version``, ``command``, ``versions``, ``file``, ``input``, ``n_classes``, ``n``,
``n_fit``, ``fit``, ``bins``, ``metrics`` and ``results``, one entry per method
(``"uncalibrated"`` first) with ``parameters``, ``warnings`` (the method's, in the command
line's words), ``accuracy`` (``mean_target`` and
``mean_score`` with ``--scores``), ``metrics``, ``intervals`` (with ``--ci``),
``reliability`` (the top-label table's non-empty bins) and ``per_class`` (with
``--per-class``), then ``warnings``: those of the file (the rest).  Every number is the
library's own call on the same arrays.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy
from scipy.special import bdtr

from calibration_toolbox import __version__
from calibration_toolbox._warnings import warn
from calibration_toolbox.cli._inputs import Inputs, metric_view
from calibration_toolbox.cli._methods import (
    Method,
    conversion_lines,
    fitted,
    method_input,
    parameters,
    progress,
)
from calibration_toolbox.cli._metrics import Metric
from calibration_toolbox.cli._warned import Warned
from calibration_toolbox.metrics import CalibrationTable, calibration_table
from calibration_toolbox.stats import bootstrap

__all__ = [
    "SIGNIFICANCE",
    "Report",
    "ReportOptions",
    "build_report",
    "class_changes",
    "header",
    "per_class_rows",
    "reliability",
    "summary",
    "warn_if_less_accurate",
]

SIGNIFICANCE = 0.01
"""A method whose loss of accuracy has a p-value below this is warned of (McNemar's test)."""


@dataclass(frozen=True)
class ReportOptions:
    """What to compute, from the command line."""

    bins: int
    metrics: tuple[Metric, ...]
    methods: tuple[Method, ...] = ()
    per_class: bool = False
    class_tables: bool = False
    """Whether to build the class-wise tables (``--per-class`` and ``--html`` need them)."""
    ci: bool = False
    n_resamples: int = 200
    seed: int = 0


@dataclass
class Report:
    """The document, the title and notes of the text report, and the tables drawn."""

    document: dict
    title: str
    notes: list[str]
    tables: dict[str, CalibrationTable] = field(default_factory=dict)
    class_tables: dict[str, CalibrationTable] | None = None


def _number(value: float) -> float | None:
    """A JSON number: NaN (an interval of a degenerate resample, an empty class) is null."""
    return None if math.isnan(value) else float(value)


def reliability(table: CalibrationTable) -> list[dict]:
    filled = np.flatnonzero(table.counts[0] > 0)
    edges, scores, targets = table.edges[0], table.mean_score[0], table.mean_target[0]
    return [
        {
            "low": float(edges[b]),
            "high": float(edges[b + 1]),
            "count": int(table.counts[0, b]),
            "confidence": float(scores[b]),
            "accuracy": float(targets[b]),
        }
        for b in filled
    ]


def summary(table: CalibrationTable, scores: bool) -> dict:
    """The accuracy (``mean_target`` and ``mean_score`` with ``--scores``) of a top-label table."""
    total = table.counts.sum()
    if scores:
        return {
            "mean_target": float(table.target_sums.sum() / total),
            "mean_score": float(table.score_sums.sum() / total),
        }
    return {"accuracy": float(table.target_sums.sum() / total)}


def _per_class(view: np.ndarray, labels: np.ndarray, table: CalibrationTable) -> list[dict]:
    """Per class k: rows labelled k, ECE of the scores P(y = k), and recall of k."""
    n_classes = view.shape[1]
    counts = np.bincount(labels, minlength=n_classes)
    correct = np.argmax(view, axis=1) == labels
    hits = np.bincount(labels[correct], minlength=n_classes)
    return per_class_rows(counts, hits, table)


def per_class_rows(counts: np.ndarray, hits: np.ndarray, table: CalibrationTable) -> list[dict]:
    """The per-class rows from the rows labelled k, those predicted k among them, and the table.

    The ECE of class k is its group of the class-wise table, ``sum_b |T_b - S_b| / N``
    (the target and score sums of bin b): SCE is the mean of these over the classes.
    """
    n_classes = len(counts)
    errors = np.abs(table.target_sums - table.score_sums).sum(axis=1) / table.set_sizes
    return [
        {
            "class": k,
            "count": int(counts[k]),
            "ECE": float(errors[k]),
            "accuracy": _number(hits[k] / counts[k]) if counts[k] else None,
        }
        for k in range(n_classes)
    ]


def _intervals(view, labels, options: ReportOptions, logits: bool) -> dict[str, list]:
    """Percentile bootstrap intervals (95 %) of every metric, seeded by ``--seed``."""
    intervals = {}
    for metric in options.metrics:
        progress(f"bootstrap of {metric.name} ({options.n_resamples} resamples)")
        result = bootstrap(
            metric.function,
            view,
            labels,
            n_resamples=options.n_resamples,
            random_state=options.seed,
            **metric.keywords(options.bins, logits),
        )
        low, high = result.confidence_interval
        intervals[metric.name] = [_number(low), _number(high)]
    progress("")
    return intervals


def _entry(
    report: Report, name: str, predictions, logits: bool, inputs: Inputs, options: ReportOptions
) -> dict:
    """The results entry of ``predictions`` of the test rows (its tables kept in ``report``)."""
    scores, labels = inputs.scores, inputs.test.labels
    view = metric_view(predictions, scores, logits)
    table = calibration_table(
        view, labels, bins=options.bins, class_conditional=False, logits=logits
    )
    report.tables[name] = table
    entry = summary(table, scores)
    entry["metrics"] = {
        metric.name: metric(view, labels, bins=options.bins, logits=logits)
        for metric in options.metrics
    }
    if options.ci:
        entry["intervals"] = _intervals(view, labels, options, logits)
    entry["reliability"] = reliability(table)
    if options.class_tables and not scores:
        # Every entry P(y = k) of every row (top_k_classes="all"), as SCE bins them: the
        # default top_k_classes=1 would keep only the rows that predict k.
        class_table = calibration_table(
            view,
            labels,
            bins=options.bins,
            class_conditional=True,
            top_k_classes="all",
            logits=logits,
        )
        report.class_tables[name] = class_table
        if options.per_class:
            entry["per_class"] = _per_class(view, labels, class_table)
    return entry


def _calibrated(method: Method, inputs: Inputs) -> tuple[np.ndarray, dict]:
    """The test rows after ``method`` fitted on the fit rows, and its fitted numbers."""
    logits = inputs.logits
    model = fitted(method, inputs.fit.predictions, inputs.fit.labels, logits)
    calibrated = model.predict_proba(method_input(inputs.test.predictions, method, logits))
    if inputs.scores:  # the recalibrated P(target = 1), reported as scores again
        calibrated = calibrated[:, 1]
    return calibrated, parameters(model)


def _header(inputs: Inputs, options: ReportOptions, command: Sequence[str]) -> dict:
    shape = inputs.test.predictions.shape
    n_classes = 2 if len(shape) == 1 else int(shape[1])
    n_fit = None if not options.methods else len(inputs.fit.labels)
    fit = (n_fit, inputs.fit_text)
    return header(
        inputs.file, inputs.kind, n_classes, len(inputs.test.labels), fit, options, command
    )


def header(
    file: str,
    kind: str,
    n_classes: int,
    n: int,
    fit: tuple[int | None, str | None],
    options: ReportOptions,
    command: Sequence[str],
) -> dict:
    """The document's first keys: the tool, the command, the file, ``n`` and the fit rows."""
    return {
        "tool": "calibration-toolbox",
        "version": __version__,
        "command": ["calibration-toolbox", *command],
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
        "file": file,
        "input": kind,
        "n_classes": n_classes,
        "n": n,
        "n_fit": fit[0] if options.methods else None,
        "fit": fit[1] if options.methods else None,
        "bins": options.bins,
        "metrics": [metric.name for metric in options.metrics],
    }


def class_changes(view: np.ndarray, calibrated: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The rows a method turns from right to wrong and from wrong to right (predicted class)."""
    before = np.argmax(view, axis=1) == labels
    after = np.argmax(calibrated, axis=1) == labels
    return np.array([np.count_nonzero(before & ~after), np.count_nonzero(~before & after)])


def warn_if_less_accurate(method: Method, before: dict, after: dict, changes) -> None:
    """Warn when ``method`` lowers the accuracy of the scored rows, beyond chance.

    ``changes`` holds the rows turned wrong and those turned right: under no change of
    accuracy each changed row is either with probability 1/2 (McNemar's exact test), and the
    warning is given when the one-sided p-value is below :data:`SIGNIFICANCE`.  A
    recalibration map is meant to change the confidence, not the predicted class (vector,
    matrix, Dirichlet scaling and the binning methods can change both).
    """
    worse, better = (int(count) for count in changes)
    if "accuracy" not in before or worse <= better:
        return
    # The binomial CDF of scipy.special: scipy.stats takes 0.7 s and 22 MB to import, in
    # every report (a 20,000,000-row streamed report: 5.0 s -> 6.1 s, 130 -> 152 MB).
    p_value = float(bdtr(better, worse + better, 0.5))
    if p_value < SIGNIFICANCE:
        warn(
            f"{method.title} lowers the accuracy of the scored rows from "
            f"{before['accuracy']:.4f} to {after['accuracy']:.4f}: it turns {worse:,} right "
            f"predictions wrong and {better:,} wrong ones right (McNemar's exact test: p = "
            f"{p_value:.2g}); it changes the predicted class, not only the confidence."
        )


def build_report(
    inputs: Inputs,
    options: ReportOptions,
    command: Sequence[str],
    warned: Warned | None = None,
) -> Report:
    """Every number of the report: uncalibrated, then each method fitted and applied.

    ``warned`` records the warnings of each method (its fit, application and numbers) as
    that method's: the ``warnings`` of its entry.
    """
    warned = Warned() if warned is None else warned
    one_column = inputs.test.predictions.ndim == 1
    notes = conversion_lines(options.methods, inputs.logits, one_column)
    report = Report(_header(inputs, options, command), inputs.title, notes)
    if options.class_tables and not inputs.scores:
        report.class_tables = {}
    report.document["conversions"] = notes
    before = _entry(
        report, "uncalibrated", inputs.test.predictions, inputs.logits, inputs, options
    )
    results = [{"method": "uncalibrated", "parameters": {}, "warnings": [], **before}]
    for method in options.methods:
        with warned.method(method.name):
            calibrated, fitted_numbers = _calibrated(method, inputs)
            # Every method's output is probabilities.
            entry = _entry(report, method.name, calibrated, False, inputs, options)
            if not inputs.scores:
                view = metric_view(inputs.test.predictions, False, inputs.logits)
                changes = class_changes(view, calibrated, inputs.test.labels)
                warn_if_less_accurate(method, before, entry, changes)
        results.append(
            {
                "method": method.name,
                "parameters": fitted_numbers,
                "warnings": warned.of(method.name),
                **entry,
            }
        )
    report.document["results"] = results
    return report
