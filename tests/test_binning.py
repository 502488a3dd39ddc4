"""Bin assignment: the fast uniform path equals searchsorted on the linspace edges."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_array_equal

from calibration_toolbox.binning import (
    adaptive_edges,
    assign_bins,
    grouped_searchsorted,
    sort_rows_with_positions,
)


def reference_bins(scores, edges):
    """Bin b with edges[b] < s <= edges[b + 1], 0 for s <= edges[1], as a loop."""
    return np.array([next(b for b in range(len(edges) - 1) if s <= edges[b + 1]) for s in scores])


@pytest.mark.parametrize("n_bins", [1, 2, 3, 7, 10, 15, 20, 100, 1000])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_uniform_bins_on_and_around_every_edge(n_bins, dtype):
    edges = np.linspace(0, 1, n_bins + 1)
    around = np.concatenate(
        [edges, np.nextafter(edges, 2), np.nextafter(edges, -1), np.arange(n_bins + 1) / n_bins]
    )
    scores = np.clip(around, 0, 1).astype(dtype)
    assert_array_equal(assign_bins(scores, edges, True), reference_bins(scores, edges))
    assert_array_equal(assign_bins(scores, edges, False), reference_bins(scores, edges))


@pytest.mark.parametrize("n_bins", [1, 2, 3, 7, 10, 15, 16, 20, 100, 1000, 3**10, 2**20 + 1])
def test_float32_bins_within_3000_ulps_of_every_edge(n_bins):
    # the float32 rule (floor of the exact s * B, the edges searched where it is an
    # integer) against searchsorted on every float32 within 3,000 ulps of each edge, the
    # float32 roundings of b / B from both sides included
    edges = np.linspace(0, 1, n_bins + 1)
    sampled = edges if n_bins <= 1000 else edges[:: n_bins // 500]
    centres = np.unique(np.concatenate([sampled, sampled.astype(np.float32)]).astype(np.float32))
    bits = centres.view(np.int32)[:, None] + np.arange(-3000, 3001, dtype=np.int32)
    scores = np.unique(bits.view(np.float32))
    scores = scores[(scores >= 0) & (scores <= 1)]
    expected = np.maximum(np.searchsorted(edges, scores, side="left") - 1, 0)
    assert_array_equal(assign_bins(scores, edges, True), expected)
    out, scratch = np.empty(len(scores), dtype=np.intp), np.empty(len(scores))
    assert assign_bins(scores, edges, True, out=out, scratch=scratch) is out
    assert_array_equal(out, expected)


@given(st.integers(1, 60), st.lists(st.floats(0, 1), min_size=1, max_size=50))
def test_uniform_bins_match_searchsorted(n_bins, values):
    edges = np.linspace(0, 1, n_bins + 1)
    scores = np.array(values)
    assert_array_equal(assign_bins(scores, edges, True), assign_bins(scores, edges, False))


@pytest.mark.parametrize("layout", ["F", "strided"])
def test_uniform_bins_of_a_matrix_in_any_layout(layout):
    # the entries on the edges are searched by their flat positions: a matrix that is not
    # C-contiguous (a column selection, a transposed copy) must give the same bins
    values = np.tile(np.linspace(0, 1, 11), (3, 1)).T  # every edge of 5 and 10 bins, 0 and 1
    values = np.asfortranarray(values) if layout == "F" else np.repeat(values, 2, axis=1)[:, ::2]
    assert not values.flags.c_contiguous
    for n_bins in (5, 10):
        edges = np.linspace(0, 1, n_bins + 1)
        expected = np.maximum(np.searchsorted(edges, values, side="left") - 1, 0)
        assert_array_equal(assign_bins(values, edges, True), expected)


def test_explicit_edges():
    edges = np.array([0.0, 0.1, 0.5, 1.0])
    scores = np.array([0.0, 0.05, 0.1, 0.1000001, 0.5, 0.7, 1.0])
    assert_array_equal(assign_bins(scores, edges), [0, 0, 0, 1, 1, 2, 2])


def test_grouped_searchsorted_is_a_search_per_group():
    edges = np.array([[0.2, 0.5], [0.1, 0.9], [0.3, 0.3]])
    groups = np.array([2, 0, 1, 0, 2, 1])
    values = np.array([0.3, 0.5, 0.95, 0.1, 0.29, 0.1])
    expected = [
        np.searchsorted(edges[g], v, side="right") for g, v in zip(groups, values, strict=True)
    ]
    assert_array_equal(grouped_searchsorted(edges, groups, values, side="right"), expected)


def test_adaptive_edges_positions_round_half_to_even():
    # n = 10, B = 4: positions round(2.5) = 2, round(5) = 5, round(7.5) = 8
    scores = np.arange(10) / 10
    interior, full = adaptive_edges(scores, np.array([0]), np.array([10]), 4)
    assert_array_equal(interior, [[0.2, 0.5, 0.8]])
    assert_array_equal(full, [[0, 0.2, 0.5, 0.8, 1]])
    # more bins than scores: positions clipped to n - 1; an empty set keeps linspace
    interior, _ = adaptive_edges(np.array([0.4, 0.6]), np.array([0, 2]), np.array([2, 2]), 5)
    assert_array_equal(interior, [[0.4, 0.6, 0.6, 0.6], np.linspace(0, 1, 6)[1:-1]])


def test_weighted_adaptive_edges_count_positions_in_mean_weights():
    scores = np.array([0.1, 0.3, 0.6, 0.9])
    weights = np.array([3.0, 1.0, 2.0, 4.0])  # mean 2.5; intervals [0,3) [3,4) [4,6) [6,10)
    # n = 4 rows, B = 5: positions round(4 j / 5) = 1, 2, 2, 3 rows = 2.5, 5, 5, 7.5 weight
    weighted, _ = adaptive_edges(scores, np.array([0]), np.array([4]), 5, np.cumsum(weights))
    assert_array_equal(weighted, [[0.1, 0.6, 0.6, 0.9]])
    # repeating each row `weight` times (version 0.1's rule): positions 2, 4, 6, 8 of 10
    repeated = np.repeat(scores, weights.astype(int))
    plain, _ = adaptive_edges(repeated, np.array([0]), np.array([10]), 5)
    assert_array_equal(plain, [[0.1, 0.6, 0.9, 0.9]])
    for scale in (2.0**-60, 0.1, 3.0, 1e200):  # scale-free
        scaled, _ = adaptive_edges(
            scores, np.array([0]), np.array([4]), 5, np.cumsum(scale * weights)
        )
        assert_array_equal(scaled, weighted)


def test_equal_weights_give_the_unweighted_edges_on_every_run():
    rng = np.random.default_rng(8)
    runs = [np.sort(rng.uniform(size=n)) for n in (7, 100, 1, 53)]
    scores = np.concatenate(runs)
    stops = np.cumsum([len(run) for run in runs])
    starts = stops - [len(run) for run in runs]
    plain, _ = adaptive_edges(scores, starts, stops, 9)
    for value in (1.0, 0.1, 1.0 / 3.0, 7.0):
        cumulative = np.cumsum(np.full(scores.size, value))
        weighted, _ = adaptive_edges(scores, starts, stops, 9, cumulative)
        assert_array_equal(weighted, plain)
    # rows of weight 0 inside a run (HistogramBinning's) are absent: positive_rows counts
    with_zeros = np.insert(scores, [3, 60], [scores[2], scores[59]])
    zero_weights = np.insert(np.ones(scores.size), [3, 60], 0.0)
    bounds = np.searchsorted(np.insert(np.arange(scores.size), [3, 60], [2, 59]), starts)
    edges, _ = adaptive_edges(
        with_zeros,
        bounds,
        np.r_[bounds[1:], with_zeros.size],
        9,
        np.cumsum(zero_weights),
        positive_rows=stops - starts,
    )
    assert_array_equal(edges, plain)


def test_two_dimensional_scores_keep_their_shape():
    edges = np.linspace(0, 1, 6)
    scores = np.array([[0.0, 0.2, 0.21], [0.4, 1.0, 0.6]])
    assert_array_equal(assign_bins(scores, edges, True), [[0, 0, 1], [1, 4, 2]])


@given(
    st.lists(
        st.lists(
            st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0, 1e-45, 0.3]), min_size=1, max_size=30
        ),
        min_size=1,
        max_size=3,
    ).filter(lambda rows: len({len(row) for row in rows}) == 1),
    st.randoms(use_true_random=False),
)
def test_sort_rows_with_positions_is_a_lexsort_by_score_flag_and_position(rows, random):
    scores = np.array(rows, dtype=np.float32)
    flags = np.array([[random.random() < 0.5 for _ in row] for row in rows])
    kept = scores.copy(), flags.copy()
    sorted_scores, sorted_flags, positions = sort_rows_with_positions(scores, flags)
    # The slow oracle: one lexsort per row (ties by flag, then position; -0.0 is 0.0).
    order = np.array(
        [np.lexsort((np.arange(len(f)), f, s + 0.0)) for s, f in zip(scores, flags, strict=True)]
    )
    assert_array_equal(positions, order)
    assert_array_equal(sorted_scores, np.take_along_axis(scores, order, axis=1) + np.float32(0))
    assert not np.signbit(sorted_scores).any()
    assert_array_equal(sorted_flags, np.take_along_axis(flags, order, axis=1))
    assert_array_equal(scores, kept[0])
    assert_array_equal(flags, kept[1])


def test_sort_rows_with_positions_leaves_float64_to_the_caller():
    assert sort_rows_with_positions(np.zeros((1, 3)), np.zeros((1, 3), dtype=bool)) is None
