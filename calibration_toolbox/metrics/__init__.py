"""Calibration metrics and proper scoring rules."""

from calibration_toolbox.metrics.cumulative import KSCE, ECESweep, ECESweepResult, KuiperCE
from calibration_toolbox.metrics.decomposition import BrierDecomposition, brier_decomposition
from calibration_toolbox.metrics.gce import (
    ACE,
    CWCE,
    ECE,
    GCE,
    MCE,
    OCE,
    RMSCE,
    SCE,
    TACE,
    TCE,
    UCE,
    CalibrationTable,
    TopLabelECE,
    ToprCE,
    calibration_table,
    expected_calibration_error,
)
from calibration_toolbox.metrics.kernel import MMCE, SKCE
from calibration_toolbox.metrics.scoring import brier_score, negative_log_likelihood
from calibration_toolbox.metrics.smooth import (
    SmoothECE,
    SmoothReliabilityCurve,
    smooth_reliability_curve,
)
from calibration_toolbox.scores import Scores

__all__ = [
    "ACE",
    "CWCE",
    "ECE",
    "GCE",
    "KSCE",
    "MCE",
    "MMCE",
    "OCE",
    "RMSCE",
    "SCE",
    "SKCE",
    "TACE",
    "TCE",
    "UCE",
    "BrierDecomposition",
    "CalibrationTable",
    "ECESweep",
    "ECESweepResult",
    "KuiperCE",
    "Scores",
    "SmoothECE",
    "SmoothReliabilityCurve",
    "TopLabelECE",
    "ToprCE",
    "brier_decomposition",
    "brier_score",
    "calibration_table",
    "expected_calibration_error",
    "negative_log_likelihood",
    "smooth_reliability_curve",
]
