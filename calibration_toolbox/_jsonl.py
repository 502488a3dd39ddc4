"""Reading predictions and labels from JSON Lines (``.jsonl``): one JSON object per line.

As LLM evaluation harnesses write them: ``{"id": 3, "confidence": 0.82, "correct": true}``
or ``{"probs": [0.1, 0.9], "label": 1}``.  The fields are chosen from the first object by
the rule of every named format (:mod:`calibration_toolbox._columns`); a field holding a
list is a probability vector (one entry per class).  Each line is decoded by the standard
library's ``json`` (C-accelerated) and each chosen field becomes one NumPy array per block
of lines, so the whole file read at once is the concatenation of its blocks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import chain, islice
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox._columns import Selection, hits, select
from calibration_toolbox._errors import InputError

__all__ = ["READ_LINES", "blocks", "read"]

READ_LINES = 65536
"""Lines decoded at a time when a file is read whole."""

# What each field may hold: the predictions numbers or lists of numbers; the labels numbers,
# true/false (a 0/1 target) or strings (class names).
_PREDICTIONS = ("a number", "a list")
_LABELS = ("a number", "true/false", "a string")
_JSON_NAMES = {bool: "true/false", int: "a number", float: "a number", str: "a string"}
_JSON_NAMES |= {list: "a list", dict: "an object", type(None): "null"}


def _json_name(value) -> str:
    """The JSON name of a decoded value's type (``1`` -> ``'a number'``), for messages."""
    return _JSON_NAMES[type(value)]


class _Lines:
    """The non-blank lines of a ``.jsonl`` and their numbers (1-based), decoded in blocks."""

    def __init__(self, path: Path):
        self.path = path

    def __iter__(self) -> Iterator[tuple[int, str]]:
        try:
            # utf-8-sig: a byte-order mark is not part of the first object.
            with open(self.path, encoding="utf-8-sig") as handle:
                for number, line in enumerate(handle, start=1):
                    if line.strip():
                        yield number, line
        except UnicodeDecodeError:
            raise ValueError(f"{self.path} is not a UTF-8 text file.") from None

    def blocks(self, block_rows: int) -> Iterator[tuple[list[int], list]]:
        """``(line numbers, decoded objects)`` of blocks of ``block_rows`` lines."""
        lines = iter(self)
        while block := list(islice(lines, block_rows)):
            numbers, texts = zip(*block, strict=True)
            yield list(numbers), self._decoded(numbers, texts)

    def _decoded(self, numbers, texts) -> list:
        texts = [text.rstrip("\n") for text in texts]
        try:
            records = list(map(json.loads, texts))
        except ValueError:  # json.JSONDecodeError; a Python scan on the error path only
            for number, text in zip(numbers, texts, strict=True):
                try:
                    json.loads(text)
                except ValueError as error:
                    raise ValueError(
                        f"{self.path} line {number} is not a JSON object ({error.msg} at "
                        f"column {error.colno})."
                    ) from None
            raise  # pragma: no cover - every line decodes one by one
        for number, record in zip(numbers, records, strict=True):
            if type(record) is not dict:
                raise ValueError(
                    f"{self.path} line {number} holds {_json_name(record)}, not a JSON "
                    'object; each line must be one object such as {"prob": 0.8, "label": 1}.'
                )
        return records


def _field(records: list, numbers: list[int], name: str, path: Path) -> list:
    """The values of field ``name`` of every object; a missing field names its line."""
    missing = object()
    values = [record.get(name, missing) for record in records]
    if any(value is missing for value in values):
        number = numbers[[value is missing for value in values].index(True)]
        raise ValueError(f"{path} line {number} has no field {name!r}.")
    return values


class _Fields:
    """What each field holds in the file's first object (its JSON kind, a list's length).

    Every later value must hold the same, in whichever block it is: the file read whole and
    in blocks give the same arrays or the same error.
    """

    def __init__(self, path: Path):
        self.path = path
        self.first: dict[str, tuple[int, object]] = {}

    def array(self, values: list, numbers: list[int], name: str, labels: bool) -> NDArray:
        """One field of a block: numbers, lists of numbers, true/false or strings."""
        path = self.path
        first_line, first = self.first.setdefault(name, (numbers[0], values[0]))
        kind = _json_name(first)
        allowed = _LABELS if labels else _PREDICTIONS
        if kind not in allowed:
            raise ValueError(
                f"{path} line {first_line}: field {name!r} holds {kind}; it must hold "
                f"{', '.join(allowed[:-1])} or {allowed[-1]}."
            )
        kinds = list(map(_json_name, values))
        if any(other != kind for other in kinds):
            row = next(i for i, other in enumerate(kinds) if other != kind)
            raise ValueError(
                f"{path} line {numbers[row]}: field {name!r} holds {kinds[row]} where line "
                f"{first_line} holds {kind}; every line must hold the same."
            )
        if kind == "a list":
            return self._vectors(values, numbers, name, len(first), first_line)
        if kind == "a number":
            floats = labels and any(type(value) is float for value in values)
            return np.array(values, dtype=np.float64 if floats or not labels else None)
        return np.array(values)

    def _vectors(self, values: list, numbers: list[int], name: str, width: int, first_line):
        """A field of lists as an (n, K) array: every list of K numbers."""
        path = self.path
        lengths = np.fromiter(map(len, values), dtype=np.intp, count=len(values))
        if (lengths != width).any():
            row = int(np.flatnonzero(lengths != width)[0])
            raise ValueError(
                f"{path} line {numbers[row]}: field {name!r} holds {lengths[row]} entries where "
                f"line {first_line} holds {width}; every row needs one entry per class."
            )
        entries = {type(entry) for entry in chain.from_iterable(values)}
        if not entries <= {int, float}:
            bad = next(kind for kind in entries if kind not in (int, float))
            row = next(i for i, value in enumerate(values) if bad in map(type, value))
            raise ValueError(
                f"{path} line {numbers[row]}: field {name!r} holds a list with "
                f"{_JSON_NAMES[bad]}; it must hold lists of numbers."
            )
        return np.array(values, dtype=np.float64).reshape(len(values), width)


def _arrays(
    records, numbers, columns: Selection, fields: _Fields
) -> tuple[NDArray, NDArray | None]:
    path = fields.path

    def field(name: str, labels: bool) -> NDArray:
        return fields.array(_field(records, numbers, name, path), numbers, name, labels)

    predictions = [field(name, labels=False) for name in columns.prob]
    if len(predictions) > 1:
        if any(array.ndim != 1 for array in predictions):
            raise InputError(
                "{prob_column} names {value} fields of {path}; each must then hold "
                "one number per line (a field of lists is given alone).",
                argument="prob_column",
                value=len(predictions),
                path=path,
            )
        predictions = [np.column_stack(predictions)]
    if columns.labels is None:  # optional_labels, and none named
        return predictions[0], None
    labels = field(columns.labels, labels=True)
    if columns.predicted is not None:
        labels = hits(field(columns.predicted, labels=True), labels)
    return predictions[0], labels


def blocks(path: Path, options, block_rows: int):
    """``(predictions, labels, label field)`` of blocks of ``block_rows`` lines."""
    columns, fields = None, _Fields(path)
    for numbers, records in _Lines(path).blocks(block_rows):
        if columns is None:
            columns = select(path, list(records[0]), **options.columns())
        yield (*_arrays(records, numbers, columns, fields), columns.labels)


def read(path: Path, options) -> tuple[NDArray, NDArray, str]:
    """``(predictions, labels, label field)`` of the whole file, joined from its blocks.

    Decoded :data:`READ_LINES` lines at a time, so that the decoded objects of one block
    only are held (a 139 MiB file of 1,700,000 lines read whole in one block peaked at
    1.8 GB).
    """
    parts = list(blocks(path, options, READ_LINES))
    if not parts:
        raise ValueError(f"{path} holds no JSON objects (only blank lines).")
    predictions, labels, field = zip(*parts, strict=True)
    joined = None if field[0] is None else np.concatenate(labels)
    return np.concatenate(predictions), joined, field[0]
