"""The command line's options: ``report``, ``recalibrate``, ``apply``, ``compare``; their help."""

from __future__ import annotations

import argparse
import os
import textwrap

from calibration_toolbox import __version__
from calibration_toolbox._columns import (
    CSV_LABEL_COLUMNS,
    LABEL_KEYS,
    PREDICTED_LABEL_KEYS,
    PREDICTION_KEYS,
)
from calibration_toolbox.cli._names import (
    DEFAULT_METRICS,
    METHOD_NAMES,
    METRIC_NAMES,
    STREAMED_METRICS,
    methods_taking,
)

__all__ = ["FIGURE_FORMATS", "UsageError", "parser"]

FIGURE_FORMATS = (".png", ".svg", ".pdf")


class UsageError(Exception):
    """A command line that cannot be run as given (reported in one line, exit status 2)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print the usage too, and exit
        raise UsageError(message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1; got {text!r}")
    return value


def _bin_count(text: str) -> int | str:
    """``--bins``: a count, or ``auto`` (the cube-root rule, resolved on the rows)."""
    if text == "auto":
        return text
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must be an integer >= 1 or auto; got {text!r}"
        ) from None


def _seed(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"must be an integer >= 0; got {text!r}")
    return int(text)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(
            f"must be a number strictly between 0 and 1, in (0, 1); got {text!r}"
        )
    return value


def _suffixed(*suffixes: str):
    """The type of an output option: a file name ending in one of ``suffixes`` (any case).

    The suffix names the format written; any other name is refused, never written as a
    file of another format.
    """

    def checked(text: str) -> str:
        if os.path.splitext(text)[1].lower() not in suffixes:
            raise argparse.ArgumentTypeError(
                f"the file name must end in {', '.join(suffixes)}; got {text!r}"
            )
        return text

    return checked


_figure_path = _suffixed(*FIGURE_FORMATS)


# What a report read in blocks gives, and the first few it leaves out (the registry's).
_STREAMED = ", ".join(STREAMED_METRICS)
_NOT_STREAMED = ", ".join([name for name in METRIC_NAMES if name not in STREAMED_METRICS][:3])


def _fill(text: str) -> str:
    return textwrap.fill(
        text, width=79, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False
    )


_FILES_HELP = [
    "files:",
    _fill(
        ".npz: the arrays named by --prob-key and --labels-key; by default the first "
        f"predictions array named {', '.join(PREDICTION_KEYS)} and the first labels "
        f"array named {', '.join(LABEL_KEYS)}; else the only 2-D and the only 1-D array."
    ),
    _fill(
        ".npy: the predictions, memory-mapped; the labels from --labels (a .npy, or a "
        "one-column .csv)."
    ),
    _fill(
        ".csv (.txt, .tsv): one row per sample, cells separated by ',', ';' or a tab (told "
        "from the first line; --sep to say, e.g. --sep ';' or --sep tab); the labels in the "
        f"last column, or in the column named {', '.join(CSV_LABEL_COLUMNS[:-1])} or "
        f"{CSV_LABEL_COLUMNS[-1]} when the first line is a header (it may start with #), or "
        "in the column --labels-column names; the predictions in every other column, or in "
        "the columns --prob-column names as for .parquet (an id or weight column is then "
        "ignored). A first column without a name is pandas' index (df.to_csv(path) writes "
        "it) and is dropped. A single prediction column is P(y = 1). Labels True/False "
        "(pandas), TRUE/FALSE (R) or true/false are a 0/1 target."
    ),
    _fill(
        '.parquet (pip install "calibration-toolbox[parquet]"): the predictions in one '
        "column of lists, or one column per class (--prob-column p_cat,p_dog, or a prefix "
        "--prob-column 'prob_*'), and a label column (--labels-column); by default the "
        "columns named as the .npz arrays above. Read row group by row group."
    ),
    _fill(
        '.jsonl (.ndjson): one JSON object per line, e.g. {"confidence": 0.82, "correct": '
        'true} or {"probs": [0.1, 0.9], "label": 1}; fields chosen as the columns of a '
        ".parquet (--prob-column, --labels-column; a field holding a list is a probability "
        "vector). A bad line is an error naming its number."
    ),
    _fill(
        "Class names: labels that are names (cat, dog) need --classes cat,dog,emu, the "
        "names in the column order of the predictions, or --classes-file names.txt, one "
        "name per line (for names with commas)."
    ),
    _fill(
        "Predictions are probabilities (rows summing to 1; a 1-D array is P(y = 1)) or, "
        "with --logits, logits. Files are never unpickled (allow_pickle=False)."
    ),
]


def _taking(needs: str) -> str:
    """The names of the methods fitted on ``needs`` (logits or probabilities), in words."""
    names = methods_taking(needs)
    return ", ".join(names[:-1]) + " and " + names[-1]


_METHODS_HELP = [
    "recalibration:",
    _fill(
        "--method fits each method on --fit-on VALIDATION_FILE (read as FILE is, with "
        "--prob-key and --labels-key), on the arrays --fit-prob-key KEY --fit-labels-key KEY "
        "(both: the two arrays of the fit rows) of --fit-on or, without it, of FILE itself "
        "(one .npz holding both splits: --prob-key logits_test --labels-key y_test "
        "--fit-prob-key logits_val --fit-labels-key y_val), or on the rows i (from 0) "
        "whose i-th output of SplitMix64 seeded with SEED, as a number in [0, 1), is below "
        "FRACTION (--split FRACTION --seed SEED; default 0.5 and 0: about FRACTION of the "
        "rows, the same rows whether FILE is read whole or in blocks), and reports the "
        "other rows before and after; --recalibrate is --method temperature. "
        f"{_taking('logits')} take logits: probabilities are given as log(p) (a single "
        "column P(y = 1) as the log-odds log(p / (1 - p)); zeros floored at 1e-300). "
        f"{_taking('probabilities')} take probabilities: logits are given as "
        "softmax(z) (a single column as sigmoid(z)). The report says which conversion it "
        "made. With --scores the recalibrated scores are reported as scores. Methods "
        "fitted on the very rows they are scored on (the same file with the same keys, or "
        "equal arrays) give in-sample numbers: a warning says so. So does a method that "
        "lowers the accuracy of the scored rows beyond chance (McNemar's exact test on the "
        "rows it turns wrong and right, p < 0.01). Every warning is one line on stderr, and "
        "is in the JSON document and the HTML page: a method's in its entry, the file's at "
        "the top. --method auto fits every method on 5 stratified folds of the fit rows "
        "(shuffled by --seed), reports the one of least mean held-out NLL and lists each "
        "method's mean and spread over the folds (a warning when the best does not beat "
        "the uncalibrated predictions by more than its spread); FILE is read whole."
    ),
]

_RECALIBRATE_HELP = [
    "recalibrate:",
    _fill(
        "--method is fitted on --fit FILE, read with --fit-prob-key and --fit-labels-key "
        "(both, for one .npz holding both splits) or else as --apply is (--prob-key, "
        "--labels-key); a fit on the very rows applied to is warned about."
    ),
]

_REPORT_HELP = "\n".join(
    [
        *_FILES_HELP,
        "",
        "--scores:",
        _fill(
            "the file holds one score per row and a 0/1 target: a .csv with two columns "
            "score,target (the target column found as the labels column above), a .npz "
            "with two named arrays, e.g. confidence and correct, or scores and outcome, or "
            "a .jsonl with such fields. A top-label dump (true_label,pred_label,confidence) "
            "is read as the confidence against pred_label == true_label: a .csv, .parquet, "
            f".jsonl or .npz with a column named {', '.join(PREDICTED_LABEL_KEYS)} (or named "
            "by --pred-column), the true label as the labels column (--labels-column, or "
            "named true_label) and the confidence as the only other column or the one "
            "--prob-column names. The "
            "scores are binned as given against the target (an LLM's confidence against "
            "correctness; a click-through model's P(click) against the click): ECE, MCE, "
            "RMSCE, Brier (single-probability form), NLL, the mean target and mean score and "
            "the reliability table; the class-wise measures are omitted. With --logits the "
            "scores are log-odds. Without --scores a single column is P(y = 1) of a binary "
            "classifier, and the top-label measures see the two columns [1 - p, p]."
        ),
        "",
        *_METHODS_HELP,
        "",
        "large files:",
        _fill(
            "a FILE whose arrays take more than 128 MiB (a .npz: inflated; or any FILE with "
            "--stream) is read in blocks of "
            "--block-rows rows, one pass, in memory bounded by a block: every metric the "
            f"per-bin sums determine ({_STREAMED}, --per-class) equals the whole file's; the "
            f"others ({_NOT_STREAMED}, ..., --ci) are left out with a warning; --in-memory "
            "reads the file whole. "
            "--method without --fit-on fits on the seeded share: temperature and vector "
            "scaling one pass over the file per step of the fit, the other methods on the "
            "fit rows gathered in memory when they take at most 256 MiB."
        ),
        "",
        "metrics:",
        _fill(
            f"--metrics takes any of {', '.join(METRIC_NAMES)} and Top<r>CE (ToprCE with r, "
            f"e.g. Top2CE), in any case; default {','.join(DEFAULT_METRICS)}. --ci adds "
            "percentile bootstrap intervals (95 %, --n-resamples resamples of the rows, "
            "seeded by --seed)."
        ),
    ]
)


def _separator(text: str) -> str:
    """``--sep``: one character; ``tab`` and a backslash-t name a tab (hard to type)."""
    return "\t" if text in ("tab", "\\t") else text


def _column_names(text: str) -> str | list[str]:
    """``--prob-column``: one name (a column of lists, or a prefix ending in ``*``) or a list."""
    names = [name.strip() for name in text.split(",")]
    return names[0] if len(names) == 1 else names


def _add_loading_options(command: argparse.ArgumentParser, labels_help: str) -> None:
    command.add_argument("--labels", metavar="FILE", help=labels_help)
    command.add_argument("--prob-key", metavar="KEY", help="array of the predictions in a .npz")
    command.add_argument("--labels-key", metavar="KEY", help="array of the labels in a .npz")
    command.add_argument(
        "--prob-column",
        type=_column_names,
        metavar="NAMES",
        help="prediction columns: a,b,c or p_*",
    )
    command.add_argument(
        "--labels-column", metavar="NAME", help="label column (.csv, .parquet, .jsonl)"
    )
    command.add_argument(
        "--sep", type=_separator, metavar="CHAR", help="separator of a .csv: , ; or tab"
    )
    names = command.add_mutually_exclusive_group()
    names.add_argument("--classes", metavar="NAMES", help="class names, column order: cat,dog,emu")
    names.add_argument("--classes-file", metavar="FILE", help="class names, one per line")
    command.add_argument("--logits", action="store_true", help="the files hold logits")
    _add_layout_options(command)


def _add_layout_options(command: argparse.ArgumentParser) -> None:
    """The options of a file's layout beyond its columns of predictions and labels."""
    command.add_argument(
        "--pred-column",
        metavar="NAME",
        help="predicted label of a top-label dump (--scores)",
    )


def _add_fit_keys(command: argparse.ArgumentParser, where: str) -> None:
    """``--fit-prob-key`` and ``--fit-labels-key``: the fit rows' arrays of a .npz."""
    command.add_argument("--fit-prob-key", metavar="KEY", help=f"predictions to fit on in {where}")
    command.add_argument("--fit-labels-key", metavar="KEY", help=f"labels to fit on in {where}")


def _add_report(commands) -> None:
    report = commands.add_parser(
        "report",
        help="calibration metrics of saved predictions (default: embedded example)",
        epilog=_REPORT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument(
        "path", nargs="?", help=".npz/.npy/.csv/.parquet/.jsonl file; none: the example"
    )
    _add_loading_options(report, "labels file for a .npy of predictions")
    report.add_argument(
        "--scores", action="store_true", help="one score per row against a 0/1 target"
    )
    report.add_argument(
        "--renormalize", action="store_true", help="divide each row of probabilities by its sum"
    )
    report.add_argument(
        "--bins",
        type=_bin_count,
        default=15,
        metavar="B",
        help="number of bins (15), or auto",
    )
    report.add_argument("--metrics", metavar="NAMES", help="comma-separated metric names")
    report.add_argument("--per-class", action="store_true", help="a table of every class")
    report.add_argument(
        "--multilabel",
        action="store_true",
        help="an (N, K) 0/1 label matrix: one sigmoid per label",
    )
    report.add_argument(
        "--groups",
        metavar="COLUMN",
        help="metrics per group: a column (.npz key) of FILE",
    )
    report.add_argument("--ci", action="store_true", help="95 %% bootstrap intervals")
    report.add_argument(
        "--n-resamples", type=_positive_int, metavar="R", help="bootstrap resamples (200)"
    )
    report.add_argument(
        "--method",
        metavar="NAMES",
        help="comma-separated methods, or auto (see recalibration)",
    )
    report.add_argument("--recalibrate", action="store_true", help="same as --method temperature")
    report.add_argument("--fit-on", metavar="FILE", help="fit the methods on this file")
    _add_fit_keys(report, "--fit-on FILE (default: FILE)")
    report.add_argument(
        "--split", type=_fraction, metavar="FRACTION", help="fit on this seeded share (0.5)"
    )
    report.add_argument(
        "--seed", type=_seed, help="seed of --split, --ci and the diagrams' bands (0)"
    )
    report.add_argument(
        "--format",
        choices=("table", "json", "csv"),
        metavar="FORMAT",
        help="table (default), json or csv",
    )
    report.add_argument("--json", action="store_true", help="same as --format json")
    report.add_argument(
        "--plot", type=_figure_path, metavar="FILE", help="write the diagrams (.png/.svg/.pdf)"
    )
    report.add_argument(
        "--html",
        type=_suffixed(".html", ".htm"),
        metavar="FILE",
        help="write the report as an HTML page",
    )
    reading = report.add_mutually_exclusive_group()
    reading.add_argument(
        "--stream", action="store_true", help="read FILE in blocks (default above 128 MiB)"
    )
    reading.add_argument("--in-memory", action="store_true", help="read FILE whole, however large")
    report.add_argument(
        "--block-rows", type=_positive_int, metavar="N", help="rows per block (65536)"
    )


def _add_recalibrate(commands) -> None:
    command = commands.add_parser(
        "recalibrate",
        help="fit a method on one file and apply it to another",
        epilog="\n".join([*_FILES_HELP, "", *_METHODS_HELP, "", *_RECALIBRATE_HELP]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument(
        "--method",
        required=True,
        choices=list(METHOD_NAMES),
        metavar="NAME",
        help="one method (see recalibration)",
    )
    command.add_argument("--fit", required=True, metavar="FILE", help="predictions to fit on")
    _add_fit_keys(command, "--fit FILE")
    command.add_argument("--apply", required=True, metavar="FILE", help="predictions to calibrate")
    command.add_argument(
        "-o",
        "--output",
        required=True,
        type=_suffixed(".npz"),
        metavar="OUT",
        help="output .npz: prob (and labels)",
    )
    command.add_argument(
        "--save-model", type=_suffixed(".json"), metavar="JSON", help="also save the fitted model"
    )
    _add_loading_options(command, "labels file of a .npy given to --apply")
    command.set_defaults(scores=False, renormalize=False)


_APPLY_HELP = [
    "labels:",
    _fill(
        "apply needs no labels: FILE may hold the predictions only (a .npz with the "
        "predictions array alone, a .csv of prediction columns, a .npy, a .parquet). Labels "
        "are read only when asked for (--labels, --labels-key, --labels-column) or named by "
        f"the file (a .npz array or .parquet column named {', '.join(LABEL_KEYS)}; a .csv "
        f"column headed {', '.join(CSV_LABEL_COLUMNS)}): every other column of a .csv is a "
        "prediction, and the rules above that pick a labels array or column by position "
        "(the only 1-D array, the last column) do not apply. Labels read are carried "
        "along: written to OUT beside prob, with the ECE and NLL before and after."
    ),
]


def _add_apply(commands) -> None:
    command = commands.add_parser(
        "apply",
        help="apply a saved model (recalibrate --save-model) to predictions",
        epilog="\n".join([*_FILES_HELP, "", *_APPLY_HELP]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("model", help="a model saved by recalibrate --save-model (.json)")
    command.add_argument(
        "path", help="predictions to calibrate (.npz, .npy, .csv, ...); no labels needed"
    )
    command.add_argument(
        "-o",
        "--output",
        required=True,
        type=_suffixed(".npz"),
        metavar="OUT",
        help="output .npz: prob (labels if read)",
    )
    _add_loading_options(command, "labels file for a .npy of predictions (optional)")
    command.set_defaults(scores=False, renormalize=False)


_COMPARE_HELP = [
    "compare:",
    _fill(
        "A and B hold two models' predictions of the same rows, in the same order, with the "
        "same labels (read alike: the options of the files apply to both; a .npy takes its "
        "labels from --labels, for both); anything else is refused. Shown: both models' "
        "metrics and their difference A - B; with --ci the 95 % paired bootstrap interval "
        "of each difference (both models evaluated on the same resampled rows, "
        "calibration_toolbox.stats.paired_bootstrap, --n-resamples resamples seeded by "
        "--seed) and its p-value; always the paired t test of the per-row Brier and log "
        "scores (stats.paired_score_test). A model is said to be better at the 95 % level "
        "when the interval of the difference excludes 0 (lower is better for every metric "
        "and score); --html writes a page with both reliability diagrams overlaid."
    ),
    _fill(
        "--stream reads A and B block by block together (--block-rows rows each), checking "
        "that each block holds the same rows; the metrics come from sums (those that need "
        "all the rows at once are refused by name), the score tests and --ci from what is "
        "kept per row (each model's scores, and the cells of the binned metrics of fixed "
        "edges): the same numbers as without --stream."
    ),
]


def _add_compare(commands) -> None:
    command = commands.add_parser(
        "compare",
        help="compare two models' predictions of the same rows",
        epilog="\n".join([*_FILES_HELP, "", *_COMPARE_HELP]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    command.add_argument("a", metavar="A", help="predictions of model A (.npz, .npy, .csv, ...)")
    command.add_argument("b", metavar="B", help="predictions of model B, the same rows")
    _add_loading_options(command, "labels file of .npy predictions (both models)")
    command.add_argument(
        "--scores", action="store_true", help="one score per row against a 0/1 target"
    )
    command.add_argument(
        "--renormalize", action="store_true", help="divide each row of probabilities by its sum"
    )
    command.add_argument(
        "--bins", type=_bin_count, default=15, metavar="B", help="number of bins (15), or auto"
    )
    command.add_argument("--metrics", metavar="NAMES", help="comma-separated metric names")
    command.add_argument(
        "--ci", action="store_true", help="95 %% paired bootstrap intervals of the differences"
    )
    command.add_argument(
        "--n-resamples", type=_positive_int, metavar="R", help="bootstrap resamples (200)"
    )
    command.add_argument("--seed", type=_seed, help="seed of --ci (0)")
    command.add_argument(
        "--format", choices=("text", "json"), metavar="FORMAT", help="text (default) or json"
    )
    command.add_argument(
        "--html",
        type=_suffixed(".html", ".htm"),
        metavar="FILE",
        help="write the comparison as an HTML page",
    )
    command.add_argument("--stream", action="store_true", help="read A and B in blocks, together")
    command.add_argument(
        "--block-rows", type=_positive_int, metavar="N", help="rows per block (65536)"
    )
    command.set_defaults(per_class=False)


def parser() -> argparse.ArgumentParser:
    """The parser of every subcommand; a bad command line raises :class:`UsageError`."""
    main = _Parser(
        prog="calibration-toolbox",
        description="Measure (and fix) the calibration of saved classifier predictions.",
    )
    main.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = main.add_subparsers(dest="command", parser_class=_Parser)
    _add_report(commands)
    _add_recalibrate(commands)
    _add_apply(commands)
    _add_compare(commands)
    return main
