"""The names the command line lists, read without importing a metric or a recalibrator.

The names of ``--metrics`` are the metric registry's command-line names
(:mod:`calibration_toolbox._registry`), those of ``--method`` the method table's
(:mod:`calibration_toolbox._method_table`): the parser and ``--help`` read them here, and
``_metrics`` and ``_methods`` build their tables of calls from the same rows, so that
``calibration-toolbox --help`` (and a command line the parser refuses) imports no metric, no
recalibrator and no statistic (``tests/test_startup.py``).
"""

from __future__ import annotations

from calibration_toolbox import _method_table as method_table
from calibration_toolbox import _registry as registry

__all__ = [
    "DEFAULT_METRICS",
    "METHOD_NAMES",
    "METRIC_NAMES",
    "STREAMED_METRICS",
    "TOP_R",
    "methods_taking",
]

#: The registry's pattern row (``Top2CE`` is ToprCE with ``r=2``), matched by pattern.
TOP_R = "Top<r>CE"
#: The names of ``--metrics``: the registry's command-line names in its order, ``TOP_R``
#: left out.
METRIC_NAMES = tuple(
    row.command_line for row in registry.command_line() if row.command_line != TOP_R
)
#: Those the report of a file read in blocks gives (the accumulator's sums determine them).
STREAMED_METRICS = tuple(
    row.command_line
    for row in registry.command_line()
    if row.command_line != TOP_R and row.stream is not None
)
#: The report's metrics without ``--metrics`` (the class-wise ones are left out with --scores).
DEFAULT_METRICS = ("ECE", "MCE", "RMSCE", "SCE", "ACE", "TACE", "Brier", "NLL")
#: The names of ``--method``, in the method table's order.
METHOD_NAMES = tuple(row.name for row in method_table.ROWS)


def methods_taking(needs: str) -> list[str]:
    """The names of the methods fitted on ``needs`` (``'logits'`` or ``'probabilities'``)."""
    return [row.name for row in method_table.ROWS if row.needs == needs]
