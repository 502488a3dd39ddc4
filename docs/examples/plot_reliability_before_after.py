"""
Reliability before and after temperature scaling
================================================

The bundled example's network is overconfident on its test rows. Temperature scaling,
fitted on the 748 validation rows, divides its logits by one number ``T``; the diagram
and the ECE in its legend are drawn from the same :func:`~calibration_toolbox.calibration_table`
that :func:`~calibration_toolbox.ECE` reduces.
"""

import matplotlib.pyplot as plt

from calibration_toolbox import ECE, TemperatureScaling
from calibration_toolbox.datasets import load_example
from calibration_toolbox.plot import ReliabilityDiagram

example = load_example()
val, test = example.calibration_rows, example.test_rows
logits, labels = example.logits, example.labels

scaler = TemperatureScaling().fit(logits[val], labels[val])
before = ReliabilityDiagram.from_predictions(
    logits[test], labels[test], logits=True, label="model"
)
ReliabilityDiagram.from_recalibrator(
    scaler,
    logits[test],
    labels[test],
    ax=before.ax_,
    counts_ax=before.counts_ax_,
    label="temperature scaled",
)
print(f"T = {scaler.temperature_:.2f}")
print(f"ECE {ECE(logits[test], labels[test], logits=True):.3f} before,", end=" ")
print(f"{ECE(scaler.predict_proba(logits[test]), labels[test]):.3f} after")
plt.show()
