"""The command line, the file loader, the embedded example and the README's examples."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import ECE, SCE, TemperatureScaling
from calibration_toolbox.cli import main
from calibration_toolbox.datasets import load_example, make_overconfident

README = Path(__file__).resolve().parents[1] / "README.md"


def test_report_on_the_embedded_example_without_arguments(capsys):
    assert main([]) == 0
    text = capsys.readouterr().out
    assert "embedded example" in text and "ECE" in text and "T = 2.0" in text
    assert main(["report", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    example = load_example()
    test = example.test_rows
    assert_allclose(
        report["before"]["ECE"],
        ECE(example.logits[test], example.labels[test], logits=True),
        rtol=1e-15,
    )
    assert report["after"]["ECE"] < report["before"]["ECE"] / 5
    assert abs(report["temperature"] - 2.0) < 0.1


def test_report_on_files(tmp_path, capsys):
    prob = load_example().prob[:400]
    labels = load_example().labels[:400]
    np.savez(tmp_path / "p.npz", probs=prob, labels=labels)
    np.save(tmp_path / "p.npy", prob)
    np.save(tmp_path / "y.npy", labels)
    header = "p0,p1,p2,p3,p4,p5,p6,p7,p8,p9,label"
    np.savetxt(
        tmp_path / "p.csv",
        np.column_stack([prob, labels]),
        delimiter=",",
        header=header,
        comments="",
    )
    results = []
    for args in (["p.npz"], ["p.npy", "--labels", str(tmp_path / "y.npy")], ["p.csv"]):
        assert main(["report", str(tmp_path / args[0]), *args[1:], "--json"]) == 0
        results.append(json.loads(capsys.readouterr().out)["before"])
    for result in results:
        assert_allclose(result["SCE"], SCE(prob, labels), rtol=1e-12)


def test_report_errors_are_messages_not_tracebacks(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing.npz")]) == 2
    assert "missing.npz: no such file" in capsys.readouterr().err
    np.savez(tmp_path / "bad.npz", probs=np.full((5, 3), 0.5), labels=np.zeros(5, int))
    assert main(["report", str(tmp_path / "bad.npz")]) == 2
    assert "must sum to 1" in capsys.readouterr().err


def test_synthetic_generator_has_the_stated_temperature():
    logits, labels = make_overconfident(20_000, 5, temperature=3.0, seed=4)
    assert abs(TemperatureScaling().fit(logits, labels).temperature_ - 3.0) < 0.1


def test_readme_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2
    for block in blocks:
        exec(compile(block, str(README), "exec"), {})


def test_readme_commands_are_the_ci_commands():
    text = README.read_text()
    assert "pip install . && calibration-toolbox report" in text
    assert 'pip install ".[test]" && pytest' in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'pip install ".[test]" && pytest' in ci


@pytest.mark.parametrize("notebook", sorted((README.parent / "notebooks").glob("*.ipynb")))
def test_notebooks_run(notebook, tmp_path, monkeypatch):
    # The notebooks are stored executed; their code must still run against this version.
    monkeypatch.chdir(tmp_path)
    cells = json.loads(notebook.read_text())["cells"]
    namespace = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), str(notebook), "exec"), namespace)
