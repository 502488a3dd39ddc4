"""``bins="auto"``: the cube-root rule, one count per call, at every binned entry point.

The count is the smallest B with ``B ** 3 >= N`` for the N rows of the call (scikit-learn's
``calibration_curve(n_bins="cube_root")``, PR #33856).  Each binned row of the registry is
called with ``'auto'`` and with the count itself: the numbers must be the same.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import calibration_toolbox as ct
from calibration_toolbox import _registry
from calibration_toolbox import _validation as iv
from calibration_toolbox.cli import main
from calibration_toolbox.plot import ConfidenceHistogram, ReliabilityDiagram

BINNED = [row for row in _registry.ROWS.values() if row.binned]
REQUIRED = {
    "ToprCE": {"r": 2},
    "coverage_at_risk": {"risk": 0.3},
    "risk_at_coverage": {"coverage": 0.5},
}


def _problem(n=300, k=4, seed=5):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(k, 0.6), size=n), rng.integers(0, k, size=n)


def _call(row, prob, labels, **options):
    if row.multilabel:  # the same rows as K independent labels (0.9 * a softmax, one-hot)
        prob, labels = 0.9 * prob, np.eye(prob.shape[1], dtype=int)[labels]
    return row.function(prob, labels, **{**row.options, **REQUIRED.get(row.name, {}), **options})


def _brute_count(n):
    """The oracle: the first B whose cube reaches n, by counting up."""
    count = 1
    while count**3 < n:
        count += 1
    return count


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 26, 27, 28, 63, 64, 65, 999, 1000, 1001, 12_345])
def test_the_count_is_the_smallest_whose_cube_reaches_n(n):
    assert iv.auto_bin_count(n) == _brute_count(n)


def test_every_cube_and_its_neighbours_up_to_a_million():
    for root in range(1, 101):
        assert iv.auto_bin_count(root**3 - 1) == (root if root > 1 else 1)
        assert iv.auto_bin_count(root**3) == root
        assert iv.auto_bin_count(root**3 + 1) == root + 1


@pytest.mark.parametrize("row", BINNED, ids=lambda row: row.name)
def test_every_binned_row_takes_auto_as_the_count_of_its_rows(row):
    prob, labels = _problem()  # 300 rows: 7 bins (6**3 = 216 < 300 <= 343)
    automatic, counted = (_call(row, prob, labels, bins=bins) for bins in ("auto", 7))
    if isinstance(counted, ct.CalibrationTable):
        for part in ("edges", "counts", "score_sums", "target_sums"):
            np.testing.assert_array_equal(getattr(automatic, part), getattr(counted, part))
    else:
        assert automatic == counted


@pytest.mark.parametrize("n, expected", [(300, 7), (1000, 10), (1001, 11)])
def test_the_table_shows_the_chosen_count(n, expected):
    prob, labels = _problem(n=n)
    table = ct.calibration_table(prob, labels, bins="auto", class_conditional=False)
    assert table.n_bins == expected
    assert table.edges.shape == (1, expected + 1)
    equal_mass = ct.calibration_table(prob, labels, bins="auto", adaptive_bins=True)
    assert equal_mass.edges.shape == (4, expected + 1)  # one set per class, one count
    assert equal_mass.n_bins == expected


def test_auto_counts_rows_not_weights():
    prob, labels = _problem(n=300)
    weights = np.random.default_rng(1).uniform(0.5, 3.0, size=300)
    assert ct.ECE(prob, labels, bins="auto", sample_weight=weights) == ct.ECE(
        prob, labels, bins=7, sample_weight=weights
    )
    assert ct.ECE(prob, labels, bins="auto", sample_weight=2 * weights) == ct.ECE(
        prob, labels, bins="auto", sample_weight=weights
    )


def test_scores_count_their_rows():
    rng = np.random.default_rng(2)
    scores, targets = rng.uniform(size=100), rng.integers(0, 2, size=100)
    table = ct.calibration_table(ct.Scores(scores), targets, bins="auto", class_conditional=False)
    assert table.n_bins == 5  # 4**3 = 64 < 100 <= 125


def test_the_input_is_not_modified():
    prob, labels = _problem()
    before = prob.copy(), labels.copy()
    ct.ECE(prob, labels, bins="auto")
    np.testing.assert_array_equal(prob, before[0])
    np.testing.assert_array_equal(labels, before[1])


@pytest.mark.parametrize("bins", ["Auto", "AUTO", "cube_root", "", "15"])
@pytest.mark.parametrize("metric", [ct.ECE, ct.ACE, ct.GCE, ct.calibration_table])
def test_other_strings_are_refused_naming_bins(metric, bins):
    prob, labels = _problem()
    with pytest.raises(ValueError, match=r"`bins` must be an integer >= 1, .* or 'auto' .*got"):
        metric(prob, labels, bins=bins)


def test_the_accumulator_refuses_auto_and_says_why():
    with pytest.raises(ValueError, match=r"`bins`='auto' .* bins each batch as it arrives"):
        ct.CalibrationAccumulator(bins="auto")


def test_the_reliability_diagram_draws_the_chosen_count():
    pytest.importorskip("matplotlib").use("Agg")
    plt = pytest.importorskip("matplotlib.pyplot")
    prob, labels = _problem(n=1000)
    display = ReliabilityDiagram.from_predictions(prob, labels, bins="auto")
    assert display.table_.n_bins == 10
    assert "10 equal-width bins" in display.ax_.get_title()
    histogram = ConfidenceHistogram.from_predictions(prob, labels, bins="auto")
    assert histogram.table_.n_bins == 10
    plt.close("all")


def test_the_command_line_takes_auto_and_reports_the_count(tmp_path, capsys):
    prob, labels = _problem(n=1000)
    np.savez(tmp_path / "p.npz", prob=prob, labels=labels)
    assert main(["report", str(tmp_path / "p.npz"), "--bins", "auto", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["bins"] == 10
    assert report["bins_rule"] == "cube root: the smallest B with B**3 >= the rows measured"
    assert report["results"][0]["metrics"]["ECE"] == ct.ECE(prob, labels, bins=10)
    assert main(["report", str(tmp_path / "p.npz"), "--bins", "auto"]) == 0
    text = capsys.readouterr().out
    assert "--bins auto: 10 bins, the smallest B with B**3 >= 1,000 rows" in text
    assert main(["report", str(tmp_path / "p.npz"), "--bins", "10", "--format", "json"]) == 0
    assert "bins_rule" not in json.loads(capsys.readouterr().out)  # a count given is a count
    assert main(["report", str(tmp_path / "p.npz"), "--bins", "10"]) == 0
    assert "--bins auto" not in capsys.readouterr().out


def test_the_html_page_says_how_auto_chose_the_count(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    prob, labels = _problem(n=1000)
    np.savez(tmp_path / "p.npz", prob=prob, labels=labels)
    page = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "p.npz"), "--bins", "auto", "--html", str(page)]) == 0
    assert (
        "<dt>bins</dt><dd>10</dd><dt>bins chosen by</dt><dd>cube root: the smallest B with "
        "B**3 &gt;= the rows measured</dd>"
    ) in page.read_text()


@pytest.mark.parametrize("text", ["Auto", "cube_root"])
def test_the_command_line_refuses_other_words_in_one_line(tmp_path, capsys, text):
    prob, labels = _problem()
    np.savez(tmp_path / "p.npz", prob=prob, labels=labels)
    assert main(["report", str(tmp_path / "p.npz"), "--bins", text]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"argument --bins: must be an integer >= 1 or auto; got {text!r}" in err


def test_the_command_line_refuses_auto_when_streaming(tmp_path, capsys):
    prob, labels = _problem()
    np.savez(tmp_path / "p.npz", prob=prob, labels=labels)
    assert main(["report", str(tmp_path / "p.npz"), "--bins", "auto", "--stream"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bins each batch as it arrives" in err


def test_dask_resolves_auto_once_from_all_its_rows():
    da = pytest.importorskip("dask.array")
    prob, labels = _problem(n=1000)
    chunked = da.from_array(prob, chunks=(130, -1))
    table = ct.calibration_table(chunked, da.from_array(labels, chunks=130), bins="auto")
    assert table.n_bins == 10  # not the cube root of a chunk's 130 rows
    assert ct.ECE(chunked, da.from_array(labels, chunks=130), bins="auto") == ct.ECE(
        prob, labels, bins=10
    )


@pytest.mark.parametrize("adaptive", [False, True])
def test_histogram_binning_takes_auto_as_the_count_of_its_fit_rows(tmp_path, adaptive):
    prob, labels = _problem(n=1000)
    weights = np.random.default_rng(2).uniform(0.5, 2.0, size=1000)
    automatic = ct.HistogramBinning(bins="auto", adaptive_bins=adaptive)
    automatic.fit(prob, labels, sample_weight=weights)
    counted = ct.HistogramBinning(bins=10, adaptive_bins=adaptive)
    counted.fit(prob, labels, sample_weight=weights)
    assert automatic.bin_edges_.shape == (prob.shape[1], 11)  # the smallest B, B**3 >= 1,000
    for name in ("bin_edges_", "bin_probabilities_", "bin_weights_"):
        assert_array_equal(getattr(automatic, name), getattr(counted, name))
    assert automatic.get_params()["bins"] == "auto"  # the parameter as given
    automatic.fit(prob[:9], labels[:9])  # refitted on other rows, the count follows them
    assert automatic.bin_edges_.shape[1] == 4  # 3 bins: 3**3 >= 9 rows
    automatic.save(tmp_path / "m.json")
    loaded = ct.HistogramBinning.load(tmp_path / "m.json")
    assert loaded.get_params()["bins"] == "auto"
    assert_array_equal(loaded.predict_proba(prob), automatic.predict_proba(prob))
    with pytest.raises(ValueError, match="`bins` must be an integer >= 1, an increasing array"):
        ct.HistogramBinning(bins="Auto").fit(prob, labels)
