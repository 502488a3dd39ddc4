"""The repository's own checks, run by the test suite so that CI enforces them.

ruff (a test dependency) lints and checks the formatting of every Python file with the
configuration in pyproject.toml, which includes McCabe complexity <= 10 for the package.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ruff(*arguments: str) -> subprocess.CompletedProcess:
    pytest.importorskip("ruff")
    return subprocess.run(
        [sys.executable, "-m", "ruff", *arguments, "--no-cache", str(ROOT)],
        capture_output=True,
        text=True,
        check=False,
    )


def test_ruff_lint_is_clean_including_complexity():
    result = ruff("check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_is_clean():
    result = ruff("format", "--check")
    assert result.returncode == 0, result.stdout + result.stderr
