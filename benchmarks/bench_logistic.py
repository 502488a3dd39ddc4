"""Time and memory of the binary logistic fits (Platt, beta) against their peers.

The problems: N binary float32 logits (Platt) or float32 probabilities (beta) with int64
labels.  ``PlattScaling().fit`` is compared with scikit-learn's
``sklearn.calibration._SigmoidCalibration().fit`` (the sigmoid calibration of
``CalibratedClassifierCV``), ``BetaCalibration().fit`` with ``betacal``'s
``BetaCalibration(parameters="abm").fit``, on the same arrays.

Times are medians of ``--rounds`` interleaved rounds (every fit once per round), with the
spread (min-max).  Memory is the peak extra memory of one call, twice: the peak of
``tracemalloc`` (NumPy reports its buffers there) and the rise of the peak RSS
(``ru_maxrss``) of a fresh interpreter that loads the arrays, then makes the call.  Ratios
are to the bytes of the score array (the input).

The peers are not dependencies: their part runs in ``--peer-python``, an interpreter of a
peer environment (``tests/references/requirements.txt``)::

    python benchmarks/bench_logistic.py --peer-python PEERS/bin/python
    python benchmarks/bench_logistic.py --samples 100000 1000000 10000000 --rounds 3

Run from the repository root; ``PYTHONPATH`` chooses which calibration_toolbox is measured.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from _peers import run_json

FITS = ("platt", "beta")
PEERS = {"platt": "scikit-learn _SigmoidCalibration", "beta": "betacal BetaCalibration"}


def make_problem(fit: str, n_samples: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Scores (float32, (N,)) and int64 labels of a Platt or beta problem."""
    rng = np.random.default_rng(seed)
    labels = (rng.random(n_samples) < 0.4).astype(np.int64)
    if fit == "platt":
        scores = 3.0 * (2 * labels - 1) + 2.5 * rng.normal(size=n_samples)
    else:
        positive = labels == 1
        scores = rng.beta(np.where(positive, 4.0, 1.0), np.where(positive, 3.0, 2.0))
    return scores.astype(np.float32), labels


def fitter(fit: str, side: str):
    """The call measured: ``function(scores, labels)``, or None if its package is missing."""
    try:
        if side == "ours":
            try:
                import calibration_toolbox  # noqa: F401  (the one PYTHONPATH gives)
            except ImportError:
                sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
            from calibration_toolbox import BetaCalibration, PlattScaling

            if fit == "platt":
                return lambda s, y: PlattScaling().fit(s, y)
            return lambda s, y: BetaCalibration().fit(s, y)
        if fit == "platt":
            from sklearn.calibration import _SigmoidCalibration

            return lambda s, y: _SigmoidCalibration().fit(s, y)
        from betacal import BetaCalibration as PeerBeta

        return lambda s, y: PeerBeta(parameters="abm").fit(s, y)
    except ImportError:
        return None


def one_round(side: str, n_samples: int) -> dict:
    """Seconds of one call of each fit (after a small warm-up call)."""
    times = {}
    for fit in FITS:
        function = fitter(fit, side)
        if function is None:
            continue
        function(*make_problem(fit, 1000, seed=1))
        scores, labels = make_problem(fit, n_samples)
        start = time.perf_counter()
        function(scores, labels)
        times[fit] = time.perf_counter() - start
    return times


def traced_peak(fit: str, side: str, n_samples: int) -> float | None:
    """Peak bytes that tracemalloc sees during one call."""
    function = fitter(fit, side)
    if function is None:
        return None
    function(*make_problem(fit, 1000, seed=1))
    scores, labels = make_problem(fit, n_samples)
    tracemalloc.start()
    function(scores, labels)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return float(peak)


def rss_rise(fit: str, side: str, folder: str) -> float | None:
    """Rise of the peak RSS (bytes) over one call, in this fresh interpreter."""
    function = fitter(fit, side)
    if function is None:
        return None
    function(*make_problem(fit, 1000, seed=1))
    scores = np.load(f"{folder}/{fit}_scores.npy")
    labels = np.load(f"{folder}/{fit}_labels.npy")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    function(scores, labels)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (after - before) * 1024.0  # ru_maxrss is in KiB on Linux


def side_report(side: str, python: str, n_samples: int, folder: str) -> dict:
    """Memory figures of each fit of one side, every one in a fresh interpreter."""
    report = {}
    for fit in FITS:
        traced = run_json(python, __file__, [f"--child=traced:{fit}:{side}:{n_samples}"])
        rss = run_json(python, __file__, [f"--child=rss:{fit}:{side}:{folder}"])
        if traced["value"] is not None:
            report[fit] = {"traced": traced["value"], "rss": rss["value"]}
    return report


def child(task: str) -> None:
    kind, fit, side, argument = task.split(":")
    if kind == "round":
        value = one_round(side, int(argument))
    elif kind == "traced":
        value = traced_peak(fit, side, int(argument))
    else:
        value = rss_rise(fit, side, argument)
    print(json.dumps({"value": value}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--peer-python", help="interpreter with scikit-learn and betacal")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    sides = {"ours": sys.executable}
    if args.peer_python:
        sides["peers"] = args.peer_python
    for n_samples in args.samples:
        report(n_samples, args.rounds, sides)


def report(n_samples: int, rounds: int, sides: dict[str, str]) -> None:
    times = {side: {fit: [] for fit in FITS} for side in sides}
    for _ in range(rounds):  # interleaved: each side and fit once per round
        for side, python in sides.items():
            task = f"--child=round:-:{side}:{n_samples}"
            for fit, seconds in run_json(python, __file__, [task])["value"].items():
                times[side][fit].append(seconds)
    with tempfile.TemporaryDirectory() as folder:
        for fit in FITS:
            scores, labels = make_problem(fit, n_samples)
            np.save(f"{folder}/{fit}_scores.npy", scores)
            np.save(f"{folder}/{fit}_labels.npy", labels)
        memory = {
            side: side_report(side, python, n_samples, folder) for side, python in sides.items()
        }
    input_bytes = 4.0 * n_samples
    print(
        f"N = {n_samples:,} float32 scores ({input_bytes / 2**20:.1f} MiB), int64 labels; "
        f"time: median [min-max] of {rounds} interleaved rounds"
    )
    print("| call | time ms | tracemalloc MiB (x input) | RSS rise MiB (x input) |")
    print("|---|---|---|---|")
    for fit in FITS:
        for side in sides:
            if fit not in memory[side]:
                print(f"| {_name(fit, side)} | skipped (package not importable) | | |")
                continue
            spread = np.array(times[side][fit]) * 1e3
            figures = memory[side][fit]
            cells = [
                f"{np.median(spread):.0f} [{spread.min():.0f}-{spread.max():.0f}]",
                *(_mib(figures[key], input_bytes) for key in ("traced", "rss")),
            ]
            print(f"| {_name(fit, side)} | " + " | ".join(cells) + " |")


def _name(fit: str, side: str) -> str:
    if side == "peers":
        return PEERS[fit]
    return "PlattScaling().fit" if fit == "platt" else "BetaCalibration().fit"


def _mib(value: float, input_bytes: float) -> str:
    return f"{value / 2**20:.1f} ({value / input_bytes:.1f}x)"


if __name__ == "__main__":
    main()
