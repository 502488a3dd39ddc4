"""Peer reference for ``multicalibration_error``: mcgrad 0.1.5's ``MulticalibrationError``.

Prints the literal ``MCGRAD_MCE`` of ``tests/test_groups.py``.  Rerun from the repository
root in the p-value peers' environment (``requirements.txt``, environment 4: ``pip install
torch==2.13.0`` first, the CPU build, then ``pip install mcgrad==0.1.5``)::

    python tests/references/multicalibration_peers.py

Versions of the stored run: python 3.11, numpy 2.4.6, scipy 1.17.1, pandas 3.1.1,
mcgrad 0.1.5.

For each set of :func:`segment_sets` (a score ``s`` per row, its 0/1 target ``y``, two
categorical features ``a`` (3 values) and ``b`` (2 values), weights or None), mcgrad's
``MulticalibrationError(df, 'label', 'score', weight_column=..., categorical_segment_columns=
['a', 'b'], max_depth=1, min_samples_per_segment=1, precision_dtype='float64')``: its
segments are the whole population, then each value of ``a`` and of ``b`` (printed as
``(column, value)`` in mcgrad's order); per segment ``segments_ecce``, ``_segments_ecce_std``
and ``segments_ecce_sigma``; then ``mce_sigma``, ``mce``, ``mce_relative``, ``mce_pvalue``,
``mde`` and ``mde_relative``.  float64 precision: mcgrad's default float32 rounds the
scores first.
"""

from __future__ import annotations

import numpy as np


def segment_sets() -> dict[str, tuple[np.ndarray, ...]]:
    """Seeded (scores, targets, a, b, weights or None) sets, by name; the test imports it.

    ``segment_a2``: 3,000 scores uniform on (0.05, 0.95), ``a`` in 0..2 and ``b`` in 0..1
    uniform, the target drawn with probability ``s**1.5`` where ``a == 2``, else ``s``
    (``default_rng(211)``); ``weighted``: 2,000 rows, target with probability ``s`` shifted
    by ``+0.1`` where ``b == 1`` (clipped to [0, 1]), weights uniform on (0.2, 3)
    (``default_rng(212)``).
    """
    sets = {}
    rng = np.random.default_rng(211)
    n = 3_000
    scores = rng.uniform(0.05, 0.95, n)
    a, b = rng.integers(0, 3, n), rng.integers(0, 2, n)
    rate = np.where(a == 2, scores**1.5, scores)
    sets["segment_a2"] = scores, (rng.random(n) < rate).astype(np.int64), a, b, None
    rng = np.random.default_rng(212)
    n = 2_000
    scores = rng.uniform(0.05, 0.95, n)
    a, b = rng.integers(0, 3, n), rng.integers(0, 2, n)
    rate = np.clip(scores + 0.1 * (b == 1), 0, 1)
    targets = (rng.random(n) < rate).astype(np.int64)
    sets["weighted"] = scores, targets, a, b, rng.uniform(0.2, 3.0, n)
    return sets


def main() -> None:
    from importlib.metadata import version

    import pandas as pd
    from _common import versions
    from mcgrad.metrics import MulticalibrationError

    print("#", versions("numpy", "scipy", "pandas"), end="")
    print(f", mcgrad {version('mcgrad')}")
    print("# name: {segments: ((column, value), ...), ecce, sigma, scaled: per segment,")
    print("#        summary: (mce_sigma, mce, mce_relative, mce_pvalue, mde, mde_relative)}")
    print("MCGRAD_MCE = {")
    for name, (scores, targets, a, b, weights) in segment_sets().items():
        frame = pd.DataFrame({"label": targets, "score": scores, "a": a, "b": b})
        if weights is not None:
            frame["weight"] = weights
        mce = MulticalibrationError(
            frame,
            "label",
            "score",
            weight_column=None if weights is None else "weight",
            categorical_segment_columns=["a", "b"],
            max_depth=1,
            min_samples_per_segment=1,
            precision_dtype="float64",
        )
        values = mce._segments[1]
        segments = tuple(
            (str(column), int(value))
            for column, value in zip(values["segment_column"], values["value"], strict=True)
        )
        print(f'    "{name}": {{')
        print(f'        "segments": {segments!r},')
        for key, array in (
            ("ecce", mce.segments_ecce),
            ("sigma", mce._segments_ecce_std),
            ("scaled", mce.segments_ecce_sigma),
        ):
            print(f'        "{key}": {tuple(float(v) for v in array)!r},')
        summary = (mce.mce_sigma, mce.mce, mce.mce_relative, mce.mce_pvalue, mce.mde)
        summary += (mce.mde_relative,)
        print(f'        "summary": {tuple(float(v) for v in summary)!r},')
        print("    },")
    print("}")


if __name__ == "__main__":
    main()
