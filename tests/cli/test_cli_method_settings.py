"""Command-line methods made from a class with settings: ``histogram-top-label``, and the
``scaling-binning`` method; a loaded model is named by its fitted settings."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import softmax

from calibration_toolbox import ECE, HistogramBinning, ScalingBinning, load_recalibrator
from calibration_toolbox.cli import main
from calibration_toolbox.cli._methods import METHODS, method_of
from calibration_toolbox.datasets import load_example
from tests.conftest import synthetic_example


def _example_rows():
    """The embedded example's fit and test probabilities and labels, as the report makes
    them: the softmax of the float32 logits cast to float64."""
    example = load_example()
    prob = softmax(example.logits.astype(np.float64), axis=1)
    fit, test = example.calibration_rows, example.test_rows
    return prob[fit], example.labels[fit], prob[test], example.labels[test]


def _report(capsys, method: str) -> dict:
    assert main(["report", "--method", method, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_report_with_top_label_histogram_binning_on_the_embedded_example(capsys):
    report = _report(capsys, "histogram-top-label")
    assert [entry["method"] for entry in report["results"]] == [
        "uncalibrated",
        "histogram-top-label",
    ]
    fit_prob, fit_labels, test_prob, test_labels = _example_rows()
    model = HistogramBinning(mode="top-label").fit(fit_prob, fit_labels)
    after = report["results"][1]["metrics"]
    assert_allclose(after["ECE"], ECE(model.predict_proba(test_prob), test_labels), rtol=1e-12)
    # not the one-vs-rest fit of `--method histogram`
    other = HistogramBinning().fit(fit_prob, fit_labels)
    assert not np.isclose(after["ECE"], ECE(other.predict_proba(test_prob), test_labels))


@pytest.mark.filterwarnings("ignore:the scores of the scaling set separate:UserWarning")
def test_report_with_scaling_binning_on_the_embedded_example(capsys):
    report = _report(capsys, "scaling-binning")
    assert report["results"][1]["method"] == "scaling-binning"
    fit_prob, fit_labels, test_prob, test_labels = _example_rows()
    model = ScalingBinning().fit(fit_prob, fit_labels)
    after = report["results"][1]["metrics"]
    assert_allclose(after["ECE"], ECE(model.predict_proba(test_prob), test_labels), rtol=1e-12)


@pytest.mark.parametrize(
    ("model", "name"),
    [
        (HistogramBinning(), "histogram"),
        (HistogramBinning(mode="top-label"), "histogram-top-label"),
        (ScalingBinning(), "scaling-binning"),
    ],
)
def test_a_model_is_named_by_its_fitted_settings(model, name):
    example = synthetic_example()
    model.fit(example.prob[:300], example.labels[:300])
    assert method_of(model).name == name
    # the fitted mode decides, not a setting changed after fit
    model.set_params(mode="top-label" if name == "histogram" else "one-vs-rest")
    assert method_of(model).name == name
    assert METHODS[name].make().get_params()["mode"] == model.mode_


def test_saved_top_label_model_is_applied_under_its_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    example = synthetic_example()
    prob, labels = example.prob, example.labels
    np.savez(tmp_path / "val.npz", probs=prob[:400], labels=labels[:400])
    np.save(tmp_path / "test.npy", prob[400:700])
    fit = ["--fit", "val.npz", "--apply", "test.npy", "-o", "out.npz", "--save-model", "h.json"]
    assert main(["recalibrate", "--method", "histogram-top-label", *fit]) == 0
    capsys.readouterr()
    assert main(["apply", "h.json", "test.npy", "-o", "again.npz"]) == 0
    assert capsys.readouterr().out.startswith("top-label histogram binning read from h.json")
    model = load_recalibrator(tmp_path / "h.json")
    assert model.mode_ == "top-label"
    expected = HistogramBinning(mode="top-label").fit(prob[:400], labels[:400])
    assert_allclose(
        model.predict_proba(prob[400:700]), expected.predict_proba(prob[400:700]), rtol=1e-15
    )
