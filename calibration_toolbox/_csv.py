"""Reading predictions and labels from delimited text (``,`` ``;`` or tab), block by block.

The layout (separator, header, pandas' index column, which column holds the labels) is
decided once from the first line; every block of lines is then parsed by NumPy's C reader
(``np.loadtxt``) under that layout, so the whole file read at once and the same file read in
blocks give the same arrays.  Python looks at single lines only to explain an error.
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

CSV_LABEL_COLUMNS = ("label", "labels", "y")
"""Header names of the labels column of a ``.csv`` (without a header: the last column)."""

SEPARATORS = (",", ";", "\t")
"""The separators told apart from the first line (``sep=`` gives any other)."""

# Header names pandas gives its index: `df.to_csv(path)` writes an empty name, and a file
# read back with pandas and written again names that column "Unnamed: 0".
_INDEX_NAMES = ("", "unnamed: 0")
# A line of spaces only: skipped as a blank line (np.loadtxt would read it as one cell).
_SPACES_ONLY = re.compile(r"^[ \t]+$", re.MULTILINE)


def _name(separator: str) -> str:
    return {"\t": "tab", ",": "','", ";": "';'"}.get(separator, repr(separator))


@dataclass
class Layout:
    """How the lines of one delimited file are read (decided from its first line)."""

    path: Path
    sep: str
    header: list[str] | None
    n_cells: int
    comments: str | None
    index_column: int | None
    label_column: int | None
    """None: no labels (``optional_labels`` and none named); every block's labels are None."""
    prob_columns: list[int]
    text_labels: bool = False
    """Whether the label cells are read as text (names, or numbers written as text)."""

    def read_block(self, text: str, first_line: int) -> tuple[NDArray, NDArray]:
        """``(predictions, labels)`` of the lines ``text``, the first being ``first_line``.

        The labels are floats, or the stripped text of the label cells once one of them is
        not a number (names; mapped by the caller).
        """
        text = _SPACES_ONLY.sub("", text)
        if not text.strip():
            return np.empty((0, len(self.prob_columns))), np.empty(0)
        if not self.text_labels:
            try:
                table = self._parse(text, np.float64)
            except ValueError:
                self.text_labels = _first_problem(self, text, first_line) == "label"
            else:
                if table.shape[1] != self.n_cells:  # every line of the block is too short
                    raise ValueError(_describe_problem(self, text, first_line))
                labels = None if self.label_column is None else table[:, self.label_column]
                return self._columns(table, labels)
        return self._text_block(text, first_line)

    def _parse(self, text: str, dtype) -> NDArray:
        with warnings.catch_warnings():
            # A block of comment lines only (np.savetxt's footer) holds no data: not news.
            warnings.simplefilter("ignore", UserWarning)
            return self._loadtxt(text, dtype)

    def _loadtxt(self, text: str, dtype) -> NDArray:
        return np.loadtxt(
            io.StringIO(text),
            delimiter=self.sep,
            quotechar='"',
            comments=self.comments,
            dtype=dtype,
            ndmin=2 if dtype is np.float64 else 1,
        )

    def _text_block(self, text: str, first_line: int) -> tuple[NDArray, NDArray]:
        """Label cells read as text, the other cells as numbers, every row's width checked."""
        try:
            names = np.char.strip(
                np.loadtxt(
                    io.StringIO(text),
                    delimiter=self.sep,
                    quotechar='"',
                    comments=self.comments,
                    dtype=str,
                    usecols=[self.label_column],
                    ndmin=1,
                )
            )
            # The widest name is known: the structured read cannot truncate a name, and it
            # checks that every row has n_cells cells (the usecols read above does not).
            fields = [(f"c{i}", np.float64) for i in range(self.n_cells)]
            width = max(names.itemsize // 4, 1)
            fields[self.label_column] = (f"c{self.label_column}", f"U{width}")
            table = self._parse(text, np.dtype(fields))
        except ValueError:
            raise ValueError(_describe_problem(self, text, first_line)) from None
        numbers = [name for i, (name, _) in enumerate(fields) if i != self.label_column]
        values = np.stack([table[name] for name in numbers], axis=1)
        columns = [i for i in range(self.n_cells) if i != self.label_column]
        table = np.empty((len(values), self.n_cells))
        table[:, columns] = values
        return self._columns(table, names)

    def _columns(self, table: NDArray, labels: NDArray) -> tuple[NDArray, NDArray]:
        if self.index_column is not None:
            index = table[:, self.index_column]
            if not (np.isfinite(index).all() and (index == np.round(index)).all()):
                raise ValueError(
                    f"{self.path}: the first column has no name, as pandas writes its index, "
                    "but holds values that are not whole numbers; name it in the header if "
                    "it holds data."
                )
        predictions = table[:, self.prob_columns]
        if predictions.shape[1] == 1:
            predictions = predictions[:, 0]  # one column: P(y = 1)
        return predictions, labels


def layout(
    path: Path,
    first_line: str,
    *,
    sep: str | None,
    labels_only: bool,
    labels_column: str | None = None,
    text_labels: bool = False,
    optional_labels: bool = False,
) -> Layout:
    """The layout of ``path`` from its first line (a header or the first row).

    ``optional_labels``: a labels column only when named (``labels_column``, or a header
    name of :data:`CSV_LABEL_COLUMNS`); otherwise every column is a prediction.
    """
    sep = _separator(path, first_line) if sep is None else _check_sep(sep)
    comments = "#" if first_line.lstrip().startswith("#") else None
    header = _header(first_line, sep)
    n_cells = len(header) if header is not None else len(_cells(first_line, sep))
    index_column = 0 if header is not None and header[0] in _INDEX_NAMES else None
    data = [i for i in range(n_cells) if i != index_column]
    label_column = _label_column(path, header, data, labels_column, optional_labels)
    prob_columns = [i for i in data if i != label_column]
    if labels_only and prob_columns:
        raise ValueError(f"{path} must hold one column of labels; got {len(data)}.")
    if not labels_only and not prob_columns:
        raise ValueError(
            f"{path} must hold prediction columns and a label column; got one column."
        )
    return Layout(
        path, sep, header, n_cells, comments, index_column, label_column, prob_columns, text_labels
    )


def _label_column(
    path: Path, header, data: list[int], labels_column, optional: bool = False
) -> int | None:
    if labels_column is not None:
        if header is None or labels_column.lower() not in header:
            names = "no header" if header is None else f"columns {header}"
            raise ValueError(f"`labels_column` {labels_column!r} is not in {path} ({names}).")
        return header.index(labels_column.lower())
    if header is not None:
        named = [i for i in data if header[i] in CSV_LABEL_COLUMNS]
        if named:
            return named[0]
    return None if optional else data[-1]


def _check_sep(sep: object) -> str:
    if not (isinstance(sep, str) and len(sep) == 1 and sep not in '"\r\n'):
        raise ValueError(f"`sep` must be one character, such as ',', ';' or '\\t'; got {sep!r}.")
    return sep


def _outside_quotes(line: str) -> str:
    return re.sub(r'"[^"]*"', "", line)


def _separator(path: Path, line: str) -> str:
    """The one separator of ``SEPARATORS`` found in ``line`` (outside quotes), or ``,``."""
    bare = _outside_quotes(line.lstrip("#"))
    found = [sep for sep in SEPARATORS if sep in bare]
    if len(found) > 1:
        names = " and ".join(_name(sep) for sep in found)
        raise ValueError(
            f"{path} line 1 holds both {names}: cannot tell which separates the cells; pass "
            "`sep` (a decimal comma is not read: write numbers with a point)."
        )
    return found[0] if found else ","


def _cells(line: str, sep: str) -> list[str]:
    return next(csv.reader([line], delimiter=sep, quotechar='"'), [""])


def _header(line: str, sep: str) -> list[str] | None:
    """The lower-case column names when ``line`` is a header, else None.

    A header starts with ``#`` (as ``np.savetxt`` writes it), starts with an empty name (as
    pandas writes its index), names a labels column, or holds no number at all; a data row
    with a typo is therefore an error, not a skipped header.
    """
    names = [cell.strip().lower() for cell in _cells(line.lstrip("# "), sep)]
    is_header = (
        line.lstrip().startswith("#")
        or names[0] in _INDEX_NAMES
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


def _first_problem(layout: Layout, text: str, first_line: int) -> str:
    """``"label"`` when the first unreadable cell is a label (names); else the error."""
    problem = _scan(layout, text, first_line, text_labels=False)
    if problem == "label":
        return problem
    raise ValueError(problem)


def _describe_problem(layout: Layout, text: str, first_line: int) -> str:
    return _scan(layout, text, first_line, text_labels=True)


def _scan(layout: Layout, text: str, first_line: int, *, text_labels: bool) -> str:
    """Where and why the lines ``text`` cannot be read (a Python scan, on the error path only)."""
    path, sep = layout.path, layout.sep
    for number, line in enumerate(text.split("\n"), start=first_line):
        if not line.strip() or (layout.comments and line.lstrip().startswith("#")):
            continue
        cells = _cells(line, sep)
        if len(cells) != layout.n_cells:
            return _wrong_width(path, number, line, len(cells), layout)
        for column, cell in enumerate(cells):
            if _is_number(cell):
                continue
            if column == layout.label_column:
                if text_labels:
                    continue
                return "label"
            return f"{path} line {number}, cell {column + 1}: {cell.strip()!r} is not a number."
    return f"{path} cannot be read as {_name(sep)}-separated numbers."


def _wrong_width(path: Path, number: int, line: str, width: int, layout: Layout) -> str:
    others = [s for s in SEPARATORS if s != layout.sep and s in _outside_quotes(line)]
    if others and layout.sep not in _outside_quotes(line):
        return (
            f"{path} line {number} is separated by {_name(others[0])} but line 1 by "
            f"{_name(layout.sep)}: one separator per file."
        )
    return f"{path} line {number} has {width} cells; expected {layout.n_cells}."
