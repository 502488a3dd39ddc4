"""``report`` on a file read in blocks (``--stream``) against the same file read whole.

Every streamed number equals the in-memory report's (to rtol 1e-12; most to the last bit);
a bad value in a late block is one line with the file's row number; the metrics that need
all the rows are left out with one warning.  In-process through ``main([...])``.
"""

from __future__ import annotations

import io
import json
import re

import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox.cli import main
from calibration_toolbox.cli._metrics import METRICS
from calibration_toolbox.io import iter_predictions
from tests.cli.test_cli_report import seeded_split

N_ROWS, N_CLASSES = 30_000, 5
STREAMED = [name for name, metric in METRICS.items() if metric.streamed is not None]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A 30,000 x 5 float32 memory-mapped .npy of probabilities, its logits and labels."""
    folder = tmp_path_factory.mktemp("ooc")
    rng = np.random.default_rng(11)
    logits = (3 * rng.normal(size=(N_ROWS, N_CLASSES))).astype(np.float32)
    prob = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    right = rng.random(N_ROWS) < 0.6
    labels = np.where(right, prob.argmax(axis=1), rng.integers(0, N_CLASSES, N_ROWS))
    mapped = np.lib.format.open_memmap(
        folder / "p.npy", mode="w+", dtype=np.float32, shape=prob.shape
    )
    mapped[:] = prob
    mapped.flush()
    del mapped
    np.save(folder / "z.npy", logits)
    np.save(folder / "y.npy", labels)
    np.savez(folder / "val.npz", logits=logits[:3000], labels=labels[:3000])
    return folder


def _json(capsys, *args) -> tuple[dict, str]:
    assert main(["report", *map(str, args), "--format", "json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def _same_numbers(streamed: dict, whole: dict) -> None:
    """Every number of the streamed document equals the whole file's (rtol 1e-12)."""
    for key in ("n", "n_classes", "n_fit", "fit", "bins", "metrics", "input", "file"):
        assert streamed[key] == whole[key], key
    for ours, theirs in zip(streamed["results"], whole["results"], strict=True):
        assert ours["method"] == theirs["method"]
        assert ours["parameters"] == theirs["parameters"]
        for key in ("accuracy", "mean_target", "mean_score"):  # --scores: the mean target
            assert ours.get(key) == theirs.get(key), key
        assert ours["reliability"] == theirs["reliability"]  # top-label table: bit for bit
        assert ours["metrics"].keys() == theirs["metrics"].keys()
        for name, value in ours["metrics"].items():
            assert_allclose(value, theirs["metrics"][name], rtol=1e-12, atol=0, err_msg=name)
        for mine, other in zip(
            ours.get("per_class", []), theirs.get("per_class", []), strict=True
        ):
            assert mine["count"] == other["count"] and mine["accuracy"] == other["accuracy"]
            assert_allclose(mine["ECE"], other["ECE"], rtol=1e-12)


@pytest.mark.filterwarnings("default")  # the CLI reports warnings as lines, not exceptions
def test_a_memory_map_in_many_blocks_gives_the_whole_files_report(folder, capsys):
    files = [folder / "p.npy", "--labels", folder / "y.npy", "--per-class"]
    files += ["--metrics", ",".join(STREAMED)]
    whole, _ = _json(capsys, *files)
    streamed, err = _json(capsys, *files, "--stream", "--block-rows", 997)
    assert err == ""  # every metric asked for streams: no warning
    assert streamed["blocks"] == {"block_rows": 997, "passes": 1, "left_out": []}
    assert whole["n"] == N_ROWS and len(whole["results"][0]["per_class"]) == N_CLASSES
    _same_numbers(streamed, whole)


@pytest.mark.filterwarnings("default")
def test_logits_and_methods_fitted_on_a_validation_file(folder, capsys):
    files = [folder / "z.npy", "--labels", folder / "y.npy", "--logits"]
    files += ["--method", "temperature,histogram", "--fit-on", folder / "val.npz"]
    files += ["--metrics", "ECE,SCE,TopLabelECE,NLL,Brier"]
    whole, _ = _json(capsys, *files)
    streamed, _ = _json(capsys, *files, "--stream", "--block-rows", 4096)
    _same_numbers(streamed, whole)
    assert streamed["results"][1]["parameters"]["temperature"] > 0


@pytest.mark.filterwarnings("default")
def test_what_needs_all_rows_is_left_out_with_one_warning(folder, capsys):
    files = [folder / "p.npy", "--labels", folder / "y.npy", "--stream"]
    streamed, err = _json(
        capsys, *files, "--ci", "--n-resamples", "2", "--metrics", "ECE,ACE,KSCE"
    )
    assert list(streamed["results"][0]["metrics"]) == ["ECE"]
    assert streamed["blocks"]["left_out"] == ["ACE", "KSCE", "the --ci intervals"]
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibration-toolbox: warning: ")
    assert "ACE, KSCE, the --ci intervals need all the rows" in lines[0]
    assert "--in-memory" in lines[0]


def _error(capsys, *args) -> str:
    assert main(["report", *map(str, args)]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert captured.out == "" and len(lines) == 1 and "Traceback" not in captured.err
    assert lines[0].startswith("calibration-toolbox: error: ")
    return lines[0]


@pytest.mark.parametrize(
    ("row", "column", "value", "expected"),
    [
        (28_123, 2, np.nan, "row 28123 holds NaN"),
        (29_990, 0, 0.9, "row 29990 sums to"),
    ],
)
def test_a_bad_value_in_a_late_block_names_the_files_row(
    folder, capsys, row, column, value, expected
):
    prob = np.load(folder / "p.npy")
    prob[row, column] = value
    np.save(folder / "bad.npy", prob)
    files = [folder / "bad.npy", "--labels", folder / "y.npy", "--metrics", "ECE"]
    streamed = _error(capsys, *files, "--stream", "--block-rows", 1000)
    assert expected.replace("holds NaN", "") in streamed
    # the same line as the whole file's check gives
    assert streamed == _error(capsys, *files)


def test_an_infinite_logit_in_a_late_block(folder, capsys):
    logits = np.load(folder / "z.npy")
    logits[27_500, 4] = np.inf
    np.save(folder / "bad_z.npy", logits)
    files = [folder / "bad_z.npy", "--labels", folder / "y.npy", "--logits", "--metrics", "ECE"]
    line = _error(capsys, *files, "--stream", "--block-rows", 1000)
    assert line == _error(capsys, *files)
    assert "row 27500" in line


def test_a_bad_label_in_a_late_block(folder, capsys):
    labels = np.load(folder / "y.npy")
    labels[25_001] = N_CLASSES
    np.save(folder / "bad_y.npy", labels)
    files = [folder / "p.npy", "--labels", folder / "bad_y.npy", "--metrics", "ECE"]
    line = _error(capsys, *files, "--stream", "--block-rows", 1000)
    assert line == _error(capsys, *files)
    assert f"got {N_CLASSES}" in line


def test_refusals_of_the_streaming_path(folder, capsys):
    files = [folder / "p.npy", "--labels", folder / "y.npy", "--stream"]
    assert "not allowed with argument" in _error(capsys, *files, "--in-memory")


@pytest.mark.filterwarnings("default")
@pytest.mark.parametrize("block_rows", [997, 4096, 50_000])
@pytest.mark.parametrize(
    ("file", "fit"),
    [
        ("z.npy", ["--logits", "--method", "temperature"]),
        ("p.npy", ["--recalibrate", "--split", "0.3", "--seed", "5"]),
    ],
)
def test_a_fit_on_the_files_seeded_share_in_blocks_is_the_in_memory_fit(
    folder, capsys, block_rows, file, fit
):
    """fit_blocks over the file's fit rows, block by block: the same T, the same report."""
    files = [folder / file, "--labels", folder / "y.npy", *fit, "--per-class"]
    files += ["--metrics", ",".join(STREAMED)]
    whole, _ = _json(capsys, *files)
    streamed, err = _json(capsys, *files, "--stream", "--block-rows", block_rows)
    assert err == ""
    fraction, seed = (0.3, 5) if "--split" in fit else (0.5, 0)
    fit_rows, test_rows = seeded_split(N_ROWS, fraction, seed)
    assert (whole["n_fit"], whole["n"]) == (len(fit_rows), len(test_rows))
    assert abs(len(fit_rows) / N_ROWS - fraction) < 0.01  # about the share, not exactly
    # at least one pass over the blocks for the fit, then the report's
    assert streamed["blocks"]["passes"] >= 2
    for ours, theirs in zip(streamed["results"], whole["results"], strict=True):
        for name, value in theirs["parameters"].items():
            assert_allclose(ours["parameters"][name], value, rtol=1e-10, err_msg=name)
        ours["parameters"] = theirs["parameters"]
    _same_numbers(streamed, whole)


@pytest.mark.filterwarnings("default")
def test_vector_scaling_fitted_in_blocks(folder, capsys):
    """VectorScaling.fit_blocks stops where L-BFGS-B does: the report agrees to about 1e-9."""
    files = [folder / "z.npy", "--labels", folder / "y.npy", "--logits", "--method", "vector"]
    files += ["--metrics", "ECE,SCE,NLL,Brier"]
    whole, _ = _json(capsys, *files)
    streamed, _ = _json(capsys, *files, "--stream", "--block-rows", 2000)
    assert (streamed["n"], streamed["n_fit"]) == (whole["n"], whole["n_fit"])
    for name, value in whole["results"][1]["metrics"].items():
        assert_allclose(streamed["results"][1]["metrics"][name], value, rtol=1e-7, err_msg=name)


@pytest.mark.filterwarnings("default")
def test_methods_without_a_block_fit_gather_their_fit_rows_within_a_budget(
    folder, capsys, monkeypatch
):
    files = [folder / "p.npy", "--labels", folder / "y.npy", "--method", "isotonic,temperature"]
    files += ["--metrics", "ECE,SCE,NLL"]
    whole, _ = _json(capsys, *files)
    streamed, _ = _json(capsys, *files, "--stream", "--block-rows", 4096)
    _same_numbers(streamed, whole)  # fitted in memory on the same rows: the same numbers
    monkeypatch.setattr("calibration_toolbox.cli._blocks.FIT_BYTES", 2**16)
    line = _error(capsys, *files, "--stream")
    assert "--method isotonic, temperature fits on rows held in memory" in line
    assert "give --fit-on VALIDATION_FILE, or --in-memory" in line


def test_a_bad_value_in_a_fit_row_stops_the_fit_with_the_files_row(folder, capsys):
    prob = np.load(folder / "p.npy")
    fit_rows, test_rows = seeded_split(N_ROWS, 0.5, 0)
    for row in (fit_rows[-3], test_rows[-3]):
        bad = prob.copy()
        bad[row, 1] = np.nan
        np.save(folder / "bad_fit.npy", bad)
        files = [folder / "bad_fit.npy", "--labels", folder / "y.npy", "--recalibrate"]
        streamed = _error(capsys, *files, "--stream", "--block-rows", 1000)
        assert f"row {row} " in streamed
        assert streamed == _error(capsys, *files)


def test_block_rows_needs_the_streaming_path(folder, capsys):
    line = _error(capsys, folder / "p.npy", "--labels", folder / "y.npy", "--block-rows", 10)
    assert "is read whole (add --stream)" in line
    assert "--stream needs a predictions FILE" in _error(capsys, "--stream")


@pytest.mark.filterwarnings("default")
def test_csv_and_parquet_through_the_streaming_path(folder, capsys, tmp_path):
    prob, labels = (
        np.load(folder / "p.npy")[:600].astype(np.float64),
        np.load(folder / "y.npy")[:600],
    )
    names = np.array(["ant", "bee", "cat", "dog", "eel"])
    text = ["p0;p1;p2;p3;p4;animal"] + [
        ";".join(repr(float(v)) for v in row) + f";{names[k]}"
        for row, k in zip(prob, labels, strict=True)
    ]
    (tmp_path / "p.csv").write_text("\n".join(text) + "\n")
    reading = ["--labels-column", "animal", "--classes", ",".join(names), "--sep", ";"]
    reading += ["--metrics", "ECE,SCE,NLL", "--per-class"]
    whole, _ = _json(capsys, tmp_path / "p.csv", *reading)
    streamed, _ = _json(capsys, tmp_path / "p.csv", *reading, "--stream", "--block-rows", 64)
    _same_numbers(streamed, whole)
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({**{f"p_{k}": prob[:, k] for k in range(N_CLASSES)}, "animal": names[labels]})
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=100)
    reading = ["--prob-column", "p_*", "--labels-column", "animal", "--classes", ",".join(names)]
    parquet = [tmp_path / "p.parquet", *reading, "--metrics", "ECE,SCE,NLL", "--per-class"]
    whole, _ = _json(capsys, *parquet)
    streamed, _ = _json(capsys, *parquet, "--stream")
    _same_numbers(streamed, whole)


def _top_label_files(folder, tmp_path) -> tuple[np.ndarray, np.ndarray]:
    """The first 3,000 rows as a .jsonl of probability vectors with class names, as a
    top-label dump (.csv and .jsonl) and as an LLM-style .jsonl with a bool target."""
    prob = np.load(folder / "p.npy")[:3000].astype(np.float64)
    labels = np.load(folder / "y.npy")[:3000]
    names = np.array(["ant", "bee", "cat", "dog", "eel"])
    with open(tmp_path / "p.jsonl", "w") as handle:
        for i, (row, k) in enumerate(zip(prob.tolist(), labels.tolist(), strict=True)):
            handle.write(json.dumps({"id": i, "probs": row, "animal": str(names[k])}) + "\n")
    predicted = prob.argmax(axis=1)
    lines = ["true_label,pred_label,confidence"] + [
        f"{y},{k},{c!r}"
        for y, k, c in zip(
            labels.tolist(), predicted.tolist(), prob.max(axis=1).tolist(), strict=True
        )
    ]
    (tmp_path / "dump.csv").write_text("\n".join(lines) + "\n")
    with open(tmp_path / "eval.jsonl", "w") as handle:
        for c, k in zip(prob.max(axis=1).tolist(), (predicted == labels).tolist(), strict=True):
            handle.write(json.dumps({"confidence": c, "correct": k}) + "\n")
    return prob, labels


@pytest.mark.filterwarnings("default")
@pytest.mark.parametrize(
    ("name", "options"),
    [
        (
            "p.jsonl",
            ["--labels-column", "animal", "--classes", "ant,bee,cat,dog,eel", "--per-class"],
        ),
        (
            "p.jsonl",
            ["--labels-column", "animal", "--classes", "ant,bee,cat,dog,eel", "--recalibrate"],
        ),
        ("dump.csv", ["--scores"]),
        ("dump.csv", ["--scores", "--recalibrate"]),
        ("eval.jsonl", ["--scores"]),
    ],
)
def test_jsonl_and_top_label_dumps_through_the_streaming_path(
    folder, capsys, tmp_path, name, options
):
    _top_label_files(folder, tmp_path)
    metrics = ["--metrics", "ECE,MCE,RMSCE,Brier,NLL" + ("" if "--scores" in options else ",SCE")]
    whole, _ = _json(capsys, tmp_path / name, *options, *metrics)
    streamed, _ = _json(
        capsys, tmp_path / name, *options, *metrics, "--stream", "--block-rows", 64
    )
    assert whole["n"] == streamed["n"] == (3000 if "--recalibrate" not in options else whole["n"])
    for ours, theirs in zip(streamed["results"], whole["results"], strict=True):
        for key, value in theirs["parameters"].items():
            assert_allclose(ours["parameters"][key], value, rtol=1e-10, err_msg=key)
        ours["parameters"] = theirs["parameters"]
    _same_numbers(streamed, whole)


def test_the_top_label_dump_is_the_top_label_of_the_probabilities(folder, capsys, tmp_path):
    """dump.csv --scores (confidence against pred == true) and eval.jsonl --scores report
    the numbers of p.jsonl's top label: the same rows, three layouts."""
    _top_label_files(folder, tmp_path)
    names = ["--labels-column", "animal", "--classes", "ant,bee,cat,dog,eel"]
    probabilities, _ = _json(capsys, tmp_path / "p.jsonl", *names, "--metrics", "ECE,MCE,RMSCE")
    for name in ("dump.csv", "eval.jsonl"):
        scores, _ = _json(capsys, tmp_path / name, "--scores", "--metrics", "ECE,MCE,RMSCE")
        for metric, value in probabilities["results"][0]["metrics"].items():
            assert_allclose(scores["results"][0]["metrics"][metric], value, rtol=1e-12)


def test_progress_on_a_terminal_only(folder, capsys, monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setattr("calibration_toolbox.cli._blocks.Progress.every", 0.0)
    files = [folder / "p.npy", "--labels", folder / "y.npy", "--stream", "--metrics", "ECE"]
    assert main(["report", *map(str, files), "--block-rows", "10000"]) == 0
    shown = terminal.getvalue()
    assert "10,000 / 30,000 rows (33%)" in shown and "rows/s" in shown
    assert shown.endswith("\r\033[K")  # cleared before the report is printed
    terminal.seek(0)
    terminal.truncate()
    assert main(["report", *map(str, files), "--recalibrate", "--block-rows", "10000"]) == 0
    shown = terminal.getvalue()
    assert "pass 1, temperature scaling: 10,000 / 30,000 rows (33%)" in shown
    assert re.search(r"pass [2-9], report: 30,000 / 30,000 rows", shown)
    monkeypatch.undo()
    assert main(["report", *map(str, files)]) == 0
    assert capsys.readouterr().err == ""  # not a terminal: nothing


def test_blocks_of_the_npy_reader_stay_correct_after_their_pages_are_released(folder):
    """io releases the mapped pages of the rows read; a block kept is read back unchanged."""
    kept = list(iter_predictions(folder / "p.npy", labels_path=folder / "y.npy", block_rows=4096))
    prob = np.load(folder / "p.npy")
    assert_allclose(np.concatenate([block for block, _ in kept]), prob, rtol=0, atol=0)


def _resident_mb() -> float:
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def test_reading_a_npy_in_blocks_does_not_keep_its_pages(tmp_path):
    """The pages of the rows read are released: resident memory does not grow with the file.

    Before, every page read through the memory map stayed resident: a report on a 0.8 GB
    file peaked at 1.1 GB (benchmarks/bench_out_of_core.py); here 64 MB would stay.
    """
    try:
        _resident_mb()
    except OSError:
        pytest.skip("needs /proc/self/status (Linux)")
    rows = 1_600_000  # 64 MB of float32 at 10 columns
    path = tmp_path / "big.npy"
    with open(path, "wb") as handle:
        header = {"descr": "<f4", "fortran_order": False, "shape": (rows, 10)}
        np.lib.format.write_array_header_1_0(handle, header)
        quarter = np.full((rows // 4, 10), 0.1, dtype=np.float32)
        for _ in range(4):
            quarter.tofile(handle)
        del quarter
    np.save(tmp_path / "y.npy", np.zeros(rows, dtype=np.int8))
    before = _resident_mb()
    total = 0.0
    for block, _ in iter_predictions(path, labels_path=tmp_path / "y.npy", block_rows=65_536):
        total += float(block[:, 0].sum())
    assert total == pytest.approx(0.1 * rows, rel=1e-3)
    assert _resident_mb() - before < 16


@pytest.mark.filterwarnings("default")
def test_a_small_npz_that_inflates_past_the_limit_is_read_in_blocks(capsys, monkeypatch, tmp_path):
    # 16 MB of arrays compressed into about 16 KB: the decision reads the members' declared
    # sizes, not the size on disk (a 14 MB archive inflating to 3 GiB was read whole)
    path = tmp_path / "small.npz"
    np.savez_compressed(path, probs=np.full(1_000_000, 0.25), labels=np.zeros(1_000_000, int))
    assert path.stat().st_size < 2**16
    monkeypatch.setattr("calibration_toolbox.cli._stream.STREAM_BYTES", 2**23)
    streamed, err = _json(capsys, path)
    assert streamed["blocks"]["passes"] == 1
    assert "is read in blocks (15 MiB of arrays, above 8 MiB): ACE, TACE need" in err
