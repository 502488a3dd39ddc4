"""Start-up: importing the package or its command line imports no SciPy submodule.

SciPy's submodules are reached through ``calibration_toolbox._scipy`` (PEP 562), which
imports each when first used. ``scipy.special`` alone costs about three times ``import
numpy``, ``scipy.stats`` 0.7 s and 22 MB (a 20,000,000-row streamed report went from
5.0 s / 130 MB to 6.1 s / 152 MB with it), so a module-level ``from scipy.x import y``
anywhere in the package fails here.

The package's own names are lazy too (PEP 562, ``calibration_toolbox.__getattr__`` over the
one table ``_EXPORTS``): ``import calibration_toolbox`` imports none of its modules, a name
imports its module when first read, and the table, the ``TYPE_CHECKING`` block that type
checkers read and ``__all__`` agree.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import calibration_toolbox as ct
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


def _own_modules_after(statement: str) -> list[str]:
    """The package's modules a fresh interpreter holds after ``statement``."""
    code = (
        f"import json, sys; {statement}; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('calibration_toolbox'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return json.loads(out.stdout)


def test_importing_the_package_imports_none_of_its_modules():
    assert _own_modules_after("import calibration_toolbox") == ["calibration_toolbox"]


@pytest.mark.parametrize(
    ("statement", "imported", "not_imported"),
    [
        ("import calibration_toolbox as ct; ct.ECE", "metrics", "recalibration"),
        ("from calibration_toolbox import ECE", "metrics", "stats"),
        ("import calibration_toolbox as ct; ct.TemperatureScaling", "recalibration", "stats"),
        ("import calibration_toolbox as ct; ct.stats", "stats", "recalibration"),
    ],
)
def test_a_name_imports_its_module_on_first_use(statement, imported, not_imported):
    loaded = _own_modules_after(statement)
    assert f"calibration_toolbox.{imported}" in loaded
    assert f"calibration_toolbox.{not_imported}" not in loaded


def _type_checking_names() -> dict[str, str]:
    """``{name: module}`` of the ``if TYPE_CHECKING:`` imports of the package's ``__init__``."""
    tree = ast.parse(Path(ct.__file__).read_text(encoding="utf-8"))
    (block,) = [node for node in tree.body if isinstance(node, ast.If)]
    return {
        alias.asname or alias.name: node.module.removeprefix("calibration_toolbox").lstrip(".")
        or alias.name
        for node in block.body
        for alias in node.names
    }


def test_the_lazy_table_the_type_checkers_block_and_all_agree():
    table = {name: module for module, names in ct._EXPORTS.items() for name in names}
    assert len(table) == sum(map(len, ct._EXPORTS.values()))  # each name in one module
    submodules = {name: name for name in ct._SUBMODULES if name in _type_checking_names()}
    assert _type_checking_names() == {**table, **submodules}
    assert sorted(ct.__all__) == sorted([*table, "__version__"])


@pytest.mark.parametrize("name", sorted(set(ct.__all__) | set(ct._SUBMODULES)))
def test_every_public_name_is_reached_the_three_ways(name):
    value = getattr(ct, name)
    namespace: dict = {}
    exec(f"from calibration_toolbox import {name}", namespace)
    assert namespace[name] is value
    assert name in dir(ct)
    if name in ct._SUBMODULES:
        assert value is importlib.import_module(f"calibration_toolbox.{name}")
    elif name != "__version__":
        module = importlib.import_module(f"calibration_toolbox.{ct._MODULE_OF[name]}")
        assert getattr(module, name) is value


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="has no attribute 'ece'"):
        ct.ece  # noqa: B018
    with pytest.raises(ImportError, match="cannot import name 'ece'"):
        exec("from calibration_toolbox import ece", {})


_HEAVY = (
    "calibration_toolbox.metrics",
    "calibration_toolbox.recalibration",
    "calibration_toolbox.stats",
)


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["report", "--help"],
        ["recalibrate", "--help"],
        ["apply", "--help"],
        ["compare", "--help"],
        ["--version"],
        ["report", "--bins", "0"],  # refused by the parser: exit 2, nothing else run
    ],
    ids=" ".join,
)
def test_the_help_imports_no_metric_recalibrator_statistic_or_numpy(argv):
    loaded = _modules_after_main(argv)
    assert "calibration_toolbox.cli._parser" in loaded  # the parser ran
    heavy = [name for name in loaded if name.startswith(_HEAVY) or name.split(".")[0] == "numpy"]
    assert heavy == []


def _modules_after_main(argv: list[str]) -> list[str]:
    """The modules a fresh interpreter holds after the command line ``argv`` (output dropped)."""
    code = (
        "import contextlib, io, json, sys\n"
        "from calibration_toolbox.cli import main\n"
        "out, err = io.StringIO(), io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
        f"    try: main({argv!r})\n"
        "    except SystemExit: pass\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    return json.loads(out.stdout)


def test_a_command_imports_what_it_runs():
    loaded = _modules_after_main(["report", "--metrics", "ECE"])
    assert {"calibration_toolbox.cli._commands", "calibration_toolbox.metrics"} <= set(loaded)


def test_the_parser_lists_the_names_the_tables_are_built_from():
    from calibration_toolbox import _method_table
    from calibration_toolbox.cli import _metrics, _names
    from calibration_toolbox.recalibration import _methods

    assert list(_metrics.METRICS) == list(_names.METRIC_NAMES)
    streamed = [name for name, metric in _metrics.METRICS.items() if metric.streamed]
    assert streamed == list(_names.STREAMED_METRICS)
    assert list(_methods.METHODS) == list(_names.METHOD_NAMES)
    assert set(_methods._CLASSES) == {row.class_name for row in _method_table.ROWS}
    for row in _method_table.ROWS:
        method = _methods.METHODS[row.name]
        assert (method.factory.__name__, method.title, method.needs, method.settings) == (
            row.class_name,
            row.title,
            row.needs,
            row.settings,
        )
