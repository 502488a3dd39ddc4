"""One check of the values per array per command: the file's, then each calibrated output's.

Every number of a command is computed from arrays checked once (the validated handle of
``check_predictions``, passed back to every metric); the counters below count the passes
that check values: ``_scanned_rows`` (probabilities: range, row sums, labels) and
``_finite_logits`` (logits).  A regression that validates a file again fails here.
"""

from __future__ import annotations

import collections

import numpy as np
import pytest

import calibration_toolbox._validation as validation
from calibration_toolbox.cli import main

N, K = 1000, 4


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Probabilities and logits of N rows (seeded), a second file of probabilities, a model."""
    folder = tmp_path_factory.mktemp("scans")
    rng = np.random.default_rng(18)
    logits = rng.normal(size=(N, K)) * 2.0
    prob = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    labels = rng.integers(0, K, size=N)
    np.savez(folder / "prob.npz", probs=prob, labels=labels)
    np.savez(folder / "other.npz", probs=prob[::-1], labels=labels[::-1])
    np.savez(folder / "logits.npz", logits=logits, labels=labels)
    fit = ["--fit", str(folder / "prob.npz"), "--apply", str(folder / "other.npz")]
    model = ["-o", str(folder / "out.npz"), "--save-model", str(folder / "model.json")]
    assert main(["recalibrate", "--method", "histogram", *fit, *model]) == 0
    return folder


@pytest.fixture
def checks(monkeypatch):
    """The number of passes that check values, by kind, during the block."""
    counts = collections.Counter()
    for name in ("_scanned_rows", "_finite_logits"):
        checking = getattr(validation, name)

        def counted(*args, _checking=checking, _name=name, **kwargs):
            counts[_name] += 1
            return _checking(*args, **kwargs)

        monkeypatch.setattr(validation, name, counted)
    return counts


# A recalibrator checks what it is given itself (it takes arrays, not the handle): its fit
# rows once and the rows it calibrates once.
METHOD = 2

STREAM = ["report", "prob.npz", "--stream", "--block-rows", "250"]

# (command, passes over probabilities, passes over logits).
CASES = {
    "report": (["report", "prob.npz"], 1, 0),
    # The file, the method's own two, then the calibrated output (its own check).
    "report --method histogram": (
        ["report", "prob.npz", "--method", "histogram"],
        1 + METHOD + 1,
        0,
    ),
    "report two methods": (
        ["report", "prob.npz", "--method", "histogram,isotonic"],
        1 + 2 * (METHOD + 1),
        0,
    ),
    "report --ci": (["report", "prob.npz", "--ci", "--n-resamples", "5"], 1, 0),
    "report --per-class": (["report", "prob.npz", "--per-class"], 1, 0),
    # The rows divided by their sums and checked in the same pass.
    "report --renormalize": (["report", "prob.npz", "--renormalize"], 1, 0),
    # Read in blocks of 250 rows: each block checked once.
    "report --stream": (
        [*STREAM, "--metrics", "ECE,SCE,NLL"],
        4,
        0,
    ),
    # A fit on the seeded share of a file read in blocks: its first complete pass checks
    # each block once (a warm start's first block included); the report pass's accumulator
    # checks the test rows again (it takes arrays), then the calibrated output.  The passes
    # of temperature scaling over its log-probabilities (logits) are the solver's: not
    # counted here (None).
    "report --stream --method temperature": (
        [*STREAM, "--method", "temperature", "--metrics", "ECE,NLL"],
        4 + 4 + 4,
        None,
    ),
    # The softmax of the handle is scanned once; the NLL of logits is exact from the
    # logits (their log-softmax), which it checks itself: two passes over the logits.
    "report --logits": (["report", "logits.npz", "--logits"], 1, 2),
    # Two files, the method's own two, and the calibrated output.
    "recalibrate": (
        ["recalibrate", "--method", "histogram", "--fit", "prob.npz", "--apply", "other.npz"],
        2 + METHOD + 1,
        0,
    ),
    # The file, the model's own check of the rows it calibrates, the calibrated output.
    "apply": (["apply", "model.json", "prob.npz"], 1 + 1 + 1, 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_array_is_checked_once(folder, checks, capsys, case):
    command, on_prob, on_logits = CASES[case]
    argv = [str(folder / arg) if arg.endswith((".npz", ".json")) else arg for arg in command]
    if command[0] != "report":
        argv += ["-o", str(folder / "calibrated.npz")]
    assert main(argv) == 0, capsys.readouterr().err
    if on_logits is None:
        del checks["_finite_logits"]
    assert dict(checks) == {
        name: count
        for name, count in (("_scanned_rows", on_prob), ("_finite_logits", on_logits))
        if count
    }
