"""Run a snippet in a child process under a memory limit and a timeout.

A test of a hostile size must not take the machine down if the check it tests regresses:
the snippet runs in a fresh interpreter whose address space is capped
(``resource.setrlimit(RLIMIT_AS)``), killed after ``timeout`` seconds.  The snippet reports
what happened on stdout; the test reads it.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

__all__ = ["MEMORY_LIMIT", "bounded_child", "run_bounded"]

#: Address space of the child: enough to import NumPy and SciPy and to run a small input
#: (about 400 MiB of it is mapped by the imports), far below what a hostile size asks for.
MEMORY_LIMIT = 1536 * 2**20

ROOT = Path(__file__).resolve().parents[1]


def _limit_memory(limit: int):
    def limit_memory() -> None:  # runs in the child, before it starts Python
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return limit_memory


def bounded_child(
    code: str,
    *args: str,
    cwd: Path = ROOT,
    timeout: float = 120.0,
    memory: int = MEMORY_LIMIT,
) -> subprocess.CompletedProcess:
    """Run ``code`` with ``args`` (its ``sys.argv[1:]``) in a bounded child, in ``cwd``."""
    environment = dict(
        os.environ, PYTHONPATH=str(ROOT), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1"
    )
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=environment,
        preexec_fn=_limit_memory(memory),
        check=False,
    )


def run_bounded(code: str, timeout: float = 120.0) -> str:
    """Run ``code`` in a bounded child; return its stdout (its stderr too if it failed)."""
    result = bounded_child(code, timeout=timeout)
    if result.returncode != 0:
        return result.stdout + result.stderr
    return result.stdout
