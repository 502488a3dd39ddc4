"""Selective prediction: the risk-coverage curve, AURC, EAURC, AUGRC, working points, AUROC."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy.integrate import trapezoid
from selective_peers import synthetic_sets
from sklearn.metrics import roc_auc_score

from calibration_toolbox import (
    AUGRC,
    AURC,
    EAURC,
    Scores,
    confidence_auroc,
    coverage_at_risk,
    risk_at_coverage,
    risk_coverage_curve,
)
from tests.conftest import load_real

SCALARS = [AURC, EAURC, AUGRC, confidence_auroc]
WORKING_POINTS = [(coverage_at_risk, {"risk": 0.2}), (risk_at_coverage, {"coverage": 0.6})]
ids = {"ids": lambda function: function.__name__}

# PYTHONPATH=. python tests/references/selective_peers.py (scratch environment):
# python 3.11.7, numpy 2.4.6, torch 2.13.0+cpu, torch-uncertainty 0.13.0, torchmetrics
# 1.9.0 (torch's default dtype float64), mapie 1.6.0, scikit-learn 1.9.1
TORCH_UNCERTAINTY = {
    "distinct": {"AURC": 0.1232126850025523, "AUGRC": 0.08235630315157577},
    "overconfident": {"AURC": 0.24479156340619074, "AUGRC": 0.14251102204408816},
    "small": {"AURC": 0.6218253968253967, "AUGRC": 0.3333333333333333},
}
MAPIE = {
    "distinct": {"auarc": 0.876786046339949, "auroc": 0.730732505434992},
    "overconfident": {"auarc": 0.7553520197206217, "auroc": 0.6359972424033515},
    "small": {"auarc": 0.3649659863945578, "auroc": 0.16666666666666669},
    "tied": {"auarc": 0.8700224882432394, "auroc": 0.7392753557165201},
}


# -- oracles: a Python loop over the thresholds -------------------------------------------
def fd_shifts_curve(scores, correct, weights=None):
    """fd-shifts' ``selective_risk_stats`` / ``generalized_risk_stats``, loop by loop.

    Its walk over the rows sorted by ascending confidence, a point written where the
    confidence changes (so ties are never split), coverages descending from 1, the point
    of coverage 0 appended with the last risk (selective) or 0 (generalized); extended
    to weights by summing them where fd-shifts counts rows.  Returned in increasing
    coverage, as the library's curve.
    """
    weights = np.ones(len(scores)) if weights is None else np.asarray(weights, float)
    errors = 1.0 - np.asarray(correct, float)
    thresholds, coverages, risks, generalized = [], [], [], []
    total = weights.sum()
    for threshold in sorted(set(scores.tolist())):
        kept = scores >= threshold
        kept_weight = weights[kept].sum()
        kept_wrong = (weights * errors)[kept].sum()
        thresholds.append(threshold)
        coverages.append(kept_weight / total)
        risks.append(kept_wrong / kept_weight)
        generalized.append(kept_wrong / total)
    coverages = [*coverages, 0.0][::-1]
    risks = [*risks, risks[-1]][::-1]
    generalized = [*generalized, 0.0][::-1]
    return np.array(thresholds[::-1]), np.array(coverages), np.array(risks), np.array(generalized)


def fd_shifts_area(coverages, risks):
    """``-np.trapz(risks, coverages)`` over fd-shifts' descending coverages."""
    return float(trapezoid(risks, coverages))


def _random_set(seed, n=300, ties=True, weighted=False):
    rng = np.random.default_rng(seed)
    scores = rng.uniform(0.3, 1.0, size=n)
    if ties:
        scores = np.round(scores, 1)
    correct = (rng.uniform(size=n) < scores).astype(int)
    weights = rng.uniform(0.1, 3.0, size=n) if weighted else None
    return scores, correct, weights


# -- the hand-computed example --------------------------------------------------------------
def test_the_hand_computed_example():
    # rows (confidence, right): (0.9, 1), (0.8, 1), (0.8, 0), (0.6, 0); kept from the top:
    # 0.9 -> 1 row, 0 wrong; 0.8 -> 3 rows, 1 wrong; 0.6 -> 4 rows, 2 wrong
    confidence, correct = Scores([0.8, 0.6, 0.9, 0.8]), [0, 0, 1, 1]
    curve = risk_coverage_curve(confidence, correct)
    assert_allclose(curve.thresholds, [np.inf, 0.9, 0.8, 0.6], rtol=0)
    assert_allclose(curve.coverage, [0, 1 / 4, 3 / 4, 1], rtol=1e-15)
    assert_allclose(curve.risk, [0, 0, 1 / 3, 1 / 2], rtol=1e-15)
    assert_allclose(curve.generalized_risk, [0, 0, 1 / 4, 1 / 2], rtol=1e-15)
    aurc = 0.25 * 0 + 0.5 * (0 + 1 / 3) / 2 + 0.25 * (1 / 3 + 1 / 2) / 2
    assert_allclose(AURC(confidence, correct), aurc, rtol=1e-15)
    assert_allclose(EAURC(confidence, correct), aurc - 0.5**2 / 2, rtol=1e-14)
    geifman = 0.5 + 0.5 * np.log(0.5)
    assert_allclose(EAURC(confidence, correct, optimal="geifman"), aurc - geifman, rtol=1e-14)
    augrc = 0.5 * (0 + 1 / 4) / 2 + 0.25 * (1 / 4 + 1 / 2) / 2
    assert_allclose(AUGRC(confidence, correct), augrc, rtol=1e-15)
    # row by row (stable order: 0.9 right, then the 0.8 wrong (row 0), the 0.8 right (row 3))
    rates = np.array([0, 1 / 2, 1 / 3, 1 / 2])
    tu = trapezoid(rates, np.arange(1, 5) / 4) / (1 - 1 / 4)
    assert_allclose(AURC(confidence, correct, convention="torch-uncertainty"), tu, rtol=1e-15)
    assert_allclose(AURC(confidence, correct, convention="mapie"), rates.mean(), rtol=1e-15)
    assert coverage_at_risk(confidence, correct, risk=0.4) == 0.75
    assert coverage_at_risk(confidence, correct, risk=0.0) == 0.25
    assert coverage_at_risk(Scores([0.9, 0.5]), [0, 1], risk=0.1) == 0.0  # none meets it
    assert risk_at_coverage(confidence, correct, coverage=0.25) == 0.0
    assert risk_at_coverage(confidence, correct, coverage=0.26) == 1 / 3  # a whole tie
    assert risk_at_coverage(confidence, correct, coverage=1.0) == 0.5
    # pairs (right, wrong): 0.9 beats both; 0.8 beats 0.6, ties 0.8: (1 + 1 + 1 + 0.5) / 4
    assert confidence_auroc(confidence, correct) == 0.875


# -- fd-shifts by its loop ---------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])  # float32: the packed-key sort
def test_the_curve_and_areas_are_fd_shifts_loop(seed, weighted, ties, dtype):
    scores, correct, weights = _random_set(seed, ties=ties, weighted=weighted)
    scores = scores.astype(dtype)
    thresholds, coverages, risks, generalized = fd_shifts_curve(scores, correct, weights)
    curve = risk_coverage_curve(Scores(scores), correct, sample_weight=weights)
    assert_allclose(curve.thresholds[1:], thresholds, rtol=0)
    assert_allclose(curve.coverage, coverages, rtol=1e-12, atol=1e-15)
    assert_allclose(curve.risk, risks, rtol=1e-12, atol=1e-15)
    assert_allclose(curve.generalized_risk, generalized, rtol=1e-12, atol=1e-15)
    area = fd_shifts_area(coverages, risks)
    assert_allclose(AURC(Scores(scores), correct, sample_weight=weights), area, rtol=1e-12)
    generalized_area = fd_shifts_area(coverages, generalized)
    augrc = AUGRC(Scores(scores), correct, sample_weight=weights)
    assert_allclose(augrc, generalized_area, rtol=1e-12)
    # fd-shifts' optimal AURC for 0/1 residuals, err + (1 - err) log(1 - err + eps)
    w = np.ones(len(scores)) if weights is None else weights
    err = np.sum(w * (1 - correct)) / w.sum()
    optimum = err + (1 - err) * np.log(1 - err + np.finfo(float).eps)
    eaurc = EAURC(Scores(scores), correct, optimal="geifman", sample_weight=weights)
    assert_allclose(eaurc, area - optimum, rtol=1e-12)


ULPS = 300 * np.finfo(float).eps  # N ulps: a level met in exact arithmetic is met


def _loop_coverage_at_risk(coverages, risks, risk):
    met = [c for c, r in zip(coverages[1:], risks[1:], strict=True) if r <= risk * (1 + ULPS)]
    return max(met, default=0.0)


def _loop_risk_at_coverage(coverages, risks, coverage):
    points = zip(coverages[1:], risks[1:], strict=True)
    return next(r for c, r in points if c >= coverage * (1 - ULPS))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weighted", [False, True])
def test_the_working_points_are_the_loops_over_the_points(seed, weighted):
    scores, correct, weights = _random_set(seed, weighted=weighted)
    _, coverages, risks, _ = fd_shifts_curve(scores, correct, weights)
    for level in [0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0]:
        found = coverage_at_risk(Scores(scores), correct, risk=level, sample_weight=weights)
        assert_allclose(found, _loop_coverage_at_risk(coverages, risks, level), rtol=1e-12)
    for level in [1e-9, 0.1, 0.25, 0.5, 0.77, 0.99, 1.0]:
        found = risk_at_coverage(Scores(scores), correct, coverage=level, sample_weight=weights)
        assert_allclose(found, _loop_risk_at_coverage(coverages, risks, level), rtol=1e-12)


# -- peers --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(TORCH_UNCERTAINTY))
def test_torch_uncertainty_convention_is_its_aurc_and_augrc(name):
    scores, correct = synthetic_sets()[name]
    both = {"convention": "torch-uncertainty"}
    assert_allclose(AURC(Scores(scores), correct, **both), TORCH_UNCERTAINTY[name]["AURC"], 1e-12)
    augrc = AUGRC(Scores(scores), correct, **both)
    assert_allclose(augrc, TORCH_UNCERTAINTY[name]["AUGRC"], rtol=1e-12)
    # the (N, 2) matrix the peer was given is the same top label
    prob = np.column_stack([1 - scores, scores])
    assert AURC(prob, correct, **both) == AURC(Scores(scores), correct, **both)


@pytest.mark.parametrize("name", sorted(MAPIE))
def test_mapie_convention_is_one_minus_its_auarc_and_the_auroc_is_its_auroc(name):
    scores, correct = synthetic_sets()[name]
    aurc = AURC(Scores(scores), correct, convention="mapie")
    assert_allclose(1 - aurc, MAPIE[name]["auarc"], rtol=1e-12)
    assert_allclose(confidence_auroc(Scores(scores), correct), MAPIE[name]["auroc"], rtol=1e-12)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("weighted", [False, True])
def test_confidence_auroc_is_scikit_learns_roc_auc_score(seed, weighted):
    scores, correct, weights = _random_set(seed, ties=seed % 2 == 0, weighted=weighted)
    expected = roc_auc_score(correct, scores, sample_weight=weights)
    found = confidence_auroc(Scores(scores), correct, sample_weight=weights)
    assert_allclose(found, expected, rtol=1e-12)


def test_on_a_real_file_the_matrix_is_its_top_label():
    prob, labels = load_real("wideresnet-16-4-cifar-10")
    confidence = prob.max(axis=1)
    correct = (prob.argmax(axis=1) == labels).astype(int)
    _, coverages, risks, generalized = fd_shifts_curve(confidence.astype(np.float64), correct)
    assert_allclose(AURC(prob, labels), fd_shifts_area(coverages, risks), rtol=1e-12)
    assert_allclose(AUGRC(prob, labels), fd_shifts_area(coverages, generalized), rtol=1e-12)
    assert_allclose(confidence_auroc(prob, labels), roc_auc_score(correct, confidence), rtol=1e-12)
    for function in [AURC, EAURC, AUGRC, confidence_auroc]:
        assert function(prob, labels) == function(Scores(confidence), correct)


# -- weights, forms, inputs ---------------------------------------------------------------
@pytest.mark.parametrize(("function", "options"), [*[(f, {}) for f in SCALARS], *WORKING_POINTS])
def test_a_weight_of_two_is_a_duplicated_row(function, options):
    scores, correct, _ = _random_set(11, n=120)
    weights = np.random.default_rng(12).integers(0, 4, size=len(scores))
    repeated = np.repeat(np.arange(len(scores)), weights)
    weighted = function(Scores(scores), correct, sample_weight=weights, **options)
    duplicated = function(Scores(scores[repeated]), correct[repeated], **options)
    assert_allclose(weighted, duplicated, rtol=1e-12)
    scaled = function(Scores(scores), correct, sample_weight=2.5 * weights, **options)
    assert_allclose(scaled, weighted, rtol=1e-12)


def test_the_curve_with_weights_is_the_curve_of_duplicated_rows():
    scores, correct, _ = _random_set(13, n=80)
    weights = np.random.default_rng(14).integers(1, 4, size=len(scores))
    repeated = np.repeat(np.arange(len(scores)), weights)
    weighted = risk_coverage_curve(Scores(scores), correct, sample_weight=weights)
    duplicated = risk_coverage_curve(Scores(scores[repeated]), correct[repeated])
    for mine, theirs in zip(vars(weighted).values(), vars(duplicated).values(), strict=True):
        assert_allclose(mine, theirs, rtol=1e-12)


@pytest.mark.parametrize("function", SCALARS, **ids)
def test_the_order_of_the_rows_does_not_count(function):
    scores, correct, weights = _random_set(15, weighted=True)
    order = np.random.default_rng(16).permutation(len(scores))
    mixed = function(Scores(scores[order]), correct[order], sample_weight=weights[order])
    assert_allclose(mixed, function(Scores(scores), correct, sample_weight=weights), rtol=1e-12)


def test_float32_and_logits_give_the_same_ranking():
    rng = np.random.default_rng(17)
    logits = rng.normal(0, 2, size=(500, 5))
    labels = rng.integers(0, 5, size=500)
    prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    assert_allclose(AURC(logits, labels, logits=True), AURC(prob, labels), rtol=1e-12)
    assert_allclose(AURC(prob.astype(np.float32), labels), AURC(prob, labels), rtol=1e-3)
    curve = risk_coverage_curve(prob.astype(np.float32), labels)
    assert curve.thresholds.dtype == np.float64 and curve.coverage[-1] == 1.0


def test_nothing_passed_is_mutated():
    scores, correct, weights = _random_set(18, weighted=True)
    copies = scores.copy(), correct.copy(), weights.copy()
    for function in SCALARS:
        function(Scores(scores), correct, sample_weight=weights)
    risk_coverage_curve(Scores(scores), correct, sample_weight=weights)
    for given_array, copy in zip((scores, correct, weights), copies, strict=True):
        assert np.array_equal(given_array, copy)


def test_classes_name_the_labels():
    prob = np.array([[0.7, 0.3], [0.2, 0.8], [0.6, 0.4], [0.45, 0.55]])
    names = np.array(["cat", "dog", "dog", "cat"])
    assert AURC(prob, names, classes=["cat", "dog"]) == AURC(prob, [0, 1, 1, 0])


# -- refusals ----------------------------------------------------------------------------
@pytest.mark.parametrize("function", [AURC, EAURC, AUGRC], **ids)
def test_the_row_by_row_conventions_refuse_weights(function):
    with pytest.raises(ValueError, match="`sample_weight` does not apply with convention="):
        function(Scores([0.9, 0.6]), [1, 0], convention="torch-uncertainty", sample_weight=[1, 2])


def test_invalid_options_are_refused_by_name():
    with pytest.raises(ValueError, match="`convention` must be 'fd-shifts' or"):
        AURC(Scores([0.9, 0.6]), [1, 0], convention="fd_shifts")
    with pytest.raises(ValueError, match="`convention` must be 'fd-shifts' or 'torch-unc"):
        AUGRC(Scores([0.9, 0.6]), [1, 0], convention="mapie")
    with pytest.raises(ValueError, match="`optimal` must be 'oracle' or 'geifman'"):
        EAURC(Scores([0.9, 0.6]), [1, 0], optimal="best")
    with pytest.raises(ValueError, match=r"`risk` must be a number in \[0, 1\]; got 1.5"):
        coverage_at_risk(Scores([0.9, 0.6]), [1, 0], risk=1.5)
    with pytest.raises(TypeError, match=r"`risk` must be a number in \[0, 1\]; got str"):
        coverage_at_risk(Scores([0.9, 0.6]), [1, 0], risk="0.1")
    with pytest.raises(ValueError, match=r"`coverage` must be a number in \(0, 1\]; got 0"):
        risk_at_coverage(Scores([0.9, 0.6]), [1, 0], coverage=0)
    with pytest.raises(ValueError, match="at least 2 rows with convention='torch-uncertainty'"):
        AURC(Scores([0.9]), [1], convention="torch-uncertainty")


@pytest.mark.parametrize("correct", [[1, 1, 1], [0, 0, 0]])
def test_the_auroc_needs_right_and_wrong_answers(correct):
    kind = "right" if correct[0] else "wrong"
    with pytest.raises(ValueError, match=f"right and wrong answers .* got only {kind} ones"):
        confidence_auroc(Scores([0.9, 0.7, 0.6]), correct)
    assert AURC(Scores([0.9, 0.7, 0.6]), correct) == float(not correct[0])
    assert EAURC(Scores([0.9, 0.7, 0.6]), correct) == 0.0


@pytest.mark.parametrize("function", SCALARS, **ids)
def test_nan_inf_and_a_plain_vector_are_refused(function):
    with pytest.raises(ValueError, match="`Scores` must not contain NaN; row 1 does"):
        function(Scores([0.9, np.nan]), [1, 0])
    with pytest.raises(ValueError, match="`prob`"):
        function(np.array([[0.5, 0.5], [np.inf, 0.0]]), [1, 0])
    with pytest.raises((TypeError, ValueError), match="Scores"):
        function(np.array([0.9, 0.2]), [1, 0])


# -- properties ----------------------------------------------------------------------------
@st.composite
def selective_sets(draw):
    n = draw(st.integers(1, 40))
    levels = draw(st.integers(1, 6))
    scores = np.array(draw(st.lists(st.integers(0, levels), min_size=n, max_size=n))) / levels
    correct = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    weights = draw(st.none() | st.just(np.array(draw(st.lists(
        st.integers(1, 5), min_size=n, max_size=n)), dtype=float)))  # fmt: skip
    return scores, correct, weights


@given(selective_sets())
def test_aurc_lies_between_the_oracle_and_the_reversed_oracle(data):
    scores, correct, weights = data
    w = np.ones(len(scores)) if weights is None else weights
    err = np.sum(w * (1 - correct)) / w.sum()
    aurc = AURC(Scores(scores), correct, sample_weight=weights)
    low = err if err in (0.0, 1.0) else err**2 / 2  # the oracle confidence's
    high = err if err in (0.0, 1.0) else 1 - (1 - err) ** 2 / 2  # the reversed oracle's
    assert low - 1e-12 <= aurc <= high + 1e-12
    oracle = AURC(Scores(correct.astype(float)), correct, sample_weight=weights)
    reversed_oracle = AURC(Scores(1.0 - correct), correct, sample_weight=weights)
    assert_allclose([oracle, reversed_oracle], [low, high], rtol=1e-12, atol=1e-15)
    # a constant confidence (one tie) has the risk of keeping everything
    constant = AURC(Scores(np.full(len(scores), 0.5)), correct, sample_weight=weights)
    assert_allclose(constant, err, rtol=1e-12, atol=1e-15)
    augrc = AUGRC(Scores(scores), correct, sample_weight=weights)
    assert -1e-15 <= augrc <= min(aurc, err) + 1e-12


@given(selective_sets())
def test_eaurc_is_never_negative(data):
    scores, correct, weights = data
    assert EAURC(Scores(scores), correct, sample_weight=weights) >= -1e-15


@given(selective_sets())
def test_the_last_point_is_full_coverage_at_the_overall_error_rate(data):
    scores, correct, weights = data
    w = np.ones(len(scores)) if weights is None else weights
    curve = risk_coverage_curve(Scores(scores), correct, sample_weight=weights)
    assert curve.coverage[0] == 0.0 and curve.coverage[-1] == 1.0
    assert_allclose(curve.risk[-1], np.sum(w * (1 - correct)) / w.sum(), rtol=1e-12)
    assert_allclose(curve.generalized_risk[-1], curve.risk[-1], rtol=1e-12)
    assert len(curve.thresholds) == len(np.unique(scores)) + 1
    assert np.all(np.diff(curve.coverage) > 0) and np.all(np.diff(curve.thresholds) < 0)
    assert_allclose(curve.generalized_risk, curve.coverage * curve.risk, rtol=1e-12)
