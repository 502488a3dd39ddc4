"""``compare A B --stream``: both files read block by block, the document of ``compare``.

Every number equals ``compare``'s without ``--stream``: to the last bit for the metrics the
accumulator gives to the bit, the ``--ci`` intervals and p-values (the same resamples of
the same per-row cells) and the paired score tests (each model's per-row scores); at rtol
1e-12 for the others.  In-process through ``main([...])`` with capsys.
"""

from __future__ import annotations

import json
from unittest import mock

import numpy as np
import pytest
from numpy.testing import assert_allclose
from scipy.special import softmax

from calibration_toolbox import _rows
from calibration_toolbox.cli import main
from tests.conftest import DATA_DIR

N_ROWS, N_CLASSES = 2_000, 4
BLOCKS = ["--block-rows", "300"]  # 6 blocks of 300 and one of 200: cells joined across blocks
TABULATED = "ECE,MCE,RMSCE,SCE,DebiasedL2"


@pytest.fixture(autouse=True)
def small_canonical_blocks():
    """Canonical row blocks of 350 rows at K = 4 (140 at K = 10), against blocks of 300 read.

    So that the accumulator adds many canonical blocks, none aligned with the blocks read,
    as at real sizes (the scan's own blocks a third as large), for both paths alike.
    """
    with (
        mock.patch.object(_rows, "CANONICAL_BLOCK_ELEMENTS", 1_400),
        mock.patch.object(_rows, "CACHE_BLOCK_ELEMENTS", 466),
    ):
        yield


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Two models of the same 2,000 rows (logits and temperatures), in several forms."""
    folder = tmp_path_factory.mktemp("compare_stream")
    rng = np.random.default_rng(5)
    logits = (2.5 * rng.normal(size=(N_ROWS, N_CLASSES))).astype(np.float32)
    labels = np.array([rng.choice(N_CLASSES, p=row) for row in softmax(logits / 1.7, axis=1)])
    prob_a, prob_b = softmax(logits, axis=1), softmax(logits / 1.7, axis=1)
    np.savez(folder / "a.npz", probs=prob_a, labels=labels)
    np.savez(folder / "b.npz", probs=prob_b, labels=labels)
    np.savez(folder / "za.npz", logits=logits, labels=labels)
    np.savez(folder / "zb.npz", logits=logits / 1.7, labels=labels)
    np.save(folder / "a.npy", prob_a)
    np.save(folder / "b.npy", prob_b)
    np.save(folder / "y.npy", labels)
    correct = (prob_a.argmax(axis=1) == labels).astype(int)
    np.savez(folder / "sa.npz", scores=prob_a.max(axis=1), correct=correct)
    np.savez(folder / "sb.npz", scores=prob_b.max(axis=1), correct=correct)
    np.savez(folder / "short.npz", probs=prob_b[:1_700], labels=labels[:1_700])
    other = labels.copy()
    other[1_234] = (other[1_234] + 1) % N_CLASSES
    np.savez(folder / "other.npz", probs=prob_b, labels=other)
    np.savez(
        folder / "three.npz",
        probs=prob_b[:, :3] / prob_b[:, :3].sum(1, keepdims=True),
        labels=labels % 3,
    )
    bad = prob_b.copy()
    bad[1_500, 0] = np.nan
    np.savez(folder / "nan.npz", probs=bad, labels=labels)
    return folder


def _run(capsys, *args) -> tuple[int, str, str]:
    code = main(["compare", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _json(capsys, *args) -> dict:
    code, out, err = _run(capsys, *args, "--format", "json")
    assert (code, err) == (0, "")
    return json.loads(out)


def _error(capsys, *args) -> str:
    """The one line on stderr of a refused command line (exit 2, nothing on stdout)."""
    code, out, err = _run(capsys, *args)
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibration-toolbox: error: "), lines
    return lines[0]


def _without_command(document: dict) -> dict:
    return {key: value for key, value in document.items() if key != "command"}


@pytest.mark.parametrize(
    ("first", "second", "options"),
    [
        ("a.npz", "b.npz", ["--metrics", TABULATED]),
        ("za.npz", "zb.npz", ["--logits", "--metrics", TABULATED]),
        ("a.npy", "b.npy", ["--labels", "y.npy", "--metrics", TABULATED]),
        ("sa.npz", "sb.npz", ["--scores", "--metrics", "ECE,MCE,RMSCE"]),
    ],
)
def test_streamed_ci_is_compare_ci_to_the_bit(files, capsys, first, second, options):
    options = [str(files / option) if option.endswith(".npy") else option for option in options]
    paths = files / first, files / second
    ci = ["--ci", "--n-resamples", "40", "--seed", "7"]
    whole = _json(capsys, *paths, *options, *ci)
    streamed = _json(capsys, *paths, *options, *ci, "--stream", *BLOCKS)
    # Every number of the document: metrics, intervals, p-values, score tests, tables.
    assert _without_command(streamed) == _without_command(whole)
    assert all(entry["interval"] is not None for entry in streamed["metrics"])


def test_sums_of_the_accumulator_to_the_bit_or_rtol(files, capsys):
    """The metrics without --ci: the accumulator's sums against the in-memory calls."""
    paths = files / "za.npz", files / "zb.npz"
    names = "ECE,MCE,RMSCE,SCE,DebiasedL2,OCE,UCE,TopLabelECE,Brier,NLL"
    whole = _json(capsys, *paths, "--logits", "--metrics", names)
    streamed = _json(capsys, *paths, "--logits", "--metrics", names, "--stream", *BLOCKS)
    assert _without_command(streamed) != {}  # a document
    exact = {"ECE", "MCE", "RMSCE", "SCE", "DebiasedL2", "OCE", "UCE", "TopLabelECE"}
    for ours, theirs in zip(streamed["metrics"], whole["metrics"], strict=True):
        assert ours["metric"] == theirs["metric"]
        if ours["metric"] in exact:
            assert ours == theirs
        else:
            for key in ("A", "B", "difference"):
                assert_allclose(ours[key], theirs[key], rtol=1e-12, atol=1e-15)
    assert streamed["score_tests"] == whole["score_tests"]
    assert streamed["models"] == whole["models"]
    assert streamed["reliability"] == whole["reliability"]


def test_default_metrics_are_those_that_stream(files, capsys):
    paths = files / "a.npz", files / "b.npz"
    plain = _json(capsys, *paths, "--stream")
    assert [entry["metric"] for entry in plain["metrics"]] == [
        "ECE",
        "MCE",
        "RMSCE",
        "SCE",
        "Brier",
        "NLL",
    ]
    ci = _json(capsys, *paths, "--stream", "--ci", "--n-resamples", "5")
    assert [entry["metric"] for entry in ci["metrics"]] == ["ECE", "MCE", "RMSCE", "SCE"]


def test_text_and_html_are_compares(files, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    paths = files / "a.npz", files / "b.npz"
    options = ["--metrics", "ECE,SCE", "--ci", "--n-resamples", "20"]
    pages = tmp_path / "whole.html", tmp_path / "streamed.html"
    code, whole, err = _run(capsys, *paths, *options, "--html", pages[0])
    assert (code, err) == (0, "")
    code, streamed, err = _run(capsys, *paths, *options, "--stream", "--html", pages[1])
    assert (code, err) == (0, "")
    assert streamed == whole
    assert "better at the 95 % level" in streamed
    texts = [page.read_text(encoding="utf-8") for page in pages]
    strip = [
        text.replace(" --stream", "").replace("streamed.html", "whole.html") for text in texts
    ]
    assert strip[0] == strip[1]


def test_a_file_against_itself_differs_by_zero(files, capsys):
    document = _json(
        capsys, files / "a.npz", files / "a.npz", "--stream", "--ci", "--metrics", "ECE,SCE"
    )
    for entry in document["metrics"]:
        assert (entry["difference"], entry["interval"], entry["pvalue"]) == (0.0, [0.0, 0.0], 1.0)


@pytest.mark.parametrize(
    ("second", "options", "expected"),
    [
        ("short.npz", [], "holds 1,700 rows and A ("),
        ("other.npz", [], "differ at row 1234 ("),
        ("three.npz", [], "holds 3 columns of predictions but A"),
        ("nan.npz", [], "row 1500"),
        ("b.npz", ["--metrics", "ECE,ACE,KSCE"], "--stream: ACE, KSCE need all the rows at once"),
        (
            "b.npz",
            ["--ci", "--metrics", "ECE,Brier"],
            "--stream: Brier needs all the rows at once for --ci",
        ),
        ("b.npz", ["--bins", "auto"], "--bins auto depends on the number of rows"),
    ],
)
def test_refusals_are_one_line(files, capsys, second, options, expected):
    line = _error(capsys, files / "a.npz", files / second, "--stream", *BLOCKS, *options)
    assert expected in line, line


def test_block_rows_needs_stream(files, capsys):
    line = _error(capsys, files / "a.npz", files / "b.npz", "--block-rows", "10")
    assert "--block-rows sizes the blocks of --stream" in line


def test_real_files_streamed_ci_equals_ci(capsys):
    """WRN-16-4 against VGG-16 on the CIFAR-10 test set: --stream --ci is --ci, bit for bit."""
    paths = DATA_DIR / "wideresnet-16-4-cifar-10.npz", DATA_DIR / "vgg16-cifar-10.npz"
    if not all(path.exists() for path in paths):
        pytest.skip("real predictions not found")
    options = ["--metrics", "ECE,SCE", "--ci", "--n-resamples", "100"]
    whole = _json(capsys, *paths, *options)
    streamed = _json(capsys, *paths, *options, "--stream", "--block-rows", "4096")
    assert _without_command(streamed) == _without_command(whole)
    entry = streamed["metrics"][0]
    assert entry["A"] == pytest.approx(0.0537162954211235, rel=1e-12)
    assert entry["B"] == pytest.approx(0.0397800668567419, rel=1e-12)
    assert entry["better"] == "B"
