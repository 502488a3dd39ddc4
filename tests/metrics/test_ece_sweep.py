"""ECESweep's default rule against Roelofs et al.'s released code and a loop oracle.

The reference values were made by the authors' ``caltrain`` (google-research, commit named in
the script) with ``tests/references/ece_sweep_caltrain.py``; the oracle below is written from
their definition, one row and one bin at a time: sort the scores (ties in input order), put
sorted row i in bin ``min(b - 1, floor((i / n) * b))`` (or ``floor(s * b)`` for equal
width), try b = 2, 3, ... up to n - 1 and stop at the first count whose bin accuracies
decrease; the error is the plain binned error with the last monotone count.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from ece_sweep_caltrain import checksums, simulated_sets
from numpy.testing import assert_allclose, assert_array_equal

from calibration_toolbox import ECESweep, ECESweepResult, Scores
from calibration_toolbox.metrics import cumulative
from tests.conftest import REAL_FILES, load_real

REFERENCE_PATH = "data/ece_sweep_caltrain.npz"
SETS = simulated_sets()


@pytest.fixture(scope="module")
def reference(request):
    with np.load(request.path.parents[1] / REFERENCE_PATH, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


# -- the loop oracle ----------------------------------------------------------------------------
def oracle_bins(scores, targets, weights, n_bins, adaptive_bins):
    """Per-bin [weight, weighted score, weighted target] of the rows, sorted by score."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])  # stable: ties in input order
    total = sum(weights)
    sums = [[0.0, 0.0, 0.0] for _ in range(n_bins)]
    before = 0.0
    for i in order:
        # equal mass: the rank fraction (the weight of the rows before over the total),
        # i / n for unit weights; equal width: the score
        value = before / total if adaptive_bins else float(scores[i])
        k = min(n_bins - 1, math.floor(value * n_bins))
        sums[k][0] += weights[i]
        sums[k][1] += weights[i] * float(scores[i])
        sums[k][2] += weights[i] * float(targets[i])
        before += weights[i]
    return [bin_sums for bin_sums in sums if bin_sums[0] > 0]


def oracle_monotone(bins):
    accuracies = [hits / weight for weight, _, hits in bins]
    return all(later >= earlier for earlier, later in itertools.pairwise(accuracies))


def oracle_sweep(scores, targets, adaptive_bins=True, norm=2, weights=None, max_bins=None):
    """(value, b*) of Roelofs et al.'s ECE_sweep, by loops."""
    if weights is None:
        weights = [1.0] * len(scores)
    keep = [i for i in range(len(scores)) if weights[i] > 0]
    scores, targets = [scores[i] for i in keep], [targets[i] for i in keep]
    weights = [float(weights[i]) for i in keep]
    limit = len(scores) - 1 if max_bins is None else min(max_bins, len(scores) - 1)
    chosen = 1
    for n_bins in range(2, limit + 1):
        if not oracle_monotone(oracle_bins(scores, targets, weights, n_bins, adaptive_bins)):
            break
        chosen = n_bins
    bins = oracle_bins(scores, targets, weights, chosen, adaptive_bins)
    gaps = [abs(hits / weight - total / weight) for weight, total, hits in bins]
    if norm == "inf":
        return max(gaps), chosen
    value = sum(weight * gap**norm for (weight, _, _), gap in zip(bins, gaps, strict=True)) / sum(
        weights
    )
    return value ** (1 / norm), chosen


def top_label(prob, labels):
    return prob.max(axis=1), prob.argmax(axis=1) == labels


# -- the authors' numbers -----------------------------------------------------------------------
def test_simulated_sets_are_those_of_the_reference(reference):
    assert_array_equal(checksums(SETS), reference["input_checksums"])


@pytest.mark.parametrize("index", range(len(SETS)))
def test_default_is_the_authors_em_sweep(reference, index):
    scores, targets = SETS[index]
    result = ECESweep(Scores(scores), targets)
    assert result.n_bins == reference["sim_bins"][index]
    assert_allclose(result.value, reference["sim_em"][index], rtol=1e-12, atol=0)
    equal_width = ECESweep(Scores(scores), targets, adaptive_bins=False)
    assert_allclose(equal_width.value, reference["sim_ew"][index], rtol=1e-12, atol=0)
    l1 = ECESweep(Scores(scores), targets, norm=1)
    assert_allclose(l1.value, reference["sim_em_l1"][index], rtol=1e-12, atol=0)


def test_the_earlier_rule_chooses_other_counts_on_the_simulated_sets(reference):
    """The issue's check: 'largest' picks another count than the authors on many sets."""
    earlier = np.array([ECESweep(Scores(s), t, rule="largest").n_bins for s, t in SETS])
    default = np.array([ECESweep(Scores(s), t).n_bins for s, t in SETS])
    assert_array_equal(default, reference["sim_bins"])
    assert np.count_nonzero(earlier != reference["sim_bins"]) == 19


@pytest.mark.parametrize("name", sorted(REAL_FILES))
def test_real_files_match_the_authors(reference, name):
    prob, labels = load_real(name)
    row = list(reference["real_names"]).index(name)
    result = ECESweep(prob, labels)
    assert result.n_bins == reference["real_bins"][row]
    assert_allclose(result.value, reference["real_em"][row], rtol=1e-12, atol=0)
    equal_width = ECESweep(prob, labels, adaptive_bins=False)
    assert_allclose(equal_width.value, reference["real_ew"][row], rtol=1e-12, atol=0)


# -- the loop oracle ----------------------------------------------------------------------------
@pytest.mark.parametrize("index", range(0, len(SETS), 4))
@pytest.mark.parametrize("adaptive_bins", [True, False])
def test_simulated_sets_match_the_oracle(index, adaptive_bins):
    scores, targets = SETS[index]
    value, n_bins = oracle_sweep(list(scores), list(targets), adaptive_bins)
    result = ECESweep(Scores(scores), targets, adaptive_bins=adaptive_bins)
    assert result.n_bins == n_bins
    assert_allclose(result.value, value, rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", ["wideresnet-16-4-cifar-10", "densenet-bc-100-cifar-100"])
@pytest.mark.parametrize("adaptive_bins", [True, False])
def test_real_files_with_tied_confidences_match_the_oracle(name, adaptive_bins):
    # 2,469 rows of WRN-16-4 CIFAR-10 share one confidence, with both outcomes: the rank
    # split cuts the run, the rows keep their input order.
    prob, labels = load_real(name)
    scores, correct = top_label(prob.astype(np.float64), labels)
    value, n_bins = oracle_sweep(list(scores), list(correct), adaptive_bins)
    result = ECESweep(prob, labels, adaptive_bins=adaptive_bins)
    assert result.n_bins == n_bins
    assert_allclose(result.value, value, rtol=1e-12, atol=0)


@pytest.mark.parametrize("norm", [1, 2, "inf"])
@pytest.mark.parametrize("adaptive_bins", [True, False])
def test_tied_scores_match_the_oracle(norm, adaptive_bins):
    rng = np.random.default_rng(5)
    scores = np.round(rng.beta(4, 1.5, 400), 2)
    targets = (rng.random(400) < scores).astype(int)
    value, n_bins = oracle_sweep(list(scores), list(targets), adaptive_bins, norm)
    result = ECESweep(Scores(scores), targets, adaptive_bins=adaptive_bins, norm=norm)
    assert result.n_bins == n_bins
    assert_allclose(result.value, value, rtol=1e-12, atol=0)


@pytest.mark.parametrize("adaptive_bins", [True, False])
def test_weights_match_the_weighted_oracle(adaptive_bins):
    rng = np.random.default_rng(6)
    scores = rng.beta(5, 1.5, 300)
    targets = (rng.random(300) < scores).astype(int)
    weights = rng.integers(0, 4, 300) * rng.random(300)
    value, n_bins = oracle_sweep(list(scores), list(targets), adaptive_bins, 2, list(weights))
    result = ECESweep(Scores(scores), targets, adaptive_bins=adaptive_bins, sample_weight=weights)
    assert result.n_bins == n_bins
    assert_allclose(result.value, value, rtol=1e-12, atol=0)
    ones = ECESweep(Scores(scores), targets, adaptive_bins=adaptive_bins, sample_weight=None)
    assert (
        ECESweep(Scores(scores), targets, adaptive_bins=adaptive_bins, sample_weight=np.ones(300))
        == ones
    )
    kept = weights > 0
    dropped = ECESweep(
        Scores(scores[kept]),
        targets[kept],
        adaptive_bins=adaptive_bins,
        sample_weight=weights[kept],
    )
    assert dropped == result


def test_rank_bins_follow_the_float_rule_where_it_rounds_below_an_integer():
    # (i / n) * b rounds below j for some i with i * b == j * n: n = 44, b = 22 and others.
    for n in (44, 66, 77, 1001):
        positions = np.arange(n)
        pairs = cumulative._SortedPairs(np.linspace(0, 1, n), np.zeros(n, bool), None)
        values = pairs.weight[:-1] / pairs.weight[-1]
        counts = np.arange(2, n)
        lower, upper, owner = cumulative._rank_bins(pairs, values, counts)
        for k, n_bins in enumerate(counts):
            expected = np.minimum(n_bins - 1, np.floor((positions / n) * n_bins)).astype(int)
            bins = np.repeat(np.arange(n_bins), (upper - lower)[owner == k])
            assert_array_equal(bins, expected)


# -- the sweep's edges ---------------------------------------------------------------------------
def test_hand_example_stops_at_the_first_failure():
    scores, targets = Scores([0.1, 0.3, 0.5, 0.7, 0.9, 0.95]), [0, 0, 1, 0, 1, 1]
    # rank bins: 3 -> accuracies 0, 0.5, 1; 4 -> 0, 1, 0.5, 1 (fails): b* = 3
    gaps = [0.2, 0.1, 0.075]
    expected = math.sqrt(sum(2 * gap**2 for gap in gaps) / 6)
    assert ECESweep(scores, targets) == ECESweepResult(pytest.approx(expected, rel=1e-15), 3)
    assert ECESweep(scores, targets, max_bins=2).n_bins == 2
    assert ECESweep(scores, targets, rule="largest", norm=1) == ECESweepResult(0.125, 5)


def test_small_sets_and_the_range_up_to_n_minus_1():
    # the authors try 2 .. n - 1: one or two rows give one bin
    assert ECESweep(Scores([0.7]), [1]).n_bins == 1
    assert ECESweep(Scores([0.2, 0.7]), [0, 1]).n_bins == 1
    assert ECESweep(Scores([0.2, 0.5, 0.7]), [0, 1, 1]).n_bins == 2
    # targets that never decrease in score order: every count is monotone, b* = n - 1
    scores = np.linspace(0.05, 0.95, 500)
    targets = scores > 0.6
    assert ECESweep(Scores(scores), targets).n_bins == 499
    assert ECESweep(Scores(scores), targets, max_bins=40).n_bins == 40
    assert ECESweep(Scores(scores), targets).n_bins == oracle_sweep(list(scores), list(targets))[1]


def test_long_sweeps_cross_several_steps():
    # almost separable targets keep the bins monotone far beyond the first steps
    scores = np.linspace(0.01, 0.99, 2000)
    targets = scores > 0.5
    targets[[990, 991]] = True  # two successes below the threshold: b* = 223
    value, n_bins = oracle_sweep(list(scores), list(targets))
    result = ECESweep(Scores(scores), targets)
    assert n_bins > 100  # past the first step (counts 2 .. 31)
    assert result.n_bins == n_bins
    assert_allclose(result.value, value, rtol=1e-12, atol=0)


def test_tied_rows_keep_their_input_order():
    # four tied scores, two right and two wrong: the 2-bin rank split cuts the run
    scores = Scores([0.6, 0.6, 0.6, 0.6])
    assert ECESweep(scores, [0, 0, 1, 1]).n_bins == 3
    assert ECESweep(scores, [1, 1, 0, 0]).n_bins == 1
    # the earlier rule keeps ties in one bin: row order does not matter
    assert ECESweep(scores, [0, 0, 1, 1], rule="largest") == ECESweep(
        scores, [1, 1, 0, 0], rule="largest"
    )


def test_bad_rule():
    with pytest.raises(ValueError, match="`rule` must be 'roelofs' or 'largest'; got 'first'"):
        ECESweep(Scores([0.2, 0.7]), [0, 1], rule="first")
    with pytest.raises(TypeError, match="`rule` must be 'roelofs' or 'largest'"):
        ECESweep(Scores([0.2, 0.7]), [0, 1], rule=1)


def test_stable_order_of_float32_scores_is_the_stable_argsort():
    rng = np.random.default_rng(7)
    scores = np.round(rng.random(5000), 2).astype(np.float32)  # many ties
    scores[:3] = [-0.0, 0.0, 1.0]
    assert_array_equal(cumulative._stable_order(scores), np.argsort(scores, kind="stable"))
    as_float64 = scores.astype(np.float64)
    assert_array_equal(cumulative._stable_order(as_float64), np.argsort(scores, kind="stable"))
    # float32 confidences of a real file sort as their float64 cast
    prob, labels = load_real("wideresnet-16-4-cifar-10")
    assert ECESweep(prob, labels) == ECESweep(prob.astype(np.float64), labels)
