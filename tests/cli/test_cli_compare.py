"""``calibration-toolbox compare A B``: two models on the same rows, every number the API's.

In-process through ``main([...])`` with capsys.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import softmax

from calibration_toolbox import ECE, Scores, brier_score, negative_log_likelihood
from calibration_toolbox.cli import main
from calibration_toolbox.stats import paired_bootstrap, paired_score_test
from tests.conftest import DATA_DIR, synthetic_example


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """600 rows of the example: A its probabilities, B those of temperature 2 (calibrated)."""
    folder = tmp_path_factory.mktemp("compare")
    example = synthetic_example()
    logits, labels = example.logits[:600], example.labels[:600]
    calibrated = softmax(logits / 2.0, axis=1)
    np.savez(folder / "a.npz", probs=softmax(logits, axis=1), labels=labels)
    np.savez(folder / "b.npz", probs=calibrated, labels=labels)
    np.savez(folder / "za.npz", logits=logits, labels=labels)
    np.savez(folder / "zb.npz", logits=logits / 2.0, labels=labels)
    np.savez(folder / "short.npz", probs=calibrated[:500], labels=labels[:500])
    np.savez(folder / "other.npz", probs=calibrated, labels=np.roll(labels, 1))
    np.savez(folder / "three.npz", probs=np.full((600, 3), 1 / 3), labels=labels % 3)
    np.save(folder / "a.npy", softmax(logits, axis=1))
    np.save(folder / "b.npy", calibrated)
    np.save(folder / "y.npy", labels)
    np.savez(folder / "sa.npz", scores=softmax(logits, axis=1).max(axis=1), correct=labels % 2)
    np.savez(folder / "sb.npz", scores=calibrated.max(axis=1), correct=labels % 2)
    return folder


def _json(capsys, *args) -> dict:
    assert main(["compare", *map(str, args), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return json.loads(captured.out)


def _error(capsys, *args) -> str:
    """The one line on stderr of a refused command line (exit 2, nothing on stdout)."""
    assert main(["compare", *map(str, args)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibration-toolbox: error: "), lines
    assert "Traceback" not in captured.err
    return lines[0]


def _arrays(folder, name):
    with np.load(folder / name) as data:
        return data["probs"], data["labels"]


def by_name(entries, key):
    return {entry[key]: entry for entry in entries}


def test_every_number_is_the_api_call(files, capsys):
    prob_a, labels = _arrays(files, "a.npz")
    prob_b, _ = _arrays(files, "b.npz")
    document = _json(
        capsys,
        files / "a.npz",
        files / "b.npz",
        "--metrics",
        "ECE,Brier,NLL",
        "--ci",
        "--n-resamples",
        "50",
        "--seed",
        "3",
    )
    assert document["n"] == 600 and document["n_classes"] == 10 and document["bins"] == 15
    assert (document["n_resamples"], document["seed"], document["confidence_level"]) == (
        50,
        3,
        0.95,
    )
    metrics = by_name(document["metrics"], "metric")
    for name, metric in (("ECE", ECE), ("Brier", brier_score), ("NLL", negative_log_likelihood)):
        options = {"bins": 15} if metric is ECE else {}
        expected = paired_bootstrap(
            metric, prob_a, prob_b, labels, n_resamples=50, random_state=3, **options
        )
        entry = metrics[name]
        assert entry["A"] == pytest.approx(expected.estimate_a, rel=1e-12)
        assert entry["B"] == pytest.approx(expected.estimate_b, rel=1e-12)
        assert entry["difference"] == pytest.approx(expected.difference, rel=1e-12)
        assert_allclose(entry["interval"], expected.confidence_interval, rtol=1e-12)
        assert entry["pvalue"] == expected.pvalue
    # B (temperature 2: the example's true temperature) is the better calibrated one.
    assert metrics["ECE"]["better"] == "B"
    assert by_name(document["score_tests"], "score")["NLL"]["better"] == "B"
    tests = by_name(document["score_tests"], "score")
    for name, score in (("Brier", "brier"), ("NLL", "log")):
        expected = paired_score_test(prob_a, prob_b, labels, score=score)
        entry = tests[name]
        assert entry["statistic"] == pytest.approx(expected.statistic, rel=1e-12)
        assert entry["pvalue"] == pytest.approx(expected.pvalue, rel=1e-12)
        assert entry["difference"] == pytest.approx(expected.mean_difference, rel=1e-12)
        assert_allclose(entry["interval"], expected.confidence_interval, rtol=1e-12)
        low, high = expected.confidence_interval
        assert entry["better"] == ("A" if high < 0 else "B" if low > 0 else None)
    assert document["models"]["A"]["accuracy"] == document["models"]["B"]["accuracy"]
    assert len(document["reliability"]["A"]) > 0


def test_text_says_which_is_better(files, capsys):
    assert main(["compare", str(files / "a.npz"), str(files / "b.npz"), "--metrics", "ECE"]) == 0
    out = capsys.readouterr().out
    assert "600 rows with the same labels, 10 classes" in out
    assert "--ci adds the paired bootstrap interval" in out
    assert out.rstrip().endswith("paired t tests: Brier B, NLL B.")
    assert (
        main(["compare", str(files / "a.npz"), str(files / "b.npz"), "--metrics", "ECE", "--ci"])
        == 0
    )
    out = capsys.readouterr().out
    assert "better at the 95 % level: metrics: ECE B; paired t tests" in out


def test_a_file_against_itself_differs_by_zero(files, capsys):
    document = _json(capsys, files / "a.npz", files / "a.npz", "--metrics", "ECE,MCE", "--ci")
    for entry in document["metrics"]:
        assert entry["difference"] == 0.0
        assert entry["interval"] == [0.0, 0.0]
        assert entry["pvalue"] == 1.0
        assert entry["better"] is None
    for entry in document["score_tests"]:
        assert (entry["statistic"], entry["pvalue"], entry["better"]) == (0.0, 1.0, None)


def test_logits_npy_with_labels_and_scores(files, capsys):
    logits = _json(capsys, files / "za.npz", files / "zb.npz", "--logits", "--metrics", "NLL")
    _, labels = _arrays(files, "a.npz")
    with np.load(files / "za.npz") as data:
        exact = negative_log_likelihood(data["logits"], labels, logits=True)
    assert logits["metrics"][0]["A"] == pytest.approx(exact, rel=1e-12)
    assert logits["input"] == "logits"
    npy = _json(capsys, files / "a.npy", files / "b.npy", "--labels", files / "y.npy")
    npz = _json(capsys, files / "a.npz", files / "b.npz")
    assert npy["metrics"] == npz["metrics"]
    scores = _json(capsys, files / "sa.npz", files / "sb.npz", "--scores", "--metrics", "ECE")
    with np.load(files / "sa.npz") as data:
        expected = ECE(Scores(data["scores"]), data["correct"])
    assert scores["metrics"][0]["A"] == pytest.approx(expected, rel=1e-12)
    assert "mean_target" in scores["models"]["A"]


def test_bins_auto_is_resolved_once(files, capsys):
    document = _json(
        capsys, files / "a.npz", files / "b.npz", "--bins", "auto", "--metrics", "ECE"
    )
    assert document["bins"] == 9  # the cube-root rule: ceil(600 ** (1/3))
    prob_a, labels = _arrays(files, "a.npz")
    assert document["metrics"][0]["A"] == pytest.approx(ECE(prob_a, labels, bins=9), rel=1e-12)


@pytest.mark.parametrize(
    ("second", "options", "expected"),
    [
        ("short.npz", [], "holds 500 rows and A"),
        ("other.npz", [], "differ at 534 rows, the first row 0 (3 against 0)"),
        ("three.npz", [], "holds 3 columns of predictions but A"),
        ("b.npz", ["--seed", "1"], "--seed seeds the resamples of --ci"),
        ("b.npz", ["--n-resamples", "9"], "--n-resamples is the number of bootstrap"),
        ("b.npz", ["--format", "csv"], "argument --format: invalid choice"),
        ("b.npz", ["--metrics", "ECX"], "unknown metric 'ECX'"),
        ("b.npz", ["--html", "a.npz"], "must end in .html"),
    ],
)
def test_refusals_are_one_line(files, capsys, second, options, expected):
    options = [str(files / option) if option.endswith(".npz") else option for option in options]
    line = _error(capsys, files / "a.npz", files / second, *options)
    assert expected in line, line


def test_html_to_an_input_or_a_missing_folder_is_refused(files, capsys):
    page = files / "a.html"
    line = _error(capsys, files / "a.npz", files / "b.npz", "--html", files / "missing" / "p.html")
    assert "the folder" in line and "does not exist" in line
    assert not page.exists()


def test_html_page_overlays_both_diagrams(files, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    page = tmp_path / "compare.html"
    assert (
        main(
            [
                "compare",
                str(files / "a.npz"),
                str(files / "b.npz"),
                "--metrics",
                "ECE",
                "--ci",
                "--n-resamples",
                "20",
                "--html",
                str(page),
            ]
        )
        == 0
    )
    capsys.readouterr()
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert text.count("<svg") == 2  # one reliability figure, one histogram: both models on each
    assert 'aria-label="Reliability diagrams of A: a.npz and B: b.npz"' in text
    assert "Paired score tests" in text and "<th>ECE</th>" in text
    assert "http://" not in text.replace("http://www.w3.org", "")


def test_render_comparison_checks_its_arguments(files):
    pytest.importorskip("matplotlib")
    from calibration_toolbox._html import render_comparison

    with pytest.raises(TypeError, match="`comparison` must be the document"):
        render_comparison([], {})
    with pytest.raises(ValueError, match=r"no table for \['B'\]"):
        prob, labels = _arrays(files, "a.npz")
        from calibration_toolbox import calibration_table

        render_comparison({"models": {}}, {"A": calibration_table(prob, labels)})


def test_real_files_wrn_against_vgg(capsys):
    paths = DATA_DIR / "wideresnet-16-4-cifar-10.npz", DATA_DIR / "vgg16-cifar-10.npz"
    if not all(path.exists() for path in paths):
        pytest.skip("real predictions not found")
    document = _json(capsys, *paths, "--metrics", "ECE", "--ci")
    entry = document["metrics"][0]
    assert entry["A"] == pytest.approx(0.0537162954211235, rel=1e-12)
    assert entry["B"] == pytest.approx(0.0397800668567419, rel=1e-12)
    assert entry["better"] == "B"
    assert {test["score"]: test["better"] for test in document["score_tests"]} == {
        "Brier": "B",
        "NLL": "B",
    }
