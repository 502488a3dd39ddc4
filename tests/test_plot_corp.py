"""The CORP reliability diagram (strategy='corp'), drawn headless (Agg)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from numpy.testing import assert_allclose

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from calibration_toolbox import (  # noqa: E402
    Scores,
    TemperatureScaling,
    calibration_table,
    corp_decomposition,
)
from calibration_toolbox.datasets import make_overconfident  # noqa: E402
from calibration_toolbox.plot import ReliabilityDiagram  # noqa: E402
from calibration_toolbox.stats import corp_reliability  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _predictions(n=2000, seed=5):
    logits, labels = make_overconfident(n, 4, temperature=2.0, seed=seed)
    return logits, labels


def test_the_diagram_draws_the_pav_fit_over_the_band_with_the_decomposition():
    logits, labels = _predictions()
    display = ReliabilityDiagram.from_predictions(
        logits, labels, logits=True, strategy="corp", random_state=0, label="model"
    )
    curve = corp_reliability(logits, labels, logits=True, random_state=0)
    x, y = display.line_.get_data()
    assert_allclose(x, curve.forecasts) and assert_allclose(y, curve.recalibrated)
    assert display.table_ is None and display.corp_.decomposition == curve.decomposition
    assert_allclose(display.corp_.band_low, curve.band_low)
    parts = corp_decomposition(logits, labels, logits=True)
    text = display.text_.get_text()
    assert f"MCB {parts.miscalibration:.4f} (p = 0.0099)" in text  # rejected: 1 / 101
    assert f"DSC {parts.discrimination:.4f}" in text and f"UNC {parts.uncertainty:.4f}" in text
    assert text.startswith(f"Brier score {parts.score:.4f}")
    legend = [entry.get_text() for entry in display.ax_.get_legend().get_texts()]
    assert "90% consistency band (resampling)" in legend and "model (CORP, PAV fit)" in legend
    n_blocks = np.unique(curve.recalibrated).size
    assert display.ax_.get_title() == f"CORP reliability diagram ({n_blocks} PAV blocks)"
    assert display.counts_ax_.get_yscale() == "log"
    display.figure_.savefig(io.BytesIO(), format="png")


def test_scores_log_score_and_the_asymptotic_band():
    rng = np.random.default_rng(1)
    scores = rng.uniform(size=500)
    targets = rng.random(500) < scores
    display = ReliabilityDiagram.from_predictions(
        Scores(scores), targets, strategy="corp", score="log", band="continuous", alpha=0.05
    )
    assert display.ax_.get_ylabel() == "PAV-recalibrated event rate"
    assert display.counts_ax_.get_xlabel() == "score"
    assert display.text_.get_text().startswith("log score")
    assert "(p = " not in display.text_.get_text()  # the asymptotic band draws no resamples
    legend = [entry.get_text() for entry in display.ax_.get_legend().get_texts()]
    assert "95% consistency band (continuous asymptotics)" in legend


def test_drawn_on_given_axes_and_from_a_recalibrator():
    logits, labels = _predictions()
    _, ax = plt.subplots()
    display = ReliabilityDiagram.from_predictions(
        logits, labels, logits=True, strategy="corp", ax=ax, n_resamples=10, random_state=0
    )
    assert display.ax_ is ax and display.counts_ax_ is None and display.counts_ is None
    scaler = TemperatureScaling().fit(logits, labels)
    after = ReliabilityDiagram.from_recalibrator(
        scaler, logits, labels, strategy="corp", n_resamples=10, random_state=0
    )
    assert after.label == "TemperatureScaling"
    assert after.corp_.decomposition.miscalibration < display.corp_.decomposition.miscalibration


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"strategy": "isotonic"}, ValueError, "`strategy` must be 'bins' or 'corp'"),
        ({"strategy": "corp", "class_conditional": True}, ValueError, "`class_conditional`"),
        ({"strategy": "corp", "adaptive_bins": True}, ValueError, "`adaptive_bins` applies"),
        ({"strategy": "corp", "band": "exact"}, ValueError, "`band`"),
        ({"strategy": "corp", "band": "asymptotic"}, ValueError, "or 'continuous' or 'discrete'"),
    ],
)
def test_bad_options_are_refused(options, error, message):
    logits, labels = _predictions(200)
    with pytest.raises(error, match=message):
        ReliabilityDiagram.from_predictions(logits, labels, logits=True, **options)


def test_a_display_holds_a_table_or_a_corp_curve():
    logits, labels = _predictions(200)
    table = calibration_table(logits, labels, logits=True, class_conditional=False)
    curve = corp_reliability(logits, labels, logits=True, n_resamples=5, random_state=0)
    with pytest.raises(ValueError, match="got both"):
        ReliabilityDiagram(table, corp=curve)
    with pytest.raises(ValueError, match="got neither"):
        ReliabilityDiagram()
    with pytest.raises(TypeError, match="`corp` must be the result"):
        ReliabilityDiagram(corp=table)
    assert ReliabilityDiagram(corp=curve).plot().corp_ is curve


# -- the HTML page --------------------------------------------------------------------------
def test_the_html_page_draws_a_corp_diagram_per_method_given():
    from calibration_toolbox._html import render_report
    from tests.cli.test_html import build_report

    document, tables, _ = build_report()
    logits, labels = make_overconfident(600, 4, temperature=2.0, seed=5)
    curve = corp_reliability(logits[300:], labels[300:], logits=True, n_resamples=20)
    page = render_report(document, tables, curves={"corp": {"uncalibrated": curve}})
    assert page.count("<h2>CORP reliability diagrams</h2>") == 1
    assert page.count('aria-label="CORP reliability diagram of uncalibrated"') == 1
    assert "CORP reliability" not in render_report(document, tables)
    assert "CORP reliability" not in render_report(document, tables, curves={"corp": {}})
    with pytest.raises(ValueError, match="`curves` must map methods of the report; got 'vec"):
        render_report(document, tables, curves={"corp": {"vector": curve}})
    with pytest.raises(TypeError, match=r"`curves`\['corp'\] must map each method to a CORPR"):
        render_report(document, tables, curves={"corp": {"uncalibrated": tables["temperature"]}})
    with pytest.raises(ValueError, match="`curves` must map diagrams \\('corp', 'smooth', 'risk_"):
        render_report(document, tables, curves={"bins": {"uncalibrated": curve}})


def test_a_corp_curve_keeps_its_rule_and_is_drawn_as_it_is():
    logits, labels = _predictions(500)
    curve = corp_reliability(logits, labels, logits=True, score="log", n_resamples=5)
    assert curve.score == "log"
    display = ReliabilityDiagram.from_curve(curve, label="model")
    assert display.corp_ is curve and display.table_ is None
    assert display.text_.get_text().startswith(f"log score {curve.decomposition.score:.4f}")
    assert display.counts_ax_.get_yscale() == "log"  # a new figure has the counts below
    _, ax = plt.subplots()
    assert ReliabilityDiagram.from_curve(curve, ax=ax).counts_ax_ is None
    brier = corp_reliability(logits, labels, logits=True, n_resamples=5)
    assert brier.score == "brier"
    assert ReliabilityDiagram.from_curve(brier).text_.get_text().startswith("Brier score")


def test_the_command_line_page_has_the_corp_diagrams_only_with_corp(tmp_path):
    from calibration_toolbox.cli import main

    logits, labels = make_overconfident(400, 3, temperature=2.0, seed=6)
    np.savez(tmp_path / "z.npz", logits=logits, labels=labels)
    command = ["report", str(tmp_path / "z.npz"), "--logits", "--method", "temperature"]
    assert main([*command, "--metrics", "ECE,CORP", "--html", str(tmp_path / "a.html")]) == 0
    page = (tmp_path / "a.html").read_text()
    assert page.count('aria-label="CORP reliability diagram of ') == 2
    assert "CORP_MCB" in page and "CORP_UNC" in page
    assert main([*command, "--metrics", "ECE", "--html", str(tmp_path / "b.html")]) == 0
    assert "CORP reliability" not in (tmp_path / "b.html").read_text()
