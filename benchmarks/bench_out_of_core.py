"""``calibration-toolbox report`` on a ``.npy`` larger than it should hold: peak memory and time.

Writes a ROWS x 10 float32 ``.npy`` of probabilities (default 50,000,000 rows: 2 GB) and its
int64 labels under a temporary folder (free disk checked first), block by block, then:

1. one plain read of the predictions file, summed in blocks of 65,536 rows (the floor:
   the bytes read once, no metric);
2. ``python -m calibration_toolbox report big.npy --labels y.npy --format json`` in a child
   process, its wall time and its peak RSS (``resource.getrusage(RUSAGE_CHILDREN)``); with
   ``--method temperature`` the fit on the file's seeded half, a pass over the file per step
   (the passes are printed).

The files are removed in a ``finally``.  The file is in the page cache after it is written,
so both timings read from memory, not from the disk.  Never a timed assertion; no test runs
this script.

Run: ``python benchmarks/bench_out_of_core.py [--rows 20000000] [--block-rows 65536]
[--method temperature]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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


def write_files(folder: Path, rows: int) -> tuple[Path, Path]:
    """Seeded probabilities (softmax of scaled normal logits) and labels, in blocks of rows.

    Written with ``tofile`` after the ``.npy`` header, not through a memory map: pages
    written through a map count in this process's RSS, and a child started by ``fork``
    starts its ``ru_maxrss`` from that (the first version of this script reported 1.1 GB
    for a report that peaks at 0.1 GB).
    """
    rng = np.random.default_rng(0)
    big, labels_path = folder / "big.npy", folder / "y.npy"
    with open(big, "wb") as prob_file, open(labels_path, "wb") as labels_file:
        for handle, dtype, shape in (
            (prob_file, np.float32, (rows, N_CLASSES)),
            (labels_file, np.int64, (rows,)),
        ):
            header = {"descr": np.dtype(dtype).str, "fortran_order": False, "shape": shape}
            np.lib.format.write_array_header_1_0(handle, header)
        for start in range(0, rows, WRITE_ROWS):
            stop = min(start + WRITE_ROWS, rows)
            logits = rng.normal(scale=3.0, size=(stop - start, N_CLASSES)).astype(np.float32)
            block = np.exp(logits - logits.max(axis=1, keepdims=True))
            block /= block.sum(axis=1, keepdims=True)
            block.tofile(prob_file)
            # the predicted class, right 60 % of the time: an overconfident model
            right = rng.random(stop - start) < 0.6
            labels = np.where(
                right, block.argmax(axis=1), rng.integers(0, N_CLASSES, stop - start)
            )
            labels.astype(np.int64).tofile(labels_file)
    return big, labels_path


def _rss_mb() -> float:
    """This process's resident memory now (MB), from /proc (Linux)."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def plain_read(path: Path, block_rows: int) -> float:
    """Seconds to sum the file in blocks of rows, read into one reused buffer."""
    start = time.perf_counter()
    with open(path, "rb") as handle:
        version = np.lib.format.read_magic(handle)
        read_header = {(1, 0): np.lib.format.read_array_header_1_0}
        shape, _, dtype = read_header.get(version, np.lib.format.read_array_header_2_0)(handle)
        buffer = np.empty((block_rows, shape[1]), dtype)
        total = 0.0
        for first in range(0, shape[0], block_rows):
            rows = min(block_rows, shape[0] - first)
            handle.readinto(memoryview(buffer[:rows]).cast("B"))
            total += float(buffer[:rows].sum())
    assert total > 0
    return time.perf_counter() - start


def report(big: Path, labels: Path, extra: list[str]) -> tuple[float, float, dict, str]:
    """Wall time, peak RSS (MB) of the child, its JSON document and its stderr."""
    command = [sys.executable, "-m", "calibration_toolbox", "report", str(big)]
    command += ["--labels", str(labels), "--format", "json", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start = time.perf_counter()
    run = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    if run.returncode != 0:
        raise SystemExit(f"report failed ({run.returncode}): {run.stderr}")
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB on Linux
    return seconds, peak_mb, json.loads(run.stdout), run.stderr.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000_000)
    parser.add_argument("--block-rows", type=int, default=None, help="passed to report")
    parser.add_argument("--stream", action="store_true", help="passed to report (small --rows)")
    parser.add_argument("--method", help="passed to report: fitted on the file's seeded half")
    args = parser.parse_args()
    needed = args.rows * (N_CLASSES * 4 + 8)
    folder = Path(tempfile.mkdtemp(prefix="bench_out_of_core_"))
    try:
        free = shutil.disk_usage(folder).free
        if free < needed * 1.2:
            raise SystemExit(f"needs {needed / 1e9:.1f} GB free in {folder}; {free / 1e9:.1f}")
        start = time.perf_counter()
        big, labels = write_files(folder, args.rows)
        print(
            f"wrote {args.rows:,} x {N_CLASSES} float32 ({big.stat().st_size / 1e9:.2f} GB) "
            f"and int64 labels ({labels.stat().st_size / 1e9:.2f} GB) in "
            f"{time.perf_counter() - start:.0f} s"
        )
        floor = plain_read(big, 65_536)
        print(f"this process's RSS before starting the report: {_rss_mb():.0f} MB")
        extra = [] if args.block_rows is None else ["--block-rows", str(args.block_rows)]
        extra += ["--stream"] if args.stream else []
        extra += ["--method", args.method] if args.method else []
        seconds, peak_mb, document, stderr = report(big, labels, extra)
        metrics = document["results"][0]["metrics"]
        print(f"plain read (sum in blocks of 65,536 rows): {floor:.2f} s")
        print(
            f"report: {seconds:.1f} s ({seconds / floor:.1f} x the plain read), "
            f"peak RSS {peak_mb:.0f} MB"
        )
        print(f"  n = {document['n']:,}, blocks {document.get('blocks')}")
        for entry in document["results"][1:]:
            print(f"  {entry['method']}: {entry['parameters']}, fitted on {document['n_fit']:,}")
        print("  " + ", ".join(f"{name} {value:.6f}" for name, value in metrics.items()))
        if stderr:
            print(f"  stderr: {stderr}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
