"""A file read in blocks, pass after pass, and the methods fitted on its seeded share.

On the streaming path without ``--fit-on``, the rows are split by
:func:`~calibration_toolbox.cli._inputs.fit_rows` block by block (a row's side depends on the
seed and its index only), so no N-sized permutation is made and the split is the in-memory
path's.  Temperature and vector scaling are fitted by their ``fit_blocks``: every pass of the
solver is one pass over the file, the test rows skipped.  The other methods are fitted in
memory on the fit rows gathered in one pass, when those fit in :data:`FIT_BYTES`.  The first
complete pass checks every row of the file, as a file read whole is checked; the report pass
then skips the fit rows.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import numpy as np

from calibration_toolbox._errors import InputError, InputTypeError
from calibration_toolbox.cli._inputs import (
    check_split,
    check_values,
    file_options,
    fit_rows,
    renormalized,
)
from calibration_toolbox.cli._methods import Method, fitted, method_input, progress
from calibration_toolbox.cli._options import FileOptions, FitOptions
from calibration_toolbox.cli._parser import UsageError
from calibration_toolbox.io import iter_predictions, load_prob

__all__ = ["FIT_BYTES", "FileBlocks", "fit_on_share", "in_file_rows"]

FIT_BYTES = 2**28
"""The fit rows (as read) of a method without ``fit_blocks`` are gathered up to 256 MiB."""


def in_file_rows(error: Exception, first_row: int) -> Exception:
    """A block's error with its row counted in the file (an error naming no row as it is)."""
    if isinstance(error, (InputError, InputTypeError)):
        return error.shifted(first_row)
    return error


def total_rows(path: str) -> int | None:
    """The rows of a ``.npy`` (from its header); None for the other formats."""
    return len(load_prob(path)) if path.lower().endswith(".npy") else None


class Progress:
    """Rows done (of the total, when known) and the rate, on stderr when it is a terminal."""

    every = 0.5
    """Seconds between two updates of the line."""

    def __init__(self, what: str, total: int | None):
        self.what, self.total = what, total
        self.shown = 0.0
        self.start = time.perf_counter()
        self.terminal = sys.stderr.isatty()

    def __call__(self, rows: int) -> None:
        now = time.perf_counter()
        if not self.terminal or now - self.shown < self.every:
            return
        self.shown = now
        done = f"{rows:,} rows"
        if self.total:
            done = f"{rows:,} / {self.total:,} rows ({rows / self.total:.0%})"
        rate = rows / max(now - self.start, 1e-9)
        progress(f"{self.what}: {done}, {rate:,.0f} rows/s")


class FileBlocks:
    """The blocks of FILE, pass after pass: ``(first_row, predictions, labels)``.

    A single column of predictions is 1-D, as :func:`~calibration_toolbox.cli._inputs.
    read_predictions` makes it; ``--renormalize`` is applied to every block.  Until one pass
    has read the whole file, each block not checked yet is checked as a whole file is (an
    error names the file's row); later passes read checked rows.
    """

    def __init__(
        self,
        file: FileOptions,
        block_rows: int,
        file_scope: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
    ):
        self.file, self.block_rows = file, block_rows
        self.file_scope = file_scope
        """Where the checks' warnings are recorded (the file's, inside a method's fit too)."""
        self.total = total_rows(file.path)
        self.checked = False
        self.checked_rows = 0
        """The rows checked so far, from the first (a warm start's first block, say)."""
        self.passes = 0
        """Complete passes over the file so far (a fit's warm start reads its first block)."""

    def __call__(
        self, what: str, check: bool = True
    ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """One pass over the file, its progress shown as ``what``.

        ``check=False``: the caller checks the blocks of this pass itself (the report pass,
        whose accumulator checks each block as the whole file is checked).
        """
        file = self.file
        shown = Progress(f"{file.path}: {what}", self.total)
        checking, first = check and not self.checked, 0
        blocks = iter_predictions(
            file.path, block_rows=self.block_rows, labels_path=file.labels, **file_options(file)
        )
        try:
            for block, labels in blocks:
                predictions = block[:, 0] if block.ndim == 2 and block.shape[1] == 1 else block
                check_block = checking and first >= self.checked_rows  # once each block
                if check_block or file.renormalize:
                    predictions = self.checked_block(predictions, labels, first, check_block)
                if check_block:
                    self.checked_rows = first + len(labels)
                yield first, predictions, labels
                first += len(labels)
                shown(first)
        finally:
            progress("")
        self.checked = True
        self.passes += 1

    def checked_block(self, predictions, labels, first_row: int, checking: bool) -> np.ndarray:
        """A block checked as a whole file is checked, its row numbers the file's."""
        file = self.file
        try:
            if file.renormalize:
                predictions = renormalized(file, predictions, labels).prob
            if checking:
                with self.file_scope():
                    check_values(file, predictions, labels)
        except (ValueError, TypeError) as error:
            raise in_file_rows(error, first_row) from None
        return predictions


class _Share:
    """The fit rows of each block (converted for ``method``), and their count in a pass."""

    def __init__(self, blocks: FileBlocks, fit: FitOptions, method: Method | None):
        self.blocks, self.method = blocks, method
        self.fraction, self.seed = fit.fraction, fit.seed
        self.n_fit = 0

    def __call__(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        file, method = self.blocks.file, self.method
        what = f"pass {self.blocks.passes + 1}" + (f", {method.title}" if method else "")
        n_fit = n_rows = 0
        for first, predictions, labels in self.blocks(what):
            rows = fit_rows(first, len(labels), self.fraction, self.seed)
            n_rows += len(labels)
            if rows.any():
                n_fit += int(rows.sum())
                part = predictions[rows]
                yield (
                    (part if method is None else method_input(part, method, file.logits)),
                    (labels[rows]),
                )
        check_split(n_fit, n_rows, file.path, self.fraction, self.seed)
        self.n_fit = n_fit


def _gather(blocks: FileBlocks, fit: FitOptions, why: str):
    """The fit rows in memory (as read), refused beyond :data:`FIT_BYTES`."""
    path = blocks.file.path
    names = ", ".join(method.name for method in fit.methods)
    refusal = (
        f"{path} is read in blocks ({why}) and --method {names} fits on rows held in "
        f"memory: its seeded share of {path} holds more than {FIT_BYTES // 2**20} MiB; "
        f"give --fit-on VALIDATION_FILE, or --in-memory to load {path}."
    )
    if blocks.total is not None:  # a .npy: refused before any row is read
        prob = load_prob(path)
        if prob.nbytes * fit.fraction > FIT_BYTES:
            raise UsageError(refusal)
    share, parts, size = _Share(blocks, fit, None), [], 0
    for predictions, labels in share():
        size += predictions.nbytes
        if size > FIT_BYTES:
            raise UsageError(refusal)
        parts.append((predictions, labels))
    return np.concatenate([p for p, _ in parts]), np.concatenate([y for _, y in parts])


def fit_on_share(
    blocks: FileBlocks,
    fit: FitOptions,
    why: str,
    scope: Callable[[str], AbstractContextManager[None]] | None = None,
) -> tuple[list, int]:
    """Each method fitted on the seeded share of FILE, and the number of fit rows.

    When every method has ``fit_blocks``, each fit passes over the file; otherwise the fit
    rows are gathered in one pass (within :data:`FIT_BYTES`) and every method is fitted on
    them in memory, as on the in-memory path.  ``scope(name)`` is entered around the fit of
    the method ``name`` (where its warnings are recorded).
    """
    logits, methods = blocks.file.logits, fit.methods
    scope = scope or (lambda name: contextlib.nullcontext())
    models, n_fit = [], 0
    if all(hasattr(method.factory, "fit_blocks") for method in methods):
        for method in methods:
            share = _Share(blocks, fit, method)
            with scope(method.name):
                models.append(method.make().fit_blocks(share))
            n_fit = share.n_fit
        return models, n_fit
    predictions, labels = _gather(blocks, fit, why)
    for method in methods:
        with scope(method.name):
            models.append(fitted(method, predictions, labels, logits))
    return models, len(labels)
