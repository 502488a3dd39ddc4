"""PlattScaling and BetaCalibration: peer references, objective and edge cases.

The estimator contract shared by every recalibrator is in test_recalibrator_contract.py.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from binary_platt_beta import (
    BETA_PROBLEMS,
    LOGIT_GRID,
    PROB_GRID,
    beta_problem,
    binary_logit_problem,
    multiclass_problem,
)
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import check_grad, minimize
from scipy.special import expit, log_expit, logit, softmax

from calibration_toolbox import ECE, negative_log_likelihood
from calibration_toolbox.recalibration import binary
from calibration_toolbox.recalibration.binary import (
    BETA_EPS,
    BetaCalibration,
    PlattScaling,
)
from tests.conftest import REAL_FILES, load_real

# Reference values made by tests/references/binary_platt_beta.py (how to rerun it:
#   tests/references/README.md)
# (Python 3.11.7, scikit-learn 1.9.1, betacal 1.1.0, numpy 2.4.6, scipy 1.17.1) on the problems
# above: binary_logit_problem(0, 600); multiclass_problem(1, 800, 4) with its weights, scores
# softmax(logits) or the logits, predictions on the first 5 rows; beta_problem(2, 700, ...).
# "params" are [a, b] of sigmoid(a s + b) (Platt) or [a, b, c] of
# sigmoid(a ln s - b ln(1 - s) + c) (beta), per class for the one-vs-rest cases, whose "proba"
# are renormalised to sum to 1 per row.
# * platt_*: sklearn.calibration._SigmoidCalibration().fit(s, y, w) on the score column
#   (a = -a_, b = -b_); probabilities from its predict.
# * plain_*: LogisticRegression(C=np.inf, solver="newton-cholesky", tol=1e-12,
#   max_iter=1000).fit(s[:, None], y, w) (C=np.inf is 1.9's spelling of penalty=None).
# * beta_*: betacal.BetaCalibration(parameters).fit(s, y, w), with the LogisticRegression
#   inside betacal.beta_calibration replaced by functools.partial(LogisticRegression,
#   solver="newton-cholesky", tol=1e-12, max_iter=1000): betacal's default lbfgs with tol=1e-4
#   leaves a and b 5e-5 to 2e-3 from the optimum on beta_pos.  [a, b, m] from
#   calibrator_.map_, c from lr_.intercept_ ((a - b) ln 2 for 'ab').  'ab' only on
#   beta_pos: betacal does not bound it, and on beta_neg_b its b is negative.
REFERENCE = {
    "platt_binary": {
        "params": [0.9559732555014918, -0.4632010429838143],
        "proba": [
            6.557594812871993e-06,
            0.00030013227484912154,
            0.013558450530306118,
            0.3862267227518018,
            0.9664532188863371,
            0.9992423908187777,
            0.9999834395723256,
        ],
    },
    "plain_binary": {
        "params": [0.9943913979526771, -0.4716282037947756],
        "proba": [
            4.100797544867161e-06,
            0.00021888188900093944,
            0.011552955298069342,
            0.38423094207787767,
            0.9708562345940666,
            0.9994380316947961,
            0.9999894678608451,
        ],
    },
    "platt_multi_prob": {
        "params": [
            [6.026329620329967, -3.340852817143116],
            [5.5409126677200655, -2.990683556825484],
            [6.6449490214394284, -3.6808088519255167],
            [5.744866821404626, -3.06895048272944],
        ],
        "proba": [
            [0.09478818592497375, 0.4006996418899294, 0.1940367638193511, 0.3104754083657458],
            [0.040738439213376554, 0.5836488923874996, 0.31936045791610135, 0.05625221048302263],
            [0.03380869904833201, 0.12524653295847976, 0.024251037901917724, 0.8166937300912704],
            [0.18858938664001598, 0.09473048428537864, 0.45067193500887553, 0.26600819406572995],
            [0.04944495664523726, 0.8643682625962914, 0.025651359923574597, 0.06053542083489665],
        ],
    },
    "platt_multi_logits": {
        "params": [
            [0.8699580270669612, -3.4436625202358275],
            [0.6971399224132034, -2.7011624758386907],
            [0.8289469904107614, -3.300432942463961],
            [0.8209634336867183, -3.1115514101883774],
        ],
        "proba": [
            [0.08484287486291868, 0.4236757603556998, 0.21365008105455338, 0.27783128372682814],
            [0.014456494493170772, 0.5875150606000846, 0.35577238697962243, 0.04225605792712218],
            [0.007067434566314871, 0.42889851472598495, 0.0008420994039621123, 0.5631919513037381],
            [0.22861431990603134, 0.13207886136500172, 0.3442569025971894, 0.29504991613177756],
            [0.06941681289279136, 0.8274356056759956, 0.012538775229930852, 0.0906088062012822],
        ],
    },
    "plain_multi_logits": {
        "params": [
            [0.8901158326453359, -3.507676873729147],
            [0.7075712869757564, -2.7325886545573694],
            [0.8456410595516859, -3.353301107008403],
            [0.8363002784634802, -3.1583158278027663],
        ],
        "proba": [
            [0.08164446119104647, 0.4291344119019777, 0.21177369887373018, 0.2774474280332457],
            [0.013227991013645997, 0.5926052449503355, 0.3539177857279306, 0.04024897830808792],
            [0.006445841029482421, 0.4294986722615346, 0.0007435174997065314, 0.5633119692092765],
            [0.22747386493163174, 0.1306534328166192, 0.3462545344694267, 0.29561816778232225],
            [0.06552462781651083, 0.8357824494243262, 0.01153633645165801, 0.08715658630750493],
        ],
    },
    "beta_pos_abm": {
        "params": [2.3943871147523477, 0.5095544983739723, 1.1269197130177302],
        "proba": [
            1.3276773481106415e-14,
            2.025232966326847e-07,
            0.0024240555086627305,
            0.17163099286794764,
            0.45523352170170245,
            0.708144960745467,
            0.9262588378812924,
            0.9904762942854701,
            0.9997161193889089,
        ],
    },
    "beta_pos_ab": {
        "params": [2.72057136722354, 0.20570326804557262, 1.7431737324253571],
        "proba": [
            2.714079839044381e-16,
            3.9393629380504676e-08,
            0.0016648092724435783,
            0.18862781879859403,
            0.5,
            0.7350651587617106,
            0.9020186978633827,
            0.9593555567832649,
            0.9898999817962387,
        ],
    },
    "beta_pos_am": {
        "params": [1.3183690323393464, 1.3183690323393464, -0.30928338706253966],
        "proba": [
            9.025396832846524e-09,
            8.149112041343206e-05,
            0.01490354355110629,
            0.19367043114622734,
            0.42328966558762215,
            0.6916336477636637,
            0.9726836580733936,
            0.9998487413839606,
            0.9999999832464658,
        ],
    },
    "beta_neg_b_abm": {
        "params": [2.1440855181497604, 0.0, 1.9307205089641877],
        "proba": [
            9.418639060181514e-13,
            2.548259206873098e-06,
            0.011069990462759171,
            0.3428317785913477,
            0.6093435443500674,
            0.7624174189681499,
            0.8606552931558951,
            0.8730916488852046,
            0.873328910684121,
        ],
    },
    "beta_neg_b_am": {
        "params": [1.027693022958988, 1.027693022958988, 0.24134234704342908],
        "proba": [
            8.682715699865952e-07,
            0.0010512943101826724,
            0.0581600288770311,
            0.3476421188175809,
            0.5600444230311571,
            0.7525212371203651,
            0.9632905810433454,
            0.9993509594066365,
            0.9999994641682712,
        ],
    },
    "beta_multi_abm": {
        "params": [
            [0.8673578030808281, 0.6440086370027182, 0.05814602281452156],
            [0.8625294537599789, 0.5187653337629808, 0.3484790028257939],
            [0.8467284825261601, 1.0366405587239622, -0.36317957262523964],
            [0.7057414021023355, 0.7671014856754433, -0.1062236040602886],
        ],
        "proba": [
            [0.11999394095106097, 0.3739855599459239, 0.2097072914192105, 0.2963132076838046],
            [0.019053313613278614, 0.5604345311185824, 0.3630071015156685, 0.05750505375247056],
            [
                0.0012005950283992429,
                0.27314671067281826,
                8.579664929477249e-05,
                0.7255668976494878,
            ],
            [0.2481200899896835, 0.10374917793957802, 0.3549840494073593, 0.2931466826633793],
            [0.09228631253064863, 0.7873719416497196, 0.009713589516410033, 0.1106281563032217],
        ],
    },
}

# _SigmoidCalibration stops its L-BFGS-B at gtol=1e-6 on the *summed* loss, i.e. ~1e-8 from
# the optimum in relative terms; the Newton-Cholesky references agree with ours to ~1e-10.
SIGMOID_RTOL, SIGMOID_ATOL = 1e-7, 1e-8
NEWTON_RTOL, NEWTON_ATOL = 1e-8, 1e-10

ESTIMATORS = {
    "platt": lambda: PlattScaling(),
    "platt-plain": lambda: PlattScaling(smoothed_targets=False),
    "platt-prob": lambda: PlattScaling(input="probabilities"),
    "beta-abm": lambda: BetaCalibration(),
    "beta-ab": lambda: BetaCalibration("ab"),
    "beta-am": lambda: BetaCalibration("am"),
}


def inputs_for(estimator, logits):
    """What each estimator is fitted on: logits or their softmax."""
    if isinstance(estimator, PlattScaling) and estimator.input == "logits":
        return logits
    return softmax(logits, axis=-1) if logits.ndim == 2 else expit(logits)


def fit_quietly(estimator, X, y, sample_weight=None):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return estimator.fit(X, y, sample_weight)


# -- the objective, written out from the documented models --------------------------------
def logistic_nll(theta, design, targets, weights):
    """Weighted mean cross-entropy of sigmoid(design @ theta) against the targets, gradient."""
    eta = design @ theta
    v = weights / weights.sum()
    loss = -v @ (targets * log_expit(eta) + (1 - targets) * log_expit(-eta))
    return float(loss), design.T @ (v * (expit(eta) - targets))


def written_out_model(estimator, X, labels, weights, model=0):
    """Design, fitted parameters, targets and lower bounds of one model, as documented.

    Platt: sigmoid(a s + b) on s (smoothed targets (N+ + 1) / (N+ + 2) and 1 / (N- + 2)
    with weighted counts, else the labels).  Beta: sigmoid(a ln s - b ln(1 - s) + c) with
    s clipped to [BETA_EPS, 1 - BETA_EPS] and a, b >= 0; 'ab' has c = (a - b) ln 2, 'am' has
    a = b.  Model ``model`` of a one-vs-rest fit reads column ``model`` and labels y == model.
    """
    s = np.asarray(X, dtype=np.float64)
    s = s if s.ndim == 1 else s[:, model]
    positive = labels == (1 if np.asarray(X).ndim == 1 else model)
    a, c = estimator.coef_[model], estimator.intercept_[model]
    if isinstance(estimator, PlattScaling):
        design, theta, lower = np.column_stack([s, np.ones_like(s)]), np.array([a[0], c]), None
        targets = positive.astype(float)
        if estimator.smoothed_targets:
            n_pos, n_neg = weights[positive].sum(), weights[~positive].sum()
            targets = np.where(positive, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
        return design, theta, targets, lower
    s = np.clip(s, BETA_EPS, 1 - BETA_EPS)
    ln_s, ln_1ms, ones = np.log(s), -np.log1p(-s), np.ones_like(s)
    if estimator.parameters == "abm":
        design, theta, lower = np.column_stack([ln_s, ln_1ms, ones]), np.append(a, c), [0, 0]
    elif estimator.parameters == "ab":
        assert_allclose(c, (a[0] - a[1]) * np.log(2), rtol=1e-15, atol=1e-300)
        design = np.column_stack([ln_s + np.log(2), ln_1ms - np.log(2)])
        theta, lower = a.copy(), [0, 0]
    else:
        assert a[0] == a[1]
        design, theta, lower = np.column_stack([ln_s + ln_1ms, ones]), np.array([a[0], c]), [0]
    lower = np.append(lower, np.full(len(theta) - len(lower), -np.inf))
    return design, theta, positive.astype(float), lower


def assert_optimal(design, theta, targets, weights, lower, atol):
    """KKT of the written-out loss at theta, and no independent scipy fit does better."""
    loss, gradient = logistic_nll(theta, design, targets, weights)
    # Relative to each column's size (mean x_j^2 ** 0.5), the gradient vanishes on the free
    # coordinates and points into the feasible set at an active bound.
    scaled = gradient / np.sqrt(np.mean(design**2, axis=0))
    at_bound = np.zeros(len(theta), dtype=bool) if lower is None else theta <= lower
    assert_allclose(scaled[~at_bound], 0, atol=atol)
    assert (scaled[at_bound] >= -atol).all()
    bounds = None if lower is None else [(low, None) for low in lower]
    independent = minimize(
        logistic_nll,
        np.zeros(len(theta)),
        args=(design, targets, weights),
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"ftol": 0, "gtol": 1e-13, "maxiter": 10_000},
    )
    assert loss <= independent.fun + 1e-12 * abs(independent.fun)


def test_written_out_gradient_matches_finite_differences():
    # Self-check of the test's own objective, which the checks below rely on.
    rng = np.random.default_rng(3)
    design = np.column_stack([3 * rng.normal(size=(300, 2)), np.ones(300)])
    targets = np.where(rng.integers(0, 2, 300) == 1, 0.9, 0.05)
    weights = rng.uniform(0.1, 3.0, 300)
    for point in rng.normal(size=(3, 3)):
        gradient = logistic_nll(point, design, targets, weights)[1]
        error = check_grad(
            lambda p: logistic_nll(p, design, targets, weights)[0],
            lambda p: logistic_nll(p, design, targets, weights)[1],
            point,
        )
        assert error <= 1e-6 * max(1.0, np.linalg.norm(gradient))


def objective_problem(problem):
    """Scores, labels and weights: random labels (a flat fit), beta problems, a constant."""
    rng = np.random.default_rng(3)
    weights = rng.uniform(0.1, 3.0, 300)
    if problem == "random":
        return rng.uniform(0.01, 0.99, 300), rng.integers(0, 2, 300), weights
    if problem == "constant":
        return np.full(300, 0.7), rng.integers(0, 2, 300), weights
    score, labels = beta_problem(2, 300, **BETA_PROBLEMS[problem])
    return score, labels, weights


@pytest.mark.parametrize("problem", ["random", "constant", "beta_pos", "beta_neg_b"])
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_fit_is_the_optimum_of_the_documented_objective(name, problem):
    score, labels, weights = objective_problem(problem)
    estimator = ESTIMATORS[name]()
    X = 3 * logit(score) if isinstance(estimator, PlattScaling) and name != "platt-prob" else score
    estimator.fit(X, labels, weights)
    design, theta, targets, lower = written_out_model(estimator, X, labels, weights)
    # The documented parameterisation is the one predict_proba uses.
    assert_allclose(estimator.predict_proba(X)[:, 1], expit(design @ theta), rtol=1e-12)
    assert_optimal(design, theta, targets, weights, lower, atol=1e-12)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_one_vs_rest_models_are_optima_of_the_documented_objective(name):
    logits, labels, weights = multiclass_problem(1, 300, 4)
    estimator = ESTIMATORS[name]()
    X = inputs_for(estimator, logits)
    estimator.fit(X, labels, weights)
    for model in range(4):
        design, theta, targets, lower = written_out_model(estimator, X, labels, weights, model)
        assert_optimal(design, theta, targets, weights, lower, atol=1e-12)


@pytest.mark.parametrize(("scale", "offset", "slope"), [(1e4, 5e3, 2e-4), (1e-3, 0.0, 300.0)])
def test_badly_scaled_scores_reach_a_stationary_point(scale, offset, slope):
    rng = np.random.default_rng(4)
    score = rng.normal(size=400) * scale + offset
    labels = (rng.random(400) < expit(score * slope - 1)).astype(np.int64)
    platt = PlattScaling(smoothed_targets=False).fit(score, labels)  # no warning: finite
    weights = np.ones(400)
    design, theta, targets, _ = written_out_model(platt, score, labels, weights)
    assert_optimal(design, theta, targets, weights, None, atol=1e-14)


# -- references ----------------------------------------------------------------------------
@pytest.mark.parametrize("smoothed", [True, False])
def test_platt_binary_matches_scikit_learn(smoothed):
    logit_scores, labels = binary_logit_problem(0, 600)
    reference = REFERENCE["platt_binary" if smoothed else "plain_binary"]
    rtol, atol = (SIGMOID_RTOL, SIGMOID_ATOL) if smoothed else (NEWTON_RTOL, NEWTON_ATOL)
    platt = PlattScaling(smoothed_targets=smoothed).fit(logit_scores, labels)
    assert_allclose([platt.coef_[0, 0], platt.intercept_[0]], reference["params"], rtol=rtol)
    assert_allclose(platt.predict_proba(LOGIT_GRID)[:, 1], reference["proba"], rtol=0, atol=atol)


@pytest.mark.parametrize(
    ("name", "input", "smoothed"),
    [
        ("platt_multi_prob", "probabilities", True),
        ("platt_multi_logits", "logits", True),
        ("plain_multi_logits", "logits", False),
    ],
)
def test_platt_one_vs_rest_matches_scikit_learn(name, input, smoothed):
    logits, labels, weights = multiclass_problem(1, 800, 4)
    X = logits if input == "logits" else softmax(logits, axis=1)
    rtol, atol = (SIGMOID_RTOL, SIGMOID_ATOL) if smoothed else (NEWTON_RTOL, NEWTON_ATOL)
    platt = PlattScaling(input=input, smoothed_targets=smoothed).fit(X, labels, weights)
    params = np.column_stack([platt.coef_[:, 0], platt.intercept_])
    assert_allclose(params, REFERENCE[name]["params"], rtol=rtol)
    assert_allclose(platt.predict_proba(X[:5]), REFERENCE[name]["proba"], rtol=0, atol=atol)


@pytest.mark.parametrize(
    ("problem", "parameters"),
    [
        ("beta_pos", "abm"),
        ("beta_pos", "ab"),
        ("beta_pos", "am"),
        ("beta_neg_b", "abm"),
        ("beta_neg_b", "am"),
    ],
)
def test_beta_binary_matches_betacal(problem, parameters):
    score, labels = beta_problem(2, 700, **BETA_PROBLEMS[problem])
    reference = REFERENCE[f"{problem}_{parameters}"]
    beta = BetaCalibration(parameters).fit(score, labels)
    params = np.append(beta.coef_[0], beta.intercept_[0])
    # b is exactly 0 where its bound binds (betacal's refit drops the feature).
    assert_allclose(params, reference["params"], rtol=NEWTON_RTOL, atol=1e-12)
    assert_allclose(
        beta.predict_proba(PROB_GRID)[:, 1], reference["proba"], rtol=0, atol=NEWTON_ATOL
    )


def test_beta_one_vs_rest_matches_betacal():
    logits, labels, weights = multiclass_problem(1, 800, 4)
    prob = softmax(logits, axis=1)
    beta = BetaCalibration().fit(prob, labels, weights)
    params = np.column_stack([beta.coef_, beta.intercept_])
    assert_allclose(params, REFERENCE["beta_multi_abm"]["params"], rtol=NEWTON_RTOL)
    assert_allclose(
        beta.predict_proba(prob[:5]), REFERENCE["beta_multi_abm"]["proba"], rtol=0, atol=1e-10
    )


def test_beta_variants_are_constrained_maps():
    score, labels = beta_problem(2, 700, **BETA_PROBLEMS["beta_neg_b"])
    ab = BetaCalibration("ab").fit(score, labels)
    a, b = ab.coef_[0]
    assert a > 0 and b == 0  # betacal's unbounded 'ab' has b < 0 here
    assert_allclose(ab.intercept_[0], (a - b) * np.log(2), rtol=1e-15)
    assert_allclose(ab.predict_proba([0.5])[:, 1], 0.5, rtol=0, atol=1e-15)  # m = 1/2
    am = BetaCalibration("am").fit(score, labels)
    assert am.coef_[0, 0] == am.coef_[0, 1] > 0
    platt_on_logit = PlattScaling(smoothed_targets=False).fit(logit(score), labels)
    assert_allclose(am.coef_[0, 0], platt_on_logit.coef_[0, 0], rtol=1e-8)
    assert_allclose(am.intercept_, platt_on_logit.intercept_, rtol=1e-8)


# -- input shapes --------------------------------------------------------------------------
@pytest.mark.parametrize("input", ["logits", "probabilities"])
def test_binary_input_shapes_agree(input):
    logit_scores, labels = binary_logit_problem(7, 200)
    if input == "logits":
        one_d = logit_scores
        two_columns = np.column_stack([np.full(200, 3.0), 3.0 + logit_scores])  # shifted rows
    else:
        one_d = expit(logit_scores)
        two_columns = np.column_stack([1 - one_d, one_d])
    a = PlattScaling(input=input).fit(one_d, labels)
    b = PlattScaling(input=input).fit(two_columns, labels)
    assert_allclose(b.coef_, a.coef_, rtol=1e-12)
    assert_allclose(b.predict_proba(two_columns), a.predict_proba(one_d), rtol=0, atol=1e-15)


# -- errors --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("estimator", "error", "message"),
    [
        (PlattScaling(input="scores"), ValueError, "`input` must be 'logits' or 'probab"),
        (PlattScaling(input=None), TypeError, "`input` must be 'logits' or 'probabilities'; got"),
        (PlattScaling(smoothed_targets=1), TypeError, "`smoothed_targets` must be True or Fa"),
        (BetaCalibration("abc"), ValueError, "`parameters` must be 'abm' or 'ab' or 'am'; got 'a"),
        (BetaCalibration(3), TypeError, "`parameters` must be 'abm' or 'ab' or 'am'; got 3"),
    ],
)
def test_invalid_settings(estimator, error, message):
    with pytest.raises(error, match=message):
        estimator.fit([0.2, 0.7], [0, 1])


# -- robustness ----------------------------------------------------------------------------
def assert_valid_probabilities(proba, n_classes):
    assert proba.shape[1] == n_classes
    assert np.isfinite(proba).all() and (proba >= 0).all()
    assert_allclose(proba.sum(axis=1), 1, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 4])
@pytest.mark.parametrize("smoothed", [True, False])
def test_huge_float32_logits(n_classes, smoothed):
    rng = np.random.default_rng(10)
    labels = rng.integers(0, n_classes, 500)
    noisy = np.eye(n_classes)[labels] + rng.normal(size=(500, n_classes))
    logits = (1e4 * noisy).astype(np.float32)
    platt = PlattScaling(smoothed_targets=smoothed).fit(logits, labels)
    proba = platt.predict_proba(logits)
    assert_valid_probabilities(proba, n_classes)
    # Same fit as on the logits scaled down by 1e4 (slopes scale up by 1e4).
    small = PlattScaling(smoothed_targets=smoothed).fit(logits.astype(np.float64) / 1e4, labels)
    assert_allclose(platt.coef_ * 1e4, small.coef_, rtol=1e-6)
    assert_allclose(platt.intercept_, small.intercept_, rtol=1e-6, atol=1e-9)
    extreme = np.float32(1e4) * np.sign(rng.normal(size=(50, n_classes))).astype(np.float32)
    assert_valid_probabilities(platt.predict_proba(extreme), n_classes)


@pytest.mark.parametrize("parameters", ["abm", "ab", "am"])
def test_beta_with_exact_zero_and_one_probabilities(parameters):
    score, labels = beta_problem(11, 300, **BETA_PROBLEMS["beta_pos"])
    score[:3] = [0.0, 1.0, 0.0]
    labels[:3] = [0, 1, 1]
    beta = BetaCalibration(parameters).fit(score.astype(np.float32), labels)
    assert np.isfinite(beta.coef_).all() and np.isfinite(beta.intercept_).all()
    edges = beta.predict_proba([0.0, 1.0])
    assert_valid_probabilities(edges, 2)
    assert_array_equal(edges, beta.predict_proba([BETA_EPS, 1 - BETA_EPS]))
    prob = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.2, 0.3, 0.5]])
    with pytest.warns(UserWarning, match="separate class"):  # prob's top class is the label
        multi = BetaCalibration(parameters).fit(np.tile(prob, (20, 1)), np.tile([0, 2, 1], 20))
    assert_valid_probabilities(multi.predict_proba(prob), 3)


def separable_binary():
    score = np.array([0.05, 0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.95])
    return score, (score > 0.5).astype(np.int64)


@pytest.mark.parametrize("name", ["platt-plain", "platt-prob", "beta-abm", "beta-ab", "beta-am"])
def test_separable_set_warns_and_stays_bounded(name):
    score, labels = separable_binary()
    estimator = ESTIMATORS[name]()
    if name == "platt-prob":
        estimator.set_params(smoothed_targets=False)
    X = logit(score) if name == "platt-plain" else score
    with pytest.warns(UserWarning, match="separate the two classes from the rest perfectly"):
        estimator.fit(X, labels)
    assert np.isfinite(estimator.coef_).all() and np.isfinite(estimator.intercept_).all()
    proba = estimator.predict_proba(X)
    assert_valid_probabilities(proba, 2)
    assert_array_equal(proba.argmax(axis=1), labels)
    assert (proba[np.arange(8), labels] > 0.99).all()


@pytest.mark.parametrize("input", ["logits", "probabilities"])
def test_smoothed_platt_is_finite_on_a_separable_set_without_warning(input):
    score, labels = separable_binary()
    X = logit(score) if input == "logits" else score
    platt = PlattScaling(input=input).fit(X, labels)  # filterwarnings=error: no warning
    # An interior optimum: the gradient of the smoothed-target loss (5/6, 1/6) vanishes there.
    weights = np.ones(len(labels))
    design, theta, targets, _ = written_out_model(platt, X, labels, weights)
    assert_allclose(targets, np.where(labels == 1, 5 / 6, 1 / 6), rtol=1e-15)
    assert_allclose(logistic_nll(theta, design, targets, weights)[1], 0, atol=1e-12)
    proba = platt.predict_proba(X)[:, 1]
    assert 0.02 < proba.min() < 0.2 and 0.8 < proba.max() < 0.98


def test_separable_one_vs_rest_class_warns():
    logits, labels, _ = multiclass_problem(12, 300, 3)
    logits[:, 1] = np.where(labels == 1, 10.0, -10.0) + np.arange(300) / 300
    with pytest.warns(UserWarning, match=r"separate class\(es\) \[1\] from the rest"):
        platt = PlattScaling(smoothed_targets=False).fit(logits, labels)
    assert_valid_probabilities(platt.predict_proba(logits), 3)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_class_that_never_occurs(name):
    logits, labels, weights = multiclass_problem(13, 300, 4)
    labels[labels == 2] = 0
    estimator = ESTIMATORS[name]()
    X = inputs_for(estimator, logits)
    with pytest.warns(UserWarning, match=r"class\(es\) \[2\] never occur in `y`"):
        estimator.fit(X, labels, weights)
    assert np.isfinite(estimator.coef_).all() and np.isfinite(estimator.intercept_).all()
    proba = estimator.predict_proba(X)
    assert_valid_probabilities(proba, 4)
    if name != "beta-ab":  # 'ab' maps 1/2 to 1/2: no base rate
        assert proba[:, 2].max() < 0.05


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_binary_set_with_a_single_label(name):
    logit_scores, _ = binary_logit_problem(14, 50)
    estimator = ESTIMATORS[name]()
    X = inputs_for(estimator, logit_scores)
    with pytest.warns(UserWarning, match="only class 1 occurs in `y`"):
        estimator.fit(X, np.ones(50, dtype=int))
    proba = estimator.predict_proba(X)
    assert_valid_probabilities(proba, 2)
    if name != "beta-ab":  # 'ab' maps 1/2 to 1/2: no base rate
        assert (proba[:, 1] > 0.9).all()


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_single_sample_class(name):
    logits, labels, _ = multiclass_problem(15, 200, 3)
    labels[labels == 2] = 1
    # One sample of class 2, whose score for class 2 sits in the middle of the others'.
    labels[0] = 2
    logits[0, 2] = np.median(logits[1:, 2])
    estimator = ESTIMATORS[name]()
    X = inputs_for(estimator, logits)
    estimator.fit(X, labels)  # overlapping classes: no warning
    proba = estimator.predict_proba(X)
    assert_valid_probabilities(proba, 3)
    if name != "beta-ab":  # 'ab' maps 1/2 to 1/2: no base rate
        assert proba[:, 2].max() < 0.2


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("n_classes", [2, 3])
def test_single_sample(name, n_classes):
    logits = np.array([[0.5, 2.0, -1.0][:n_classes]])
    estimator = ESTIMATORS[name]()
    X = inputs_for(estimator, logits)
    absent = "only class 1 occurs" if n_classes == 2 else r"class\(es\) \[0, 2\] never occur"
    with pytest.warns(UserWarning, match=absent):
        estimator.fit(X, [1])
    proba = estimator.predict_proba(X)
    assert_valid_probabilities(proba, n_classes)
    assert proba[0, 1] >= 0.5  # = 1/2 for smoothed Platt: (2/3) / (2/3 + 1/3 + 1/3)
    if name == "platt" and n_classes == 2:
        assert_allclose(proba[0, 1], 2 / 3, rtol=1e-12)  # the smoothed target (1 + 1) / (1 + 2)


def test_constant_scores_give_the_smoothed_base_rate():
    labels = np.array([0, 1, 1, 0, 1])
    platt = PlattScaling().fit(np.full(5, 0.3), labels)
    assert_allclose(platt.coef_, 0, atol=1e-15)
    # Mean of the smoothed targets: (3 (4/5) + 2 (1/4)) / 5.
    assert_allclose(platt.predict_proba([0.3, 7.0])[:, 1], 0.58, rtol=1e-12)


# -- real predictions -------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(REAL_FILES))
def test_real_predictions_improve_held_out(name):
    prob, labels = load_real(name)
    order = np.random.default_rng(0).permutation(len(prob))
    fit_rows, test_rows = order[: len(prob) // 2], order[len(prob) // 2 :]
    log_prob = np.log(np.maximum(prob, np.finfo(np.float32).tiny))
    nll_before = negative_log_likelihood(prob[test_rows], labels[test_rows])
    ece_before = ECE(prob[test_rows], labels[test_rows])
    overconfidence = prob[test_rows].max(axis=1).mean() - np.mean(
        prob[test_rows].argmax(axis=1) == labels[test_rows]
    )
    assert overconfidence > 0  # every shared model is overconfident on this split
    for model, X in [(PlattScaling(), log_prob), (BetaCalibration(), prob)]:
        calibrated = model.fit(X[fit_rows], labels[fit_rows]).predict_proba(X[test_rows])
        assert negative_log_likelihood(calibrated, labels[test_rows]) < nll_before
        if overconfidence > 0.02:
            assert ECE(calibrated, labels[test_rows]) < ece_before


@pytest.mark.parametrize("make", [BetaCalibration, PlattScaling, lambda: BetaCalibration("ab")])
def test_kept_features_give_the_same_fit_to_the_last_bit(make, monkeypatch):
    # Small fits keep their design features after the first pass; recomputing them on every
    # pass (the cache off) must give the same state, bit for bit.
    rng = np.random.default_rng(4)
    prob = softmax(rng.normal(size=(40_000, 3)) * 2, axis=1)  # three row blocks
    labels = rng.integers(0, 3, len(prob))
    data = np.log(prob) if make is PlattScaling else prob
    kept = make().fit(data, labels)
    monkeypatch.setattr(binary, "_CACHED_FEATURE_ELEMENTS", 0)
    recomputed = make().fit(data, labels)
    assert kept.coef_.tobytes() == recomputed.coef_.tobytes()
    assert kept.intercept_.tobytes() == recomputed.intercept_.tobytes()
    assert kept.predict_proba(data).tobytes() == recomputed.predict_proba(data).tobytes()
