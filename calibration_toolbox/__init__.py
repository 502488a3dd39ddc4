"""calibration-toolbox: measure and fix the calibration of classifiers from saved predictions."""

# Each public name is imported from its module when first used (a lazy module attribute, PEP
# 562): ``import calibration_toolbox`` imports no metric, recalibrator or statistic, and
# ``calibration_toolbox.ECE``, ``from calibration_toolbox import ECE`` and the public
# submodules (``calibration_toolbox.stats``...) import the module that defines the name on
# first access (``tests/test_startup.py``). ``_EXPORTS`` is the one table of the names and
# their modules; the ``TYPE_CHECKING`` block says the same to type checkers, and a test
# checks that the two and ``__all__`` agree.

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    from calibration_toolbox import stats as stats
    from calibration_toolbox._validation import NotFittedError
    from calibration_toolbox.groups import (
        GroupResult,
        MulticalibrationResult,
        by_group,
        multicalibration_error,
    )
    from calibration_toolbox.metrics import (
        ACE,
        AUGRC,
        AURC,
        CWCE,
        E50,
        E90,
        EAURC,
        ECE,
        GCE,
        ICI,
        KSCE,
        MCE,
        MMCE,
        OCE,
        RMSCE,
        SCE,
        SKCE,
        TACE,
        TCE,
        UCE,
        BrierDecomposition,
        CalibrationSlopeIntercept,
        CalibrationTable,
        CORPDecomposition,
        ECESweep,
        ECESweepResult,
        HosmerLemeshowResult,
        KuiperCE,
        RiskCoverageCurve,
        Scores,
        SmoothECE,
        SmoothReliabilityCurve,
        TopLabelECE,
        ToprCE,
        brier_decomposition,
        brier_score,
        calibration_slope_intercept,
        calibration_table,
        confidence_auroc,
        corp_decomposition,
        coverage_at_risk,
        expected_calibration_error,
        hosmer_lemeshow,
        multilabel_brier_score,
        multilabel_calibration_error,
        multilabel_calibration_table,
        multilabel_log_loss,
        negative_log_likelihood,
        risk_at_coverage,
        risk_coverage_curve,
        smooth_reliability_curve,
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
        RecalibratorSelection,
        ScalingBinning,
        SplineCalibration,
        TemperatureScaling,
        VectorScaling,
        VennAbersCalibration,
        load_recalibrator,
        refinement_decomposition,
        select_recalibrator,
    )
    from calibration_toolbox.recalibration.refinement import RefinementDecomposition
    from calibration_toolbox.streaming import CalibrationAccumulator

#: The module (relative to the package) of each public name: ``{module: names}``.
_EXPORTS = {
    "_validation": ("NotFittedError",),
    "groups": (
        "GroupResult",
        "MulticalibrationResult",
        "by_group",
        "multicalibration_error",
    ),
    "metrics": (
        "ACE",
        "AUGRC",
        "AURC",
        "CWCE",
        "E50",
        "E90",
        "EAURC",
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
        "CalibrationSlopeIntercept",
        "CalibrationTable",
        "CORPDecomposition",
        "ECESweep",
        "ECESweepResult",
        "HosmerLemeshowResult",
        "KuiperCE",
        "RiskCoverageCurve",
        "Scores",
        "SmoothECE",
        "SmoothReliabilityCurve",
        "TopLabelECE",
        "ToprCE",
        "brier_decomposition",
        "brier_score",
        "calibration_slope_intercept",
        "calibration_table",
        "confidence_auroc",
        "corp_decomposition",
        "coverage_at_risk",
        "expected_calibration_error",
        "hosmer_lemeshow",
        "multilabel_brier_score",
        "multilabel_calibration_error",
        "multilabel_calibration_table",
        "multilabel_log_loss",
        "negative_log_likelihood",
        "risk_at_coverage",
        "risk_coverage_curve",
        "smooth_reliability_curve",
    ),
    "recalibration": (
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
        "VectorScaling",
        "VennAbersCalibration",
        "load_recalibrator",
        "refinement_decomposition",
        "select_recalibrator",
    ),
    "recalibration.refinement": ("RefinementDecomposition",),
    "streaming": ("CalibrationAccumulator",),
}

#: The public submodules of the layers below the package's namespace (``tests/test_layers.py``),
#: each imported on first access as ``calibration_toolbox.<name>``; ``io``, ``datasets``,
#: ``plot`` and ``sklearn`` sit above it and are imported by name (``import
#: calibration_toolbox.io``).
_SUBMODULES = (
    "binning",
    "groups",
    "metrics",
    "recalibration",
    "scores",
    "stats",
    "streaming",
)

_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = [
    "ACE",
    "AUGRC",
    "AURC",
    "CWCE",
    "E50",
    "E90",
    "EAURC",
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
    "BetaCalibration",
    "BrierDecomposition",
    "CORPDecomposition",
    "CalibrationAccumulator",
    "CalibrationSlopeIntercept",
    "CalibrationTable",
    "DirichletCalibration",
    "ECESweep",
    "ECESweepResult",
    "EnsembleTemperatureScaling",
    "GroupResult",
    "HistogramBinning",
    "HosmerLemeshowResult",
    "IsotonicCalibration",
    "KuiperCE",
    "MatrixScaling",
    "MulticalibrationResult",
    "NotFittedError",
    "PlattScaling",
    "Recalibrator",
    "RecalibratorSelection",
    "RefinementDecomposition",
    "RiskCoverageCurve",
    "ScalingBinning",
    "Scores",
    "SmoothECE",
    "SmoothReliabilityCurve",
    "SplineCalibration",
    "TemperatureScaling",
    "TopLabelECE",
    "ToprCE",
    "VectorScaling",
    "VennAbersCalibration",
    "__version__",
    "brier_decomposition",
    "brier_score",
    "by_group",
    "calibration_slope_intercept",
    "calibration_table",
    "confidence_auroc",
    "corp_decomposition",
    "coverage_at_risk",
    "expected_calibration_error",
    "hosmer_lemeshow",
    "load_recalibrator",
    "multicalibration_error",
    "multilabel_brier_score",
    "multilabel_calibration_error",
    "multilabel_calibration_table",
    "multilabel_log_loss",
    "negative_log_likelihood",
    "refinement_decomposition",
    "risk_at_coverage",
    "risk_coverage_curve",
    "select_recalibrator",
    "smooth_reliability_curve",
]


def __getattr__(name: str) -> object:
    if name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    elif name in _MODULE_OF:
        value = getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later accesses are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBMODULES, *_MODULE_OF})
