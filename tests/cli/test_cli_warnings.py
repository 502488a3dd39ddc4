"""The warnings of a report: one line each on stderr, and in the JSON document and the HTML
page beside what they concern (each method's in its entry, the file's at the top)."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import numpy as np
import pytest

from calibration_toolbox.cli import main
from tests.cli.test_cli_report import files  # noqa: F401 (the fixture)
from tests.conftest import synthetic_example

# Every warning of these reports is shown (and collected by the command line), not raised.
pytestmark = pytest.mark.filterwarnings("always::UserWarning")

RIDGE = "a ridge penalty 0.01 * (mean((W - I)**2) + mean(b**2)) is added"
LOGITS_ON_PROBABILITIES = "was passed with --logits, but every row is a probability vector"
LOWERS_ACCURACY = "histogram binning lowers the accuracy of the scored rows from 0.5199 to 0.4440"


@pytest.fixture(scope="module")
def folder(files):  # noqa: F811 (the fixture imported above)
    """test_cli_report's files (p.npz: 600 rows of 10 classes, on which histogram binning
    fitted on a seeded half loses accuracy), and few.npz: 30 of them (matrix scaling has 110
    parameters for 15 fit rows)."""
    example = synthetic_example()
    np.savez(files / "few.npz", probs=example.prob[:30], labels=example.labels[:30])
    return files


def _report(capsys, *args) -> tuple[dict, list[str]]:
    assert main(["report", *map(str, args), "--metrics", "ECE", "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err.splitlines()


def _entry(document: dict, method: str) -> dict:
    return next(entry for entry in document["results"] if entry["method"] == method)


@pytest.mark.parametrize("reading", [[], ["--stream"]], ids=["whole", "blocks"])
def test_each_methods_warnings_are_in_its_entry_and_on_stderr(folder, capsys, reading):
    document, err = _report(
        capsys, folder / "few.npz", "--method", "temperature,matrix", "--logits", *reading
    )
    # The file's warning (logits that are probabilities) at the document's level only.
    assert len(document["warnings"]) == 1
    assert LOGITS_ON_PROBABILITIES in document["warnings"][0]
    assert _entry(document, "uncalibrated")["warnings"] == []
    assert _entry(document, "temperature")["warnings"] == []
    matrix = _entry(document, "matrix")["warnings"]
    assert any(RIDGE in warning for warning in matrix)  # its 110 parameters, 15 fit rows
    # stderr as before: every warning once, one line each, in the same words.
    assert all(line.startswith("calibration-toolbox: warning: ") for line in err)
    shown = [line.removeprefix("calibration-toolbox: warning: ") for line in err]
    assert sorted(shown) == sorted(document["warnings"] + matrix)


@pytest.mark.parametrize("reading", [[], ["--stream"]], ids=["whole", "blocks"])
def test_a_method_that_lowers_the_accuracy_is_warned_of(folder, capsys, reading):
    document, err = _report(
        capsys, folder / "p.npz", "--method", "temperature,histogram", *reading
    )
    (warning,) = _entry(document, "histogram")["warnings"]
    assert warning.startswith(LOWERS_ACCURACY)
    assert "turns 35 right predictions wrong and 14 wrong ones right" in warning
    assert "McNemar's exact test: p = 0.0019" in warning
    assert _entry(document, "temperature")["warnings"] == [] and document["warnings"] == []
    assert err == [f"calibration-toolbox: warning: {warning}"]


def test_a_fit_on_the_rows_scored_is_a_warning_of_the_file(folder, capsys):
    path = folder / "p.npz"
    document, err = _report(capsys, path, "--method", "temperature", "--fit-on", path)
    (warning,) = document["warnings"]
    assert warning.startswith(f"fitted on {path} (--fit-on), the very rows of {path}")
    assert err == [f"calibration-toolbox: warning: {warning}"]


class _Warnings(HTMLParser):
    """The text of every element of class "warning", and of the parameters table's rows."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.items, self.rows, self._depth, self._row = [], {}, 0, None
        self.tags = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if ("class", "warning") in attrs:
            self.items.append("")
            self._depth += 1
        elif self._depth:
            self._depth += 1

    def handle_endtag(self, tag):
        if self._depth:
            self._depth -= 1

    def handle_data(self, data):
        if self._depth:
            self.items[-1] += data


def test_the_html_page_shows_each_warning_by_what_it_concerns(tmp_path, capsys):
    # A hostile file name reaches the page through the same-rows warning: shown, escaped.
    example = synthetic_example()
    name = "a<b>&<script>x.npz"
    np.savez(tmp_path / name, probs=example.prob[:30], labels=example.labels[:30])
    path = tmp_path / name
    page_path = tmp_path / "page.html"
    command = ["report", str(path), "--method", "temperature,matrix", "--fit-on", str(path)]
    assert main([*command, "--metrics", "ECE", "--html", str(page_path), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    page = page_path.read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;script&gt;" in page
    parsed = _Warnings(page)
    assert "script" not in parsed.tags
    (same_rows,) = document["warnings"]
    (matrix, *_) = _entry(document, "matrix")["warnings"]
    # The warnings section: the file's first, then each method's under its name ...
    assert f"file: {same_rows}" in parsed.items
    assert f"matrix: {matrix}" in parsed.items
    # ... and each method's beside its parameters.
    assert matrix in parsed.items
    assert page.index('id="warnings"') < page.index('id="metrics"')
