"""The files the command line writes (figures, HTML page, .npz, the model), as one batch.

Each is written into the command's :class:`~calibration_toolbox._atomic.Batch`: to a
temporary file beside its target, all renamed over their targets only once every one is
complete (``calibration_toolbox._atomic``), so that a failure leaves no output at all.
"""

from __future__ import annotations

import os

import numpy as np

from calibration_toolbox._atomic import Batch
from calibration_toolbox.cli._document import Report
from calibration_toolbox.cli._parser import UsageError
from calibration_toolbox.recalibration import Recalibrator

__all__ = ["write_html", "write_model", "write_npz", "write_plot"]


def write_npz(outputs: Batch, path: str, **arrays: np.ndarray) -> None:
    """``np.savez(path, **arrays)`` into ``outputs`` (``path`` used as given, no suffix added)."""
    with outputs.open(path) as handle:
        np.savez(handle, **arrays)


def write_model(outputs: Batch, path: str, model: Recalibrator) -> None:
    """The fitted ``model`` as ``save`` writes it (its JSON, checked), into ``outputs``."""
    outputs.write(path, model._saved_text())


def write_plot(outputs: Batch, path: str, report: Report) -> None:
    """The reliability diagrams of every method on one figure (matplotlib, lazily)."""
    from calibration_toolbox.plot import ReliabilityDiagram

    diagram = None
    for name, table in report.tables.items():
        if diagram is None:
            diagram = ReliabilityDiagram.from_table(table, label=name)
        else:
            ReliabilityDiagram(table, label=name).plot(
                ax=diagram.ax_, counts_ax=diagram.counts_ax_
            )
    figure = diagram.figure_
    figure.suptitle(report.document["file"], fontsize="small")
    try:
        with outputs.open(path) as handle:
            figure.savefig(handle, format=os.path.splitext(path)[1][1:].lower())
    finally:
        figure.clf()
        import matplotlib.pyplot as plt

        plt.close(figure)


def html_page(report: Report) -> str:
    """The HTML page of the report, by the ``html`` renderer (imported here, lazily).

    ``tables`` maps each method to its top-label table and ``class_tables`` to its
    class-wise table (None with ``--scores``).
    """
    try:
        from calibration_toolbox._html import render_report
    except ModuleNotFoundError as error:
        if error.name != "calibration_toolbox._html":
            raise
        raise UsageError(
            "--html needs the HTML renderer (calibration_toolbox._html), which this "
            "installation lacks."
        ) from None
    return render_report(
        report.document,
        report.tables,
        report.class_tables,
        corp_curves=report.corp_curves,
        group_tables=report.group_tables,
    )


def write_html(outputs: Batch, path: str, report: Report) -> None:
    """The HTML page of the report, into ``outputs``."""
    outputs.write(path, html_page(report))
