"""The subcommands: ``report``, ``recalibrate``, ``apply`` and ``compare``.

Each returns the text to print on stdout; every output file of a command is written into one
batch before that text, all renamed over their targets only once every one is complete, and
every option is checked before any work, so that a failure prints one line on stderr and
leaves no file behind.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from calibration_toolbox import _registry as registry
from calibration_toolbox._atomic import Batch, batch
from calibration_toolbox._validation import check_predictions
from calibration_toolbox.cli._compare import build_comparison
from calibration_toolbox.cli._compare import text as comparison_text
from calibration_toolbox.cli._compare_stream import streamed_comparison
from calibration_toolbox.cli._document import InMemory, build_report
from calibration_toolbox.cli._files import (
    write_comparison_html,
    write_html,
    write_model,
    write_npz,
    write_plot,
)
from calibration_toolbox.cli._groups import check_groups_request, group_lines, read_groups
from calibration_toolbox.cli._inputs import (
    Part,
    load_inputs,
    metric_view,
    read_predictions,
    warn_same_rows,
)
from calibration_toolbox.cli._methods import (
    AUTO,
    Method,
    conversion_lines,
    fitted,
    method_input,
    method_of,
    parameters,
    selected,
)
from calibration_toolbox.cli._multilabel import multilabel_report, multilabel_text
from calibration_toolbox.cli._options import (
    ApplyRequest,
    CompareRequest,
    FileOptions,
    RecalibrateRequest,
    ReportRequest,
    apply_request,
    compare_request,
    recalibrate_request,
    report_request,
)
from calibration_toolbox.cli._parser import UsageError
from calibration_toolbox.cli._stream import InBlocks, streams
from calibration_toolbox.cli._text import csv_text, parameters_text, table_text
from calibration_toolbox.cli._warned import Warned
from calibration_toolbox.metrics import ECE, negative_log_likelihood
from calibration_toolbox.recalibration import load_recalibrator

__all__ = ["COMMANDS"]


def _source(request: ReportRequest, warned: Warned):
    """The rows of the report: FILE read in blocks, or read whole (or the example)."""
    if streams(request):
        if request.fit.methods == (AUTO,):
            raise UsageError(
                "--method auto needs FILE read whole, not in blocks (--stream, or arrays "
                "above 128 MiB): its cross-validation refits every method on the fit rows; "
                "add --in-memory."
            )
        return InBlocks(request, warned)
    if request.block_rows is not None:
        whole = request.file.path or "the embedded example"
        raise UsageError(
            f"--block-rows sizes the blocks of a file read in blocks; {whole} is read "
            "whole (add --stream)."
        )
    inputs = load_inputs(request)
    groups = None if request.report.groups is None else read_groups(request, inputs)
    methods, selection = request.fit.methods, None
    if methods == (AUTO,):
        fit = inputs.fit
        methods, selection = selected(fit.predictions, fit.labels, inputs.logits, request.fit.seed)
    return InMemory(inputs, request.report, methods, groups, selection)


def run_report(request: ReportRequest, command: Sequence[str]) -> str:
    """``report``: the metrics before and after each method, as a table, JSON or CSV."""
    check_groups_request(request)
    warned = Warned()
    with warned.of_file():
        if request.multilabel:  # no --groups (refused with --multilabel)
            result = multilabel_report(request, command, warned)
        else:
            source = _source(request, warned)
            result = build_report(source, command, warned)
            if request.report.groups is not None:
                result.document["groups"], result.group_tables = source.group_entry(result)
    result.document["warnings"] = warned.file
    output = request.output
    with batch() as outputs:  # the text too, before any file replaces its target
        if output.plot is not None:
            write_plot(outputs, output.plot, result)
        if output.html is not None:
            write_html(outputs, output.html, result)
        if output.format == "json":
            return json.dumps(result.document, indent=2, allow_nan=False)
        if output.format == "csv":
            return csv_text(result)
        if request.multilabel:
            return multilabel_text(result)
        text = table_text(result)
        if "groups" in result.document:
            text = "\n".join([text, *group_lines(result.document["groups"])])
        return text


def _read_to_calibrate(file: FileOptions) -> Part:
    """Predictions to calibrate, with their labels when asked for or named by the file.

    Without labels the predictions are checked by the recalibrator that takes them.
    """
    return read_predictions(file, optional_labels=True)


def _check_unnamed_labels(part: Part, n_classes: int, path: str) -> None:
    """Refuse one column more than the model's classes: most likely labels nothing names."""
    columns = part.predictions.shape[1] if part.predictions.ndim == 2 else 1
    if part.labels is None and columns == n_classes + 1:
        raise ValueError(
            f"{path} holds {columns} columns of predictions but the model takes "
            f"{n_classes} classes: if one column holds the labels, name it (a "
            f"header naming it label, labels or y, or --labels-column; --labels-key in a "
            ".npz): labels are read only where named, never by position."
        )


def _calibrate(
    model, method: Method, part: Part, file: FileOptions, output: str, done: str, outputs: Batch
) -> list[str]:
    """Apply ``model`` to ``part`` (of ``file``), write ``output``, and say what was done.

    ``output`` is written into ``outputs``, the command's batch of files.

    ``done``: what the model did with the converted predictions (``"fitted and applied
    on"``, ``"applied to"``).
    """
    logits, path = file.logits, file.path
    calibrated = model.predict_proba(method_input(part.predictions, method, logits))
    one_column = part.predictions.ndim == 1
    lines = conversion_lines([method], logits, one_column, done)
    arrays = {"prob": calibrated}
    if part.labels is not None:
        arrays["labels"] = part.labels
        # Each array checked once for both numbers: the file's handle (read with its
        # labels), the calibrated probabilities' own; the NLL of logits from the logits.
        after = check_predictions(calibrated, part.labels, top_label=True)
        for name, metric in (("ECE", ECE), ("NLL", negative_log_likelihood)):
            if logits and registry.spec_of(metric).from_logits:
                view = metric_view(part.predictions, False, logits)
                before = metric(view, part.labels, logits=True)
            else:
                before = metric(part.checked, None)
            lines.append(f"{name} of {path}: {before:.5f} before, {metric(after, None):.5f} after")
    write_npz(outputs, output, **arrays)
    what = "prob and labels" if part.labels is not None else "prob"
    lines.append(f"wrote {output}: {what}, {calibrated.shape[0]:,} x {calibrated.shape[1]}")
    return lines


def _fitted_numbers(model) -> str:
    numbers = parameters(model)
    return f"; {parameters_text(numbers)}" if numbers else ""


def run_recalibrate(request: RecalibrateRequest) -> str:
    """``recalibrate``: fit ``--method`` on ``--fit``, apply it to ``--apply``, write ``-o``."""
    method, path = request.method, request.fit.path
    fit = read_predictions(request.fit)
    to_calibrate = _read_to_calibrate(request.apply)
    warn_same_rows(to_calibrate, fit, f"{path} (--fit)", request.apply.path, "--fit")
    n_classes = 2 if fit.predictions.ndim == 1 else fit.predictions.shape[1]
    _check_unnamed_labels(to_calibrate, n_classes, request.apply.path)
    model = fitted(method, fit.predictions, fit.labels, request.fit.logits)
    lines = [f"{method.title} fitted on {path} ({len(fit.labels):,} rows){_fitted_numbers(model)}"]
    with batch() as outputs:
        lines += _calibrate(
            model,
            method,
            to_calibrate,
            request.apply,
            request.output,
            "fitted and applied on",
            outputs,
        )
        if request.save_model is not None:
            write_model(outputs, request.save_model, model)
            lines.append(
                f"saved the model to {request.save_model} (calibration-toolbox apply reads it)"
            )
    return "\n".join(lines)


def run_apply(request: ApplyRequest) -> str:
    """``apply``: a model saved by ``recalibrate --save-model`` applied to a file."""
    model = load_recalibrator(request.model)
    method = method_of(model)
    to_calibrate = _read_to_calibrate(request.file)
    _check_unnamed_labels(to_calibrate, len(model.classes_), request.file.path)
    lines = [f"{method.title} read from {request.model}{_fitted_numbers(model)}"]
    with batch() as outputs:
        calibrated = _calibrate(
            model, method, to_calibrate, request.file, request.output, "applied to", outputs
        )
    return "\n".join(lines + calibrated)


def run_compare(request: CompareRequest, command: Sequence[str]) -> str:
    """``compare``: two models on the same rows, as text or JSON (and the HTML page)."""
    build = streamed_comparison if request.stream else build_comparison
    comparison = build(request, command)
    output = request.output
    with batch() as outputs:
        if output.html is not None:
            write_comparison_html(outputs, output.html, comparison)
        if output.format == "json":
            return json.dumps(comparison.document, indent=2, allow_nan=False)
        return comparison_text(comparison)


# The entries: the Namespace made typed records once, right after parsing; nothing below
# them reads it.


def report(args: argparse.Namespace, command: Sequence[str]) -> str:
    """``report``, from the parsed command line."""
    return run_report(report_request(args), command)


def recalibrate(args: argparse.Namespace, command: Sequence[str]) -> str:
    """``recalibrate``, from the parsed command line."""
    return run_recalibrate(recalibrate_request(args))


def apply(args: argparse.Namespace, command: Sequence[str]) -> str:
    """``apply``, from the parsed command line."""
    return run_apply(apply_request(args))


def compare(args: argparse.Namespace, command: Sequence[str]) -> str:
    """``compare``, from the parsed command line."""
    return run_compare(compare_request(args), command)


COMMANDS = {"report": report, "recalibrate": recalibrate, "apply": apply, "compare": compare}
