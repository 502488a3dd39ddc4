"""The outputs of a command: all written, or none; a failed write named as one, by its target.

In-process through ``main([...])``; a file system that refuses a write (read-only, full) is
played by ``os.open`` or ``os.fsync`` failing for the one target, so that the tests do not
depend on the user running them (root writes into a folder of mode 0o555).
"""

from __future__ import annotations

import errno
import os

import numpy as np
import pytest

from calibration_toolbox.cli import main

IN_SAMPLE = pytest.mark.filterwarnings("ignore:fitted on .*the very rows:UserWarning")


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A small 3-class file of probabilities in the working folder ``tmp_path``."""
    rng = np.random.default_rng(7)
    np.savez(tmp_path / "p.npz", probs=rng.dirichlet(np.ones(3), 90), labels=np.arange(90) % 3)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refuse(monkeypatch, name: str, code: int, strerror: str, call: str = "open") -> None:
    """``os.open`` (or ``os.fsync``) fails as the file system would, for the file ``name``.

    ``os.fsync`` knows only a descriptor: it fails for every file opened after ``name``'s.
    """
    original_open, original_fsync, refused = os.open, os.fsync, []

    def opened(path, *args, **kwargs):
        if os.path.basename(path).startswith(f".{name}."):
            if call == "open":
                raise OSError(code, strerror, path)  # named as the system names it
            refused.append(True)
        return original_open(path, *args, **kwargs)

    def synced(descriptor):
        if refused:
            raise OSError(code, strerror)  # a full disk names no file
        return original_fsync(descriptor)

    monkeypatch.setattr(os, "open", opened)
    monkeypatch.setattr(os, "fsync", synced)


def _error_line(capsys, *args: str) -> str:
    assert main(list(args)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("calibration-toolbox: error: "), lines
    return lines[0]


def _left(folder) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


@IN_SAMPLE
def test_a_model_that_cannot_be_saved_leaves_no_calibrated_file(folder, capsys, monkeypatch):
    (folder / "out.npz").write_bytes(b"the old output")
    _refuse(monkeypatch, "m.json", errno.EROFS, "Read-only file system")
    line = _error_line(
        capsys, "recalibrate", "--method", "temperature", "--fit", "p.npz", "--apply", "p.npz",
        "-o", "out.npz", "--save-model", "m.json",
    )  # fmt: skip
    assert line == "calibration-toolbox: error: cannot write m.json: Read-only file system."
    assert (folder / "out.npz").read_bytes() == b"the old output"
    assert _left(folder) == ["out.npz", "p.npz"]  # no m.json, no temporary file


def test_a_page_that_cannot_be_written_leaves_no_figure(folder, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    pytest.importorskip("calibration_toolbox._html")
    _refuse(monkeypatch, "r.html", errno.EACCES, "Permission denied")
    line = _error_line(capsys, "report", "p.npz", "--plot", "ok.png", "--html", "r.html")
    assert line == "calibration-toolbox: error: cannot write r.html: Permission denied."
    assert _left(folder) == ["p.npz"]


@IN_SAMPLE
def test_a_full_disk_names_the_target_and_leaves_nothing(folder, capsys, monkeypatch):
    assert main(["recalibrate", "--method", "temperature", "--fit", "p.npz", "--apply",
                 "p.npz", "-o", "first.npz", "--save-model", "m.json"]) == 0  # fmt: skip
    capsys.readouterr()
    _refuse(monkeypatch, "out.npz", errno.ENOSPC, "No space left on device", call="fsync")
    line = _error_line(capsys, "apply", "m.json", "p.npz", "-o", "out.npz")
    assert line == "calibration-toolbox: error: cannot write out.npz: No space left on device."
    assert _left(folder) == ["first.npz", "m.json", "p.npz"]


@pytest.fixture
def model(folder, capsys):
    """``m.json`` (fitted on ``v.npz``); ``p.npz`` as ``x.npy`` and ``y.npy``."""
    data = np.load(folder / "p.npz")
    np.save(folder / "x.npy", data["probs"])
    np.save(folder / "y.npy", data["labels"])
    rng = np.random.default_rng(8)
    np.savez(folder / "v.npz", probs=rng.dirichlet(np.ones(3), 60), labels=np.arange(60) % 3)
    assert main(["recalibrate", "--method", "temperature", "--fit", "v.npz", "--apply",
                 "p.npz", "-o", "first.npz", "--save-model", "m.json"]) == 0  # fmt: skip
    capsys.readouterr()
    return {path.name: path.read_bytes() for path in folder.iterdir()}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["apply", "m.json", "x.npy", "--labels", "y.npy", "-o", "x.npy"],
         "argument -o/--output: the file name must end in .npz; got 'x.npy'"),
        (["apply", "m.json", "x.npy", "-o", "m.json"],
         "argument -o/--output: the file name must end in .npz; got 'm.json'"),
        (["apply", "m.json", "x.npy", "-o", "out.csv"],
         "argument -o/--output: the file name must end in .npz; got 'out.csv'"),
        (["apply", "m.json", "p.npz", "-o", "./p.npz"],
         "-o ./p.npz is the predictions file p.npz, an input of the command: writing it "
         "would replace that file; name another file."),
        (["recalibrate", "--method", "temperature", "--fit", "p.npz", "--apply", "x.npy",
          "--labels", "y.npy", "-o", "p.npz"],
         "-o p.npz is --fit p.npz, an input of the command: writing it would replace that "
         "file; name another file."),
        (["recalibrate", "--method", "temperature", "--fit", "p.npz", "--apply", "p.npz",
          "-o", "o.npz", "--save-model", "m.npz"],
         "argument --save-model: the file name must end in .json; got 'm.npz'"),
        (["report", "x.npy", "--labels", "y.npy", "--html", "y.npy"],
         "argument --html: the file name must end in .html, .htm; got 'y.npy'"),
    ],
    ids=["-o the input", "-o the model", "-o a .csv", "-o the input by another name",
         "-o the fit file", "--save-model a .npz", "--html the labels"],
)  # fmt: skip
def test_an_output_that_is_an_input_or_of_another_format_is_refused(
    folder, model, capsys, args, expected
):
    assert _error_line(capsys, *args) == f"calibration-toolbox: error: {expected}"
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == model


@pytest.mark.skipif(not hasattr(os, "link"), reason="hard links")
def test_an_output_that_is_an_input_through_a_link_is_refused(folder, model, capsys):
    os.symlink("p.npz", "soft.npz")
    os.link("p.npz", "hard.npz")
    for link in ("soft.npz", "hard.npz"):
        line = _error_line(capsys, "apply", "m.json", link, "-o", "p.npz")
        assert line.startswith(
            f"calibration-toolbox: error: -o p.npz is the predictions file {link},"
        )
    assert (folder / "p.npz").read_bytes() == model["p.npz"]
