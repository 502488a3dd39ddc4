"""The tests with p-values of calibration_toolbox.stats: KS, Kuiper and Spiegelhalter's Z."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from pvalue_peers import synthetic_sets
from scipy import stats as scipy_stats
from scipy.integrate import trapezoid
from scipy.special import ndtr, softmax

from calibration_toolbox import KSCE, KuiperCE, Scores
from calibration_toolbox.stats import (
    CalibrationTestResult,
    _brownian_range_sf,
    _max_abs_brownian_sf,
    ks_test,
    kuiper_test,
    spiegelhalter_test,
)
from tests.conftest import load_real

TESTS = [ks_test, kuiper_test, spiegelhalter_test]
ids = {"ids": lambda function: function.__name__}
EPSILON = np.finfo(np.float64).eps

# python tests/references/pvalue_peers.py (scratch environment):
# python 3.11.7, numpy 2.4.6, scipy 1.17.1, mapie 1.6.0, mcgrad 0.1.5
# name: (ecce, sigma, ecce_sigma, ecce_pvalue)
MCGRAD = {
    "calibrated": (
        0.017441207147871382,
        0.009196472172416563,
        1.8965106206903626,
        0.23037977728215586,
    ),
    "overconfident": (
        0.0606273438968422,
        0.009148431362513159,
        6.627075341601219,
        1.3696110912064796e-10,
    ),
    "underconfident": (
        0.1669817525531442,
        0.026974347596350548,
        6.1903907761511805,
        2.4006097110174096e-09,
    ),
    "weighted": (
        0.030896627955079695,
        0.01523433031405341,
        2.0280922966845534,
        0.16980428322775376,
    ),
    "small": (0.27741641643034026, 0.06366467312367224, 4.357462354223403, 5.2631648496115346e-05),
}
# name: (KS statistic, KS p, Kuiper statistic, Kuiper p, Spiegelhalter Z, its p)
MAPIE = {
    "calibrated": (
        1.1618329078477447,
        0.48962425962618616,
        1.8965106221394092,
        0.2303797765303548,
        -0.22937162501913294,
        0.5907099558724228,
    ),
    "overconfident": (
        6.338872699358915,
        4.541955700432254e-10,
        6.627075356958721,
        1.3890877337274787e-10,
        9.108743147474572,
        0.0,
    ),
    "underconfident": (
        6.058233709979951,
        2.751434191594626e-09,
        6.190390758531212,
        2.4006653331909433e-09,
        0.46238071324128716,
        0.32190416386488385,
    ),
    "small": (
        4.111400098887005,
        7.86534060558397e-05,
        4.357462355235595,
        5.26316482624134e-05,
        2.844696818743577,
        0.002222685637705335,
    ),
}
# mcgrad's p-value is 1 - cdf, whose absolute error is a few 1e-17 (relative 4e-7 at
# p = 1.4e-10); MAPIE truncates its series for an error of 1e-8 (its EPSILON).
MCGRAD_P_ATOL = 1e-15
MAPIE_P_ATOL = 1e-8


def calibrated_pairs(rng, n):
    scores = rng.uniform(0.02, 0.98, n)
    return scores, rng.uniform(size=n) < scores


def tempered(rng, n, k=10, temperature=2.0):
    """Labels drawn from softmax(z); the model reports softmax(z / temperature)."""
    logits = 2.5 * rng.normal(size=(n, k))
    true = softmax(logits, axis=1)
    labels = (true.cumsum(axis=1) < rng.uniform(size=(n, 1))).sum(axis=1)
    return softmax(logits / temperature, axis=1), np.minimum(labels, k - 1)


# -- oracles: loops over the rows, and the two series of each distribution summed long ------
def loop_oracle(scores, targets, weights=None):
    """(KS, Kuiper, sigma) from the definition: a loop, the walk read where the score changes."""
    scores = [float(s) for s in scores]
    weights = [1.0] * len(scores) if weights is None else [float(w) for w in weights]
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    total = sum(weights)
    walk, values = 0.0, [0.0]
    for position, i in enumerate(order):
        walk += weights[i] * (float(targets[i]) - scores[i]) / total
        last = position == len(order) - 1 or scores[order[position + 1]] != scores[i]
        if last:
            values.append(walk)
    variance = sum(w * w * s * (1 - s) for w, s in zip(weights, scores, strict=True))
    return max(abs(v) for v in values), max(values) - min(values), variance**0.5 / total


def spiegelhalter_oracle(scores, targets, weights=None):
    weights = np.ones(len(scores)) if weights is None else weights
    numerator = sum(
        w * (y - s) * (1 - 2 * s) for s, y, w in zip(scores, targets, weights, strict=True)
    )
    variance = sum(
        w * w * (1 - 2 * s) ** 2 * s * (1 - s) for s, w in zip(scores, weights, strict=True)
    )
    return numerator / variance**0.5


def max_abs_series(x, terms=200):
    """Both series of P(max |B| >= x), each summed term by term far past its switch."""
    fourier = 1 - 4 / np.pi * sum(
        (-1) ** k / (2 * k + 1) * np.exp(-((2 * k + 1) ** 2) * np.pi**2 / (8 * x * x))
        for k in range(terms)
    )
    images = 4 * sum((-1) ** (k + 1) * ndtr(-(2 * k - 1) * x) for k in range(1, terms))
    return fourier, images


def range_series(x, terms=200):
    """Both series of P(range of B >= x), each summed term by term."""
    fourier = 1 - sum(
        (8 / x**2 + 2 / ((k + 0.5) * np.pi) ** 2) * np.exp(-2 * ((k + 0.5) * np.pi / x) ** 2)
        for k in range(terms)
    )
    images = 8 * sum((-1) ** (k - 1) * k * ndtr(-k * x) for k in range(1, terms))
    return fourier, images


@pytest.mark.parametrize("x", [0.3, 0.6, 0.9, 0.999, 1.0, 1.3, 1.9, 2.0, 2.5])
def test_distributions_match_both_series_summed_long(x):
    fourier, images = max_abs_series(x)
    assert_allclose(fourier, images, rtol=1e-13)  # the two representations agree
    assert_allclose(_max_abs_brownian_sf(x), fourier, rtol=1e-14)
    fourier, images = range_series(x)
    assert_allclose(fourier, images, rtol=1e-13)
    assert_allclose(_brownian_range_sf(x), fourier, rtol=1e-14)


@pytest.mark.parametrize("x", [3.0, 5.0, 8.0, 12.0, 30.0])
def test_tails_are_accurate_far_out(x):
    # in the tail the image series is exact to the last digits (the Fourier one cancels)
    assert_allclose(_max_abs_brownian_sf(x), max_abs_series(x)[1], rtol=1e-14)
    assert_allclose(_brownian_range_sf(x), range_series(x)[1], rtol=1e-14)
    # the leading terms: two one-sided first passages, and Feller's first term
    assert_allclose(_max_abs_brownian_sf(x), 4 * ndtr(-x), rtol=4 * ndtr(-3 * x) / ndtr(-x))
    assert_allclose(_brownian_range_sf(x), 8 * ndtr(-x), rtol=3 * ndtr(-2 * x) / ndtr(-x))


def test_distributions_at_zero_and_known_values():
    assert _max_abs_brownian_sf(0.0) == 1.0 and _brownian_range_sf(0.0) == 1.0
    # MAPIE's doctests: kolmogorov_smirnov_cdf(1) = 0.3708, kuiper_cdf(1) = 0.0634
    assert_allclose(1 - _max_abs_brownian_sf(1.0), 0.3708, atol=5e-5)
    assert_allclose(1 - _brownian_range_sf(1.0), 0.0634, atol=5e-5)
    # the mean of the range is 2 sqrt(2 / pi) and of the largest |B| is sqrt(pi / 2)
    grid = np.linspace(0, 12, 24001)
    assert_allclose(
        trapezoid([_brownian_range_sf(x) for x in grid], grid), 2 * np.sqrt(2 / np.pi), 1e-7
    )
    assert_allclose(
        trapezoid([_max_abs_brownian_sf(x) for x in grid], grid), np.sqrt(np.pi / 2), 1e-7
    )


def test_not_the_brownian_bridge():
    # the Kolmogorov distribution is that of a bridge, whose maximum is smaller
    assert _max_abs_brownian_sf(1.5) > 1.5 * scipy_stats.kstwobign.sf(1.5)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("weighted", [False, True])
def test_cumulative_tests_match_loop_oracle(seed, weighted):
    rng = np.random.default_rng(seed)
    n = 60
    scores = np.round(rng.uniform(size=n), 1)  # ties
    targets = rng.uniform(size=n) < scores**1.5
    weights = rng.uniform(0, 3, n) if weighted else None
    ks, kuiper, sigma = loop_oracle(scores, targets, weights)
    ks_result = ks_test(Scores(scores), targets, sample_weight=weights)
    kuiper_result = kuiper_test(Scores(scores), targets, sample_weight=weights)
    assert_allclose([ks_result.statistic, kuiper_result.statistic], [ks, kuiper], rtol=1e-12)
    assert_allclose([ks_result.sigma, kuiper_result.sigma], sigma, rtol=1e-12)
    assert_allclose(ks_result.scaled_statistic, ks / sigma, rtol=1e-12)
    assert_allclose(ks_result.pvalue, max_abs_series(ks / sigma)[0], rtol=1e-12)
    assert_allclose(kuiper_result.pvalue, range_series(kuiper / sigma)[0], rtol=1e-12)
    z = spiegelhalter_oracle(scores, targets, weights)
    result = spiegelhalter_test(Scores(scores), targets, sample_weight=weights)
    assert_allclose(result.scaled_statistic, z, rtol=1e-12)
    assert_allclose(result.pvalue, 2 * scipy_stats.norm.sf(abs(z)), rtol=1e-12)


def test_top_label_form_and_the_metrics():
    rng = np.random.default_rng(5)
    prob, labels = tempered(rng, 500, k=4)
    scores, targets = prob.max(axis=1), prob.argmax(axis=1) == labels
    for test in TESTS:
        assert test(prob, labels) == test(Scores(scores), targets)
        logits = np.log(prob)
        assert_allclose(test(logits, labels, logits=True).statistic, test(prob, labels).statistic)
    assert_allclose(ks_test(prob, labels).statistic, KSCE(prob, labels), rtol=1e-15)
    assert_allclose(kuiper_test(prob, labels).statistic, KuiperCE(prob, labels), rtol=1e-15)
    names = np.array(["ant", "bee", "cat", "dog"])
    assert ks_test(prob, names[labels], classes=names) == ks_test(prob, labels)


def test_result_fields():
    result = kuiper_test(Scores([0.2, 0.4, 0.6, 0.8]), [0, 1, 0, 1])
    assert isinstance(result, CalibrationTestResult)
    assert [f.name for f in dataclasses.fields(result)] == [
        "statistic",
        "sigma",
        "scaled_statistic",
        "pvalue",
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.pvalue = 0.5
    assert all(type(value) is float for value in dataclasses.astuple(result))
    # the walk 0, -0.05, 0.1, -0.05, 0: range 0.15
    assert_allclose(result.statistic, 0.15, rtol=1e-12)
    assert_allclose(result.sigma, np.sqrt(0.16 + 0.24 + 0.24 + 0.16) / 4, rtol=1e-12)


# -- peers --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(MCGRAD))
def test_kuiper_matches_mcgrad(name):
    scores, targets, weights = synthetic_sets()[name]
    statistic, sigma, scaled, pvalue = MCGRAD[name]
    result = kuiper_test(Scores(scores), targets, sample_weight=weights)
    assert_allclose(
        [result.statistic, result.sigma, result.scaled_statistic],
        [statistic, sigma, scaled],
        rtol=1e-12,
    )
    assert_allclose(result.pvalue, pvalue, rtol=1e-12, atol=MCGRAD_P_ATOL)


def mapie_walk(scores, targets):
    """MAPIE 1.6.0's walk: each score times 1 + 1e-8 N(0, 1) (RandomState(1)), no origin."""
    noise = 1e-8 * np.random.RandomState(1).normal(size=len(scores))
    jittered = scores * (1 + noise)
    order = np.argsort(jittered)
    return np.cumsum(targets[order] - jittered[order]) / len(scores)


def mapie_pvalues(ks, kuiper, epsilon=1e-8):
    """MAPIE 1.6.0's p-values of its scaled statistics: 1 - cdf, each theta series cut at
    its kmax for an error of ``epsilon`` (its EPSILON, 1e-8)."""
    pi = np.pi
    kmax = int(np.ceil(0.5 + ks * np.sqrt(2) / pi * np.sqrt(np.log(4 / (pi * epsilon)))))
    half = np.arange(kmax) + 0.5
    ks_cdf = (
        2 / pi * np.sum((-1.0) ** np.arange(kmax) / half * np.exp(-((half * pi / ks) ** 2) / 2))
    )
    factor = 4 / (np.sqrt(2 * pi) * epsilon) * (1 / kuiper + kuiper / pi**2)
    kmax = int(np.ceil(0.5 + kuiper / (pi * np.sqrt(2)) * np.sqrt(np.log(factor))))
    half = np.arange(kmax) + 0.5
    weights = 8 / kuiper**2 + 2 / (half * pi) ** 2
    kuiper_cdf = np.sum(weights * np.exp(-2 * (half * pi / kuiper) ** 2))
    return 1 - ks_cdf, 1 - kuiper_cdf


@pytest.mark.parametrize("name", list(MAPIE))
def test_mapie_reproduced_and_compared(name):
    scores, targets, _ = synthetic_sets()[name]
    ks, ks_p, kuiper, kuiper_p, z, z_p = MAPIE[name]
    # MAPIE's statistics, reproduced from its formula (sigma of the scores as given)
    walk = mapie_walk(scores, targets)
    sigma = np.sqrt(np.sum(scores * (1 - scores))) / len(scores)
    assert_allclose(np.abs(walk).max() / sigma, ks, rtol=1e-12)
    assert_allclose(np.ptp(walk) / sigma, kuiper, rtol=1e-12)
    # 1 - cdf: the order of the sum (a loop there, np.sum here) moves it by a few ulps of 1
    assert_allclose(mapie_pvalues(ks, kuiper), [ks_p, kuiper_p], rtol=1e-12, atol=1e-15)
    # ours: no jitter (a relative change of 1e-8 in the scores), the origin in the walk
    ks_result = ks_test(Scores(scores), targets)
    kuiper_result = kuiper_test(Scores(scores), targets)
    assert_allclose(ks_result.scaled_statistic, ks, rtol=1e-7)
    assert_allclose(kuiper_result.scaled_statistic, kuiper, rtol=1e-7)
    assert_allclose([ks_result.pvalue, kuiper_result.pvalue], [ks_p, kuiper_p], atol=MAPIE_P_ATOL)
    # Spiegelhalter: the same Z; MAPIE's p-value is one-sided, 1 - Phi(Z)
    result = spiegelhalter_test(Scores(scores), targets)
    assert_allclose(result.scaled_statistic, z, rtol=1e-12)
    assert_allclose(result.pvalue, max(2 * min(z_p, 1 - z_p), EPSILON), rtol=1e-12, atol=1e-15)


def test_the_origin_changes_the_kuiper_range_of_a_one_signed_walk():
    # walk 0 -> -0.1 -> -0.3 -> -0.2 (MAPIE's hand example): from h_1 the range is 0.2,
    # from the origin 0.3
    scores, targets = np.array([0.7, 0.3, 0.6]), np.array([1, 0, 0])
    result = kuiper_test(Scores(scores), targets)
    assert_allclose(result.statistic, 0.3, rtol=1e-12)
    assert_allclose(np.ptp(mapie_walk(scores, targets)), 0.2, rtol=1e-7)


# -- behaviour under calibration and miscalibration ------------------------------------------
@pytest.mark.parametrize("test", TESTS, **ids)
def test_pvalues_are_uniform_on_calibrated_simulations(test):
    pvalues = []
    for seed in range(200):
        scores, targets = calibrated_pairs(np.random.default_rng(seed), 2000)
        pvalues.append(test(Scores(scores), targets).pvalue)
    # generous: a valid test gives this p-value below 1e-3 once in a thousand suites
    assert scipy_stats.kstest(pvalues, "uniform").pvalue > 1e-3


@pytest.mark.parametrize("test", [ks_test, kuiper_test], **ids)
def test_a_temperature_two_model_is_rejected(test):
    prob, labels = tempered(np.random.default_rng(7), 5000)
    assert test(prob, labels).pvalue < 1e-6
    calibrated, labels = tempered(np.random.default_rng(7), 5000, temperature=1.0)
    assert test(calibrated, labels).pvalue > 1e-3


def test_spiegelhalter_rejects_a_temperature_two_binary_model():
    rng = np.random.default_rng(8)
    logits = 2 * rng.normal(size=5000)
    targets = rng.uniform(size=5000) < 1 / (1 + np.exp(-logits))
    assert spiegelhalter_test(Scores(1 / (1 + np.exp(-logits / 2))), targets).pvalue < 1e-6
    assert spiegelhalter_test(Scores(1 / (1 + np.exp(-logits))), targets).pvalue > 1e-3


def test_pvalues_are_floored_at_machine_epsilon():
    scores = np.full(4000, 0.3)
    for test in TESTS:
        result = test(Scores(scores), np.ones(4000, dtype=int))
        assert result.pvalue == EPSILON and result.scaled_statistic > 40


# -- properties ----------------------------------------------------------------------------------
pairs = st.integers(2, 40).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(0.01, 0.99), min_size=n, max_size=n),
        st.lists(st.booleans(), min_size=n, max_size=n),
        st.lists(st.floats(0.1, 10), min_size=n, max_size=n),
    )
)


@given(pairs, st.randoms(use_true_random=False))
def test_properties(case, random):
    scores, targets, weights = (np.array(values) for values in case)
    order = list(range(len(scores)))
    random.shuffle(order)
    for test in TESTS:
        result = test(Scores(scores), targets, sample_weight=weights)
        assert EPSILON <= result.pvalue <= 1
        assert_allclose(result.scaled_statistic, result.statistic / result.sigma, rtol=1e-14)
        scaled = test(Scores(scores), targets, sample_weight=3 * weights)
        assert_allclose(dataclasses.astuple(scaled), dataclasses.astuple(result), rtol=1e-12)
        shuffled = test(Scores(scores[order]), targets[order], sample_weight=weights[order])
        assert_allclose(
            dataclasses.astuple(shuffled), dataclasses.astuple(result), rtol=1e-9, atol=1e-15
        )
    assert (
        kuiper_test(Scores(scores), targets).statistic
        >= ks_test(Scores(scores), targets).statistic
    )


def test_integer_weights_give_the_statistic_of_duplicated_rows_not_its_sigma():
    rng = np.random.default_rng(9)
    scores, targets = calibrated_pairs(rng, 200)
    counts = rng.integers(1, 4, 200)
    duplicated = Scores(np.repeat(scores, counts)), np.repeat(targets, counts)
    for test in TESTS:
        weighted = test(Scores(scores), targets, sample_weight=counts)
        assert_allclose(weighted.statistic, test(*duplicated).statistic, rtol=1e-12)
        assert weighted.sigma > test(*duplicated).sigma
    unit = ks_test(Scores(scores), targets, sample_weight=np.ones(200))
    assert_allclose(
        dataclasses.astuple(unit),
        dataclasses.astuple(ks_test(Scores(scores), targets)),
        rtol=1e-14,
    )


def test_inputs_are_not_mutated():
    rng = np.random.default_rng(10)
    prob, labels = tempered(rng, 300, k=3)
    weights = rng.uniform(size=300)
    copies = prob.copy(), labels.copy(), weights.copy()
    for test in TESTS:
        test(prob, labels, sample_weight=weights)
        test(Scores(prob[:, 0]), labels == 0)
    for array, copy in zip((prob, labels, weights), copies, strict=True):
        np.testing.assert_array_equal(array, copy)


def test_real_predictions():
    prob, labels = load_real("wideresnet-16-4-cifar-10")
    ks, kuiper, sigma = loop_oracle(prob.max(axis=1), prob.argmax(axis=1) == labels)
    result = kuiper_test(prob, labels)
    assert_allclose([result.statistic, result.sigma], [kuiper, sigma], rtol=1e-9)
    assert_allclose(ks_test(prob, labels).statistic, ks, rtol=1e-9)
    assert result.pvalue == EPSILON  # an overconfident network: tens of sigmas


@pytest.mark.parametrize("test", TESTS, **ids)
def test_bad_input(test):
    with pytest.raises(ValueError, match="variance of 0 under calibration"):
        test(Scores([0.0, 1.0, 1.0]), [0, 1, 0])
    with pytest.raises(ValueError, match="variance of 0 under calibration"):
        test(Scores([0.2, 1.0]), [0, 1], sample_weight=[0.0, 1.0])
    with pytest.raises(ValueError, match=r"ambiguous|Scores"):
        test(np.array([0.2, 0.7]), [0, 1])
    with pytest.raises(ValueError, match="`sample_weight` must be non-negative"):
        test(Scores([0.2, 0.7]), [0, 1], sample_weight=[1.0, -1.0])
    with pytest.raises(ValueError, match="`labels`"):
        test([[0.2, 0.8], [0.6, 0.4]], [0, 2])
    with pytest.raises(TypeError):
        test(Scores([0.2, 0.7]), [0, 1], bins=3)


def test_spiegelhalter_refuses_scores_of_one_half():
    with pytest.raises(ValueError, match=r"variance of 0 .*0, 1/2 or 1\)"):
        spiegelhalter_test(Scores([0.5, 0.5, 1.0]), [0, 1, 1])


# -- the command line's report ---------------------------------------------------------------
def test_the_report_holds_the_tests_of_every_column(tmp_path, capsys):
    import json

    from calibration_toolbox.cli import main

    prob, labels = tempered(np.random.default_rng(30), 2000, k=4)
    np.savez(tmp_path / "t.npz", probs=prob, labels=labels)
    assert main(["report", str(tmp_path / "t.npz"), "--json"]) == 0
    (whole,) = json.loads(capsys.readouterr().out)["results"]
    for name, test in zip(["KS", "Kuiper", "Spiegelhalter"], TESTS, strict=True):
        assert whole["tests"][name] == dataclasses.asdict(test(prob, labels))
    # a recalibrated column has its own tests (on the held-out half, as its metrics)
    assert main(["report", str(tmp_path / "t.npz"), "--method", "temperature", "--json"]) == 0
    before, after = json.loads(capsys.readouterr().out)["results"]
    assert set(after["tests"]) == {"KS", "Kuiper", "Spiegelhalter"}
    assert after["tests"]["KS"]["pvalue"] > before["tests"]["KS"]["pvalue"]

    assert main(["report", str(tmp_path / "t.npz")]) == 0
    text = capsys.readouterr().out
    assert "calibration tests (H0: calibrated)" in text
    assert re.search(r"^KS +\S+$", text, flags=re.MULTILINE)
    assert re.search(r"^Spiegel\. Z +\S+$", text, flags=re.MULTILINE)
    block = text.split("calibration tests")[1].split("\n\n")[0]
    assert all(len(line) <= 80 for line in block.splitlines())


def test_the_report_leaves_an_undefined_test_blank(tmp_path, capsys):
    import json

    from calibration_toolbox.cli import main

    scores = np.array([0.5, 0.5, 0.5, 0.5, 0.2, 0.8])
    np.savez(tmp_path / "s.npz", confidence=scores, correct=np.array([1, 0, 1, 0, 0, 1]))
    assert main(["report", str(tmp_path / "s.npz"), "--scores", "--json"]) == 0
    tests = json.loads(capsys.readouterr().out)["results"][0]["tests"]
    assert tests["KS"] is not None and tests["Spiegelhalter"] is not None
    np.savez(tmp_path / "h.npz", confidence=np.full(4, 0.5), correct=np.array([1, 0, 1, 0]))
    assert main(["report", str(tmp_path / "h.npz"), "--scores", "--json"]) == 0
    tests = json.loads(capsys.readouterr().out)["results"][0]["tests"]
    assert tests["Spiegelhalter"] is None and tests["KS"]["pvalue"] == 1.0


def test_the_html_page_shows_the_tests():
    from calibration_toolbox._html import _test_section

    results = [
        {"method": "uncalibrated", "tests": {"KS": {"pvalue": 2.2e-16, "scaled_statistic": 45.0}}},
        {"method": "temperature", "tests": {"KS": None}},
    ]
    section = _test_section(results)
    assert '<table id="tests">' in section and "p = 2.2e-16" in section
    assert "45.00 sigmas" in section
    assert _test_section([{"method": "uncalibrated", "metrics": {}}]) == ""
