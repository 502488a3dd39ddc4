"""The report as text: metric and per-class tables, terminal diagrams (80 columns), CSV."""

from __future__ import annotations

import csv
import io
import textwrap

import numpy as np

from calibration_toolbox.cli._document import Report
from calibration_toolbox.cli._metrics import DEFAULT_METRICS, METRICS
from calibration_toolbox.metrics import CalibrationTable

__all__ = ["csv_text", "parameters_text", "table_text"]

_BAR_WIDTH = 24  # characters for [0, 1]: one per 1/24 = 0.042; a row is 75 characters
_LEGEND = "# accuracy; - overconfidence, confidence above it; + underconfidence"

# The report's default metrics that --scores leaves out.
_CLASS_WISE_DEFAULTS = ", ".join(name for name in DEFAULT_METRICS if METRICS[name].class_wise)


_SYMBOLS = {"temperature": "T"}  # as the papers write them
_TEST_LABELS = {"Spiegelhalter": "Spiegel. Z"}  # within the 12 characters of a label


def _bar(confidence: float, accuracy: float) -> str:
    """``#`` up to the lower of the two, then ``-`` (overconfident) or ``+`` to the higher."""
    filled, reached = round(accuracy * _BAR_WIDTH), round(confidence * _BAR_WIDTH)
    gap = "-" * (reached - filled) if reached > filled else "+" * (filled - reached)
    return f"|{('#' * min(filled, reached) + gap):<{_BAR_WIDTH}}|"


def _axis() -> str:
    axis = [" "] * _BAR_WIDTH
    axis[0], axis[_BAR_WIDTH // 2 - 1 : _BAR_WIDTH // 2 + 1], axis[-1] = "0", ".5", "1"
    return f"|{''.join(axis)}|"


def diagram_lines(name: str, table: CalibrationTable, scores: bool) -> list[str]:
    """The reliability diagram of one method, every bin a line (an empty bin left blank)."""
    score_key, target_key = ("score", "target") if scores else ("conf", "acc")
    what = "reliability of the scores" if scores else "top-label reliability"
    lines = [
        f"{what}, {name}:",
        f"{'bin':<16}{'count':>7}{score_key:>8}{target_key:>8}{'gap':>8} {_axis()}",
    ]
    edges, counts = table.edges[0], table.counts[0]
    for b, (score, target) in enumerate(
        zip(table.mean_score[0], table.mean_target[0], strict=True)
    ):
        label = f"{f'({edges[b]:.3f}, {edges[b + 1]:.3f}]':<16}{int(counts[b]):>7}"
        if counts[b] == 0:
            lines.append(f"{label}{'':24} |{'':{_BAR_WIDTH}}|")
            continue
        lines.append(
            f"{label}{score:>8.4f}{target:>8.4f}{target - score:>+8.4f} {_bar(score, target)}"
        )
    return lines


def _cell(value, width: int, digits: int = 5) -> str:
    return f"{'':>{width}}" if value is None else f"{value:>{width}.{digits}f}"


def _blocks(results: list[dict], first: int, width: int) -> list[list[dict]]:
    """The results in groups whose columns fit in 80 characters after a ``first`` column."""
    per_block = max(1, (80 - first) // width)
    return [results[start : start + per_block] for start in range(0, len(results), per_block)]


def _metric_rows(results: list[dict], width: int, scores: bool) -> list[str]:
    summary = ("mean_target", "mean_score") if scores else ("accuracy",)
    lines = []
    for key in summary:
        label = key.replace("_", " ")
        lines.append(f"{label:<12}" + "".join(_cell(r[key], width) for r in results))
    for name in results[0]["metrics"]:
        lines.append(f"{name:<12}" + "".join(_cell(r["metrics"][name], width) for r in results))
        if "intervals" in results[0]:
            cells = []
            for result in results:
                low, high = (np.nan if v is None else v for v in result["intervals"][name])
                cells.append(f"{f'[{low:.4f}, {high:.4f}]':>{width}}")
            lines.append(f"{'  95 % CI':<12}" + "".join(cells))
    return lines


def _test_cell(test: dict | None, key: str, text: str, width: int) -> str:
    """``test[key]`` formatted by ``text`` (a format spec), right-aligned; blank if None."""
    return f"{'' if test is None else format(test[key], text):>{width}}"


def _test_rows(results: list[dict], width: int) -> list[str]:
    """Each test's p-value, then its scaled statistic (in sigmas), per column."""
    lines = ["", "calibration tests (H0: calibrated): p-value, then the statistic in sigmas"]
    for name in results[0]["tests"]:
        found = [result["tests"][name] for result in results]
        label = _TEST_LABELS.get(name, name)
        lines.append(
            f"{label:<12}" + "".join(_test_cell(t, "pvalue", ".2g", width) for t in found)
        )
        lines.append(
            f"{'  sigmas':<12}"
            + "".join(_test_cell(t, "scaled_statistic", ".2f", width) for t in found)
        )
    return lines


def _per_class_lines(results: list[dict]) -> list[str]:
    lines = [
        "",
        "per class k: count of label k, ECE of the scores P(y = k), acc = recall of k:",
    ]
    for block in _blocks(results, 13, 17):
        lines += _per_class_block(block)
    return lines


def _per_class_block(results: list[dict]) -> list[str]:
    lines = [
        f"{'class':<6}{'count':>7}" + "".join(f"{r['method'][:16]:>17}" for r in results),
        f"{'':13}" + f"{'ECE':>8}{'acc':>9}" * len(results),
    ]
    for k, row in enumerate(results[0]["per_class"]):
        cells = "".join(
            f"{r['per_class'][k]['ECE']:>8.4f}" + _cell(r["per_class"][k]["accuracy"], 9, 4)
            for r in results
        )
        lines.append(f"{row['class']:<6}{row['count']:>7}{cells}")
    return lines


def parameters_text(numbers: dict[str, object]) -> str:
    """``T = 1.93, weights = [0.9, 0.1, 0]``: a method's fitted numbers in one line."""
    return ", ".join(
        f"{_SYMBOLS.get(name, name)} = {value:.4g}"
        if isinstance(value, float)
        else f"{name} = [{', '.join(f'{v:.4g}' for v in value)}]"
        for name, value in numbers.items()
    )


def _parameter_lines(results: list[dict]) -> list[str]:
    return [
        f"{result['method']}: {parameters_text(result['parameters'])}"
        for result in results[1:]
        if result["parameters"]
    ]


def _summary(document: dict, first: dict, scores: bool) -> list[str]:
    lines = []
    if document["fit"] is not None:
        lines.append(
            f"methods fitted on {document['fit']}: {document['n_fit']:,} rows; "
            f"metrics on {document['n']:,} rows"
        )
    lines += document["conversions"]
    if "bins_rule" in document:
        lines.append(
            f"--bins auto: {document['bins']} bins, the smallest B with B**3 >= "
            f"{document['n']:,} rows (the cube-root rule)"
        )
    lines = [
        textwrap.fill(line, width=79, subsequent_indent="  ", break_on_hyphens=False)
        for line in lines
    ]
    if scores:
        lines.append(
            f"mean target {first['mean_target']:.4f}, mean score {first['mean_score']:.4f}"
        )
    else:
        lines.append(f"accuracy {first['accuracy']:.4f}")
    return lines


def table_text(report: Report) -> str:
    """The report as a terminal reads it: numbers, then a diagram per method."""
    document = report.document
    results = document["results"]
    scores = document["input"] == "scores"
    width = max(13, *(len(r["method"]) + 2 for r in results))
    if "intervals" in results[0]:
        width = max(width, 19)
    lines = [report.title, *_summary(document, results[0], scores)]
    for block in _blocks(results, 12, width):
        lines += ["", f"{'metric':<12}" + "".join(f"{r['method']:>{width}}" for r in block)]
        lines += _metric_rows(block, width, scores)
        if "tests" in block[0]:
            lines += _test_rows(block, width)
    if scores:
        lines += [
            "(Brier is the single-probability form mean (s - y)^2, half the two-column one;",
            f" {_CLASS_WISE_DEFAULTS} are omitted: they need one column per class.)",
        ]
    lines += _parameter_lines(results)
    if "selection" in document:
        lines += selection_lines(document["selection"])
    if "per_class" in results[0]:
        lines += _per_class_lines(results)
    lines += ["", f"({_LEGEND})"]
    for name, table in report.tables.items():
        lines += ["", *diagram_lines(name, table, scores)]
    return "\n".join(lines)


def selection_lines(selection: dict) -> list[str]:
    """``--method auto``'s table: the cross-validated NLL of each method on the fit rows."""
    rows = selection["table"]
    width = max(len(row["name"]) for row in rows) + 2
    lines = [
        "",
        f"--method auto: mean {selection['score']} over {selection['folds']} folds of the fit "
        f"rows (--seed {selection['seed']}), +- the spread (standard deviation) over the folds:",
    ]
    for row in sorted(rows, key=lambda row: row["mean"]):
        chosen = "  <- chosen" if row["name"] == selection["best"] else ""
        lines.append(f"  {row['name']:<{width}}{row['mean']:.6f} +- {row['spread']:.6f}{chosen}")
    return lines


def csv_text(report: Report) -> str:
    """The numbers as CSV: ``method,class,metric,value`` (and ``low,high`` with ``--ci``)."""
    results = report.document["results"]
    with_ci = "intervals" in results[0]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["method", "class", "metric", "value", *(["low", "high"] if with_ci else [])])
    for result in results:
        method = result["method"]
        for key in ("accuracy", "mean_target", "mean_score"):
            if key in result:
                writer.writerow([method, "", key, result[key], *([""] * 2 * with_ci)])
        for name, value in result["metrics"].items():
            interval = result["intervals"][name] if with_ci else []
            writer.writerow([method, "", name, value, *("" if v is None else v for v in interval)])
        for row in result.get("per_class", []):
            for key in ("count", "ECE", "accuracy"):
                value = "" if row[key] is None else row[key]
                writer.writerow([method, row["class"], key, value, *([""] * 2 * with_ci)])
    return buffer.getvalue().rstrip("\n")
