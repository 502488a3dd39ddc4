"""Command line: ``calibration-toolbox report [FILE]`` (no file: the embedded example)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import numpy as np

from calibration_toolbox import __version__
from calibration_toolbox.datasets import load_example
from calibration_toolbox.io import load_predictions
from calibration_toolbox.metrics import (
    ACE,
    ECE,
    MCE,
    RMSCE,
    SCE,
    TACE,
    brier_score,
    calibration_table,
    negative_log_likelihood,
)
from calibration_toolbox.recalibration import TemperatureScaling

__all__ = ["main"]

_METRICS = {
    "ECE": ECE,
    "MCE": MCE,
    "RMSCE": RMSCE,
    "SCE": SCE,
    "ACE": ACE,
    "TACE": TACE,
    "Brier": brier_score,
    "NLL": negative_log_likelihood,
}


def _report(predictions: np.ndarray, labels: np.ndarray, bins: int, logits: bool) -> dict:
    """Every metric of the predictions, plus the top-label reliability table."""
    values = {}
    for name, metric in _METRICS.items():
        options = {"bins": bins} if name not in ("Brier", "NLL") else {}
        values[name] = metric(predictions, labels, logits=logits, **options)
    table = calibration_table(
        predictions, labels, bins=bins, class_conditional=False, logits=logits
    )
    values["accuracy"] = float(table.target_sums.sum() / table.counts.sum())
    values["reliability"] = [
        {
            "low": float(low),
            "high": float(high),
            "count": int(count),
            "confidence": float(conf),
            "accuracy": float(acc),
        }
        for low, high, count, conf, acc in zip(
            table.edges[0, :-1],
            table.edges[0, 1:],
            table.counts[0],
            table.mean_score[0],
            table.mean_target[0],
            strict=True,
        )
        if count > 0
    ]
    return values


def _format(title: str, before: dict, after: dict | None, temperature: float | None) -> str:
    lines = [title, f"accuracy {before['accuracy']:.4f}", ""]
    header = f"{'metric':<8}{'before':>10}"
    if after is not None:
        header += f"{'after':>10}   (temperature scaling, T = {temperature:.4f})"
    lines.append(header)
    for name in _METRICS:
        row = f"{name:<8}{before[name]:>10.5f}"
        if after is not None:
            row += f"{after[name]:>10.5f}"
        lines.append(row)
    for label, values in (("before", before), ("after", after)):
        if values is None:
            continue
        lines += [
            "",
            f"top-label reliability, {label}:",
            f"{'bin':<16}{'count':>7}{'confidence':>12}{'accuracy':>10}{'gap':>9}",
        ]
        for row in values["reliability"]:
            lines.append(
                f"({row['low']:.3f}, {row['high']:.3f}]{row['count']:>7}"
                f"{row['confidence']:>12.4f}{row['accuracy']:>10.4f}"
                f"{row['accuracy'] - row['confidence']:>+9.4f}"
            )
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="calibration-toolbox",
        description="Measure (and fix) the calibration of saved classifier predictions.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command")
    report = commands.add_parser(
        "report", help="calibration metrics of saved predictions (default: embedded example)"
    )
    report.add_argument("path", nargs="?", help=".npz, .npy or .csv file; none: the example")
    report.add_argument("--labels", help="labels file for a .npy of predictions")
    report.add_argument("--prob-key", help="array name of the predictions in a .npz")
    report.add_argument("--labels-key", help="array name of the labels in a .npz")
    report.add_argument("--logits", action="store_true", help="the file holds logits")
    report.add_argument("--bins", type=int, default=15, help="number of bins (default 15)")
    report.add_argument(
        "--recalibrate",
        action="store_true",
        help="fit temperature scaling on a seeded half and report the other half before/after",
    )
    report.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``calibration-toolbox`` command."""
    args = _parser().parse_args(argv)
    if args.command is None:  # bare `calibration-toolbox`: the report on the example
        args = _parser().parse_args(["report", *(argv or [])])
    try:
        if args.path is None:
            example = load_example()
            predictions, labels, is_logits = example.logits, example.labels, True
            fit_rows, test_rows = example.calibration_rows, example.test_rows
            title = (
                f"calibration-toolbox {__version__}: embedded example, 10,000 x 10 logits "
                f"overconfident by T = {example.true_temperature:g}; metrics on the "
                "5,000-row test half"
            )
            recalibrate = True
        else:
            predictions, labels = load_predictions(
                args.path,
                labels_path=args.labels,
                prob_key=args.prob_key,
                labels_key=args.labels_key,
            )
            is_logits, recalibrate = args.logits, args.recalibrate
            title = f"calibration-toolbox {__version__}: {args.path}"
            rows = np.arange(len(labels))
            fit_rows, test_rows = rows, rows
            if recalibrate:
                rows = np.random.default_rng(0).permutation(len(labels))
                fit_rows, test_rows = (
                    np.sort(rows[: len(rows) // 2]),
                    np.sort(rows[len(rows) // 2 :]),
                )
                title += "; metrics on a seeded random half, T fitted on the other"
        predictions, labels = np.asarray(predictions), np.asarray(labels)
        before = _report(predictions[test_rows], labels[test_rows], args.bins, is_logits)
        after = temperature = None
        if recalibrate:
            # Log-probabilities are logits of the same softmax; the floor keeps log(0) finite.
            logits = predictions if is_logits else np.log(np.maximum(predictions, 1e-300))
            scaler = TemperatureScaling().fit(logits[fit_rows], labels[fit_rows])
            temperature = scaler.temperature_
            after = _report(scaler(logits[test_rows]), labels[test_rows], args.bins, True)
    except (ValueError, TypeError, OSError) as error:
        print(f"calibration-toolbox: error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"before": before, "after": after, "temperature": temperature}, indent=2))
    else:
        print(_format(title, before, after, temperature))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
