"""Calibration metrics and proper scoring rules."""

from calibration_toolbox.metrics.cumulative import KSCE, ECESweep, ECESweepResult, KuiperCE
from calibration_toolbox.metrics.gce import (
    ACE,
    ECE,
    GCE,
    MCE,
    RMSCE,
    SCE,
    TACE,
    CalibrationTable,
    ToprCE,
    calibration_table,
    expected_calibration_error,
)
from calibration_toolbox.metrics.scoring import brier_score, negative_log_likelihood
from calibration_toolbox.scores import Scores

__all__ = [
    "ACE",
    "ECE",
    "GCE",
    "KSCE",
    "MCE",
    "RMSCE",
    "SCE",
    "TACE",
    "CalibrationTable",
    "ECESweep",
    "ECESweepResult",
    "KuiperCE",
    "Scores",
    "ToprCE",
    "brier_score",
    "calibration_table",
    "expected_calibration_error",
    "negative_log_likelihood",
]
