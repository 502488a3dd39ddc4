"""The files the command line writes (figures, HTML page, .npz), each atomically.

A file is written to a temporary file in the target's folder and renamed over the target
(``os.replace``) once complete, so that the target is either absent, the old file, or the
whole new one; the temporary file is removed on any failure.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator

import numpy as np

from calibration_toolbox.cli._document import Report
from calibration_toolbox.cli._parser import UsageError

__all__ = ["write_html", "write_npz", "write_plot"]


@contextlib.contextmanager
def _atomic(path: str) -> Iterator[object]:
    """A binary file handle whose content replaces ``path`` only when the block succeeds."""
    folder, base = os.path.split(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{base}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            yield handle
        # mkstemp makes the file 0600; a report is as readable as `open(path, "w")` makes it.
        mode = stat.S_IMODE(os.stat(path).st_mode) if os.path.exists(path) else 0o644
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def write_npz(path: str, **arrays: np.ndarray) -> None:
    """``np.savez(path, **arrays)``, atomically (``path`` used as given, no suffix added)."""
    with _atomic(path) as handle:
        np.savez(handle, **arrays)


def write_plot(path: str, report: Report) -> None:
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
        with _atomic(path) as handle:
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
    return render_report(report.document, report.tables, report.class_tables)


def write_html(path: str, report: Report) -> None:
    """The HTML page of the report, written atomically."""
    page = html_page(report)
    with _atomic(path) as handle:
        handle.write(page.encode("utf-8"))
