"""``calibration-toolbox compare A B --stream`` against ``compare A B``: peak memory and time.

Writes two ROWS x 10 float32 ``.npy`` files of the same rows (default 2,000,000: A the
softmax of scaled normal logits, B the same sharpened, renormalised) and their int64
labels under a temporary folder, then runs ``python -m calibration_toolbox compare A B
--labels y.npy --metrics ECE,MCE,RMSCE --format json`` in child processes, read whole and
with ``--stream``, without and with ``--ci`` (``--n-resamples``), in alternated rounds:
each child's wall time and its own peak RSS (``RUSAGE_SELF``, printed by the child), best
of the rounds, and whether the two documents are equal (all but ``command``).  The files
are in the page cache.  Never a timed assertion; no test runs this script.

Run: ``python benchmarks/bench_compare_stream.py [--rows 2000000] [--rounds 2]
[--n-resamples 20]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
N_CLASSES = 10
WRITE_ROWS = 250_000
# The child runs the command line in-process, then prints its own peak RSS (KiB) to stderr.
CHILD = (
    "import resource, sys\n"
    "from calibration_toolbox.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('peak', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)


def _header(handle, dtype, shape) -> None:
    header = {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(handle, header)


def write_files(folder: Path, rows: int) -> tuple[Path, Path, Path]:
    """A, B and the labels, written block by block after their ``.npy`` headers."""
    rng = np.random.default_rng(0)
    paths = folder / "a.npy", folder / "b.npy", folder / "y.npy"
    with open(paths[0], "wb") as a, open(paths[1], "wb") as b, open(paths[2], "wb") as y:
        for handle in (a, b):
            _header(handle, np.float32, (rows, N_CLASSES))
        _header(y, np.int64, (rows,))
        for start in range(0, rows, WRITE_ROWS):
            n = min(start + WRITE_ROWS, rows) - start
            logits = rng.normal(scale=2.0, size=(n, N_CLASSES))
            prob = np.exp(logits - logits.max(axis=1, keepdims=True))
            prob /= prob.sum(axis=1, keepdims=True)
            sharp = prob**1.3
            sharp /= sharp.sum(axis=1, keepdims=True)
            prob.astype(np.float32).tofile(a)
            sharp.astype(np.float32).tofile(b)
            right = rng.random(n) < 0.7
            labels = np.where(right, prob.argmax(axis=1), rng.integers(0, N_CLASSES, n))
            labels.astype(np.int64).tofile(y)
    return paths


def compare(paths, extra: list[str]) -> tuple[float, float, dict]:
    """Wall time, the child's peak RSS (MB) and its JSON document (``command`` left out)."""
    a, b, labels = map(str, paths)
    command = [sys.executable, "-c", CHILD, "compare", a, b, "--labels", labels]
    command += ["--metrics", "ECE,MCE,RMSCE", "--format", "json", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"compare failed ({run.returncode}): {run.stderr}")
    peak = next(line for line in run.stderr.splitlines() if line.startswith("peak "))
    document = json.loads(run.stdout)
    document.pop("command")
    return seconds, int(peak.split()[1]) / 1024, document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--n-resamples", type=int, default=20)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bench_compare_stream_"))
    try:
        paths = write_files(folder, args.rows)
        print(
            f"A, B: {args.rows:,} x {N_CLASSES} float32 each "
            f"({paths[0].stat().st_size / 1e6:.0f} MB)"
        )
        ci = ["--ci", "--n-resamples", str(args.n_resamples)]
        for name, extra in (
            ("metrics and score tests", []),
            (f"--ci ({args.n_resamples} resamples)", ci),
        ):
            runs: dict[str, list] = {"whole": [], "--stream": []}
            for _ in range(args.rounds):  # alternated: whole, streamed, whole, ...
                runs["whole"].append(compare(paths, extra))
                runs["--stream"].append(compare(paths, [*extra, "--stream"]))
            best = {key: min(found, key=lambda run: run[0]) for key, found in runs.items()}
            same = all(run[2] == runs["whole"][0][2] for found in runs.values() for run in found)
            ratio = best["--stream"][0] / best["whole"][0]
            print(
                f"{name}: whole {best['whole'][0]:.2f} s, {best['whole'][1]:.0f} MB; --stream "
                f"{best['--stream'][0]:.2f} s, {best['--stream'][1]:.0f} MB; time ratio "
                f"{ratio:.2f}; documents equal: {same}"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
