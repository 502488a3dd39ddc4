"""The report of a file read in blocks: in memory bounded by a block and the tables.

A file is read in blocks with ``--stream``, or when its arrays take more than
:data:`STREAM_BYTES` once read (a ``.npz``: its members' inflated sizes; any other file: its
size on disk), unless ``--in-memory`` is given.  The blocks come from
:class:`~calibration_toolbox.cli._blocks.FileBlocks`; the first pass checks each with the
call that checks a whole file (its row numbers made the file's).  ``--method`` without
``--fit-on`` first fits on the file's seeded share (passes over the file, see
:mod:`~calibration_toolbox.cli._blocks`); the report pass then adds each block's rows (its
test rows, with a split) to a :class:`~calibration_toolbox.CalibrationAccumulator` per
column of the report (uncalibrated, then each method), and with ``--groups`` to one per
(column, group).  Every metric that the accumulated
sums determine is reported and equals the in-memory report's; the others need all the rows
at once and are left out, with one warning that names them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from calibration_toolbox import CalibrationAccumulator
from calibration_toolbox import _registry as registry
from calibration_toolbox._errors import within
from calibration_toolbox._warnings import warn
from calibration_toolbox.cli._blocks import FileBlocks, fit_on_share, in_file_rows
from calibration_toolbox.cli._document import (
    Column,
    Report,
    class_changes,
    per_class_rows,
    reliability,
    summary,
)
from calibration_toolbox.cli._groups import check_group_count, summed_metrics
from calibration_toolbox.cli._inputs import (
    Part,
    check_same_columns,
    file_title,
    fit_rows,
    metric_view,
    read_predictions,
    same_file_and_keys,
    same_rows_message,
)
from calibration_toolbox.cli._methods import Method, fitted, method_input, parameters
from calibration_toolbox.cli._options import ReportOptions, ReportRequest
from calibration_toolbox.cli._warned import Warned
from calibration_toolbox.groups import check_groups
from calibration_toolbox.io import DEFAULT_BLOCK_ROWS, read_column, read_size
from calibration_toolbox.scores import Scores

__all__ = ["STREAM_BYTES", "InBlocks", "streams"]

STREAM_BYTES = 2**27
"""Files whose arrays take more than this once read (128 MiB) are read in blocks by default.

Read whole, a report holds several float64 copies of the predictions: about 7 times the
file (5.5 GB for an 800 MB ``.npy`` of 20,000,000 x 10 float32).
"""


def streams(request: ReportRequest) -> bool:
    """Whether ``report`` reads FILE in blocks: ``--stream``, or arrays above 128 MiB."""
    path = request.file.path
    if path is None or request.in_memory:
        return False
    return request.stream or read_size(path) > STREAM_BYTES


def _why(request: ReportRequest) -> str:
    if request.stream:
        return "--stream"
    size = read_size(request.file.path) / 2**20
    return f"{size:,.0f} MiB of arrays, above {STREAM_BYTES // 2**20} MiB"


def _left_out(options: ReportOptions) -> list[str]:
    """What the report cannot give from sums: the metrics that need all rows, --ci."""
    names = [metric.name for metric in options.metrics if metric.streamed is None]
    names += [metric.name for metric in options.across_groups]  # a walk of each group
    return names + (["the --ci intervals"] if options.ci else [])


def _tables(options: ReportOptions, scores: bool) -> list[str]:
    """The accumulator's tables that the report needs (each is one pass over a block).

    The top label's always, each streamed metric's (its registry row's), the predicted
    class's with ``--per-class`` and the class-wise one for the class tables.
    """
    if scores:
        return ["top_label"]
    streams = registry.streamed()
    needed = {streams[metric.streamed].table for metric in options.metrics if metric.streamed}
    needed |= {"top_label"}
    if options.per_class:
        needed.add("predicted_class")
    if options.class_tables:
        needed.add("class_wise")
    return [kind for kind in CalibrationAccumulator().tables if kind in needed]


class InBlocks:
    """The report of FILE read in blocks: one accumulator per column of the report.

    The columns are the file's predictions, then each method, fitted on ``--fit-on`` (in
    memory), or on the seeded share of FILE
    (:func:`~calibration_toolbox.cli._blocks.fit_on_share`), whose rows are then left out
    of the report.  Made, the report pass is done: every column holds its sums.
    """

    selection = None  # --method auto needs the rows read whole

    def __init__(self, request: ReportRequest, warned: Warned):
        self.file, self.logits, self.scores = (
            request.file.path,
            request.file.logits,
            request.file.scores,
        )
        self.left_out = _left_out(request.report)
        self.options = replace(
            request.report,
            metrics=tuple(m for m in request.report.metrics if m.streamed is not None),
            across_groups=(),
            ci=False,
        )
        self.methods = request.fit.methods
        self.why = _why(request)
        block_rows = DEFAULT_BLOCK_ROWS if request.block_rows is None else request.block_rows
        blocks = FileBlocks(request.file, block_rows, warned.of_file)
        self._request, self._warned = request, warned
        tables = _tables(self.options, self.scores)
        keywords = {"bins": self.options.bins, "scores": self.scores, "tables": tables}
        self.accumulators = [CalibrationAccumulator(logits=self.logits, **keywords)]
        self.accumulators += [CalibrationAccumulator(**keywords) for _ in self.methods]
        self._read_groups(request, keywords)
        self.rows_read = 0
        self._fit: Part | None = None
        self.split = False
        self.models, self.fit_rows, self.fit_text = self._fitted(blocks)
        self.n = 0
        self.one_column = False
        self.changes = [np.zeros(2, dtype=np.int64) for _ in self.methods]
        """Per method, the rows it turned from right to wrong and from wrong to right."""
        what = "report" if blocks.passes == 0 else f"pass {blocks.passes + 1}, report"
        # A file not checked by a fit's pass is checked by the accumulator of its first
        # column: one check per block (checked in the CLI too before: 11.2 -> 10.6 s on 50M x
        # 10, 4.9 -> 4.4 s on 20M, benchmarks/bench_out_of_core.py; the rest is the
        # accumulator's passes).
        for first_row, predictions, labels in blocks(what, check=blocks.checked):
            self._add(blocks, first_row, predictions, labels)
        if self.groups is not None:
            column, path = request.report.groups, self.file
            check_group_count(column, path, len(self.groups), self.rows_read)
        if self.left_out:
            warn(
                f"{self.file} is read in blocks ({self.why}): {', '.join(self.left_out)} "
                f"{'needs' if len(self.left_out) == 1 else 'need'} all the rows at once, left "
                "out; --in-memory loads the file to compute them."
            )
        self.n_classes = self.accumulators[0].n_classes
        self.blocks = {
            "block_rows": block_rows,
            "passes": blocks.passes,
            "left_out": self.left_out,
        }
        self.title = file_title(request.file, self.one_column)
        self.title += f"; read in blocks of {block_rows:,} rows ({self.why})"

    def _read_groups(self, request: ReportRequest, keywords: dict) -> None:
        """``--groups``: the group of every row of FILE, and an accumulator per (column, group).

        The column is read whole (one value per row: a small array beside the predictions);
        each block's rows of a group are added to that group's accumulator, so the groups'
        sums are those of their rows, as the in-memory report's ``by_group``.
        """
        self.groups, self.group_names, self.group_accumulators = None, [], []
        if request.report.groups is None:
            return
        values = read_column(request.file.path, request.report.groups, sep=request.file.sep)
        members = check_groups(values, values.shape[0] if values.ndim else 0, None)
        self.groups = members.groups
        self.group_names = [name.item() for name in members.names]
        self.group_accumulators = [
            [CalibrationAccumulator(logits=logits, **keywords) for _ in self.group_names]
            for logits in (self.logits, *(False for _ in self.methods))
        ]

    def _block_groups(self, first_row: int, n_rows: int) -> np.ndarray | None:
        """The group codes of the rows ``first_row ...`` of a block (None: no --groups)."""
        self.rows_read = first_row + n_rows
        if self.groups is None:
            return None
        if self.rows_read > len(self.groups):
            column, path = self._request.report.groups, self.file
            check_group_count(column, path, len(self.groups), self.rows_read)
        return self.groups[first_row : self.rows_read]

    def _add_groups(self, column: int, scored, labels: np.ndarray, codes) -> None:
        """Add each group's rows of a block to its accumulator (a loop over the groups)."""
        if codes is None:
            return
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(self.group_names) + 1))
        values = scored.values if isinstance(scored, Scores) else scored
        for group in np.flatnonzero(np.diff(bounds)):
            rows = order[bounds[group] : bounds[group + 1]]
            part = Scores(np.asarray(values)[rows]) if isinstance(scored, Scores) else values[rows]
            self.group_accumulators[column][group].update(part, labels[rows])

    def group_entry(self, report: Report) -> tuple[dict, dict]:
        """The document's ``groups`` entry and each group's top-label table, from the sums."""
        names, options = self.group_names, self.options
        columns = ["uncalibrated", *(method.name for method in self.methods)]
        values = {
            name: summed_metrics(names, accumulators, options.metrics)
            for name, accumulators in zip(columns, self.group_accumulators, strict=True)
        }
        counts = [accumulator.n_samples for accumulator in self.group_accumulators[0]]
        entry = {
            "column": options.groups,
            "names": names,
            "counts": counts,
            **values.pop("uncalibrated"),
            "across": {},
        }
        if values:
            entry["methods"] = values
        tables = {
            str(name): accumulator.table("top_label")
            for name, accumulator in zip(names, self.group_accumulators[0], strict=True)
            if accumulator.n_samples
        }
        return entry, tables

    def _fitted(self, blocks: FileBlocks) -> tuple[list, int | None, str | None]:
        """The methods fitted, the number of fit rows and their words."""
        request, warned, methods = self._request, self._warned, self.methods
        if not methods:
            return [], None, None
        fit, text = request.fit, request.fit.text(request.file)
        if not fit.apart:
            self.split = True
            models, n_fit = fit_on_share(blocks, fit, self.why, warned.method)
            return models, n_fit, text
        fit_file = fit.file(request.file)
        self._fit = read_predictions(fit_file)
        if same_file_and_keys(fit_file, request.file):
            warn(same_rows_message(text, self.file))
        models = []
        for method in methods:
            with warned.method(method.name):
                models.append(fitted(method, self._fit.predictions, self._fit.labels, self.logits))
        return models, len(self._fit.labels), text

    def _add(self, blocks: FileBlocks, first_row: int, predictions, labels) -> None:
        """Add a block's test rows (all its rows without a split) to every column."""
        if self.n == 0 and self._fit is not None:
            check_same_columns(Part(predictions, labels), self._fit, self.fit_text, self.file)
        codes = self._block_groups(first_row, len(labels))
        if self.split:
            fit = self._request.fit
            test = ~fit_rows(first_row, len(labels), fit.fraction, fit.seed)
            predictions, labels = predictions[test], labels[test]
            codes = None if codes is None else codes[test]
        self.one_column = predictions.ndim == 1
        if not len(labels):
            return
        try:  # the file's only check when no fit has read it (see __init__)
            self.accumulators[0].update(metric_view(predictions, self.scores, self.logits), labels)
        except (ValueError, TypeError) as error:
            # The whole file's check gives the message (its numbers: a row sum in float64).
            blocks.checked_block(predictions, labels, first_row, checking=True)
            raise in_file_rows(within(error, "{file}: ", file=self.file), first_row) from None
        self._add_groups(0, metric_view(predictions, self.scores, self.logits), labels, codes)
        for k, (method, model) in enumerate(zip(self.methods, self.models, strict=True)):
            with self._warned.method(method.name):
                calibrated = model.predict_proba(method_input(predictions, method, self.logits))
                scored = Scores(calibrated[:, 1]) if self.scores else calibrated
                self.accumulators[k + 1].update(scored, labels)
                self._add_groups(k + 1, scored, labels, codes)
            if not self.scores:
                view = metric_view(predictions, False, self.logits)
                self.changes[k] += class_changes(view, calibrated, labels)
        self.n += len(labels)

    def uncalibrated(self) -> Column:
        """The column of the file's predictions, from its sums."""
        return Column(self._entry_of(self.accumulators[0]))

    def calibrated(self, method: Method) -> Column:
        """The column of ``method``, from its sums."""
        k = self.methods.index(method)
        accumulator = self.accumulators[k + 1]
        return Column(self._entry_of(accumulator), parameters(self.models[k]), self.changes[k])

    def _entry_of(self, accumulator: CalibrationAccumulator):
        return lambda report, name: _entry(report, name, accumulator, self.options, self.scores)


def _entry(report: Report, name: str, accumulator, options: ReportOptions, scores: bool) -> dict:
    """The results entry of one column, from its sums (its tables kept in ``report``)."""
    table = accumulator.table("top_label")
    report.tables[name] = table
    entry = summary(table, scores)
    entry["metrics"] = {
        metric.name: accumulator.metric(metric.streamed) for metric in options.metrics
    }
    entry["reliability"] = reliability(table)
    if options.class_tables and not scores:
        class_table = accumulator.table("class_wise")
        report.class_tables[name] = class_table
        if options.per_class:
            # Unweighted sums of 0/1 targets: whole numbers, exact in float64.
            counts = class_table.target_sums.sum(axis=1).round().astype(int)
            hits = accumulator.table("predicted_class").target_sums.sum(axis=1).round()
            entry["per_class"] = per_class_rows(counts, hits.astype(int), class_table)
    return entry
