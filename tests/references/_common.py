"""Helpers shared by the reference scripts (not a test module, imports no peer)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

REPOSITORY = Path(__file__).resolve().parents[2]

# The same files and keys as tests/conftest.py's REAL_FILES.
REAL_FILES = {
    "lenet-5-cifar-10": ("predictions", "ground_truth"),
    "wideresnet-16-4-cifar-10": ("predictions", "ground_truth"),
    "lenet-5-cifar-100": ("predictions", "ground_truth"),
    "wideresnet-16-4-cifar-100": ("predictions", "ground_truth"),
    "densenet-bc-100-cifar-100": ("predictions", "ground_truth"),
    "vgg16-cifar-10": ("probs_test", "y_test"),
}


def data_dir(argv: list[str] | None = None) -> Path:
    """The shared real predictions: argv[1], else $CALIBRATION_TOOLBOX_DATA, else ../shared/data.

    The default is the folder ``shared/data`` beside the repository, as tests/conftest.py.
    """
    argv = sys.argv if argv is None else argv
    if len(argv) > 1:
        return Path(argv[1])
    default = REPOSITORY.parent / "shared" / "data"
    return Path(os.environ.get("CALIBRATION_TOOLBOX_DATA", default))


def load_real(folder: Path, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(float32 probabilities, int64 labels) of one shared file, as tests/conftest.py."""
    path = folder / f"{name}.npz"
    if not path.exists():
        raise SystemExit(f"real predictions not found at {path}: pass the folder as argument")
    prob_key, label_key = REAL_FILES[name]
    with np.load(path, allow_pickle=False) as data:
        return data[prob_key], data[label_key]


def versions(*modules: str) -> str:
    """'python 3.11.7, numpy 2.4.6, ...' for the interpreter and the named modules."""
    import importlib

    found = [f"python {sys.version.split()[0]}"]
    for name in modules:
        module = importlib.import_module(name)
        found.append(f"{name} {getattr(module, '__version__', '?')}")
    return ", ".join(found)
