"""Shared fixtures: seeded generators, the real saved predictions, hypothesis profiles."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

# The scripts that made the stored peer values (tests/references/) also define the problems
# they were computed on; tests import those from them (the scripts import peers only inside
# their main()).
sys.path.insert(0, str(Path(__file__).resolve().parent / "references"))
from hypothesis import HealthCheck, settings

# Deterministic by default so CI is reproducible; HYPOTHESIS_PROFILE=explore searches more.
settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("explore", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# ../shared/data beside the checkout (CI lays a copy of shared/ there); override with
# CALIBRATION_TOOLBOX_DATA.
DATA_DIR = Path(
    os.environ.get(
        "CALIBRATION_TOOLBOX_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"
    )
)

REAL_FILES = {
    "lenet-5-cifar-10": ("predictions", "ground_truth"),
    "wideresnet-16-4-cifar-10": ("predictions", "ground_truth"),
    "lenet-5-cifar-100": ("predictions", "ground_truth"),
    "wideresnet-16-4-cifar-100": ("predictions", "ground_truth"),
    "densenet-bc-100-cifar-100": ("predictions", "ground_truth"),
    "vgg16-cifar-10": ("probs_test", "y_test"),
}


def load_real(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(float32 probabilities, int64 labels) of one shared file; skips when absent."""
    path = DATA_DIR / f"{name}.npz"
    if not path.exists():
        pytest.skip(f"real predictions not found at {path}")
    prob_key, label_key = REAL_FILES[name]
    with np.load(path, allow_pickle=False) as data:
        return data[prob_key], data[label_key]


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261130)


@pytest.fixture(params=sorted(REAL_FILES))
def real_predictions(request) -> tuple[str, np.ndarray, np.ndarray]:
    prob, labels = load_real(request.param)
    return request.param, prob, labels


def synthetic_example():
    """10,000 x 10 logits overconfident by T = 2, split into two seeded halves.

    The data of the command-line tests: they need a known, well-behaved model, not the
    bundled real example (its few hundred near-separable rows make the linear maps warn).
    """
    from calibration_toolbox.datasets import Example, make_overconfident

    logits, labels = make_overconfident(10_000, 10, temperature=2.0, seed=2019)
    order = np.random.default_rng(7).permutation(len(labels))
    return Example(logits, labels, np.sort(order[:5000]), np.sort(order[5000:]), 2.0)


@pytest.fixture(scope="session")
def cluster_client():
    """A dask.distributed LocalCluster of two worker processes, one per session (slow to start)."""
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster, set_as_default=False) as client,
    ):
        yield client
