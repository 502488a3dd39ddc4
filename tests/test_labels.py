"""Labels given as class names with ``classes=``: one rule, in the validation every metric uses."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

import calibration_toolbox as ct
from calibration_toolbox import _registry, metrics
from calibration_toolbox._validation import check_predictions
from tests.oracle import gce as oracle_gce
from tests.registry_calls import with_groups

NAMES = np.array(["cat", "dog", "emu"])


def _problem(n=40, seed=7):
    rng = np.random.default_rng(seed)
    prob = rng.dirichlet(np.ones(3), size=n)
    labels = rng.integers(0, 3, size=n)
    return prob, labels


# The metrics of class labels: a multi-label matrix (multilabel rows) has no class names.
PUBLIC_METRICS = [
    getattr(metrics, name)
    for name in metrics.__all__
    if inspect.isfunction(getattr(metrics, name))
    and not _registry.spec_of(getattr(metrics, name)).multilabel
]


def test_every_public_metric_takes_classes_keyword_only():
    for metric in PUBLIC_METRICS:
        parameter = inspect.signature(metric).parameters["classes"]
        assert parameter.kind is inspect.Parameter.KEYWORD_ONLY, metric.__name__
        assert parameter.default is None
        assert "classes : " in metric.__doc__, metric.__name__


# Every public metric of the registry with the options of a call: its required ones and a
# few bins (calibration_table's names are checked on its counts below).
OPTIONS = {
    "SCE": {"bins": 5},
    "ACE": {"bins": 4},
    "ToprCE": {"r": 2},
    "SKCE": {"estimator": "biased", "bandwidth": 0.5},  # its weighted form
    "coverage_at_risk": {"risk": 0.3},
    "risk_at_coverage": {"coverage": 0.5},
}
NAMED_CALLS = [
    pytest.param(
        row.function, with_groups(row, _problem()[0], OPTIONS.get(row.name, {})), id=row.name
    )
    for row in _registry.public()
    if row.name != "calibration_table" and not row.multilabel
]


@pytest.mark.parametrize(("metric", "options"), NAMED_CALLS)
def test_names_with_classes_equal_the_indices(metric, options):
    prob, labels = _problem()
    weights = np.linspace(0.5, 2.0, len(labels))
    expected = metric(prob, labels, sample_weight=weights, **options)
    by_name = metric(prob, NAMES[labels], sample_weight=weights, classes=NAMES, **options)
    as_keyword = metric(
        prob, labels=list(NAMES[labels]), sample_weight=weights, classes=list(NAMES), **options
    )
    _assert_same(by_name, expected)
    _assert_same(as_keyword, expected)


def _assert_same(result, expected):
    if dataclasses.is_dataclass(result):  # a result of arrays (multicalibration_error's)
        for part, expected_part in zip(
            dataclasses.astuple(result), dataclasses.astuple(expected), strict=True
        ):
            np.testing.assert_array_equal(part, expected_part)
    else:
        assert result == expected


def test_names_equal_the_oracle_and_the_table():
    prob, labels = _problem(60, seed=3)
    classes = ["zebra", "ant", "moose"]  # not sorted: the column order is the order given
    names = np.array(classes)[labels]
    expected = oracle_gce(prob, labels, 10, True, False, "all", 1, 0.0)
    assert ct.SCE(prob, names, bins=10, classes=classes) == pytest.approx(expected, rel=1e-12)
    table = ct.calibration_table(prob, names, bins=10, classes=classes)
    np.testing.assert_array_equal(table.counts, ct.calibration_table(prob, labels, bins=10).counts)


def test_names_of_scores_and_object_arrays_and_numbers():
    scores, hits = [0.2, 0.9, 0.6, 0.7], np.array([0, 1, 1, 0])
    named = np.array(["wrong", "right"])[hits].astype(object)  # as a pandas column of str
    assert ct.ECE(ct.Scores(scores), named, bins=2, classes=["wrong", "right"]) == ct.ECE(
        ct.Scores(scores), hits, bins=2
    )
    prob, labels = _problem()
    digits = np.array([3, 7, 9])  # numbers are names too: a label 7 is column 1
    assert ct.ECE(prob, digits[labels], classes=digits) == ct.ECE(prob, labels)
    checked = check_predictions(prob, NAMES[labels], classes=NAMES)
    np.testing.assert_array_equal(checked.labels, labels)


def test_names_are_not_mutated():
    prob, labels = _problem()
    names, classes = NAMES[labels], list(NAMES)
    before = names.copy()
    ct.ECE(prob, names, classes=classes)
    np.testing.assert_array_equal(names, before)
    assert classes == ["cat", "dog", "emu"]


BAD = [
    # (labels, classes, error, message)
    (
        ["cat", "dog"],
        None,
        TypeError,
        r"`labels` must hold real numbers \(class indices\) "
        r"unless `classes` is given; got class names \('cat', 'dog'\)\. Pass `classes`",
    ),
    (
        ["cat", "yak"],
        NAMES,
        ValueError,
        r"`labels` holds 'yak' \(row 1\), which is not in "
        r"`classes` \('cat', 'dog', 'emu'\)",
    ),
    (
        [0, 2],
        NAMES,
        TypeError,
        r"`labels` are looked up by name in `classes`.*Integer labels "
        r"are column indices already",
    ),
    (
        ["cat", "dog"],
        ["cat", "dog"],
        ValueError,
        r"`classes` must name every column of the "
        r"predictions \(3\), in order; got 2 names",
    ),
    (
        ["cat", "dog"],
        ["cat", "dog", "cat"],
        ValueError,
        r"`classes` must be distinct names; "
        r"'cat' repeats",
    ),
    (
        ["cat", "dog"],
        "cat,dog,emu",
        TypeError,
        r"`classes` must be a sequence of class names.*"
        r"split it",
    ),
    (["cat", "dog"], [["cat", "dog", "emu"]], ValueError, r"`classes` must be a 1-D sequence"),
    (["cat", "dog"], [1j, 2j, 3j], TypeError, r"`classes` must hold names \(str\) or numbers"),
    (["cat"], NAMES, ValueError, r"`labels` must have one entry per row of the predictions \(2\)"),
    ([3.0, np.nan], [3.0, 4.0, 5.0], ValueError, r"`labels` holds nan \(row 1\)"),
]


@pytest.mark.parametrize(("labels", "classes", "error", "message"), BAD)
@pytest.mark.parametrize("metric", [ct.ECE, ct.negative_log_likelihood])
def test_bad_names_and_classes(metric, labels, classes, error, message):
    prob = np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    with pytest.raises(error, match=message):
        metric(prob, labels, classes=classes)
