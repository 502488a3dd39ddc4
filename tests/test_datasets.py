"""The folder of real saved predictions that the examples and notebooks read."""

from __future__ import annotations

from pathlib import Path

from calibration_toolbox.datasets import DATA_VARIABLE, data_folder


def test_the_environment_variable_names_the_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(DATA_VARIABLE, str(tmp_path))
    assert data_folder("elsewhere") == tmp_path


def test_without_the_variable_the_default(monkeypatch):
    monkeypatch.delenv(DATA_VARIABLE, raising=False)
    assert data_folder(Path("..", "shared", "data")) == Path("..", "shared", "data")
    assert data_folder("here") == Path("here")


def test_an_empty_variable_is_not_set(monkeypatch):
    # Path("") would be the current folder: an empty variable means no folder named
    monkeypatch.setenv(DATA_VARIABLE, "")
    assert data_folder("here") == Path("here")


def test_the_variable_is_the_one_the_tests_read():
    assert DATA_VARIABLE == "CALIBRATION_TOOLBOX_DATA"
