"""Selective prediction on the command line (``--metrics AURC,...``) and its HTML section."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from numpy.testing import assert_allclose

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


# -- the HTML section (the lead wires it into render_report) --------------------------------
matplotlib = pytest.importorskip("matplotlib")
from calibration_toolbox import _html  # noqa: E402


def test_the_risk_coverage_section_draws_every_method_in_one_figure():
    rng = np.random.default_rng(3)
    scores = rng.uniform(0.3, 1.0, size=400)
    correct = (rng.uniform(size=400) < scores).astype(int)
    curves = {
        "uncalibrated": risk_coverage_curve(Scores(scores), correct),
        "a<b>&method": risk_coverage_curve(Scores(scores**2), correct),
    }
    section = _html._risk_coverage_section(curves, _html._Figures())
    assert section.startswith("<h2>Risk-coverage curves</h2>")
    assert section.count("<figure>") == 1 and section.count("<svg ") == 1
    assert 'aria-label="Risk-coverage curves of uncalibrated and a&lt;b&gt;&amp;method"' in section
    assert "<b>" not in section and "<script" not in section
    assert _html._risk_coverage_section({}, _html._Figures()) == ""
    with pytest.raises(TypeError, match="`curves` must map each method to a RiskCoverageCurve"):
        _html._risk_coverage_section({"uncalibrated": [0.1]}, _html._Figures())
