"""``io.read_multilabel``: the (N, K) scores, the (N, K) 0/1 label matrix and the label names.

And the refusal of a label matrix by ``load_predictions`` (the multiclass reader), which
says where such a matrix is read.
"""

from __future__ import annotations

import numpy as np
import pytest

from calibration_toolbox.io import load_predictions, read_multilabel

PROB = np.array([[0.9, 0.2, 0.4], [0.3, 0.7, 0.5]])
LABELS = np.array([[1, 0, 0], [0, 1, 1]], dtype=np.int8)


def test_npz_with_names(tmp_path):
    path = tmp_path / "tags.npz"
    np.savez(path, probabilities=PROB, y=LABELS, class_names=np.array([3, 7, 9]))
    prob, labels, names = read_multilabel(path)
    np.testing.assert_array_equal(prob, PROB)
    np.testing.assert_array_equal(labels, LABELS)
    assert names == ["3", "7", "9"]


def test_npz_keys_and_npy_pair(tmp_path):
    np.savez(tmp_path / "a.npz", first=PROB, second=LABELS, labels=LABELS[:, 0])
    prob, labels, names = read_multilabel(
        tmp_path / "a.npz", prob_key="first", labels_key="second"
    )
    np.testing.assert_array_equal(labels, LABELS)
    assert names is None
    np.save(tmp_path / "p.npy", PROB)
    np.save(tmp_path / "y.npy", LABELS)
    prob, labels, names = read_multilabel(tmp_path / "p.npy", labels_path=tmp_path / "y.npy")
    np.testing.assert_array_equal(prob, PROB)
    np.testing.assert_array_equal(labels, LABELS)
    assert names is None


@pytest.mark.parametrize(
    ("arrays", "match"),
    [
        ({"prob": PROB, "labels": LABELS[:, 0]}, r"1-D class labels.*`load_predictions`"),
        ({"prob": PROB, "labels": LABELS[:, :2]}, r"must be non-empty 2-D arrays of one shape"),
        ({"prob": PROB[:, 0], "labels": LABELS}, r"must be non-empty 2-D arrays of one shape"),
        (
            {"prob": PROB, "labels": LABELS, "label_names": ["a", "b"]},
            r"1-D array of 3 names",
        ),
        (
            {"prob": PROB, "labels": LABELS, "label_names": [0.5, 1.5, 2.5]},
            r"1-D array of 3 names",
        ),
    ],
)
def test_refusals(tmp_path, arrays, match):
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ValueError, match=match):
        read_multilabel(tmp_path / "bad.npz")


def test_other_formats_are_refused(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("p0,p1,label\n0.2,0.8,1\n")
    with pytest.raises(ValueError, match=r"`read_multilabel` .* reads a \.npz .* \.csv column"):
        read_multilabel(path)
    np.save(tmp_path / "p.npy", PROB)
    with pytest.raises(ValueError, match=r"`labels_path` is needed"):
        read_multilabel(tmp_path / "p.npy")
    (tmp_path / "y.csv").write_text("1\n0\n")
    with pytest.raises(ValueError, match=r"a \.npy of the label matrix"):
        read_multilabel(tmp_path / "p.npy", labels_path=tmp_path / "y.csv")


def test_load_predictions_names_the_multilabel_reader(tmp_path):
    np.savez(tmp_path / "m.npz", prob=PROB, labels=LABELS)
    with pytest.raises(ValueError, match=r"shape \(2, 3\).*`read_multilabel`.*class indices"):
        load_predictions(tmp_path / "m.npz")
