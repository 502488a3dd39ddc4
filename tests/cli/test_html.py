"""The self-contained HTML report: the page's structure, its numbers, and a real browser."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

matplotlib = pytest.importorskip("matplotlib")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import image  # noqa: E402

from calibration_toolbox import (  # noqa: E402
    ECE,
    MCE,
    SCE,
    Scores,
    TemperatureScaling,
    _html,
    brier_score,
    calibration_table,
    negative_log_likelihood,
)
from calibration_toolbox._html import render_report  # noqa: E402
from calibration_toolbox.datasets import make_overconfident  # noqa: E402

HOSTILE = "a<b>&\"c'</title><script>alert(1)</script>$x$.npz"
BINS = 10
VOID = {"meta", "br", "hr", "img", "input", "link", "wbr", "source", "col", "area", "base"}


def build_report(n=300, n_classes=4, *, file=HOSTILE, intervals=True):
    """A report document as the command line builds it, from the library's own API.

    Temperature scaling fitted on ``n`` rows of make_overconfident logits, measured on
    ``n`` others; returns (document, pooled tables, class-wise tables).
    """
    logits, labels = make_overconfident(2 * n, n_classes, temperature=2.0, seed=5)
    scaler = TemperatureScaling().fit(logits[:n], labels[:n])
    test_logits, y = logits[n:], labels[n:]
    probabilities = {
        "uncalibrated": np.exp(test_logits - test_logits.max(axis=1, keepdims=True)),
        "temperature": scaler.predict_proba(test_logits),
    }
    probabilities["uncalibrated"] /= probabilities["uncalibrated"].sum(axis=1, keepdims=True)
    results, tables, class_tables = [], {}, {}
    for method, prob in probabilities.items():
        table = calibration_table(prob, y, bins=BINS, class_conditional=False)
        tables[method] = table
        class_tables[method] = calibration_table(
            prob, y, bins=BINS, class_conditional=True, top_k_classes="all"
        )
        metrics = {
            "ECE": ECE(prob, y, bins=BINS),
            "MCE": MCE(prob, y, bins=BINS),
            "SCE": SCE(prob, y, bins=BINS),
            "Brier": brier_score(prob, y),
            "NLL": negative_log_likelihood(prob, y),
        }
        result = {
            "method": method,
            "parameters": {} if method == "uncalibrated" else {"temperature": scaler.temperature_},
            "accuracy": float(table.target_sums.sum() / table.counts.sum()),
            "metrics": metrics,
            "per_class": [
                {
                    "class": k,
                    "count": int((y == k).sum()),
                    "ECE": ECE(Scores(prob[:, k]), (y == k).astype(int), bins=BINS),
                    "accuracy": float((prob.argmax(axis=1)[y == k] == k).mean()),
                }
                for k in range(n_classes)
            ],
        }
        if intervals:
            result["intervals"] = {"ECE": [0.5 * metrics["ECE"], 1.5 * metrics["ECE"]]}
        results.append(result)
    document = {
        "tool": "calibration-toolbox",
        "version": "0.1.0",
        "command": ["calibration-toolbox", "report", file, "--method", "temperature"],
        "versions": {"python": "3.11.7", "numpy": np.__version__, "scipy": "1.17.1"},
        "file": file,
        "input": "logits",
        "n_classes": n_classes,
        "n": n,
        "n_fit": n,
        "fit": "a seeded half (--split 0.5 --seed 0)",
        "bins": BINS,
        "metrics": list(results[0]["metrics"]),
        "results": results,
    }
    # What the command line prints and the page is rendered from: JSON, floats included.
    return json.loads(json.dumps(document)), tables, class_tables


class Page(HTMLParser):
    """The parsed page: tags in order, attributes, text per element id, table cells."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.attributes, self.open, self.errors = [], [], [], []
        self.text = {}  # tag or id -> text inside
        self.doctype = None
        self.tables = {}  # table id -> rows of cell texts
        self._table = None
        self.feed(text)
        self.close()

    def handle_decl(self, declaration):
        self.doctype = declaration

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes.extend(attrs)
        if tag == "table":
            self._table = dict(attrs).get("id")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self.tables[self._table][-1].append("")
        if tag not in VOID:
            self.open.append((tag, dict(attrs).get("id")))

    def handle_startendtag(self, tag, attrs):  # <path ... /> inside the SVG
        self.tags.append(tag)
        self.attributes.extend(attrs)

    def handle_endtag(self, tag):
        if not self.open or self.open[-1][0] != tag:
            self.errors.append(f"</{tag}> closes {self.open[-1:]}")
            return
        self.open.pop()
        if tag == "table":
            self._table = None

    def handle_data(self, data):
        for tag, element_id in self.open:
            for key in (tag, element_id):
                if key is not None:
                    self.text[key] = self.text.get(key, "") + data
        if self._table is not None and self.open[-1][0] in ("td", "th", "span", "br"):
            row = self.tables[self._table][-1]
            row[-1] += data if self.open[-1][0] != "span" else f" {data}"

    def table(self, table_id):
        """{row header: [cells]} of a table (the first row under the key 'header')."""
        rows = self.tables[table_id]
        return {"header": rows[0], **{row[0]: row[1:] for row in rows[1:]}}


@pytest.fixture(scope="module")
def rendered():
    """One page (two methods, the class-wise grid of one) and the state around its drawing."""
    document, tables, class_tables = build_report()
    figures_before = plt.get_fignums()
    rc_before = dict(matplotlib.rcParams)
    page = render_report(document, tables, {"temperature": class_tables["temperature"]})
    return {
        "document": document,
        "page": page,
        "parsed": Page(page),
        "figures": (figures_before, plt.get_fignums()),
        "rc": (rc_before, dict(matplotlib.rcParams)),
    }


# One reliability diagram and one histogram (uncalibrated -> temperature), one class grid.
EXPECTED_SVGS = 2 + 1


def test_page_is_one_html5_document_with_one_svg_per_figure(rendered):
    parsed = rendered["parsed"]
    assert parsed.doctype == "DOCTYPE html"
    assert parsed.errors == [] and parsed.open == []  # every element closed, in order
    assert parsed.tags[:1] == ["html"] and parsed.tags.count("body") == 1
    assert parsed.tags.count("svg") == EXPECTED_SVGS
    ids = [value for name, value in parsed.attributes if name == "id"]
    assert len(ids) == len(set(ids))  # the figures' SVG ids do not collide
    references = [
        value[1:] for name, value in parsed.attributes if name.endswith("href") and value
    ]
    assert references and set(references) <= set(ids)  # every SVG reference resolves


def test_page_fetches_nothing(rendered):
    page, parsed = rendered["page"], rendered["parsed"]
    links = [
        value
        for name, value in parsed.attributes
        if name in ("src", "href", "xlink:href", "action", "poster", "data")
    ]
    assert all(value.startswith("#") for value in links), links
    assert not {"script", "link", "img", "iframe", "object", "embed"} & set(parsed.tags)
    assert "url(http" not in page and "@import" not in page and "@font-face" not in page
    policy = next(value for name, value in parsed.attributes if name == "content")
    assert policy.startswith("default-src 'none'")


def test_a_hostile_file_name_is_shown_not_interpreted(rendered):
    parsed = rendered["parsed"]
    assert "script" not in parsed.tags
    assert parsed.text["title"] == f"Calibration report: {HOSTILE}"
    assert parsed.text["h1"] == f"Calibration report: {HOSTILE}"
    # the exact command, quoted as a shell needs it to run it again
    assert parsed.text["command"] == shlex.join(rendered["document"]["command"])


def test_metric_table_numbers_are_the_documents(rendered):
    document, table = rendered["document"], rendered["parsed"].table("metrics")
    results = document["results"]
    assert table["header"] == ["metric", "uncalibrated", "temperature"]
    assert table["accuracy"] == [f"{result['accuracy']:.4f}" for result in results]
    for name in document["metrics"]:
        cells = table[name]
        values = [float(cell.split()[0]) for cell in cells]
        assert_allclose(values, [r["metrics"][name] for r in results], rtol=0, atol=5.01e-5)
        assert [cell.split()[0] for cell in cells] == [
            f"{r['metrics'][name]:.4f}" for r in results
        ]
    for cell, result in zip(table["ECE"], results, strict=True):
        low, high = result["intervals"]["ECE"]
        assert cell.endswith(f"[{low:.4f}, {high:.4f}]")


def test_parameter_and_per_class_tables_are_the_documents(rendered):
    document, parsed = rendered["document"], rendered["parsed"]
    parameters = parsed.table("parameters")
    temperature = document["results"][1]["parameters"]["temperature"]
    assert parameters["temperature"] == [f"temperature = {temperature:.4f}"]
    assert parameters["uncalibrated"] == ["none: the predictions as given"]
    per_class = parsed.table("per-class")
    # count and accuracy (temperature keeps the argmax) are one column; ECE one per method
    assert [cell.split()[0] for cell in per_class["header"]] == [
        "class",
        "count",
        "ECE",
        "ECE",
        "accuracy",
    ]
    before, after = (result["per_class"] for result in document["results"])
    for k, (entry, later) in enumerate(zip(before, after, strict=True)):
        assert per_class[str(k)] == [
            str(entry["count"]),
            f"{entry['ECE']:.4f}",
            f"{later['ECE']:.4f}",
            f"{entry['accuracy']:.4f}",
        ]


def test_rendering_leaves_pyplot_and_rcparams_alone(rendered):
    before, after = rendered["figures"]
    assert after == before  # no figure left in (or added to) pyplot's list
    rc_before, rc_after = rendered["rc"]
    assert rc_after == rc_before


def test_grid_limit_note_parameters_and_scores_reading(monkeypatch):
    # The limit is 20; lowered to 3 here so that the grid of a 5-class report stays small.
    monkeypatch.setattr(_html, "MAX_GRID_CLASSES", 3)
    document, tables, class_tables = build_report(n=200, n_classes=5, file="small.npz")
    del class_tables["temperature"]
    document["results"][0]["parameters"] = {"floor": 3e-6}
    document["results"][1]["parameters"] = {}
    document["input"] = "scores"  # the figures' words are then explained
    page = render_report(document, tables, class_tables)
    assert "read accuracy as the mean target and confidence as the mean score" in page
    parameters = Page(page).table("parameters")
    assert parameters["uncalibrated"] == ["floor = 3.000e-06"]  # not 0.0000
    assert parameters["temperature"] == ["not in the report (it lists scalar parameters only)"]
    # A class's ECE in the document is that of its column as scores against 1{label = k}:
    # the class's group of the class-wise table.
    errors = [entry["ECE"] for entry in document["results"][0]["per_class"]]
    worst = sorted(np.argsort(errors)[::-1][:3].tolist())
    assert "Only 3 of the 5 classes are drawn" in page
    assert f"{', '.join(map(str, worst))}." in page
    grid = page.split("Class-wise reliability")[-1]
    panels = {part.split('"')[0] for part in grid.split('id="f3-axes_')[1:]}
    assert len(panels) == 3  # one axes per drawn class
    # the per-class table (5 classes > 3) is folded, not open
    assert "<details><summary>5 classes</summary>" in page


@pytest.mark.parametrize(
    ("report", "tables", "error", "match"),
    [
        ([], {}, TypeError, r"`report` must be a dict"),
        ({"results": []}, {}, ValueError, r"`report\['results'\]` must be a non-empty list"),
        (
            {"results": [{"method": "uncalibrated"}]},
            {},
            ValueError,
            r"`tables` must hold .*no table for \['uncalibrated'\]",
        ),
        (
            {"results": [{"method": "uncalibrated"}]},
            {"uncalibrated": 0.1},
            TypeError,
            r"`tables\['uncalibrated'\]` must be a CalibrationTable",
        ),
    ],
)
def test_bad_arguments_are_refused_with_their_name(report, tables, error, match):
    with pytest.raises(error, match=match):
        render_report(report, tables)


def test_a_class_conditional_table_is_refused_as_a_pooled_one():
    document, tables, class_tables = build_report(n=50, n_classes=3)
    with pytest.raises(ValueError, match=r"`tables\['uncalibrated'\]` must be a pooled"):
        render_report(document, {**tables, "uncalibrated": class_tables["uncalibrated"]})
    with pytest.raises(ValueError, match=r"`class_tables` must hold .*tables of \['vector'\]"):
        render_report(document, tables, {"vector": class_tables["temperature"]})
    # the document and the tables are not mutated by a refused call
    assert set(tables) == {"uncalibrated", "temperature"}


def test_warnings_are_shown_by_what_they_concern_and_escaped():
    document, tables, _ = build_report(n=50, n_classes=3, intervals=False)
    document["warnings"] = [f"fitted on {HOSTILE}, the very rows scored"]
    document["results"][1]["warnings"] = ["TemperatureScaling <did not> converge & more"]
    page = render_report(document, tables)
    parsed = Page(page)
    assert "script" not in parsed.tags and "<did not>" not in page
    section = parsed.text["warnings"]
    assert f"file: fitted on {HOSTILE}, the very rows scored" in section
    assert "temperature: TemperatureScaling <did not> converge & more" in section
    assert section.index("file:") < section.index("temperature:")
    # Beside the method's parameters, in the parameters table.
    assert parsed.table("parameters")["header"] == ["method", "fitted parameters", "warnings"]
    table = page[page.index('<table id="parameters">') :]
    row = table[
        table.index("<th>temperature</th>") : table.index(
            "</tr>", table.index("<th>temperature</th>")
        )
    ]
    assert '<div class="warning">TemperatureScaling &lt;did not&gt; converge &amp; more' in row
    # Without warnings the page has no section and the table no column.
    del document["warnings"], document["results"][1]["warnings"]
    quiet = Page(render_report(document, tables))
    assert "warnings" not in quiet.text
    assert quiet.table("parameters")["header"] == ["method", "fitted parameters"]
    document["warnings"] = "one string"
    with pytest.raises(ValueError, match=r"`warnings` must be a list of strings"):
        render_report(document, tables)


# --------------------------------------------------------------------------- a real browser

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Every host name fails to resolve: nothing reaches the network, whatever is asked.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--enable-logging=stderr",
    "--v=0",
    "--window-size=1100,1800",
)


ROOT = Path(__file__).resolve().parents[2]
BROWSER_MISSING = (
    "chromium is not on PATH: install Debian's chromium package "
    "(apt-get install chromium fonts-liberation; .ci/run does), "
    "or deselect these tests with -m 'not browser'."
)


def find_chromium(environ=os.environ, which=shutil.which) -> str:
    """The chromium executable; without one, skip outside CI and fail in CI.

    CI counts as set when the variable ``CI`` is set to anything but an empty string,
    ``0``, ``false`` or ``no`` (CI services set ``CI=true``): there the browser tests must
    run, so a missing browser is a failure, never a silent skip.
    """
    executable = which("chromium")
    if executable is not None:
        return executable
    if environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{BROWSER_MISSING} (CI is set, so the browser tests may not skip)")
    pytest.skip(BROWSER_MISSING)


@pytest.mark.parametrize(
    ("environ", "outcome"),
    [
        ({}, pytest.skip.Exception),
        ({"CI": ""}, pytest.skip.Exception),
        ({"CI": "false"}, pytest.skip.Exception),
        ({"CI": "0"}, pytest.skip.Exception),
        ({"CI": "true"}, pytest.fail.Exception),
        ({"CI": "1"}, pytest.fail.Exception),
    ],
)
def test_a_missing_browser_skips_outside_ci_and_fails_in_ci(environ, outcome):
    with pytest.raises(outcome, match=r"apt-get install chromium.*-m 'not browser'"):
        find_chromium(environ, which=lambda name: None)


def test_a_browser_on_path_is_used_in_and_outside_ci():
    for environ in ({}, {"CI": "true"}):
        assert find_chromium(environ, which=lambda name: f"/opt/{name}") == "/opt/chromium"


def _browser_tests_without_chromium(ci: str | None, empty: Path) -> subprocess.CompletedProcess:
    """This file's browser tests in a child pytest whose PATH holds no chromium."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST")}
    env.pop("CI", None)
    if ci is not None:
        env["CI"] = ci
    env["PATH"] = str(empty)  # an empty folder: the child runs sys.executable by its path
    options = ["-q", "-n", "0", "-p", "no:cacheprovider", "-rs", "-m", "browser"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *options, __file__],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(("ci", "outcome"), [(None, "4 skipped"), ("true", "4 errors")])
def test_the_four_browser_tests_skip_without_chromium_unless_ci_is_set(ci, outcome, tmp_path):
    # The rule end to end, as a user runs the README's command on a machine without chromium
    # (PATH stripped of it): the browser tests skip with how to run them, and in CI they
    # fail instead (the unit test above checks find_chromium, this one that they use it).
    run = _browser_tests_without_chromium(ci, tmp_path)
    summary = run.stdout.strip().splitlines()[-1]
    assert re.search(rf"\b{outcome}\b", summary) and "passed" not in summary, run.stdout
    assert run.returncode == (0 if ci is None else 1), run.stdout
    reasons = re.findall(r"chromium is not on PATH: .*-m 'not browser'", run.stdout)
    if ci is None:
        assert len(reasons) == 4, run.stdout  # SKIPPED [1] ... one line per test
    else:
        assert run.stdout.count("CI is set, so the browser tests may not skip") >= 4


@pytest.fixture(scope="module")
def browser(rendered, tmp_path_factory):
    """One headless chromium run on the page: the DOM, a screenshot, its log, its net log."""
    executable = find_chromium()
    folder = tmp_path_factory.mktemp("browser")
    page = folder / "report.html"
    page.write_text(rendered["page"], encoding="utf-8")
    run = subprocess.run(
        [
            executable,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={folder / 'profile'}",
            f"--screenshot={folder / 'shot.png'}",
            f"--log-net-log={folder / 'net.json'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return {"run": run, "folder": folder, "uri": page.as_uri()}


@pytest.mark.browser
def test_browser_dom_holds_the_figures(browser, rendered):
    dom = browser["run"].stdout
    assert dom.count("<svg ") == EXPECTED_SVGS
    parsed = Page(dom)
    assert parsed.text["h1"] == f"Calibration report: {HOSTILE}"
    assert "script" not in parsed.tags


@pytest.mark.browser
def test_browser_screenshot_is_written_and_not_blank(browser):
    shot = image.imread(browser["folder"] / "shot.png")
    assert shot.shape[:2] == (1800, 1100)
    grey = shot[..., :3].mean(axis=2)
    assert grey.std() > 0.05  # text, tables and figures, not one colour
    assert (grey < 0.5).mean() > 0.005  # some dark ink


@pytest.mark.browser
def test_browser_console_is_silent(browser):
    # The page has no script, so any console line is a problem: an error, or a load that
    # the Content-Security-Policy refused.
    log = browser["run"].stderr
    console = [line for line in log.splitlines() if ":CONSOLE" in line or "Uncaught" in line]
    assert console == []


@pytest.mark.browser
def test_browser_page_requested_nothing(browser):
    log = json.loads((browser["folder"] / "net.json").read_text(encoding="utf-8"))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    requests = [
        event["params"]
        for event in log["events"]
        if event["type"] == start and "url" in event.get("params", {})
    ]
    assert log["events"]  # the log was written
    # The browser's own background requests have no initiator ("not an origin").
    from_page = [
        request["url"] for request in requests if request.get("initiator") != "not an origin"
    ]
    assert from_page == []
