"""Metrics on Dask arrays: per-chunk tables in the workers, added in a tree; equal to NumPy."""

from __future__ import annotations

import contextlib
import functools
import inspect
from unittest import mock

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import softmax

from calibration_toolbox import (
    ACE,
    ECE,
    KSCE,
    SCE,
    MatrixScaling,
    Scores,
    SmoothECE,
    _registry,
    _rows,
    brier_score,
    calibration_table,
    negative_log_likelihood,
)
from calibration_toolbox.stats import bootstrap
from tests.registry_calls import with_groups

da = pytest.importorskip("dask.array")
dask = pytest.importorskip("dask")

# The options a metric cannot be called without (ToprCE's r, the working points).
REQUIRED = {
    "ToprCE": {"r": 2},
    "coverage_at_risk": {"risk": 0.3},
    "risk_at_coverage": {"coverage": 0.5},
}
# What the registry says runs on Dask arrays (its rows that give a number, named settings
# of GCE included), and fixed edges given as an array.
STREAMING = {
    row.name: functools.partial(row.function, **row.options, **REQUIRED.get(row.name, {}))
    for row in _registry.ROWS.values()
    if row.dask
    and not row.multilabel  # an (N, K) label matrix: tests/metrics/test_multilabel_dask.py
    and inspect.signature(row.function).return_annotation in ("float", float)
}
STREAMING["edges"] = functools.partial(ECE, bins=[0, 0.3, 0.5, 0.9, 1])
# Summed per canonical row block and the blocks in turn, as in memory: equal to the bit.
# (ToprCE with r = 2 bins an explicit score set in memory, in one pass over all the rows.)
EXACT = set(STREAMING) - {"ToprCE"}


def test_every_row_that_runs_on_dask_is_checked_here():
    multilabel = {row.name for row in _registry.multilabel()}
    assert set(STREAMING) >= {row.name for row in _registry.on_dask()} - {
        "calibration_table",
        *multilabel,
    }
    assert "debiased_L2" in STREAMING and len(STREAMING) >= 13


@pytest.mark.parametrize(
    "row", [row for row in _registry.public() if not row.dask], ids=lambda row: row.name
)
def test_rows_that_do_not_run_on_dask_refuse_dask_arrays(row):
    _, prob, labels = _problem(n=200)
    lazy = da.from_array(prob, chunks=(50, -1))
    with pytest.raises((TypeError, ValueError), match=r"Dask|does not stream.*\.compute\(\)"):
        row.function(lazy, labels, **with_groups(row, prob, REQUIRED.get(row.name, {})))


def _small_blocks(elements):
    """Canonical row blocks of ``elements // K`` rows (scan blocks a third as large)."""
    patches = contextlib.ExitStack()
    patches.enter_context(mock.patch.object(_rows, "CANONICAL_BLOCK_ELEMENTS", elements))
    patches.enter_context(mock.patch.object(_rows, "CACHE_BLOCK_ELEMENTS", max(1, elements // 3)))
    return patches


def _problem(n=3000, k=4, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=(n, k))
    return logits.astype(dtype), softmax(logits, axis=1).astype(dtype), rng.integers(0, k, n)


@pytest.fixture(autouse=True)
def threads():
    with dask.config.set(scheduler="threads"):
        yield


@pytest.mark.parametrize("name", sorted(STREAMING))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_streaming_metrics_equal_numpy(name, dtype):
    _, prob, labels = _problem(dtype=dtype)
    weights = np.random.default_rng(1).random(len(labels))
    metric = STREAMING[name]
    lazy_labels = da.from_array(labels, chunks=500)  # rechunked to prob's rows
    # One canonical block (the chunks all cut it), then blocks of 200 rows with chunks of
    # 333 and 700 rows (whole blocks inside chunks, and blocks cut by one or two edges).
    for elements, rows in ((1 << 22, 700), (800, 333), (800, 700)):
        lazy_prob = da.from_array(prob, chunks=(rows, -1))
        for options in ({}, {"sample_weight": weights}, {"sample_weight": da.from_array(weights)}):
            with _small_blocks(elements):
                expected = metric(prob, labels, **{k: np.asarray(w) for k, w in options.items()})
                value = metric(lazy_prob, lazy_labels, **options)
            assert isinstance(value, float)
            if name in EXACT:
                assert value == expected, (elements, rows, options.keys())
            else:
                assert_allclose(value, expected, rtol=1e-12)


def test_logits_scores_and_tables():
    logits, prob, labels = _problem()
    lazy_logits = da.from_array(logits, chunks=(1001, -1))
    scores, targets = prob[:, 0], (labels == 0).astype(int)
    lazy_scores = Scores(da.from_array(scores, chunks=777))
    with _small_blocks(2400):  # blocks of 600 rows (1,200 for one score per row)
        for metric in (ECE, SCE, negative_log_likelihood):
            assert metric(lazy_logits, labels, logits=True) == metric(logits, labels, logits=True)
        for metric in (ECE, brier_score, negative_log_likelihood):
            assert metric(lazy_scores, targets) == metric(Scores(scores), targets)
        lazy = da.from_array(prob, chunks=(900, -1))
        table = calibration_table(lazy, labels, top_k_classes="all")
        direct = calibration_table(prob, labels, top_k_classes="all")
    for part in ("counts", "score_sums", "target_sums"):
        assert_array_equal(getattr(table, part), getattr(direct, part))


def test_what_does_not_stream_is_refused():
    _, prob, labels = _problem(n=200)
    lazy = da.from_array(prob, chunks=(50, -1))
    with pytest.raises(ValueError, match=r"adaptive_bins=True.*does not stream.*\.compute\(\)"):
        ACE(lazy, labels)
    for call in (
        lambda: KSCE(lazy, labels),
        lambda: SmoothECE(lazy, labels),
        lambda: MatrixScaling().fit(
            lazy, labels
        ),  # temperature/vector scaling fit: test_dask_fits
        lambda: ECE(prob, da.from_array(labels)),
    ):
        with pytest.raises(TypeError, match=r"is a Dask array.*\.compute\(\).*ECE, RMSCE"):
            call()
    with pytest.raises(ValueError, match=r"chunked along rows only.*rechunk\(\{1: -1\}\)"):
        ECE(da.from_array(prob, chunks=(50, 2)), labels)


def test_chunk_errors_name_their_rows_and_zero_weight_chunks_add_nothing():
    _, prob, labels = _problem(n=400)
    bad = prob.copy()
    bad[250, 1] = np.nan
    with pytest.raises(ValueError, match=r"in rows 200 to 299 \(one chunk.*row 50 does"):
        ECE(da.from_array(bad, chunks=(100, -1)), labels)
    with _small_blocks(400), pytest.raises(ValueError, match=r"rows 200 to 299 \(part of a"):
        ECE(da.from_array(bad, chunks=(150, -1)), labels)  # blocks of 100 rows
    with pytest.raises(ValueError, match=r"`labels` must have one entry per row.*\(400\)"):
        ECE(da.from_array(prob, chunks=(100, -1)), labels[:-1])
    weights = np.ones(400)
    weights[:100] = 0
    lazy = da.from_array(prob, chunks=(100, -1))
    for metric in (ECE, SCE, brier_score):
        expected = metric(prob, labels, sample_weight=weights)
        assert_allclose(metric(lazy, labels, sample_weight=weights), expected, rtol=1e-12)
    with pytest.raises(ValueError, match="`sample_weight` must have a positive sum"):
        ECE(lazy, labels, sample_weight=np.zeros(400))


def test_on_a_local_cluster_with_two_worker_processes(cluster_client):
    # Generated in the workers: the client never holds the rows.
    rng = da.random.default_rng(7)
    raw = rng.random((40_000, 5), chunks=(5_000, 5), dtype=np.float32)
    prob = raw / raw.sum(axis=1, keepdims=True)
    labels = rng.integers(0, 5, size=40_000, chunks=5_000)
    with dask.config.set(scheduler=cluster_client.get):
        values = {name: STREAMING[name](prob, labels) for name in ("ECE", "SCE", "brier_score")}
    local_prob, local_labels = dask.compute(prob, labels, scheduler="threads")
    for name, value in values.items():
        assert value == STREAMING[name](local_prob, local_labels)


def test_bootstrap_of_dask_arrays_keeps_the_metrics_own_errors():
    # The tabulated metrics resample Dask arrays (tests/test_stats_dask.py); the others
    # are refused, naming what works.
    _, prob, labels = _problem(n=200)
    lazy = da.from_array(prob, chunks=(50, -1))
    for metric, options in ((ACE, {}), (brier_score, {}), (KSCE, {})):
        with pytest.raises(
            TypeError, match=r"`prob` is a Dask array.*\(ECE, RMSCE.*\.compute\(\)"
        ):
            bootstrap(metric, lazy, labels, n_resamples=3, **options)
    with pytest.raises(ValueError, match=r"`bins` must be an integer >= 1"):
        bootstrap(ECE, lazy, labels, n_resamples=3, bins=0)
    result = bootstrap(functools.partial(SCE, bins=5), lazy, labels, n_resamples=3)
    assert result.estimate == SCE(prob, labels, bins=5)
