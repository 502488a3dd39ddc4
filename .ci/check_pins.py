"""Fail unless every ``name==version`` of a constraints file is what is installed."""

from __future__ import annotations

import sys
from importlib.metadata import version


def main(path: str) -> int:
    """Compare each pin of ``path`` with the installed version; print the mismatches."""
    wrong = []
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            pin = line.split("#", 1)[0].strip()
            if pin:
                name, wanted = pin.split("==")
                if version(name) != wanted:
                    wrong.append(f"{name} {version(name)} installed, {wanted} pinned")
    for line in wrong:
        print(f"check_pins: {line}", file=sys.stderr)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
