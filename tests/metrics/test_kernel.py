"""MMCE and SKCE: hand examples, brute-force O(n^2) oracles, properties, peers, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibration_toolbox import MMCE, SKCE, Scores
from tests.conftest import load_real


# -- slow oracles: the definitions as written, pair by pair --------------------------------
def mmce_loop(scores, targets, bandwidth=0.4, unbiased=False, weights=None):
    """Squared MMCE by the double sum (weights normalised; unbiased: i != j)."""
    r = np.asarray(scores, dtype=np.float64)
    d = np.asarray(targets, dtype=np.float64) - r
    n = len(r)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    total = 0.0
    for i in range(n):
        for j in range(n):
            if unbiased and i == j:
                continue
            total += w[i] * w[j] * d[i] * d[j] * math.exp(-abs(r[i] - r[j]) / bandwidth)
    if unbiased:
        return total / (n * (n - 1))
    return total / w.sum() ** 2


def top_label(prob, labels):
    prob = np.asarray(prob, dtype=np.float64)
    return prob.max(axis=1), prob.argmax(axis=1) == np.asarray(labels)


def skce_h(prob, labels, i, j, bandwidth):
    p = np.asarray(prob, dtype=np.float64)
    n_classes = p.shape[1]
    ri = np.eye(n_classes)[labels[i]] - p[i]
    rj = np.eye(n_classes)[labels[j]] - p[j]
    return float(ri @ rj) * math.exp(-math.sqrt(((p[i] - p[j]) ** 2).sum()) / bandwidth)


def skce_loop(prob, labels, bandwidth, estimator, block_size=2, weights=None):
    n = len(prob)
    if estimator in ("linear", "block"):
        size = 2 if estimator == "linear" else block_size
        values = []
        for b in range(n // size):
            rows = range(b * size, (b + 1) * size)
            pairs = [(i, j) for i in rows for j in rows if i != j]
            values.append(
                sum(skce_h(prob, labels, i, j, bandwidth) for i, j in pairs) / len(pairs)
            )
        return float(np.mean(values))
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    total = 0.0
    for i in range(n):
        for j in range(n):
            if estimator == "unbiased" and i == j:
                continue
            total += w[i] * w[j] * skce_h(prob, labels, i, j, bandwidth)
    if estimator == "unbiased":
        return total / (n * (n - 1))
    return total / w.sum() ** 2


def dirichlet_set(rng, n, n_classes, concentration=0.5):
    prob = rng.dirichlet(np.full(n_classes, concentration), size=n)
    labels = rng.integers(0, n_classes, n)
    return prob, labels


def calibrated_set(rng, n, n_classes, temperature=1.0):
    """Labels drawn from softmax(z); predictions softmax(z / temperature)."""
    logits = rng.normal(scale=2.0, size=(n, n_classes))
    true = np.exp(logits - logits.max(axis=1, keepdims=True))
    true /= true.sum(axis=1, keepdims=True)
    labels = (rng.random((n, 1)) > np.cumsum(true, axis=1)).sum(axis=1)
    labels = np.minimum(labels, n_classes - 1)
    shown = np.exp((logits - logits.max(axis=1, keepdims=True)) / temperature)
    shown /= shown.sum(axis=1, keepdims=True)
    return shown, labels


# -- hand examples -------------------------------------------------------------------------
def test_mmce_hand_example():
    # confidences (0.9, 0.6, 0.7), correct (1, 0, 1): d = (0.1, -0.6, 0.3)
    form = 0.46 + 2 * (
        -0.06 * math.exp(-0.3 / 0.4) + 0.03 * math.exp(-0.2 / 0.4) - 0.18 * math.exp(-0.1 / 0.4)
    )
    prob = [[0.9, 0.1], [0.6, 0.4], [0.3, 0.7]]
    assert MMCE(prob, [0, 1, 1]) == pytest.approx(math.sqrt(form / 9), rel=1e-14)
    assert MMCE(prob, [0, 1, 1], squared=True) == pytest.approx(form / 9, rel=1e-14)
    off_diagonal = form - 0.46
    assert MMCE(prob, [0, 1, 1], unbiased=True, squared=True) == pytest.approx(
        off_diagonal / 6, rel=1e-13
    )
    # the unbiased estimate is negative here: its root is clipped at 0
    assert MMCE(prob, [0, 1, 1], unbiased=True) == 0.0
    assert MMCE(Scores([0.9, 0.6, 0.7]), [1, 0, 1]) == MMCE(prob, [0, 1, 1])


def test_skce_hand_example():
    # residuals (0.2, -0.2) and (-0.4, 0.4): inner -0.16; distance sqrt(0.32)
    prob = [[0.8, 0.2], [0.4, 0.6]]
    h12 = -0.16 * math.exp(-math.sqrt(0.32))
    assert SKCE(prob, [0, 1], bandwidth=1.0) == pytest.approx(h12, rel=1e-14)
    assert SKCE(prob, [0, 1], bandwidth=1.0, estimator="linear") == pytest.approx(h12, rel=1e-14)
    biased = (0.08 + 0.32 + 2 * h12) / 4
    assert SKCE(prob, [0, 1], bandwidth=1.0, estimator="biased") == pytest.approx(
        biased, rel=1e-14
    )


# -- against the loops ---------------------------------------------------------------------
@pytest.mark.parametrize(
    ("n", "n_classes", "bandwidth"),
    [(40, 3, 0.4), (120, 10, 0.01), (90, 4, 1e-4), (60, 2, 5.0), (150, 3, 2e-3)],
)
def test_mmce_equals_the_double_sum(n, n_classes, bandwidth, rng):
    prob, labels = dirichlet_set(rng, n, n_classes)
    r, c = top_label(prob, labels)
    expected = mmce_loop(r, c, bandwidth)
    assert MMCE(prob, labels, bandwidth=bandwidth) == pytest.approx(math.sqrt(expected), rel=1e-12)
    unbiased = mmce_loop(r, c, bandwidth, unbiased=True)
    got = MMCE(prob, labels, bandwidth=bandwidth, unbiased=True, squared=True)
    assert got == pytest.approx(unbiased, rel=1e-12)
    weights = rng.random(n)
    weighted = mmce_loop(r, c, bandwidth, weights=weights)
    got = MMCE(prob, labels, bandwidth=bandwidth, sample_weight=weights, squared=True)
    assert got == pytest.approx(weighted, rel=1e-12)


def test_mmce_float32_is_the_value_of_its_float64_copy(rng):
    prob, labels = dirichlet_set(rng, 200, 5)
    single = prob.astype(np.float32)
    single /= single.sum(axis=1, keepdims=True)
    assert MMCE(single, labels) == pytest.approx(
        MMCE(single.astype(np.float64), labels), rel=1e-12
    )


def test_mmce_ties_and_duplicates(rng):
    scores = np.repeat([0.3, 0.5, 0.5, 0.9], 7)
    targets = rng.integers(0, 2, len(scores))
    expected = mmce_loop(scores, targets, 0.05)
    got = MMCE(Scores(scores), targets, bandwidth=0.05, squared=True)
    assert got == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("estimator", ["unbiased", "biased", "linear"])
@pytest.mark.parametrize(("n", "n_classes"), [(31, 3), (60, 10)])
def test_skce_equals_the_double_sum(estimator, n, n_classes, rng):
    prob, labels = dirichlet_set(rng, n, n_classes, concentration=1.0)
    expected = skce_loop(prob, labels, 0.3, estimator)
    assert SKCE(prob, labels, bandwidth=0.3, estimator=estimator) == pytest.approx(
        expected, rel=1e-12
    )


@pytest.mark.parametrize("block_size", [2, 3, 7])
def test_skce_block_equals_the_mean_of_blockwise_unbiased(block_size, rng):
    prob, labels = dirichlet_set(rng, 45, 4, concentration=1.0)
    expected = skce_loop(prob, labels, 0.5, "block", block_size=block_size)
    got = SKCE(prob, labels, bandwidth=0.5, estimator="block", block_size=block_size)
    assert got == pytest.approx(expected, rel=1e-12)


def test_skce_block_of_all_rows_is_unbiased_and_size_two_is_linear(rng):
    prob, labels = dirichlet_set(rng, 50, 3)
    unbiased = SKCE(prob, labels, bandwidth=0.2)
    assert SKCE(prob, labels, bandwidth=0.2, estimator="block", block_size=50) == pytest.approx(
        unbiased, rel=1e-12
    )
    linear = SKCE(prob, labels, bandwidth=0.2, estimator="linear")
    assert SKCE(prob, labels, bandwidth=0.2, estimator="block") == linear


def test_skce_weighted_biased_equals_the_double_sum(rng):
    prob, labels = dirichlet_set(rng, 40, 3)
    weights = rng.random(40)
    expected = skce_loop(prob, labels, 0.4, "biased", weights=weights)
    got = SKCE(prob, labels, bandwidth=0.4, estimator="biased", sample_weight=weights)
    assert got == pytest.approx(expected, rel=1e-12)


def test_skce_tiles_cover_every_pair(rng):
    # more rows than one tile (2**18 / K values): off-diagonal tiles counted twice
    prob, labels = dirichlet_set(rng, 400, 1000, concentration=0.05)
    residuals = np.eye(1000)[labels] - prob
    distances = np.sqrt(((prob[:, None, :] - prob[None, :, :]) ** 2).sum(axis=2))
    h = (residuals @ residuals.T) * np.exp(-distances / 0.7)
    assert SKCE(prob, labels, bandwidth=0.7, estimator="biased") == pytest.approx(
        h.sum() / 400**2, rel=1e-12
    )


def test_skce_duplicated_rows_keep_their_kernel_exact():
    # distances from the differences themselves: a duplicated row is at distance 0 exactly
    prob = np.array([[0.7, 0.2, 0.1]] * 3 + [[0.1, 0.3, 0.6]])
    labels = np.array([0, 1, 0, 2])
    expected = skce_loop(prob, labels, 0.1, "unbiased")
    assert SKCE(prob, labels, bandwidth=0.1) == pytest.approx(expected, rel=1e-14)


def test_median_heuristic_is_the_median_pairwise_distance(rng):
    prob, labels = dirichlet_set(rng, 30, 4)
    i, j = np.triu_indices(30, 1)
    median = np.median(np.sqrt(((prob[i] - prob[j]) ** 2).sum(axis=1)))
    assert SKCE(prob, labels) == pytest.approx(
        SKCE(prob, labels, bandwidth=float(median)), rel=1e-13
    )
    # 29 rows, 406 pairs (an even number): the mean of the two middle distances, not the
    # root of the mean of the two middle squares
    i, j = np.triu_indices(29, 1)
    median = np.median(np.sqrt(((prob[i] - prob[j]) ** 2).sum(axis=1)))
    assert SKCE(prob[:29], labels[:29]) == pytest.approx(
        SKCE(prob[:29], labels[:29], bandwidth=float(median)), rel=1e-13
    )


def test_median_heuristic_on_many_rows_is_deterministic(rng):
    prob, labels = dirichlet_set(rng, 3000, 3)
    first = SKCE(prob, labels, estimator="linear")
    assert SKCE(prob, labels, estimator="linear") == first
    # from 1024 drawn rows: close to the median over all pairs, not equal to it
    i, j = np.triu_indices(3000, 1)
    median = np.median(np.sqrt(((prob[i] - prob[j]) ** 2).sum(axis=1)))
    exact = SKCE(prob, labels, estimator="linear", bandwidth=float(median))
    assert first != exact
    assert first == pytest.approx(exact, rel=0.05)


# -- properties ------------------------------------------------------------------------------
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 40), n_classes=st.integers(2, 5))
def test_row_order_does_not_matter(seed, n, n_classes):
    rng = np.random.default_rng(seed)
    prob, labels = dirichlet_set(rng, n, n_classes)
    order = rng.permutation(n)
    assert MMCE(prob[order], labels[order]) == pytest.approx(MMCE(prob, labels), rel=1e-12)
    for estimator in ("unbiased", "biased"):
        got = SKCE(prob[order], labels[order], estimator=estimator, bandwidth=0.3)
        assert got == pytest.approx(
            SKCE(prob, labels, estimator=estimator, bandwidth=0.3), rel=1e-12, abs=1e-15
        )
    if n <= 1024:  # the median heuristic uses every pair: it does not depend on the order
        same = SKCE(prob[order], labels[order]) if len(np.unique(prob, axis=0)) > 1 else None
        if same is not None:
            assert same == pytest.approx(SKCE(prob, labels), rel=1e-12, abs=1e-15)


@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 30),
    counts=st.lists(st.integers(0, 3), min_size=30, max_size=30),
)
def test_integer_weights_equal_duplicated_rows(seed, n, counts):
    rng = np.random.default_rng(seed)
    prob, labels = dirichlet_set(rng, n, 3)
    counts = np.array(counts[:n])
    if counts.sum() == 0:
        counts[0] = 1
    repeated = np.repeat(np.arange(n), counts)
    assert MMCE(prob, labels, sample_weight=counts) == pytest.approx(
        MMCE(prob[repeated], labels[repeated]), rel=1e-10, abs=1e-15
    )
    assert MMCE(prob, labels, sample_weight=2.5 * counts) == pytest.approx(
        MMCE(prob, labels, sample_weight=counts), rel=1e-12, abs=1e-15
    )
    weighted = SKCE(prob, labels, estimator="biased", bandwidth=0.5, sample_weight=counts)
    duplicated = SKCE(prob[repeated], labels[repeated], estimator="biased", bandwidth=0.5)
    assert weighted == pytest.approx(duplicated, rel=1e-10, abs=1e-15)


def test_near_zero_on_calibrated_data_and_growing_with_miscalibration():
    # Over 40 seeds: the unbiased estimators average about 0 on labels drawn from the
    # predictions (within 3 standard errors), and a temperature-2 model scores higher.
    calibrated, mmce_calibrated, hot_mmce, hot_skce = [], [], [], []
    for seed in range(40):
        rng = np.random.default_rng(seed)
        prob, labels = calibrated_set(rng, 300, 4)
        calibrated.append(SKCE(prob, labels, bandwidth=0.5))
        mmce_calibrated.append(MMCE(prob, labels, unbiased=True, squared=True))
        hot, hot_labels = calibrated_set(np.random.default_rng(seed), 300, 4, temperature=2.0)
        hot_skce.append(SKCE(hot, hot_labels, bandwidth=0.5))
        hot_mmce.append(MMCE(hot, hot_labels, unbiased=True, squared=True))
    for values in (calibrated, mmce_calibrated):
        values = np.array(values)
        assert abs(values.mean()) < 3 * values.std(ddof=1) / math.sqrt(len(values))
    assert np.mean(hot_skce) > np.mean(calibrated) + 5 * np.std(calibrated)
    assert np.mean(hot_mmce) > np.mean(mmce_calibrated) + 5 * np.std(mmce_calibrated)
    for seed in range(5):  # the biased MMCE too, seed by seed
        prob, labels = calibrated_set(np.random.default_rng(seed), 2000, 4)
        hot, hot_labels = calibrated_set(np.random.default_rng(seed), 2000, 4, temperature=2.0)
        assert MMCE(hot, hot_labels) > 2 * MMCE(prob, labels)


# -- the real predictions and netcal ---------------------------------------------------------
# netcal 1.4.0's MMCE().measure(prob, labels) on float64 copies of the shared predictions
# (tests/references/kernel_peers.py): the same formula, computed by its n x n matrix.  On the
# seeded sets of that script the two agree to 4e-16 relative.
NETCAL_MMCE = {
    "lenet-5-cifar-10": 0.08559995916246609,
    "vgg16-cifar-10": 0.035314524218855115,
}


@pytest.mark.parametrize("name", sorted(NETCAL_MMCE))
def test_mmce_equals_netcal_on_real_predictions(name):
    prob, labels = load_real(name)
    assert MMCE(prob.astype(np.float64), labels) == pytest.approx(NETCAL_MMCE[name], rel=1e-10)


# -- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("bandwidth", [0, -1.0, np.inf, np.nan])
def test_bandwidth_must_be_positive(bandwidth):
    prob, labels = [[0.8, 0.2], [0.4, 0.6]], [0, 1]
    with pytest.raises(ValueError, match="`bandwidth` must be a positive number"):
        MMCE(prob, labels, bandwidth=bandwidth)
    with pytest.raises(ValueError, match="`bandwidth` must be a positive number or None"):
        SKCE(prob, labels, bandwidth=bandwidth)


def test_bad_options():
    prob, labels = [[0.8, 0.2], [0.4, 0.6], [0.5, 0.5]], [0, 1, 1]
    with pytest.raises(ValueError, match="`estimator` must be 'unbiased' or"):
        SKCE(prob, labels, estimator="quadratic")
    with pytest.raises(TypeError, match="`bandwidth` must be"):
        MMCE(prob, labels, bandwidth="0.4")
    with pytest.raises(TypeError, match="`bandwidth` must be"):
        SKCE(prob, labels, bandwidth=True)
    with pytest.raises(ValueError, match="`block_size` must be an integer >= 2"):
        SKCE(prob, labels, estimator="block", block_size=1, bandwidth=1.0)
    with pytest.raises(ValueError, match="`block_size` must be at most the number of rows"):
        SKCE(prob, labels, estimator="block", block_size=4, bandwidth=1.0)
    with pytest.raises(TypeError, match="`unbiased` must be True or False"):
        MMCE(prob, labels, unbiased="yes")
    with pytest.raises(TypeError, match="`squared` must be True or False"):
        MMCE(prob, labels, squared=1)


def test_weights_refused_where_undefined():
    prob, labels, weights = [[0.8, 0.2], [0.4, 0.6]], [0, 1], [1.0, 2.0]
    with pytest.raises(ValueError, match="`sample_weight` is not supported with unbiased"):
        MMCE(prob, labels, unbiased=True, sample_weight=weights)
    for estimator in ("unbiased", "linear", "block"):
        with pytest.raises(ValueError, match="`sample_weight` is not supported with estimator"):
            SKCE(prob, labels, estimator=estimator, bandwidth=1.0, sample_weight=weights)
    with pytest.raises(ValueError, match="`sample_weight` is not supported with the median"):
        SKCE(prob, labels, estimator="biased", sample_weight=weights)


def test_too_few_rows_and_degenerate_median():
    with pytest.raises(ValueError, match="`prob` needs at least 2 rows"):
        MMCE([[0.8, 0.2]], [0], unbiased=True)
    with pytest.raises(ValueError, match="`prob` needs at least 2 rows"):
        SKCE([[0.8, 0.2]], [0], bandwidth=1.0)
    with pytest.raises(ValueError, match="median heuristic for `bandwidth` is 0"):
        SKCE([[0.8, 0.2], [0.8, 0.2]], [0, 1])
    assert MMCE([[0.8, 0.2]], [0]) == pytest.approx(0.2, rel=1e-14)


def test_input_forms():
    p = np.array([0.2, 0.7, 0.9])
    with pytest.raises(ValueError, match="`prob` is 1-D, which is ambiguous"):
        MMCE(p, [0, 1, 1])
    with pytest.raises(ValueError, match="SKCE compares whole probability vectors"):
        SKCE(Scores(p), [0, 1, 1], bandwidth=1.0)
    # SKCE is not a top-label measure: 1-D is P(y = 1) of a binary task
    two = np.column_stack([1 - p, p])
    assert SKCE(p, [0, 1, 1], bandwidth=1.0) == SKCE(two, [0, 1, 1], bandwidth=1.0)
    logits = np.log(two)
    assert MMCE(logits, [0, 1, 1], logits=True) == pytest.approx(MMCE(two, [0, 1, 1]), rel=1e-12)
    with pytest.raises(ValueError, match="`labels` must lie in"):
        SKCE(two, [0, 2, 1], bandwidth=1.0)


def test_input_is_not_modified(rng):
    prob, labels = dirichlet_set(rng, 20, 3)
    prob32 = prob.astype(np.float32)
    prob32 /= prob32.sum(axis=1, keepdims=True)
    copies = prob32.copy(), labels.copy()
    MMCE(prob32, labels)
    SKCE(prob32, labels)
    SKCE(prob32, labels, estimator="block", block_size=3)
    np.testing.assert_array_equal(prob32, copies[0])
    np.testing.assert_array_equal(labels, copies[1])
