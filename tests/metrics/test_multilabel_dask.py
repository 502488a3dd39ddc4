"""Multi-label measures on Dask arrays chunked along rows: the in-memory values."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit

from calibration_toolbox import (
    multilabel_brier_score,
    multilabel_calibration_error,
    multilabel_calibration_table,
    multilabel_log_loss,
)

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")


@pytest.fixture(autouse=True)
def synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def problem(n=5000, k=4, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, k)) * 2
    labels = (rng.random((n, k)) < expit(0.7 * logits)).astype(np.uint8)
    weights = rng.random(n) * 2
    weights[1200:2100] = 0  # a chunk of zero weight adds nothing
    return logits, labels, weights


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("logits", [False, True])
def test_dask_equals_memory(weighted, logits):
    z, labels, weights = problem()
    values = z if logits else expit(z)
    w = weights if weighted else None
    lazy = da.from_array(values, chunks=(900, -1))
    lazy_labels = da.from_array(labels, chunks=(700, 2))  # rechunked to the rows of lazy
    lazy_w = None if w is None else da.from_array(w, chunks=900)
    table = multilabel_calibration_table(values, labels, logits=logits, sample_weight=w)
    on_dask = multilabel_calibration_table(lazy, lazy_labels, logits=logits, sample_weight=lazy_w)
    if w is None:  # integer counts: exactly
        assert_array_equal(on_dask.counts, table.counts)
    for name in ("counts", "score_sums", "target_sums"):
        assert_allclose(getattr(on_dask, name), getattr(table, name), rtol=1e-12, atol=1e-12)
    for average in ("macro", "micro"):
        expected = multilabel_calibration_error(
            values, labels, average=average, logits=logits, sample_weight=w
        )
        got = multilabel_calibration_error(
            lazy, lazy_labels, average=average, logits=logits, sample_weight=lazy_w
        )
        assert_allclose(got, expected, rtol=1e-12)
    for measure in (multilabel_brier_score, multilabel_log_loss):
        expected = measure(values, labels, logits=logits, sample_weight=w)
        got = measure(lazy, labels, logits=logits, sample_weight=w)
        assert_allclose(got, expected, rtol=1e-12)


def test_an_error_in_a_chunk_names_its_rows():
    z, labels, _ = problem()
    labels = labels.copy()
    labels[3000, 1] = 2
    with pytest.raises(
        ValueError, match=r"in rows .* of the Dask arrays.*`labels` must hold only 0"
    ):
        multilabel_brier_score(da.from_array(expit(z), chunks=(900, -1)), labels)


def test_chunks_along_the_labels_are_refused():
    z, labels, _ = problem()
    with pytest.raises(ValueError, match="chunked along rows only"):
        multilabel_calibration_error(da.from_array(expit(z), chunks=(900, 2)), labels)
