"""Start-up: ``import calibration_toolbox`` as a ratio to ``import numpy``, and ``--help``.

Each round starts fresh interpreters in alternation: one that imports numpy (the floor), one
that imports the package, and one that runs ``python -m calibration_toolbox --help``; the
script prints the best, median and spread of the per-round ratios, and the best wall time of
``--help`` (issue 23's goals: at most 1.5x ``import numpy``, ``--help`` within 0.3 s).  The
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11)
    repeat = parser.parse_args().repeat
    run("-c", "import calibration_toolbox.cli")  # writes the bytecode
    numpy = lambda: run("-c", "import numpy")  # noqa: E731
    print(f"fresh interpreters, {repeat} alternating rounds (best, median [25%, 75%])")
    package = interleaved_ratio(lambda: run("-c", "import calibration_toolbox"), numpy, repeat)
    print(f"  {'import calibration_toolbox':<30} {package.text()}  (floor: import numpy)")
    help_ = interleaved_ratio(lambda: run("-m", "calibration_toolbox", "--help"), numpy, repeat)
    print(f"  {'calibration-toolbox --help':<30} {help_.text()}  (floor: import numpy)")


if __name__ == "__main__":
    main()
