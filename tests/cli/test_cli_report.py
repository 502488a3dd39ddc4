"""``calibration-toolbox report``: methods, metrics by name, per class, intervals, formats.

In-process through ``main([...])`` with capsys (the subprocess runs are in test_cli.py and
test_cli_commands.py): every number is compared with the API's own call.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import (
    ECE,
    GCE,
    KSCE,
    SCE,
    IsotonicCalibration,
    Scores,
    SmoothECE,
    TemperatureScaling,
    ToprCE,
    VectorScaling,
    brier_score,
    corp_decomposition,
    multicalibration_error,
    negative_log_likelihood,
    refinement_decomposition,
)
from calibration_toolbox.cli import main
from calibration_toolbox.cli._metrics import METRICS, parse_metrics
from calibration_toolbox.stats import bootstrap
from tests.conftest import synthetic_example


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """600 rows of the example's probabilities and logits, and 300 more to fit on."""
    folder = tmp_path_factory.mktemp("report")
    example = synthetic_example()
    np.savez(folder / "p.npz", probs=example.prob[:600], labels=example.labels[:600])
    np.savez(folder / "z.npz", logits=example.logits[:600], labels=example.labels[:600])
    np.savez(folder / "val.npz", probs=example.prob[600:900], labels=example.labels[600:900])
    np.savez(folder / "three.npz", probs=np.full((4, 3), 1 / 3), labels=np.arange(4) % 3)
    return folder


def _json(capsys, *args) -> dict:
    assert main(["report", *map(str, args), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return json.loads(captured.out)


def _error(capsys, *args) -> str:
    """The one line on stderr of a refused command line (exit 2, nothing on stdout)."""
    assert main(["report", *map(str, args)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibration-toolbox: error: "), lines
    assert "Traceback" not in captured.err and "`" not in lines[0]
    return lines[0]


def seeded_split(n: int, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The documented split, a loop in Python integers: row i is fitted on when the i-th
    output of SplitMix64 seeded with ``seed``, as a number in [0, 1), is below ``fraction``.
    """
    mask64 = 2**64 - 1
    fit = []
    for row in range(n):
        z = (seed + (row + 1) * 0x9E3779B97F4A7C15) & mask64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask64
        fit.append(((z ^ (z >> 31)) >> 11) / 2**53 < fraction)
    fit = np.array(fit)
    return np.flatnonzero(fit), np.flatnonzero(~fit)


def test_the_split_oracle_is_splitmix64():
    # The first output of SplitMix64 seeded with 0 is 0xE220A8397B1DCDAF (0.8833 of 2**64):
    # row 0 is a test row below that fraction and a fit row above it.
    assert 0.8833 < 0xE220A8397B1DCDAF / 2**64 < 0.8834
    assert seeded_split(1, 0.8833, 0)[0].size == 0 and seeded_split(2, 0.8834, 0)[0][0] == 0


def test_the_document_has_the_shared_shape(files, capsys):
    report = _json(capsys, files / "p.npz", "--method", "temperature", "--bins", "10")
    for key in ("tool", "version", "command", "versions", "file", "input", "n_classes"):
        assert key in report
    assert report["command"][:2] == ["calibration-toolbox", "report"]
    assert set(report["versions"]) == {"python", "numpy", "scipy"}
    assert (report["input"], report["n_classes"], report["bins"]) == ("probabilities", 10, 10)
    fit, test = seeded_split(600, 0.5, 0)
    assert (report["n"], report["n_fit"]) == (len(test), len(fit)) == (277, 323)  # about half
    assert report["fit"] == "a seeded half (--split 0.5 --seed 0)"
    assert report["metrics"] == ["ECE", "MCE", "RMSCE", "SCE", "ACE", "TACE", "Brier", "NLL"]
    assert [entry["method"] for entry in report["results"]] == ["uncalibrated", "temperature"]
    for entry in report["results"]:
        assert {"method", "parameters", "accuracy", "metrics", "reliability"} <= set(entry)
        assert set(entry["reliability"][0]) == {"low", "high", "count", "confidence", "accuracy"}
    assert report["conversions"] == [
        "temperature: fitted on the log-probabilities log(p) (zeros floored at 1e-300)"
    ]


def test_each_method_is_the_apis_fit_on_the_seeded_split(files, capsys):
    example = synthetic_example()
    prob, labels = example.prob[:600], example.labels[:600]
    report = _json(
        capsys, files / "p.npz", "--method", "temperature,vector,isotonic", "--split", "0.4",
        "--seed", "3",
    )  # fmt: skip
    fit, test = seeded_split(600, 0.4, 3)
    assert (report["n"], report["n_fit"]) == (len(test), len(fit)) == (341, 259)
    log_prob = np.log(prob.astype(np.float64))
    models = {
        "temperature": (TemperatureScaling().fit(log_prob[fit], labels[fit]), log_prob),
        "vector": (VectorScaling().fit(log_prob[fit], labels[fit]), log_prob),
        "isotonic": (IsotonicCalibration().fit(prob[fit], labels[fit]), prob),
    }
    for entry in report["results"][1:]:
        model, inputs = models[entry["method"]]
        calibrated = model.predict_proba(inputs[test])
        assert_allclose(entry["metrics"]["ECE"], ECE(calibrated, labels[test]), rtol=1e-12)
        assert_allclose(entry["metrics"]["SCE"], SCE(calibrated, labels[test]), rtol=1e-12)
        nll = negative_log_likelihood(calibrated, labels[test])
        assert_allclose(entry["metrics"]["NLL"], nll, rtol=1e-12)
        accuracy = np.mean(calibrated.argmax(axis=1) == labels[test])
        assert_allclose(entry["accuracy"], accuracy, rtol=1e-12)
    temperature = report["results"][1]["parameters"]["temperature"]
    assert_allclose(temperature, models["temperature"][0].temperature_, rtol=1e-12)


def test_logits_go_to_the_probability_methods_as_softmax_and_it_is_said(files, capsys):
    example = synthetic_example()
    logits, labels = example.logits[:600], example.labels[:600]
    report = _json(capsys, files / "z.npz", "--logits", "--method", "isotonic,matrix")
    assert report["conversions"] == [
        "isotonic: fitted on the probabilities softmax(z) of the logits (--logits)"
    ]
    fit, test = seeded_split(600, 0.5, 0)
    softmax = np.exp(logits - logits.max(axis=1, keepdims=True))
    softmax /= softmax.sum(axis=1, keepdims=True)
    model = IsotonicCalibration().fit(softmax[fit], labels[fit])
    expected = ECE(model.predict_proba(softmax[test]), labels[test])
    assert_allclose(report["results"][1]["metrics"]["ECE"], expected, rtol=1e-9)
    assert main(["report", str(files / "z.npz"), "--logits", "--method", "isotonic"]) == 0
    assert "isotonic: fitted on the probabilities softmax(z)" in capsys.readouterr().out


def test_fit_on_a_validation_file(files, capsys):
    example = synthetic_example()
    report = _json(
        capsys, files / "p.npz", "--method", "temperature", "--fit-on", files / "val.npz"
    )
    assert (report["n"], report["n_fit"]) == (600, 300)
    assert report["fit"] == f"{files / 'val.npz'} (--fit-on)"
    scaler = TemperatureScaling().fit(np.log(example.prob[600:900]), example.labels[600:900])
    assert_allclose(report["results"][1]["parameters"]["temperature"], scaler.temperature_)


def test_every_metric_by_name_is_the_apis(files, capsys, tmp_path):
    prob, labels = synthetic_example().prob[:600], synthetic_example().labels[:600]
    # the metrics over groups of rows (MultiCal) take the groups of --groups
    np.savez(tmp_path / "g.npz", probs=prob, labels=labels, region=np.arange(600) % 3)
    names = [*METRICS, "top2ce"]
    report = _json(
        capsys, tmp_path / "g.npz", "--metrics", ",".join(names), "--bins", "12",
        "--groups", "region",
    )  # fmt: skip
    values = report["results"][0]["metrics"]
    every = parse_metrics(",".join(METRICS))  # CORP: CORP_MCB, CORP_DSC, CORP_UNC
    reported = [metric for metric in every if not metric.groups]
    assert list(values) == [*(metric.name for metric in reported), "Top2CE"]
    across = [metric for metric in every if metric.groups]
    assert across and list(report["groups"]["across"]) == [metric.name for metric in across]
    multicalibration = multicalibration_error(prob, labels, np.arange(600) % 3)
    assert report["groups"]["across"]["MultiCal_sigma"] == multicalibration.sigmas
    expected = {
        "ECE": ECE(prob, labels, bins=12),
        "SCE": SCE(prob, labels, bins=12),
        "Top2CE": ToprCE(prob, labels, bins=12, r=2),
        "DebiasedL2": GCE(prob, labels, 12, class_conditional=False, norm=2, debias=True),
        "KSCE": KSCE(prob, labels),
        "SmoothECE": SmoothECE(prob, labels),
        "Brier": brier_score(prob, labels),
    }
    for name, value in expected.items():
        assert_allclose(values[name], value, rtol=1e-12, err_msg=name)
    corp = corp_decomposition(prob, labels)
    expected = {"CORP_MCB": corp.miscalibration, "CORP_DSC": corp.discrimination}
    for name, value in {**expected, "CORP_UNC": corp.uncertainty}.items():
        assert_allclose(values[name], value, rtol=1e-12, err_msg=name)
    split = refinement_decomposition(prob, labels)
    assert_allclose(values["Refine_CAL"], split.calibration, rtol=1e-12)
    assert_allclose(values["Refine_REF"], split.refinement, rtol=1e-12)
    for metric in reported:
        assert_allclose(
            values[metric.name], metric(prob, labels, bins=12, logits=False), rtol=1e-12
        )


def test_an_unknown_metric_or_method_lists_the_valid_names(files, capsys):
    line = _error(capsys, files / "p.npz", "--metrics", "ECE,Bogus")
    assert "unknown metric 'Bogus'" in line and "SmoothECE" in line and "Top<r>CE" in line
    line = _error(capsys, files / "p.npz", "--method", "temperature,bogus")
    assert "unknown method 'bogus'" in line and "dirichlet" in line


def test_per_class_is_each_class_ece_and_recall(files, capsys):
    prob, labels = synthetic_example().prob[:600], synthetic_example().labels[:600]
    report = _json(capsys, files / "p.npz", "--per-class", "--bins", "10")
    rows = report["results"][0]["per_class"]
    assert [row["class"] for row in rows] == list(range(10))
    predicted = prob.argmax(axis=1)
    for k, row in enumerate(rows):
        assert row["count"] == np.sum(labels == k)
        # Independently: the ECE of the scores P(y = k) against y == k.
        expected = ECE(Scores(prob[:, k]), (labels == k).astype(int), bins=10)
        assert_allclose(row["ECE"], expected, rtol=1e-12)
        assert_allclose(row["accuracy"], np.mean(predicted[labels == k] == k), rtol=1e-12)
    assert_allclose(np.mean([row["ECE"] for row in rows]), SCE(prob, labels, bins=10), rtol=1e-12)


def test_ci_is_the_seeded_bootstrap(files, capsys):
    prob, labels = synthetic_example().prob[:600], synthetic_example().labels[:600]
    args = ("--metrics", "ECE,NLL", "--ci", "--n-resamples", "40", "--seed", "5")
    report = _json(capsys, files / "p.npz", *args)
    intervals = report["results"][0]["intervals"]
    for name, metric in (("ECE", ECE), ("NLL", negative_log_likelihood)):
        options = {"bins": 15} if name == "ECE" else {}
        result = bootstrap(metric, prob, labels, n_resamples=40, random_state=5, **options)
        assert_allclose(intervals[name], list(result.confidence_interval), rtol=1e-12)
    assert main(["report", str(files / "p.npz"), *args]) == 0
    assert "95 % CI" in capsys.readouterr().out


def test_csv_parses_back_to_the_json_numbers(files, capsys):
    args = [str(files / "p.npz"), "--method", "temperature", "--per-class", "--ci"]
    args += ["--n-resamples", "20", "--metrics", "ECE,Brier"]
    report = _json(capsys, *args)
    assert main(["report", *args, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert list(rows[0]) == ["method", "class", "metric", "value", "low", "high"]
    by_key = {(row["method"], row["class"], row["metric"]): row for row in rows}
    for entry in report["results"]:
        method = entry["method"]
        assert float(by_key[method, "", "accuracy"]["value"]) == entry["accuracy"]
        for name, value in entry["metrics"].items():
            row = by_key[method, "", name]
            assert float(row["value"]) == value
            assert [float(row["low"]), float(row["high"])] == entry["intervals"][name]
        for per_class in entry["per_class"]:
            row = by_key[method, str(per_class["class"]), "ECE"]
            assert float(row["value"]) == per_class["ECE"]


# Histogram binning of 10 classes fitted on 323 rows loses accuracy, and says so.
@pytest.mark.filterwarnings("always:histogram binning lowers the accuracy:UserWarning")
def test_the_terminal_diagram_fits_80_columns_and_leaves_empty_bins_empty(files, capsys):
    assert main(["report", str(files / "p.npz"), "--method", "temperature,platt"]) == 0
    text = capsys.readouterr().out
    section = text.split("top-label reliability, uncalibrated:\n")[1].split("\n\n")[0]
    lines = section.splitlines()
    assert len(lines) == 1 + 15  # the header, then every bin
    assert all(len(line) <= 80 for line in lines)
    assert "top-label reliability, temperature:" in text and "reliability, platt:" in text
    empty = [line for line in lines[1:] if line.split()[2] == "0"]
    assert empty  # the example's probabilities leave the lowest bins empty
    for line in empty:
        assert line.endswith("|" + " " * 24 + "|") and "0.0000" not in line
    full = [line for line in lines[1:] if line.split()[2] != "0"]
    for line in full:
        conf, acc = (float(value) for value in line.split()[3:5])
        bar = line[line.index("|") + 1 : -1]
        assert bar.count("#") + bar.count("+") == round(acc * 24)
        assert bar.count("#") + bar.count("-") == round(conf * 24)
    # The metric table wraps into blocks of 80 columns, however many methods.
    assert (
        main(
            [
                "report",
                str(files / "p.npz"),
                "--method",
                "temperature,platt,beta,isotonic,histogram",
            ]
        )
        == 0
    )
    assert max(map(len, capsys.readouterr().out.splitlines()[1:])) <= 80


REFUSED = {
    "--split with --fit-on": (
        ["--method", "temperature", "--split", "0.5", "--fit-on", "val.npz"],
        "--split and --fit-on both choose",
    ),
    "--split without --method": (["--split", "0.3"], "--split chooses the rows to fit on"),
    "--recalibrate with --method": (["--recalibrate", "--method", "vector"], "--recalibrate is"),
    "--seed alone": (
        ["--seed", "3"],
        "--seed seeds --split, --method auto.s folds, --ci and the bands of the CORP",
    ),
    "--seed, a diagram without a figure": (
        ["--seed", "3", "--metrics", "SmoothECE"],
        "--seed seeds --split, --method auto.s folds, --ci and the bands",
    ),
    "--n-resamples without --ci": (["--n-resamples", "9"], "--n-resamples is the number"),
    "--per-class with --scores": (["--scores", "--per-class"], "--per-class needs one column"),
    "--json with --format csv": (["--json", "--format", "csv"], "--json is --format json"),
    "--plot to a missing folder": (["--plot", "no/such/d.png"], "the folder .* does not exist"),
    "--plot as .jpg": (["--plot", "d.jpg"], "must end in .png, .svg, .pdf"),
    "--split 1": (
        ["--method", "platt", "--split", "1"],
        r"strictly between 0 and 1, in \(0, 1\); got '1'",
    ),
    "--split 1.0": (
        ["--method", "platt", "--split", "1.0"],
        r"--split: must be a number strictly between 0 and 1, in \(0, 1\); got '1.0'",
    ),
    "--fit-on with other columns": (
        ["--method", "temperature", "--fit-on", "three.npz"],
        r"three.npz \(--fit-on\) holds 3 columns of predictions but .* holds 10 columns",
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused_option_combinations(case, files, capsys, monkeypatch):
    monkeypatch.chdir(files)
    args, expected = REFUSED[case]
    line = _error(capsys, "p.npz", *args)
    assert re.search(expected, line), line
    assert not list(files.glob("*.png")) and not list(files.glob("*.jpg"))


def test_class_wise_metrics_with_scores_are_refused_when_asked_for(tmp_path, capsys):
    rng = np.random.default_rng(2)
    np.savez(tmp_path / "s.npz", confidence=rng.random(50), correct=rng.integers(0, 2, 50))
    line = _error(capsys, tmp_path / "s.npz", "--scores", "--metrics", "ECE,SCE,Top2CE")
    assert "--metrics SCE,Top2CE: class-wise, they need one column per class" in line
    report = _json(capsys, tmp_path / "s.npz", "--scores", "--method", "isotonic")
    assert report["input"] == "scores"
    assert report["metrics"] == ["ECE", "MCE", "RMSCE", "Brier", "NLL"]
    assert set(report["results"][1]) >= {"mean_target", "mean_score"}


def test_plot_writes_a_png_that_is_not_blank(files, capsys):
    image = pytest.importorskip("matplotlib.image")
    pytest.importorskip("matplotlib").use("Agg")
    target = files / "diagram.png"
    assert (
        main(["report", str(files / "p.npz"), "--method", "temperature", "--plot", str(target)])
        == 0
    )
    assert capsys.readouterr().err == ""
    pixels = image.imread(target)
    assert pixels.shape[0] > 300 and pixels.shape[1] > 300
    assert pixels[..., :3].std() > 0.05  # lines and text on white
    assert not [path for path in files.iterdir() if path.name.endswith(".tmp")]


def test_html_page_is_written_atomically(files, capsys):
    pytest.importorskip("calibration_toolbox._html")
    target = files / "report.html"
    assert (
        main(
            [
                "report",
                str(files / "p.npz"),
                "--method",
                "temperature",
                "--per-class",
                "--html",
                str(target),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert "<html" in target.read_text(encoding="utf-8").lower()


def test_plot_without_matplotlib_says_how_to_install_it(files, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # import fails
    line = _error(capsys, files / "p.npz", "--plot", files / "never.png")
    assert 'pip install "calibration-toolbox[plot]"' in line
    assert not (files / "never.png").exists()
