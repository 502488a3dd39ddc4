"""``compare A B --stream``: both files read block by block together, in bounded memory.

The blocks of A and B come from :class:`~calibration_toolbox.cli._blocks.FileBlocks` (the
readers of ``report --stream``, each block checked as a whole file is, its row numbers the
file's), side by side: the same rows are checked block by block (as many, the same labels,
as many columns), refused on the first block that differs.  Each model's rows are added to
its own :class:`~calibration_toolbox.CalibrationAccumulator`, whose sums give each metric
and the top-label table, equal to ``compare``'s to the last bit.  What is kept per row:

- the paired score tests: each model's float64 score of the row (Brier and log:
  32 bytes per row), so that the test is ``stats.paired_score_test``'s to the bit (its
  columns A and B are the means of each model's scores, taken over all of them at once);
- with ``--ci``, each tabulated metric's entry cells of each model (``entry_cells``: row,
  cell and score, 24 bytes per entry: per row for the top-label measures, K per row for
  SCE), joined in row order and resampled by ``stats``' own code: the same distribution
  as ``compare --ci``'s for the same ``--seed``, to the bit.

The metrics that the sums do not determine (ACE, KSCE, ...) are refused by name, and
with ``--ci`` those whose bootstrap calls the metric on all the rows (Brier, NLL, ...);
without ``--metrics`` the default list is cut to those that stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import zip_longest

import numpy as np

from calibration_toolbox import CalibrationAccumulator
from calibration_toolbox.cli._blocks import FileBlocks
from calibration_toolbox.cli._compare import (
    CONFIDENCE_LEVEL,
    MODELS,
    SCORES,
    Comparison,
    header,
    metric_entry,
    score_entry,
)
from calibration_toolbox.cli._document import reliability, summary
from calibration_toolbox.cli._inputs import Part, check_same_columns, metric_view
from calibration_toolbox.cli._methods import progress
from calibration_toolbox.cli._metrics import Metric
from calibration_toolbox.cli._options import CompareRequest, ReportOptions
from calibration_toolbox.cli._parser import UsageError
from calibration_toolbox.cli._stream import _tables
from calibration_toolbox.cli._warned import Warned
from calibration_toolbox.io import DEFAULT_BLOCK_ROWS
from calibration_toolbox.metrics._engine import EntryCells
from calibration_toolbox.stats import (
    _paired_from_cells,
    _paired_losses_test,
    _score_differences,
    _table_call,
    _tabulated_call,
)

__all__ = ["streamed_comparison"]

_SAME_ROWS = "compare needs two models' predictions of the same rows, in the same order."


def _resampled(metric: Metric, bins: int) -> bool:
    """Whether ``metric``'s paired bootstrap resamples per-row cells (a tabulated metric)."""
    return _table_call(metric.function, metric.keywords(bins, False)) is not None


def _refused(names: list[str], why: str) -> UsageError:
    listed = ", ".join(names)
    return UsageError(f"--stream: {listed} {'needs' if len(names) == 1 else 'need'} {why}")


def streamed_options(request: CompareRequest) -> ReportOptions:
    """The options of ``--stream``: its metrics checked (or the default list cut), the bins.

    Refused in one line: ``--bins auto`` (the count depends on N, known only at the end),
    a metric the sums do not determine, and with ``--ci`` a metric not resampled from cells.
    """
    options = request.report
    if isinstance(options.bins, str):
        raise UsageError(
            "--bins auto depends on the number of rows, which --stream knows only at the "
            "end: give the count (the smallest B with B**3 >= N)."
        )
    left = [metric.name for metric in options.metrics if metric.streamed is None]
    if left and request.metrics_given:
        raise _refused(left, "all the rows at once; leave out --stream to compute them.")
    metrics = [metric for metric in options.metrics if metric.streamed is not None]
    unresampled = [m.name for m in metrics if options.ci and not _resampled(m, options.bins)]
    if unresampled and request.metrics_given:
        raise _refused(
            unresampled,
            "all the rows at once for --ci: only the binned metrics of fixed edges are "
            "resampled from the per-row cells kept while streaming; leave out --stream, "
            "or --ci (the paired t tests of Brier and NLL are given without it).",
        )
    metrics = [metric for metric in metrics if metric.name not in unresampled]
    return replace(options, metrics=tuple(metrics))


def _cells_key(settings: dict) -> tuple:
    """What a metric's entry cells depend on: its call but the reduction (norm, debias)."""
    return tuple(sorted((k, repr(v)) for k, v in settings.items() if k not in _REDUCTION))


_REDUCTION = ("norm", "debias")


class _Model:
    """One model's sums, and what is kept per row: its scores, and its cells with --ci.

    ``cells`` holds each block's entry cells by :func:`_cells_key`, once for the metrics
    that differ only in their reduction (ECE, RMSCE, MCE, DebiasedL2 share theirs);
    ``reductions`` each metric's cells of the first block (their norm and debiasing).
    """

    def __init__(self, options: ReportOptions, logits: bool, scores: bool):
        self.accumulator = CalibrationAccumulator(
            bins=options.bins, logits=logits, scores=scores, tables=_tables(options, scores)
        )
        self.losses: dict[str, list[np.ndarray]] = {name: [] for name in SCORES}
        self.cells: dict[tuple, list[EntryCells] | EntryCells] = {}
        self.reductions: dict[str, EntryCells] = {}


class _Streamed:
    """Both files read block by block together: each model's sums and rows kept."""

    def __init__(self, request: CompareRequest, options: ReportOptions, warned: Warned):
        self.request, self.options = request, options
        file = request.file_a
        self.scores, self.logits = file.scores, file.logits
        self.block_rows = request.block_rows or DEFAULT_BLOCK_ROWS
        self.paths = (request.file_a.path, request.file_b.path)
        self.models = [_Model(options, self.logits, self.scores) for _ in MODELS]
        self.n = 0
        self.n_classes = 0
        self.n_rows: list[int] = []
        """The rows of each block."""
        self.calls = {
            metric.name: (
                metric.function,
                _table_call(metric.function, metric.keywords(options.bins, self.logits)),
            )
            for metric in (options.metrics if options.ci else ())
        }
        self.keys = {name: _cells_key(settings) for name, (_, settings) in self.calls.items()}
        readers = [
            FileBlocks(request.file_a, self.block_rows, warned.of_file),
            FileBlocks(request.file_b, self.block_rows, warned.of_file),
        ]
        pairs = zip_longest(readers[0]("compare, A"), readers[1]("compare, B"))
        for block_a, block_b in pairs:
            self._check(block_a, block_b)
            self._add(block_a[1:], block_b[1:])

    def _check(self, block_a, block_b) -> None:
        """Refuse blocks that are not the same rows: as many, the same labels, as many columns."""
        (a, b), first = self.paths, self.n
        if block_a is None or block_b is None or len(block_a[2]) != len(block_b[2]):
            rows = [0 if block is None else len(block[2]) for block in (block_a, block_b)]
            short = 0 if rows[0] < rows[1] else 1
            names = (f"A ({a})", f"B ({b})")
            raise ValueError(
                f"{names[short]} holds {first + rows[short]:,} rows and {names[1 - short]} "
                f"more: {_SAME_ROWS}"
            )
        (_, prob_a, labels_a), (_, prob_b, labels_b) = block_a, block_b
        if first == 0:
            check_same_columns(
                Part(prob_a, labels_a), Part(prob_b, labels_b), f"B ({b})", f"A ({a})"
            )
        differ = np.flatnonzero(labels_a != labels_b)
        if differ.size:
            row = int(differ[0])
            raise ValueError(
                f"the labels of A ({a}) and B ({b}) differ at row {first + row} "
                f"({labels_a[row]} against {labels_b[row]}; the first row that differs): "
                f"{_SAME_ROWS}"
            )

    def _add(self, block_a, block_b) -> None:
        """Add both models' rows of a block: sums, scores and, with --ci, cells."""
        (prob_a, labels), (prob_b, _) = block_a, block_b
        views = [metric_view(prob, self.scores, self.logits) for prob in (prob_a, prob_b)]
        engine = {"logits": self.logits, "renormalize": False}  # the default eps
        for name, score in SCORES.items():
            losses = _score_differences(*views, labels, score, engine)
            for model, loss in zip(self.models, losses, strict=True):
                model.losses[name].append(loss)
        for model, view in zip(self.models, views, strict=True):
            model.accumulator.update(view, labels)
            self._add_cells(model, view, labels)
        self.n += len(labels)
        self.n_rows.append(len(labels))
        self.n_classes = 2 if prob_a.ndim == 1 else int(prob_a.shape[1])

    def _add_cells(self, model: _Model, view, labels: np.ndarray) -> None:
        """With --ci, the block's entry cells of each model (once per key)."""
        done: set[tuple] = set()
        for name, (function, settings) in self.calls.items():
            key = self.keys[name]
            if key in done and self.n:
                continue
            _, cells, _, _ = _tabulated_call(function, view, labels, None, dict(settings), {})
            if not self.n:
                model.reductions[name] = cells
            if key not in done:
                model.cells.setdefault(key, []).append(cells)
                done.add(key)


def _joined(model: _Model, key: tuple, n_rows: list[int]) -> EntryCells:
    """One model's cells of ``key``, block after block, their rows the file's.

    Joined once for the metrics that share them, the blocks' own cells then let go.
    """
    blocks = model.cells[key]
    if isinstance(blocks, EntryCells):
        return blocks
    starts = np.cumsum([0, *n_rows])
    joined = replace(
        blocks[0],
        rows=np.concatenate(
            [cells.rows + start for cells, start in zip(blocks, starts, strict=False)]
        ),
        joint_cells=np.concatenate([cells.joint_cells for cells in blocks]),
        scores=np.concatenate([cells.scores for cells in blocks]),
    )
    model.cells[key] = joined
    return joined


def _model_cells(streamed: _Streamed, metric: Metric) -> list[EntryCells]:
    """Both models' joined cells of ``metric``, its norm and debiasing its own."""
    key = streamed.keys[metric.name]
    cells = []
    for model in streamed.models:
        first = model.reductions[metric.name]
        joined = _joined(model, key, streamed.n_rows)
        cells.append(replace(joined, norm=first.norm, debias=first.debias))
    return cells


def _metric_entries(streamed: _Streamed) -> list[dict]:
    options = streamed.options
    entries = []
    for metric in options.metrics:
        values = [model.accumulator.metric(metric.streamed) for model in streamed.models]
        result = None
        if options.ci:
            progress(f"paired bootstrap of {metric.name} ({options.n_resamples} resamples)")
            cells = _model_cells(streamed, metric)
            result = _paired_from_cells(
                (values[0], values[1]),
                (cells[0], cells[1]),
                streamed.n,
                n_resamples=options.n_resamples,
                confidence_level=CONFIDENCE_LEVEL,
                random_state=options.seed,
            )
        entries.append(metric_entry(metric.name, values, result))
    return entries


def _score_entries(streamed: _Streamed) -> list[dict]:
    entries = []
    for name, score in SCORES.items():
        losses = [np.concatenate(model.losses.pop(name)) for model in streamed.models]
        result = _paired_losses_test(*losses, None, score, "t", CONFIDENCE_LEVEL)
        entries.append(score_entry(name, result))
    return entries


def streamed_comparison(request: CompareRequest, command: Sequence[str]) -> Comparison:
    """Every number of ``compare --stream``: the files read together once, then the tests."""
    options = streamed_options(request)
    warned = Warned()
    with warned.of_file():
        streamed = _Streamed(request, options, warned)
        comparison = Comparison(header(request, command, streamed.n_classes, streamed.n, options))
        document = comparison.document
        document["reliability"] = {}
        for name, model in zip(MODELS, streamed.models, strict=True):
            table = model.accumulator.table("top_label")
            comparison.tables[name] = table
            document["models"][name].update(summary(table, request.file_a.scores))
            document["reliability"][name] = reliability(table)
        document["metrics"] = _metric_entries(streamed)
        progress("")
        document["score_tests"] = _score_entries(streamed)
    document["warnings"] = warned.file
    return comparison
