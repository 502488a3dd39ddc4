"""What a user installs: the wheel holds the package data, and CI's wheel leg tests the wheel.

``.ci/run`` builds the sdist and, from it, the wheel; ``twine check`` reads both; the wheel is
installed into a fresh environment, and the whole suite runs from the unpacked sdist with its
``calibration_toolbox/`` folder removed, so every import is the installed wheel's. That leg sets
``CALIBRATION_TOOLBOX_INSTALLED=wheel``; the test below then checks that the suite really imported
the wheel, so a file missing from the wheel (the bundled example, ``py.typed``) fails CI.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

import calibration_toolbox as ct
from calibration_toolbox import io, plot, recalibration, sklearn, stats, streaming
from calibration_toolbox.datasets import load_example

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(ct.__file__).resolve().parent


@pytest.mark.skipif(
    os.environ.get("CALIBRATION_TOOLBOX_INSTALLED") != "wheel",
    reason="only in CI's wheel leg (.ci/run), where the suite runs on the installed wheel",
)
def test_the_suite_imports_the_installed_wheel():
    assert ROOT not in PACKAGE.parents, f"the suite imported {PACKAGE}, not the installed wheel"
    assert (PACKAGE.parent / f"calibration_toolbox-{ct.__version__}.dist-info").is_dir()


def test_the_package_data_is_where_the_package_reads_it():
    # the bundled example and the PEP 561 marker, in the package that is imported
    assert (PACKAGE / "py.typed").is_file()
    assert [path.name for path in (PACKAGE / "data").glob("*.npz")] == ["digits_mlp.npz"]
    example = load_example()
    assert example.logits.shape == (1497, 10)


def test_the_citation_file_names_the_package_version():
    # CITATION.cff (Citation File Format 1.2.0) states the version a user cites
    text = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert "cff-version: 1.2.0\n" in text
    assert f"\nversion: {ct.__version__}\n" in text
    assert "\nlicense: BSD-3-Clause\n" in text


def _public_names() -> set[str]:
    modules = [ct, recalibration, stats, io, streaming, plot, sklearn]
    return {name for module in modules for name in module.__all__} - {"__version__"}


def test_the_changelog_names_every_public_name_and_the_version():
    # CHANGELOG.md: every user-visible change, grouped by release; the newest release heading
    # is this version (published, or "(unreleased)" while it is being built)
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    releases = re.findall(r"^## (\d+\.\d+\.\d+)( \(unreleased\))?$", text, flags=re.M)
    assert ct.__version__ in [version for version, _ in releases]
    newest, unreleased = releases[0]
    assert newest == ct.__version__ or unreleased, "the newest release is not this one, nor open"
    missing = sorted(name for name in _public_names() if f"`{name}`" not in text)
    assert not missing, f"CHANGELOG.md does not mention {missing}"
