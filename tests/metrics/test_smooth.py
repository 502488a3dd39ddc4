"""SmoothECE: hand examples, the exact integral, relplot, weights, invariances, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from scipy import integrate, optimize, stats
from scipy.special import erf
from smooth_ece_peers import REAL, SIGMAS, synthetic_sets, top_label_pairs

from calibration_toolbox import Scores, SmoothECE
from tests.conftest import load_real

# python tests/references/smooth_ece_peers.py (peers environment):
# python 3.11.7, numpy 2.4.6, scipy 1.17.1, relplot 1.0.3
# name: (relplot.smECE value, its bandwidth, relplot.smECE_sigma at SIGMAS)
RELPLOT = {
    "calibrated": (
        0.017577797788376433,
        0.0185546875,
        (0.008764526092232789, 0.01191743622987942, 0.01707608511841917),
    ),
    "overconfident": (
        0.08827202361559182,
        0.0888671875,
        (0.088257629981132, 0.08849261437902434, 0.08993821543343411),
    ),
    "crossing": (
        0.08409997747161997,
        0.0849609375,
        (0.08216420113488732, 0.08805900839639944, 0.09063143453309137),
    ),
    "issue13": (
        0.17229654782239112,
        0.1728515625,
        (0.17216074948348165, 0.17210847617410682, 0.17238626160585832),
    ),
    "wideresnet-16-4-cifar-10": (
        0.07568163439754845,
        0.076171875,
        (0.07584187295430897, 0.075299622188073, 0.07505396511644409),
    ),
    "lenet-5-cifar-100": (
        0.015590839035892947,
        0.015625,
        (0.013975140212716666, 0.01471812850867916, 0.015214448690377325),
    ),
}
# Measured: at the same bandwidth relplot agrees to 0.40% at most on the sets without mass
# near 0 or 1 (its grid has ~1,000 nodes); its bandwidth is at most 2**-10 above ours.
RELPLOT_RTOL = 5e-3
# Measured against adaptive quadrature: 3e-7 at most (linear binning + trapezoid rule).
EXACT_RTOL = 1e-6


def exact_smooth_ece(scores, targets, sigma, weights=None):
    """The defining integral, by adaptive quadrature of the image sum of the kernel."""
    scores = np.asarray(scores, dtype=float)
    weights = np.ones_like(scores) if weights is None else np.asarray(weights, dtype=float)
    masses = weights * (np.asarray(targets) - scores) / weights.sum()
    shifts = 2.0 * np.arange(-3, 4)

    def density(t):
        images = np.concatenate([t - scores[:, None] - shifts, t + scores[:, None] - shifts], 1)
        return abs(masses @ (stats.norm.pdf(images / sigma) / sigma).sum(axis=1))

    breaks = np.unique(np.clip(np.concatenate([scores, scores - sigma, scores + sigma]), 0, 1))
    value, _ = integrate.quad(
        density, 0, 1, points=breaks[:100], limit=5000, epsabs=1e-13, epsrel=1e-12
    )
    return value


def test_one_sign_residuals_give_the_mean_residual_at_any_bandwidth():
    for bandwidth in (None, 0.001, 0.05, 0.3, 5.0):
        assert_allclose(SmoothECE(Scores([0.2, 0.6]), [1, 1], bandwidth=bandwidth), 0.6, 1e-13)


@pytest.mark.parametrize("sigma", [0.05, 0.02, 0.005, 0.001])
def test_two_opposite_residuals_hand_formula(sigma):
    # +0.6 at 0.4 and -0.6 at 0.6; far from the ends: 0.6 (2 Phi(0.1 / sigma) - 1).
    value = SmoothECE(Scores([0.4, 0.6]), [1, 0], bandwidth=sigma)
    assert_allclose(value, 0.6 * erf(0.1 / (sigma * np.sqrt(2))), rtol=EXACT_RTOL)


def test_fixed_point_of_the_exact_integral():
    # at sigma* = 0.215 the mirror images count: the oracle, not the far-from-ends formula
    root = optimize.brentq(
        lambda s: exact_smooth_ece([0.4, 0.6], [1, 0], s) - s, 0.1, 0.5, xtol=1e-14
    )
    value = SmoothECE(Scores([0.4, 0.6]), [1, 0])
    assert_allclose(value, root, rtol=EXACT_RTOL)
    # the value returned is the bandwidth of the fixed point
    assert_allclose(SmoothECE(Scores([0.4, 0.6]), [1, 0], bandwidth=value), value, rtol=1e-12)


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("n", [7, 60])
@pytest.mark.parametrize("sigma", [0.5, 0.1, 0.03, 0.01, 0.003])
def test_matches_the_exact_integral(n, sigma):
    rng = np.random.default_rng(n)
    scores = rng.random(n)
    targets = rng.random(n) < scores**2
    weights = rng.integers(0, 4, n)
    assert_allclose(
        SmoothECE(Scores(scores), targets, bandwidth=sigma),
        exact_smooth_ece(scores, targets, sigma),
        rtol=EXACT_RTOL,
    )
    assert_allclose(
        SmoothECE(Scores(scores), targets, bandwidth=sigma, sample_weight=weights),
        exact_smooth_ece(scores, targets, sigma, weights),
        rtol=EXACT_RTOL,
    )


def test_reflection_keeps_mass_at_the_ends():
    # scores exactly at 0 and 1: each is its own mirror image and keeps all its mass
    scores = np.array([0.0, 1.0, 1.0, 0.3])
    targets = np.array([1, 0, 1, 0])
    for sigma in (0.3, 0.05):
        assert_allclose(
            SmoothECE(Scores(scores), targets, bandwidth=sigma),
            exact_smooth_ece(scores, targets, sigma),
            rtol=EXACT_RTOL,
        )


def _relplot_sets():
    sets = synthetic_sets()
    for name in REAL:
        sets[name] = top_label_pairs(*load_real(name))
    return sets


@pytest.mark.parametrize("name", ["calibrated", "overconfident", "crossing", "issue13", REAL[1]])
def test_agrees_with_relplot(name):
    scores, targets = _relplot_sets()[name]
    value, width, at_sigmas = RELPLOT[name]
    for sigma, peer in zip(SIGMAS, at_sigmas, strict=True):
        assert_allclose(SmoothECE(Scores(scores), targets, bandwidth=sigma), peer, RELPLOT_RTOL)
    assert_allclose(SmoothECE(Scores(scores), targets, bandwidth=width), value, RELPLOT_RTOL)
    # relplot's bisection stops at the upper end of an interval of 2**-10
    ours = SmoothECE(Scores(scores), targets)
    assert 0 <= width - ours <= 2**-10


def test_relplot_half_weights_scores_at_the_ends():
    # wideresnet-16-4-cifar-10: 70% of the confidences above 0.999.  Every smoothed residual
    # is negative, so the exact value is mean(confidence - correct); relplot's 0.0757 counts
    # the mass on its end grid node once instead of twice.
    scores, targets = _relplot_sets()[REAL[0]]
    exact = float(np.mean(scores - targets))
    assert_allclose(SmoothECE(Scores(scores), targets), exact, rtol=1e-12)
    assert RELPLOT[REAL[0]][0] / exact > 1.4


def test_top_label_equals_scores_of_confidence_and_correctness():
    prob, labels = load_real("lenet-5-cifar-10")
    confidence, correct = top_label_pairs(prob, labels)
    assert_allclose(SmoothECE(prob, labels), SmoothECE(Scores(confidence), correct), rtol=1e-12)
    logits = np.log(prob.astype(np.float64))
    assert_allclose(SmoothECE(logits, labels, logits=True), SmoothECE(prob, labels), rtol=1e-5)


@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 40),
    st.sampled_from([None, 0.02, 0.2]),
)
def test_integer_weights_equal_duplicated_rows_and_row_order_does_not_matter(seed, n, sigma):
    rng = np.random.default_rng(seed)
    scores = rng.random(n)
    targets = rng.random(n) < scores
    weights = rng.integers(0, 4, n)
    if weights.sum() == 0:
        weights[0] = 1
    weighted = SmoothECE(Scores(scores), targets, bandwidth=sigma, sample_weight=weights)
    repeated = SmoothECE(
        Scores(np.repeat(scores, weights)), np.repeat(targets, weights), bandwidth=sigma
    )
    assert_allclose(weighted, repeated, rtol=1e-10, atol=1e-14)
    assert_allclose(
        SmoothECE(Scores(scores), targets, bandwidth=sigma, sample_weight=2.5 * weights),
        weighted,
        rtol=1e-10,
        atol=1e-14,
    )
    order = rng.permutation(n)
    assert_allclose(
        SmoothECE(
            Scores(scores[order]), targets[order], bandwidth=sigma, sample_weight=weights[order]
        ),
        weighted,
        rtol=1e-10,
        atol=1e-14,
    )
    assert 0 <= weighted <= 1


def test_decreases_with_the_bandwidth_and_grows_with_miscalibration():
    rng = np.random.default_rng(5)
    scores = rng.random(4000)
    targets = rng.random(4000) < scores
    values = [SmoothECE(Scores(scores), targets, bandwidth=s) for s in (0.005, 0.02, 0.1, 0.4)]
    assert np.all(np.diff(values) <= 1e-12)
    errors = [SmoothECE(Scores(scores), rng.random(4000) < scores**power) for power in (1, 1.5, 3)]
    assert errors[0] < errors[1] < errors[2]


def test_input_is_not_modified_and_float32_is_accepted():
    rng = np.random.default_rng(3)
    prob = rng.dirichlet(np.ones(4), 500).astype(np.float32)
    labels = rng.integers(0, 4, 500)
    copy = prob.copy()
    value = SmoothECE(prob, labels)
    assert type(value) is float
    np.testing.assert_array_equal(prob, copy)
    assert_allclose(value, SmoothECE(prob.astype(np.float64), labels), rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"bandwidth": 0}, ValueError, "`bandwidth` must be a positive"),
        ({"bandwidth": -0.1}, ValueError, "`bandwidth` must be a positive"),
        ({"bandwidth": np.inf}, ValueError, "`bandwidth` must be a positive"),
        ({"bandwidth": "0.1"}, TypeError, "`bandwidth` must be a positive number"),
        ({"sample_weight": [1, -1, 1]}, ValueError, "`sample_weight` must be non-negative"),
        ({"logits": 1}, TypeError, "`logits` must be True or False"),
    ],
)
def test_bad_input(kwargs, error, match):
    prob = [[0.9, 0.1], [0.2, 0.8], [0.7, 0.3]]
    with pytest.raises(error, match=match):
        SmoothECE(prob, [0, 1, 1], **kwargs)


def test_one_dimensional_prob_is_refused_as_ambiguous():
    with pytest.raises(ValueError, match=r"`prob` is 1-D, which is ambiguous"):
        SmoothECE([0.2, 0.7], [0, 1])
    with pytest.raises(ValueError, match="labels"):
        SmoothECE(Scores([0.2, 0.7]), [0, 2])
