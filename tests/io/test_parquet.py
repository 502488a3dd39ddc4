"""Parquet input (pyarrow, the `parquet` extra): both layouts, row groups, nulls, lengths."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from calibration_toolbox.io import iter_predictions, load_predictions

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

NAMES = np.array(["cat", "dog", "emu"])


def _problem(n=23):
    rng = np.random.default_rng(2)
    return rng.dirichlet(np.ones(3), size=n).astype(np.float32), rng.integers(0, 3, size=n)


def _write(path, columns, row_group_size=5):
    pq.write_table(pa.table(columns), path, row_group_size=row_group_size)
    return path


@pytest.mark.parametrize("list_type", ["list", "fixed_size_list", "large_list"])
def test_a_column_of_lists(list_type, tmp_path):
    prob, labels = _problem()
    kind = {
        "list": pa.list_(pa.float32()),
        "fixed_size_list": pa.list_(pa.float32(), 3),
        "large_list": pa.large_list(pa.float32()),
    }[list_type]
    path = _write(tmp_path / "p.parquet", {"probs": pa.array(list(prob), kind), "label": labels})
    got_prob, got_labels = load_predictions(path)  # default names, as the .npz keys
    assert got_prob.dtype == np.float32
    assert_array_equal(got_prob, prob)
    assert_array_equal(got_labels, labels)
    blocks = list(iter_predictions(path, block_rows=4))
    assert max(len(y) for _, y in blocks) <= 4
    assert_array_equal(np.concatenate([p for p, _ in blocks]), prob)
    assert_array_equal(np.concatenate([y for _, y in blocks]), labels)


def test_one_column_per_class_and_string_labels(tmp_path):
    prob, labels = _problem()
    columns = {f"prob_{k}": prob[:, k] for k in range(3)}
    columns["id"] = np.arange(len(labels))
    columns["truth"] = NAMES[labels]
    path = _write(tmp_path / "w.parquet", columns)
    for prob_column in ("prob_*", ["prob_0", "prob_1", "prob_2"]):
        got_prob, got_labels = load_predictions(
            path, prob_column=prob_column, labels_column="truth", classes=NAMES
        )
        assert_array_equal(got_prob, prob)
        assert_array_equal(got_labels, labels)
    blocks = iter_predictions(
        path, prob_column="prob_*", labels_column="truth", classes=NAMES, block_rows=6
    )
    assert_array_equal(np.concatenate([y for _, y in blocks]), labels)
    with pytest.raises(TypeError, match=r"w\.parquet.*class names.*--classes"):
        load_predictions(path, prob_column="prob_*", labels_column="truth")
    # dictionary-encoded strings (pandas categoricals) read the same
    columns["truth"] = pa.array(NAMES[labels]).dictionary_encode()
    path = _write(tmp_path / "d.parquet", columns)
    _, got_labels = load_predictions(
        path, prob_column="prob_*", labels_column="truth", classes=NAMES
    )
    assert_array_equal(got_labels, labels)


BAD = {
    "null row": (
        {"probs": pa.array([[0.5, 0.5], None, [0.1, 0.9]]), "label": [0, 1, 1]},
        {},
        r"column 'probs' of .*p\.parquet holds a null at row 1",
    ),
    "null entry": (
        {"probs": pa.array([[0.5, 0.5], [0.2, None], [0.1, 0.9]]), "label": [0, 1, 1]},
        {},
        r"column 'probs' of .*p\.parquet holds a null entry at row 1",
    ),
    "null label": (
        {"probs": pa.array([[0.5, 0.5], [0.2, 0.8], [0.1, 0.9]]), "label": [0, None, 1]},
        {},
        r"column 'label' of .*p\.parquet holds a null at row 1",
    ),
    "ragged lists": (
        {"probs": pa.array([[0.5, 0.5], [0.2, 0.8], [0.1, 0.8, 0.1]]), "label": [0, 1, 1]},
        {},
        r"(lists of one length .*; row 2 has 3 entries|row 2 has predictions of shape \(3,\))",
    ),
    "no known name": (
        {"a": [0.5, 0.2, 0.1], "label": [0, 1, 1]},
        {},
        r"cannot tell which column of .*p\.parquet to use \(\['a', 'label'\]\); pass "
        r"`prob_column`",
    ),
    "missing column": (
        {"probs": pa.array([[0.5, 0.5]]), "label": [0]},
        {"labels_column": "y"},
        r"`labels_column` 'y' is not a column of .*p\.parquet",
    ),
    "no match": (
        {"probs": pa.array([[0.5, 0.5]]), "label": [0]},
        {"prob_column": "q_*"},
        r"`prob_column` 'q_\*' matches no column",
    ),
    "strings as predictions": (
        {"probs": ["a"], "label": [0]},
        {},
        r"column 'probs' of .* must hold numbers or lists of numbers; got string",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("blocks", [False, True])
def test_bad_parquet_is_one_clear_error(case, blocks, tmp_path):
    columns, options, message = BAD[case]
    path = _write(tmp_path / "p.parquet", columns, row_group_size=2)
    with pytest.raises(ValueError, match=message):
        if blocks:
            list(iter_predictions(path, block_rows=2, **options))
        else:
            load_predictions(path, **options)


def test_not_parquet_and_options_elsewhere(tmp_path):
    (tmp_path / "p.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(ValueError, match=r"p\.parquet is not a readable \.parquet file"):
        load_predictions(tmp_path / "p.parquet")
    np.savez(tmp_path / "p.npz", probs=np.eye(2), labels=[0, 1])
    with pytest.raises(
        ValueError, match=r"`prob_column` is only for \.csv, \.parquet and \.jsonl"
    ):
        load_predictions(tmp_path / "p.npz", prob_column="probs")


def test_without_pyarrow_the_error_says_what_to_install(tmp_path, monkeypatch):
    path = _write(tmp_path / "p.parquet", {"probs": pa.array([[0.5, 0.5]]), "label": [0]})
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r'pip install "calibration-toolbox\[parquet\]"'):
        load_predictions(path)


@pytest.mark.parametrize(
    "labels", [np.array([3, 5, 1, 1]), np.array(["cat", "dog", "emu", "emu"])]
)
def test_a_top_label_dump_is_read_as_scores_against_hits(labels, tmp_path):
    predicted = labels[[0, 0, 2, 3]]  # right, wrong, right, right
    columns = {"true_label": labels, "pred_label": predicted, "confidence": [0.9, 0.6, 0.8, 0.7]}
    path = _write(tmp_path / "dump.parquet", columns, row_group_size=3)
    scores, target = load_predictions(path, scores=True)
    assert_array_equal(scores, [0.9, 0.6, 0.8, 0.7])
    assert_array_equal(target, [1, 0, 1, 1])
    blocks = list(iter_predictions(path, block_rows=2, scores=True))
    assert_array_equal(np.concatenate([y for _, y in blocks]), target)
    with pytest.raises(ValueError, match=r"holds predicted labels \(column 'pred_label'\)"):
        load_predictions(path)
