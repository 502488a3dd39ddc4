"""CalibrationAccumulator and CalibrationTable addition: streamed batches equal one call."""

from __future__ import annotations

import contextlib
import pickle
from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import softmax

from calibration_toolbox import (
    ECE,
    GCE,
    MCE,
    OCE,
    RMSCE,
    SCE,
    UCE,
    CalibrationAccumulator,
    Scores,
    TopLabelECE,
    _rows,
    brier_score,
    calibration_table,
    negative_log_likelihood,
)
from tests.conftest import load_real

# Every sum is that of the canonical row blocks added in turn, in one call and in the
# accumulator: every metric of results() is equal to the bit, whatever the batches.
EXACT = (
    "ECE",
    "RMSCE",
    "MCE",
    "OCE",
    "UCE",
    "debiased_L2",
    "TopLabelECE",
    "SCE",
    "class_wise_debiased_L2",
    "brier_score",
    "negative_log_likelihood",
    "accuracy",
)


def _small_blocks(elements=64):
    """Canonical row blocks of ``elements // K`` rows, so that small arrays hold many.

    The scan's own blocks (of the top label, the Brier and log-likelihood sums) are made a
    third as large, so that a canonical block holds several, as at real sizes.
    """
    patches = contextlib.ExitStack()
    patches.enter_context(mock.patch.object(_rows, "CANONICAL_BLOCK_ELEMENTS", elements))
    patches.enter_context(mock.patch.object(_rows, "CACHE_BLOCK_ELEMENTS", max(1, elements // 3)))
    return patches


def _in_memory(prob, labels, bins, weights, logits=False):
    options = {"sample_weight": weights, "logits": logits}
    table = calibration_table(prob, labels, bins, class_conditional=False, **options)
    return {
        "ECE": ECE(prob, labels, bins, **options),
        "RMSCE": RMSCE(prob, labels, bins, **options),
        "MCE": MCE(prob, labels, bins, **options),
        "OCE": OCE(prob, labels, bins, **options),
        "UCE": UCE(prob, labels, bins, **options),
        "debiased_L2": GCE(prob, labels, bins, False, norm=2, debias=True, **options),
        "TopLabelECE": TopLabelECE(prob, labels, bins, **options),
        "accuracy": float(table.target_sums.sum() / table.counts.sum()),
        "SCE": SCE(prob, labels, bins, **options),
        "class_wise_debiased_L2": GCE(
            prob, labels, bins, True, top_k_classes="all", norm=2, debias=True, **options
        ),
        "brier_score": brier_score(prob, labels, **options),
        "negative_log_likelihood": negative_log_likelihood(prob, labels, **options),
    }


def _streamed(prob, labels, weights, cuts, **options):
    accumulator = CalibrationAccumulator(**options)
    for rows in np.split(np.arange(len(labels)), cuts):
        if len(rows):
            accumulator.update(
                prob[rows], labels[rows], None if weights is None else weights[rows]
            )
    return accumulator


def _problem(seed, n, k, dtype=np.float64):
    rng = np.random.default_rng(seed)
    logits = rng.normal(scale=2.0, size=(n, k))
    labels = rng.integers(0, k, size=n)
    return logits.astype(dtype), softmax(logits, axis=1).astype(dtype), labels, rng


@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 300),
    k=st.integers(2, 6),
    n_cuts=st.integers(0, 6),
    weighted=st.booleans(),
    float32=st.booleans(),
    explicit_edges=st.booleans(),
    block_elements=st.sampled_from([8, 64, 500, 1 << 20]),
)
def test_streamed_batches_equal_one_call(
    seed, n, k, n_cuts, weighted, float32, explicit_edges, block_elements
):
    _, prob, labels, rng = _problem(seed, n, k, np.float32 if float32 else np.float64)
    weights = rng.random(n) * rng.integers(0, 2, n) if weighted else None
    if weights is not None and not weights.sum() > 0:
        weights[0] = 1.0
    cuts = np.sort(rng.integers(0, n + 1, size=n_cuts))
    bins = np.r_[0.0, np.sort(rng.random(4)), 1.0] if explicit_edges else int(rng.integers(1, 20))
    if weights is not None:  # an all-zero batch is an error in memory too: weight its first row
        for rows in np.split(np.arange(n), cuts):
            if len(rows) and not weights[rows].sum() > 0:
                weights[rows[0]] = 0.5
    with _small_blocks(block_elements):
        accumulator = _streamed(prob, labels, weights, cuts, bins=bins)
        results = accumulator.results()
        expected = _in_memory(prob, labels, bins, weights)
        table = calibration_table(prob, labels, bins, top_k_classes="all", sample_weight=weights)
        streamed_table = accumulator.table("class_wise")
    for name in EXACT:
        assert results[name] == expected[name], name
    assert results["n_samples"] == n
    for part in ("counts", "score_sums", "target_sums"):
        assert_array_equal(getattr(streamed_table, part), getattr(table, part))


def test_row_sums_equal_when_the_last_block_is_short():
    # The scan hands rows over in runs set by their place in the canonical block, not by
    # how many rows the call has: a stream's short last block is summed as in one call.
    rng = np.random.default_rng(14)
    with _small_blocks(64):  # blocks of 21 rows at K = 3, scanned 7 rows at a time
        for _ in range(30):
            n = int(rng.integers(22, 200))
            _, prob, labels, _ = _problem(int(rng.integers(2**16)), n, 3)
            cuts = np.sort(rng.integers(0, n, 4))
            results = _streamed(prob, labels, None, cuts).results()
            assert results["negative_log_likelihood"] == negative_log_likelihood(prob, labels)
            assert results["brier_score"] == brier_score(prob, labels)


def test_real_block_size_at_many_classes():
    # K = 4,096: canonical blocks of 1,024 rows, so 1,100 rows cross a block edge.
    _, prob, labels, rng = _problem(13, 1100, 4096, np.float32)
    weights = rng.random(1100)
    cuts = [1, 300, 1023, 1025]
    for w in (None, weights):
        results = _streamed(prob, labels, w, cuts, bins=10).results()
        expected = _in_memory(prob, labels, 10, w)
        assert all(results[name] == expected[name] for name in EXACT)


def test_logits_and_real_predictions_in_ten_batches():
    logits, _, labels, _ = _problem(1, 2000, 5)
    with _small_blocks(1000):  # blocks of 200 rows, batches of 130
        accumulator = _streamed(logits, labels, None, np.arange(130, 2000, 130), logits=True)
        expected = _in_memory(logits, labels, 15, None, logits=True)
    results = accumulator.results()
    # The NLL from the logits too, as negative_log_likelihood(logits=True) computes it.
    assert all(results[name] == expected[name] for name in EXACT)

    prob, labels = load_real("densenet-bc-100-cifar-100")
    accumulator = _streamed(prob, labels, None, np.arange(999, len(labels), 999))
    assert accumulator.metric("ECE") == ECE(prob, labels)
    assert accumulator.metric("TopLabelECE") == TopLabelECE(prob, labels)
    assert accumulator.metric("SCE") == SCE(prob, labels)
    assert accumulator.metric("brier_score") == brier_score(prob, labels)


def test_scores_stream_as_one_score_per_row():
    rng = np.random.default_rng(3)
    scores, targets = rng.random(500), rng.integers(0, 2, 500)
    accumulator = CalibrationAccumulator(bins=10, scores=True)
    with _small_blocks(200):  # blocks of 100 rows, batches of 125
        for rows in np.array_split(np.arange(500), 4):
            accumulator.update(scores[rows], targets[rows])  # plain 1-D arrays read as Scores
        assert accumulator.metric("ECE") == ECE(Scores(scores), targets, bins=10)
        assert accumulator.metric("MCE") == MCE(Scores(scores), targets, bins=10)
        assert accumulator.metric("brier_score") == brier_score(Scores(scores), targets)
        nll = negative_log_likelihood(Scores(scores), targets)
        assert accumulator.metric("negative_log_likelihood") == nll
    assert "SCE" not in accumulator.results()
    with pytest.raises(ValueError, match="one score per row: no class-wise table"):
        CalibrationAccumulator(scores=True, tables=["class_wise"])


def test_tables_equal_calibration_table():
    _, prob, labels, _ = _problem(4, 400, 3)
    accumulator = _streamed(prob, labels, None, [100, 250])
    for kind, options in {
        "top_label": {"class_conditional": False},
        "predicted_class": {"class_conditional": True},
        "class_wise": {"class_conditional": True, "top_k_classes": "all"},
    }.items():
        streamed, direct = accumulator.table(kind), calibration_table(prob, labels, **options)
        assert_array_equal(streamed.counts, direct.counts)
        assert_array_equal(streamed.edges, direct.edges)
        assert_array_equal(streamed.score_sums, direct.score_sums)
        assert_array_equal(streamed.target_sums, direct.target_sums)
        assert (streamed.class_conditional, streamed.top_k_classes) == (
            direct.class_conditional,
            direct.top_k_classes,
        )


def _bad_batches():
    prob = np.full((4, 3), 1 / 3)
    labels = np.array([0, 1, 2, 0])
    nan = prob.copy()
    nan[2, 1] = np.nan
    off = prob.copy()
    off[1] = [0.5, 0.5, 0.5]
    return {
        "nan": (nan, labels, None),
        "row sums": (off, labels, None),
        "label out of range": (prob, np.array([0, 1, 3, 0]), None),
        "labels length": (prob, labels[:3], None),
        "negative weight": (prob, labels, np.array([1.0, -1.0, 1.0, 1.0])),
        "zero weights": (prob, labels, np.zeros(4)),
        "one column": (prob[:, 0], labels, None),
        "strings": (np.array([["a", "b", "c"]] * 4), labels, None),
    }


@pytest.mark.parametrize("case", sorted(_bad_batches()))
def test_bad_batch_gets_the_in_memory_error_and_changes_nothing(case):
    prob, labels, weights = _bad_batches()[case]
    with pytest.raises((TypeError, ValueError)) as in_memory:
        ECE(prob, labels, sample_weight=weights)
    _, good, good_labels, _ = _problem(5, 50, 3)
    accumulator = CalibrationAccumulator().update(good, good_labels)
    before = accumulator.results()
    with pytest.raises(in_memory.type) as streamed:
        accumulator.update(prob, labels, weights)
    assert str(streamed.value) == str(in_memory.value)
    assert accumulator.results() == before


def test_bad_row_after_many_blocks_changes_nothing():
    # The scan bins blocks as it checks them: the rows before the bad one were binned.
    _, prob, labels, _ = _problem(6, 40_000, 3)
    prob[39_000] = [0.9, 0.9, 0.9]
    accumulator = CalibrationAccumulator()
    with pytest.raises(ValueError, match="row 39000 sums to"):
        accumulator.update(prob, labels)
    assert accumulator.n_samples == 0 and accumulator.n_classes is None
    with pytest.raises(ValueError, match="no batch has been added yet"):
        accumulator.metric("ECE")
    accumulator.update(prob[:100], labels[:100])
    assert accumulator.metric("ECE") == ECE(prob[:100], labels[:100])


def test_number_of_classes_is_fixed():
    _, prob, labels, _ = _problem(7, 20, 3)
    accumulator = CalibrationAccumulator().update(prob, labels)
    with pytest.raises(ValueError, match=r"must have 3 columns.*got 4"):
        accumulator.update(np.full((2, 4), 0.25), [0, 1])
    with pytest.raises(ValueError, match="must have 5 columns"):
        CalibrationAccumulator(n_classes=5).update(prob, labels)
    with pytest.raises(ValueError, match="`n_classes` must be an integer >= 2"):
        CalibrationAccumulator(n_classes=1)


def test_merged_accumulators_equal_one_stream():
    _, prob, labels, rng = _problem(8, 600, 4)
    weights = rng.random(600)
    parts = [
        _streamed(prob[rows], labels[rows], weights[rows], [])
        for rows in np.array_split(np.arange(600), 4)
    ]
    tree = (parts[0] + parts[1]) + (parts[2] + parts[3])
    whole = _streamed(prob, labels, weights, [])
    for name, value in whole.results().items():
        assert_allclose(tree.results()[name], value, rtol=1e-12, err_msg=name)
    merged = CalibrationAccumulator().merge(parts[0]).merge(parts[1])
    assert merged.n_samples == 300
    with pytest.raises(ValueError, match="`logits` differs: False and True"):
        parts[0] + CalibrationAccumulator(logits=True)
    with pytest.raises(ValueError, match="same bin edges"):
        parts[0] + CalibrationAccumulator(bins=10)
    with pytest.raises(TypeError, match="`other` must be a CalibrationAccumulator"):
        parts[0].merge(calibration_table(prob, labels))


@pytest.mark.parametrize("name", [["ECE"], ("ECE",), None, 1], ids=repr)
def test_a_name_that_is_no_str_is_a_type_error_naming_the_argument(name):
    accumulator = CalibrationAccumulator()
    with pytest.raises(TypeError, match=r"`name` must be a str, one of ECE, .*; got "):
        accumulator.metric(name)


def test_what_does_not_stream_is_refused_with_what_does():
    _, prob, labels, _ = _problem(9, 30, 3)
    accumulator = CalibrationAccumulator().update(prob, labels)
    for name in ("ACE", "TACE", "CWCE", "KSCE", "SmoothECE", "SKCE"):
        with pytest.raises(ValueError, match=f"{name} cannot be computed from streamed sums.*ECE"):
            accumulator.metric(name)
    with pytest.raises(ValueError, match="`name` must be one of"):
        CalibrationAccumulator(tables=["top_label"]).update(prob, labels).metric("SCE")
    with pytest.raises(TypeError, match="`bins` must be an integer >= 1"):
        CalibrationAccumulator(bins=2.5)
    with pytest.raises(ValueError, match="renormalize=True` divides probabilities"):
        CalibrationAccumulator(logits=True, renormalize=True)
    with pytest.raises(TypeError, match="build it with scores=True"):
        accumulator.update(Scores(prob[:, 0]), labels % 2)


def test_memory_does_not_grow_with_rows():
    # The rows kept are those of the partial canonical block (here 40 rows at K = 5).
    _, prob, labels, _ = _problem(10, 2010, 5)
    with _small_blocks(200):
        accumulator = CalibrationAccumulator().update(prob[:1010], labels[:1010])
        accumulator.results()
        size = len(pickle.dumps(accumulator))
        for rows in np.array_split(np.arange(1010, 2010), 3):
            accumulator.update(prob[rows], labels[rows])
        accumulator.results()
    assert len(pickle.dumps(accumulator)) <= size + 8  # the counters n_samples, total_weight


# -- CalibrationTable + CalibrationTable ------------------------------------------------


def test_tables_of_batches_add_up():
    _, prob, labels, _ = _problem(11, 300, 3)
    halves = [slice(0, 120), slice(120, 300)]
    for options in ({"class_conditional": False}, {"top_k_classes": "all"}, {"bins": [0, 0.5, 1]}):
        tables = [calibration_table(prob[rows], labels[rows], **options) for rows in halves]
        whole = calibration_table(prob, labels, **options)
        total = tables[0] + tables[1]
        assert_array_equal(total.counts, whole.counts)
        assert_allclose(total.score_sums, whole.score_sums, rtol=1e-12, atol=1e-13)
        assert_array_equal(total.target_sums, whole.target_sums)
        assert_allclose(sum(tables).calibration_error(), whole.calibration_error(), rtol=1e-12)


def test_tables_with_other_options_do_not_add():
    _, prob, labels, _ = _problem(12, 50, 3)
    table = calibration_table(prob, labels)
    for other, message in (
        (calibration_table(prob, labels, class_conditional=False), "`class_conditional` differs"),
        (calibration_table(prob, labels, top_k_classes=2), "`top_k_classes` differs: 1 and 2"),
        (calibration_table(prob, labels, thresholding=0.1), "`thresholding` differs"),
        (calibration_table(prob[:, :2] / prob[:, :2].sum(1, keepdims=True), labels % 2), "`n_"),
        (calibration_table(prob, labels, bins=10), "same bin edges; got 15 and 10 bins"),
    ):
        with pytest.raises(ValueError, match=message):
            table + other
    scores = calibration_table(Scores(prob[:, 0]), labels % 2, class_conditional=False)
    with pytest.raises(ValueError, match="`scores` differs"):
        (
            calibration_table(
                prob[:, :2] / prob[:, :2].sum(1, keepdims=True),
                labels % 2,
                class_conditional=False,
            )
            + scores
        )
    adaptive = calibration_table(prob, labels, adaptive_bins=True)
    with pytest.raises(ValueError, match=r"equal-mass tables.*bins=np.linspace\(0, 1, 16\)"):
        adaptive + adaptive


def test_total_weight_counts_the_rows_of_an_unfinished_block():
    # Fewer rows than one canonical block (2**22 // K): they are all in the partial block.
    rng = np.random.default_rng(5)
    prob = rng.dirichlet(np.ones(3), size=200)
    labels = rng.integers(0, 3, size=200)
    weights = np.r_[np.ones(100), np.full(100, 2.0)]
    accumulator = CalibrationAccumulator(bins=10)
    accumulator.update(prob, labels, sample_weight=weights)
    assert accumulator.results()["total_weight"] == 300.0
    unweighted = CalibrationAccumulator(bins=10)
    unweighted.update(prob, labels)
    assert unweighted.results()["total_weight"] == 200.0
