"""
The metrics as the sample size grows
====================================

A binned estimate of the calibration error is biased upward on few rows: the noise of
each bin's accuracy adds to its gap. On synthetic predictions that are calibrated by
construction (the labels drawn from the predicted probabilities), every measure should
be 0; the plug-in ``ECE`` and ``RMSCE`` approach it only as the rows grow, the debiased
L2 estimate (Kumar et al. 2019) and the bin-free ``KSCE`` and ``SmoothECE`` sooner.
"""

import matplotlib.pyplot as plt
import numpy as np

from calibration_toolbox import ECE, GCE, KSCE, RMSCE, SmoothECE

rng = np.random.default_rng(0)
sizes = np.array([100, 300, 1000, 3000, 10000, 30000])
metrics = {
    "ECE": ECE,
    "RMSCE": RMSCE,
    "debiased L2": lambda p, y: GCE(p, y, class_conditional=False, norm=2, debias=True),
    "KSCE": KSCE,
    "SmoothECE": SmoothECE,
}
values = {name: [] for name in metrics}
for n in sizes:
    prob = rng.dirichlet(np.full(5, 0.5), size=n)
    labels = (prob.cumsum(axis=1) < rng.uniform(size=(n, 1))).sum(axis=1)  # y ~ prob
    for name, metric in metrics.items():
        values[name].append(metric(prob, labels))

figure, ax = plt.subplots(figsize=(7, 4))
for name, series in values.items():
    ax.plot(sizes, series, marker="o", label=name)
ax.set_xscale("log")
ax.set_xlabel("rows")
ax.set_ylabel("calibration error of calibrated predictions")
ax.legend()
plt.show()
