"""The files the command line writes (figures, HTML page, .npz, the model), as one batch.

Each is written into the command's :class:`~calibration_toolbox._atomic.Batch`: to a
temporary file beside its target, all renamed over their targets only once every one is
complete (``calibration_toolbox._atomic``), so that a failure leaves no output at all.
"""

from __future__ import annotations

import os

import numpy as np

from calibration_toolbox._atomic import Batch
from calibration_toolbox._html import render_comparison, render_report
from calibration_toolbox.cli._compare import Comparison
from calibration_toolbox.cli._document import Report
from calibration_toolbox.plot import _CURVE_DISPLAYS, ReliabilityDiagram, _draw_curve, _pyplot
from calibration_toolbox.recalibration import Recalibrator

__all__ = ["write_comparison_html", "write_html", "write_model", "write_npz", "write_plot"]


def write_npz(outputs: Batch, path: str, **arrays: np.ndarray) -> None:
    """``np.savez(path, **arrays)`` into ``outputs`` (``path`` used as given, no suffix added)."""
    with outputs.open(path) as handle:
        np.savez(handle, **arrays)


def write_model(outputs: Batch, path: str, model: Recalibrator) -> None:
    """The fitted ``model`` as ``save`` writes it (its JSON, checked), into ``outputs``."""
    outputs.write(path, model._saved_text())


def write_plot(outputs: Batch, path: str, report: Report) -> None:
    """The report's diagrams on one figure (matplotlib, lazily), into ``outputs``.

    On the left, the binned reliability diagrams of every method overlaid (with their bin
    counts); to the right, one column per diagram of a measure's own curve
    (``report.curves``: CORP, smooth, risk-coverage), one panel per method, or one for all
    where the display overlays models (the risk-coverage curves).
    """
    plt = _pyplot()
    n_methods = len(report.tables)
    columns = len(report.curves)
    figure = plt.figure(
        figsize=(5.5 * (1 + columns), max(7.5, 4.6 * n_methods if columns else 0.0)),
        layout="constrained",
    )
    binned, *drawn = np.atleast_1d(figure.subfigures(1, 1 + columns))
    ax, counts_ax = binned.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": (3, 1)})
    for name, table in report.tables.items():
        ReliabilityDiagram.from_table(table, ax=ax, counts_ax=counts_ax, label=name)
    for column, curves in zip(drawn, report.curves.values(), strict=True):
        _, overlaid = _CURVE_DISPLAYS[type(next(iter(curves.values())))]
        panels = np.atleast_1d(column.subplots(1 if overlaid else n_methods, 1, squeeze=False))
        panels = np.repeat(panels.ravel(), n_methods) if overlaid else panels.ravel()
        for panel, (name, curve) in zip(panels, curves.items(), strict=False):
            _draw_curve(curve, ax=panel, label=name)
    figure.suptitle(report.document["file"], fontsize="small")
    try:
        with outputs.open(path) as handle:
            figure.savefig(handle, format=os.path.splitext(path)[1][1:].lower())
    finally:
        figure.clf()
        plt.close(figure)


def html_page(report: Report) -> str:
    """The HTML page of the report (``_html.render_report``; matplotlib imported lazily).

    ``tables`` maps each method to its top-label table and ``class_tables`` to its
    class-wise table (None with ``--scores``); ``curves`` the curves of the measures'
    own diagrams.
    """
    return render_report(
        report.document,
        report.tables,
        report.class_tables,
        report.curves,
        group_tables=report.group_tables,
    )


def write_html(outputs: Batch, path: str, report: Report) -> None:
    """The HTML page of the report, into ``outputs``."""
    outputs.write(path, html_page(report))


def write_comparison_html(outputs: Batch, path: str, comparison: Comparison) -> None:
    """The HTML page of ``compare`` (both diagrams overlaid), into ``outputs``."""
    outputs.write(path, render_comparison(comparison.document, comparison.tables))
