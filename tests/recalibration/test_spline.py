"""SplineCalibration: a loop oracle, the paper's own code, and KS on the real files."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.interpolate
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from spline_official import spline_sets

import calibration_toolbox as ct
from calibration_toolbox.recalibration.spline import SplineCalibration
from tests.conftest import DATA_DIR, load_real

# Printed by `python tests/references/spline_official.py --official DIR` (its docstring
# says which copy of the paper's code): `func.y` of get_recalibration_function(scores,
# labels, 'natural', 6) at the positions PICKS of the sorted calibration scores, and
# `func` at a calibration score (the 12th) and midway between the 11th and the 12th.
OFFICIAL = {
    "seed0-n2000-power2": {
        "values": {
            0: -0.05538205050423971,
            1: -0.05535094676986636,
            17: -0.04871701106682565,
            250: 0.029182132890852003,
            999: 0.2480287609464833,
            1500: 0.5511454614180307,
            1998: 0.9536203946008028,
            1999: 0.9550549948589984,
        },
        "at_midpoint_10_11": -0.051073618098596,
        "at_score_11": -0.051222622647272724,
    },
    "seed1-n3000-power0.5": {
        "values": {
            0: 0.1911522804714056,
            1: 0.19182456074533974,
            17: 0.1981728913886412,
            250: 0.27846951453970914,
            999: 0.5709988623150787,
            1500: 0.7149096434698794,
            2998: 1.021872258037833,
            2999: 1.0222524058483429,
        },
        "at_midpoint_10_11": 0.19596546659500583,
        "at_score_11": 0.19589110502315402,
    },
    "seed2-n2500-power1": {
        "values": {
            0: -0.010847514891986362,
            1: -0.010322183041101173,
            17: -0.005676959359614589,
            250: 0.09769846515369651,
            999: 0.4120518711602358,
            1500: 0.6122705961567174,
            2498: 0.9608551768702075,
            2499: 0.9612618837759506,
        },
        "at_midpoint_10_11": -0.007532813747006745,
        "at_score_11": -0.007600441240960323,
    },
    "lenet-5-cifar-10-top-label-3000": {
        "values": {
            0: 0.11800287150066677,
            1: 0.11837480045577964,
            17: 0.1557820071088928,
            250: 0.25680280925197524,
            999: 0.3971713541917054,
            1500: 0.5051542349740086,
            2998: 0.9408422873332918,
            2999: 0.9410962795659634,
        },
        "at_midpoint_10_11": 0.14594725941534975,
        "at_score_11": 0.145472461309745,
    },
}


def oracle(scores, targets, weights=None, n_knots=6, positions="fraction"):
    """The paper's construction written out, one row and one basis function at a time.

    Returns the distinct sorted scores and their calibrated values before the clip.
    ``positions='fraction'`` puts the j-th sorted row at (cumulative weight) / (total),
    ``'linspace'`` at ``linspace(0, 1, N)`` as the paper's code does (unweighted only).
    The basis comes from ``make_interp_spline`` (B-splines), not from the ``CubicSpline``
    the class uses, and the least squares from an SVD of the full design.
    """
    scores = [float(s) for s in scores]
    n = len(scores)
    weights = [1.0] * n if weights is None else [float(w) for w in weights]
    order = sorted(range(n), key=lambda i: (scores[i], weights[i]))
    # Tied scores share their weighted mean label.
    pooled = {}
    for i in order:
        total, positives = pooled.get(scores[i], (0.0, 0.0))
        pooled[scores[i]] = (total + weights[i], positives + weights[i] * float(targets[i]))
    total_weight = sum(weights)
    walk, xs, cumulative, gap = [], [], 0.0, 0.0
    for i in order:
        weight_sum, positives = pooled[scores[i]]
        gap += weights[i] * (positives / weight_sum - scores[i]) / total_weight
        cumulative += weights[i]
        walk.append(gap)
        xs.append(cumulative / total_weight)
    if positions == "linspace":
        xs = list(np.linspace(0.0, 1.0, n))
    knots = np.linspace(0.0, 1.0, n_knots)
    design = np.empty((n, n_knots))
    slopes = np.empty((n, n_knots))
    for column in range(n_knots):
        spline = scipy.interpolate.make_interp_spline(
            knots, np.eye(n_knots)[column], k=3, bc_type="natural"
        )
        design[:, column] = spline(xs)
        slopes[:, column] = spline(xs, 1)
    root = np.sqrt([weights[i] for i in order])
    knot_values = np.linalg.lstsq(design * root[:, None], np.array(walk) * root, rcond=None)[0]
    values = {}
    for row, i in enumerate(order):
        value = scores[i] + float(slopes[row] @ knot_values)
        total, weighted = values.get(scores[i], (0.0, 0.0))
        values[scores[i]] = (total + weights[i], weighted + weights[i] * value)
    distinct = sorted(values)
    return np.array(distinct), np.array([values[s][1] / values[s][0] for s in distinct])


def sets_with_real():
    return spline_sets(DATA_DIR if DATA_DIR.exists() else None)


@pytest.mark.parametrize("name", sorted(OFFICIAL))
def test_oracle_reproduces_the_papers_code_on_its_parametrisation(name):
    sets = sets_with_real()
    if name not in sets:
        pytest.skip("real predictions not found")
    scores, labels = sets[name]
    _, values = oracle(scores, labels, positions="linspace")
    for pick, expected in OFFICIAL[name]["values"].items():
        assert_allclose(values[pick], expected, rtol=1e-10, atol=1e-13)
    # The paper's interpolation swaps its two weights: at the 12th sorted calibration score
    # it returns the value of the 11th (the line from the 11th to the 12th value ends at the
    # 12th); midway, where the weights are equal, it is the straight line's value.
    assert_allclose(OFFICIAL[name]["at_score_11"], values[10], rtol=1e-10)
    assert abs(OFFICIAL[name]["at_score_11"] - values[11]) > 1e-6
    assert_allclose(OFFICIAL[name]["at_midpoint_10_11"], (values[10] + values[11]) / 2, rtol=1e-10)


@pytest.mark.parametrize("name", sorted(OFFICIAL))
def test_close_to_the_papers_code_which_places_points_at_linspace(name):
    """Only the positions differ: j / N here, (j - 1) / (N - 1) there, an O(1/N) change."""
    sets = sets_with_real()
    if name not in sets:
        pytest.skip("real predictions not found")
    scores, labels = sets[name]
    fitted = SplineCalibration().fit(scores, labels)
    ordered = np.sort(scores)
    for pick, expected in OFFICIAL[name]["values"].items():
        ours = fitted.predict_proba([ordered[pick]])[0, 1]
        assert abs(ours - np.clip(expected, 0, 1)) < 5 / len(scores)


def tied_set(seed, n=600, decimals=2):
    rng = np.random.default_rng(seed)
    scores = np.round(rng.uniform(size=n), decimals)
    return scores, (rng.uniform(size=n) < scores**1.5).astype(int)


@pytest.mark.parametrize("n_knots", [2, 3, 6, 11])
@pytest.mark.parametrize("seed", [0, 1])
def test_binary_fit_equals_the_oracle(seed, n_knots):
    scores, labels = tied_set(seed)
    fitted = SplineCalibration(knots=n_knots).fit(scores, labels)
    distinct, values = oracle(scores, labels, n_knots=n_knots)
    assert_array_equal(fitted.breakpoints_, distinct)
    assert_allclose(fitted.breakpoint_values_, np.clip(values, 0, 1), rtol=1e-12, atol=1e-14)
    assert fitted.knot_values_.shape == (1, n_knots)


def test_weighted_fit_equals_the_oracle():
    scores, labels = tied_set(2)
    weights = np.random.default_rng(3).uniform(0.1, 3.0, size=len(scores))
    fitted = SplineCalibration().fit(scores, labels, sample_weight=weights)
    distinct, values = oracle(scores, labels, weights)
    assert_array_equal(fitted.breakpoints_, distinct)
    assert_allclose(fitted.breakpoint_values_, np.clip(values, 0, 1), rtol=1e-12, atol=1e-14)


def multiclass_set(seed, n=900, n_classes=4):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, n_classes)) * 2.5
    prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = np.array(
        [rng.choice(n_classes, p=row) for row in (prob**0.7 / (prob**0.7).sum(1, keepdims=True))]
    )
    return prob, labels


def test_top_label_fit_is_the_binary_fit_of_the_confidence():
    prob, labels = multiclass_set(4)
    fitted = SplineCalibration().fit(prob, labels)
    confidence = prob.max(axis=1)
    correct = prob.argmax(axis=1) == labels
    distinct, values = oracle(confidence, correct)
    assert_allclose(fitted.breakpoints_, distinct, rtol=0)
    assert_allclose(fitted.breakpoint_values_, np.clip(values, 0, 1), rtol=1e-12, atol=1e-14)
    # The predicted class gets the map's value; the others share the rest in proportion.
    probs = fitted.predict_proba(prob)
    rows = np.arange(len(prob))
    expected_top = np.interp(confidence, distinct, np.clip(values, 0, 1))
    assert_allclose(probs[rows, prob.argmax(axis=1)], expected_top, rtol=1e-12, atol=1e-15)
    others = prob.copy()
    others[rows, prob.argmax(axis=1)] = 0
    shares = others / others.sum(axis=1, keepdims=True) * (1 - expected_top)[:, None]
    shares[rows, prob.argmax(axis=1)] = expected_top
    assert_allclose(probs, shares, rtol=1e-12, atol=1e-15)


def test_one_vs_rest_fits_each_column_then_renormalises():
    prob, labels = multiclass_set(5)
    fitted = SplineCalibration(mode="one-vs-rest").fit(prob, labels)
    columns = []
    for k in range(prob.shape[1]):
        distinct, values = oracle(prob[:, k], labels == k)
        run = slice(fitted.breakpoint_offsets_[k], fitted.breakpoint_offsets_[k + 1])
        assert_allclose(fitted.breakpoints_[run], distinct, rtol=0)
        assert_allclose(
            fitted.breakpoint_values_[run], np.clip(values, 0, 1), rtol=1e-12, atol=1e-14
        )
        columns.append(np.interp(prob[:, k], distinct, np.clip(values, 0, 1)))
    columns = np.stack(columns, axis=1)
    assert_allclose(
        fitted.predict_proba(prob), columns / columns.sum(1, keepdims=True), rtol=1e-12
    )


def test_binary_is_one_map_on_the_positive_class_in_either_mode():
    scores, labels = tied_set(6)
    two_columns = np.stack([1 - scores, scores], axis=1)
    top = SplineCalibration().fit(two_columns, labels)
    ovr = SplineCalibration(mode="one-vs-rest").fit(scores, labels)
    assert top.mode_ == ovr.mode_ == "one-vs-rest"
    assert_array_equal(top.predict_proba(scores), ovr.predict_proba(two_columns))


def test_new_scores_interpolate_linearly_and_clamp_at_the_ends():
    scores, labels = tied_set(7)
    fitted = SplineCalibration().fit(scores, labels)
    knots, values = fitted.breakpoints_, fitted.breakpoint_values_
    middle = (knots[3] + knots[4]) / 2
    quarter = knots[3] + (knots[4] - knots[3]) / 4
    queries = [knots[0] / 2, middle, quarter, knots[4], 1.0]
    got = fitted.predict_proba(queries)[:, 1]
    expected = [values[0], (values[3] + values[4]) / 2, 0.75 * values[3] + 0.25 * values[4]]
    assert_allclose(got[:3], expected, rtol=1e-12)
    assert got[3] == values[4] and got[4] == values[-1]


@pytest.mark.filterwarnings("ignore:classes .* never occur")
@given(st.lists(st.integers(0, 20), min_size=8, max_size=60), st.randoms(use_true_random=False))
def test_the_order_of_rows_does_not_matter_and_values_stay_in_the_unit_interval(ticks, random):
    scores = np.array(ticks) / 20
    labels = np.array([random.random() < s for s in scores], dtype=int)
    permutation = np.array(random.sample(range(len(scores)), len(scores)))
    fitted = SplineCalibration().fit(scores, labels)
    shuffled = SplineCalibration().fit(scores[permutation], labels[permutation])
    assert_array_equal(fitted.breakpoints_, shuffled.breakpoints_)
    assert_allclose(fitted.breakpoint_values_, shuffled.breakpoint_values_, rtol=0, atol=1e-13)
    assert (fitted.breakpoint_values_ >= 0).all() and (fitted.breakpoint_values_ <= 1).all()


def test_a_constant_weight_changes_nothing_but_integer_weights_are_not_duplicates():
    scores, labels = tied_set(8)
    weights = np.random.default_rng(9).integers(1, 4, size=len(scores))
    once = SplineCalibration().fit(scores, labels, sample_weight=weights)
    scaled = SplineCalibration().fit(scores, labels, sample_weight=weights * 3.5)
    assert_allclose(once.breakpoint_values_, scaled.breakpoint_values_, rtol=1e-13, atol=1e-15)
    repeated = SplineCalibration().fit(np.repeat(scores, weights), np.repeat(labels, weights))
    difference = np.abs(once.breakpoint_values_ - repeated.breakpoint_values_).max()
    assert 1e-6 < difference < 0.05  # close, not equal: the documented departure


def test_reduces_top_label_ks_error_on_the_real_files(real_predictions):
    name, prob, labels = real_predictions
    half = len(labels) // 2
    fitted = SplineCalibration().fit(prob[:half], labels[:half])
    before = ct.KSCE(prob[half:], labels[half:])
    after = ct.KSCE(fitted.predict_proba(prob[half:]), labels[half:])
    assert after < before, (name, before, after)


def test_real_file_values_are_finite_normalised_probabilities():
    prob, labels = load_real("wideresnet-16-4-cifar-100")
    for mode in ("top-label", "one-vs-rest"):
        probs = SplineCalibration(mode=mode).fit(prob[:5000], labels[:5000]).predict_proba(prob)
        assert np.isfinite(probs).all() and probs.min() >= 0
        assert_allclose(probs.sum(axis=1), 1, atol=1e-12)


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"knots": 1}, ValueError, r"`knots` must be an integer >= 2; got 1\."),
        ({"knots": 2.5}, TypeError, r"`knots` must be an integer >= 2; got"),
        ({"mode": "top"}, ValueError, r"`mode` must be"),
    ],
)
def test_bad_parameters_name_themselves(params, error, message):
    scores, labels = tied_set(10)
    with pytest.raises(error, match=message):
        SplineCalibration(**params).fit(scores, labels)


def test_fewer_rows_than_knots_is_refused():
    with pytest.raises(ValueError, match=r"`X` must have at least 6 rows .* got 5\."):
        SplineCalibration().fit([0.1, 0.2, 0.3, 0.4, 0.5], [0, 1, 0, 1, 1])
    with pytest.raises(ValueError, match=r"got 3\."):
        SplineCalibration().fit(
            [0.1, 0.2, 0.3, 0.4, 0.5, 0.6], [0, 1, 1, 1, 1, 1], sample_weight=[1, 0, 1, 0, 0, 1]
        )


def test_with_weights_the_order_of_rows_does_not_matter_either():
    scores, labels = tied_set(11, decimals=1)
    weights = np.random.default_rng(12).uniform(0.5, 2.0, size=len(scores))
    permutation = np.random.default_rng(13).permutation(len(scores))
    fitted = SplineCalibration().fit(scores, labels, sample_weight=weights)
    shuffled = SplineCalibration().fit(
        scores[permutation], labels[permutation], sample_weight=weights[permutation]
    )
    assert_allclose(fitted.breakpoint_values_, shuffled.breakpoint_values_, rtol=0, atol=1e-13)
