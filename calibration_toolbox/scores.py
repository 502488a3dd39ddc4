"""``Scores``: one score per row, binned as given against a 0/1 target."""

from __future__ import annotations

import textwrap
from typing import Union

import numpy as np
from numpy.typing import ArrayLike

from calibration_toolbox import _registry as registry
from calibration_toolbox._docstrings import with_fragments

__all__ = ["PredictionsLike", "Scores"]


def _acceptors() -> str:
    """Who accepts ``Scores`` and who refuses it, from the metric registry (docstring text)."""

    def role(row: registry.MetricSpec) -> str:
        return f":func:`~calibration_toolbox.{row.name}`"

    rows = registry.accepting_scores()
    either = [row for row in rows if row.settings is None]  # GCE, calibration_table
    text = (
        f"Accepted by {', '.join(role(row) for row in rows if row.settings is not None)}, by "
        f"{' and '.join(role(row) for row in either)} with ``class_conditional=False, "
        "top_k_classes=1`` (equal-width or equal-mass bins), and by "
        ":mod:`calibration_toolbox.stats`.  The class-wise measures "
        f"({', '.join(f'``{row.name}``' for row in registry.class_wise())}) need a "
        "probability matrix and refuse it."
    )
    return textwrap.fill(text, width=88 - 4, break_on_hyphens=False) + "\n"


@with_fragments({"{acceptors}": _acceptors()})
class Scores:
    r"""Mark an array as one score per row, to be binned as given against 0/1 ``labels``.

    ``ECE(Scores(confidence), correct)`` bins each score ``s_i`` as it is and compares the
    mean score of each bin with the observed rate of the target ``y_i`` in {0, 1}:

    .. math:: \mathrm{ECE} = \sum_b \frac{n_b}{N}\,
              \lvert \bar y_b - \bar s_b \rvert.

    This is the form of a language model's confidence in its answer and whether the answer
    was right, or of a click-through (fraud, risk) model's P(event) and whether the event
    happened; it is what scikit-learn's ``calibration_curve`` and torchmetrics'
    ``binary_calibration_error`` compute.  A plain 1-D array given to a top-label measure
    is refused as ambiguous: for the top-label error of a binary classifier's P(y = 1),
    pass the two columns ``np.column_stack([1 - p, p])`` instead.

    {acceptors}

    :func:`~calibration_toolbox.brier_score` is then the single-probability form
    :math:`\frac1N \sum_i (s_i - y_i)^2`, half the two-column Brier score, and
    :func:`~calibration_toolbox.negative_log_likelihood` is
    :math:`-\frac1N \sum_i [y_i \log s_i + (1 - y_i) \log(1 - s_i)]`.

    ``Scores`` only holds the array-like it is given (no copy, no check): the measure
    checks it like any other input, at the call.  There, the values must be 1-D or one
    column ``(N, 1)``, finite and in [0, 1], or any finite log-odds with ``logits=True``
    (the logistic function is applied; the NLL is computed exactly from them), and
    ``labels`` must be 0/1 (bool, integers, or floats 0.0 / 1.0).  ``sample_weight`` works
    as everywhere; ``renormalize=True`` does not apply (there is no row to divide).

    Parameters
    ----------
    values : array-like, shape (N,) or (N, 1)
        The scores: probabilities in [0, 1], or log-odds with ``logits=True``.

    Attributes
    ----------
    values : array-like
        What was passed, unchanged (the object itself).

    See Also
    --------
    calibration_toolbox.calibration_table : the per-bin table, one group for ``Scores``.

    Examples
    --------
    A language model's confidence in each answer, and whether the answer was right:

    >>> import numpy as np
    >>> from calibration_toolbox import ECE, Scores, calibration_table
    >>> confidence = np.array([0.95, 0.9, 0.8, 0.75, 0.6, 0.3])
    >>> correct = np.array([True, True, False, True, False, False])
    >>> round(ECE(Scores(confidence), correct, bins=5), 6)
    0.266667
    >>> Scores(confidence)
    Scores(6 float64 values: one score per row, binned as given against a 0/1 target)

    A click-through model's predicted P(click), and whether the click happened; the
    per-bin table is what a reliability diagram draws:

    >>> p_click = np.array([0.02, 0.05, 0.04, 0.3, 0.25, 0.6])
    >>> clicked = np.array([0, 0, 1, 0, 1, 1])
    >>> table = calibration_table(Scores(p_click), clicked, bins=2, class_conditional=False)
    >>> table.counts, table.mean_target
    (array([[5., 1.]]), array([[0.4, 1. ]]))
    """

    __slots__ = ("_values",)

    def __init__(self, values: ArrayLike):
        if isinstance(values, Scores):
            values = values.values
        object.__setattr__(self, "_values", values)

    @property
    def values(self) -> ArrayLike:
        """The array-like passed to ``Scores``, unchanged."""
        return self._values

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Scores is immutable; make a new Scores(values) instead.")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("Scores is immutable.")

    def __reduce__(self):
        return (Scores, (self._values,))

    def __repr__(self) -> str:
        try:
            array = np.asarray(self._values)
            what = f"{array.size} {array.dtype} values"
        except (TypeError, ValueError):
            what = f"a {type(self._values).__name__}"
        return f"Scores({what}: one score per row, binned as given against a 0/1 target)"


#: What the measures take as predictions: an array-like of probabilities or logits, or
#: :class:`Scores` (one score per row).  For the type hints of the public signatures.
PredictionsLike = Union[ArrayLike, Scores]
