"""Loading saved predictions from ``.npz``, ``.npy`` and ``.csv`` files (never with pickle).

Every problem with a file (missing, empty, truncated, corrupt, not the format its name says,
Python objects that only unpickling could read, cells that are not numbers, arrays of the
wrong shape, labels that do not match the predictions row for row) is reported as one
``ValueError`` that names the file and what is wrong; a missing file is a
``FileNotFoundError`` with the same kind of message.
"""

from __future__ import annotations

import os
import zipfile
import zlib
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = ["load_predictions"]

PREDICTION_KEYS = (
    "prob",
    "probs",
    "probabilities",
    "predictions",
    "probs_test",
    "logits",
    "scores",
    "y_prob",
    "y_score",
    "confidence",
    "confidences",
)
"""Names of the predictions array looked for in a ``.npz``, in this order."""

LABEL_KEYS = (
    "labels",
    "label",
    "y",
    "y_true",
    "targets",
    "target",
    "ground_truth",
    "y_test",
    "correct",
    "outcome",
)
"""Names of the labels array looked for in a ``.npz``, in this order."""

CSV_LABEL_COLUMNS = ("label", "labels", "y")
"""Header names of the labels column of a ``.csv`` (without a header: the last column)."""

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
) -> tuple[NDArray, NDArray]:
    """Read ``(predictions, labels)`` saved by any framework.

    * ``.npz``: the arrays named ``prob_key`` and ``labels_key``; by default the first of
      :data:`PREDICTION_KEYS` (``prob``, ``probs``, ``probabilities``, ``predictions``,
      ``probs_test``, ``logits``, ``scores``, ``y_prob``, ``y_score``, ``confidence``,
      ``confidences``) and of :data:`LABEL_KEYS` (``labels``, ``label``, ``y``, ``y_true``,
      ``targets``, ``target``, ``ground_truth``, ``y_test``, ``correct``, ``outcome``) that
      the archive holds, or else its only 2-D and its only 1-D array.
    * ``.npy``: the predictions; the labels come from ``labels_path`` (a ``.npy``, or a
      ``.csv`` with one column, header optional).
    * ``.csv`` (or ``.txt``): one row per sample, comma-separated; the labels in the last
      column, or in the column named ``label``/``labels``/``y`` when the first line is a
      header (a header line may start with ``#``, as ``np.savetxt`` writes it). A single
      prediction column is returned as a 1-D array of P(y = 1).

    Files are read with ``allow_pickle=False``, always. The shapes are checked here
    (predictions 1-D or 2-D, labels 1-D, one label per row of predictions); the values
    (finite, in range, rows summing to 1) are checked by every metric.

    Parameters
    ----------
    path : str or os.PathLike
        The predictions file: ``.npz``, ``.npy`` or ``.csv``.
    labels_path : str or os.PathLike, optional
        The labels of a ``.npy`` of predictions (only then).
    prob_key, labels_key : str, optional
        Names of the arrays in a ``.npz`` (only then).

    Returns
    -------
    predictions : ndarray of shape (n_samples,) or (n_samples, n_classes)
        As stored (probabilities or logits; the dtype of the file).
    labels : ndarray of shape (n_samples,)

    Raises
    ------
    FileNotFoundError
        A file does not exist.
    ValueError
        Anything else wrong with a file or the options, with a message naming the file.

    Examples
    --------
    >>> import numpy as np, tempfile, os
    >>> from calibration_toolbox.io import load_predictions
    >>> path = os.path.join(tempfile.mkdtemp(), "preds.npz")
    >>> np.savez(path, probs=np.array([[0.8, 0.2], [0.3, 0.7]]), labels=np.array([0, 1]))
    >>> prob, labels = load_predictions(path)
    >>> prob.shape, labels.tolist()
    ((2, 2), [0, 1])
    """
    path = Path(path)
    suffix = path.suffix.lower()
    _check_options(suffix, path, labels_path, prob_key, labels_key)
    if suffix == ".npz":
        predictions, labels, labels_source = _read_npz(path, prob_key, labels_key)
    elif suffix == ".npy":
        labels_path = Path(labels_path)
        predictions, labels = _read_npy(path), _read_labels(labels_path)
        labels_source = str(labels_path)
    else:
        predictions, labels = _read_csv(path)
        labels_source = f"the labels column of {path}"
    _check_shapes(predictions, labels, path, labels_source)
    return predictions, labels


def _check_options(suffix, path, labels_path, prob_key, labels_key) -> None:
    if suffix not in (".npz", ".npy", ".csv", ".txt"):
        raise ValueError(f"`path` must end in .npz, .npy or .csv; got {path.name!r}.")
    if suffix == ".npy" and labels_path is None:
        raise ValueError(f"`labels_path` is needed with .npy predictions ({path}).")
    if suffix != ".npy" and labels_path is not None:
        raise ValueError(
            f"`labels_path` is only for .npy predictions; {path} holds its own labels."
        )
    for name, value in (("prob_key", prob_key), ("labels_key", labels_key)):
        if suffix != ".npz" and value is not None:
            raise ValueError(f"`{name}` is only for .npz files; got {path.name!r}.")


def _check_file(path: Path) -> bytes:
    """The first bytes of ``path``, after checking that it is a non-empty file."""
    if path.is_dir():
        raise ValueError(f"{path} is a directory, not a file.")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file.")
    with open(path, "rb") as handle:
        head = handle.read(8)
    if not head:
        raise ValueError(f"{path} is empty.")
    return head


def _read_npz(path: Path, prob_key, labels_key) -> tuple[NDArray, NDArray, str]:
    head = _check_file(path)
    if not head.startswith(_ZIP_MAGICS):
        # np.load would try to unpickle it and advise allow_pickle=True: never do that.
        what = "a single .npy array" if head.startswith(_NPY_MAGIC) else "not a zip archive"
        raise ValueError(f"{path} is not a .npz archive ({what}).")
    try:
        # Our own handle: np.load leaves the file it opened unclosed when zipfile refuses it.
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as archive:
            prob_name = _pick(archive, prob_key, "prob_key", PREDICTION_KEYS, 2, path)
            labels_name = _pick(archive, labels_key, "labels_key", LABEL_KEYS, 1, path)
            predictions = _member(archive, prob_name, path)
            labels = _member(archive, labels_name, path)
    except (EOFError, OSError, zipfile.BadZipFile, zlib.error) as error:
        raise ValueError(
            f"{path} is not a readable .npz archive (truncated or corrupt: {error})."
        ) from None
    return predictions, labels, f"array {labels_name!r} of {path}"


def _member(archive, name: str, path: Path) -> NDArray:
    """One array of an open archive, with the reason in words when it cannot be read."""
    try:
        return np.asarray(archive[name])
    except _READ_ERRORS as error:
        raise ValueError(_unreadable(f"array {name!r} of {path}", error)) from None


def _unreadable(what: str, error: Exception) -> str:
    if "Object arrays" in str(error):  # NumPy's refusal to unpickle an object array
        return (
            f"{what} holds Python objects (dtype=object), which only unpickling could "
            "read; files are never unpickled: save a numeric array."
        )
    return f"{what} cannot be read (truncated or corrupt: {error})."


def _pick(archive, key: str | None, key_name: str, candidates, ndim: int, path: Path) -> str:
    names = archive.files
    if key is not None:
        if key not in names:
            raise ValueError(f"`{key_name}` {key!r} is not in {path.name}; it holds {names}.")
        return key
    for name in candidates:
        if name in names:
            return name
    shaped = [name for name in names if _member(archive, name, path).ndim == ndim]
    if len(shaped) == 1:
        return shaped[0]
    raise ValueError(
        f"cannot tell which array of {path.name} to use ({sorted(names)}); pass `{key_name}`."
    )


def _read_npy(path: Path) -> NDArray:
    if not _check_file(path).startswith(_NPY_MAGIC):
        raise ValueError(f"{path} is not a .npy file (it does not start as NumPy writes one).")
    try:
        with open(path, "rb") as handle:
            return np.load(handle, allow_pickle=False)
    except _READ_ERRORS as error:
        raise ValueError(_unreadable(str(path), error)) from None


def _read_labels(path: Path) -> NDArray:
    if path.suffix.lower() == ".npy":
        return _read_npy(path)
    _, table = _read_table(path)
    if table.shape[1] != 1:
        raise ValueError(f"{path} must hold one column of labels; got {table.shape[1]}.")
    return table[:, 0]


def _read_csv(path: Path) -> tuple[NDArray, NDArray]:
    header, table = _read_table(path)
    if table.shape[1] < 2:
        raise ValueError(
            f"{path} must hold prediction columns and a label column; got one column."
        )
    label_column = table.shape[1] - 1
    if header is not None:
        named = [i for i, name in enumerate(header) if name in CSV_LABEL_COLUMNS]
        label_column = named[0] if named else label_column
    predictions = np.delete(table, label_column, axis=1)
    if predictions.shape[1] == 1:
        predictions = predictions[:, 0]  # one column: P(y = 1)
    return predictions, table[:, label_column]


def _read_table(path: Path) -> tuple[list[str] | None, NDArray]:
    """The optional header (lower-case names) and the numbers of a comma-separated file."""
    _check_file(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a UTF-8 text file.") from None
    lines = [
        (number, line)
        for number, line in enumerate(text.splitlines(), start=1)
        if line.strip() and not (number > 1 and line.lstrip().startswith("#"))
    ]
    if not lines:
        raise ValueError(f"{path} is empty.")
    header = _header(lines[0][1])
    rows = lines[1:] if header is not None else lines
    if not rows:
        raise ValueError(f"{path} has a header but no rows of numbers.")
    try:
        table = np.loadtxt([line for _, line in rows], delimiter=",", ndmin=2, comments=None)
    except ValueError:
        raise ValueError(_first_bad_row(path, rows, header)) from None
    return header, table


def _header(line: str) -> list[str] | None:
    """The lower-case column names when ``line`` is a header, else None.

    A header starts with ``#`` (as ``np.savetxt`` writes it), names a labels column, or holds
    no number at all; a data row with a typo is therefore an error, not a skipped header.
    """
    names = [cell.strip().strip('"').lower() for cell in line.lstrip("# ").split(",")]
    is_header = (
        line.lstrip().startswith("#")
        or any(name in CSV_LABEL_COLUMNS for name in names)
        or not any(_is_number(name) for name in names)
    )
    return names if is_header else None


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _first_bad_row(path: Path, rows: list[tuple[int, str]], header: list[str] | None) -> str:
    """Where and why ``np.loadtxt`` refused the rows (a Python scan, on the error path only)."""
    width = len(header) if header is not None else len(rows[0][1].split(","))
    for number, line in rows:
        cells = line.split(",")
        if len(cells) != width:
            return f"{path} line {number} has {len(cells)} cells; expected {width}."
        for column, cell in enumerate(cells, start=1):
            if not _is_number(cell):
                return f"{path} line {number}, cell {column}: {cell.strip()!r} is not a number."
    return f"{path} cannot be read as comma-separated numbers."


def _check_shapes(predictions: NDArray, labels: NDArray, path: Path, labels_source: str) -> None:
    if predictions.ndim not in (1, 2):
        raise ValueError(
            f"the predictions in {path} must be a 1-D array of P(y = 1) or a 2-D array of "
            f"shape (n_samples, n_classes); got shape {predictions.shape}."
        )
    if labels.ndim != 1:
        raise ValueError(
            f"the labels ({labels_source}) must be a 1-D array of class indices; got shape "
            f"{labels.shape}."
        )
    if len(predictions) != len(labels):
        raise ValueError(
            f"{path} holds {len(predictions)} rows of predictions but there are "
            f"{len(labels)} labels ({labels_source}); one label per row is needed."
        )
    if len(labels) == 0:
        raise ValueError(f"{path} holds no rows of predictions.")
