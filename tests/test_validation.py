"""Every bad input gets a ValueError/TypeError naming the argument (one test per message).

pytest runs with ``filterwarnings = error``, so any NumPy warning on the way fails too.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import softmax

from calibration_toolbox import (
    ECE,
    GCE,
    SCE,
    TemperatureScaling,
    ToprCE,
    _registry,
    brier_score,
    calibration_table,
    negative_log_likelihood,
)
from tests.conftest import load_real
from tests.registry_calls import with_groups

PROB = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.5, 0.25, 0.25]])
LABELS = np.array([0, 1, 2, 1])


def with_value(row, column, value):
    prob = PROB.copy()
    prob[row, column] = value
    return prob


PROB_ERRORS = [
    (with_value(1, 2, np.nan), ValueError, r"`prob` must not contain NaN; row 1"),
    (with_value(2, 0, np.inf), ValueError, r"`prob` must not contain inf; row 2.*logits=True"),
    (with_value(3, 1, -0.25), ValueError, r"`prob` must hold probabilities in \[0, 1\]; row 3"),
    (with_value(0, 0, 1.5), ValueError, r"`prob` must hold probabilities in \[0, 1\]; row 0"),
    (with_value(2, 2, 0.5), ValueError, r"rows of `prob` must sum to 1.*row 2 sums to 1.1"),
    (PROB * 3 - 1.0, ValueError, r"`prob` must hold probabilities.*pass logits=True"),
    (PROB[None], ValueError, r"`prob` must be a 2-D array .* got shape \(1, 4, 3\)"),
    (np.float64(0.5), ValueError, r"`prob` must be a 2-D array .* got shape \(\)"),
    (np.empty((0, 3)), ValueError, r"`prob` is empty"),
    (np.empty((4, 0)), ValueError, r"`prob` must have n_classes >= 2 columns; got 0"),
    ([[0.5, 0.5], [1.0]], ValueError, r"`prob` must be a rectangular numeric array"),
    (np.array([["a", "b"]] * 4), TypeError, r"`prob` must hold real numbers; got .*<U1"),
    (PROB.astype(complex), TypeError, r"`prob` must hold real numbers; got .*complex128"),
    # 1-D is ambiguous for a top-label measure, whatever its values
    (np.array([0.2, 0.8, 0.5, 0.1]), ValueError, r"`prob` is 1-D, which is ambiguous"),
    (np.array([0.2, np.nan, 0.5, 0.1]), ValueError, r"`prob` is 1-D, which is ambiguous"),
]


@pytest.mark.parametrize(("prob", "error", "message"), PROB_ERRORS)
def test_bad_probabilities(prob, error, message):
    with pytest.raises(error, match=message):
        ECE(prob, LABELS)


def test_a_ragged_list_is_refused_whatever_the_warning_filters():
    # NumPy < 1.24 turns a ragged list into an object array with a warning only: a user
    # who does not make warnings errors still gets the ValueError.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=r"`prob` must be a rectangular numeric array"):
            ECE([[0.5, 0.5], [1.0]], [0, 1])


@pytest.mark.parametrize(
    ("prob", "message"),
    [
        (np.array([0.2, 1.2, 0.5, 0.1]), r"`prob` must hold probabilities in \[0, 1\]"),
        (np.array([0.2, np.nan, 0.5, 0.1]), r"`prob` must not contain NaN; row 1"),
    ],
)
def test_bad_binary_probabilities(prob, message):
    # 1-D is P(y = 1) for the class-wise measures: its values are checked as such
    with pytest.raises(ValueError, match=message):
        SCE(prob, LABELS)


def test_float32_row_sum_tolerance_is_named():
    prob = PROB.astype(np.float32)
    prob[0, 0] += 1e-3
    with pytest.raises(ValueError, match=r"within 0\.0001\)"):
        SCE(prob, LABELS)
    prob[0, 0] -= 1e-3 - 5e-5  # within tolerance: accepted
    SCE(prob, LABELS)


@pytest.mark.parametrize("logits", [with_value(1, 1, np.nan), with_value(0, 2, -np.inf)])
def test_bad_logits(logits):
    with pytest.raises(ValueError, match=r"`prob` must be finite; row [01] holds NaN or inf"):
        ECE(logits, LABELS, logits=True)
    with pytest.raises(ValueError, match=r"`X` must be finite"):
        TemperatureScaling().fit(logits, LABELS)


# Every public metric of (N,) class labels in the registry (ToprCE apart: it is called with
# its r); the multi-label ones (an (N, K) 0/1 label matrix) in tests/metrics/test_multilabel.py.
METRICS = [
    row.function for row in _registry.public() if row.function is not ToprCE and not row.multilabel
]


# The options a metric cannot be called without: ToprCE's r, the working points.
REQUIRED = {
    "ToprCE": {"r": 2},
    "coverage_at_risk": {"risk": 0.3},
    "risk_at_coverage": {"coverage": 0.5},
}


def call(metric, prob, labels, **options):
    for name, value in REQUIRED.get(metric.__name__, {}).items():
        options.setdefault(name, value)
    options = with_groups(_registry.spec_of(metric), prob, options)
    return metric(prob, labels, **options)


@pytest.mark.parametrize("metric", [*METRICS, ToprCE], ids=lambda f: f.__name__)
@pytest.mark.parametrize("value", ["yes", "no", 1, 0, None, "False"])
def test_logits_flag_must_be_boolean(metric, value):
    # a truthy string must not send probabilities down the logits path (nor 0 mean False)
    with pytest.raises(TypeError, match=r"`logits` must be True or False; got "):
        call(metric, PROB, LABELS, logits=value)


def test_nll_with_a_string_for_logits_is_an_error_not_a_number_from_logits():
    with pytest.raises(TypeError, match=r"`logits` must be True or False; got 'no'"):
        negative_log_likelihood(PROB, LABELS, logits="no")
    assert negative_log_likelihood(PROB, LABELS, logits=np.False_) == negative_log_likelihood(
        PROB, LABELS
    )


LABEL_ERRORS = [
    (
        [0, 1, 2],
        ValueError,
        r"`labels` must have one entry per row of the predictions \(4\); got 3",
    ),
    ([[0, 1], [2, 1]], ValueError, r"`labels` must be a 1-D array of class indices"),
    ([0, 1, 3, 1], ValueError, r"`labels` must lie in \[0, 2\] for 3 classes; got 3"),
    ([0, -1, 2, 1], ValueError, r"`labels` must lie in \[0, 2\] for 3 classes; got -1"),
    ([0, 1.5, 2, 1], ValueError, r"`labels` must be integer class indices; got 1.5"),
    ([0, np.nan, 2, 1], ValueError, r"`labels` must be finite class indices"),
    (["a", "b", "c", "d"], TypeError, r"`labels` must hold real numbers"),
]


@pytest.mark.parametrize(("labels", "error", "message"), LABEL_ERRORS)
def test_bad_labels(labels, error, message):
    with pytest.raises(error, match=message):
        ECE(PROB, labels)


WEIGHT_ERRORS = [
    ([1, 1, 1], r"`sample_weight` must be a 1-D array with one weight per sample \(4\)"),
    ([1, -1, 1, 1], r"`sample_weight` must be non-negative; got -1.0"),
    ([1, np.nan, 1, 1], r"`sample_weight` must be finite"),
    ([0, 0, 0, 0], r"`sample_weight` must have a positive sum"),
]


@pytest.mark.parametrize(("weights", "message"), WEIGHT_ERRORS)
def test_bad_sample_weight(weights, message):
    with pytest.raises(ValueError, match=message):
        ECE(PROB, LABELS, sample_weight=weights)
    with pytest.raises(ValueError, match=message):
        brier_score(PROB, LABELS, sample_weight=weights)


OPTION_ERRORS = [
    (dict(bins=0), ValueError, r"`bins` must be an integer >= 1 or an increasing .*got 0"),
    (dict(bins=-3), ValueError, r"`bins` must be an integer >= 1.*got -3"),
    (dict(bins=2.5), TypeError, r"`bins` must be an integer >= 1.*got 2.5"),
    (dict(bins=True), TypeError, r"`bins` must be an integer >= 1 or an array of edges"),
    (dict(bins=[0, 0.5, 0.4, 1]), ValueError, r"`bins` must be .*increasing array of edges"),
    (dict(bins=[0.1, 0.5, 1]), ValueError, r"`bins` must be .* edges from 0 to 1"),
    (dict(bins=[0, 1], adaptive_bins=True), TypeError, r"`bins` must be an integer >= 1 with"),
    (dict(norm=3), ValueError, r"`norm` must be 1, 2 or 'inf' .*got 3"),
    (dict(norm="l3"), ValueError, r"`norm` must be 1, 2 or 'inf' .*got 'l3'"),
    (dict(norm=None), ValueError, r"`norm` must be 1, 2 or 'inf' .*got None"),
    (dict(top_k_classes=0), ValueError, r"`top_k_classes` must be an integer in \[1, 3\]"),
    (dict(top_k_classes=4), ValueError, r"`top_k_classes` must be an integer in \[1, 3\]"),
    (dict(top_k_classes="top"), ValueError, r"`top_k_classes` .* or 'all'; got 'top'"),
    (dict(top_k_classes=1.5), TypeError, r"`top_k_classes` must be an integer in \[1, 3\]"),
    (dict(thresholding=-0.1), ValueError, r"`thresholding` must be a number in \[0, 1\)"),
    (dict(thresholding=1.0), ValueError, r"`thresholding` must be a number in \[0, 1\)"),
    (dict(thresholding="0.1"), TypeError, r"`thresholding` must be a number in \[0, 1\)"),
    (dict(class_conditional="no"), TypeError, r"`class_conditional` must be True or False"),
    (dict(adaptive_bins=1), TypeError, r"`adaptive_bins` must be True or False"),
]


@pytest.mark.parametrize(("options", "error", "message"), OPTION_ERRORS)
def test_bad_options(options, error, message):
    with pytest.raises(error, match=message):
        GCE(PROB, LABELS, **options)


@pytest.mark.parametrize(
    ("r", "error", "message"),
    [
        (0, ValueError, r"`r` must be an integer >= 1; got 0"),
        (1.5, TypeError, r"`r` must be an integer >= 1; got 1.5"),
        ("all", TypeError, r"`r` must be an integer >= 1; got 'all'"),
        (True, TypeError, r"`r` must be an integer >= 1; got True"),
        (4, ValueError, r"`top_k_classes` must be an integer in \[1, 3\]"),
    ],
)
def test_toprce_r_is_checked(r, error, message):
    with pytest.raises(error, match=message):
        ToprCE(PROB, LABELS, r=r)


def test_norm_spellings_are_equivalent():
    for spellings in ([1, "l1", 1.0], [2, "l2", "L2"], ["inf", np.inf, "max", "linf"]):
        values = {GCE(PROB, LABELS, norm=s, top_k_classes="all") for s in spellings}
        assert len(values) == 1


def test_table_rejects_what_gce_rejects():
    with pytest.raises(ValueError, match=r"`bins` must be an integer >= 1"):
        calibration_table(PROB, LABELS, bins=0)


@pytest.mark.parametrize(
    ("eps", "error"),
    [
        (-1, ValueError),
        (1.0, ValueError),
        (np.nan, ValueError),
        ("1e-15", TypeError),
        (None, TypeError),
        (True, TypeError),
        ([1e-15], TypeError),
    ],
)
@pytest.mark.parametrize("logits", [False, True])
def test_nll_eps_is_checked(eps, error, logits):
    with pytest.raises(error, match=r"`eps` must be a number in \[0, 1\); got "):
        negative_log_likelihood(PROB, LABELS, eps=eps, logits=logits)


def test_nll_eps_accepts_numpy_numbers():
    value = negative_log_likelihood(PROB, LABELS, eps=np.float32(1e-7))
    assert value == negative_log_likelihood(PROB, LABELS, eps=1e-7)


def test_errors_do_not_modify_inputs():
    prob = with_value(2, 2, 0.5)
    copy = prob.copy()
    with pytest.raises(ValueError):
        ECE(prob, LABELS)
    np.testing.assert_array_equal(prob, copy)


@pytest.mark.parametrize("n_classes", [3, 40])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_negative_zero_is_a_valid_zero(n_classes, dtype):
    rng = np.random.default_rng(0)
    prob = rng.dirichlet(np.ones(n_classes), size=50).astype(dtype)
    prob[:, -1] = 0.0
    prob /= prob.sum(axis=1, keepdims=True)
    labels = rng.integers(0, n_classes, 50)
    negative_zero = prob.copy()
    negative_zero[:, -1] = -0.0
    negative_zero[3] = 0.0
    negative_zero[3, 0] = 1.0
    negative_zero[3, 1:] = -0.0  # a row whose maximum competes with many -0.0 entries
    prob[3] = negative_zero[3] * 1  # same values with +0.0
    prob[3, 1:] = 0.0
    for metric in (ECE, SCE, GCE):
        assert metric(negative_zero, labels) == metric(prob, labels)


@pytest.mark.parametrize("bad", [np.nan, -0.5, 1.5, np.inf])
def test_many_classes_reject_bad_values(bad):
    prob = np.full((20, 40), 1 / 40)
    prob[7, 5] = bad
    labels = np.zeros(20, dtype=int)
    with pytest.raises(ValueError, match=r"`prob` must (not contain|hold probabilities).*row 7"):
        ECE(prob, labels)
    with pytest.raises(ValueError, match=r"`prob` must (not contain|hold probabilities).*row 7"):
        SCE(prob, labels)


# --------------------------------------------------------------------------------------
# Probabilities passed with logits=True: never guessed, but warned about.

PROBABILITIES_AS_LOGITS = r"`prob` was passed with logits=True, but every row is a probabil"


@pytest.mark.parametrize("metric", [*METRICS, ToprCE], ids=lambda f: f.__name__)
def test_probabilities_passed_as_logits_warn(metric):
    with pytest.warns(UserWarning, match=PROBABILITIES_AS_LOGITS) as caught:
        call(metric, PROB, LABELS, logits=True)
    assert caught[0].filename == __file__  # attributed to the caller, not the library


def test_probabilities_passed_as_logits_warn_on_a_real_file():
    prob, labels = load_real("wideresnet-16-4-cifar-10")
    with pytest.warns(UserWarning, match=PROBABILITIES_AS_LOGITS):
        wrong = ECE(prob, labels, logits=True)
    # the softmax of probabilities is nearly uniform: a very different number
    assert_allclose(ECE(prob, labels), 0.05371629542112348, rtol=1e-13)
    assert wrong > 0.5


def test_binary_probabilities_passed_as_logits_warn():
    positive = np.array([0.2, 0.9, 0.6, 0.4])
    with pytest.warns(UserWarning, match=r"logits=True, but every value lies in \[0, 1\]"):
        SCE(positive, [0, 1, 1, 0], logits=True)


@pytest.mark.parametrize("n_rows", [5, 40_000])
def test_logits_are_not_warned_about(n_rows):
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(n_rows, 3))
    labels = rng.integers(0, 3, n_rows)
    ECE(logits, labels, logits=True)  # filterwarnings=error: any warning fails
    negative_log_likelihood(logits, labels, logits=True)
    # rows in [0, 1] that do not sum to 1, or a first block of probabilities followed by
    # rows that are not: logits, and no warning
    ECE(np.full((n_rows, 3), 0.5), labels, logits=True)
    mixed = softmax(logits, axis=1)
    mixed[-1] = [2.0, -1.0, 0.0]
    ECE(mixed, labels, logits=True)


# --------------------------------------------------------------------------------------
# Rounded probabilities: the row-sum error never suggests logits=True; renormalize=True.


def rounded_predictions():
    rng = np.random.default_rng(21)
    prob = rng.dirichlet(np.full(4, 0.5), size=400)
    return np.round(prob, 3), rng.integers(0, 4, 400)  # as read back from a CSV


def test_row_sum_error_points_to_renormalize_not_to_logits():
    rounded, labels = rounded_predictions()
    with pytest.raises(ValueError, match=r"must sum to 1.*renormalize=True") as error:
        ECE(rounded, labels)
    assert "logits" not in str(error.value)
    with pytest.raises(ValueError, match=r"row 2 sums to 1.1") as error:
        negative_log_likelihood(with_value(2, 2, 0.5), LABELS)
    assert "logits" not in str(error.value)


@pytest.mark.parametrize("metric", [*METRICS, ToprCE], ids=lambda f: f.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_renormalize_divides_each_row_by_its_sum(metric, dtype):
    rounded, labels = rounded_predictions()
    rounded = rounded.astype(dtype)
    copy = rounded.copy()
    normalised = (rounded / rounded.sum(axis=1, keepdims=True, dtype=np.float64)).astype(dtype)
    value = call(metric, rounded, labels, renormalize=True)
    expected = call(metric, normalised, labels)
    if isinstance(value, float):
        assert value == expected
    elif dataclasses.is_dataclass(value):  # ECESweepResult, BrierDecomposition
        for field in dataclasses.fields(value):
            assert_array_equal(getattr(value, field.name), getattr(expected, field.name))
    else:
        assert_array_equal(value.counts, expected.counts)
    assert_array_equal(rounded, copy)  # the input is not modified
    with pytest.raises(TypeError, match=r"`renormalize` must be True or False; got 'yes'"):
        call(metric, rounded, labels, renormalize="yes")


def test_renormalized_rounded_csv_is_close_to_the_exact_value():
    rng = np.random.default_rng(21)
    prob = rng.dirichlet(np.full(4, 0.5), size=400)
    rounded, labels = rounded_predictions()
    assert_allclose(ECE(rounded, labels, renormalize=True), ECE(prob, labels), atol=2e-3)
    # valid probabilities are left as they are (up to the division by a sum of ~1)
    assert_allclose(SCE(prob, labels, renormalize=True), SCE(prob, labels), rtol=1e-12)


RENORMALIZE_ERRORS = [
    (with_value(1, 1, 1.5), r"`prob` must hold probabilities in \[0, 1\]; row 1"),
    (with_value(1, 1, np.nan), r"`prob` must not contain NaN; row 1"),
    (np.vstack([PROB[:2], np.zeros(3), PROB[3:]]), r"row 2 of `prob` sums to 0"),
]


@pytest.mark.parametrize(("prob", "message"), RENORMALIZE_ERRORS)
def test_renormalize_still_checks_values(prob, message):
    with pytest.raises(ValueError, match=message):
        ECE(prob, LABELS, renormalize=True)


def test_renormalize_does_not_apply_to_logits():
    with pytest.raises(ValueError, match=r"`renormalize=True` .* not apply with logits=True"):
        ECE(np.log(PROB), LABELS, logits=True, renormalize=True)
