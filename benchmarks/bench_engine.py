"""Speed and memory of the metric engine and temperature scaling, as ratios to a floor.

Each ratio divides the median time of our call by the median time of a NumPy primitive
over the same array, measured in the same run (so machine load mostly cancels out):

* ``ECE``, ``SCE`` on 1,000,000 x 10 float32 probabilities: ``p.max(axis=1)``
* ``ACE`` on the same array: ``np.sort(p, axis=0)``
* ``ECE`` on 50,000 x 1,000 float32 probabilities: ``p.sum()``
* ``ECE(..., logits=True)`` on 1,000,000 x 10 float32 logits: ``scipy.special.softmax``
  (the check that warns when the "logits" are probabilities is part of it)
* ``TemperatureScaling.fit`` on 1,000,000 x 10 float32 logits: one
  ``scipy.special.log_softmax`` pass

Peak extra memory is measured with tracemalloc (NumPy reports its allocations there) as a
multiple of the input's bytes.  Run: ``python benchmarks/bench_engine.py [--repeat 7]``.
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import median_time, peak_memory
from scipy.special import log_softmax, softmax

from calibration_toolbox import ACE, ECE, SCE, TemperatureScaling

GOALS = {
    "ECE 1Mx10 / p.max(axis=1)": 0.7,
    "SCE 1Mx10 / p.max(axis=1)": 1.2,
    "ACE 1Mx10 / np.sort(p, axis=0)": 1.2,
    "ECE 50kx1000 / p.sum()": 2.0,
    "ECE logits=True 1Mx10 / softmax": 1.5,
    "TemperatureScaling.fit 1Mx10 / log_softmax": 2.5,
}
MEMORY_GOALS = {"ECE 1Mx10": 1.0, "SCE 1Mx10": 1.0, "TemperatureScaling.fit 1Mx10": 3.0}


def make_probabilities(n_samples, n_classes, seed):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n_samples, n_classes)).astype(np.float32) * 3
    logits[np.arange(n_samples), rng.integers(0, n_classes, n_samples)] += 4
    labels = rng.integers(0, n_classes, n_samples)
    return logits, softmax(logits, axis=1).astype(np.float32), labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    repeat = args.repeat

    logits, prob, labels = make_probabilities(1_000_000, 10, 0)
    _, wide, wide_labels = make_probabilities(50_000, 1_000, 1)
    rows = []

    floor = median_time(lambda: prob.max(axis=1), repeat)
    for name, metric in (("ECE", ECE), ("SCE", SCE)):
        ours = median_time(lambda metric=metric: metric(prob, labels), repeat)
        rows.append((f"{name} 1Mx10 / p.max(axis=1)", ours, floor))
    floor = median_time(lambda: np.sort(prob, axis=0), max(3, repeat // 2))
    ours = median_time(lambda: ACE(prob, labels), max(3, repeat // 2))
    rows.append(("ACE 1Mx10 / np.sort(p, axis=0)", ours, floor))
    floor = median_time(lambda: wide.sum(), repeat)
    ours = median_time(lambda: ECE(wide, wide_labels), repeat)
    rows.append(("ECE 50kx1000 / p.sum()", ours, floor))
    floor = median_time(lambda: softmax(logits, axis=1), repeat)
    ours = median_time(lambda: ECE(logits, labels, logits=True), repeat)
    rows.append(("ECE logits=True 1Mx10 / softmax", ours, floor))
    floor = median_time(lambda: log_softmax(logits, axis=1), max(3, repeat // 2))
    ours = median_time(lambda: TemperatureScaling().fit(logits, labels), max(3, repeat // 2))
    rows.append(("TemperatureScaling.fit 1Mx10 / log_softmax", ours, floor))

    print(f"{'benchmark':<46}{'ours ms':>10}{'floor ms':>10}{'ratio':>8}{'goal':>7}")
    for name, ours, floor in rows:
        print(
            f"{name:<46}{ours * 1e3:>10.1f}{floor * 1e3:>10.1f}{ours / floor:>8.2f}"
            f"{GOALS[name]:>7.1f}"
        )

    print(f"\n{'peak extra memory / input bytes':<46}{'MiB':>10}{'ratio':>8}{'goal':>7}")
    for name, function, array in (
        ("ECE 1Mx10", lambda: ECE(prob, labels), prob),
        ("SCE 1Mx10", lambda: SCE(prob, labels), prob),
        ("ACE 1Mx10", lambda: ACE(prob, labels), prob),
        ("TemperatureScaling.fit 1Mx10", lambda: TemperatureScaling().fit(logits, labels), logits),
    ):
        peak = peak_memory(function)
        goal = MEMORY_GOALS.get(name)
        print(
            f"{name:<46}{peak / 2**20:>10.1f}{peak / array.nbytes:>8.2f}"
            f"{'' if goal is None else f'{goal:.1f}':>7}"
        )
    passes = TemperatureScaling().fit(logits, labels).n_passes_
    print(f"\nTemperatureScaling.fit passes over the logits: {passes}")


if __name__ == "__main__":
    main()
