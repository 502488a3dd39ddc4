"""The validated handle: checked Predictions passed back instead of the arrays.

``check_predictions(prob, labels, top_label=True)`` checks the arrays once; every metric,
``stats.bootstrap`` and ``CalibrationAccumulator.update`` take the result as
``(checked, None)`` and give the same value, bit for bit, without checking the values again.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import calibration_toolbox as ct
from calibration_toolbox import _registry, stats
from calibration_toolbox import _validation as iv
from calibration_toolbox.streaming import CalibrationAccumulator
from tests.registry_calls import with_groups

# Every public function of the arrays (prob, labels, ...), from the package's own list; the
# multi-label measures (an (N, K) 0/1 label matrix) refuse the handle of class labels.
METRICS = [
    name
    for name in ct.__all__
    if inspect.isfunction(getattr(ct, name))
    and list(inspect.signature(getattr(ct, name)).parameters)[:2] == ["prob", "labels"]
    and not _registry.spec_of(getattr(ct, name)).multilabel
]
OPTIONS = {
    "ToprCE": {"r": 2},
    "SKCE": {"estimator": "biased", "bandwidth": 0.5},
    "coverage_at_risk": {"risk": 0.3},
    "risk_at_coverage": {"coverage": 0.5},
}


def _data(dtype, n_rows=2_000, n_classes=5, seed=0, informative=False):
    rng = np.random.default_rng(seed)
    prob = rng.dirichlet(np.full(n_classes, 0.5), size=n_rows).astype(dtype)
    prob /= prob.sum(axis=1, keepdims=True)
    labels = rng.integers(0, n_classes, n_rows)
    if informative:  # drawn from the predictions: a temperature fit's optimum is inside
        cumulative = prob.astype(np.float64).cumsum(axis=1)
        labels = np.minimum((rng.random(n_rows)[:, None] > cumulative).sum(axis=1), n_classes - 1)
    return prob, labels, rng.random(n_rows)


def _same(first, second) -> None:
    """The two results are equal bit for bit (floats, tables, named tuples, dicts)."""
    assert type(first) is type(second)
    assert repr(first) == repr(second)
    if isinstance(first, float):
        assert np.float64(first).tobytes() == np.float64(second).tobytes()


def _without_checks(monkeypatch):
    """Make checking any value of ``prob`` an error: what runs after must not check them."""

    def refuse(*args, **kwargs):
        raise AssertionError("the values were checked again")

    for name in ("_scanned_rows", "_as_float_array", "_probability_rows", "check_labels"):
        monkeypatch.setattr(iv, name, refuse)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", METRICS)
def test_every_metric_gives_the_same_bits_on_the_handle(name, dtype, weighted, monkeypatch):
    # random labels put refinement_decomposition's temperature at T -> inf (a warning)
    prob, labels, weights = _data(dtype, informative=name == "refinement_decomposition")
    metric = getattr(ct, name)
    options = with_groups(_registry.spec_of(metric), prob, OPTIONS.get(name, {}))
    if weighted:
        options["sample_weight"] = weights
    expected = metric(prob, labels, **options)
    checked = iv.check_predictions(prob, labels, top_label=True)
    _without_checks(monkeypatch)
    _same(metric(checked, None, **options), expected)


def test_the_handle_comes_back_as_it_is(monkeypatch):
    prob, labels, _ = _data(np.float32)
    checked = iv.check_predictions(prob, labels, top_label=True)
    _without_checks(monkeypatch)
    assert iv.check_predictions(checked, None) is checked
    assert iv.check_predictions(checked, checked.labels, top_label=True) is checked
    pending = iv.check_predictions(checked, None, top_label=True, defer_scan=True)
    assert pending.prob is checked.prob and pending.labels is checked.labels
    assert pending.tolerance == np.inf  # checked already: the pass only gathers


def test_a_renormalized_handle_gives_the_renormalized_value():
    prob, labels, _ = _data(np.float64)
    rounded = np.round(prob, 3)
    checked = iv.check_predictions(rounded, labels, renormalize=True, top_label=True)
    _same(ct.ECE(checked, None, bins=10), ct.ECE(rounded, labels, bins=10, renormalize=True))
    _same(ct.brier_score(checked, None), ct.brier_score(rounded, labels, renormalize=True))


@pytest.mark.parametrize("method", ["percentile", "BCa"])
@pytest.mark.parametrize("metric", [ct.ECE, ct.ACE, ct.SCE, ct.brier_score, ct.KSCE])
def test_bootstrap_draws_the_same_bits_on_the_handle(metric, method, monkeypatch):
    prob, labels, weights = _data(np.float32, n_rows=500)
    options = {"n_resamples": 20, "random_state": 3, "method": method, "sample_weight": weights}
    expected = stats.bootstrap(metric, prob, labels, **options)
    checked = iv.check_predictions(prob, labels, top_label=True)
    _without_checks(monkeypatch)
    result = stats.bootstrap(metric, checked, None, **options)
    assert result.bootstrap_distribution.tobytes() == expected.bootstrap_distribution.tobytes()
    _same(result, expected)


def test_the_accumulator_adds_the_same_bits_from_the_handle(monkeypatch):
    prob, labels, weights = _data(np.float32)
    expected = CalibrationAccumulator(n_classes=5).update(prob, labels, sample_weight=weights)
    checked = iv.check_predictions(prob, labels, top_label=True)
    _without_checks(monkeypatch)
    accumulator = CalibrationAccumulator(n_classes=5).update(checked, None, sample_weight=weights)
    _same(accumulator.results(), expected.results())


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda h: ct.ECE(h, h.labels.copy()), ValueError, "`labels` must be None when `prob`"),
        (lambda h: ct.ECE(h, None, logits=True), ValueError, "`logits` must be False when"),
        (lambda h: ct.brier_score(h, None, renormalize=True), ValueError, "`renormalize` must"),
        (lambda h: ct.SCE(h, None, classes=list("abcde")), ValueError, "got names with `class"),
        (lambda h: ct.ECE(h, None, logits="yes"), TypeError, "`logits` must be True or False"),
    ],
)
def test_the_handle_refuses_what_would_be_ambiguous(call, error, message):
    prob, labels, _ = _data(np.float64, n_rows=50)
    with pytest.raises(error, match=message):
        call(iv.check_predictions(prob, labels, top_label=True))


def test_a_sample_weight_of_another_length_is_refused():
    prob, labels, _ = _data(np.float64, n_rows=50)
    checked = iv.check_predictions(prob, labels, top_label=True)
    with pytest.raises(
        ValueError, match=r"`sample_weight` must be .* one weight per sample \(50\)"
    ):
        ct.ECE(checked, None, sample_weight=np.ones(49))


def test_a_top_label_measure_needs_a_handle_with_the_top_label():
    # Made without the top label, a handle of a 1-D `prob` cannot be told from (N, 2)
    # probabilities: the top-label measures, which refuse 1-D `prob`, refuse it too.
    rng = np.random.default_rng(1)
    positive, targets = rng.random(40), rng.integers(0, 2, 40)
    checked = iv.check_predictions(positive, targets)
    _same(ct.brier_score(checked, None), ct.brier_score(positive, targets))
    for metric in (ct.ECE, ct.KSCE, ct.MMCE, ct.SmoothECE):
        with pytest.raises(ValueError, match="checked Predictions with the top label"):
            metric(checked, None)
    with pytest.raises(ValueError, match="1-D, which is ambiguous"):
        iv.check_predictions(positive, targets, top_label=True)


@pytest.mark.parametrize("defer_scan", [False, True])
def test_pairs_and_pending_predictions_are_not_handles(defer_scan):
    prob, labels, _ = _data(np.float64, n_rows=20)
    scores = iv.check_predictions(ct.Scores(prob[:, 0]), labels > 1)
    pending = iv.check_predictions(prob, labels, defer_scan=True)
    for checked in (scores, pending):
        with pytest.raises(TypeError, match="`prob` must be an array, Scores or checked"):
            iv.check_predictions(checked, None, defer_scan=defer_scan)


# -- one interface, whatever the form: the views consumers take --------------------------------
def _forms():
    prob, labels, _ = _data(np.float64, n_rows=30, n_classes=4)
    scores = ct.Scores(prob[:, 0])
    return {
        "checked": iv.check_predictions(prob, labels, top_label=True),
        "pending": iv.check_predictions(prob, labels, defer_scan=True),
        "pairs": iv.check_predictions(scores, labels > 1),
    }


@pytest.mark.parametrize("form", ["checked", "pending", "pairs"])
def test_every_form_is_a_checked_input_with_its_views(form):
    checked = _forms()[form]
    assert isinstance(checked, iv.CheckedInput)
    assert checked.n_samples == 30
    assert checked.needs_scan == (form == "pending")
    assert (checked.pairs is checked) == (form == "pairs")
    scores, targets = checked.top_label()
    assert scores.shape == targets.shape == (30,)
    entry_scores, entry_targets = checked.entries(slice(2, 5))
    assert entry_scores.shape == entry_targets.shape == (3, checked.entry_columns)
    assert np.array_equal(entry_targets.sum(axis=1) <= 1, np.ones(3, dtype=bool))
    half = checked.taken(lambda array: array[:10]).joined(checked.taken(lambda a: a[10:]))
    assert np.array_equal(half.entries()[0], checked.entries()[0])
    assert not half.needs_scan and half.n_samples == 30


def test_the_views_say_what_the_arrays_hold():
    forms = _forms()
    prob, labels = forms["checked"].prob, forms["checked"].labels
    confidence, correct = forms["checked"].top_label()
    assert np.array_equal(confidence, prob.max(axis=1))
    assert np.array_equal(correct, prob.argmax(axis=1) == labels)
    for name in ("pending", "checked"):
        scores, targets = forms[name].entries()
        assert scores is prob or np.array_equal(scores, prob)
        assert np.array_equal(targets, np.eye(4, dtype=bool)[labels])
    assert np.array_equal(forms["pending"].top_label()[1], correct)
    pairs = forms["pairs"]
    assert pairs.n_classes == 2 and pairs.entry_columns == 1
    assert np.array_equal(pairs.top_label()[0], pairs.scores)
    assert np.array_equal(pairs.entries()[1][:, 0], pairs.targets)


def test_pending_values_are_checked_when_asked():
    prob, labels, _ = _data(np.float64, n_rows=30)
    prob[7] *= 2
    pending = iv.check_predictions(prob, labels, defer_scan=True)
    assert pending.needs_scan
    with pytest.raises(ValueError, match="row 7 sums to"):
        pending.with_values_checked()
    good = iv.check_predictions(prob / prob.sum(axis=1, keepdims=True), labels, defer_scan=True)
    assert not good.with_values_checked().needs_scan
    assert good.taken(lambda array: array[:5]).n_samples == 5
