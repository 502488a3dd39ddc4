"""Start-up: importing the package or its command line imports no SciPy submodule.

SciPy's submodules are reached through ``calibration_toolbox._scipy`` (PEP 562), which
imports each when first used. ``scipy.special`` alone costs about three times ``import
numpy``, ``scipy.stats`` 0.7 s and 22 MB (a 20,000,000-row streamed report went from
5.0 s / 130 MB to 6.1 s / 152 MB with it), so a module-level ``from scipy.x import y``
anywhere in the package fails here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from calibration_toolbox import _scipy

ROOT = Path(__file__).resolve().parents[1]


def _scipy_submodules_after(statement: str) -> list[str]:
    code = (
        f"import json, sys; {statement}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('scipy.'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    loaded = json.loads(out.stdout)
    return [name for name in _scipy.SUBMODULES if f"scipy.{name}" in loaded]


@pytest.mark.parametrize(
    "statement", ["import calibration_toolbox", "import calibration_toolbox.cli"]
)
def test_importing_imports_no_scipy_submodule(statement):
    assert _scipy_submodules_after(statement) == []


def test_a_submodule_is_imported_on_first_use():
    statement = (
        "import calibration_toolbox as ct; ct.ECE([[0.3, 0.7]], [1]); ct.TemperatureScaling"
    )
    assert _scipy_submodules_after(statement) == []  # ECE needs none of them
    used = "from calibration_toolbox import _scipy; _scipy.special.expit(0.0)"
    assert _scipy_submodules_after(used) == ["special"]


def test_only_the_declared_submodules_are_attributes():
    import scipy.special

    assert _scipy.special is scipy.special
    with pytest.raises(AttributeError, match="has no attribute 'linalg'"):
        _scipy.linalg  # noqa: B018
