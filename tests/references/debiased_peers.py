"""Kumar et al.'s debiased L2 calibration error on shared bin edges: tests/data/debiased_peers.npz.

Run from the repository root in the peers environment of tests/references/requirements.txt
(uncertainty-calibration 0.1.4, the package ``calibration``)::

    python tests/references/debiased_peers.py [DATA_FOLDER]

DATA_FOLDER defaults to $CALIBRATION_TOOLBOX_DATA, else ../shared/data beside the repository.

The package takes upper bin edges (``bins``: the edges after 0, ending with 1.0) and puts a
score s in the first bin whose edge is >= s (``np.searchsorted``, side left): the
``(lo, hi]`` bins of calibration-toolbox with 0 in the first bin.  Any binning is fed to it
through ``lower_bound_scaling_ce(probs, labels, p=2, debias=True,
binning_scheme=lambda probs, num_bins: upper_edges, mode=...)``: the same bins for every
class in the marginal mode, as ``GCE(bins=edges)`` uses.  Stored per data set (``<set>/...``):

* ``prob``, ``labels``: the seeded synthetic sets themselves (real files are read by the
  tests from the shared data);
* ``top_width``, ``marginal_width``: top-label and marginal debiased L2 on 15 equal-width
  bins (``edges = linspace(0, 1, 16)``);
* ``top_custom``, ``marginal_custom``: the same on the uneven edges ``CUSTOM_EDGES``;
* ``top_package``: ``lower_bound_scaling_top_ce(probs, labels)`` (p=2, debias=True, the
  package's own equal-mass bins of the confidences, ``get_equal_bins``, 15 bins: what
  ``get_top_calibration_error`` computes for scores it does not judge discrete), and
  ``top_package_edges``: those bins with 0 in front, so that the test can pass them to GCE;
* ``marginal_package``: ``lower_bound_scaling_ce(probs, labels, p=2, debias=True,
  num_bins=15, mode='marginal')``, the package's marginal error on its own per-class
  equal-mass bins (not comparable edge for edge: recorded to state the difference).

Probabilities are given to the package as float64 (the float32 real files cast exactly).
"""

from __future__ import annotations

import sys

import numpy as np
from _common import REPOSITORY, data_dir, load_real, versions

OUTPUT = REPOSITORY / "tests" / "data" / "debiased_peers.npz"
REAL = ("lenet-5-cifar-10", "wideresnet-16-4-cifar-100")
CUSTOM_EDGES = np.array([0.0, 0.1, 0.25, 0.4, 0.5, 0.55, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0])


def synthetic_sets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Seeded sets: a small miscalibrated one, a calibrated one drawn from the model, ties."""
    rng = np.random.default_rng(20261130)
    sets = {}
    logits = rng.normal(size=(300, 4)) * 2.5
    prob = np.exp(logits - logits.max(axis=1, keepdims=True))
    sets["small"] = (prob / prob.sum(axis=1, keepdims=True), rng.integers(0, 4, 300))
    prob = rng.dirichlet(np.full(4, 0.5), size=1200)
    labels = (rng.random(1200)[:, None] > np.cumsum(prob, axis=1)).sum(axis=1)
    sets["calibrated"] = (prob, np.minimum(labels, 3))
    counts = rng.integers(0, 4, size=(400, 3)).astype(float)
    counts[np.arange(400), rng.integers(0, 3, 400)] += 1
    sets["ties"] = (counts / counts.sum(axis=1, keepdims=True), rng.integers(0, 3, 400))
    return sets


def debiased(prob: np.ndarray, labels: np.ndarray, edges: np.ndarray, mode: str) -> float:
    from calibration.utils import lower_bound_scaling_ce

    upper = [float(e) for e in edges[1:]]
    return float(
        lower_bound_scaling_ce(
            prob,
            labels,
            p=2,
            debias=True,
            num_bins=len(upper),
            binning_scheme=lambda probs, num_bins: upper,
            mode=mode,
        )
    )


def values(prob: np.ndarray, labels: np.ndarray) -> dict[str, np.ndarray]:
    from calibration.utils import (
        get_equal_bins,
        lower_bound_scaling_ce,
        lower_bound_scaling_top_ce,
    )

    width = np.linspace(0.0, 1.0, 16)
    out = {}
    for name, edges in (("width", width), ("custom", CUSTOM_EDGES)):
        out[f"top_{name}"] = debiased(prob, labels, edges, "top-label")
        out[f"marginal_{name}"] = debiased(prob, labels, edges, "marginal")
    out["top_package"] = float(lower_bound_scaling_top_ce(prob, labels))
    package_bins = get_equal_bins(list(prob.max(axis=1)), num_bins=15)
    out["top_package_edges"] = np.array([0.0, *package_bins])
    out["marginal_package"] = float(
        lower_bound_scaling_ce(prob, labels, p=2, debias=True, num_bins=15, mode="marginal")
    )
    return {key: np.asarray(value) for key, value in out.items()}


def main() -> None:
    folder = data_dir()
    stored = {}
    for name, (prob, labels) in synthetic_sets().items():
        stored[f"{name}/prob"], stored[f"{name}/labels"] = prob, labels
        for key, value in values(prob, labels).items():
            stored[f"{name}/{key}"] = value
    for name in REAL:
        prob32, labels = load_real(folder, name)
        for key, value in values(prob32.astype(np.float64), labels.astype(np.int64)).items():
            stored[f"{name}/{key}"] = value
    from importlib.metadata import version

    package = f"uncertainty-calibration {version('uncertainty-calibration')}"
    stored["versions"] = np.array(f"{versions('numpy')}, {package}")
    np.savez_compressed(OUTPUT, **stored)
    print(f"# {stored['versions']}")
    for key, value in stored.items():
        if value.ndim == 0 and key != "versions":
            print(f"{key}: {float(value)!r}")
    print(f"wrote {OUTPUT.relative_to(REPOSITORY)}", file=sys.stderr)


if __name__ == "__main__":
    main()
