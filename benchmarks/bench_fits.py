"""Speed of temperature scaling fits at several true temperatures, as multiples of one pass.

Run from the repository root::

    python benchmarks/bench_fits.py [--repeats 7]

For each case the script times ``scipy.special.log_softmax(logits, axis=1)`` over the same
float32 array (the floor) and ``TemperatureScaling().fit``, interleaved (floor, fit,
floor, fit, ...) so that the load of a shared machine falls on both alike, and prints the
medians, the ratio of the medians with its spread (the ratios of the fastest and of the
slowest pairs), the passes over every row and the fitted temperature.

The synthetic logits are ``T z``: ``z`` standard normal with one class per row raised by
3, and the labels drawn from ``softmax(z)`` itself, so that the true temperature is ``T``
(0.5, 1, 2, 4).  The real rows are the log-probabilities of the shared CIFAR predictions
(``../shared/data`` beside the checkout, or ``CALIBRATION_TOOLBOX_DATA``; skipped when
absent): the fit on a seeded 5,000 of the rows, as in the tests.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
from scipy.special import log_softmax

from calibration_toolbox import TemperatureScaling

DATA_DIR = Path(
    os.environ.get(
        "CALIBRATION_TOOLBOX_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"
    )
)
REAL = ("densenet-bc-100-cifar-100", "wideresnet-16-4-cifar-10")


def synthetic(temperature: float, n_samples=1_000_000, n_classes=10, seed=0):
    """Float32 logits ``T z`` whose labels are drawn from ``softmax(z)``."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n_samples, n_classes)).astype(np.float32)
    z[np.arange(n_samples), rng.integers(0, n_classes, n_samples)] += 3
    # The Gumbel-max trick: argmax(z + Gumbel noise) is distributed as softmax(z).
    labels = np.argmax(z + rng.gumbel(size=z.shape).astype(np.float32), axis=1)
    return (temperature * z).astype(np.float32), labels


def real(name: str, n_fit: int = 5_000):
    """Float32 log-probabilities and labels of a seeded ``n_fit`` rows, or None if absent."""
    path = DATA_DIR / f"{name}.npz"
    if not path.exists():
        return None
    with np.load(path, allow_pickle=False) as data:
        prob, labels = data["predictions"], data["ground_truth"]
    rows = np.random.default_rng(0).permutation(len(labels))[:n_fit]
    return np.log(np.maximum(prob[rows], np.float32(1e-30))), labels[rows]


def interleaved(first, second, repeats: int) -> tuple[np.ndarray, np.ndarray]:
    """Seconds of ``repeats`` calls of each, alternating."""
    times = np.empty((2, repeats))
    for repeat in range(repeats):
        for row, function in enumerate((first, second)):
            start = time.perf_counter()
            function()
            times[row, repeat] = time.perf_counter() - start
    return times[0], times[1]


def cases():
    for temperature in (0.5, 1.0, 2.0, 4.0):
        yield f"1Mx10 f32 true T={temperature:g}", *synthetic(temperature)
    for name in REAL:
        data = real(name)
        if data is not None:
            yield f"{name} 5000 rows", *data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    header = (
        f"{'TemperatureScaling.fit / log_softmax':<40} {'floor ms':>9} {'fit ms':>8} "
        f"{'ratio':>6} {'spread':>12} {'passes':>6} {'T':>10}"
    )
    print(header)
    print("-" * len(header))
    for label, logits, labels in cases():
        fitted = TemperatureScaling().fit(logits, labels)  # also warms up
        floor, fit = interleaved(
            lambda logits=logits: log_softmax(logits, axis=1),
            lambda logits=logits, labels=labels: TemperatureScaling().fit(logits, labels),
            args.repeats,
        )
        pair = np.sort(fit / floor)
        print(
            f"{label:<40} {np.median(floor) * 1e3:>9.1f} {np.median(fit) * 1e3:>8.1f} "
            f"{np.median(fit) / np.median(floor):>6.2f} {pair[0]:>5.2f}-{pair[-1]:<6.2f} "
            f"{fitted.n_passes_:>6d} {fitted.temperature_:>10.6f}"
        )


if __name__ == "__main__":
    main()
