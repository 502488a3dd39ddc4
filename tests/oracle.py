"""Slow reference implementations written straight from the definitions (SPEC §2–4).

Plain Python loops over samples, classes and bins, exact rational rounding for the
equal-mass positions and ``math.fsum`` for every sum, so that the fast vectorised code can
be compared with them at ``rtol=1e-12``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def score_set(prob, labels, top_k, class_conditional, threshold, weights):
    """List of (group, score, target, weight) entries of the kept scores."""
    n_samples, n_classes = prob.shape
    entries = []
    for i in range(n_samples):
        row = [float(v) for v in prob[i]]
        ranked = sorted(range(n_classes), key=lambda k: (-row[k], k))
        kept = ranked if top_k == "all" else ranked[:top_k]
        for k in kept:
            if threshold > 0 and row[k] <= threshold:
                continue
            group = k if class_conditional else 0
            entries.append((group, row[k], 1.0 if labels[i] == k else 0.0, float(weights[i])))
    return entries


def equal_width_bin(score, edges):
    """Bin b with edges[b] < score <= edges[b + 1]; 0 for score <= edges[1]."""
    for b in range(len(edges) - 1):
        if score <= edges[b + 1]:
            return b
    raise AssertionError("score above the last edge")


def equal_mass_edges(scored, n_bins):
    """Edges e_1..e_(B-1) of a set of (score, weight) pairs with positive weights."""
    scored = sorted(scored)
    total = sum(Fraction(w) for _, w in scored)
    edges = []
    for j in range(1, n_bins):
        q = round(total * j / n_bins)  # Python rounds a Fraction half to even, exactly
        cumulative = Fraction(0)
        chosen = scored[-1][0]
        for score, weight in scored:
            cumulative += Fraction(weight)
            if cumulative > q:
                chosen = score
                break
        edges.append(chosen)
    return edges


def set_error(entries, edges, adaptive, n_bins, p):
    """E of one score set (before the 1/p root)."""
    entries = [e for e in entries if e[2] > 0]
    if not entries:
        return 0.0, False
    if adaptive:
        interior = equal_mass_edges([(s, w) for s, _, w in entries], n_bins)
        bins_of = [sum(1 for e in interior if e <= s) for s, _, _ in entries]
    else:
        bins_of = [equal_width_bin(s, edges) for s, _, _ in entries]
    total = math.fsum(w for _, _, w in entries)
    terms, gaps = [], []
    for b in range(n_bins):
        members = [entries[i] for i in range(len(entries)) if bins_of[i] == b]
        if not members:
            continue
        count = math.fsum(w for _, _, w in members)
        mean_score = math.fsum(w * s for s, _, w in members) / count
        mean_target = math.fsum(w * t for _, t, w in members) / count
        gap = abs(mean_target - mean_score)
        gaps.append(gap)
        terms.append(count / total * gap**p if p != math.inf else 0.0)
    if p == math.inf:
        return max(gaps), True
    return math.fsum(terms), True


def gce(
    prob,
    labels,
    bins=15,
    class_conditional=True,
    adaptive_bins=False,
    top_k_classes=1,
    norm=1,
    thresholding=0.0,
    sample_weight=None,
):
    prob = np.asarray(prob, dtype=np.float64)
    labels = np.asarray(labels)
    n_samples, n_classes = prob.shape
    weights = np.ones(n_samples) if sample_weight is None else np.asarray(sample_weight, float)
    p = {1: 1.0, 2: 2.0, "inf": math.inf}[norm]
    if isinstance(bins, int):
        edges = [float(e) for e in np.linspace(0, 1, bins + 1)]
    else:
        edges = [float(e) for e in bins]
    n_bins = len(edges) - 1
    entries = score_set(prob, labels, top_k_classes, class_conditional, thresholding, weights)
    groups = range(n_classes) if class_conditional else [0]
    errors = []
    for g in groups:
        members = [(s, t, w) for (gg, s, t, w) in entries if gg == g]
        errors.append(set_error(members, edges, adaptive_bins, n_bins, p)[0])
    if p == math.inf:
        return max(errors)
    if class_conditional:
        return (math.fsum(errors) / n_classes) ** (1 / p)
    return errors[0] ** (1 / p)


def brier(prob, labels, sample_weight=None):
    prob = np.asarray(prob, dtype=np.float64)
    weights = np.ones(len(prob)) if sample_weight is None else np.asarray(sample_weight, float)
    losses = [
        math.fsum((float(prob[i, k]) - (labels[i] == k)) ** 2 for k in range(prob.shape[1]))
        for i in range(len(prob))
    ]
    return math.fsum(w * v for w, v in zip(weights, losses, strict=True)) / math.fsum(weights)


def nll_from_logits(logits, labels, sample_weight=None):
    logits = np.asarray(logits, dtype=np.float64)
    weights = np.ones(len(logits)) if sample_weight is None else np.asarray(sample_weight, float)
    losses = []
    for i in range(len(logits)):
        top = max(logits[i])
        log_norm = top + math.log(math.fsum(math.exp(z - top) for z in logits[i]))
        losses.append(log_norm - logits[i, labels[i]])
    return math.fsum(w * v for w, v in zip(weights, losses, strict=True)) / math.fsum(weights)
