"""(score, target) pairs through ``Scores``: peers, the issue 13 example, oracle, errors.

Peer values come from ``tests/references/pairs_peers.py`` (scikit-learn 1.9.1's
``calibration_curve``, torchmetrics 1.9.0's ``binary_calibration_error`` in float64), stored
in ``tests/data/pairs_peer_reference.npz`` with the small inputs; the issue's 200,000-row
example is regenerated here and checked against the SHA-256 the script stored.

The whole module is skipped until ``calibration_toolbox.Scores`` exists.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit

import calibration_toolbox as ct
from calibration_toolbox import ECE, MCE, RMSCE, SCE, calibration_table
from tests import oracle

Scores = getattr(ct, "Scores", None)
pytestmark = pytest.mark.skipif(
    Scores is None, reason="calibration_toolbox.Scores (issue 13) is not built yet"
)

REFERENCE = Path(__file__).resolve().parent / "data" / "pairs_peer_reference.npz"
N_BINS = 15
WRAPPERS = {"l1": ECE, "l2": RMSCE, "max": MCE}
# The argument a bad score array is reported under; the message names one of these.
SCORES_ARGUMENT = r"Scores|`prob`|`scores`"


def load_reference() -> dict[str, np.ndarray]:
    with np.load(REFERENCE, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


REF = load_reference()


def issue_example() -> tuple[np.ndarray, np.ndarray]:
    """Data set (a), rebuilt as pairs_peers.issue_example does; checked by its SHA-256."""
    rng = np.random.default_rng(13)
    confidence = rng.uniform(0.05, 1.0, 200_000)
    correct = (rng.random(200_000) < confidence**2).astype(np.int64)
    digest = hashlib.sha256(confidence.tobytes() + correct.tobytes()).hexdigest()
    assert digest == str(REF["a_sha256"]), "the generator no longer rebuilds data set (a)"
    return confidence, correct


def data_set(name: str) -> tuple[np.ndarray, np.ndarray]:
    if name == "a":
        return issue_example()
    return REF[f"{name}_scores"], REF[f"{name}_labels"]


def torchmetrics_edges() -> np.ndarray:
    """Edges that reproduce torchmetrics' binning with this library's (lo, hi] bins.

    torchmetrics' bins are [t_b, t_(b+1)) on ``torch.linspace`` edges t, with 1.0 alone in a
    16th bin.  For floats, ``t_b <= s`` is ``nextafter(t_b, 0) < s``, so the edges
    ``0, nextafter(t_1, 0), ..., nextafter(t_15, 0), 1`` give the same 16 bins.
    """
    edges = REF["torchmetrics_edges"]
    return np.concatenate([[0.0], np.nextafter(edges[1:], 0.0), [1.0]])


def pair_table(scores, targets, **options):
    return calibration_table(Scores(scores), targets, class_conditional=False, **options)


# --------------------------------------------------------------------------------------
# scikit-learn's calibration_curve


@pytest.mark.parametrize("name", ["a", "b", "c"])
def test_equal_width_bins_match_sklearn_calibration_curve(name):
    # calibration_curve bins by searchsorted(edges[1:-1], s) (side 'left'): (lo, hi] with 0
    # in the first bin, as here, so even the scores on the edges of set (c) agree.
    scores, targets = data_set(name)
    table = pair_table(scores, targets, bins=N_BINS)
    filled = table.counts[0] > 0
    assert_allclose(table.mean_target[0, filled], REF[f"{name}_sklearn_uniform_prob_true"], 1e-12)
    assert_allclose(table.mean_score[0, filled], REF[f"{name}_sklearn_uniform_prob_pred"], 1e-12)


@pytest.mark.parametrize("name", ["a", "b"])
def test_equal_mass_bins_match_sklearn_quantile_when_bins_divide_the_rows(name):
    # sklearn's quantile edges are np.percentile (interpolated) with (lo, hi] bins; ours are
    # order statistics s_(round(n j / B)) with [lo, hi) bins.  The edges differ, but with
    # n % B == 0 and no ties both put the n j / B smallest scores below edge j.
    scores, targets = data_set(name)
    rows = int(REF[f"{name}_quantile_prefix_rows"])
    assert rows % N_BINS == 0
    table = pair_table(scores[:rows], targets[:rows], bins=N_BINS, adaptive_bins=True)
    assert np.all(table.counts[0] == rows // N_BINS)
    prefix = f"{name}_sklearn_quantile_prefix"
    assert_allclose(table.mean_target[0], REF[f"{prefix}_prob_true"], rtol=1e-12)
    assert_allclose(table.mean_score[0], REF[f"{prefix}_prob_pred"], rtol=1e-12)


def test_equal_mass_bins_follow_the_oracle_where_sklearn_quantile_differs():
    # 5,000 rows: 5000 % 15 != 0 and the two quantile rules split differently.
    scores, targets = data_set("b")
    table = pair_table(scores, targets, bins=N_BINS, adaptive_bins=True)
    interior = oracle.equal_mass_edges([(float(s), 1.0) for s in scores], N_BINS)
    assert_array_equal(table.edges[0, 1:-1], interior)
    bin_of = np.searchsorted(interior, scores, side="right")
    assert_array_equal(table.counts[0], np.bincount(bin_of, minlength=N_BINS))
    assert_allclose(table.target_sums[0], np.bincount(bin_of, targets, N_BINS), rtol=1e-12)
    members = [(float(s), float(t), 1.0) for s, t in zip(scores, targets, strict=True)]
    for norm, power in ((1, 1.0), (2, 2.0), ("inf", math.inf)):
        error, _ = oracle.set_error(members, None, True, N_BINS, power)
        error = error if power == math.inf else error ** (1 / power)
        assert_allclose(table.calibration_error(norm), error, rtol=1e-12)
    sklearn_true = REF["b_sklearn_quantile_prob_true"]
    assert not np.allclose(table.mean_target[0], sklearn_true, rtol=1e-6, atol=0)


@pytest.mark.parametrize("name", ["a", "b", "c"])
def test_sklearn_quantile_strategy_is_reproduced_with_its_percentile_edges(name):
    scores, targets = data_set(name)
    # sklearn's own expression: linspace(0, 100, 16) differs in the last place and moves
    # the edges of set (c) that fall on a score.
    edges = np.percentile(scores, np.linspace(0, 1, N_BINS + 1) * 100)
    edges[0], edges[-1] = 0.0, 1.0
    edges = np.unique(edges)  # set (c) has tied percentiles
    table = pair_table(scores, targets, bins=edges)
    filled = table.counts[0] > 0
    assert_allclose(table.mean_target[0, filled], REF[f"{name}_sklearn_quantile_prob_true"], 1e-12)
    assert_allclose(table.mean_score[0, filled], REF[f"{name}_sklearn_quantile_prob_pred"], 1e-12)


# --------------------------------------------------------------------------------------
# torchmetrics' binary calibration error (float64)


@pytest.mark.parametrize("norm", sorted(WRAPPERS))
@pytest.mark.parametrize("name", ["a", "b"])
def test_matches_torchmetrics_binary_calibration_error(name, norm):
    # No score of (a) or (b) lies on an edge or at 1.0, where the conventions differ.
    scores, targets = data_set(name)
    edges = np.linspace(0, 1, N_BINS + 1)
    assert not np.isin(scores, edges).any()
    assert not np.isin(scores, REF["torchmetrics_edges"]).any()
    value = WRAPPERS[norm](Scores(scores), targets)
    assert isinstance(value, float)
    assert_allclose(value, REF[f"{name}_torchmetrics_{norm}"], rtol=1e-12)
    assert_allclose(value, REF[f"{name}_loop_{norm}"], rtol=1e-12)


@pytest.mark.parametrize("norm", sorted(WRAPPERS))
def test_scores_on_edges_and_one_differ_from_torchmetrics(norm):
    # Set (c): every edge of 15 bins, 0.0 and 1.0 repeated.  Here an edge score goes to the
    # lower bin (lo, hi] and 1.0 to the last bin; torchmetrics puts it in the upper bin
    # [lo, hi) and 1.0 alone in a 16th bin.  (Its edge 11, from torch.linspace, is one ulp
    # above np.linspace's, so the score np.linspace(0, 1, 16)[11] stays low there too.)
    scores, targets = data_set("c")
    ours = {"l1": 0.3624242424242424, "l2": 0.4189817502835978, "max": 0.8666666666666667}
    theirs = {"l1": 0.37121212121212127, "l2": 0.43023220181054267, "max": 0.8666666666666667}
    assert_allclose(REF[f"c_torchmetrics_{norm}"], theirs[norm], rtol=1e-15)
    assert_allclose(REF[f"c_loop_{norm}"], ours[norm], rtol=1e-15)
    assert_allclose(WRAPPERS[norm](Scores(scores), targets), ours[norm], rtol=1e-12)
    # The max norm agrees only because its largest gap is in a bin both conventions share.
    assert (ours[norm] == theirs[norm]) == (norm == "max")


@pytest.mark.parametrize("norm", sorted(WRAPPERS))
@pytest.mark.parametrize("name", ["a", "b", "c"])
def test_torchmetrics_is_reproduced_with_explicit_edges(name, norm):
    scores, targets = data_set(name)
    value = WRAPPERS[norm](Scores(scores), targets, bins=torchmetrics_edges())
    assert_allclose(value, REF[f"{name}_torchmetrics_{norm}"], rtol=1e-12)


# --------------------------------------------------------------------------------------
# The example of issue 13


def test_issue_example_through_the_explicit_form():
    # The issue quotes 0.176 for "200,000 confidences uniform on (0.05, 1), correct with
    # probability confidence**2"; default_rng(13) with that recipe gives 0.1725.  The
    # population value is E[c - c^2] = 0.17417 (every bin's gap is positive); the sampling
    # spread over seeds 0..9 is about 0.001 (seed 0 gives 0.1764), so 0.176 was another draw.
    confidence, correct = issue_example()
    value = ECE(Scores(confidence), correct)
    assert_allclose(value, REF["a_loop_l1"], rtol=1e-12)
    assert round(value, 3) == 0.173
    assert abs(value - 0.17416666666666667) < 0.005


@pytest.mark.parametrize("measure", [ECE, RMSCE, MCE])
def test_plain_one_dimensional_input_is_refused_by_top_label_measures(measure):
    confidence, correct = issue_example()
    # What ECE(confidence, correct) silently returned before (the issue's 0.003): the
    # top-label error of [1 - p, p], still available when asked for with two columns.
    two_columns = np.column_stack([1 - confidence, confidence])
    assert_allclose(ECE(two_columns, correct), REF["a_ece_one_dimensional"], rtol=1e-12)
    assert round(float(REF["a_ece_one_dimensional"]), 3) == 0.003
    with pytest.raises(ValueError, match="Scores"):
        measure(confidence, correct)


def test_one_dimensional_input_keeps_meaning_p_of_class_one_elsewhere():
    scores, targets = data_set("b")
    two_columns = np.column_stack([1 - scores, scores])
    assert SCE(scores, targets) == SCE(two_columns, targets)
    assert ct.brier_score(scores, targets) == ct.brier_score(two_columns, targets)
    assert ct.negative_log_likelihood(scores, targets) == ct.negative_log_likelihood(
        two_columns, targets
    )


# --------------------------------------------------------------------------------------
# Properties


@given(
    pairs=st.lists(
        st.tuples(st.floats(0.0, 1.0, allow_nan=False), st.integers(0, 1)),
        min_size=1,
        max_size=60,
    ),
    n_bins=st.integers(1, 20),
)
def test_pairs_equal_class_one_row_of_the_class_wise_table(pairs, n_bins):
    scores = np.array([s for s, _ in pairs])
    targets = np.array([t for _, t in pairs])
    pair = pair_table(scores, targets, bins=n_bins)
    class_wise = calibration_table(
        np.column_stack([1 - scores, scores]),
        targets,
        bins=n_bins,
        class_conditional=True,
        top_k_classes="all",
    )
    atol = 1e-12 * len(scores)
    assert_array_equal(pair.edges[0], class_wise.edges[1])
    assert_allclose(pair.counts[0], class_wise.counts[1], rtol=1e-12, atol=atol)
    assert_allclose(pair.score_sums[0], class_wise.score_sums[1], rtol=1e-12, atol=atol)
    assert_allclose(pair.target_sums[0], class_wise.target_sums[1], rtol=1e-12, atol=atol)


@pytest.mark.parametrize("measure", [ECE, RMSCE, MCE])
def test_integer_weights_equal_duplicated_rows(measure):
    scores, targets = data_set("b")
    weights = np.random.default_rng(7).integers(0, 4, len(scores))
    weighted = measure(Scores(scores), targets, sample_weight=weights)
    repeated = measure(Scores(np.repeat(scores, weights)), np.repeat(targets, weights))
    assert_allclose(weighted, repeated, rtol=1e-12)
    twice = measure(Scores(scores), targets, sample_weight=np.full(len(scores), 2.0))
    doubled = measure(Scores(np.repeat(scores, 2)), np.repeat(targets, 2))
    assert_allclose(twice, doubled, rtol=1e-12)
    assert_allclose(twice, measure(Scores(scores), targets), rtol=1e-12)


@pytest.mark.parametrize("measure", [ECE, RMSCE, MCE])
def test_logits_are_log_odds_of_the_scores(measure):
    log_odds, targets = REF["b_logodds"], REF["b_labels"]
    from_log_odds = measure(Scores(log_odds), targets, logits=True)
    assert_allclose(from_log_odds, measure(Scores(expit(log_odds)), targets), rtol=1e-12)


def test_column_vector_equals_one_dimensional_scores():
    scores, targets = data_set("b")
    assert ECE(Scores(scores[:, None]), targets) == ECE(Scores(scores), targets)


def test_inputs_are_not_modified():
    scores, targets = data_set("b")
    scores, targets = scores.copy(), targets.copy()
    before = scores.copy(), targets.copy()
    ECE(Scores(scores), targets, sample_weight=np.ones(len(scores)))
    assert_array_equal(scores, before[0])
    assert_array_equal(targets, before[1])


# --------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize(
    "scores",
    [
        np.full((4, 2), 0.5),  # two columns: a probability matrix, not one score per row
        np.array([0.2, 1.2, 0.5, 0.4]),  # outside [0, 1] without logits=True
        np.array([0.2, -0.1, 0.5, 0.4]),
        np.array([0.2, np.nan, 0.5, 0.4]),
    ],
    ids=["two-columns", "above-one", "below-zero", "nan"],
)
def test_bad_scores_are_refused(scores):
    with pytest.raises(ValueError, match=SCORES_ARGUMENT):
        ECE(Scores(scores), [0, 1, 1, 0])


def test_labels_outside_zero_one_are_refused():
    with pytest.raises(ValueError, match="`labels`"):
        ECE(Scores([0.2, 0.7, 0.5]), [0, 2, 1])


@pytest.mark.parametrize("measure", [SCE, ct.ACE, ct.TACE])
def test_class_wise_measures_refuse_scores(measure):
    with pytest.raises(ValueError, match="Scores"):
        measure(Scores([0.2, 0.7, 0.5]), [0, 1, 1])


# --------------------------------------------------------------------------------------
# Added with the Scores form: the issue's example by a loop, invariances, the other measures


def test_issue_example_equals_a_loop_over_the_bins():
    # seed 13 gives 0.1725 (the issue's 0.176 was another draw of the same recipe)
    confidence, correct = issue_example()
    edges = np.linspace(0, 1, N_BINS + 1)
    total = 0.0
    for low, high in itertools.pairwise(edges):
        inside = (confidence > low) & (confidence <= high)
        if inside.any():
            gap = abs(correct[inside].mean() - confidence[inside].mean())
            total += inside.sum() / len(confidence) * gap
    value = ECE(Scores(confidence), correct)
    assert_allclose(value, total, rtol=1e-12)
    assert round(value, 4) == 0.1725


@pytest.mark.parametrize(
    "call",
    [
        lambda p, y: ct.GCE(p, y, class_conditional=False),
        lambda p, y: ct.GCE(p, y),  # top_k_classes=1, class-conditional: still top-label
        lambda p, y: calibration_table(p, y, class_conditional=False),
        lambda p, y: ct.ToprCE(p, y, r=1),
        lambda p, y: ECE(p, y, logits=True),
    ],
    ids=["GCE-pooled", "GCE-default", "calibration_table", "ToprCE-r1", "ECE-logits"],
)
def test_every_top_label_call_refuses_plain_one_dimensional_input(call):
    scores, targets = data_set("b")
    with pytest.raises(ValueError, match=r"1-D, which is ambiguous.*Scores.*column_stack"):
        call(scores, targets)
    with pytest.raises(ValueError, match=r"ambiguous"):
        call(scores[:, None], targets)


@pytest.mark.parametrize("measure", [ECE, RMSCE, MCE])
def test_row_order_does_not_matter(measure):
    scores, targets = data_set("b")
    order = np.random.default_rng(3).permutation(len(scores))
    weights = np.random.default_rng(4).random(len(scores))
    assert_allclose(
        measure(Scores(scores[order]), targets[order], sample_weight=weights[order]),
        measure(Scores(scores), targets, sample_weight=weights),
        rtol=1e-12,
    )


@pytest.mark.parametrize("adaptive_bins", [False, True])
def test_float32_scores_equal_their_float64_cast(adaptive_bins):
    scores, targets = data_set("b")
    single = scores.astype(np.float32)
    options = {"bins": N_BINS, "class_conditional": False, "adaptive_bins": adaptive_bins}
    table32 = calibration_table(Scores(single), targets, **options)
    table64 = calibration_table(Scores(single.astype(np.float64)), targets, **options)
    assert_array_equal(table32.counts, table64.counts)
    assert_allclose(table32.score_sums, table64.score_sums, rtol=1e-12)
    assert_array_equal(table32.target_sums, table64.target_sums)
    assert_allclose(ECE(Scores(single), targets), ECE(Scores(single.astype(float)), targets))


def test_equal_mass_bins_with_weights_are_scale_free_and_equal_weights_are_none():
    # Equal-mass positions count mean weights: c * w gives w's value, a constant none's
    # (integer weights equal duplicated rows only where the positions round alike).
    scores, targets = data_set("b")
    weights = np.random.default_rng(9).integers(0, 3, len(scores))
    options = {"class_conditional": False, "adaptive_bins": True, "bins": 10}
    weighted = ct.GCE(Scores(scores), targets, sample_weight=weights, **options)
    scaled = ct.GCE(Scores(scores), targets, sample_weight=weights * 2.0**-30, **options)
    assert_allclose(scaled, weighted, rtol=1e-12)
    constant = ct.GCE(Scores(scores), targets, sample_weight=np.full(len(scores), 0.3), **options)
    assert_allclose(constant, ct.GCE(Scores(scores), targets, **options), rtol=1e-12)


def test_thresholding_drops_the_low_scores():
    scores, targets = data_set("b")
    kept = scores > 0.2
    options = {"class_conditional": False, "bins": 10}
    assert_allclose(
        ct.GCE(Scores(scores), targets, thresholding=0.2, **options),
        ct.GCE(Scores(scores[kept]), targets[kept], **options),
        rtol=1e-12,
    )


def test_brier_and_nll_of_scores_are_the_single_probability_forms():
    scores, targets = data_set("b")
    weights = np.random.default_rng(5).random(len(scores))
    brier = np.average((scores - targets) ** 2, weights=weights)
    assert_allclose(ct.brier_score(Scores(scores), targets, sample_weight=weights), brier, 1e-12)
    two_columns = np.column_stack([1 - scores, scores])
    assert_allclose(
        2 * ct.brier_score(Scores(scores), targets), ct.brier_score(two_columns, targets), 1e-12
    )
    nll = -np.average(
        targets * np.log(scores) + (1 - targets) * np.log(1 - scores), weights=weights
    )
    value = ct.negative_log_likelihood(Scores(scores), targets, sample_weight=weights)
    assert_allclose(value, nll, rtol=1e-12)
    assert_allclose(
        ct.negative_log_likelihood(Scores(scores), targets),
        ct.negative_log_likelihood(two_columns, targets),
        rtol=1e-12,
    )


def test_nll_from_log_odds_is_exact_where_probabilities_round_to_one():
    log_odds = np.array([40.0, -40.0, 3.0])
    targets = np.array([0, 1, 1])
    # expit(40) is 1.0 in float64: from probabilities the first two rows cost -log(eps)
    exact = (
        40.0 + np.log1p(np.exp(-40.0)) + 40.0 + np.log1p(np.exp(-40.0)) + np.log1p(np.exp(-3.0))
    ) / 3
    value = ct.negative_log_likelihood(Scores(log_odds), targets, logits=True)
    assert_allclose(value, exact, rtol=1e-14)
    clipped = ct.negative_log_likelihood(Scores(expit(log_odds)), targets)
    assert clipped < value
    assert_allclose(
        ct.brier_score(Scores(log_odds), targets, logits=True),
        ct.brier_score(Scores(expit(log_odds)), targets),
        rtol=1e-14,
    )


@pytest.mark.parametrize(
    "targets",
    [
        np.array([True, False, True, True]),
        np.array([1, 0, 1, 1], dtype=np.int8),
        np.array([1.0, 0.0, 1.0, 1.0]),
    ],
    ids=["bool", "int8", "float"],
)
def test_targets_may_be_bool_integers_or_integral_floats(targets):
    scores = np.array([0.9, 0.2, 0.6, 0.7])
    assert ECE(Scores(scores), targets, bins=2) == ECE(Scores(scores), [1, 0, 1, 1], bins=2)


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        ([0, 1, 0.5, 1], r"`labels` must be integer 0/1 targets with Scores; got 0\.5"),
        ([0, 1, -1, 1], r"`labels` must be 0/1 targets with Scores; got -1"),
        ([0, 1, 1], r"`labels` must have one entry per row"),
    ],
)
def test_bad_targets_are_named(targets, message):
    with pytest.raises(ValueError, match=message):
        ct.brier_score(Scores([0.2, 0.7, 0.5, 0.4]), targets)


def test_scores_refuse_renormalize_and_check_logits():
    with pytest.raises(ValueError, match=r"renormalize=True.*nothing to renormalise"):
        ECE(Scores([0.2, 0.7]), [0, 1], renormalize=True)
    with pytest.raises(ValueError, match=r"`Scores` must be finite"):
        ECE(Scores([0.2, np.inf]), [0, 1], logits=True)
    with pytest.warns(UserWarning, match=r"logits=True, but every value lies in \[0, 1\]"):
        ECE(Scores([0.2, 0.7]), [0, 1], logits=True)


@pytest.mark.parametrize(
    "call",
    [
        lambda s, y: ct.GCE(s, y),  # class_conditional=True by default
        lambda s, y: calibration_table(s, y),
        lambda s, y: ct.GCE(s, y, class_conditional=False, top_k_classes="all"),
        lambda s, y: ct.ToprCE(s, y, r=1),
    ],
    ids=["GCE-default", "calibration_table-default", "GCE-all", "ToprCE-r1"],
)
def test_class_wise_options_refuse_scores_and_say_what_to_pass(call):
    with pytest.raises(
        ValueError, match=r"need a \(N, K\) probability matrix.*Scores.*class_conditional=False"
    ):
        call(Scores([0.2, 0.7, 0.5]), [0, 1, 1])


def test_functions_without_the_pairs_form_refuse_scores_by_name():
    with pytest.raises(TypeError, match=r"`X` does not take Scores"):
        ct.TemperatureScaling().fit(Scores([0.2, 0.7]), [0, 1])


def test_scores_is_immutable_and_says_what_it_is():
    values = np.array([0.2, 0.7], dtype=np.float32)
    scores = Scores(values)
    assert scores.values is values
    assert Scores(scores).values is values
    with pytest.raises(AttributeError, match="immutable"):
        scores.values = np.zeros(2)
    with pytest.raises(AttributeError, match="immutable"):
        scores.extra = 1
    assert repr(scores) == (
        "Scores(2 float32 values: one score per row, binned as given against a 0/1 target)"
    )
    assert ct.metrics.Scores is Scores
