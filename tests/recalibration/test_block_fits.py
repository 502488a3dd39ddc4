"""Temperature scaling fitted over block sources: every pass is a pass over the blocks."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import TemperatureScaling, VectorScaling, negative_log_likelihood
from calibration_toolbox.io import iter_predictions


def _problem(n=5000, k=5, temperature=2.0, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = (3.0 * np.eye(k)[labels] + rng.normal(size=(n, k))) * temperature
    return logits.astype(dtype), labels, rng.uniform(0, 2, n)


def _blocks(*arrays, size=700):
    return [tuple(array[i : i + size] for array in arrays) for i in range(0, len(arrays[0]), size)]


@pytest.mark.parametrize("temperature", [0.5, 4.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_block_fit_equals_the_in_memory_fit(temperature, dtype):
    logits, labels, weights = _problem(temperature=temperature, dtype=dtype)
    for use_weights in (False, True):
        arrays = (logits, labels, weights) if use_weights else (logits, labels)
        expected = TemperatureScaling().fit(*arrays)
        blocks = _blocks(*arrays)
        for source in (blocks, lambda blocks=blocks: iter(blocks)):
            fitted = TemperatureScaling().fit_blocks(source)
            assert_allclose(fitted.temperature_, expected.temperature_, rtol=1e-10)
            assert fitted.n_classes_ == 5
            assert fitted.n_passes_ <= expected.n_passes_ + 2


def test_block_fit_of_a_memory_mapped_file(tmp_path):
    logits, labels, _ = _problem(n=3000, dtype=np.float32)
    np.save(tmp_path / "logits.npy", logits)
    np.save(tmp_path / "labels.npy", labels)
    fitted = TemperatureScaling().fit_blocks(
        lambda: iter_predictions(
            tmp_path / "logits.npy", labels_path=tmp_path / "labels.npy", block_rows=1000
        )
    )
    expected = TemperatureScaling().fit(logits, labels).temperature_
    assert_allclose(fitted.temperature_, expected, rtol=1e-10)


def test_sources_that_cannot_restart_are_refused():
    logits, labels, _ = _problem(n=1000)
    blocks = _blocks(logits, labels)
    with pytest.raises(TypeError, match=r"`source` is a one-shot iterator.*callable"):
        TemperatureScaling().fit_blocks(block for block in blocks)
    with pytest.raises(TypeError, match=r"`source` must be a callable.*got int"):
        TemperatureScaling().fit_blocks(3)
    once = iter(blocks)
    with pytest.raises(ValueError, match=r"`source` yielded (0|no) rows"):
        TemperatureScaling().fit_blocks(lambda: once)


def test_each_block_is_checked_as_fit_checks_its_arrays():
    logits, labels, weights = _problem(n=400)
    bad = logits.copy()
    bad[250, 1] = np.nan
    with pytest.raises(
        ValueError, match=r"in rows 200 to 299 of `source`: `X` must be finite; row 50"
    ):
        TemperatureScaling().fit_blocks(_blocks(bad, labels, size=100))
    wrong = labels.copy()
    wrong[120] = 7
    with pytest.raises(
        ValueError, match=r"in rows 100 to 199 of `source`: `y` must lie in \[0, 4\]"
    ):
        TemperatureScaling().fit_blocks(_blocks(logits, wrong, size=100))
    mixed = [(logits[:100], labels[:100]), (logits[100:, :3], labels[100:] % 3)]
    with pytest.raises(ValueError, match=r"in rows 100 to 399.*has 3 classes where the blocks"):
        TemperatureScaling().fit_blocks(mixed)
    with pytest.raises(TypeError, match=r"block 1 of `source` must be a tuple"):
        TemperatureScaling().fit_blocks([(logits, labels), [logits, labels]])
    negative = weights.copy()
    negative[399] = -1
    with pytest.raises(ValueError, match=r"in rows 300 to 399.*`sample_weight` must be non-neg"):
        TemperatureScaling().fit_blocks(_blocks(logits, labels, negative, size=100))


def test_blocks_of_zero_weight_add_nothing():
    logits, labels, weights = _problem(n=1000)
    weights[:300] = 0
    expected = TemperatureScaling().fit(logits, labels, weights).temperature_
    fitted = TemperatureScaling().fit_blocks(_blocks(logits, labels, weights, size=100))
    assert_allclose(fitted.temperature_, expected, rtol=1e-10)
    with pytest.raises(ValueError, match="`sample_weight` must have a positive sum"):
        TemperatureScaling().fit_blocks(_blocks(logits, labels, 0 * weights, size=100))


def test_vector_scaling_from_blocks_reaches_the_in_memory_optimum():
    logits, labels, weights = _problem(n=3000, k=4)
    logits += [0.0, 1.0, 2.0, 3.0]
    expected = VectorScaling().fit(logits, labels, weights)
    fitted = VectorScaling().fit_blocks(_blocks(logits, labels, weights))
    # Both fits end with Newton steps on the exact gradient and Hessian (each pass one
    # pass over the blocks), so they reach the same optimum to rounding (measured: 4.7e-13;
    # 3e-7 in b before the Newton polish, as the in-memory fit of shuffled rows).
    assert_allclose(fitted.coef_, expected.coef_, rtol=0, atol=1e-10)
    assert_allclose(fitted.intercept_, expected.intercept_, rtol=0, atol=1e-10)
    loss = negative_log_likelihood(fitted.predict_proba(logits), labels, sample_weight=weights)
    best = negative_log_likelihood(expected.predict_proba(logits), labels, sample_weight=weights)
    assert_allclose(loss, best, rtol=1e-12)
    with pytest.raises(ValueError, match=r"`X` has 4 classes but `num_classes` is 3"):
        VectorScaling(num_classes=3).fit_blocks(_blocks(logits, labels))
    wrong = labels.copy()
    wrong[900] = 7
    with pytest.raises(ValueError, match=r"in rows 700 to 1399 of `source`: `y` must lie"):
        VectorScaling().fit_blocks(_blocks(logits, wrong))


def test_block_fits_of_tied_logits_and_of_an_infinite_optimum():
    tied, labels = np.zeros((3000, 4)), np.arange(3000) % 4
    with pytest.warns(UserWarning, match="tied within every calibration row"):
        fitted = TemperatureScaling().fit_blocks(_blocks(tied, labels))
    assert fitted.temperature_ == 1.0
    flat, halves = np.array([[0.6, 0.4]] * 3000), np.arange(3000) % 2
    # f'(0) = 0 up to the rounding of 3,000 rows' sums: T -> inf or a T beyond 1e15.
    with pytest.warns(UserWarning, match=r"T is set to (the upper bound )?10000"):
        fitted = TemperatureScaling().fit_blocks(_blocks(flat, halves))
    assert fitted.temperature_ == 1e4
    assert np.isfinite(fitted.predict_proba(flat)).all()
