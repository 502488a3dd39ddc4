"""``report --multilabel``: K independent labels per row, one sigmoid each.

FILE holds (N, K) per-label probabilities (or logits, ``--logits``) beside an (N, K) 0/1
label matrix (:func:`~calibration_toolbox.io.read_multilabel`: a ``.npz``, or a ``.npy``
with ``--labels``).  The report gives, for the uncalibrated scores and each method
(``--method temperature`` / ``platt``, fitted per label on the fit rows, as
``TemperatureScaling(multilabel=True)`` and ``PlattScaling(multilabel=True)``):

* ``ECE_macro`` and ``ECE_micro``
  (:func:`~calibration_toolbox.metrics.multilabel.multilabel_calibration_error`), ``Brier``
  (:func:`~calibration_toolbox.metrics.multilabel.multilabel_brier_score`) and ``NLL``
  (:func:`~calibration_toolbox.metrics.multilabel.multilabel_log_loss`; macro and micro
  averages of these two are equal, every label having the N rows);
* ``per_label``: each label's ``count`` (rows), ``positives``, and its own binary ``ECE``,
  ``Brier`` and ``NLL`` (the same functions on its column alone), under its name from the
  file (``label_names``) or its column index;

in text, in JSON (``multilabel``, ``n_labels``, ``label_names`` and these entries under
``results``) and on the HTML page (the pooled diagram of all N x K pairs, and the per-label
diagrams of the per-label table as the class-wise grid).  Every number is the library's
own call on the same arrays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Callable

import numpy as np

from calibration_toolbox import _scipy
from calibration_toolbox._errors import within
from calibration_toolbox._validation import check_bins
from calibration_toolbox.cli._document import AUTO_BINS_RULE, Report, header, reliability
from calibration_toolbox.cli._inputs import check_split, file_title, fit_rows
from calibration_toolbox.cli._methods import progress
from calibration_toolbox.cli._options import FileOptions, ReportRequest
from calibration_toolbox.cli._warned import Warned
from calibration_toolbox.io import read_multilabel
from calibration_toolbox.metrics import CalibrationTable, calibration_table
from calibration_toolbox.metrics.multilabel import (
    multilabel_brier_score,
    multilabel_calibration_error,
    multilabel_calibration_table,
    multilabel_log_loss,
)
from calibration_toolbox.recalibration import PlattScaling, TemperatureScaling
from calibration_toolbox.scores import Scores

__all__ = ["METRICS", "MULTILABEL_METHODS", "multilabel_report", "multilabel_text"]

#: The methods of ``--method`` with ``--multilabel``: one fit per label.
MULTILABEL_METHODS: dict[str, Callable[[], object]] = {
    "temperature": lambda: TemperatureScaling(multilabel=True),
    "platt": lambda: PlattScaling(multilabel=True),
}

#: The report's measures, by their name in it.
METRICS = ("ECE_macro", "ECE_micro", "Brier", "NLL")


@dataclass(frozen=True)
class _Rows:
    """Scores (probabilities, or logits with ``logits``) and their (N, K) label matrix."""

    scores: np.ndarray
    labels: np.ndarray
    logits: bool

    def taken(self, rows: np.ndarray) -> _Rows:
        return _Rows(self.scores[rows], self.labels[rows], self.logits)


def _read(file: FileOptions) -> tuple[_Rows, list[str] | None]:
    try:
        scores, labels, names = read_multilabel(
            file.path, labels_path=file.labels, prob_key=file.prob_key, labels_key=file.labels_key
        )
    except (ValueError, TypeError) as error:
        raise within(error, "{file}: ", file=file.path) from None
    return _Rows(np.asarray(scores), np.asarray(labels), file.logits), names


def _measures(rows: _Rows, bins: int) -> dict[str, float]:
    prob, labels, logits = rows.scores, rows.labels, rows.logits
    return {
        "ECE_macro": multilabel_calibration_error(
            prob, labels, bins=bins, average="macro", logits=logits
        ),
        "ECE_micro": multilabel_calibration_error(
            prob, labels, bins=bins, average="micro", logits=logits
        ),
        "Brier": multilabel_brier_score(prob, labels, logits=logits),
        "NLL": multilabel_log_loss(prob, labels, logits=logits),
    }


def _per_label(rows: _Rows, names: list[str], table: CalibrationTable) -> list[dict]:
    """Each label's rows, positives and binary ECE (its group of ``table``), Brier and NLL."""
    errors = np.abs(table.target_sums - table.score_sums).sum(axis=1) / table.set_sizes
    positives = np.count_nonzero(rows.labels, axis=0)
    entries = []
    for k, name in enumerate(names):
        column = _Rows(rows.scores[:, k : k + 1], rows.labels[:, k : k + 1], rows.logits)
        entries.append(
            {
                "label": name,
                "count": len(rows.labels),
                "positives": int(positives[k]),
                "ECE": float(errors[k]),
                "Brier": multilabel_brier_score(column.scores, column.labels, logits=rows.logits),
                "NLL": multilabel_log_loss(column.scores, column.labels, logits=rows.logits),
            }
        )
    return entries


def _entry(report: Report, name: str, rows: _Rows, names: list[str], bins: int) -> dict:
    """The results entry of ``rows`` (the pooled and per-label tables kept in ``report``)."""
    table = multilabel_calibration_table(rows.scores, rows.labels, bins=bins, logits=rows.logits)
    prob = _scipy.special.expit(rows.scores) if rows.logits else rows.scores
    # All N x K (probability, target) pairs binned as one set: the micro average's table.
    pooled = calibration_table(
        Scores(prob.ravel()), rows.labels.ravel(), bins=bins, class_conditional=False
    )
    report.tables[name] = pooled
    report.class_tables[name] = table
    total = pooled.counts.sum()
    return {
        "mean_target": float(pooled.target_sums.sum() / total),
        "mean_score": float(pooled.score_sums.sum() / total),
        "metrics": _measures(rows, bins),
        "reliability": reliability(pooled),
        "per_label": _per_label(rows, names, table),
    }


def _fit_input(rows: _Rows) -> np.ndarray:
    """The per-label logits a method is fitted on: the file's, or the probabilities' log-odds."""
    return rows.scores if rows.logits else _scipy.special.logit(rows.scores)


def _fitted(method: str, fit: _Rows, test: _Rows) -> tuple[_Rows, dict]:
    """``method`` fitted per label on ``fit``, applied to ``test``; its per-label parameters."""
    progress(f"fitting {method} per label on {len(fit.labels):,} rows")
    try:
        model = MULTILABEL_METHODS[method]().fit(_fit_input(fit), fit.labels)
    finally:
        progress("")
    calibrated = model.predict_proba(_fit_input(test))
    fitted = {
        name.rstrip("_"): np.asarray(getattr(model, name)).tolist()
        for name in type(model)._fitted_attributes
        if np.asarray(getattr(model, name)).dtype.kind == "f"
    }
    return _Rows(calibrated, test.labels, False), fitted


def _split(request: ReportRequest, whole: _Rows) -> tuple[_Rows, _Rows | None, str | None]:
    """The rows reported on, those fitted on (None: no method) and the words for them."""
    file, fit = request.file, request.fit
    if not fit.methods:
        return whole, None, None
    if fit.apart:
        fit_rows_, _ = _read(fit.file(file))
        if fit_rows_.scores.shape[1] != whole.scores.shape[1]:
            raise ValueError(
                f"{fit.text(file)} holds {fit_rows_.scores.shape[1]} labels but {file.path} "
                f"holds {whole.scores.shape[1]}."
            )
        return whole, fit_rows_, fit.text(file)
    n_rows = len(whole.labels)
    fitted_on = fit_rows(0, n_rows, fit.fraction, fit.seed)
    check_split(int(np.count_nonzero(fitted_on)), n_rows, file.path, fit.fraction, fit.seed)
    return whole.taken(~fitted_on), whole.taken(fitted_on), fit.text(file)


@dataclass
class _Head:
    """What :func:`~calibration_toolbox.cli._document.header` reads of a source."""

    file: str
    n_classes: int
    n: int
    fit_rows: int | None
    fit_text: str | None
    logits: bool
    options: object
    methods: tuple
    scores: bool = False
    selection: None = None


def multilabel_report(request: ReportRequest, command: Sequence[str], warned: Warned) -> Report:
    """Every number of ``report --multilabel``: uncalibrated, then each method per label."""
    whole, names = _read(request.file)
    test, fit, fit_text = _split(request, whole)
    n_labels = whole.scores.shape[1]
    names = [str(k) for k in range(n_labels)] if names is None else names
    bins, options = request.report.bins, request.report
    if isinstance(bins, str):  # --bins auto: one count for every number shown
        bins = len(check_bins(bins, n_samples=len(test.labels))) - 1
    head = _Head(
        request.file.path,
        n_labels,
        len(test.labels),
        None if fit is None else len(fit.labels),
        fit_text,
        request.file.logits,
        options,
        request.fit.methods,
    )
    document = header(head, command)
    del document["n_classes"]
    document.update(
        input=f"multi-label {'logits' if whole.logits else 'probabilities'}",
        multilabel=True,
        n_labels=n_labels,
        label_names=names,
        bins=bins,
        metrics=list(METRICS),
    )
    if isinstance(options.bins, str):
        document["bins_rule"] = AUTO_BINS_RULE
    title = (
        f"{file_title(request.file, one_column=False)}; {n_labels} labels per row "
        "(--multilabel: one sigmoid per label)"
    )
    report = Report(document, title, [], class_tables={})
    try:  # the values of FILE are checked by its first numbers: an error names the file
        before = _entry(report, "uncalibrated", test, names, bins)
    except (ValueError, TypeError) as error:
        raise within(error, "{file}: ", file=request.file.path) from None
    results = [{"method": "uncalibrated", "parameters": {}, "warnings": [], **before}]
    for method in request.fit.methods:
        with warned.method(method.name):
            calibrated, fitted = _fitted(method.name, fit, test)
            entry = _entry(report, method.name, calibrated, names, bins)
        results.append(
            {
                "method": method.name,
                "parameters": fitted,
                "warnings": warned.of(method.name),
                **entry,
            }
        )
    document["results"] = results
    return report


def multilabel_text(report: Report) -> str:
    """The report as a terminal reads it: the averages, then each method's per-label table."""
    document = report.document
    results = document["results"]
    width = max(14, *(len(result["method"]) + 2 for result in results))
    lines = [
        report.title,
        f"{document['n']:,} rows x {document['n_labels']} labels, {document['bins']} bins",
        "",
        f"{'metric':<12}" + "".join(f"{result['method']:>{width}}" for result in results),
    ]
    for name in METRICS:
        values = "".join(f"{result['metrics'][name]:>{width}.5f}" for result in results)
        lines.append(f"{name:<12}{values}")
    label_width = max(7, *(len(str(name)) + 2 for name in document["label_names"]))
    for result in results:
        lines += ["", f"per label ({result['method']}):"]
        lines.append(
            f"{'label':<{label_width}}{'count':>10}{'positives':>11}"
            f"{'ECE':>10}{'Brier':>10}{'NLL':>10}"
        )
        for row in result["per_label"]:
            lines.append(
                f"{row['label']:<{label_width}}{row['count']:>10,}{row['positives']:>11,}"
                f"{row['ECE']:>10.5f}{row['Brier']:>10.5f}{row['NLL']:>10.5f}"
            )
        for name, values in result["parameters"].items():
            shown = ", ".join(f"{value:.4g}" for value in np.ravel(values))
            lines.append(f"{name} per label: {shown}")
    lines += [
        "",
        "(ECE_macro: the mean over labels of each label's binary ECE; ECE_micro: the ECE of "
        "all N x K pairs binned together; Brier and NLL: over all N x K pairs.)",
    ]
    return "\n".join(lines)
