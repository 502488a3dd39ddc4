"""Sizes a small input can claim: refused by name before anything of that size is allocated.

Each case runs in a child process under a memory limit and a timeout (:mod:`tests.bounded`),
so that a regression fails the test instead of exhausting the machine; crafted files are
made by the tests, in ``tmp_path``.
"""

from __future__ import annotations

import io as io_bytes
import json
import os
import struct
import zipfile

import numpy as np
import pytest

import calibration_toolbox as ct
from calibration_toolbox import io
from calibration_toolbox._limits import MAX_BINS, MAX_CLASSES, MAX_TABLE_CELLS
from tests.bounded import run_bounded

# Every snippet starts with these: a small input, and `refused` (pytest.raises in the child).
PRELUDE = """
import json
import os
import numpy as np
import pytest
import calibration_toolbox as ct
from calibration_toolbox import _limits, io

PROB = np.array([[0.7, 0.3], [0.4, 0.6], [0.2, 0.8]])
LABELS = np.array([0, 1, 1])


def refused(error, pattern, call):
    with pytest.raises(error, match=pattern):
        call()
    print("refused")
"""

BINS_CALLS = {
    "ECE": "lambda: ct.ECE(PROB, LABELS, bins={bins})",
    "ACE (equal mass)": "lambda: ct.ACE(PROB, LABELS, bins={bins})",
    "calibration_table": "lambda: ct.calibration_table(PROB, LABELS, bins={bins})",
    "CalibrationAccumulator": "lambda: ct.CalibrationAccumulator(bins={bins})",
    "HistogramBinning": "lambda: ct.HistogramBinning(bins={bins}).fit(PROB, LABELS)",
}
BINS_REFUSED = r"^`bins` must be at most 1,000,000 bins"
HOSTILE_BINS = ["10**9", "np.int64(2**62)", "2**70", "_limits.MAX_BINS + 1"]


@pytest.mark.parametrize("bins", HOSTILE_BINS)
def test_a_hostile_number_of_bins_is_refused_by_name_before_allocating(bins):
    snippet = PRELUDE + "".join(
        f"refused(ValueError, {BINS_REFUSED!r}, {call.format(bins=bins)})\n"
        for call in BINS_CALLS.values()
    )
    assert run_bounded(snippet) == "refused\n" * len(BINS_CALLS)


def test_an_array_of_too_many_edges_is_refused_by_name():
    snippet = PRELUDE + (
        "edges = np.linspace(0, 1, _limits.MAX_BINS + 2)\n"
        "refused(ValueError, r'^`bins` must be at most 1,000,000 bins .*; got array', "
        "lambda: ct.ECE(PROB, LABELS, bins=edges))\n"
    )
    assert run_bounded(snippet) == "refused\n"


def test_the_limit_of_bins_is_itself_accepted():
    snippet = PRELUDE + (
        "print(ct.ECE(PROB, LABELS, bins=_limits.MAX_BINS) == ct.ECE(PROB, LABELS, bins=10**4))\n"
    )
    assert run_bounded(snippet) == "True\n"


# One row of 1,000 classes (8 KB) with a million bins: 10**9 cells (7.45 GiB for one array).
WIDE = "np.full((1, 1000), 1e-3), np.array([3])"
CELLS_CALLS = {
    "SCE": f"lambda: ct.SCE({WIDE}, bins=10**6)",
    "ACE (equal mass)": f"lambda: ct.ACE({WIDE}, bins=10**6)",
    "GCE class-wise": f"lambda: ct.GCE({WIDE}, bins=10**6, class_conditional=True)",
    "calibration_table": (
        f"lambda: ct.calibration_table({WIDE}, bins=10**6, class_conditional=True)"
    ),
    "CalibrationAccumulator": (f"lambda: ct.CalibrationAccumulator(bins=10**6).update({WIDE})"),
    "HistogramBinning": f"lambda: ct.HistogramBinning(bins=10**6).fit({WIDE})",
}


def test_a_table_of_too_many_cells_is_refused_by_name_before_allocating():
    pattern = (
        r"^`bins` times the score sets must be at most 16,777,216 table cells .*; got "
        r"1,000,000 bins for each of 1,000 classes, 1,000,000,000 cells: use fewer bins\.$"
    )
    snippet = PRELUDE + "".join(
        f"refused(ValueError, {pattern!r}, {call})\n" for call in CELLS_CALLS.values()
    )
    assert run_bounded(snippet) == "refused\n" * len(CELLS_CALLS)


def test_a_table_at_the_cell_limit_is_accepted():
    # the top label at the bin limit, and every class of a wide row at the default bins
    snippet = PRELUDE + (
        f"print(np.isfinite(ct.SCE({WIDE}, bins=16_000)))\n"
        "print(np.isfinite(ct.ECE(PROB, LABELS, bins=_limits.MAX_BINS)))\n"
    )
    assert run_bounded(snippet) == "True\nTrue\n"


def test_the_limits_are_far_above_real_use():
    assert MAX_BINS >= 10**6
    assert MAX_CLASSES >= 10**6
    assert MAX_TABLE_CELLS >= 15 * MAX_CLASSES  # every class of the largest at 15 bins


def _fitted_description(kind: str) -> dict:
    rng = np.random.default_rng(0)
    if kind == "histogram":
        scores, labels = rng.uniform(size=40), rng.integers(0, 2, 40)
        return ct.HistogramBinning(bins=3).fit(scores, labels).to_dict()
    logits, labels = rng.normal(size=(40, 3)), rng.integers(0, 3, 40)
    return ct.TemperatureScaling().fit(logits, labels).to_dict()


def _edited(kind: str, part: str, **values) -> str:
    description = _fitted_description(kind)
    description[part] = dict(description[part], **values)
    return json.dumps(description)


HOSTILE_MODELS = {
    "bins 10**12": (
        lambda: _edited("histogram", "params", bins=10**12),
        r"^model\.json: `bins` must be at most 1,000,000 bins",
    ),
    "n_classes_ 10**15": (
        lambda: _edited("temperature", "fitted", n_classes_=10**15),
        r"^model\.json: `n_classes_` must be an integer >= 2 and <= 1,000,000; got 10{15}\.",
    ),
    "denormal temperature_": (
        lambda: _edited("temperature", "fitted", temperature_=5e-324),
        r"^model\.json: `temperature_` must be a finite number in \[1e-100, 1e\+100\], or an "
        r"array of such numbers \(one per label\); got 5e-324",
    ),
    "nested 100,000 deep": (
        lambda: "[" * 100_000 + "]" * 100_000,
        r"^model\.json: not a JSON file written by `save` \(nested deeper than any description",
    ),
}


@pytest.mark.parametrize("case", HOSTILE_MODELS)
def test_a_hostile_model_file_is_refused_by_name_on_load(case, tmp_path):
    make, pattern = HOSTILE_MODELS[case]
    (tmp_path / "model.json").write_text(make(), encoding="utf-8")
    snippet = PRELUDE + (
        f"import os; os.chdir({str(tmp_path)!r})\n"
        f"refused(ValueError, {pattern!r}, lambda: ct.load_recalibrator('model.json'))\n"
    )
    assert run_bounded(snippet) == "refused\n"


def test_the_limit_of_classes_and_the_smallest_temperature_load(tmp_path):
    path = tmp_path / "model.json"
    path.write_text(_edited("temperature", "fitted", temperature_=1e-100), encoding="utf-8")
    assert ct.load_recalibrator(path).temperature_ == 1e-100
    path.write_text(_edited("temperature", "fitted", n_classes_=MAX_CLASSES), encoding="utf-8")
    assert ct.load_recalibrator(path).n_classes_ == MAX_CLASSES


FIFO_CALLS = {
    ".npz": "lambda: io.load_predictions('fifo.npz')",
    ".npz streamed": "lambda: list(io.iter_predictions('fifo.npz'))",
    ".npy": "lambda: io.load_predictions('fifo.npy', labels_path='labels.npy')",
    ".npy labels": "lambda: io.load_predictions('prob.npy', labels_path='fifo.npy')",
    ".npy streamed": "lambda: list(io.iter_predictions('fifo.npy', labels_path='labels.npy'))",
    ".csv": "lambda: io.load_predictions('fifo.csv')",
    ".jsonl": "lambda: list(io.iter_predictions('fifo.jsonl'))",
    ".parquet": "lambda: io.load_predictions('fifo.parquet')",
    ".parquet streamed": "lambda: list(io.iter_predictions('fifo.parquet'))",
}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("case", FIFO_CALLS)
def test_a_fifo_is_refused_before_it_is_opened(case, tmp_path):
    for suffix in (".npz", ".npy", ".csv", ".jsonl", ".parquet"):
        os.mkfifo(tmp_path / f"fifo{suffix}")
    np.save(tmp_path / "prob.npy", np.array([[0.7, 0.3], [0.4, 0.6]]))
    np.save(tmp_path / "labels.npy", np.array([0, 1]))
    pattern = r"fifo\.\w+ is not a regular file \(a FIFO, a device or a socket\)"
    snippet = PRELUDE + (
        f"import os; os.chdir({str(tmp_path)!r})\n"
        f"refused(ValueError, {pattern!r}, {FIFO_CALLS[case]})\n"
    )
    assert run_bounded(snippet, timeout=60) == "refused\n"


@pytest.mark.parametrize(
    "text",
    ["x" * 140_000 + ",label\n0.3,1\n", "p,label\n0.3," + "1" * 140_000 + "\n"],
    ids=["header cell", "first row cell"],
)
def test_a_csv_cell_beyond_the_csv_field_limit_is_refused_naming_the_file(text, tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text(text, encoding="utf-8")
    pattern = r"wide\.csv holds a cell that Python's csv module cannot read \(longer than 131,072"
    with pytest.raises(ValueError, match=pattern):
        io.load_predictions(path)
    with pytest.raises(ValueError, match=pattern):
        list(io.iter_predictions(path))


def _npy_member(shape: tuple, dtype: str, body: bytes) -> bytes:
    header = io_bytes.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": dtype, "fortran_order": False, "shape": shape}
    )
    return header.getvalue() + body


def _archive(path, compression: int, prob_shape=(2, 2), labels_shape=(2,)) -> None:
    prob = _npy_member(prob_shape, "<f8", np.array([[0.7, 0.3], [0.4, 0.6]]).tobytes())
    labels = _npy_member(labels_shape, "<i8", np.array([0, 1]).tobytes())
    with zipfile.ZipFile(path, "w", compression) as archive:
        archive.writestr("prob.npy", prob)
        archive.writestr("labels.npy", labels)


def _patched(path, local_offset: int, central_offset: int, value: bytes) -> None:
    """Overwrite a field of every member's local and central header (sizes, flags, method)."""
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", local_offset), (b"PK\x01\x02", central_offset)):
        start = data.find(signature)
        while start >= 0:
            data[start + offset : start + offset + len(value)] = value
            start = data.find(signature, start + 4)
    path.write_bytes(bytes(data))


def _claims_rows(path):
    _archive(path, zipfile.ZIP_DEFLATED, (10**12, 2), (10**12,))


def _claims_rows_stored(path):
    _archive(path, zipfile.ZIP_STORED, (10**12, 2), (10**12,))


def _lies_about_inflation(path):  # declared inflated size 4 GiB - 1 from a few bytes stored
    _archive(path, zipfile.ZIP_DEFLATED)
    _patched(path, 22, 24, struct.pack("<I", 2**32 - 1))


def _encrypted(path):  # general purpose flag bit 0: encrypted
    _archive(path, zipfile.ZIP_STORED)
    _patched(path, 6, 8, struct.pack("<H", 1))


def _unknown_compression(path):  # compression method 99 (AE-x), which zipfile lacks
    _archive(path, zipfile.ZIP_STORED)
    _patched(path, 8, 10, struct.pack("<H", 99))


HOSTILE_ARCHIVES = {
    "header claims 10**12 rows (deflated)": (_claims_rows, r"has a header claiming shape"),
    "header claims 10**12 rows (stored)": (_claims_rows_stored, r"has a header claiming shape"),
    "inflated size beyond 1032:1": (
        _lies_about_inflation,
        r"claims 4,294,967,295 bytes .* more than 1032:1",
    ),
    "encrypted member": (_encrypted, r"cannot be read \(File .*encrypted"),
    "unknown compression": (_unknown_compression, r"cannot be read \(.*compression"),
}


@pytest.mark.parametrize("read", ["load_predictions", "iter_predictions"])
@pytest.mark.parametrize("case", HOSTILE_ARCHIVES)
def test_a_hostile_npz_member_is_refused_naming_it_before_allocating(case, read, tmp_path):
    make, pattern = HOSTILE_ARCHIVES[case]
    make(tmp_path / "hostile.npz")
    snippet = PRELUDE + (
        f"import os; os.chdir({str(tmp_path)!r})\n"
        f"refused(ValueError, {'^array .* of hostile.npz ' + pattern!r}, "
        f"lambda: list(io.{read}('hostile.npz')))\n"
    )
    assert run_bounded(snippet) == "refused\n"


def test_an_honest_archive_reads_as_before(tmp_path):
    for compression in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        _archive(tmp_path / "honest.npz", compression)
        prob, labels = io.load_predictions(tmp_path / "honest.npz")
        assert prob.tolist() == [[0.7, 0.3], [0.4, 0.6]] and labels.tolist() == [0, 1]
        (block,) = io.iter_predictions(tmp_path / "honest.npz")
        assert block[0].tolist() == prob.tolist() and block[1].tolist() == [0, 1]


@pytest.mark.parametrize(
    "read",
    [
        lambda folder: io.load_predictions(folder / "prob.npy", labels_path=folder / "y.npy"),
        lambda folder: list(
            io.iter_predictions(folder / "prob.npy", labels_path=folder / "y.npy")
        ),
        lambda folder: io.load_predictions(folder / "pair.npz"),
        lambda folder: list(io.iter_predictions(folder / "pair.npz")),
    ],
    ids=[".npy", ".npy streamed", ".npz", ".npz streamed"],
)
def test_a_structured_dtype_is_refused_naming_the_file_and_its_fields(read, tmp_path):
    structured = np.zeros(3, dtype=[("cat", "<f8"), ("dog", "<f8")])
    labels = np.array([0, 1, 0])
    np.save(tmp_path / "prob.npy", structured)
    np.save(tmp_path / "y.npy", labels)
    np.savez(tmp_path / "pair.npz", prob=structured, labels=labels)
    with pytest.raises(
        ValueError,
        match=r"(prob\.npy|array 'prob' of .*pair\.npz) has a structured dtype "
        r"with fields \['cat', 'dog'\]; save a plain numeric array",
    ):
        read(tmp_path)


@pytest.mark.parametrize(
    "call",
    [
        "io.load_predictions('huge.npy', labels_path='y.npy')",
        "list(io.iter_predictions('huge.npy', labels_path='y.npy'))",
        "io.load_predictions('y.npy', labels_path='huge.npy')",
    ],
    ids=["predictions", "streamed", "labels"],
)
def test_a_npy_header_claiming_2_gib_is_refused_before_it_is_read(call, tmp_path):
    claim = (2**31).to_bytes(4, "little")
    (tmp_path / "huge.npy").write_bytes(b"\x93NUMPY\x02\x00" + claim + b"{'descr': '<f8'}")
    np.save(tmp_path / "y.npy", np.array([0, 1]))
    pattern = r"huge\.npy has a \.npy header claiming 2,147,483,648 bytes, more than the 10,000"
    snippet = PRELUDE + (
        f"import os; os.chdir({str(tmp_path)!r})\n"
        f"refused(ValueError, {pattern!r}, lambda: {call})\n"
    )
    assert run_bounded(snippet) == "refused\n"
