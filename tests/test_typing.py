"""The public API as a type checker sees it: ``mypy --strict`` on code a user writes.

``tests/typing/user_code.py`` calls the API as the README shows it, with annotated
results: mypy must find nothing there.  ``tests/typing/expected_errors.py`` holds calls
that must be refused and ``reveal_type`` lines whose types must be inferred (``ECE(...)``
is a ``float``, not ``Any``), each marked with a comment; mypy's messages on that file must
be exactly those.  mypy runs on the checkout's package (the working folder is the
repository's root) with ``--follow-imports=silent``, as for an installed package: its
messages about the package's own bodies are not a user's concern and are not shown.
"""

from __future__ import annotations

import configparser
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TYPING = ROOT / "tests" / "typing"
USER_CODE = TYPING / "user_code.py"
EXPECTED = TYPING / "expected_errors.py"
MESSAGE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): (?P<kind>error|note): (?P<text>.*)$")
# a comment ending a line of code: "  # E: arg-type", "  # N: MatrixScaling"
MARKER = re.compile(r"\S  # (?P<kind>[EN]): (?P<value>[\w.\[\]*-]+)$")
# "calibration_toolbox.recalibration.linear.MatrixScaling" -> "MatrixScaling"
QUALIFIER = re.compile(r"\b(?:[A-Za-z_]\w*\.)+(?=[A-Za-z_])")


def _mypy_messages(cache: Path) -> dict[str, list[tuple]]:
    """mypy's messages on the two files: ``{file name: [(line, kind, text), ...]}``."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--follow-imports=silent",
            "--show-error-codes",
            "--no-error-summary",
            "--no-pretty",
            "--cache-dir",
            str(cache),
            str(USER_CODE.relative_to(ROOT)),
            str(EXPECTED.relative_to(ROOT)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stdout + result.stderr  # 2: mypy itself failed
    messages: dict[str, list[tuple]] = {USER_CODE.name: [], EXPECTED.name: []}
    for line in result.stdout.splitlines():
        match = MESSAGE.match(line)
        assert match, f"unexpected mypy output: {line}"
        messages.setdefault(Path(match["path"]).name, []).append(
            (int(match["line"]), match["kind"], match["text"])
        )
    return messages


def _markers(kind: str) -> dict[int, str]:
    lines = EXPECTED.read_text(encoding="utf-8").splitlines()
    found = {number: MARKER.search(text) for number, text in enumerate(lines, start=1)}
    return {
        number: match["value"]
        for number, match in found.items()
        if match and match["kind"] == kind
    }


def test_mypy_strict_passes_the_users_code_and_refuses_exactly_the_marked_calls(tmp_path):
    # one mypy run (about 10 s) for the three checks
    pytest.importorskip("mypy")
    messages = _mypy_messages(tmp_path / "mypy_cache")
    assert set(messages) == {USER_CODE.name, EXPECTED.name}
    assert messages[USER_CODE.name] == []
    expected = messages[EXPECTED.name]

    refusals = _markers("E")
    errors = {
        line: re.search(r"\[([a-z-]+)\]$", text)[1]
        for line, kind, text in expected
        if kind == "error"
    }
    assert len(refusals) >= 5
    assert errors == refusals, expected

    types = _markers("N")
    revealed = {
        line: QUALIFIER.sub("", text.removeprefix("Revealed type is ").strip('"'))
        for line, kind, text in expected
        if kind == "note" and text.startswith("Revealed type is ")
    }
    assert len(types) >= 5
    assert revealed.keys() == types.keys(), expected
    for line, value in types.items():
        if value.endswith("*"):
            assert revealed[line].startswith(value[:-1]), (line, revealed[line])
        else:
            assert revealed[line] == value, (line, revealed[line])


def test_the_users_code_runs_as_annotated(tmp_path):
    # what the annotations claim holds at run time: floats, fitted objects, probabilities
    spec = importlib.util.spec_from_file_location("typing_user_code", USER_CODE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(tmp_path)
    assert (tmp_path / "scaler.json").is_file()


def test_the_package_ships_its_type_hints():
    # PEP 561: the marker beside the package, and in the package data of setup.cfg
    # (in the package that is imported: in CI's wheel leg, the installed wheel's)
    package = Path(importlib.util.find_spec("calibration_toolbox").origin).parent
    assert (package / "py.typed").is_file()
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg", encoding="utf-8")
    shipped = re.split(r"[,\s]+", setup["options.package_data"]["calibration_toolbox"])
    assert "py.typed" in shipped
