"""
Recalibrating the real CIFAR-100 predictions
============================================

Four recalibrators, :class:`~calibration_toolbox.TemperatureScaling`,
:class:`~calibration_toolbox.IsotonicCalibration`,
:class:`~calibration_toolbox.VennAbersCalibration` and
:class:`~calibration_toolbox.SplineCalibration`, each fitted on one half of the rows of
each saved CIFAR-100 prediction file and scored on the other half by the top-label
:func:`~calibration_toolbox.ECE` (15 equal-width bins) and the
:func:`~calibration_toolbox.negative_log_likelihood` (in nats, lower is better).

The files (10,000 test images each, 100 classes: LeNet-5, WideResNet-16-4 and
DenseNet-BC-100) are read from the shared data folder: the environment variable
``CALIBRATION_TOOLBOX_DATA``, else ``shared/data`` beside the checkout
(:func:`~calibration_toolbox.datasets.data_folder`), as the tests and the benchmarks find
it. Where that folder is absent, the example says so in one line and
draws the same figure on the bundled example
(:func:`~calibration_toolbox.datasets.load_example`, split into its own calibration and
test rows), so the site builds without the data.

Temperature scaling takes logits: the logarithms of the stored probabilities serve, as
they differ from the network's logits by one constant per row, which the softmax removes.
The other three methods take the probabilities.
"""

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from scipy.special import softmax

from calibration_toolbox import (
    ECE,
    IsotonicCalibration,
    SplineCalibration,
    TemperatureScaling,
    VennAbersCalibration,
    negative_log_likelihood,
)
from calibration_toolbox.datasets import data_folder, load_example
from calibration_toolbox.plot import ReliabilityDiagram

FILES = ["lenet-5-cifar-100", "wideresnet-16-4-cifar-100", "densenet-bc-100-cifar-100"]
METHODS = {
    "temperature": TemperatureScaling,
    "isotonic": IsotonicCalibration,
    "Venn-Abers": VennAbersCalibration,
    "spline": SplineCalibration,
}
try:
    here = Path(__file__).resolve().parent
except NameError:  # sphinx-gallery runs an example in its folder, without __file__
    here = Path.cwd()
default = here.parents[2] / "shared" / "data"  # docs/examples -> beside the checkout
folder = data_folder(default)


def halves(n_rows, seed=0):
    """A seeded shuffle of the rows, cut in two: (fit rows, scoring rows)."""
    order = np.random.default_rng(seed).permutation(n_rows)
    return order[: n_rows // 2], order[n_rows // 2 :]


problems = {}  # name: (probabilities, labels, fit rows, scoring rows)
for name in FILES:
    path = folder / f"{name}.npz"
    if path.exists():
        with np.load(path, allow_pickle=False) as data:
            prob = data["predictions"].astype(np.float64)
            labels = data["ground_truth"]
        problems[name] = (prob, labels, *halves(len(labels)))
if not problems:
    print(f"The CIFAR-100 files are not in {folder}: the figure shows the bundled example.")
    example = load_example()
    prob = softmax(example.logits.astype(np.float64), axis=1)
    problems["bundled example"] = (
        prob,
        example.labels,
        example.calibration_rows,
        example.test_rows,
    )


def fit_and_predict(method, prob, labels, fit_rows, score_rows):
    """The scoring rows' calibrated probabilities, the method fitted on the fit rows."""
    X = np.log(prob) if method is TemperatureScaling else prob
    return method().fit(X[fit_rows], labels[fit_rows]).predict_proba(X[score_rows])


results = {}  # (name, method): (ECE, NLL) on the scoring rows; method None: unchanged
calibrated = {}  # the shown file's calibrated probabilities, per method
shown = list(problems)[-1]
for name, (prob, labels, fit_rows, score_rows) in problems.items():
    y = labels[score_rows]
    results[name, None] = ECE(prob[score_rows], y), negative_log_likelihood(prob[score_rows], y)
    for method_name, method in METHODS.items():
        after = fit_and_predict(method, prob, labels, fit_rows, score_rows)
        results[name, method_name] = ECE(after, y), negative_log_likelihood(after, y)
        if name == shown:
            calibrated[method_name] = after

# %%
# The table: each file's scoring half, before ("none") and after each method.

print(f"{'file':<28}{'method':<13}{'ECE':>8}{'NLL':>8}")
for (name, method_name), (ece, nll) in results.items():
    print(f"{name:<28}{method_name or 'none':<13}{ece:>8.4f}{nll:>8.4f}")

# %%
# The figure: the reliability diagrams of one file before and after (the parametric
# and smooth maps on the left, the two monotone step maps in the middle), and the ECE
# of every method on every file (the dashed ticks: before recalibration).

figure, axes = plt.subplot_mosaic(
    [["smooth", "steps", "bars"], ["smooth counts", "steps counts", "bars"]],
    figsize=(15, 6.5),
    height_ratios=(3, 1),
    layout="constrained",
)
prob, labels, _, score_rows = problems[shown]
for panel, method_names in (
    ("smooth", ["temperature", "spline"]),
    ("steps", ["isotonic", "Venn-Abers"]),
):
    axes[f"{panel} counts"].sharex(axes[panel])
    ReliabilityDiagram.from_predictions(
        prob[score_rows],
        labels[score_rows],
        ax=axes[panel],
        counts_ax=axes[f"{panel} counts"],
        label="before",
    )
    for method_name in method_names:
        ReliabilityDiagram.from_predictions(
            calibrated[method_name],
            labels[score_rows],
            ax=axes[panel],
            counts_ax=axes[f"{panel} counts"],
            label=method_name,
        )
    axes[panel].set_title(f"{shown}: {' and '.join(method_names)}")

bars = axes["bars"]
width = 0.8 / len(METHODS)
positions = np.arange(len(problems))
for offset, method_name in enumerate(METHODS):
    ece = [results[name, method_name][0] for name in problems]
    bars.bar(positions + (offset - (len(METHODS) - 1) / 2) * width, ece, width, label=method_name)
for position, name in zip(positions, problems, strict=True):
    bars.hlines(results[name, None][0], position - 0.4, position + 0.4, "k", "dashed")
bars.plot([], [], "k--", label="before")
bars.set_xticks(positions, [name.replace("-cifar-100", "") for name in problems])
bars.set_ylabel("top-label ECE (15 bins) on the scoring half")
bars.set_title("ECE per method and file")
# headroom above the tallest bar or tick, for the legend
bars.set_ylim(0, 1.35 * max(ece for ece, _ in results.values()))
bars.legend(loc="upper center", ncols=3, fontsize="small")
plt.show()

# %%
# On these files temperature scaling lowers both the ECE and the NLL of every network,
# the overconfident DenseNet most. Isotonic calibration (one-vs-rest, then renormalised)
# has the highest NLL: its step maps give probability zero to the true class of about
# 2 % of the scoring rows, each of which costs :math:`-\log 10^{-15} \approx 34.5` nats
# (the NLL's clip), although its ECE stays moderate. A lower ECE with a higher NLL is why
# both are shown: the ECE reads the top label's confidence only, the NLL every class.
# On DenseNet, Venn-Abers's diagram lies above the diagonal: after its one-vs-rest maps
# are renormalised, the top label's confidence is lower than its accuracy.
