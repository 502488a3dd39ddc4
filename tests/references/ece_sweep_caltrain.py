"""Roelofs et al.'s ECE_sweep by the authors' own code: tests/data/ece_sweep_caltrain.npz.

The authors released ``caltrain`` (R. Roelofs, N. Cain, J. Shlens, M. C. Mozer, "Mitigating
Bias in Calibration Error Estimation", AISTATS 2022) in the google-research repository, not
on PyPI.  It needs NumPy only.  Fetch the folder (never into this repository) and run, from
the repository root, with the peers environment of tests/references/requirements.txt::

    git clone --filter=blob:none --sparse https://github.com/google-research/google-research
    git -C google-research sparse-checkout set caltrain
    git -C google-research checkout 5b09c22d73a9d35eb6c5d2a99b95677a45053466
    python tests/references/ece_sweep_caltrain.py --caltrain google-research [DATA_FOLDER]

DATA_FOLDER defaults to $CALIBRATION_TOOLBOX_DATA, else ../shared/data beside the repository.

The values come from ``caltrain.calibration_metrics.CalibrationMetric(ce_type=...,
bin_method='', norm=...).compute_error(fx, y)``: ``'em_ece_sweep'`` (equal mass) and
``'ew_ece_sweep'`` (equal width), norm 2 as in the paper's figures (``plot_*.py`` set
``config['norm'] = 2``) and norm 1; the chosen equal-mass count is ``em_monotonic_sweep``'s
highest bin index plus one (every equal-mass bin is non-empty).  Stored:

* ``sim_*``: the 40 sets of ``simulated_sets()`` (one score per row, no tied scores), given
  as float64 (N,) arrays (the authors' K = 1 path); ``input_checksums`` lets the test tell
  if NumPy's generator ever changes them;
* ``real_*``: the six shared real files, as (N, K) float64 probabilities and one-hot labels
  (the authors' top-label path), rows sorted by confidence first (a stable sort).  The
  authors' ``np.argsort`` is not stable: on tied confidences the rank split depends on
  NumPy's sort kernel.  On already sorted rows it returns the identity (the script checks
  this), so the stored values are those of ties in the input order, the order
  calibration-toolbox uses; ECESweep gives the same on the unsorted file.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
from _common import REAL_FILES, REPOSITORY, data_dir, load_real, versions

OUTPUT = REPOSITORY / "tests" / "data" / "ece_sweep_caltrain.npz"
CALTRAIN_COMMIT = "5b09c22d73a9d35eb6c5d2a99b95677a45053466"


def simulated_sets(seed: int = 20261201) -> list[tuple[np.ndarray, np.ndarray]]:
    """40 seeded (score, target) sets: Beta scores, over- and under-confident, 50-3000 rows."""
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(40):
        n = int(rng.integers(50, 3000))
        scores = rng.beta(rng.uniform(2.0, 8.0), rng.uniform(0.8, 2.0), n)
        power = rng.uniform(0.6, 1.6)  # E[y | s] = s ** power: calibrated at power 1
        targets = (rng.random(n) < scores**power).astype(np.int64)
        sets.append((scores, targets))
    return sets


def checksums(sets: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    return np.array([[float(s.sum()), float(t.sum())] for s, t in sets])


def _authors(metric_class, fx, y, ce_type, norm):
    metric = metric_class(ce_type=ce_type, num_bins=15, bin_method="", norm=norm)
    with contextlib.redirect_stdout(io.StringIO()):  # its "reshaping fx" warnings for K = 1
        return float(metric.compute_error(fx, y)), metric


def _em_count(metric, fx, y):
    return int(np.max(metric.em_monotonic_sweep(fx, y))) + 1


def _commit(folder: Path) -> str:
    try:
        found = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True
        )
    except OSError:
        return "no git"
    return found.stdout.strip() or "not a git checkout"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--caltrain", type=Path, required=True, help="folder holding caltrain/")
    parser.add_argument("data", nargs="?", help="folder of the shared real predictions")
    arguments = parser.parse_args()
    sys.path.insert(0, str(arguments.caltrain))
    from caltrain.calibration_metrics import CalibrationMetric

    sets = simulated_sets()
    out: dict[str, np.ndarray] = {"input_checksums": checksums(sets)}
    columns: dict[str, list] = {key: [] for key in ("sim_em", "sim_ew", "sim_em_l1", "sim_bins")}
    for scores, targets in sets:
        fx, y = scores.astype(np.float64), targets.astype(np.float64)
        value, metric = _authors(CalibrationMetric, fx, y, "em_ece_sweep", 2)
        columns["sim_em"].append(value)
        columns["sim_bins"].append(_em_count(metric, fx, y))
        columns["sim_ew"].append(_authors(CalibrationMetric, fx, y, "ew_ece_sweep", 2)[0])
        columns["sim_em_l1"].append(_authors(CalibrationMetric, fx, y, "em_ece_sweep", 1)[0])
    real = {key: [] for key in ("real_em", "real_ew", "real_bins")}
    folder = data_dir([sys.argv[0]] + ([arguments.data] if arguments.data else []))
    for name in REAL_FILES:
        prob, labels = load_real(folder, name)
        prob = prob.astype(np.float64)
        order = np.argsort(prob.max(axis=1), kind="stable")
        prob, labels = prob[order], labels[order]
        if not (np.argsort(prob.max(axis=1)) == np.arange(len(labels))).all():
            raise SystemExit(f"{name}: np.argsort reorders sorted ties here; values would differ")
        one_hot = np.eye(prob.shape[1])[labels]
        value, metric = _authors(CalibrationMetric, prob, one_hot, "em_ece_sweep", 2)
        real["real_em"].append(value)
        top = metric.predict_top_label(prob, one_hot)
        real["real_bins"].append(_em_count(metric, top[0][:, 0], top[1][:, 0]))
        real["real_ew"].append(_authors(CalibrationMetric, prob, one_hot, "ew_ece_sweep", 2)[0])
    out.update({key: np.array(value) for key, value in {**columns, **real}.items()})
    out["real_names"] = np.array(list(REAL_FILES))
    out["made_with"] = np.array(
        [versions("numpy"), f"caltrain {CALTRAIN_COMMIT}, checkout {_commit(arguments.caltrain)}"]
    )
    np.set_printoptions(precision=17)
    for key, value in out.items():
        print(key, value)
    np.savez(OUTPUT, **out)
    print(f"wrote {OUTPUT.relative_to(REPOSITORY)}")


if __name__ == "__main__":
    main()
