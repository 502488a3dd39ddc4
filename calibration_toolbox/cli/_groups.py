"""``report --groups COLUMN``: the report's metrics on each group of rows, and their tables.

The groups are a value per row of FILE: a column of a ``.csv`` or ``.parquet`` file, or an
array of its ``.npz`` (:func:`calibration_toolbox.io.read_column`).  The predictions of a
``.csv`` or ``.parquet`` file must then be named (``--prob-column``): the columns no option
chose are read as text and left aside, so a ``.csv``'s group column holds numbers or names
(quoted as the reader quotes, ``"a, b"`` and ``""`` for a quote).  Each metric of the
report is :func:`~calibration_toolbox.by_group` of the file's rows (read whole: the
per-group tables are sums that an accumulator could add, but the streamed report keeps one
table per method, not per group), and each group's top-label table (the reliability
diagram grid of the HTML page) is that of ``by_group(ECE, ...)``, binned once.

The document's ``groups`` entry: ``column``, ``names`` (in order), ``counts``, ``metrics``
(each metric's value per group, null where a group has none) and ``worst`` (per metric: the
group of the largest value and that value), and ``across`` (each metric over the groups,
by name: ``MultiCal_sigma``, ``MultiCal_error``, ``MultiCal_p``; null where not finite).
"""

from __future__ import annotations

import math

from calibration_toolbox.cli._inputs import metric_view
from calibration_toolbox.cli._options import ReportRequest
from calibration_toolbox.cli._parser import UsageError
from calibration_toolbox.groups import by_group
from calibration_toolbox.io import read_column
from calibration_toolbox.metrics import ECE, CalibrationTable

__all__ = ["check_groups_request", "group_lines", "grouped"]


def check_groups_request(request: ReportRequest) -> None:
    """Refuse ``--groups`` where the report cannot give it, with the one-line reason."""
    column, file = request.report.groups, request.file
    if column is None:
        return
    if file.path is None:
        raise UsageError("--groups names a column of FILE; the embedded example has none.")
    if request.fit.methods:
        raise UsageError(
            "--groups reports the file's own predictions by group; not with --method "
            "(whose test rows are a share of the file)."
        )
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


def grouped(request: ReportRequest, inputs) -> tuple[dict, dict[str, CalibrationTable]]:
    """The document's ``groups`` entry and each group's top-label table, by group name."""
    file, options = request.file, request.report
    test = inputs.test
    groups = read_column(file.path, options.groups, sep=file.sep)
    if groups.shape != (len(test.labels),):
        raise ValueError(
            f"--groups {options.groups}: {file.path} holds {groups.shape[0] if groups.ndim else 0}"
            f" values of shape {groups.shape}, not one per row ({len(test.labels)} rows)."
        )
    view = metric_view(test.predictions, inputs.scores, inputs.logits)
    tabled = by_group(ECE, view, test.labels, groups, bins=options.bins, logits=inputs.logits)
    names = [name.item() for name in tabled.names]
    values, worst = {}, {}
    for metric in options.metrics:
        result = by_group(
            metric.function,
            view,
            test.labels,
            groups,
            **metric.keywords(options.bins, inputs.logits),
        )
        values[metric.name] = [_value(value) for value in result.values]
        worst[metric.name] = (
            None
            if result.worst < 0
            else {"group": names[result.worst], "value": result.worst_value}
        )
    across = {
        metric.name: _finite(
            metric.function(
                view, test.labels, groups=groups, **metric.keywords(options.bins, inputs.logits)
            )
        )
        for metric in options.across_groups
    }
    entry = {
        "column": options.groups,
        "names": names,
        "counts": [int(count) for count in tabled.counts],
        "metrics": values,
        "worst": worst,
        "across": across,
    }
    return entry, {str(name): table for name, table in zip(names, tabled.tables, strict=True)}


def _cell(value: float | None) -> str:
    return f"{'-':>9}" if value is None else f"{value:9.5f}"


def group_lines(entry: dict) -> list[str]:
    """The per-group table of the text report: count and each metric per group, the worst."""
    metrics = list(entry["metrics"])
    width = max(8, *(len(str(name)) for name in entry["names"]))
    lines = [
        "",
        f"by group (--groups {entry['column']}): {len(entry['names'])} groups",
        f"  {'group':<{width}} {'count':>9}" + "".join(f" {name:>9}" for name in metrics),
    ]
    for row, name in enumerate(entry["names"]):
        cells = "".join(" " + _cell(entry["metrics"][metric][row]) for metric in metrics)
        lines.append(f"  {name!s:<{width}} {entry['counts'][row]:>9,}{cells}")
    for metric, worst in entry["worst"].items():
        if worst is not None:
            lines.append(f"  worst {metric}: {worst['group']} ({worst['value']:.5f})")
    for metric, value in entry["across"].items():
        shown = "-" if value is None else f"{value:.5g}"
        lines.append(f"  over the groups, {metric}: {shown}")
    return lines
