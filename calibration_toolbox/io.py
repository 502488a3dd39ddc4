"""Loading saved predictions from ``.npz``, ``.npy`` and ``.csv`` files (never with pickle)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

__all__ = ["load_predictions"]

_PREDICTION_KEYS = (
    "prob",
    "probs",
    "probabilities",
    "predictions",
    "probs_test",
    "logits",
    "scores",
    "y_prob",
    "y_score",
)
_LABEL_KEYS = ("labels", "label", "y", "y_true", "targets", "target", "ground_truth", "y_test")


def load_predictions(
    path: str | os.PathLike,
    *,
    labels_path: str | os.PathLike | None = None,
    prob_key: str | None = None,
    labels_key: str | None = None,
) -> tuple[NDArray, NDArray]:
    """Read ``(predictions, labels)`` saved by any framework.

    * ``.npz``: the arrays named ``prob_key`` and ``labels_key``; by default the first of
      the usual names (``prob``, ``probs``, ``predictions``, ``logits``, ... and ``labels``,
      ``y``, ``y_true``, ``ground_truth``, ...), or else the only 2-D and the only 1-D array.
    * ``.npy``: the predictions; the labels come from ``labels_path`` (``.npy``/``.csv``).
    * ``.csv``: one row per sample, the labels in the last column (or in a column named
      ``label``/``labels``/``y`` when the first line is a header).

    Files are read with ``allow_pickle=False``; the returned arrays are not validated here
    (every metric validates its inputs).

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
    if suffix == ".npz":
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        return _pick(arrays, prob_key, "prob_key", _PREDICTION_KEYS, 2, path), _pick(
            arrays, labels_key, "labels_key", _LABEL_KEYS, 1, path
        )
    if suffix == ".npy":
        if labels_path is None:
            raise ValueError(f"`labels_path` is needed with a .npy file of predictions ({path}).")
        predictions = np.load(path, allow_pickle=False)
        labels_file = Path(labels_path)
        if labels_file.suffix.lower() == ".npy":
            labels = np.load(labels_file, allow_pickle=False)
        else:
            labels = np.loadtxt(labels_file, delimiter=",", ndmin=1)
        return predictions, labels
    if suffix in (".csv", ".txt"):
        return _read_csv(path)
    raise ValueError(f"`path` must end in .npz, .npy or .csv; got {path.name!r}.")


def _pick(arrays, key, key_name, candidates, ndim, path):
    if key is not None:
        if key not in arrays:
            raise ValueError(
                f"`{key_name}` {key!r} is not in {path.name}; it holds {sorted(arrays)}."
            )
        return arrays[key]
    for name in candidates:
        if name in arrays:
            return arrays[name]
    shaped = [name for name, array in arrays.items() if array.ndim == ndim]
    if len(shaped) == 1:
        return arrays[shaped[0]]
    raise ValueError(
        f"cannot tell which array of {path.name} to use ({sorted(arrays)}); pass `{key_name}`."
    )


def _read_csv(path: Path) -> tuple[NDArray, NDArray]:
    with open(path, encoding="utf-8") as handle:
        first = handle.readline().strip().split(",")
    try:
        [float(cell) for cell in first]
        header = None
    except ValueError:
        header = [cell.strip().lower() for cell in first]
    table = np.loadtxt(path, delimiter=",", skiprows=0 if header is None else 1, ndmin=2)
    label_column = table.shape[1] - 1
    if header is not None:
        named = [i for i, name in enumerate(header) if name in ("label", "labels", "y")]
        label_column = named[0] if named else label_column
    columns = [i for i in range(table.shape[1]) if i != label_column]
    return table[:, columns], table[:, label_column]
