"""Peer references for ``SmoothECE``: the authors' ``relplot`` package.

Prints the literals ``RELPLOT`` of ``tests/test_smooth.py``.  Rerun from the repository root,
in the *peers* environment (``pip install relplot==1.0.3`` there)::

    python tests/references/smooth_ece_peers.py [DATA]

Versions of the stored run: python 3.11.7, numpy 2.4.6, scipy 1.17.1, relplot 1.0.3.

For each data set, with ``f`` the scores (float64) and ``y`` the 0/1 targets (float64):

- ``relplot.smECE(f, y, return_width=True)``: the smooth ECE at relplot's bandwidth and
  that bandwidth (the upper end of a 10-step bisection on [0, 1], so within 2**-10 above
  the fixed point);
- ``relplot.smECE_sigma(f, y, sigma)`` for sigma = 0.1, 0.05 and 0.02.

Data sets (:func:`synthetic_sets`, all seeded; ``tests/test_smooth.py`` imports it):

- ``calibrated``: 5,000 scores uniform on (0, 1), target drawn with probability the score
  (``default_rng(91)``);
- ``overconfident``: 5,000 scores uniform on (0.5, 1), target with probability
  ``0.5 + 0.6 (s - 0.5)`` (``default_rng(92)``);
- ``crossing``: 2,000 scores Beta(2, 2), target with probability ``clip(0.5 + 1.6 (s - 0.5),
  0, 1)``: under-confident below 0.5, over-confident above, so smoothing cancels residuals
  of opposite signs (``default_rng(93)``);
- ``issue13``: 200,000 scores uniform on (0.05, 1), target with probability ``s**2``
  (``default_rng(13)``, the recipe of issue 13);
- two real files (top-label confidence and whether the first-index argmax is the label):
  ``wideresnet-16-4-cifar-10`` and ``lenet-5-cifar-100``.
"""

from __future__ import annotations

import numpy as np

SIGMAS = (0.1, 0.05, 0.02)
REAL = ("wideresnet-16-4-cifar-10", "lenet-5-cifar-100")


def synthetic_sets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The seeded (scores float64, targets int64) sets, by name."""
    sets = {}
    rng = np.random.default_rng(91)
    scores = rng.random(5_000)
    sets["calibrated"] = scores, (rng.random(5_000) < scores).astype(np.int64)
    rng = np.random.default_rng(92)
    scores = rng.uniform(0.5, 1.0, 5_000)
    sets["overconfident"] = (
        scores,
        (rng.random(5_000) < 0.5 + 0.6 * (scores - 0.5)).astype(np.int64),
    )
    rng = np.random.default_rng(93)
    scores = rng.beta(2.0, 2.0, 2_000)
    rate = np.clip(0.5 + 1.6 * (scores - 0.5), 0, 1)
    sets["crossing"] = scores, (rng.random(2_000) < rate).astype(np.int64)
    rng = np.random.default_rng(13)
    scores = rng.uniform(0.05, 1.0, 200_000)
    sets["issue13"] = scores, (rng.random(200_000) < scores**2).astype(np.int64)
    return sets


def top_label_pairs(prob: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(confidence float64, correct int64) of the first-index argmax."""
    return prob.max(axis=1).astype(np.float64), (prob.argmax(axis=1) == labels).astype(np.int64)


def main() -> None:
    import relplot
    from _common import data_dir, load_real, versions

    sets = synthetic_sets()
    folder = data_dir()
    for name in REAL:
        sets[name] = top_label_pairs(*load_real(folder, name))
    from importlib.metadata import version

    print("#", versions("numpy", "scipy") + ", relplot " + version("relplot"))
    print("RELPLOT = {")
    for name, (scores, targets) in sets.items():
        value, width = relplot.smECE(scores, targets.astype(np.float64), return_width=True)
        at_sigma = [
            float(relplot.smECE_sigma(scores, targets.astype(np.float64), sigma))
            for sigma in SIGMAS
        ]
        print(f'    "{name}": ({float(value)!r}, {float(width)!r}, {tuple(at_sigma)!r}),')
    print("}")


if __name__ == "__main__":
    main()
