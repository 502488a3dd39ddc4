"""The command line on hostile and unlucky inputs: one line on stderr, never a traceback.

Each case runs ``main`` in a child process under a memory limit (``resource.setrlimit``)
and a timeout, so that a regression cannot take the machine down; the crafted files are
made here, in the test's folder.
"""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.bounded import bounded_child

pytest.importorskip("resource")  # POSIX: the memory limit of the child

# Enough for NumPy, SciPy and a small input; far below what the crafted inputs claim.
MEMORY_LIMIT = 2 * 1024**3

# The child: the command line's `main` on its arguments. With `interrupt`, the command
# itself is replaced by one that sends SIGINT to its own process, as Ctrl-C does in the
# middle of a run.
_CHILD = """
import os, signal, sys, time
from calibration_toolbox.cli import main
from calibration_toolbox.cli._commands import COMMANDS

def interrupted(args, command):
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(600)

if sys.argv[1] == "interrupt":
    COMMANDS["report"] = interrupted
sys.exit(main(sys.argv[2:]))
"""


def _run(folder: Path, *args: str, mode: str = "run") -> subprocess.CompletedProcess:
    """``main(args)`` in a child process under :data:`MEMORY_LIMIT`, in ``folder``."""
    return bounded_child(_CHILD, mode, *args, cwd=folder, timeout=240, memory=MEMORY_LIMIT)


def _error_line(run: subprocess.CompletedProcess, status: int = 2) -> str:
    """The one line on stderr of a failed run, its status checked, nothing on stdout."""
    assert "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("calibration-toolbox: error: "), run.stderr
    assert run.stdout == ""
    assert run.returncode == status, run.stderr
    return lines[0]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A small binary file of probabilities, and one of logits of magnitude 1e300."""
    folder = tmp_path_factory.mktemp("hostile")
    rng = np.random.default_rng(19)
    p = rng.uniform(size=200)
    np.savez(folder / "ok.npz", probs=p, labels=(rng.uniform(size=200) < p).astype(int))
    logits = rng.normal(size=(200, 3)) * 1e300
    np.savez(folder / "huge.npz", logits=logits, labels=rng.integers(0, 3, size=200))
    return folder


def test_an_interrupt_is_one_line_and_status_130(folder):
    line = _error_line(_run(folder, "report", "ok.npz", mode="interrupt"), status=130)
    assert line == "calibration-toolbox: error: interrupted."


def test_memory_an_option_claims_is_one_line(folder):
    # 10**9 bins: gigabytes of per-bin sums for 200 rows. Refused up front, or out of memory
    # under the limit: one line either way, naming the bins or saying what ran out.
    line = _error_line(_run(folder, "report", "ok.npz", "--bins", str(10**9)))
    assert "bins" in line or "out of memory" in line


def test_json_nested_too_deeply_is_one_line(folder):
    (folder / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    line = _error_line(_run(folder, "apply", "deep.json", "ok.npz", "-o", "out.npz"))
    assert "deep" in line
    assert not (folder / "out.npz").exists()


def test_a_fit_that_does_not_converge_is_one_line(folder):
    run = _run(
        folder, "recalibrate", "--method", "temperature", "--fit", "huge.npz", "--apply",
        "huge.npz", "--logits", "-o", "out.npz",
    )  # fmt: skip
    if run.returncode == 0:  # a finite model is the other outcome the issue allows
        assert np.isfinite(np.load(folder / "out.npz")["prob"]).all()
    else:
        _error_line(run)


def _zip_with_flags(path: Path, *, method: int | None = None, flags: int | None = None):
    """A one-member .npz whose member claims another compression ``method`` or ``flags``."""
    np.savez(path, probs=np.full(4, 0.5), labels=np.array([0, 1, 0, 1]))
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        members = archive.infolist()
    central = data.find(b"PK\x01\x02")
    while central != -1:  # each central directory record: flags at +8, method at +10
        if flags is not None:
            data[central + 8 : central + 10] = flags.to_bytes(2, "little")
        if method is not None:
            data[central + 10 : central + 12] = method.to_bytes(2, "little")
        central = data.find(b"PK\x01\x02", central + 4)
    for member in members:  # each local header: flags at +6, method at +8
        start = member.header_offset
        if flags is not None:
            data[start + 6 : start + 8] = flags.to_bytes(2, "little")
        if method is not None:
            data[start + 8 : start + 10] = method.to_bytes(2, "little")
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("name", "claim"),
    [("encrypted.npz", {"flags": 1}), ("aes.npz", {"method": 99})],
    ids=["encrypted member", "unsupported compression"],
)
def test_a_zip_member_zipfile_cannot_read_is_one_line(folder, name, claim):
    _zip_with_flags(folder / name, **claim)
    _error_line(_run(folder, "report", name))


def test_a_csv_header_cell_over_the_csv_limit_is_one_line(folder):
    (folder / "wide.csv").write_text('"' + "p" * 200_000 + '",label\n0.5,1\n')
    _error_line(_run(folder, "report", "wide.csv"))
