"""The command line, the file loader, the embedded example and the README's examples."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import (
    ACE,
    ECE,
    MCE,
    RMSCE,
    SCE,
    TACE,
    Scores,
    TemperatureScaling,
    brier_score,
    calibration_table,
    cli,
    negative_log_likelihood,
)
from calibration_toolbox.cli import main
from calibration_toolbox.datasets import load_example, make_overconfident
from tests.cli.test_cli_report import seeded_split
from tests.documents import DOCUMENTED_PAGES, GUIDE, README

ROOT = Path(__file__).resolve().parents[2]


def _before(report: dict) -> dict:
    """The uncalibrated entry of a JSON report, its metrics beside accuracy and reliability."""
    return _flat(report["results"][0])


def _after(report: dict) -> dict:
    """The entry of the (one) method of a JSON report, flattened as ``_before``."""
    return _flat(report["results"][1])


def _flat(entry: dict) -> dict:
    return {**entry, **entry["metrics"]}


def _temperature(report: dict) -> float:
    return report["results"][1]["parameters"]["temperature"]


def test_report_on_the_embedded_example_without_arguments(capsys):
    assert main([]) == 0
    text = capsys.readouterr().out
    assert "embedded example" in text and "ECE" in text
    assert main(["report", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    example = load_example()
    fit, test = example.calibration_rows, example.test_rows
    logits, labels = example.logits, example.labels
    assert_allclose(
        _before(report)["ECE"], ECE(logits[test], labels[test], logits=True), rtol=1e-15
    )
    # The report fits temperature scaling on the example's calibration rows.
    scaler = TemperatureScaling().fit(logits[fit], labels[fit])
    assert_allclose(_temperature(report), scaler.temperature_, rtol=1e-12)
    calibrated = scaler.predict_proba(logits[test])
    assert_allclose(_after(report)["ECE"], ECE(calibrated, labels[test]), rtol=1e-12)
    assert _after(report)["NLL"] < _before(report)["NLL"]


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
        results.append(_before(json.loads(capsys.readouterr().out)))
    for result in results:
        assert_allclose(result["SCE"], SCE(prob, labels), rtol=1e-12)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m calibration_toolbox ARGS`` on this checkout, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "calibration_toolbox", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
        check=False,
    )


def _one_stderr_line(run: subprocess.CompletedProcess, kind: str) -> str:
    assert "Traceback" not in run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith(f"calibration-toolbox: {kind}: "), run.stderr
    return lines[0]


def _write_inputs(folder: Path) -> None:
    """The files of the error cases below, in ``folder``."""
    prob = load_example().prob[:10]
    labels = load_example().labels[:10]
    np.savez(folder / "good.npz", probs=prob, labels=labels)
    np.save(folder / "p.npy", prob)
    np.save(folder / "y.npy", labels)
    np.save(folder / "y_short.npy", labels[:6])
    np.save(folder / "y_long.npy", np.r_[labels, labels[:4]])
    np.savez(folder / "cube.npz", probs=prob[:, :, None], labels=labels)
    np.savez(folder / "range.npz", probs=prob, labels=np.r_[labels[:9], 10])
    with_nan = prob.copy()
    with_nan[7, 3] = np.nan
    np.savez(folder / "nan.npz", probs=with_nan, labels=labels)
    np.savez(folder / "sums.npz", probs=np.full((10, 3), 0.5), labels=labels % 3)
    zero_row = np.round(prob, 2)
    zero_row[2] = 0.0
    np.savez(folder / "zero.npz", probs=zero_row, labels=labels)
    np.savez(folder / "objects.npz", probs=prob, labels=labels.astype(object))
    np.savez(folder / "words.npz", probs=prob.astype(str), labels=labels)
    np.savez(folder / "one.npz", probs=prob[:1], labels=labels[:1])
    (folder / "text.npz").write_text("not an archive\n")
    (folder / "empty.npz").write_bytes(b"")
    (folder / "folder.npz").mkdir()
    (folder / "ragged.csv").write_text("0.2,0.8,1\n0.4,0.6\n")
    (folder / "good.csv").write_text("0.2,0.8,1\n0.4,0.6,0\n")
    confidence = prob.max(axis=1)
    np.savez(folder / "targets.npz", confidence=confidence, correct=np.r_[labels[:9] % 2, 2])
    np.savez(
        folder / "above.npz",
        confidence=np.r_[confidence[:4], 1.5, confidence[5:]],
        correct=labels % 2,
    )


# Every bad input: (arguments, what the one line on stderr says).
ERROR_CASES = {
    "missing file": (["missing.npz"], r"missing\.npz: no such file"),
    "directory": (["folder.npz"], r"folder\.npz is a directory"),
    "not a zip": (["text.npz"], r"text\.npz is not a \.npz archive \(not a zip archive\)\.$"),
    "empty file": (["empty.npz"], r"empty\.npz is empty"),
    "object array": (["objects.npz"], r"holds Python objects \(dtype=object\)"),
    "ragged csv": (["ragged.csv"], r"ragged\.csv line 2 has 2 cells; expected 3"),
    "unknown extension": (["p.json"], r"the file must end in \.npz, \.npy or \.csv"),
    "bad --prob-key": (["good.npz", "--prob-key", "nope"], r"--prob-key 'nope' is not in good"),
    "bad --labels-key": (["good.npz", "--labels-key", "y"], r"--labels-key 'y' is not in good"),
    "--prob-key on a csv": (["good.csv", "--prob-key", "p"], r"--prob-key is only for \.npz"),
    "--labels with a npz": (
        ["good.npz", "--labels", "y.npy"],
        r"--labels is only for \.npy predictions",
    ),
    "npy without --labels": (["p.npy"], r"--labels is needed with \.npy predictions"),
    "bad --labels path": (["p.npy", "--labels", "nope.npy"], r"nope\.npy: no such file"),
    "--labels without a file": (["--labels", "y.npy"], r"--labels needs a predictions FILE"),
    "fewer labels": (
        ["p.npy", "--labels", "y_short.npy"],
        r"p\.npy holds 10 rows of predictions but there are 6 labels",
    ),
    "more labels": (
        ["p.npy", "--labels", "y_long.npy", "--recalibrate"],
        r"p\.npy holds 10 rows of predictions but there are 14 labels",
    ),
    "3-D predictions": (["cube.npz"], r"must be a 1-D .* or a 2-D .*; got shape \(10, 10, 1\)"),
    "labels out of range": (["range.npz"], r"range\.npz: the labels must lie in \[0, 9\]"),
    # Row 7 of the file, although the metrics see a random half (checked before the split).
    "NaN": (["nan.npz", "--recalibrate"], r"nan\.npz: .*the predictions.*row 7"),
    "not distributions": (["sums.npz"], r"sums\.npz: .*the predictions array must sum to 1"),
    "--renormalize a zero row": (
        ["zero.npz", "--renormalize"],
        r"zero\.npz: row 2 of the predictions array sums to 0; --renormalize needs",
    ),
    "--renormalize with --logits": (
        ["good.npz", "--renormalize", "--logits"],
        r"--renormalize is for rows of probabilities, not with --logits",
    ),
    "not numbers": (["words.npz"], r"words\.npz: the predictions array must hold real numbers"),
    "one row to split": (
        ["one.npz", "--recalibrate"],
        r"--split 0\.5 --seed 0 leaves no row to fit on among the 1 rows of one\.npz",
    ),
    "--bins 0": (
        ["good.npz", "--bins", "0"],
        r"argument --bins: must be an integer >= 1 or auto; got '0'",
    ),
    "--bins x": (
        ["good.npz", "--bins", "x"],
        r"argument --bins: must be an integer >= 1 or auto; got 'x'",
    ),
    "unknown option": (["good.npz", "--bogus"], r"unrecognized arguments: --bogus"),
    "--scores with a matrix": (
        ["good.npz", "--scores"],
        r"good\.npz: the scores must hold one score per row.*\(10, 10\).*without --scores",
    ),
    "--scores with a target of 2": (
        ["targets.npz", "--scores"],
        r"targets\.npz: the labels must be 0/1 targets with --scores; got 2",
    ),
    "--scores above 1": (
        ["above.npz", "--scores"],
        r"above\.npz: the scores must hold probabilities in \[0, 1\]; row 4.*--logits",
    ),
}


# Each error case runs in a process of its own, forked from one fresh interpreter that
# imported the package once: `python -m calibration_toolbox` costs about 0.7 s of CPU here
# (the NumPy and SciPy imports), a fork about 20 ms; 23 starts took 29 s of the suite's wall
# time on the shared 2-core machine, the forks take about 2 s. Where os.fork is missing,
# one `python -m calibration_toolbox` per case.
_FORKING_DRIVER = """
import json, os, runpy, sys, traceback
import calibration_toolbox.cli
cases, results = json.load(sys.stdin), {}
for number, (case, args) in enumerate(cases.items()):
    paths = [f"{number}.stdout", f"{number}.stderr"]
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            for fd, path in zip((1, 2), paths):
                os.dup2(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), fd)
            sys.argv = ["calibration-toolbox", *args]
            try:
                runpy.run_module("calibration_toolbox", run_name="__main__", alter_sys=True)
                code = 0
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    stdout, stderr = (open(path).read() for path in paths)
    results[case] = [status, stdout, stderr]
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def error_runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Every error case, run as a process of its own."""
    folder = tmp_path_factory.mktemp("inputs")
    _write_inputs(folder)
    cases = {case: ["report", *args] for case, (args, _) in ERROR_CASES.items()}
    if not hasattr(os, "fork"):
        return {case: _run(*args, cwd=folder) for case, args in cases.items()}
    driver = subprocess.run(
        [sys.executable, "-c", _FORKING_DRIVER],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        cwd=folder,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"},
        timeout=300,
        check=True,
    )
    return {
        case: subprocess.CompletedProcess(cases[case], status, stdout, stderr)
        for case, (status, stdout, stderr) in json.loads(driver.stdout).items()
    }


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_every_bad_input_is_one_line_and_exit_status_2(case, error_runs):
    run = error_runs[case]
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stdout == ""  # nothing written on failure
    line = _one_stderr_line(run, "error")
    assert re.search(ERROR_CASES[case][1], line), line
    assert "`" not in line and "logits=True" not in line  # the command line's words


def test_main_restores_the_warning_display(capsys):
    display = warnings.showwarning
    assert main(["report", "--bins", "0"]) == 2
    assert main(["report", "--json"]) == 0
    assert warnings.showwarning is display
    capsys.readouterr()


@pytest.mark.filterwarnings("default")
def test_a_warning_for_developers_is_not_a_line_of_the_report(capsys, monkeypatch):
    # The garbage collector may finalise, during a run, an object that other code left open
    # (an event loop, a file): its ResourceWarning is not about the user's data.
    shown = []
    monkeypatch.setattr(warnings, "showwarning", lambda *args, **kwargs: shown.append(args[1]))
    real_parse = cli._parse

    def parse_while_collecting(argv):
        warnings.warn("unclosed event loop", ResourceWarning, stacklevel=1)
        warnings.warn("a dependency's old name", DeprecationWarning, stacklevel=1)
        return real_parse(argv)

    monkeypatch.setattr(cli, "_parse", parse_while_collecting)
    assert main(["report", "--json"]) == 0
    assert capsys.readouterr().err == ""
    assert shown == [ResourceWarning, DeprecationWarning]  # passed on to the display before


def test_warnings_are_one_line_each(tmp_path):
    # Labels that the scores separate perfectly: temperature scaling warns that T -> 0.
    prob = np.tile([[0.2, 0.8], [0.7, 0.3]], (50, 1))
    np.savez(tmp_path / "separable.npz", probs=prob, labels=prob.argmax(axis=1))
    run = _run("report", "separable.npz", "--recalibrate", "--json", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    _one_stderr_line(run, "warning")
    json.loads(run.stdout)


def test_the_json_numbers_are_the_apis(tmp_path):
    prob, labels = load_example().prob[:500], load_example().labels[:500]
    np.savez(tmp_path / "p.npz", scores=prob, truth=labels)
    run = _run("report", "p.npz", "--bins", "10", "--json", cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    report = _before(json.loads(run.stdout))
    for name, metric in (("ECE", ECE), ("MCE", MCE), ("ACE", ACE), ("TACE", TACE)):
        assert_allclose(report[name], metric(prob, labels, bins=10), rtol=1e-12)
    assert_allclose(report["NLL"], negative_log_likelihood(prob, labels), rtol=1e-12)
    assert_allclose(report["Brier"], brier_score(prob, labels), rtol=1e-12)


def test_renormalize_accepts_rounded_rows_and_says_so_when_needed(tmp_path):
    prob, labels = load_example().prob[:500], load_example().labels[:500]
    rounded = np.round(prob, 2)
    np.savez(tmp_path / "rounded.npz", probs=rounded, labels=labels)
    refused = _run("report", "rounded.npz", cwd=tmp_path)
    assert refused.returncode == 2
    assert "--renormalize" in _one_stderr_line(refused, "error")
    run = _run("report", "rounded.npz", "--renormalize", "--json", cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    report = _before(json.loads(run.stdout))
    for name, metric in (("ECE", ECE), ("SCE", SCE), ("TACE", TACE)):
        assert_allclose(report[name], metric(rounded, labels, renormalize=True), rtol=1e-12)
    assert_allclose(
        report["NLL"], negative_log_likelihood(rounded, labels, renormalize=True), rtol=1e-12
    )


def _overconfident_binary(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """P(y = 1) of a logistic model whose log-odds are three times too large."""
    rng = np.random.default_rng(seed)
    log_odds = rng.normal(0.0, 1.5, n)
    labels = (rng.random(n) < 1 / (1 + np.exp(-log_odds))).astype(int)
    return 1 / (1 + np.exp(-3 * log_odds)), labels


def test_recalibrating_binary_probabilities_fits_their_log_odds(tmp_path):
    p, labels = _overconfident_binary(4000, seed=8)
    np.savez(tmp_path / "binary.npz", probs=p, labels=labels)
    run = _run("report", "binary.npz", "--recalibrate", "--json", cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    report = json.loads(run.stdout)
    before, after = _before(report), _after(report)
    assert after["ECE"] < before["ECE"] / 2
    assert after["NLL"] < before["NLL"]
    assert after["accuracy"] == before["accuracy"]
    assert_allclose(_temperature(report), 3.0, rtol=0.1)
    # The documented split and model: T fitted to the two columns [log(1 - p), log p].
    fit, test = seeded_split(len(p), 0.5, 0)
    logits = np.log(np.column_stack([1 - p, p]))
    scaler = TemperatureScaling().fit(logits[fit], labels[fit])
    assert_allclose(_temperature(report), scaler.temperature_, rtol=1e-12)
    calibrated = scaler.predict_proba(logits[test])
    assert_allclose(after["ECE"], ECE(calibrated, labels[test]), rtol=1e-12)
    assert_allclose(after["NLL"], negative_log_likelihood(calibrated, labels[test]), rtol=1e-12)
    assert ((calibrated[:, 1] > 0.5) == (p[test] > 0.5)).all()  # the same predicted classes


def test_recalibrating_float32_probabilities_with_exact_zeros(tmp_path):
    prob = load_example().prob[:400].astype(np.float32)
    prob[prob < 1e-3] = 0  # as saved softmax outputs often are
    prob /= prob.sum(axis=1, keepdims=True)
    np.savez(tmp_path / "p.npz", probs=prob, labels=load_example().labels[:400])
    run = _run("report", "p.npz", "--recalibrate", "--json", cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    report = json.loads(run.stdout)
    assert _after(report)["NLL"] < _before(report)["NLL"]


def test_report_without_a_file_and_help(tmp_path):
    run = _run(cwd=tmp_path)  # bare `calibration-toolbox`: the README's first command
    assert run.returncode == 0 and "embedded example" in run.stdout, run.stderr
    run = _run("report", "--help", cwd=tmp_path)
    assert run.returncode == 0
    help_text = " ".join(run.stdout.split())
    for words in ("probs_test", "ground_truth", "last column", "label, labels or y"):
        assert words in help_text


def _llm_answers(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Confidences uniform on (0.05, 1), right with probability confidence**2 (issue 13)."""
    rng = np.random.default_rng(seed)
    confidence = rng.uniform(0.05, 1.0, n)
    return confidence, (rng.random(n) < confidence**2).astype(int)


def _check_scores_report(report: dict, scores: np.ndarray, targets: np.ndarray, bins: int):
    """The numbers of a --scores report equal the API's through Scores."""
    for name, metric in (("ECE", ECE), ("MCE", MCE), ("RMSCE", RMSCE)):
        assert_allclose(report[name], metric(Scores(scores), targets, bins=bins), rtol=1e-12)
    assert_allclose(report["Brier"], brier_score(Scores(scores), targets), rtol=1e-12)
    assert_allclose(report["NLL"], negative_log_likelihood(Scores(scores), targets), rtol=1e-12)
    assert_allclose(report["mean_target"], targets.mean(), rtol=1e-12)
    assert_allclose(report["mean_score"], scores.mean(dtype=np.float64), rtol=1e-12)
    assert not {"SCE", "ACE", "TACE", "accuracy"} & set(report)
    table = calibration_table(Scores(scores), targets, bins=bins, class_conditional=False)
    filled = table.counts[0] > 0
    rows = report["reliability"]
    assert [row["count"] for row in rows] == table.counts[0, filled].tolist()
    # The JSON contract's keys (report-schema.md), for scores as for confidences.
    assert_allclose([row["confidence"] for row in rows], table.mean_score[0, filled], rtol=1e-12)
    assert_allclose([row["accuracy"] for row in rows], table.mean_target[0, filled], rtol=1e-12)


def test_scores_report_on_a_csv_and_an_npz(tmp_path):
    confidence, correct = _llm_answers(3000, seed=13)
    np.savetxt(
        tmp_path / "answers.csv",
        np.column_stack([confidence, correct]),
        delimiter=",",
        header="score,target",
        comments="",
    )
    np.savez(tmp_path / "answers.npz", confidence=confidence.astype(np.float32), correct=correct)
    for name, scores in (
        ("answers.csv", confidence),
        ("answers.npz", confidence.astype(np.float32)),
    ):
        run = _run("report", name, "--scores", "--bins", "10", "--json", cwd=tmp_path)
        assert run.returncode == 0 and run.stderr == "", run.stderr
        report = json.loads(run.stdout)
        assert [entry["method"] for entry in report["results"]] == ["uncalibrated"]
        _check_scores_report(_before(report), scores, correct, bins=10)
    assert_allclose(_before(report)["ECE"], 0.17, atol=0.02)  # overconfident, as generated
    run = _run("report", "answers.csv", "--scores", cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert "one score per row against a 0/1 target (--scores)" in run.stdout
    assert "mean target 0." in run.stdout and "reliability of the scores" in run.stdout
    assert "SCE, ACE, TACE are omitted" in run.stdout
    assert not re.search(r"^(SCE|ACE|TACE|accuracy) ", run.stdout, flags=re.M)


def test_scores_recalibrate_fits_the_two_columns_and_reports_scores(tmp_path):
    p, labels = _overconfident_binary(4000, seed=8)
    np.savez(tmp_path / "ctr.npz", y_score=p, outcome=labels)
    run = _run("report", "ctr.npz", "--scores", "--recalibrate", "--json", cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    report = json.loads(run.stdout)
    fit, test = seeded_split(len(p), 0.5, 0)
    logits = np.log(np.column_stack([1 - p, p]))
    scaler = TemperatureScaling().fit(logits[fit], labels[fit])
    assert_allclose(_temperature(report), scaler.temperature_, rtol=1e-12)
    assert_allclose(_temperature(report), 3.0, rtol=0.1)
    _check_scores_report(_before(report), p[test], labels[test], bins=15)
    calibrated = scaler.predict_proba(logits[test])[:, 1]
    _check_scores_report(_after(report), calibrated, labels[test], bins=15)
    assert _after(report)["ECE"] < _before(report)["ECE"] / 2


def test_a_single_column_without_scores_is_a_binary_classifier_and_says_so(tmp_path):
    p, labels = _overconfident_binary(1000, seed=3)
    np.savetxt(tmp_path / "p.csv", np.column_stack([p, labels]), delimiter=",")
    run = _run("report", "p.csv", "--json", cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    report = _before(json.loads(run.stdout))
    two_columns = np.column_stack([1 - p, p])
    for name, metric in (("ECE", ECE), ("MCE", MCE), ("SCE", SCE)):
        assert_allclose(report[name], metric(two_columns, labels), rtol=1e-12)
    run = _run("report", "p.csv", cwd=tmp_path)
    assert "one column read as P(y = 1) of a binary classifier" in run.stdout.splitlines()[0]


def test_help_names_the_scores_form(tmp_path):
    run = _run("report", "--help", cwd=tmp_path)
    help_text = " ".join(run.stdout.split())
    for words in ("--scores", "confidences", "correct, outcome", "score,target"):
        assert words in help_text


def test_synthetic_generator_has_the_stated_temperature():
    logits, labels = make_overconfident(20_000, 5, temperature=3.0, seed=4)
    assert abs(TemperatureScaling().fit(logits, labels).temperature_ - 3.0) < 0.1


@pytest.mark.parametrize("page", DOCUMENTED_PAGES, ids=lambda page: page.name)
def test_documented_python_examples_run(page, tmp_path, monkeypatch):
    # the README's blocks and those moved from it into the user guide (docs/guide/*.md)
    monkeypatch.chdir(tmp_path)
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)
    assert blocks or page.parent == GUIDE, f"{page.name} has no python example"
    for block in blocks:
        exec(compile(block, str(page), "exec"), {})


def test_the_guide_holds_the_moved_examples():
    # the README was split into the guide: its examples must not have been lost in the move
    pages = [page.name for page in DOCUMENTED_PAGES]
    assert pages[0] == "README.md" and len(pages) >= 9, pages
    blocks = [
        re.findall(r"```python\n", page.read_text(encoding="utf-8")) for page in DOCUMENTED_PAGES
    ]
    assert sum(map(len, blocks)) >= 20
    # and the README stays what a newcomer reads first (issue 24: under 250 lines)
    assert len(README.read_text(encoding="utf-8").splitlines()) < 250


def test_readme_slices_of_the_example_rows_select_fewer_rows():
    # `example.calibration_rows[:2000]` on its 748 rows selected them all: a slice that does
    # nothing reads as a subset that is not one.
    example = load_example()
    text = "".join(page.read_text(encoding="utf-8") for page in DOCUMENTED_PAGES)
    slices = re.findall(r"example\.(\w+_rows)\[:(\d+)\]", text)
    for name, stop in slices:
        assert int(stop) < getattr(example, name).size, f"example.{name}[:{stop}]"


def test_readme_commands_are_the_ci_commands():
    text = README.read_text()
    assert "pip install . && calibration-toolbox report" in text
    assert 'pip install ".[test]" && pytest' in text
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'pip install ".[test]" && pytest' in ci
