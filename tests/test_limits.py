"""Sizes a small input can claim: refused by name before anything of that size is allocated.

Each case runs in a child process under a memory limit and a timeout (:mod:`tests.bounded`),
so that a regression fails the test instead of exhausting the machine; crafted files are
made by the tests, in ``tmp_path``.
"""

from __future__ import annotations

import pytest

from calibration_toolbox._limits import MAX_BINS, MAX_CLASSES
from tests.bounded import run_bounded

# Every snippet starts with these: a small input, and `refused` (pytest.raises in the child).
PRELUDE = """
import json
import numpy as np
import pytest
import calibration_toolbox as ct
from calibration_toolbox import _limits

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


def test_the_limits_are_far_above_real_use():
    assert MAX_BINS >= 10**6
    assert MAX_CLASSES >= 10**6
