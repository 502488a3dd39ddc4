"""The package's layering rules, read from the source with ``ast`` (nothing is imported).

(a) No module imports one of the package's own modules inside a function or method, except
    a module of :data:`OPTIONAL` (code that works through an optional dependency: a caller
    may import it where that dependency is used).
(b) Modules import only downward: every ``import``/``from`` of an own module, at module
    level or inside a function, points to a module of a lower layer of :data:`LAYERS`, or
    of the same layer (a folder of modules in one layer); and the module-level imports
    form no cycle.
(c) The optional dependencies are imported where they are used, never at module level.
(d) ``importlib.import_module`` is called only in the module-level ``__getattr__`` (PEP 562)
    of a module of :data:`LAZY_MODULES`, the one sanctioned way to import a module on first
    use: the package imports the modules of its tables (``_EXPORTS``, ``{module: names}``,
    and ``_SUBMODULES``) as its names are first read, and those imports obey (b) as if
    written at module level; ``_scipy`` imports SciPy's submodules the same way.

A module that no layer names fails (b): declare it where it belongs.
"""

from __future__ import annotations

import ast
import importlib.util
from fnmatch import fnmatchcase
from pathlib import Path
from typing import NamedTuple

import pytest

PACKAGE = "calibration_toolbox"
# The package that is imported: the checkout's, or the installed wheel's in CI's wheel leg.
SOURCE = Path(importlib.util.find_spec(PACKAGE).origin).parent

#: Bottom to top: a module imports modules of its own layer or of the layers before it.
#: Names are relative to the package ("" is the package itself), ``fnmatch`` patterns.
LAYERS = (
    # Leaves: facts that know no other module (block sizes and the scan, the input errors
    # and warnings, types, docstring pieces, the Scores wrapper, the key names of files,
    # what a metric is, the one atomic writer, SciPy's submodules when first used, the
    # recalibration methods by name).
    (
        "leaves",
        (
            "_typing",
            "_errors",
            "_warnings",
            "_rows",
            "_docstrings",
            "_registry",
            "scores",
            "_columns",
            "_limits",
            "_atomic",
            "_scipy",
            "_method_table",
        ),
    ),
    # Facts of one array-like value, over the leaves.
    ("array facts", ("_arrays",)),
    ("validation", ("_validation",)),
    ("binning", ("binning",)),
    # The generic chunk executor: takes the per-chunk function, knows no metric.
    ("chunk executor", ("_dask",)),
    # The binned engine's named layers, then its public face, then the other measures.
    ("binned engine", ("metrics._*",)),
    ("binned metrics", ("metrics.gce",)),
    ("measures", ("metrics.*",)),
    ("metrics", ("metrics",)),
    ("statistics and streams", ("stats", "streaming")),
    # A metric per group of rows, and multicalibration: over the bootstrap's table path.
    ("groups", ("groups",)),
    ("recalibration", ("recalibration.*", "recalibration")),
    ("public API", ("",)),
    # scikit-learn's wrapper and scorers (scikit-learn imported where they run): above the
    # recalibrators and the registry, imported by no module of the package.
    ("scikit-learn", ("sklearn",)),
    # One module per input format, then the suffix table and the bundled example.
    ("readers", ("_csv", "_jsonl", "_parquet")),
    ("io", ("io", "io.*", "datasets")),
    ("plots", ("plot",)),
    ("HTML page", ("_html",)),
    ("command line", ("cli.*", "cli", "__main__")),
)

#: Own modules that work through an optional dependency, which may be imported inside a
#: function (where the dependency is needed: only ``--plot`` and ``--html`` load the
#: drawing code, and a page's renderer missing from an installation is a usage error, not
#: an import error of the command line).
OPTIONAL = {
    "plot": "matplotlib",
    "_html": "matplotlib",
    "_parquet": "pyarrow",
    "_dask": "dask",
}
#: Optional dependencies (extras and peers), never imported at module level.
OPTIONAL_DEPENDENCIES = ("matplotlib", "pyarrow", "dask", "pandas", "sklearn", "torch")


#: The modules whose module-level ``__getattr__`` imports modules on first use, and the
#: names of their module-level tables of the own modules so imported (relative names).
LAZY_MODULES = {"": ("_EXPORTS", "_SUBMODULES"), "cli._deferred": ("_EXPORTS",), "_scipy": ()}


class Import(NamedTuple):
    importer: str
    imported: str
    line: int
    in_function: bool
    type_only: bool


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SOURCE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(path): path for path in sorted(SOURCE.rglob("*.py"))}


def _own_module(dotted: str) -> str | None:
    """The package's module that ``dotted`` (a module or a name in one) names, if any."""
    if dotted != PACKAGE and not dotted.startswith(PACKAGE + "."):
        return None
    name = dotted[len(PACKAGE) + 1 :]
    while name not in MODULES:
        name = name.rpartition(".")[0]  # a name defined in a module: the module
    return name


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The module a ``from`` import reads from (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    parts = [PACKAGE, *module.split(".")] if module else [PACKAGE]
    if MODULES[module].name != "__init__.py":
        parts.pop()
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports_of(module: str) -> list[tuple[str, int, bool, bool]]:
    """(dotted name, line, inside a function, under TYPE_CHECKING) of each import."""
    found = []

    def visit(node: ast.AST, in_function: bool, type_only: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend((alias.name, node.lineno, in_function, type_only) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            for alias in node.names:  # a module of the package, or a name in `base`
                found.append((f"{base}.{alias.name}", node.lineno, in_function, type_only))
        function = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        guarded = isinstance(node, ast.If) and _is_type_checking(node)
        for child in ast.iter_child_nodes(node):
            visit(child, in_function or function, type_only or guarded)

    visit(ast.parse(MODULES[module].read_text(encoding="utf-8")), False, False)
    return found


def _lazy_imports(module: str) -> list[tuple[str, int, bool, bool]]:
    """The own modules a lazy ``__getattr__`` imports, read from the module's tables."""
    found = []
    for node in ast.parse(MODULES[module].read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if any(getattr(target, "id", None) in LAZY_MODULES.get(module, ()) for target in targets):
            value = ast.literal_eval(node.value)  # a dict's keys, or a tuple's items
            found.extend((f"{PACKAGE}.{name}", node.lineno, False, False) for name in value)
    return found


def _own_imports() -> list[Import]:
    imports = set()
    for module in MODULES:
        for dotted, line, in_function, type_only in _imports_of(module) + _lazy_imports(module):
            imported = _own_module(dotted)
            if imported is not None and imported != module:
                imports.add(Import(module, imported, line, in_function, type_only))
    return sorted(imports)


OWN_IMPORTS = _own_imports()


def _layer(module: str) -> int:
    for index, (_, patterns) in enumerate(LAYERS):
        if any(fnmatchcase(module, pattern) for pattern in patterns):
            return index
    raise AssertionError(f"{PACKAGE}.{module} is in no layer: declare it in LAYERS.")


def _shown(module: str) -> str:
    return f"{PACKAGE}.{module}" if module else PACKAGE


@pytest.mark.parametrize("module", sorted(MODULES), ids=_shown)
def test_every_module_has_a_layer(module):
    _layer(module)


def test_no_own_module_is_imported_inside_a_function():
    found = [
        f"{_shown(edge.importer)} (line {edge.line}) imports {_shown(edge.imported)}"
        for edge in OWN_IMPORTS
        if edge.in_function and edge.imported not in OPTIONAL
    ]
    assert not found, "imports inside a function (import at the top):\n" + "\n".join(found)


def test_modules_import_only_downward():
    found = [
        f"{_shown(edge.importer)} ({LAYERS[_layer(edge.importer)][0]}, line {edge.line}) "
        f"imports {_shown(edge.imported)} ({LAYERS[_layer(edge.imported)][0]})"
        for edge in OWN_IMPORTS
        if _layer(edge.imported) > _layer(edge.importer)
    ]
    assert not found, "upward imports:\n" + "\n".join(found)


def test_module_level_imports_form_no_cycle():
    graph: dict[str, set[str]] = {module: set() for module in MODULES}
    for edge in OWN_IMPORTS:
        if not edge.in_function:
            graph[edge.importer].add(edge.imported)
    done: set[str] = set()

    def walk(module: str, path: list[str]) -> None:
        if module in path:
            cycle = [*path[path.index(module) :], module]
            raise AssertionError("import cycle: " + " -> ".join(map(_shown, cycle)))
        if module in done:
            return
        for imported in sorted(graph[module]):
            walk(imported, [*path, module])
        done.add(module)

    for module in sorted(graph):
        walk(module, [])


def test_optional_dependencies_are_imported_where_they_are_used():
    found = [
        f"{_shown(module)} (line {line}) imports {dotted} at module level"
        for module in MODULES
        for dotted, line, in_function, type_only in _imports_of(module)
        if dotted.split(".")[0] in OPTIONAL_DEPENDENCIES and not (in_function or type_only)
    ]
    assert not found, "\n".join(found)


def _import_module_calls(module: str) -> list[tuple[int, bool]]:
    """(line, inside the module-level ``__getattr__``) of each ``import_module`` call."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    lazy = [
        node
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
    ]
    inside = {id(node) for function in lazy for node in ast.walk(function)}
    return [
        (node.lineno, id(node) in inside)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", None))
        in ("import_module", "__import__")
    ]


def test_modules_are_imported_on_first_use_only_by_a_lazy_getattr():
    found = [
        f"{_shown(module)} (line {line}) calls import_module"
        for module in MODULES
        for line, in_getattr in _import_module_calls(module)
        if not (in_getattr and module in LAZY_MODULES)
    ]
    assert not found, "\n".join(found)


def test_the_lazy_tables_are_read():
    lazy = {edge.imported for edge in OWN_IMPORTS if edge.importer == ""}
    assert {"metrics", "recalibration", "recalibration.refinement", "stats"} <= lazy
    assert {edge.imported for edge in OWN_IMPORTS if edge.importer == "cli._deferred"} == {
        "cli._commands"
    }


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from calibration_toolbox import _validation as iv", ["_validation"]),
        ("from calibration_toolbox.metrics.gce import _GCEOptions", ["metrics.gce"]),
        ("import calibration_toolbox.plot", ["plot"]),
        ("from calibration_toolbox import __version__", [""]),
    ],
)
def test_an_import_names_the_module_it_loads(source, expected):
    (node,) = ast.parse(source).body
    names = [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        names = [f"{node.module}.{name}" for name in names]
    assert [_own_module(name) for name in names] == expected
