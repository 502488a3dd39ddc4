"""Loading saved predictions from ``.npz``, ``.npy``, ``.csv``, ``.parquet`` and ``.jsonl`` files.

Files are never unpickled.  Every problem with a file (missing, empty, truncated, corrupt,
not the format its name says, Python objects that only unpickling could read, cells that
are not numbers, arrays of the wrong shape, labels that do not match the predictions row
for row) is reported as one ``ValueError`` that names the file and what is wrong; a
missing file is a ``FileNotFoundError`` with the same kind of message.

:func:`load_predictions` returns whole arrays (a ``.npy`` memory-mapped, read-only);
:func:`iter_predictions` yields row blocks in bounded memory, for files larger than memory.
"""

from __future__ import annotations

import inspect
import io
import math
import mmap
import os
import stat
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _csv, _jsonl, _parquet
from calibration_toolbox import _validation as iv
from calibration_toolbox._columns import (
    CSV_LABEL_COLUMNS,
    LABEL_KEYS,
    PREDICTED_LABEL_KEYS,
    PREDICTION_KEYS,
    TRUE_LABEL_KEYS,
    hits,
    predicted_label,
)
from calibration_toolbox._errors import InputError, listed
from calibration_toolbox._limits import MAX_INFLATION, MAX_NPY_HEADER

__all__ = [
    "CSV_LABEL_COLUMNS",
    "LABEL_KEYS",
    "LABEL_NAME_KEYS",
    "PREDICTED_LABEL_KEYS",
    "PREDICTION_KEYS",
    "iter_predictions",
    "load_predictions",
    "load_prob",
    "read_column",
    "read_multilabel",
    "read_predictions",
]

LABEL_NAME_KEYS = ("label_names", "class_names", "classes")
"""The ``.npz`` arrays read, first found first, as the names of the labels of
:func:`read_multilabel` (a 1-D array of one name per column)."""

DEFAULT_BLOCK_ROWS = 65536
"""Rows per block of :func:`iter_predictions` by default (2.6 MB of float32 at K = 10)."""

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a member's header; the end of an empty archive
# What a damaged file raises inside np.load / zipfile / zlib (a truncated member, a bad CRC,
# a header that promises more bytes than the file holds).
_READ_ERRORS = (ValueError, EOFError, OSError, zipfile.BadZipFile, zlib.error)


def load_predictions(
    path: str | os.PathLike,
    *,
    labels_path: str | os.PathLike | None = None,
    prob_key: str | None = None,
    labels_key: str | None = None,
    prob_column: str | Sequence[str] | None = None,
    labels_column: str | None = None,
    pred_column: str | None = None,
    scores: bool = False,
    classes: ArrayLike | None = None,
    sep: str | None = None,
) -> tuple[NDArray, NDArray]:
    r"""Read ``(predictions, labels)`` saved by any framework.

    * ``.npz``: the arrays named ``prob_key`` and ``labels_key``; by default the first of
      :data:`PREDICTION_KEYS` (``prob``, ``probs``, ``probabilities``, ``predictions``,
      ``probs_test``, ``logits``, ``scores``, ``y_prob``, ``y_score``, ``confidence``,
      ``confidences``) and of :data:`LABEL_KEYS` (``labels``, ``label``, ``y``, ``y_true``,
      ``targets``, ``target``, ``ground_truth``, ``y_test``, ``correct``, ``outcome``) that
      the archive holds, or else its only 2-D and its only 1-D array.
    * ``.npy``: the predictions, memory-mapped read-only (``mmap_mode="r"``: nothing is read
      until used, and nothing can write into the file); the labels come from
      ``labels_path`` (a ``.npy``, also memory-mapped, or a one-column ``.csv``).
    * ``.csv`` (``.txt``, ``.tsv``): one row per sample, cells separated by ``,``, ``;`` or
      a tab (told from the first line; ``sep`` to say), quoted cells as pandas and the
      ``csv`` module write them.  The labels are in the column named ``labels_column``, or
      ``label``/``labels``/``y`` when the first line is a header (it may
      start with ``#``, as ``np.savetxt`` writes it), or else the last column; the
      predictions are the columns ``prob_column`` names (as for ``.parquet``: other
      columns, such as an ``id`` or a ``weight``, are then ignored), or else every other
      column.  A first column without a name (``,p0,p1,label``, or ``Unnamed: 0``) is
      pandas' index, as ``df.to_csv(path)`` writes it, and is dropped (after checking that
      it holds whole numbers).  A single prediction column is P(y = 1), returned 1-D.
      Labels written ``True``/``False`` (pandas), ``TRUE``/``FALSE`` (R) or
      ``true``/``false`` (polars, Spark) are a 0/1 target when the first row's label is
      one of these words; every label must then be one.
    * ``.parquet`` (the ``parquet`` extra, pyarrow): the predictions as one column of
      lists of equal length, or one column per class (``prob_column`` a list of names, or a
      prefix ending in ``*`` such as ``"prob_*"``: the matching columns in file order), and a
      label column; by default the first column named in :data:`PREDICTION_KEYS` and in
      :data:`LABEL_KEYS`.  Read row group by row group; a null is an error.
    * ``.jsonl`` (``.ndjson``): one JSON object per line, as evaluation harnesses write
      them (``{"id": 3, "confidence": 0.82, "correct": true}``); its fields are chosen as
      the columns of a ``.parquet`` (a field holding a list is a probability vector); read
      with the standard library's ``json``.  A line that is not a JSON object, or lacks a
      field, is an error naming its line.

    The top-label layout, one predicted label per row beside the true label and a
    confidence (``true_label,pred_label,confidence``, as published ImageNet prediction
    dumps are written), is recognised by a column (or ``.npz`` array) named in
    :data:`PREDICTED_LABEL_KEYS` (``pred_label``, ``predicted_label``, ``pred_class``,
    ``predicted_class``, ``y_pred``), or named by ``pred_column`` (``.csv``, ``.parquet``,
    ``.jsonl``); it is
    read only with ``scores=True``, as ``(confidence, target)``: the target of a row is 1.0
    when its predicted label is its true label, else 0.0, to be measured as
    ``ECE(Scores(confidence), target)``.  The true label is ``labels_column`` (``labels_key``)
    or the column named ``true_label`` or in :data:`LABEL_KEYS`; the confidence is
    ``prob_column`` (``prob_key``), the column named in :data:`PREDICTION_KEYS`, or (not in
    a ``.npz``) the only other column.

    Labels may be class names (strings) in any format, with ``classes``: the names in the
    column order of the predictions (``--classes`` on the command line); they are returned
    as column indices.  Without ``classes``, names are a ``TypeError`` that says so.

    The shapes are checked here (predictions 1-D or 2-D, labels 1-D, one label per row of
    predictions); the values (finite, in range, rows summing to 1) are checked by every
    metric.

    Parameters
    ----------
    path : str or os.PathLike
        The predictions file: ``.npz``, ``.npy``, ``.csv``, ``.parquet`` or ``.jsonl``.
    labels_path : str or os.PathLike, optional
        The labels of a ``.npy`` of predictions (only then).
    prob_key, labels_key : str, optional
        Names of the arrays in a ``.npz`` (only then).
    prob_column : str or sequence of str, optional
        The predictions of a ``.csv`` (with a header), ``.parquet`` or ``.jsonl``: one column
        (a column of lists, or P(y = 1), or the scores), a list of one column per class, or
        a prefix ending in ``*``.
    labels_column : str, optional
        The label column of a ``.csv`` (with a header), ``.parquet`` or ``.jsonl``.
    pred_column : str, optional
        The predicted-label column of the top-label layout (needs ``scores=True``).
    scores : bool, default False
        Whether the file is read as one score per row against a 0/1 target; only the
        top-label layout needs it (and is refused without it).
    classes : sequence of str, optional
        Class names in column order, when the labels are names.
    sep : str, optional
        The separator of a ``.csv`` (predictions or labels), when not told from line 1.

    Returns
    -------
    predictions : ndarray of shape (n_samples,) or (n_samples, n_classes)
        As stored (probabilities or logits; the dtype of the file; a read-only
        ``np.memmap`` for a ``.npy``).
    labels : ndarray of shape (n_samples,)
        As stored, or column indices (``intp``) with ``classes``.

    Raises
    ------
    FileNotFoundError
        A file does not exist.
    ValueError
        Anything else wrong with a file or the options, with a message naming the file.
    TypeError
        Labels that are names without ``classes``.
    ImportError
        A ``.parquet`` without pyarrow.

    See Also
    --------
    iter_predictions : the same arrays in row blocks, in bounded memory.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from calibration_toolbox.io import load_predictions
    >>> path = os.path.join(tempfile.mkdtemp(), "preds.npz")
    >>> np.savez(path, probs=np.array([[0.8, 0.2], [0.3, 0.7]]), labels=np.array([0, 1]))
    >>> prob, labels = load_predictions(path)
    >>> prob.shape, labels.tolist()
    ((2, 2), [0, 1])
    >>> np.savez(path, probs=np.array([[0.8, 0.2], [0.3, 0.7]]), labels=["cat", "dog"])
    >>> load_predictions(path, classes=["cat", "dog"])[1].tolist()
    [0, 1]

    A top-label dump, read as scores against whether the predicted label is right:

    >>> path = os.path.join(tempfile.mkdtemp(), "dump.csv")
    >>> with open(path, "w") as handle:
    ...     _ = handle.write("true_label,pred_label,confidence\n3,3,0.9\n5,2,0.6\n")
    >>> load_predictions(path, scores=True)
    (array([0.9, 0.6]), array([1., 0.]))
    """
    columns = (prob_key, labels_key, prob_column, labels_column, pred_column)
    options = _Options.checked(path, labels_path, *columns, scores, classes, sep)
    predictions, labels = _read(options)
    return predictions, cast(NDArray, labels)  # labels are never optional here


def read_predictions(
    path: str | os.PathLike, *, optional_labels: bool = False, **options: Any
) -> tuple[NDArray, NDArray | None]:
    """:func:`load_predictions` (the same ``options``), with labels optional.

    Predictions to calibrate with a fitted model need no labels: with
    ``optional_labels=True`` the labels are read only when asked for (``labels_path``,
    ``labels_key``, ``labels_column``) or named by the file (a ``.npz`` array, ``.parquet``
    column or ``.jsonl`` field named in :data:`LABEL_KEYS`, a ``.csv`` column headed
    ``label``, ``labels`` or ``y``), and are ``None`` otherwise; every other column of a
    ``.csv`` is then a prediction (no "last column" rule, no "only 1-D array" rule).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from calibration_toolbox.io import read_predictions
    >>> path = os.path.join(tempfile.mkdtemp(), "new.npz")
    >>> np.savez(path, logits=np.zeros((3, 2)))
    >>> read_predictions(path, optional_labels=True)[1] is None
    True
    """
    given = inspect.signature(load_predictions).bind(path, **options)
    given.apply_defaults()
    values = [given.arguments[name] for name in _OPTIONS[:-1]]
    return _read(_Options.checked(path, *values, optional_labels))


def read_multilabel(
    path: str | os.PathLike,
    *,
    labels_path: str | os.PathLike | None = None,
    prob_key: str | None = None,
    labels_key: str | None = None,
) -> tuple[NDArray, NDArray, list[str] | None]:
    r"""Read multi-label predictions: (N, K) scores, the (N, K) 0/1 label matrix, the names.

    * ``.npz``: the arrays named ``prob_key`` and ``labels_key``; by default the first of
      :data:`PREDICTION_KEYS` and of :data:`LABEL_KEYS` in the archive; the label names
      are the first of :data:`LABEL_NAME_KEYS` (``label_names``, ``class_names``,
      ``classes``) it holds, one per column (None when it holds none);
    * ``.npy``: the scores, memory-mapped, with the label matrix in the ``.npy`` file
      ``labels_path``.

    ``labels[i, k]`` is 1 where label k applies to row i; the scores are per-label
    probabilities (or logits), one sigmoid per label, read by the multi-label measures
    (:func:`~calibration_toolbox.multilabel_calibration_error`,
    :func:`~calibration_toolbox.multilabel_brier_score`,
    :func:`~calibration_toolbox.multilabel_log_loss`).  Only the shapes and the names are
    checked here (both arrays 2-D of one shape); the values are checked by the measures.
    (N,) class labels are refused (a multiclass task: :func:`load_predictions`), and so
    are the other formats: a column of a ``.csv`` or ``.parquet`` holds one label per row.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npz``, or a ``.npy`` of the scores.
    labels_path : str or os.PathLike, optional
        The ``.npy`` of the label matrix of a ``.npy`` of scores (only then).
    prob_key, labels_key : str, optional
        The arrays of a ``.npz``.

    Returns
    -------
    prob : ndarray of shape (n_samples, n_labels)
        The scores as stored.
    labels : ndarray of shape (n_samples, n_labels)
        The label matrix as stored.
    names : list of str or None
        The names of the labels, in column order.

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> path = os.path.join(tempfile.mkdtemp(), "tags.npz")
    >>> np.savez(path, prob=[[0.9, 0.2], [0.4, 0.7]], labels=[[1, 0], [0, 1]],
    ...          label_names=["cat", "outdoor"])
    >>> prob, labels, names = read_multilabel(path)
    >>> prob.shape, labels.tolist(), names
    ((2, 2), [[1, 0], [0, 1]], ['cat', 'outdoor'])
    """
    options = _Options.checked(
        path, labels_path, prob_key, labels_key, None, None, None, False, None, None, False
    )
    if options.format.kind == ".npz":
        with _open_npz(options.path) as archive:
            names_key = next((key for key in LABEL_NAME_KEYS if key in archive.files), None)
            prob_name = _pick(archive, prob_key, "prob_key", PREDICTION_KEYS, 2, options.path)
            labels_name = _pick(archive, labels_key, "labels_key", LABEL_KEYS, 2, options.path)
            prob = _member(archive, prob_name, options.path)
            labels = _member(archive, labels_name, options.path)
            names = None if names_key is None else _member(archive, names_key, options.path)
        source = f"array {labels_name!r} of {options.path}"
    elif options.format.kind == ".npy":
        prob, names = _read_npy(options.path), None
        if options.labels_path.suffix.lower() != ".npy":
            raise InputError(
                "{labels_path:is} a .npy of the label matrix with {multilabel_reader}; got "
                "{name!r}.",
                argument="labels_path",
                name=options.labels_path.name,
            )
        labels, source = _read_npy(options.labels_path), str(options.labels_path)
    else:
        raise InputError(
            "{multilabel_reader} reads a .npz (or a .npy of scores with a .npy of labels): "
            "a {kind} column holds one label per row, not an (N, K) label matrix; got "
            "{name!r}.",
            argument="path",
            kind=options.format.kind,
            name=options.path.name,
        )
    _check_label_matrix(prob, labels, options.path, source)
    return prob, labels, None if names is None else _label_names(names, prob.shape[1], path)


def _check_label_matrix(prob: NDArray, labels: NDArray, path: Path, source: str) -> None:
    """Both arrays 2-D, of one shape, with rows: the shapes of a multi-label file."""
    if labels.ndim == 1:
        raise InputError(
            "the labels ({source}) are 1-D class labels, one per row, but "
            "{multilabel_reader} reads an (N, K) 0/1 label matrix: class labels of a "
            "multiclass task are read {without_multilabel}.",
            argument="labels",
            source=source,
        )
    if prob.ndim != 2 or labels.ndim != 2 or prob.shape != labels.shape or not len(prob):
        raise InputError(
            "the predictions of {path} (shape {shape}) and the label matrix ({source}, shape "
            "{label_shape}) must be non-empty 2-D arrays of one shape, one column per label.",
            argument="labels",
            path=path,
            shape=prob.shape,
            source=source,
            label_shape=labels.shape,
        )


def _label_names(names: NDArray, n_labels: int, path) -> list[str]:
    """The names of the labels (one per column, as text), checked against the columns."""
    if names.ndim != 1 or len(names) != n_labels or names.dtype.kind not in "USiu":
        raise InputError(
            "the label names of {path} must be a 1-D array of {n_labels} names (text or "
            "whole numbers), one per column; got shape {shape} of {dtype}.",
            path=path,
            n_labels=n_labels,
            shape=names.shape,
            dtype=str(names.dtype),
        )
    return [str(name) for name in names.tolist()]


def _read(options: _Options) -> tuple[NDArray, NDArray | None]:
    """The arrays of a file, shapes checked and names mapped (labels None: none named)."""
    predictions, labels, labels_source = options.format.read(options)
    if labels is None:  # optional_labels, and the file names none
        _check_shapes(predictions, predictions.shape[:1], options.path, "")
        return predictions, None
    _check_shapes(predictions, labels, options.path, labels_source)
    n_classes = 2 if predictions.ndim == 1 else predictions.shape[1]
    return predictions, iv.labels_from_file(labels, options.classes, n_classes, labels_source)


def read_column(path: str | os.PathLike, name: str, *, sep: str | None = None) -> NDArray:
    """One named array of a ``.npz``, or one column of a ``.csv`` (with a header) or ``.parquet``.

    What ``report --groups`` reads beside the predictions: a value per row (a group label).
    A ``.csv`` column whose cells are all whole numbers is read as integers, otherwise as
    text (names compared case-insensitively, as the other columns); a ``.npz`` array and a
    ``.parquet`` column keep their type.

    Raises
    ------
    ValueError
        When the file has no such array or column, or is of another format.
    FileNotFoundError
        When the file does not exist.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npz":
        with _open_npz(path) as archive:
            if name not in archive.files:
                names = ", ".join(repr(key) for key in archive.files)
                raise ValueError(f"{path} has no array {name!r} (its arrays: {names}).")
            return _member(archive, name, path)
    if suffix == ".csv":
        return _csv_column(path, name, sep)
    if suffix == ".parquet":
        return _parquet.column(path, name)
    raise ValueError(
        f"{path}: a column of values per row is read from a .npz (a key), a .csv or a "
        f".parquet file (a column), not from a {suffix or 'suffix-less'} file."
    )


def _csv_column(path: Path, name: str, sep: str | None) -> NDArray:
    _check_file(path)
    with open(path, encoding="utf-8-sig", newline="") as handle:
        lines = [line for line in handle.read().splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"{path} is empty.")
    sep = _csv._separator(path, lines[0]) if sep is None else _csv._check_sep(sep)
    header = _csv._header(lines[0], sep, path)
    if header is None or name.lower() not in header:
        names = "no header" if header is None else "columns " + ", ".join(map(repr, header))
        raise ValueError(f"{path} has no column {name!r} ({names}).")
    index = header.index(name.lower())
    if len(lines) == 1:  # a header only: no value (np.loadtxt would warn of no data)
        return np.array([], dtype=str)
    # NumPy's C reader, quoted as the predictions are read (`_csv.Layout`): 1.0 s for a
    # column of 300,000 names where Python's csv module on each line took 6.3-7.1 s.
    try:
        values = np.loadtxt(
            io.StringIO("\n".join(lines[1:])),
            delimiter=sep,
            quotechar='"',
            comments=None,
            usecols=[index],
            dtype=str,
            ndmin=1,
        )
    except ValueError:  # a row without the column: a Python scan, on the error path only
        cells = (_csv._cells(line, sep, path) for line in lines[1:])
        short = next((number for number, row in enumerate(cells, 2) if len(row) <= index), None)
        if short is None:
            raise ValueError(
                f"{path}: column {name!r} cannot be read as {_csv._name(sep)}-separated cells "
                "(a quote left open?)."
            ) from None
        raise ValueError(f"{path} line {short} has no cell in column {name!r}.") from None
    values = np.char.strip(values)
    if values.size and np.char.isdigit(np.char.lstrip(values, "-")).all():
        return values.astype(np.int64)
    return values


def load_prob(path: str | os.PathLike) -> NDArray:
    """Read the predictions of a ``.npy`` file that has no labels beside it.

    Predictions to calibrate with a fitted model need no labels; the other formats hold
    their labels and are read with :func:`load_predictions`.  The array is memory-mapped
    read-only, as there, and checked for shape (1-D or 2-D) only.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy`` file.

    Returns
    -------
    ndarray of shape (n_samples,) or (n_samples, n_classes)
        A read-only ``np.memmap``, as stored.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from calibration_toolbox.io import load_prob
    >>> path = os.path.join(tempfile.mkdtemp(), "logits.npy")
    >>> np.save(path, np.zeros((4, 3)))
    >>> load_prob(path).shape
    (4, 3)
    """
    path = Path(path)
    if path.suffix.lower() != ".npy":
        raise InputError(
            "{path} must be a .npy file (the other formats hold their labels: read them "
            "with load_predictions); got {name!r}.",
            argument="path",
            name=path.name,
        )
    predictions = _read_npy(path)
    _check_shapes(predictions, predictions.shape[:1], path, "")
    return predictions


def iter_predictions(
    path: str | os.PathLike,
    *,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    labels_path: str | os.PathLike | None = None,
    prob_key: str | None = None,
    labels_key: str | None = None,
    prob_column: str | Sequence[str] | None = None,
    labels_column: str | None = None,
    pred_column: str | None = None,
    scores: bool = False,
    classes: ArrayLike | None = None,
    sep: str | None = None,
) -> Iterator[tuple[NDArray, NDArray]]:
    """Yield ``(predictions, labels)`` in blocks of at most ``block_rows`` rows.

    The options and the file layouts are those of :func:`load_predictions`, and the blocks
    concatenated are its arrays, exactly.  Each block is checked for shape (the same number
    of columns in every block, one label per row; names mapped with ``classes``); the
    caller checks the values, as the metrics do.  Memory, besides the blocks yielded:

    * ``.npy``: none; each block is a slice of the read-only memory map (the pages read
      are the operating system's file cache).  Labels from a ``.npy`` are memory-mapped
      too; labels from a ``.csv`` are read whole (one number per row).
    * ``.npz``: one block per array: each member is streamed through ``zipfile`` (stored
      or deflated alike: its ``.npy`` header gives the dtype and shape, then the rows are
      read block by block).  A member saved in Fortran order or with a version 3 header
      cannot be cut into rows and is read whole.
    * ``.csv``: the text of one block of lines, parsed by NumPy's C reader.
    * ``.parquet``: one batch, read row group by row group with pyarrow.
    * ``.jsonl``: the objects of one block of lines, decoded by ``json``.

    Parameters
    ----------
    path : str or os.PathLike
        The predictions file: ``.npz``, ``.npy``, ``.csv``, ``.parquet`` or ``.jsonl``.
    block_rows : int, default 65536
        Largest number of rows per block.
    labels_path, prob_key, labels_key, prob_column, labels_column, pred_column, scores
        As in :func:`load_predictions`.
    classes, sep
        As in :func:`load_predictions`.

    Yields
    ------
    predictions : ndarray of shape (rows,) or (rows, n_classes)
        A block of predictions, as stored.
    labels : ndarray of shape (rows,)
        Its labels (column indices with ``classes``).

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from calibration_toolbox.io import iter_predictions
    >>> folder = tempfile.mkdtemp()
    >>> np.save(os.path.join(folder, "p.npy"), np.full((5, 2), 0.5))
    >>> np.save(os.path.join(folder, "y.npy"), np.array([0, 1, 1, 0, 1]))
    >>> blocks = iter_predictions(
    ...     os.path.join(folder, "p.npy"), labels_path=os.path.join(folder, "y.npy"), block_rows=2
    ... )
    >>> [len(labels) for _, labels in blocks]
    [2, 2, 1]
    """
    block_rows = iv.integer_at_least(1)(block_rows, "block_rows")
    columns = (prob_key, labels_key, prob_column, labels_column, pred_column)
    options = _Options.checked(path, labels_path, *columns, scores, classes, sep)
    return _checked_blocks(options.format.blocks(options, block_rows), options)


def _checked_blocks(blocks, options: _Options) -> Iterator[tuple[NDArray, NDArray]]:
    """The blocks with their shapes checked and names mapped; an error for no rows at all."""
    rows, width = 0, None
    for predictions, labels, labels_source in blocks:
        if len(predictions) == 0 and len(labels) == 0:
            continue
        _check_shapes(predictions, labels, options.path, labels_source)
        if width is None:
            width = predictions.shape[1:]
        elif predictions.shape[1:] != width:
            raise ValueError(
                f"{options.path}: row {rows} has predictions of shape {predictions.shape[1:]} "
                f"where the rows before have {width}; every row needs one entry per class."
            )
        n_classes = 2 if predictions.ndim == 1 else predictions.shape[1]
        yield (
            predictions,
            iv.labels_from_file(labels, options.classes, n_classes, labels_source, first_row=rows),
        )
        rows += len(predictions)
    if rows == 0:
        raise ValueError(f"{options.path} holds no rows of predictions.")


class _Options:
    """The checked options of one read (``format``: its row of the suffix table)."""

    def __init__(self, **values):
        self.__dict__.update(values)

    def columns(self) -> dict[str, object]:
        """The column options, as :func:`calibration_toolbox._columns.select` takes them."""
        return {name: getattr(self, name) for name in _COLUMN_OPTIONS}

    @classmethod
    def checked(cls, path, *values) -> _Options:
        """The options of the file ``path``: ``values`` in the order of :data:`_OPTIONS`.

        ``optional_labels``, the last, may be left out (False).
        """
        options = dict(zip(_OPTIONS, values, strict=False))
        options.setdefault("optional_labels", False)
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix not in _FORMATS:
            suffixes = list(_FORMATS)
            raise InputError(
                "{path} must end in {first} or {last} (or {others}); got {name!r}.",
                argument="path",
                first=", ".join(suffixes[:2]),
                last=suffixes[2],
                others=", ".join(suffixes[3:]),
                name=path.name,
            )
        format_ = _FORMATS[suffix]
        labels_path = options["labels_path"]
        _check_labels_path(format_.kind, path, labels_path, options["optional_labels"])
        labels_path = None if labels_path is None else Path(labels_path)
        takes = set(format_.options)
        if labels_path is not None and labels_path.suffix.lower() in _FORMATS:
            takes |= {"sep"} & set(_FORMATS[labels_path.suffix.lower()].options)
        for name, value in options.items():
            if name in _CHECKED_OPTIONS and value not in (None, False) and name not in takes:
                kinds = dict.fromkeys(f.kind for f in _FORMATS.values() if name in f.options)
                raise InputError(
                    "{argument:is} only for {value} files; got {name!r}.",
                    argument=name,
                    value=listed(list(kinds)),
                    name=path.name,
                )
        options.update(path=path, format=format_, labels_path=labels_path)
        if options["sep"] is None:
            options["sep"] = format_.sep
        return cls(**options)


_OPTIONS = (
    "labels_path",
    "prob_key",
    "labels_key",
    "prob_column",
    "labels_column",
    "pred_column",
    "scores",
    "classes",
    "sep",
    "optional_labels",
)
"""The reading options of :func:`load_predictions` and :func:`iter_predictions`, in order."""
_COLUMN_OPTIONS = ("prob_column", "labels_column", "pred_column", "scores", "optional_labels")
"""Those that choose the columns (or fields) of a ``.parquet`` or a ``.jsonl``."""


def read_size(path: str | os.PathLike) -> int:
    """The bytes the arrays of ``path`` take once read: what decides whether to stream it.

    A ``.npz`` is its members' declared inflated sizes (a 14 MB archive may inflate to
    3 GiB; a member claiming more than :data:`~calibration_toolbox._limits.MAX_INFLATION`
    times its stored size is refused when read), any other file its size on disk.  What is
    not a readable regular file or zip archive is its size on disk (0 if missing): its
    reader refuses it in words.
    """
    try:
        status = os.stat(path)
    except OSError:
        return 0
    if not stat.S_ISREG(status.st_mode) or Path(path).suffix.lower() != ".npz":
        return status.st_size
    try:
        with zipfile.ZipFile(path) as archive:
            return max(sum(info.file_size for info in archive.infolist()), status.st_size)
    except (OSError, zipfile.BadZipFile):
        return status.st_size


def _check_labels_path(kind: str, path: Path, labels_path, optional: bool) -> None:
    if kind == ".npy" and labels_path is None and not optional:
        raise InputError(
            "{labels_path:is} needed with .npy predictions ({path}).",
            argument="labels_path",
            path=path,
        )
    if kind != ".npy" and labels_path is not None:
        raise InputError(
            "{labels_path:is} only for .npy predictions; {path} holds its own labels.",
            argument="labels_path",
            path=path,
        )


def _check_file(path: Path) -> bytes:
    """The first bytes of ``path``, after checking that it is a non-empty regular file.

    Anything else is refused before it is opened: a FIFO would block the read forever, a
    device (``/dev/zero``) would never end.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file.") from None
    if stat.S_ISDIR(mode):
        raise ValueError(f"{path} is a directory, not a file.")
    if not stat.S_ISREG(mode):
        raise ValueError(
            f"{path} is not a regular file (a FIFO, a device or a socket): save the "
            "predictions to a file and read that."
        )
    with open(path, "rb") as handle:
        head = handle.read(8)
    if not head:
        raise ValueError(f"{path} is empty.")
    return head


def _member(archive, name: str, path: Path) -> NDArray:
    """One array of an open archive, with the reason in words when it cannot be read."""
    try:
        _check_member_size(archive.zip, name, path)
        return np.asarray(archive[name])
    except InputError:  # refused by _check_member_size, in words already
        raise
    except _READ_ERRORS as error:
        raise ValueError(_unreadable(f"array {name!r} of {path}", error)) from None


def _check_member_size(archive: zipfile.ZipFile, name: str, path: Path) -> None:
    """Refuse a member whose declared sizes no real member has, before anything is allocated.

    Its inflated size may be at most :data:`~calibration_toolbox._limits.MAX_INFLATION`
    times its stored size, and its ``.npy`` header may claim no more bytes than that.  A
    member that cannot be read raises what ``zipfile`` or NumPy raise (the caller words it).
    """
    what = f"array {name!r} of {path}"
    info = archive.getinfo(f"{name}.npy")
    if info.file_size > MAX_INFLATION * max(info.compress_size, 1):
        raise InputError(
            "{what} claims {inflated:,} bytes inflated from {stored:,} stored, more than "
            "{limit}:1, which no compression reaches: a corrupt or hostile archive.",
            what=what,
            inflated=info.file_size,
            stored=info.compress_size,
            limit=MAX_INFLATION,
        )
    try:
        with archive.open(info) as stream:
            version = np.lib.format.read_magic(stream)
            if version not in _HEADER_READERS:
                return  # np.load reads (or refuses) the other versions itself
            shape, _, dtype = _HEADER_READERS[version](stream)
    except (RuntimeError, NotImplementedError) as error:  # encrypted; unknown compression
        raise InputError("{what} cannot be read ({error}).", what=what, error=error) from None
    _check_plain(dtype, what)
    claimed = math.prod(shape) * dtype.itemsize
    if claimed > info.file_size:
        raise InputError(
            "{what} has a header claiming shape {shape} ({claimed:,} bytes) in a member of "
            "{size:,} bytes: a corrupt or hostile archive.",
            what=what,
            shape=shape,
            claimed=claimed,
            size=info.file_size,
        )


def _unreadable(what: str, error: Exception) -> str:
    # NumPy's refusal to unpickle an object array, or to memory-map one.
    if "Object arrays" in str(error) or "Python objects" in str(error):
        return (
            f"{what} holds Python objects (dtype=object), which only unpickling could "
            "read; files are never unpickled: save a numeric array."
        )
    return f"{what} cannot be read (truncated or corrupt: {error})."


def _pick(archive, key: str | None, key_name: str, candidates, ndim: int, path: Path) -> str:
    names = archive.files
    if key is not None:
        if key not in names:
            raise InputError(
                "{argument} {key!r} is not in {name}; it holds {names}.",
                argument=key_name,
                key=key,
                name=path.name,
                names=names,
            )
        return key
    for name in candidates:
        if name in names:
            return name
    shaped = [name for name in names if _member(archive, name, path).ndim == ndim]
    if len(shaped) == 1:
        return shaped[0]
    raise InputError(
        "cannot tell which array of {name} to use ({value}); pass {argument}.",
        argument=key_name,
        name=path.name,
        value=sorted(names),
    )


def _read_npz(options: _Options) -> tuple[NDArray, NDArray, str]:
    path = options.path
    with _open_npz(path) as archive:
        prob_name, labels_name, predicted = _npz_names(archive, options)
        predictions = _member(archive, prob_name, path)
        if labels_name is None:  # optional_labels, and none named
            return predictions, None, ""
        labels = _member(archive, labels_name, path)
        if predicted is not None:
            hit = _member(archive, predicted, path)
            _check_shapes(labels, hit, path, f"array {predicted!r} of {path}")
            labels = hits(hit, labels)
    return predictions, labels, f"array {labels_name!r} of {path}"


class _open_npz:
    """``np.load`` of a checked ``.npz``, with a read error told in words."""

    def __init__(self, path: Path):
        head = _check_file(path)
        if not head.startswith(_ZIP_MAGICS):
            # np.load would try to unpickle it and advise allow_pickle=True: never do that.
            what = "a single .npy array" if head.startswith(_NPY_MAGIC) else "not a zip archive"
            raise ValueError(f"{path} is not a .npz archive ({what}).")
        self.path = path

    def __enter__(self):
        # Our own handle: np.load leaves the file it opened unclosed when zipfile refuses it.
        self.handle = open(self.path, "rb")  # closed by __exit__
        try:
            self.archive = np.load(self.handle, allow_pickle=False)
        except _ARCHIVE_ERRORS as error:
            self.handle.close()
            raise ValueError(_corrupt_archive(self.path, error)) from None
        return self.archive

    def __exit__(self, kind, error, traceback):
        self.archive.close()
        self.handle.close()
        if isinstance(error, _ARCHIVE_ERRORS) and not isinstance(error, ValueError):
            raise ValueError(_corrupt_archive(self.path, error)) from None


_ARCHIVE_ERRORS = (EOFError, OSError, zipfile.BadZipFile, zlib.error)


def _corrupt_archive(path: Path, error: Exception) -> str:
    return f"{path} is not a readable .npz archive (truncated or corrupt: {error})."


def _npz_names(archive, options: _Options) -> tuple[str, str, str | None]:
    """The arrays of the predictions, the labels and (top-label layout) the predicted label."""
    path = options.path
    predicted = predicted_label(path, archive.files, None, options.scores)
    ndim, label_keys = (2, LABEL_KEYS) if predicted is None else (1, TRUE_LABEL_KEYS)
    prob_name = _pick(archive, options.prob_key, "prob_key", PREDICTION_KEYS, ndim, path)
    named = options.labels_key is not None or any(key in archive.files for key in label_keys)
    if options.optional_labels and not named:
        return prob_name, None, predicted
    labels_name = _pick(archive, options.labels_key, "labels_key", label_keys, 1, path)
    return prob_name, labels_name, predicted


def _read_npy_pair(options: _Options) -> tuple[NDArray, NDArray | None, str]:
    labels_path = options.labels_path
    if labels_path is None:  # optional_labels (checked before)
        return _read_npy(options.path), None, ""
    return _read_npy(options.path), _read_labels(labels_path, options.sep), str(labels_path)


def _read_npy(path: Path) -> NDArray:
    """The array of a ``.npy``, memory-mapped read-only (a write raises)."""
    head = _check_file(path)
    if not head.startswith(_NPY_MAGIC):
        raise ValueError(f"{path} is not a .npy file (it does not start as NumPy writes one).")
    _check_header_length(path)
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except _READ_ERRORS as error:
        raise ValueError(_unreadable(str(path), error)) from None
    _check_plain(array.dtype, str(path))
    return array


def _check_header_length(path: Path) -> None:
    """Refuse a ``.npy`` header claiming more than ``MAX_NPY_HEADER`` bytes, before reading it."""
    with open(path, "rb") as handle:
        start = handle.read(12)  # magic (6), version (2), header length (2 in 1.0, else 4)
    size = 2 if start[6:7] == b"\x01" else 4
    length = int.from_bytes(start[8 : 8 + size], "little")
    if length > MAX_NPY_HEADER:
        raise InputError(
            "{path} has a .npy header claiming {length:,} bytes, more than the {limit:,} "
            "NumPy reads: a corrupt or hostile file.",
            path=path,
            length=length,
            limit=MAX_NPY_HEADER,
        )


def _check_plain(dtype: np.dtype, what: str) -> None:
    """Refuse a structured dtype (named fields): no column of numbers until it is split."""
    if dtype.names is not None:
        raise InputError(
            "{what} has a structured dtype with fields {fields}; save a plain numeric "
            "array (np.column_stack of the fields, in class order).",
            what=what,
            fields=list(dtype.names),
        )


def _read_labels(path: Path, sep: str | None) -> NDArray:
    if path.suffix.lower() == ".npy":
        return _read_npy(path)
    reader = _csv_reader(path, sep, labels_only=True, columns=_csv.Columns(), text_labels=False)
    _, labels = reader.read_all()
    return labels


def _read_csv(options: _Options) -> tuple[NDArray, NDArray, str]:
    predictions, labels = _predictions_csv(options).read_all()
    return predictions, labels, f"the labels column of {options.path}"


def _predictions_csv(options: _Options) -> _csv_reader:
    """The reader of a ``.csv`` of predictions (labels as text when names are expected)."""
    return _csv_reader(
        options.path,
        options.sep,
        labels_only=False,
        columns=_csv.Columns(
            options.prob_column,
            options.labels_column,
            options.pred_column,
            options.scores,
            options.optional_labels,
        ),
        text_labels=options.classes is not None,
    )


class _csv_reader:
    """The lines of a delimited file, read whole or in blocks under one layout."""

    def __init__(self, path: Path, sep, **layout_options):
        _check_file(path)
        self.path = path
        with self._open() as handle:
            first, self.first_number = _first_line(handle, path)
            # The next line that is not blank: the first row under a header.
            lines = (line.rstrip("\n") for line in handle if line.strip())
            second = _decoded(lambda: next(lines, None), path)
        self.layout = _csv.layout(path, first, second, sep=sep, **layout_options)

    def _open(self):
        try:
            # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8") is not part of the header.
            return open(self.path, encoding="utf-8-sig", newline=None)
        except OSError as error:  # pragma: no cover - the file was checked just before
            raise ValueError(f"{self.path} cannot be read: {error}.") from None

    def _data(self, handle):
        """The handle past the header (or at the first row), and the first line's number."""
        for _ in range(self.first_number - 1):
            handle.readline()
        if self.layout.header is not None:
            handle.readline()
            return self.first_number + 1
        return self.first_number

    def read_all(self) -> tuple[NDArray, NDArray]:
        with self._open() as handle:
            first = self._data(handle)
            text = _decoded(handle.read, self.path)
        if not text.strip():
            raise ValueError(f"{self.path} has a header but no rows of numbers.")
        return self.layout.read_block(text, first)

    def blocks(self, block_rows: int):
        with self._open() as handle:
            number = self._data(handle)
            while True:
                lines = _decoded(lambda: list(islice(handle, block_rows)), self.path)
                if not lines:
                    return
                yield self.layout.read_block("".join(lines), number)
                number += len(lines)


def _decoded(read, path: Path):
    try:
        return read()
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a UTF-8 text file.") from None


def _first_line(handle, path: Path) -> tuple[str, int]:
    """The first line that is not blank, and its number (1-based)."""
    try:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                return line.rstrip("\n"), number
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a UTF-8 text file.") from None
    raise ValueError(f"{path} is empty.")


def _read_parquet(options: _Options) -> tuple[NDArray, NDArray, str]:
    _check_file(options.path)
    predictions, labels, column = _parquet.read(options.path, options)
    return predictions, labels, f"column {column!r} of {options.path}"


def _read_jsonl(options: _Options) -> tuple[NDArray, NDArray, str]:
    _check_file(options.path)
    predictions, labels, field = _jsonl.read(options.path, options)
    return predictions, labels, f"field {field!r} of {options.path}"


# -- blocks --------------------------------------------------------------------------------
def _npy_blocks(options: _Options, block_rows: int):
    predictions, labels, source = _read_npy_pair(options)
    _check_shapes(predictions, labels, options.path, source)
    for start in range(0, len(labels), block_rows):
        rows = slice(start, start + block_rows)
        yield predictions[rows], labels[rows], source
        for array in (predictions, labels):
            _release_pages(array, start + block_rows)


def _release_pages(array: NDArray, stop: int) -> None:
    """Drop from this process the mapped pages of the rows before ``stop`` of a memory map.

    Pages read through a memory map count in the process's resident memory until the kernel
    needs them back: a report on a 0.8 GB ``.npy`` (20,000,000 x 10 float32, int64 labels)
    peaked at 1.1 GB, growing with the file (benchmarks/bench_out_of_core.py).
    ``MADV_DONTNEED`` unmaps the pages already read (they stay in the file cache, and a
    block still held is faulted back in from it when read), so the peak no longer grows with
    the file.  Nothing is done where ``madvise`` is missing (Windows) or the array is not
    a C-ordered ``np.memmap``.
    """
    mapping = getattr(array, "_mmap", None)  # np.memmap's mmap object (not published)
    if mapping is None or not hasattr(mmap, "MADV_DONTNEED") or not array.flags.c_contiguous:
        return
    # np.memmap maps from the file offset rounded down to the allocation granularity.
    first = array.offset % mmap.ALLOCATIONGRANULARITY
    end = (first + min(stop, len(array)) * array.strides[0]) // mmap.PAGESIZE * mmap.PAGESIZE
    if end > 0:
        mapping.madvise(mmap.MADV_DONTNEED, 0, end)


def _npz_blocks(options: _Options, block_rows: int):
    """Blocks of the two members, streamed side by side; their shapes checked first."""
    path = options.path
    with _open_npz(path) as archive:
        prob_name, labels_name, predicted = _npz_names(archive, options)
    source = f"array {labels_name!r} of {path}"
    labels_shape = _member_shape(path, labels_name)
    _check_shapes(_member_shape(path, prob_name), labels_shape, path, source)
    predictions = _member_blocks(path, prob_name, block_rows)
    labels = _member_blocks(path, labels_name, block_rows)
    if predicted is None:
        for prediction_block, label_block in zip(predictions, labels, strict=True):
            yield prediction_block, label_block, source
        return
    hit_source = f"array {predicted!r} of {path}"
    _check_shapes(labels_shape, _member_shape(path, predicted), path, hit_source)
    blocks = zip(predictions, labels, _member_blocks(path, predicted, block_rows), strict=True)
    for prediction_block, label_block, hit_block in blocks:
        yield prediction_block, hits(hit_block, label_block), source


def _member_shape(path: Path, name: str) -> tuple[int, ...]:
    """The shape of a member, from its ``.npy`` header (the whole member when unusual)."""
    with _member_stream(path, name) as (_, header):
        if header is not None:
            return header[0]
    return _whole_member(path, name).shape


class _member_stream:
    """A member's stream past its ``.npy`` header, and the header ``(shape, fortran, dtype)``.

    The header is ``None`` when the member cannot be cut into rows (a version 3 header,
    Fortran order, Python objects, a 0-d array): it is then read whole.
    """

    def __init__(self, path: Path, name: str):
        self.path, self.name = path, name

    def __enter__(self):
        try:
            self.archive = zipfile.ZipFile(self.path)
            _check_member_size(self.archive, self.name, self.path)
            self.stream = self.archive.open(f"{self.name}.npy")
            version = np.lib.format.read_magic(self.stream)
            header = None
            if version in _HEADER_READERS:
                header = _HEADER_READERS[version](self.stream)
                shape, fortran_order, dtype = header
                if fortran_order or dtype.hasobject or len(shape) == 0:
                    header = None
        except InputError:  # refused by _check_member_size, in words already
            self.__exit__(None, None, None)
            raise
        except _READ_ERRORS as error:
            self.__exit__(None, None, None)
            raise ValueError(_unreadable(f"array {self.name!r} of {self.path}", error)) from None
        return self.stream, header

    def __exit__(self, kind, error, traceback):
        for handle in ("stream", "archive"):
            if hasattr(self, handle):
                getattr(self, handle).close()


def _member_blocks(path: Path, name: str, block_rows: int):
    """Row blocks of one ``.npy`` member of a zip archive, streamed (stored or deflated)."""
    with _member_stream(path, name) as (stream, header):
        if header is None:
            whole = _whole_member(path, name)
            for start in range(0, len(whole), block_rows):
                yield whole[start : start + block_rows]
            return
        shape, _, dtype = header
        row_bytes = dtype.itemsize * int(np.prod(shape[1:], dtype=np.int64))
        try:
            for start in range(0, shape[0], block_rows):
                rows = min(block_rows, shape[0] - start)
                data = stream.read(rows * row_bytes)
                if len(data) != rows * row_bytes:
                    raise EOFError(f"the array ends after {start * row_bytes + len(data)} bytes")
                yield np.frombuffer(data, dtype).reshape(rows, *shape[1:])
            stream.read()  # to the end: zipfile checks the CRC there
        except _READ_ERRORS as error:
            raise ValueError(_unreadable(f"array {name!r} of {path}", error)) from None


_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def _whole_member(path: Path, name: str) -> NDArray:
    with _open_npz(path) as archive:
        return _member(archive, name, path)


def _csv_blocks(options: _Options, block_rows: int):
    source = f"the labels column of {options.path}"
    for predictions, labels in _predictions_csv(options).blocks(block_rows):
        yield predictions, labels, source


def _parquet_blocks(options: _Options, block_rows: int):
    _check_file(options.path)
    for predictions, labels, column in _parquet.blocks(options.path, options, block_rows):
        yield predictions, labels, f"column {column!r} of {options.path}"


def _jsonl_blocks(options: _Options, block_rows: int):
    _check_file(options.path)
    for predictions, labels, field in _jsonl.blocks(options.path, options, block_rows):
        yield predictions, labels, f"field {field!r} of {options.path}"


@dataclass(frozen=True)
class _Format:
    """One row of the suffix table: a format's readers and the options it takes."""

    kind: str
    """The format as messages name it (``.csv`` for ``.txt`` and ``.tsv`` too)."""
    read: Callable[[_Options], tuple[NDArray, NDArray, str]]
    blocks: Callable[[_Options, int], Iterator[tuple[NDArray, NDArray, str]]]
    options: tuple[str, ...] = ()
    sep: str | None = None
    """The separator when ``sep`` is not given (a ``.tsv``: a tab)."""


_NAMED_COLUMNS = ("prob_column", "labels_column", "pred_column")
_CSV = _Format(".csv", _read_csv, _csv_blocks, (*_NAMED_COLUMNS, "sep"))
_PARQUET = _Format(".parquet", _read_parquet, _parquet_blocks, _NAMED_COLUMNS)
_JSONL = _Format(".jsonl", _read_jsonl, _jsonl_blocks, _NAMED_COLUMNS)
_FORMATS = {
    ".npz": _Format(".npz", _read_npz, _npz_blocks, ("prob_key", "labels_key")),
    ".npy": _Format(".npy", _read_npy_pair, _npy_blocks),
    ".csv": _CSV,
    ".txt": _CSV,
    ".tsv": replace(_CSV, sep="\t"),
    ".parquet": _PARQUET,
    ".pq": _PARQUET,
    ".jsonl": _JSONL,
    ".ndjson": _JSONL,
}
"""The suffix table: a new format is one module and one row here."""

# The options a format may refuse (`scores` and `classes` apply to every format).
_CHECKED_OPTIONS = ("prob_key", "labels_key", *_NAMED_COLUMNS, "sep")


def _check_shapes(predictions, labels, path: Path, labels_source: str) -> None:
    """Check the shapes of ``predictions`` and ``labels`` (arrays, or their shapes)."""
    prediction_shape = getattr(predictions, "shape", predictions)
    label_shape = getattr(labels, "shape", labels)
    if len(prediction_shape) not in (1, 2):
        raise ValueError(
            f"the predictions in {path} must be a 1-D array of P(y = 1) or a 2-D array of "
            f"shape (n_samples, n_classes); got shape {prediction_shape}."
        )
    if len(label_shape) == 2 and label_shape[1] > 1:
        raise InputError(
            "the labels ({source}) are a 2-D array of shape {shape}: an (N, K) 0/1 matrix of "
            "multi-label targets is read with {multilabel_reader}; one-hot multiclass "
            "labels are given as class indices (labels.argmax(axis=1)).",
            argument="labels",
            source=labels_source,
            shape=tuple(label_shape),
        )
    if len(label_shape) != 1:
        raise ValueError(
            f"the labels ({labels_source}) must be a 1-D array of class indices; got shape "
            f"{label_shape}."
        )
    if prediction_shape[0] != label_shape[0]:
        raise ValueError(
            f"{path} holds {prediction_shape[0]} rows of predictions but there are "
            f"{label_shape[0]} labels ({labels_source}); one label per row is needed."
        )
    if label_shape[0] == 0:
        raise ValueError(f"{path} holds no rows of predictions.")
