"""What ``select_recalibrator`` costs per method at 50,000 x 100 (the issue's goal: 60 s, 2 cores).

For every method of the command line (``recalibration._methods.METHODS``), on
``make_overconfident`` logits, each of the ``cv`` (5) folds is done as
``select_recalibrator`` does it: the method fitted on the other folds' rows (40,000 x
100) and scored (``-score``, the held-out log-loss) on the fold's rows, timed once per fold.
The table gives, per method, the mean seconds per fold (fit + score), the sum over the
folds, and that mean as a multiple of the floor: one softmax pass over the fold's training
rows, timed in the same run.  The estimated call is the sum over methods plus the best
method's refit on all rows (taken as the slowest method's fold time, an upper bound).

Each thread count runs in its own child process with ``OPENBLAS_NUM_THREADS``,
``OMP_NUM_THREADS`` and ``MKL_NUM_THREADS`` set to it (BLAS reads them when it loads), and
the methods that take ``n_jobs`` get it too.  ``--full`` also times one whole
``select_recalibrator`` call in each child.

    python benchmarks/bench_select.py [--rows 50000] [--classes 100] [--cv 5]
        [--threads 1 2] [--full]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _timing import best_time
from scipy.special import softmax

from calibration_toolbox import select_recalibrator
from calibration_toolbox.datasets import make_overconfident
from calibration_toolbox.recalibration._methods import METHODS, converted
from calibration_toolbox.recalibration.select import stratified_folds

ROOT = Path(__file__).resolve().parents[1]
_BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def _child(args: argparse.Namespace) -> None:
    threads = args.child
    logits, labels = make_overconfident(args.rows, args.classes, temperature=2.0, seed=0)
    folds = stratified_folds(labels, args.cv, np.random.default_rng(0))
    inputs = {needs: converted(logits, needs, True) for needs in ("logits", "probabilities")}
    train_rows = inputs["logits"][folds != 0]
    floor = best_time(lambda: softmax(train_rows, axis=1), 5)
    print(
        f"{threads} thread(s): {args.rows:,} x {args.classes}, {args.cv} folds; per fold a fit "
        f"on {len(train_rows):,} rows and a score on the rest; floor (one softmax pass over "
        f"the fit rows) {floor * 1e3:.1f} ms"
    )
    print(f"  {'method':<12}{'s / fold':>10}{'floors':>9}{'all folds s':>13}")
    total, slowest = 0.0, 0.0
    for name, method in METHODS.items():
        data = inputs[method.needs]
        template = method.factory()
        params = template.get_params(deep=False)
        if "n_jobs" in params:
            params["n_jobs"] = threads
        seconds = []
        for fold in range(args.cv):
            test = folds == fold
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                start = time.perf_counter()
                model = type(template)(**params).fit(data[~test], labels[~test])
                model.score(data[test], labels[test])
                seconds.append(time.perf_counter() - start)
        per_fold = float(np.mean(seconds))
        total += sum(seconds)
        slowest = max(slowest, per_fold)
        print(f"  {name:<12}{per_fold:>10.2f}{per_fold / floor:>9.0f}{sum(seconds):>13.1f}")
    print(f"  estimated select_recalibrator: {total:.1f} s of folds + at most {slowest:.1f} s")
    print(f"  of refit = {total + slowest:.1f} s")
    if args.full:
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            result = select_recalibrator(logits, labels, logits=True, cv=args.cv, random_state=0)
        print(f"  select_recalibrator: {time.perf_counter() - start:.1f} s; best {result.best}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--cv", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        _child(args)
        return
    for threads in args.threads:
        env = dict(os.environ, PYTHONPATH=str(ROOT), **dict.fromkeys(_BLAS_THREADS, str(threads)))
        command = [sys.executable, __file__, *sys.argv[1:], "--child", str(threads)]
        subprocess.run(command, env=env, check=True)


if __name__ == "__main__":
    main()
