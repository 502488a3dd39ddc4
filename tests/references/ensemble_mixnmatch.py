"""Mix-n-Match's own ensemble temperature scaling: the literals of MIXNMATCH (test_ensemble.py).

The authors' code is not on PyPI.  Fetch ``util_calibration.py`` of
github.com/zhang64-llnl/Mix-n-Match-Calibration (commit d0dbd5a6370636c4e632ba033e9d1eabcbd13a24
used) into a folder outside the repository, and run, from the repository root, in a scratch
environment with numpy==2.4.6, scipy==1.17.1 and scikit-learn==1.9.1 (the file imports
scikit-learn's isotonic regression at its top)::

    python tests/references/ensemble_mixnmatch.py --mixnmatch FOLDER [DATA]

For each set it runs what the file's ``ets_calibrate`` runs with its defaults:
``temperature_scaling(logit, label, 'mse')`` (L-BFGS-B on T from 1, bounds (0.05, 5),
tol=1e-12, finite-difference gradient), then ``ensemble_scaling(logit, label, 'mse', t,
n_class)`` (SLSQP on the three weights from (1, 0, 0), tol=1e-12), ``label`` one-hot, and
prints T, the weights and the file's own loss ``mse_w`` at them (the mean of the squared
error over the N x K entries).  The sets: ``overconfident(seed)`` below (seeds 7 and 8) and
the real ``lenet-5-cifar-10`` file, whose logits are ``log(p)`` of its float64
probabilities (it holds no zero).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import numpy as np
from _common import data_dir, load_real, versions


def overconfident(seed: int, n_samples: int = 3000, n_classes: int = 5, scale: float = 3.0):
    """The synthetic sets of test_ensemble.py's ``test_mse_matches_mixnmatch``."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n_samples)
    logits = scale * (np.eye(n_classes)[labels] + rng.normal(size=(n_samples, n_classes)))
    return logits, labels


def real_logits(folder: Path, name: str = "lenet-5-cifar-10"):
    prob, labels = load_real(folder, name)
    prob = prob.astype(np.float64)
    if (prob <= 0).any():
        raise SystemExit(f"{name} holds zero probabilities: log(p) is not finite")
    return np.log(prob), labels.astype(np.int64)


def load_mixnmatch(folder: Path):
    spec = importlib.util.spec_from_file_location(
        "util_calibration", folder / "util_calibration.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mixnmatch_fit(module, logits: np.ndarray, labels: np.ndarray):
    n_classes = logits.shape[1]
    one_hot = np.eye(n_classes)[labels]
    temperature = module.temperature_scaling(logits, one_hot, "mse")
    weights = module.ensemble_scaling(logits, one_hot, "mse", temperature, n_classes)
    plain = np.exp(logits) / np.sum(np.exp(logits), 1)[:, None]
    scaled = np.exp(logits / temperature) / np.sum(np.exp(logits / temperature), 1)[:, None]
    uniform = np.ones_like(scaled) / n_classes
    loss = module.mse_w(weights, scaled, plain, uniform, one_hot)
    return float(temperature[0]), [float(w) for w in weights], float(loss)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mixnmatch", type=Path, required=True)
    parser.add_argument("data", nargs="?")
    args = parser.parse_args()
    module = load_mixnmatch(args.mixnmatch)
    print("#", versions("numpy", "scipy", "sklearn"))
    sets = {f"seed-{seed}": overconfident(seed) for seed in (7, 8)}
    sets["lenet-5-cifar-10"] = real_logits(
        data_dir([sys.argv[0], *([args.data] if args.data else [])])
    )
    print("MIXNMATCH = {")
    for name, (logits, labels) in sets.items():
        temperature, weights, loss = mixnmatch_fit(module, logits, labels)
        print(f'    "{name}": ({temperature!r}, {weights!r}, {loss!r}),')
    print("}")


if __name__ == "__main__":
    main()
