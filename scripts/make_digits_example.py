"""Make ``calibration_toolbox/data/digits_mlp.npz``, the bundled example of real predictions.

A one-hidden-layer perceptron (scikit-learn's ``MLPClassifier``, 64 ReLU units, L-BFGS,
``alpha=1e-3``) is trained on 300 images of scikit-learn's ``load_digits`` (8 x 8 images of
handwritten digits, 10 classes, 1,797 images in all; pixels divided by 16). The training set
is small enough for the network to fit it exactly, so on new digits it is overconfident: its
confidence is close to 1 while about one prediction in ten is wrong. The other 1,497 images
are split in half, stratified by class: a validation split (to fit recalibrators on) and a
test split (to measure on). The archive holds the logits of both splits, float32, computed
from the fitted weights as the pre-softmax output of the last layer (``softmax`` of them is
``predict_proba``), and their int64 labels:

* ``logits``, ``labels``: the test split (the names ``load_predictions`` and
  ``calibration-toolbox report`` look for first);
* ``val_logits``, ``val_labels``: the validation split;
* ``description``: one sentence saying what the file holds, and ``made_with``: the versions
  of scikit-learn, NumPy and SciPy that made it (0-d unicode arrays: ``np.load`` reads the
  file with ``allow_pickle=False``).

Everything is seeded (``random_state=0`` for the splits and the weights) and BLAS runs on one
thread, and the archive is written with fixed member timestamps, so two runs with the same
versions on the same processor write the same bytes. On another processor OpenBLAS may pick
another kernel at run time (``threadpoolctl`` names it; ``OPENBLAS_CORETYPE`` forces one), and
kernels round differently: the stored file was made with the SkylakeX kernel, and the Haswell
kernel moves 0.25 % of the logits by up to 1.9e-6 (one float32 step at their magnitude, up to
45). So ``--check`` compares values, not bytes: the labels, names and text exactly, the logits
to ``LOGIT_ATOL`` plus ``LOGIT_RTOL`` of their magnitude, and the numbers the README quotes
(test accuracy, mean confidence, ECE before and after temperature scaling, ``T``) to the
digits it quotes them. The file is written to a temporary file beside the target and
renamed over it, so a failed run never leaves a truncated file.

Run from the repository root (scikit-learn is only needed here, not by the package)::

    python scripts/make_digits_example.py           # writes the file
    python scripts/make_digits_example.py --check   # compares a fresh run with the stored file
                                                    # (exit status 1 when they differ)

The stored file was made with scikit-learn 1.9.1, NumPy 2.4.6 and SciPy 1.17.1 (CPython 3.11,
Linux x86-64); ``made_with`` in the file says the same.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import scipy

from calibration_toolbox import ECE, TemperatureScaling

TARGET = Path(__file__).resolve().parents[1] / "calibration_toolbox" / "data" / "digits_mlp.npz"
N_TRAIN = 300
HIDDEN_UNITS = 64
ALPHA = 1e-3
SEED = 0
# A fresh run's logits agree with the stored ones to this on any BLAS kernel (see above).
LOGIT_ATOL = 1e-5
LOGIT_RTOL = 1e-6
# Fixed timestamp of every archive member (zip's earliest date): the bytes do not depend
# on when the script ran.
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def make_arrays(
    n_train: int = N_TRAIN,
    hidden_units: int = HIDDEN_UNITS,
    alpha: float = ALPHA,
    seed: int = SEED,
):
    """The arrays of the archive: train the network and compute the logits of both splits."""
    import sklearn
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    images, digits = load_digits(return_X_y=True)
    images = images / 16.0
    x_train, x_rest, y_train, y_rest = train_test_split(
        images, digits, train_size=n_train, random_state=seed, stratify=digits
    )
    x_val, x_test, y_val, y_test = train_test_split(
        x_rest, y_rest, test_size=0.5, random_state=seed, stratify=y_rest
    )
    network = MLPClassifier(
        (hidden_units,), solver="lbfgs", alpha=alpha, max_iter=2000, random_state=seed
    )
    # One BLAS thread: a multi-threaded sum can round differently from run to run.
    with threadpool_limits(1):
        network.fit(x_train, y_train)
        val_logits, test_logits = _logits(network, x_val), _logits(network, x_test)
    accuracy = float((test_logits.argmax(axis=1) == y_test).mean())
    description = (
        f"Logits of a one-hidden-layer perceptron ({hidden_units} ReLU units, scikit-learn "
        f"MLPClassifier) trained on {n_train} images of scikit-learn's load_digits (8 x 8 "
        f"handwritten digits, 10 classes): {len(y_val)} validation and {len(y_test)} test "
        f"rows, test accuracy {accuracy:.1%}."
    )
    made_with = (
        f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, scipy {scipy.__version__}"
    )
    return {
        "logits": test_logits.astype(np.float32),
        "labels": y_test.astype(np.int64),
        "val_logits": val_logits.astype(np.float32),
        "val_labels": y_val.astype(np.int64),
        "description": np.array(description),
        "made_with": np.array(made_with),
    }


def _logits(network, x: np.ndarray) -> np.ndarray:
    """The last layer's output before the softmax (ReLU hidden layers, as configured)."""
    hidden = x
    for weights, bias in zip(network.coefs_[:-1], network.intercepts_[:-1], strict=True):
        hidden = np.maximum(hidden @ weights + bias, 0.0)
    logits = hidden @ network.coefs_[-1] + network.intercepts_[-1]
    # The network's own probabilities are the softmax of these logits.
    expected = network.predict_proba(x)
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    np.testing.assert_allclose(shifted / shifted.sum(axis=1, keepdims=True), expected, atol=1e-9)
    return logits


def quoted_numbers(arrays: dict[str, np.ndarray]) -> dict[str, str]:
    """The numbers the README quotes of the example, formatted to the digits it quotes."""
    logits, labels = arrays["logits"], arrays["labels"]
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob = shifted / shifted.sum(axis=1, keepdims=True)
    scaler = TemperatureScaling().fit(arrays["val_logits"], arrays["val_labels"])
    return {
        "test accuracy": f"{(prob.argmax(axis=1) == labels).mean():.1%}",
        "mean confidence": f"{prob.max(axis=1).mean():.1%}",
        "ECE before": f"{ECE(logits, labels, logits=True):.3f}",
        "ECE after": f"{ECE(scaler.predict_proba(logits), labels):.3f}",
        "T": f"{scaler.temperature_:.2f}",
    }


def differences(fresh: dict[str, np.ndarray], stored: dict[str, np.ndarray]) -> list[str]:
    """What differs between two sets of the archive's arrays, beyond the rounding of BLAS.

    Names, dtypes, shapes, labels and text must be equal; floating-point arrays equal to
    ``LOGIT_ATOL + LOGIT_RTOL * |stored|``; and the README's numbers (``quoted_numbers``)
    the same at the digits it quotes.
    """
    if list(fresh) != list(stored):
        return [f"arrays {list(fresh)} against {list(stored)}"]
    found = []
    for name, array in fresh.items():
        other = stored[name]
        if array.dtype != other.dtype or array.shape != other.shape:
            found.append(
                f"{name}: {array.dtype} {array.shape} against {other.dtype} {other.shape}"
            )
        elif array.dtype.kind == "f":
            off = ~np.isclose(array, other, rtol=LOGIT_RTOL, atol=LOGIT_ATOL)
            if off.any():
                worst = np.abs(array.astype(np.float64) - other).max()
                found.append(f"{name}: {off.sum()} values off by up to {worst:.3g}")
        elif not np.array_equal(array, other):
            found.append(f"{name}: {array} against {other}")
    if not found:
        numbers, expected = quoted_numbers(fresh), quoted_numbers(stored)
        found = [
            f"{key}: {numbers[key]} against {expected[key]}"
            for key in numbers
            if numbers[key] != expected[key]
        ]
    return found


def archive_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A ``.npz`` of ``arrays`` (deflated, members in the given order, fixed timestamps)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, array in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)
            info = zipfile.ZipInfo(f"{name}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, member.getvalue())
    return buffer.getvalue()


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def main(argv: list[str] | None = None) -> int:
    """Write the example (or, with ``--check``, compare a fresh run with the stored file)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare, do not write")
    parser.add_argument("--output", type=Path, default=TARGET, help="where to write")
    args = parser.parse_args(argv)
    arrays = make_arrays()
    if args.check:
        with np.load(args.output, allow_pickle=False) as archive:
            stored = dict(archive.items())
        found = differences(arrays, stored)
        verdict = "DIFFERENT from" if found else "the same values as"
        print(f"{args.output}: {verdict} a fresh run", *found, sep="\n  ")
        return 1 if found else 0
    data = archive_bytes(arrays)
    write_atomically(args.output, data)
    with np.load(args.output, allow_pickle=False) as stored:
        print(f"wrote {args.output} ({len(data):,} bytes): {stored['description']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
