"""Temperature scaling fitted from Dask arrays: one reduction per pass, equal to NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from calibration_toolbox import (
    NotFittedError,
    TemperatureScaling,
    VectorScaling,
    negative_log_likelihood,
)

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")
from dask.callbacks import Callback  # noqa: E402


def _problem(n=4000, k=5, temperature=2.0, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = (3.0 * np.eye(k)[labels] + rng.normal(size=(n, k))) * temperature
    return logits.astype(dtype), labels, rng.uniform(0, 2, n)


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


class _Computes(Callback):
    """Counts the graphs computed (each a dask.compute call)."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def _start(self, dsk):
        self.count += 1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_temperature_fit_on_dask_arrays_equals_numpy(dtype):
    logits, labels, weights = _problem(dtype=dtype)
    lazy = da.from_array(logits, chunks=(700, -1))
    for weighted in (False, True):
        w = weights if weighted else None
        expected = TemperatureScaling().fit(logits, labels, w)
        for y, sample_weight in ((labels, w), (da.from_array(labels, chunks=500), w)):
            with _Computes() as computes:
                fitted = TemperatureScaling().fit(lazy, y, sample_weight)
            assert_allclose(fitted.temperature_, expected.temperature_, rtol=1e-10)
            # The warm start on the first chunk, then one reduction per pass.
            assert computes.count == 1 + fitted.n_passes_
            assert fitted.n_passes_ <= expected.n_passes_ + 2
    margin, positive = logits[:, 1] - logits[:, 0], labels == 1  # one logit per row
    binary = TemperatureScaling().fit(da.from_array(margin, chunks=700), positive)
    expected = TemperatureScaling().fit(margin, positive)
    assert_allclose(binary.temperature_, expected.temperature_, rtol=1e-10)


def test_predictions_of_a_dask_array_are_lazy_dask_arrays():
    logits, labels, _ = _problem(n=1000, dtype=np.float32)
    fitted = TemperatureScaling().fit(logits, labels)
    lazy = da.from_array(logits, chunks=(300, -1))
    for method in ("__call__", "predict_proba", "predict"):
        with _Computes() as computes:
            result = getattr(fitted, method)(lazy)
        assert computes.count == 0
        assert isinstance(result, da.Array)
        expected = getattr(fitted, method)(logits)
        assert result.dtype == expected.dtype
        assert_array_equal(result.compute(), expected)
    margin = logits[:, 1] - logits[:, 0]
    binary = TemperatureScaling().fit(margin, labels == 1)
    probs = binary.predict_proba(da.from_array(margin, chunks=300))
    assert probs.shape == (1000, 2)
    assert_array_equal(probs.compute(), binary.predict_proba(margin))
    with pytest.raises(NotFittedError, match="not fitted"):
        TemperatureScaling().predict_proba(lazy)
    with pytest.raises(ValueError, match="`X` has 3 classes but this TemperatureScaling"):
        fitted(lazy[:, :3])


def test_dask_fit_errors_name_the_chunk_and_zero_weight_chunks_add_nothing():
    logits, labels, weights = _problem(n=400)
    bad = logits.copy()
    bad[250, 1] = np.inf
    message = r"in rows 200 to 299 \(one chunk of the Dask arrays\): `X` must be finite; row 50"
    with pytest.raises(ValueError, match=message):
        TemperatureScaling().fit(da.from_array(bad, chunks=(100, -1)), labels)
    lazy = da.from_array(logits, chunks=(100, -1))
    with pytest.raises(ValueError, match=r"`y` must have one entry per row.*\(400\)"):
        TemperatureScaling().fit(lazy, labels[:-1])
    with pytest.raises(ValueError, match=r"`X` must be chunked along rows only"):
        TemperatureScaling().fit(da.from_array(logits, chunks=(100, 2)), labels)
    weights[:150] = 0
    expected = TemperatureScaling().fit(logits, labels, weights).temperature_
    fitted = TemperatureScaling().fit(lazy, labels, weights)
    assert_allclose(fitted.temperature_, expected, rtol=1e-10)
    with pytest.raises(ValueError, match="`sample_weight` must have a positive sum"):
        TemperatureScaling().fit(lazy, labels, np.zeros(400))


def test_temperature_fit_on_a_local_cluster(cluster_client):
    # Made in the workers: only sums and the warm start travel to the client.
    rng = da.random.default_rng(11)
    n, k = 40_000, 6
    labels = rng.integers(0, k, size=n, chunks=10_000)
    noise = rng.normal(size=(n, k), chunks=(10_000, k))
    logits = (2.0 * (3.0 * da.eye(k, chunks=k)[labels] + noise)).astype(np.float32)
    with dask.config.set(scheduler=cluster_client.get):
        fitted = TemperatureScaling().fit(logits, labels)
        probs = fitted.predict_proba(logits)[:5].compute()
    local_logits, local_labels = dask.compute(logits, labels, scheduler="threads")
    expected = TemperatureScaling().fit(local_logits, local_labels)
    assert_allclose(fitted.temperature_, expected.temperature_, rtol=1e-10)
    assert_allclose(probs, expected.predict_proba(local_logits[:5]), rtol=1e-6)


def test_vector_scaling_fit_on_a_local_cluster(cluster_client):
    # Every pass, the Newton polish's Hessian passes included, is reduced in the workers
    # (measured: 1.0e-12 from the in-memory fit; 1.5e-7 before the polish).
    rng = da.random.default_rng(12)
    n, k = 20_000, 6
    labels = rng.integers(0, k, size=n, chunks=10_000)
    noise = rng.normal(size=(n, k), chunks=(10_000, k))
    logits = 2.0 * (3.0 * da.eye(k, chunks=k)[labels] + noise) + da.arange(k, chunks=k)
    # Kept in the workers' memory: the passes do not regenerate them.
    logits, labels = cluster_client.persist([logits, labels])
    with dask.config.set(scheduler=cluster_client.get):
        fitted = VectorScaling().fit(logits, labels)
        local_logits, local_labels = dask.compute(logits, labels)
    expected = VectorScaling().fit(local_logits, local_labels)
    assert_allclose(fitted.coef_, expected.coef_, rtol=0, atol=1e-10)
    assert_allclose(fitted.intercept_, expected.intercept_, rtol=0, atol=1e-10)


def test_vector_scaling_on_dask_arrays_reaches_the_in_memory_optimum():
    logits, labels, weights = _problem(n=3000, k=4)
    logits += [0.0, 1.0, 2.0, 3.0]
    expected = VectorScaling().fit(logits, labels, weights)
    lazy = da.from_array(logits, chunks=(700, -1))
    with _Computes() as computes:
        fitted = VectorScaling().fit(lazy, labels, weights)
    assert computes.count == 1 + fitted.n_passes_  # the class weights, then one per pass
    # The same optimum to rounding (see test_block_fits; measured: 5.1e-13).
    assert_allclose(fitted.coef_, expected.coef_, rtol=0, atol=1e-10)
    assert_allclose(fitted.intercept_, expected.intercept_, rtol=0, atol=1e-10)
    probs = fitted.predict_proba(lazy)
    assert isinstance(probs, da.Array)
    loss = negative_log_likelihood(probs.compute(), labels, sample_weight=weights)
    best = negative_log_likelihood(expected.predict_proba(logits), labels, sample_weight=weights)
    assert_allclose(loss, best, rtol=1e-12)


def test_dask_fits_of_tied_logits_and_of_an_infinite_optimum():
    tied, labels = np.zeros((3000, 4)), np.arange(3000) % 4
    with pytest.warns(UserWarning, match="tied within every calibration row"):
        fitted = TemperatureScaling().fit(da.from_array(tied, chunks=(700, -1)), labels)
    assert fitted.temperature_ == 1.0
    flat, halves = np.array([[0.6, 0.4]] * 3000), np.arange(3000) % 2
    # f'(0) = 0 up to the rounding of 3,000 rows' sums: T -> inf or a T beyond 1e15.
    with pytest.warns(UserWarning, match=r"T is set to (the upper bound )?10000"):
        fitted = TemperatureScaling().fit(da.from_array(flat, chunks=(700, -1)), halves)
    assert fitted.temperature_ == 1e4
    assert np.isfinite(fitted.predict_proba(flat)).all()
