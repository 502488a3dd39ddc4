"""The report as a document: the JSON of ``report --format json``, and the tables under it.

The document's shape is the contract shared with the HTML page (``_html.render_report``):
``tool``, ``version``, ``command``, ``versions``, ``file``, ``input``, ``n_classes``, ``n``,
``n_fit``, ``fit``, ``bins``, ``metrics`` and ``results``, one entry per method
(``"uncalibrated"`` first) with ``parameters``, ``warnings`` (the method's, in the command
line's words), ``accuracy`` (``mean_target`` and
``mean_score`` with ``--scores``), ``metrics``, ``intervals`` (with ``--ci``),
``reliability`` (the top-label table's non-empty bins), ``per_class`` (with
``--per-class``) and ``tests`` (the tests with p-values of ``calibration_toolbox.stats``
by name, each ``statistic``, ``sigma``, ``scaled_statistic`` and ``pvalue``, or null
where the scores leave it undefined; only for files read whole: their walk sorts all the
rows), ``selection`` with ``--method auto`` (the cross-validated NLL on the fit rows: ``score``,
``folds``, ``seed``, ``best`` and ``table``, one row per method with ``name``, ``mean``,
``spread`` and ``fold_scores``), then ``warnings``: those of the file (the rest).  Every
number is the library's own call on the same arrays.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Protocol

import numpy as np
import scipy

from calibration_toolbox import __version__, _scipy
from calibration_toolbox._validation import Predictions, check_bins, check_predictions
from calibration_toolbox._warnings import warn
from calibration_toolbox.cli._groups import group_metrics, grouped
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
from calibration_toolbox.cli._options import ReportOptions, input_kind
from calibration_toolbox.cli._warned import Warned
from calibration_toolbox.metrics import (
    CalibrationTable,
    RiskCoverageCurve,
    calibration_table,
    risk_coverage_curve,
    smooth_reliability_curve,
)
from calibration_toolbox.plot import MeasureCurve
from calibration_toolbox.scores import Scores
from calibration_toolbox.stats import (
    bootstrap,
    corp_reliability,
    ks_test,
    kuiper_test,
    spiegelhalter_test,
)

__all__ = [
    "AUTO_BINS_RULE",
    "CURVES",
    "DIAGRAM_RESAMPLES",
    "SIGNIFICANCE",
    "TESTS",
    "Column",
    "InMemory",
    "Report",
    "Source",
    "build_report",
    "calibration_tests",
    "class_changes",
    "header",
    "per_class_rows",
    "reliability",
    "summary",
    "warn_if_less_accurate",
]

SIGNIFICANCE = 0.01
"""A method whose loss of accuracy has a p-value below this is warned of (McNemar's test)."""

#: The tests with p-values of the report, by their name there.
TESTS = {"KS": ks_test, "Kuiper": kuiper_test, "Spiegelhalter": spiegelhalter_test}

#: How ``--bins auto`` chose the count (``bins_rule`` of the document, beside ``bins``).
AUTO_BINS_RULE = "cube root: the smallest B with B**3 >= the rows measured"

#: Resamples of the bands of the diagrams' curves (corp_reliability's default).
DIAGRAM_RESAMPLES = 100


def _risk_coverage(prob, labels, *, logits: bool, random_state: int) -> RiskCoverageCurve:
    """The risk-coverage curve (nothing in it is drawn at random: ``random_state`` unused)."""
    return risk_coverage_curve(prob, labels, logits=logits)


#: The curve of each diagram of a measure (``Metric.diagram``), as ``--plot`` and ``--html``
#: draw it: ``curve(prob, labels, logits=..., random_state=...)``, its band resampled.
CURVES: dict[str, Callable[..., MeasureCurve]] = {
    "corp": partial(corp_reliability, n_resamples=DIAGRAM_RESAMPLES),
    "smooth": partial(smooth_reliability_curve, n_resamples=DIAGRAM_RESAMPLES),
    "risk_coverage": _risk_coverage,
}


@dataclass
class Report:
    """The document, the title and notes of the text report, and the tables drawn."""

    document: dict
    title: str
    notes: list[str]
    tables: dict[str, CalibrationTable] = field(default_factory=dict)
    class_tables: dict[str, CalibrationTable] | None = None
    curves: dict[str, dict[str, MeasureCurve]] = field(default_factory=dict)
    """The curves of the diagrams (``ReportOptions.diagrams``): diagram -> method -> curve."""
    group_tables: dict[str, CalibrationTable] | None = None
    """Each group's top-label table of the uncalibrated predictions (``--groups``)."""
    group_values: dict[str, dict] = field(default_factory=dict)
    """Each column's metrics per group (``--groups``), by method name (``group_metrics``)."""


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


@dataclass(frozen=True)
class _Data:
    """The test rows of one column as the metrics take them: the view, or its handle."""

    view: object
    labels: np.ndarray
    logits: bool
    checked: Predictions | None

    def arguments(self, metric: Metric | None = None) -> tuple[object, object, bool]:
        """``(prob, labels, logits)`` of a call: the handle, checked once, with no labels.

        The arrays themselves without a handle (``--scores``) and for the NLL of logits,
        computed exactly from them (the log-softmax), not from the handle's softmax.
        """
        exact = self.logits and metric is not None and metric.from_logits
        if self.checked is None or exact:
            return self.view, self.labels, self.logits
        return self.checked, None, False

    def value(self, metric: Metric, bins: int) -> float:
        """The metric of the rows."""
        prob, labels, logits = self.arguments(metric)
        return metric(prob, labels, bins=bins, logits=logits)


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


def _intervals(data: _Data, options: ReportOptions) -> dict[str, list]:
    """Percentile bootstrap intervals (95 %) of every metric, seeded by ``--seed``."""
    intervals = {}
    for metric in options.metrics:
        progress(f"bootstrap of {metric.name} ({options.n_resamples} resamples)")
        prob, labels, logits = data.arguments(metric)
        result = bootstrap(
            metric.function,
            prob,
            labels,
            n_resamples=options.n_resamples,
            random_state=options.seed,
            **metric.keywords(options.bins, logits),
        )
        low, high = result.confidence_interval
        intervals[metric.name] = [_number(low), _number(high)]
    progress("")
    return intervals


def calibration_tests(prob, labels, logits: bool) -> dict[str, dict | None]:
    """Each test of :data:`TESTS` on the rows; None where the scores make it undefined."""
    results: dict[str, dict | None] = {}
    for name, test in TESTS.items():
        try:
            result = test(prob, labels, logits=logits)
        except ValueError:  # a variance of 0 under calibration: every score 0 or 1 (or 1/2)
            results[name] = None
        else:
            results[name] = {
                "statistic": result.statistic,
                "sigma": result.sigma,
                "scaled_statistic": result.scaled_statistic,
                "pvalue": result.pvalue,
            }
    return results


def header(source: Source, command: Sequence[str]) -> dict:
    """The document's first keys: the tool, the command, the file, ``n`` and the fit rows."""
    options, fitting = source.options, bool(source.methods) or source.selection is not None
    return {
        "tool": "calibration-toolbox",
        "version": __version__,
        "command": ["calibration-toolbox", *command],
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
        "file": source.file,
        "input": input_kind(source.logits, source.scores),
        "n_classes": source.n_classes,
        "n": source.n,
        "n_fit": source.fit_rows if fitting else None,
        "fit": source.fit_text if fitting else None,
        "bins": options.bins,
        **({"bins_rule": AUTO_BINS_RULE} if options.auto_bins else {}),
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
    p_value = float(_scipy.special.bdtr(better, worse + better, 0.5))
    if p_value < SIGNIFICANCE:
        warn(
            f"{method.title} lowers the accuracy of the scored rows from "
            f"{before['accuracy']:.4f} to {after['accuracy']:.4f}: it turns {worse:,} right "
            f"predictions wrong and {better:,} wrong ones right (McNemar's exact test: p = "
            f"{p_value:.2g}); it changes the predicted class, not only the confidence."
        )


@dataclass(frozen=True)
class Column:
    """One column of the report (uncalibrated, or a method): where its numbers come from."""

    entry: Callable[[Report, str], dict]
    """The column's results entry under a name (its tables kept in the report)."""
    parameters: dict = field(default_factory=dict)
    """The method's small fitted numbers."""
    changes: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=np.int64))
    """The rows the method turned from right to wrong and from wrong to right."""


class Source(Protocol):
    """The rows a report is on, read whole (:class:`InMemory`) or in blocks.

    ``file``, ``title``, ``n_classes``, ``n`` (the rows reported on), ``fit_rows`` and
    ``fit_text`` (the rows fitted on), ``one_column``, ``logits`` and ``scores`` (what the
    file holds) and ``blocks`` (the document's entry of a file read in blocks, or None) make
    the document's head; ``options`` and ``methods`` what is computed.
    """

    file: str
    title: str
    n_classes: int
    n: int
    fit_rows: int | None
    fit_text: str | None
    one_column: bool
    logits: bool
    scores: bool
    blocks: dict | None
    options: ReportOptions
    methods: tuple[Method, ...]
    selection: dict | None
    """``--method auto``'s cross-validated table (``cli._methods.selected``), else None."""

    def uncalibrated(self) -> Column:
        """The column of the file's predictions."""

    def calibrated(self, method: Method) -> Column:
        """The column of ``method`` (fitted here, inside its scope, when not before)."""


class InMemory:
    """The report's rows held whole: every number is a library call on the arrays."""

    blocks = None

    def __init__(
        self,
        inputs: Inputs,
        options: ReportOptions,
        methods: tuple[Method, ...],
        groups: np.ndarray | None = None,
        selection: dict | None = None,
    ):
        test = inputs.test
        self.selection = selection
        if isinstance(options.bins, str):  # --bins auto: one count for every number shown
            count = len(check_bins(options.bins, n_samples=len(test.labels))) - 1
            options = replace(options, bins=count, auto_bins=True)
        self.inputs, self.options, self.methods = inputs, options, methods
        self.file, self.title = inputs.file, inputs.title
        self.one_column = test.predictions.ndim == 1
        self.n_classes = 2 if self.one_column else int(test.predictions.shape[1])
        self.n = len(test.labels)
        self.fit_rows = None if inputs.fit is None else len(inputs.fit.labels)
        self.fit_text = inputs.fit_text
        self.logits, self.scores = inputs.logits, inputs.scores
        self.groups = groups
        """The group of each test row (``--groups``), or None."""

    def group_entry(self, report: Report) -> tuple[dict, dict[str, CalibrationTable]]:
        """The document's ``groups`` entry and each group's top-label table (``--groups``)."""
        return grouped(self, report)

    def uncalibrated(self) -> Column:
        """The column of the test rows' predictions."""
        test = self.inputs.test
        view = metric_view(test.predictions, self.scores, self.logits)
        return Column(self._entry_of(_Data(view, test.labels, self.logits, test.checked)))

    def calibrated(self, method: Method) -> Column:
        """``method`` fitted on the fit rows and applied to the test rows."""
        inputs, logits, labels = self.inputs, self.logits, self.inputs.test.labels
        model = fitted(method, inputs.fit.predictions, inputs.fit.labels, logits)
        calibrated = model.predict_proba(method_input(inputs.test.predictions, method, logits))
        if self.scores:  # the recalibrated P(target = 1), reported as scores again
            data = _Data(Scores(calibrated[:, 1]), labels, False, None)
            return Column(self._entry_of(data), parameters(model))
        view = metric_view(inputs.test.predictions, False, logits)
        changes = class_changes(view, calibrated, labels)
        # Every method's output is probabilities, checked once for all the numbers.
        checked = check_predictions(calibrated, labels, top_label=True)
        data = _Data(calibrated, labels, False, checked)
        return Column(self._entry_of(data), parameters(model), changes)

    def _entry_of(self, data: _Data) -> Callable[[Report, str], dict]:
        return lambda report, name: self._entry(report, name, data)

    def _entry(self, report: Report, name: str, data: _Data) -> dict:
        """The results entry of the test rows' ``data`` (its tables kept in the report)."""
        options, scores = self.options, self.scores
        prob, labels, logits = data.arguments()
        table = calibration_table(
            prob, labels, bins=options.bins, class_conditional=False, logits=logits
        )
        report.tables[name] = table
        entry = summary(table, scores)
        entry["metrics"] = {
            metric.name: data.value(metric, options.bins) for metric in options.metrics
        }
        if self.groups is not None:
            report.group_values[name] = group_metrics(
                data.view, data.labels, data.logits, self.groups, options.metrics, options.bins
            )
        if options.ci:
            entry["intervals"] = _intervals(data, options)
        entry["reliability"] = reliability(table)
        for diagram in options.diagrams:  # the curves --plot and --html draw, seeded by --seed
            report.curves.setdefault(diagram, {})[name] = CURVES[diagram](
                prob, labels, logits=logits, random_state=options.seed
            )
        entry["tests"] = calibration_tests(prob, labels, logits)
        if options.class_tables and not scores:
            # Every entry P(y = k) of every row (top_k_classes="all"), as SCE bins them: the
            # default top_k_classes=1 would keep only the rows that predict k.
            class_table = calibration_table(
                prob,
                labels,
                bins=options.bins,
                class_conditional=True,
                top_k_classes="all",
                logits=logits,
            )
            report.class_tables[name] = class_table
            if options.per_class:
                entry["per_class"] = _per_class(data.view, data.labels, class_table)
        return entry


def build_report(source: Source, command: Sequence[str], warned: Warned | None = None) -> Report:
    """Every number of the report: uncalibrated, then each method fitted and applied.

    The one builder of the rows read whole and of those read in blocks: ``source`` says
    where each column's numbers come from.  ``warned`` records the warnings of each method
    (its fit, application and numbers) as that method's: the ``warnings`` of its entry.
    """
    warned = Warned() if warned is None else warned
    notes = conversion_lines(source.methods, source.logits, source.one_column)
    document = header(source, command)
    if source.blocks is not None:
        document["blocks"] = source.blocks
    report = Report(document, source.title, notes)
    if source.options.class_tables and not source.scores:
        report.class_tables = {}
    document["conversions"] = notes
    if source.selection is not None:  # --method auto: the cross-validated table it chose from
        document["selection"] = source.selection
    before = source.uncalibrated().entry(report, "uncalibrated")
    results = [{"method": "uncalibrated", "parameters": {}, "warnings": [], **before}]
    for method in source.methods:
        with warned.method(method.name):
            column = source.calibrated(method)
            entry = column.entry(report, method.name)
            warn_if_less_accurate(method, before, entry, column.changes)
        results.append(
            {
                "method": method.name,
                "parameters": column.parameters,
                "warnings": warned.of(method.name),
                **entry,
            }
        )
    document["results"] = results
    return report
