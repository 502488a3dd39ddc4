"""Start-up: ``import calibration_toolbox`` as a ratio to ``import numpy``, and ``--help``.

Each round starts fresh interpreters in alternation: one that imports numpy (the floor), and
one of the cases: ``import calibration_toolbox``, the first use of a metric, every module,
``python -m calibration_toolbox --help``; the script prints the best, median and spread of
the per-round ratios, and the best and median wall time of ``--help`` (issue 23's goals: at
most 1.5x ``import numpy``, ``--help`` within 0.3 s).  The
bytecode is written first, as an installed package has it.
Run: ``python benchmarks/bench_startup.py [--repeat 11]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from _timing import interleaved_ratio

ROOT = Path(__file__).resolve().parents[1]
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPATH"] = str(ROOT)


def run(*arguments: str) -> None:
    subprocess.run([sys.executable, *arguments], env=ENV, check=True, stdout=subprocess.DEVNULL)


#: What each fresh interpreter runs, against ``import numpy``: the package (its names are
#: imported on first use), the first use of a metric (the metrics' modules), and every module
#: a user's session may reach (the statistics and the recalibrators too).
CASES = {
    "import calibration_toolbox": ("-c", "import calibration_toolbox"),
    "... and ct.ECE (first use)": ("-c", "import calibration_toolbox as ct; ct.ECE"),
    "... and every module": (
        "-c",
        "import calibration_toolbox as ct; ct.stats, ct.recalibration, ct.groups, ct.streaming",
    ),
    "calibration-toolbox --help": ("-m", "calibration_toolbox", "--help"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11)
    repeat = parser.parse_args().repeat
    run("-m", "compileall", "-q", str(ROOT / "calibration_toolbox"))  # writes the bytecode
    numpy = lambda: run("-c", "import numpy")  # noqa: E731
    print(f"fresh interpreters, {repeat} alternating rounds (best, median [25%, 75%])")
    results = {}
    for name, arguments in CASES.items():
        results[name] = interleaved_ratio(
            lambda arguments=arguments: run(*arguments), numpy, repeat
        )
        print(f"  {name:<30} {results[name].text()}  (floor: import numpy)")
    help_ = results["calibration-toolbox --help"]
    print(
        f"  calibration-toolbox --help wall: best {help_.ours_best:.3f} s, "
        f"median {help_.ours_median:.3f} s (goal: <= 0.3 s; import numpy's best "
        f"{help_.floor_best:.3f} s in the same rounds)"
    )


if __name__ == "__main__":
    main()
