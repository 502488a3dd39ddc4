"""``calibration-toolbox apply``: a saved model applied to predictions without labels, in every
format; labels carried along when asked for or named by the file (``optional_labels``)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import TemperatureScaling
from calibration_toolbox.cli import main
from calibration_toolbox.io import load_predictions, read_predictions
from tests.conftest import synthetic_example

N = 200


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A temperature model of 10-class logits (model.json) and 200 new rows in every format."""
    folder = tmp_path_factory.mktemp("apply")
    example = synthetic_example()
    logits, labels, prob = example.logits, example.labels, example.prob
    model = TemperatureScaling().fit(logits[:1000], labels[:1000])
    model.save(folder / "model.json")
    new_logits, new_labels, new_prob = (
        logits[1000 : 1000 + N],
        labels[1000 : 1000 + N],
        prob[1000 : 1000 + N],
    )
    np.savez(folder / "logits_only.npz", logits=new_logits)
    np.savez(folder / "other_names.npz", logits=new_logits, y_new=new_labels)
    np.savez(folder / "with_labels.npz", logits=new_logits, labels=new_labels)
    header = ",".join(f"z{k}" for k in range(10))
    np.savetxt(folder / "header.csv", new_logits, delimiter=",", header=header, comments="")
    np.savetxt(folder / "bare.csv", new_logits, delimiter=",")
    np.savetxt(
        folder / "labelled.csv",
        np.column_stack([new_logits, new_labels]),
        delimiter=",",
        header=f"{header},label",
        comments="",
    )
    return {
        "path": folder,
        "model": model,
        "logits": new_logits,
        "labels": new_labels,
        "prob": new_prob,
    }


def _apply(folder, capsys, name, *options) -> tuple[str, dict]:
    path = folder["path"]
    out = path / f"{name}.out.npz"
    command = ["apply", str(path / "model.json"), str(path / name), "-o", str(out), "--logits"]
    assert main([*command, *options]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    with np.load(out) as written:
        return captured.out, {key: written[key] for key in written.files}


@pytest.mark.parametrize("name", ["logits_only.npz", "other_names.npz", "header.csv", "bare.csv"])
def test_apply_needs_no_labels_in_any_format(folder, capsys, name):
    # Before: "cannot tell which array ... pass --labels-key", or the last CSV column (a
    # logit) read as labels ("the labels must be integer class indices").
    text, written = _apply(folder, capsys, name)
    assert list(written) == ["prob"]
    expected = folder["model"].predict_proba(folder["logits"])
    assert written["prob"].shape == (N, 10)  # every column a prediction
    assert_allclose(written["prob"], expected, rtol=1e-12)
    assert f"wrote {folder['path'] / name}.out.npz: prob, {N:,} x 10" in text


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("with_labels.npz", []),
        ("labelled.csv", []),
        ("other_names.npz", ["--labels-key", "y_new"]),
    ],
)
def test_labels_named_or_asked_for_are_carried_along(folder, capsys, name, options):
    text, written = _apply(folder, capsys, name, *options)
    assert sorted(written) == ["labels", "prob"]
    assert (written["labels"] == folder["labels"]).all()
    assert_allclose(written["prob"], folder["model"].predict_proba(folder["logits"]), rtol=1e-12)
    assert "ECE of" in text and "NLL of" in text


def test_apply_says_what_it_did_not_that_it_fitted(folder, capsys):
    path = folder["path"]
    np.savez(path / "prob_only.npz", probs=folder["prob"])
    out = path / "prob.out.npz"
    assert (
        main(["apply", str(path / "model.json"), str(path / "prob_only.npz"), "-o", str(out)]) == 0
    )
    text = capsys.readouterr().out
    assert "fitted" not in text
    assert "temperature: applied to the log-probabilities log(p) (zeros floored at 1e-300)" in text


def test_a_parquet_without_labels(folder, capsys):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({f"z{k}": folder["logits"][:, k] for k in range(10)})
    pq.write_table(table, folder["path"] / "new.parquet")
    _, written = _apply(folder, capsys, "new.parquet", "--prob-column", "z*")
    assert list(written) == ["prob"]
    assert_allclose(written["prob"], folder["model"].predict_proba(folder["logits"]), rtol=1e-12)


def test_optional_labels_reads_labels_only_where_named(folder):
    path = folder["path"]
    for name in ("logits_only.npz", "other_names.npz", "header.csv", "bare.csv"):
        predictions, labels = read_predictions(path / name, optional_labels=True)
        assert labels is None and predictions.shape == (N, 10), name
    _, labels = read_predictions(path / "labelled.csv", optional_labels=True)
    assert (labels == folder["labels"]).all()
    np.save(path / "new.npy", folder["logits"])
    assert read_predictions(path / "new.npy", optional_labels=True)[1] is None
    # Without it, the rules by position stand: the last column, the only 1-D array.
    predictions, labels = load_predictions(path / "other_names.npz")
    assert (labels == folder["labels"]).all()
    predictions, _ = load_predictions(path / "labelled.csv")
    assert predictions.shape == (N, 10)
    with pytest.raises(ValueError, match=r"`labels_path` is needed with \.npy predictions"):
        load_predictions(path / "new.npy")


def test_a_labels_column_nothing_names_is_refused_with_how_to_name_it(folder, capsys):
    path = folder["path"]
    np.savetxt(path / "bare_labelled.csv", np.column_stack([folder["logits"], folder["labels"]]))
    command = ["apply", str(path / "model.json"), str(path / "bare_labelled.csv"), "-o"]
    assert main([*command, str(path / "x.npz"), "--logits", "--sep", " "]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not (path / "x.npz").exists()
    assert captured.err.startswith("calibration-toolbox: error: ")
    assert "holds 11 columns of predictions but the model takes 10 classes" in captured.err
    assert "labels are read only where named, never by position" in captured.err


@pytest.mark.parametrize("command", ["apply", "recalibrate"])
@pytest.mark.parametrize("name", ["logits_only.npz", "bare.csv"])
def test_logits_without_labels_or_logits_flag_are_refused_not_floored(
    folder, capsys, command, name
):
    # Without labels nothing checked the values: a method fitted on logits took the log of
    # each one (negatives floored at 1e-300) and wrote its probabilities without a word.
    path = folder["path"]
    np.savez(path / "prob_fit.npz", probs=folder["prob"], labels=folder["labels"])
    out = path / f"floored-{command}-{name}.npz"
    if command == "apply":
        arguments = ["apply", str(path / "model.json"), str(path / name)]
    else:  # fitted on probabilities, as the file says; applied to logits without labels
        fit = ["--fit", str(path / "prob_fit.npz"), "--apply", str(path / name)]
        arguments = ["recalibrate", "--method", "temperature", *fit]
    assert main([*arguments, "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not out.exists()
    assert captured.err.startswith(f"calibration-toolbox: error: {path / name}: ")
    assert "must hold probabilities in [0, 1]; row 0 has values from" in captured.err
    assert captured.err.rstrip().endswith("If the predictions array holds logits, pass --logits.")
