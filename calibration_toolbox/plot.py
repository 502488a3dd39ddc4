"""Reliability diagrams and confidence histograms drawn from a calibration table.

The table is a :class:`~calibration_toolbox.CalibrationTable`.

Display objects in the scikit-learn style: ``ReliabilityDiagram.from_predictions``,
``.from_table`` and ``.from_recalibrator`` compute the engine's
:func:`~calibration_toolbox.calibration_table` and draw exactly that table, so the picture
and the metric in its legend cannot disagree.  Each object keeps the table it drew
(``table_``), the figure (``figure_``) and the axes (``ax_``); ``plot(ax=...)`` draws one
more series on existing axes (before/after recalibration).  Nothing calls ``plt.show()``
or changes matplotlib's global style.

matplotlib is imported when a figure is drawn, never when this module or the package is
imported; it comes with ``pip install "calibration-toolbox[plot]"``.

References
----------
Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On calibration of modern neural
networks.  ICML.  (Figure 1: confidence histogram and reliability diagram.)

Wilson, E. B. (1927). Probable inference, the law of succession, and statistical inference.
JASA 22, 209-212.  (The per-bin error bars.)
"""

from __future__ import annotations

import math
from typing import Any, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, InputTypeError
from calibration_toolbox.metrics import (
    CalibrationTable,
    RiskCoverageCurve,
    calibration_table,
    risk_coverage_curve,
)
from calibration_toolbox.metrics._table import check_table
from calibration_toolbox.metrics.smooth import SmoothReliabilityCurve, smooth_reliability_curve
from calibration_toolbox.scores import PredictionsLike, Scores
from calibration_toolbox.stats import CORPReliability, corp_reliability

__all__ = ["ConfidenceHistogram", "ReliabilityDiagram", "RiskCoverageDisplay"]

INSTALL_HINT = 'pip install "calibration-toolbox[plot]"'
MAX_GRID_CLASSES = 20
"""Largest number of classes drawn in a class-wise grid without an explicit ``classes``."""


def _pyplot():
    """``matplotlib.pyplot``, or an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(
            f"Plotting needs matplotlib, which is not installed; install it with {INSTALL_HINT}."
        ) from error
    return plt


def _check_label(label: object) -> str | None:
    if label is not None and not isinstance(label, str):
        raise InputTypeError(
            "{label} must be a string or None; got {value}.",
            argument="label",
            value=type(label).__name__,
        )
    return label


def _check_axes(ax: object, name: str = "ax") -> Any:
    if ax is None:
        return None
    from matplotlib.axes import Axes

    if not isinstance(ax, Axes):
        raise InputTypeError(
            "{argument} must be a matplotlib Axes or None; got {value}.",
            argument=name,
            value=type(ax).__name__,
        )
    return ax


def _chosen_classes(table: CalibrationTable, classes: ArrayLike | None) -> NDArray:
    """The groups of a class-conditional table to draw (all when K <= 20)."""
    if classes is None:
        if table.n_groups > MAX_GRID_CLASSES:
            raise InputError(
                "{classes} must be given to draw a class-wise grid of more than "
                "{MAX_GRID_CLASSES} classes (one panel each would be unreadable); got "
                "classes=None with K = {n_groups}.  Pass e.g. classes=[0, 1, 2].",
                argument="classes",
                MAX_GRID_CLASSES=MAX_GRID_CLASSES,
                n_groups=table.n_groups,
            )
        return np.arange(table.n_groups)
    chosen = np.asarray(classes)
    if chosen.ndim != 1 or chosen.size == 0 or chosen.dtype.kind not in "iu":
        raise InputError(
            "{classes} must be a non-empty 1-D sequence of class indices; got {value!r}.",
            argument="classes",
            value=classes,
        )
    if chosen.min() < 0 or chosen.max() >= table.n_groups or np.unique(chosen).size < chosen.size:
        raise InputError(
            "{classes} must be distinct class indices in [0, {last}]; got {given!r}.",
            argument="classes",
            last=table.n_groups - 1,
            given=classes,
        )
    return chosen


def _group(table: CalibrationTable, group: int) -> CalibrationTable:
    """The pooled one-group table of ``group`` (its error is that set's error)."""
    rows = slice(group, group + 1)
    return CalibrationTable(
        edges=table.edges[rows],
        counts=table.counts[rows],
        score_sums=table.score_sums[rows],
        target_sums=table.target_sums[rows],
        n_classes=table.n_classes,
        class_conditional=False,
        adaptive_bins=table.adaptive_bins,
    )


def _bins_text(table: CalibrationTable) -> str:
    kind = "equal-mass" if table.adaptive_bins else "equal-width"
    return f"{table.n_bins} {kind} bins"


def _series_label(label: str | None, table: CalibrationTable) -> str:
    error = table.calibration_error(1)
    return f"{label or 'model'} (ECE = {error:.4f})"


def _draw_reliability(ax, table: CalibrationTable, label: str | None) -> dict[str, Any]:
    """Accuracy against mean confidence of the non-empty bins of the one-group ``table``.

    Empty bins are left out (an empty bin has no accuracy: drawing it as 0 would show a
    false over-confidence); the gap to the diagonal is shaded; Wilson 95% intervals of
    each bin's accuracy are the error bars.
    """
    filled = table.counts[0] > 0
    confidence = table.mean_score[0][filled]
    accuracy = table.mean_target[0][filled]
    low, high = table.intervals("wilson")
    # An accuracy of exactly 0 or 1 may sit a rounding error outside its own interval.
    errors = np.maximum(np.vstack([accuracy - low[0][filled], high[0][filled] - accuracy]), 0.0)
    (line,) = ax.plot(
        confidence, accuracy, marker="o", markersize=4, label=_series_label(label, table)
    )
    color = line.get_color()
    bars = ax.errorbar(
        confidence, accuracy, yerr=errors, fmt="none", ecolor=color, elinewidth=1, capsize=2
    )
    gap = ax.fill_between(confidence, accuracy, confidence, color=color, alpha=0.2, linewidth=0)
    return {"line": line, "errorbar": bars, "gap": gap, "color": color}


def _draw_diagonal(ax) -> None:
    """Draw the diagonal (once per axes) and set the limits of the unit square.

    The limits are padded so that points at 0 or 1 are not cut in half by the frame.
    """
    if not any(line.get_label() == "perfect calibration" for line in ax.get_lines()):
        ax.plot(
            [0, 1], [0, 1], linestyle="--", color="0.5", linewidth=1, label="perfect calibration"
        )
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)


def _axis_words(table: CalibrationTable) -> tuple[str, str]:
    """What the two axes of a reliability panel of ``table`` show: ``(x, y)`` labels.

    A class-wise panel is not top-label: its x is the mean predicted P(y = k) in a bin and
    its y the share of those rows whose label is k; scores are read against their target.
    """
    if table.multilabel:
        return "mean P(label k)", "share with label k"
    if table.class_conditional:
        return "mean P(y = k)", "share with label k"
    if table.scores:
        return "mean score", "mean target"
    return "mean confidence", "accuracy"


def _columns_of(axes: NDArray) -> int:
    """Columns of the grid the panels sit in (1 when they are not on a grid)."""
    spec = axes[0].get_subplotspec()
    return 1 if spec is None else spec.get_gridspec().ncols


def _label_panels(axes: NDArray, n_columns: int, table: CalibrationTable) -> None:
    """Axis labels on the left column and under the lowest panel of each column."""
    x_words, y_words = _axis_words(table)
    for index, panel in enumerate(axes):
        panel.tick_params(labelsize="x-small")
        left = index % n_columns == 0
        panel.set_ylabel(y_words if left else "", fontsize="small")
        lowest = index + n_columns >= axes.size  # nothing drawn below this panel
        panel.set_xlabel(x_words if lowest else "", fontsize="small")
        panel.tick_params(labelbottom=lowest)


def _draw_counts(ax, table: CalibrationTable, color: str) -> Any:
    """The (weighted) count of every non-empty bin as a step outline over the bin edges."""
    edges = table.edges[0]
    counts = np.where(table.counts[0] > 0, table.counts[0], np.nan)
    steps = ax.stairs(counts, edges, color=color, fill=False, linewidth=1.5)
    ax.set_yscale("log")
    # From below 1: bins of nearly equal counts (equal-mass bins) then look equal, instead
    # of a difference of one sample filling the panel.
    filled = table.counts[0][table.counts[0] > 0]
    ax.set_ylim(0.5 * min(1.0, filled.min()), max(ax.get_ylim()[1], 2.0 * filled.max()))
    ax.set_xlabel(_axis_words(table)[0])
    ax.set_ylabel("count (log)")
    return steps


# -- the CORP diagram ----------------------------------------------------------------------
_STRATEGIES = ("bins", "corp", "smooth")
_SCORE_NAMES = {"brier": "Brier score", "log": "log score"}


#: How the legend names each CORP band (``CORPReliability.band``).
_BAND_WORDS = {
    "resampling": "resampling",
    "continuous": "continuous asymptotics",
    "discrete": "discrete asymptotics",
}


def _check_corp(corp: object) -> CORPReliability | None:
    if corp is not None and not isinstance(corp, CORPReliability):
        raise InputTypeError(
            "{corp} must be the result of calibration_toolbox.stats.corp_reliability or None; "
            "got {value}.",
            argument="corp",
            value=type(corp).__name__,
        )
    return corp


def _refuse_binned_options(class_conditional: object, adaptive_bins: object, strategy: str):
    """The CORP and smooth curves are the top label's: the binned options do not apply."""
    for name, value in (
        ("class_conditional", class_conditional),
        ("adaptive_bins", adaptive_bins),
    ):
        if iv.check_flag(value, name):
            raise InputError(
                "{argument} applies to strategy='bins'; got {argument}=True with "
                "strategy={strategy!r} (it draws one curve of the top label or the scores).",
                argument=name,
                strategy=strategy,
            )


def _corp_text(curve: CORPReliability) -> str:
    """The numbers the paper's figures print in the corner: the score and its three terms."""
    parts = curve.decomposition
    lines = [
        f"{_SCORE_NAMES[curve.score]} {parts.score:.4f}",
        f"MCB {parts.miscalibration:.4f}"
        + ("" if curve.pvalue is None else f" (p = {curve.pvalue:.3g})"),
        f"DSC {parts.discrimination:.4f}",
        f"UNC {parts.uncertainty:.4f}",
    ]
    return "\n".join(lines)


def _draw_corp(ax, curve: CORPReliability, label: str | None) -> dict[str, Any]:
    """The PAV step curve over the band of a calibrated model, and the decomposition."""
    band = ax.fill_between(
        curve.band_forecasts,
        curve.band_low,
        curve.band_high,
        step="post",
        color="tab:orange",
        alpha=0.25,
        linewidth=0,
        label=f"{1 - curve.alpha:.0%} consistency band ({_BAND_WORDS[curve.band]})",
    )
    (line,) = ax.step(
        curve.forecasts,
        curve.recalibrated,
        where="post",
        linewidth=1.5,
        label=f"{label or 'model'} (CORP, PAV fit)",
    )
    text = ax.text(
        0.98,
        0.02,
        _corp_text(curve),
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize="small",
        family="monospace",
        bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.8, "edgecolor": "0.7"},
    )
    return {"line": line, "band": band, "text": text, "color": line.get_color()}


def _draw_forecast_counts(ax, curve: CORPReliability, color: str, x_words: str) -> Any:
    """The (weighted) count of the forecasts in 50 equal-width bins, on a log axis."""
    counts, edges = np.histogram(curve.forecasts, 50, (0.0, 1.0), weights=curve.weights)
    steps = ax.stairs(np.where(counts > 0, counts, np.nan), edges, color=color, linewidth=1.5)
    ax.set_yscale("log")
    filled = counts[counts > 0]
    ax.set_ylim(0.5 * min(1.0, filled.min()), 2.0 * filled.max())
    ax.set_xlabel(x_words)
    ax.set_ylabel("count (log)")
    return steps


_DisplayT = TypeVar("_DisplayT", bound="_Display")


class _Display:
    """What the display objects share: drawing a fitted recalibrator's predictions."""

    @classmethod
    def from_recalibrator(
        cls: type[_DisplayT],
        recalibrator: Any,
        X: ArrayLike,
        y: ArrayLike,
        *,
        label: str | None = None,
        **kwargs: Any,
    ) -> _DisplayT:
        """Draw ``recalibrator.predict_proba(X)`` against ``y``.

        ``label`` defaults to the recalibrator's class name; the other keywords are those
        of ``from_predictions`` (``logits`` excepted: the probabilities are drawn).
        """
        if not hasattr(recalibrator, "predict_proba"):
            raise InputTypeError(
                "{recalibrator} must be a fitted recalibrator with predict_proba; got {value}.",
                argument="recalibrator",
                value=type(recalibrator).__name__,
            )
        if label is None:
            label = type(recalibrator).__name__
        return cls.from_predictions(recalibrator.predict_proba(X), y, label=label, **kwargs)


def _predictions_table(prob, labels, *, class_conditional: bool = False, **options):
    """The engine's table: top-label when pooled, all K entries per class otherwise."""
    return calibration_table(
        prob,
        labels,
        class_conditional=class_conditional,
        top_k_classes="all" if class_conditional is True else 1,
        **options,
    )


class ReliabilityDiagram(_Display):
    """Reliability diagram: accuracy against mean confidence per bin (Guo et al. 2017).

    Build it with :meth:`from_predictions`, :meth:`from_table` or :meth:`from_recalibrator`.
    A pooled table (``class_conditional=False``) is drawn on one axes with the bin counts
    under it; a class-conditional table is drawn as a grid of one panel per class.

    Attributes
    ----------
    table_ : CalibrationTable
        The table drawn; its ``calibration_error()`` is the ECE in the legend.
    figure_ : matplotlib.figure.Figure
        The figure drawn on.
    ax_ : matplotlib.axes.Axes or ndarray of Axes
        The reliability axes; for a class-wise grid, the array of the class panels.
    counts_ax_ : matplotlib.axes.Axes or None
        The axes of the bin counts (None when drawn on a given ``ax`` without
        ``counts_ax``, and for a grid).
    line_ : matplotlib.lines.Line2D or list of Line2D
        The accuracy points of the series (one per panel for a grid).
    classes_ : ndarray or None
        The classes drawn in a grid.

    References
    ----------
    Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On calibration of modern
    neural networks.  ICML.

    Examples
    --------
    >>> import io
    >>> import numpy as np
    >>> from calibration_toolbox.plot import ReliabilityDiagram
    >>> rng = np.random.default_rng(0)
    >>> prob = rng.dirichlet(np.ones(3), size=500)
    >>> labels = rng.integers(0, 3, size=500)
    >>> display = ReliabilityDiagram.from_predictions(prob, labels, bins=10, label="model")
    >>> from calibration_toolbox import ECE
    >>> display.table_.calibration_error() == ECE(prob, labels, bins=10)
    True
    >>> display.ax_.get_legend().get_texts()[1].get_text()
    'model (ECE = 0.3010)'
    >>> display.figure_.savefig(io.BytesIO(), format="png")  # or a file name
    >>> import matplotlib.pyplot as plt
    >>> plt.close(display.figure_)
    """

    def __init__(
        self,
        table: CalibrationTable | None = None,
        *,
        classes: ArrayLike | None = None,
        label: str | None = None,
        corp: CORPReliability | None = None,
    ):
        self.label = _check_label(label)
        self.corp_ = _check_corp(corp)
        self.curve_ = None  # a smooth curve's display is made by from_curve
        if (table is None) == (self.corp_ is None):
            raise InputError(
                "{table} and {corp} are exclusive: give one (a CalibrationTable, or the result "
                "of stats.corp_reliability); got {given}.",
                argument="table",
                given="both" if table is not None else "neither",
            )
        self.scores_ = False
        if self.corp_ is not None:
            self.table_ = self.classes_ = None
            if classes is not None:
                raise InputError(
                    "{classes} chooses the panels of a class-wise grid; got classes={value!r} "
                    "with a CORP diagram.",
                    argument="classes",
                    value=classes,
                )
            return
        self.table_ = check_table(table)
        if self.table_.class_conditional:
            self.classes_ = _chosen_classes(self.table_, classes)
        elif classes is not None:
            raise InputError(
                "{classes} chooses the panels of a class-wise grid (class_conditional=True); "
                "got classes={value!r} with a pooled table.",
                argument="classes",
                value=classes,
            )
        else:
            self.classes_ = None

    @classmethod
    def from_predictions(
        cls,
        prob: PredictionsLike,
        labels: ArrayLike,
        *,
        bins: Union[int, ArrayLike] = 15,
        adaptive_bins: bool = False,
        class_conditional: bool = False,
        classes: ArrayLike | None = None,
        logits: bool = False,
        sample_weight: ArrayLike | None = None,
        ax: Any = None,
        counts_ax: Any = None,
        label: str | None = None,
        strategy: str = "bins",
        score: str = "brier",
        alpha: float | None = None,
        band: str = "auto",
        bandwidth: float | None = None,
        n_resamples: int = 100,
        random_state: int | np.random.Generator | None = None,
    ) -> ReliabilityDiagram:
        """Draw the reliability diagram of predictions.

        ``strategy='bins'`` (the default) draws the binned table below; ``strategy='corp'``
        draws the CORP diagram of Dimitriadis, Gneiting & Jordan (2021) from
        :func:`~calibration_toolbox.stats.corp_reliability`: the PAV fit of correctness on
        the top-label confidence (or of the target on ``Scores``), a step function whose
        bins are the PAV blocks (chosen by the data, ``bins`` is not used), over the
        consistency band of a calibrated model, with the score's MCB (and its p-value
        from the band's resamples, :func:`~calibration_toolbox.stats.corp_test`), DSC and
        UNC in the corner, as the paper's figures show them.

        Parameters
        ----------
        prob, labels, bins, adaptive_bins, logits, sample_weight
            As in :func:`~calibration_toolbox.calibration_table`; ``prob`` may be
            :class:`~calibration_toolbox.Scores` when ``class_conditional=False``.
        class_conditional : bool, default False
            False: the top-label (confidence) diagram; True: one panel per class of
            ``P(y = k)`` against ``1{label = k}`` (all K entries of each row).
        classes : sequence of int, optional
            The classes of the grid; required when K > 20.
        ax : matplotlib Axes, optional
            Axes to draw on (for a grid: a sequence of one Axes per class); a new figure
            otherwise.
        counts_ax : matplotlib Axes, optional
            Axes for the bin counts when ``ax`` is given.
        label : str, optional
            Name of the series in the legend.
        strategy : {'bins', 'corp', 'smooth'}, default 'bins'
            ``'bins'``: the binned diagram of the table.  ``'corp'``: the CORP diagram
            (above).  ``'smooth'``: the kernel-smoothed curve that
            :func:`~calibration_toolbox.SmoothECE` integrates
            (:func:`~calibration_toolbox.smooth_reliability_curve`) with its pointwise
            bootstrap band and, under it, the density of the scores (as relplot draws
            them).  Both curves: top label or ``Scores`` only, ``bins`` and
            ``adaptive_bins`` unused.
        score, band
            ``strategy='corp'`` only: as in :func:`~calibration_toolbox.stats.corp_reliability`
            (the decomposition's scoring rule, the band's method).
        bandwidth
            ``strategy='smooth'`` only: as in
            :func:`~calibration_toolbox.smooth_reliability_curve` (default: the fixed point).
        alpha, n_resamples, random_state
            The band's level ``1 - alpha`` (default: 0.1 for ``'corp'``, the paper's 90 %
            band, 0.05 for ``'smooth'``), its resamples (``n_resamples=0``: no smooth band)
            and seed.

        Returns
        -------
        ReliabilityDiagram
        """
        strategy = iv.choice(*_STRATEGIES)(strategy, "strategy")
        if strategy != "bins":
            _refuse_binned_options(class_conditional, adaptive_bins, strategy)
        if strategy == "smooth":
            curve = smooth_reliability_curve(
                prob,
                labels,
                bandwidth=bandwidth,
                n_resamples=n_resamples,
                alpha=0.05 if alpha is None else alpha,
                random_state=random_state,
                logits=logits,
                sample_weight=sample_weight,
            )
            return cls.from_curve(curve, ax=ax, label=label)
        if strategy == "corp":
            curve = corp_reliability(
                prob,
                labels,
                score=score,
                alpha=0.1 if alpha is None else alpha,
                band=band,
                n_resamples=n_resamples,
                random_state=random_state,
                logits=logits,
                sample_weight=sample_weight,
            )
            display = cls(corp=curve, label=label)
            display.scores_ = isinstance(prob, Scores)
            return display.plot(ax=ax, counts_ax=counts_ax)
        table = _predictions_table(
            prob,
            labels,
            bins=bins,
            class_conditional=class_conditional,
            adaptive_bins=adaptive_bins,
            logits=logits,
            sample_weight=sample_weight,
        )
        return cls.from_table(table, classes=classes, ax=ax, counts_ax=counts_ax, label=label)

    @classmethod
    def from_table(
        cls,
        table: CalibrationTable,
        *,
        classes: ArrayLike | None = None,
        ax: Any = None,
        counts_ax: Any = None,
        label: str | None = None,
    ) -> ReliabilityDiagram:
        """Draw a :class:`~calibration_toolbox.CalibrationTable` as it is.

        Parameters are those of :meth:`from_predictions`.
        """
        return cls(table, classes=classes, label=label).plot(ax=ax, counts_ax=counts_ax)

    @classmethod
    def from_curve(
        cls,
        curve: SmoothReliabilityCurve | CORPReliability,
        *,
        ax: Any = None,
        counts_ax: Any = None,
        label: str | None = None,
    ) -> ReliabilityDiagram:
        """Draw a curve computed beforehand as it is: smooth or CORP.

        A :class:`~calibration_toolbox.SmoothReliabilityCurve` (``strategy='smooth'``): the
        curve (``accuracy`` against ``grid``), its band where it has one (``low`` to
        ``high``) and the density of the scores, scaled to 0.3 of the height at its peak,
        along the bottom, on one axes (``counts_ax`` unused); the display keeps ``curve_``.
        A :class:`~calibration_toolbox.stats.CORPReliability` (``strategy='corp'``): the
        CORP diagram with the forecasts' counts on ``counts_ax`` (when given, or on a new
        figure); the display keeps ``corp_``.
        ``table_`` is None for both.
        """
        if isinstance(curve, CORPReliability):
            return cls(corp=curve, label=label).plot(ax=ax, counts_ax=counts_ax)
        if not isinstance(curve, SmoothReliabilityCurve):
            raise InputTypeError(
                "{curve} must be a SmoothReliabilityCurve or a CORPReliability; got {value}.",
                argument="curve",
                value=type(curve).__name__,
            )
        display = cls.__new__(cls)
        display.table_, display.curve_, display.classes_ = None, curve, None
        display.corp_ = None
        display.label = _check_label(label)
        return display.plot(ax=ax)

    def plot(
        self, ax: Any = None, label: str | None = None, *, counts_ax: Any = None
    ) -> ReliabilityDiagram:
        """Draw the table on ``ax`` (a new figure when None) and return ``self``.

        Several displays drawn on the same ``ax`` (and ``counts_ax``) overlay their series,
        e.g. before and after recalibration: ``after.plot(ax=before.ax_,
        counts_ax=before.counts_ax_)``.  A smooth curve (``from_curve``) is drawn on one
        axes (``counts_ax`` unused).
        """
        plt = _pyplot()
        if label is not None:
            self.label = _check_label(label)
        if self.curve_ is not None:
            return _plot_smooth(self, plt, _check_axes(ax))
        if self.corp_ is None and self.table_.class_conditional:
            return self._plot_grid(plt, ax)
        ax = _check_axes(ax)
        counts_ax = _check_axes(counts_ax, "counts_ax")
        if ax is None:
            _, (ax, counts_ax) = plt.subplots(
                2,
                1,
                figsize=(5.5, 7.5),
                gridspec_kw={"height_ratios": (3, 1)},
                sharex=True,
                layout="constrained",
            )
        if self.corp_ is not None:
            return self._plot_corp(ax, counts_ax)
        _draw_diagonal(ax)
        drawn = _draw_reliability(ax, self.table_, self.label)
        x_words, y_words = _axis_words(self.table_)
        ax.set_ylabel(y_words)
        if counts_ax is None:
            ax.set_xlabel(x_words)
        ax.set_title(f"Reliability diagram ({_bins_text(self.table_)})")
        # "best": a fixed corner hid the points of under-confident bins (upper left) or of
        # over-confident ones (lower right), whichever the model has.
        ax.legend(loc="best", fontsize="small")
        self.line_ = drawn["line"]
        self.errorbar_ = drawn["errorbar"]
        self.gap_ = drawn["gap"]
        self.counts_ = (
            None if counts_ax is None else _draw_counts(counts_ax, self.table_, drawn["color"])
        )
        self.figure_, self.ax_, self.counts_ax_ = ax.figure, ax, counts_ax
        return self

    def _plot_corp(self, ax, counts_ax):
        """The CORP diagram on ``ax``, the forecasts' counts on ``counts_ax`` (if any)."""
        curve = self.corp_
        _draw_diagonal(ax)
        drawn = _draw_corp(ax, curve, self.label)
        x_words = "score" if self.scores_ else "confidence"
        y_words = "PAV-recalibrated " + ("event rate" if self.scores_ else "accuracy")
        ax.set_ylabel(y_words)
        if counts_ax is None:
            ax.set_xlabel(x_words)
        n_blocks = np.unique(curve.recalibrated).size
        ax.set_title(f"CORP reliability diagram ({n_blocks} PAV blocks)")
        ax.legend(loc="upper left", fontsize="small")
        self.line_, self.band_, self.text_ = drawn["line"], drawn["band"], drawn["text"]
        self.errorbar_ = self.gap_ = None
        self.counts_ = (
            None
            if counts_ax is None
            else _draw_forecast_counts(counts_ax, curve, drawn["color"], x_words)
        )
        self.figure_, self.ax_, self.counts_ax_ = ax.figure, ax, counts_ax
        return self

    def _plot_grid(self, plt, ax: Any):
        """One reliability panel per chosen class, the class's own ECE in its title."""
        n_panels = self.classes_.size
        if ax is None:
            n_columns = math.ceil(math.sqrt(n_panels))
            n_rows = math.ceil(n_panels / n_columns)
            figure, grid = plt.subplots(
                n_rows,
                n_columns,
                figsize=(2.6 * n_columns, 2.6 * n_rows + 0.6),
                sharex=True,
                sharey=True,
                layout="constrained",
                squeeze=False,
            )
            for extra in grid.ravel()[n_panels:]:
                figure.delaxes(extra)
            axes = grid.ravel()[:n_panels]
        else:
            axes = _panel_axes(ax, n_panels)
            figure = axes[0].figure
            n_columns = _columns_of(axes)
        self.line_ = [
            self._draw_panel(panel, k) for panel, k in zip(axes, self.classes_, strict=True)
        ]
        _label_panels(axes, n_columns, self.table_)
        error = self.table_.calibration_error(1)
        if self.table_.multilabel:
            title = f"Per-label reliability; macro ECE = {error:.4f}"
        else:
            title = (
                f"Class-wise reliability ({_bins_text(self.table_)}); "
                f"class-wise ECE over all {self.table_.n_classes} classes = {error:.4f}"
            )
        figure.suptitle(title)
        self.figure_, self.ax_, self.counts_ax_ = figure, np.asarray(axes), None
        return self

    def _draw_panel(self, panel, k: int):
        group = _group(self.table_, int(k))
        _draw_diagonal(panel)
        line = _draw_reliability(panel, group, self.label)["line"]
        noun = "label" if self.table_.multilabel else "class"
        panel.set_title(f"{noun} {k}: ECE {group.calibration_error(1):.3f}", fontsize="small")
        return line


#: Height of the density's peak along the bottom of a smooth diagram (relplot's 0.3).
_DENSITY_HEIGHT = 0.3


def _plot_smooth(display: ReliabilityDiagram, plt, ax: Any) -> ReliabilityDiagram:
    """The smooth curve, its band and the scaled density on one axes."""
    curve = display.curve_
    if ax is None:
        _, ax = plt.subplots(figsize=(5.5, 5.5), layout="constrained")
    _draw_diagonal(ax)
    name = f"{display.label or 'model'} (smECE = {curve.value:.4f})"
    (line,) = ax.plot(curve.grid, curve.accuracy, linewidth=2, label=name)
    color = line.get_color()
    band = None
    if curve.low is not None:
        band = ax.fill_between(
            curve.grid,
            curve.low,
            curve.high,
            color=color,
            alpha=0.25,
            linewidth=0,
            label=f"{curve.confidence_level:.0%} bootstrap band",
        )
    height = curve.density / curve.density.max() * _DENSITY_HEIGHT
    density = ax.fill_between(
        curve.grid, 0.0, height, color="0.5", alpha=0.35, linewidth=0, label="density of scores"
    )
    ax.set_xlabel("confidence (score)")
    ax.set_ylabel("smoothed accuracy (mean target)")
    ax.set_title(f"Smooth reliability diagram (bandwidth {curve.bandwidth:.3g})")
    ax.legend(loc="best", fontsize="small")
    display.line_, display.band_, display.density_ = line, band, density
    display.figure_, display.ax_, display.counts_ax_ = ax.figure, ax, None
    return display


def _panel_axes(ax: Any, n_panels: int) -> NDArray:
    axes = np.asarray(ax, dtype=object).ravel()
    for panel in axes:
        _check_axes(panel)
    if axes.size != n_panels:
        raise InputError(
            "{ax} must hold one Axes per class drawn ({n_panels}); got {size}.",
            argument="ax",
            n_panels=n_panels,
            size=axes.size,
        )
    return axes


class ConfidenceHistogram(_Display):
    """Histogram of the top-label confidence with mean-confidence and accuracy lines.

    Guo et al. (2017), figure 1 (top): the share of samples in each confidence bin, a
    vertical line at the average confidence and one at the accuracy; a gap between the two
    lines is the over- (confidence right of accuracy) or under-confidence of the model.
    Both are read from the pooled :class:`~calibration_toolbox.CalibrationTable`: the
    accuracy is ``sum(target_sums) / sum(counts)``.

    Attributes
    ----------
    table_, figure_, ax_
        As in :class:`ReliabilityDiagram`.
    bars_ : matplotlib.container.BarContainer
        The bars (share of samples per bin, empty bins included as 0: this is a count).
    mean_confidence_, accuracy_ : float
        The positions of the two vertical lines.

    References
    ----------
    Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On calibration of modern
    neural networks.  ICML.
    """

    def __init__(self, table: CalibrationTable, *, label: str | None = None):
        self.table_ = check_table(table)
        if self.table_.class_conditional:
            raise InputError(
                "{table} must be pooled (class_conditional=False) for a confidence histogram; "
                "got a class-conditional table of {n_groups} groups.",
                argument="table",
                n_groups=self.table_.n_groups,
            )
        self.label = _check_label(label)
        total = float(self.table_.counts.sum())
        self.mean_confidence_ = float(self.table_.score_sums.sum()) / total
        self.accuracy_ = float(self.table_.target_sums.sum()) / total

    @classmethod
    def from_predictions(
        cls,
        prob: PredictionsLike,
        labels: ArrayLike,
        *,
        bins: Union[int, ArrayLike] = 15,
        adaptive_bins: bool = False,
        logits: bool = False,
        sample_weight: ArrayLike | None = None,
        ax: Any = None,
        label: str | None = None,
    ) -> ConfidenceHistogram:
        """Draw the confidence histogram of predictions.

        The arguments are those of :meth:`ReliabilityDiagram.from_predictions`.
        """
        table = _predictions_table(
            prob,
            labels,
            bins=bins,
            adaptive_bins=adaptive_bins,
            logits=logits,
            sample_weight=sample_weight,
        )
        return cls.from_table(table, ax=ax, label=label)

    @classmethod
    def from_table(
        cls, table: CalibrationTable, *, ax: Any = None, label: str | None = None
    ) -> ConfidenceHistogram:
        """Draw a pooled :class:`~calibration_toolbox.CalibrationTable` as it is."""
        return cls(table, label=label).plot(ax=ax)

    def plot(self, ax: Any = None, label: str | None = None) -> ConfidenceHistogram:
        """Draw on ``ax`` (a new figure when None); several on one ``ax`` overlay."""
        plt = _pyplot()
        if label is not None:
            self.label = _check_label(label)
        ax = _check_axes(ax)
        if ax is None:
            _, ax = plt.subplots(figsize=(5.5, 4), layout="constrained")
        edges = self.table_.edges[0]
        share = self.table_.counts[0] / self.table_.counts.sum()
        name = self.label or "model"
        self.bars_ = ax.bar(
            edges[:-1],
            share,
            width=np.diff(edges),
            align="edge",
            alpha=0.5,
            edgecolor="black",
            linewidth=0.5,
            label=name,
        )
        color = self.bars_.patches[0].get_facecolor()[:3]  # opaque lines over the bars
        # Thinner lines for each later series, so that coinciding lines (the accuracy is
        # unchanged by temperature scaling) all stay visible.
        width = max(3.5 - len(ax.containers), 1.0)
        x_words, y_words = _axis_words(self.table_)
        self.lines_ = (
            ax.axvline(
                self.accuracy_,
                color=color,
                linestyle="--",
                linewidth=width,
                label=f"{name}: {y_words} {self.accuracy_:.3f}",
            ),
            ax.axvline(
                self.mean_confidence_,
                color=color,
                linestyle=":",
                linewidth=width,
                label=f"{name}: {x_words} {self.mean_confidence_:.3f}",
            ),
        )
        ax.set_xlim(0, 1)
        ax.set_xlabel(x_words.removeprefix("mean "))
        ax.set_ylabel("share of samples")
        ax.set_title(f"Confidence histogram ({_bins_text(self.table_)})")
        ax.legend(loc="upper left", fontsize="small")
        self.figure_, self.ax_ = ax.figure, ax
        return self


class RiskCoverageDisplay(_Display):
    """Risk-coverage curve: selective risk against coverage (Geifman & El-Yaniv 2017).

    Draws a :class:`~calibration_toolbox.RiskCoverageCurve` as it is: the selective risk
    at each distinct confidence threshold joined by straight lines (the trapezoids whose
    area is the AURC in the legend), the generalized risk (wrong *and* kept, over all
    rows; its area the AUGRC) dashed in the same colour, and the oracle confidence's
    curve (1 on the right answers, 0 on the wrong ones) dotted in grey.  Build it with
    :meth:`from_predictions`, :meth:`from_curve` or :meth:`from_recalibrator`;
    ``plot(ax=...)`` draws one more model on existing axes.

    Attributes
    ----------
    curve_ : RiskCoverageCurve
        The curve drawn; ``curve_.aurc`` is the AURC in the legend.
    figure_ : matplotlib.figure.Figure
        The figure drawn on.
    ax_ : matplotlib.axes.Axes
        The axes.
    line_, generalized_line_, oracle_line_ : matplotlib.lines.Line2D
        The selective risk, the generalized risk and the oracle's selective risk.

    References
    ----------
    Geifman, Y. and El-Yaniv, R. (2017). Selective classification for deep neural
    networks.  NeurIPS.

    Traub, J. et al. (2024). Overcoming common flaws in the evaluation of selective
    classification systems.  NeurIPS.

    Examples
    --------
    >>> import io
    >>> import numpy as np
    >>> from calibration_toolbox import AURC
    >>> from calibration_toolbox.plot import RiskCoverageDisplay
    >>> rng = np.random.default_rng(0)
    >>> prob = rng.dirichlet(np.ones(3), size=500)
    >>> labels = rng.integers(0, 3, size=500)
    >>> display = RiskCoverageDisplay.from_predictions(prob, labels, label="model")
    >>> bool(np.isclose(display.curve_.aurc, AURC(prob, labels), rtol=1e-12))
    True
    >>> display.ax_.get_legend().get_texts()[0].get_text()
    'model (AURC = 0.6703)'
    >>> display.figure_.savefig(io.BytesIO(), format="png")  # or a file name
    >>> import matplotlib.pyplot as plt
    >>> plt.close(display.figure_)
    """

    def __init__(self, curve: RiskCoverageCurve, *, label: str | None = None):
        if not isinstance(curve, RiskCoverageCurve):
            raise InputTypeError(
                "{curve} must be a RiskCoverageCurve (of risk_coverage_curve); got {value}.",
                argument="curve",
                value=type(curve).__name__,
            )
        self.curve_ = curve
        self.label = _check_label(label)

    @classmethod
    def from_predictions(
        cls,
        prob: PredictionsLike,
        labels: ArrayLike,
        *,
        logits: bool = False,
        sample_weight: ArrayLike | None = None,
        ax: Any = None,
        label: str | None = None,
    ) -> RiskCoverageDisplay:
        """Draw the risk-coverage curve of predictions (an (N, K) matrix or ``Scores``).

        The arguments are those of :func:`~calibration_toolbox.risk_coverage_curve`;
        ``ax`` and ``label`` those of :meth:`plot`.
        """
        curve = risk_coverage_curve(prob, labels, logits=logits, sample_weight=sample_weight)
        return cls.from_curve(curve, ax=ax, label=label)

    @classmethod
    def from_curve(
        cls, curve: RiskCoverageCurve, *, ax: Any = None, label: str | None = None
    ) -> RiskCoverageDisplay:
        """Draw a :class:`~calibration_toolbox.RiskCoverageCurve` as it is."""
        return cls(curve, label=label).plot(ax=ax)

    def plot(self, ax: Any = None, label: str | None = None) -> RiskCoverageDisplay:
        """Draw on ``ax`` (a new figure when None) and return ``self``; models overlay."""
        plt = _pyplot()
        if label is not None:
            self.label = _check_label(label)
        ax = _check_axes(ax)
        # an overlay keeps the curves drawn before in view (empty axes: nothing to keep)
        top = ax.get_ylim()[1] if ax is not None and ax.lines else 0.0
        if ax is None:
            _, ax = plt.subplots(figsize=(5.5, 4.5), layout="constrained")
        curve, name = self.curve_, self.label or "model"
        (self.line_,) = ax.plot(
            curve.coverage, curve.risk, linewidth=2, label=f"{name} (AURC = {curve.aurc:.4f})"
        )
        color = self.line_.get_color()
        (self.generalized_line_,) = ax.plot(
            curve.coverage,
            curve.generalized_risk,
            color=color,
            linestyle="--",
            linewidth=1.2,
            label=f"{name}: generalized risk (AUGRC = {curve.augrc:.4f})",
        )
        error_rate = float(curve.risk[-1])
        (self.oracle_line_,) = ax.plot(
            [0.0, 1.0 - error_rate, 1.0],
            [0.0, 0.0, error_rate],
            color="0.5",
            linestyle=":",
            linewidth=1.2,
            label=f"{name}: oracle confidence",
        )
        ax.set_xlim(0, 1)
        ax.set_ylim(0, max(top, 1.05 * float(curve.risk.max()), 1e-3))
        ax.set_xlabel("coverage (share of rows answered)")
        ax.set_ylabel("selective risk (error rate of the answered)")
        ax.set_title(f"Risk-coverage curve ({curve.coverage.size - 1} thresholds)")
        ax.legend(loc="best", fontsize="small")
        self.figure_, self.ax_ = ax.figure, ax
        return self


#: A curve of a measure's own diagram (``_CURVE_DISPLAYS``): the CORP, smooth and
#: risk-coverage curves.
MeasureCurve = CORPReliability | SmoothReliabilityCurve | RiskCoverageCurve

#: How the curve of a measure is drawn, by its type: the display whose ``from_curve``
#: draws it, and whether the curves of several models share one axes (the risk-coverage
#: curves) or each has its own (a CORP or smooth diagram carries one model's band).
_CURVE_DISPLAYS: dict[type, tuple[type, bool]] = {
    CORPReliability: (ReliabilityDiagram, False),
    SmoothReliabilityCurve: (ReliabilityDiagram, False),
    RiskCoverageCurve: (RiskCoverageDisplay, True),
}


def _draw_curve(curve: Any, *, ax: Any, label: str | None, counts_ax: Any = None) -> Any:
    """Draw a measure's curve (a type of ``_CURVE_DISPLAYS``) by its display on ``ax``.

    A CORP diagram's counts go on ``counts_ax``, when given.
    """
    display, _ = _CURVE_DISPLAYS[type(curve)]
    keywords = {} if counts_ax is None else {"counts_ax": counts_ax}
    return display.from_curve(curve, ax=ax, label=label, **keywords)
