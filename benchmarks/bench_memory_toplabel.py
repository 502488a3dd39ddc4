"""Extra memory and time of the top-label and class-wise equal-width metrics as N grows.

For ``ECE``, ``SCE``, ``brier_score`` and ``negative_log_likelihood`` on N x 10 float32
probabilities (N = 1e5, 1e6, 1e7), each call runs in a fresh child process that makes the
data once (row block by row block, so that making it does not raise the peak RSS) and
reports:

* the rise of the peak RSS over the call (``getrusage(RUSAGE_SELF).ru_maxrss`` after the
  first call minus before it), in MiB and as a ratio to the probabilities' bytes;
* the peak extra bytes traced by tracemalloc (NumPy reports its allocations there);
* the median and spread of the call's time over ``--repeat`` calls;
* the value, so that two checkouts can be compared for exactness.

``--baseline DIR`` runs every child a second time with ``PYTHONPATH=DIR`` (another checkout
of the project, e.g. the main branch), interleaved round by round with this checkout's.

Run from the repository root::

    python benchmarks/bench_memory_toplabel.py [--sizes 1e5 1e6 1e7] [--rounds 3]
        [--repeat 5] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

N_CLASSES = 10
METRICS = ("ECE", "SCE", "brier_score", "negative_log_likelihood")
ROOT = Path(__file__).resolve().parent.parent


def make_data(n_samples: int, seed: int = 0):
    """Float32 softmax probabilities (a peaked, miscalibrated model) and int64 labels."""
    from scipy.special import softmax

    rng = np.random.default_rng(seed)
    prob = np.empty((n_samples, N_CLASSES), dtype=np.float32)
    labels = rng.integers(0, N_CLASSES, n_samples)
    # Blocks of 4,096 rows: their temporaries (~1 MiB) stay below what the calls allocate.
    for start in range(0, n_samples, 1 << 12):
        stop = min(start + (1 << 12), n_samples)
        logits = rng.normal(size=(stop - start, N_CLASSES)) * 3
        logits[np.arange(stop - start), rng.integers(0, N_CLASSES, stop - start)] += 4
        prob[start:stop] = softmax(logits, axis=1)
    return prob, labels


def child(metric_name: str, n_samples: int, repeat: int) -> dict:
    """Measure one metric in this (fresh) process; the result as a dict."""
    import resource
    import time
    import tracemalloc

    import calibration_toolbox

    metric = getattr(calibration_toolbox, metric_name)
    prob, labels = make_data(n_samples)
    tiny_prob, tiny_labels = make_data(1000, 1)
    metric(tiny_prob, tiny_labels)  # imports and first-call set-up out of the figure
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    value = metric(prob, labels)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    metric(prob, labels)
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        metric(prob, labels)
        times.append(time.perf_counter() - start)
    return {
        "rss_rise": (after - before) * 1024,  # ru_maxrss is in KiB on Linux
        "traced": traced,
        "times": times,
        "value": repr(value),
        "input_bytes": prob.nbytes,
    }


def run_child(root: Path, metric_name: str, n_samples: int, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(root))
    command = [sys.executable, __file__, "--child", metric_name, str(n_samples), str(repeat)]
    output = subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    return json.loads(output.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e5, 1e6, 1e7])
    parser.add_argument("--metrics", nargs="+", default=list(METRICS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", type=Path, default=None)
    parser.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        name, n_samples, repeat = args.child
        print(json.dumps(child(name, int(n_samples), int(repeat))))
        return

    roots = {"this": ROOT}
    if args.baseline is not None:
        roots = {"before": args.baseline.resolve(), "after": ROOT}
    header = (
        f"{'metric':<24}{'N':>10}{'code':>8}{'RSS MiB':>9}{'ratio':>7}{'traced MiB':>11}"
        f"{'ratio':>7}{'ms med':>9}{'ms min-max':>15}  value"
    )
    print(header)
    for size in args.sizes:
        n_samples = int(size)
        for name in args.metrics:
            results = {label: [] for label in roots}
            for _ in range(args.rounds):  # interleaved rounds
                for label, root in roots.items():
                    results[label].append(run_child(root, name, n_samples, args.repeat))
            for label, runs in results.items():
                _print_row(name, n_samples, label, runs)
            sys.stdout.flush()


def _print_row(name: str, n_samples: int, label: str, runs: list[dict]) -> None:
    mib = 2**20
    input_bytes = runs[0]["input_bytes"]
    rss = float(np.median([run["rss_rise"] for run in runs]))
    traced = float(np.median([run["traced"] for run in runs]))
    times = np.array([t for run in runs for t in run["times"]]) * 1e3
    print(
        f"{name:<24}{n_samples:>10}{label:>8}{rss / mib:>9.1f}{rss / input_bytes:>7.2f}"
        f"{traced / mib:>11.1f}{traced / input_bytes:>7.2f}{np.median(times):>9.1f}"
        f"{f'{times.min():.0f}-{times.max():.0f}':>15}  {runs[0]['value']}"
    )


if __name__ == "__main__":
    main()
