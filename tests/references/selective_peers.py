"""Peer values of the selective-prediction measures: torch-uncertainty and MAPIE.

Prints the literals ``TORCH_UNCERTAINTY`` and ``MAPIE`` of
``tests/metrics/test_selective.py`` (on :func:`synthetic_sets`, which the test imports) and
the "Selective prediction" table of docs/guide/metrics.md (the real files).  Rerun from the
repository root in a scratch environment of Python 3.11::

    python3.11 -m venv selective-venv
    selective-venv/bin/pip install torch==2.13.0            # the CPU build, first
    selective-venv/bin/pip install torch-uncertainty==0.13.0 torchmetrics==1.9.0 \\
        mapie==1.6.0
    PYTHONPATH=. selective-venv/bin/python tests/references/selective_peers.py [DATA]

Versions of the stored run: python 3.11.7, numpy 2.4.6, torch 2.13.0+cpu,
torch-uncertainty 0.13.0, torchmetrics 1.9.0, mapie 1.6.0, scikit-learn 1.9.1.

- torch-uncertainty: ``AURC`` and ``AUGRC`` of
  ``torch_uncertainty/metrics/classification/risk_coverage.py`` (loaded from its file: the
  package's ``__init__`` imports ``lightning``), ``update(probs, targets)`` with the two
  columns ``[1 - s, s]`` of each score ``s`` (its top label is then ``s`` where ``s >=
  0.5``: the sets hold scores in [0.5, 1) and targets "the top label is right"), then
  ``compute()``.  torch's default dtype is set to float64 first, so that its coverages
  ``arange(1, n + 1) / n`` and error rates are float64 (in float32 they agree to 1e-7
  only).  Its ``torch.argsort(descending=True)`` is not stable: the sets it is compared on
  have no tied scores.
- MAPIE: ``mapie.metrics.uncertainty.auarc(correct, s)`` (a stable sort: tied scores in
  row order, as the library's row-by-row conventions) and ``auroc(correct, s)``
  (scikit-learn's ``roc_auc_score``).

fd-shifts (the default convention) is not on PyPI: tests/metrics/test_selective.py holds a
loop oracle of its ``RiskCoverageStats`` (``selective_risk_stats`` and
``generalized_risk_stats``, then ``-np.trapz(risks, coverages)``) instead.
"""

from __future__ import annotations

import importlib.util

import numpy as np
from _common import REAL_FILES, data_dir, load_real, versions

MODULE = "metrics/classification/risk_coverage.py"


def synthetic_sets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Seeded (scores float64 in [0.5, 1), correct int64) sets, by name.

    ``distinct``: 2,000 scores uniform, correct with probability the score
    (``default_rng(301)``); ``overconfident``: 500 scores uniform, correct with probability
    ``0.5 + 0.6 (s - 0.5)`` (``default_rng(302)``); ``small``: 7 scores (``default_rng(303)``);
    ``tied``: 1,000 scores rounded to 2 decimals, correct with probability the score
    (``default_rng(304)``; MAPIE only).
    """
    sets = {}
    rng = np.random.default_rng(301)
    scores = rng.uniform(0.5, 1.0, size=2000)
    sets["distinct"] = (scores, (rng.uniform(size=2000) < scores).astype(np.int64))
    rng = np.random.default_rng(302)
    scores = rng.uniform(0.5, 1.0, size=500)
    correct = rng.uniform(size=500) < 0.5 + 0.6 * (scores - 0.5)
    sets["overconfident"] = (scores, correct.astype(np.int64))
    rng = np.random.default_rng(303)
    scores = rng.uniform(0.5, 1.0, size=7)
    sets["small"] = (scores, np.array([1, 0, 1, 1, 0, 1, 0], dtype=np.int64))
    rng = np.random.default_rng(304)
    scores = np.round(rng.uniform(0.5, 0.99, size=1000), 2)
    sets["tied"] = (scores, (rng.uniform(size=1000) < scores).astype(np.int64))
    return sets


def _risk_coverage_module():
    spec = importlib.util.find_spec("torch_uncertainty")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("torch-uncertainty is not installed in this environment")
    path = f"{next(iter(spec.submodule_search_locations))}/{MODULE}"
    module_spec = importlib.util.spec_from_file_location("tu_risk_coverage", path)
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


def _torch_uncertainty(module, prob: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    import torch

    values = {}
    for name in ("AURC", "AUGRC"):
        metric = getattr(module, name)()
        metric.update(torch.as_tensor(prob), torch.as_tensor(labels))
        values[name] = float(metric.compute())
    return values


def _mapie(scores: np.ndarray, correct: np.ndarray) -> dict[str, float]:
    from mapie.metrics.uncertainty import auarc, auroc

    return {"auarc": float(auarc(correct, scores)), "auroc": float(auroc(correct, scores))}


def main() -> None:
    import torch

    torch.set_default_dtype(torch.float64)
    module = _risk_coverage_module()
    from importlib.metadata import version

    print(versions("numpy", "torch", "torchmetrics", "mapie", "sklearn"))
    print(f"torch-uncertainty {version('torch-uncertainty')}")
    print("TORCH_UNCERTAINTY = {")
    sets = synthetic_sets()
    for name, (scores, correct) in sets.items():
        if name == "tied":
            continue
        values = _torch_uncertainty(module, np.column_stack([1 - scores, scores]), correct)
        print(f"    {name!r}: {values!r},")
    print("}")
    print("MAPIE = {")
    for name, (scores, correct) in sets.items():
        print(f"    {name!r}: {_mapie(scores, correct)!r},")
    print("}")
    folder = data_dir()
    print("real files (float32 probabilities; torch's unstable sort orders tied rows):")
    for name in REAL_FILES:
        prob, labels = load_real(folder, name)
        tu = _torch_uncertainty(module, prob.astype(np.float64), labels)
        correct = (prob.argmax(axis=1) == labels).astype(np.int64)
        mapie = _mapie(prob.max(axis=1).astype(np.float64), correct)
        print(f"    {name!r}: { ({**tu, **mapie})!r},")


if __name__ == "__main__":
    main()
