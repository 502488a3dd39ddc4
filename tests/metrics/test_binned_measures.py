"""Debiased L2 (GCE debias, TCE, CWCE), OCE/UCE and TopLabelECE: hand tables, oracle, peers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from calibration_toolbox import (
    ACE,
    CWCE,
    ECE,
    GCE,
    OCE,
    RMSCE,
    TACE,
    TCE,
    UCE,
    CalibrationTable,
    Scores,
    TopLabelECE,
    ToprCE,
    calibration_table,
)
from tests import oracle
from tests.conftest import load_real

PEERS = Path(__file__).resolve().parents[1] / "data" / "debiased_peers.npz"
# The uneven edges of tests/references/debiased_peers.py.
CUSTOM_EDGES = np.array([0.0, 0.1, 0.25, 0.4, 0.5, 0.55, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0])


def dirichlet_case(rng, n, k):
    return rng.dirichlet(np.full(k, 0.4), size=n), rng.integers(0, k, n)


def grid_case(rng, n, k):
    """Small integer counts / their sum: ties and scores exactly on bin edges."""
    counts = rng.integers(0, 4, size=(n, k)).astype(float)
    counts[np.arange(n), rng.integers(0, k, n)] += 1
    return counts / counts.sum(axis=1, keepdims=True), rng.integers(0, k, n)


CASES = {
    "dirichlet": lambda rng: dirichlet_case(rng, 160, 4),
    "grid": lambda rng: grid_case(rng, 150, 3),
}


# --------------------------------------------------------------------------------------
# Hand-computed tables.


def test_debiased_bin_with_one_row_contributes_nothing():
    # bin (0, .5]: scores .2, .3, both right: gap .75, variance 0 -> 2 * .5625 = 1.125;
    # bin (.5, 1]: score .9 alone (gap .9): dropped.  E = 1.125 / 3.
    scores, targets = Scores([0.2, 0.3, 0.9]), [1, 1, 0]
    value = GCE(scores, targets, bins=2, class_conditional=False, norm=2, debias=True)
    assert_allclose(value, np.sqrt(0.375), rtol=1e-15)
    plain = GCE(scores, targets, bins=2, class_conditional=False, norm=2)
    assert_allclose(plain, np.sqrt((1.125 + 0.81) / 3), rtol=1e-15)


def test_debiased_subtracts_the_variance_of_each_bin_accuracy():
    # bin 1: 4 rows, acc .75, conf .25: 4 * (.5^2 - .75 * .25 / 3) = .75;
    # bin 2: 2 rows, acc .5, conf .9: 2 * (.4^2 - .25 / 1) = -.18.  E = .57 / 6.
    scores = Scores([0.1, 0.2, 0.3, 0.4, 0.9, 0.9])
    value = GCE(scores, [1, 1, 1, 0, 1, 0], bins=2, class_conditional=False, norm=2, debias=True)
    assert_allclose(value, np.sqrt(0.095), rtol=1e-14)


def test_debiased_clips_each_class_at_zero_before_the_average():
    # class 0: one bin of 2, acc .5, conf .5: 0 - .25 -> -.25, clipped to 0;
    # class 1: one bin of 2, acc 1, conf .1: .81.  sqrt((0 + .81) / 2), not sqrt(.56 / 2).
    table = CalibrationTable(
        edges=np.array([[0.0, 1.0], [0.0, 1.0]]),
        counts=np.array([[2.0], [2.0]]),
        score_sums=np.array([[1.0], [0.2]]),
        target_sums=np.array([[1.0], [2.0]]),
        n_classes=2,
        class_conditional=True,
        adaptive_bins=False,
    )
    assert_allclose(table.calibration_error(2, debias=True), np.sqrt(0.405), rtol=1e-15)
    assert_allclose(table.calibration_error(2), np.sqrt((0.0 + 0.81) / 2), rtol=1e-15)


def test_tce_and_cwce_hand_tables():
    prob = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3], [0.6, 0.4]]
    # equal-mass bins {.6, .7} and {.8, .9}: gaps .35 and .85 with accuracies 1 and 0.
    assert_allclose(TCE(prob, [1, 1, 0, 0], bins=2), 0.65, rtol=1e-15)
    assert_allclose(CWCE(prob, [1, 1, 0, 0], bins=2), 0.65, rtol=1e-15)
    # accuracy 1/2 in the top bin: variance .25 outweighs both squared gaps (.35 each).
    assert TCE(prob, [0, 1, 0, 0], bins=2) == 0.0
    plain = GCE(prob, [0, 1, 0, 0], bins=2, class_conditional=False, adaptive_bins=True, norm=2)
    assert_allclose(plain, 0.35, rtol=1e-14)


def test_over_and_under_confidence_hand_table():
    # bin (0, .5]: conf .25, acc 1 (under by .75); bin (.5, 1]: conf .85, acc .5 (over by .35).
    scores, targets = Scores([0.2, 0.3, 0.8, 0.9]), [1, 1, 0, 1]
    assert_allclose(OCE(scores, targets, bins=2), 0.175, rtol=1e-14)
    assert_allclose(UCE(scores, targets, bins=2), 0.375, rtol=1e-14)
    assert_allclose(ECE(scores, targets, bins=2), 0.55, rtol=1e-14)


def test_top_label_ece_hand_table_differs_from_ece_and_topr():
    # predicted 0: confidences .9, .8, .6, two right (gap .1); predicted 1: .7, right (gap .3).
    prob = [[0.9, 0.1], [0.8, 0.2], [0.6, 0.4], [0.3, 0.7]]
    labels = [1, 0, 0, 1]
    assert_allclose(TopLabelECE(prob, labels, bins=2), 0.75 * 0.1 + 0.25 * 0.3, rtol=1e-13)
    assert_allclose(ToprCE(prob, labels, bins=2, r=1), (0.1 + 0.3) / 2, rtol=1e-13)
    assert ECE(prob, labels, bins=2) == 0.0


# --------------------------------------------------------------------------------------
# Each wrapper is its GCE call or its table reduction.


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("bins", [3, 15])
def test_wrappers_are_their_gce_calls_and_table_reductions(case, bins):
    prob, labels = CASES[case](np.random.default_rng(7))
    assert TCE(prob, labels, bins) == GCE(prob, labels, bins, False, True, 1, 2, 0.0, debias=True)
    assert CWCE(prob, labels, bins) == GCE(
        prob, labels, bins, True, True, "all", 2, 0.0, debias=True
    )
    for adaptive in (False, True):
        table = calibration_table(prob, labels, bins, False, adaptive, 1)
        over = table.calibration_error(1, part="over")
        under = table.calibration_error(1, part="under")
        assert OCE(prob, labels, bins, adaptive_bins=adaptive) == over
        assert UCE(prob, labels, bins, adaptive_bins=adaptive) == under
    table = calibration_table(prob, labels, bins, True, False, 1)
    assert TopLabelECE(prob, labels, bins) == table.calibration_error(1, average="weighted")


# --------------------------------------------------------------------------------------
# The loop oracle.


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(
    ("class_conditional", "adaptive_bins", "top_k"),
    [
        (False, False, 1),
        (False, True, 1),
        (True, False, "all"),
        (True, True, "all"),
        (True, False, 2),
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_debiased_gce_equals_the_loop_oracle(
    case, class_conditional, adaptive_bins, top_k, weighted
):
    rng = np.random.default_rng(11)
    prob, labels = CASES[case](rng)
    weights = rng.integers(0, 4, len(labels)).astype(float) if weighted else None
    value = GCE(
        prob,
        labels,
        bins=6,
        class_conditional=class_conditional,
        adaptive_bins=adaptive_bins,
        top_k_classes=top_k,
        norm=2,
        debias=True,
        sample_weight=weights,
    )
    expected = oracle.debiased_gce(
        prob, labels, 6, class_conditional, adaptive_bins, top_k, sample_weight=weights
    )
    assert_allclose(value, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("bins", [4, CUSTOM_EDGES])
@pytest.mark.parametrize("weighted", [False, True])
def test_parts_and_top_label_ece_equal_the_loop_oracle(case, bins, weighted):
    rng = np.random.default_rng(12)
    prob, labels = CASES[case](rng)
    weights = rng.random(len(labels)) if weighted else None
    over, under = oracle.confidence_parts(prob, labels, bins, sample_weight=weights)
    assert_allclose(OCE(prob, labels, bins, sample_weight=weights), over, rtol=1e-12, atol=1e-15)
    assert_allclose(UCE(prob, labels, bins, sample_weight=weights), under, rtol=1e-12, atol=1e-15)
    expected = oracle.top_label_ece(prob, labels, bins, sample_weight=weights)
    value = TopLabelECE(prob, labels, bins, sample_weight=weights)
    assert_allclose(value, expected, rtol=1e-12, atol=1e-15)


def test_adaptive_parts_equal_the_loop_oracle():
    prob, labels = grid_case(np.random.default_rng(13), 200, 3)
    over, under = oracle.confidence_parts(prob, labels, 5, adaptive_bins=True)
    assert_allclose(OCE(prob, labels, 5, adaptive_bins=True), over, rtol=1e-12, atol=1e-15)
    assert_allclose(UCE(prob, labels, 5, adaptive_bins=True), under, rtol=1e-12, atol=1e-15)


# --------------------------------------------------------------------------------------
# Kumar et al.'s `calibration` package (tests/references/debiased_peers.py).

SYNTHETIC = ("small", "calibrated", "ties")
REAL = ("lenet-5-cifar-10", "wideresnet-16-4-cifar-100")


def _stored_peers() -> dict[str, np.ndarray]:
    with np.load(PEERS, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


STORED = _stored_peers()


def peer_data(name):
    if name in SYNTHETIC:
        return STORED, STORED[f"{name}/prob"], STORED[f"{name}/labels"]
    return (STORED, *load_real(name))


@pytest.mark.parametrize("name", SYNTHETIC + REAL)
@pytest.mark.parametrize(("key", "bins"), [("width", 15), ("custom", CUSTOM_EDGES)])
def test_debiased_gce_equals_kumar_on_the_same_edges(name, key, bins):
    stored, prob, labels = peer_data(name)
    top = GCE(prob, labels, bins=bins, class_conditional=False, norm=2, debias=True)
    assert_allclose(top, stored[f"{name}/top_{key}"], rtol=1e-12, atol=1e-12)
    marginal = GCE(prob, labels, bins, True, False, "all", 2, debias=True)
    assert_allclose(marginal, stored[f"{name}/marginal_{key}"], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", SYNTHETIC + REAL)
def test_debiased_gce_equals_kumar_top_label_error_on_its_equal_mass_edges(name):
    stored, prob, labels = peer_data(name)
    edges = stored[f"{name}/top_package_edges"]
    value = GCE(prob, labels, bins=edges, class_conditional=False, norm=2, debias=True)
    assert_allclose(value, stored[f"{name}/top_package"], rtol=1e-12, atol=1e-12)


def test_tce_and_cwce_equal_kumar_when_the_equal_mass_bins_coincide():
    # 300 distinct scores in 15 bins: Nixon's rule and np.array_split cut the same runs.
    stored, prob, labels = peer_data("small")
    assert_allclose(TCE(prob, labels), stored["small/top_package"], rtol=1e-12)
    assert_allclose(CWCE(prob, labels), stored["small/marginal_package"], rtol=1e-12)


@pytest.mark.parametrize(
    ("name", "top_difference", "marginal_difference"),
    [
        ("lenet-5-cifar-10", -9.067e-5, -3.372e-5),
        ("wideresnet-16-4-cifar-100", -5.154e-6, -2.150e-6),
    ],
)
def test_tce_and_cwce_differ_from_kumar_only_by_the_equal_mass_edges(
    name, top_difference, marginal_difference
):
    # The README's figures: Kumar's package cuts np.array_split runs at midpoints, Nixon's
    # rule at round_half_even(n j / B); the estimator is the same (tests above).
    stored, prob, labels = peer_data(name)
    assert_allclose(TCE(prob, labels) - stored[f"{name}/top_package"], top_difference, rtol=1e-3)
    assert_allclose(
        CWCE(prob, labels) - stored[f"{name}/marginal_package"], marginal_difference, rtol=1e-3
    )


def test_top_label_ece_docstring_numbers_on_densenet_cifar100():
    prob, labels = load_real("densenet-bc-100-cifar-100")
    assert_allclose(ECE(prob, labels), 0.1422, atol=5e-5)
    assert_allclose(ToprCE(prob, labels, r=1), 0.1585, atol=5e-5)
    assert_allclose(TopLabelECE(prob, labels), 0.1608, atol=5e-5)


# --------------------------------------------------------------------------------------
# Properties.

probabilities = st.integers(min_value=0, max_value=2**32 - 1).map(np.random.default_rng)


@given(
    rng=probabilities,
    n=st.integers(1, 80),
    bins=st.integers(1, 20),
    adaptive=st.booleans(),
    weighted=st.booleans(),
)
def test_oce_plus_uce_is_ece(rng, n, bins, adaptive, weighted):
    prob, labels = grid_case(rng, n, 3) if rng.random() < 0.5 else dirichlet_case(rng, n, 3)
    weights = rng.integers(0, 3, n).astype(float) if weighted else None
    if weights is not None and weights.sum() == 0:
        weights[0] = 1.0
    options = dict(sample_weight=weights)
    over = OCE(prob, labels, bins, adaptive_bins=adaptive, **options)
    under = UCE(prob, labels, bins, adaptive_bins=adaptive, **options)
    whole = GCE(prob, labels, bins, False, adaptive, 1, 1, **options)
    assert abs(over + under - whole) <= 1e-15
    assert min(over, under) == 0.0 or (over > 0 and under > 0)
    if not adaptive:
        assert whole == ECE(prob, labels, bins, **options)


@given(rng=probabilities, n=st.integers(2, 60), bins=st.integers(1, 8))
def test_measures_are_invariant_to_row_order(rng, n, bins):
    prob, labels = grid_case(rng, n, 3)
    order = rng.permutation(n)
    for measure in (TCE, CWCE, OCE, UCE, TopLabelECE):
        assert_allclose(
            measure(prob[order], labels[order], bins), measure(prob, labels, bins), atol=1e-15
        )


@given(rng=probabilities, n=st.integers(2, 50), bins=st.integers(1, 6))
def test_integer_weights_equal_duplicated_rows(rng, n, bins):
    prob, labels = grid_case(rng, n, 3) if rng.random() < 0.5 else dirichlet_case(rng, n, 3)
    weights = rng.integers(1, 4, n)
    repeated = np.repeat(prob, weights, axis=0), np.repeat(labels, weights)
    # Equal-width measures; the equal-mass ones (TCE, CWCE) count positions in mean weights
    # (scale-free, below), which duplicated rows round otherwise.
    for measure in (OCE, UCE, TopLabelECE):
        assert_allclose(
            measure(prob, labels, bins, sample_weight=weights),
            measure(*repeated, bins),
            rtol=1e-12,
            atol=1e-15,
        )


@pytest.mark.parametrize("scale", [2.0**-40, 1e-3, 7.3, 1e12])
def test_equal_mass_edges_do_not_depend_on_the_weights_scale(rng, scale):
    prob, labels = dirichlet_case(rng, 300, 4)
    weights = rng.uniform(0.1, 3.0, 300)
    for adaptive in (True, False):
        for settings in ((False, 1), (True, "all")):
            table = calibration_table(
                prob, labels, 7, *settings[:1], adaptive, settings[1], sample_weight=weights
            )
            scaled = calibration_table(
                prob,
                labels,
                7,
                *settings[:1],
                adaptive,
                settings[1],
                sample_weight=scale * weights,
            )
            assert_array_equal(scaled.edges, table.edges)
            assert_allclose(scaled.calibration_error(1), table.calibration_error(1), rtol=1e-12)
    # equal weights, whatever their value, give the unweighted edges and value (the
    # debiased TCE and CWCE count weights as rows: at weight 1 only)
    for value in (1.0, 0.1, 3.0):
        same = np.full(300, value)
        for measure in (ACE, TACE, *((TCE, CWCE) if value == 1.0 else ())):
            assert_allclose(
                measure(prob, labels, 7, sample_weight=same),
                measure(prob, labels, 7),
                rtol=1e-10,
            )
        assert_array_equal(
            calibration_table(prob, labels, 7, False, True, 1, sample_weight=same).edges,
            calibration_table(prob, labels, 7, False, True, 1).edges,
        )


def test_debiased_is_bounded_and_at_most_the_plain_l2_error_on_each_binning():
    rng = np.random.default_rng(3)
    for _ in range(20):
        prob, labels = dirichlet_case(rng, 120, 4)
        for options in ((False, False, 1), (True, True, "all"), (True, False, 1)):
            plain = GCE(prob, labels, 10, *options, norm=2)
            debiased = GCE(prob, labels, 10, *options, norm=2, debias=True)
            assert 0.0 <= debiased <= plain + 1e-15


def test_debiased_squared_error_is_near_zero_on_calibrated_data():
    # Confidences drawn in (0.5, 1), correctness drawn with that probability: the true
    # calibration error is 0.  The plain L2 estimate squared is biased upward by about
    # sum_b acc_b (1 - acc_b) / n (8 occupied bins: ~ 8 * 0.17 / 500 = 0.0027); the
    # debiased one is not (up to its clip at 0).
    rng = np.random.default_rng(2026)
    plain, debiased = [], []
    for _ in range(200):
        confidence = rng.uniform(0.5, 1.0, 500)
        correct = (rng.random(500) < confidence).astype(int)
        plain.append(RMSCE(Scores(confidence), correct) ** 2)
        debiased.append(GCE(Scores(confidence), correct, 15, False, norm=2, debias=True) ** 2)
    assert np.mean(debiased) < 0.25 * np.mean(plain)
    assert_allclose(np.mean(plain), 0.0027, rtol=0.1)
    assert np.mean(debiased) < 0.001  # 0.00053: the clip at 0 leaves a small upward bias


def test_debiased_grows_with_miscalibration():
    rng = np.random.default_rng(5)
    confidence = rng.uniform(0.5, 1.0, 5000)
    values = []
    for shift in (0.0, 0.05, 0.1, 0.2):
        correct = (rng.random(5000) < confidence - shift).astype(int)
        values.append(TCE(Scores(confidence), correct))
    assert values == sorted(values)
    assert_allclose(values[-1], 0.2, atol=0.02)


# --------------------------------------------------------------------------------------
# Bad input.


@pytest.mark.parametrize("norm", [1, "inf", "max"])
def test_debias_needs_the_l2_norm(norm):
    prob, labels = dirichlet_case(np.random.default_rng(1), 20, 3)
    with pytest.raises(ValueError, match=r"`debias=True` needs norm=2.*got norm="):
        GCE(prob, labels, norm=norm, debias=True)
    table = calibration_table(prob, labels)
    with pytest.raises(ValueError, match=r"`debias=True` needs norm=2"):
        table.calibration_error(norm, debias=True)


def test_debias_must_be_a_flag():
    prob, labels = dirichlet_case(np.random.default_rng(1), 20, 3)
    with pytest.raises(TypeError, match=r"`debias` must be True or False; got"):
        GCE(prob, labels, norm=2, debias="yes")


@pytest.mark.parametrize(
    ("options", "error", "pattern"),
    [
        (dict(part="sideways"), ValueError, r"`part` must be 'both' or 'over' or 'under'"),
        (dict(part=1), TypeError, r"`part` must be"),
        (dict(average="micro"), ValueError, r"`average` must be 'macro' or 'weighted'"),
        (dict(norm=2, debias=True, part="over"), ValueError, r"`debias=True` is for the whole"),
    ],
)
def test_table_reduction_options_are_checked(options, error, pattern):
    prob, labels = dirichlet_case(np.random.default_rng(1), 20, 3)
    with pytest.raises(error, match=pattern):
        calibration_table(prob, labels).calibration_error(**options)


@pytest.mark.parametrize("measure", [TCE, OCE, UCE, TopLabelECE])
def test_top_label_measures_refuse_a_one_dimensional_prob(measure):
    with pytest.raises(ValueError, match=r"`prob` is 1-D, which is ambiguous"):
        measure([0.2, 0.7, 0.9], [0, 1, 1])


@pytest.mark.parametrize("measure", [CWCE, TopLabelECE])
def test_class_wise_measures_refuse_scores(measure):
    with pytest.raises(ValueError, match=r"need a \(N, K\) probability matrix"):
        measure(Scores([0.2, 0.7]), [0, 1])


def test_scores_are_accepted_by_the_pooled_measures():
    scores, targets = Scores([0.2, 0.3, 0.8, 0.9]), [1, 1, 0, 1]
    assert_allclose(
        TCE(scores, targets, bins=2), GCE(scores, targets, 2, False, True, 1, 2, debias=True)
    )
    assert OCE(scores, targets, bins=2, adaptive_bins=True) >= 0.0


@pytest.mark.parametrize("measure", [OCE, UCE, TCE, CWCE, TopLabelECE])
def test_bins_are_checked(measure):
    prob, labels = dirichlet_case(np.random.default_rng(1), 20, 3)
    with pytest.raises(ValueError, match=r"`bins` must be"):
        measure(prob, labels, 0)


def test_inputs_are_not_modified():
    prob, labels = dirichlet_case(np.random.default_rng(1), 40, 3)
    weights = np.arange(40.0)
    copies = prob.copy(), labels.copy(), weights.copy()
    for measure in (OCE, UCE, TCE, CWCE, TopLabelECE):
        measure(prob, labels, sample_weight=weights)
    for array, copy in zip((prob, labels, weights), copies, strict=True):
        np.testing.assert_array_equal(array, copy)
