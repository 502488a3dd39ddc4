"""Per-label temperatures (one sigmoid per label): the batched fit against K scalar fits."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import brentq
from scipy.special import expit, log_expit

import calibration_toolbox as ct
from calibration_toolbox import _validation as iv
from calibration_toolbox.recalibration.temperature import label_temperatures


def problem(n=3000, k=5, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(n, k))
    targets = (rng.random((n, k)) < expit(truth)).astype(np.uint8)
    scales = np.array([0.5, 1.0, 2.0, 4.0, 3.0])[:k]
    return truth * scales, targets, scales


def oracle_temperature(z, y, w):
    """One label's T: the root of its NLL's derivative in beta (brentq), summed in a loop."""

    def slope(beta):
        total = 0.0
        for zi, yi, wi in zip(z, y, w, strict=True):
            total += wi * (expit(beta * zi) - yi) * zi
        return total / w.sum()

    return 1 / brentq(slope, 1e-3, 1e3, xtol=1e-300, rtol=4 * np.finfo(float).eps)


@pytest.mark.parametrize("weighted", [False, True])
def test_batched_fit_equals_separate_scalar_fits(weighted):
    logits, targets, scales = problem(n=800)
    weights = np.random.default_rng(1).random(800) * 2 if weighted else None
    fitted = label_temperatures(logits, targets, weights, 1e-4, 1e4)
    w = np.ones(800) if weights is None else weights
    expected = [oracle_temperature(logits[:, k], targets[:, k], w) for k in range(5)]
    assert_allclose(fitted, expected, rtol=1e-12)
    assert_allclose(fitted, scales, rtol=0.3)  # the overconfidence put into the logits


def test_stationary_point_kkt():
    logits, targets, _ = problem()
    beta = 1 / label_temperatures(logits, targets, None, 1e-4, 1e4)
    gradient = ((expit(logits * beta) - targets) * logits).mean(axis=0)
    assert_allclose(gradient, 0, atol=1e-13)


def test_a_separated_label_stops_at_the_bound_and_the_others_are_untouched():
    logits, targets, _ = problem(k=3)
    separated = logits.copy()
    separated[:, 1] = np.where(targets[:, 1] == 1, 1.0, -1.0)
    fitted = label_temperatures(separated, targets, None, 1e-2, 1e2)
    assert fitted[1] == 1e-2
    alone = label_temperatures(logits[:, [0, 2]], targets[:, [0, 2]], None, 1e-2, 1e2)
    assert_allclose(fitted[[0, 2]], alone, rtol=1e-12)


def test_inputs_are_not_mutated():
    logits, targets, _ = problem(k=2)
    before = logits.copy(), targets.copy()
    label_temperatures(logits, targets, None, 1e-4, 1e4)
    assert (logits == before[0]).all() and (targets == before[1]).all()


# -- TemperatureScaling(multilabel=True) ------------------------------------------------------
def test_multilabel_temperature_scaling_fits_one_temperature_per_label():
    logits, targets, _ = problem(n=800)
    model = ct.TemperatureScaling(multilabel=True).fit(logits, targets)
    expected = [oracle_temperature(logits[:, k], targets[:, k], np.ones(800)) for k in range(5)]
    assert_allclose(model.temperature_, expected, rtol=1e-12)
    assert model.n_classes_ == 5
    assert_allclose(model.predict_proba(logits), expit(logits / model.temperature_), rtol=1e-15)
    assert_array_equal(model.predict(logits), (logits / model.temperature_ >= 0).astype(np.uint8))
    score = np.mean(
        [
            np.mean(log_expit(np.where(targets[:, k] == 1, 1, -1) * logits[:, k] / t))
            for k, t in enumerate(model.temperature_)
        ]
    )
    assert_allclose(model.score(logits, targets), score, rtol=1e-12)


def test_multilabel_round_trip_is_exact(tmp_path):
    logits, targets, _ = problem()
    model = ct.TemperatureScaling(multilabel=True).fit(logits, targets)
    model.save(tmp_path / "model.json")
    loaded = ct.load_recalibrator(tmp_path / "model.json")
    assert isinstance(loaded.temperature_, np.ndarray)
    assert_array_equal(loaded.temperature_, model.temperature_)
    assert_array_equal(loaded.predict_proba(logits), model.predict_proba(logits))


@pytest.mark.parametrize(
    ("stored", "message"),
    [
        ({"dtype": "<f8", "shape": [2], "data": [1.0, 2.0]}, r"shape \(5,\)"),
        ({"dtype": "<i8", "shape": [5], "data": [1, 1, 1, 1, 1]}, "float array"),
        ({"dtype": "<f8", "shape": [5], "data": [1.0, 2.0, 0.0, 1.0, 1.0]}, "temperature_"),
    ],
)
def test_load_refuses_bad_per_label_temperatures(stored, message, tmp_path):
    logits, targets, _ = problem()
    description = ct.TemperatureScaling(multilabel=True).fit(logits, targets).to_dict()
    description["fitted"]["temperature_"] = stored
    (tmp_path / "model.json").write_text(json.dumps(description))
    with pytest.raises(ValueError, match=message):
        ct.load_recalibrator(tmp_path / "model.json")


def test_a_label_matrix_is_read_as_multilabel_only_when_asked():
    logits, targets, _ = problem()
    one_hot = np.eye(5, dtype=int)[np.argmax(logits, axis=1)]
    with pytest.raises(ValueError, match="1-D array of class indices"):
        ct.TemperatureScaling().fit(logits, one_hot)
    with pytest.raises(ValueError, match="one label"):
        ct.TemperatureScaling(multilabel=True).fit(logits[:, :1], targets[:, :1])
    # fit_blocks reads blocks of a label matrix too (tests/recalibration/test_label_blocks.py)
    blocks = ct.TemperatureScaling(multilabel=True).fit_blocks([(logits, targets)])
    assert blocks.temperature_.shape == (5,)


# -- the bracket, SciPy's Halley and the brentq fallback ----------------------------------------
def test_labels_beyond_the_bounds_stay_at_them_and_a_flat_label_keeps_one():
    logits, targets, _ = problem(k=4)
    rng = np.random.default_rng(3)
    logits[:, 1] = rng.normal(size=len(logits))  # no information: optimum beta ~ 0
    targets[:, 1] = rng.random(len(logits)) < 0.5
    logits[:, 2] = 0.0  # f' = 0 at every beta
    fitted = label_temperatures(logits, targets, None, 1e-2, 10.0)
    assert fitted[1] == 10.0 and fitted[2] == 1.0
    beta = 1 / 10.0
    slope = ((expit(beta * logits[:, 1]) - targets[:, 1]) * logits[:, 1]).mean()
    assert slope > 0  # the loss rises from the bound inwards: the bound is the optimum
    w = np.ones(len(logits))
    expected = [oracle_temperature(logits[:, k], targets[:, k], w) for k in (0, 3)]
    assert_allclose(fitted[[0, 3]], expected, rtol=1e-12)


def test_labels_halley_does_not_settle_are_solved_by_brentq(monkeypatch):
    from calibration_toolbox.recalibration import temperature

    logits, targets, _ = problem(n=800)
    monkeypatch.setattr(temperature, "_halley_roots", lambda o, b, inside: np.full(len(b), np.nan))
    fitted = label_temperatures(logits, targets, None, 1e-4, 1e4)
    w = np.ones(800)
    expected = [oracle_temperature(logits[:, k], targets[:, k], w) for k in range(5)]
    assert_allclose(fitted, expected, rtol=1e-12)


def test_one_label_is_solved_by_brentq():
    logits, targets, _ = problem(n=800, k=2)
    fitted = label_temperatures(logits[:, :1], targets[:, :1], None, 1e-4, 1e4)
    expected = oracle_temperature(logits[:, 0], targets[:, 0], np.ones(800))
    assert_allclose(fitted, [expected], rtol=1e-12)


def test_n_passes_counts_every_pass(monkeypatch):
    from calibration_toolbox.recalibration import temperature

    calls = []
    sums = temperature._LabelNLL.sums

    def counted(self, beta, **options):
        calls.append(len(beta))
        return sums(self, beta, **options)

    monkeypatch.setattr(temperature._LabelNLL, "sums", counted)
    logits, targets, _ = problem()
    model = ct.TemperatureScaling(multilabel=True).fit(logits, targets)
    assert model.n_passes_ == len(calls) > 2  # two at the bounds, then Halley's steps


def test_float32_logits_in_row_blocks_use_little_memory():
    logits, targets, _ = problem(n=200_000, k=5)
    logits = logits.astype(np.float32)
    tracemalloc.start()
    try:
        ct.TemperatureScaling(multilabel=True).fit(logits, targets)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the validation's uint8 targets (one byte per entry), then the fit's three float64 row
    # blocks of 2**17 values (3 MiB, whatever N): no (N, K) float64 temporary, and no
    # sigmoids of the logits (check_multilabel(sigmoids=False): the fit reads the logits)
    assert peak < logits.size + 3.5 * 2**20


def test_the_fits_validation_computes_no_sigmoids():
    logits, targets, _ = problem(n=50, k=3)
    checked = iv.check_multilabel(logits, targets, logits=True, sigmoids=False)
    assert checked.prob is None
    assert_array_equal(checked.log_odds, logits)
    full = iv.check_multilabel(logits, targets, logits=True)
    assert_array_equal(full.prob, expit(logits))
    assert_array_equal(full.targets, checked.targets)


@pytest.mark.parametrize(
    ("X", "y", "argument"),
    [
        (np.zeros((4, 2)), np.zeros(4), "y"),
        (np.zeros((4, 2)), np.full((4, 2), 2), "y"),
        (np.zeros((4, 2)), np.zeros((3, 2)), "y"),
        (np.zeros(4), np.zeros((4, 1)), "X"),
    ],
)
def test_errors_name_the_arguments_of_fit_and_score(X, y, argument):
    with pytest.raises(ValueError, match=f"`{argument}`") as caught:
        ct.TemperatureScaling(multilabel=True).fit(X, y)
    assert caught.value.argument == argument
    assert "`prob`" not in str(caught.value) and "`labels`" not in str(caught.value)
    logits, targets, _ = problem(k=2)
    model = ct.TemperatureScaling(multilabel=True).fit(logits, targets)
    if argument == "y":
        with pytest.raises(ValueError, match="`y`") as caught:
            model.score(X, y)
        assert "`prob`" not in str(caught.value) and "`labels`" not in str(caught.value)


def test_temperature_scaling_warns_about_the_labels_at_a_bound():
    logits, targets, _ = problem(k=3)
    logits[:, 1] = np.where(targets[:, 1] == 1, 1.0, -1.0)
    with pytest.warns(UserWarning, match=r"label\(s\) \[1\] lies at or beyond the bounds"):
        model = ct.TemperatureScaling(multilabel=True, temperature_bounds=(1e-2, 1e2))
        model.fit(logits, targets)
    assert model.temperature_[1] == 1e-2
