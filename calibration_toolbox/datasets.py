"""The embedded example and synthetic predictions whose calibration is known.

Nothing is downloaded or read from disk: the example is generated from a fixed seed, so
``calibration-toolbox report`` runs anywhere with no file at all.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray
from scipy.special import softmax

__all__ = ["Example", "load_example", "make_overconfident"]


class Example(NamedTuple):
    """Saved predictions of a classifier, split into a calibration and a test half."""

    logits: NDArray
    labels: NDArray
    calibration_rows: NDArray
    test_rows: NDArray
    true_temperature: float

    @property
    def prob(self) -> NDArray:
        """Softmax of the logits."""
        return softmax(self.logits, axis=1)


def make_overconfident(
    n_samples: int = 5000,
    n_classes: int = 10,
    temperature: float = 2.0,
    *,
    seed: int = 0,
) -> tuple[NDArray, NDArray]:
    """Logits of a classifier that is overconfident by a known temperature.

    Latent logits ``u`` are drawn per sample, labels are drawn from ``softmax(u)`` (so
    ``softmax(u)`` is perfectly calibrated), and the returned logits are
    ``temperature * u``: temperature scaling with ``T = temperature`` recovers calibrated
    probabilities, up to sampling noise.

    Examples
    --------
    >>> from calibration_toolbox.datasets import make_overconfident
    >>> logits, labels = make_overconfident(1000, 5, temperature=3.0, seed=1)
    >>> logits.shape, labels.shape
    ((1000, 5), (1000,))
    """
    rng = np.random.default_rng(seed)
    centres = rng.integers(0, n_classes, n_samples)
    latent = rng.normal(size=(n_samples, n_classes)) + 2.5 * np.eye(n_classes)[centres]
    prob = softmax(latent, axis=1)
    # inverse-CDF sampling of one label per row from its own distribution
    draws = rng.uniform(size=(n_samples, 1))
    labels = np.minimum((prob.cumsum(axis=1) < draws).sum(axis=1), n_classes - 1)
    return temperature * latent, labels


def load_example() -> Example:
    """The embedded example: 10,000 predictions over 10 classes, overconfident by T = 2.

    Examples
    --------
    >>> from calibration_toolbox.datasets import load_example
    >>> example = load_example()
    >>> example.logits.shape, len(example.calibration_rows), len(example.test_rows)
    ((10000, 10), 5000, 5000)
    """
    logits, labels = make_overconfident(10_000, 10, temperature=2.0, seed=2019)
    order = np.random.default_rng(7).permutation(len(labels))
    return Example(logits, labels, np.sort(order[:5000]), np.sort(order[5000:]), 2.0)
