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
    """Edges e_1..e_(B-1) of a set of (score, weight) pairs with positive weights.

    The unweighted position round_half_even(n j / B) of n pairs, in units of the mean
    weight: the edge is the pair whose weight interval holds that many mean weights.
    """
    scored = sorted(scored)
    total = sum(Fraction(w) for _, w in scored)
    edges = []
    for j in range(1, n_bins):
        # Python rounds a Fraction half to even, exactly
        q = round(Fraction(len(scored) * j, n_bins)) * total / len(scored)
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


def _bins_of(entries, edges, adaptive, n_bins):
    """The bin of each (score, target, weight) entry, as in ``set_error``."""
    if adaptive:
        interior = equal_mass_edges([(s, w) for s, _, w in entries], n_bins)
        return [sum(1 for e in interior if e <= s) for s, _, _ in entries]
    return [equal_width_bin(s, edges) for s, _, _ in entries]


def _bin_means(entries, edges, adaptive, n_bins):
    """(count, mean score, mean target) of each non-empty bin, and the set's total weight."""
    entries = [e for e in entries if e[2] > 0]
    bins_of = _bins_of(entries, edges, adaptive, n_bins) if entries else []
    rows = []
    for b in range(n_bins):
        members = [entries[i] for i in range(len(entries)) if bins_of[i] == b]
        if not members:
            continue
        count = math.fsum(w for _, _, w in members)
        rows.append(
            (
                count,
                math.fsum(w * s for s, _, w in members) / count,
                math.fsum(w * t for _, t, w in members) / count,
            )
        )
    return rows, math.fsum(w for _, _, w in entries)


def debiased_set_error(entries, edges, adaptive, n_bins):
    """max(0, sum_b (n_b/n) (gap_b^2 - acc_b (1 - acc_b) / (n_b - 1))), bins n_b < 2 as 0."""
    rows, total = _bin_means(entries, edges, adaptive, n_bins)
    terms = [
        count / total * ((acc - conf) ** 2 - acc * (1 - acc) / (count - 1))
        for count, conf, acc in rows
        if count >= 2
    ]
    return max(math.fsum(terms), 0.0)


def _edges_of(bins):
    if isinstance(bins, int):
        return [float(e) for e in np.linspace(0, 1, bins + 1)]
    return [float(e) for e in bins]


def _sets(prob, labels, top_k_classes, class_conditional, sample_weight):
    prob = np.asarray(prob, dtype=np.float64)
    n_samples, n_classes = prob.shape
    weights = np.ones(n_samples) if sample_weight is None else np.asarray(sample_weight, float)
    entries = score_set(prob, labels, top_k_classes, class_conditional, 0.0, weights)
    groups = range(n_classes) if class_conditional else [0]
    return [[(s, t, w) for (g, s, t, w) in entries if g == k] for k in groups]


def debiased_gce(
    prob,
    labels,
    bins=15,
    class_conditional=True,
    adaptive_bins=False,
    top_k_classes=1,
    sample_weight=None,
):
    """GCE(norm=2, debias=True): each set clipped at 0, averaged over K, square root."""
    edges = _edges_of(bins)
    sets = _sets(prob, labels, top_k_classes, class_conditional, sample_weight)
    errors = [debiased_set_error(s, edges, adaptive_bins, len(edges) - 1) for s in sets]
    return math.sqrt(math.fsum(errors) / len(errors))


def confidence_parts(prob, labels, bins=15, adaptive_bins=False, sample_weight=None):
    """(OCE, UCE): sum_b (n_b/n) max(conf_b - acc_b, 0) and max(acc_b - conf_b, 0)."""
    edges = _edges_of(bins)
    (pooled,) = _sets(prob, labels, 1, False, sample_weight)
    rows, total = _bin_means(pooled, edges, adaptive_bins, len(edges) - 1)
    over = math.fsum(n / total * max(conf - acc, 0.0) for n, conf, acc in rows)
    under = math.fsum(n / total * max(acc - conf, 0.0) for n, conf, acc in rows)
    return over, under


def top_label_ece(prob, labels, bins=15, sample_weight=None):
    """Gupta & Ramdas: per predicted class, the ECE of its rows, weighted by N_k / N."""
    edges = _edges_of(bins)
    sets = _sets(prob, labels, 1, True, sample_weight)
    grand_total = math.fsum(w for s in sets for _, _, w in s)
    terms = []
    for members in sets:
        rows, total = _bin_means(members, edges, False, len(edges) - 1)
        if rows:
            ece = math.fsum(n / total * abs(acc - conf) for n, conf, acc in rows)
            terms.append(total / grand_total * ece)
    return math.fsum(terms)
