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

from calibration_toolbox._columns import Selection, hits, select


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


def _arrays(
    table, columns: Selection, path: Path, first_row: int
) -> tuple[NDArray, NDArray | None]:
    predictions = _predictions(table, columns.prob, path, first_row)
    if columns.labels is None:  # optional_labels, and none named
        return predictions, None
    labels = _labels(table, columns.labels, path, first_row)
    if columns.predicted is not None:
        labels = hits(_labels(table, columns.predicted, path, first_row), labels)
    return predictions, labels


def _selection(parquet, path: Path, options) -> Selection:
    return select(path, parquet.schema_arrow.names, **options.columns())


def _read_columns(columns: Selection) -> list[str]:
    return [*columns.prob, *(name for name in (columns.labels, columns.predicted) if name)]


def read(path: Path, options) -> tuple[NDArray, NDArray, str]:
    """``(predictions, labels, label column)`` of the whole file (``options``: io's)."""
    pa = _pyarrow()
    parquet = _open(path)
    columns = _selection(parquet, path, options)
    try:
        table = parquet.read(columns=_read_columns(columns))
    except (pa.ArrowException, OSError) as error:
        raise ValueError(f"{path} cannot be read ({error}).") from None
    return (*_arrays(table, columns, path, 0), columns.labels)


def blocks(path: Path, options, block_rows: int):
    """``(predictions, labels, label column)`` of batches of at most ``block_rows`` rows."""
    pa = _pyarrow()
    parquet = _open(path)
    columns = _selection(parquet, path, options)
    rows = 0
    try:
        batches = parquet.iter_batches(batch_size=block_rows, columns=_read_columns(columns))
        for batch in batches:
            table = pa.Table.from_batches([batch])
            yield (*_arrays(table, columns, path, rows), columns.labels)
            rows += batch.num_rows
    except (pa.ArrowException, OSError) as error:
        raise ValueError(f"{path} cannot be read ({error}).") from None


def column(path: Path, name: str) -> NDArray:
    """One column of a ``.parquet`` file as a NumPy array (no nulls; text as ``str``)."""
    pa = _pyarrow()
    parquet = _open(path)
    if name not in parquet.schema_arrow.names:
        names = ", ".join(repr(field) for field in parquet.schema_arrow.names)
        raise ValueError(f"{path} has no column {name!r} (its columns: {names}).")
    values = parquet.read(columns=[name]).column(name)
    _no_nulls(values, name, path, 0)
    array = values.to_numpy()  # a ChunkedArray: pyarrow 10's takes no zero_copy_only
    if array.dtype == object and (
        pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
    ):
        array = array.astype(str)
    return array
