"""Command line: ``calibration-toolbox report [FILE]`` (no file: the embedded example).

Every bad input is answered with one line on stderr, ``calibration-toolbox: error: ...``,
and exit status 2, in the command line's words (``--prob-key``, ``--labels``, ``--logits``,
``--bins``); each distinct warning with one line ``calibration-toolbox: warning: ...``.
Nothing is printed on stdout unless the whole report was computed. Every check of the
inputs runs on the whole file, before any row is selected.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import textwrap
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from calibration_toolbox import __version__
from calibration_toolbox._validation import check_predictions
from calibration_toolbox.datasets import load_example
from calibration_toolbox.io import CSV_LABEL_COLUMNS, LABEL_KEYS, PREDICTION_KEYS, load_predictions
from calibration_toolbox.metrics import (
    ACE,
    ECE,
    MCE,
    RMSCE,
    SCE,
    TACE,
    brier_score,
    calibration_table,
    negative_log_likelihood,
)
from calibration_toolbox.recalibration import TemperatureScaling
from calibration_toolbox.scores import Scores

__all__ = ["main"]

_METRICS = {
    "ECE": ECE,
    "MCE": MCE,
    "RMSCE": RMSCE,
    "SCE": SCE,
    "ACE": ACE,
    "TACE": TACE,
    "Brier": brier_score,
    "NLL": negative_log_likelihood,
}
# The class-wise measures need one column per class: not reported with --scores.
_CLASS_WISE = ("SCE", "ACE", "TACE")
# What each reading calls the two sides of a bin: (JSON keys, column titles).
_SIDES = {False: ("confidence", "accuracy"), True: ("score", "target")}

# A probability of exactly 0 becomes log(1e-300) = -690.8: finite logits whose softmax differs
# from the probabilities by at most 1e-300 per entry.
_LOG_FLOOR = 1e-300

# The API's words in a message -> the command line's (backticks mark an argument's name).
_CLI_WORDS = (
    ("`logits=True`", "--logits"),
    ("logits=True", "--logits"),
    ("renormalize=True", "--renormalize"),
    ("`prob_key`", "--prob-key"),
    ("`labels_key`", "--labels-key"),
    ("`labels_path`", "--labels"),
    ("`bins`", "--bins"),
    ("`path`", "the file"),
    ("`prob`", "the predictions array"),
    ("`Scores`", "the scores"),
    ("without Scores", "without --scores"),
    ("with Scores", "with --scores"),
    ("`X`", "the predictions array"),
    ("`labels`", "the labels"),
    ("`y`", "the labels"),
)


class _UsageError(Exception):
    """A command line that argparse refuses (reported in one line, not usage + message)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print the usage too, and exit
        raise _UsageError(message)


# What a bad input raises anywhere below (a Warning only under `python -W error`).
_FAILURES = (_UsageError, ValueError, TypeError, OSError, Warning)


@dataclass(frozen=True)
class _Inputs:
    """Checked predictions and the rows to fit (None: no recalibration) and to report on."""

    title: str
    predictions: np.ndarray
    labels: np.ndarray
    logits: bool
    fit_rows: np.ndarray | None
    test_rows: np.ndarray | slice
    scores: bool = False
    """One score per row against a 0/1 target (``--scores``), reported through ``Scores``."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``calibration-toolbox`` command; returns the exit status."""
    messages: list[str] = []
    with _collect_warnings(messages):
        try:
            args = _parse(argv)
            inputs = _load_example() if args.path is None else _load_file(args)
            output = _output(inputs, args)
        except _FAILURES as error:
            print(f"calibration-toolbox: error: {_in_cli_words(error)}", file=sys.stderr)
            return 2
    for message in dict.fromkeys(messages):  # each distinct warning once, in order
        print(f"calibration-toolbox: warning: {message}", file=sys.stderr)
    return _print(output)


def _print(output: str) -> int:
    """Print the report; a reader that stops early (``| head``) is not an error to report."""
    try:
        print(output, flush=True)
    except BrokenPipeError:
        # Python's advice: point stdout at devnull so that the flush at exit cannot fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


@contextlib.contextmanager
def _collect_warnings(messages: list[str]) -> Iterator[None]:
    """Collect the text of every warning shown during the run (restores showwarning after)."""

    def collect(message, category, filename, lineno, file=None, line=None):
        messages.append(_in_cli_words(message))

    with warnings.catch_warnings():
        warnings.showwarning = collect
        yield


def _in_cli_words(error: BaseException) -> str:
    """One line in the command line's words: ``--prob-key`` for `prob_key`, and so on."""
    if isinstance(error, OSError) and error.strerror and error.filename:
        text = f"cannot read {error.filename}: {error.strerror}."
    else:
        text = str(error)
    for api_word, cli_word in _CLI_WORDS:
        text = text.replace(api_word, cli_word)
    return " ".join(text.split())


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:  # bare `calibration-toolbox`: the report on the example
        args = parser.parse_args(["report"])
    if args.path is None:
        options = ("--labels", args.labels), ("--prob-key", args.prob_key)
        for option, value in (*options, ("--labels-key", args.labels_key)):
            if value is not None:
                raise _UsageError(f"{option} needs a predictions FILE.")
    return args


def _load_example() -> _Inputs:
    example = load_example()
    title = (
        f"calibration-toolbox {__version__}: embedded example, 10,000 x 10 logits "
        f"overconfident by T = {example.true_temperature:g}; metrics on the "
        "5,000-row test half"
    )
    return _Inputs(
        title, example.logits, example.labels, True, example.calibration_rows, example.test_rows
    )


def _load_file(args: argparse.Namespace) -> _Inputs:
    predictions, labels = load_predictions(
        args.path, labels_path=args.labels, prob_key=args.prob_key, labels_key=args.labels_key
    )
    if predictions.ndim == 2 and predictions.shape[1] == 1:
        predictions = predictions[:, 0]  # a single column: P(y = 1), as a 1-D array
    if args.renormalize:
        predictions = _renormalized(args.path, predictions, labels, args)
    _check_values(args.path, predictions, labels, args.logits, args.scores)
    title = f"calibration-toolbox {__version__}: {args.path}"
    if args.scores:
        title += "; one score per row against a 0/1 target (--scores), binned as given"
    elif predictions.ndim == 1:
        predictions = _binary_columns(predictions, args.logits)
        title += "; one column read as P(y = 1) of a binary classifier (--scores: as given)"
    fit_rows, test_rows = None, slice(None)
    if args.recalibrate:
        fit_rows, test_rows = _split(len(labels), args.path)
        title += "; metrics on a seeded random half, T fitted on the other"
    return _Inputs(title, predictions, labels, args.logits, fit_rows, test_rows, args.scores)


def _check_values(
    path: str, predictions: np.ndarray, labels: np.ndarray, logits: bool, scores: bool
) -> None:
    """Every check of the values (finite, labels in range, distributions) on the whole file.

    Run before any row is selected, so that a row number in a message is the file's. The
    metric that checks is the cheapest of the report: one more pass over the file.
    """
    try:
        negative_log_likelihood(
            Scores(predictions) if scores else predictions, labels, logits=logits
        )
    except (ValueError, TypeError) as error:
        kind = ValueError if isinstance(error, ValueError) else TypeError
        raise kind(f"{path}: {error}") from None


def _renormalized(
    path: str, predictions: np.ndarray, labels: np.ndarray, args: argparse.Namespace
) -> np.ndarray:
    """``--renormalize``: each row divided by its sum, checked as the metrics check it."""
    if args.scores or args.logits or predictions.ndim == 1:
        what = "--scores" if args.scores else "--logits" if args.logits else "one column"
        raise _UsageError(f"--renormalize is for rows of probabilities, not with {what}.")
    try:
        return check_predictions(predictions, labels, renormalize=True).prob
    except (ValueError, TypeError) as error:
        raise type(error)(f"{path}: {error}") from None


def _binary_columns(positive: np.ndarray, logits: bool) -> np.ndarray:
    """The two columns of a binary classifier: ``[1 - p, p]``, or logits ``[0, z]``.

    The top-label measures refuse a 1-D array as ambiguous; on the command line a single
    column means P(y = 1) (``--scores`` says otherwise), so they get the two columns.
    """
    first = np.zeros_like(positive) if logits else 1 - positive
    return np.column_stack([first, positive])


def _split(n_rows: int, path: str) -> tuple[np.ndarray, np.ndarray]:
    """The seeded halves of ``--recalibrate``: fit on the first, report on the second."""
    if n_rows < 2:
        raise ValueError(f"--recalibrate needs at least 2 rows; {path} holds {n_rows}.")
    rows = np.random.default_rng(0).permutation(n_rows)
    return np.sort(rows[: n_rows // 2]), np.sort(rows[n_rows // 2 :])


def _log_probabilities(prob: np.ndarray) -> np.ndarray:
    """Logits whose softmax is ``prob``: its logarithm, as float64, zeros floored at 1e-300.

    A binary P(y = 1) arrives as the two columns ``[1 - p, p]``: their logarithms
    ``[log(1 - p), log p]`` have the softmax ``[1 - p, p]``, and temperature scaling of them
    is ``sigmoid(logit(p) / T)``, temperature scaling of the log-odds. (``log p`` alone, read
    as log-odds, is a different and worse model that can change the predicted classes.) The
    two columns need no subtraction of logarithms and the same floor as K columns: only an
    exact 0 or 1 touches it. float64 first, as 1e-300 is 0 in float32.
    """
    prob = np.asarray(prob, dtype=np.float64)
    return np.log(np.maximum(prob, _LOG_FLOOR))


def _output(inputs: _Inputs, args: argparse.Namespace) -> str:
    """The report (before, and after temperature scaling when asked), as text or JSON."""
    test, labels, scores = inputs.test_rows, inputs.labels, inputs.scores
    before = _report(inputs.predictions[test], labels[test], args.bins, inputs.logits, scores)
    after = temperature = None
    if inputs.fit_rows is not None:
        logits = _fit_logits(inputs)
        scaler = TemperatureScaling().fit(logits[inputs.fit_rows], labels[inputs.fit_rows])
        temperature = scaler.temperature_
        if scores:  # the recalibrated scores, sigmoid(logit(s) / T), as scores again
            calibrated = scaler.predict_proba(logits[test])[:, 1]
            after = _report(calibrated, labels[test], args.bins, False, True)
        else:
            after = _report(scaler(logits[test]), labels[test], args.bins, True, False)
    if args.json:
        return json.dumps({"before": before, "after": after, "temperature": temperature}, indent=2)
    return _format(inputs.title, before, after, temperature, scores)


def _fit_logits(inputs: _Inputs) -> np.ndarray:
    """What temperature scaling is fitted on: logits, or the logarithm of probabilities.

    Scores (1-D) are fitted as a binary classifier's two columns, as a single column is.
    """
    predictions = inputs.predictions
    if inputs.scores:
        predictions = _binary_columns(predictions, inputs.logits)
    return predictions if inputs.logits else _log_probabilities(predictions)


def _report(
    predictions: np.ndarray, labels: np.ndarray, bins: int, logits: bool, scores: bool
) -> dict:
    """Every metric of the predictions, plus the top-label reliability table.

    With ``scores`` the predictions are one score per row (through ``Scores``): the
    class-wise measures are left out, Brier is the single-probability form, and the mean
    target and mean score replace the accuracy.
    """
    prob = Scores(predictions) if scores else predictions
    values = {}
    for name, metric in _METRICS.items():
        if not (scores and name in _CLASS_WISE):
            options = {"bins": bins} if name not in ("Brier", "NLL") else {}
            values[name] = metric(prob, labels, logits=logits, **options)
    table = calibration_table(prob, labels, bins=bins, class_conditional=False, logits=logits)
    total = table.counts.sum()
    if scores:
        values["mean_target"] = float(table.target_sums.sum() / total)
        values["mean_score"] = float(table.score_sums.sum() / total)
    else:
        values["accuracy"] = float(table.target_sums.sum() / total)
    score_key, target_key = _SIDES[scores]
    values["reliability"] = [
        {
            "low": float(low),
            "high": float(high),
            "count": int(count),
            score_key: float(score),
            target_key: float(target),
        }
        for low, high, count, score, target in zip(
            table.edges[0, :-1],
            table.edges[0, 1:],
            table.counts[0],
            table.mean_score[0],
            table.mean_target[0],
            strict=True,
        )
        if count > 0
    ]
    return values


def _format(
    title: str, before: dict, after: dict | None, temperature: float | None, scores: bool
) -> str:
    if scores:
        summary = f"mean target {before['mean_target']:.4f}, mean score {before['mean_score']:.4f}"
    else:
        summary = f"accuracy {before['accuracy']:.4f}"
    lines = [title, summary, ""]
    header = f"{'metric':<8}{'before':>10}"
    if after is not None:
        header += f"{'after':>10}   (temperature scaling, T = {temperature:.4f})"
    lines.append(header)
    for name in (name for name in _METRICS if name in before):
        row = f"{name:<8}{before[name]:>10.5f}"
        if after is not None:
            row += f"{after[name]:>10.5f}"
        lines.append(row)
    if scores:
        lines += [
            "(Brier is the single-probability form mean (s - y)^2, half the two-column one;",
            f" {', '.join(_CLASS_WISE)} are omitted: they need one column per class.)",
        ]
    for label, values in (("before", before), ("after", after)):
        if values is not None:
            lines += ["", *_reliability_lines(label, values["reliability"], scores)]
    return "\n".join(lines)


def _reliability_lines(label: str, reliability: list[dict], scores: bool) -> list[str]:
    score_key, target_key = _SIDES[scores]
    what = "reliability of the scores" if scores else "top-label reliability"
    lines = [
        f"{what}, {label}:",
        f"{'bin':<16}{'count':>7}{score_key:>12}{target_key:>10}{'gap':>9}",
    ]
    for row in reliability:
        lines.append(
            f"({row['low']:.3f}, {row['high']:.3f}]{row['count']:>7}"
            f"{row[score_key]:>12.4f}{row[target_key]:>10.4f}"
            f"{row[target_key] - row[score_key]:>+9.4f}"
        )
    return lines


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1; got {text!r}")
    return value


def _fill(text: str) -> str:
    return textwrap.fill(text, width=79, initial_indent="  ", subsequent_indent="  ")


_FILES_HELP = "\n".join(
    [
        "files:",
        _fill(
            ".npz: the arrays named by --prob-key and --labels-key; by default the first "
            f"predictions array named {', '.join(PREDICTION_KEYS)} and the first labels "
            f"array named {', '.join(LABEL_KEYS)}; else the only 2-D and the only 1-D array."
        ),
        _fill(".npy: the predictions; the labels from --labels (a .npy, or a one-column .csv)."),
        _fill(
            ".csv: one row per sample, comma-separated; the labels in the last column, or in "
            f"the column named {', '.join(CSV_LABEL_COLUMNS[:-1])} or {CSV_LABEL_COLUMNS[-1]} "
            "when the first line is a header (it may start with #). A single prediction "
            "column is P(y = 1)."
        ),
        _fill(
            "Predictions are probabilities (rows summing to 1; a 1-D array is P(y = 1)) or, "
            "with --logits, logits. Files are never unpickled (allow_pickle=False)."
        ),
        "",
        "--scores:",
        _fill(
            "the file holds one score per row and a 0/1 target: a .csv with two columns "
            "score,target (the target column found as the labels column above), or a .npz "
            "with two named arrays, e.g. confidence and correct, or scores and outcome. The "
            "scores are binned as given against the target (an LLM's confidence against "
            "correctness; a click-through model's P(click) against the click): ECE, MCE, "
            "RMSCE, Brier (single-probability form), NLL, the mean target and mean score and "
            "the reliability table; the class-wise SCE, ACE and TACE are omitted. With "
            "--logits the scores are log-odds. Without --scores a single column is P(y = 1) "
            "of a binary classifier, and the top-label measures see the two columns "
            "[1 - p, p]."
        ),
        "",
        "--recalibrate:",
        _fill(
            "rows = numpy.random.default_rng(0).permutation(n); temperature scaling is fitted "
            "on the first n // 2 of them and the metrics are those of the others, before and "
            "after. Probabilities are recalibrated as log-probabilities (1-D P(y = 1), and "
            "--scores, as the two columns log(1 - p), log p; zeros floored at 1e-300); with "
            "--scores the recalibrated scores sigmoid(logit(s) / T) are reported as scores."
        ),
    ]
)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="calibration-toolbox",
        description="Measure (and fix) the calibration of saved classifier predictions.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command")
    report = commands.add_parser(
        "report",
        help="calibration metrics of saved predictions (default: embedded example)",
        epilog=_FILES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument("path", nargs="?", help=".npz, .npy or .csv file; none: the example")
    report.add_argument("--labels", help="labels file for a .npy of predictions")
    report.add_argument("--prob-key", help="array name of the predictions in a .npz")
    report.add_argument("--labels-key", help="array name of the labels in a .npz")
    report.add_argument("--logits", action="store_true", help="the file holds logits")
    report.add_argument(
        "--scores",
        action="store_true",
        help="one score per row against a 0/1 target (an LLM's confidence and whether the "
        "answer was right; P(event) and whether it happened), binned as given",
    )
    report.add_argument(
        "--renormalize",
        action="store_true",
        help="divide each row of probabilities by its sum first (rows rounded when saved)",
    )
    report.add_argument(
        "--bins", type=_positive_int, default=15, help="number of bins (default 15)"
    )
    report.add_argument(
        "--recalibrate",
        action="store_true",
        help="fit temperature scaling on a seeded half and report the other half before/after",
    )
    report.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
