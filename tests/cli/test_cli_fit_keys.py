"""One file holding both splits (Guo et al.'s ``logits_val``/``y_val`` beside
``logits_test``/``y_test``): ``--fit-prob-key``/``--fit-labels-key``, and the warning when the
rows fitted on are the rows scored."""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import TemperatureScaling
from calibration_toolbox.cli import main
from calibration_toolbox.datasets import make_overconfident

SPLITS = ["--prob-key", "logits_test", "--labels-key", "y_test"]
FIT_KEYS = ["--fit-prob-key", "logits_val", "--fit-labels-key", "y_val"]
IN_SAMPLE = pytest.mark.filterwarnings("always:fitted on .*the very rows:UserWarning")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """splits.npz: 300 validation and 300 test rows of overconfident 4-class logits."""
    folder = tmp_path_factory.mktemp("splits")
    logits, labels = make_overconfident(600, 4, temperature=2.5, seed=11)
    np.savez(
        folder / "splits.npz",
        logits_val=logits[:300],
        y_val=labels[:300],
        logits_test=logits[300:],
        y_test=labels[300:],
    )
    np.savez(folder / "test.npz", logits_test=logits[300:], y_test=labels[300:])
    np.savetxt(folder / "val.csv", np.column_stack([logits[:300], labels[:300]]), delimiter=",")
    return folder


def _temperature(folder, fit_rows: slice) -> float:
    with np.load(folder / "splits.npz") as arrays:
        logits = np.concatenate([arrays["logits_val"], arrays["logits_test"]])
        labels = np.concatenate([arrays["y_val"], arrays["y_test"]])
    return TemperatureScaling().fit(logits[fit_rows], labels[fit_rows]).temperature_


def _report(capsys, *args) -> tuple[dict, str]:
    assert main(["report", *map(str, args), "--logits", "--method", "temperature", "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


@pytest.mark.parametrize(
    "reading", [[], ["--stream", "--metrics", "ECE,NLL"]], ids=["whole", "blocks"]
)
def test_fit_keys_fit_on_the_validation_arrays_of_file(folder, capsys, reading):
    # Without --fit-on, --fit-prob-key names arrays of FILE itself.
    document, err = _report(capsys, folder / "splits.npz", *SPLITS, *FIT_KEYS, *reading)
    assert err == ""  # no warning (warnings are errors in this suite)
    assert document["n"] == 300 and document["n_fit"] == 300
    assert "'logits_val' and 'y_val'" in document["fit"]
    temperature = document["results"][1]["parameters"]["temperature"]
    assert_allclose(temperature, _temperature(folder, slice(0, 300)), rtol=1e-12)


def test_fit_keys_name_the_arrays_of_fit_on(folder, capsys):
    document, err = _report(
        capsys, folder / "test.npz", "--fit-on", folder / "splits.npz", *FIT_KEYS
    )
    assert err == ""
    temperature = document["results"][1]["parameters"]["temperature"]
    assert_allclose(temperature, _temperature(folder, slice(0, 300)), rtol=1e-12)


@IN_SAMPLE
@pytest.mark.parametrize(
    "reading", [[], ["--stream", "--metrics", "ECE,NLL"]], ids=["whole", "blocks"]
)
def test_fit_on_the_same_file_and_keys_warns_in_one_line(folder, capsys, reading):
    # The command: it fitted on the test rows without a word.
    splits = folder / "splits.npz"
    document, err = _report(capsys, splits, *SPLITS, "--fit-on", splits, *reading)
    temperature = document["results"][1]["parameters"]["temperature"]
    assert_allclose(temperature, _temperature(folder, slice(300, 600)), rtol=1e-12)
    assert err.splitlines() == [
        f"calibration-toolbox: warning: fitted on {splits} (--fit-on), the very rows of "
        f"{splits} that are scored: the numbers after recalibration are in-sample, not a "
        "held-out measure; name the validation arrays with --fit-prob-key and "
        "--fit-labels-key, or a validation file with --fit-on."
    ]


@IN_SAMPLE
def test_fit_on_a_copy_of_the_same_arrays_warns(folder, capsys):
    _, err = _report(capsys, folder / "test.npz", "--fit-on", folder / "splits.npz", *SPLITS)
    assert "the very rows of" in err and "in-sample" in err


@IN_SAMPLE
def test_recalibrate_takes_fit_keys_and_warns_on_the_same_rows(folder, capsys, monkeypatch):
    monkeypatch.chdir(folder)
    args = ["recalibrate", "--method", "temperature", "--logits", *SPLITS]
    files = ["--fit", "splits.npz", "--apply", "splits.npz", "-o", "out.npz"]
    assert main([*args, *files, *FIT_KEYS]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert f"T = {_temperature(folder, slice(0, 300)):.4g}" in captured.out
    assert main([*args, *files]) == 0  # --prob-key for both files: fits on the test rows
    captured = capsys.readouterr()
    assert f"T = {_temperature(folder, slice(300, 600)):.4g}" in captured.out
    assert captured.err.startswith(
        "calibration-toolbox: warning: fitted on splits.npz (--fit), the very rows of "
        "splits.npz that are scored"
    )
    assert captured.err.rstrip().endswith("or a validation file with --fit.")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            [*SPLITS, "--fit-prob-key", "logits_val"],
            "--fit-prob-key needs --fit-labels-key: the fit rows' predictions and labels",
        ),
        ([*SPLITS, "--fit-labels-key", "y_val"], "--fit-labels-key needs --fit-prob-key"),
        ([*SPLITS, *FIT_KEYS, "--split", "0.5"], "--split and --fit-prob-key both choose"),
        ([*SPLITS, *FIT_KEYS, "--fit-on", "val.csv"], "name arrays of a .npz; --fit-on val.csv"),
        (
            [*SPLITS, "--fit-prob-key", "logits_v", "--fit-labels-key", "y_val"],
            r"--prob-key 'logits_v' is not in splits.npz",
        ),
    ],
    ids=["prob key alone", "labels key alone", "with --split", "a .csv", "a wrong key"],
)
def test_fit_keys_refused(folder, capsys, monkeypatch, args, expected):
    monkeypatch.chdir(folder)
    command = ["report", "splits.npz", "--logits", "--method", "temperature", *args]
    assert main(command) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("calibration-toolbox: error: ") and expected in captured.err


def test_fit_keys_without_a_method_are_refused(folder, capsys, monkeypatch):
    monkeypatch.chdir(folder)
    assert main(["report", "splits.npz", *SPLITS, *FIT_KEYS]) == 2
    assert "--fit-prob-key chooses the rows to fit on; it needs --method" in (
        capsys.readouterr().err
    )
