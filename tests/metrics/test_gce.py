"""GCE, its wrappers and the per-bin table: hand tables, oracle, peers, real data."""

from __future__ import annotations

import inspect
import itertools
import re

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import softmax

from calibration_toolbox import (
    ACE,
    ECE,
    GCE,
    MCE,
    RMSCE,
    SCE,
    TACE,
    ToprCE,
    _registry,
    calibration_table,
    metrics,
)
from tests import oracle
from tests.conftest import load_real

# --------------------------------------------------------------------------------------
# Data with the cases that break binning code: scores exactly on edges, 0 and 1, ties.


def grid_case(rng, n, k):
    """Rows of small integer counts / their sum: ties, exact zeros, values on edges."""
    counts = rng.integers(0, 4, size=(n, k)).astype(float)
    counts[np.arange(n), rng.integers(0, k, n)] += 1
    counts[: n // 10] = 0
    counts[np.arange(n // 10), rng.integers(0, k, n // 10)] = 1  # one-hot rows: p = 1.0
    return counts / counts.sum(axis=1, keepdims=True), rng.integers(0, k, n)


def dirichlet_case(rng, n, k):
    prob = rng.dirichlet(np.full(k, 0.3), size=n)
    return prob, rng.integers(0, k, n)


def edge_case(rng, n, bins):
    """Binary rows whose positive probability is exactly an edge of linspace(0, 1, bins+1)."""
    edges = np.linspace(0, 1, bins + 1)
    positive = edges[rng.integers(0, bins + 1, n)]
    return np.column_stack([1 - positive, positive]), rng.integers(0, 2, n)


CASES = {
    "grid": lambda rng: grid_case(rng, 120, 4),
    "dirichlet": lambda rng: dirichlet_case(rng, 150, 3),
    "edges": lambda rng: edge_case(rng, 100, 5),
}


# --------------------------------------------------------------------------------------
# A table computed by hand.

HAND_PROB = np.array(
    [
        [0.90, 0.10],  # conf 0.90 correct   -> bin (0.75, 1]
        [0.80, 0.20],  # conf 0.80 wrong     -> bin (0.75, 1]
        [0.25, 0.75],  # conf 0.75 correct   -> bin (0.5, 0.75]  (on the edge: lower bin)
        [0.40, 0.60],  # conf 0.60 wrong     -> bin (0.5, 0.75]
        [0.50, 0.50],  # conf 0.50 (tie, argmax 0) correct -> bin (0.25, 0.5]
    ]
)
HAND_LABELS = np.array([0, 1, 1, 0, 0])


def test_hand_computed_top_label_table():
    table = calibration_table(HAND_PROB, HAND_LABELS, bins=4, class_conditional=False)
    assert_array_equal(table.edges, [[0, 0.25, 0.5, 0.75, 1]])
    assert_array_equal(table.counts, [[0, 1, 2, 2]])
    assert_allclose(table.score_sums, [[0, 0.5, 1.35, 1.7]], rtol=1e-15)
    assert_array_equal(table.target_sums, [[0, 1, 1, 1]])
    assert_allclose(table.mean_score[0, 1:], [0.5, 0.675, 0.85], rtol=1e-15)
    assert np.isnan(table.mean_score[0, 0]) and np.isnan(table.mean_target[0, 0])
    # ECE = (1 |1 - 0.5| + 2 |0.5 - 0.675| + 2 |0.5 - 0.85|) / 5 = (0.5 + 0.35 + 0.7) / 5
    assert_allclose(ECE(HAND_PROB, HAND_LABELS, bins=4), 0.31, rtol=1e-14)
    # MCE = max(0.5, 0.175, 0.35); RMSCE = sqrt((0.25 + 2 * 0.030625 + 2 * 0.1225) / 5)
    assert_allclose(MCE(HAND_PROB, HAND_LABELS, bins=4), 0.5, rtol=1e-14)
    assert_allclose(RMSCE(HAND_PROB, HAND_LABELS, bins=4), np.sqrt(0.55625 / 5), rtol=1e-14)


def test_hand_computed_class_wise_table():
    table = calibration_table(
        HAND_PROB, HAND_LABELS, bins=2, class_conditional=True, top_k_classes="all"
    )
    # class 0 scores 0.9 0.8 0.25 0.4 0.5 targets 1 0 0 1 1: bin [0, .5] = {.25 .4 .5}
    # class 1 scores 0.1 0.2 0.75 0.6 0.5 targets 0 1 1 0 0: bin [0, .5] = {.1 .2 .5}
    assert_array_equal(table.counts, [[3, 2], [3, 2]])
    assert_allclose(table.score_sums, [[1.15, 1.7], [0.8, 1.35]], rtol=1e-15)
    assert_array_equal(table.target_sums, [[2, 1], [1, 1]])
    e0 = (abs(2 - 1.15) + abs(1 - 1.7)) / 5
    e1 = (abs(1 - 0.8) + abs(1 - 1.35)) / 5
    assert_allclose(SCE(HAND_PROB, HAND_LABELS, bins=2), (e0 + e1) / 2, rtol=1e-14)


def test_hand_computed_equal_mass_edges():
    # n = 5, B = 2: q_1 = round(2.5) = 2 (half to even); class 0 sorted .25 .4 .5 .8 .9
    table = calibration_table(
        HAND_PROB, HAND_LABELS, bins=2, adaptive_bins=True, top_k_classes="all"
    )
    assert_allclose(table.edges, [[0, 0.5, 1], [0, 0.5, 1]], rtol=0)
    # scores >= 0.5 go up: class 0 {.25 .4 | .5 .8 .9}, class 1 {.1 .2 | .5 .6 .75}
    assert_array_equal(table.counts, [[2, 3], [2, 3]])
    assert_array_equal(table.target_sums, [[1, 2], [1, 1]])


def test_equal_mass_class_with_no_entry_above_the_threshold_has_empty_bins():
    # class 1 keeps none of .05 .1 .2 above 0.3: its bins hold nothing (they were runs of
    # the dropped entries between linspace edges: counts -2, 1, 1 and a phantom target)
    prob = np.array([[0.95, 0.05], [0.9, 0.1], [0.8, 0.2]])
    labels = np.array([0, 1, 0])
    kwargs = dict(bins=15, adaptive_bins=True, top_k_classes="all", thresholding=0.3)
    table = calibration_table(prob, labels, **kwargs)
    for sums in (table.counts, table.score_sums, table.target_sums):
        assert_array_equal(sums[1], np.zeros(15))
    assert_array_equal(table.counts[0].sum(), 3)
    weighted = calibration_table(prob, labels, sample_weight=np.ones(3), **kwargs)
    assert_array_equal(table.counts, weighted.counts)
    assert_array_equal(table.target_sums, weighted.target_sums)
    assert_allclose(table.score_sums, weighted.score_sums, rtol=1e-15)


def test_one_point_zero_goes_to_the_last_bin_and_zero_to_the_first():
    prob = np.array([[1.0, 0.0], [0.0, 1.0]])
    table = calibration_table(prob, [0, 0], bins=3, top_k_classes="all")
    assert_array_equal(table.counts, [[1, 0, 1], [1, 0, 1]])
    assert table.counts.shape == (2, 3)  # no phantom bin for 1.0


# --------------------------------------------------------------------------------------
# The oracle over the parameter grid.

GRID = list(
    itertools.product(
        [1, 2, "inf"],  # norm
        [False, True],  # class_conditional
        [False, True],  # adaptive_bins
        [1, 2, "all"],  # top_k_classes
        [0.0, 0.1],  # thresholding
    )
)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(("norm", "class_conditional", "adaptive", "top_k", "threshold"), GRID)
def test_matches_loop_oracle(case, norm, class_conditional, adaptive, top_k, threshold):
    prob, labels = CASES[case](np.random.default_rng(7))
    for bins in (1, 5, 15):
        kwargs = dict(
            bins=bins,
            class_conditional=class_conditional,
            adaptive_bins=adaptive,
            top_k_classes=top_k,
            norm=norm,
            thresholding=threshold,
        )
        expected = oracle.gce(prob, labels, **kwargs)
        assert_allclose(GCE(prob, labels, **kwargs), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize(("norm", "class_conditional", "adaptive", "top_k", "threshold"), GRID)
def test_weighted_matches_loop_oracle(case, norm, class_conditional, adaptive, top_k, threshold):
    rng = np.random.default_rng(11)
    prob, labels = CASES[case](rng)
    weights = rng.uniform(0, 2, len(prob))
    weights[::7] = 0.0
    kwargs = dict(
        bins=6,
        class_conditional=class_conditional,
        adaptive_bins=adaptive,
        top_k_classes=top_k,
        norm=norm,
        thresholding=threshold,
    )
    expected = oracle.gce(prob, labels, sample_weight=weights, **kwargs)
    actual = GCE(prob, labels, sample_weight=weights, **kwargs)
    assert_allclose(actual, expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("adaptive", [False, True])
@pytest.mark.parametrize("top_k", [1, "all"])
def test_float32_input_matches_oracle_on_the_float32_values(adaptive, top_k):
    prob, labels = dirichlet_case(np.random.default_rng(3), 300, 5)
    prob32 = prob.astype(np.float32)
    prob32 /= prob32.sum(axis=1, keepdims=True)
    kwargs = dict(bins=10, adaptive_bins=adaptive, top_k_classes=top_k, class_conditional=True)
    expected = oracle.gce(prob32.astype(np.float64), labels, **kwargs)
    assert_allclose(GCE(prob32, labels, **kwargs), expected, rtol=1e-12)


def test_explicit_edges_match_oracle():
    prob, labels = grid_case(np.random.default_rng(5), 200, 3)
    edges = np.array([0, 0.1, 0.25, 0.5, 0.8, 1.0])
    for class_conditional, top_k in [(False, 1), (True, "all"), (True, 2)]:
        kwargs = dict(bins=edges, class_conditional=class_conditional, top_k_classes=top_k)
        expected = oracle.gce(prob, labels, **kwargs)
        assert_allclose(GCE(prob, labels, **kwargs), expected, rtol=1e-12)


def test_wide_softmax_matches_oracle():
    # K = 40 exercises the row-maximum path for large K and the first-bin subtraction.
    rng = np.random.default_rng(9)
    prob = softmax(rng.normal(size=(80, 40)) * 3, axis=1)
    labels = rng.integers(0, 40, 80)
    for kwargs in [
        dict(class_conditional=False, top_k_classes=1),
        dict(class_conditional=True, top_k_classes="all"),
        dict(class_conditional=False, top_k_classes="all", norm=2),
        dict(class_conditional=True, top_k_classes="all", adaptive_bins=True),
    ]:
        assert_allclose(
            GCE(prob, labels, **kwargs), oracle.gce(prob, labels, **kwargs), rtol=1e-12
        )


# --------------------------------------------------------------------------------------
# Wrappers are one-line GCE calls.

WRAPPERS = [
    (ECE, dict(class_conditional=False, adaptive_bins=False, top_k_classes=1, norm=1)),
    (RMSCE, dict(class_conditional=False, adaptive_bins=False, top_k_classes=1, norm=2)),
    (MCE, dict(class_conditional=False, adaptive_bins=False, top_k_classes=1, norm="inf")),
    (ACE, dict(class_conditional=True, adaptive_bins=True, top_k_classes="all", norm=1)),
    (SCE, dict(class_conditional=True, adaptive_bins=False, top_k_classes="all", norm=1)),
    (
        TACE,
        dict(class_conditional=True, adaptive_bins=True, top_k_classes="all", thresholding=0.01),
    ),
]


@pytest.mark.parametrize(
    ("wrapper", "settings"), WRAPPERS, ids=lambda w: getattr(w, "__name__", "")
)
def test_wrappers_are_pinned_to_their_gce_call(wrapper, settings):
    prob, labels = grid_case(np.random.default_rng(1), 200, 4)
    weights = np.random.default_rng(2).uniform(0.5, 1.5, 200)
    for bins in (4, 15):
        expected = GCE(prob, labels, bins=bins, sample_weight=weights, **settings)
        assert wrapper(prob, labels, bins=bins, sample_weight=weights) == expected
        assert_allclose(
            expected,
            oracle.gce(prob, labels, bins=bins, sample_weight=weights, **settings),
            rtol=1e-12,
        )
        assert isinstance(expected, float)


def test_toprce_is_pinned_to_its_gce_call():
    prob, labels = grid_case(np.random.default_rng(1), 200, 4)
    for r in (1, 2, 3):
        expected = GCE(prob, labels, 15, True, False, r, 1, 0.0)
        assert ToprCE(prob, labels, r=r) == expected


def test_toprce_takes_r_by_keyword_only():
    prob, labels = grid_case(np.random.default_rng(1), 200, 4)
    # The third positional argument is `bins`, as in every wrapper; an old call
    # ToprCE(prob, labels, 2), which meant r=2, must fail rather than mean bins=2.
    with pytest.raises(TypeError, match="r"):
        ToprCE(prob, labels, 2)
    assert ToprCE(prob, labels, 5, r=2) == GCE(
        prob, labels, bins=5, class_conditional=True, top_k_classes=2, norm=1
    )


def test_tace_thresholding_and_its_former_name_threshold():
    prob, labels = dirichlet_case(np.random.default_rng(3), 300, 4)
    expected = GCE(
        prob, labels, adaptive_bins=True, top_k_classes="all", thresholding=0.05, norm=1
    )
    assert TACE(prob, labels, thresholding=0.05) == expected
    assert TACE(prob, labels, threshold=0.05) == expected
    # giving both is an error whatever the values, the default 0.01 included
    for thresholding in (0.05, 0.01):
        with pytest.raises(TypeError, match=r"`thresholding` or its synonym `threshold`"):
            TACE(prob, labels, thresholding=thresholding, threshold=0.05)
    with pytest.raises(TypeError):
        TACE(prob, labels, 15, 0.05)  # the threshold is keyword-only


# Every public metric of the registry (a new one cannot escape the docstring contract).
PUBLIC_METRICS = [row.function for row in _registry.public()]


@pytest.mark.parametrize("metric", PUBLIC_METRICS, ids=lambda f: f.__name__)
def test_docstrings_describe_every_parameter_and_the_return_value(metric):
    doc = inspect.getdoc(metric)  # without the indentation that Python 3.13 strips itself
    assert "\nReturns\n-------\n" in doc
    assert "\nReferences\n----------\n" in doc or metric is calibration_table
    assert "\nExamples\n--------\n>>> " in doc
    assert not re.search(r"^ *\{[a-z_]+\}$", doc, re.MULTILINE)  # every token replaced
    for name in inspect.signature(metric).parameters:
        assert re.search(rf"\n([a-z_]+, )*{name}(, [a-z_]+)*( :|\n)", doc), name


def test_expected_calibration_error_and_metrics_namespace():
    prob, labels = dirichlet_case(np.random.default_rng(4), 100, 3)
    assert metrics.expected_calibration_error(prob, labels) == ECE(prob, labels)
    for name in ("brier_score", "negative_log_likelihood", "expected_calibration_error"):
        assert callable(getattr(metrics, name))


def test_bin_alias_and_logits_option():
    prob, labels = dirichlet_case(np.random.default_rng(4), 100, 3)
    assert GCE(prob, labels, bin=7) == GCE(prob, labels, bins=7)
    logits = np.log(prob) + 3.0  # any per-row shift: same softmax
    assert_allclose(ECE(logits, labels, logits=True), ECE(prob, labels), rtol=1e-12)
    with pytest.raises(TypeError, match="not both"):
        GCE(prob, labels, bins=5, bin=7)


@pytest.mark.parametrize("bins", [15, np.int64(15), 10, [0, 0.5, 1]])
def test_giving_both_bins_and_bin_is_an_error_whatever_the_values(bins):
    prob, labels = dirichlet_case(np.random.default_rng(4), 100, 3)
    # GCE(p, y, bins=15, bin=10) used to give the value for 10 bins
    with pytest.raises(TypeError, match=r"pass `bins` or its synonym `bin`, not both"):
        GCE(prob, labels, bins=bins, bin=10)
    with pytest.raises(TypeError, match=r"not both"):
        GCE(prob, labels, bins, bin=10)  # positional bins too
    assert GCE(prob, labels, bin=bins) == GCE(prob, labels, bins=bins)


def test_binary_one_dimensional_input_is_the_positive_class():
    rng = np.random.default_rng(8)
    positive = rng.uniform(size=200)
    labels = rng.integers(0, 2, 200)
    two_columns = np.column_stack([1 - positive, positive])
    for wrapper in (SCE, ACE):
        assert wrapper(positive, labels) == wrapper(two_columns, labels)
        assert wrapper(positive[:, None], labels) == wrapper(two_columns, labels)
    # 1-D logits are the positive-class logit: softmax([0, z]) = [1 - sigmoid, sigmoid]
    z = np.log(positive / (1 - positive))
    assert_allclose(SCE(z, labels, logits=True), SCE(positive, labels), rtol=1e-12)
    logit_columns = np.column_stack([np.zeros_like(z), z])
    assert_allclose(ECE(logit_columns, labels, logits=True), ECE(two_columns, labels), 1e-12)


@pytest.mark.parametrize("wrapper", [ECE, RMSCE, MCE])
def test_binary_one_dimensional_input_is_ambiguous_for_top_label_measures(wrapper):
    rng = np.random.default_rng(8)
    positive = rng.uniform(size=200)
    labels = rng.integers(0, 2, 200)
    fixes = r"Scores\(p\), y\).*np\.column_stack\(\[1 - p, p\]\), y\)"
    for prob in (positive, positive[:, None]):
        with pytest.raises(ValueError, match=r"`prob` is 1-D, which is ambiguous.*" + fixes):
            wrapper(prob, labels)
    z = np.log(positive / (1 - positive))
    with pytest.raises(ValueError, match=r"Scores\(z\), y, logits=True\).*zeros_like\(z\)"):
        wrapper(z, labels, logits=True)


def test_inputs_are_not_modified_and_lists_work():
    prob, labels = grid_case(np.random.default_rng(6), 60, 3)
    weights = np.linspace(0.1, 1, 60)
    copies = prob.copy(), labels.copy(), weights.copy()
    value = GCE(prob, labels, adaptive_bins=True, top_k_classes="all", sample_weight=weights)
    assert_array_equal(prob, copies[0])
    assert_array_equal(labels, copies[1])
    assert_array_equal(weights, copies[2])
    assert (
        GCE(
            prob.tolist(),
            labels.tolist(),
            adaptive_bins=True,
            top_k_classes="all",
            sample_weight=weights.tolist(),
        )
        == value
    )


def test_objects_with_array_interface_are_accepted():
    class Tensor:  # stands in for a CPU torch / JAX array
        def __init__(self, array):
            self.array = array

        def __array__(self, dtype=None, copy=None):
            return self.array

    prob, labels = dirichlet_case(np.random.default_rng(4), 50, 3)
    assert ECE(Tensor(prob), Tensor(labels)) == ECE(prob, labels)


def test_integral_float_labels_are_accepted():
    prob, labels = dirichlet_case(np.random.default_rng(4), 50, 3)
    assert ECE(prob, labels.astype(float)) == ECE(prob, labels)


def test_empty_class_counts_in_the_class_average():
    prob = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1]])
    labels = np.array([0, 1, 1])
    # with ToprCE(1) class 2 is never predicted: it contributes 0 and still counts in K = 3
    table = calibration_table(prob, labels, bins=2, top_k_classes=1)
    assert table.set_sizes[2] == 0
    assert_allclose(
        ToprCE(prob, labels, r=1, bins=2), oracle.gce(prob, labels, bins=2), rtol=1e-14
    )


def test_table_sums_add_up_over_batches():
    prob, labels = dirichlet_case(np.random.default_rng(12), 400, 4)
    whole = calibration_table(prob, labels, top_k_classes="all")
    first = calibration_table(prob[:150], labels[:150], top_k_classes="all")
    second = calibration_table(prob[150:], labels[150:], top_k_classes="all")
    for field in ("counts", "score_sums", "target_sums"):
        assert_allclose(
            getattr(first, field) + getattr(second, field),
            getattr(whole, field),
            rtol=1e-12,
            atol=1e-12,
        )


# --------------------------------------------------------------------------------------
# Peers and published numbers.
#
# Values made by tests/references/gce_real_data_peers.py (peers never a dependency of this
#   project; versions pinned in tests/references/requirements.txt: torchmetrics 1.9.0,
#   netcal 1.4.0, uncertainty-calibration 0.1.4, scikit-learn 1.9.1, uncertainty-metrics
#   0.0.81; how to rerun it: tests/references/README.md)
# on the float32 predictions cast to float64 (numpy 2.4.6, scipy 1.17.1):
#   um  = uncertainty_metrics.numpy: ece(y, p, num_bins=15); sce(...); ace(...);
#         tace(..., threshold=0.01)                        (labels first)
#   nc  = netcal.metrics.MCE(bins=15).measure(p, y)
#   km  = calibration.get_ece(p, y, num_bins=15)           (Kumar et al.)
#   skl = sklearn.metrics.log_loss(y, p, labels=range(K))
PEERS = {
    "lenet-5-cifar-10": dict(
        ECE=0.1078878824308515,
        SCE=0.024060109071923932,
        ACE=0.022558293515632183,
        TACE=0.042999153317251494,
        MCE=0.1858213860541582,
        NLL=1.3698677264742765,
    ),
    "wideresnet-16-4-cifar-10": dict(
        ECE=0.05371629542112348,
        SCE=0.0124274661142935,
        ACE=0.01068180880124894,
        TACE=0.07117635750080076,
        MCE=0.26238924264907837,
        NLL=0.37816958639618825,
    ),
    "lenet-5-cifar-100": dict(
        ECE=0.0148784734910354,
        SCE=0.0035696275719116232,
        ACE=0.004329559965238505,
        TACE=0.01565770626854133,
        MCE=0.30626956621805823,
        NLL=3.8130655996930467,
    ),
    "wideresnet-16-4-cifar-100": dict(
        ECE=0.05806039241105322,
        SCE=0.00213674590074957,
        ACE=0.0010620799105062896,
        TACE=0.04599247435338636,
        MCE=0.13359747370243713,
        NLL=0.956449212178645,
    ),
    "densenet-bc-100-cifar-100": dict(
        ECE=0.14215282413810493,
        SCE=0.003434283085426057,
        ACE=0.0010047822292941495,
        TACE=0.10747412857196045,
        MCE=0.3131615077576987,
        NLL=1.2256269107316158,
    ),
    "vgg16-cifar-10": dict(
        ECE=0.03978006685674193,
        SCE=0.008836746006085227,
        ACE=0.0038926082154984833,
        TACE=0.05146789075486119,
        MCE=0.28568567803516487,
        NLL=0.2570648058935896,
    ),
}


@pytest.mark.parametrize("name", sorted(PEERS))
def test_real_predictions_match_peer_libraries(name):
    from calibration_toolbox import negative_log_likelihood

    prob, labels = load_real(name)
    expected = PEERS[name]
    ours = dict(
        ECE=ECE(prob, labels),
        SCE=SCE(prob, labels),
        ACE=ACE(prob, labels),
        TACE=TACE(prob, labels),
        MCE=MCE(prob, labels),
        NLL=negative_log_likelihood(prob.astype(np.float64), labels),
    )
    for metric, value in expected.items():
        # The peers bin [lo, hi) (uncertainty_metrics with 1.0 in an extra bin).  These
        # files have no score on an interior edge, and where 1.0 occurs its bin's gap has
        # the sign of the rest of the last bin, so the L1 sums agree to rounding; the L2
        # norm does not (next test).
        assert_allclose(ours[metric], value, rtol=1e-13, err_msg=metric)


def test_torchmetrics_l2_differs_by_its_phantom_bin_for_one_point_zero():
    # torchmetrics 1.9.0 multiclass_calibration_error(..., n_bins=15, norm="l2") (printed by
    # tests/references/gce_real_data_peers.py) on
    # wideresnet-16-4-cifar-10 gives 0.07778624445199966: it bins [lo, hi) and puts the
    # 2469 confidences equal to 1.0 in a 16th bin of their own.  Our (lo, hi] convention
    # keeps them in the last bin; an extra edge just below 1 reproduces torchmetrics.
    prob, labels = load_real("wideresnet-16-4-cifar-10")
    ours = RMSCE(prob, labels)
    phantom = np.append(np.linspace(0, 1, 16)[:-1], [np.nextafter(1.0, 0), 1.0])
    assert_allclose(ours, 0.07490146313718737, rtol=1e-12)
    # torchmetrics casts to float32 and sums in float32: agreement to ~4e-5 relative.
    assert_allclose(RMSCE(prob, labels, bins=phantom), 0.07778624445199966, rtol=1e-4)


@pytest.mark.parametrize(
    "settings",
    [
        dict(class_conditional=False),
        dict(top_k_classes="all"),
        dict(top_k_classes="all", adaptive_bins=True),
        dict(top_k_classes="all", adaptive_bins=True, thresholding=0.05),
        dict(top_k_classes=2, norm=2),
    ],
)
def test_memory_layouts_and_dtypes_give_the_same_value(settings):
    prob, labels = dirichlet_case(np.random.default_rng(13), 300, 4)
    expected = GCE(prob, labels, **settings)
    fortran = np.asfortranarray(prob)
    strided = np.repeat(prob, 2, axis=1)[:, ::2]  # a non-contiguous view
    assert GCE(fortran, labels, **settings) == expected
    assert GCE(strided, labels, **settings) == expected
    half = prob.astype(np.float16)  # checked at float16 precision, computed as float32
    assert_allclose(
        GCE(half, labels, **settings),
        oracle.gce(half.astype(np.float64), labels, **settings),
        rtol=1e-12,
    )
    wide = np.random.default_rng(14).dirichlet(np.full(50, 0.2), size=100)
    wide_labels = np.random.default_rng(15).integers(0, 50, 100)
    assert GCE(np.asfortranarray(wide), wide_labels, **settings) == GCE(
        wide, wide_labels, **settings
    )


def _float32_rows(n, k, seed):
    """Float32 probabilities (random rows divided by their sums) and labels."""
    rng = np.random.default_rng(seed)
    prob = rng.random((n, k), dtype=np.float32) ** 4
    prob /= prob.sum(axis=1, keepdims=True)
    return prob, rng.integers(0, k, n)


@pytest.mark.parametrize(
    "settings",
    [
        dict(class_conditional=False),
        dict(class_conditional=False, norm="inf", thresholding=0.3),
        dict(class_conditional=True),  # top label per predicted class
        dict(top_k_classes="all"),  # SCE
        dict(top_k_classes="all", thresholding=0.01),
    ],
)
@pytest.mark.parametrize("weighted", [False, True])
def test_equal_width_tables_take_memory_that_does_not_grow_with_rows(settings, weighted):
    # 800,000 x 10 float32 is 32 MB; the tables are binned row block by row block, so the
    # peak extra memory is a few blocks, under 12 MiB (it was 0.85x the input for ECE, 27
    # MiB, and 0.5x for SCE).
    import tracemalloc

    prob, labels = _float32_rows(800_000, 10, 21)
    weights = np.random.default_rng(22).random(len(prob)) if weighted else None
    GCE(prob[:1000], labels[:1000], **settings)  # first-call set-up out of the figure
    tracemalloc.start()
    try:
        GCE(prob, labels, sample_weight=weights, **settings)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 12 * 2**20


def test_blocked_tables_equal_the_table_of_all_rows_at_once():
    # Rows binned block by block add up to the sums of the whole score set, bit for bit:
    # the confidences taken by hand and binned as pairs in one call are the same table.
    from calibration_toolbox import Scores

    prob, labels = _float32_rows(40_000, 10, 23)
    prob[:50] = 0.0
    prob[:50, :2] = 0.5  # tied rows, the argmax being the first
    weights = np.random.default_rng(24).random(len(prob))
    correct = (np.argmax(prob, axis=1) == labels).astype(int)
    for sample_weight in (None, weights):
        ours = calibration_table(
            prob, labels, class_conditional=False, sample_weight=sample_weight
        )
        pairs = calibration_table(
            Scores(prob.max(axis=1)), correct, class_conditional=False, sample_weight=sample_weight
        )
        for field in ("counts", "score_sums", "target_sums"):
            assert_array_equal(getattr(ours, field), getattr(pairs, field))


@pytest.mark.parametrize("metric", [ECE, SCE])
def test_a_bad_row_past_the_first_blocks_is_reported_with_its_number(metric):
    prob, labels = _float32_rows(60_000, 10, 25)
    prob[45_678] *= 0.9
    with pytest.raises(ValueError, match=r"row 45678 sums to 0\.8999"):
        metric(prob, labels)
    # the values of `prob` are checked before the other arguments, as they always were
    with pytest.raises(ValueError, match=r"row 45678 sums to 0\.8999"):
        metric(prob, labels, bins=0)
    prob[45_678, 3] = np.nan
    with pytest.raises(ValueError, match=r"`prob` must not contain NaN; row 45678 does"):
        metric(prob, labels, sample_weight=np.ones(3))
