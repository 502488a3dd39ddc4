"""SciPy's submodules, each imported when first used (a lazy module attribute, PEP 562).

``import scipy.special`` alone costs about three times ``import numpy``, and
``scipy.optimize`` more again, so the package reaches them through this module: a module of
the package writes ``_scipy.special.expit(x)`` or ``_scipy.optimize.minimize(...)``, and the
first such attribute access imports the submodule and keeps it here (later accesses are plain
module attributes). ``import calibration_toolbox`` then imports no SciPy submodule
(``tests/test_startup.py`` checks it in a fresh interpreter).
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["SUBMODULES"]

#: The SciPy submodules the package uses.
SUBMODULES = frozenset({"fft", "integrate", "interpolate", "optimize", "special", "stats"})


def __getattr__(name: str) -> ModuleType:
    if name not in SUBMODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"scipy.{name}")
    globals()[name] = module
    return module
