"""Peak extra memory of every metric and fit, at N = 1e5, 1e6 and 1e7 rows (issue 12).

For each call and each N, two fresh child interpreters (``python -c``) build the same
seeded input and make the call once: one measures the peak of tracemalloc (NumPy reports
its allocations there) during the call, the other the rise of the process's peak RSS
(``getrusage(RUSAGE_SELF).ru_maxrss`` after the call minus before it; the input is built
in row blocks of 10,000, so the peak before the call is the input itself, within about
1 MiB).  Each figure is printed in MiB and as a ratio to the bytes of the predictions
passed (the labels are not counted), so growth with N shows down a column.

Inputs: K = 10 float32 columns (probabilities, the softmax of normal logits with the
label's logit raised by 2, for the metrics and isotonic regression; the logits themselves
for temperature scaling); the binary fits get one float32 column (Platt scaling: the
logit, beta calibration and the nonparametric fits: the probability).  Only public calls
are made, each first on 1,000 rows (the lazily loaded scipy modules are not counted).

A fit whose untraced time at N = 1e6 predicts more than ``--max-seconds`` (60) at 1e7 is
skipped there, and the table says so.  Run from the repository root::

    python benchmarks/bench_memory.py [--sizes 1e5 1e6 1e7] [--only ECE SCE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N_CLASSES = 10

# name -> (input kind, the call on `x` and `y`)
CASES = {
    "ECE": ("prob", "ECE(x, y)"),
    "SCE": ("prob", "SCE(x, y)"),
    "ACE": ("prob", "ACE(x, y)"),
    "TACE": ("prob", "TACE(x, y)"),
    "brier_score": ("prob", "brier_score(x, y)"),
    "negative_log_likelihood": ("prob", "negative_log_likelihood(x, y)"),
    "TemperatureScaling.fit": ("logits", "TemperatureScaling().fit(x, y)"),
    "PlattScaling.fit (binary)": ("binary_logit", "PlattScaling().fit(x, y)"),
    "BetaCalibration.fit (binary)": ("binary_prob", "BetaCalibration().fit(x, y)"),
    "IsotonicCalibration.fit": ("prob", "IsotonicCalibration().fit(x, y)"),
    "IsotonicCalibration.fit (binary)": ("binary_prob", "IsotonicCalibration().fit(x, y)"),
    "SplineCalibration.fit (binary)": ("binary_prob", "SplineCalibration().fit(x, y)"),
    "HistogramBinning.fit (binary)": ("binary_prob", "HistogramBinning().fit(x, y)"),
    "VennAbersCalibration.fit (binary)": ("binary_prob", "VennAbersCalibration().fit(x, y)"),
}

# The child: build the input in row blocks (seeded), then measure one call.
CHILD = """
import json, resource, sys, time, tracemalloc
import numpy as np
from scipy.special import expit, softmax
from calibration_toolbox import *
n, k, kind, mode = {n}, {k}, {kind!r}, {mode!r}
rng = np.random.default_rng(12)
y = rng.integers(0, k, n)
binary = kind.startswith("binary")
x = np.empty(n if binary else (n, k), dtype=np.float32)
step = 10_000  # small blocks: the peak RSS before the call is the input's
for start in range(0, n, step):
    rows = slice(start, min(start + step, n))
    z = rng.normal(size=(rows.stop - rows.start, k))
    z[np.arange(len(z)), y[rows]] += 2.0
    if kind == "logits":
        x[rows] = z
    elif kind == "prob":
        x[rows] = softmax(z, axis=1)
        x[rows] /= x[rows].sum(axis=1, keepdims=True)  # float32 row sums within tolerance
    else:
        margin = z[:, 1] - z[:, 0]
        x[rows] = margin if kind == "binary_logit" else expit(margin)
if binary:
    y = (y == 1).astype(np.int64)
# The call once on 1,000 rows first: the scipy modules the project loads lazily (21 MiB of
# RSS for scipy.optimize) are loaded once per process, not memory of the call.
x_all, y_all = x, y
x, y = x[:1000], y[:1000]
{call}
x, y = x_all, y_all
if mode == "tracemalloc":
    tracemalloc.start()
    tracemalloc.reset_peak()
    {call}
    extra = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    seconds = None
else:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    {call}
    seconds = time.perf_counter() - start
    extra = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
print(json.dumps({{"extra": extra, "input": x.nbytes, "seconds": seconds}}))
"""


def measure(name: str, n: int, mode: str) -> dict:
    kind, call = CASES[name]
    code = CHILD.format(n=n, k=N_CLASSES, kind=kind, mode=mode, call=call)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{name} at N = {n} ({mode}) failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1e5, 1e6, 1e7])
    parser.add_argument("--only", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--max-seconds", type=float, default=60.0)
    args = parser.parse_args()
    sizes = sorted(int(size) for size in args.sizes)

    print(f"K = {N_CLASSES} float32 (binary fits: one float32 column); extra memory of one call")
    header = f"{'call':<36}{'N':>10}{'input MiB':>11}{'tracemalloc':>19}{'peak RSS rise':>19}"
    print(f"{header}{'time s':>9}")
    print(f"{'':<57}{'MiB':>10}{'ratio':>9}{'MiB':>10}{'ratio':>9}")
    for name in args.only:
        seconds = None
        previous_n = None
        for n in sizes:
            if seconds is not None and seconds * n / previous_n > args.max_seconds:
                print(
                    f"{name:<36}{n:>10.0e}  skipped: {seconds:.1f} s at {previous_n:.0e} "
                    f"predicts over {args.max_seconds:g} s"
                )
                continue
            traced = measure(name, n, "tracemalloc")
            rss = measure(name, n, "rss")
            seconds, previous_n = rss["seconds"], n
            size = traced["input"]
            print(
                f"{name:<36}{n:>10.0e}{size / 2**20:>11.1f}"
                f"{traced['extra'] / 2**20:>10.1f}{traced['extra'] / size:>9.2f}"
                f"{rss['extra'] / 2**20:>10.1f}{rss['extra'] / size:>9.2f}{seconds:>9.2f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
