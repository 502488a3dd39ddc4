"""The diagrams of the measures' own curves in ``report --plot`` and ``--html`` (CORP, smooth)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_array_equal

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.image  # noqa: E402

import calibration_toolbox.cli._files as html  # noqa: E402  (the page is rendered from there)
from calibration_toolbox import TemperatureScaling, smooth_reliability_curve  # noqa: E402
from calibration_toolbox.cli import main  # noqa: E402
from calibration_toolbox.cli._document import CURVES, DIAGRAM_RESAMPLES  # noqa: E402
from calibration_toolbox.cli._metrics import DIAGRAMS, parse_metrics  # noqa: E402
from calibration_toolbox.datasets import make_overconfident  # noqa: E402
from calibration_toolbox.stats import corp_reliability  # noqa: E402


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("diagrams")
    logits, labels = make_overconfident(800, 3, temperature=2.0, seed=6)
    np.savez(folder / "z.npz", logits=logits, labels=labels)
    return folder, logits, labels


def _report(folder, *options):
    command = ["report", str(folder / "z.npz"), "--logits", "--method", "temperature"]
    assert main([*command, *options]) == 0


def _pages(monkeypatch) -> list[dict]:
    """The ``curves`` every page of the run was rendered with."""
    seen = []
    render = html.render_report

    def recording(document, tables, class_tables=None, curves=None, **others):
        seen.append(curves)
        return render(document, tables, class_tables, curves, **others)

    monkeypatch.setattr(html, "render_report", recording)
    return seen


def test_each_measure_with_a_curve_names_its_diagram():
    assert DIAGRAMS == {
        "CORP": "corp",
        "SmoothECE": "smooth",
        **dict.fromkeys(["AURC", "EAURC", "AUGRC", "ConfAUROC"], "risk_coverage"),
    }
    metrics = parse_metrics("ECE,CORP,SmoothECE,KSCE")
    assert {metric.name: metric.diagram for metric in metrics} == {
        "ECE": None,
        "CORP_MCB": "corp",
        "CORP_DSC": "corp",
        "CORP_UNC": "corp",
        "SmoothECE": "smooth",
        "KSCE": None,
    }


def test_the_page_draws_the_smooth_diagram_of_each_method_with_smooth_ece(
    saved, tmp_path, monkeypatch
):
    folder, _, _ = saved
    seen = _pages(monkeypatch)
    page_path = tmp_path / "s.html"
    _report(folder, "--metrics", "ECE,SmoothECE", "--seed", "3", "--html", str(page_path))
    page = (tmp_path / "s.html").read_text()
    assert page.count("<h2>Smooth reliability diagrams</h2>") == 1
    assert page.count('aria-label="Smooth reliability diagram of ') == 2
    assert "CORP reliability" not in page
    (curves,) = seen
    assert list(curves) == ["smooth"] and list(curves["smooth"]) == ["uncalibrated", "temperature"]
    for drawn in curves["smooth"].values():  # each with its band (the library's, below)
        assert drawn.low is not None and drawn.confidence_level == 0.95
    assert DIAGRAM_RESAMPLES == 100 and CURVES["smooth"].keywords == {"n_resamples": 100}


def test_the_curves_are_the_librarys_on_the_test_rows(saved, tmp_path, monkeypatch):
    _, logits, labels = saved
    fit, test = logits[:400], logits[400:]
    np.savez(tmp_path / "fit.npz", logits=fit, labels=labels[:400])
    np.savez(tmp_path / "test.npz", logits=test, labels=labels[400:])
    seen = _pages(monkeypatch)
    command = ["report", str(tmp_path / "test.npz"), "--logits", "--method", "temperature"]
    command += ["--fit-on", str(tmp_path / "fit.npz"), "--metrics", "CORP,SmoothECE"]
    assert main([*command, "--seed", "7", "--html", str(tmp_path / "r.html")]) == 0
    (curves,) = seen
    assert list(curves) == ["corp", "smooth"]  # in the order of --metrics
    model = TemperatureScaling().fit(fit, labels[:400])
    calibrated = model.predict_proba(test)
    expected = {
        ("corp", "uncalibrated"): corp_reliability(
            test, labels[400:], logits=True, random_state=7
        ),
        ("corp", "temperature"): corp_reliability(calibrated, labels[400:], random_state=7),
        ("smooth", "uncalibrated"): smooth_reliability_curve(
            test, labels[400:], logits=True, n_resamples=100, random_state=7
        ),
        ("smooth", "temperature"): smooth_reliability_curve(
            calibrated, labels[400:], n_resamples=100, random_state=7
        ),
    }
    for (diagram, method), curve in expected.items():
        drawn = curves[diagram][method]
        if diagram == "corp":
            assert_array_equal(drawn.recalibrated, curve.recalibrated)
            assert_array_equal(drawn.band_low, curve.band_low)
            assert drawn.decomposition == curve.decomposition
        else:
            assert_array_equal(drawn.accuracy, curve.accuracy)
            assert_array_equal(drawn.low, curve.low)
            assert drawn.value == curve.value
    page = (tmp_path / "r.html").read_text()
    assert page.index("<h2>CORP reliability diagrams</h2>") < page.index(
        "<h2>Smooth reliability diagrams</h2>"
    )


def test_no_curve_is_computed_without_a_figure_to_draw_it(saved, monkeypatch, capsys):
    folder, _, _ = saved
    called = []
    monkeypatch.setitem(CURVES, "smooth", lambda *args, **kwargs: called.append(1))
    _report(folder, "--metrics", "ECE,SmoothECE", "--format", "json")
    assert called == [] and '"SmoothECE"' in capsys.readouterr().out


def _pixels(path):
    return matplotlib.image.imread(path)


def test_the_plot_has_a_column_per_diagram_and_a_panel_per_method(saved, tmp_path):
    folder, _, _ = saved
    _report(folder, "--metrics", "ECE", "--plot", str(tmp_path / "bins.png"))
    _report(folder, "--metrics", "ECE,SmoothECE", "--plot", str(tmp_path / "smooth.png"))
    _report(folder, "--metrics", "CORP,SmoothECE", "--plot", str(tmp_path / "both.png"))
    bins, smooth, both = (_pixels(tmp_path / f"{name}.png") for name in ("bins", "smooth", "both"))
    assert smooth.shape[1] == 2 * bins.shape[1] and both.shape[1] == 3 * bins.shape[1]
    assert smooth.shape[0] == both.shape[0] >= bins.shape[0]  # a panel per method: 2 x 4.6 in
    for image in (bins, smooth, both):
        right = image[:, -bins.shape[1] :, :3]
        assert right.std() > 0.05  # drawn, not blank


def test_seed_seeds_the_bands_of_a_report_without_a_method(saved, tmp_path, monkeypatch):
    folder, logits, labels = saved
    seen = _pages(monkeypatch)
    command = ["report", str(folder / "z.npz"), "--logits", "--metrics", "CORP"]
    assert main([*command, "--seed", "4", "--html", str(tmp_path / "a.html")]) == 0
    (curves,) = seen
    expected = corp_reliability(logits, labels, logits=True, random_state=4)
    assert_array_equal(curves["corp"]["uncalibrated"].band_high, expected.band_high)
    assert curves["corp"]["uncalibrated"].pvalue == expected.pvalue
