"""Command line: ``calibration-toolbox report [FILE]``, ``recalibrate``, ``apply``, ``compare``.

Every bad input is answered with one line on stderr, ``calibration-toolbox: error: ...``,
and exit status 2, in the command line's words (``--prob-key``, ``--labels``, ``--logits``,
``--bins``); an interrupt (Ctrl-C) with one line and exit status 130, never a traceback;
each distinct warning with one line ``calibration-toolbox: warning: ...``.
Nothing is printed on stdout, and no file is written, unless the whole command succeeded.

Modules: ``_parser`` (options and help), ``_metrics`` and ``_methods`` (the names of
``--metrics`` and ``--method``), ``_inputs`` (reading and splitting), ``_stream`` and
``_blocks`` (a file read in blocks: the report, the fit on its seeded share), ``_document`` (the
numbers, as the JSON document), ``_text`` (table, diagrams, CSV), ``_files`` (atomic
outputs: figure, HTML page, .npz), ``_names`` (the names the parser lists, without importing
a metric or a recalibrator), ``_deferred`` (``_commands`` imported once a command runs, so
that ``--help`` stays light), ``_warned`` (the command line's words, and the warnings
of a report by what they concern), ``_compare`` (two models' files of the same rows),
``_compare_stream`` (the two files read in blocks together) and
``_commands`` (the subcommands).
"""

from __future__ import annotations

import contextlib
import csv
import os
import sys
import warnings
import zipfile
import zlib
from collections.abc import Iterator, Sequence

from calibration_toolbox.cli import _deferred
from calibration_toolbox.cli._parser import UsageError, parser
from calibration_toolbox.cli._warned import in_cli_words

__all__ = ["main"]

# The options that read a FILE (meaningless on the embedded example).
_FILE_OPTIONS = (
    "--labels",
    "--prob-key",
    "--labels-key",
    "--prob-column",
    "--labels-column",
    "--pred-column",
    "--sep",
    "--classes",
    "--classes-file",
    "--stream",
    "--in-memory",
)

# What a bad input raises anywhere below (a Warning only under `python -W error`; an
# ImportError when matplotlib, needed by --plot, is missing).
_FAILURES = (UsageError, ValueError, TypeError, OSError, ImportError, Warning)

# What an input too large, too deep or too hard for the method raises below, which is no
# ValueError: MemoryError (a size the input claims), RuntimeError (a fit that does not
# converge; RecursionError, JSON nested too deeply; NotImplementedError, a zip member
# compressed as zipfile cannot read), and the readers' own errors (a CSV cell over the csv
# module's limit, a broken zip or deflate stream, a member cut short).
_BEYOND_REACH = (MemoryError, RuntimeError, csv.Error, zipfile.BadZipFile, zlib.error, EOFError)

# The exit status of a command stopped by SIGINT (Ctrl-C): 128 + the signal's number, as a
# shell reports a process the signal ended.
_INTERRUPTED = 130

# Warnings addressed to whoever maintains the code, not to the user of the report.
_NOT_ABOUT_THE_RUN = (
    ResourceWarning,
    DeprecationWarning,
    PendingDeprecationWarning,
    ImportWarning,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``calibration-toolbox`` command; returns the exit status."""
    try:
        return _run(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:  # an output half made is removed as the interrupt unwinds
        print("calibration-toolbox: error: interrupted.", file=sys.stderr)
        return _INTERRUPTED


def _run(command: list[str]) -> int:
    """The command: its output on stdout and exit status 0, or one line on stderr and 2."""
    messages: list[str] = []
    with _collect_warnings(messages):
        try:
            args = _parse(command)
            output = _deferred.COMMANDS[args.command](args, command)
        except (*_FAILURES, *_BEYOND_REACH) as error:
            print(f"calibration-toolbox: error: {_error_line(error)}", file=sys.stderr)
            return 2
    for message in dict.fromkeys(messages):  # each distinct warning once, in order
        print(f"calibration-toolbox: warning: {message}", file=sys.stderr)
    return _print(output)


def _error_line(error: BaseException) -> str:
    """The error's one line; what ran out (memory, the depth of nesting) said first."""
    line = in_cli_words(error)
    if isinstance(error, MemoryError):
        return (
            f"out of memory, the input or the options ask for more than this machine has: {line}"
        )
    if isinstance(error, RecursionError):
        return f"the input is nested too deeply to read: {line}"
    return line


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
    """Collect the text of the warnings about the run (restores showwarning after).

    Warnings for the developer of some code rather than for the user of the data (a
    ``ResourceWarning`` from the garbage collection of an object the run never made, a
    ``DeprecationWarning`` of a dependency) go on to the ``showwarning`` in place before.
    """
    shown_before = warnings.showwarning

    def collect(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, _NOT_ABOUT_THE_RUN):
            shown_before(message, category, filename, lineno, file, line)
        else:
            messages.append(in_cli_words(message))

    with warnings.catch_warnings():
        warnings.showwarning = collect
        yield


def _parse(argv: Sequence[str]):
    main_parser = parser()
    args = main_parser.parse_args(argv)
    if args.command is None:  # bare `calibration-toolbox`: the report on the example
        args = main_parser.parse_args(["report"])
    if args.command == "report" and args.path is None:
        for option in _FILE_OPTIONS:
            if getattr(args, option[2:].replace("-", "_")) not in (None, False):
                raise UsageError(f"{option} needs a predictions FILE.")
    return args


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
