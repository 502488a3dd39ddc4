"""Extra memory and time of the equal-mass class-wise measures (``ACE``, ``TACE``).

For N = 1e5, 1e6, 1e7 rows of 10 float32 probabilities: the peak extra memory of one call
by tracemalloc (NumPy reports its allocations there) and by the rise of peak RSS in a fresh
child process (``ru_maxrss`` after minus before the call), in MiB and as a ratio to the
input's bytes; and the median time of ``ACE`` against ``np.sort(p, axis=0)`` over
interleaved rounds, with the spread (min-max) of each.

Run from the repository root: ``python benchmarks/bench_memory_sorted.py [--rounds 5]
[--sizes 100000 1000000 10000000]``.  The package imported is the one first on
``sys.path`` (set ``PYTHONPATH`` to compare two checkouts).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _timing import peak_memory

N_CLASSES = 10

SETUP = """
import numpy as np
def make(n_samples, n_classes=10, seed=0):
    # Built block by block, so that making the data raises the peak RSS by little more
    # than the data themselves.
    rng = np.random.default_rng(seed)
    prob = np.empty((n_samples, n_classes), dtype=np.float32)
    labels = rng.integers(0, n_classes, n_samples)
    step = 1 << 16
    for start in range(0, n_samples, step):
        block = prob[start : start + step]
        block[...] = rng.normal(size=block.shape) * 3
        hot = rng.integers(0, n_classes, len(block))
        block[np.arange(len(block)), hot] += 4
        block -= block.max(axis=1, keepdims=True)
        np.exp(block, out=block)
        block /= block.sum(axis=1, keepdims=True)
    return prob, labels
"""

CHILD = """
import resource
{setup}
from calibration_toolbox import ACE, TACE
prob, labels = make({n})
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
{call}(prob, labels)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print((after - before) * 1024)
"""

LAUNCHER = "import subprocess, sys; subprocess.run(sys.argv[1:], check=True)"

namespace: dict = {}
exec(SETUP, namespace)
make = namespace["make"]


def rss_rise(n_samples: int, call: str) -> int:
    import calibration_toolbox

    code = CHILD.format(setup=SETUP, n=n_samples, call=call)
    # ``python -c`` puts its working directory first on sys.path: run it where this
    # process's package lives, so that both measure the same code.
    root = Path(calibration_toolbox.__file__).resolve().parents[1]
    # A process's ru_maxrss starts from the peak of the process that exec'd it, so the
    # child is started by a bare Python launcher, not by this (large) process.
    result = subprocess.run(
        [sys.executable, "-c", LAUNCHER, sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=os.environ,
        cwd=root,
    )
    return int(result.stdout.strip())


def interleaved(functions, rounds: int) -> list[list[float]]:
    times: list[list[float]] = [[] for _ in functions]
    for _ in range(rounds):
        for slot, function in zip(times, functions, strict=True):
            start = time.perf_counter()
            function()
            slot.append(time.perf_counter() - start)
    return times


def measure(n_samples: int, rounds: int):
    """Print the memory rows of one size; return the ACE and np.sort times."""
    from calibration_toolbox import ACE, TACE

    prob, labels = make(n_samples)
    for name, metric in (("ACE", ACE), ("TACE", TACE)):
        traced = peak_memory(lambda metric=metric: metric(prob, labels))
        rss = rss_rise(n_samples, name)
        print(
            f"{name:<14}{n_samples:>10}{traced / 2**20:>12.1f}{traced / prob.nbytes:>7.2f}"
            f"{rss / 2**20:>10.1f}{rss / prob.nbytes:>7.2f}"
        )
    return interleaved([lambda: np.sort(prob, axis=0), lambda: ACE(prob, labels)], rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**5, 10**6, 10**7])
    args = parser.parse_args()

    print(f"{'call':<14}{'N':>10}{'traced MiB':>12}{'ratio':>7}{'RSS MiB':>10}{'ratio':>7}")
    timing_rows = [(n, *measure(n, args.rounds)) for n in args.sizes]

    print(f"\n{'N':>10}{'ACE ms':>10}{'spread':>16}{'sort ms':>10}{'spread':>16}{'ratio':>7}")
    for n_samples, floor, ours in timing_rows:
        spread = [f"{min(t) * 1e3:.0f}-{max(t) * 1e3:.0f}" for t in (ours, floor)]
        print(
            f"{n_samples:>10}{np.median(ours) * 1e3:>10.1f}{spread[0]:>16}"
            f"{np.median(floor) * 1e3:>10.1f}{spread[1]:>16}"
            f"{np.median(ours) / np.median(floor):>7.2f}"
        )


if __name__ == "__main__":
    main()
