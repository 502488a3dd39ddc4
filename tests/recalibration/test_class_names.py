"""Recalibrators with ``classes``: labels given as class names, end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import softmax

import calibration_toolbox as ct
from calibration_toolbox.recalibration import load_recalibrator

NAMES = ["cat", "dog", "eel"]
ON_LOGITS = [ct.TemperatureScaling, ct.VectorScaling, ct.MatrixScaling]
ON_LOGITS += [ct.EnsembleTemperatureScaling, ct.PlattScaling]
ON_PROBABILITIES = [ct.DirichletCalibration, ct.IsotonicCalibration]
ON_PROBABILITIES += [ct.HistogramBinning, ct.BetaCalibration]


def _problem(seed=0, n=400):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, n)
    logits = 2.0 * (np.eye(3)[labels] + rng.normal(size=(n, 3)))
    return logits, labels


def _inputs(method):
    logits, labels = _problem()
    return (logits if method in ON_LOGITS else softmax(logits, axis=1)), labels


@pytest.mark.parametrize("method", ON_LOGITS + ON_PROBABILITIES)
def test_string_labels_end_to_end(method, tmp_path):
    X, labels = _inputs(method)
    names = np.array(NAMES)[labels]
    by_index = method().fit(X, labels)
    by_name = method(classes=NAMES).fit(X, names)
    assert_array_equal(by_name.classes_, NAMES)
    assert_array_equal(by_index.classes_, [0, 1, 2])
    assert_allclose(by_name.predict_proba(X), by_index.predict_proba(X), rtol=1e-12, atol=1e-15)
    assert_array_equal(by_name.predict(X), np.array(NAMES)[by_index.predict(X)])
    assert_allclose(by_name.score(X, names), by_index.score(X, labels), rtol=1e-12)
    path = tmp_path / "model.json"
    by_name.save(path)
    stored = json.loads(path.read_text())
    assert stored["params"]["classes"] == NAMES and stored["fitted"]["classes_"] == NAMES
    loaded = load_recalibrator(path)
    assert_array_equal(loaded.classes_, NAMES)
    assert_array_equal(loaded.predict(X), by_name.predict(X))
    assert_allclose(loaded.predict_proba(X), by_name.predict_proba(X), rtol=0, atol=0)


def test_classes_is_a_setting_that_clone_keeps():
    sklearn_base = pytest.importorskip("sklearn.base")
    scaler = ct.TemperatureScaling(classes=NAMES)
    assert scaler.get_params()["classes"] == NAMES
    assert sklearn_base.clone(scaler).classes == NAMES
    assert repr(scaler) == "TemperatureScaling(classes=['cat', 'dog', 'eel'])"


def test_names_without_classes_say_where_to_pass_them():
    logits, labels = _problem()
    message = (
        r"Pass `classes` when constructing the recalibrator, "
        r"VectorScaling\(classes=\.\.\.\): the class names in the column order"
    )
    with pytest.raises(TypeError, match=message):
        ct.VectorScaling().fit(logits, np.array(NAMES)[labels])


def test_unknown_names_and_wrong_counts_are_refused():
    logits, labels = _problem()
    names = np.array(NAMES)[labels]
    with pytest.raises(ValueError, match=r"`y` holds 'eel' \(row \d+\), which is not in"):
        ct.TemperatureScaling(classes=["cat", "dog", "emu"]).fit(logits, names)
    with pytest.raises(ValueError, match=r"`classes` must name every column .* got 2 names"):
        ct.TemperatureScaling(classes=["cat", "dog"]).fit(logits, names)
    with pytest.raises(TypeError, match="Integer labels are column indices already"):
        ct.TemperatureScaling(classes=NAMES).fit(logits, labels)


def test_classes_as_fitted_survive_set_params_and_bad_files(tmp_path):
    logits, labels = _problem()
    scaler = ct.TemperatureScaling(classes=NAMES).fit(logits, np.array(NAMES)[labels])
    scaler.set_params(classes=None)
    assert_array_equal(scaler.classes_, NAMES)  # the next fit changes, not this one
    description = scaler.to_dict()
    assert description["params"]["classes"] is None  # the setting, for the next fit
    assert description["fitted"]["classes_"] == NAMES  # the names of this fit
    assert_array_equal(ct.TemperatureScaling.from_dict(description).classes_, NAMES)
    description["fitted"]["classes_"] = ["cat", "cat", "eel"]
    with pytest.raises(ValueError, match="`classes_` must be a list of 3 distinct class names"):
        ct.TemperatureScaling.from_dict(description)


def test_numeric_class_names():
    logits, labels = _problem()
    years = np.array([1990, 2000, 2010])
    fitted = ct.PlattScaling(classes=years).fit(logits, years[labels])
    assert_array_equal(fitted.classes_, years)
    assert_array_equal(
        fitted.predict(logits[:5]), years[fitted.predict_proba(logits[:5]).argmax(1)]
    )
    assert_array_equal(load_recalibrator_roundtrip(fitted, logits), fitted.predict(logits))


def load_recalibrator_roundtrip(fitted, X):
    return type(fitted).from_dict(json.loads(json.dumps(fitted.to_dict()))).predict(X)


@pytest.mark.parametrize("method", [ct.TemperatureScaling, ct.VectorScaling])
@pytest.mark.parametrize("classes", [None, NAMES])
def test_names_in_blocks_say_that_blocks_take_column_indices(method, classes):
    # fit_blocks and Dask chunks never use `classes`: "Pass `classes`" sent the user to a
    # setting that changes nothing there (and with `classes` given, asked for it again).
    logits, labels = _problem()
    names = np.array(NAMES)[labels]
    message = (
        r"in rows 0 to 199 of `source`: `y` must hold class indices in blocks and Dask "
        r"chunks, where `classes` is not used; got class names \('cat', 'dog', 'eel'\)\. "
        r"Map each name to its column first"
    )
    blocks = [(logits[:200], names[:200]), (logits[200:], names[200:])]
    with pytest.raises(TypeError, match=message) as error:
        method(classes=classes).fit_blocks(blocks)
    assert "Pass `classes`" not in str(error.value)
    # the advice, followed: the names' columns in the order of `classes`
    columns = np.searchsorted(NAMES, names)
    fitted = method(classes=classes).fit_blocks([(logits, columns)])
    assert_allclose(
        fitted.predict_proba(logits), method().fit(logits, labels).predict_proba(logits), rtol=1e-9
    )


def test_names_in_dask_chunks_say_that_chunks_take_column_indices():
    da = pytest.importorskip("dask.array")
    logits, labels = _problem()
    names = np.array(NAMES)[labels]
    X, y = da.from_array(logits, chunks=(100, 3)), da.from_array(names, chunks=100)
    with pytest.raises(TypeError, match=r"`y` must hold class indices in blocks and Dask chunks"):
        ct.VectorScaling(classes=NAMES).fit(X, y)
