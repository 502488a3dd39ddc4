"""``compare A B``: two models' predictions of the same rows, side by side, and the differences.

Both files are read as ``report`` reads FILE (:func:`~calibration_toolbox.cli._inputs.
read_predictions`, with the same options) and refused unless they hold the same rows: as
many, with the same labels in the same order, and as many columns of predictions.  Every
number is the library's call: each metric of each model, its difference A - B and, with
``--ci``, :func:`~calibration_toolbox.stats.paired_bootstrap`'s interval and p-value; the
paired t tests of the Brier and log scores (:func:`~calibration_toolbox.stats.
paired_score_test`), always.  A model is better at the level when the interval of the
difference lies on one side of 0 (every metric and score here: lower is better).

The document (``--format json``; the HTML page's contract, ``_html.render_comparison``):
``tool``, ``version``, ``command``, ``versions``, ``models`` (``A`` and ``B``: ``file``,
and ``accuracy``, or ``mean_target`` and ``mean_score`` with ``--scores``), ``input``,
``n_classes``, ``n``, ``bins``, ``confidence_level``, ``n_resamples`` and ``seed`` (None
without ``--ci``), ``metrics`` (one entry per metric: ``metric``, ``A``, ``B``,
``difference``, ``interval``, ``pvalue``, ``better``), ``score_tests`` (``score``, ``test``,
``A``, ``B``, ``difference``, ``standard_error``, ``interval``, ``statistic``, ``df``,
``pvalue``, ``better``), ``reliability`` (each model's non-empty top-label bins) and
``warnings``.  A number that is not finite is null.  ``--stream`` gives the same document
from both files read in blocks together (:mod:`~calibration_toolbox.cli._compare_stream`).
"""

from __future__ import annotations

import math
import platform
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import scipy

from calibration_toolbox import __version__
from calibration_toolbox._validation import check_bins
from calibration_toolbox.cli._document import _Data, reliability, summary
from calibration_toolbox.cli._inputs import Part, check_same_columns, metric_view, read_predictions
from calibration_toolbox.cli._methods import progress
from calibration_toolbox.cli._options import CompareRequest, ReportOptions, input_kind
from calibration_toolbox.cli._warned import Warned
from calibration_toolbox.metrics import CalibrationTable, calibration_table
from calibration_toolbox.stats import paired_bootstrap, paired_score_test

__all__ = [
    "CONFIDENCE_LEVEL",
    "MODELS",
    "SCORES",
    "Comparison",
    "build_comparison",
    "header",
    "metric_entry",
    "score_entry",
    "text",
]

CONFIDENCE_LEVEL = 0.95
"""The level of every interval of ``compare`` and of its verdicts (as ``report --ci``)."""

MODELS = ("A", "B")

#: The paired score tests: the report's name of each scoring rule, and the test's.
SCORES = {"Brier": "brier", "NLL": "log"}


@dataclass
class Comparison:
    """The document, and each model's top-label table (the diagrams of the HTML page)."""

    document: dict
    tables: dict[str, CalibrationTable] = field(default_factory=dict)


def _finite(value: float) -> float | None:
    """A JSON number: NaN and infinities (a t of differences all equal) are null."""
    return float(value) if math.isfinite(value) else None


def _better(low: float, high: float) -> str | None:
    """The model with the lower value at the level: the interval of A - B excludes 0."""
    if high < 0:
        return "A"
    if low > 0:
        return "B"
    return None


def check_same_rows(a: Part, b: Part, paths: tuple[str, str]) -> None:
    """Refuse two files that are not predictions of the same rows (count, labels, columns)."""
    if len(a.labels) != len(b.labels):
        raise ValueError(
            f"B ({paths[1]}) holds {len(b.labels):,} rows and A ({paths[0]}) "
            f"{len(a.labels):,}: compare needs two models' predictions of the same rows, in "
            "the same order."
        )
    check_same_columns(a, b, f"B ({paths[1]})", f"A ({paths[0]})")
    differ = np.flatnonzero(a.labels != b.labels)
    if differ.size:
        row = int(differ[0])
        raise ValueError(
            f"the labels of A ({paths[0]}) and B ({paths[1]}) differ at {differ.size:,} rows, "
            f"the first row {row} ({a.labels[row]} against {b.labels[row]}): compare needs "
            "two models' predictions of the same rows, in the same order."
        )


def _data(part: Part, scores: bool, logits: bool) -> _Data:
    return _Data(metric_view(part.predictions, scores, logits), part.labels, logits, part.checked)


def metric_entry(name: str, values: Sequence[float], result=None) -> dict:
    """A ``metrics`` entry: both values, A - B and, given a bootstrap ``result``, its interval."""
    entry = {
        "metric": name,
        "A": _finite(values[0]),
        "B": _finite(values[1]),
        "difference": _finite(values[0] - values[1]),
        "interval": None,
        "pvalue": None,
        "better": None,
    }
    if result is not None:
        low, high = result.confidence_interval
        entry["interval"] = [_finite(low), _finite(high)]
        entry["pvalue"] = _finite(result.pvalue)
        entry["better"] = _better(low, high)
    return entry


def _metric_entry(metric, data: tuple[_Data, _Data], options: ReportOptions) -> dict:
    """Both models' values of ``metric``, the difference and, with ``--ci``, its interval."""
    values = [model.value(metric, options.bins) for model in data]
    result = None
    if options.ci:
        progress(f"paired bootstrap of {metric.name} ({options.n_resamples} resamples)")
        prob_a, labels, logits = data[0].arguments(metric)
        prob_b, _, _ = data[1].arguments(metric)
        result = paired_bootstrap(
            metric.function,
            prob_a,
            prob_b,
            labels,
            n_resamples=options.n_resamples,
            confidence_level=CONFIDENCE_LEVEL,
            random_state=options.seed,
            **metric.keywords(options.bins, logits),
        )
    return metric_entry(metric.name, values, result)


def score_entry(name: str, result) -> dict:
    """A ``score_tests`` entry of the paired t test ``result`` of the scores ``name``."""
    low, high = result.confidence_interval
    return {
        "score": name,
        "test": "paired t",
        "A": result.score_a,
        "B": result.score_b,
        "difference": result.mean_difference,
        "standard_error": result.standard_error,
        "interval": [_finite(low), _finite(high)],
        "statistic": _finite(result.statistic),
        "df": result.df,
        "pvalue": result.pvalue,
        "better": _better(low, high),
    }


def _score_entry(name: str, data: tuple[_Data, _Data]) -> dict:
    """The paired t test of the per-row scores ``name`` (Brier or NLL) of the two models."""
    result = paired_score_test(
        data[0].view,
        data[1].view,
        data[0].labels,
        score=SCORES[name],
        confidence_level=CONFIDENCE_LEVEL,
        logits=data[0].logits,
    )
    return score_entry(name, result)


def _options(request: CompareRequest, n_rows: int) -> ReportOptions:
    """The options, ``--bins auto`` resolved on the rows (one count for every number)."""
    options = request.report
    if isinstance(options.bins, str):
        return replace(options, bins=len(check_bins(options.bins, n_samples=n_rows)) - 1)
    return options


def header(
    request: CompareRequest, command: Sequence[str], n_classes: int, n: int, options
) -> dict:
    """The document's header: the tool, the command, both files, the input and the options."""
    file = request.file_a
    return {
        "tool": "calibration-toolbox",
        "version": __version__,
        "command": ["calibration-toolbox", *command],
        "versions": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
        },
        "models": {"A": {"file": file.path}, "B": {"file": request.file_b.path}},
        "input": input_kind(file.logits, file.scores),
        "n_classes": n_classes,
        "n": n,
        "bins": options.bins,
        "confidence_level": CONFIDENCE_LEVEL,
        "n_resamples": options.n_resamples if options.ci else None,
        "seed": options.seed if options.ci else None,
    }


def build_comparison(request: CompareRequest, command: Sequence[str]) -> Comparison:
    """Every number of ``compare``: both files read and checked, then each metric and test."""
    warned = Warned()
    paths = (request.file_a.path, request.file_b.path)
    with warned.of_file():
        parts = read_predictions(request.file_a), read_predictions(request.file_b)
        check_same_rows(*parts, paths)
        options = _options(request, len(parts[0].labels))
        file = request.file_a
        data = tuple(_data(part, file.scores, file.logits) for part in parts)
        predictions = parts[0].predictions
        n_classes = 2 if predictions.ndim == 1 else int(predictions.shape[1])
        comparison = Comparison(header(request, command, n_classes, len(predictions), options))
        document = comparison.document
        document["reliability"] = {}
        for name, model in zip(MODELS, data, strict=True):
            prob, labels, logits = model.arguments()
            table = calibration_table(
                prob, labels, bins=options.bins, class_conditional=False, logits=logits
            )
            comparison.tables[name] = table
            document["models"][name].update(summary(table, file.scores))
            document["reliability"][name] = reliability(table)
        document["metrics"] = [_metric_entry(metric, data, options) for metric in options.metrics]
        progress("")
        document["score_tests"] = [_score_entry(name, data) for name in SCORES]
    document["warnings"] = warned.file
    return comparison


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.5f}"


def _plain(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.5f}"


def _interval(interval: list | None) -> str:
    if interval is None:
        return ""
    return f"[{_signed(interval[0])}, {_signed(interval[1])}]"


def _verdict(entry: dict) -> str:
    return entry["better"] or ("" if entry["interval"] is None else "neither")


def _pvalue(value: float | None) -> str:
    return "" if value is None else f"{value:.2g}"


def _metric_lines(document: dict) -> list[str]:
    level = f"{100 * document['confidence_level']:g} %"
    resampled = document["n_resamples"] is not None
    lines = [
        f"{'metric':<10} {'A':>9} {'B':>9} {'A - B':>9}  "
        f"{level + ' paired interval':<24} {'p':>7}  better",
    ]
    for entry in document["metrics"]:
        lines.append(
            f"{entry['metric']:<10} {_plain(entry['A']):>9} {_plain(entry['B']):>9} "
            f"{_signed(entry['difference']):>9}  {_interval(entry['interval']):<24} "
            f"{_pvalue(entry['pvalue']):>7}  {_verdict(entry)}"
        )
    if resampled:
        lines.append(
            f"paired bootstrap: {document['n_resamples']} resamples of the rows, both models "
            f"on the same rows (--seed {document['seed']}); p: the centred bootstrap test "
            "of no difference."
        )
    else:
        lines.append("--ci adds the paired bootstrap interval of each difference.")
    return lines


def _score_lines(document: dict) -> list[str]:
    level = f"{100 * document['confidence_level']:g} %"
    lines = [
        f"paired t test of the per-row scores (two-sided, {document['n']:,} rows):",
        f"{'score':<10} {'A':>9} {'B':>9} {'A - B':>9}  {level + ' interval':<24} "
        f"{'t':>7} {'p':>8}  better",
    ]
    for entry in document["score_tests"]:
        statistic = "n/a" if entry["statistic"] is None else f"{entry['statistic']:.2f}"
        lines.append(
            f"{entry['score']:<10} {_plain(entry['A']):>9} {_plain(entry['B']):>9} "
            f"{_signed(entry['difference']):>9}  {_interval(entry['interval']):<24} "
            f"{statistic:>7} {_pvalue(entry['pvalue']):>8}  {_verdict(entry)}"
        )
    return lines


def _summary_line(document: dict) -> str:
    level = f"{100 * document['confidence_level']:g} %"
    metrics = [
        f"{entry['metric']} {entry['better']}"
        for entry in document["metrics"]
        if entry["better"] is not None
    ]
    tests = [
        f"{entry['score']} {entry['better']}"
        for entry in document["score_tests"]
        if entry["better"] is not None
    ]
    found = [
        *([f"metrics: {', '.join(metrics)}"] if metrics else []),
        *([f"paired t tests: {', '.join(tests)}"] if tests else []),
    ]
    verdict = "; ".join(found) if found else "no interval of a difference excludes 0"
    return f"lower is better; better at the {level} level: {verdict}."


def text(comparison: Comparison) -> str:
    """The comparison as the text ``compare`` prints."""
    document = comparison.document
    models = document["models"]
    lines = [
        f"calibration-toolbox {document['version']}: A = {models['A']['file']}, "
        f"B = {models['B']['file']}",
        f"{document['n']:,} rows with the same labels, {document['n_classes']} classes, "
        f"{document['input']}, {document['bins']} bins",
    ]
    for name in MODELS:
        shown = ", ".join(
            f"{key.replace('_', ' ')} {value:.4f}"
            for key, value in models[name].items()
            if key != "file"
        )
        lines.append(f"{name}: {shown}")
    lines += ["", *_metric_lines(document), "", *_score_lines(document), ""]
    lines.append(_summary_line(document))
    return "\n".join(lines)
