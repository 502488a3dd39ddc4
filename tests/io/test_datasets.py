"""The bundled example (package data) and the script that made it."""

from __future__ import annotations

import importlib.util
import io
import math
import re
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import scipy
from numpy.testing import assert_array_equal

from calibration_toolbox import ECE, TemperatureScaling, negative_log_likelihood
from calibration_toolbox.datasets import load_example, make_overconfident
from calibration_toolbox.io import load_predictions

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "make_digits_example.py"


def _script():
    spec = importlib.util.spec_from_file_location("make_digits_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stored_file() -> bytes:
    return resources.files("calibration_toolbox").joinpath("data", "digits_mlp.npz").read_bytes()


def test_the_example_has_the_documented_shapes_and_splits():
    example = load_example()
    assert example.logits.shape == (1497, 10) and example.logits.dtype == np.float32
    assert example.labels.shape == (1497,) and example.labels.dtype == np.int64
    assert_array_equal(np.bincount(example.labels, minlength=10) > 100, True)
    rows = np.concatenate([example.calibration_rows, example.test_rows])
    assert_array_equal(np.sort(rows), np.arange(1497))  # disjoint, together every row
    assert (len(example.calibration_rows), len(example.test_rows)) == (748, 749)
    assert math.isnan(example.true_temperature)
    assert isinstance(example.description, str)
    assert "load_digits" in example.description and "749 test rows" in example.description
    assert example.prob.shape == (1497, 10)


def test_the_file_is_read_without_pickle_by_load_predictions(tmp_path):
    path = tmp_path / "digits_mlp.npz"
    path.write_bytes(_stored_file())
    with np.load(path, allow_pickle=False) as archive:
        assert str(archive["description"]) == load_example().description
        assert archive["description"].shape == ()
    # `logits` and `labels` are the names load_predictions (and the command line) finds first
    logits, labels = load_predictions(path)
    example = load_example()
    assert_array_equal(logits, example.logits[example.test_rows])
    assert_array_equal(labels, example.labels[example.test_rows])


def test_the_example_is_overconfident_and_temperature_scaling_fixes_most_of_it():
    example = load_example()
    fit, test = example.calibration_rows, example.test_rows
    logits, labels = example.logits, example.labels
    prob = example.prob[test]
    accuracy = (prob.argmax(axis=1) == labels[test]).mean()
    assert prob.max(axis=1).mean() > accuracy + 0.03  # overconfident on average
    before = ECE(logits[test], labels[test], logits=True)
    assert before > 0.04
    scaler = TemperatureScaling().fit(logits[fit], labels[fit])
    assert scaler.temperature_ > 1.5
    calibrated = scaler.predict_proba(logits[test])
    assert ECE(calibrated, labels[test]) < before / 2
    assert negative_log_likelihood(calibrated, labels[test]) < negative_log_likelihood(
        logits[test], labels[test], logits=True
    )


def test_the_script_is_deterministic_and_writes_atomically(tmp_path):
    pytest.importorskip("sklearn")
    script = _script()
    small = {"n_train": 100, "hidden_units": 8}
    first = script.archive_bytes(script.make_arrays(**small))
    assert script.archive_bytes(script.make_arrays(**small)) == first
    target = tmp_path / "example.npz"
    target.write_bytes(b"old")
    script.write_atomically(target, first)
    assert target.read_bytes() == first
    assert [path.name for path in tmp_path.iterdir()] == ["example.npz"]  # no temporary left


def _stored_arrays() -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(_stored_file()), allow_pickle=False) as archive:
        return dict(archive.items())


def test_the_stored_file_is_what_the_script_writes():
    # Values, not bytes: the BLAS kernel OpenBLAS picks for this processor rounds the logits
    # its own way (the script's LOGIT_ATOL and LOGIT_RTOL say by how much at most).
    sklearn = pytest.importorskip("sklearn")
    stored = _stored_arrays()
    made_with = str(stored["made_with"])
    here = f"scikit-learn {sklearn.__version__}, numpy {np.__version__}, scipy {scipy.__version__}"
    if made_with != here:
        pytest.skip(f"the file was made with {made_with}; this is {here}")
    script = _script()
    assert script.differences(script.make_arrays(), stored) == []  # about 0.1 s of training


def test_a_fresh_run_that_differs_beyond_rounding_is_reported():
    script = _script()
    stored = _stored_arrays()
    assert script.differences(stored, stored) == []
    rounded = dict(stored, logits=stored["logits"] + np.float32(2e-6))  # another kernel
    assert script.differences(rounded, stored) == []
    moved = dict(stored, logits=stored["logits"].copy())
    moved["logits"][3, 4] += 1e-3
    (line,) = script.differences(moved, stored)
    assert re.fullmatch(r"logits: 1 values off by up to 0\.00(1|09\d+)", line)
    relabelled = dict(stored, labels=stored["labels"][::-1])
    assert script.differences(relabelled, stored)[0].startswith("labels: ")
    # a model whose logits all moved a little, and so its calibration, is also caught
    hotter = dict(stored, logits=stored["logits"] * np.float32(1.01))
    assert any(line.startswith("logits: ") for line in script.differences(hotter, stored))


def test_the_readme_quotes_the_stored_file():
    text = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    quoted = re.search(
        r"test accuracy (?P<accuracy>[\d.]+) %, mean confidence (?P<confidence>[\d.]+) %, "
        r"ECE (?P<before>[\d.]+) before and (?P<after>[\d.]+) after temperature scaling "
        r"with `T = (?P<T>[\d.]+)`",
        text,
    )
    assert quoted is not None
    numbers = _script().quoted_numbers(_stored_arrays())
    assert numbers == {
        "test accuracy": f"{quoted['accuracy']}%",
        "mean confidence": f"{quoted['confidence']}%",
        "ECE before": quoted["before"],
        "ECE after": quoted["after"],
        "T": quoted["T"],
    }
    # the package's own docstring quotes the same two percentages
    docstring = " ".join(load_example.__doc__.split())
    assert f"test accuracy {quoted['accuracy']} %" in docstring
    assert f"mean confidence {quoted['confidence']} %" in docstring


def test_make_overconfident_still_gives_its_known_temperature():
    logits, labels = make_overconfident(4000, 5, temperature=3.0, seed=1)
    scaler = TemperatureScaling().fit(logits, labels)
    assert abs(scaler.temperature_ - 3.0) < 0.3
