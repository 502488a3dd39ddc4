"""Structured matrix scaling: ``MatrixScaling(structured=True)`` (Berta et al.).

The oracle is the optimality condition of the strictly convex second stage: at the fitted
``W`` and ``b`` the gradient of the weighted cross-entropy plus SMS's ridge, both written out
here from the paper's definition, is 0.  The first stage is the package's temperature
scaling (its own exact tests), mixed with the uniform distribution at weight ``1/(N + 1)``.
The peer is probmetrics 1.3.0's ``SMSCalibrator`` (``tests/references/sms_probmetrics.py``).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import log_softmax, softmax
from sms_probmetrics import REAL_ROWS, seeded_set

from calibration_toolbox.recalibration.linear import MatrixScaling, _structured_penalty
from calibration_toolbox.recalibration.temperature import TemperatureScaling
from tests.conftest import load_real

# Printed by tests/references/sms_probmetrics.py (versions in its docstring): per set its
# 1/T, its [W | b], the mean log-loss of its predictions on the fitted rows and its
# predictions for the first five rows.
PROBMETRICS_SMS = {
    "seeded": (
        0.33960292459031555,
        [
            [
                1.0359392166137695,
                -0.06328032910823822,
                -0.0010373798431828618,
                -0.06466758251190186,
                0.008428881876170635,
            ],
            [
                0.040134768933057785,
                1.0891952514648438,
                -0.007114527281373739,
                0.04462713375687599,
                0.06184640899300575,
            ],
            [
                -0.13678520917892456,
                0.0230000838637352,
                1.0152969360351562,
                -0.003003026358783245,
                -0.04450402781367302,
            ],
            [
                0.08459587395191193,
                0.0101814279332757,
                0.0027950583025813103,
                1.0691933631896973,
                -0.02577102929353714,
            ],
        ],
        1.0017699634175723,
        [
            [0.11120203379540743, 0.06472682521706842, 0.12262168059020374, 0.7014494603973204],
            [0.0632022706311672, 0.39119641365896146, 0.16361349749348908, 0.38198781821638206],
            [0.05692092614749239, 0.11514691499662251, 0.48867524647067045, 0.33925691238521455],
            [0.20220077201877923, 0.5211513773721579, 0.05479023844602278, 0.2218576121630401],
            [0.20267750927365688, 0.08356483074059935, 0.5404795493540238, 0.17327811063172002],
        ],
    ),
    "lenet-5-cifar-10": (
        0.7293275321770617,
        [
            [
                0.9864590764045715,
                0.017989246174693108,
                0.08921375125646591,
                -0.00744978804141283,
                -0.020257221534848213,
                0.0006985997897572815,
                -0.05155448988080025,
                -0.05883000046014786,
                0.04621528834104538,
                0.002882311586290598,
                -0.014555118978023529,
            ],
            [
                0.07189148664474487,
                1.0065231323242188,
                0.015826353803277016,
                -0.005629597697407007,
                -0.035959627479314804,
                -0.031647250056266785,
                -0.01489033829420805,
                -0.05176989734172821,
                -0.022926459088921547,
                0.054963961243629456,
                0.07181666046380997,
            ],
            [
                -0.027845246717333794,
                -0.01947249472141266,
                0.9374980926513672,
                -0.021001458168029785,
                0.04200712591409683,
                0.05486750230193138,
                0.04803010821342468,
                -0.010734861716628075,
                0.026913054287433624,
                -0.01428147777915001,
                0.11387773603200912,
            ],
            [
                -0.03673228621482849,
                0.014186262153089046,
                -0.06271904706954956,
                0.868756890296936,
                -0.005428501404821873,
                0.0831080749630928,
                0.0169043131172657,
                0.01171920821070671,
                0.038042280822992325,
                -0.028684217482805252,
                -0.023775091394782066,
            ],
            [
                -0.02048429846763611,
                0.008864112198352814,
                0.005798192694783211,
                -0.008951927535235882,
                0.9825823307037354,
                -0.036624401807785034,
                0.06600352376699448,
                0.06354308873414993,
                -0.03182337433099747,
                -0.03916895389556885,
                -0.022008737549185753,
            ],
            [
                -0.06010439619421959,
                -0.01637469232082367,
                0.04352795332670212,
                0.08250027894973755,
                0.031195398420095444,
                0.9322198033332825,
                -0.04841262847185135,
                0.0569116435945034,
                -0.037699464708566666,
                0.048673637211322784,
                -0.05623815581202507,
            ],
            [
                -0.05488857254385948,
                -0.02474406361579895,
                0.011788174510002136,
                -0.04376404359936714,
                -0.02737225964665413,
                0.011897898279130459,
                1.2185337543487549,
                0.011945722624659538,
                -0.07085004448890686,
                0.015909435227513313,
                -0.03120228461921215,
            ],
            [
                0.027149900794029236,
                -0.051959432661533356,
                -0.03016677126288414,
                0.01490277610719204,
                0.06305959820747375,
                -0.005763710476458073,
                -0.029959114268422127,
                0.9749231934547424,
                -0.01860274188220501,
                0.010504726320505142,
                0.04638764262199402,
            ],
            [
                0.0714239552617073,
                0.0366659015417099,
                -0.010243275202810764,
                -0.0053882659412920475,
                -0.02845054119825363,
                -0.03498879820108414,
                -0.03978928178548813,
                -0.014530601911246777,
                0.956797182559967,
                -0.027280600741505623,
                -0.20633791387081146,
            ],
            [
                0.03213098272681236,
                0.03601212427020073,
                -0.054473184049129486,
                0.0031816805712878704,
                -0.01595904678106308,
                -0.03766534850001335,
                0.029018007218837738,
                -0.0038231618236750364,
                0.07683731615543365,
                0.8242570161819458,
                0.12203273922204971,
            ],
        ],
        1.274473590495123,
        [
            [
                0.005200449821458084,
                0.00044170114274444947,
                0.06817607801508539,
                0.5941840721828658,
                0.03101099780832584,
                0.21552723447994024,
                0.009348183167404305,
                0.06651252868315183,
                0.008413531456940211,
                0.00118522324208378,
            ],
            [
                0.27615477769221597,
                0.5307644478029211,
                0.0018219284006839194,
                0.00036635466330384983,
                0.0011183768943404159,
                5.2853884322678545e-05,
                6.20826116827639e-05,
                0.0005673392561083733,
                0.155347243648978,
                0.03374459514544294,
            ],
            [
                0.03744492293409816,
                0.05902850020630039,
                0.0009511846132068535,
                0.0026828775044734597,
                0.0006633673950900633,
                0.00025164919599594983,
                2.2376085695777294e-05,
                0.000458675098187162,
                0.8770352752844299,
                0.021461171682522342,
            ],
            [
                0.5721465961365307,
                0.12979865406104032,
                0.005948726806100094,
                0.0011027741632519622,
                0.006984863687355116,
                0.00014569926625998642,
                6.219247014074548e-05,
                0.005063135880043806,
                0.2710147806562885,
                0.007732576872988749,
            ],
            [
                0.0011794771273080191,
                0.0004068866674814675,
                0.15980474952071685,
                0.28172691606055583,
                0.12059462399530774,
                0.06640301208621677,
                0.34324105702403795,
                0.023349535179221524,
                0.0008501190909161166,
                0.002443623248237758,
            ],
        ],
    ),
}


def features(logits, inverse_temperature, mixture):
    """log((1 - alpha) softmax(beta z) + alpha / K), written directly."""
    k = logits.shape[1]
    return np.log((1 - mixture) * softmax(inverse_temperature * logits, axis=1) + mixture / k)


def objective(model, logits, labels, sample_weight=None, matrix=None, intercept=None):
    """SMS's penalised loss at (W, b) (the fitted map by default) and its gradient.

    ``sum_i v_i CE_i + K/n sum_k b_k^2 + K/n sum_k (W_kk - 1)^2 + K(K-1)/n sum_{k!=j}
    W_kj^2`` with ``v`` the normalised weights, ``n`` the rows of positive weight (Berta et al.;
    probmetrics' defaults lambda = rho = tau = 1).
    """
    matrix = model.coef_ if matrix is None else matrix
    intercept = model.intercept_ if intercept is None else intercept
    n, k = logits.shape
    x = features(logits, model.inverse_temperature_, model.mixture_)
    weights = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    weights = weights / weights.sum()
    log_q = log_softmax(x @ matrix.T + intercept, axis=1)
    loss = -weights @ log_q[np.arange(n), labels]
    n = np.count_nonzero(weights)
    residual = weights[:, None] * (np.exp(log_q) - np.eye(k)[labels])
    delta = matrix - np.eye(k)
    c = np.full((k, k), k * (k - 1) / n)
    np.fill_diagonal(c, k / n)
    loss += (c * delta**2).sum() + k / n * intercept @ intercept
    grad_matrix = residual.T @ x + 2 * c * delta
    grad_intercept = residual.sum(axis=0) + 2 * k / n * intercept
    return loss, np.concatenate([grad_matrix.ravel(), grad_intercept])


def offset_set(rng, n=1500, k=4):
    labels = rng.integers(0, k, n)
    logits = 2.5 * (np.eye(k)[labels] + rng.normal(size=(n, k))) + np.linspace(0, 1, k)
    return logits, labels


@pytest.mark.parametrize("weighted", [False, True])
def test_gradient_vanishes_at_the_fit(rng, weighted):
    logits, labels = offset_set(rng)
    # Some zero weights: those rows count for neither the loss nor n.
    sample_weight = rng.uniform(0.2, 3.0, len(labels)) * (rng.random(len(labels)) < 0.8)
    sample_weight = sample_weight if weighted else None
    # The default tol stops at 1e-8 in the optimiser's preconditioned coordinates, which
    # leaves raw gradient entries of a few 1e-8; tol=1e-10 makes them all < 1e-8.
    model = MatrixScaling(structured=True, tol=1e-10).fit(logits, labels, sample_weight)
    _, grad = objective(model, logits, labels, sample_weight)
    assert np.abs(grad).max() < 1e-8


def test_gradient_vanishes_on_real_predictions():
    prob, labels = load_real("densenet-bc-100-cifar-100")
    logits = np.log(np.maximum(prob[:5000].astype(np.float64), 1e-300))
    model = MatrixScaling(structured=True, tol=1e-10).fit(logits, labels[:5000])
    _, grad = objective(model, logits, labels[:5000])
    assert np.abs(grad).max() < 1e-8


def test_first_stage_is_temperature_scaling_mixed_with_uniform(rng):
    logits, labels = offset_set(rng, n=999)
    weights = rng.uniform(0.5, 2.0, 999)
    model = MatrixScaling(structured=True).fit(logits, labels, weights)
    temperature = TemperatureScaling().fit(logits, labels, weights).temperature_
    assert model.structured_ is True
    assert model.inverse_temperature_ == 1.0 / temperature
    assert model.mixture_ == 1.0 / 1000
    # The predictions are softmax(W x + b) of those features.
    x = features(logits, model.inverse_temperature_, model.mixture_)
    expected = softmax(x @ model.coef_.T + model.intercept_, axis=1)
    assert_allclose(model.predict_proba(logits), expected, rtol=1e-12, atol=1e-15)


def test_penalty_weights_by_hand():
    # n = 10, K = 3: K/n = 0.3 on each of 3 diagonal entries and intercepts, so 0.9 on
    # their mean; K(K-1)/n = 0.6 on each of 6 off-diagonal entries, 3.6 on their mean.
    penalty = _structured_penalty(10, 3, 0.0, 0.0)
    assert_allclose(penalty, (0.9, 3.6, 0.9), rtol=1e-15)
    # ODIR's lambda and mu add to the off-diagonal and intercept weights.
    assert_allclose(_structured_penalty(10, 3, 2.0, 5.0), (0.9, 5.6, 5.9), rtol=1e-15)


@pytest.mark.parametrize("name", ["seeded", "lenet-5-cifar-10"])
def test_against_probmetrics(name):
    """probmetrics fits in float32 and stops early, so ours is the better optimum.

    Its first stage's 30 bisection steps give 1/T to 3e-8 (relative); its second stage
    runs torchmin's BFGS on float32 features and parameters with a gradient tolerance of
    1e-5.  Evaluated in float64, its map's penalised loss is above ours by 7e-8 (seeded)
    and 7e-7 (lenet), and its parameters differ from ours by up to 3e-3, its
    probabilities by up to 5e-4: the tolerances below are those of its optimiser.
    """
    if name == "seeded":
        logits, labels = seeded_set()
    else:
        prob, labels = load_real(name)
        logits, labels = np.log(prob[:REAL_ROWS].astype(np.float64)), labels[:REAL_ROWS]
    inverse_temperature, peer_map, peer_loss, peer_head = PROBMETRICS_SMS[name]
    peer_map = np.array(peer_map)
    model = MatrixScaling(structured=True).fit(logits, labels)
    assert_allclose(model.inverse_temperature_, inverse_temperature, rtol=5e-8)
    ours, _ = objective(model, logits, labels)
    theirs, _ = objective(model, logits, labels, None, peer_map[:, :-1], peer_map[:, -1])
    assert ours <= theirs <= ours + 1e-6
    assert_allclose(model.coef_, peer_map[:, :-1], atol=5e-3)
    assert_allclose(model.intercept_, peer_map[:, -1], atol=5e-3)
    q = model.predict_proba(logits)
    assert_allclose(-np.mean(np.log(q[np.arange(len(labels)), labels])), peer_loss, atol=1e-5)
    assert_allclose(q[:5], peer_head, atol=1e-3)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(-50, 50))
def test_row_shifts_of_the_logits_change_nothing(seed, shift):
    """softmax ignores a constant added to a row, and so do both stages."""
    rng = np.random.default_rng(seed)
    logits, labels = offset_set(rng, n=300, k=3)
    shifts = shift * rng.uniform(size=(300, 1))
    plain = MatrixScaling(structured=True).fit(logits, labels)
    shifted = MatrixScaling(structured=True).fit(logits + shifts, labels)
    assert_allclose(shifted.inverse_temperature_, plain.inverse_temperature_, rtol=1e-9)
    assert_allclose(shifted.predict_proba(logits + shifts), plain.predict_proba(logits), atol=1e-7)


def test_file_round_trip_and_fitted_state_decides(rng):
    logits, labels = offset_set(rng, n=500)
    model = MatrixScaling(structured=True).fit(logits, labels)
    loaded = MatrixScaling.from_dict(json.loads(json.dumps(model.to_dict())))
    assert loaded.structured_ is True
    assert_array_equal(loaded.predict_proba(logits), model.predict_proba(logits))
    # The fitted state, not the setting, decides the features of a prediction.
    before = model.predict_proba(logits)
    model.set_params(structured=False)
    assert_array_equal(model.predict_proba(logits), before)


def test_file_written_before_the_option_loads_as_a_plain_map(rng):
    logits, labels = offset_set(rng, n=500)
    model = MatrixScaling(reg_lambda=0.1).fit(logits, labels)
    assert (model.structured_, model.inverse_temperature_, model.mixture_) == (False, 1.0, 0.0)
    old = model.to_dict()
    for name in ("structured_", "inverse_temperature_", "mixture_"):
        del old["fitted"][name]
    del old["params"]["structured"]
    loaded = MatrixScaling.from_dict(old)
    assert loaded.structured_ is False
    assert_array_equal(loaded.predict_proba(logits), model.predict_proba(logits))


def test_plain_map_is_unchanged(rng):
    logits, labels = offset_set(rng, n=500)
    plain = MatrixScaling(reg_lambda=0.5, reg_mu=0.5).fit(logits, labels)
    explicit = MatrixScaling(reg_lambda=0.5, reg_mu=0.5, structured=False).fit(logits, labels)
    assert_array_equal(plain.coef_, explicit.coef_)
    x = logits
    assert_allclose(
        plain.predict_proba(logits),
        softmax(x @ plain.coef_.T + plain.intercept_, axis=1),
        rtol=1e-12,
    )


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_structured_must_be_a_flag(rng, value):
    logits, labels = offset_set(rng, n=100)
    with pytest.raises((TypeError, ValueError), match="structured"):
        MatrixScaling(structured=value).fit(logits, labels)
