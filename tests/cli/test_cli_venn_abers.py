"""The command line's ``venn-abers`` method: fitted, saved and applied as the API does."""

from __future__ import annotations

import numpy as np
from numpy.testing import assert_allclose

from calibration_toolbox import VennAbersCalibration, load_recalibrator
from calibration_toolbox.cli import main
from tests.conftest import synthetic_example


def test_recalibrate_and_apply_with_venn_abers(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    example = synthetic_example()
    prob, labels = example.prob, example.labels
    np.savez(tmp_path / "val.npz", probs=prob[:400], labels=labels[:400])
    np.save(tmp_path / "test.npy", prob[400:700])
    fit = ["--fit", "val.npz", "--apply", "test.npy", "-o", "out.npz"]
    assert main(["recalibrate", "--method", "venn-abers", *fit, "--save-model", "v.json"]) == 0
    assert main(["apply", "v.json", "test.npy", "-o", "again.npz"]) == 0
    capsys.readouterr()
    expected = VennAbersCalibration().fit(prob[:400], labels[:400]).predict_proba(prob[400:700])
    model = load_recalibrator(tmp_path / "v.json")
    assert isinstance(model, VennAbersCalibration)
    assert_allclose(model.predict_proba(prob[400:700]), expected, rtol=1e-15)
    with np.load(tmp_path / "again.npz") as saved:
        stored = [saved[key] for key in saved.files if saved[key].shape == expected.shape]
    assert stored and assert_allclose(stored[0], expected, rtol=1e-12) is None


def test_report_lists_venn_abers(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    example = synthetic_example()
    np.savez(tmp_path / "p.npz", probs=example.prob, labels=example.labels)
    assert main(["report", "p.npz", "--metrics", "ECE", "--method", "venn-abers"]) == 0
    out = capsys.readouterr().out
    assert "uncalibrated    venn-abers" in out
    assert "top-label reliability, venn-abers" in out
