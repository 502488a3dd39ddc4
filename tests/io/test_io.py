"""Reading saved predictions: every bad file is one clear error that names it."""

from __future__ import annotations

import io

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from calibration_toolbox.io import load_predictions

PROB = np.array([[0.8, 0.2], [0.3, 0.7], [0.5, 0.5]])
LABELS = np.array([0, 1, 1])


def _npz_bytes(compressed: bool = False, **arrays) -> bytes:
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return buffer.getvalue()


def _good_npz() -> bytes:
    return _npz_bytes(probs=np.full((50, 2), 0.5), labels=np.zeros(50, int))


def _flip_byte(data: bytes, offset: int) -> bytes:
    damaged = bytearray(data)
    damaged[offset] ^= 0xFF
    return bytes(damaged)


def _npy_bytes(array: np.ndarray, allow_pickle: bool = False) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=allow_pickle)
    return buffer.getvalue()


# (file name, its bytes, the message expected); each names the file.
BAD_NPZ = {
    "empty": ("p.npz", b"", r"p\.npz is empty"),
    "truncated": ("p.npz", _good_npz()[:300], r"p\.npz is not a readable \.npz archive"),
    "truncated tail": (
        "p.npz",
        _good_npz()[: len(_good_npz()) // 2],
        r"p\.npz is not a readable \.npz archive \(truncated or corrupt",
    ),
    "bad checksum": (
        "p.npz",
        _flip_byte(_good_npz(), _good_npz().find(b"\x93NUMPY") + 200),
        r"array 'probs' of .*p\.npz cannot be read \(truncated or corrupt: Bad CRC-32",
    ),
    "corrupt deflate": (
        "p.npz",
        _flip_byte(
            _npz_bytes(True, probs=np.linspace(0, 1, 1000).reshape(500, 2), labels=np.arange(500)),
            100,
        ),
        r"p\.npz.* cannot be read \(truncated or corrupt",
    ),
    "text named npz": ("p.npz", b"prob,label\n0.5,1\n", r"p\.npz is not a \.npz archive"),
    "npy named npz": ("p.npz", _npy_bytes(PROB), r"p\.npz is not a \.npz archive \(a single"),
    "object member": (
        "p.npz",
        _npz_bytes(probs=PROB, labels=np.array([0, "a", None], dtype=object)),
        r"array 'labels' of .*p\.npz holds Python objects \(dtype=object\)",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_NPZ))
def test_a_bad_npz_is_one_clear_error(case, tmp_path):
    name, content, message = BAD_NPZ[case]
    (tmp_path / name).write_bytes(content)
    with pytest.raises(ValueError, match=message) as error:
        load_predictions(tmp_path / name)
    # Never NumPy's advice to load the file "unsafely using allow_pickle".
    assert "allow_pickle" not in str(error.value)
    assert "\n" not in str(error.value)


BAD_NPY = {
    "empty": (b"", r"p\.npy is empty"),
    "text": (b"0.5,0.5\n", r"p\.npy is not a \.npy file"),
    "truncated": (_npy_bytes(np.full((50, 2), 0.5))[:200], r"p\.npy cannot be read \(truncated"),
    "objects": (
        _npy_bytes(np.array([{"a": 1}], dtype=object), allow_pickle=True),
        r"p\.npy holds Python objects \(dtype=object\).*never unpickled",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_NPY))
def test_a_bad_npy_is_one_clear_error(case, tmp_path):
    content, message = BAD_NPY[case]
    (tmp_path / "p.npy").write_bytes(content)
    np.save(tmp_path / "y.npy", LABELS)
    with pytest.raises(ValueError, match=message) as error:
        load_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.npy")
    assert "allow_pickle" not in str(error.value)


def test_a_bad_labels_file_is_named(tmp_path):
    np.save(tmp_path / "p.npy", PROB)
    (tmp_path / "y.npy").write_bytes(b"")
    with pytest.raises(ValueError, match=r"y\.npy is empty"):
        load_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.npy")
    (tmp_path / "y.csv").write_text("0,1\n1,0\n0,1\n")
    with pytest.raises(ValueError, match=r"y\.csv must hold one column of labels; got 2"):
        load_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.csv")


BAD_CSV = {
    "empty": ("", r"p\.csv is empty"),
    "blank lines": ("\n  \n", r"p\.csv is empty"),
    "header only": ("p0,p1,label\n", r"p\.csv has a header but no rows"),
    "ragged": ("0.8,0.2,0\n0.3,0.7\n0.5,0.5,1\n", r"p\.csv line 2 has 2 cells; expected 3"),
    "ragged under header": ("p0,p1,label\n0.8,0.2,0\n0.3,0.7,1,4\n", r"line 3 has 4 cells"),
    "not a number": ("0.8,0.2,0\n0.3,abc,1\n", r"p\.csv line 2, cell 2: 'abc' is not a number"),
    "empty cell": ("0.8,,0\n0.3,0.7,1\n", r"p\.csv line 1, cell 2: '' is not a number"),
    "one column": ("label\n0\n1\n", r"p\.csv must hold prediction columns and a label column"),
    "not utf-8": ("\udcff\udcfe", r"p\.csv is not a UTF-8 text file"),
}


@pytest.mark.parametrize("case", sorted(BAD_CSV))
def test_a_bad_csv_is_one_clear_error(case, tmp_path):
    text, message = BAD_CSV[case]
    (tmp_path / "p.csv").write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ValueError, match=message):
        load_predictions(tmp_path / "p.csv")


def test_a_first_row_with_a_typo_is_an_error_not_a_skipped_header(tmp_path):
    (tmp_path / "p.csv").write_text("0.8,0.2x,0\n0.3,0.7,1\n")
    with pytest.raises(ValueError, match=r"line 1, cell 2: '0.2x' is not a number"):
        load_predictions(tmp_path / "p.csv")


def test_csv_layouts(tmp_path):
    (tmp_path / "a.csv").write_text("y,p0,p1\n0,0.8,0.2\n1,0.3,0.7\n")  # labels named first
    prob, labels = load_predictions(tmp_path / "a.csv")
    assert_array_equal(prob, [[0.8, 0.2], [0.3, 0.7]])
    assert_array_equal(labels, [0, 1])
    np.savetxt(tmp_path / "b.csv", np.column_stack([PROB, LABELS]), delimiter=",", header="a,b,c")
    prob, labels = load_predictions(tmp_path / "b.csv")  # "# a,b,c": labels last
    assert_array_equal(prob, PROB)
    assert_array_equal(labels, LABELS)
    (tmp_path / "c.csv").write_text("0.2,0\n0.7,1\n")  # one prediction column: P(y = 1)
    prob, labels = load_predictions(tmp_path / "c.csv")
    assert_array_equal(prob, [0.2, 0.7])
    assert_array_equal(labels, [0, 1])
    (tmp_path / "y.csv").write_text("label\n0\n1\n1\n")
    np.save(tmp_path / "p.npy", PROB)
    _, labels = load_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.csv")
    assert_array_equal(labels, LABELS)


BAD_SHAPES = {
    "3-D predictions": (
        np.ones((3, 2, 1)) / 2,
        LABELS,
        r"predictions in .*p\.npz must be a 1-D .* or a 2-D .*; got shape \(3, 2, 1\)",
    ),
    "0-d predictions": (np.array(0.5), LABELS, r"got shape \(\)"),
    "scalar labels": (PROB, np.array(1), r"labels \(array 'y' of .*p\.npz\) must be a 1-D"),
    "2-D labels": (PROB, LABELS[:, None], r"labels .* must be a 1-D .*; got shape \(3, 1\)"),
    "fewer labels": (PROB, LABELS[:2], r"p\.npz holds 3 rows of predictions but there are 2"),
    "more labels": (PROB, np.r_[LABELS, 0], r"holds 3 rows of predictions but there are 4"),
    "no rows": (np.ones((0, 2)), np.ones(0, int), r"p\.npz holds no rows"),
}


@pytest.mark.parametrize("case", sorted(BAD_SHAPES))
def test_shapes_are_checked_at_load(case, tmp_path):
    prob, labels, message = BAD_SHAPES[case]
    np.savez(tmp_path / "p.npz", prob=prob, y=labels)
    with pytest.raises(ValueError, match=message):
        load_predictions(tmp_path / "p.npz")


def test_npy_and_labels_of_different_lengths(tmp_path):
    np.save(tmp_path / "p.npy", PROB)
    np.save(tmp_path / "y.npy", LABELS[:2])
    with pytest.raises(
        ValueError, match=r"3 rows of predictions but there are 2 labels \(.*y\.npy"
    ):
        load_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.npy")


def test_missing_files_and_directories(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"missing\.npz: no such file"):
        load_predictions(tmp_path / "missing.npz")
    np.save(tmp_path / "p.npy", PROB)
    with pytest.raises(FileNotFoundError, match=r"y\.npy: no such file"):
        load_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.npy")
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(ValueError, match=r"d\.csv is a directory"):
        load_predictions(tmp_path / "d.csv")


def test_options_that_do_not_apply_are_refused(tmp_path):
    np.savez(tmp_path / "p.npz", probs=PROB, labels=LABELS)
    np.save(tmp_path / "p.npy", PROB)
    (tmp_path / "p.csv").write_text("0.2,0\n")
    with pytest.raises(ValueError, match=r"`labels_path` is only for \.npy predictions"):
        load_predictions(tmp_path / "p.npz", labels_path=tmp_path / "p.npy")
    with pytest.raises(ValueError, match=r"`labels_path` is only for \.npy predictions"):
        load_predictions(tmp_path / "p.csv", labels_path=tmp_path / "p.npy")
    with pytest.raises(ValueError, match=r"`prob_key` is only for \.npz files"):
        load_predictions(tmp_path / "p.npy", labels_path=tmp_path / "p.npy", prob_key="p")
    with pytest.raises(ValueError, match=r"`labels_key` is only for \.npz files"):
        load_predictions(tmp_path / "p.csv", labels_key="y")


def test_loader_keys_and_errors(tmp_path):
    np.savez(tmp_path / "a.npz", scores=np.eye(3), truth=np.arange(3))
    _, labels = load_predictions(tmp_path / "a.npz")  # the only 2-D and 1-D arrays
    assert_array_equal(labels, [0, 1, 2])
    with pytest.raises(ValueError, match=r"`labels_key` 'y' is not in a\.npz"):
        load_predictions(tmp_path / "a.npz", labels_key="y")
    np.savez(tmp_path / "b.npz", one=np.eye(3), two=np.eye(3), y=np.arange(3))
    with pytest.raises(ValueError, match=r"cannot tell which array of b\.npz.*`prob_key`"):
        load_predictions(tmp_path / "b.npz")
    with pytest.raises(ValueError, match=r"`path` must end in \.npz, \.npy or \.csv"):
        load_predictions(tmp_path / "c.json")
    np.save(tmp_path / "c.npy", np.eye(3))
    with pytest.raises(ValueError, match="`labels_path` is needed"):
        load_predictions(tmp_path / "c.npy")


def test_only_the_arrays_used_are_read(tmp_path):
    # An unreadable array the loader is not asked for does not stop it.
    np.savez(tmp_path / "p.npz", probs=PROB, labels=LABELS, notes=np.array([None], dtype=object))
    prob, _ = load_predictions(tmp_path / "p.npz")
    assert_array_equal(prob, PROB)


# -- separators, pandas' files, names ------------------------------------------------------
def test_separators_are_told_from_the_first_line(tmp_path):
    for sep, name in ((",", "a.csv"), (";", "b.csv"), ("\t", "c.tsv"), ("\t", "d.csv")):
        lines = [sep.join(["p0", "p1", "label"])] + [
            sep.join([*map(str, row.tolist()), str(label)])
            for row, label in zip(PROB, LABELS, strict=True)
        ]
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        prob, labels = load_predictions(tmp_path / name)
        assert_array_equal(prob, PROB)
        assert_array_equal(labels, LABELS)
    (tmp_path / "e.csv").write_text("0.8|0.2|0\n0.3|0.7|1\n")
    prob, _ = load_predictions(tmp_path / "e.csv", sep="|")
    assert_array_equal(prob, PROB[:2])


BAD_SEPARATORS = {
    "ambiguous": ("p0,p1;label\n0.8,0.2;0\n", {}, r"p\.csv line 1 holds both ',' and ';'.*`sep`"),
    "mixed": ("p0;p1;label\n0.8;0.2;0\n0.3,0.7,1\n", {}, r"p\.csv line 3 is separated by ','"),
    "bad sep": ("0.8,0.2,0\n", {"sep": ",,"}, r"`sep` must be one character"),
}


@pytest.mark.parametrize("case", sorted(BAD_SEPARATORS))
def test_separator_errors_name_the_line(case, tmp_path):
    text, options, message = BAD_SEPARATORS[case]
    (tmp_path / "p.csv").write_text(text)
    with pytest.raises(ValueError, match=message):
        load_predictions(tmp_path / "p.csv", **options)


def test_pandas_index_column_and_quoted_names(tmp_path):
    # What df.to_csv(path) writes: an unnamed index column, names quoted when they need it.
    (tmp_path / "p.csv").write_text(
        ',p0,p1,p2,label\n0,0.7,0.2,0.1,cat\n1,0.1,0.8,0.1,"dog, big"\n'
        '2,0.2,0.2,0.6,"say ""hi"""\n'
    )
    classes = ["cat", "dog, big", 'say "hi"']
    prob, labels = load_predictions(tmp_path / "p.csv", classes=classes)
    assert_array_equal(prob, [[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]])
    assert_array_equal(labels, [0, 1, 2])
    # pd.Series(y).to_csv(path): index, then the labels under the name 0
    (tmp_path / "y.csv").write_text(",0\n0,0\n1,1\n2,1\n")
    np.save(tmp_path / "p.npy", PROB)
    _, labels = load_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.csv")
    assert_array_equal(labels, LABELS)
    (tmp_path / "u.csv").write_text("Unnamed: 0;p0;p1;y\n5;0.8;0.2;0\n9;0.3;0.7;1\n")
    prob, labels = load_predictions(tmp_path / "u.csv")
    assert_array_equal(prob, PROB[:2])
    # an unnamed first column of fractions is data, not an index: never dropped silently
    (tmp_path / "f.csv").write_text(",p1,label\n0.8,0.2,0\n")
    with pytest.raises(ValueError, match=r"f\.csv: the first column has no name.*not whole"):
        load_predictions(tmp_path / "f.csv")


def test_names_without_classes_and_unknown_names(tmp_path):
    (tmp_path / "p.csv").write_text("p0,p1,label\n0.8,0.2,cat\n0.3,0.7,dog\n0.5,0.5,emu\n")
    with pytest.raises(
        TypeError,
        match=r"p\.csv: .*class names \('cat', 'dog', 'emu'\).*"
        r"`classes` \(`--classes` on the command line\)",
    ):
        load_predictions(tmp_path / "p.csv")
    with pytest.raises(
        ValueError,
        match=r"p\.csv: `labels` holds 'emu' \(row 2\), which is "
        r"not in `classes`",
    ):
        load_predictions(tmp_path / "p.csv", classes=["cat", "dog"])
    np.savez(tmp_path / "n.npz", probs=PROB, labels=np.array(["b", "a", "a"]))
    _, labels = load_predictions(tmp_path / "n.npz", classes=["b", "a"])
    assert_array_equal(labels, LABELS)
    with pytest.raises(TypeError, match=r"n\.npz: `labels` must hold real numbers.*--classes"):
        load_predictions(tmp_path / "n.npz")
    # numbers in a CSV are names too with classes: "7" is column 1 of classes [3, 7]
    (tmp_path / "d.csv").write_text("0.8,0.2,7\n0.3,0.7,3\n")
    assert_array_equal(load_predictions(tmp_path / "d.csv", classes=[3, 7])[1], [1, 0])


# -- memory maps and blocks ----------------------------------------------------------------
def test_npy_is_memory_mapped_read_only_and_never_written(tmp_path):
    from calibration_toolbox import (
        ECE,
        SCE,
        DirichletCalibration,
        IsotonicCalibration,
        PlattScaling,
        TemperatureScaling,
        VectorScaling,
        brier_score,
        negative_log_likelihood,
    )

    rng = np.random.default_rng(5)
    logits = rng.normal(size=(60, 3)).astype(np.float32)
    prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    for name, array in (("z.npy", logits), ("p.npy", prob), ("p1.npy", prob[:, 1].copy())):
        np.save(tmp_path / name, array)
    np.save(tmp_path / "y.npy", rng.integers(0, 3, 60))
    z, y = load_predictions(tmp_path / "z.npy", labels_path=tmp_path / "y.npy")
    p, _ = load_predictions(tmp_path / "p.npy", labels_path=tmp_path / "y.npy")
    p1, _ = load_predictions(tmp_path / "p1.npy", labels_path=tmp_path / "y.npy")
    for array in (z, y, p, p1):
        assert isinstance(array, np.memmap)
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 0
    before = [np.array(a) for a in (z, p, p1, y)]
    ECE(p, y), SCE(p, y), brier_score(p, y), negative_log_likelihood(z, y, logits=True)
    SCE(p1, np.minimum(y, 1)), ECE(z, y, logits=True, renormalize=False)
    for model, X in (
        (TemperatureScaling(), z),
        (VectorScaling(), z),
        (DirichletCalibration(), p),
        (PlattScaling(), z),
        (IsotonicCalibration(), p),
    ):
        model.fit(X, y).predict_proba(X)
    for old, new in zip(before, (z, p, p1, y), strict=True):
        assert_array_equal(old, new)


def _write_every_format(tmp_path, prob, labels):
    np.save(tmp_path / "p.npy", prob)
    np.save(tmp_path / "y.npy", labels)
    np.savetxt(tmp_path / "y.csv", labels, fmt="%d", header="label", comments="")
    np.savez(tmp_path / "a.npz", probs=prob, labels=labels)
    np.savez_compressed(tmp_path / "c.npz", probs=prob, labels=labels)
    np.savez(tmp_path / "f.npz", probs=np.asfortranarray(prob), labels=labels)
    rows = "\n".join(
        ",".join([*map(repr, row.tolist()), str(k)]) for row, k in zip(prob, labels, strict=True)
    )
    (tmp_path / "p.csv").write_text(
        ",".join(f"p{k}" for k in range(prob.shape[1])) + ",y\n" + rows + "\n"
    )
    return [
        ("p.npy", {"labels_path": tmp_path / "y.npy"}),
        ("p.npy", {"labels_path": tmp_path / "y.csv"}),
        ("a.npz", {}),
        ("c.npz", {}),
        ("f.npz", {}),
        ("p.csv", {}),
    ]


@pytest.mark.parametrize("block_rows", [1, 7, 64])
def test_blocks_concatenate_to_the_whole_file(block_rows, tmp_path):
    from calibration_toolbox.io import iter_predictions

    rng = np.random.default_rng(11)
    prob = rng.dirichlet(np.ones(4), size=50)
    labels = rng.integers(0, 4, size=50)
    for name, options in _write_every_format(tmp_path, prob, labels):
        whole = load_predictions(tmp_path / name, **options)
        blocks = list(iter_predictions(tmp_path / name, block_rows=block_rows, **options))
        assert all(len(p) == len(y) <= block_rows for p, y in blocks), name
        assert_array_equal(np.concatenate([p for p, _ in blocks]), whole[0])
        assert_array_equal(np.concatenate([y for _, y in blocks]), whole[1])
        assert_array_equal(whole[0], prob)


def test_block_errors(tmp_path):
    from calibration_toolbox.io import iter_predictions

    np.savez(tmp_path / "short.npz", probs=PROB, labels=LABELS[:2])
    with pytest.raises(ValueError, match=r"3 rows of predictions but there are 2 labels"):
        list(iter_predictions(tmp_path / "short.npz"))
    damaged = _flip_byte(_good_npz(), _good_npz().find(b"\x93NUMPY") + 200)
    (tmp_path / "bad.npz").write_bytes(damaged)
    with pytest.raises(ValueError, match=r"array 'probs' of .*bad\.npz cannot be read"):
        list(iter_predictions(tmp_path / "bad.npz", block_rows=8))
    (tmp_path / "p.csv").write_text("0.8,0.2,0\n0.3,0.7,1\n0.5,0.5\n")
    with pytest.raises(ValueError, match=r"p\.csv line 3 has 2 cells; expected 3"):
        list(iter_predictions(tmp_path / "p.csv", block_rows=2))
    (tmp_path / "n.csv").write_text("0.8,0.2,a\n0.3,0.7,b\n0.5,0.5,c\n")
    with pytest.raises(ValueError, match=r"`labels` holds 'c' \(row 2\)"):
        list(iter_predictions(tmp_path / "n.csv", block_rows=2, classes=["a", "b"]))
    with pytest.raises(ValueError, match=r"`block_rows` must be an integer >= 1"):
        iter_predictions(tmp_path / "n.csv", block_rows=0)


# -- issue 17: booleans, chosen columns, the top-label layout ------------------------------
# The text pandas' df.to_csv writes for a bool column (True/False), R's write.csv (TRUE/FALSE)
# and polars' or Spark's writers (true/false); written literally so that no test needs pandas.
@pytest.mark.parametrize(
    ("true", "false"), [("True", "False"), ("TRUE", "FALSE"), ("true", "false")]
)
@pytest.mark.parametrize("block_rows", [None, 1, 2])
def test_boolean_targets_as_pandas_and_r_write_them(true, false, block_rows, tmp_path):
    from calibration_toolbox.io import iter_predictions

    (tmp_path / "p.csv").write_text(
        f",confidence,label\n0,0.9,{true}\n1,0.4,{false}\n2,0.7,{true}\n"
    )
    if block_rows is None:
        prob, labels = load_predictions(tmp_path / "p.csv")
    else:
        blocks = list(iter_predictions(tmp_path / "p.csv", block_rows=block_rows))
        prob = np.concatenate([p for p, _ in blocks])
        labels = np.concatenate([y for _, y in blocks])
    assert_array_equal(prob, [0.9, 0.4, 0.7])
    assert_array_equal(labels, [1, 0, 1])
    (tmp_path / "q.tsv").write_text(f"p0\tp1\ty\n0.2\t0.8\t{true}\n0.6\t0.4\t{false}\n")
    prob, labels = load_predictions(tmp_path / "q.tsv")
    assert_array_equal(prob, [[0.2, 0.8], [0.6, 0.4]])
    assert_array_equal(labels, [1, 0])


BAD_BOOLEANS = {
    "a word": ("p0,correct\n0.8,True\n0.3,maybe\n", r"line 3, column 'correct': 'maybe' is not"),
    "a number": ("p0,correct\n0.8,True\n\n0.3,1\n", r"line 4, column 'correct': '1' is not True"),
    "another case": ("0.8,False\n0.3,tRUE\n", r"p\.csv line 2, cell 2: 'tRUE' is not True or"),
}


@pytest.mark.parametrize("case", sorted(BAD_BOOLEANS))
@pytest.mark.parametrize("block_rows", [None, 1])
def test_a_word_that_is_not_true_or_false_names_its_line_and_column(case, block_rows, tmp_path):
    from calibration_toolbox.io import iter_predictions

    text, message = BAD_BOOLEANS[case]
    (tmp_path / "p.csv").write_text(text)
    with pytest.raises(ValueError, match=message):
        if block_rows is None:
            load_predictions(tmp_path / "p.csv")
        else:
            list(iter_predictions(tmp_path / "p.csv", block_rows=block_rows))


EXTRA_COLUMNS = "id,p_cat,p_dog,weight,animal\n7,0.8,0.2,1.5,0\n9,0.3,0.7,0.5,1\n"


@pytest.mark.parametrize(
    ("prob_column", "expected"),
    [
        ("p_*", [[0.8, 0.2], [0.3, 0.7]]),
        (["p_cat", "p_dog"], [[0.8, 0.2], [0.3, 0.7]]),
        (["P_Dog", "p_cat"], [[0.2, 0.8], [0.7, 0.3]]),  # names in any case, in the order given
        ("p_dog", [0.2, 0.7]),  # one column: P(y = 1)
    ],
)
def test_prob_column_and_labels_column_choose_the_columns_of_a_csv(
    prob_column, expected, tmp_path
):
    from calibration_toolbox.io import iter_predictions

    for name, sep in (("p.csv", ","), ("p.tsv", "\t")):
        (tmp_path / name).write_text(EXTRA_COLUMNS.replace(",", sep))
        options = {"prob_column": prob_column, "labels_column": "animal"}
        prob, labels = load_predictions(tmp_path / name, **options)
        assert_array_equal(prob, expected)
        assert_array_equal(labels, [0, 1])
        blocks = list(iter_predictions(tmp_path / name, block_rows=1, **options))
        assert_array_equal(np.concatenate([p for p, _ in blocks]), expected)
    # without labels_column: the named label column, else the last column not chosen
    (tmp_path / "q.csv").write_text("p0,p1,weight\n0.8,0.2,0\n0.3,0.7,1\n")
    prob, labels = load_predictions(tmp_path / "q.csv", prob_column="p*")
    assert_array_equal(prob, [[0.8, 0.2], [0.3, 0.7]])
    assert_array_equal(labels, [0, 1])


# Columns no option chose hold anything: text, quoted separators and quotes, empty cells.
TEXT_COLUMNS = (
    'id,p_cat,p_dog,region,note,animal\n7,0.8,0.2,north,"a, b",0\n'
    '9,0.3,0.7,"say ""hi""",,1\n8,0.6,0.4,north,x,cat\n'
)


def test_columns_no_option_chose_are_read_as_text_and_left_aside(tmp_path):
    from calibration_toolbox.io import iter_predictions, read_column

    path = tmp_path / "t.csv"
    path.write_text(TEXT_COLUMNS.replace(",cat\n", ",1\n"))
    options = {"prob_column": "p_*", "labels_column": "animal"}
    prob, labels = load_predictions(path, **options)
    assert_array_equal(prob, [[0.8, 0.2], [0.3, 0.7], [0.6, 0.4]])
    assert_array_equal(labels, [0, 1, 1])
    blocks = list(iter_predictions(path, block_rows=1, **options))
    assert_array_equal(np.concatenate([p for p, _ in blocks]), prob)
    assert_array_equal(np.concatenate([y for _, y in blocks]), labels)
    assert read_column(path, "region").tolist() == ["north", 'say "hi"', "north"]
    assert read_column(path, "id").tolist() == [7, 9, 8]  # whole numbers: integers
    (tmp_path / "h.csv").write_text("p0,p1,region\n")
    assert read_column(tmp_path / "h.csv", "region").shape == (0,)
    (tmp_path / "s.csv").write_text("p0,p1,region\n0.2,0.8,a\n0.4,0.6\n")
    with pytest.raises(ValueError, match=r"s\.csv line 3 has no cell in column 'region'"):
        read_column(tmp_path / "s.csv", "region")
    # a label that is no number is still a name to map (here: refused without classes)
    path.write_text(TEXT_COLUMNS)
    with pytest.raises((TypeError, ValueError), match="cat"):
        load_predictions(path, **options)
    # a chosen column still must hold numbers
    path.write_text(TEXT_COLUMNS.replace("0.3,0.7", "0.3,abc").replace(",cat\n", ",1\n"))
    with pytest.raises(ValueError, match=r"line 3, cell 3: 'abc' is not a number"):
        load_predictions(path, **options)


BAD_COLUMNS = {
    "missing": ({"prob_column": "p_emu"}, r"`prob_column` 'p_emu' is not a column of .*p\.csv"),
    "no match": ({"prob_column": "q_*"}, r"`prob_column` 'q_\*' matches no column of .*p\.csv"),
    "missing label": ({"labels_column": "y"}, r"`labels_column` 'y' is not a column of"),
    "no header": ({"prob_column": "p0"}, r"`prob_column` needs a header naming the columns"),
}


@pytest.mark.parametrize("case", sorted(BAD_COLUMNS))
def test_columns_that_are_not_there(case, tmp_path):
    options, message = BAD_COLUMNS[case]
    text = "0.8,0.2,0\n" if case == "no header" else EXTRA_COLUMNS
    (tmp_path / "p.csv").write_text(text)
    with pytest.raises(ValueError, match=message):
        load_predictions(tmp_path / "p.csv", **options)


def test_scores_beside_an_id_column_need_prob_column(tmp_path):
    # pandas' df.to_csv(index=False) of an evaluation: an id, the confidence, the target
    (tmp_path / "p.csv").write_text("id,confidence,correct\n0,0.9,True\n1,0.6,False\n")
    with pytest.raises(ValueError, match=r"holds 2 columns beside the labels \(id, confidence\)"):
        load_predictions(tmp_path / "p.csv", scores=True)
    scores, target = load_predictions(tmp_path / "p.csv", scores=True, prob_column="confidence")
    assert_array_equal(scores, [0.9, 0.6])
    assert_array_equal(target, [1, 0])


TOP_LABEL = "true_label,pred_label,confidence\n3,3,0.9\n5,2,0.6\n1,1,0.8\n"


@pytest.mark.parametrize(
    ("text", "options"),
    [
        (TOP_LABEL, {}),
        (",true_label,pred_label,confidence\n0,3,3,0.9\n1,5,2,0.6\n2,1,1,0.8\n", {}),
        ("id,label,y_pred,confidence\n0,cat,cat,0.9\n1,emu,dog,0.6\n2,dog,dog,0.8\n", {}),
        (
            "gt,guess,p\n3,3,0.9\n5,2,0.6\n1,1,0.8\n",
            {"pred_column": "guess", "labels_column": "gt"},
        ),
        ("y,pred_class,id,conf\n3,3,0,0.9\n5,2,1,0.6\n1,1,2,0.8\n", {"prob_column": "conf"}),
    ],
)
@pytest.mark.parametrize("block_rows", [None, 1, 2])
def test_the_top_label_layout_is_read_as_scores_against_hits(text, options, block_rows, tmp_path):
    from calibration_toolbox.io import iter_predictions

    (tmp_path / "dump.csv").write_text(text)
    if block_rows is None:
        scores, target = load_predictions(tmp_path / "dump.csv", scores=True, **options)
    else:
        blocks = iter_predictions(
            tmp_path / "dump.csv", block_rows=block_rows, scores=True, **options
        )
        blocks = list(blocks)
        scores = np.concatenate([p for p, _ in blocks])
        target = np.concatenate([y for _, y in blocks])
    assert_array_equal(scores, [0.9, 0.6, 0.8])
    assert_array_equal(target, [1, 0, 1])


def test_the_top_label_layout_needs_scores_and_one_score_column(tmp_path):
    (tmp_path / "dump.csv").write_text(TOP_LABEL)
    with pytest.raises(
        ValueError,
        match=r"dump\.csv holds predicted labels \(column 'pred_label'\).*`scores=True`",
    ):
        load_predictions(tmp_path / "dump.csv")
    (tmp_path / "two.csv").write_text("label,pred_label,a,b\n1,1,0.5,0.2\n")
    with pytest.raises(ValueError, match=r"needs one column of scores; got \['a', 'b'\]"):
        load_predictions(tmp_path / "two.csv", scores=True)
    (tmp_path / "unnamed.csv").write_text("gt,pred_label,confidence\n1,1,0.5\n")
    with pytest.raises(
        ValueError, match=r"cannot tell which column of .*unnamed\.csv.*`labels_column`"
    ):
        load_predictions(tmp_path / "unnamed.csv", scores=True)


@pytest.mark.parametrize("block_rows", [None, 2])
def test_a_top_label_npz_is_read_as_scores_against_hits(block_rows, tmp_path):
    from calibration_toolbox.io import iter_predictions

    arrays = {"true_label": [3, 5, 1], "pred_label": [3, 2, 1], "confidence": [0.9, 0.6, 0.8]}
    np.savez(tmp_path / "dump.npz", **arrays)
    if block_rows is None:
        scores, target = load_predictions(tmp_path / "dump.npz", scores=True)
    else:
        blocks = list(iter_predictions(tmp_path / "dump.npz", block_rows=2, scores=True))
        scores = np.concatenate([p for p, _ in blocks])
        target = np.concatenate([y for _, y in blocks])
    assert_array_equal(scores, [0.9, 0.6, 0.8])
    assert_array_equal(target, [1, 0, 1])
    # never confidence against true_label (a binary true_label would pass as a 0/1 target)
    with pytest.raises(ValueError, match=r"dump\.npz holds predicted labels .*`scores=True`"):
        load_predictions(tmp_path / "dump.npz")
    np.savez(tmp_path / "short.npz", **{**arrays, "pred_label": [3, 2]})
    with pytest.raises(ValueError, match=r"3 rows .* but there are 2 labels \(array 'pred_label'"):
        if block_rows is None:
            load_predictions(tmp_path / "short.npz", scores=True)
        else:
            list(iter_predictions(tmp_path / "short.npz", block_rows=2, scores=True))
