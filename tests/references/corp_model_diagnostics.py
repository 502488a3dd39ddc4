"""Peer references for ``corp_decomposition``: ``model-diagnostics`` 1.5.0's ``decompose``.

Prints the literal ``MODEL_DIAGNOSTICS`` of ``tests/metrics/test_corp.py``.  Rerun from the
repository root in a scratch environment (Python 3.11)::

    python3.11 -m venv corp-venv
    corp-venv/bin/pip install model-diagnostics==1.5.0
    corp-venv/bin/python tests/references/corp_model_diagnostics.py [DATA]

Versions of the stored run: python 3.11, numpy 2.4.6, scipy 1.17.1, model-diagnostics 1.5.0,
polars 2.1.0, scikit-learn 1.9.1 (which model-diagnostics' isotonic fit of the mean is).

For each data set, with ``f`` the forecasts (float64) and ``y`` the 0/1 outcomes (float64):
``model_diagnostics.scoring.decompose(y, f, weights, scoring_function=S)`` for
``S = SquaredError()`` (the single-probability Brier score, our ``score='brier'``) and
``S = LogLoss()`` (``y log(y/f) + (1-y) log((1-y)/(1-f))``, the log score for 0/1 outcomes,
our ``score='log'``); each value is ``(score, miscalibration, discrimination, uncertainty)``.

Data sets (:func:`synthetic_sets`, all seeded; the test imports it):

- ``calibrated``: 3,000 forecasts uniform on (0, 1), outcome drawn with probability the
  forecast (``default_rng(201)``);
- ``overconfident``: 3,000 forecasts uniform on (0.5, 1), outcome with probability
  ``0.5 + 0.6 (f - 0.5)`` (``default_rng(202)``);
- ``ties``: 2,000 forecasts from 11 values ``0.05, 0.14, ..., 0.95`` (many ties), outcome
  with probability ``f**2`` (``default_rng(203)``);
- ``weighted``: 1,000 forecasts Beta(2, 5), outcome with probability ``sqrt(f)``, weights
  uniform on (0, 3) (``default_rng(204)``);
- the six real files (top-label confidence, float32 cast to float64, and whether the
  first-index argmax is the label).
"""

from __future__ import annotations

import numpy as np
from smooth_ece_peers import top_label_pairs

REAL = (
    "lenet-5-cifar-10",
    "wideresnet-16-4-cifar-10",
    "vgg16-cifar-10",
    "lenet-5-cifar-100",
    "wideresnet-16-4-cifar-100",
    "densenet-bc-100-cifar-100",
)


def synthetic_sets() -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]]:
    """The seeded (forecasts float64, outcomes int64, weights or None) sets, by name."""
    sets = {}
    rng = np.random.default_rng(201)
    forecasts = rng.random(3_000)
    sets["calibrated"] = forecasts, (rng.random(3_000) < forecasts).astype(np.int64), None
    rng = np.random.default_rng(202)
    forecasts = rng.uniform(0.5, 1.0, 3_000)
    rate = 0.5 + 0.6 * (forecasts - 0.5)
    sets["overconfident"] = forecasts, (rng.random(3_000) < rate).astype(np.int64), None
    rng = np.random.default_rng(203)
    forecasts = rng.choice(np.linspace(0.05, 0.95, 11), size=2_000)
    sets["ties"] = forecasts, (rng.random(2_000) < forecasts**2).astype(np.int64), None
    rng = np.random.default_rng(204)
    forecasts = rng.beta(2.0, 5.0, 1_000)
    outcomes = (rng.random(1_000) < np.sqrt(forecasts)).astype(np.int64)
    sets["weighted"] = forecasts, outcomes, rng.uniform(0.0, 3.0, 1_000)
    return sets


def main() -> None:
    from importlib.metadata import version

    from _common import data_dir, load_real, versions
    from model_diagnostics.scoring import LogLoss, SquaredError, decompose

    sets = synthetic_sets()
    folder = data_dir()
    for name in REAL:
        sets[name] = (*top_label_pairs(*load_real(folder, name)), None)
    pins = ", ".join(f"{name} {version(name)}" for name in ("model-diagnostics", "polars"))
    print("#", versions("numpy", "scipy", "sklearn") + ", " + pins)
    print("MODEL_DIAGNOSTICS = {")
    for name, (forecasts, outcomes, weights) in sets.items():
        for rule, scoring in (("brier", SquaredError()), ("log", LogLoss())):
            with np.errstate(divide="ignore", invalid="ignore"):
                frame = decompose(
                    outcomes.astype(np.float64), forecasts, weights, scoring_function=scoring
                )
            row = frame.row(0, named=True)
            values = tuple(
                float(row[key])
                for key in ("score", "miscalibration", "discrimination", "uncertainty")
            )
            print(f'    ("{name}", "{rule}"): {values!r},')
    print("}")


if __name__ == "__main__":
    main()
