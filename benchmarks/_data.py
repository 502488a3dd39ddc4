"""The synthetic predictions the benchmarks share (seeded, so every run times the same data)."""

from __future__ import annotations

import numpy as np


def make_binary(n_samples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Uniform float64 scores ``s`` and int64 labels drawn with ``P(y = 1) = s**2``."""
    rng = np.random.default_rng(seed)
    scores = rng.random(n_samples)
    return scores, (rng.random(n_samples) < scores**2).astype(np.int64)


def make_multiclass(
    n_samples: int, n_classes: int = 10, seed: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """float32 softmax probabilities of normal logits times 3, and uniform random labels."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n_samples, n_classes)).astype(np.float32) * 3
    prob = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    return prob, rng.integers(0, n_classes, n_samples)
