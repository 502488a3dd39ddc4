"""The Sphinx configuration of calibration-toolbox's documentation site.

Configured as the scientific-Python projects (NumPy, SciPy, pandas, scikit-learn) build
theirs today, because their users read ours:

- numpydoc renders the docstrings, which follow its standard (Parameters, Returns,
  References, Examples), and its parse warnings are build errors under `-W`;
- autosummary generates one page per public name from the `__all__` lists (the API pages
  are written below at build time, so a new export gets its page without an edit here);
- MyST (through myst-nb) reads the prose pages in Markdown, the same files GitHub renders,
  so the user guide has one home, readable on GitHub and on the site;
- myst-nb renders notebooks/*.ipynb with their STORED outputs (nb_execution_mode "off"):
  the tests execute the notebooks already (tests/test_notebooks.py), and the build stays
  fast and needs no kernel;
- sphinx-gallery executes docs/examples/*.py at build time and shows their figures;
- pydata-sphinx-theme, the theme of NumPy, SciPy and pandas, with its assets bundled (the
  built site makes no external request; tests/test_docs.py checks it in a browser).

Build: python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

import importlib
import inspect
import shutil
from pathlib import Path

import calibration_toolbox

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

project = "calibration-toolbox"
author = "the calibration-toolbox developers"
copyright = "the calibration-toolbox developers"
release = version = calibration_toolbox.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
    "sphinx_gallery.gen_gallery",
]
# examples/: the gallery's sources (sphinx-gallery writes their pages into auto_examples/,
# beside .ipynb downloads that are not pages)
exclude_patterns = ["_build", "api/generated/*.md", "examples", "auto_examples/*.ipynb"]
exclude_patterns += ["sg_execution_times.rst", "auto_examples/sg_execution_times.rst"]
templates_path = ["_templates"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}

autosummary_generate = True
# A cross-reference that resolves to nothing is a warning, so an error under -W; private
# names (a leading underscore: no page, by design) and NumPy's typing internals (inside the
# type alias PredictionsLike) are exempt.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(.*\.)?_\w+(\..*)?"),
    (r"py:.*", r"Field"),
    (r"py:class", r"numpy\._typing\..*|numpy\.dtype"),
]
autodoc_typehints = "none"  # numpydoc's Parameters section says the types
# numpydoc only warns in Python of a section it does not know (a misspelt "Parametres"
# would vanish from the page); its check GL06 makes that a Sphinx warning, an error under -W.
numpydoc_validation_checks = {"GL06"}
numpydoc_show_class_members = False  # the class template lists the members
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

myst_heading_anchors = 3  # the GitHub anchors of the guide's headings (page.md#section)
myst_enable_extensions = ["dollarmath"]
nb_execution_mode = "off"  # the notebooks' stored outputs, never executed here
suppress_warnings = ["myst.header"]  # a guide page may open on an H2 of a moved section

html_theme = "pydata_sphinx_theme"
html_title = f"calibration-toolbox {release}"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
# A mode of its own: without one the theme's script logs an error on a first visit.
html_context = {"default_mode": "light"}
html_static_path = []
html_show_sourcelink = False

# The gallery: docs/examples/plot_*.py executed at every build (a failing example fails
# it), their figures kept, on the bundled example and synthetic data.
sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "matplotlib_animations": False,
    "write_computation_times": False,
}

# The public modules, in the order their pages appear; each public name is documented once,
# under the first module whose __all__ holds it (the package's namespace first).
PUBLIC_MODULES = {
    "calibration_toolbox": "The package namespace",
    "calibration_toolbox.metrics": "Metrics",
    "calibration_toolbox.stats": "Statistics: intervals and tests",
    "calibration_toolbox.recalibration": "Recalibration",
    "calibration_toolbox.groups": "Calibration by group",
    "calibration_toolbox.streaming": "Streaming",
    "calibration_toolbox.io": "Reading saved predictions",
    "calibration_toolbox.datasets": "Example data",
    "calibration_toolbox.plot": "Plots",
    "calibration_toolbox.binning": "Binning",
    "calibration_toolbox.scores": "One score per row",
    "calibration_toolbox.sklearn": "scikit-learn: a calibrated classifier and scorers",
}


def _api_pages():
    """Write ``api/<module>.rst`` and ``api/index.rst``.

    A module's page is an autosummary of the names of its ``__all__`` that no earlier module
    documented.
    """
    api = HERE / "api"
    shutil.rmtree(api, ignore_errors=True)
    api.mkdir()
    documented = set()
    for module_name, title in PUBLIC_MODULES.items():
        module = importlib.import_module(module_name)
        names = [
            name
            for name in module.__all__
            if not inspect.ismodule(getattr(module, name))
            and id(getattr(module, name)) not in documented
        ]
        documented.update(id(getattr(module, name)) for name in names)
        heading = f"``{module_name}``: {title}"
        lines = [heading, "=" * len(heading), "", f".. automodule:: {module_name}"]
        lines += ["   :no-members:", "", f".. currentmodule:: {module_name}", ""]
        if names:
            lines += [".. autosummary::", "   :toctree: generated/", ""]
            lines += [f"   {name}" for name in names]
        else:
            lines += ["Every name of this module is documented under an earlier module."]
        (api / f"{module_name}.rst").write_text("\n".join(lines) + "\n", encoding="utf-8")
    index = ["API reference", "=============", "", ".. toctree::", "   :maxdepth: 1", ""]
    index += [f"   {module_name}" for module_name in PUBLIC_MODULES]
    (api / "index.rst").write_text("\n".join(index) + "\n", encoding="utf-8")


def _notebooks():
    """Copy notebooks/*.ipynb (their one home) into the source tree, to render them."""
    target = HERE / "notebooks"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        shutil.copy2(notebook, target / notebook.name)


_api_pages()
_notebooks()
