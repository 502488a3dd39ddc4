"""What only running a command needs, imported when first used (a lazy module attribute, PEP 562).

The command line reads ``_deferred.COMMANDS`` once the parser has accepted a command: the
first access imports :mod:`calibration_toolbox.cli._commands` (and with it the metrics, the
recalibrators and the statistics) and keeps the value here.  ``calibration-toolbox --help``,
and a command line the parser refuses, never import them (``tests/test_startup.py``).
``_EXPORTS`` is the table of the names and their modules (relative to the package), which
``tests/test_layers.py`` reads as imports of this module.
"""

from __future__ import annotations

import importlib

__all__: list[str] = []

#: The module (relative to the package) of each name: ``{module: names}``.
_EXPORTS = {"cli._commands": ("COMMANDS",)}

_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> object:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f"calibration_toolbox.{_MODULE_OF[name]}")
    value = getattr(module, name)
    globals()[name] = value  # later accesses are plain module attributes
    return value
