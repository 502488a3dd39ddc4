"""Reliability diagrams and confidence histograms, drawn headless (Agg)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from calibration_toolbox import (  # noqa: E402
    ECE,
    Scores,
    TemperatureScaling,
    calibration_table,
)
from calibration_toolbox.plot import ConfidenceHistogram, ReliabilityDiagram  # noqa: E402
from tests.conftest import load_real  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def gapped_predictions(rng, n=600, n_classes=3):
    """Top-label confidences only in (0.4, 0.6) and (0.9, 1): most of 15 bins are empty."""
    top = np.where(rng.random(n) < 0.5, rng.uniform(0.41, 0.59, n), rng.uniform(0.91, 0.99, n))
    prob = np.empty((n, n_classes))
    prob[:, 0] = top
    prob[:, 1:] = ((1 - top) / (n_classes - 1))[:, None]
    labels = np.where(rng.random(n) < top, 0, rng.integers(1, n_classes, n))
    return prob, labels


def series_lines(ax):
    """The accuracy series (not the diagonal, not the error-bar caps)."""
    return [
        line
        for line in ax.get_lines()
        if line.get_label() != "perfect calibration" and not line.get_label().startswith("_")
    ]


def test_points_are_the_table_of_the_non_empty_bins(rng):
    prob, labels = gapped_predictions(rng)
    display = ReliabilityDiagram.from_predictions(prob, labels, bins=15)
    table = calibration_table(prob, labels, bins=15, class_conditional=False)
    filled = table.counts[0] > 0
    assert 2 <= filled.sum() < 15  # the data leaves bins empty
    x, y = display.line_.get_xdata(), display.line_.get_ydata()
    assert len(x) == filled.sum()  # empty bins are not drawn (not even at accuracy 0)
    assert_allclose(y, table.mean_target[0][filled], rtol=0, atol=1e-12)
    assert_allclose(x, table.mean_score[0][filled], rtol=0, atol=1e-12)
    assert_array_equal(display.table_.counts, table.counts)


def test_error_bars_are_the_wilson_intervals(rng):
    prob, labels = gapped_predictions(rng)
    display = ReliabilityDiagram.from_predictions(prob, labels, bins=10)
    low, high = display.table_.intervals("wilson")
    filled = display.table_.counts[0] > 0
    segments = display.errorbar_.lines[2][0].get_segments()
    assert_allclose([s[0][1] for s in segments], low[0][filled], atol=1e-12)
    assert_allclose([s[1][1] for s in segments], high[0][filled], atol=1e-12)


def test_legend_carries_the_ece_of_the_table(rng):
    prob, labels = gapped_predictions(rng)
    display = ReliabilityDiagram.from_predictions(prob, labels, bins=15, label="net")
    texts = [text.get_text() for text in display.ax_.get_legend().get_texts()]
    assert f"net (ECE = {ECE(prob, labels, bins=15):.4f})" in texts


def test_counts_histogram_under_the_diagram(rng):
    prob, labels = gapped_predictions(rng)
    display = ReliabilityDiagram.from_predictions(prob, labels, bins=15)
    table = display.table_
    values = display.counts_.get_data().values
    filled = table.counts[0] > 0
    assert_allclose(values[filled], table.counts[0][filled])
    assert np.isnan(values[~filled]).all()
    assert len(display.figure_.axes) == 2


def test_png_is_written_with_the_expected_size_and_is_not_blank(rng, tmp_path):
    prob, labels = gapped_predictions(rng)
    display = ReliabilityDiagram.from_predictions(prob, labels)
    path = tmp_path / "diagram.png"
    display.figure_.savefig(path, dpi=40)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = matplotlib.image.imread(path)
    width, height = display.figure_.get_size_inches() * 40
    assert image.shape[:2] == (round(height), round(width))
    assert image[..., :3].std() > 0.05


def test_overlay_draws_two_series_on_one_axes(rng):
    prob, labels = gapped_predictions(rng)
    before = ReliabilityDiagram.from_predictions(prob, labels, label="before")
    sharpened = prob**2 / (prob**2).sum(axis=1, keepdims=True)
    after = ReliabilityDiagram.from_predictions(
        sharpened, labels, ax=before.ax_, counts_ax=before.counts_ax_, label="after"
    )
    assert after.ax_ is before.ax_ and after.figure_ is before.figure_
    assert len(series_lines(before.ax_)) == 2
    diagonal = [
        line for line in before.ax_.get_lines() if line.get_label() == "perfect calibration"
    ]
    assert len(diagonal) == 1
    labels_shown = [text.get_text() for text in before.ax_.get_legend().get_texts()]
    assert len(labels_shown) == 3 and labels_shown[2].startswith("after (ECE = ")
    assert len(before.figure_.axes) == 2


def test_plot_method_draws_again_with_a_new_label(rng):
    prob, labels = gapped_predictions(rng)
    first = ReliabilityDiagram.from_predictions(prob, labels, label="one")
    second = ReliabilityDiagram(first.table_).plot(ax=first.ax_, label="two")
    assert len(series_lines(first.ax_)) == 2 and second.counts_ax_ is None


def test_from_recalibrator_draws_the_calibrated_probabilities(rng):
    logits = rng.normal(size=(800, 4)) * 3
    labels = rng.integers(0, 4, 800)
    recalibrator = TemperatureScaling().fit(logits, labels)
    display = ReliabilityDiagram.from_recalibrator(recalibrator, logits, labels, bins=10)
    expected = calibration_table(
        recalibrator.predict_proba(logits), labels, bins=10, class_conditional=False
    )
    assert_allclose(display.table_.target_sums, expected.target_sums)
    assert_allclose(display.table_.score_sums, expected.score_sums, rtol=1e-12)
    assert display.ax_.get_legend().get_texts()[1].get_text().startswith("TemperatureScaling")


def test_scores_input_and_sample_weight(rng):
    scores = rng.uniform(size=300)
    targets = (rng.uniform(size=300) < scores).astype(int)
    weights = rng.integers(1, 3, 300).astype(float)
    display = ReliabilityDiagram.from_predictions(
        Scores(scores), targets, bins=5, sample_weight=weights
    )
    repeated = np.repeat(np.arange(300), weights.astype(int))
    table = calibration_table(
        Scores(scores[repeated]), targets[repeated], bins=5, class_conditional=False
    )
    assert_allclose(display.line_.get_ydata(), table.mean_target[0], atol=1e-12)


def test_class_wise_grid_has_one_axes_per_class(rng):
    prob = rng.dirichlet(np.ones(4), size=400)
    labels = rng.integers(0, 4, 400)
    display = ReliabilityDiagram.from_predictions(prob, labels, bins=5, class_conditional=True)
    table = calibration_table(prob, labels, bins=5, class_conditional=True, top_k_classes="all")
    assert len(display.figure_.axes) == 4 and display.ax_.shape == (4,)
    for k, line in enumerate(display.line_):
        filled = table.counts[k] > 0
        assert_allclose(line.get_ydata(), table.mean_target[k][filled], atol=1e-12)
    assert f"{table.calibration_error():.4f}" in display.figure_._suptitle.get_text()


def test_grid_of_many_classes_needs_classes(rng):
    prob = rng.dirichlet(np.ones(25), size=300)
    labels = rng.integers(0, 25, 300)
    with pytest.raises(ValueError, match=r"`classes` must be given .* K = 25"):
        ReliabilityDiagram.from_predictions(prob, labels, class_conditional=True)
    display = ReliabilityDiagram.from_predictions(
        prob, labels, class_conditional=True, classes=[3, 24]
    )
    assert len(display.figure_.axes) == 2
    assert display.ax_[1].get_title().startswith("class 24:")


def test_confidence_histogram_bars_and_lines(rng):
    prob, labels = gapped_predictions(rng)
    display = ConfidenceHistogram.from_predictions(prob, labels, bins=10)
    heights = [patch.get_height() for patch in display.bars_.patches]
    table = display.table_
    assert_allclose(heights, table.counts[0] / len(labels), atol=1e-12)
    accuracy = np.mean(prob.argmax(axis=1) == labels)
    assert_allclose(display.accuracy_, accuracy, rtol=1e-12)
    assert_allclose(display.mean_confidence_, prob.max(axis=1).mean(), rtol=1e-12)
    positions = [line.get_xdata()[0] for line in display.lines_]
    assert_allclose(positions, [accuracy, prob.max(axis=1).mean()], rtol=1e-12)


def test_confidence_histogram_overlay(rng):
    prob, labels = gapped_predictions(rng)
    first = ConfidenceHistogram.from_predictions(prob, labels, label="a")
    flattened = prob**0.5 / (prob**0.5).sum(axis=1, keepdims=True)
    ConfidenceHistogram.from_predictions(flattened, labels, ax=first.ax_, label="b")
    assert len(first.ax_.containers) == 2 and len(first.ax_.get_lines()) == 4


def test_no_show_no_global_style_and_inputs_unchanged(rng, monkeypatch):
    def refuse_show(*args, **kwargs):
        raise AssertionError("plt.show() was called")

    monkeypatch.setattr(plt, "show", refuse_show)
    style = dict(matplotlib.rcParams)
    prob, labels = gapped_predictions(rng)
    kept = prob.copy(), labels.copy()
    ReliabilityDiagram.from_predictions(prob, labels)
    ReliabilityDiagram.from_predictions(prob, labels, class_conditional=True)
    ConfidenceHistogram.from_predictions(prob, labels)
    assert dict(matplotlib.rcParams) == style
    assert_array_equal(prob, kept[0])
    assert_array_equal(labels, kept[1])


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda p, y: ReliabilityDiagram.from_predictions(p, y, classes=[0]),
            ValueError,
            r"`classes` chooses the panels of a class-wise grid",
        ),
        (
            lambda p, y: ReliabilityDiagram.from_predictions(
                p, y, class_conditional=True, classes=[0, 3]
            ),
            ValueError,
            r"`classes` must be distinct class indices in \[0, 2\]",
        ),
        (
            lambda p, y: ReliabilityDiagram.from_predictions(
                p, y, class_conditional=True, classes=[1, 1]
            ),
            ValueError,
            r"`classes` must be distinct",
        ),
        (
            lambda p, y: ReliabilityDiagram.from_predictions(
                p, y, class_conditional=True, classes=[0.5]
            ),
            ValueError,
            r"`classes` must be a non-empty 1-D sequence",
        ),
        (
            lambda p, y: ReliabilityDiagram.from_predictions(p, y, ax="axes"),
            TypeError,
            r"`ax` must be a matplotlib Axes or None; got str",
        ),
        (
            lambda p, y: ReliabilityDiagram.from_predictions(p, y, label=3),
            TypeError,
            r"`label` must be a string or None; got int",
        ),
        (
            lambda p, y: ReliabilityDiagram.from_table((p, y)),
            TypeError,
            r"`table` must be a CalibrationTable",
        ),
        (
            lambda p, y: ReliabilityDiagram.from_recalibrator(object(), p, y),
            TypeError,
            r"`recalibrator` must be a fitted recalibrator",
        ),
        (
            lambda p, y: ReliabilityDiagram.from_predictions(p, y, bins=0),
            ValueError,
            r"`bins` must be",
        ),
        (
            lambda p, y: ConfidenceHistogram.from_table(calibration_table(p, y)),
            ValueError,
            r"`table` must be pooled",
        ),
    ],
)
def test_bad_input(rng, call, error, match):
    prob, labels = gapped_predictions(rng)
    with pytest.raises(error, match=match):
        call(prob, labels)


def test_grid_on_given_axes_needs_one_per_class(rng):
    prob, labels = gapped_predictions(rng)
    _, axes = plt.subplots(1, 2)
    with pytest.raises(ValueError, match=r"`ax` must hold one Axes per class drawn \(3\); got 2"):
        ReliabilityDiagram.from_predictions(prob, labels, class_conditional=True, ax=axes)


def test_missing_matplotlib_says_how_to_install(rng, monkeypatch):
    for name in ("matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, name, None)
    prob, labels = gapped_predictions(rng)
    hint = r'pip install "calibration-toolbox\[plot\]"'
    with pytest.raises(ImportError, match=hint):
        ReliabilityDiagram.from_predictions(prob, labels)
    with pytest.raises(ImportError, match=hint):
        ConfidenceHistogram.from_predictions(prob, labels)


def test_package_import_does_not_import_matplotlib():
    code = (
        "import sys, calibration_toolbox, calibration_toolbox.plot; "
        "print('matplotlib' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert result.stdout.strip() == "False"


def test_temperature_scaling_on_real_predictions_closes_the_gap():
    prob, labels = load_real("densenet-bc-100-cifar-100")
    order = np.random.default_rng(0).permutation(len(labels))
    fit, test = order[: len(order) // 2], order[len(order) // 2 :]
    log_prob = np.log(np.clip(prob, 1e-12, None))
    recalibrator = TemperatureScaling().fit(log_prob[fit], labels[fit])
    before = ReliabilityDiagram.from_predictions(prob[test], labels[test], label="before")
    after = ReliabilityDiagram.from_recalibrator(
        recalibrator, log_prob[test], labels[test], ax=before.ax_, label="after"
    )
    assert after.table_.calibration_error() < 0.5 * before.table_.calibration_error()
    assert len(series_lines(before.ax_)) == 2


def test_bins_of_accuracy_zero_and_one_get_error_bars(rng):
    # Wilson bounds of a bin at accuracy 0 or 1 can sit a rounding error past the accuracy;
    # matplotlib refuses a negative error bar.
    scores = np.concatenate([np.full(7, 0.13), np.full(9, 0.71), rng.uniform(0.3, 0.6, 50)])
    targets = np.concatenate([np.zeros(7), np.ones(9), rng.integers(0, 2, 50)]).astype(int)
    display = ReliabilityDiagram.from_predictions(Scores(scores), targets, bins=10)
    y = display.line_.get_ydata()
    assert y.min() == 0.0 and y.max() == 1.0


def test_counts_axis_starts_at_one_so_equal_mass_bins_look_equal(rng):
    # With equal-mass bins the counts differ by one; a log axis fitted to their range
    # alone would blow that difference up to the full height of the panel.
    prob, labels = gapped_predictions(rng, n=1001)
    display = ReliabilityDiagram.from_predictions(prob, labels, adaptive_bins=True)
    low, high = display.counts_ax_.get_ylim()
    assert low <= 1.0 and high >= display.table_.counts.max()


def test_axis_labels_say_what_each_kind_of_table_shows(rng):
    prob, labels = gapped_predictions(rng)
    top = ReliabilityDiagram.from_predictions(prob, labels, bins=10)
    assert (top.ax_.get_ylabel(), top.counts_ax_.get_xlabel()) == ("accuracy", "mean confidence")
    scores = ReliabilityDiagram.from_predictions(Scores(prob[:, 0]), labels == 0, bins=10)
    assert (scores.ax_.get_ylabel(), scores.counts_ax_.get_xlabel()) == (
        "mean target",
        "mean score",
    )
    histogram = ConfidenceHistogram.from_predictions(Scores(prob[:, 0]), labels == 0, bins=10)
    assert histogram.ax_.get_xlabel() == "score"
    assert "mean target" in histogram.lines_[0].get_label()
    grid = ReliabilityDiagram.from_predictions(prob, labels, bins=10, class_conditional=True)
    assert grid.ax_[0].get_ylabel() == "share with label k"
    assert grid.ax_[-1].get_xlabel() == "mean P(y = k)"


def test_grid_on_given_axes_labels_the_outer_panels_of_their_grid(rng):
    # Three panels on a 2 x 2 grid of the caller's: y labels on the left column only, x
    # labels under the lowest panel of each column (the old code took one column).
    prob, labels = gapped_predictions(rng)
    figure, grid = plt.subplots(2, 2, sharex=True, sharey=True)
    figure.delaxes(grid[1, 1])
    panels = grid.ravel()[:3]
    ReliabilityDiagram.from_predictions(prob, labels, class_conditional=True, ax=panels)
    assert [panel.get_ylabel() for panel in panels] == [
        "share with label k",
        "",
        "share with label k",
    ]
    assert [panel.get_xlabel() for panel in panels] == ["", "mean P(y = k)", "mean P(y = k)"]
