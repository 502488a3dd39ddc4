"""Reading JSON Lines (``.jsonl``): one object per line, as LLM evaluation harnesses write.

Fields are chosen as the columns of a ``.parquet``; a field holding a list is a probability
vector; every bad line is one error that names its number; the blocks concatenated are the
whole file, exactly.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_array_equal

from calibration_toolbox.io import iter_predictions, load_predictions


def _write(path, records) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def _both(path, block_rows, **options):
    """``load_predictions`` (block_rows None) or the blocks of ``iter_predictions`` joined."""
    if block_rows is None:
        return load_predictions(path, **options)
    blocks = list(iter_predictions(path, block_rows=block_rows, **options))
    assert all(len(p) == len(y) <= block_rows for p, y in blocks)
    return np.concatenate([p for p, _ in blocks]), np.concatenate([y for _, y in blocks])


@pytest.mark.parametrize("block_rows", [None, 1, 2])
def test_an_llm_evaluation_confidence_against_correct(block_rows, tmp_path):
    records = [
        {"id": 3, "question": "2 + 2?", "confidence": 0.82, "correct": True},
        {"id": 4, "question": "capital?", "confidence": 0.4, "correct": False},
        {"id": 5, "question": "who?", "confidence": 1, "correct": True},
    ]
    _write(tmp_path / "eval.jsonl", records)
    scores, correct = _both(tmp_path / "eval.jsonl", block_rows)
    assert_array_equal(scores, [0.82, 0.4, 1.0])
    assert scores.dtype == np.float64
    assert_array_equal(correct, [True, False, True])


@pytest.mark.parametrize("block_rows", [None, 1, 7, 64])
def test_probability_vectors_and_their_blocks(block_rows, tmp_path):
    rng = np.random.default_rng(4)
    prob = rng.dirichlet(np.ones(3), size=50)
    labels = rng.integers(0, 3, size=50)
    records = [
        {"probs": row.tolist(), "label": int(k)} for row, k in zip(prob, labels, strict=True)
    ]
    _write(tmp_path / "p.jsonl", records)
    got, got_labels = _both(tmp_path / "p.jsonl", block_rows)
    assert_array_equal(got, prob)  # json writes the shortest repr: read back exactly
    assert_array_equal(got_labels, labels)
    (tmp_path / "p.ndjson").write_bytes((tmp_path / "p.jsonl").read_bytes())
    assert_array_equal(load_predictions(tmp_path / "p.ndjson")[0], prob)


def test_fields_chosen_as_columns_are(tmp_path):
    records = [
        {"uid": "a", "p_cat": 0.7, "p_dog": 0.3, "weight": 2.0, "animal": "dog"},
        {"uid": "b", "p_cat": 0.1, "p_dog": 0.9, "weight": 1.0, "animal": "cat"},
    ]
    _write(tmp_path / "p.jsonl", records)
    for prob_column in ("p_*", ["p_cat", "p_dog"]):
        prob, labels = load_predictions(
            tmp_path / "p.jsonl",
            prob_column=prob_column,
            labels_column="animal",
            classes=["cat", "dog"],
        )
        assert_array_equal(prob, [[0.7, 0.3], [0.1, 0.9]])
        assert_array_equal(labels, [1, 0])
    with pytest.raises(TypeError, match=r"field 'animal' of .*p\.jsonl: .*class names"):
        load_predictions(tmp_path / "p.jsonl", prob_column="p_*", labels_column="animal")
    with pytest.raises(ValueError, match=r"cannot tell which column of .*p\.jsonl.*`prob_column`"):
        load_predictions(tmp_path / "p.jsonl", labels_column="animal")


@pytest.mark.parametrize("block_rows", [None, 1])
def test_a_top_label_record_is_read_as_scores_against_hits(block_rows, tmp_path):
    records = [
        {"true_label": "cat", "pred_label": "cat", "confidence": 0.9},
        {"true_label": "dog", "pred_label": "cat", "confidence": 0.6},
    ]
    _write(tmp_path / "dump.jsonl", records)
    scores, target = _both(tmp_path / "dump.jsonl", block_rows, scores=True)
    assert_array_equal(scores, [0.9, 0.6])
    assert_array_equal(target, [1, 0])
    with pytest.raises(ValueError, match=r"holds predicted labels \(column 'pred_label'\)"):
        load_predictions(tmp_path / "dump.jsonl")


BAD = {
    "malformed": (
        '{"prob": 0.5, "label": 1}\n\n{"prob": 0.5, "label": 1\n',
        r"p\.jsonl line 3 is not a JSON object \(Expecting ',' delimiter at column 25\)",
    ),
    "not an object": ('{"prob": 0.5, "label": 1}\n[0.5, 1]\n', r"p\.jsonl line 2 holds a list"),
    "missing field": (
        '{"prob": 0.5, "label": 1}\n{"prob": 0.5}\n',
        r"p\.jsonl line 2 has no field 'label'\.",
    ),
    "null": ('{"prob": 0.5, "label": 1}\n{"prob": null, "label": 0}\n', r"line 2: field 'prob'"),
    "string prediction": (
        '{"prob": "high", "label": 1}\n',
        r"line 1: field 'prob' holds a string",
    ),
    "mixed labels": (
        '{"prob": 0.5, "label": true}\n{"prob": 0.5, "label": 1}\n',
        r"line 2: field 'label' holds a number where line 1 holds true/false; every line",
    ),
    "ragged": (
        '{"probs": [0.5, 0.5], "label": 1}\n{"probs": [1.0], "label": 0}\n',
        r"line 2: field 'probs' holds 1 entries where line 1 holds 2",
    ),
    "strings in a list": (
        '{"probs": [0.5, "a"], "label": 1}\n',
        r"line 1: field 'probs' holds a list with a string; it must hold lists of numbers",
    ),
    "no known field": ('{"p": 0.5, "label": 1}\n', r"cannot tell which column .*`prob_column`"),
    "blank lines only": ("\n  \n", r"p\.jsonl holds no"),
    "empty": ("", r"p\.jsonl is empty"),
    "not utf-8": ("\udcff\udcfe", r"p\.jsonl is not a UTF-8 text file"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("block_rows", [None, 1])
def test_a_bad_jsonl_is_one_error_naming_its_line(case, block_rows, tmp_path):
    text, message = BAD[case]
    (tmp_path / "p.jsonl").write_bytes(text.encode("utf-8", "surrogateescape"))
    with pytest.raises(ValueError, match=message) as error:
        _both(tmp_path / "p.jsonl", block_rows)
    assert "\n" not in str(error.value)


def test_options_of_other_formats_are_refused(tmp_path):
    _write(tmp_path / "p.jsonl", [{"prob": 0.5, "label": 1}])
    with pytest.raises(ValueError, match=r"`sep` is only for \.csv files"):
        load_predictions(tmp_path / "p.jsonl", sep=";")
    with pytest.raises(ValueError, match=r"`prob_key` is only for \.npz files"):
        load_predictions(tmp_path / "p.jsonl", prob_key="prob")
