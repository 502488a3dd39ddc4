"""The report of a file read in blocks: in memory bounded by a block and the tables.

A file is read in blocks with ``--stream``, or when it is larger than :data:`STREAM_BYTES`
on disk, unless ``--in-memory`` is given.  The blocks come from
:class:`~calibration_toolbox.cli._blocks.FileBlocks`; the first pass checks each with the
call that checks a whole file (its row numbers made the file's).  ``--method`` without
``--fit-on`` first fits on the file's seeded share (passes over the file, see
:mod:`~calibration_toolbox.cli._blocks`); the report pass then adds each block's rows (its
test rows, with a split) to a :class:`~calibration_toolbox.CalibrationAccumulator` per
column of the report (uncalibrated, then each method).  Every metric that the accumulated
sums determine is reported and equals the in-memory report's; the others need all the rows
at once and are left out, with one warning that names them.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from calibration_toolbox import CalibrationAccumulator
from calibration_toolbox import _registry as registry
from calibration_toolbox._errors import within
from calibration_toolbox._warnings import warn
from calibration_toolbox.cli._blocks import FileBlocks, fit_on_share, in_file_rows
from calibration_toolbox.cli._document import (
    Report,
    ReportOptions,
    class_changes,
    header,
    per_class_rows,
    reliability,
    summary,
    warn_if_less_accurate,
)
from calibration_toolbox.cli._inputs import (
    Part,
    check_same_columns,
    file_title,
    fit_rows,
    fits_apart,
    metric_view,
    read_fit,
    same_file_and_keys,
    same_rows_message,
    split_options,
    split_text,
)
from calibration_toolbox.cli._methods import conversion_lines, fitted, method_input, parameters
from calibration_toolbox.cli._warned import Warned
from calibration_toolbox.io import DEFAULT_BLOCK_ROWS
from calibration_toolbox.scores import Scores

__all__ = ["STREAM_BYTES", "stream_report", "streams"]

STREAM_BYTES = 2**27
"""Files larger than this on disk (128 MiB) are read in blocks by default.

Read whole, a report holds several float64 copies of the predictions: about 7 times the
file (5.5 GB for an 800 MB ``.npy`` of 20,000,000 x 10 float32).
"""


def streams(args: argparse.Namespace) -> bool:
    """Whether ``report`` reads FILE in blocks: ``--stream``, or a file above 128 MiB."""
    if args.path is None or args.in_memory:
        return False
    if args.stream:
        return True
    try:
        return os.path.getsize(args.path) > STREAM_BYTES
    except OSError:  # a missing file: the reader says so in its words
        return False


def _why(args: argparse.Namespace) -> str:
    if args.stream:
        return "--stream"
    return f"{os.path.getsize(args.path) / 2**20:,.0f} MiB, above {STREAM_BYTES // 2**20} MiB"


def _left_out(args: argparse.Namespace, options: ReportOptions) -> list[str]:
    """What the report cannot give from sums: the metrics that need all rows, --ci."""
    names = [metric.name for metric in options.metrics if metric.streamed is None]
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


class _Columns:
    """One accumulator per column of the report: the file's predictions, then each method.

    The methods are fitted on ``--fit-on`` (in memory), or on the seeded share of FILE
    (:func:`~calibration_toolbox.cli._blocks.fit_on_share`), whose rows are then left out
    of the report.
    """

    def __init__(
        self, args: argparse.Namespace, options: ReportOptions, blocks: FileBlocks, warned: Warned
    ):
        self.args, self.options, self.warned = args, options, warned
        tables = _tables(options, args.scores)
        keywords = {"bins": options.bins, "scores": args.scores, "tables": tables}
        self.names = ["uncalibrated", *(method.name for method in options.methods)]
        self.accumulators = [CalibrationAccumulator(logits=args.logits, **keywords)]
        self.accumulators += [CalibrationAccumulator(**keywords) for _ in options.methods]
        self.fit: Part | None = None
        self.models = []
        self.split = None
        self.fit_rows = self.fit_text = None
        if options.methods and fits_apart(args):
            self.fit, self.fit_text = read_fit(args)
            if same_file_and_keys(args):
                warn(same_rows_message(self.fit_text, args.path))
            for method in options.methods:
                with warned.method(method.name):
                    model = fitted(method, self.fit.predictions, self.fit.labels, args.logits)
                self.models.append(model)
            self.fit_rows = len(self.fit.labels)
        elif options.methods:
            self.models, self.fit_rows = fit_on_share(
                blocks, options.methods, _why(args), warned.method
            )
            self.split = split_options(args)
            self.fit_text = split_text(*self.split)
        self.rows = 0
        self.one_column = False
        self.changes = {method.name: np.zeros(2, dtype=np.int64) for method in options.methods}
        """Per method, the rows it turned from right to wrong and from wrong to right."""

    def add(self, blocks: FileBlocks, first_row: int, predictions, labels) -> None:
        """Add a block's test rows (all its rows without a split) to every column."""
        args = self.args
        if self.rows == 0 and self.fit is not None:
            check_same_columns(Part(predictions, labels), self.fit, self.fit_text, args.path)
        if self.split is not None:
            test = ~fit_rows(first_row, len(labels), *self.split)
            predictions, labels = predictions[test], labels[test]
        self.one_column = predictions.ndim == 1
        if not len(labels):
            return
        try:  # the file's only check when no fit has read it (see stream_report)
            self.accumulators[0].update(metric_view(predictions, args.scores, args.logits), labels)
        except (ValueError, TypeError) as error:
            # The whole file's check gives the message (its numbers: a row sum in float64).
            blocks.checked_block(predictions, labels, first_row, checking=True)
            raise in_file_rows(within(error, "{file}: ", file=args.path), first_row) from None
        for method, model, accumulator in zip(
            self.options.methods, self.models, self.accumulators[1:], strict=True
        ):
            with self.warned.method(method.name):
                calibrated = model.predict_proba(method_input(predictions, method, args.logits))
                accumulator.update(Scores(calibrated[:, 1]) if args.scores else calibrated, labels)
            if not args.scores:
                view = metric_view(predictions, False, args.logits)
                self.changes[method.name] += class_changes(view, calibrated, labels)
        self.rows += len(labels)


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


def stream_report(
    args: argparse.Namespace, options: ReportOptions, command: Sequence[str], warned: Warned
) -> Report:
    """The report of FILE read in blocks: the metrics the sums determine, one pass.

    ``warned`` records the warnings of each method (its fit, application and numbers) as
    that method's, and those of the file's checks as the file's.
    """
    left_out = _left_out(args, options)
    options = replace(
        options, metrics=tuple(m for m in options.metrics if m.streamed is not None), ci=False
    )
    block_rows = DEFAULT_BLOCK_ROWS if args.block_rows is None else args.block_rows
    blocks = FileBlocks(args, block_rows, warned.of_file)
    columns = _Columns(args, options, blocks, warned)
    what = "report" if blocks.passes == 0 else f"pass {blocks.passes + 1}, report"
    # A file not checked by a fit's pass is checked by the accumulator of its first column:
    # one check per block (checked in the CLI too before: 11.2 -> 10.6 s on 50M x 10, 4.9 ->
    # 4.4 s on 20M, benchmarks/bench_out_of_core.py; the rest is the accumulator's passes).
    for first_row, predictions, labels in blocks(what, check=blocks.checked):
        columns.add(blocks, first_row, predictions, labels)
    if left_out:
        warn(
            f"{args.path} is read in blocks ({_why(args)}): {', '.join(left_out)} "
            f"{'needs' if len(left_out) == 1 else 'need'} all the rows at once, left out; "
            "--in-memory loads the file to compute them."
        )
    kind = "scores" if args.scores else "logits" if args.logits else "probabilities"
    accumulator = columns.accumulators[0]
    fit = (columns.fit_rows, columns.fit_text)
    document = header(args.path, kind, accumulator.n_classes, columns.rows, fit, options, command)
    document["blocks"] = {"block_rows": block_rows, "passes": blocks.passes, "left_out": left_out}
    notes = conversion_lines(options.methods, args.logits, columns.one_column)
    title = file_title(args, columns.one_column)
    title += f"; read in blocks of {block_rows:,} rows ({_why(args)})"
    report = Report(document, title, notes)
    if options.class_tables and not args.scores:
        report.class_tables = {}
    document["conversions"] = notes
    before = _entry(report, "uncalibrated", accumulator, options, args.scores)
    results = [{"method": "uncalibrated", "parameters": {}, "warnings": [], **before}]
    for method, model, method_accumulator in zip(
        options.methods, columns.models, columns.accumulators[1:], strict=True
    ):
        with warned.method(method.name):
            entry = _entry(report, method.name, method_accumulator, options, args.scores)
            warn_if_less_accurate(method, before, entry, columns.changes[method.name])
        numbers = {"parameters": parameters(model), "warnings": warned.of(method.name)}
        results.append({"method": method.name, **numbers, **entry})
    document["results"] = results
    return report
