"""The options of a binned call, checked once: the first layer of the binned engine.

:class:`GCEOptions` holds the validated options of one GCE call (the bin edges, the score
set, the norm, thresholding, debiasing), made by :meth:`GCEOptions.checked`;
:func:`check_debias` is the debiasing rule that :class:`~calibration_toolbox.CalibrationTable`
applies too; :data:`DEFAULT_BINS`, :data:`DEFAULT_TACE_THRESHOLD` and :func:`one_spelling`
tell an option from its synonym (``bins=`` / ``bin=``, ``thresholding=`` / ``threshold=``).

Imports: NumPy, ``_validation`` (the scalar checkers) and ``binning`` only; every other layer
of the engine (``_table``, ``_scoresets``, ``_kernels``, ``_engine``) and ``gce`` import it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, InputTypeError, Name
from calibration_toolbox.binning import is_uniform

__all__ = [
    "DEFAULT_BINS",
    "DEFAULT_TACE_THRESHOLD",
    "DefaultFloat",
    "DefaultInt",
    "GCEOptions",
    "check_debias",
    "one_spelling",
]


def check_debias(debias: object, norm: float) -> bool:
    """Return ``debias`` as a bool; the debiased estimator exists for the L2 norm only."""
    debias = iv.check_flag(debias, "debias")
    if debias and norm != 2:
        shown = "'inf'" if norm == np.inf else int(norm)
        raise InputError(
            "{debias=True} needs norm=2 (the debiased estimator corrects the squared gaps); "
            "got norm={shown}.",
            argument="debias",
            shown=shown,
        )
    return debias


@dataclass(frozen=True)
class GCEOptions:
    """The validated options of one GCE call (see :func:`~calibration_toolbox.GCE`)."""

    edges: NDArray
    """Equal-width bin edges; with ``adaptive_bins`` only their number counts."""
    uniform: bool
    """Whether ``edges`` is ``linspace(0, 1, n_bins + 1)`` (bins found by one product)."""
    class_conditional: bool
    adaptive_bins: bool
    top_k: int | None
    """Entries kept per row, or ``None`` for all K of them."""
    norm: float
    """1.0, 2.0 or ``inf``."""
    thresholding: float
    """Entries ``p <= thresholding`` are dropped (0: none)."""
    debias: bool = False
    """The debiased L2 estimator (``norm`` is 2)."""

    @classmethod
    def checked(
        cls,
        n_classes: int,
        *,
        bins: object,
        class_conditional: object,
        adaptive_bins: object,
        top_k_classes: object,
        norm: object,
        thresholding: object,
        debias: object = False,
        n_samples: int | None = None,
    ) -> GCEOptions:
        """Validate the arguments of a GCE call on ``n_classes`` classes.

        ``n_samples``, the rows of the call, resolves ``bins="auto"`` (the cube-root rule of
        ``check_bins``); None where the rows are not known yet (``'auto'`` is refused).
        """
        class_conditional = iv.check_flag(class_conditional, "class_conditional")
        adaptive_bins = iv.check_flag(adaptive_bins, "adaptive_bins")
        edges = iv.check_bins(bins, adaptive_bins=adaptive_bins, n_samples=n_samples)
        iv.check_table_cells(n_classes if class_conditional else 1, len(edges) - 1)
        norm = iv.check_norm(norm)
        return cls(
            edges=edges,
            uniform=is_uniform(edges),
            class_conditional=class_conditional,
            adaptive_bins=adaptive_bins,
            top_k=iv.check_top_k(top_k_classes, n_classes),
            norm=norm,
            thresholding=iv.check_fraction(thresholding, "thresholding"),
            debias=check_debias(debias, norm),
        )

    @property
    def n_bins(self) -> int:
        """Number of bins per score set."""
        return len(self.edges) - 1

    def n_groups(self, n_classes: int) -> int:
        """Number of score sets: one per class, or one pooled set."""
        return n_classes if self.class_conditional else 1

    @property
    def bins_rows_as_checked(self) -> bool:
        """Whether the table is summed row block by row block as the scan checks them.

        Equal-width bins of the top label or of all entries: the bins of an entry do not
        depend on the other entries, so memory need not grow with N.
        """
        return not self.adaptive_bins and self.top_k in (1, None)


# The defaults of `GCE(bins=)` and `TACE(thresholding=)`, which have a synonym (`bin=`,
# `threshold=`): instances of their own, equal to 15 and 0.01 and shown so in signatures,
# so that an explicit `bins=15, bin=10` is an error rather than a comparison with 15.
class DefaultInt(int):
    """A default that ``is`` tells apart from the same number passed explicitly."""


class DefaultFloat(float):
    """A default that ``is`` tells apart from the same number passed explicitly."""


DEFAULT_BINS = DefaultInt(15)


DEFAULT_TACE_THRESHOLD = DefaultFloat(0.01)


def one_spelling(value, default, synonym, name: str, synonym_name: str):
    """``value``, or ``synonym`` when only the synonym was given (``None``: not given).

    Giving both is an error whatever the values, the default value of ``name`` included.
    """
    if synonym is None:
        return value
    if value is not default:
        raise InputTypeError(
            "pass {argument} or its synonym {synonym}, not both.",
            argument=name,
            synonym=Name(synonym_name),
        )
    return synonym
