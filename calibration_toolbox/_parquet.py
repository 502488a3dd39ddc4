"""Reading predictions and labels from Parquet (pyarrow, the ``parquet`` extra, imported lazily).

Layouts: the predictions in one column of lists of equal length (``list`` or
``fixed_size_list``), or one numeric column per class; the labels in one column (numbers,
or strings mapped by ``classes``).  The whole file and its batches go through the same
conversion, so :func:`read` equals the concatenation of :func:`blocks`.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox.io import LABEL_KEYS, PREDICTION_KEYS


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.compute
        import pyarrow.parquet
    except ImportError:
        raise ImportError(
            'reading .parquet files needs pyarrow: pip install "calibration-toolbox[parquet]"'
        ) from None
    return pyarrow


def _open(path: Path):
    pa = _pyarrow()
    if path.is_dir():
        raise ValueError(f"{path} is a directory, not a file.")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file.")
    try:
        return pa.parquet.ParquetFile(path)
    except (pa.ArrowException, OSError) as error:
        raise ValueError(f"{path} is not a readable .parquet file ({error}).") from None


def _columns(path: Path, names: list[str], prob_column, labels_column, optional=False):
    """The prediction columns (a list of one list column, or one column per class), the label.

    ``optional``: the label column only when named (None when the file names none).
    """
    named = labels_column is not None or any(name in names for name in LABEL_KEYS)
    label = None
    if named or not optional:
        label = _one_of(path, names, labels_column, LABEL_KEYS, "labels_column")
    if prob_column is None:
        return [_one_of(path, names, None, PREDICTION_KEYS, "prob_column")], label
    if isinstance(prob_column, str) and prob_column.endswith("*"):
        prefix = prob_column[:-1]
        matched = [name for name in names if name.startswith(prefix) and name != label]
        if not matched:
            raise ValueError(
                f"`prob_column` {prob_column!r} matches no column of {path} ({names})."
            )
        return matched, label
    wanted = [prob_column] if isinstance(prob_column, str) else list(prob_column)
    for name in wanted:
        _one_of(path, names, name, (), "prob_column")
    return wanted, label


def _one_of(path: Path, names: list[str], given, defaults, option: str) -> str:
    if given is not None:
        if not isinstance(given, str) or given not in names:
            raise ValueError(f"`{option}` {given!r} is not a column of {path}; it holds {names}.")
        return given
    for name in defaults:
        if name in names:
            return name
    raise ValueError(f"cannot tell which column of {path} to use ({names}); pass `{option}`.")


def _no_nulls(column, name: str, path: Path, first_row: int) -> None:
    if column.null_count:
        pa = _pyarrow()
        row = int(np.flatnonzero(pa.compute.is_null(column).to_numpy(zero_copy_only=False))[0])
        raise ValueError(
            f"column {name!r} of {path} holds a null at row {first_row + row}; predictions "
            "and labels must be complete."
        )


def _predictions(table, names: list[str], path: Path, first_row: int) -> NDArray:
    pa = _pyarrow()
    columns = [table.column(name).combine_chunks() for name in names]
    for name, column in zip(names, columns, strict=True):
        _no_nulls(column, name, path, first_row)
    kind = columns[0].type
    if len(names) == 1 and (
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    ):
        return _list_column(columns[0], names[0], path, first_row)
    for name, column in zip(names, columns, strict=True):
        if not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
            raise ValueError(
                f"column {name!r} of {path} must hold numbers or lists of numbers; got "
                f"{column.type}."
            )
    arrays = [column.to_numpy() for column in columns]
    return arrays[0] if len(arrays) == 1 else np.column_stack(arrays)


def _list_column(column, name: str, path: Path, first_row: int) -> NDArray:
    pa = _pyarrow()
    lengths = pa.compute.list_value_length(column).to_numpy()
    values = column.flatten()
    if values.null_count:
        entry = np.flatnonzero(pa.compute.is_null(values).to_numpy(zero_copy_only=False))[0]
        row = int(np.searchsorted(np.cumsum(lengths), entry, side="right"))
        raise ValueError(
            f"column {name!r} of {path} holds a null entry at row {first_row + row}; "
            "predictions and labels must be complete."
        )
    if not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)):
        raise ValueError(
            f"column {name!r} of {path} must hold lists of numbers; got {column.type}."
        )
    width = int(lengths[0]) if len(lengths) else 0
    if len(lengths) and (lengths != width).any():
        row = int(np.flatnonzero(lengths != width)[0])
        raise ValueError(
            f"column {name!r} of {path} must hold lists of one length (one entry per class); "
            f"row {first_row + row} has {int(lengths[row])} entries, row {first_row} {width}."
        )
    return values.to_numpy().reshape(len(lengths), width)


def _labels(table, name: str, path: Path, first_row: int) -> NDArray:
    pa = _pyarrow()
    column = table.column(name).combine_chunks()
    _no_nulls(column, name, path, first_row)
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return column.to_numpy(zero_copy_only=False).astype(str)
    return column.to_numpy(zero_copy_only=False)


def _arrays(table, columns, path: Path, first_row: int) -> tuple[NDArray, NDArray | None]:
    prob_names, label_name = columns
    return (
        _predictions(table, prob_names, path, first_row),
        None if label_name is None else _labels(table, label_name, path, first_row),
    )


def read(
    path: Path, prob_column, labels_column, optional_labels: bool = False
) -> tuple[NDArray, NDArray | None, str | None]:
    """``(predictions, labels, label column)`` of the whole file (labels: see ``_columns``)."""
    pa = _pyarrow()
    parquet = _open(path)
    names = parquet.schema_arrow.names
    columns = _columns(path, names, prob_column, labels_column, optional_labels)
    try:
        label = [] if columns[1] is None else [columns[1]]
        table = parquet.read(columns=[*columns[0], *label])
    except (pa.ArrowException, OSError) as error:
        raise ValueError(f"{path} cannot be read ({error}).") from None
    return (*_arrays(table, columns, path, 0), columns[1])


def blocks(path: Path, prob_column, labels_column, block_rows: int):
    """``(predictions, labels, label column)`` of batches of at most ``block_rows`` rows."""
    pa = _pyarrow()
    parquet = _open(path)
    columns = _columns(path, parquet.schema_arrow.names, prob_column, labels_column)
    rows = 0
    try:
        batches = parquet.iter_batches(batch_size=block_rows, columns=[*columns[0], columns[1]])
        for batch in batches:
            table = pa.Table.from_batches([batch])
            yield (*_arrays(table, columns, path, rows), columns[1])
            rows += batch.num_rows
    except (pa.ArrowException, OSError) as error:
        raise ValueError(f"{path} cannot be read ({error}).") from None
