"""The self-contained HTML page of a calibration report (``report FILE --html out.html``).

:func:`render_report` turns the report document (the JSON of ``report --format json``) and
the engine's :class:`~calibration_toolbox.CalibrationTable` objects into one HTML5 page
that a user can attach to a model card: the warnings of the run (the file's, and each
method's by its name), the metric table (one column per method), the parameters of each
method (its warnings beside them), reliability diagrams and confidence histograms before
and after each method, the per-class table and class-wise grids when present, and at the
bottom the exact command and the versions that produced it.  :func:`render_comparison`
makes the page of ``compare A B``: both models' metrics and differences with their
intervals, the paired score tests, and both reliability diagrams on one figure.

The page fetches nothing: no script, no web font, no external style sheet; every figure is
inline SVG drawn by matplotlib's SVG backend with its text as paths, and a
Content-Security-Policy forbids any load.  Every string of the document is escaped
(``html.escape``), so a file named ``<b>.npz`` is shown, not interpreted.

matplotlib is imported when a page is rendered (the ``plot`` extra).  The figures are
``matplotlib.figure.Figure`` objects drawn under matplotlib's default style inside a
``style.context``: pyplot's list of figures and the caller's rcParams are left as they were.
"""

from __future__ import annotations

import contextlib
import html
import io
import math
import os
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from calibration_toolbox._errors import InputError, InputTypeError, Name
from calibration_toolbox.metrics import (
    CalibrationTable,
    RiskCoverageCurve,
    SmoothReliabilityCurve,
)
from calibration_toolbox.plot import (
    _CURVE_DISPLAYS,
    MAX_GRID_CLASSES,
    ConfidenceHistogram,
    ReliabilityDiagram,
    _draw_curve,
    _group,
    _pyplot,
)
from calibration_toolbox.stats import CORPReliability

__all__ = ["render_comparison", "render_report"]

BASELINE = "uncalibrated"
"""The method every other method's figures are drawn against (when the report has it)."""

# The rows above the metrics, when a result has them: (document key, row title).
_SUMMARY_ROWS = (
    ("accuracy", "accuracy"),
    ("mean_target", "mean target"),
    ("mean_score", "mean score"),
)

_NO_PARAMETERS = {
    True: "none: the predictions as given",
    False: "not in the report (it lists scalar parameters only)",
}

# The figures name the top-label reading; one score per row against a 0/1 target is read so.
_SCORES_NOTE = (
    " The input is one score per row against a 0/1 target: read accuracy as the mean "
    "target and confidence as the mean score."
)

_STYLE = """
:root { color-scheme: light; }
body { margin: 0; background: #fff; color: #1a1a1a;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 16px 20px 40px; }
h1 { font-size: 1.5em; margin: 0.2em 0 0.1em; overflow-wrap: anywhere; }
h2 { font-size: 1.2em; margin: 1.6em 0 0.5em; border-bottom: 1px solid #ccc; }
h3 { font-size: 1.05em; margin: 1.2em 0 0.3em; }
p.note, figcaption, .muted { color: #555; font-size: 0.9em; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; }
dl.facts dt { font-weight: 600; } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 0.4em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d0d0; padding: 3px 10px; }
thead th { background: #f1f3f5; vertical-align: bottom; }
tbody th { text-align: left; font-weight: 600; background: #fafafa; }
td.num { text-align: right; white-space: nowrap; }
td.text { text-align: left; }
.interval { display: block; color: #555; font-size: 0.82em; }
.scroll { overflow-x: auto; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(420px, 1fr));
  gap: 12px 20px; align-items: start; }
figure { margin: 0; }
figure svg { display: block; width: 100%; height: auto; }
figure.wide svg { max-width: 1000px; }
pre { background: #f6f8fa; padding: 8px 10px; white-space: pre-wrap;
  overflow-wrap: anywhere; }
footer { margin-top: 2em; border-top: 1px solid #ccc; padding-top: 0.6em; }
ul.warnings { list-style: none; padding: 0; margin: 0.4em 0; }
.warning { background: #fff4e5; border-left: 4px solid #d97706; padding: 4px 10px;
  margin: 3px 0; overflow-wrap: anywhere; }
"""

# Nothing may be loaded: inline styles and inline SVG are all the page uses.
_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

_PROLOGUE = re.compile(r"\A.*?(?=<svg\b)", re.DOTALL)  # XML declaration and DOCTYPE
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)
_COMMENT = re.compile(r"<!--.*?-->\s*", re.DOTALL)  # matplotlib escapes "--" inside
_ID_REFERENCE = re.compile(r'(\bid="|href="#|url\(#)')


def render_report(
    report: Mapping[str, Any],
    tables: Mapping[str, CalibrationTable],
    class_tables: Mapping[str, CalibrationTable] | None = None,
    curves: Mapping[
        str, Mapping[str, CORPReliability | SmoothReliabilityCurve | RiskCoverageCurve]
    ]
    | None = None,
    group_tables: Mapping[str, CalibrationTable] | None = None,
) -> str:
    """The whole self-contained HTML page of a report document.

    Parameters
    ----------
    report : dict
        The report document of ``calibration-toolbox report --format json``: ``file``,
        ``command``, ``versions``, ``n``, ``bins``, ``metrics`` and one entry of
        ``results`` per method (``method``, ``parameters``, ``accuracy``, ``metrics`` and,
        when present, ``warnings``, ``intervals``, ``per_class`` and ``tests``);
        ``warnings``, when present, lists those of the file.
    tables : mapping of str to CalibrationTable
        The pooled top-label table of every method of ``report["results"]``; the
        reliability diagrams and confidence histograms are drawn from them.  Each method
        other than ``"uncalibrated"`` is drawn over the uncalibrated one (before/after).
    class_tables : mapping of str to CalibrationTable, optional
        Class-conditional tables of some methods: a class-wise reliability grid for each,
        all classes when K <= 20, otherwise the 20 classes with the largest class-wise
        error in the first such table (the page says which).
    curves : mapping of str to mapping of str to curve, optional
        The curves of the measures' own diagrams, by diagram (``'corp'``: a
        ``CORPReliability``, ``--metrics CORP``; ``'smooth'``: a
        ``SmoothReliabilityCurve``, ``--metrics SmoothECE``; ``'risk_coverage'``: a
        ``RiskCoverageCurve``, ``--metrics AURC``...), then by method: a section for each
        (one diagram per method, with its band; the risk-coverage curves on one).
    group_tables : mapping of str to CalibrationTable, optional
        Each group's pooled top-label table (``report --groups``, with the document's
        ``groups`` entry): the per-group table and a reliability diagram per group.

    Returns
    -------
    str
        The page, an HTML5 document with inline CSS and inline SVG figures only.

    Raises
    ------
    TypeError
        When ``report`` is not a mapping, or a table is not a ``CalibrationTable``.
    ValueError
        When ``report`` has no results, or a method of the report has no table.
    """
    results = _check_report(report)
    methods = [result["method"] for result in results]
    pooled = _check_tables(tables, methods, "tables", class_conditional=False)
    grids = _check_tables(class_tables or {}, methods, "class_tables", class_conditional=True)
    name = str(report.get("file", "predictions"))
    figures = _Figures()
    body = [
        f"<h1>Calibration report: {_text(name)}</h1>",
        _facts(report),
        _warning_section(report, results),
        _metric_section(report, results),
        _test_section(results),
        _parameter_section(results),
        _selection_section(report.get("selection")),
        _figure_section(methods, pooled, figures, scores=report.get("input") == "scores"),
        *(
            _curve_section(_DIAGRAMS[diagram], drawn, figures)
            for diagram, drawn in _check_curves(curves, methods).items()
        ),
        _per_class_section(results),
        _per_class_section(results, "per_label", "label"),
        _grid_section(grids, figures),
        _group_section(report.get("groups"), group_tables or {}, figures),
        _footer(report),
    ]
    return _page(f"Calibration report: {name}", body)


def render_comparison(
    comparison: Mapping[str, Any], tables: Mapping[str, CalibrationTable]
) -> str:
    """The self-contained HTML page of ``compare A B``: two models on the same rows.

    Parameters
    ----------
    comparison : dict
        The document of ``calibration-toolbox compare --format json``: ``models`` (``A``
        and ``B``, each with its ``file``), ``n``, ``bins``, ``confidence_level``,
        ``metrics`` and ``score_tests`` (entries with ``A``, ``B``, ``difference``,
        ``interval``, ``pvalue`` and ``better``), ``command``, ``versions`` and, when
        present, ``warnings``.
    tables : mapping of str to CalibrationTable
        The pooled top-label table of each model, under ``"A"`` and ``"B"``: both
        reliability diagrams (and confidence histograms) are drawn on one figure.

    Returns
    -------
    str
        The page, an HTML5 document with inline CSS and inline SVG figures only.

    Raises
    ------
    TypeError
        When ``comparison`` is not a mapping, or a table is not a ``CalibrationTable``.
    ValueError
        When a model of the comparison has no table.
    """
    if not isinstance(comparison, Mapping):
        raise InputTypeError(
            "{comparison} must be the document of compare --format json (a mapping); got {value}.",
            argument="comparison",
            value=type(comparison).__name__,
        )
    pooled = _check_tables(tables, ["A", "B"], "tables", class_conditional=False)
    labels = _model_labels(comparison.get("models", {}))
    series = {labels[name]: pooled[name] for name in ("A", "B")}
    title = f"Comparison: {labels['A']} against {labels['B']}"
    figures = _Figures()
    body = [
        f"<h1>{_text(title)}</h1>",
        _comparison_facts(comparison),
        _comparison_warnings(comparison),
        _difference_section(comparison),
        _comparison_figures(list(series), series, figures, comparison.get("input") == "scores"),
        _footer(comparison),
    ]
    return _page(title, body)


def _model_labels(models: Mapping[str, Any]) -> dict[str, str]:
    """``A: name`` and ``B: name``, the files' names (their paths where the names are alike)."""
    paths = {name: str(models.get(name, {}).get("file", name)) for name in ("A", "B")}
    names = {name: os.path.basename(path) or path for name, path in paths.items()}
    shown = paths if names["A"] == names["B"] else names
    return {name: f"{name}: {shown[name]}" for name in ("A", "B")}


def _comparison_facts(comparison: Mapping[str, Any]) -> str:
    models = comparison.get("models", {})
    facts = [
        ("model A", models.get("A", {}).get("file")),
        ("model B", models.get("B", {}).get("file")),
        *(
            (f"{title} of {name}", models.get(name, {}).get(key))
            for key, title in _SUMMARY_ROWS
            for name in ("A", "B")
        ),
        ("input", comparison.get("input")),
        ("classes", comparison.get("n_classes")),
        ("rows (the same in both)", comparison.get("n")),
        ("bins", comparison.get("bins")),
        ("bootstrap resamples", comparison.get("n_resamples")),
        ("seed", comparison.get("seed")),
    ]
    return _fact_list(facts)


def _comparison_warnings(comparison: Mapping[str, Any]) -> str:
    warnings = [str(message) for message in comparison.get("warnings") or []]
    if not warnings:
        return ""
    items = "".join(f'<li class="warning">{_text(message)}</li>' for message in warnings)
    return f'<h2>Warnings</h2><ul class="warnings">{items}</ul>'


def _difference_rows(entries: list[Mapping[str, Any]], key: str) -> str:
    rows = []
    for entry in entries:
        interval = entry.get("interval")
        shown = "" if interval is None else f"[{_text(interval[0])}, {_text(interval[1])}]"
        better = entry.get("better") or ("" if interval is None else "neither")
        cells = [entry.get("A"), entry.get("B"), entry.get("difference")]
        rows.append(
            f"<tr><th>{_text(entry.get(key))}</th>"
            + "".join(_cell(value) for value in cells)
            + f'<td class="num">{shown}</td>'
            + _cell("" if entry.get("pvalue") is None else float(entry["pvalue"]))
            + _cell(better)
            + "</tr>"
        )
    return "".join(rows)


def _difference_section(comparison: Mapping[str, Any]) -> str:
    """The metrics and the score tests of both models, their differences and verdicts."""
    level = f"{100 * float(comparison.get('confidence_level', 0.95)):g} %"
    head = (
        "<thead><tr><th>{what}</th><th>A</th><th>B</th><th>A \u2212 B</th>"
        f"<th>{level} interval</th><th>p</th><th>better</th></tr></thead>"
    )
    parts = [
        "<h2>Metrics</h2>",
        '<p class="note">Lower is better. The interval is the paired bootstrap interval of '
        "the difference (both models on the same resampled rows; with --ci), the p-value "
        "that of the centred bootstrap test of no difference; a model is better when the "
        "interval excludes 0.</p>",
        '<div class="scroll"><table>'
        + head.format(what="metric")
        + f"<tbody>{_difference_rows(list(comparison.get('metrics', [])), 'metric')}</tbody>"
        + "</table></div>",
        "<h2>Paired score tests</h2>",
        '<p class="note">Student\'s paired t test of the per-row scores (Diebold-Mariano '
        "with independent rows), two-sided; the interval is that of the mean difference.</p>",
        '<div class="scroll"><table>'
        + head.format(what="score")
        + f"<tbody>{_difference_rows(list(comparison.get('score_tests', [])), 'score')}"
        + "</tbody></table></div>",
    ]
    return "".join(parts)


def _comparison_figures(
    series: list[str], tables: dict[str, CalibrationTable], figures: _Figures, scores: bool
) -> str:
    """Both models' reliability diagrams on one figure, and their confidence histograms."""
    parts = [
        "<h2>Reliability diagrams and confidence histograms, overlaid</h2>",
        '<p class="note">Reliability: accuracy against mean confidence in each non-empty '
        "bin of each model (error bars: Wilson 95 % intervals), the bin counts below on a "
        "log scale. Histogram: the share of samples per confidence bin."
        + (_SCORES_NOTE if scores else "")
        + "</p>",
    ]
    described = " and ".join(series)
    with _drawing():
        parts.append(
            '<div class="figures">'
            + figures.svg(_reliability(series, tables), f"Reliability diagrams of {described}")
            + figures.svg(_histogram(series, tables), f"Confidence histograms of {described}")
            + "</div>"
        )
    return "".join(parts)


# --------------------------------------------------------------------------- checks


def _check_report(report: object) -> list[Mapping[str, Any]]:
    """The results of the document, each with a string ``method`` and a ``metrics`` map."""
    if not isinstance(report, Mapping):
        raise InputTypeError(
            "{report} must be a dict (the report document); got {value}.",
            argument="report",
            value=type(report).__name__,
        )
    results = report.get("results")
    if not isinstance(results, Sequence) or isinstance(results, str) or not results:
        raise InputError(
            "{key} must be a non-empty list; got {results!r}.", key=_RESULTS, results=results
        )
    for result in results:
        if not isinstance(result, Mapping) or not isinstance(result.get("method"), str):
            raise InputError(
                "every entry of {key} must be a dict with a 'method' name; got {result!r}.",
                key=_RESULTS,
                result=result,
            )
    return list(results)


_RESULTS = Name("report['results']")


def _check_tables(
    tables: object, methods: list[str], name: str, *, class_conditional: bool
) -> dict[str, CalibrationTable]:
    """``tables`` in the order of the report's methods (every method for ``tables``)."""
    if not isinstance(tables, Mapping):
        raise InputTypeError(
            "{argument} must be a mapping of method to CalibrationTable.", argument=name
        )
    unknown = [method for method in tables if method not in methods]
    missing = [method for method in methods if method not in tables]
    if unknown or (missing and not class_conditional):
        problem = f"tables of {unknown!r}" if unknown else f"no table for {missing!r}"
        raise InputError(
            "{argument} must hold tables of the report's methods {methods!r}; got {problem}.",
            argument=name,
            methods=methods,
            problem=problem,
        )
    kind = "class-conditional" if class_conditional else "pooled (top-label)"
    for method, table in tables.items():
        if not isinstance(table, CalibrationTable):
            raise InputTypeError(
                "{entry} must be a CalibrationTable; got {value}.",
                entry=Name(f"{name}[{method!r}]"),
                value=type(table).__name__,
            )
        if table.class_conditional != class_conditional:
            raise InputError(
                "{entry} must be a {kind} CalibrationTable.",
                entry=Name(f"{name}[{method!r}]"),
                kind=kind,
            )
    return {method: tables[method] for method in methods if method in tables}


# --------------------------------------------------------------------------- text


def _text(value: object) -> str:
    """Any value of the document as escaped text (numbers as :func:`_number`)."""
    if isinstance(value, bool) or value is None:
        return html.escape(str(value))
    if isinstance(value, (int, float, np.integer, np.floating)):
        return _number(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(item) for item in value)
    return html.escape(str(value))


def _number(value: float) -> str:
    """4 decimals; an integral count as an integer; a tiny nonzero value in e-notation.

    A parameter of 3e-6 printed as 0.0000 would read as zero.
    """
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    value = float(value)
    if not math.isfinite(value):
        return "n/a" if math.isnan(value) else ("\u221e" if value > 0 else "\u2212\u221e")
    if value != 0 and abs(value) < 5e-5:
        return f"{value:.3e}"
    return f"{value:.4f}"


def _count(value: float) -> str:
    """A (weighted) count: an integer when it is one."""
    return _number(int(value)) if float(value).is_integer() else _number(value)


def _cell(value: object) -> str:
    """A table cell: numbers right-aligned, anything else as escaped text."""
    numeric = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(
        value, bool
    )
    return f'<td class="{"num" if numeric else "text"}">{_text(value)}</td>'


def _matplotlib_text(text: str) -> str:
    """A label matplotlib draws as it is (a ``$`` would start mathtext)."""
    return text.replace("$", r"\$")


# --------------------------------------------------------------------------- sections


def _fact_list(facts: list[tuple[str, object]]) -> str:
    """The facts (term, value) that have a value, as the page's definition list."""
    items = "".join(
        f"<dt>{term}</dt><dd>{_text(value)}</dd>" for term, value in facts if value is not None
    )
    return f'<dl class="facts">{items}</dl>'


def _facts(report: Mapping[str, Any]) -> str:
    """What the numbers are about: file, input, classes, rows, fit and bins."""
    facts = [
        ("file", report.get("file")),
        ("input", report.get("input")),
        ("classes", report.get("n_classes")),
        ("rows measured", report.get("n")),
        ("rows fitted on", report.get("n_fit")),
        ("fitted on", report.get("fit")),
        ("bins", report.get("bins")),
        ("bins chosen by", report.get("bins_rule")),
    ]
    return _fact_list(facts)


def _warnings_of(entry: Mapping[str, Any]) -> list[str]:
    """The ``warnings`` of the document or of a result: a list of strings (absent: none)."""
    warnings = entry.get("warnings") or []
    if isinstance(warnings, str) or not isinstance(warnings, Sequence):
        raise InputError(
            "{warnings} must be a list of strings; got {value!r}.",
            argument="warnings",
            value=warnings,
        )
    return [str(warning) for warning in warnings]


def _warning_section(report: Mapping[str, Any], results: list[Mapping[str, Any]]) -> str:
    """The warnings of the run: the file's, then each method's under its name (none: empty)."""
    items = [
        f'<li class="warning"><strong>file</strong>: {_text(warning)}</li>'
        for warning in _warnings_of(report)
    ]
    for result in results:
        items += [
            f'<li class="warning"><strong>{_text(result["method"])}</strong>: '
            f"{_text(warning)}</li>"
            for warning in _warnings_of(result)
        ]
    if not items:
        return ""
    return (
        "<h2>Warnings</h2>"
        '<p class="note">What the command line warned of (on stderr too): about the file, '
        "then about each method, by its name.</p>"
        f'<ul id="warnings" class="warnings">{"".join(items)}</ul>'
    )


def _metric_section(report: Mapping[str, Any], results: list[Mapping[str, Any]]) -> str:
    """One row per metric (and accuracy), one column per method."""
    names = list(report.get("metrics") or dict.fromkeys(_keys(results, "metrics")))
    head = "".join(f"<th>{_text(result['method'])}</th>" for result in results)
    rows = [
        _row(title, [result.get(key) for result in results], [None] * len(results))
        for key, title in _SUMMARY_ROWS
        if any(key in result for result in results)
    ]
    rows += [
        _row(
            name,
            [result.get("metrics", {}).get(name) for result in results],
            [result.get("intervals", {}).get(name) for result in results],
        )
        for name in names
    ]
    with_intervals = any(result.get("intervals") for result in results)
    note = "Every calibration error, the Brier score and the NLL: lower is better."
    if with_intervals:
        note += " Under a value, its 95 % bootstrap interval."
    n = report.get("n")
    rows_text = f" on {_text(n)} rows" if n is not None else ""
    return (
        "<h2>Metrics</h2>"
        f'<p class="note">Measured{rows_text}, one column per method. {note}</p>'
        f'<div class="scroll"><table id="metrics"><thead><tr><th>metric</th>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _test_section(results: list[Mapping[str, Any]]) -> str:
    """The tests with p-values of each method (files read whole only): p, then sigmas."""
    if not any(result.get("tests") for result in results):
        return ""
    head = "".join(f"<th>{_text(result['method'])}</th>" for result in results)
    rows = []
    for name in dict.fromkeys(_keys(results, "tests")):
        cells = []
        for result in results:
            test = result.get("tests", {}).get(name)
            text = "" if test is None else (
                f"p = {float(test['pvalue']):.2g}"
                f'<span class="interval">{float(test["scaled_statistic"]):.2f} sigmas</span>'
            )  # fmt: skip
            cells.append(f'<td class="num">{text}</td>')
        rows.append(f"<tr><th>{_text(name)}</th>{''.join(cells)}</tr>")
    return (
        "<h2>Calibration tests</h2>"
        '<p class="note">The p-value of "the model is calibrated" and the statistic in '
        "standard deviations under that hypothesis: Kolmogorov-Smirnov and Kuiper of the "
        "cumulative walk (Tygert's scaling), Spiegelhalter's Z. A p-value of 2.2e-16 is the "
        "floor (machine epsilon); a blank cell, a test the scores leave undefined.</p>"
        f'<div class="scroll"><table id="tests"><thead><tr><th>test</th>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _keys(results: list[Mapping[str, Any]], field: str) -> list[str]:
    return [key for result in results for key in result.get(field, {})]


def _row(title: str, values: list[object], intervals: list[object]) -> str:
    cells = []
    for value, interval in zip(values, intervals, strict=True):
        text = "" if value is None else _text(value)
        if interval is not None:
            text += f'<span class="interval">[{_text(list(interval))}]</span>'
        cells.append(f'<td class="num">{text}</td>')
    return f"<tr><th>{_text(title)}</th>{''.join(cells)}</tr>"


def _parameter_section(results: list[Mapping[str, Any]]) -> str:
    """The fitted parameters of each method, as the document lists them (small scalars).

    A method's warnings are beside its parameters, in a third column (when any has one).
    """
    with_warnings = any(_warnings_of(result) for result in results)
    rows = []
    for result in results:
        parameters = result.get("parameters") or {}
        text = "; ".join(f"{_text(key)} = {_text(value)}" for key, value in parameters.items())
        if not text:  # "none" alone would say that a fitted vector scaling has no parameter
            text = _NO_PARAMETERS[result["method"] == BASELINE]
        cells = f'<td class="text">{text}</td>'
        if with_warnings:
            notes = "".join(
                f'<div class="warning">{_text(warning)}</div>' for warning in _warnings_of(result)
            )
            cells += f'<td class="text">{notes}</td>'
        rows.append(f"<tr><th>{_text(result['method'])}</th>{cells}</tr>")
    head = "<th>method</th><th>fitted parameters</th>"
    head += "<th>warnings</th>" if with_warnings else ""
    return (
        "<h2>Parameters</h2>"
        f'<table id="parameters"><thead><tr>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _selection_section(selection: Mapping[str, Any] | None) -> str:
    """``report --method auto``: the cross-validated score of each method, the chosen one."""
    if not selection:
        return ""
    rows = []
    for row in sorted(selection["table"], key=lambda row: row["mean"]):
        chosen = "chosen" if row["name"] == selection["best"] else ""
        rows.append(
            f"<tr><th>{_text(row['name'])}</th><td>{_number(row['mean'])}</td>"
            f'<td>{_number(row["spread"])}</td><td class="text">{chosen}</td></tr>'
        )
    caption = (
        f"Mean {_text(selection['score'])} over {_text(selection['folds'])} folds of the fit "
        f"rows (seed {_text(selection['seed'])}) and its spread (standard deviation) over "
        "the folds; lower is better."
    )
    return (
        "<h2>Method chosen by cross-validation</h2>"
        f"<p>{caption}</p>"
        '<table id="selection"><thead><tr><th>method</th><th>mean</th><th>spread</th>'
        f"<th></th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _comparisons(methods: list[str]) -> list[list[str]]:
    """The series of each pair of figures: the baseline and one method, or one method."""
    if BASELINE not in methods:
        return [[method] for method in methods]
    others = [method for method in methods if method != BASELINE]
    return [[BASELINE, method] for method in others] or [[BASELINE]]


def _figure_section(
    methods: list[str],
    tables: dict[str, CalibrationTable],
    figures: _Figures,
    *,
    scores: bool = False,
) -> str:
    """A reliability diagram and a confidence histogram for each before/after pair."""
    parts = ["<h2>Reliability diagrams and confidence histograms</h2>"]
    parts.append(
        '<p class="note">Reliability: accuracy against mean confidence in each non-empty '
        "bin (error bars: Wilson 95 % intervals; shaded: the gap to the diagonal), the bin "
        "counts below on a log scale. Histogram: the share of samples per confidence bin, "
        "with the accuracy (dashed) and the mean confidence (dotted)."
        + (_SCORES_NOTE if scores else "")
        + "</p>"
    )
    with _drawing():
        for series in _comparisons(methods):
            title = " \u2192 ".join(_text(method) for method in series)
            described = " and ".join(series)
            parts.append(
                f'<h3>{title}</h3><div class="figures">'
                + figures.svg(_reliability(series, tables), f"Reliability diagram of {described}")
                + figures.svg(_histogram(series, tables), f"Confidence histogram of {described}")
                + "</div>"
            )
    return "".join(parts)


def _per_class_section(
    results: list[Mapping[str, Any]], key: str = "per_class", row_name: str = "class"
) -> str:
    """The per-class entries: a column per (field, method), one column for equal fields.

    ``key="per_label"`` and ``row_name="label"``: the per-label entries of a multi-label
    report (``report --multilabel``), one row per label.
    """
    with_classes = [result for result in results if result.get(key)]
    if not with_classes:
        return ""
    classes = [entry.get(row_name) for entry in with_classes[0][key]]
    keys = [field for result in with_classes for entry in result[key] for field in entry]
    fields = [field for field in dict.fromkeys(keys) if field != row_name]
    columns = []  # (header, values per class)
    for field in fields:
        per_method = [[entry.get(field) for entry in result[key]] for result in with_classes]
        if all(values == per_method[0] for values in per_method):
            columns.append((_text(field), per_method[0]))
        else:
            columns += [
                (f'{_text(field)}<br><span class="muted">{_text(result["method"])}</span>', values)
                for result, values in zip(with_classes, per_method, strict=True)
            ]
    head = "".join(f"<th>{header}</th>" for header, _ in columns)
    rows = "".join(
        f"<tr><th>{_text(label)}</th>"
        + "".join(_cell(_at(values, row)) for _, values in columns)
        + "</tr>"
        for row, label in enumerate(classes)
    )
    opened = " open" if len(classes) <= MAX_GRID_CLASSES else ""
    plural = "classes" if row_name == "class" else f"{row_name}s"
    return (
        f"<h2>Per {row_name}</h2>"
        f"<details{opened}><summary>{len(classes)} {plural}</summary>"
        f'<div class="scroll"><table id="per-{row_name}"><thead><tr><th>{row_name}</th>'
        f"{head}</tr></thead><tbody>{rows}</tbody></table></div></details>"
    )


def _at(values: list[object], row: int) -> object:
    return values[row] if row < len(values) else None


@dataclass(frozen=True)
class _Diagram:
    """A section of diagrams of the measures' own curves: its heading, note and curve type."""

    title: str
    figure: str
    curve: type
    note: str
    counts: bool
    """Whether the figure has the forecasts' counts under the curve."""
    legend_rows: int
    """The entries of its legend: the diagonal, the curve, its band (and the density)."""


#: The diagrams of ``render_report``'s ``curves``, in the page's order.
_DIAGRAMS = {
    "corp": _Diagram(
        "CORP reliability diagrams",
        "CORP reliability diagram",
        CORPReliability,
        "CORP (Dimitriadis, Gneiting &amp; Jordan 2021): the isotonic (PAV) fit of "
        "correctness on the confidence, its bins chosen by the data, over the band where a "
        "calibrated model's fit falls (pointwise); in the corner the score and its parts MCB "
        "(with the p-value of the MCB test), DSC and UNC.",
        counts=True,
        legend_rows=3,
    ),
    "smooth": _Diagram(
        "Smooth reliability diagrams",
        "Smooth reliability diagram",
        SmoothReliabilityCurve,
        "Smooth (B\u0142asiok &amp; Nakkiran 2024): the kernel-smoothed accuracy against the "
        "confidence (a Gaussian kernel reflected at 0 and 1), the curve whose distance to the "
        "diagonal SmoothECE integrates, with its pointwise bootstrap band; in grey the "
        "density of the confidences.",
        counts=False,
        legend_rows=4,
    ),
    "risk_coverage": _Diagram(
        "Risk-coverage curves",
        "Risk-coverage curves",
        RiskCoverageCurve,
        "Answering only the rows whose confidence is at least a threshold: the error rate "
        "among the answered (selective risk, solid; its area the AURC) and the share of all "
        "rows answered wrongly (generalized risk, dashed; its area the AUGRC) against the "
        "share answered, one point per distinct confidence (ties kept together); dotted, the "
        "oracle confidence of the same error rate. A recalibration that keeps the ranking of "
        "the rows (temperature scaling) keeps the curve.",
        counts=False,
        legend_rows=3,
    ),
}
_CURVES = Name("curves")


def _check_curves(
    curves: Mapping[str, Mapping[str, object]] | None, methods: list[str]
) -> dict[str, dict[str, Any]]:
    """The curves by diagram (in ``_DIAGRAMS``' order), each by method (in the report's)."""
    curves = dict(curves or {})
    for diagram, drawn in curves.items():
        if diagram not in _DIAGRAMS or not isinstance(drawn, Mapping):
            raise InputError(
                "{curves} must map diagrams ({diagrams}) to a mapping of methods; got "
                "{diagram!r}: {value}.",
                argument=_CURVES,
                diagrams=", ".join(map(repr, _DIAGRAMS)),
                diagram=diagram,
                value=type(drawn).__name__,
            )
        for method, curve in drawn.items():
            _check_curve(_DIAGRAMS[diagram], diagram, method, curve, methods)
    ordered = {diagram: curves[diagram] for diagram in _DIAGRAMS if curves.get(diagram)}
    return {
        diagram: {method: drawn[method] for method in methods if method in drawn}
        for diagram, drawn in ordered.items()
    }


def _check_curve(
    diagram: _Diagram, name: str, method: object, curve: object, methods: list[str]
) -> None:
    if method not in methods:
        raise InputError(
            "{curves} must map methods of the report; got {method!r} for {diagram!r} "
            "(methods: {methods}).",
            argument=_CURVES,
            method=method,
            diagram=name,
            methods=", ".join(methods),
        )
    if not isinstance(curve, diagram.curve):
        raise InputTypeError(
            "{curves}[{diagram!r}] must map each method to a {kind}; got {value} for {method!r}.",
            argument=_CURVES,
            diagram=name,
            kind=diagram.curve.__name__,
            value=type(curve).__name__,
            method=method,
        )


def _curve_section(diagram: _Diagram, curves: dict[str, Any], figures: _Figures) -> str:
    """A measure's own curves under the section's note.

    A figure per method, or one for all when their display overlays models
    (``plot._CURVE_DISPLAYS``: the risk-coverage curves).
    """
    parts = [f"<h2>{diagram.title}</h2>", f'<p class="note">{diagram.note}</p>']
    parts.append('<div class="figures">')
    _, overlaid = _CURVE_DISPLAYS[diagram.curve]
    drawn = [curves] if overlaid else [{method: curve} for method, curve in curves.items()]
    with _drawing():
        for series in drawn:
            described = " and ".join(series)
            parts.append(figures.svg(_curve(diagram, series), f"{diagram.figure} of {described}"))
    parts.append("</div>")
    return "".join(parts)


def _grid_section(grids: dict[str, CalibrationTable], figures: _Figures) -> str:
    """A class-wise reliability grid per class-conditional table."""
    if not grids:
        return ""
    first = next(iter(grids.values()))
    classes, note = _grid_classes(first, next(iter(grids)))
    parts = ["<h2>Class-wise reliability</h2>", f'<p class="note">{note}</p>']
    with _drawing():
        for method, table in grids.items():
            parts.append(
                f"<h3>{_text(method)}</h3>"
                + figures.svg(
                    _grid(method, table, classes),
                    f"Class-wise reliability diagrams of {method}",
                    wide=True,
                )
            )
    return "".join(parts)


def _group_section(
    entry: Mapping[str, Any] | None, tables: Mapping[str, CalibrationTable], figures: _Figures
) -> str:
    """``--groups``: each group's count and metrics, the worst group, a diagram per group."""
    if not entry:
        return ""
    names, metrics = list(entry["names"]), dict(entry["metrics"])
    head = "".join(f"<th>{_text(metric)}</th>" for metric in metrics)
    rows = "".join(
        f"<tr><th>{_text(name)}</th>{_cell(entry['counts'][row])}"
        + "".join(_cell(values[row]) for values in metrics.values())
        + "</tr>"
        for row, name in enumerate(names)
    )
    worst = [
        f"{_text(metric)}: {_text(found['group'])} ({_text(found['value'])})"
        for metric, found in entry["worst"].items()
        if found is not None
    ]
    parts = [
        f"<h2>By group ({_text(entry['column'])})</h2>",
        f'<p class="note">The uncalibrated predictions of each group of rows; the worst '
        f"group (largest value) of each metric: {'; '.join(worst) or 'none'}.</p>",
        f'<div class="scroll"><table id="groups"><thead><tr><th>group</th><th>count</th>'
        f"{head}</tr></thead><tbody>{rows}</tbody></table></div>",
    ]
    drawn = _drawn_groups(tables)
    if drawn:
        note = (
            ""
            if len(drawn) == len(tables)
            else (f" Only the {len(drawn)} groups of largest ECE of the {len(tables)} are drawn.")
        )
        parts.append(
            '<p class="note">One reliability diagram per group (x: the mean confidence of '
            f"a bin, y: its accuracy).{note}</p>"
        )
        with _drawing():
            parts.append(
                figures.svg(_group_grid(drawn), "Reliability diagram of each group", wide=True)
            )
    return "".join(parts)


def _drawn_groups(tables: Mapping[str, CalibrationTable]) -> dict[str, CalibrationTable]:
    """The groups with rows, at most MAX_GRID_CLASSES of them (those of largest ECE)."""
    filled = {name: table for name, table in tables.items() if table.counts.sum() > 0}
    if len(filled) <= MAX_GRID_CLASSES:
        return filled
    errors = [table.calibration_error(1) for table in filled.values()]
    chosen = np.sort(np.argsort(errors, kind="stable")[::-1][:MAX_GRID_CLASSES])
    names = list(filled)
    return {names[index]: filled[names[index]] for index in chosen}


def _group_grid(tables: Mapping[str, CalibrationTable]):
    n_panels = len(tables)
    n_columns = min(n_panels, 5)
    n_rows = math.ceil(n_panels / n_columns)
    figure = _new_figure(
        2.5 * n_columns + 0.5, 2.4 * n_rows + 0.9, top=0.7, wspace=0.12, hspace=0.35
    )
    grid = figure.subplots(n_rows, n_columns, sharex=True, sharey=True, squeeze=False)
    for extra in grid.ravel()[n_panels:]:
        figure.delaxes(extra)
    for panel, (name, table) in zip(grid.ravel(), tables.items(), strict=False):
        ReliabilityDiagram.from_table(table, ax=panel)
        panel.get_legend().remove()
        panel.set_xlabel("")
        panel.set_ylabel("")
        count = _count(table.counts.sum())
        title = f"{name}: ECE {table.calibration_error(1):.3f}, n = {count}"
        panel.set_title(_matplotlib_text(title), fontsize="small")
    figure.suptitle("Reliability by group (uncalibrated)")
    return figure


def _grid_classes(table: CalibrationTable, method: str) -> tuple[np.ndarray | None, str]:
    """All classes when K <= 20; otherwise the 20 of largest error in ``table``."""
    explained = (
        "Each panel: P(y = k) against how often the label is k, over all rows (the "
        "class-wise, not the top-label, reliability); its title gives the class's ECE."
    )
    if table.n_groups <= MAX_GRID_CLASSES:
        return None, explained
    errors = [_group(table, k).calibration_error(1) for k in range(table.n_groups)]
    chosen = np.sort(np.argsort(errors, kind="stable")[::-1][:MAX_GRID_CLASSES])
    return chosen, (
        f"{explained} Only {MAX_GRID_CLASSES} of the {table.n_groups} classes are drawn "
        f"(one panel each would be unreadable): those with the largest class-wise ECE for "
        f"{_text(method)}, the same classes for every method: "
        f"{', '.join(str(k) for k in chosen)}."
    )


def _footer(report: Mapping[str, Any]) -> str:
    """The exact command and the versions that produced the page."""
    command = report.get("command")
    if isinstance(command, (list, tuple)):
        command = shlex.join(str(word) for word in command)
    versions = dict(report.get("versions") or {})
    tool = report.get("tool", "calibration-toolbox")
    if "version" in report:
        versions = {tool: report["version"], **versions}
    versions["matplotlib (figures)"] = _matplotlib().__version__
    listed = ", ".join(
        f"{_text(name)} {_text(str(version))}" for name, version in versions.items()
    )
    parts = ["<footer><h2>Reproduce</h2>"]
    if command:
        parts.append(f'<pre id="command"><code>{_text(command)}</code></pre>')
    parts.append(f'<p id="versions" class="muted">Versions: {listed}.</p></footer>')
    return "".join(parts)


def _page(title: str, body: list[str]) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{_POLICY}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_text(title)}</title>\n<style>{_STYLE}</style>\n</head>\n"
        "<body>\n<main>\n" + "\n".join(part for part in body if part) + "\n</main>\n</body>\n"
        "</html>\n"
    )


# --------------------------------------------------------------------------- figures


@contextlib.contextmanager
def _drawing() -> Iterator[None]:
    """Use matplotlib's default style and self-contained SVG output, for this block only.

    The SVG text is drawn as paths (no font needed by the reader) and the ids of the SVG
    are derived from a fixed salt (the same input gives the same page).
    """
    matplotlib = _matplotlib()
    with (
        matplotlib.style.context("default"),
        matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "calibration-toolbox"}),
    ):
        yield


def _matplotlib():
    """The matplotlib package, or the ImportError of :mod:`calibration_toolbox.plot`."""
    _pyplot()
    import matplotlib

    return matplotlib


class _Figures:
    """Numbers the figures of one page: each figure's SVG ids get their own prefix."""

    def __init__(self):
        self.count = 0

    def svg(self, figure, description: str, *, wide: bool = False) -> str:
        """``figure`` as an inline ``<svg>`` with ids of its own, in a ``<figure>``."""
        buffer = io.StringIO()
        figure.savefig(buffer, format="svg", metadata={"Date": None})
        figure.clear()
        text = _PROLOGUE.sub("", buffer.getvalue(), count=1)
        svg = _COMMENT.sub("", _METADATA.sub("", text))
        # All inline SVGs share the page's id space: prefix each figure's ids.
        self.count += 1
        prefix = f"f{self.count}-"
        svg = _ID_REFERENCE.sub(lambda match: match.group(1) + prefix, svg)
        label = html.escape(description)
        svg = svg.replace("<svg ", f'<svg role="img" aria-label="{label}" ', 1)
        classes = ' class="wide"' if wide else ""
        return f"<figure{classes}>{svg.strip()}</figure>"


# Margins are fixed in inches instead of layout="constrained": saving a 20-panel grid took
# 3.1 s with it and 0.9 s without, and each diagram about 0.6 s more (matplotlib 3.11, on
# this project's 2-core machine).
_LEFT, _RIGHT, _BOTTOM, _TITLE = 0.75, 0.2, 0.55, 0.4
_LEGEND_ROW = 0.19  # inches per legend entry at fontsize "small"


def _new_figure(width: float, height: float, *, top: float, **spacing: float):
    """A figure (not pyplot's: registered nowhere) with margins in inches."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height))
    figure.subplots_adjust(
        left=_LEFT / width,
        right=1 - _RIGHT / width,
        bottom=_BOTTOM / height,
        top=1 - top / height,
        **spacing,
    )
    return figure


def _legend_above(ax, groups: list[str]) -> None:
    """The figure's title above, then its legend, then the axes: the legend hides no data.

    Inside the axes (plot.py's upper left) it can cover an under-confident bin or the
    tall bars of a model of low confidence.  Entries are grouped by series.
    """
    figure = ax.figure
    figure.suptitle(ax.get_title(), y=1 - 0.08 / figure.get_figheight(), va="top")
    ax.set_title("")
    handles, labels = ax.get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: _series_index(labels[i], groups))
    ax.legend(
        [handles[i] for i in order],
        [labels[i] for i in order],
        loc="lower left",
        bbox_to_anchor=(0, 1.01),
        borderaxespad=0,
        fontsize="small",
        frameon=False,
    )


def _series_index(label: str, groups: list[str]) -> int:
    """Which series a legend entry belongs to (-1: the diagonal, first)."""
    for index, name in enumerate(groups):
        if label == name or label.startswith((f"{name}:", f"{name} (")):
            return index
    return -1


def _reliability(series: list[str], tables: dict[str, CalibrationTable]):
    top = _TITLE + _LEGEND_ROW * (len(series) + 1) + 0.1
    figure = _new_figure(5.5, top + 5.3 + _BOTTOM, top=top, hspace=0.06)
    ax, counts_ax = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": (3, 1)})
    labels = [_matplotlib_text(method) for method in series]
    for method, label in zip(series, labels, strict=True):
        ReliabilityDiagram.from_table(tables[method], ax=ax, counts_ax=counts_ax, label=label)
    _legend_above(ax, labels)
    return figure


def _histogram(series: list[str], tables: dict[str, CalibrationTable]):
    top = _TITLE + _LEGEND_ROW * 3 * len(series) + 0.1
    figure = _new_figure(5.5, top + 3.0 + _BOTTOM, top=top)
    ax = figure.subplots()
    labels = [_matplotlib_text(method) for method in series]
    for method, label in zip(series, labels, strict=True):
        ConfidenceHistogram.from_table(tables[method], ax=ax, label=label)
    _legend_above(ax, labels)
    return figure


def _grid(method: str, table: CalibrationTable, classes: np.ndarray | None):
    n_panels = table.n_groups if classes is None else classes.size
    n_columns = min(n_panels, 5)
    n_rows = math.ceil(n_panels / n_columns)
    width, height = 2.5 * n_columns + 0.5, 2.4 * n_rows + 0.9
    figure = _new_figure(width, height, top=0.7, wspace=0.12, hspace=0.3)
    grid = figure.subplots(n_rows, n_columns, sharex=True, sharey=True, squeeze=False)
    for extra in grid.ravel()[n_panels:]:
        figure.delaxes(extra)
    panels = grid.ravel()[:n_panels]
    ReliabilityDiagram.from_table(
        table, classes=classes, ax=panels, label=_matplotlib_text(method)
    )
    return figure


def _curve(diagram: _Diagram, series: dict[str, Any]):
    """The curves of ``series`` (method -> curve) on one figure, their legend above."""
    top = _TITLE + _LEGEND_ROW * diagram.legend_rows * len(series) + 0.1
    if diagram.counts:
        figure = _new_figure(5.5, top + 5.3 + _BOTTOM, top=top, hspace=0.06)
        ax, counts_ax = figure.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": (3, 1)})
    else:
        figure = _new_figure(5.5, top + 4.4 + _BOTTOM, top=top)
        ax, counts_ax = figure.subplots(), None
    labels = [_matplotlib_text(method) for method in series]
    for curve, label in zip(series.values(), labels, strict=True):
        _draw_curve(curve, ax=ax, label=label, counts_ax=counts_ax)
    _legend_above(ax, labels)
    return figure
