"""``calibration-toolbox report FILE --groups COLUMN``: the metrics per group, text, JSON, HTML.

In-process through ``main([...])``: every number is the API's ``by_group`` of the same rows.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import (
    ECE,
    SCE,
    brier_score,
    by_group,
    multicalibration_error,
    negative_log_likelihood,
)
from calibration_toolbox.cli import main
from calibration_toolbox.cli._inputs import fit_rows
from tests.conftest import synthetic_example


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """600 rows of the example, with a group per row: a .npz key, a .csv column."""
    folder = tmp_path_factory.mktemp("groups")
    example = synthetic_example()
    prob, labels = example.prob[:600], example.labels[:600]
    # Numbers here (a column of names: test_a_csv_column_of_names).
    regions = np.array([10, 20, 30, 40])[np.arange(600) % 4]
    np.savez(folder / "p.npz", probs=prob, labels=labels, region=np.arange(600) % 3)
    np.savez(folder / "z.npz", logits=example.logits[:600], labels=labels, region=labels % 4)
    header = ",".join([f"p{k}" for k in range(prob.shape[1])] + ["label", "region"])
    with open(folder / "p.csv", "w") as handle:
        handle.write(header + "\n")
        for row, label, region in zip(prob, labels, regions, strict=True):
            handle.write(",".join(repr(float(v)) for v in row) + f",{label},{region}\n")
    return folder, prob, labels, regions


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


def test_json_groups_are_the_apis_by_group(files, capsys):
    folder, prob, labels, _ = files
    document = json.loads(
        _run(
            capsys, folder / "p.npz", "--groups", "region", "--metrics", "ECE,SCE,Brier", "--json"
        )
    )
    entry = document["groups"]
    groups = np.arange(600) % 3
    assert entry["column"] == "region" and entry["names"] == [0, 1, 2]
    assert entry["counts"] == [200, 200, 200]
    for name, metric in (("ECE", ECE), ("SCE", SCE), ("Brier", brier_score)):
        expected = by_group(
            metric, prob, labels, groups, **({} if metric is brier_score else {"bins": 15})
        )
        assert_allclose(entry["metrics"][name], expected.values, rtol=1e-12)
        assert entry["worst"][name] == {
            "group": expected.worst_name,
            "value": expected.worst_value,
        }


def test_logits_give_the_nll_of_the_logits(files, capsys):
    folder, _, labels, _ = files
    logits = synthetic_example().logits[:600]
    document = json.loads(
        _run(
            capsys,
            folder / "z.npz",
            "--logits",
            "--groups",
            "region",
            "--metrics",
            "NLL",
            "--json",
        )
    )
    expected = by_group(negative_log_likelihood, logits, labels, labels % 4, logits=True)
    assert_allclose(document["groups"]["metrics"]["NLL"], expected.values, rtol=1e-12)


def test_text_table_of_a_csv_column(files, capsys):
    folder, prob, labels, regions = files
    text = _run(
        capsys, folder / "p.csv", "--prob-column", "p*", "--groups", "region", "--metrics", "ECE"
    )
    expected = by_group(ECE, prob, labels, regions)
    assert "by group (--groups region): 4 groups" in text
    for name, value in zip(expected.names, expected.values, strict=True):
        assert any(
            line.split()[:1] == [str(name)] and f"{value:.5f}" in line
            for line in text.splitlines()
        )
    assert f"worst ECE: {expected.worst_name} ({expected.worst_value:.5f})" in text


def test_html_has_the_group_table_and_a_diagram_per_group(files, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    folder = files[0]
    page = tmp_path / "groups.html"
    _run(capsys, folder / "p.npz", "--groups", "region", "--metrics", "ECE", "--html", page)
    text = page.read_text()
    assert '<table id="groups">' in text and "By group (region)" in text
    assert 'aria-label="Reliability diagram of each group"' in text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--format", "csv"], "not in CSV"),
        (["--groups", "nope"], "has no array 'nope'"),
        (["--groups", "labels", "--labels-key", "labels"], None),
    ],
)
def test_refusals_are_one_line(files, capsys, arguments, message):
    folder = files[0]
    arguments = arguments if "--groups" in arguments else ["--groups", "region", *arguments]
    if message is None:  # the labels as groups: a valid call, not a refusal
        _run(capsys, folder / "p.npz", *arguments)
        return
    assert message in _error(capsys, folder / "p.npz", *arguments)


def test_a_csv_column_of_names(files, capsys, tmp_path):
    _, prob, labels, _ = files
    names = np.array(["north", "south", '"east, west"', '"say ""hi"""'])[np.arange(600) % 4]
    header = ",".join([f"p{k}" for k in range(prob.shape[1])] + ["label", "region"])
    lines = [
        ",".join(repr(float(v)) for v in row) + f",{label},{name}"
        for row, label, name in zip(prob, labels, names, strict=True)
    ]
    (tmp_path / "n.csv").write_text("\n".join([header, *lines]) + "\n")
    document = json.loads(
        _run(capsys, tmp_path / "n.csv", "--prob-column", "p*", "--groups", "region", "--json")
    )
    read = np.array(["north", "south", "east, west", 'say "hi"'])[np.arange(600) % 4]
    expected = by_group(ECE, prob, labels, read)
    assert document["groups"]["names"] == ["east, west", "north", 'say "hi"', "south"]
    assert_allclose(document["groups"]["metrics"]["ECE"], expected.values, rtol=1e-12)


def test_groups_after_a_method_are_by_group_of_its_calibrated_rows(files, capsys, tmp_path):
    # --fit-on: every row of FILE reported; the calibrated rows as `recalibrate` writes them
    folder, prob, labels, _ = files
    example = synthetic_example()
    np.savez(tmp_path / "fit.npz", probs=example.prob[600:1200], labels=example.labels[600:1200])
    fit = ["--method", "temperature", "--fit-on", tmp_path / "fit.npz"]
    document = json.loads(
        _run(
            capsys, folder / "p.npz", *fit, "--groups", "region", "--metrics", "ECE,NLL", "--json"
        )
    )
    assert main(
        ["recalibrate", "--method", "temperature", "--fit", str(tmp_path / "fit.npz"),
         "--apply", str(folder / "p.npz"), "-o", str(tmp_path / "out.npz")]
    ) == 0  # fmt: skip
    capsys.readouterr()
    calibrated = np.load(tmp_path / "out.npz")["prob"]
    groups = np.arange(600) % 3
    after = document["groups"]["methods"]["temperature"]
    for name, metric in (("ECE", ECE), ("NLL", negative_log_likelihood)):
        before = by_group(metric, prob, labels, groups, **({"bins": 15} if name == "ECE" else {}))
        expected = by_group(
            metric, calibrated, labels, groups, **({"bins": 15} if name == "ECE" else {})
        )
        assert_allclose(document["groups"]["metrics"][name], before.values, rtol=1e-12)
        assert_allclose(after["metrics"][name], expected.values, rtol=1e-12)
        assert after["worst"][name] == {
            "group": expected.worst_name,
            "value": expected.worst_value,
        }
    assert not np.allclose(after["metrics"]["ECE"], document["groups"]["metrics"]["ECE"])


def test_groups_with_a_split_are_those_of_the_rows_reported(files, capsys):
    # --split: the groups of the rows not fitted on (the report's n), the fit rows left out
    folder, prob, labels, _ = files
    document = json.loads(
        _run(capsys, folder / "p.npz", "--method", "temperature", "--groups", "region", "--json")
    )
    test_rows = ~fit_rows(0, 600, 0.5, 0)
    groups = (np.arange(600) % 3)[test_rows]
    expected = by_group(ECE, prob[test_rows], labels[test_rows], groups, bins=15)
    assert sum(document["groups"]["counts"]) == document["n"] == test_rows.sum() < 600
    assert document["groups"]["counts"] == expected.counts.tolist()
    assert_allclose(document["groups"]["metrics"]["ECE"], expected.values, rtol=1e-12)
    assert set(document["groups"]["methods"]) == {"temperature"}
    text = _run(capsys, folder / "p.npz", "--method", "temperature", "--groups", "region")
    assert "by group after temperature:" in text


@pytest.mark.parametrize(
    "arguments",
    [
        ["--metrics", "ECE,SCE,Brier,NLL"],
        ["--metrics", "ECE,Brier", "--method", "temperature,isotonic"],
        ["--metrics", "ECE,MCE", "--per-class", "--bins", "7"],
    ],
)
def test_streamed_groups_are_the_groups_read_whole(files, capsys, arguments):
    # each group's sums accumulated block by block: the in-memory by_group's numbers
    folder = files[0]
    command = [folder / "p.npz", "--groups", "region", *arguments, "--json"]
    whole = json.loads(_run(capsys, *command))["groups"]
    streamed = json.loads(_run(capsys, *command, "--stream", "--block-rows", "37"))["groups"]
    assert streamed["names"] == whole["names"] and streamed["counts"] == whole["counts"]
    for part in (streamed, *streamed.get("methods", {}).values()):
        assert set(part) >= {"metrics", "worst"}
    pairs = [(streamed, whole)] + [
        (streamed["methods"][name], whole["methods"][name]) for name in whole.get("methods", {})
    ]
    assert len(pairs) == 1 + ("--method" in arguments) * 2
    for got, expected in pairs:
        for name, values in expected["metrics"].items():
            assert_allclose(got["metrics"][name], values, rtol=1e-12, err_msg=name)
            assert got["worst"][name]["group"] == expected["worst"][name]["group"]


def test_streamed_groups_of_a_csv_column_of_names(files, capsys, tmp_path):
    _, prob, labels, _ = files
    names = np.array(["north", "south", '"east, west"'])[np.arange(600) % 3]
    header = ",".join([f"p{k}" for k in range(prob.shape[1])] + ["label", "region"])
    lines = [
        ",".join(repr(float(v)) for v in row) + f",{label},{name}"
        for row, label, name in zip(prob, labels, names, strict=True)
    ]
    (tmp_path / "n.csv").write_text("\n".join([header, *lines]) + "\n")
    command = [tmp_path / "n.csv", "--prob-column", "p*", "--groups", "region", "--json"]
    command += ["--metrics", "ECE"]
    streamed = json.loads(_run(capsys, *command, "--stream", "--block-rows", "50"))["groups"]
    expected = by_group(
        ECE, prob, labels, np.array(["north", "south", "east, west"])[np.arange(600) % 3]
    )
    assert streamed["names"] == expected.names.tolist()
    assert_allclose(streamed["metrics"]["ECE"], expected.values, rtol=1e-12)


@pytest.mark.filterwarnings("default")  # the CLI reports warnings as lines, not exceptions
def test_streamed_groups_leave_multicalibration_out_with_a_warning(files, capsys):
    folder = files[0]
    assert main(
        ["report", str(folder / "p.npz"), "--groups", "region", "--metrics", "ECE,MultiCal",
         "--stream", "--json"]
    ) == 0  # fmt: skip
    captured = capsys.readouterr()
    assert json.loads(captured.out)["groups"]["across"] == {}
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibration-toolbox: warning: ")
    assert "MultiCal_sigma" in lines[0] and "need all the rows at once" in lines[0]


def test_streamed_groups_of_another_length_are_refused(files, capsys, tmp_path):
    _, prob, labels, _ = files
    for size in (5, 601):
        np.savez(tmp_path / "short.npz", probs=prob, labels=labels, region=np.zeros(size))
        line = _error(capsys, tmp_path / "short.npz", "--groups", "region", "--stream")
        assert f"holds {size} values" in line and "not one per row" in line


def test_a_csv_needs_its_prediction_columns_named(files, capsys):
    assert "needs --prob-column" in _error(capsys, files[0] / "p.csv", "--groups", "region")


def test_groups_of_another_length_are_refused(files, capsys, tmp_path):
    _, prob, labels, _ = files
    np.savez(tmp_path / "short.npz", probs=prob, labels=labels, region=np.zeros(5))
    line = _error(capsys, tmp_path / "short.npz", "--groups", "region")
    assert "not one per row (600 rows)" in line


def test_the_embedded_example_has_no_column(capsys):
    assert "the embedded example has none" in _error(capsys, "--groups", "region")


def test_a_parquet_column_of_names(files, capsys, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    _, prob, labels, _ = files
    names = np.array(["north", "south", "east"])[np.arange(600) % 3]
    columns = {f"p{k}": prob[:, k] for k in range(prob.shape[1])}
    table = pa.table({**columns, "label": labels, "region": names})
    pq.write_table(table, tmp_path / "p.parquet")
    document = json.loads(
        _run(capsys, tmp_path / "p.parquet", "--prob-column", "p*", "--groups", "region", "--json")
    )
    expected = by_group(ECE, prob, labels, names)
    assert document["groups"]["names"] == ["east", "north", "south"]
    assert_allclose(document["groups"]["metrics"]["ECE"], expected.values, rtol=1e-12)


def test_multicalibration_over_the_groups_is_the_apis(files, capsys):
    # a registry row that declares `groups`: the report calls it once with the column
    folder, prob, labels, _ = files
    document = json.loads(
        _run(capsys, folder / "p.npz", "--groups", "region", "--metrics", "ECE,MultiCal", "--json")
    )
    expected = multicalibration_error(prob, labels, np.arange(600) % 3)
    assert document["metrics"] == ["ECE"]  # a statistic over the groups, not per method
    assert document["groups"]["across"] == {
        "MultiCal_sigma": expected.sigmas,
        "MultiCal_error": expected.error,
        "MultiCal_p": expected.pvalue,
    }
    assert set(document["groups"]["metrics"]) == {"ECE"}
    text = _run(capsys, folder / "p.npz", "--groups", "region", "--metrics", "MultiCal")
    assert f"over the groups, MultiCal_sigma: {expected.sigmas:.5g}" in text


@pytest.mark.parametrize("command", [["report", "p.npz"], ["compare", "p.npz", "p.npz"]])
def test_multicalibration_without_groups_is_refused_in_one_line(files, capsys, command):
    folder = files[0]
    arguments = [str(folder / part) if part.endswith(".npz") else part for part in command]
    assert main([*arguments, "--metrics", "ECE,MultiCal"]) == 2
    lines = capsys.readouterr().err.splitlines()
    assert (
        len(lines) == 1
        and "a statistic over groups of rows; it needs report --groups" in (lines[0])
    )


def test_groups_take_the_bins_the_report_chose_with_bins_auto(files, capsys):
    # --bins auto: one count for every number shown (the report's, from all its rows),
    # not a count chosen again from each group's rows
    folder, prob, labels, _ = files
    document = json.loads(
        _run(capsys, folder / "p.npz", "--groups", "region", "--bins", "auto", "--json")
    )
    assert document["bins"] == 9  # the smallest B with B**3 >= 600
    expected = by_group(ECE, prob, labels, np.arange(600) % 3, bins=9)
    assert_allclose(document["groups"]["metrics"]["ECE"], expected.values, rtol=1e-12)
