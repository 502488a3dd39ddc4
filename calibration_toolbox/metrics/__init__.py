"""Calibration metrics and proper scoring rules."""

from calibration_toolbox.metrics.clinical import (
    E50,
    E90,
    ICI,
    CalibrationSlopeIntercept,
    HosmerLemeshowResult,
    calibration_slope_intercept,
    hosmer_lemeshow,
)
from calibration_toolbox.metrics.corp import CORPDecomposition, corp_decomposition
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
from calibration_toolbox.metrics.multilabel import (
    multilabel_brier_score,
    multilabel_calibration_error,
    multilabel_calibration_table,
    multilabel_log_loss,
)
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
    "E50",
    "E90",
    "ECE",
    "GCE",
    "ICI",
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
    "CORPDecomposition",
    "CalibrationSlopeIntercept",
    "CalibrationTable",
    "ECESweep",
    "ECESweepResult",
    "HosmerLemeshowResult",
    "KuiperCE",
    "Scores",
    "SmoothECE",
    "SmoothReliabilityCurve",
    "TopLabelECE",
    "ToprCE",
    "brier_decomposition",
    "brier_score",
    "calibration_slope_intercept",
    "calibration_table",
    "corp_decomposition",
    "expected_calibration_error",
    "hosmer_lemeshow",
    "multilabel_brier_score",
    "multilabel_calibration_error",
    "multilabel_calibration_table",
    "multilabel_log_loss",
    "negative_log_likelihood",
    "smooth_reliability_curve",
]
