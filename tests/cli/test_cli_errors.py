"""The command line renders a structured input error in its own words, the row the file's."""

from __future__ import annotations

import numpy as np
import pytest

from calibration_toolbox.cli import main


def _error_line(capsys, *args) -> str:
    assert main([str(arg) for arg in args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("calibration-toolbox: error: ")
    return line


@pytest.fixture
def pets(tmp_path):
    rows = ["p_cat,p_dog,label"] + [f"0.{k % 9 + 1},0.{9 - k % 9},cat" for k in range(2500)]
    rows[2001] = "0.5,0.5,emu"  # data row 2000
    path = tmp_path / "pets.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_name_not_in_classes_is_told_with_the_verb_of_the_labels(pets, capsys):
    # Before structured errors the command line wrote "the labels holds 'emu'".
    line = _error_line(capsys, "report", pets, "--classes", "cat,dog")
    assert "the labels hold 'emu' (row 2000), which is not in --classes ('cat', 'dog')." in line


def test_the_streamed_error_names_the_files_row(pets, capsys):
    whole = _error_line(capsys, "report", pets, "--classes", "cat,dog")
    streamed = _error_line(
        capsys, "report", pets, "--classes", "cat,dog", "--stream", "--block-rows", 700
    )
    assert streamed == whole


def test_a_bad_value_in_a_late_block_is_the_files_row_in_the_cli_words(tmp_path, capsys):
    prob = np.full((3000, 2), 0.5)
    prob[2345] = [0.5, np.inf]
    np.save(tmp_path / "p.npy", prob)
    np.save(tmp_path / "y.npy", np.zeros(3000, dtype=int))
    files = [tmp_path / "p.npy", "--labels", tmp_path / "y.npy", "--metrics", "ECE"]
    streamed = _error_line(capsys, "report", *files, "--stream", "--block-rows", 1000)
    assert "the predictions array must not contain inf; row 2345 does." in streamed
    assert "pass --logits." in streamed and "`" not in streamed
    assert streamed == _error_line(capsys, "report", *files)
