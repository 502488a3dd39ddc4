"""The three subcommands: ``report``, ``recalibrate`` and ``apply``.

Each returns the text to print on stdout; every output file is written (atomically) before
that text, and every option is checked before any work, so that a failure prints one line
on stderr and leaves no file behind.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from calibration_toolbox.cli._document import ReportOptions, build_report
from calibration_toolbox.cli._files import check_output, write_html, write_npz, write_plot
from calibration_toolbox.cli._inputs import (
    Part,
    check_fit_keys,
    fit_path,
    fits_apart,
    load_inputs,
    metric_view,
    read_fit_rows,
    read_predictions,
    warn_same_rows,
)
from calibration_toolbox.cli._methods import (
    METHODS,
    Method,
    conversion_lines,
    fitted,
    method_input,
    method_of,
    parameters,
    parse_methods,
)
from calibration_toolbox.cli._metrics import Metric, parse_metrics
from calibration_toolbox.cli._parser import UsageError
from calibration_toolbox.cli._stream import stream_report, streams
from calibration_toolbox.cli._text import csv_text, parameters_text, table_text
from calibration_toolbox.cli._warned import Warned
from calibration_toolbox.metrics import ECE, negative_log_likelihood
from calibration_toolbox.recalibration import load_recalibrator

__all__ = ["COMMANDS"]


def _check_fit_options(args: argparse.Namespace, methods: tuple[Method, ...]) -> None:
    """The options that choose the fit rows, against each other and the methods."""
    apart = "--fit-on" if args.fit_on is not None else "--fit-prob-key"
    if args.split is not None and fits_apart(args):
        raise UsageError(f"--split and {apart} both choose the rows to fit on; give one of them.")
    check_fit_keys(args, fit_path(args), apart)
    options = (("--fit-on", args.fit_on), ("--fit-prob-key", args.fit_prob_key))
    for option, value in (*options, ("--split", args.split)):
        if value is not None and not methods:
            raise UsageError(f"{option} chooses the rows to fit on; it needs --method.")
        if value is not None and args.path is None:
            raise UsageError(
                f"{option} needs a predictions FILE; the embedded example has its own "
                "calibration half."
            )
    seeded = args.ci or (methods and not fits_apart(args) and args.path is not None)
    if args.seed is not None and not seeded:
        raise UsageError("--seed seeds --split and --ci; it means nothing without them.")
    if args.n_resamples is not None and not args.ci:
        raise UsageError("--n-resamples is the number of bootstrap resamples of --ci.")


def _methods(args: argparse.Namespace) -> tuple[Method, ...]:
    methods = parse_methods(args.method)
    if args.recalibrate:
        if methods:
            raise UsageError("--recalibrate is --method temperature; give one of them.")
        methods = (METHODS["temperature"],)
    if args.path is None and not methods:  # the example shows temperature scaling at work
        methods = (METHODS["temperature"],)
    return methods


def _metrics(args: argparse.Namespace) -> tuple[Metric, ...]:
    """The metrics asked for; without --metrics, the class-wise ones are left out of --scores."""
    metrics = parse_metrics(args.metrics)
    if args.scores:
        class_wise = [metric.name for metric in metrics if metric.class_wise]
        if class_wise and args.metrics is not None:
            raise UsageError(
                f"--metrics {','.join(class_wise)}: class-wise, they need one column per "
                "class, not --scores."
            )
        metrics = tuple(metric for metric in metrics if not metric.class_wise)
    if args.per_class and args.scores:
        raise UsageError("--per-class needs one column per class, not --scores.")
    return metrics


def _report_options(args: argparse.Namespace) -> ReportOptions:
    if args.json:
        if args.format not in (None, "json"):
            raise UsageError(f"--json is --format json; not with --format {args.format}.")
        args.format = "json"
    methods = _methods(args)
    _check_fit_options(args, methods)
    check_output(args.plot, "--plot")
    check_output(args.html, "--html")
    return ReportOptions(
        bins=args.bins,
        metrics=_metrics(args),
        methods=methods,
        per_class=args.per_class,
        class_tables=args.per_class or args.html is not None,
        ci=args.ci,
        n_resamples=200 if args.n_resamples is None else args.n_resamples,
        seed=0 if args.seed is None else args.seed,
    )


def report(args: argparse.Namespace, command: Sequence[str]) -> str:
    """``report``: the metrics before and after each method, as a table, JSON or CSV."""
    options = _report_options(args)
    warned = Warned()
    with warned.of_file():
        if streams(args):
            result = stream_report(args, options, command, warned)
        else:
            if args.block_rows is not None:
                whole = args.path or "the embedded example"
                raise UsageError(
                    f"--block-rows sizes the blocks of a file read in blocks; {whole} is read "
                    "whole (add --stream)."
                )
            inputs = load_inputs(args, fitting=bool(options.methods))
            result = build_report(inputs, options, command, warned)
    result.document["warnings"] = warned.file
    if args.plot is not None:
        write_plot(args.plot, result)
    if args.html is not None:
        write_html(args.html, result)
    if args.format == "json":
        return json.dumps(result.document, indent=2, allow_nan=False)
    return csv_text(result) if args.format == "csv" else table_text(result)


def _read_to_calibrate(path: str, args: argparse.Namespace) -> Part:
    """Predictions to calibrate, with their labels when asked for or named by the file.

    Without labels the predictions are checked by the recalibrator that takes them.
    """
    return Part(*read_predictions(path, args, labels_path=args.labels, optional_labels=True))


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
    model, method: Method, part: Part, path: str, args: argparse.Namespace, done: str
) -> list[str]:
    """Apply ``model`` to ``part``, write ``-o``, and say what was done in a few lines.

    ``done``: what the model did with the converted predictions (``"fitted and applied
    on"``, ``"applied to"``).
    """
    logits = args.logits
    calibrated = model.predict_proba(method_input(part.predictions, method, logits))
    one_column = part.predictions.ndim == 1
    lines = conversion_lines([method], logits, one_column, done)
    arrays = {"prob": calibrated}
    if part.labels is not None:
        arrays["labels"] = part.labels
        view = metric_view(part.predictions, False, logits)
        for name, metric in (("ECE", ECE), ("NLL", negative_log_likelihood)):
            before = metric(view, part.labels, logits=logits)
            after = metric(calibrated, part.labels)
            lines.append(f"{name} of {path}: {before:.5f} before, {after:.5f} after")
    write_npz(args.output, **arrays)
    what = "prob and labels" if part.labels is not None else "prob"
    lines.append(f"wrote {args.output}: {what}, {calibrated.shape[0]:,} x {calibrated.shape[1]}")
    return lines


def _fitted_numbers(model) -> str:
    numbers = parameters(model)
    return f"; {parameters_text(numbers)}" if numbers else ""


def recalibrate(args: argparse.Namespace, command: Sequence[str]) -> str:
    """``recalibrate``: fit ``--method`` on ``--fit``, apply it to ``--apply``, write ``-o``."""
    check_output(args.output, "-o")
    check_output(args.save_model, "--save-model")
    if Path(args.fit).suffix.lower() == ".npy":
        raise UsageError("--fit needs the labels in the same file: a .npz or a .csv.")
    check_fit_keys(args, args.fit, "--fit")
    method = METHODS[args.method]
    fit = read_fit_rows(args.fit, args)
    to_calibrate = _read_to_calibrate(args.apply, args)
    warn_same_rows(to_calibrate, fit, f"{args.fit} (--fit)", args.apply, "--fit")
    n_classes = 2 if fit.predictions.ndim == 1 else fit.predictions.shape[1]
    _check_unnamed_labels(to_calibrate, n_classes, args.apply)
    model = fitted(method, fit.predictions, fit.labels, args.logits)
    lines = [
        f"{method.title} fitted on {args.fit} ({len(fit.labels):,} rows){_fitted_numbers(model)}"
    ]
    lines += _calibrate(model, method, to_calibrate, args.apply, args, "fitted and applied on")
    if args.save_model is not None:
        model.save(args.save_model)
        lines.append(f"saved the model to {args.save_model} (calibration-toolbox apply reads it)")
    return "\n".join(lines)


def apply(args: argparse.Namespace, command: Sequence[str]) -> str:
    """``apply``: a model saved by ``recalibrate --save-model`` applied to a file."""
    check_output(args.output, "-o")
    model = load_recalibrator(args.model)
    method = method_of(model)
    to_calibrate = _read_to_calibrate(args.path, args)
    _check_unnamed_labels(to_calibrate, len(model.classes_), args.path)
    lines = [f"{method.title} read from {args.model}{_fitted_numbers(model)}"]
    return "\n".join(
        lines + _calibrate(model, method, to_calibrate, args.path, args, "applied to")
    )


COMMANDS = {"report": report, "recalibrate": recalibrate, "apply": apply}
