"""Per-label temperature scaling, ``TemperatureScaling(multilabel=True).fit``, at 200,000 x 20.

Run from the repository root::

    python benchmarks/bench_label_temperatures.py [--repeat 5] [--rows 200000] [--labels 20]

The logits are float32 ``T_k z``, ``z`` standard normal, the 0/1 labels drawn from
``sigmoid(z)`` (true temperatures from 0.5 to 4 across the labels).  Printed: the fit's time
against the floor ``z.max(axis=1)`` of the same array (alternating rounds, best and median
ratio with its spread), the passes the fit made, and the fit's peak traced memory
(tracemalloc) as a multiple of the bytes of the logits.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import interleaved_ratio, peak_memory

from calibration_toolbox import TemperatureScaling


def problem(n_rows: int, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    z = rng.standard_normal((n_rows, n_labels))
    labels = (rng.random((n_rows, n_labels)) < 1 / (1 + np.exp(-z))).astype(np.uint8)
    temperatures = np.geomspace(0.5, 4, n_labels)
    return (z * temperatures).astype(np.float32), labels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--labels", type=int, default=20)
    args = parser.parse_args()
    logits, labels = problem(args.rows, args.labels)
    model = TemperatureScaling(multilabel=True)
    ratio = interleaved_ratio(
        lambda: model.fit(logits, labels), lambda: logits.max(axis=1), args.repeat
    )
    print(f"{args.rows:,} x {args.labels} float32 logits, ratio to z.max(axis=1)")
    print(f"  fit  {ratio.text()}  passes {model.n_passes_}")
    peak = peak_memory(lambda: TemperatureScaling(multilabel=True).fit(logits, labels))
    print(f"  peak traced memory {peak / 2**20:.1f} MiB = {peak / logits.nbytes:.2f}x the logits")


if __name__ == "__main__":
    main()
