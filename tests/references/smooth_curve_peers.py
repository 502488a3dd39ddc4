"""Peer references for ``smooth_reliability_curve``: the authors' ``relplot`` package.

Prints the literals ``RELPLOT_CURVE`` of ``tests/metrics/test_smooth_curve.py``.  Rerun
from the repository root, in the *peers* environment (``pip install relplot==1.0.3``)::

    python tests/references/smooth_curve_peers.py

Versions of the stored run: python 3.11, numpy 2.4.6, scipy 1.17.1, relplot 1.0.3.

For three seeded sets of ``smooth_ece_peers.synthetic_sets`` (``calibrated``,
``overconfident``, ``crossing``), scores ``f`` and 0/1 targets ``y`` in float64, at
sigma = 0.1 and 0.05, with ``kernel = relplot.kernels.ReflectedGaussianKernel(sigma)``
evaluated at ``T`` (points of the library's grid ``j / 1024``):

- the smoothed residual ``y - f``: minus the first output of ``kernel.smooth(f, f - y, T)``
  (the smoothing relplot's ``smECE`` integrates);
- the density of the scores: ``kernel.kde(f, T)``;
- relplot's plotted curve, ``kernel.smooth(f, y, T)[0]`` (the Nadaraya-Watson smoothing of
  ``y`` of ``prepare_rel_diagram``'s ``KernelSmoother``), for the documented difference.
"""

from __future__ import annotations

import numpy as np

SIGMAS = (0.1, 0.05)
SETS = ("calibrated", "overconfident", "crossing")
#: Points of the grid j / 1024 (exact binary fractions: the same t in both libraries).
T = np.array([256, 512, 640, 768, 896]) / 1024


def main() -> None:
    from importlib.metadata import version

    from _common import versions
    from relplot.kernels import ReflectedGaussianKernel
    from smooth_ece_peers import synthetic_sets

    sets = synthetic_sets()
    print("#", versions("numpy", "scipy") + ", relplot " + version("relplot"))
    print("RELPLOT_CURVE = {")
    for name in SETS:
        scores, targets = sets[name]
        f, y = scores.astype(np.float64), targets.astype(np.float64)
        for sigma in SIGMAS:
            kernel = ReflectedGaussianKernel(sigma)
            residual = -kernel.smooth(f, f - y, T)[0]
            density = kernel.kde(f, T)
            plotted = kernel.smooth(f, y, T)[0]
            rows = (tuple(map(float, part)) for part in (residual, density, plotted))
            print(f'    ("{name}", {sigma!r}): {tuple(rows)!r},')
    print("}")


if __name__ == "__main__":
    main()
