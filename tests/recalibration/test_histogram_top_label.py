"""Top-label histogram binning (Gupta & Ramdas 2022): ``HistogramBinning(mode='top-label')``.

The reference is a row-by-row loop oracle written from the paper's definition: per
predicted class, the confidences of the rows predicted as that class are binned, and a bin
predicts the (weighted) fraction of its rows whose prediction is right.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from calibration_toolbox.recalibration.nonparametric import HistogramBinning
from tests.conftest import load_real


def _prediction(row):
    """The first class of largest probability, and that probability (a Python loop)."""
    best = 0
    for k in range(1, len(row)):
        if row[k] > row[best]:
            best = k
    return best, float(row[best])


def _bin_of(confidence, interior, adaptive):
    """Equal mass: ``#{j : e_j <= c}``; equal width: ``(lo, hi]``, bin 0 closed at 0."""
    if adaptive:
        return sum(1 for edge in interior if edge <= confidence)
    return sum(1 for edge in interior if edge < confidence)


def oracle_fit(prob, labels, weights, n_bins, adaptive, edges=None):
    """Edges, bin values and bin weights per predicted class, one row and bin at a time
    (the unweighted equal-mass edges, unless ``edges`` are given)."""
    n_samples, n_classes = prob.shape
    weights = np.ones(n_samples) if weights is None else weights
    given = edges is not None
    if not given:
        edges = np.tile(np.linspace(0.0, 1.0, n_bins + 1), (n_classes, 1))
    values = np.empty((n_classes, n_bins))
    totals = np.zeros((n_classes, n_bins))
    rows = [_prediction(prob[i]) for i in range(n_samples)]
    for k in range(n_classes):
        mine = [i for i in range(n_samples) if rows[i][0] == k]
        if adaptive and mine and not given:
            ordered = sorted(rows[i][1] for i in mine)
            for j in range(1, n_bins):
                # Nixon et al.'s position round(n j / B), half to even (Python's round)
                edges[k, j] = ordered[min(round(len(mine) * j / n_bins), len(mine) - 1)]
        correct = np.zeros(n_bins)
        for i in mine:
            b = _bin_of(rows[i][1], edges[k, 1:-1], adaptive)
            totals[k, b] += weights[i]
            correct[b] += weights[i] * (labels[i] == k)
        for b in range(n_bins):
            centre = (edges[k, b] + edges[k, b + 1]) / 2
            values[k, b] = correct[b] / totals[k, b] if totals[k, b] > 0 else centre
    return edges, values, totals


def oracle_predict(prob, edges, values, adaptive):
    """The bin value for the confidence; the others share the rest in proportion."""
    out = np.empty(prob.shape)
    n_classes = prob.shape[1]
    for i, row in enumerate(prob):
        k, confidence = _prediction(row)
        g = values[k, _bin_of(confidence, edges[k, 1:-1], adaptive)]
        rest = sum(float(row[j]) for j in range(n_classes) if j != k)
        for j in range(n_classes):
            if j == k:
                out[i, j] = g
            elif rest > 0:
                out[i, j] = float(row[j]) / rest * (1 - g)
            else:
                out[i, j] = (1 - g) / (n_classes - 1)
    return out


def _problem(rng, n_samples, n_classes, dtype=np.float64, decimals=None):
    prob = rng.dirichlet(np.full(n_classes, 0.7), size=n_samples)
    if decimals is not None:  # ties in the confidence
        prob = np.round(prob, decimals)
        prob /= prob.sum(axis=1, keepdims=True)
    labels = rng.integers(0, n_classes, n_samples)
    return prob.astype(dtype), labels


@pytest.mark.parametrize("adaptive", [False, True], ids=["equal-width", "equal-mass"])
@pytest.mark.parametrize(
    ("n_samples", "n_classes", "n_bins", "dtype", "decimals"),
    [
        (300, 4, 5, np.float64, None),
        (301, 3, 7, np.float32, None),
        (250, 5, 4, np.float64, 1),  # many tied confidences
        (200, 2, 6, np.float64, None),  # binary: one histogram per predicted class
        (40, 10, 3, np.float64, None),  # classes never predicted
    ],
)
def test_fit_and_predict_equal_the_loop_oracle(
    rng, adaptive, n_samples, n_classes, n_bins, dtype, decimals
):
    prob, labels = _problem(rng, n_samples, n_classes, dtype, decimals)
    model = HistogramBinning(n_bins, adaptive, mode="top-label").fit(prob, labels)
    edges, values, totals = oracle_fit(prob, labels, None, n_bins, adaptive)
    assert_array_equal(model.bin_edges_, edges)
    assert_allclose(model.bin_probabilities_, values, rtol=1e-12, atol=0)
    assert_array_equal(model.bin_weights_, totals)
    test, _ = _problem(rng, 200, n_classes, dtype)
    expected = oracle_predict(test, edges, values, adaptive)
    assert_allclose(model.predict_proba(test), expected, rtol=1e-12, atol=1e-15)


def test_weighted_equal_width_equals_the_oracle(rng):
    prob, labels = _problem(rng, 400, 4)
    weights = rng.uniform(0.1, 3.0, 400)
    model = HistogramBinning(6, mode="top-label").fit(prob, labels, sample_weight=weights)
    edges, values, totals = oracle_fit(prob, labels, weights, 6, False)
    assert_array_equal(model.bin_edges_, edges)
    assert_allclose(model.bin_probabilities_, values, rtol=1e-12, atol=0)
    assert_allclose(model.bin_weights_, totals, rtol=1e-12, atol=0)


def oracle_weighted_edges(prob, weights, n_bins):
    """Weighted equal-mass edges per predicted class, in exact arithmetic: edge ``j`` is the
    confidence whose weight interval ``[c_(i-1), c_i)`` holds ``round(n j / B) W / n``."""
    edges = np.tile(np.linspace(0.0, 1.0, n_bins + 1), (prob.shape[1], 1))
    rows = [_prediction(row) for row in prob]
    for k in range(prob.shape[1]):
        mine = sorted(
            (rows[i][1], Fraction(float(weights[i]))) for i in range(len(prob)) if rows[i][0] == k
        )
        if not mine:
            continue
        total, n = sum(w for _, w in mine), len(mine)
        for j in range(1, n_bins):
            target = round(Fraction(n * j, n_bins)) * total / n
            cumulative = list(itertools.accumulate(weight for _, weight in mine))
            position = next((i for i, c in enumerate(cumulative) if c > target), n - 1)
            edges[k, j] = mine[position][0]
    return edges


def test_weighted_equal_mass_equals_the_exact_oracle(rng):
    prob, labels = _problem(rng, 300, 4, decimals=2)
    weights = rng.uniform(0.1, 3.0, 300)
    model = HistogramBinning(5, True, mode="top-label").fit(prob, labels, sample_weight=weights)
    edges = oracle_weighted_edges(prob, weights, 5)
    assert_array_equal(model.bin_edges_, edges)
    _, values, totals = oracle_fit(prob, labels, weights, 5, True, edges=edges)
    assert_allclose(model.bin_probabilities_, values, rtol=1e-12, atol=0)
    assert_allclose(model.bin_weights_, totals, rtol=1e-12, atol=0)


def test_a_class_never_predicted_keeps_the_identity_centres(rng):
    prob, labels = _problem(rng, 300, 3)
    prob[:, 2] *= 0.01  # class 2 is never the prediction
    prob /= prob.sum(axis=1, keepdims=True)
    model = HistogramBinning(4, True, mode="top-label").fit(prob, labels)
    assert_array_equal(model.bin_edges_[2], np.linspace(0, 1, 5))
    assert_array_equal(model.bin_probabilities_[2], [0.125, 0.375, 0.625, 0.875])
    assert_array_equal(model.bin_weights_[2], 0.0)


def test_top_label_differs_from_one_vs_rest_and_from_one_confidence_map(rng):
    """Each predicted class has its own histogram: not the one-vs-rest columns, nor
    one histogram of the confidence over all rows."""
    prob, labels = _problem(rng, 500, 3)
    labels = np.where(rng.random(500) < 0.8, np.argmax(prob, axis=1), labels)
    labels[np.argmax(prob, axis=1) == 0] = 0  # class 0's predictions are always right
    top = HistogramBinning(5, mode="top-label").fit(prob, labels)
    rest = HistogramBinning(5).fit(prob, labels)
    assert top.mode_ == "top-label" and rest.mode_ == "one-vs-rest"
    assert not np.allclose(top.bin_probabilities_, rest.bin_probabilities_)
    # Class 0's rows are all right: each of its non-empty bins predicts exactly 1.
    filled = top.bin_weights_[0] > 0
    assert_array_equal(top.bin_probabilities_[0, filled], 1.0)
    assert (top.bin_probabilities_[1:][top.bin_weights_[1:] > 0] < 1).any()


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    scale=st.sampled_from([0.25, 3.5, 1e6]),
    adaptive=st.booleans(),
)
def test_scaling_every_weight_changes_nothing(seed, scale, adaptive):
    rng = np.random.default_rng(seed)
    prob, labels = _problem(rng, 120, 4, decimals=2)
    weights = rng.uniform(0.5, 2.0, 120)
    model = HistogramBinning(5, adaptive, mode="top-label")
    one = model.fit(prob, labels, sample_weight=weights).bin_probabilities_.copy()
    two = model.fit(prob, labels, sample_weight=weights * scale).bin_probabilities_
    assert_allclose(two, one, rtol=1e-12, atol=1e-15)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_on_the_fit_rows_each_class_bin_predicts_its_accuracy(seed):
    """The defining property: within each (predicted class, bin) cell of the fit rows the
    calibrated confidence equals the fraction of right predictions."""
    rng = np.random.default_rng(seed)
    prob, labels = _problem(rng, 200, 3, decimals=2)
    model = HistogramBinning(4, True, mode="top-label").fit(prob, labels)
    prediction = np.argmax(prob, axis=1)
    confidence = prob.max(axis=1)
    cells = {}
    for i in range(len(prob)):
        b = _bin_of(confidence[i], model.bin_edges_[prediction[i], 1:-1], True)
        cells.setdefault((prediction[i], b), []).append(i)
    calibrated = model.predict_proba(prob)[np.arange(len(prob)), prediction]
    for rows in cells.values():
        accuracy = np.mean(labels[rows] == prediction[rows])
        assert_allclose(calibrated[rows], accuracy, rtol=1e-12, atol=1e-15)


def test_input_is_not_mutated(rng):
    prob, labels = _problem(rng, 100, 4)
    saved = prob.copy(), labels.copy()
    model = HistogramBinning(3, True, mode="top-label").fit(prob, labels)
    model.predict_proba(prob)
    assert_array_equal(prob, saved[0])
    assert_array_equal(labels, saved[1])


@pytest.mark.parametrize("mode", ["toplabel", "pooled"])  # pooled: isotonic only
def test_bad_mode_is_named(mode):
    with pytest.raises(ValueError, match="`mode` must be 'one-vs-rest' or 'top-label'; got"):
        HistogramBinning(mode=mode).fit([0.2, 0.8], [0, 1])


def _pair_ece(confidence, correct, n_bins=15):
    """ECE of (confidence, correct) pairs over equal-width bins, as Gupta & Ramdas score
    top-label calibration: the prediction is kept and only its confidence recalibrated."""
    bins = np.minimum((confidence * n_bins).astype(np.intp), n_bins - 1)
    gaps = np.bincount(bins, weights=correct - confidence, minlength=n_bins)
    return float(np.abs(gaps).sum() / len(confidence))


@pytest.mark.parametrize(
    ("name", "n_bins"),
    [
        ("lenet-5-cifar-10", 5),
        ("wideresnet-16-4-cifar-10", 5),
        # 5,000 fit rows over 100 classes: about 50 rows per class, so 2 bins per class
        ("densenet-bc-100-cifar-100", 2),
        ("wideresnet-16-4-cifar-100", 2),
    ],
)
def test_top_label_calibration_error_falls_on_the_real_files(name, n_bins):
    prob, labels = load_real(name)
    half = len(labels) // 2
    model = HistogramBinning(n_bins, True, mode="top-label").fit(prob[:half], labels[:half])
    test, test_labels = prob[half:], labels[half:]
    prediction = np.argmax(test, axis=1)
    correct = (prediction == test_labels).astype(np.float64)
    calibrated = model.predict_proba(test)[np.arange(len(test)), prediction]
    before = _pair_ece(test.max(axis=1).astype(np.float64), correct)
    assert _pair_ece(calibrated, correct) < 0.6 * before


def test_a_file_saved_before_the_mode_loads_as_one_vs_rest(tmp_path):
    # files written before `mode_` existed lack it: they read as the one-vs-rest fit they were
    rng = np.random.default_rng(3)
    prob = rng.dirichlet(np.ones(3), 200)
    labels = rng.integers(0, 3, 200)
    fitted = HistogramBinning(bins=4).fit(prob, labels)
    description = fitted.to_dict()
    del description["fitted"]["mode_"]
    del description["params"]["mode"]  # nor had the setting
    loaded = HistogramBinning.from_dict(description)
    assert loaded.mode_ == "one-vs-rest"
    assert_array_equal(loaded.predict_proba(prob), fitted.predict_proba(prob))
    assert loaded.to_dict() == fitted.to_dict()
