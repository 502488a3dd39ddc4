"""The recalibration methods by name: title, class and input, without importing a class.

One row per method of ``--method`` and :func:`~calibration_toolbox.select_recalibrator`, in
the order every list of methods is written in.  The class is named, not imported, so that
the command line's parser and ``--help`` list the methods without importing a
recalibrator; :mod:`calibration_toolbox.recalibration._methods` builds its table of
classes from these rows.

This module imports no other module of the package.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ROWS", "MethodRow"]


class MethodRow(NamedTuple):
    """One method: its name, title in words, class's name, what it is fitted on, settings."""

    name: str
    title: str
    class_name: str
    needs: str  # 'logits' or 'probabilities': what the class's fit and predict_proba take
    settings: tuple[tuple[str, object], ...] = ()  # constructor keywords (Method.settings)


ROWS = (
    MethodRow("temperature", "temperature scaling", "TemperatureScaling", "logits"),
    MethodRow("ensemble", "ensemble temperature scaling", "EnsembleTemperatureScaling", "logits"),
    MethodRow("vector", "vector scaling", "VectorScaling", "logits"),
    MethodRow("matrix", "matrix scaling", "MatrixScaling", "logits"),
    MethodRow("dirichlet", "Dirichlet calibration", "DirichletCalibration", "probabilities"),
    MethodRow("platt", "Platt scaling", "PlattScaling", "logits"),
    MethodRow("beta", "beta calibration", "BetaCalibration", "probabilities"),
    MethodRow("isotonic", "isotonic calibration", "IsotonicCalibration", "probabilities"),
    MethodRow("histogram", "histogram binning", "HistogramBinning", "probabilities"),
    MethodRow(
        "histogram-top-label",
        "top-label histogram binning",
        "HistogramBinning",
        "probabilities",
        (("mode", "top-label"),),
    ),
    MethodRow("venn-abers", "Venn-Abers calibration", "VennAbersCalibration", "probabilities"),
    MethodRow("spline", "spline calibration", "SplineCalibration", "probabilities"),
    MethodRow("scaling-binning", "scaling-binning calibration", "ScalingBinning", "probabilities"),
)
