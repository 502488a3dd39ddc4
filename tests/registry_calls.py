"""What a contract suite passes to a registry row besides ``prob`` and ``labels``.

A row that declares ``groups`` (``MetricSpec.groups``: a statistic over groups of rows, as
``multicalibration_error``) is called with a group per row; every suite that calls each
row takes its ``groups`` from here, so that a new such row is called, not skipped.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GROUPS", "grouping", "with_groups"]

#: Groups of the suites' rows: row i is in group ``i % GROUPS`` (every group non-empty).
GROUPS = 3


def grouping(n_rows: int) -> np.ndarray:
    """A group label per row: ``0, 1, 2, 0, 1, 2, ...``."""
    return np.arange(n_rows) % GROUPS


def with_groups(row, prob, options: dict | None = None) -> dict:
    """``options`` with ``groups`` added for a row that declares it (one per row of ``prob``)."""
    options = {} if options is None else dict(options)
    if row.groups and "groups" not in options:
        values = getattr(prob, "values", prob)  # a Scores' array
        options["groups"] = grouping(np.shape(values)[0])
    return options
