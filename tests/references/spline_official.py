"""Peer values of spline calibration: the paper's own code (Gupta et al., ICLR 2021).

The official implementation, ``kartikgupta-at-anu/spline-calibration`` on GitHub, is not a
package: the script imports ``recalibrate.get_recalibration_function`` from a copy of its
files outside this repository (``--official DIR``, the folder that holds ``recalibrate.py``
and ``utilities/``), run with the paper's settings (``spline_method='natural'``, 6 knots).
Only NumPy is needed (1 of the "peers" environment's pins, or any NumPy 2).

Last run on a copy (not a git checkout) of the code stored at commit
``83c85a4302a85f0a1d7f64ab779c5af28fb7e96f``: ``utilities/spline.py`` without its ``main``
and plotting, ``recalibrate.py`` reduced to ``get_recalibration_function`` and the functions
it calls (``ensure_numpy``, ``interpolated_function``, ``first_above``), and a
``utilities/__init__.py`` that provides ``len0`` (the number of rows) and the ``Spline``
class.  The function is unchanged; the rest of the repository (metrics, plots, logs) is
not used by it.

For each set it prints the scores and labels' recipe (the test rebuilds them with
:func:`spline_sets`), then ``func.y`` (the calibrated value of each sorted calibration score,
before the clip into [0, 1] that the paper's script applies) at a few positions, and
``func(x)`` at the midpoint between two sorted calibration scores and at a calibration
score itself, which show the interpolation's swapped weights.

    python tests/references/spline_official.py --official DIR [DATA]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import data_dir, load_real, versions

#: Positions of the sorted calibration points whose values are printed.
PICKS = (0, 1, 17, 250, 999, 1500, -2, -1)


def spline_sets(folder: Path | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Seeded (score, label) sets without tied scores, and a real file's top-label pairs.

    ``folder`` (the shared data) adds ``lenet-5-cifar-10``: the float64 confidences of its
    first 3000 rows (none tied) and whether each prediction is right.
    """
    sets = {}
    for seed, (size, power) in enumerate([(2000, 2.0), (3000, 0.5), (2500, 1.0)]):
        rng = np.random.default_rng(seed)
        scores = rng.uniform(size=size)
        sets[f"seed{seed}-n{size}-power{power:g}"] = (
            scores,
            (rng.uniform(size=size) < scores**power).astype(np.float64),
        )
    if folder is not None:
        prob, labels = load_real(folder, "lenet-5-cifar-10")
        prob, labels = prob[:3000].astype(np.float64), labels[:3000]
        confidence = prob.max(axis=1)
        sets["lenet-5-cifar-10-top-label-3000"] = (
            confidence,
            (prob.argmax(axis=1) == labels).astype(np.float64),
        )
    return sets


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--official", required=True, type=Path)
    parser.add_argument("data", nargs="?")
    arguments = parser.parse_args()
    sys.path.insert(0, str(arguments.official))
    import recalibrate  # the official code

    folder = data_dir([sys.argv[0]] + ([arguments.data] if arguments.data else []))
    print(f"# {versions('numpy')}")
    print("OFFICIAL = {")
    for name, (scores, labels) in spline_sets(folder).items():
        assert len(np.unique(scores)) == len(scores), "the sets have no tied scores"
        func = recalibrate.get_recalibration_function(scores, labels, "natural", 6)
        order = np.sort(scores)
        values = {pick % len(scores): float(func.y[pick]) for pick in PICKS}
        middle = float((order[10] + order[11]) / 2)
        at_score = float(order[11])
        print(f"    {name!r}: {{")
        print(f"        'values': {values!r},")
        print(f"        'at_midpoint_10_11': {func(middle)!r},")
        print(f"        'at_score_11': {func(at_score)!r},")
        print("    },")
    print("}")


if __name__ == "__main__":
    main()
