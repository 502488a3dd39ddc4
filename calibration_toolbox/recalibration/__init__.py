"""Recalibrators fitted on held-out saved predictions and applied to new arrays."""

from calibration_toolbox.recalibration._base import Recalibrator, load_recalibrator
from calibration_toolbox.recalibration.binary import BetaCalibration, PlattScaling
from calibration_toolbox.recalibration.ensemble import EnsembleTemperatureScaling
from calibration_toolbox.recalibration.linear import (
    DirichletCalibration,
    MatrixScaling,
    VectorScaling,
)
from calibration_toolbox.recalibration.nonparametric import HistogramBinning, IsotonicCalibration
from calibration_toolbox.recalibration.refinement import refinement_decomposition
from calibration_toolbox.recalibration.scaling_binning import ScalingBinning
from calibration_toolbox.recalibration.select import (
    RecalibratorSelection,
    UncalibratedBestWarning,
    select_recalibrator,
)
from calibration_toolbox.recalibration.spline import SplineCalibration
from calibration_toolbox.recalibration.temperature import TemperatureScaling
from calibration_toolbox.recalibration.venn_abers import VennAbersCalibration

__all__ = [
    "BetaCalibration",
    "DirichletCalibration",
    "EnsembleTemperatureScaling",
    "HistogramBinning",
    "IsotonicCalibration",
    "MatrixScaling",
    "PlattScaling",
    "Recalibrator",
    "RecalibratorSelection",
    "ScalingBinning",
    "SplineCalibration",
    "TemperatureScaling",
    "UncalibratedBestWarning",
    "VectorScaling",
    "VennAbersCalibration",
    "load_recalibrator",
    "refinement_decomposition",
    "select_recalibrator",
]
