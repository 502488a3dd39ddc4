"""Recalibrators fitted on held-out saved predictions and applied to new arrays."""

from calibration_toolbox.recalibration._base import Recalibrator, load_recalibrator
from calibration_toolbox.recalibration.temperature import TemperatureScaling

__all__ = ["Recalibrator", "TemperatureScaling", "load_recalibrator"]
