"""The metrics of the command line by name (``--metrics``): one table, name -> call.

Every metric of the library is here once, with what the command line passes it: the number
of bins for the binned ones, ``logits``, and the fixed options that make a library call
into the named measure (``DebiasedL2`` is ``GCE(norm=2, debias=True)`` on the top label;
``Top2CE`` is ``ToprCE(r=2)``).  Names are matched without regard to case.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from calibration_toolbox import metrics as measures

__all__ = ["DEFAULT_METRICS", "METRICS", "Metric", "parse_metrics"]


@dataclass(frozen=True)
class Metric:
    """One metric as the command line calls it.

    Attributes
    ----------
    name : str
        The name on the command line and in the report.
    function : callable
        The library's metric, ``function(prob, labels, **options)``.
    binned : bool
        Whether it takes ``bins`` (``--bins``).
    class_wise : bool
        Whether it needs one column per class (so not with ``--scores``).
    options : mapping
        Fixed keyword arguments that make ``function`` this measure.
    streamed : str or None
        Its name in :meth:`CalibrationAccumulator.results` when the sums determine it (the
        report of a file read in blocks); None when it needs all the rows at once.
    """

    name: str
    function: Callable[..., float]
    binned: bool = True
    class_wise: bool = False
    options: Mapping[str, object] = field(default_factory=dict)
    streamed: str | None = None

    def keywords(self, bins: int, logits: bool) -> dict[str, object]:
        """The keyword arguments of a call: the fixed options, ``bins`` and ``logits``."""
        keywords = {**self.options, "logits": logits}
        if self.binned:
            keywords["bins"] = bins
        return keywords

    def __call__(self, prob, labels, *, bins: int, logits: bool) -> float:
        """The metric of ``prob`` and ``labels`` as a Python float."""
        return float(self.function(prob, labels, **self.keywords(bins, logits)))


METRICS: dict[str, Metric] = {
    metric.name: metric
    for metric in (
        Metric("ECE", measures.ECE, streamed="ECE"),
        Metric("MCE", measures.MCE, streamed="MCE"),
        Metric("RMSCE", measures.RMSCE, streamed="RMSCE"),
        Metric("SCE", measures.SCE, class_wise=True, streamed="SCE"),
        Metric("ACE", measures.ACE, class_wise=True),
        Metric("TACE", measures.TACE, class_wise=True),
        Metric("OCE", measures.OCE, streamed="OCE"),
        Metric("UCE", measures.UCE, streamed="UCE"),
        Metric("TCE", measures.TCE),
        Metric("CWCE", measures.CWCE, class_wise=True),
        Metric("TopLabelECE", measures.TopLabelECE, class_wise=True, streamed="TopLabelECE"),
        Metric(
            "DebiasedL2",
            measures.GCE,
            options={"class_conditional": False, "norm": 2, "debias": True},
            streamed="debiased_L2",
        ),
        Metric("KSCE", measures.KSCE, binned=False),
        Metric("KuiperCE", measures.KuiperCE, binned=False),
        Metric("MMCE", measures.MMCE, binned=False),
        Metric("SKCE", measures.SKCE, binned=False, class_wise=True),
        Metric("SmoothECE", measures.SmoothECE, binned=False),
        Metric("Brier", measures.brier_score, binned=False, streamed="brier_score"),
        Metric(
            "NLL",
            measures.negative_log_likelihood,
            binned=False,
            streamed="negative_log_likelihood",
        ),
    )
}
#: The report's metrics without ``--metrics`` (the class-wise ones are left out with --scores).
DEFAULT_METRICS = ("ECE", "MCE", "RMSCE", "SCE", "ACE", "TACE", "Brier", "NLL")
_BY_LOWER_NAME = {name.lower(): metric for name, metric in METRICS.items()}
_TOP_R = re.compile(r"top([1-9][0-9]*)ce", flags=re.IGNORECASE)


def _metric(name: str) -> Metric | None:
    """The metric called ``name`` (any case), ``Top<r>CE`` included; None if unknown."""
    known = _BY_LOWER_NAME.get(name.lower())
    if known is not None:
        return known
    top_r = _TOP_R.fullmatch(name)
    if top_r is None:
        return None
    r = int(top_r.group(1))
    return Metric(f"Top{r}CE", measures.ToprCE, class_wise=True, options={"r": r})


def parse_metrics(text: str | None) -> tuple[Metric, ...]:
    """The metrics of ``--metrics ECE,MCE,...`` in their order (None: the default list).

    Raises ``ValueError`` naming every valid name for an unknown or empty name.
    """
    names = DEFAULT_METRICS if text is None else [name.strip() for name in text.split(",")]
    metrics = {}
    for name in names:
        metric = _metric(name)
        if metric is None:
            valid = ", ".join([*METRICS, "Top<r>CE (e.g. Top2CE)"])
            raise ValueError(f"--metrics: unknown metric {name!r}; valid names: {valid}.")
        metrics.setdefault(metric.name, metric)  # a name given twice is reported once
    return tuple(metrics.values())
