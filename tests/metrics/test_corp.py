"""corp_decomposition: a slow oracle, model-diagnostics' values, the identity, weights, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from corp_model_diagnostics import REAL, synthetic_sets
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from smooth_ece_peers import top_label_pairs

from calibration_toolbox import CORPDecomposition, Scores, corp_decomposition, stats
from calibration_toolbox.datasets import make_overconfident
from calibration_toolbox.metrics import corp
from tests.conftest import load_real

inf = math.inf
# python tests/references/corp_model_diagnostics.py (model-diagnostics 1.5.0): (score,
# miscalibration, discrimination, uncertainty).  The definitions agree everywhere (the same
# tie-pooled isotonic fit, the same scores, inf for a confidence of 1.0 on a wrong answer
# under the log score): ours agree within 1.1e-14.
MODEL_DIAGNOSTICS = {
    ("calibrated", "brier"): (
        0.17064090986728364,
        0.002696927445583447,
        0.08205201757829972,
        0.2499959999999999,
    ),
    ("calibrated", "log"): (
        0.507141350736465,
        0.00871147866792732,
        0.19470930847007406,
        0.6931391805386118,
    ),
    ("overconfident", "brier"): (
        0.23351015974429734,
        0.014882284432519627,
        0.008671680243777846,
        0.22729955555555556,
    ),
    ("overconfident", "log"): (
        0.7019889058365464,
        0.07426621971595948,
        0.019310283020778418,
        0.6470329691413653,
    ),
    ("ties", "brier"): (
        0.16708255,
        0.03059152980300106,
        0.08561997980300112,
        0.22211100000000006,
    ),
    ("ties", "log"): (
        0.5041782595496588,
        0.0874865479923363,
        0.2195911576356056,
        0.6362828691929281,
    ),
    ("weighted", "brier"): (
        0.25395123137139874,
        0.04015192382302349,
        0.03514816753689154,
        0.2489474750852668,
    ),
    ("weighted", "log"): (
        0.7253918248489776,
        0.11206985215557408,
        0.07771867846573033,
        0.6910406511591338,
    ),
    ("lenet-5-cifar-10", "brier"): (
        0.21659786918799345,
        0.013917456000762135,
        0.04637094681276871,
        0.24905136000000003,
    ),
    ("lenet-5-cifar-10", "log"): (
        0.6245757941126787,
        0.03798059435239498,
        0.10465349908426214,
        0.6912486988445459,
    ),
    ("wideresnet-16-4-cifar-10", "brier"): (
        0.0663390828203541,
        0.009329740278964584,
        0.02415184745861048,
        0.08116119,
    ),
    ("wideresnet-16-4-cifar-10", "log"): (inf, inf, 0.11591668526635013, 0.30045059167748633),
    ("vgg16-cifar-10", "brier"): (
        0.04982345981359449,
        0.007182721538715443,
        0.01735045172512094,
        0.059991189999999986,
    ),
    ("vgg16-cifar-10", "log"): (
        0.1994280865631457,
        0.0618572465112765,
        0.10053202542512221,
        0.23810286547699142,
    ),
    ("lenet-5-cifar-100", "brier"): (
        0.10068362594375463,
        0.0010006363117368439,
        0.009391850367982207,
        0.10907483999999999,
    ),
    ("lenet-5-cifar-100", "log"): (
        0.3449474234216586,
        0.003772344335929434,
        0.034815986012681766,
        0.37599106509841096,
    ),
    ("wideresnet-16-4-cifar-100", "brier"): (
        0.13052167598812162,
        0.0058379371115841044,
        0.06064777112346252,
        0.18533151000000003,
    ),
    ("wideresnet-16-4-cifar-100", "log"): (
        0.41718949501894514,
        0.03639970644347651,
        0.17677182616466647,
        0.5575616147401351,
    ),
    ("densenet-bc-100-cifar-100", "brier"): (
        0.16008482344662375,
        0.035162075186910766,
        0.06051044174028704,
        0.18543319000000003,
    ),
    ("densenet-bc-100-cifar-100", "log"): (
        0.5868586540828156,
        0.20834811658285074,
        0.17927530512263995,
        0.5577858426226048,
    ),
}
PEER_RTOL = 1e-12


def terms(parts: CORPDecomposition) -> np.ndarray:
    return np.array([parts.score, parts.miscalibration, parts.discrimination, parts.uncertainty])


# -- the slow oracle ----------------------------------------------------------------------------
def slow_pav(values, weights):
    """Weighted PAV by repeated pooling of adjacent violators, in pure Python."""
    blocks = [[value, weight, 1] for value, weight in zip(values, weights, strict=True)]
    pooled = True
    while pooled:
        pooled = False
        for j in range(len(blocks) - 1):
            (v1, w1, c1), (v2, w2, c2) = blocks[j], blocks[j + 1]
            if v1 > v2:
                blocks[j : j + 2] = [[(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, c1 + c2]]
                pooled = True
                break
    fit = []
    for value, _, count in blocks:
        fit.extend([value] * count)
    return fit


def slow_score(forecast, outcome, rule):
    if rule == "brier":
        return (forecast - outcome) ** 2
    probability = forecast if outcome else 1.0 - forecast
    return inf if probability == 0 else -math.log(probability)


def slow_corp(forecasts, outcomes, weights, rule):
    """The definitions row by row: pool ties (a dict), PAV, three mean scores."""
    groups = {}
    for forecast, outcome, weight in zip(forecasts, outcomes, weights, strict=True):
        if weight > 0:
            total, events = groups.get(float(forecast), (0.0, 0.0))
            groups[float(forecast)] = (total + weight, events + weight * outcome)
    values = sorted(groups)
    fit = dict(
        zip(
            values,
            slow_pav(
                [groups[v][1] / groups[v][0] for v in values], [groups[v][0] for v in values]
            ),
            strict=True,
        )
    )
    total = sum(weights)
    rate = sum(w * y for y, w in zip(outcomes, weights, strict=True)) / total
    rows = [(float(f), y, w) for f, y, w in zip(forecasts, outcomes, weights, strict=True) if w]
    score = sum(w * slow_score(f, y, rule) for f, y, w in rows) / total
    recalibrated = sum(w * slow_score(fit[f], y, rule) for f, y, w in rows) / total
    climatology = sum(w * slow_score(rate, y, rule) for f, y, w in rows) / total
    return score, score - recalibrated, climatology - recalibrated, climatology


@pytest.mark.parametrize("rule", ["brier", "log"])
@pytest.mark.parametrize("seed", range(6))
def test_matches_the_slow_oracle(rule, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    forecasts = rng.choice(np.linspace(0.05, 0.95, 7), size=n)  # ties
    outcomes = (rng.random(n) < forecasts**1.5).astype(int)
    weights = rng.choice([0.0, 0.5, 1.0, 3.0], size=n)
    weights[0] = 1.0
    expected = slow_corp(forecasts, outcomes, weights, rule)
    ours = corp_decomposition(Scores(forecasts), outcomes, score=rule, sample_weight=weights)
    assert_allclose(terms(ours), expected, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("rule", ["brier", "log"])
@pytest.mark.parametrize("seed", range(6))
def test_matches_the_slow_oracle_in_float32(rule, seed):
    # float32 forecasts with weights take the packed-key sort (binning.sort_rows_with_positions)
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    forecasts = rng.choice(np.linspace(0.05, 0.95, 7), size=n).astype(np.float32)  # ties
    outcomes = (rng.random(n) < forecasts**1.5).astype(int)
    weights = rng.choice([0.0, 0.5, 1.0, 3.0], size=n)
    weights[0] = 1.0
    expected = slow_corp(forecasts, outcomes, weights, rule)
    ours = corp_decomposition(Scores(forecasts), outcomes, score=rule, sample_weight=weights)
    assert_allclose(terms(ours), expected, rtol=1e-12, atol=1e-15)


def test_matches_the_oracle_on_the_top_label():
    rng = np.random.default_rng(8)
    prob = rng.dirichlet(np.ones(4), size=60)
    labels = rng.integers(0, 4, size=60)
    expected = slow_corp(prob.max(axis=1), prob.argmax(axis=1) == labels, np.ones(60), "brier")
    assert_allclose(terms(corp_decomposition(prob, labels)), expected, rtol=1e-12, atol=1e-15)


def test_hand_example():
    # forecasts 0.1, 0.3, 0.6, 0.8 with outcomes 0, 1, 0, 1: PAV pools (0.3, 0.6) to 0.5
    parts = corp_decomposition(Scores([0.1, 0.3, 0.6, 0.8]), [0, 1, 0, 1])
    assert_allclose(terms(parts), [0.225, 0.1, 0.125, 0.25], rtol=1e-14)
    assert all(type(value) is float for value in terms(parts).tolist())


# -- the peer -------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "rule"), sorted(MODEL_DIAGNOSTICS))
def test_matches_model_diagnostics(name, rule):
    if name in REAL:
        prob, labels = load_real(name)
        ours = corp_decomposition(prob, labels, score=rule)
        scores, targets = top_label_pairs(prob, labels)
        via_scores = corp_decomposition(Scores(scores), targets, score=rule)
        assert_allclose(terms(via_scores), terms(ours), rtol=1e-14)
    else:
        forecasts, outcomes, weights = synthetic_sets()[name]
        ours = corp_decomposition(Scores(forecasts), outcomes, score=rule, sample_weight=weights)
    assert_allclose(terms(ours), MODEL_DIAGNOSTICS[name, rule], rtol=PEER_RTOL)


# -- properties -------------------------------------------------------------------------------
@st.composite
def forecasts_and_outcomes(draw):
    n = draw(st.integers(1, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    distinct = draw(st.integers(1, 12))
    forecasts = rng.choice(rng.uniform(0.01, 0.99, distinct), size=n)
    outcomes = (rng.random(n) < rng.random()).astype(int)
    weights = None if draw(st.booleans()) else rng.uniform(0.1, 5.0, size=n)
    return forecasts, outcomes, weights


@given(forecasts_and_outcomes(), st.sampled_from(["brier", "log"]))
def test_the_terms_add_up_and_are_non_negative(data, rule):
    forecasts, outcomes, weights = data
    parts = corp_decomposition(Scores(forecasts), outcomes, score=rule, sample_weight=weights)
    assert parts.miscalibration >= 0 and parts.discrimination >= 0 and parts.uncertainty >= 0
    total = parts.miscalibration - parts.discrimination + parts.uncertainty
    assert abs(total - parts.score) <= 4e-16 * max(parts.score, parts.uncertainty)


@given(forecasts_and_outcomes(), st.sampled_from(["brier", "log"]))
def test_discrimination_and_uncertainty_see_only_the_order_of_the_forecasts(data, rule):
    # a strictly increasing map of the forecasts keeps the PAV blocks and their rates:
    # DSC and UNC stay; MCB (and the score) change with the forecasts themselves
    forecasts, outcomes, weights = data
    relabeled = forecasts**3
    before = corp_decomposition(Scores(forecasts), outcomes, score=rule, sample_weight=weights)
    after = corp_decomposition(Scores(relabeled), outcomes, score=rule, sample_weight=weights)
    assert_allclose(after.discrimination, before.discrimination, rtol=1e-12, atol=1e-15)
    assert after.uncertainty == before.uncertainty


def test_a_monotone_map_changes_miscalibration():
    forecasts, outcomes, _ = synthetic_sets()["calibrated"]
    before = corp_decomposition(Scores(forecasts), outcomes)
    after = corp_decomposition(Scores(forecasts**3), outcomes)
    assert after.miscalibration > 10 * before.miscalibration
    assert_allclose(after.discrimination, before.discrimination, rtol=1e-12)


def test_calibrated_by_construction_has_no_miscalibration():
    # each forecast equals its value's event rate and rates increase: PAV returns them
    forecasts = np.repeat([0.25, 0.5, 0.75], 4)
    outcomes = np.array([1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0])
    parts = corp_decomposition(Scores(forecasts), outcomes, score="log")
    assert parts.miscalibration == 0.0
    assert_allclose(parts.score, parts.uncertainty - parts.discrimination, rtol=1e-15)


# -- forecasts of 0 and 1 under the log score --------------------------------------------------
def test_log_score_of_a_zero_forecast_on_an_event_is_infinite():
    parts = corp_decomposition(Scores([0.0, 0.3, 0.6, 0.8]), [1, 1, 0, 1], score="log")
    assert parts.score == inf and parts.miscalibration == inf
    assert math.isfinite(parts.discrimination) and math.isfinite(parts.uncertainty)
    expected = slow_corp([0.0, 0.3, 0.6, 0.8], [1, 1, 0, 1], [1, 1, 1, 1], "log")
    assert_allclose(terms(parts)[2:], expected[2:], rtol=1e-14)


def test_a_confidence_of_one_on_a_wrong_answer_is_infinite_and_silent(recwarn):
    prob = np.array([[1.0, 0.0], [0.2, 0.8], [0.6, 0.4]])
    parts = corp_decomposition(prob, [1, 1, 0], score="log")
    assert parts.score == inf and parts.miscalibration == inf
    assert not recwarn.list


def test_pure_blocks_of_zero_and_one_are_finite_under_the_log_score():
    # the PAV fit is 0 on the first block and 1 on the last: 0 log 0 = 0
    forecasts = [0.0, 0.2, 0.7, 1.0]
    parts = corp_decomposition(Scores(forecasts), [0, 0, 1, 1], score="log")
    assert terms(parts).tolist() == pytest.approx(
        [
            (-math.log(0.8) - math.log(0.7)) / 4,
            (-math.log(0.8) - math.log(0.7)) / 4,
            math.log(2),
            math.log(2),
        ],
        rel=1e-14,
    )


# -- weights and input forms -----------------------------------------------------------------
def test_integer_weights_equal_duplicated_rows_and_scale_does_not_matter(rng):
    prob = rng.dirichlet(np.ones(3), size=200)
    labels = rng.integers(0, 3, size=200)
    counts = rng.integers(0, 4, size=200)
    counts[0] = 1
    for rule in ("brier", "log"):
        weighted = corp_decomposition(prob, labels, score=rule, sample_weight=counts)
        duplicated = corp_decomposition(
            np.repeat(prob, counts, axis=0), np.repeat(labels, counts), score=rule
        )
        assert_allclose(terms(weighted), terms(duplicated), rtol=1e-12)
        scaled = corp_decomposition(prob, labels, score=rule, sample_weight=2.0**-600 * counts)
        assert_allclose(terms(scaled), terms(weighted), rtol=1e-12)


def test_float32_top_label_equals_its_scores_and_inputs_are_not_modified(rng):
    prob = rng.dirichlet(np.ones(5), size=300).astype(np.float32)
    labels = rng.integers(0, 5, size=300)
    before = prob.copy()
    parts = corp_decomposition(prob, labels)
    assert np.array_equal(prob, before)
    correct = prob.argmax(axis=1) == labels
    assert (
        terms(parts).tolist()
        == terms(corp_decomposition(Scores(prob.max(axis=1)), correct)).tolist()
    )


def test_logits_are_read_through_the_softmax(rng):
    logits = rng.normal(size=(200, 4)) * 3
    prob = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    labels = rng.integers(0, 4, size=200)
    for rule in ("brier", "log"):
        from_logits = corp_decomposition(logits, labels, score=rule, logits=True)
        assert_allclose(
            terms(from_logits), terms(corp_decomposition(prob, labels, score=rule)), rtol=1e-12
        )
    log_odds = rng.normal(size=50)
    targets = rng.integers(0, 2, size=50)
    assert_allclose(
        terms(corp_decomposition(Scores(log_odds), targets, logits=True)),
        terms(corp_decomposition(Scores(1 / (1 + np.exp(-log_odds))), targets)),
        rtol=1e-12,
    )


def test_one_row_and_one_outcome_class():
    parts = corp_decomposition(Scores([0.3]), [1])
    assert_allclose(terms(parts), [0.49, 0.49, 0.0, 0.0], rtol=1e-15)
    parts = corp_decomposition(Scores([0.3, 0.9]), [0, 0], score="log")
    assert parts.uncertainty == 0.0 and parts.discrimination == 0.0


# -- errors ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            lambda: corp_decomposition(Scores([0.2, 0.8]), [0, 1], score="spherical"),
            ValueError,
            "`score` must be 'brier' or 'log'; got 'spherical'",
        ),
        (
            lambda: corp_decomposition(Scores([0.2, 0.8]), [0, 1], score=None),
            (TypeError, ValueError),
            "`score`",
        ),
        (lambda: corp_decomposition([0.2, 0.8], [0, 1]), ValueError, "Scores"),
        (lambda: corp_decomposition(Scores([0.2, 1.5]), [0, 1]), ValueError, "logits=True"),
        (lambda: corp_decomposition(Scores([0.2, 0.8]), [0, 2]), ValueError, "`labels`"),
        (
            lambda: corp_decomposition(Scores([0.2, 0.8]), [0, 1], sample_weight=[1.0]),
            ValueError,
            "`sample_weight`",
        ),
        (
            lambda: corp_decomposition(Scores([0.2, 0.8]), [0, 1], sample_weight=[-1.0, 1.0]),
            ValueError,
            "`sample_weight` must be non-negative",
        ),
        (
            lambda: corp_decomposition(Scores([0.2, 0.8]), [0, 1], sample_weight=[0.0, 0.0]),
            ValueError,
            "positive sum",
        ),
    ],
)
def test_bad_input_is_refused_naming_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


# -- resampling under calibration: corp_test and the band -----------------------------------
def test_null_refits_are_the_decomposition_of_the_drawn_outcomes():
    # distinct forecasts: each value's drawn event count is that row's drawn outcome, so the
    # null MCBs are the slow oracle's on those outcomes
    rng = np.random.default_rng(11)
    forecasts = rng.uniform(0.05, 0.95, size=25)
    pooled = corp.pooled_forecasts(forecasts, rng.random(25) < forecasts)
    for rule in ("brier", "log"):
        (events,) = corp.calibrated_events(pooled, 6, np.random.default_rng(3))
        at = np.arange(25)
        fits, null = corp.null_refits(pooled, rule, 6, np.random.default_rng(3), at)
        for drawn, fit, mcb in zip(events, fits, null, strict=True):
            outcomes = drawn[np.argsort(np.argsort(forecasts))]
            expected = slow_corp(forecasts, outcomes, np.ones(25), rule)
            assert_allclose(mcb, expected[1], rtol=1e-12, atol=1e-15)
            assert_allclose(fit, slow_pav(list(drawn), [1.0] * 25), rtol=1e-12)


def test_null_distributions_keep_their_draws():
    # Values of main at e92d8c9, before the draws went into kept buffers and the weighted
    # float32 sort into packed keys: a seed gives the same null distribution and band.
    rng = np.random.default_rng(21)
    forecasts = rng.uniform(0.05, 0.95, 40)
    forecasts[:10] = np.round(forecasts[:10], 1)
    outcomes = rng.random(40) < forecasts
    weights = rng.uniform(0.5, 2, 40)
    null = stats.corp_test(Scores(forecasts), outcomes, n_resamples=4, random_state=0)
    expected = [0.03018563349766996, 0.04854510546828807, 0.04429885201064323, 0.03084413910299193]
    assert_allclose(null.null_distribution, expected, rtol=1e-12)
    curve = stats.corp_reliability(
        Scores(forecasts), outcomes, band="resampling", n_resamples=9, random_state=0
    )
    low = [0.0, 0.05714285714285714, 0.2833333333333333, 0.49230769230769234, 0.9142857142857143]
    high = [0.18461538461538451, 0.3630769230769231, 0.7497326203208555, 1.0, 1.0]
    assert_allclose(curve.band_low[::9], low, rtol=1e-12)
    assert_allclose(curve.band_high[::9], high, rtol=1e-12)
    distinct = Scores(forecasts[10:].astype(np.float32))
    weighted = stats.corp_test(
        distinct, outcomes[10:], n_resamples=4, random_state=0, sample_weight=weights[10:]
    )
    expected = [
        0.03924515845550995,
        0.046176850038403654,
        0.03525572693483826,
        0.02745039444888359,
    ]
    assert_allclose(weighted.null_distribution, expected, rtol=1e-12)


def test_corp_test_statistic_and_pvalue():
    forecasts, outcomes, _ = synthetic_sets()["overconfident"]
    result = stats.corp_test(Scores(forecasts), outcomes, n_resamples=99, random_state=0)
    assert result.statistic == corp_decomposition(Scores(forecasts), outcomes).miscalibration
    assert result.pvalue == 0.01  # every null MCB is below the observed one
    assert result.null_distribution.shape == (99,) and not result.null_distribution.flags.writeable
    again = stats.corp_test(Scores(forecasts), outcomes, n_resamples=99, random_state=0)
    assert np.array_equal(again.null_distribution, result.null_distribution)


def test_corp_test_pvalues_are_uniform_on_calibrated_simulations():
    pvalues = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        forecasts = rng.uniform(size=300)
        calibrated = rng.random(300) < forecasts
        test = stats.corp_test(Scores(forecasts), calibrated, n_resamples=49, random_state=seed)
        pvalues.append(test.pvalue)
    assert scipy.stats.kstest(pvalues, "uniform").pvalue > 1e-3


def test_corp_test_rejects_a_temperature_2_model():
    logits, labels = make_overconfident(3000, 5, temperature=2.0, seed=20)
    result = stats.corp_test(logits, labels, logits=True, n_resamples=99, random_state=0)
    assert result.pvalue == 0.01


def test_binomial_draws_have_the_law_of_row_draws():
    # unweighted: one Binomial(n, value) per distinct value; weights of 1: a draw per row
    forecasts = np.repeat(np.linspace(0.1, 0.9, 9), 40)
    outcomes = np.random.default_rng(2).random(forecasts.size) < forecasts
    counted = stats.corp_test(Scores(forecasts), outcomes, n_resamples=2000, random_state=1)
    drawn = stats.corp_test(
        Scores(forecasts), outcomes, n_resamples=2000, random_state=2, sample_weight=np.ones(360)
    )
    assert scipy.stats.ks_2samp(counted.null_distribution, drawn.null_distribution).pvalue > 1e-3


def test_chernoff_quantiles_match_a_simulation_of_the_argmax():
    # Z = argmax (W(t) - t^2), two-sided Brownian motion, on a grid of t in [-2, 2]
    rng = np.random.default_rng(0)
    step, n_paths = 0.004, 4000
    t = np.arange(1, 501) * step
    sides = [
        np.cumsum(rng.normal(0, np.sqrt(step), (n_paths, t.size)), axis=1) - t**2 for _ in "lr"
    ]
    left, right = sides
    best_left, best_right = left.max(axis=1), right.max(axis=1)
    argmax = np.where(best_right >= np.maximum(best_left, 0), t[right.argmax(axis=1)], 0.0)
    argmax = np.where(best_left > np.maximum(best_right, 0), -t[left.argmax(axis=1)], argmax)
    for level in (0.9, 0.95, 0.975):
        assert_allclose(corp.chernoff_quantile(level), np.quantile(argmax, level), atol=0.04)
    # the normal approximation of Dykstra & Carolan (1997): sd 0.52
    assert_allclose(corp.chernoff_quantile(0.975) / 1.959964, 0.52, rtol=0.03)
    assert corp.chernoff_quantile(0.5) == 0.0


def test_the_resampling_band_covers_calibrated_refits_and_agrees_with_the_asymptotics():
    rng = np.random.default_rng(4)
    forecasts = rng.uniform(size=20_000)
    outcomes = rng.random(20_000) < forecasts
    curve = stats.corp_reliability(Scores(forecasts), outcomes, n_resamples=200, random_state=1)
    assert curve.band == "resampling" and 0 < curve.pvalue <= 1
    asymptotic = stats.corp_reliability(Scores(forecasts), outcomes, band="continuous")
    assert asymptotic.band == "continuous" and asymptotic.pvalue is None
    middle = (curve.band_forecasts > 0.2) & (curve.band_forecasts < 0.8)
    width = (curve.band_high - curve.band_low)[middle]
    other = (asymptotic.band_high - asymptotic.band_low)[middle]
    assert_allclose(np.median(other / width), 1.0, rtol=0.2)
    # fresh calibrated outcomes: their PAV fit lies in the 90% band at 0.5 about 90% of the time
    index = np.searchsorted(
        curve.forecasts, curve.band_forecasts[np.argmin(abs(curve.band_forecasts - 0.5))]
    )
    inside = []
    for seed in range(100):
        fresh = np.random.default_rng(100 + seed).random(20_000) < forecasts
        fit = corp.pav_fit(corp.pooled_forecasts(forecasts, fresh))
        position = np.searchsorted(curve.band_forecasts, curve.forecasts[index])
        inside.append(curve.band_low[position] <= fit[index] <= curve.band_high[position])
    assert 0.8 <= np.mean(inside) <= 0.98


def _discrete_forecasts(seed, n_rows, n_values, weights=None):
    rng = np.random.default_rng(seed)
    grid = (np.arange(n_values) + 0.5) / n_values
    forecasts = grid[rng.integers(0, n_values, size=n_rows)]
    return forecasts, rng.random(n_rows) < forecasts


@pytest.mark.parametrize("weighted", [False, True])
def test_the_discrete_band_is_the_normal_band_of_each_value(weighted):
    forecasts, outcomes = _discrete_forecasts(3, 5000, 8)
    weights = np.random.default_rng(4).uniform(0.2, 3.0, size=5000) if weighted else None
    curve = stats.corp_reliability(
        Scores(forecasts), outcomes, band="discrete", alpha=0.1, sample_weight=weights
    )
    assert curve.band == "discrete" and curve.pvalue is None
    z = scipy.stats.norm.ppf(0.95)
    for x, low, high in zip(curve.band_forecasts, curve.band_low, curve.band_high, strict=True):
        held = forecasts == x
        if weighted:  # Kish's effective count of the value's rows
            n_x = weights[held].sum() ** 2 / (weights[held] ** 2).sum()
        else:
            n_x = held.sum()
        half = z * np.sqrt(x * (1 - x) / n_x)
        assert_allclose([low, high], [max(x - half, 0), min(x + half, 1)], rtol=1e-13)


def test_the_discrete_band_covers_calibrated_refits():
    forecasts, outcomes = _discrete_forecasts(5, 20_000, 10)
    curve = stats.corp_reliability(Scores(forecasts), outcomes, band="discrete", alpha=0.1)
    inside = []
    for seed in range(200):
        fresh = np.random.default_rng(1000 + seed).random(20_000) < forecasts
        fit = corp.pav_fit(corp.pooled_forecasts(forecasts, fresh))
        inside.append((curve.band_low <= fit) & (fit <= curve.band_high))
    coverage = np.mean(inside, axis=0)  # per value: about 90 %
    assert np.all((coverage > 0.83) & (coverage < 0.96)), coverage


@pytest.mark.parametrize(
    ("n_values", "band"),
    [(20, "discrete"), (158, "discrete"), (159, "continuous"), (None, "continuous")],
)
def test_auto_takes_the_authors_rule_above_the_resampling_rows(n_values, band):
    # reliabilitydiag's rule: discrete asymptotics when n >= 8 * (distinct values)**2
    n_rows = 200_000
    if n_values is None:
        forecasts = np.random.default_rng(6).uniform(size=n_rows)
        outcomes = np.random.default_rng(7).random(n_rows) < forecasts
    else:
        forecasts, outcomes = _discrete_forecasts(6, n_rows, n_values)
    assert (n_rows >= 8 * np.unique(forecasts).size ** 2) == (band == "discrete")
    assert stats.corp_reliability(Scores(forecasts), outcomes).band == band
    few = stats.corp_reliability(Scores(forecasts[:100_000]), outcomes[:100_000], n_resamples=2)
    assert few.band == "resampling"


def test_corp_reliability_is_the_decomposition_and_its_pav_fit(rng):
    prob = rng.dirichlet(np.ones(3), size=400)
    labels = rng.integers(0, 3, size=400)
    curve = stats.corp_reliability(prob, labels, n_resamples=20, random_state=0, score="log")
    assert curve.decomposition == corp_decomposition(prob, labels, score="log")
    scores, targets = prob.max(axis=1), prob.argmax(axis=1) == labels
    order = np.unique(scores)
    assert np.array_equal(curve.forecasts, order)
    assert np.all(np.diff(curve.recalibrated) >= 0) and np.all(curve.band_low <= curve.band_high)
    assert curve.band_forecasts.size == min(order.size, 1000)
    assert stats.corp_reliability(prob, labels, band="auto").band == "resampling"
    assert stats.CORP_ASYMPTOTIC_ROWS == 100_000
    del targets


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        (
            {"band": "bootstrap"},
            ValueError,
            "`band` must be 'auto' or 'resampling' or 'continuous' or 'discrete'; got 'boot",
        ),
        ({"alpha": 1.0}, ValueError, "`alpha`"),
        ({"n_resamples": 0}, ValueError, "`n_resamples`"),
        ({"random_state": "seed"}, TypeError, "`random_state`"),
        ({"score": "crps"}, ValueError, "`score`"),
    ],
)
def test_corp_reliability_refuses_bad_options(options, error, message):
    with pytest.raises(error, match=message):
        stats.corp_reliability(Scores([0.2, 0.8]), [0, 1], **options)
