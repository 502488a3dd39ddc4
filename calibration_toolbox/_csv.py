"""Reading predictions and labels from delimited text (``,`` ``;`` or tab), block by block.

The layout (separator, header, pandas' index column, which columns hold the predictions
and the labels, whether the labels are the words True/False) is decided once from the
first line and the first row; every block of lines is then parsed by NumPy's C reader
(``np.loadtxt``) under that layout, so the whole file read at once and the same file read in
blocks give the same arrays.  Python looks at single lines only to explain an error.
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox._columns import CSV_LABEL_COLUMNS, hits, select
from calibration_toolbox._errors import InputError

TRUE_WORDS = ("True", "TRUE", "true")
FALSE_WORDS = ("False", "FALSE", "false")
"""A 0/1 target as pandas (``True``), R (``TRUE``) and polars or Spark (``true``) write it.

These are the spellings ``pandas.read_csv`` reads as booleans; any other word (``yes``,
``T``, ``tRue``) in such a column is an error naming its line.
"""


@dataclass(frozen=True)
class Columns:
    """The column options of one read: ``prob_column``, ``labels_column``, ``pred_column``."""

    prob: str | list[str] | None = None
    labels: str | None = None
    predicted: str | None = None
    scores: bool = False
    optional_labels: bool = False
    """Labels only from a column so named (predictions to calibrate need none)."""

    def given(self) -> list[str]:
        """The options given, by name (they need a header)."""
        values = {"prob_column": self.prob, "labels_column": self.labels}
        values["pred_column"] = self.predicted
        return [name for name, value in values.items() if value is not None]

    def lower(self) -> dict:
        """The options as :func:`~calibration_toolbox._columns.select` takes them.

        In lower case: a header's names are compared in lower case.
        """
        prob = self.prob
        prob = prob.lower() if isinstance(prob, str) else prob and [n.lower() for n in prob]
        return {
            "prob_column": prob,
            "labels_column": self.labels and self.labels.lower(),
            "pred_column": self.predicted and self.predicted.lower(),
            "scores": self.scores,
            "optional_labels": self.optional_labels,
        }


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
    """None: no labels (``Columns.optional_labels``, and none named)."""
    prob_columns: list[int]
    text_labels: bool = False
    """Whether the label cells are read as text (names, or numbers written as text)."""
    pred_column: int | None = None
    """The predicted-label column of the top-label layout (the target: it equals the label)."""
    bool_labels: bool = False
    """Whether the labels are the words True/False (the first row's label is one)."""
    unused_columns: list[int] = field(default_factory=list)
    """Columns of a header that no option chose (``--prob-column`` names the predictions):
    read as text and left aside, so that they may hold anything (a column of group names)."""

    @property
    def text_columns(self) -> list[int]:
        """The columns read as text once a label is not a number."""
        return [c for c in (self.label_column, self.pred_column) if c is not None]

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
                table = self._numbers(text)
            except ValueError:
                self.text_labels = _first_problem(self, text, first_line) == "label"
            else:
                if table.shape[1] != self.n_cells:  # every line of the block is too short
                    raise ValueError(_describe_problem(self, text, first_line))
                return self._columns(table, [table[:, c] for c in self.text_columns])
        table, cells = self._text_block(text, first_line)
        if self.bool_labels:
            cells[0] = _booleans(self, cells[0], text, first_line)
        return self._columns(table, cells)

    def _parse(self, text: str, dtype, **options) -> NDArray:
        with warnings.catch_warnings():
            # A block of comment lines only (np.savetxt's footer) holds no data, and a blank
            # line is not a row (NumPy >= 1.23 says so once per call): not news.
            warnings.simplefilter("ignore", UserWarning)
            return np.loadtxt(
                io.StringIO(text),
                delimiter=self.sep,
                quotechar='"',
                comments=self.comments,
                dtype=dtype,
                **({"ndmin": 2 if dtype is np.float64 else 1} | options),
            )

    def _numbers(self, text: str) -> NDArray:
        """Every cell as a number (NaN in the unused columns, read as text); ValueError else."""
        if not self.unused_columns:
            return self._parse(text, np.float64)
        return self._mixed(text, self.unused_columns)[0]

    def _mixed(self, text: str, as_text: list[int]) -> tuple[NDArray, NDArray]:
        """The columns ``as_text`` read as text, the others as numbers (NaN in ``as_text``).

        Returns the table of numbers and the structured table the text is read from.
        """
        cells = self._parse(text, str, usecols=as_text, ndmin=2)
        # The widest cell is known: the structured read cannot truncate a name, and it
        # checks that every row has n_cells cells (the usecols read above does not).
        fields = [(f"c{i}", np.float64) for i in range(self.n_cells)]
        for column in as_text:
            fields[column] = (f"c{column}", f"U{max(cells.itemsize // 4, 1)}")
        table = self._parse(text, np.dtype(fields))
        numbers = np.full((len(table), self.n_cells), np.nan)
        for column in range(self.n_cells):
            if column not in as_text:
                numbers[:, column] = table[f"c{column}"]
        return numbers, table

    def _text_block(self, text: str, first_line: int) -> tuple[NDArray, list[NDArray]]:
        """The text columns read as text, the other cells as numbers, every row's width checked.

        Returns the table of numbers (the text and unused columns left as NaN) and the
        stripped text of each of :attr:`text_columns`.
        """
        try:
            numbers, table = self._mixed(text, [*self.text_columns, *self.unused_columns])
        except ValueError:
            raise ValueError(_describe_problem(self, text, first_line)) from None
        return numbers, [np.char.strip(table[f"c{column}"]) for column in self.text_columns]

    def _columns(self, table: NDArray, cells: list[NDArray]) -> tuple[NDArray, NDArray]:
        """The predictions and labels of a block (``cells``: of :attr:`text_columns`)."""
        labels = None if self.label_column is None else cells[0]
        if self.pred_column is not None:
            labels = hits(cells[1], labels)
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
    first_row: str | None = None,
    *,
    sep: str | None,
    labels_only: bool,
    columns: Columns,
    text_labels: bool = False,
) -> Layout:
    """The layout of ``path`` from its first line (a header or the first row).

    ``first_row`` is the next line that is not blank (the first row under a header): its
    label tells whether the labels are the words True/False.
    """
    sep = _separator(path, first_line) if sep is None else _check_sep(sep)
    comments = "#" if first_line.lstrip().startswith("#") else None
    header = _header(first_line, sep, path)
    n_cells = len(header) if header is not None else len(_cells(first_line, sep, path))
    index_column = 0 if header is not None and header[0] in _INDEX_NAMES else None
    data = [i for i in range(n_cells) if i != index_column]
    label_column, prob_columns, pred_column = _chosen(path, header, data, columns)
    if labels_only and prob_columns:
        raise ValueError(f"{path} must hold one column of labels; got {len(data)}.")
    if not labels_only and not prob_columns:
        raise ValueError(
            f"{path} must hold prediction columns and a label column; got one column."
        )
    row = first_row if header is not None else first_line
    cells = [] if row is None else _cells(row, sep, path)
    bool_labels = (
        not text_labels
        and label_column is not None
        and pred_column is None
        and len(cells) == n_cells
        and cells[label_column].strip() in TRUE_WORDS + FALSE_WORDS
    )
    chosen = {*prob_columns, label_column, pred_column}
    unused = [] if header is None else [i for i in data if i not in chosen]
    return Layout(
        path,
        sep,
        header,
        n_cells,
        comments,
        index_column,
        label_column,
        prob_columns,
        text_labels or bool_labels,
        pred_column,
        bool_labels,
        unused,
    )


def _chosen(path: Path, header, data: list[int], columns: Columns):
    """The label column, the prediction columns and the predicted-label column (or None)."""
    if header is None:
        given = columns.given()
        if given:
            raise InputError(
                "{argument} needs a header naming the columns; {path} has none.",
                argument=given[0],
                path=path,
            )
        if columns.optional_labels:
            return None, data, None
        return data[-1], data[:-1], None
    position: dict[str, int] = {}
    for i in data:  # a name given twice is its first column
        position.setdefault(header[i], i)
    chosen = select(
        path,
        list(position),
        **columns.lower(),
        label_names=CSV_LABEL_COLUMNS,
        by_position=True,
    )
    label_column = None if chosen.labels is None else position[chosen.labels]
    if chosen.predicted is None and columns.prob is None:  # every other column, in order
        prob = [i for i in data if i != label_column]
        if columns.scores and len(prob) > 1:
            raise InputError(
                "{path} holds {count} columns beside the labels "
                "({names}) and one score per row is read: "
                "name the scores with {prob_column}.",
                path=path,
                count=len(prob),
                names=", ".join(header[i] for i in prob),
            )
        return label_column, prob, None
    predicted = None if chosen.predicted is None else position[chosen.predicted]
    return label_column, [position[name] for name in chosen.prob], predicted


def _check_sep(sep: object) -> str:
    if not (isinstance(sep, str) and len(sep) == 1 and sep not in '"\r\n'):
        raise InputError(
            "{sep} must be one character, such as ',', ';' or '\\t'; got {value!r}.",
            argument="sep",
            value=sep,
        )
    return sep


def _outside_quotes(line: str) -> str:
    return re.sub(r'"[^"]*"', "", line)


def _separator(path: Path, line: str) -> str:
    """The one separator of ``SEPARATORS`` found in ``line`` (outside quotes), or ``,``."""
    bare = _outside_quotes(line.lstrip("#"))
    found = [sep for sep in SEPARATORS if sep in bare]
    if len(found) > 1:
        names = " and ".join(_name(sep) for sep in found)
        raise InputError(
            "{path} line 1 holds both {names}: cannot tell which separates the cells; pass "
            "{sep} (a decimal comma is not read: write numbers with a point).",
            path=path,
            names=names,
        )
    return found[0] if found else ","


def _cells(line: str, sep: str, path: Path) -> list[str]:
    try:
        return next(csv.reader([line], delimiter=sep, quotechar='"'), [""])
    except csv.Error:  # a cell longer than the csv module's field limit (or a bad quote)
        raise InputError(
            "{path} holds a cell that Python's csv module cannot read (longer than "
            "{limit:,} characters, or a NUL byte): not a table of predictions.",
            path=path,
            limit=csv.field_size_limit(),
        ) from None


def _header(line: str, sep: str, path: Path) -> list[str] | None:
    """The lower-case column names when ``line`` is a header, else None.

    A header starts with ``#`` (as ``np.savetxt`` writes it), starts with an empty name (as
    pandas writes its index), names a labels column, or holds no number at all; a data row
    with a typo is therefore an error, not a skipped header.
    """
    names = [cell.strip().lower() for cell in _cells(line.lstrip("# "), sep, path)]
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
        cells = _cells(line, sep, path)
        if len(cells) != layout.n_cells:
            return _wrong_width(path, number, line, len(cells), layout)
        for column, cell in enumerate(cells):
            if _is_number(cell) or column in layout.unused_columns:
                continue
            if column in layout.text_columns:
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


def _booleans(layout: Layout, cells: NDArray, text: str, first_line: int) -> NDArray:
    """The words True/False of a label column as 1.0/0.0; any other word names its line."""
    true = np.isin(cells, TRUE_WORDS)
    known = true | np.isin(cells, FALSE_WORDS)
    if not known.all():
        row = int(np.flatnonzero(~known)[0])
        column = layout.label_column
        header = layout.header
        where = f"cell {column + 1}" if header is None else f"column {header[column]!r}"
        raise ValueError(
            f"{layout.path} line {_line_of_row(layout, text, first_line, row)}, {where}: "
            f"{str(cells[row])!r} is not True or False, as the column's first row is; a 0/1 "
            "target is written True/False, TRUE/FALSE or true/false in every row."
        )
    return true.astype(np.float64)


def _line_of_row(layout: Layout, text: str, first_line: int, row: int) -> int:
    """The line number of data row ``row`` of the lines ``text`` (on the error path only)."""
    rows = -1
    for number, line in enumerate(text.split("\n"), start=first_line):
        if not line.strip() or (layout.comments and line.lstrip().startswith("#")):
            continue
        rows += 1
        if rows == row:
            return number
    return first_line  # pragma: no cover - every row is a line of ``text``
