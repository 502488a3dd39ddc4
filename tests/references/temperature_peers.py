"""Temperature scaling peers: the literals of test_temperature_matches_peers (test_temperature.py).

Run from the repository root in the peers environment of tests/references/requirements.txt::

    python tests/references/temperature_peers.py

On the test's ``synthetic()`` problem (seed 2024, 600 rows, 4 classes; copied below):

* torch: LBFGS on log T from 0 (lr=1, max_iter=100, tolerance_grad=1e-14,
  tolerance_change=1e-16, the strong-Wolfe line search), one step minimising
  torch.nn.functional.cross_entropy(z / T, y) in float64: prints T. (torch's default
  tolerance_change=1e-9 stops 2e-5 short; with 1e-16 it lands 1e-13 from the exact optimum.)
* netcal: netcal.scaling.TemperatureScaling(detection=False).fit(softmax(z), y) (its default
  method "mle", scipy.optimize.minimize on 1 / T with its own stopping rule): prints its
  ``weights``, which are 1 / T.
"""

from __future__ import annotations

import warnings

import numpy as np
from _common import versions
from scipy.special import softmax


def synthetic(seed=2024, n=600, k=4, scale=2.5):
    """The problem of tests/test_temperature.py's ``synthetic()``."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = scale * (1.5 * np.eye(k)[labels] + rng.normal(size=(n, k)))
    return logits, labels


def torch_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    import torch

    z = torch.from_numpy(logits)
    y = torch.from_numpy(labels)
    log_t = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS(
        [log_t],
        lr=1.0,
        max_iter=100,
        tolerance_grad=1e-14,
        tolerance_change=1e-16,
        line_search_fn="strong_wolfe",
    )

    def closure():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(z / torch.exp(log_t), y)
        loss.backward()
        return loss

    optimizer.step(closure)
    return float(torch.exp(log_t).detach())


def netcal_weights(logits: np.ndarray, labels: np.ndarray) -> list[float]:
    from netcal.scaling import TemperatureScaling

    model = TemperatureScaling(detection=False).fit(softmax(logits, axis=1), labels)
    return [float(w) for w in np.ravel(model.weights)]


def main() -> None:
    logits, labels = synthetic()
    print(f"# {versions('numpy', 'scipy', 'torch', 'netcal')}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        print(f"torch LBFGS:  T = {torch_temperature(logits, labels)!r}")
        print(f"netcal 'mle': weights = {netcal_weights(logits, labels)!r}")


if __name__ == "__main__":
    main()
