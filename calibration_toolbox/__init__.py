"""calibration-toolbox: measure and fix the calibration of classifiers from saved predictions."""

__version__ = "0.1.0"

from calibration_toolbox._validation import NotFittedError
from calibration_toolbox.metrics import (
    ACE,
    ECE,
    GCE,
    MCE,
    RMSCE,
    SCE,
    TACE,
    CalibrationTable,
    ToprCE,
    brier_score,
    calibration_table,
    expected_calibration_error,
    negative_log_likelihood,
)
from calibration_toolbox.recalibration import (
    BetaCalibration,
    EnsembleTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    PlattScaling,
    Recalibrator,
    TemperatureScaling,
    load_recalibrator,
)

__all__ = [
    "ACE",
    "ECE",
    "GCE",
    "MCE",
    "RMSCE",
    "SCE",
    "TACE",
    "BetaCalibration",
    "CalibrationTable",
    "EnsembleTemperatureScaling",
    "HistogramBinning",
    "IsotonicCalibration",
    "NotFittedError",
    "PlattScaling",
    "Recalibrator",
    "TemperatureScaling",
    "ToprCE",
    "__version__",
    "brier_score",
    "calibration_table",
    "expected_calibration_error",
    "load_recalibrator",
    "negative_log_likelihood",
]
