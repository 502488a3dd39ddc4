"""torch-uncertainty's ``AdaptiveCalibrationError`` on the real files, beside ours.

Prints the numbers of the user guide's "Names that mean other things elsewhere".  Run from the
repository root in a scratch environment (Python 3.11)::

    python3.11 -m venv tu-venv
    tu-venv/bin/pip install torch==2.13.0 torch-uncertainty==0.13.0 torchmetrics==1.9.0 \
        matplotlib seaborn scipy
    PYTHONPATH=. tu-venv/bin/python tests/references/torch_uncertainty_ace.py [DATA]

torch-uncertainty's package ``__init__`` imports ``lightning`` (not installed by the line
above), so the metric's module is loaded from its file.  Its multiclass metric takes the
largest probability against correctness (pooled, top label), sorts the confidences
(``torch.sort``, not stable) and cuts them with ``tensor_split(num_bins)``: the first
``N mod B`` bins get ``ceil(N / B)`` rows, the others ``floor(N / B)``; float32 throughout.

Last run (torch 2.13.0+cpu, torch-uncertainty 0.13.0, torchmetrics 1.9.0): at its default
10 bins it equals ``GCE(prob, labels, bins=10, adaptive_bins=True, class_conditional=False,
norm=1)`` to float32 rounding on all six files (1,000 rows per bin, as Nixon's rule gives
there), e.g. WRN-16-4 CIFAR-100 0.0566518 against 0.0566518, where ``ACE`` (Nixon's
class-wise error) is 0.00106; at 15 bins the cuts differ: LeNet-5 CIFAR-100 0.016196
against 0.016355.
"""

from __future__ import annotations

import importlib.util
import sys

from _common import REAL_FILES, data_dir, load_real, versions

MODULE = "torch_uncertainty/metrics/classification/calibration/adaptive_calibration_error.py"


def _load_module():
    spec = importlib.util.find_spec("torch_uncertainty")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch-uncertainty is not installed in this environment")
    path = f"{next(iter(spec.submodule_search_locations))}/{MODULE.split('/', 1)[1]}"
    module_spec = importlib.util.spec_from_file_location("tu_adaptive_ce", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def main() -> None:
    import torch

    from calibration_toolbox import ACE, GCE

    module = _load_module()
    folder = data_dir()
    print(versions("numpy", "torch", "torchmetrics"))
    for name in REAL_FILES:
        prob, labels = load_real(folder, name)
        row = [name]
        for bins in (10, 15):
            metric = module.AdaptiveCalibrationError(
                task="multiclass", num_classes=prob.shape[1], num_bins=bins, norm="l1"
            )
            metric.update(torch.from_numpy(prob), torch.from_numpy(labels))
            ours = GCE(prob, labels, bins=bins, adaptive_bins=True, class_conditional=False)
            theirs = float(metric.compute())
            row += [f"{bins} bins: torch-uncertainty {theirs:.7f}", f"GCE equal-mass {ours:.7f}"]
        row.append(f"ACE {ACE(prob, labels):.5f}")
        print("  ".join(row))


if __name__ == "__main__":
    sys.exit(main())
