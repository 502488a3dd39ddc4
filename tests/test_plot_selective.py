"""The risk-coverage display, drawn headless (Agg)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from numpy.testing import assert_allclose

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from calibration_toolbox import (  # noqa: E402
    AUGRC,
    AURC,
    Scores,
    TemperatureScaling,
    risk_coverage_curve,
)
from calibration_toolbox.datasets import make_overconfident  # noqa: E402
from calibration_toolbox.plot import RiskCoverageDisplay  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_the_display_draws_the_curve_its_areas_and_the_oracle():
    logits, labels = make_overconfident(2000, 4, temperature=2.0, seed=5)
    display = RiskCoverageDisplay.from_predictions(logits, labels, logits=True, label="net")
    curve = risk_coverage_curve(logits, labels, logits=True)
    assert display.curve_ == curve
    x, y = display.line_.get_data()
    assert_allclose(x, curve.coverage, rtol=0) and assert_allclose(y, curve.risk, rtol=0)
    assert_allclose(display.generalized_line_.get_ydata(), curve.generalized_risk, rtol=0)
    error_rate = curve.risk[-1]
    assert_allclose(display.oracle_line_.get_xdata(), [0, 1 - error_rate, 1], rtol=1e-15)
    assert_allclose(curve.aurc, AURC(logits, labels, logits=True), rtol=1e-12)
    assert_allclose(curve.augrc, AUGRC(logits, labels, logits=True), rtol=1e-12)
    legend = [text.get_text() for text in display.ax_.get_legend().get_texts()]
    assert legend[0] == f"net (AURC = {curve.aurc:.4f})"
    assert legend[1] == f"net: generalized risk (AUGRC = {curve.augrc:.4f})"
    assert display.ax_.get_title() == f"Risk-coverage curve ({len(curve.coverage) - 1} thresholds)"
    display.figure_.savefig(io.BytesIO(), format="png")


def test_models_overlay_on_one_axes_and_a_recalibrator_is_drawn():
    logits, labels = make_overconfident(2000, 4, temperature=2.0, seed=6)
    before = RiskCoverageDisplay.from_predictions(
        Scores(np.exp(-np.abs(logits[:, 0]))), labels > 0
    )
    scaler = TemperatureScaling().fit(logits, labels)
    after = RiskCoverageDisplay.from_recalibrator(scaler, logits, labels, ax=before.ax_)
    assert after.ax_ is before.ax_ and len(before.ax_.lines) == 6
    assert after.label == "TemperatureScaling"
    assert after.line_.get_color() != before.line_.get_color()
    top = max(before.curve_.risk.max(), after.curve_.risk.max())
    assert before.ax_.get_ylim() == (0.0, pytest.approx(1.05 * top))  # both in view


def test_empty_given_axes_are_scaled_to_the_curve():
    _, ax = plt.subplots()
    display = RiskCoverageDisplay.from_predictions(Scores([0.9, 0.8, 0.4]), [1, 0, 0], ax=ax)
    assert ax.get_ylim() == (0.0, pytest.approx(1.05 * display.curve_.risk.max()))


def test_the_display_refuses_what_is_no_curve():
    with pytest.raises(TypeError, match="`curve` must be a RiskCoverageCurve"):
        RiskCoverageDisplay.from_curve({"coverage": [0, 1]})
    with pytest.raises(TypeError, match="`label` must be a string or None"):
        RiskCoverageDisplay.from_predictions(Scores([0.9, 0.4]), [1, 0], label=3)
    with pytest.raises(TypeError, match="`ax` must be a matplotlib Axes or None"):
        RiskCoverageDisplay.from_predictions(Scores([0.9, 0.4]), [1, 0], ax="top")
