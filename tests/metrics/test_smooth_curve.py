"""``smooth_reliability_curve``: the curve ``SmoothECE`` integrates, its density and its band.

Checked against the defining sums of the reflected Gaussian kernel (a brute-force oracle),
against ``SmoothECE`` itself (the same smoothing: its value is the curve's integral), and
against relplot 1.0.3 (``tests/references/smooth_curve_peers.py``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats
from scipy.integrate import trapezoid

from calibration_toolbox import Scores, SmoothECE, smooth_reliability_curve
from calibration_toolbox.metrics import smooth
from calibration_toolbox.metrics.smooth import CURVE_INTERVALS
from tests.references.smooth_ece_peers import synthetic_sets

# tests/references/smooth_curve_peers.py (relplot 1.0.3): at sigma, on the points T of the
# grid, (smoothed residual y - f, density of the scores, relplot's plotted NW curve of y).
# python 3.11.7, numpy 2.4.6, scipy 1.17.1, relplot 1.0.3
RELPLOT_CURVE = {
    ("calibrated", 0.1): (
        (
            0.015371186144698169,
            0.01339935628981975,
            0.0037906482822163616,
            0.00432755429997882,
            0.004888524599583783,
        ),
        (
            1.0267502594937834,
            0.9701361802820969,
            0.9803574332177839,
            1.0002588566178658,
            0.9713153574089376,
        ),
        (
            0.26684150176618066,
            0.5115479483795778,
            0.6313909729827666,
            0.7536229012003487,
            0.8664095926037743,
        ),
    ),
    ("calibrated", 0.05): (
        (
            0.019721290351936618,
            0.01574698421810419,
            -0.0005902550270929604,
            0.009282928859150146,
            0.008234663753283293,
        ),
        (
            1.0295277995444274,
            0.9522450238214732,
            0.9787273285094829,
            1.015852260005083,
            0.9766008815191122,
        ),
        (
            0.2717877618786269,
            0.5151409964419268,
            0.6264582849191359,
            0.758876648554312,
            0.881237049705562,
        ),
    ),
    ("overconfident", 0.1): (
        (
            -0.0014066940881844617,
            -0.010332785906362024,
            -0.03677066383466527,
            -0.09074791489892395,
            -0.14136408996000122,
        ),
        (
            0.012316097868738553,
            0.9996184075173207,
            1.7733357062748292,
            1.9668448104917344,
            2.0175878917788923,
        ),
        (
            0.5314994158998059,
            0.5691539107851247,
            0.6078288327223033,
            0.6615210874788966,
            0.7247471476525135,
        ),
    ),
    ("overconfident", 0.05): (
        (
            -0.03640979480303752,
            0.0017918800877083346,
            -0.02181603817940688,
            -0.09518972145874906,
            -0.148380594667558,
        ),
        (
            5.491876737400455e-07,
            1.0018616830217155,
            1.9694837885259848,
            1.9516084200643973,
            2.0534445746208574,
        ),
        (
            0.4552178221715609,
            0.542249556948907,
            0.6033961132602417,
            0.6547290262790273,
            0.7274831681593079,
        ),
    ),
    ("crossing", 0.1): (
        (
            -0.12004321878105796,
            -0.019545040893542507,
            0.045116234556219215,
            0.12664885650015356,
            0.14107093971583898,
        ),
        (
            1.0823412880965961,
            1.433809029851093,
            1.348060179439029,
            1.0404845006509449,
            0.638618807188488,
        ),
        (
            0.157732942453818,
            0.48014119083745177,
            0.6588230201508049,
            0.8461573279217375,
            0.9628539663397675,
        ),
    ),
    ("crossing", 0.05): (
        (
            -0.15930659635676703,
            -0.035394715183891534,
            0.036714544431199134,
            0.17799659409405413,
            0.13430695914073648,
        ),
        (
            1.1068444263455375,
            1.4405413913331517,
            1.4421114031662807,
            1.037113449597383,
            0.6434730342642191,
        ),
        (
            0.0989539040210342,
            0.46391937713928677,
            0.6604064154279672,
            0.9182408499322935,
            0.9950467111264633,
        ),
    ),
}
T_INDEX = np.array([256, 512, 640, 768, 896])  # the script's T, times 1024
# relplot smooths on a grid of about 1,000 nodes with the kernel cut at +-0.5 and counts a
# mass on an end node once: the definitions agree, the discretisations do not, so the
# agreement is that of its grid (measured: residual within 6e-6 or 7.3e-4 relative where
# the density is above 0.5, density within 1.3e-3 relative), not 1e-12.
RELPLOT_RESIDUAL_RTOL, RELPLOT_RESIDUAL_ATOL = 1e-3, 2e-5
RELPLOT_DENSITY_RTOL = 3e-3
# Linear binning on a grid of at least 256 nodes per bandwidth: pointwise error
# O((1/256)**2) relative (measured 2e-6 at most against the exact sums below).
ORACLE_RTOL = 2e-5


def exact_curve(scores, targets, sigma, t, weights=None):
    """The defining sums at the points t: density and smoothed residual, image by image."""
    scores = np.asarray(scores, dtype=float)
    weights = np.ones_like(scores) if weights is None else np.asarray(weights, dtype=float)
    shifts = 2.0 * np.arange(-3, 4)
    differences = np.concatenate(
        [
            t[:, None, None] - scores[None, :, None] - shifts,
            t[:, None, None] + scores[None, :, None] - shifts,
        ],
        axis=2,
    )
    kernel = (stats.norm.pdf(differences / sigma) / sigma).sum(axis=2)  # (t, rows)
    density = kernel @ weights / weights.sum()
    residual = kernel @ (weights * (np.asarray(targets) - scores)) / (kernel @ weights)
    return density, residual


def _problem(n=60, seed=4):
    rng = np.random.default_rng(seed)
    scores = rng.random(n)
    return scores, (rng.random(n) < scores**2).astype(np.int64), rng.integers(0, 4, n)


@pytest.mark.parametrize("sigma", [0.3, 0.1, 0.03, 0.01])
def test_matches_the_defining_sums(sigma):
    scores, targets, weights = _problem()
    curve = smooth_reliability_curve(Scores(scores), targets, bandwidth=sigma)
    points = np.arange(0, CURVE_INTERVALS + 1, 16)
    density, residual = exact_curve(scores, targets, sigma, curve.grid[points])
    assert_allclose(curve.density[points], density, rtol=ORACLE_RTOL)
    # undefined (NaN) exactly where the density is below 1e-4 of its peak
    defined = ~np.isnan(curve.residual[points])
    np.testing.assert_array_equal(defined, density > 1e-4 * curve.density.max())
    assert defined.mean() > 0.8
    assert_allclose(curve.residual[points][defined], residual[defined], rtol=ORACLE_RTOL)
    assert_allclose(curve.accuracy, curve.grid + curve.residual, rtol=1e-15)
    weighted = smooth_reliability_curve(
        Scores(scores), targets, bandwidth=sigma, sample_weight=weights
    )
    density, residual = exact_curve(scores, targets, sigma, curve.grid[points], weights)
    assert_allclose(weighted.density[points], density, rtol=ORACLE_RTOL)
    defined = ~np.isnan(weighted.residual[points])
    assert_allclose(weighted.residual[points][defined], residual[defined], rtol=ORACLE_RTOL)


@pytest.mark.parametrize("bandwidth", [None, 0.07, 0.004])
def test_its_value_is_smooth_ece_and_the_integral_of_its_gap(bandwidth):
    scores, targets, _ = _problem(n=3000, seed=8)
    curve = smooth_reliability_curve(Scores(scores), targets, bandwidth=bandwidth)
    assert curve.value == SmoothECE(Scores(scores), targets, bandwidth=bandwidth)
    if bandwidth is None:
        assert_allclose(curve.bandwidth, curve.value, rtol=1e-12)  # the fixed point
    else:
        assert curve.bandwidth == bandwidth
    # the gap to the diagonal weighted by the density, on the curve's 1025 nodes
    gap = np.abs(curve.accuracy - curve.grid) * curve.density
    assert_allclose(trapezoid(gap, curve.grid), curve.value, rtol=2e-3)
    assert_allclose(trapezoid(curve.density, curve.grid), 1.0, rtol=1e-3)


def test_top_label_equals_scores_of_confidence_and_correctness():
    rng = np.random.default_rng(6)
    prob = rng.dirichlet(np.ones(4), size=500)
    labels = rng.integers(0, 4, 500)
    confidence, correct = prob.max(axis=1), prob.argmax(axis=1) == labels
    top = smooth_reliability_curve(prob, labels)
    pairs = smooth_reliability_curve(Scores(confidence), correct)
    assert_allclose(top.accuracy, pairs.accuracy, rtol=1e-12)
    assert_allclose(top.density, pairs.density, rtol=1e-12)


def test_integer_weights_equal_duplicated_rows():
    scores, targets, weights = _problem(n=200, seed=2)
    weighted = smooth_reliability_curve(Scores(scores), targets, sample_weight=weights)
    repeated = smooth_reliability_curve(
        Scores(np.repeat(scores, weights)), np.repeat(targets, weights)
    )
    assert_allclose(weighted.bandwidth, repeated.bandwidth, rtol=1e-10)
    assert_allclose(weighted.accuracy, repeated.accuracy, rtol=1e-9, atol=1e-12)
    assert_allclose(weighted.density, repeated.density, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("key", sorted(RELPLOT_CURVE))
def test_agrees_with_relplot_where_the_definitions_agree(key):
    name, sigma = key
    scores, targets = synthetic_sets()[name]
    residual, density, _plotted = map(np.array, RELPLOT_CURVE[key])
    curve = smooth_reliability_curve(Scores(scores), targets, bandwidth=sigma)
    assert_allclose(curve.density[T_INDEX], density, rtol=RELPLOT_DENSITY_RTOL)
    supported = density > 0.5  # where relplot's grid smoothing divides by a fair density
    assert_allclose(
        curve.residual[T_INDEX][supported],
        residual[supported],
        rtol=RELPLOT_RESIDUAL_RTOL,
        atol=RELPLOT_RESIDUAL_ATOL,
    )


def test_relplots_plotted_curve_is_another_quantity():
    # relplot draws the NW smoothing of y, not t + r(t): on over-confident scores on
    # (0.5, 1), at t = 0.25 (no score within 0.25) the two differ by about t - 0.5
    scores, targets = synthetic_sets()["overconfident"]
    plotted = RELPLOT_CURVE[("overconfident", 0.1)][2][0]
    curve = smooth_reliability_curve(Scores(scores), targets, bandwidth=0.1)
    assert abs(curve.accuracy[256] - plotted) > 0.2


def test_the_band_is_the_percentiles_of_weighted_resamples():
    scores, targets, weights = _problem(n=400, seed=9)
    weights += 1  # every row present (a row of weight 0 is absent, as in SmoothECE)
    curve = smooth_reliability_curve(
        Scores(scores), targets, sample_weight=weights, n_resamples=30, alpha=0.1, random_state=5
    )
    rng = np.random.default_rng(5)
    resampled = []
    for _ in range(30):  # the oracle: each resample as a weighted call of the public function
        counts = np.bincount(rng.integers(0, 400, size=400), minlength=400)
        resampled.append(
            smooth_reliability_curve(
                Scores(scores),
                targets,
                bandwidth=curve.bandwidth,
                sample_weight=weights * counts,
            ).accuracy
        )
    low, high = np.nanquantile(np.array(resampled), [0.05, 0.95], axis=0)
    assert_allclose(curve.low, low, rtol=1e-12)
    assert_allclose(curve.high, high, rtol=1e-12)
    assert curve.confidence_level == 0.9
    assert (curve.low <= curve.high).all()


def test_the_band_is_seeded_and_narrows_with_more_rows():
    rng = np.random.default_rng(1)
    small, large = (rng.random(n) for n in (500, 20_000))
    bands = []
    for scores in (small, large):
        targets = rng.random(scores.size) < scores
        first, second = (
            smooth_reliability_curve(Scores(scores), targets, n_resamples=20, random_state=3)
            for _ in range(2)
        )
        np.testing.assert_array_equal(first.low, second.low)
        bands.append(np.nanmean(first.high - first.low))
    assert bands[1] < bands[0] / 3
    no_band = smooth_reliability_curve(Scores(small), small > 0.5)
    assert no_band.low is None and no_band.high is None


def test_undefined_where_no_score_is_within_reach():
    scores = np.full(50, 0.9)
    curve = smooth_reliability_curve(Scores(scores), np.arange(50) % 2, bandwidth=0.01)
    assert np.isnan(curve.accuracy[:512]).all() and np.isnan(curve.residual[:512]).all()
    assert_allclose(curve.residual[922], 0.5 - 0.9, rtol=1e-9)  # half correct at 0.9


def test_input_is_not_modified():
    scores, targets, weights = _problem()
    before = scores.copy(), targets.copy(), weights.copy()
    smooth_reliability_curve(Scores(scores), targets, sample_weight=weights, n_resamples=3)
    for array, copy in zip((scores, targets, weights), before, strict=False):
        np.testing.assert_array_equal(array, copy)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_resamples": -1}, ValueError, "`n_resamples` must be an integer >= 0"),
        ({"n_resamples": 2.5}, TypeError, "`n_resamples` must be an integer"),
        ({"alpha": 0.0}, ValueError, "`alpha` must be"),
        ({"alpha": 1.5}, ValueError, "`alpha` must be"),
        ({"random_state": "seed"}, TypeError, "`random_state` must be None, an integer seed"),
        ({"bandwidth": 0.0}, ValueError, "`bandwidth` must be"),
    ],
)
def test_bad_input(kwargs, error, match):
    scores, targets, _ = _problem()
    with pytest.raises(error, match=match):
        smooth_reliability_curve(Scores(scores), targets, **kwargs)


# -- the smooth reliability diagram ---------------------------------------------------------
@pytest.fixture
def pyplot():
    pytest.importorskip("matplotlib").use("Agg")
    plt = pytest.importorskip("matplotlib.pyplot")
    yield plt
    plt.close("all")


def test_the_smooth_diagram_draws_the_curve_and_its_band(pyplot, tmp_path):
    from calibration_toolbox.plot import ReliabilityDiagram

    rng = np.random.default_rng(7)
    prob = rng.dirichlet(np.full(3, 0.5), size=2000)
    labels = rng.integers(0, 3, 2000)
    display = ReliabilityDiagram.from_predictions(
        prob, labels, strategy="smooth", n_resamples=20, random_state=1, label="model"
    )
    expected = smooth_reliability_curve(prob, labels, n_resamples=20, random_state=1)
    assert display.curve_ == expected and display.table_ is None
    np.testing.assert_array_equal(display.line_.get_ydata(), expected.accuracy)
    assert display.band_ is not None and display.density_ is not None
    texts = [text.get_text() for text in display.ax_.get_legend().get_texts()]
    assert f"model (smECE = {expected.value:.4f})" in texts
    assert "95% bootstrap band" in texts
    target = tmp_path / "smooth.png"
    display.figure_.savefig(target)
    pixels = pytest.importorskip("matplotlib.image").imread(target)
    assert pixels[..., :3].std() > 0.05


def test_the_smooth_diagram_without_a_band_and_on_given_axes(pyplot):
    from calibration_toolbox.plot import ReliabilityDiagram

    scores, targets, _ = _problem(n=300)
    _, ax = pyplot.subplots()
    display = ReliabilityDiagram.from_predictions(
        Scores(scores), targets, strategy="smooth", n_resamples=0, ax=ax
    )
    assert display.ax_ is ax and display.band_ is None and display.counts_ax_ is None


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"strategy": "Smooth"}, ValueError, "`strategy` must be 'bins' or 'corp' or 'smooth'"),
        (
            {"strategy": "smooth", "class_conditional": True},
            ValueError,
            "`class_conditional` applies to strategy='bins'; got .* strategy='smooth'",
        ),
        (
            {"strategy": "smooth", "adaptive_bins": True},
            ValueError,
            "`adaptive_bins` applies to strategy='bins'; got .* strategy='smooth'",
        ),
        ({"strategy": "smooth", "alpha": 2.0}, ValueError, "`alpha` must be"),
    ],
)
def test_the_smooth_diagram_refuses_what_does_not_apply(pyplot, kwargs, error, match):
    from calibration_toolbox.plot import ReliabilityDiagram

    scores, targets, _ = _problem()
    with pytest.raises(error, match=match):
        ReliabilityDiagram.from_predictions(
            np.column_stack([1 - scores, scores]), targets, **kwargs
        )


def test_from_curve_refuses_anything_else(pyplot):
    from calibration_toolbox.plot import ReliabilityDiagram

    message = "`curve` must be a SmoothReliabilityCurve or a CORPReliability; got ndarray"
    with pytest.raises(TypeError, match=message):
        ReliabilityDiagram.from_curve(np.zeros(3))


def test_band_percentiles_leave_out_the_undefined_resamples_of_each_point():
    # The slow reference: the same draws, np.nanquantile over every grid point at once
    # (the band takes np.quantile where no resample is undefined, and nanquantile elsewhere).
    rng = np.random.default_rng(11)
    scores = np.concatenate([rng.uniform(0.0, 0.3, 150), rng.uniform(0.7, 1.0, 150)])
    correct = rng.random(300) < scores
    curve = smooth_reliability_curve(Scores(scores), correct, n_resamples=30, random_state=2)
    curves = smooth._CurveGrid(scores, correct, np.ones(300), curve.bandwidth)
    draws = np.random.default_rng(2)
    resampled = curve.grid + np.array(
        [
            curves.curve(np.bincount(draws.integers(0, 300, 300), minlength=300))[0]
            for _ in range(30)
        ]
    )
    undefined = np.isnan(resampled)
    assert (undefined.any(axis=0) & ~undefined.all(axis=0)).any()  # some points partly undefined
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN points
        expected = np.nanquantile(resampled, [0.025, 0.975], axis=0)
    assert_array_equal(curve.low, expected[0])
    assert_array_equal(curve.high, expected[1])
