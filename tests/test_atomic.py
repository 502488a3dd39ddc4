"""The one atomic writer: a batch renamed together, write errors naming the target, and the
temporary files a killed writer left removed on the next write of the same target."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from calibration_toolbox import TemperatureScaling
from calibration_toolbox._atomic import OutputError, batch, write_atomically

ROOT = Path(__file__).resolve().parents[1]

# A writer killed (SIGKILL, as kill -9) in the middle of its file, its temporary half written.
_KILLED_WRITER = """
import os, signal, sys
from calibration_toolbox._atomic import batch
with batch() as outputs, outputs.open(sys.argv[1]) as handle:
    handle.write(b'{"half": ')
    handle.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _model() -> TemperatureScaling:
    rng = np.random.default_rng(0)
    labels = np.arange(60) % 3
    logits = rng.normal(size=(60, 3)) + 2 * np.eye(3)[labels]  # informative, not separable
    return TemperatureScaling().fit(logits, labels)


def test_a_full_disk_in_save_names_the_target(tmp_path, monkeypatch):
    target = tmp_path / "m.json"

    def disk_full(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")  # no file named

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OutputError, match="No space left on device") as caught:
        _model().save(target)
    assert caught.value.filename == str(target)
    assert caught.value.errno == errno.ENOSPC
    assert str(target) in str(caught.value)
    monkeypatch.undo()
    assert os.listdir(tmp_path) == []


def test_a_batch_renames_nothing_unless_every_file_is_complete(tmp_path):
    (tmp_path / "a").write_text("old a")
    with pytest.raises(ValueError, match="the second file failed"), batch() as outputs:
        outputs.write(tmp_path / "a", "new a")
        with outputs.open(tmp_path / "b") as handle:
            handle.write(b"half of b")
            raise ValueError("the second file failed")
    assert os.listdir(tmp_path) == ["a"] and (tmp_path / "a").read_text() == "old a"
    with batch() as outputs:
        outputs.write(tmp_path / "a", "new a")
        outputs.write(tmp_path / "b", b"b")
    assert (tmp_path / "a").read_text() == "new a" and (tmp_path / "b").read_bytes() == b"b"


def test_a_folder_as_target_is_refused_before_anything_is_written(tmp_path):
    (tmp_path / "folder").mkdir()
    with pytest.raises(OutputError, match="Is a directory") as caught, batch() as outputs:
        outputs.write(tmp_path / "first", "1")
        outputs.write(tmp_path / "folder", "2")
    assert caught.value.filename == str(tmp_path / "folder")
    assert sorted(os.listdir(tmp_path)) == ["folder"]


@pytest.mark.skipif(os.name != "posix", reason="a dead writer is told by its process number")
def test_the_temporaries_a_killed_writer_left_are_removed_on_the_next_write(tmp_path):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    dead = int(ended.stdout)  # a process that has ended: what kill -9 leaves
    stale = tmp_path / f".m.json.{dead}-0123456789abcdef.tmp"
    live = tmp_path / f".m.json.{os.getpid()}-fedcba9876543210.tmp"  # a writer still running
    other_target = tmp_path / f".n.json.{dead}-0123456789abcdef.tmp"
    not_ours = tmp_path / ".m.json.notes.tmp"
    for path in (stale, live, other_target, not_ours):
        path.write_text("{")
    _model().save(tmp_path / "m.json")
    assert sorted(os.listdir(tmp_path)) == sorted(
        ["m.json", live.name, other_target.name, not_ours.name]
    )
    write_atomically(tmp_path / "n.json", "{}")
    assert other_target.name not in os.listdir(tmp_path)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="kill -9")
def test_a_writer_killed_mid_write_leaves_a_temporary_the_next_save_removes(tmp_path):
    target = tmp_path / "m.json"
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(target)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )
    assert killed.returncode == -signal.SIGKILL
    (left,) = os.listdir(tmp_path)
    assert left.startswith(".m.json.") and left.endswith(".tmp")
    _model().save(target)
    assert os.listdir(tmp_path) == ["m.json"]
