"""``calibration-toolbox recalibrate`` and ``apply``, and every subcommand's ``--help``."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import BetaCalibration, TemperatureScaling, load_recalibrator
from calibration_toolbox.cli import main
from calibration_toolbox.cli._parser import parser
from tests.conftest import synthetic_example

# These fit and apply on one file for brevity: the in-sample warning is shown, not raised.
IN_SAMPLE = pytest.mark.filterwarnings("always:fitted on .*the very rows:UserWarning")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def folder(tmp_path, monkeypatch):
    """The inputs of the commands, in the current folder."""
    monkeypatch.chdir(tmp_path)
    example = synthetic_example()
    prob, labels = example.prob, example.labels
    np.savez(tmp_path / "val.npz", probs=prob[:400], labels=labels[:400])
    np.savez(tmp_path / "test.npz", probs=prob[400:700], labels=labels[400:700])
    np.save(tmp_path / "test.npy", prob[400:700])
    binary = prob[:400, :2] / prob[:400, :2].sum(axis=1, keepdims=True)
    np.savez(tmp_path / "binary.npz", probs=binary[:, 1], labels=(labels[:400] == 1) * 1)
    return tmp_path


def _one_error(capsys) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibration-toolbox: error: "), lines
    return lines[0]


def test_recalibrate_writes_the_calibrated_probabilities_and_the_model(folder, capsys):
    out, model_file = folder / "out.npz", folder / "model.json"
    args = ["--method", "temperature", "--fit", "val.npz", "--apply", "test.npz"]
    assert main(["recalibrate", *args, "-o", "out.npz", "--save-model", "model.json"]) == 0
    text = capsys.readouterr().out
    assert "temperature scaling fitted on val.npz (400 rows); T = " in text
    assert "temperature: fitted and applied on the log-probabilities log(p)" in text
    example = synthetic_example()
    scaler = TemperatureScaling().fit(np.log(example.prob[:400]), example.labels[:400])
    with np.load(out) as written:
        assert sorted(written.files) == ["labels", "prob"]
        expected = scaler.predict_proba(np.log(example.prob[400:700]))
        assert_allclose(written["prob"], expected, rtol=1e-12)
        assert (written["labels"] == example.labels[400:700]).all()
    saved = load_recalibrator(model_file)
    assert_allclose(saved.temperature_, scaler.temperature_, rtol=1e-12)
    assert not [path.name for path in folder.iterdir() if path.name.endswith(".tmp")]


@IN_SAMPLE
def test_apply_of_a_saved_model_equals_its_predict_proba(folder, capsys):
    args = ["--method", "beta", "--fit", "binary.npz", "--apply", "binary.npz", "-o", "a.npz"]
    assert main(["recalibrate", *args, "--save-model", "beta.json"]) == 0
    capsys.readouterr()
    model = load_recalibrator(folder / "beta.json")
    assert isinstance(model, BetaCalibration)
    # A .npy without --labels: probabilities only, and no labels in the output.
    p = np.load(folder / "binary.npz")["probs"]
    np.save(folder / "p1.npy", p)
    assert main(["apply", "beta.json", "p1.npy", "-o", "b.npz"]) == 0
    assert "wrote b.npz: prob, 400 x 2" in capsys.readouterr().out
    with np.load(folder / "b.npz") as written:
        assert written.files == ["prob"]
        assert_allclose(written["prob"], model.predict_proba(p), rtol=1e-12)
    with np.load(folder / "a.npz") as written:
        assert_allclose(written["prob"], model.predict_proba(p), rtol=1e-12)


@IN_SAMPLE
def test_apply_converts_logits_for_a_probability_method(folder, capsys):
    example = synthetic_example()
    np.savez(folder / "zval.npz", logits=example.logits[:400], labels=example.labels[:400])
    np.save(folder / "ztest.npy", example.logits[400:500])
    args = ["--fit", "zval.npz", "--apply", "zval.npz", "-o", "o.npz", "--logits"]
    assert main(["recalibrate", "--method", "histogram", *args, "--save-model", "h.json"]) == 0
    capsys.readouterr()
    assert main(["apply", "h.json", "ztest.npy", "--logits", "-o", "h.npz"]) == 0
    assert "softmax(z)" in capsys.readouterr().out
    logits = example.logits[400:500]
    softmax = np.exp(logits - logits.max(axis=1, keepdims=True))
    softmax /= softmax.sum(axis=1, keepdims=True)
    expected = load_recalibrator(folder / "h.json").predict_proba(softmax)
    assert_allclose(np.load(folder / "h.npz")["prob"], expected, rtol=1e-12)


FAILURES = {
    "missing output folder": (
        ["recalibrate", "--method", "platt", "--fit", "val.npz", "--apply", "test.npz"],
        ["-o", "nowhere/out.npz"],
        "-o nowhere/out.npz: the folder .* does not exist",
    ),
    "model folder missing": (
        ["recalibrate", "--method", "platt", "--fit", "val.npz", "--apply", "test.npz"],
        ["-o", "out.npz", "--save-model", "no/m.json"],
        "--save-model no/m.json: the folder",
    ),
    "fit without labels": (
        ["recalibrate", "--method", "platt", "--fit", "test.npy", "--apply", "test.npz"],
        ["-o", "out.npz"],
        "--fit needs the labels in the same file",
    ),
    "unknown method": (
        ["recalibrate", "--method", "magic", "--fit", "val.npz", "--apply", "test.npz"],
        ["-o", "out.npz"],
        "argument --method: invalid choice: 'magic'",
    ),
    "missing model": (["apply", "none.json", "test.npz"], ["-o", "out.npz"], "none.json"),
    "not a model": (["apply", "val.npz", "test.npz"], ["-o", "out.npz"], "not a JSON file"),
    "missing -o": (["apply", "none.json", "test.npz"], [], "required: -o/--output"),
}


@pytest.mark.parametrize("case", list(FAILURES))
def test_failures_are_one_line_and_write_nothing(case, folder, capsys):
    before = sorted(path.name for path in folder.iterdir())
    command, outputs, expected = FAILURES[case]
    assert main([*command, *outputs]) == 2
    assert re.search(expected, _one_error(capsys))
    assert sorted(path.name for path in folder.iterdir()) == before


@IN_SAMPLE
def test_apply_to_other_classes_is_refused_in_the_command_lines_words(folder, capsys):
    args = ["--method", "temperature", "--fit", "val.npz", "--apply", "val.npz", "-o", "o.npz"]
    assert main(["recalibrate", *args, "--save-model", "t.json"]) == 0
    capsys.readouterr()
    np.savez(folder / "three.npz", probs=np.full((3, 3), 1 / 3), labels=np.arange(3))
    assert main(["apply", "t.json", "three.npz", "-o", "x.npz"]) == 2
    line = _one_error(capsys)
    assert "the predictions array has 3 classes but this TemperatureScaling" in line
    assert not (folder / "x.npz").exists()


@pytest.mark.parametrize("command", ["report", "recalibrate", "apply"])
def test_help_lists_each_option_on_one_line_and_the_files(command):
    subparsers = parser()._subparsers._group_actions[0].choices
    text = subparsers[command].format_help()
    assert "files:" in text and "probs_test" in text
    lines = text.splitlines()
    options = lines[lines.index("options:") + 1 : lines.index("files:") - 1]
    for line in options:
        assert line.startswith("  -") and len(line.split("  ")) > 2, line  # help beside it


def test_recalibrate_and_apply_end_to_end_in_a_process(folder):
    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", "calibration_toolbox", *args],
            capture_output=True,
            text=True,
            cwd=folder,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=300,
            check=False,
        )

    fitted = run("recalibrate", "--method", "vector", "--fit", "val.npz", "--apply",
                 "test.npz", "-o", "v.npz", "--save-model", "v.json")  # fmt: skip
    assert fitted.returncode == 0 and fitted.stderr == "", fitted.stderr
    applied = run("apply", "v.json", "test.npy", "-o", "w.npz")
    assert applied.returncode == 0 and applied.stderr == "", applied.stderr
    assert_allclose(np.load(folder / "w.npz")["prob"], np.load(folder / "v.npz")["prob"])
    refused = run("apply", "v.json", "test.npy", "-o", "w.npz", "--bogus")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert refused.stderr.startswith("calibration-toolbox: error: unrecognized arguments")
    model = json.loads((folder / "v.json").read_text())
    assert model["class"] == "VectorScaling"
