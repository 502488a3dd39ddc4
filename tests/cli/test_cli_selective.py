"""Selective prediction on the command line (``--metrics AURC,...``) and its HTML section."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from calibration_toolbox import AUGRC, AURC, EAURC, Scores, confidence_auroc, risk_coverage_curve
from calibration_toolbox.cli import main
from tests.conftest import synthetic_example

NAMES = {"AURC": AURC, "EAURC": EAURC, "AUGRC": AUGRC, "ConfAUROC": confidence_auroc}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("selective")
    example = synthetic_example()
    np.savez(folder / "p.npz", probs=example.prob[:600], labels=example.labels[:600])
    confidence = example.prob[:600].max(axis=1)
    correct = (example.prob[:600].argmax(axis=1) == example.labels[:600]).astype(int)
    np.savez(folder / "s.npz", probs=confidence, labels=correct)
    return folder, example


@pytest.mark.parametrize("form", ["probabilities", "scores"])
def test_report_gives_the_selective_metrics_by_name(files, capsys, form):
    folder, example = files
    path, extra = (
        (folder / "p.npz", []) if form == "probabilities" else (folder / "s.npz", ["--scores"])
    )
    arguments = ["report", str(path), *extra, "--metrics", "AURC,EAURC,AUGRC,ConfAUROC"]
    assert main([*arguments, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["metrics"] == list(NAMES)
    (entry,) = report["results"]
    prob, labels = example.prob[:600], example.labels[:600]
    for name, function in NAMES.items():
        assert_allclose(entry["metrics"][name], function(prob, labels), rtol=1e-12)
    assert main(arguments) == 0
    text = capsys.readouterr().out
    for name, function in NAMES.items():
        assert re.search(rf"^{name}\s+{function(prob, labels):.5f}$", text, re.MULTILINE), name


def test_a_misspelt_name_lists_the_selective_ones(files, capsys):
    folder, _ = files
    assert main(["report", str(folder / "p.npz"), "--metrics", "AURCC"]) == 2
    message = capsys.readouterr().err
    assert "unknown metric 'AURCC'" in message
    assert all(name in message for name in NAMES)


# -- the HTML section and the --plot column -------------------------------------------------
image = pytest.importorskip("matplotlib.image")

from calibration_toolbox._html import render_report  # noqa: E402
from tests.cli.test_html import build_report  # noqa: E402


def test_the_risk_coverage_section_draws_every_method_in_one_figure():
    document, tables, _ = build_report()
    rng = np.random.default_rng(3)
    scores = rng.uniform(0.3, 1.0, size=300)
    correct = (rng.uniform(size=300) < scores).astype(int)
    curves = {
        "uncalibrated": risk_coverage_curve(Scores(scores), correct),
        "temperature": risk_coverage_curve(Scores(scores**2), correct),
    }
    page = render_report(document, tables, curves={"risk_coverage": curves})
    section = page[page.index("<h2>Risk-coverage curves</h2>") :]
    section = section[: section.index("<h2>", 5)]
    assert section.count("<figure>") == 1 and section.count("<svg ") == 1
    assert 'aria-label="Risk-coverage curves of uncalibrated and temperature"' in section
    assert "Risk-coverage" not in render_report(document, tables)
    with pytest.raises(TypeError, match=r"`curves`\['risk_coverage'\] must map each method to a"):
        render_report(document, tables, curves={"risk_coverage": {"uncalibrated": [0.1]}})


def test_the_command_line_draws_the_risk_coverage_curves(tmp_path, monkeypatch):
    import calibration_toolbox.cli._files as html  # the page is rendered from there

    rng = np.random.default_rng(4)
    logits = rng.normal(size=(400, 3)) * 3
    labels = rng.integers(0, 3, size=400)
    np.savez(tmp_path / "z.npz", logits=logits, labels=labels)
    seen = []
    render = html.render_report
    monkeypatch.setattr(
        html, "render_report", lambda *a, **k: seen.append(a[3]) or render(*a, **k)
    )
    command = ["report", str(tmp_path / "z.npz"), "--logits", "--metrics", "ECE,AURC"]
    assert main([*command, "--html", str(tmp_path / "r.html")]) == 0
    (curves,) = seen
    expected = risk_coverage_curve(logits, labels, logits=True)
    assert_array_equal(curves["risk_coverage"]["uncalibrated"].risk, expected.risk)
    page = (tmp_path / "r.html").read_text()
    assert page.count('aria-label="Risk-coverage curves of uncalibrated"') == 1
    assert main([*command, "--plot", str(tmp_path / "r.png")]) == 0
    pixels = image.imread(tmp_path / "r.png")
    assert pixels.shape[1] >= 2 * 5.5 * 100 and pixels.shape[0] >= 7.5 * 100  # two columns
    # nothing of a risk-coverage curve is drawn at random: --seed is not asked for
    line = main([*command, "--seed", "3"])
    assert line == 2
