"""``report --method auto``: the method chosen by cross-validation on the fit rows.

In-process through ``main([...])`` with capsys, as test_cli_report.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import select_recalibrator
from calibration_toolbox.cli import main
from calibration_toolbox.cli._methods import AUTO_FOLDS, METHODS
from tests.conftest import synthetic_example


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """600 rows of the example's logits to report on, and 900 more to fit on."""
    folder = tmp_path_factory.mktemp("auto")
    example = synthetic_example()
    np.savez(folder / "z.npz", logits=example.logits[:600], labels=example.labels[:600])
    np.savez(folder / "val.npz", logits=example.logits[600:1500], labels=example.labels[600:1500])
    return folder, example


def _report(capsys, *args) -> tuple[str, str]:
    assert main(["report", *map(str, args)]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_auto_reports_the_chosen_method_and_its_table(files, capsys):
    folder, example = files
    common = [folder / "z.npz", "--logits", "--fit-on", folder / "val.npz"]
    out, _ = _report(capsys, *common, "--method", "auto", "--seed", "4", "--format", "json")
    document = json.loads(out)
    selection = document["selection"]
    expected = select_recalibrator(
        example.logits[600:1500],
        example.labels[600:1500],
        logits=True,
        cv=AUTO_FOLDS,
        random_state=4,
    )
    assert selection["best"] == expected.best != "uncalibrated"
    assert [row["name"] for row in selection["table"]] == ["uncalibrated", *METHODS]
    for row, mean, spread in zip(selection["table"], expected.mean, expected.spread, strict=True):
        assert_allclose([row["mean"], row["spread"]], [mean, spread], rtol=1e-12)
    assert selection["folds"] == AUTO_FOLDS and selection["seed"] == 4
    assert [entry["method"] for entry in document["results"]] == ["uncalibrated", expected.best]
    # The chosen method's numbers are those of --method <best> on the same rows.
    out, _ = _report(capsys, *common, "--method", expected.best, "--format", "json")
    direct = json.loads(out)
    assert document["results"][1]["metrics"] == direct["results"][1]["metrics"]
    assert document["results"][1]["parameters"] == direct["results"][1]["parameters"]


def test_auto_in_the_terminal_lists_the_methods_by_score(files, capsys):
    folder, _ = files
    out, _ = _report(
        capsys, folder / "z.npz", "--logits", "--fit-on", folder / "val.npz", "--method", "auto"
    )
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("--method auto: mean NLL"))
    rows = lines[start + 1 : start + 2 + len(METHODS)]
    means = [float(line.split()[1]) for line in rows]
    assert means == sorted(means)
    assert rows[0].endswith("<- chosen")
    assert {line.split()[0] for line in rows} == {"uncalibrated", *METHODS}


def test_auto_on_the_html_page(files, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    folder, _ = files
    page = tmp_path / "report.html"
    _report(
        capsys,
        folder / "z.npz",
        "--logits",
        "--fit-on",
        folder / "val.npz",
        "--method",
        "auto",
        "--html",
        page,
    )
    html = page.read_text(encoding="utf-8")
    assert '<table id="selection">' in html and "Method chosen by cross-validation" in html
    assert html.count('<td class="text">chosen</td>') == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--method", "auto,temperature"], "--method auto chooses one method"),
        (["--method", "auto", "--stream"], "--method auto needs FILE read whole"),
    ],
)
def test_auto_misuse_is_one_line(files, capsys, args, message):
    folder, _ = files
    code = main(
        ["report", str(folder / "z.npz"), "--logits", "--fit-on", str(folder / "val.npz"), *args]
    )
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in captured.err
