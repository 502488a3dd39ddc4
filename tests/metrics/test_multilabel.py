"""Multi-label measures against loop oracles, peers, and the refusals of the other reading."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from multilabel_peers import N_BINS, synthetic_sets
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit, softmax

import calibration_toolbox as ct
from calibration_toolbox import _validation as iv
from calibration_toolbox import (
    multilabel_brier_score,
    multilabel_calibration_error,
    multilabel_calibration_table,
    multilabel_log_loss,
)

# python tests/references/multilabel_peers.py (scikit-learn 1.9.1, torchmetrics 1.9.0)
MULTILABEL_PEERS = {
    "small": {
        "brier": 0.16672638243709234,
        "brier_weighted": 0.18480039270793547,
        "log_loss": 0.5063852559137925,
        "log_loss_weighted": 0.5551082816512599,
        "ece_macro": 0.14530081844878726,
        "ece_micro": 0.11807648824067732,
    },
    "wide": {
        "brier": 0.18915960579084712,
        "brier_weighted": 0.18951964140693794,
        "log_loss": 0.6168583994613195,
        "log_loss_weighted": 0.6142848363824716,
        "ece_macro": 0.06807530127324533,
        "ece_micro": 0.04698500438205154,
    },
}


# -- loop oracles -----------------------------------------------------------------------------
def _oracle_bin(score, edges):
    """Bin ``(lo, hi]`` of one score, 0 in the first bin: the contract, one score at a time."""
    for b in range(len(edges) - 1):
        if score <= edges[b + 1]:
            return b
    return len(edges) - 2


def _oracle_set_error(scores, targets, weights, edges, p):
    """One label's (or the pooled) binned error, by a loop over the entries."""
    n_bins = len(edges) - 1
    count, score_sum, target_sum = np.zeros(n_bins), np.zeros(n_bins), np.zeros(n_bins)
    for s, y, w in zip(scores, targets, weights, strict=True):
        b = _oracle_bin(s, edges)
        count[b] += w
        score_sum[b] += w * s
        target_sum[b] += w * y
    gaps = [abs(target_sum[b] - score_sum[b]) / count[b] for b in range(n_bins) if count[b]]
    if p == np.inf:
        return max(gaps)
    weights_of = [count[b] / count.sum() for b in range(n_bins) if count[b]]
    return sum(w * g**p for w, g in zip(weights_of, gaps, strict=True))


def oracle_ece(prob, labels, bins, p=1, average="macro", weights=None):
    n, k = prob.shape
    weights = np.ones(n) if weights is None else weights
    edges = np.linspace(0, 1, bins + 1)
    if average == "micro":
        error = _oracle_set_error(prob.ravel(), labels.ravel(), np.repeat(weights, k), edges, p)
        return error if p == np.inf else error ** (1 / p)
    errors = [_oracle_set_error(prob[:, j], labels[:, j], weights, edges, p) for j in range(k)]
    return max(errors) if p == np.inf else (sum(errors) / k) ** (1 / p)


def oracle_pairs_mean(prob, labels, loss, weights=None):
    n, k = prob.shape
    weights = np.ones(n) if weights is None else weights
    total = sum(weights[i] * loss(prob[i, j], labels[i, j]) for i in range(n) for j in range(k))
    return total / (weights.sum() * k)


def _problem(n=300, k=5, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    prob = rng.uniform(size=(n, k)).astype(dtype)
    labels = (rng.uniform(size=(n, k)) < prob).astype(int)
    return prob, labels, rng.uniform(0.0, 3.0, size=n)


# -- values -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("norm", [1, 2, "inf"])
@pytest.mark.parametrize("average", ["macro", "micro"])
@pytest.mark.parametrize("weighted", [False, True])
def test_calibration_error_matches_the_loop_oracle(dtype, norm, average, weighted):
    prob, labels, weights = _problem(dtype=dtype)
    weights = weights if weighted else None
    p = np.inf if norm == "inf" else norm
    value = multilabel_calibration_error(
        prob, labels, bins=7, norm=norm, average=average, sample_weight=weights
    )
    expected = oracle_ece(prob.astype(np.float64), labels, 7, p, average, weights)
    assert isinstance(value, float)
    assert_allclose(value, expected, rtol=1e-12)


def test_scores_on_the_edges_go_to_the_lower_bin():
    # 0.2, 0.4, ... are edges of 5 bins: each goes to the bin below it; 0 and 1 to the ends
    prob = np.array([[0.0, 0.2], [0.4, 0.6], [0.8, 1.0], [0.3, 0.5]])
    labels = np.array([[0, 1], [1, 0], [1, 1], [0, 0]])
    table = multilabel_calibration_table(prob, labels, bins=5)
    assert_array_equal(table.counts, [[1, 2, 0, 1, 0], [1, 0, 2, 0, 1]])
    assert_array_equal(table.target_sums, [[0, 1, 0, 1, 0], [1, 0, 0, 0, 1]])
    for average in ("macro", "micro"):
        assert_allclose(
            multilabel_calibration_error(prob, labels, bins=5, average=average),
            oracle_ece(prob, labels, 5, 1, average),
            rtol=1e-12,
        )


def test_hand_computed_values():
    # label 0: bins of 2 hold {0.3 (y 1)} and {0.9 (1), 0.6 (0)}: gaps 0.7, 0.25 -> 0.4
    # label 1: {0.2 (0)} and {0.7 (1), 0.8 (1)}: gaps 0.2, 0.25 -> 0.7/3; macro 0.316667
    # micro: {0.3, 0.2} targets {1, 0} gap 0.25 (2/6); {0.9, 0.6, 0.7, 0.8} targets 3/4:
    # gap 0 (4/6) -> 0.25 / 3
    prob = np.array([[0.9, 0.2], [0.6, 0.7], [0.3, 0.8]])
    labels = np.array([[1, 0], [0, 1], [1, 1]])
    assert_allclose(
        multilabel_calibration_error(prob, labels, bins=2), (0.4 + 0.7 / 3) / 2, rtol=1e-14
    )
    assert_allclose(
        multilabel_calibration_error(prob, labels, bins=2, average="micro"),
        0.25 / 3,
        rtol=1e-14,
    )


@pytest.mark.parametrize("weighted", [False, True])
def test_brier_and_log_loss_match_the_loop_oracle(weighted):
    prob, labels, weights = _problem(n=80, k=4, seed=2)
    weights = weights if weighted else None
    brier = oracle_pairs_mean(prob, labels, lambda p, y: (p - y) ** 2, weights)
    log_loss = oracle_pairs_mean(prob, labels, lambda p, y: -np.log(p if y else 1 - p), weights)
    assert_allclose(multilabel_brier_score(prob, labels, sample_weight=weights), brier, rtol=1e-12)
    assert_allclose(multilabel_log_loss(prob, labels, sample_weight=weights), log_loss, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(MULTILABEL_PEERS))
def test_peer_values(name):
    prob, labels, weights = synthetic_sets()[name]
    peers = MULTILABEL_PEERS[name]
    assert_allclose(multilabel_brier_score(prob, labels), peers["brier"], rtol=1e-12)
    assert_allclose(
        multilabel_brier_score(prob, labels, sample_weight=weights),
        peers["brier_weighted"],
        rtol=1e-12,
    )
    assert_allclose(multilabel_log_loss(prob, labels), peers["log_loss"], rtol=1e-12)
    assert_allclose(
        multilabel_log_loss(prob, labels, sample_weight=weights),
        peers["log_loss_weighted"],
        rtol=1e-12,
    )
    for average in ("macro", "micro"):
        # torchmetrics computes in float64 here; its [lo, hi) bins agree off the edges
        assert_allclose(
            multilabel_calibration_error(prob, labels, bins=N_BINS, average=average),
            peers[f"ece_{average}"],
            rtol=1e-12,
        )


def test_macro_and_micro_brier_and_log_loss_coincide_per_label():
    # every label has the same N rows: the mean of the per-label values is the pooled one
    prob, labels, weights = _problem(n=60, k=3, seed=4)
    for measure in (multilabel_brier_score, multilabel_log_loss):
        per_label = [
            measure(prob[:, [j]], labels[:, [j]], sample_weight=weights) for j in range(3)
        ]
        assert_allclose(
            np.mean(per_label), measure(prob, labels, sample_weight=weights), rtol=1e-12
        )


def test_brier_is_the_multiclass_brier_divided_by_k():
    rng = np.random.default_rng(5)
    prob = rng.dirichlet(np.ones(4), size=50)
    labels = (rng.uniform(size=(50, 4)) < 0.3).astype(int)  # not one-hot: not refused
    classes = rng.integers(0, 4, 50)
    one_hot = np.eye(4, dtype=int)[classes]
    # the one-hot reading is refused here; the same number through an explicit difference
    squared = ((prob - one_hot) ** 2).sum(axis=1).mean()
    assert_allclose(ct.brier_score(prob, classes), squared, rtol=1e-12)
    assert_allclose(
        multilabel_brier_score(prob, labels), ((prob - labels) ** 2).mean(), rtol=1e-12
    )


# -- logits -----------------------------------------------------------------------------------
def test_logits_are_per_label_sigmoids():
    rng = np.random.default_rng(6)
    logits = rng.normal(scale=3.0, size=(200, 4))
    labels = (rng.uniform(size=(200, 4)) < expit(logits)).astype(int)
    for average in ("macro", "micro"):
        assert multilabel_calibration_error(
            logits, labels, average=average, logits=True
        ) == multilabel_calibration_error(expit(logits), labels, average=average)
    assert_allclose(
        multilabel_brier_score(logits, labels, logits=True),
        multilabel_brier_score(expit(logits), labels),
        rtol=1e-12,
    )
    assert_allclose(
        multilabel_log_loss(logits, labels, logits=True),
        multilabel_log_loss(expit(logits), labels, eps=0),
        rtol=1e-10,
    )


def test_log_loss_from_logits_is_exact_for_large_logits():
    logits = np.array([[50.0, -800.0], [-40.0, 700.0]])
    labels = np.array([[0, 1], [1, 1]])
    # -log sigmoid(-50) = 50 + log1p(e^-50), ...: the logits' magnitudes in float64, and
    # -log sigmoid(700) = log1p(e^-700) ~ 1e-304
    expected = (50.0 + 800.0 + 40.0) / 4
    assert_allclose(multilabel_log_loss(logits, labels, logits=True), expected, rtol=1e-15)
    # from probabilities the outcome's probability is clipped at eps (three of the four)
    clipped = multilabel_log_loss(expit(logits), labels)
    assert_allclose(clipped, -3 * np.log(1e-15) / 4, rtol=1e-12)
    assert multilabel_log_loss(expit(logits), labels, eps=0) == np.inf


# -- weights, batches, inputs ------------------------------------------------------------------
@pytest.mark.parametrize(
    "measure",
    [
        multilabel_calibration_error,
        lambda *a, **k: multilabel_calibration_error(*a, average="micro", norm=2, **k),
        multilabel_brier_score,
        multilabel_log_loss,
    ],
)
def test_weight_two_is_a_duplicated_row(measure):
    prob, labels, _ = _problem(n=50, k=3, seed=7)
    weights = np.ones(50)
    weights[[3, 17]] = 2.0
    duplicated = np.r_[np.arange(50), [3, 17]]
    assert_allclose(
        measure(prob, labels, sample_weight=weights),
        measure(prob[duplicated], labels[duplicated]),
        rtol=1e-12,
    )
    assert_allclose(
        measure(prob, labels, sample_weight=2.5 * weights),
        measure(prob, labels, sample_weight=weights),
        rtol=1e-12,
    )


def test_tables_of_batches_add_up_to_the_table_of_all_rows():
    prob, labels, weights = _problem(n=200, k=4, seed=8)
    whole = multilabel_calibration_table(prob, labels, bins=6, sample_weight=weights)
    parts = sum(
        multilabel_calibration_table(prob[rows], labels[rows], bins=6, sample_weight=weights[rows])
        for rows in (slice(0, 70), slice(70, 200))
    )
    for name in ("counts", "score_sums", "target_sums"):
        assert_allclose(getattr(parts, name), getattr(whole, name), rtol=1e-12)
    assert parts.multilabel and parts.class_conditional and parts.n_classes == 4
    assert_allclose(
        parts.calibration_error(),
        multilabel_calibration_error(prob, labels, bins=6, sample_weight=weights),
        rtol=1e-12,
    )


def test_a_multilabel_table_does_not_add_to_a_class_wise_table():
    prob, labels, _ = _problem(n=30, k=3, seed=9)
    classes = np.random.default_rng(9).integers(0, 3, 30)
    class_wise = ct.calibration_table(softmax(prob, axis=1), classes, bins=4, top_k_classes="all")
    with pytest.raises(ValueError, match="`multilabel` differs: True and False"):
        multilabel_calibration_table(prob, labels, bins=4) + class_wise


def test_inputs_are_not_modified_and_any_array_like_works():
    prob, labels, weights = _problem(n=40, k=3, seed=10)
    copies = prob.copy(), labels.copy(), weights.copy()
    value = multilabel_calibration_error(prob, labels, sample_weight=weights)
    for passed, kept in zip((prob, labels, weights), copies, strict=True):
        assert_array_equal(passed, kept)
    assert multilabel_calibration_error(
        prob.tolist(), labels.astype(bool).tolist(), sample_weight=weights.tolist()
    ) == pytest.approx(value, rel=1e-12)
    assert multilabel_calibration_error(prob, labels.astype(float), sample_weight=weights) == (
        value
    )


def test_one_label_is_a_binary_task():
    prob, labels, _ = _problem(n=100, k=1, seed=11)
    macro = multilabel_calibration_error(prob, labels, bins=5)
    assert macro == multilabel_calibration_error(prob, labels, bins=5, average="micro")
    # the positive-class ECE of the scores: the (score, target) form's value
    assert_allclose(macro, ct.ECE(ct.Scores(prob[:, 0]), labels[:, 0], bins=5), rtol=1e-12)


# -- the two readings ---------------------------------------------------------------------------
def test_class_labels_are_refused_with_the_multiclass_measures_named():
    prob, _, _ = _problem(n=20, k=3)
    with pytest.raises(ValueError, match=r"`labels` must be an \(N, K\) 0/1 label matrix.*ECE"):
        multilabel_calibration_error(prob, np.arange(20) % 3)


def test_one_hot_labels_beside_a_softmax_are_refused():
    rng = np.random.default_rng(12)
    prob = rng.dirichlet(np.ones(3), size=20)
    one_hot = np.eye(3, dtype=int)[rng.integers(0, 3, 20)]
    for measure in (
        multilabel_calibration_error,
        multilabel_calibration_table,
        multilabel_brier_score,
        multilabel_log_loss,
    ):
        with pytest.raises(ValueError, match=r"one-hot labels beside a softmax.*argmax"):
            measure(prob, one_hot)
    # the same labels beside sigmoids (rows not summing to 1) are multi-label
    sigmoid = rng.uniform(size=(20, 3))
    assert np.isfinite(multilabel_calibration_error(sigmoid, one_hot))
    # and with logits nothing is a softmax: per-label logits
    assert np.isfinite(multilabel_log_loss(np.log(prob), one_hot, logits=True))


def test_multiclass_measures_refuse_a_label_matrix_and_name_the_reading():
    rng = np.random.default_rng(13)
    prob = rng.dirichlet(np.ones(3), size=20)
    one_hot = np.eye(3, dtype=int)[rng.integers(0, 3, 20)]
    several = (rng.uniform(size=(20, 3)) < 0.5).astype(int)
    several[0] = [1, 1, 0]  # not one 1 per row
    for measure in (ct.ECE, ct.SCE, ct.brier_score, ct.negative_log_likelihood):
        with pytest.raises(ValueError, match=r"argmax\(axis=1\).*multilabel_calibration_error"):
            measure(prob, one_hot)
        with pytest.raises(ValueError, match=r"multi-label target.*multilabel_calibration_error"):
            measure(prob, several)


@pytest.mark.parametrize(
    ("prob", "labels", "error", "message"),
    [
        (np.full(4, 0.5), np.zeros(4), ValueError, r"`prob` must be a non-empty 2-D array"),
        (np.full((0, 2), 0.5), np.zeros((0, 2)), ValueError, "non-empty 2-D"),
        (np.full((3, 2), 0.5), np.zeros((3, 3)), ValueError, r"shape of `prob`, \(3, 2\)"),
        (np.full((3, 2), 0.5), np.full((3, 2), 2), ValueError, "only 0 and 1.*got 2"),
        (np.full((3, 2), 0.5), np.full((3, 2), "a"), TypeError, "`labels` must hold real"),
        (np.full((3, 2), 1.5), np.zeros((3, 2)), ValueError, r"probabilities in \[0, 1\]"),
        (np.full((3, 2), np.nan), np.zeros((3, 2)), ValueError, "NaN"),
        (ct.Scores([0.2, 0.3]), [0, 1], TypeError, "Scores"),
        (
            iv.check_predictions(np.full((3, 2), 0.5), [0, 1, 1]),
            None,
            TypeError,
            "`prob` must be an \\(N, K\\) array of per-label probabilities.*got Predictions",
        ),
    ],
)
def test_bad_input_names_the_argument(prob, labels, error, message):
    with pytest.raises(error, match=message):
        multilabel_calibration_error(prob, labels)


def test_bad_options_name_the_option():
    prob, labels, _ = _problem(n=10, k=2)
    with pytest.raises(ValueError, match="average"):
        multilabel_calibration_error(prob, labels, average="weighted")
    with pytest.raises(ValueError, match="bins"):
        multilabel_calibration_error(prob, labels, bins=0)
    with pytest.raises(ValueError, match="norm"):
        multilabel_calibration_error(prob, labels, norm=3)
    with pytest.raises(ValueError, match="sample_weight"):
        multilabel_brier_score(prob, labels, sample_weight=-np.ones(10))
    with pytest.raises(ValueError, match="eps"):
        multilabel_log_loss(prob, labels, eps=2.0)
    with pytest.raises(ValueError, match="`prob` must be finite; row 0"):
        multilabel_log_loss(np.full((10, 2), np.inf), labels, logits=True)


MEASURES = [
    multilabel_calibration_error,
    multilabel_calibration_table,
    multilabel_brier_score,
    multilabel_log_loss,
]


@pytest.mark.parametrize("measure", MEASURES)
@pytest.mark.parametrize("value", ["yes", 1, None])
def test_the_logits_flag_must_be_boolean(measure, value):
    prob, labels, _ = _problem(n=10, k=2)
    with pytest.raises(TypeError, match=r"`logits` must be True or False; got "):
        measure(prob, labels, logits=value)


@pytest.mark.parametrize("measure", MEASURES)
def test_probabilities_passed_as_logits_warn(measure):
    prob, labels, _ = _problem(n=10, k=2)
    with pytest.warns(UserWarning, match=r"logits=True, but every value lies in \[0, 1\]"):
        measure(prob, labels, logits=True)
    measure(prob * 8 - 4, labels, logits=True)  # filterwarnings=error: no warning


def test_the_registry_rows_say_multilabel():
    from calibration_toolbox import _registry

    names = {row.name for row in _registry.multilabel()}
    assert names == {measure.__name__ for measure in MEASURES}
    assert all(not row.scores and row.stream is None for row in _registry.multilabel())


# -- properties --------------------------------------------------------------------------------
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 40),
    k=st.integers(1, 6),
    bins=st.integers(1, 12),
)
def test_properties_of_the_averages(seed, n, k, bins):
    rng = np.random.default_rng(seed)
    prob = np.round(rng.uniform(size=(n, k)), 1)  # many scores on the edges
    labels = (rng.uniform(size=(n, k)) < 0.5).astype(int)
    if k > 1 and (labels.sum(axis=1) == 1).all():
        labels[0] = 1  # never one-hot rows
    macro = multilabel_calibration_error(prob, labels, bins=bins)
    micro = multilabel_calibration_error(prob, labels, bins=bins, average="micro")
    # the oracle, and the triangle inequality: pooling the labels cannot raise the L1 error
    assert_allclose(macro, oracle_ece(prob, labels, bins), rtol=1e-12, atol=1e-15)
    assert micro <= macro + 1e-12
    order = rng.permutation(k)
    assert_allclose(
        multilabel_calibration_error(prob[:, order], labels[:, order], bins=bins),
        macro,
        rtol=1e-12,
        atol=1e-15,
    )


# -- the per-label diagram ------------------------------------------------------------------------
def test_the_per_label_grid_draws_one_panel_per_label(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from calibration_toolbox.plot import ReliabilityDiagram

    prob, labels, _ = _problem(n=2000, k=4, seed=14)
    table = multilabel_calibration_table(prob**1.5, labels, bins=10)
    display = ReliabilityDiagram.from_table(table)
    assert display.ax_.size == 4
    assert display.ax_[0].get_title().startswith("label 0: ECE")
    macro = multilabel_calibration_error(prob**1.5, labels, bins=10)
    assert display.figure_.texts[0].get_text() == f"Per-label reliability; macro ECE = {macro:.4f}"
    assert display.ax_[0].get_xlabel() == ""  # the lower row carries the axis words
    assert display.ax_[2].get_xlabel() == "mean P(label k)"
    display.figure_.savefig(tmp_path / "per_label.png")
    plt.close(display.figure_)


def test_bootstrap_resamples_rows_as_weights():
    from calibration_toolbox import stats

    prob, labels, _ = _problem(n=120, k=3, seed=15)
    result = stats.bootstrap(
        multilabel_calibration_error, prob, labels, n_resamples=20, random_state=0
    )
    assert result.estimate == multilabel_calibration_error(prob, labels)
    distribution = result.bootstrap_distribution
    assert distribution.shape == (20,) and np.all(distribution > 0) and np.ptp(distribution) > 0
