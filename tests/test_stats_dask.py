"""stats.bootstrap and stats.paired_bootstrap on Dask arrays: one pass, then NumPy's resampling.

The tabulated metrics' entry cells are gathered block by block in one ``dask.compute`` and
resampled in memory: for the same ``random_state`` every field of the result equals that of
the NumPy input to the last bit, at any chunking and canonical block size.
"""

from __future__ import annotations

import contextlib
import functools
from unittest import mock

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy.special import softmax

from calibration_toolbox import (
    ACE,
    ECE,
    GCE,
    MCE,
    RMSCE,
    SCE,
    Scores,
    ToprCE,
    _dask,
    _registry,
    _rows,
    brier_score,
    expected_calibration_error,
)
from calibration_toolbox.stats import bootstrap, paired_bootstrap
from tests.conftest import load_real

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

# Every metric whose bootstrap is tabulated, as it is called (the required options bound).
TABULATED = {
    "ECE": ECE,
    "RMSCE": RMSCE,
    "MCE": MCE,
    "SCE": SCE,
    "ToprCE": functools.partial(ToprCE, r=2),
    "expected_calibration_error": expected_calibration_error,
    "GCE": functools.partial(GCE, bins=7, top_k_classes="all", norm=2),
    "SCE-5": functools.partial(SCE, bins=5),
}


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


def _small_blocks(elements):
    """Canonical row blocks of ``elements // K`` rows (scan blocks a third as large)."""
    patches = contextlib.ExitStack()
    patches.enter_context(mock.patch.object(_rows, "CANONICAL_BLOCK_ELEMENTS", elements))
    patches.enter_context(mock.patch.object(_rows, "CACHE_BLOCK_ELEMENTS", max(1, elements // 3)))
    return patches


def _two_models(n=2000, k=4, seed=0):
    rng = np.random.default_rng(seed)
    logits = 2 * rng.normal(size=(n, k))
    labels = rng.integers(0, k, n)
    other = 1.5 * logits + rng.normal(size=(n, k))
    return logits, other, labels, rng.random(n)


def _assert_same(result, expected):
    """Every field equal to the bit (NaN where NaN)."""
    for field, value in vars(expected).items():
        found = getattr(result, field)
        if isinstance(value, np.ndarray):
            assert_array_equal(found, value, err_msg=field)
        elif isinstance(value, float) and np.isnan(value):
            assert np.isnan(found), field
        else:
            assert found == value, field


def test_every_tabulated_metric_is_checked_here():
    rows = {row.name for row in _registry.tabulated_bootstrap()}
    assert rows <= set(TABULATED) and len(rows) >= 7


@pytest.mark.parametrize("name", sorted(TABULATED))
def test_paired_and_unpaired_equal_numpy_at_any_chunking(name):
    logits, other, labels, weights = _two_models()
    prob_a, prob_b = softmax(logits, axis=1), softmax(other, axis=1).astype(np.float32)
    metric = TABULATED[name]
    # One canonical block cut by every chunk edge; blocks of 200 rows with chunks of 333 and
    # 700 rows (whole blocks inside chunks, blocks cut by one or two edges); uneven chunks.
    for elements, chunks in ((1 << 22, 700), (800, 333), (800, 700), (800, (1, 999, 1000))):
        with _small_blocks(elements):
            lazy_a = da.from_array(prob_a, chunks=(chunks, -1))
            lazy_b = da.from_array(prob_b, chunks=(chunks, -1))
            for options in ({}, {"sample_weight": weights}):
                common = dict(n_resamples=40, random_state=5, **options)
                expected = paired_bootstrap(metric, prob_a, prob_b, labels, **common)
                _assert_same(paired_bootstrap(metric, lazy_a, lazy_b, labels, **common), expected)
                expected = bootstrap(metric, prob_b, labels, method="BCa", **common)
                _assert_same(bootstrap(metric, lazy_b, labels, method="BCa", **common), expected)


def test_dask_weights_labels_logits_scores_and_one_model_in_memory():
    logits, other, labels, weights = _two_models(n=1500)
    lazy_weights = da.from_array(weights, chunks=400)  # rechunked to the predictions' rows
    lazy_labels = da.from_array(labels, chunks=250)
    with _small_blocks(1200):  # blocks of 300 rows
        lazy_logits = da.from_array(logits, chunks=(520, -1))
        for method in ("percentile", "basic", "BCa"):
            common = dict(n_resamples=30, random_state=2, method=method, logits=True)
            expected = paired_bootstrap(
                ECE, logits, other, labels, sample_weight=weights, **common
            )
            found = paired_bootstrap(
                ECE, lazy_logits, other, lazy_labels, sample_weight=lazy_weights, **common
            )
            _assert_same(found, expected)
        scores, targets = softmax(logits, axis=1)[:, 0], (labels == 0).astype(int)
        lazy_scores = Scores(da.from_array(scores, chunks=700))
        common = dict(bins=10, n_resamples=30, random_state=3)
        expected = paired_bootstrap(ECE, Scores(scores), Scores(scores**2), targets, **common)
        found = paired_bootstrap(ECE, lazy_scores, Scores(scores**2), targets, **common)
        _assert_same(found, expected)
        _assert_same(
            bootstrap(RMSCE, lazy_scores, targets, **common),
            bootstrap(RMSCE, Scores(scores), targets, **common),
        )


def test_a_model_against_itself_is_exactly_zero_on_dask():
    logits, _, labels, _ = _two_models(n=600)
    lazy = da.from_array(softmax(logits, axis=1), chunks=(150, -1))
    result = paired_bootstrap(ECE, lazy, lazy, labels, n_resamples=20, random_state=0)
    assert result.difference == 0.0 and result.pvalue == 1.0
    assert tuple(result.confidence_interval) == (0.0, 0.0)
    assert not np.any(result.bootstrap_distribution)


def test_one_pass_over_the_dask_arrays_for_both_models():
    logits, other, labels, weights = _two_models(n=1200)
    reads = {"a": 0, "b": 0}

    def counted(model, block):
        reads[model] += 1
        return softmax(block, axis=1)

    lazy_a = da.from_array(logits, chunks=(300, -1)).map_blocks(functools.partial(counted, "a"))
    lazy_b = da.from_array(other, chunks=(300, -1)).map_blocks(functools.partial(counted, "b"))
    reads.update(a=0, b=0)  # map_blocks may call the function on a meta array
    computes = mock.patch.object(dask, "compute", side_effect=dask.compute)
    with computes as compute, _small_blocks(1000):  # blocks of 250 rows: chunks cut them
        result = paired_bootstrap(
            SCE, lazy_a, lazy_b, labels, sample_weight=weights, n_resamples=10, random_state=1
        )
        expected = paired_bootstrap(
            SCE,
            softmax(logits, axis=1),
            softmax(other, axis=1),
            labels,
            sample_weight=weights,
            n_resamples=10,
            random_state=1,
        )
    assert compute.call_count == 1
    assert reads == {"a": 4, "b": 4}  # each chunk of each model read once
    _assert_same(result, expected)


def test_zero_weight_chunks_and_errors():
    logits, other, labels, weights = _two_models(n=800)
    prob_a, prob_b = softmax(logits, axis=1), softmax(other, axis=1)
    weights[:200] = 0  # a whole chunk, and a whole canonical block, of weight 0
    lazy_a, lazy_b = (da.from_array(prob, chunks=(200, -1)) for prob in (prob_a, prob_b))
    common = dict(n_resamples=20, random_state=4, sample_weight=weights)
    with _small_blocks(400):
        expected = paired_bootstrap(ECE, prob_a, prob_b, labels, **common)
        _assert_same(paired_bootstrap(ECE, lazy_a, lazy_b, labels, **common), expected)
    with pytest.raises(ValueError, match="`sample_weight` must have a positive sum"):
        bootstrap(ECE, lazy_a, labels, n_resamples=3, sample_weight=np.zeros(800))
    bad = prob_b.copy()
    bad[450, 1] = np.nan
    lazy_bad = da.from_array(bad, chunks=(200, -1))
    with pytest.raises(ValueError, match=r"in rows 400 to 599 \(one chunk.*row 50 does"):
        paired_bootstrap(ECE, lazy_a, lazy_bad, labels, n_resamples=3)
    with pytest.raises(ValueError, match=r"prob_b.*got 799 rows against 800"):
        paired_bootstrap(ECE, lazy_a, lazy_b[1:], labels, n_resamples=3)
    with pytest.raises(ValueError, match=r"`prob_a`: `bins` must be an integer >= 1"):
        paired_bootstrap(ECE, prob_a, lazy_b, labels, n_resamples=3, bins=0)


def test_what_is_not_tabulated_is_refused_on_dask():
    logits, other, labels, _ = _two_models(n=400)
    lazy = da.from_array(softmax(logits, axis=1), chunks=(100, -1))
    tabulated = r"\(ECE, RMSCE, MCE, SCE, ToprCE, expected_calibration_error, GCE, with"
    for metric in (ACE, brier_score, lambda p, y, sample_weight=None: 0.0):
        with pytest.raises(TypeError, match=rf"`prob` is a Dask array.*{tabulated}.*compute"):
            bootstrap(metric, lazy, labels, n_resamples=3)
    with pytest.raises(TypeError, match=r"`prob_b` is a Dask array, and the bootstrap of `ACE`"):
        paired_bootstrap(ACE, softmax(other, axis=1), lazy, labels, n_resamples=3)
    with pytest.raises(ValueError, match=r"adaptive_bins=True.*does not stream"):
        bootstrap(GCE, lazy, labels, n_resamples=3, bins=5, adaptive_bins=True)
    assert _dask.block_sums_together([]) == []
    columns = da.from_array(softmax(logits, axis=1), chunks=(100, 2))
    with pytest.raises(ValueError, match=r"^`prob` must be chunked along rows only"):
        bootstrap(ECE, columns, labels, n_resamples=3)
    with pytest.raises(ValueError, match=r"^`prob_b`: `prob` must be chunked along rows only"):
        paired_bootstrap(ECE, lazy, columns, labels, n_resamples=3)


def test_real_files_wrn_against_vgg_on_dask_equal_numpy():
    # The CIFAR-10 test set seen by two models: the paired interval of ECE on Dask arrays
    # (chunks of 1,500 rows, blocks of 400 rows) is the in-memory one, to the bit.
    prob_a, labels = load_real("wideresnet-16-4-cifar-10")
    prob_b, labels_b = load_real("vgg16-cifar-10")
    assert_array_equal(labels, labels_b)
    common = dict(n_resamples=200, random_state=0, bins=15, method="BCa")
    with _small_blocks(4000):
        expected = paired_bootstrap(ECE, prob_a, prob_b, labels, **common)
        lazy_a, lazy_b = (da.from_array(prob, chunks=(1500, -1)) for prob in (prob_a, prob_b))
        _assert_same(paired_bootstrap(ECE, lazy_a, lazy_b, labels, **common), expected)
    assert expected.confidence_interval.low > 0  # VGG-16 has the smaller ECE (0.040, 0.054)
