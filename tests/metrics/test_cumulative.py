"""KSCE, KuiperCE (cumulative, bin-free) and ECESweep: hand values, loop oracles, properties.

No public implementation is installable: Gupta et al.'s spline-calibration code and
Arrieta-Ibarra et al.'s code are not on PyPI, and netcal / torchmetrics / scikit-learn have
neither measure nor the sweep.  The references are therefore the slow loops below, written
from the papers' definitions (every distinct score as a threshold, one row at a time), and
for ECESweep's earlier rule (``rule='largest'``) the public ``calibration_table`` at every bin
count (its default rule, Roelofs et al.'s, is tested in tests/metrics/test_ece_sweep.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.special import softmax

from calibration_toolbox import (
    GCE,
    KSCE,
    ECESweep,
    ECESweepResult,
    KuiperCE,
    Scores,
    calibration_table,
)
from tests.conftest import load_real

MEASURES = (KSCE, KuiperCE)
VARIANTS = (
    {},
    {"r": 2},
    {"r": 3},
    {"variant": "within-top-r", "r": 2},
    {"variant": "class-wise"},
)


# -- slow references -------------------------------------------------------------------------
def oracle_walk(scores, targets, weights=None):
    """Walk values at every distinct score: one threshold and one row at a time."""
    weights = [1.0] * len(scores) if weights is None else list(weights)
    total = sum(weights)
    values = []
    for threshold in sorted(set(float(s) for s in scores)):
        value = 0.0
        for s, y, w in zip(scores, targets, weights, strict=True):
            if float(s) <= threshold:
                value += w * (float(y) - float(s))
        values.append(value / total)
    return values


def oracle_ks(scores, targets, weights=None):
    return max(abs(v) for v in oracle_walk(scores, targets, weights))


def oracle_kuiper(scores, targets, weights=None):
    walk = [0.0, *oracle_walk(scores, targets, weights)]
    return max(walk) - min(walk)


def oracle_sets(prob, labels, variant="top-r", r=1):
    """(scores, targets) of each score set, row by row (ranks: ties to the lower class)."""
    prob = np.asarray(prob, dtype=np.float64)
    n_classes = prob.shape[1]
    if variant == "class-wise":
        return [(prob[:, k], labels == k) for k in range(n_classes)]
    scores, targets = [], []
    for row, label in zip(prob, labels, strict=True):
        ranked = sorted(range(n_classes), key=lambda k: (-row[k], k))
        if variant == "within-top-r":
            scores.append(min(sum(row[k] for k in ranked[:r]), 1.0))
            targets.append(label in ranked[:r])
        else:
            scores.append(row[ranked[r - 1]])
            targets.append(label == ranked[r - 1])
    return [(np.array(scores), np.array(targets))]


def oracle(measure, prob, labels, weights=None, **options):
    statistic = oracle_ks if measure is KSCE else oracle_kuiper
    sets = oracle_sets(prob, labels, **options)
    return float(np.mean([statistic(s, t, weights) for s, t in sets]))


def tied_predictions(seed, n=60, n_classes=4, decimals=1):
    """Probabilities with many ties (rounded logits), labels drawn from them."""
    rng = np.random.default_rng(seed)
    logits = np.round(rng.normal(size=(n, n_classes)) * 2, decimals)
    prob = softmax(logits, axis=1)
    labels = (rng.random(n)[:, None] > prob.cumsum(axis=1)).sum(axis=1)
    return prob, np.minimum(labels, n_classes - 1)


def calibrated_pairs(seed, n, temperature=1.0):
    """Binary scores and outcomes drawn from them; ``temperature`` != 1 miscalibrates."""
    rng = np.random.default_rng(seed)
    truth = rng.beta(2, 2, size=n)
    outcome = rng.random(n) < truth
    logit = np.log(truth) - np.log1p(-truth)
    return 1 / (1 + np.exp(-logit / temperature)), outcome


# -- hand-computed ---------------------------------------------------------------------------
def test_hand_computed_pairs():
    # steps (y - s): -0.2, 0.6, -0.6, 0.2; walk / 4: -0.05, 0.1, -0.05, 0.
    assert KSCE(Scores([0.2, 0.4, 0.6, 0.8]), [0, 1, 0, 1]) == pytest.approx(0.1, abs=1e-15)
    assert KuiperCE(Scores([0.2, 0.4, 0.6, 0.8]), [0, 1, 0, 1]) == pytest.approx(0.15, abs=1e-15)


def test_hand_computed_top_label_and_class_wise():
    prob = [[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.2, 0.8]]
    labels = [0, 1, 1, 0]
    # confidences sorted 0.6, 0.7, 0.8, 0.9 with correct 0, 1, 0, 1: walk x 4 is
    # -0.6, -0.3, -1.1, -1.0.
    assert KSCE(prob, labels) == pytest.approx(1.1 / 4, abs=1e-15)
    assert KuiperCE(prob, labels) == pytest.approx(1.1 / 4, abs=1e-15)
    # class 0 walk x 4: 0.8, 0.5, -0.1, 0; class 1: -0.1, 0.5, 0.8, 0.
    assert KSCE(prob, labels, variant="class-wise") == pytest.approx(0.2, abs=1e-15)
    assert KuiperCE(prob, labels, variant="class-wise") == pytest.approx(0.225, abs=1e-15)


def test_tied_scores_are_read_at_the_end_of_their_run():
    # Two rows at 0.5, one right and one wrong: the walk after the pair is 0; read between
    # them it would be +-0.25 depending on the row order.
    for targets in ([1, 0], [0, 1]):
        assert KSCE(Scores([0.5, 0.5]), targets) == 0.0
        assert KuiperCE(Scores([0.5, 0.5]), targets) == 0.0


def test_perfect_and_worst():
    assert KSCE(Scores([0.0, 1.0, 1.0]), [0, 1, 1]) == 0.0
    assert KSCE(Scores([1.0, 1.0]), [0, 0]) == 1.0
    # walk: +1/2 after the 0, back to 0 after the 1
    assert KuiperCE(Scores([0.0, 1.0]), [1, 0]) == 0.5
    # walk: -1/2 then +... : 0.1 wrong then 0.9 right gives -0.05, 0: Kuiper 0.05
    assert KuiperCE(Scores([0.1, 0.9]), [0, 1]) == pytest.approx(0.05, abs=1e-15)


# -- loop oracle -----------------------------------------------------------------------------
@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("options", VARIANTS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_loop_oracle(measure, options, seed):
    prob, labels = tied_predictions(seed)
    expected = oracle(measure, prob, labels, **options)
    assert_allclose(measure(prob, labels, **options), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("options", VARIANTS)
def test_matches_weighted_loop_oracle(measure, options):
    prob, labels = tied_predictions(3)
    weights = np.random.default_rng(3).random(len(labels))
    weights[::7] = 0.0
    expected = oracle(measure, prob, labels, weights, **options)
    got = measure(prob, labels, sample_weight=weights, **options)
    assert_allclose(got, expected, rtol=1e-12, atol=1e-15)


def test_real_predictions_match_loop_oracle():
    prob, labels = load_real("lenet-5-cifar-10")
    prob, labels = prob[:3000], labels[:3000]
    scores, targets = oracle_sets(prob, labels)[0]
    # float32 confidences, compared with an oracle on the same values in float64
    assert_allclose(KSCE(prob, labels), oracle_ks(scores, targets), rtol=1e-12)
    assert_allclose(KuiperCE(prob, labels), oracle_kuiper(scores, targets), rtol=1e-12)


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("options", [{}, {"variant": "class-wise"}])
def test_weighted_float32_matches_weighted_loop_oracle(measure, options):
    # float32 scores take the packed-key sort (binning.sort_rows_with_positions), float64
    # ones the argsort: each against the oracle on the same values in float64.
    prob, labels = load_real("lenet-5-cifar-10")
    prob, labels = prob[:400], labels[:400]
    prob = np.concatenate([prob, prob[:100]]).astype(np.float32)  # tied rows, other weights
    labels = np.concatenate([labels, labels[:100]])
    weights = np.random.default_rng(9).random(len(labels))
    weights[::7] = 0.0
    expected = oracle(measure, prob, labels, weights, **options)
    got = measure(prob, labels, sample_weight=weights, **options)
    assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
    double = measure(prob.astype(np.float64), labels, sample_weight=weights, **options)
    assert_allclose(got, double, rtol=1e-12, atol=1e-15)


def test_float32_and_float64_agree():
    prob, labels = tied_predictions(4, n=500)
    single = prob.astype(np.float32)
    single /= single.sum(axis=1, keepdims=True)
    for options in VARIANTS:
        assert_allclose(KSCE(single, labels, **options), KSCE(prob, labels, **options), atol=1e-6)


# -- invariances -----------------------------------------------------------------------------
@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("options", VARIANTS)
def test_row_order_and_order_of_ties_do_not_matter(measure, options):
    prob, labels = tied_predictions(5, n=200)
    expected = measure(prob, labels, **options)
    rng = np.random.default_rng(5)
    for _ in range(5):
        order = rng.permutation(len(labels))
        assert measure(prob[order], labels[order], **options) == pytest.approx(
            expected, rel=1e-12, abs=1e-15
        )


@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), st.booleans()),
        min_size=1,
        max_size=30,
    ),
    st.randoms(use_true_random=False),
)
def test_shuffling_tied_pairs_keeps_both_values(pairs, random):
    scores, targets = (np.array(column) for column in zip(*pairs, strict=True))
    order = list(range(len(scores)))
    random.shuffle(order)
    for measure in MEASURES:
        assert measure(Scores(scores[order]), targets[order]) == pytest.approx(
            measure(Scores(scores), targets), abs=1e-15
        )
        assert measure(Scores(scores), targets) == pytest.approx(
            (oracle_ks if measure is KSCE else oracle_kuiper)(scores, targets), abs=1e-15
        )


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("options", VARIANTS)
def test_integer_weights_equal_duplicated_rows(measure, options):
    prob, labels = tied_predictions(6, n=80)
    counts = np.random.default_rng(6).integers(0, 4, size=len(labels))
    duplicated = np.repeat(np.arange(len(labels)), counts)
    weighted = measure(prob, labels, sample_weight=counts, **options)
    assert weighted == pytest.approx(
        measure(prob[duplicated], labels[duplicated], **options), rel=1e-12, abs=1e-15
    )
    assert measure(prob, labels, sample_weight=2.5 * counts, **options) == pytest.approx(
        weighted, rel=1e-12, abs=1e-15
    )


def test_unit_weights_equal_no_weights():
    prob, labels = tied_predictions(7, n=100)
    for options in VARIANTS:
        assert KSCE(prob, labels, sample_weight=np.ones(100), **options) == pytest.approx(
            KSCE(prob, labels, **options), rel=1e-12, abs=1e-15
        )


def test_inputs_are_not_mutated():
    prob, labels = tied_predictions(8, n=50)
    prob32 = prob.astype(np.float32)
    copies = prob.copy(), prob32.copy(), labels.copy()
    for options in VARIANTS:
        KSCE(prob, labels, **options)
        KuiperCE(prob32, labels, renormalize=True, **options)
    ECESweep(prob, labels)
    scores = prob32[:, 0].copy()
    KSCE(Scores(prob32[:, 0]), labels == 0)
    np.testing.assert_array_equal(prob, copies[0])
    np.testing.assert_array_equal(prob32, copies[1])
    np.testing.assert_array_equal(labels, copies[2])
    np.testing.assert_array_equal(prob32[:, 0], scores)


def test_kuiper_is_between_ks_and_twice_ks():
    for seed in range(5):
        prob, labels = tied_predictions(seed, n=100)
        for options in VARIANTS:
            ks, kuiper = KSCE(prob, labels, **options), KuiperCE(prob, labels, **options)
            assert ks - 1e-15 <= kuiper <= 2 * ks + 1e-15


def test_special_cases_of_the_variants():
    prob, labels = tied_predictions(9, n=100)
    # r = 1 is the top label in every variant; r = K within-top-r is always right with
    # score 1 (the walk is 0).
    assert KSCE(prob, labels, variant="within-top-r", r=1) == KSCE(prob, labels)
    assert KSCE(prob, labels, variant="within-top-r", r=4) == pytest.approx(0.0, abs=1e-12)
    # binary: the class-wise value is the mean of the two columns' walks
    binary = prob[:, :2] / prob[:, :2].sum(axis=1, keepdims=True)
    binary_labels = labels % 2
    columns = [KSCE(Scores(binary[:, k]), binary_labels == k) for k in (0, 1)]
    assert KSCE(binary, binary_labels, variant="class-wise") == pytest.approx(
        np.mean(columns), rel=1e-12
    )
    # logits: the softmax is applied first
    logits = np.log(prob)
    assert KSCE(logits, labels, logits=True) == pytest.approx(KSCE(prob, labels), rel=1e-9)


# -- behaviour on calibrated and miscalibrated data ------------------------------------------
@given(st.integers(0, 2**32 - 1))
def test_near_zero_when_calibrated_and_growing_with_miscalibration(seed):
    scores, outcome = calibrated_pairs(seed, 4000)
    calibrated = KSCE(Scores(scores), outcome)
    # sqrt(n) * KS is of order 1 under calibration: a 1 / sqrt(4000) scale
    assert calibrated < 0.04
    sharpened = KSCE(Scores(calibrated_pairs(seed, 4000, temperature=0.5)[0]), outcome)
    softened = KuiperCE(Scores(calibrated_pairs(seed, 4000, temperature=3.0)[0]), outcome)
    assert sharpened > calibrated
    assert softened > KuiperCE(Scores(scores), outcome)


def test_mean_over_seeds_shrinks_with_n_when_calibrated():
    means = [
        np.mean([KSCE(Scores(s), y) for s, y in (calibrated_pairs(seed, n) for seed in range(20))])
        for n in (500, 8000)
    ]
    assert means[1] < means[0] / 2.5  # expected ratio sqrt(16) = 4


def test_grows_with_temperature():
    values = [
        KSCE(Scores(calibrated_pairs(0, 20000, temperature)[0]), calibrated_pairs(0, 20000)[1])
        for temperature in (1.0, 1.5, 2.5, 4.0)
    ]
    assert values == sorted(values)


# -- ECESweep(rule='largest') ---------------------------------------------------------------
def oracle_sweep(prob, labels, adaptive_bins, max_bins, weights=None):
    """The largest monotone bin count from the public table at every count, and its error."""
    best = 1
    for n_bins in range(1, max_bins + 1):
        table = calibration_table(
            prob,
            labels,
            bins=n_bins,
            class_conditional=False,
            adaptive_bins=adaptive_bins,
            sample_weight=weights,
        )
        accuracy = table.mean_target[0][table.counts[0] > 0]
        if (np.diff(accuracy) >= 0).all():
            best = n_bins
    return best


@pytest.mark.parametrize("adaptive_bins", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("norm", [1, 2, "inf"])
def test_sweep_matches_table_at_every_bin_count(adaptive_bins, seed, norm):
    prob, labels = tied_predictions(seed, n=150, decimals=2)
    expected_bins = oracle_sweep(prob, labels, adaptive_bins, 150)
    result = ECESweep(prob, labels, adaptive_bins=adaptive_bins, norm=norm, rule="largest")
    assert isinstance(result, ECESweepResult)
    assert result.n_bins == expected_bins
    expected = GCE(
        prob,
        labels,
        bins=expected_bins,
        class_conditional=False,
        adaptive_bins=adaptive_bins,
        norm=norm,
    )
    assert result.value == expected
    assert float(result) == expected


def test_sweep_on_calibrated_data_matches_table():
    scores, outcome = calibrated_pairs(11, 3000)
    result = ECESweep(Scores(scores), outcome, max_bins=60, rule="largest")
    assert result.n_bins == oracle_sweep(Scores(scores), outcome, True, 60)
    assert 1 < result.n_bins < 60
    assert result.value < 0.05


def test_sweep_hand_example_is_not_monotone_in_the_bin_count():
    scores, targets = Scores([0.1, 0.3, 0.5, 0.7, 0.9, 0.95]), [0, 0, 1, 0, 1, 1]
    # 3 bins: 0, 0.5, 1; 4 bins: 0, 1, 0, 1 (fails); 5 bins: 0, 0, 0.5, 1, 1; 6 fails.
    assert ECESweep(scores, targets, rule="largest", norm=1) == ECESweepResult(0.125, 5)
    assert ECESweep(scores, targets, max_bins=4, rule="largest").n_bins == 3
    assert ECESweep(scores, targets, max_bins=1, rule="largest", norm=1) == ECESweepResult(
        pytest.approx(abs(0.5 - 3.45 / 6)), 1
    )


@pytest.mark.parametrize("adaptive_bins", [True, False])
def test_sweep_weights_are_the_tables_weights(adaptive_bins):
    prob, labels = tied_predictions(12, n=60, decimals=2)
    counts = np.random.default_rng(12).integers(0, 4, size=60)
    options = {"adaptive_bins": adaptive_bins, "rule": "largest"}
    weighted = ECESweep(prob, labels, sample_weight=counts, **options)
    assert weighted.n_bins == oracle_sweep(prob, labels, adaptive_bins, 60, counts)
    scaled = ECESweep(prob, labels, sample_weight=counts * 1e-3, **options)
    assert scaled.n_bins == weighted.n_bins
    assert scaled.value == pytest.approx(weighted.value, rel=1e-12)
    if not adaptive_bins:  # equal-mass positions count mean weights, not repeated rows
        rows = np.repeat(np.arange(60), counts)
        duplicated = ECESweep(prob[rows], labels[rows], **options)
        assert weighted.n_bins == duplicated.n_bins
        assert weighted.value == pytest.approx(duplicated.value, rel=1e-12)


def test_sweep_row_order_does_not_matter():
    prob, labels = tied_predictions(13, n=300, decimals=2)
    order = np.random.default_rng(13).permutation(300)
    shuffled = ECESweep(prob[order], labels[order], rule="largest")
    result = ECESweep(prob, labels, rule="largest")
    assert shuffled.n_bins == result.n_bins
    assert shuffled.value == pytest.approx(result.value, rel=1e-12)


# -- bad input -------------------------------------------------------------------------------
@pytest.mark.parametrize("measure", MEASURES)
def test_bad_options(measure):
    prob, labels = tied_predictions(0, n=10)
    with pytest.raises(ValueError, match="`variant` must be"):
        measure(prob, labels, variant="top-label")
    with pytest.raises(TypeError, match="`variant` must be"):
        measure(prob, labels, variant=2)
    with pytest.raises(ValueError, match="`r` must be an integer >= 1"):
        measure(prob, labels, r=0)
    with pytest.raises(TypeError, match="`r` must be an integer"):
        measure(prob, labels, r=1.5)
    with pytest.raises(ValueError, match=r"`r` must be an integer in \[1, 4\]"):
        measure(prob, labels, r=5)
    with pytest.raises(ValueError, match="`r` applies to"):
        measure(prob, labels, variant="class-wise", r=2)
    with pytest.raises(ValueError, match="`sample_weight` must be non-negative"):
        measure(prob, labels, sample_weight=-np.ones(10))
    with pytest.raises(ValueError, match="`labels` must"):
        measure(prob, labels[:-1])
    with pytest.raises(ValueError, match="`prob`"):
        measure(prob * 2, labels)


@pytest.mark.parametrize("measure", MEASURES)
def test_one_dimensional_input(measure):
    p = np.array([0.2, 0.7, 0.9])
    with pytest.raises(ValueError, match="ambiguous"):
        measure(p, [0, 1, 1])
    with pytest.raises(ValueError, match="Scores hold one score per row"):
        measure(Scores(p), [0, 1, 1], r=2)
    with pytest.raises(ValueError, match="Scores hold one score per row"):
        measure(Scores(p), [0, 1, 1], variant="class-wise")
    # class-wise reads a 1-D array as P(y = 1), as the class-wise binned errors do
    assert measure(p, [0, 1, 1], variant="class-wise") == measure(
        np.column_stack([1 - p, p]), [0, 1, 1], variant="class-wise"
    )


def test_sweep_bad_options():
    prob, labels = tied_predictions(0, n=10)
    with pytest.raises(ValueError, match="`max_bins` must be None or an integer >= 1"):
        ECESweep(prob, labels, max_bins=0)
    with pytest.raises(ValueError, match="`norm` must be"):
        ECESweep(prob, labels, norm=3)
    with pytest.raises(TypeError, match="`adaptive_bins` must be True or False"):
        ECESweep(prob, labels, adaptive_bins="yes")
    with pytest.raises(ValueError, match="ambiguous"):
        ECESweep(prob[:, 0], labels)
    with pytest.raises(ValueError, match="`Scores` must hold one score per row"):
        ECESweep(Scores(prob), labels)
