"""The estimator contract, checked the same way for every recalibrator.

As scikit-learn's estimator checks do, one suite runs on every class (and, for the checks on
fitted behaviour, on the main variants of each family); the family files test only what is
specific to a family: the mathematics, peer references and edge cases of its own.
"""

from __future__ import annotations

import copy
import errno
import inspect
import json
import os
import re
import stat
import warnings
from functools import cache
from typing import Callable, NamedTuple

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import softmax

import calibration_toolbox as ct
from calibration_toolbox.datasets import make_overconfident

# Every public recalibrator: the subclasses of Recalibrator that the package exports, so a
# new one cannot escape the contract.
CLASSES = [
    value
    for value in (getattr(ct, name) for name in ct.__all__)
    if isinstance(value, type)
    and issubclass(value, ct.Recalibrator)
    and value is not ct.Recalibrator
]
ON_LOGITS = {
    ct.TemperatureScaling: True,
    ct.EnsembleTemperatureScaling: True,
    ct.VectorScaling: True,
    ct.MatrixScaling: True,
    ct.PlattScaling: True,
}


class Case(NamedTuple):
    """A configuration the fitted-behaviour checks run on."""

    make: Callable[[], ct.Recalibrator]
    on_logits: bool
    # sample_weight = 2 against duplicated rows, on the predicted probabilities (the
    # iterative fits stop at their tolerance, the closed-form ones agree to rounding)
    weight_rtol: float = 1e-9
    weight_atol: float = 1e-12
    # Multiplying every weight by 3.5 gives the same fit: not for Platt's smoothed targets
    # (N+ + 1) / (N+ + 2), which count the weight.
    scale_invariant: bool = True
    # Integer weights give the fit of duplicated rows: not for equal-mass bins, whose
    # positions count mean weights (scale-free), which duplicated rows round otherwise.
    duplicates: bool = True


CASES = {
    "TemperatureScaling": Case(ct.TemperatureScaling, True),
    "EnsembleTemperatureScaling": Case(ct.EnsembleTemperatureScaling, True, 1e-6, 1e-8),
    "EnsembleTemperatureScaling-mse": Case(
        lambda: ct.EnsembleTemperatureScaling(loss="mse"), True, 1e-6, 1e-8
    ),
    "VectorScaling": Case(ct.VectorScaling, True, 1e-6, 1e-8),
    "MatrixScaling": Case(ct.MatrixScaling, True, 1e-6, 1e-8),
    # SMS's mixture weight 1/(n + 1) and ridge count rows: duplicated rows fit another map.
    "MatrixScaling-structured": Case(
        lambda: ct.MatrixScaling(structured=True), True, 1e-6, 1e-8, duplicates=False
    ),
    "DirichletCalibration": Case(ct.DirichletCalibration, False, 1e-6, 1e-8),
    "PlattScaling": Case(ct.PlattScaling, True, scale_invariant=False),
    "PlattScaling-plain": Case(lambda: ct.PlattScaling(smoothed_targets=False), True),
    "PlattScaling-quadratic": Case(
        lambda: ct.PlattScaling(quadratic=True), True, 1e-8, 1e-10, scale_invariant=False
    ),
    "PlattScaling-probabilities": Case(
        lambda: ct.PlattScaling(input="probabilities"), False, scale_invariant=False
    ),
    "BetaCalibration": Case(ct.BetaCalibration, False),
    "BetaCalibration-ab": Case(lambda: ct.BetaCalibration("ab"), False),
    "BetaCalibration-am": Case(lambda: ct.BetaCalibration("am"), False),
    "IsotonicCalibration": Case(ct.IsotonicCalibration, False),
    "IsotonicCalibration-top-label": Case(lambda: ct.IsotonicCalibration(mode="top-label"), False),
    "IsotonicCalibration-centred": Case(lambda: ct.IsotonicCalibration(centred=True), False),
    "IsotonicCalibration-pooled": Case(lambda: ct.IsotonicCalibration(mode="pooled"), False),
    "HistogramBinning": Case(ct.HistogramBinning, False),
    "HistogramBinning-equal-mass": Case(
        lambda: ct.HistogramBinning(adaptive_bins=True), False, duplicates=False
    ),
    # The test row weighs one row: rescaling the weights changes the fit.
    "VennAbersCalibration": Case(ct.VennAbersCalibration, False, scale_invariant=False),
    "VennAbersCalibration-cross-brier": Case(
        lambda: ct.VennAbersCalibration(cv=3, merge="brier"),
        False,
        scale_invariant=False,
        duplicates=False,
    ),
    "VennAbersCalibration-ovo": Case(
        lambda: ct.VennAbersCalibration(multiclass="ovo"), False, scale_invariant=False
    ),
    "HistogramBinning-top-label": Case(lambda: ct.HistogramBinning(mode="top-label"), False),
    "HistogramBinning-top-label-equal-mass": Case(
        lambda: ct.HistogramBinning(adaptive_bins=True, mode="top-label"), False, duplicates=False
    ),
    # A weight is one point of the walk, duplicated rows are several (see its docstring).
    "SplineCalibration": Case(ct.SplineCalibration, False, duplicates=False),
    "SplineCalibration-one-vs-rest": Case(
        lambda: ct.SplineCalibration(mode="one-vs-rest"), False, duplicates=False
    ),
    # A row falls in one of the three sets whatever its weight; duplicated rows are several.
    "ScalingBinning": Case(ct.ScalingBinning, False, 1e-6, 1e-8, duplicates=False),
    "ScalingBinning-top-label": Case(
        lambda: ct.ScalingBinning(mode="top-label"), False, 1e-6, 1e-8, duplicates=False
    ),
    "ScalingBinning-same-rows": Case(
        lambda: ct.ScalingBinning(split="none"), False, 1e-6, 1e-8, duplicates=False
    ),
}


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_every_public_recalibrator_has_its_fitted_case_and_alternatives(cls):
    assert len(CLASSES) >= 9
    assert cls.__name__ in CASES and CASES[cls.__name__].make().__class__ is cls
    assert cls in ALTERNATIVES


def assert_probabilities(probs, X):
    """Finite, non-negative rows that sum to 1 up to the rounding of their dtype."""
    assert probs.shape == np.shape(X) and np.isfinite(probs).all() and probs.min() >= 0
    atol = 1e-12 if probs.dtype == np.float64 else 1e-6
    assert_allclose(probs.sum(axis=1), 1, rtol=0, atol=atol)


# Another valid value of every parameter, for the check that set_params after fit leaves
# the predictions alone (each value would change a fit).
ALTERNATIVES = {
    ct.TemperatureScaling: {
        "temperature_bounds": (0.5, 2.0),
        "multilabel": True,
        "classes": ["a", "b", "c", "d"],
    },
    ct.EnsembleTemperatureScaling: {
        "temperature_bounds": (0.5, 2.0),
        "loss": "mse",
        "classes": ["a", "b", "c", "d"],
    },
    ct.VectorScaling: {
        "reg_lambda": 1.0,
        "num_classes": 4,
        "max_iter": 3,
        "tol": 1e-2,
        "n_jobs": 1,
        "classes": ["a", "b", "c", "d"],
    },
    ct.MatrixScaling: {
        "reg_lambda": 1.0,
        "reg_mu": 1.0,
        "structured": True,
        "num_classes": 4,
        "max_iter": 3,
        "tol": 1e-2,
        "classes": ["a", "b", "c", "d"],
    },
    ct.DirichletCalibration: {
        "reg_lambda": 1.0,
        "reg_mu": 1.0,
        "matrix_type": "diagonal",
        "eps": 1e-2,
        "num_classes": 4,
        "max_iter": 3,
        "tol": 1e-2,
        "n_jobs": 1,
        "classes": ["a", "b", "c", "d"],
    },
    ct.PlattScaling: {
        "input": "probabilities",
        "smoothed_targets": False,
        "quadratic": True,
        "multilabel": True,
        "classes": ["a", "b", "c", "d"],
    },
    ct.BetaCalibration: {"parameters": "am", "classes": ["a", "b", "c", "d"]},
    ct.IsotonicCalibration: {
        "mode": "top-label",
        "out_of_bounds": "raise",
        "centred": True,
        "classes": ["a", "b", "c", "d"],
    },
    ct.HistogramBinning: {
        "bins": 3,
        "adaptive_bins": True,
        "mode": "top-label",
        "classes": ["a", "b", "c", "d"],
    },
    ct.VennAbersCalibration: {
        "cv": 2,
        "merge": "brier",
        "multiclass": "ovo",
        "random_state": 1,
        "classes": ["a", "b", "c", "d"],
    },
    ct.SplineCalibration: {"knots": 3, "mode": "one-vs-rest", "classes": ["a", "b", "c", "d"]},
    ct.ScalingBinning: {
        "bins": 3,
        "mode": "top-label",
        "split": "none",
        "random_state": 1,
        "classes": ["a", "b", "c", "d"],
    },
}


def params_of(cls) -> list[str]:
    return [name for name in inspect.signature(cls.__init__).parameters if name != "self"]


def per_parameter():
    """(class, parameter) pairs of every class."""
    return [
        pytest.param(cls, name, id=f"{cls.__name__}-{name}")
        for cls in CLASSES
        for name in params_of(cls)
    ]


def data(on_logits, n=600, k=4, seed=3):
    logits, labels = make_overconfident(n, k, temperature=2.5, seed=seed)
    return (logits if on_logits else softmax(logits, axis=1)), labels


@cache
def fitted(name: str, n_classes: int = 4) -> ct.Recalibrator:
    """A fit shared by the checks that only read it (none may change it)."""
    case = CASES[name]
    return case.make().fit(*data(case.on_logits, k=n_classes))


by_case = pytest.mark.parametrize("name", list(CASES))
by_class = pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)


def same_params(a: dict, b: dict) -> bool:
    return json.dumps(a, default=np.ndarray.tolist) == json.dumps(b, default=np.ndarray.tolist)


# -- parameters ------------------------------------------------------------------------------
@by_class
def test_parameters_are_declared_once_each(cls):
    assert list(cls._parameters) == params_of(cls)


@by_class
def test_get_params_set_params_clone_and_repr(cls):
    estimator = cls()
    assert list(estimator.get_params()) == params_of(cls)
    assert repr(estimator) == f"{cls.__name__}()"
    clone = pytest.importorskip("sklearn.base").clone(estimator)
    assert clone is not estimator and same_params(clone.get_params(), estimator.get_params())
    name, value = next(iter(ALTERNATIVES[cls].items()))
    assert estimator.set_params(**{name: value}) is estimator
    assert getattr(estimator, name) == value
    assert repr(estimator) == f"{cls.__name__}({name}={value!r})"
    with pytest.raises(ValueError, match=f"invalid parameter 'bogus' for {cls.__name__}"):
        estimator.set_params(bogus=1)


@pytest.mark.parametrize(("cls", "param"), per_parameter())
def test_a_parameter_of_the_wrong_type_raises_type_error_naming_it(cls, param):
    X, y = data(cls in ON_LOGITS, n=50)
    with pytest.raises(TypeError, match=f"`{param}`"):
        cls(**{param: object()}).fit(X, y)


@pytest.mark.parametrize(
    ("cls", "param"),
    per_parameter(),
)
def test_set_params_after_fit_does_not_move_predictions(cls, param):
    X, y = data(cls in ON_LOGITS)
    test_X, _ = data(cls in ON_LOGITS, n=200, seed=4)
    if cls not in ON_LOGITS:
        # Scores outside the range seen in fit, and scores on equal-width bin edges.
        edges = np.linspace(0, 1, 16)[1:8, None]
        on_edges = np.hstack([edges, 1 - edges, np.zeros((7, 2))])
        test_X = np.vstack([test_X, np.eye(4), on_edges])
    estimator = cls().fit(X, y)
    before_probs, before_logits = estimator.predict_proba(test_X), estimator(test_X)
    estimator.set_params(**{param: ALTERNATIVES[cls][param]})
    assert_array_equal(estimator.predict_proba(test_X), before_probs)
    assert_array_equal(estimator(test_X), before_logits)


# -- fit and predict -------------------------------------------------------------------------
@by_class
def test_not_fitted(cls, tmp_path):
    X, _ = data(cls in ON_LOGITS, n=5)
    estimator = cls()
    for method in (estimator.predict_proba, estimator, estimator.predict):
        with pytest.raises(ct.NotFittedError, match="is not fitted yet; call `fit`"):
            method(X)
    with pytest.raises(ct.NotFittedError):
        estimator.to_dict()
    with pytest.raises(ct.NotFittedError):
        estimator.save(tmp_path / "model.json")
    assert not os.listdir(tmp_path)


@by_case
@pytest.mark.parametrize("n_classes", [2, 4])
def test_fit_and_predict(name, n_classes):
    case = CASES[name]
    X, y = data(case.on_logits, k=n_classes)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    copies = X.copy(), y.copy(), weights.copy()
    estimator = case.make()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a well-posed problem fits without warnings
        assert estimator.fit(X, y, sample_weight=weights) is estimator
    for given, copied in zip((X, y, weights), copies, strict=True):
        assert_array_equal(given, copied)  # nothing the user passes is modified
    assert estimator.n_classes_ == n_classes
    for dtype in (np.float64, np.float32):
        test_X = data(case.on_logits, n=300, k=n_classes, seed=5)[0].astype(dtype)
        probs = estimator.predict_proba(test_X)
        assert_probabilities(probs, test_X)
        assert_allclose(softmax(estimator(test_X), axis=1), probs, rtol=1e-12, atol=1e-300)
        assert_array_equal(estimator.predict(test_X), np.argmax(estimator(test_X), axis=1))


@by_case
def test_fit_is_deterministic(name):
    case = CASES[name]
    assert case.make().fit(*data(case.on_logits)).to_dict() == fitted(name).to_dict()


@by_case
def test_one_column_binary_input_equals_two_columns(name):
    case = CASES[name]
    logits, y = make_overconfident(400, 2, temperature=2.5, seed=6)
    if case.on_logits:
        one, two = (
            logits[:, 1] - logits[:, 0],
            np.stack([np.zeros(400), logits[:, 1] - logits[:, 0]], 1),
        )
    else:
        two = softmax(logits, axis=1)
        one = two[:, 1]
        two = np.stack([1 - one, one], axis=1)
    from_one, from_two = case.make().fit(one, y), case.make().fit(two, y)
    assert from_one.n_classes_ == 2
    assert_allclose(
        from_one.predict_proba(one), from_two.predict_proba(two), rtol=1e-12, atol=1e-15
    )


@by_class
def test_wrong_number_of_classes(cls):
    name = cls.__name__
    with pytest.raises(ValueError, match=f"`X` has 5 classes but this {name} was fitted on 4"):
        fitted(name).predict_proba(data(cls in ON_LOGITS, n=20, k=5)[0])
    with pytest.raises(ValueError, match=f"`X` has 2 classes but this {name} was fitted on 4"):
        fitted(name)(data(cls in ON_LOGITS, n=20, k=2)[0][:, 1])  # 1-D: a binary task


@by_class
def test_invalid_data(cls):
    X, y = data(cls in ON_LOGITS, n=20)
    bad_X = X.copy()
    bad_X[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"`X` must (be finite|not contain NaN); row 3"):
        cls().fit(bad_X, y)
    if cls not in ON_LOGITS:
        above_one = X.copy()
        above_one[0, 0] = 2.0
        with pytest.raises(ValueError, match=r"`X` must hold probabilities in \[0, 1\]; row 0"):
            cls().fit(above_one, y)
        unnormalised = X.copy()
        unnormalised[2] *= 0.8
        with pytest.raises(ValueError, match=r"rows of `X` must sum to 1 .* row 2 sums to"):
            cls().fit(unnormalised, y)
    with pytest.raises(ValueError, match=r"`y` must lie in \[0, 3\] for 4 classes; got 4"):
        cls().fit(X, np.where(np.arange(20) == 5, 4, y))
    with pytest.raises(ValueError, match=r"`y` must have one entry per row .* \(20\); got 19"):
        cls().fit(X, y[:19])
    with pytest.raises(ValueError, match=r"`sample_weight` must be non-negative; got -1\.0"):
        cls().fit(X, y, sample_weight=np.where(np.arange(20) == 0, -1.0, 1.0))


@by_case
@pytest.mark.parametrize("n_classes", [2, 4])
def test_sample_weight_is_a_count(name, n_classes):
    case = CASES[name]
    X, y = data(case.on_logits, n=300, k=n_classes)
    test_X, _ = data(case.on_logits, n=200, k=n_classes, seed=7)
    rng = np.random.default_rng(0)
    weights = rng.integers(1, 3, len(y)).astype(float)
    rows = np.repeat(np.arange(len(y)), weights.astype(int))
    weighted = case.make().fit(X, y, sample_weight=weights).predict_proba(test_X)
    tolerance = {"rtol": case.weight_rtol, "atol": case.weight_atol}
    if case.duplicates:
        duplicated = case.make().fit(X[rows], y[rows]).predict_proba(test_X)
        assert_allclose(weighted, duplicated, **tolerance)
    if case.scale_invariant:
        scaled = case.make().fit(X, y, sample_weight=3.5 * weights).predict_proba(test_X)
        assert_allclose(scaled, weighted, **tolerance)
    keep = rng.random(len(y)) < 0.7  # zero weights drop rows
    dropped = case.make().fit(X, y, sample_weight=keep.astype(float)).predict_proba(test_X)
    assert_allclose(dropped, case.make().fit(X[keep], y[keep]).predict_proba(test_X), **tolerance)


@by_case
def test_extreme_inputs_give_finite_normalised_probabilities(name):
    case = CASES[name]
    rng = np.random.default_rng(8)
    if case.on_logits:
        extreme = 1e4 * np.sign(rng.normal(size=(50, 4)))
    else:
        extreme = np.eye(4)[rng.integers(0, 4, 50)]  # exact zeros and ones
        extreme[:5] = [0.5, 0.5, 0.0, 0.0]
    for dtype in (np.float64, np.float32):
        assert_probabilities(fitted(name).predict_proba(extreme.astype(dtype)), extreme)
        assert not np.isnan(fitted(name)(extreme.astype(dtype))).any()


def degenerate_labels(kind: str, labels: np.ndarray) -> np.ndarray:
    labels = labels.copy()
    if kind == "single-class":
        labels[:] = 0
    elif kind == "absent-class":
        labels[labels == 2] = 0
    elif kind == "single-sample-class":
        labels[labels == 3] = 0
        labels[17] = 3
    return labels


@by_case
@pytest.mark.parametrize(
    "kind", ["separable", "single-class", "absent-class", "single-sample-class"]
)
def test_degenerate_calibration_sets_give_finite_normalised_probabilities(name, kind):
    case = CASES[name]
    X, y = data(case.on_logits, n=100)
    if kind == "separable":
        y = np.arange(100) % 4
        logits = 5.0 * np.eye(4)[y]
        X = logits if case.on_logits else softmax(logits, axis=1)
    y = degenerate_labels(kind, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the families test their warnings
        estimator = case.make().fit(X, y)
    test_X = data(case.on_logits, n=100, seed=9)[0]
    assert_probabilities(estimator.predict_proba(test_X), test_X)


# Settings under which a class warns of the set below: a top-label map by default has no
# use for the class that never occurs, its one-vs-rest form warns of it.
WARNING_SETTINGS = {ct.SplineCalibration: {"mode": "one-vs-rest"}}


@by_class
def test_fit_warnings_point_at_the_caller(cls):
    labels = np.arange(60) % 3  # class 3 never occurs, and the logits rank every label first
    logits = 5.0 * np.eye(4)[labels]
    X = logits if cls in ON_LOGITS else softmax(logits, axis=1)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        cls(**WARNING_SETTINGS.get(cls, {})).fit(X, labels)
    assert record
    assert [warning.filename for warning in record] == [__file__] * len(record)


@by_class
def test_improves_held_out_calibration_of_an_overconfident_model(cls):
    X, y = data(cls in ON_LOGITS, n=4000, k=4)
    fit, test = slice(0, 2000), slice(2000, None)
    before = ct.ECE(X[test], y[test], logits=cls in ON_LOGITS)
    after = ct.ECE(cls().fit(X[fit], y[fit]).predict_proba(X[test]), y[test])
    assert after < before / 2


# -- persistence -----------------------------------------------------------------------------
def strict_json(text: str):
    def refuse(constant):
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


@by_case
@pytest.mark.parametrize("n_classes", [2, 4])
def test_round_trip_is_exact(name, n_classes, tmp_path):
    estimator = copy.deepcopy(fitted(name, n_classes))
    estimator.set_params(**ALTERNATIVES[type(estimator)])  # settings round-trip too
    X = data(CASES[name].on_logits, n=200, k=n_classes, seed=10)[0]
    probs, logits = estimator.predict_proba(X), estimator(X)
    path = tmp_path / "model.json"
    estimator.save(path)
    description = strict_json(path.read_text())
    assert description["format_version"] == 1
    assert description["class"] == type(estimator).__name__
    for loaded in (
        ct.load_recalibrator(path),
        type(estimator).load(path),
        ct.Recalibrator.from_dict(json.loads(json.dumps(estimator.to_dict()))),
    ):
        assert type(loaded) is type(estimator)
        assert same_params(loaded.get_params(), estimator.get_params())
        assert_array_equal(loaded.predict_proba(X), probs)
        assert_array_equal(loaded(X), logits)


# Where each class keeps a float attribute, an array and a coefficient array.
FLOAT_ATTRIBUTE = {
    ct.TemperatureScaling: "temperature_",
    ct.EnsembleTemperatureScaling: "weights_",
    ct.IsotonicCalibration: "breakpoint_values_",
    ct.HistogramBinning: "bin_probabilities_",
    ct.VennAbersCalibration: "upper_",
    ct.SplineCalibration: "breakpoint_values_",
    ct.ScalingBinning: "bin_probabilities_",
}
SHAPED_ATTRIBUTE = {
    ct.EnsembleTemperatureScaling: "weights_",
    ct.IsotonicCalibration: "breakpoint_offsets_",
    ct.HistogramBinning: "bin_probabilities_",
    ct.VennAbersCalibration: "run_offsets_",
    ct.SplineCalibration: "breakpoint_offsets_",
    ct.ScalingBinning: "bin_probabilities_",
}
COEFFICIENTS = (ct.VectorScaling, ct.MatrixScaling, ct.DirichletCalibration)
COEFFICIENTS += (ct.PlattScaling, ct.BetaCalibration)


def first_float(cls) -> str:
    return FLOAT_ATTRIBUTE.get(cls, "coef_")


def first_array(cls) -> str:
    return SHAPED_ATTRIBUTE.get(cls, "coef_")


def set_first(attribute: str, value):
    def change(fitted_state):
        stored = fitted_state[attribute]
        if isinstance(stored, dict):
            stored["data"][0] = value
        else:
            fitted_state[attribute] = value

    return change


def add_a_row(attribute: str):
    def change(fitted_state):
        stored = fitted_state[attribute]
        row = int(np.prod(stored["shape"][1:]))
        stored["data"] += stored["data"][:row]
        stored["shape"][0] += 1

    return change


def mutations(cls):
    """(case, change of the description, what the error says) for every applicable case."""
    param = params_of(cls)[0]
    cases = {
        "missing-key": (
            lambda d: d["fitted"].pop("n_classes_"),
            r"`fitted` lacks the key\(s\) \['n_classes_'\]",
        ),
        "unknown-class": (lambda d: d.update({"class": "Foo"}), "`class` must name a built-in"),
        "unknown-param": (
            lambda d: d["params"].update({"bogus": 1}),
            r"`params` has unknown key\(s\) \['bogus'\]",
        ),
        "bad-param": (lambda d: d["params"].update({param: "bogus"}), f"`{param}` must"),
        "unknown-version": (
            lambda d: d.update({"format_version": 2}),
            "`format_version` must be 1",
        ),
        "no-version": (
            lambda d: d.pop("format_version"),
            r"the description lacks the key\(s\) \['format_version'\]",
        ),
        "not-a-recalibrator": (lambda d: d.pop("format"), "not a recalibrator description"),
        "nan": (
            lambda d: set_first(first_float(cls), float("nan"))(d["fitted"]),
            f"`{first_float(cls)}` must be",
        ),
        "few-classes": (
            lambda d: d["fitted"].update({"n_classes_": 1}),
            r"`n_classes_` must be an integer >= 2 and <= 1,000,000; got 1\.",
        ),
    }
    if cls is not ct.TemperatureScaling:
        array = first_array(cls)
        cases["object-dtype"] = (
            lambda d: d["fitted"][array].update({"dtype": "|O"}),
            f"`{array}` must be stored with dtype",
        )
        cases["wrong-shape"] = (
            lambda d: add_a_row(array)(d["fitted"]),
            f"`{array}` must have shape",
        )
    if cls in COEFFICIENTS:
        cases["huge-coefficient"] = (
            lambda d: set_first("coef_", 1e308)(d["fitted"]),
            "`coef_` must be an array of finite numbers in",
        )
    return cases


def refusal_cases():
    for cls in CLASSES:
        for case in mutations(cls):
            yield pytest.param(cls, case, id=f"{cls.__name__}-{case}")


@pytest.mark.parametrize(("cls", "case"), list(refusal_cases()))
def test_load_refuses_a_bad_file_with_one_value_error(cls, case, tmp_path):
    change, message = mutations(cls)[case]
    description = fitted(cls.__name__).to_dict()
    change(description)
    path = tmp_path / "model.json"
    path.write_text(json.dumps(description))
    for load in (ct.load_recalibrator, cls.load):
        with pytest.raises(ValueError, match=re.escape(f"{path}: ") + ".*" + message):
            load(path)
    with pytest.raises(ValueError, match=message):
        cls.from_dict(description)


RANGE_CASES = [
    (
        ct.TemperatureScaling,
        set_first("temperature_", -1.0),
        "`temperature_` must be a finite number in [1e-100, 1e+100], or an array of such "
        "numbers (one per label); got -1.0.",
    ),
    (
        ct.EnsembleTemperatureScaling,
        set_first("temperature_", 0),
        "`temperature_` must be a finite number in [1e-100, 1e+100]; got 0",
    ),
    (ct.EnsembleTemperatureScaling, set_first("weights_", 0.9), "`weights_` must sum to 1"),
    (
        ct.EnsembleTemperatureScaling,
        set_first("weights_", -0.1),
        "`weights_` must be an array of finite numbers in [0, 1]; got -0.1.",
    ),
    (
        ct.PlattScaling,
        set_first("input_", "scores"),
        "`input_` must be 'logits' or 'probabilities' or 'logits per label' or "
        "'probabilities per label'; got 'scores'.",
    ),
    (
        ct.BetaCalibration,
        set_first("coef_", -1.0),
        "`coef_` must be an array of finite numbers in [0, 1e+100]; got -1.0.",
    ),
    (
        ct.IsotonicCalibration,
        set_first("breakpoints_", 0.99),
        "`breakpoints_` must increase within each run",
    ),
    (
        ct.IsotonicCalibration,
        set_first("breakpoint_offsets_", 1),
        "`breakpoint_offsets_` must increase from 0",
    ),
    (
        ct.IsotonicCalibration,
        set_first("mode_", "ovr"),
        "`mode_` must be 'one-vs-rest' or 'top-label' or 'pooled'; got 'ovr'.",
    ),
    (
        ct.HistogramBinning,
        set_first("bin_probabilities_", 1.5),
        "`bin_probabilities_` must be an array of finite numbers in [0, 1]; got 1.5.",
    ),
    (
        ct.HistogramBinning,
        set_first("bin_edges_", 0.5),
        "`bin_edges_` must hold, per row, edges that run from 0 to 1",
    ),
    (
        ct.HistogramBinning,
        set_first("adaptive_bins_", 1),
        "`adaptive_bins_` must be True or False; got 1.",
    ),
    (
        ct.VennAbersCalibration,
        set_first("upper_", 1.5),
        "`upper_` must be an array of finite numbers in [0, 1]; got 1.5.",
    ),
    (
        ct.VennAbersCalibration,
        set_first("scores_", 0.99),
        "`scores_` must increase within each run",
    ),
    (
        ct.VennAbersCalibration,
        set_first("run_offsets_", 1),
        "`run_offsets_` must not decrease from 0",
    ),
    (
        ct.HistogramBinning,
        set_first("mode_", "ovr"),
        "`mode_` must be 'one-vs-rest' or 'top-label'; got 'ovr'.",
    ),
    (
        ct.SplineCalibration,
        set_first("breakpoint_values_", 1.5),
        "`breakpoint_values_` must be an array of finite numbers in [0, 1]; got 1.5.",
    ),
    (
        ct.SplineCalibration,
        set_first("breakpoints_", 0.99),
        "`breakpoints_` must increase within each run",
    ),
    (
        ct.ScalingBinning,
        set_first("bin_edges_", 0.5),
        "`bin_edges_` must hold, per row, edges that run from 0 to 1",
    ),
    (
        ct.ScalingBinning,
        set_first("bin_probabilities_", 1.5),
        "`bin_probabilities_` must be an array of finite numbers in [0, 1]; got 1.5.",
    ),
    (
        ct.ScalingBinning,
        set_first("mode_", "ovr"),
        "`mode_` must be 'one-vs-rest' or 'top-label'; got 'ovr'.",
    ),
]


@pytest.mark.parametrize(("cls", "change", "message"), RANGE_CASES)
def test_load_refuses_values_out_of_range(cls, change, message, tmp_path):
    description = fitted(cls.__name__).to_dict()
    change(description["fitted"])
    path = tmp_path / "scaler.json"
    path.write_text(json.dumps(description))
    with pytest.raises(ValueError, match=re.escape(f"{path}: {message}")):
        ct.load_recalibrator(path)


@pytest.mark.parametrize("text", ["", '{"format": "calibration-toolbox/recal', "\x80\x81"])
def test_load_refuses_a_file_that_is_not_json(text, tmp_path):
    path = tmp_path / "model.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ValueError, match=re.escape(f"{path}: not a JSON file written by `save`")):
        ct.load_recalibrator(path)


@pytest.mark.parametrize("value", [[1, 2], "text", None])
def test_from_dict_refuses_what_is_not_a_description(value):
    with pytest.raises(ValueError, match="not a recalibrator description written by `to_dict`"):
        ct.TemperatureScaling.from_dict(value)


# -- atomic save -----------------------------------------------------------------------------
def saved_good_file(cls, folder):
    path = folder / "model.json"
    fitted(cls.__name__).save(path)
    return path, path.read_bytes()


@by_class
def test_saving_an_unfitted_estimator_leaves_a_good_file_intact(cls, tmp_path):
    path, good = saved_good_file(cls, tmp_path)
    with pytest.raises(ct.NotFittedError):
        cls().save(path)
    assert path.read_bytes() == good and os.listdir(tmp_path) == ["model.json"]


@by_class
def test_a_state_load_would_refuse_is_not_written(cls, tmp_path):
    path, good = saved_good_file(cls, tmp_path)
    broken = copy.deepcopy(fitted(cls.__name__))
    attribute = first_float(cls)
    value = getattr(broken, attribute)
    if isinstance(value, np.ndarray):
        value.flat[0] = np.nan
    else:
        setattr(broken, attribute, np.nan)
    with pytest.raises(ValueError, match=f"`{attribute}` must be"):
        broken.save(path)
    assert path.read_bytes() == good and os.listdir(tmp_path) == ["model.json"]


@pytest.mark.parametrize("failing", ["fsync", "replace"])
@by_class
def test_a_failed_write_leaves_the_old_file_and_no_temporary(cls, failing, tmp_path, monkeypatch):
    path, good = saved_good_file(cls, tmp_path)

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, failing, disk_full)
    with pytest.raises(OSError, match="No space left"):
        fitted(cls.__name__).save(path)
    monkeypatch.undo()
    assert path.read_bytes() == good and os.listdir(tmp_path) == ["model.json"]


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_save_keeps_the_usual_file_permissions(tmp_path):
    umask = os.umask(0o022)
    os.umask(umask)
    path = tmp_path / "new.json"
    fitted("TemperatureScaling").save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # as open(path, "w") gives
    path.chmod(0o640)
    fitted("TemperatureScaling").save(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o640  # an existing file keeps its mode


# -- the registry of built-in classes --------------------------------------------------------
def test_a_user_class_named_like_a_built_in_one_does_not_hijack_loading(tmp_path):
    class TemperatureScaling(ct.TemperatureScaling):  # a user's class, same name
        def _calibrated_logits(self, X):
            return np.zeros((len(X), self.n_classes_))

    path = tmp_path / "model.json"
    fitted("TemperatureScaling").save(path)
    loaded = ct.load_recalibrator(path)
    assert type(loaded) is ct.TemperatureScaling
    X = data(True, n=50, seed=11)[0]
    assert_array_equal(loaded.predict_proba(X), fitted("TemperatureScaling").predict_proba(X))
    # The user's class writes files that name it fully; only its own `load` reads them.
    user = TemperatureScaling().fit(*data(True))
    user.save(path)
    assert type(TemperatureScaling.load(path)) is TemperatureScaling
    with pytest.raises(ValueError, match="`class` must name a built-in recalibrator"):
        ct.load_recalibrator(path)


def test_a_file_of_another_class_is_refused(tmp_path):
    path = tmp_path / "platt.json"
    fitted("PlattScaling").save(path)
    with pytest.raises(ValueError, match="is of a PlattScaling, not of a TemperatureScaling"):
        ct.TemperatureScaling.load(path)
