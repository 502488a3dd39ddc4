"""``report --groups COLUMN``: the report's metrics on each group of rows, and their tables.

The groups are a value per row of FILE: a column of a ``.csv`` or ``.parquet`` file, or an
array of its ``.npz`` (:func:`calibration_toolbox.io.read_column`).  The predictions of a
``.csv`` or ``.parquet`` file must then be named (``--prob-column``): the columns no option
chose are read as text and left aside, so a ``.csv``'s group column holds numbers or names
(quoted as the reader quotes, ``"a, b"`` and ``""`` for a quote).  Each metric of the
report is :func:`~calibration_toolbox.by_group` of the rows reported (every row of FILE, or
with ``--method`` and ``--split`` the rows not fitted on), for the predictions and after each
method; each group's top-label table (the reliability diagram grid of the HTML page) is that
of ``by_group(ECE, ...)``, binned once.  A file read in blocks (``--stream``) adds each
block's rows of a group to that group's accumulator (per column of the report: the groups'
tables are sums), the column itself read whole (one value per row); the metrics that need all
the rows are left out there, as in the streamed report.

The document's ``groups`` entry: ``column``, ``names`` (in order), ``counts``, ``metrics``
(each metric's value per group, null where a group has none) and ``worst`` (per metric: the
group of the largest value and that value), and ``across`` (each metric over the groups,
by name: ``MultiCal_sigma``, ``MultiCal_error``, ``MultiCal_p``; null where not finite;
empty when read in blocks), and with ``--method`` ``methods``: per method, its ``metrics``
and ``worst`` on the same groups.
"""

from __future__ import annotations

import math

import numpy as np

from calibration_toolbox.cli._inputs import Inputs, metric_view
from calibration_toolbox.cli._metrics import Metric
from calibration_toolbox.cli._options import ReportRequest
from calibration_toolbox.cli._parser import UsageError
from calibration_toolbox.groups import by_group
from calibration_toolbox.io import read_column
from calibration_toolbox.metrics import ECE, CalibrationTable

__all__ = [
    "check_group_count",
    "check_groups_request",
    "group_lines",
    "group_metrics",
    "grouped",
    "read_groups",
    "summed_metrics",
]


def check_groups_request(request: ReportRequest) -> None:
    """Refuse ``--groups`` where the report cannot give it, with the one-line reason."""
    column, file = request.report.groups, request.file
    if column is None:
        return
    if file.path is None:
        raise UsageError("--groups names a column of FILE; the embedded example has none.")
    if request.output.format == "csv":
        raise UsageError("--groups prints its table in the text and JSON reports, not in CSV.")
    if file.path.lower().endswith((".csv", ".parquet")) and file.prob_column is None:
        raise UsageError(
            f"--groups {column} with a .csv or .parquet file needs --prob-column naming the "
            "predictions: every column but the labels is read as one otherwise."
        )


def _value(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def read_groups(request: ReportRequest, inputs: Inputs) -> np.ndarray:
    """The group of each reported row: the column of FILE, at the rows ``--split`` reports on."""
    file, column = request.file, request.report.groups
    groups = read_column(file.path, column, sep=file.sep)
    rows = inputs.test_rows
    n_rows = len(inputs.test.labels) if rows is None else len(rows)
    if groups.shape != (n_rows,):
        raise ValueError(
            f"--groups {column}: {file.path} holds {groups.shape[0] if groups.ndim else 0}"
            f" values of shape {groups.shape}, not one per row ({n_rows} rows)."
        )
    return groups if rows is None else groups[rows]


def group_metrics(
    view, labels, logits: bool, groups: np.ndarray, metrics: tuple[Metric, ...], bins: int
) -> dict:
    """One column's ``metrics`` (each metric's value per group) and ``worst`` (per metric)."""
    values, worst = {}, {}
    for metric in metrics:
        result = by_group(metric.function, view, labels, groups, **metric.keywords(bins, logits))
        values[metric.name] = [_value(value) for value in result.values]
        worst[metric.name] = (
            None if result.worst < 0 else {"group": result.worst_name, "value": result.worst_value}
        )
    return {"metrics": values, "worst": worst}


def _worst(names: list, values: list) -> dict | None:
    """The group of the largest value (the first on ties; None: no group has one)."""
    finite = [(value, -row) for row, value in enumerate(values) if value is not None]
    if not finite:
        return None
    value, row = max(finite)
    return {"group": names[-row], "value": value}


def summed_metrics(names: list, accumulators, metrics: tuple[Metric, ...]) -> dict:
    """One column's ``metrics`` and ``worst`` from each group's accumulated sums (``--stream``).

    A group without a row reported (all its rows fitted on) has no value (null).
    """
    values = {
        metric.name: [
            accumulator.metric(metric.streamed) if accumulator.n_samples else None
            for accumulator in accumulators
        ]
        for metric in metrics
    }
    return {"metrics": values, "worst": {name: _worst(names, v) for name, v in values.items()}}


def check_group_count(column: str, path: str, n_values: int, n_rows: int) -> None:
    """Refuse a column of ``n_values`` values beside ``n_rows`` rows of FILE."""
    if n_values != n_rows:
        raise ValueError(
            f"--groups {column}: {path} holds {n_values} values of shape ({n_values},), not "
            f"one per row ({n_rows} rows)."
        )


def grouped(source, report) -> tuple[dict, dict[str, CalibrationTable]]:
    """The document's ``groups`` entry and each group's top-label table, by group name.

    ``source`` (the rows read whole, :class:`~calibration_toolbox.cli._document.InMemory`)
    holds the groups; ``report`` each column's ``group_metrics``, by method name.
    """
    inputs, options, groups = source.inputs, source.options, source.groups
    test = inputs.test
    view = metric_view(test.predictions, inputs.scores, inputs.logits)
    tabled = by_group(ECE, view, test.labels, groups, bins=options.bins, logits=inputs.logits)
    names = [name.item() for name in tabled.names]
    across = {
        metric.name: _finite(
            metric.function(
                view, test.labels, groups=groups, **metric.keywords(options.bins, inputs.logits)
            )
        )
        for metric in options.across_groups
    }
    columns = dict(report.group_values)
    entry = {
        "column": options.groups,
        "names": names,
        "counts": [int(count) for count in tabled.counts],
        **columns.pop("uncalibrated"),
        "across": across,
    }
    if columns:  # after each --method, on the same rows
        entry["methods"] = columns
    return entry, {str(name): table for name, table in zip(names, tabled.tables, strict=True)}


def _cell(value: float | None) -> str:
    return f"{'-':>9}" if value is None else f"{value:9.5f}"


def _table_lines(title: str, names: list, counts: list, columns: dict) -> list[str]:
    metrics = list(columns["metrics"])
    width = max(8, *(len(str(name)) for name in names))
    lines = [
        "",
        title,
        f"  {'group':<{width}} {'count':>9}" + "".join(f" {name:>9}" for name in metrics),
    ]
    for row, name in enumerate(names):
        cells = "".join(" " + _cell(columns["metrics"][metric][row]) for metric in metrics)
        lines.append(f"  {name!s:<{width}} {counts[row]:>9,}{cells}")
    for metric, worst in columns["worst"].items():
        if worst is not None:
            lines.append(f"  worst {metric}: {worst['group']} ({worst['value']:.5f})")
    return lines


def group_lines(entry: dict) -> list[str]:
    """The per-group tables of the text report (uncalibrated, then after each method)."""
    names, counts = entry["names"], entry["counts"]
    title = f"by group (--groups {entry['column']}): {len(names)} groups"
    lines = _table_lines(title, names, counts, entry)
    for metric, value in entry["across"].items():
        shown = "-" if value is None else f"{value:.5g}"
        lines.append(f"  over the groups, {metric}: {shown}")
    for method, columns in entry.get("methods", {}).items():
        lines += _table_lines(f"by group after {method}:", names, counts, columns)
    return lines
