"""The file options of every subcommand: --classes, --classes-file, --prob-column,
--labels-column and --sep, with their messages in the command line's words.

In-process through ``main([...])`` with capsys; every number is compared with the API's call.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import ECE, negative_log_likelihood
from calibration_toolbox.cli import main

# These fit and apply on one file for brevity: the in-sample warning is shown, not raised.
IN_SAMPLE = pytest.mark.filterwarnings("always:fitted on .*the very rows:UserWarning")

NAMES = np.array(["cat", "dog", "emu, the bird"])


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """120 rows of 3-class probabilities with names as labels, as .csv (';') and .parquet."""
    folder = tmp_path_factory.mktemp("files")
    rng = np.random.default_rng(3)
    prob = rng.dirichlet(np.ones(3), size=120)
    labels = rng.integers(0, 3, size=120)
    lines = [";p_cat;p_dog;p_emu;animal"]  # pandas' index column, as df.to_csv writes it
    lines += [
        f'{i};{";".join(repr(float(v)) for v in row)};"{NAMES[k]}"'
        for i, (row, k) in enumerate(zip(prob, labels, strict=True))
    ]
    (folder / "named.csv").write_text("\n".join(lines) + "\n")
    (folder / "names.txt").write_text("\n".join(NAMES) + "\n")
    np.savez(folder / "ids.npz", probs=prob, labels=np.array([3, 7, 9])[labels])
    np.save(folder / "prob.npy", prob)
    np.save(folder / "labels.npy", labels)
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    columns = {f"p_{name}": prob[:, k] for k, name in enumerate(("cat", "dog", "emu"))}
    table = pa.table({**columns, "animal": NAMES[labels]})
    pq.write_table(table, folder / "named.parquet", row_group_size=50)
    lists = pa.table({"scores": list(prob), "target": labels})
    pq.write_table(lists, folder / "lists.parquet", row_group_size=50)
    return folder, prob, labels


def _json(capsys, *args) -> dict:
    assert main(["report", *map(str, args), "--format", "json", "--metrics", "ECE,NLL"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return json.loads(captured.out)


def _error(capsys, *args) -> str:
    """The one line on stderr of a refused command line (exit 2, nothing on stdout)."""
    assert main(list(map(str, args))) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == "" and len(lines) == 1, captured
    assert lines[0].startswith("calibration-toolbox: error: ") and "`" not in lines[0]
    return lines[0]


def _check(report: dict, prob: np.ndarray, labels: np.ndarray) -> None:
    metrics = report["results"][0]["metrics"]
    assert report["n"] == len(labels)
    assert_allclose(metrics["ECE"], ECE(prob, labels), rtol=1e-12)
    assert_allclose(metrics["NLL"], negative_log_likelihood(prob, labels), rtol=1e-12)


def test_class_names_in_a_csv_with_a_separator_and_pandas_index(folder, capsys):
    path, prob, labels = folder
    csv_file = path / "named.csv"
    names = ",".join(name for name in NAMES[:2])
    # a name with a comma needs --classes-file; --sep says what the first line would tell
    report = _json(
        capsys, csv_file, "--labels-column", "animal", "--classes-file", path / "names.txt"
    )
    _check(report, prob, labels)
    names_file = path / "names.txt"
    options = ["--sep", ";", "--labels-column", "animal", "--classes-file", names_file]
    report = _json(capsys, csv_file, *options)
    _check(report, prob, labels)
    line = _error(capsys, "report", csv_file, "--labels-column", "animal", "--classes", names)
    assert "--classes must name every column of the predictions (3)" in line


def test_classes_that_are_numbers_match_integer_labels(folder, capsys):
    path, prob, labels = folder
    _check(_json(capsys, path / "ids.npz", "--classes", "3,7,9"), prob, labels)
    line = _error(capsys, "report", path / "ids.npz")
    assert "the labels must lie in [0, 2] for 3 classes; got 9." in line


@pytest.mark.parametrize(
    "columns", [["--prob-column", "p_*"], ["--prob-column", "p_cat,p_dog,p_emu"]]
)
def test_parquet_columns_by_name_and_prefix(folder, capsys, columns):
    path, prob, labels = folder
    args = [path / "named.parquet", *columns, "--labels-column", "animal"]
    _check(_json(capsys, *args, "--classes-file", path / "names.txt"), prob, labels)


def test_parquet_column_of_lists(folder, capsys):
    path, prob, labels = folder
    args = [path / "lists.parquet", "--prob-column", "scores", "--labels-column", "target"]
    _check(_json(capsys, *args), prob, labels)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--prob-column", "p_x"], "--prob-column 'p_x' is not a column of"),
        (["--prob-column", "p_*"], "the labels must hold real numbers (class indices) unless"),
        (["--sep", "tab"], "--sep is only for .csv files"),
    ],
)
def test_parquet_mistakes_in_the_command_lines_words(folder, capsys, args, expected):
    path, _, _ = folder
    line = _error(capsys, "report", path / "named.parquet", "--labels-column", "animal", *args)
    assert expected in line
    if "names" in line:
        assert "Pass --classes (or --classes-file)" in line and "--classes cat,dog" in line


def test_file_options_need_a_file_and_exclude_each_other(folder, capsys):
    path, _, _ = folder
    assert "--classes needs a predictions FILE" in _error(capsys, "report", "--classes", "a,b")
    line = _error(capsys, "report", path / "named.csv", "--classes", "a", "--classes-file", "x")
    assert "not allowed with argument" in line
    empty = path / "empty.txt"
    empty.write_text("\n\n")
    line = _error(capsys, "report", path / "named.csv", "--classes-file", empty)
    assert "--classes-file" in line and "holds no class names" in line


@IN_SAMPLE
def test_recalibrate_and_apply_take_the_file_options(folder, capsys, tmp_path):
    path, prob, labels = folder
    reading = ["--labels-column", "animal", "--classes-file", str(path / "names.txt")]
    model, out = tmp_path / "t.json", tmp_path / "out.npz"
    command = ["recalibrate", "--method", "temperature", "--fit", str(path / "ids.npz")]
    command += ["--apply", str(path / "named.parquet"), "--prob-column", "p_*", "-o", str(out)]
    # --prob-column is not for a .npz: the file given to --fit refuses it
    line = _error(capsys, *command, *reading)
    assert "--prob-column is only for .csv, .parquet and .jsonl files" in line
    command = ["recalibrate", "--method", "temperature", "--fit", str(path / "named.csv")]
    command += ["--apply", str(path / "named.csv"), "-o", str(out), "--save-model", str(model)]
    assert main([*command, *reading]) == 0
    capsys.readouterr()
    with np.load(out) as saved:
        assert_allclose(saved["labels"], labels)
    # apply: a .npy without labels is read through the public io.load_prob
    assert main(["apply", str(model), str(path / "prob.npy"), "-o", str(out)]) == 0
    with np.load(out) as saved:
        assert saved["prob"].shape == prob.shape and "labels" not in saved


def test_help_says_how_files_are_read(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in (
        "--sep tab",
        "pandas' index",
        ".parquet",
        "--classes cat,dog,emu",
        "one name per line",
    ):
        assert words in text


# -- issue 17: the files users hold ----------------------------------------------------------
def _pandas_evaluation(path, n: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """What ``df.to_csv(path)`` writes for an id, a confidence and a bool ``correct`` column."""
    rng = np.random.default_rng(17)
    confidence = rng.uniform(0.3, 1, n)
    correct = rng.random(n) < confidence**1.5
    lines = [",id,confidence,correct"]
    lines += [
        f"{i},{1000 + i},{c!r},{k}"
        for i, (c, k) in enumerate(zip(confidence.tolist(), correct.tolist(), strict=True))
    ]
    path.write_text("\n".join(lines) + "\n")
    return confidence, correct


def test_a_pandas_csv_with_a_bool_target_and_an_id_column(tmp_path, capsys):
    from calibration_toolbox import Scores

    confidence, correct = _pandas_evaluation(tmp_path / "eval.csv")
    report = _json(capsys, tmp_path / "eval.csv", "--scores", "--prob-column", "confidence")
    assert report["n"] == len(correct)
    metrics = report["results"][0]["metrics"]
    assert_allclose(metrics["ECE"], ECE(Scores(confidence), correct), rtol=1e-12)
    assert_allclose(
        metrics["NLL"], negative_log_likelihood(Scores(confidence), correct), rtol=1e-12
    )
    line = _error(capsys, "report", tmp_path / "eval.csv", "--scores")
    assert "holds 2 columns beside the labels (id, confidence)" in line
    assert line.endswith("name the scores with --prob-column.")


def test_a_top_label_dump_of_a_real_model(tmp_path, capsys):
    from calibration_toolbox import Scores
    from tests.conftest import load_real

    prob, labels = load_real("vgg16-cifar-10")
    confidence, predicted = prob.max(axis=1), prob.argmax(axis=1)
    lines = ["true_label,pred_label,confidence"]
    lines += [
        f"{y},{k},{float(c)!r}" for y, k, c in zip(labels, predicted, confidence, strict=True)
    ]
    (tmp_path / "dump.csv").write_text("\n".join(lines) + "\n")
    report = _json(capsys, tmp_path / "dump.csv", "--scores")
    metrics = report["results"][0]["metrics"]
    hits = predicted == labels
    assert report["n"] == len(labels)
    assert_allclose(metrics["ECE"], ECE(Scores(confidence.astype(np.float64)), hits), rtol=1e-12)
    # the confidence against pred == true is the top-label ECE of the probabilities
    assert_allclose(metrics["ECE"], ECE(prob, labels), rtol=1e-6)
    line = _error(capsys, "report", tmp_path / "dump.csv")
    assert "holds predicted labels (column 'pred_label')" in line and "pass --scores" in line
    renamed = tmp_path / "renamed.csv"
    renamed.write_text((tmp_path / "dump.csv").read_text().replace("pred_label", "guess", 1))
    options = ["--scores", "--pred-column", "guess", "--prob-column", "confidence"]
    assert _json(capsys, renamed, *options)["results"][0]["metrics"] == metrics


def test_a_jsonl_of_an_llm_evaluation(tmp_path, capsys):
    from calibration_toolbox import Scores

    confidence, correct = _pandas_evaluation(tmp_path / "eval.csv")
    records = [
        json.dumps({"id": i, "answer": "42", "confidence": c, "correct": bool(k)})
        for i, (c, k) in enumerate(zip(confidence.tolist(), correct, strict=True))
    ]
    (tmp_path / "eval.jsonl").write_text("\n".join(records) + "\n")
    report = _json(capsys, tmp_path / "eval.jsonl", "--scores")
    assert_allclose(
        report["results"][0]["metrics"]["ECE"], ECE(Scores(confidence), correct), rtol=1e-12
    )
    (tmp_path / "bad.jsonl").write_text(records[0] + "\n" + records[1][:-1] + "\n")
    line = _error(capsys, "report", tmp_path / "bad.jsonl", "--scores")
    assert "bad.jsonl line 2 is not a JSON object" in line


def test_help_lists_the_new_formats_and_options(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for words in (
        ".jsonl (.ndjson): one JSON object per line",
        "--pred-column",
        "true_label,pred_label,confidence",
        "pred_label, predicted_label",
        "Labels True/False (pandas), TRUE/FALSE (R) or true/false are a 0/1 target",
        "--prob-column NAMES prediction columns: a,b,c or p_*",
    ):
        assert words in text, words
