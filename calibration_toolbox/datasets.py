"""The bundled example of real predictions, and synthetic predictions of known calibration.

The example is a small file installed with the package (``data/digits_mlp.npz``, about
60 KB): nothing is downloaded, so ``calibration-toolbox report`` runs anywhere with no file
of one's own. ``scripts/make_digits_example.py`` in the repository made it and says how.
Saved predictions of larger real models are not installed: :func:`data_folder` says where
the documentation's examples and notebooks look for them.
"""

from __future__ import annotations

import math
import os
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox import _scipy

__all__ = ["DATA_VARIABLE", "Example", "data_folder", "load_example", "make_overconfident"]

#: The environment variable that names the folder of saved predictions of real models.
DATA_VARIABLE = "CALIBRATION_TOOLBOX_DATA"


class Example(NamedTuple):
    """Saved predictions of a classifier, split into a calibration and a test part.

    Attributes
    ----------
    logits : ndarray of shape (n_samples, n_classes)
        The logits of every row (calibration rows and test rows).
    labels : ndarray of shape (n_samples,)
        The integer labels, ``0 .. n_classes - 1``.
    calibration_rows, test_rows : ndarray of int
        Indices into ``logits`` and ``labels``: the rows to fit recalibrators on and the
        rows to measure on (disjoint, together every row).
    true_temperature : float
        The temperature that makes the logits calibrated, when it is known by construction
        (synthetic logits); ``nan`` for a real model, whose best temperature can only be
        estimated.
    description : str
        One sentence: the model, the data set and the rows.
    """

    logits: NDArray
    labels: NDArray
    calibration_rows: NDArray
    test_rows: NDArray
    true_temperature: float
    description: str = ""

    @property
    def prob(self) -> NDArray:
        """Softmax of the logits."""
        return _scipy.special.softmax(self.logits, axis=1)


def make_overconfident(
    n_samples: int = 5000,
    n_classes: int = 10,
    temperature: float = 2.0,
    *,
    seed: int = 0,
) -> tuple[NDArray, NDArray]:
    """Logits of a classifier that is overconfident by a known temperature.

    Latent logits ``u`` are drawn per sample, labels are drawn from ``softmax(u)`` (so
    ``softmax(u)`` is perfectly calibrated), and the returned logits are
    ``temperature * u``: temperature scaling with ``T = temperature`` recovers calibrated
    probabilities, up to sampling noise.

    Examples
    --------
    >>> from calibration_toolbox.datasets import make_overconfident
    >>> logits, labels = make_overconfident(1000, 5, temperature=3.0, seed=1)
    >>> logits.shape, labels.shape
    ((1000, 5), (1000,))
    """
    rng = np.random.default_rng(seed)
    centres = rng.integers(0, n_classes, n_samples)
    latent = rng.normal(size=(n_samples, n_classes)) + 2.5 * np.eye(n_classes)[centres]
    prob = _scipy.special.softmax(latent, axis=1)
    # inverse-CDF sampling of one label per row from its own distribution
    draws = rng.uniform(size=(n_samples, 1))
    labels = np.minimum((prob.cumsum(axis=1) < draws).sum(axis=1), n_classes - 1)
    return temperature * latent, labels


_EXAMPLE_FILE = "digits_mlp.npz"
_EXAMPLE_ARRAYS = {
    # name: (dtype kind, number of dimensions)
    "val_logits": ("f", 2),
    "val_labels": ("i", 1),
    "logits": ("f", 2),
    "labels": ("i", 1),
    "description": ("U", 0),
}


def load_example() -> Example:
    """The bundled example: the logits of a small neural network on handwritten digits.

    A one-hidden-layer perceptron (scikit-learn's ``MLPClassifier``) trained on 300 of the
    1,797 images of scikit-learn's ``load_digits`` (10 classes); the other images are split
    into 748 calibration (validation) rows and 749 test rows. The network fits its small
    training set exactly and is overconfident on new digits (test accuracy 92.5 %, mean
    confidence 98.1 %). The logits are float32, as stored; ``description`` says the same in
    one sentence. The file is read with ``allow_pickle=False`` and checked (names, dtypes,
    shapes, labels in range, finite logits); ``scripts/make_digits_example.py`` in the
    repository made it, deterministically.

    Returns
    -------
    Example
        ``logits`` (1497, 10) float32 with the calibration rows first, ``labels`` (1497,)
        int64, ``calibration_rows`` and ``test_rows`` (index arrays), ``true_temperature``
        ``nan`` (a real model has no known temperature) and ``description``.

    Raises
    ------
    ValueError
        The installed file is damaged or not the one the package expects.

    Examples
    --------
    >>> from calibration_toolbox.datasets import load_example
    >>> example = load_example()
    >>> example.logits.shape, len(example.calibration_rows), len(example.test_rows)
    ((1497, 10), 748, 749)
    """
    with resources.files("calibration_toolbox").joinpath("data", _EXAMPLE_FILE).open("rb") as f:
        with np.load(f, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in _EXAMPLE_ARRAYS if name in archive.files}
    _check_example(arrays)
    logits = np.concatenate([arrays["val_logits"], arrays["logits"]])
    labels = np.concatenate([arrays["val_labels"], arrays["labels"]])
    n_calibration = len(arrays["val_labels"])
    return Example(
        logits,
        labels,
        np.arange(n_calibration),
        np.arange(n_calibration, len(labels)),
        math.nan,
        str(arrays["description"]),
    )


def _check_example(arrays: dict[str, NDArray]) -> None:
    """Raise ``ValueError`` unless the example's arrays have the names, dtypes and shapes."""
    for name, (kind, ndim) in _EXAMPLE_ARRAYS.items():
        array = arrays.get(name)
        if array is None or array.dtype.kind != kind or array.ndim != ndim:
            raise ValueError(
                f"the bundled example {_EXAMPLE_FILE} is damaged: array {name!r} must be a "
                f"{ndim}-d array of dtype kind {kind!r}; got "
                f"{'nothing' if array is None else f'{array.ndim}-d {array.dtype}'}."
            )
    n_classes = arrays["logits"].shape[1]
    for split in ("val_", ""):
        logits, labels = arrays[f"{split}logits"], arrays[f"{split}labels"]
        if (
            logits.shape != (len(labels), n_classes)
            or not np.isfinite(logits).all()
            or labels.min() < 0
            or labels.max() >= n_classes
        ):
            raise ValueError(
                f"the bundled example {_EXAMPLE_FILE} is damaged: {split}logits "
                f"{logits.shape} and {split}labels {labels.shape} do not match, or hold "
                f"values out of range."
            )


def data_folder(default: str | os.PathLike) -> Path:
    """The folder of saved predictions of real models that examples and notebooks read.

    The folder named by the environment variable :data:`DATA_VARIABLE`
    (``CALIBRATION_TOOLBOX_DATA``) when it is set and not empty, else ``default`` (the
    caller's own guess, such as ``shared/data`` beside a checkout).  Nothing is read or
    checked: the folder may not exist, and a caller that finds no file in it falls back
    to :func:`load_example`.

    Parameters
    ----------
    default : str or os.PathLike
        The folder to use when the environment variable is not set (or empty).

    Returns
    -------
    pathlib.Path
        The folder, as given (not resolved).

    Examples
    --------
    >>> import os
    >>> from pathlib import Path
    >>> from calibration_toolbox.datasets import data_folder
    >>> folder = data_folder(Path("..", "shared", "data"))
    >>> folder == Path(os.environ.get("CALIBRATION_TOOLBOX_DATA") or "../shared/data")
    True
    """
    named = os.environ.get(DATA_VARIABLE, "")
    return Path(named if named else default)
