"""The command line's options as typed records, made once from argparse right after parsing.

Every check of the options against each other (and of the output paths) runs here, before
any file is read, so that a bad command line fails with one line and no work done.  Below
the entry of a subcommand (:mod:`~calibration_toolbox.cli._commands`) every function takes
these records, never the ``argparse.Namespace``:

- :class:`FileOptions`: a file of predictions, its keys or columns, and how its values read;
- :class:`ReportOptions`: the metrics and the bins, ``--per-class``, ``--ci``;
- :class:`FitOptions`: the methods and the rows they are fitted on (a file or a split);
- :class:`OutputOptions`: what is printed and written;
- :class:`ReportRequest`, :class:`RecalibrateRequest`, :class:`ApplyRequest` and
  :class:`CompareRequest`: a subcommand's records together.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, replace
from pathlib import Path

from calibration_toolbox.cli._methods import AUTO, METHODS, Method, parse_methods
from calibration_toolbox.cli._metrics import RESAMPLED_DIAGRAMS, Metric, parse_metrics
from calibration_toolbox.cli._parser import UsageError

__all__ = [
    "ApplyRequest",
    "CompareRequest",
    "FileOptions",
    "FitOptions",
    "OutputOptions",
    "RecalibrateRequest",
    "ReportOptions",
    "ReportRequest",
    "apply_request",
    "check_apart",
    "check_output",
    "compare_request",
    "input_kind",
    "recalibrate_request",
    "report_request",
]


def input_kind(logits: bool, scores: bool) -> str:
    """``'scores'``, ``'logits'`` or ``'probabilities'``: what a file holds."""
    return "scores" if scores else "logits" if logits else "probabilities"


@dataclass(frozen=True)
class FileOptions:
    """A file of predictions and how to read it (``path`` None: the embedded example)."""

    path: str | None
    labels: str | None = None
    """``--labels``: the labels' own file (for a ``.npy`` of predictions)."""
    prob_key: str | None = None
    labels_key: str | None = None
    prob_column: str | list[str] | None = None
    labels_column: str | None = None
    pred_column: str | None = None
    sep: str | None = None
    classes: str | None = None
    """``--classes a,b,c`` as given (made a list of names when the file is read)."""
    classes_file: str | None = None
    logits: bool = False
    scores: bool = False
    renormalize: bool = False

    @property
    def kind(self) -> str:
        """``'scores'``, ``'logits'`` or ``'probabilities'``: what the file holds."""
        return input_kind(self.logits, self.scores)

    def keys(self) -> tuple[str | None, str | None]:
        """The arrays of a ``.npz``: ``--prob-key`` and ``--labels-key``."""
        return self.prob_key, self.labels_key

    def other(self, path: str, keys: tuple[str | None, str | None]) -> FileOptions:
        """Another file read as this one is, its arrays ``keys`` (its labels in it)."""
        return replace(self, path=path, labels=None, prob_key=keys[0], labels_key=keys[1])


@dataclass(frozen=True)
class ReportOptions:
    """What to compute: the metrics and the bins, the per-class table, the intervals."""

    bins: int | str
    """A count, or ``'auto'`` until the rows resolve it (``InMemory``)."""
    metrics: tuple[Metric, ...]
    per_class: bool = False
    class_tables: bool = False
    """Whether to build the class-wise tables (``--per-class`` and ``--html`` need them)."""
    ci: bool = False
    n_resamples: int = 200
    seed: int = 0
    auto_bins: bool = False
    """Whether ``bins`` is the count ``--bins auto`` chose (the report says so)."""
    diagrams: tuple[str, ...] = ()
    """The curves to compute for their diagrams (``Metric.diagram``: ``'corp'``, ``'smooth'``):
    those of the metrics reported, with ``--plot`` or ``--html``."""
    groups: str | None = None
    """``--groups``: the column (or ``.npz`` array) of the group of each row."""
    across_groups: tuple[Metric, ...] = ()
    """The metrics over the groups of ``--groups`` (``Metric.groups``: multicalibration),
    reported once beside the per-group table; ``metrics`` holds the others."""


@dataclass(frozen=True)
class FitOptions:
    """The methods and the rows they are fitted on.

    ``fit_on``, ``prob_key`` and ``labels_key``: ``--fit-on``, ``--fit-prob-key`` and
    ``--fit-labels-key``; without them, the seeded share ``fraction`` of FILE (``--split``,
    ``--seed``).
    """

    methods: tuple[Method, ...] = ()
    fit_on: str | None = None
    prob_key: str | None = None
    labels_key: str | None = None
    fraction: float = 0.5
    seed: int = 0

    @property
    def apart(self) -> bool:
        """Whether the rows are named apart: ``--fit-on`` or ``--fit-prob-key``."""
        return self.fit_on is not None or self.prob_key is not None

    def file(self, scored: FileOptions) -> FileOptions:
        """The file of the fit rows: ``--fit-on`` (else FILE), read as FILE is.

        Its arrays are ``--fit-prob-key`` and ``--fit-labels-key``; without them, those of
        FILE: a validation file laid out as FILE is.
        """
        path = self.fit_on if self.fit_on is not None else scored.path
        keys = scored.keys() if self.prob_key is None else (self.prob_key, self.labels_key)
        return scored.other(path, keys)

    def text(self, scored: FileOptions) -> str:
        """The report's words for the rows fitted on."""
        if not self.apart:
            what = (
                "a seeded half"
                if self.fraction == 0.5
                else f"a seeded {self.fraction:g} of the rows"
            )
            return f"{what} (--split {self.fraction:g} --seed {self.seed})"
        fit = self.file(scored)
        if self.prob_key is None:
            return f"{fit.path} (--fit-on)"
        return f"arrays {fit.prob_key!r} and {fit.labels_key!r} of {fit.path} (--fit-prob-key)"


@dataclass(frozen=True)
class OutputOptions:
    """What is printed (``format``: table, json or csv) and the files written."""

    format: str = "table"
    plot: str | None = None
    html: str | None = None


@dataclass(frozen=True)
class ReportRequest:
    """``report``: the file, what to compute, the methods and their rows, the outputs."""

    file: FileOptions
    report: ReportOptions
    fit: FitOptions
    output: OutputOptions
    stream: bool = False
    in_memory: bool = False
    block_rows: int | None = None
    multilabel: bool = False
    """``--multilabel``: FILE holds an (N, K) 0/1 label matrix (``cli._multilabel``)."""


@dataclass(frozen=True)
class RecalibrateRequest:
    """``recalibrate``: ``method`` fitted on ``fit``, applied to ``apply``, written out."""

    method: Method
    fit: FileOptions
    apply: FileOptions
    output: str
    save_model: str | None = None


@dataclass(frozen=True)
class ApplyRequest:
    """``apply``: the saved ``model`` applied to ``file``, written to ``output``."""

    model: str
    file: FileOptions
    output: str


@dataclass(frozen=True)
class CompareRequest:
    """``compare``: two files of predictions of the same rows, what to compute, the outputs.

    ``report`` holds the metrics, the bins and ``--ci`` (its ``per_class`` is unused);
    ``output.format`` is ``'text'`` or ``'json'``.
    """

    file_a: FileOptions
    file_b: FileOptions
    report: ReportOptions
    output: OutputOptions
    stream: bool = False
    """``--stream``: both files read block by block together (``_compare_stream``)."""
    block_rows: int | None = None
    metrics_given: bool = False
    """Whether ``--metrics`` named the metrics (else the default list)."""


def check_output(path: str | None, option: str) -> None:
    """Refuse, before any work, an output whose folder is missing or that is a folder."""
    if path is None:
        return
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{option} {path}: the folder {folder} does not exist.")
    if os.path.isdir(path):
        raise UsageError(f"{option} {path} is a folder; give a file name.")


def _same_file(first: str, second: str) -> bool:
    """Whether two names are one file (one path, or through a link, or two hard links)."""
    if os.path.realpath(first) == os.path.realpath(second):
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:  # one of them does not exist (yet): not the same file
        return False


def check_apart(outputs: dict[str, str | None], inputs: dict[str, str | None]) -> None:
    """Refuse, before any work, an output that is one of the inputs or another output.

    ``outputs`` and ``inputs`` map an option (``-o``, ``FILE``) to the file it names, if any.
    """
    named = {option: path for option, path in inputs.items() if path is not None}
    for option, path in outputs.items():
        if path is None:
            continue
        for other, given in named.items():
            if _same_file(path, given):
                what = "an output" if other in outputs else "an input"
                raise UsageError(
                    f"{option} {path} is {other} {given}, {what} of the command: writing it "
                    "would replace that file; name another file."
                )
        named[option] = path


def _file_options(args: argparse.Namespace, path: str | None) -> FileOptions:
    return FileOptions(
        path=path,
        labels=args.labels,
        prob_key=args.prob_key,
        labels_key=args.labels_key,
        prob_column=args.prob_column,
        labels_column=args.labels_column,
        pred_column=args.pred_column,
        sep=args.sep,
        classes=args.classes,
        classes_file=args.classes_file,
        logits=args.logits,
        scores=args.scores,
        renormalize=args.renormalize,
    )


def _check_fit_keys(args: argparse.Namespace, fit_path: str | None, option: str) -> None:
    """``--fit-prob-key`` and ``--fit-labels-key`` go together, and name arrays of a .npz."""
    given = [name for name in ("prob", "labels") if getattr(args, f"fit_{name}_key") is not None]
    if len(given) == 1:
        other = "labels" if given == ["prob"] else "prob"
        raise UsageError(
            f"--fit-{given[0]}-key needs --fit-{other}-key: the fit rows' predictions and "
            "labels are two arrays, both named (a default could pick the other split's)."
        )
    if given and fit_path is not None and Path(fit_path).suffix.lower() != ".npz":
        raise UsageError(
            f"--fit-prob-key and --fit-labels-key name arrays of a .npz; {option} {fit_path} "
            "is not one."
        )


def _methods(args: argparse.Namespace) -> tuple[Method, ...]:
    methods = parse_methods(args.method)
    if args.recalibrate:
        if methods:
            raise UsageError("--recalibrate is --method temperature; give one of them.")
        methods = (METHODS["temperature"],)
    if args.path is None and not methods:  # the example shows temperature scaling at work
        methods = (METHODS["temperature"],)
    return methods


def _fit_options(args: argparse.Namespace) -> FitOptions:
    """The options that choose the fit rows, checked against each other and the methods."""
    methods = _methods(args)
    fit = FitOptions(
        methods=methods,
        fit_on=args.fit_on,
        prob_key=args.fit_prob_key,
        labels_key=args.fit_labels_key,
        fraction=0.5 if args.split is None else args.split,
        seed=0 if args.seed is None else args.seed,
    )
    apart = "--fit-on" if args.fit_on is not None else "--fit-prob-key"
    if args.split is not None and fit.apart:
        raise UsageError(f"--split and {apart} both choose the rows to fit on; give one of them.")
    _check_fit_keys(args, args.fit_on if args.fit_on is not None else args.path, apart)
    options = (("--fit-on", args.fit_on), ("--fit-prob-key", args.fit_prob_key))
    for option, value in (*options, ("--split", args.split)):
        if value is not None and not methods:
            raise UsageError(f"{option} chooses the rows to fit on; it needs --method.")
        if value is not None and args.path is None:
            raise UsageError(
                f"{option} needs a predictions FILE; the embedded example has its own "
                "calibration half."
            )
    if args.n_resamples is not None and not args.ci:
        raise UsageError("--n-resamples is the number of bootstrap resamples of --ci.")
    return fit


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
    over_groups = [metric.name for metric in metrics if metric.groups]
    if over_groups and getattr(args, "groups", None) is None:
        raise UsageError(
            f"--metrics {','.join(over_groups)}: a statistic over groups of rows; it needs "
            "report --groups COLUMN (the group of each row)."
        )
    return metrics


def _check_seed(args: argparse.Namespace, fit: FitOptions, diagrams: tuple[str, ...]) -> None:
    """``--seed`` only where something is drawn at random: the split, the bootstrap, a band."""
    split = fit.methods and not fit.apart and args.path is not None
    split = split or fit.methods == (AUTO,)  # the folds of --method auto's cross-validation
    resampled = any(diagram in RESAMPLED_DIAGRAMS for diagram in diagrams)
    if args.seed is not None and not (split or args.ci or resampled):
        raise UsageError(
            "--seed seeds --split, --method auto's folds, --ci and the bands of the CORP and "
            "smooth diagrams; it means nothing without them."
        )


def _diagrams(metrics: tuple[Metric, ...]) -> tuple[str, ...]:
    """The diagrams of the reported measures' own curves, once each, in the metrics' order."""
    return tuple(dict.fromkeys(metric.diagram for metric in metrics if metric.diagram))


def _output_format(args: argparse.Namespace) -> str:
    if args.json:
        if args.format not in (None, "json"):
            raise UsageError(f"--json is --format json; not with --format {args.format}.")
        return "json"
    return "table" if args.format is None else args.format


# What ``report --multilabel`` leaves out, and why: option -> (its attribute, the reason).
_NOT_MULTILABEL = {
    "--scores": ("scores", "the file holds one column per label"),
    "--renormalize": ("renormalize", "the labels' probabilities do not sum to 1"),
    "--metrics": ("metrics", "it reports ECE (macro, micro), Brier and NLL"),
    "--per-class": ("per_class", "the per-label table is always shown"),
    "--groups": ("groups", "not per group yet"),
    "--ci": ("ci", "no bootstrap intervals yet"),
    "--classes": ("classes", "label names are read from the file's label_names"),
    "--classes-file": ("classes_file", "label names are read from the file's label_names"),
    "--prob-column": ("prob_column", "it reads a .npz or .npy"),
    "--labels-column": ("labels_column", "it reads a .npz or .npy"),
    "--pred-column": ("pred_column", "it reads a .npz or .npy"),
    "--sep": ("sep", "it reads a .npz or .npy"),
    "--stream": ("stream", "the file is read whole (no multi-label report in blocks yet)"),
    "--block-rows": ("block_rows", "the file is read whole"),
}


def _check_multilabel(args: argparse.Namespace) -> None:
    """Refuse what ``--multilabel`` does not do, one option at a time; and the 'auto' path."""
    if not args.multilabel:
        return
    if args.path is None:
        raise UsageError(
            "--multilabel needs a predictions FILE (a .npz, or a .npy with --labels)."
        )
    for option, (attribute, reason) in _NOT_MULTILABEL.items():
        if getattr(args, attribute, None) not in (None, False):
            raise UsageError(f"{option} is not available with --multilabel: {reason}.")
    if args.format == "csv":
        raise UsageError("--format csv is not available with --multilabel: use json.")
    names = [method.name for method in _methods(args)]
    others = [name for name in names if name not in ("temperature", "platt")]
    if others:
        raise UsageError(
            f"--method {others[0]} is not available with --multilabel: temperature and platt "
            "fit one map per label (multilabel=True)."
        )


def report_request(args: argparse.Namespace) -> ReportRequest:
    """The records of ``report``, every option checked (in the order of the checks before)."""
    _check_multilabel(args)
    output = OutputOptions(_output_format(args), args.plot, args.html)
    fit = _fit_options(args)
    check_output(args.plot, "--plot")
    check_output(args.html, "--html")
    check_apart(
        {"--plot": args.plot, "--html": args.html},
        {
            "the predictions file": args.path,
            "--labels": args.labels,
            "--classes-file": args.classes_file,
        },
    )
    metrics = _metrics(args)
    diagrams = () if output.plot is None and output.html is None else _diagrams(metrics)
    _check_seed(args, fit, diagrams)
    report = ReportOptions(
        bins=args.bins,
        metrics=tuple(metric for metric in metrics if not metric.groups),
        across_groups=tuple(metric for metric in metrics if metric.groups),
        per_class=args.per_class,
        class_tables=args.per_class or args.html is not None,
        diagrams=diagrams,
        ci=args.ci,
        n_resamples=200 if args.n_resamples is None else args.n_resamples,
        seed=0 if args.seed is None else args.seed,
        groups=args.groups,
    )
    return ReportRequest(
        file=_file_options(args, args.path),
        report=report,
        fit=fit,
        output=output,
        stream=args.stream,
        in_memory=args.in_memory,
        block_rows=args.block_rows,
        multilabel=args.multilabel,
    )


def recalibrate_request(args: argparse.Namespace) -> RecalibrateRequest:
    """The records of ``recalibrate``: the fit file, the file to calibrate, the outputs."""
    check_output(args.output, "-o")
    check_output(args.save_model, "--save-model")
    check_apart(
        {"-o": args.output, "--save-model": args.save_model},
        {
            "--fit": args.fit,
            "--apply": args.apply,
            "--labels": args.labels,
            "--classes-file": args.classes_file,
        },
    )
    if Path(args.fit).suffix.lower() == ".npy":
        raise UsageError("--fit needs the labels in the same file: a .npz or a .csv.")
    _check_fit_keys(args, args.fit, "--fit")
    apply = _file_options(args, args.apply)
    fit_keys = (
        apply.keys() if args.fit_prob_key is None else (args.fit_prob_key, args.fit_labels_key)
    )
    return RecalibrateRequest(
        method=METHODS[args.method],
        fit=apply.other(args.fit, fit_keys),
        apply=apply,
        output=args.output,
        save_model=args.save_model,
    )


def apply_request(args: argparse.Namespace) -> ApplyRequest:
    """The records of ``apply``: the model, the file to calibrate and the output."""
    check_output(args.output, "-o")
    check_apart(
        {"-o": args.output},
        {
            "the model": args.model,
            "the predictions file": args.path,
            "--labels": args.labels,
            "--classes-file": args.classes_file,
        },
    )
    return ApplyRequest(model=args.model, file=_file_options(args, args.path), output=args.output)


def compare_request(args: argparse.Namespace) -> CompareRequest:
    """The records of ``compare``: both files (read alike), the metrics, the outputs."""
    if args.seed is not None and not args.ci:
        raise UsageError("--seed seeds the resamples of --ci; it means nothing without it.")
    if args.n_resamples is not None and not args.ci:
        raise UsageError("--n-resamples is the number of bootstrap resamples of --ci.")
    if args.block_rows is not None and not args.stream:
        raise UsageError(
            "--block-rows sizes the blocks of --stream; without it A and B are read whole."
        )
    check_output(args.html, "--html")
    check_apart(
        {"--html": args.html},
        {
            "A": args.a,
            "B": args.b,
            "--labels": args.labels,
            "--classes-file": args.classes_file,
        },
    )
    report = ReportOptions(
        bins=args.bins,
        metrics=_metrics(args),
        ci=args.ci,
        n_resamples=200 if args.n_resamples is None else args.n_resamples,
        seed=0 if args.seed is None else args.seed,
    )
    output = OutputOptions("text" if args.format is None else args.format, None, args.html)
    return CompareRequest(
        _file_options(args, args.a),
        _file_options(args, args.b),
        report,
        output,
        stream=args.stream,
        block_rows=args.block_rows,
        metrics_given=args.metrics is not None,
    )
