"""``calibration-toolbox report FILE --multilabel``: an (N, K) 0/1 label matrix, K sigmoids.

In-process through ``main([...])``: every number is the library's own call on the same rows
(``multilabel_calibration_error``, ``multilabel_brier_score``, ``multilabel_log_loss``, the
recalibrators with ``multilabel=True``), compared at rtol 1e-12; every refusal is one line
on stderr with exit status 2.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import expit, logit

from calibration_toolbox import PlattScaling, TemperatureScaling
from calibration_toolbox.cli import main
from calibration_toolbox.cli._inputs import fit_rows
from calibration_toolbox.metrics.multilabel import (
    multilabel_brier_score,
    multilabel_calibration_error,
    multilabel_log_loss,
)

N, K = 900, 4
NAMES = ["cat", "dog", "outdoor", "night"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Per-label logits (true temperatures 0.5 to 2) and their label matrix, in 4 layouts."""
    folder = tmp_path_factory.mktemp("multilabel")
    rng = np.random.default_rng(21)
    logits = rng.normal(size=(N, K)) * 2.0
    labels = (rng.random((N, K)) < expit(logits / np.array([0.5, 1.0, 1.5, 2.0]))).astype(np.int8)
    prob = expit(logits)
    np.savez(folder / "z.npz", logits=logits, labels=labels, label_names=NAMES)
    np.savez(folder / "p.npz", probs=prob, labels=labels)
    np.savez(folder / "one.npz", probs=prob, labels=labels[:, 0])
    np.save(folder / "p.npy", prob)
    np.save(folder / "y.npy", labels)
    np.save(folder / "y1.npy", labels[:, 0])
    return folder, logits, prob, labels


def _run(capsys, *args) -> str:
    assert main(["report", *map(str, args)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def _error(capsys, *args) -> str:
    assert main(["report", *map(str, args)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == "" and len(lines) == 1, lines
    assert lines[0].startswith("calibration-toolbox: error: ")
    return lines[0]


def _expected(prob, labels, logits: bool, bins: int = 15) -> dict:
    return {
        "ECE_macro": multilabel_calibration_error(
            prob, labels, bins=bins, average="macro", logits=logits
        ),
        "ECE_micro": multilabel_calibration_error(
            prob, labels, bins=bins, average="micro", logits=logits
        ),
        "Brier": multilabel_brier_score(prob, labels, logits=logits),
        "NLL": multilabel_log_loss(prob, labels, logits=logits),
    }


def _per_label(prob, labels, logits: bool, bins: int = 15) -> list[dict]:
    """Each label's numbers, one library call on its column alone."""
    rows = []
    for k in range(prob.shape[1]):
        column, targets = prob[:, k : k + 1], labels[:, k : k + 1]
        rows.append(
            {
                "count": len(labels),
                "positives": int(labels[:, k].sum()),
                "ECE": multilabel_calibration_error(column, targets, bins=bins, logits=logits),
                "Brier": multilabel_brier_score(column, targets, logits=logits),
                "NLL": multilabel_log_loss(column, targets, logits=logits),
            }
        )
    return rows


def _check_entry(entry, prob, labels, logits: bool, bins: int = 15) -> None:
    expected = _expected(prob, labels, logits, bins)
    assert list(entry["metrics"]) == list(expected)
    for name, value in expected.items():
        assert_allclose(entry["metrics"][name], value, rtol=1e-12, atol=0)
    for row, want in zip(entry["per_label"], _per_label(prob, labels, logits, bins), strict=True):
        assert row["count"] == want["count"] and row["positives"] == want["positives"]
        for name in ("ECE", "Brier", "NLL"):
            assert_allclose(row[name], want[name], rtol=1e-12, atol=0)


def test_json_numbers_are_the_library_calls(capsys, files):
    folder, logits, _, labels = files
    document = json.loads(
        _run(capsys, folder / "z.npz", "--multilabel", "--logits", "--format", "json")
    )
    assert document["multilabel"] is True and document["n_labels"] == K
    assert document["input"] == "multi-label logits" and document["n"] == N
    assert document["label_names"] == NAMES
    assert document["metrics"] == ["ECE_macro", "ECE_micro", "Brier", "NLL"]
    (entry,) = document["results"]
    assert entry["method"] == "uncalibrated"
    assert [row["label"] for row in entry["per_label"]] == NAMES
    _check_entry(entry, logits, labels, logits=True)
    # The pooled table of the diagram is the micro average's: its ECE is ECE_micro.
    cells = entry["reliability"]
    pooled = sum(c["count"] * abs(c["accuracy"] - c["confidence"]) for c in cells) / (N * K)
    assert_allclose(pooled, entry["metrics"]["ECE_micro"], rtol=1e-12)
    assert sum(c["count"] for c in cells) == N * K


def test_probabilities_npz_and_npy_pair_agree(capsys, files):
    folder, _, prob, labels = files
    from_npz = json.loads(_run(capsys, folder / "p.npz", "--multilabel", "--format", "json"))
    from_npy = json.loads(
        _run(
            capsys,
            folder / "p.npy",
            "--labels",
            folder / "y.npy",
            "--multilabel",
            "--format",
            "json",
            "--bins",
            "10",
        )
    )
    assert from_npz["input"] == "multi-label probabilities"
    assert from_npz["label_names"] == ["0", "1", "2", "3"]  # no names in the file: indices
    _check_entry(from_npz["results"][0], prob, labels, logits=False)
    _check_entry(from_npy["results"][0], prob, labels, logits=False, bins=10)


@pytest.mark.parametrize(
    ("method", "model", "parameters"),
    [
        ("temperature", TemperatureScaling, ("temperature",)),
        ("platt", PlattScaling, ("coef", "intercept")),
    ],
)
def test_methods_fitted_per_label_on_the_split(capsys, files, method, model, parameters):
    folder, logits, _, labels = files
    document = json.loads(
        _run(
            capsys,
            folder / "z.npz",
            "--multilabel",
            "--logits",
            "--method",
            method,
            "--format",
            "json",
        )
    )
    fit = fit_rows(0, N, 0.5, 0)
    assert document["n"] == np.count_nonzero(~fit) and document["n_fit"] == np.count_nonzero(fit)
    before, after = document["results"]
    _check_entry(before, logits[~fit], labels[~fit], logits=True)
    fitted = model(multilabel=True).fit(logits[fit], labels[fit])
    calibrated = fitted.predict_proba(logits[~fit])
    assert after["method"] == method
    _check_entry(after, calibrated, labels[~fit], logits=False)
    for name in parameters:
        assert_allclose(after["parameters"][name], getattr(fitted, name + "_"), rtol=1e-12)
    assert after["metrics"]["NLL"] < before["metrics"]["NLL"]


def test_probabilities_are_fitted_on_their_log_odds(capsys, files):
    folder, _, prob, labels = files
    document = json.loads(
        _run(
            capsys, folder / "p.npz", "--multilabel", "--method", "temperature", "--format", "json"
        )
    )
    fit = fit_rows(0, N, 0.5, 0)
    fitted = TemperatureScaling(multilabel=True).fit(logit(prob[fit]), labels[fit])
    calibrated = fitted.predict_proba(logit(prob[~fit]))
    _check_entry(document["results"][1], calibrated, labels[~fit], logits=False)


def test_text_and_html(capsys, files, tmp_path):
    pytest.importorskip("matplotlib")
    folder, logits, _, labels = files
    page = tmp_path / "report.html"
    text = _run(
        capsys,
        folder / "z.npz",
        "--multilabel",
        "--logits",
        "--method",
        "temperature",
        "--html",
        page,
    )
    assert "4 labels per row (--multilabel" in text
    assert "per label (uncalibrated):" in text and "per label (temperature):" in text
    expected = _expected(logits, labels, logits=True)
    assert "ECE_macro" in text and "outdoor" in text
    html = page.read_text()
    assert "<h2>Per label</h2>" in html and 'id="per-label"' in html
    assert "Class-wise reliability" in html and "outdoor" in html
    assert expected["ECE_macro"] > 0


def test_a_label_matrix_without_multilabel_is_refused(capsys, files):
    folder = files[0]
    for args in ((folder / "p.npz",), (folder / "p.npy", "--labels", folder / "y.npy")):
        line = _error(capsys, *args)
        assert "--multilabel" in line and "class indices" in line and "(900, 4)" in line


def test_class_labels_with_multilabel_are_refused(capsys, files):
    folder = files[0]
    for args in ((folder / "one.npz",), (folder / "p.npy", "--labels", folder / "y1.npy")):
        line = _error(capsys, *args, "--multilabel")
        assert "1-D class labels" in line and "without --multilabel" in line


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (("--stream",), "--stream is not available with --multilabel"),
        (("--block-rows", "10"), "--block-rows is not available"),
        (("--method", "beta"), "--method beta is not available with --multilabel"),
        (("--method", "auto"), "--method auto is not available with --multilabel"),
        (("--scores",), "--scores is not available"),
        (("--metrics", "ECE"), "--metrics is not available"),
        (("--groups", "labels"), "--groups is not available"),
        (("--ci",), "--ci is not available"),
        (("--format", "csv"), "--format csv is not available"),
    ],
)
def test_what_multilabel_does_not_do_is_refused(capsys, files, options, words):
    assert words in _error(capsys, files[0] / "z.npz", "--multilabel", "--logits", *options)


def test_other_formats_and_no_file_are_refused(capsys, files, tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("p0,p1,label\n0.2,0.8,1\n")
    assert "--multilabel reads a .npz" in _error(capsys, path, "--multilabel")
    assert main(["report", "--multilabel"]) == 2
    assert "--multilabel needs a predictions FILE" in capsys.readouterr().err


def test_bad_label_names_are_refused(capsys, files, tmp_path):
    _, _, prob, labels = files
    path = tmp_path / "names.npz"
    np.savez(path, probs=prob, labels=labels, label_names=["a", "b"])
    assert "1-D array of 4 names" in _error(capsys, path, "--multilabel")


def test_values_are_checked(capsys, files, tmp_path):
    _, _, prob, labels = files
    path = tmp_path / "bad.npz"
    bad = labels.copy()
    bad[3, 1] = 2
    np.savez(path, probs=prob, labels=bad)
    line = _error(capsys, path, "--multilabel")
    assert "bad.npz: " in line and "only 0 and 1" in line


def test_fit_on_another_file(capsys, files, tmp_path):
    folder, logits, _, labels = files
    np.savez(tmp_path / "val.npz", logits=logits[:300], labels=labels[:300])
    document = json.loads(
        _run(
            capsys,
            folder / "z.npz",
            "--multilabel",
            "--logits",
            "--method",
            "temperature",
            "--fit-on",
            tmp_path / "val.npz",
            "--format",
            "json",
        )
    )
    assert document["n"] == N and document["n_fit"] == 300
    fitted = TemperatureScaling(multilabel=True).fit(logits[:300], labels[:300])
    _check_entry(document["results"][1], fitted.predict_proba(logits), labels, logits=False)
    np.savez(tmp_path / "narrow.npz", logits=logits[:, :2], labels=labels[:, :2])
    line = _error(
        capsys,
        folder / "z.npz",
        "--multilabel",
        "--logits",
        "--method",
        "platt",
        "--fit-on",
        tmp_path / "narrow.npz",
    )
    assert "holds 2 labels but" in line
