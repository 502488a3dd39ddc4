"""The binned engine's layers import only downward, and the Dask executor imports no metric.

Read from the source (the AST), so the tests say what a module imports whatever was
imported before them.
"""

import ast
import importlib.util
from pathlib import Path

import pytest

# The package that is imported: the checkout's, or the installed wheel's in CI's wheel leg.
PACKAGE = Path(importlib.util.find_spec("calibration_toolbox").origin).parent
# The layers of the binned engine, lowest first: each may import only those before it.
LAYERS = ["_options", "_intervals", "_table", "_scoresets", "_kernels", "_engine", "gce"]


def _imports(path: Path) -> list[tuple[str, bool]]:
    """``(module, inside a function)`` of every package module ``path`` imports."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_functions = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(function)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        found += [
            (name, id(node) in in_functions)
            for name in names
            if name.startswith("calibration_toolbox")
        ]
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_imports_only_the_layers_below_it_and_none_inside_a_function(layer):
    imports = _imports(PACKAGE / "metrics" / f"{layer}.py")
    assert not [name for name, inside in imports if inside]
    above = {f"calibration_toolbox.metrics.{name}" for name in LAYERS[LAYERS.index(layer) :]}
    assert not {name for name, _ in imports} & above


def test_the_dask_executor_imports_no_metric_and_none_inside_a_function():
    imports = _imports(PACKAGE / "_dask.py")
    assert imports
    assert not [name for name, inside in imports if inside]
    assert not [name for name, _ in imports if name.startswith("calibration_toolbox.metrics")]
