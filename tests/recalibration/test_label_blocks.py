"""``TemperatureScaling(multilabel=True).fit_blocks``: one T per label from blocks of rows.

Every pass of the per-label fit is one pass over the blocks, each checked as ``fit`` checks
its arguments; the temperatures are those of ``fit`` on the concatenated rows (compared at
rtol 1e-12; the sums differ only in the order of their additions), and the loop oracle
(brentq on a Python-summed gradient, ``test_label_temperatures.oracle_temperature``).
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import TemperatureScaling
from calibration_toolbox.recalibration import temperature
from tests.recalibration.test_label_temperatures import oracle_temperature, problem


def _blocks(z, y, w=None, size=700):
    return [
        (z[i : i + size], y[i : i + size])
        if w is None
        else (z[i : i + size], y[i : i + size], w[i : i + size])
        for i in range(0, len(z), size)
    ]


@pytest.mark.parametrize("weighted", [False, True])
def test_blocks_equal_the_in_memory_fit_and_the_oracle(weighted):
    z, y, _ = problem(n=3000, k=5)
    w = None
    if weighted:
        w = np.random.default_rng(4).uniform(0.1, 2.0, size=len(z))
        w[700:1400] = 0.0  # a block of weight 0 adds nothing
    memory = TemperatureScaling(multilabel=True).fit(z, y, w)
    blocks = TemperatureScaling(multilabel=True).fit_blocks(_blocks(z, y, w))
    assert_allclose(blocks.temperature_, memory.temperature_, rtol=1e-12)
    weights = np.ones(len(z)) if w is None else w
    oracle = [oracle_temperature(z[:, k], y[:, k], weights) for k in range(z.shape[1])]
    assert_allclose(blocks.temperature_, oracle, rtol=1e-9)
    assert blocks.n_classes_ == 5 and blocks.n_passes_ == memory.n_passes_
    assert_allclose(blocks.predict_proba(z[:5]), memory.predict_proba(z[:5]), rtol=1e-12)


def test_a_callable_source_and_the_column_fallback(monkeypatch):
    z, y, _ = problem(n=2000, k=3, seed=2)
    memory = TemperatureScaling(multilabel=True).fit(z, y)
    monkeypatch.setattr(temperature, "_halley_roots", lambda o, b, inside: np.full(len(b), np.nan))
    blocks = TemperatureScaling(multilabel=True).fit_blocks(lambda: iter(_blocks(z, y, size=300)))
    assert_allclose(blocks.temperature_, memory.temperature_, rtol=1e-12)


def test_a_block_error_names_its_rows():
    z, y, _ = problem(n=1000, k=3)
    bad = y.copy()
    bad[750, 1] = 2
    with pytest.raises(ValueError, match=r"in rows 700 to 999 of `source`: .*only 0 and 1"):
        TemperatureScaling(multilabel=True).fit_blocks(_blocks(z, bad))
    with pytest.raises(ValueError, match=r"has 2 labels where the blocks before have 3"):
        TemperatureScaling(multilabel=True).fit_blocks([(z, y), (z[:, :2], y[:, :2])])
    with pytest.raises(ValueError, match=r"got shape \(1000,\), one class per row"):
        TemperatureScaling(multilabel=True).fit_blocks([(z, y[:, 0])])


def test_refusals_of_the_whole_source():
    z, y, _ = problem(n=100, k=3)
    with pytest.raises(ValueError, match=r"one label"):
        TemperatureScaling(multilabel=True).fit_blocks([(z[:, :1], y[:, :1])])
    with pytest.raises(ValueError, match=r"yielded no rows"):
        TemperatureScaling(multilabel=True).fit_blocks([])
    with pytest.raises(ValueError, match=r"positive sum"):
        TemperatureScaling(multilabel=True).fit_blocks([(z, y, np.zeros(len(z)))])
    with pytest.raises(TypeError, match=r"one-shot iterator"):
        TemperatureScaling(multilabel=True).fit_blocks(iter([(z, y)]))


def test_the_blocks_are_not_mutated():
    z, y, _ = problem(n=500, k=3)
    blocks = _blocks(z.copy(), y.copy(), size=200)
    TemperatureScaling(multilabel=True).fit_blocks(blocks)
    for (zb, yb), start in zip(blocks, range(0, 500, 200), strict=True):
        np.testing.assert_array_equal(zb, z[start : start + 200])
        np.testing.assert_array_equal(yb, y[start : start + 200])


# -- Dask arrays chunked along rows ---------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
def test_dask_equals_the_in_memory_fit(weighted):
    da = pytest.importorskip("dask.array")
    z, y, _ = problem(n=3000, k=4, seed=5)
    w = None
    if weighted:
        w = np.random.default_rng(6).uniform(0.1, 2.0, size=len(z))
        w[:600] = 0.0  # a chunk of weight 0 adds nothing
    memory = TemperatureScaling(multilabel=True).fit(z, y, w)
    dask_w = None if w is None else da.from_array(w, chunks=900)
    fitted = TemperatureScaling(multilabel=True).fit(
        da.from_array(z, chunks=(600, 4)), da.from_array(y, chunks=(450, 4)), dask_w
    )
    assert_allclose(fitted.temperature_, memory.temperature_, rtol=1e-12)
    assert fitted.n_passes_ == memory.n_passes_
    lazy = fitted.predict_proba(da.from_array(z, chunks=(600, 4))).compute()
    assert_allclose(lazy, memory.predict_proba(z), rtol=1e-12)


def test_dask_column_fallback_and_refusals(monkeypatch):
    da = pytest.importorskip("dask.array")
    z, y, _ = problem(n=1200, k=3, seed=7)
    memory = TemperatureScaling(multilabel=True).fit(z, y)
    monkeypatch.setattr(temperature, "_halley_roots", lambda o, b, inside: np.full(len(b), np.nan))
    fitted = TemperatureScaling(multilabel=True).fit(da.from_array(z, chunks=(500, 3)), y)
    assert_allclose(fitted.temperature_, memory.temperature_, rtol=1e-12)
    bad = y.copy()
    bad[1100, 0] = 3
    with pytest.raises(ValueError, match=r"rows 1000 to 1199.*only 0 and 1"):
        TemperatureScaling(multilabel=True).fit(da.from_array(z, chunks=(500, 3)), bad)
    with pytest.raises(ValueError, match=r"chunked along rows only"):
        TemperatureScaling(multilabel=True).fit(da.from_array(z, chunks=(500, 1)), y)
    with pytest.raises(ValueError, match=r"one label"):
        TemperatureScaling(multilabel=True).fit(da.from_array(z[:, :1], chunks=500), y[:, :1])
