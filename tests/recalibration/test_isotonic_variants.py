"""Centred isotonic regression and the pooled multiclass map of ``IsotonicCalibration``.

The oracle is the definition written as loops: the pool-adjacent-violators loop over the
distinct scores (pool the first violating pair, one pair at a time), with centred isotonic
regression's extra violators (equal neighbours off the bounds 0 and 1) and its pooled
scores (Oron & Flournoy 2017, section 2), then linear interpolation between the points.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import rankdata

from calibration_toolbox.recalibration import nonparametric
from calibration_toolbox.recalibration.nonparametric import IsotonicCalibration
from tests.conftest import load_real


def loop_points(scores, targets, weights, centred):
    """The fitted points of (centred) isotonic regression, by the loop of the definition."""
    points = []  # [score, value, weight] per distinct score, increasing
    for score, target, weight in sorted(zip(scores, targets, weights, strict=True)):
        if points and points[-1][0] == score:
            last = points[-1]
            last[1] = (last[1] * last[2] + target * weight) / (last[2] + weight)
            last[2] += weight
        else:
            points.append([float(score), float(target), float(weight)])
    low, high = points[0][0], points[-1][0]
    blocks = [[point[0], point[1], point[2], point[0], point[0]] for point in points]
    while True:
        violator = None
        for index in range(len(blocks) - 1):
            left, right = blocks[index][1], blocks[index + 1][1]
            flat = centred and left == right and left not in (0.0, 1.0)
            if left > right or flat:
                violator = index
                break
        if violator is None:
            break
        left, right = blocks[violator], blocks.pop(violator + 1)
        total = left[2] + right[2]
        left[0] = (left[0] * left[2] + right[0] * right[2]) / total
        left[1] = (left[1] * left[2] + right[1] * right[2]) / total
        left[2] = total
        left[4] = right[4]
    if not centred:  # isotonic regression: every distinct score keeps its point
        knots = [point[0] for point in points]
        values = []
        for block in blocks:
            values += [block[1]] * sum(block[3] <= knot <= block[4] for knot in knots)
        return np.array(knots), np.array(values)
    knots, values = [block[0] for block in blocks], [block[1] for block in blocks]
    if knots[0] > low:  # extended flat to the range of the scores, as cir::cirPAVA does
        knots, values = [low, *knots], [values[0], *values]
    if knots[-1] < high:
        knots, values = [*knots, high], [*values, values[-1]]
    return np.array(knots), np.array(values)


def loop_map(scores, targets, weights, centred, queries):
    knots, values = loop_points(scores, targets, weights, centred)
    return np.array([np.interp(query, knots, values) for query in queries])


def binary_problem(rng, n_samples, n_levels=None):
    scores = rng.uniform(size=n_samples)
    if n_levels:  # ties
        scores = np.round(scores * n_levels) / n_levels
    labels = (rng.uniform(size=n_samples) < scores).astype(int)
    return scores, labels


@pytest.mark.parametrize("n_levels", [None, 7])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("centred", [False, True])
def test_binary_map_matches_the_loop_oracle(rng, n_levels, weighted, centred):
    scores, labels = binary_problem(rng, 200, n_levels)
    weights = rng.uniform(0.5, 2.0, size=len(scores)) if weighted else np.ones(len(scores))
    model = IsotonicCalibration(centred=centred).fit(
        scores, labels, sample_weight=weights if weighted else None
    )
    queries = np.concatenate([scores, rng.uniform(size=100), [0.0, 1.0]])
    expected = loop_map(scores, labels, weights, centred, queries)
    assert_allclose(model.predict_proba(queries)[:, 1], expected, rtol=1e-12, atol=1e-15)


@pytest.mark.filterwarnings("ignore:classes .* never occur:UserWarning")
@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 12), st.booleans(), st.integers(1, 3)), min_size=1, max_size=40
    )
)
def test_centred_points_match_the_loop_oracle(rows):
    scores = np.array([row[0] for row in rows], dtype=float) / 12
    labels = np.array([row[1] for row in rows], dtype=int)
    weights = np.array([row[2] for row in rows], dtype=float)
    model = IsotonicCalibration(centred=True).fit(scores, labels, sample_weight=weights)
    knots, values = loop_points(scores, labels, weights, centred=True)
    # A run of points at 0 (or 1) is one flat piece: only its ends are stored.
    inner = np.zeros(len(values), dtype=bool)
    inner[1:-1] = (values[1:-1] == values[:-2]) & (values[1:-1] == values[2:])
    inner &= (values == 0) | (values == 1)
    knots, values = knots[~inner], values[~inner]
    assert_allclose(model.breakpoints_, knots, rtol=1e-12, atol=0)
    assert_allclose(model.breakpoint_values_, values, rtol=1e-12, atol=1e-15)


def roc_auc(scores, labels):
    """Mann-Whitney AUROC, ties counted one half."""
    ranks = rankdata(scores)
    positives = labels == 1
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return (ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


@pytest.mark.parametrize("seed", range(5))
def test_centred_map_keeps_the_auroc(seed):
    rng = np.random.default_rng(seed)
    scores, labels = binary_problem(rng, 500)
    labels[np.argmin(scores)], labels[np.argmax(scores)] = 0, 1
    calibrated = IsotonicCalibration(centred=True).fit(scores, labels).predict_proba(scores)
    plain = IsotonicCalibration().fit(scores, labels).predict_proba(scores)
    auroc = roc_auc(scores, labels)
    assert roc_auc(calibrated[:, 1], labels) == pytest.approx(auroc, rel=1e-12)
    # Isotonic regression's flat steps tie scores of both classes: on the calibration set
    # its AUROC is that of the ROC convex hull, not the scores'.
    assert roc_auc(plain[:, 1], labels) > auroc + 1e-3


def test_centred_map_is_strictly_increasing_off_the_bounds(rng):
    scores, labels = binary_problem(rng, 400)
    model = IsotonicCalibration(centred=True).fit(scores, labels)
    knots, values = model.breakpoints_, model.breakpoint_values_
    inside = np.sort(rng.uniform(knots[0], knots[-1], size=2000))
    mapped = model.predict_proba(inside)[:, 1]
    interior = (mapped[:-1] > 0) & (mapped[1:] < 1)
    assert (np.diff(mapped)[interior] > 0).all()
    assert ((values > 0) & (values < 1)).sum() >= 3  # the check above is not vacuous


def test_centred_end_blocks_are_extended_flat():
    scores = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    labels = np.array([0, 1, 0, 1, 0, 1])
    model = IsotonicCalibration(centred=True).fit(scores, labels)
    # Blocks {0.1}: 0, {0.2, 0.3}: 1/2 at 0.25, {0.7, 0.8}: 1/2 pooled with it (equal, off
    # the bounds) -> {0.2, 0.3, 0.7, 0.8}: 1/2 at 0.5, {0.9}: 1.
    assert_allclose(model.breakpoints_, [0.1, 0.5, 0.9], rtol=1e-15)
    assert_allclose(model.breakpoint_values_, [0.0, 0.5, 1.0], rtol=1e-15)
    mixed = IsotonicCalibration(centred=True).fit([0.1, 0.2, 0.3, 0.4], [1, 0, 0, 1])
    # One block {0.1, 0.2, 0.3}: 1/3 at 0.2, extended to 0.1; then {0.4}: 1.
    assert_allclose(mixed.breakpoints_, [0.1, 0.2, 0.4], rtol=1e-15)
    assert_allclose(mixed.breakpoint_values_, [1 / 3, 1 / 3, 1.0], rtol=1e-15)


@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_pooled_map_matches_the_loop_oracle(rng, centred, weighted, n_classes):
    logits = rng.normal(scale=2.0, size=(150, n_classes))
    prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    prob = np.round(prob, 2)  # ties across rows and classes
    prob /= prob.sum(axis=1, keepdims=True)
    labels = rng.integers(n_classes, size=150)
    weights = rng.uniform(0.5, 2.0, size=150) if weighted else np.ones(150)
    model = IsotonicCalibration(mode="pooled", centred=centred).fit(
        prob, labels, sample_weight=weights if weighted else None
    )
    hits = labels[:, None] == np.arange(n_classes)
    entry_weights = np.repeat(weights, n_classes)
    test = np.abs(rng.normal(size=(40, n_classes)))
    test /= test.sum(axis=1, keepdims=True)
    mapped = loop_map(
        prob.reshape(-1), hits.reshape(-1), entry_weights, centred, test.reshape(-1)
    ).reshape(test.shape)
    expected = np.full_like(mapped, 1 / n_classes)
    totals = mapped.sum(axis=1, keepdims=True)
    np.divide(mapped, totals, out=expected, where=totals > 0)
    assert_allclose(model.predict_proba(test), expected, rtol=1e-12, atol=1e-15)
    assert model.breakpoint_offsets_.tolist() == [0, len(model.breakpoints_)]


def test_pooled_one_dimensional_input_pools_both_columns():
    p = np.array([0.1, 0.4, 0.35, 0.8, 0.9])
    labels = np.array([0, 0, 1, 1, 1])
    one_column = IsotonicCalibration(mode="pooled").fit(p, labels)
    two_columns = IsotonicCalibration(mode="pooled").fit(np.stack([1 - p, p], axis=1), labels)
    assert_array_equal(one_column.breakpoints_, two_columns.breakpoints_)
    # One map over the 10 entries: 1 - p against y == 0 as well as p against y == 1.
    entries = np.concatenate([1 - p, p])
    hits = np.concatenate([labels == 0, labels == 1])
    mapped = loop_map(entries, hits, np.ones(10), False, entries).reshape(2, 5).T
    expected = mapped / mapped.sum(axis=1, keepdims=True)
    assert_allclose(one_column.predict_proba(p), expected, rtol=1e-12)


@pytest.mark.parametrize(
    "params", [{"centred": True}, {"mode": "pooled"}, {"mode": "top-label", "centred": True}]
)
def test_variants_save_and_load(rng, tmp_path, params):
    logits = rng.normal(size=(300, 3))
    prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = rng.integers(3, size=300)
    model = IsotonicCalibration(**params).fit(prob, labels)
    model.save(tmp_path / "model.json")
    loaded = IsotonicCalibration.load(tmp_path / "model.json")
    assert loaded.get_params() == model.get_params()
    assert_array_equal(loaded.predict_proba(prob), model.predict_proba(prob))


def test_a_file_written_before_the_variants_still_loads(rng):
    prob = rng.dirichlet(np.ones(3), size=100)
    labels = rng.integers(3, size=100)
    model = IsotonicCalibration().fit(prob, labels)
    description = model.to_dict()
    del description["params"]["centred"]  # as the release before `centred` wrote it
    loaded = IsotonicCalibration.from_dict(description)
    assert loaded.centred is False
    assert_array_equal(loaded.predict_proba(prob), model.predict_proba(prob))


@pytest.mark.parametrize(
    ("estimator", "error", "message"),
    [
        (
            IsotonicCalibration(centred="yes"),
            TypeError,
            r"`centred` must be True or False; got 'yes'\.",
        ),
        (
            IsotonicCalibration(mode="pool"),
            ValueError,
            r"`mode` must be 'one-vs-rest' or 'top-label' or 'pooled'; got 'pool'\.",
        ),
    ],
)
def test_invalid_variant_settings(estimator, error, message):
    with pytest.raises(error, match=message):
        estimator.fit([[0.3, 0.7], [0.6, 0.4]], [1, 0])


def test_pooled_out_of_bounds_names_the_probabilities():
    model = IsotonicCalibration(mode="pooled", out_of_bounds="raise")
    model.fit([[0.3, 0.7], [0.6, 0.4]], [1, 0])
    with pytest.raises(ValueError, match=r"the score 0\.2 in the probabilities, outside"):
        model.predict_proba([[0.2, 0.8]])


def test_centred_in_chunks_of_classes(rng, monkeypatch):
    prob = rng.dirichlet(np.ones(5), size=200)
    labels = rng.integers(5, size=200)
    whole = IsotonicCalibration(centred=True).fit(prob, labels)
    monkeypatch.setattr(nonparametric, "SORT_CHUNK_ELEMENTS", 400)
    chunked = IsotonicCalibration(centred=True).fit(prob, labels)
    assert_array_equal(chunked.breakpoints_, whole.breakpoints_)
    assert_array_equal(chunked.breakpoint_offsets_, whole.breakpoint_offsets_)


def test_real_predictions_pooled_and_centred_calibrate():
    prob, labels = load_real("densenet-bc-100-cifar-100")
    order = np.random.default_rng(0).permutation(len(labels))
    fit_rows, test_rows = order[: len(order) // 2], order[len(order) // 2 :]
    for params in ({"mode": "pooled"}, {"centred": True, "mode": "top-label"}):
        model = IsotonicCalibration(**params).fit(prob[fit_rows], labels[fit_rows])
        calibrated = model.predict_proba(prob[test_rows])
        assert_allclose(calibrated.sum(axis=1), 1.0, rtol=0, atol=1e-12)
        before = -np.log(prob[test_rows, labels[test_rows]].clip(1e-15)).mean()
        after = -np.log(calibrated[np.arange(len(test_rows)), labels[test_rows]].clip(1e-15))
        assert after.mean() < before
