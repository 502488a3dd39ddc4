"""Running one part of a benchmark script in another interpreter (a peer environment).

The peers (scikit-learn, betacal) are never dependencies of this project; a benchmark that
compares with them runs itself again under ``--peer-python`` with an option that selects
the peer part, and that part prints one JSON object as its last line of output.
"""

from __future__ import annotations

import json
import subprocess


def run_json(python: str, script: str, arguments: list[str]) -> dict:
    """The JSON object printed last by ``python script *arguments`` (run to completion)."""
    command = [python, script, *arguments]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])
