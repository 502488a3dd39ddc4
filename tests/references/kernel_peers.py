"""netcal's MMCE on seeded sets and the shared real predictions: NETCAL_MMCE in test_kernel.py.

Run from the repository root in the peers environment of tests/references/requirements.txt::

    python tests/references/kernel_peers.py [DATA_FOLDER]

netcal 1.4.0's ``netcal.metrics.MMCE().measure(prob, labels)`` computes
``sqrt(sum_ij d_i d_j exp(-2.5 |r_i - r_j|) / n^2)`` with r the row maximum and
d = [argmax == label] - r, through the n x n matrix, in the dtype of its input: each array is
given to it as float64 (the float32 predictions cast).  Printed: the seeded sets with our
value beside netcal's (when the package is importable), then the dictionary of real values;
the 10,000-row files take an n x n float64 matrix (800 MB) each, so only two are used.
"""

from __future__ import annotations

import sys

import numpy as np
from _common import REPOSITORY, data_dir, load_real, versions


def netcal_mmce(prob: np.ndarray, labels: np.ndarray) -> float:
    import netcal.metrics

    return float(netcal.metrics.MMCE().measure(prob.astype(np.float64), labels))


def seeded_sets():
    for seed, (n, n_classes) in enumerate([(200, 3), (1000, 10), (500, 2)]):
        rng = np.random.default_rng(seed)
        prob = rng.dirichlet(np.full(n_classes, 0.5), size=n)
        yield f"seed {seed}, {n} x {n_classes}", prob, rng.integers(0, n_classes, n)


def main():
    print(versions("numpy", "netcal"))
    sys.path.insert(0, str(REPOSITORY))
    try:
        from calibration_toolbox import MMCE
    except ImportError:  # numpy/scipy-only package; absent from the peers venv is fine
        MMCE = None
    for name, prob, labels in seeded_sets():
        theirs = netcal_mmce(prob, labels)
        ours = "" if MMCE is None else f"  ours {MMCE(prob, labels)!r}"
        print(f"{name}: netcal {theirs!r}{ours}")
    folder = data_dir()
    real = {}
    for name in ("lenet-5-cifar-10", "vgg16-cifar-10"):
        prob, labels = load_real(folder, name)
        real[name] = netcal_mmce(prob, labels)
    print("NETCAL_MMCE = {")
    for name, value in real.items():
        print(f'    "{name}": {value!r},')
    print("}")


if __name__ == "__main__":
    main()
