"""calibration-toolbox: measure and fix the calibration of classifiers from saved predictions."""

__version__ = "0.1.0"

from calibration_toolbox import stats as stats  # the module, as calibration_toolbox.stats
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
    Scores,
    ToprCE,
    brier_score,
    calibration_table,
    expected_calibration_error,
    negative_log_likelihood,
)
from calibration_toolbox.recalibration import (
    BetaCalibration,
    DirichletCalibration,
    EnsembleTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    MatrixScaling,
    PlattScaling,
    Recalibrator,
    TemperatureScaling,
    VectorScaling,
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
    "DirichletCalibration",
    "EnsembleTemperatureScaling",
    "HistogramBinning",
    "IsotonicCalibration",
    "MatrixScaling",
    "NotFittedError",
    "PlattScaling",
    "Recalibrator",
    "Scores",
    "TemperatureScaling",
    "ToprCE",
    "VectorScaling",
    "__version__",
    "brier_score",
    "calibration_table",
    "expected_calibration_error",
    "load_recalibrator",
    "negative_log_likelihood",
]
