"""Command line: ``calibration-toolbox report [FILE]``, ``recalibrate`` and ``apply``.

Every bad input is answered with one line on stderr, ``calibration-toolbox: error: ...``,
and exit status 2, in the command line's words (``--prob-key``, ``--labels``, ``--logits``,
``--bins``); each distinct warning with one line ``calibration-toolbox: warning: ...``.
Nothing is printed on stdout, and no file is written, unless the whole command succeeded.

Modules: ``_parser`` (options and help), ``_metrics`` and ``_methods`` (the names of
``--metrics`` and ``--method``), ``_inputs`` (reading and splitting), ``_stream`` and
``_blocks`` (a file read in blocks: the report, the fit on its seeded share), ``_document`` (the
numbers, as the JSON document), ``_text`` (table, diagrams, CSV), ``_files`` (atomic
outputs: figure, HTML page, .npz), ``_warned`` (the command line's words, and the warnings
of a report by what they concern) and ``_commands`` (the subcommands).
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator, Sequence

from calibration_toolbox.cli._commands import COMMANDS
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

# Warnings addressed to whoever maintains the code, not to the user of the report.
_NOT_ABOUT_THE_RUN = (
    ResourceWarning,
    DeprecationWarning,
    PendingDeprecationWarning,
    ImportWarning,
)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``calibration-toolbox`` command; returns the exit status."""
    command = list(sys.argv[1:] if argv is None else argv)
    messages: list[str] = []
    with _collect_warnings(messages):
        try:
            args = _parse(command)
            output = COMMANDS[args.command](args, command)
        except _FAILURES as error:
            print(f"calibration-toolbox: error: {in_cli_words(error)}", file=sys.stderr)
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
