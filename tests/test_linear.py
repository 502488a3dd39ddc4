"""Vector scaling, matrix scaling and Dirichlet calibration (recalibration/linear.py)."""

from __future__ import annotations

import itertools
import json
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import load_real
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import check_grad
from scipy.special import log_softmax, softmax

from calibration_toolbox._validation import NotFittedError
from calibration_toolbox.recalibration._base import Recalibrator, load_recalibrator
from calibration_toolbox.recalibration._linear_fit import PenalisedNLL as _PenalisedNLL
from calibration_toolbox.recalibration._preconditioner import Coordinates as _Coordinates
from calibration_toolbox.recalibration._softmax_nll import _CHUNK_ELEMENTS, SINGLE, Extras
from calibration_toolbox.recalibration._softmax_nll import SoftmaxNLL as _SoftmaxNLL
from calibration_toolbox.recalibration.linear import (
    FALLBACK_RIDGE,
    DirichletCalibration,
    MatrixScaling,
    VectorScaling,
)

# (name, factory, takes probabilities): every configuration the invariants are checked on.
CONFIGS = {
    "vector": (lambda **kw: VectorScaling(**kw), False),
    "matrix": (lambda **kw: MatrixScaling(**kw), False),
    "dirichlet-full": (lambda **kw: DirichletCalibration(**kw), True),
    "dirichlet-diagonal": (lambda **kw: DirichletCalibration(matrix_type="diagonal", **kw), True),
}
REGULARISED = {
    "vector": {"reg_lambda": 0.3},
    "matrix": {"reg_lambda": 0.3, "reg_mu": 0.2},
    "dirichlet-full": {"reg_lambda": 0.3, "reg_mu": 0.2},
    "dirichlet-diagonal": {"reg_mu": 0.2},
}


def make_problem(seed=0, n=400, k=3, scale=2.0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, k, n)
    logits = scale * (np.eye(k)[labels] + rng.normal(size=(n, k))) + np.linspace(0, 1, k)
    return logits, labels


def inputs(config, logits):
    return softmax(logits, axis=1) if CONFIGS[config][1] else logits


def fit(config, X, y, sample_weight=None, **params):
    return CONFIGS[config][0](**params).fit(X, y, sample_weight=sample_weight)


def mean_nll(log_prob, labels):
    return float(-log_prob[np.arange(len(labels)), labels].astype(np.float64).mean())


def calibrated_log_prob(model, X):
    return log_softmax(np.asarray(model(X), dtype=np.float64), axis=1)


# -- gradients -------------------------------------------------------------------------
@pytest.mark.parametrize("diagonal", [True, False])
@pytest.mark.parametrize("log_features", [False, True])
@pytest.mark.parametrize("regularised", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_gradient_matches_finite_differences(diagonal, log_features, regularised, weighted):
    # Every objective: vector / matrix scaling (logits), Dirichlet diagonal / full
    # (log-probabilities), plain or penalised, unweighted or weighted; both the gradient
    # in (W, b) and the one in the optimiser's preconditioned coordinates.
    rng = np.random.default_rng(1)
    logits, labels = make_problem(seed=2, n=120, k=4)
    features = np.log(softmax(logits, axis=1)) if log_features else logits
    weights = rng.uniform(0.1, 3.0, len(labels)) if weighted else None
    nll = _SoftmaxNLL(features, labels, weights, diagonal)
    shape = (4,) if diagonal else (4, 4)
    penalty_matrix = rng.uniform(0.05, 0.5, shape) if regularised else np.zeros(shape)
    penalty_intercept = rng.uniform(0.05, 0.5, 4) if regularised else np.zeros(4)
    objective = _PenalisedNLL(nll, penalty_matrix, penalty_intercept)
    n_matrix = int(np.prod(shape))
    theta = np.concatenate([nll.identity.ravel(), np.zeros(4)]) + rng.normal(0, 0.3, n_matrix + 4)

    def split(t):
        return t[:n_matrix].reshape(shape), t[n_matrix:]

    def value(t):
        return objective.total(*split(t))[0]

    def gradient(t):
        _, grad_matrix, grad_intercept = objective.total(*split(t))
        return np.concatenate([grad_matrix.ravel(), grad_intercept])

    reference = np.linalg.norm(gradient(theta))
    assert check_grad(value, gradient, theta) <= 1e-6 * reference

    coordinates = _Coordinates(rng.normal(0, 1, shape), rng.uniform(0.5, 2.0, shape))
    fun = objective.in_coordinates(coordinates)
    u = coordinates.from_map(*objective.canonical(*split(theta)))
    assert check_grad(lambda v: fun(v)[0], lambda v: fun(v)[1], u) <= 1e-6 * np.linalg.norm(
        fun(u)[1]
    )


@pytest.mark.parametrize(("k", "diagonal"), [(4, True), (5, False), (12, False)])
def test_coordinates_drop_exactly_the_flat_directions(k, diagonal):
    # The reflector H is orthogonal and symmetric, sends the directions along which the
    # softmax does not change (b + t 1; W + 1 v^T for a full W) onto the held coordinates,
    # so the optimiser's variables span exactly their complement; the coordinates of a
    # map give back an equivalent map (the same probabilities).
    rng = np.random.default_rng(k)
    shape = (k,) if diagonal else (k, k)
    coordinates = _Coordinates(
        rng.normal(0, 3, shape), rng.uniform(0.1, 2.0, shape), rng.uniform(0.5, 2.0, k)
    )
    size = coordinates.keep.size
    reflector = np.stack([coordinates._reflect(unit) for unit in np.eye(size)], axis=1)
    assert_allclose(reflector @ reflector.T, np.eye(size), rtol=0, atol=1e-13)
    assert_allclose(reflector, reflector.T, rtol=0, atol=1e-13)
    flat = np.zeros((size, 1 if diagonal else k + 1))
    if diagonal:
        flat[k:, 0] = 1.0
    else:
        classes = np.arange(k)
        flat[classes[:, None] * k + classes, classes] = coordinates.scale
        flat[k * k :, :k] = coordinates.centre
        flat[k * k :, k] = 1.0
    assert np.count_nonzero(~coordinates.keep) == flat.shape[1]
    assert_allclose((reflector @ flat)[coordinates.keep], 0.0, rtol=0, atol=1e-12)
    features = rng.normal(0, 2, (50, k))
    matrix = (np.ones(k) if diagonal else np.eye(k)) + rng.normal(0, 0.3, shape)
    intercept = rng.normal(0, 0.3, k)
    again = coordinates.to_map(coordinates.from_map(matrix, intercept))

    def scores(m, b):
        return features * m + b if diagonal else features @ m.T + b

    assert_allclose(
        softmax(scores(*again), axis=1), softmax(scores(matrix, intercept), axis=1), atol=1e-13
    )


# -- exactness against an independent implementation -----------------------------------
# Reference: dirichletcal 0.5.3 (Kull et al.'s package; Python 3.12.1, numpy 2.5.5, jax
# 0.12.0.1, scipy 1.18.1), in a scratch venv outside the repository:
#   python3.12 -m venv venv-dircal && venv-dircal/bin/pip install dirichletcal==0.5.3
# fitted on the problem of `reference_problem()` below with
#   vector:   dirichletcal.calib.vectorscaling.VectorScaling(logit_input=True)
#   matrix:   dirichletcal.calib.matrixscaling.MatrixScaling(logit_input=True)
#   full:     dirichletcal.calib.fulldirichlet.FullDirichletCalibrator()
#   diagonal: dirichletcal.calib.diagdirichlet.DiagonalDirichletCalibrator()
#   odir:     FullDirichletCalibrator(reg_lambda=0.5, reg_mu=0.2, reg_norm=True, ref_row=False)
#             (reg_norm divides by K(K-1) and K: the paper's ODIR, the same as ours)
# (Newton's method with exact Hessians by jax, since K <= 36).  Each value is the mean NLL
# (plus the ODIR penalty for `odir`) of the package's fitted coef_/intercept_ evaluated
# exactly with scipy.special.log_softmax; the package clips probabilities at
# float64's tiny, which changes nothing here (the smallest probability is 6e-7).
DIRICHLETCAL_REFERENCE = {
    "vector": 0.7974184457306807,
    "matrix": 0.7923067479543774,
    "dirichlet-full": 0.7929821220217312,
    "dirichlet-diagonal": 0.7981881766249165,
    "dirichlet-full-odir": 0.802050383016898,
}
IDENTITY_NLL = 0.9268339347768464


def reference_problem():
    # Generated identically by numpy 2.4 and 2.5 (checked); the identity NLL pins it.
    rng = np.random.default_rng(2019)
    labels = rng.integers(0, 4, 600)
    logits = 2.0 * (1.5 * np.eye(4)[labels] + rng.normal(size=(600, 4)))
    logits += np.array([0.0, 0.5, -0.5, 1.0])
    return logits, labels


@pytest.mark.parametrize("case", sorted(DIRICHLETCAL_REFERENCE))
def test_fitted_nll_matches_dirichletcal(case):
    logits, labels = reference_problem()
    assert_allclose(
        mean_nll(log_softmax(logits, axis=1), labels), IDENTITY_NLL, rtol=0, atol=1e-14
    )
    prob = softmax(logits, axis=1)
    model = {
        "vector": lambda: VectorScaling().fit(logits, labels),
        "matrix": lambda: MatrixScaling().fit(logits, labels),
        "dirichlet-full": lambda: DirichletCalibration().fit(prob, labels),
        "dirichlet-diagonal": lambda: DirichletCalibration(matrix_type="diagonal").fit(
            prob, labels
        ),
        "dirichlet-full-odir": lambda: DirichletCalibration(reg_lambda=0.5, reg_mu=0.2).fit(
            prob, labels
        ),
    }[case]()
    X = prob if case.startswith("dirichlet") else logits
    value = mean_nll(calibrated_log_prob(model, X), labels)
    if case.endswith("odir"):
        off_diagonal = model.coef_ - np.diag(np.diag(model.coef_))
        value += 0.5 / (4 * 3) * np.sum(off_diagonal**2) + 0.2 / 4 * np.sum(model.intercept_**2)
    reference = DIRICHLETCAL_REFERENCE[case]
    assert value <= reference + 1e-8
    # Not better by more than rounding either: both solve the same problem.
    assert value >= reference - 1e-8


def test_vector_scaling_is_diagonal_dirichlet_on_log_probabilities():
    logits, labels = make_problem(seed=3)
    prob = softmax(logits, axis=1)
    vector = VectorScaling().fit(np.log(prob), labels)
    dirichlet = DirichletCalibration(matrix_type="diagonal").fit(prob, labels)
    assert dirichlet.coef_.shape == vector.coef_.shape == (3,)  # one convention: (K,)
    assert_allclose(dirichlet.coef_, vector.coef_, rtol=1e-6)
    assert_allclose(dirichlet.predict_proba(prob), vector.predict_proba(np.log(prob)), atol=1e-9)


# -- invariants ------------------------------------------------------------------------
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("regularised", [False, True])
def test_training_nll_never_above_identity(config, regularised):
    for seed in range(3):
        logits, labels = make_problem(seed=seed, n=200, k=4, scale=0.5 + seed)
        X = inputs(config, logits)
        model = fit(config, X, labels, **(REGULARISED[config] if regularised else {}))
        identity = mean_nll(log_softmax(logits, axis=1), labels)
        assert mean_nll(calibrated_log_prob(model, X), labels) <= identity + 1e-12


@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("regularised", [False, True])
def test_sample_weight_two_equals_duplicated_rows(config, regularised):
    logits, labels = make_problem(seed=4, n=150)
    X = inputs(config, logits)
    params = REGULARISED[config] if regularised else {}
    weights = np.ones(len(labels))
    weights[:40] = 2.0
    weighted = fit(config, X, labels, sample_weight=weights, **params)
    duplicated = fit(
        config, np.concatenate([X, X[:40]]), np.concatenate([labels, labels[:40]]), **params
    )
    scaled = fit(config, X, labels, sample_weight=3.5 * weights, **params)
    assert_allclose(weighted.predict_proba(X), duplicated.predict_proba(X), rtol=0, atol=1e-6)
    assert_allclose(weighted.predict_proba(X), scaled.predict_proba(X), rtol=0, atol=1e-6)


def test_zero_weights_ignore_rows():
    logits, labels = make_problem(seed=5, n=150)
    weights = np.ones(len(labels))
    weights[100:] = 0.0
    weighted = VectorScaling().fit(logits, labels, sample_weight=weights)
    subset = VectorScaling().fit(logits[:100], labels[:100])
    assert_allclose(weighted.coef_, subset.coef_, rtol=1e-5)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_deterministic(config):
    logits, labels = make_problem(seed=6)
    X = inputs(config, logits)
    first, second = fit(config, X, labels), fit(config, X, labels)
    assert_array_equal(first.coef_, second.coef_)
    assert_array_equal(first.intercept_, second.intercept_)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_callable_style_and_predict_proba_agree(config):
    logits, labels = make_problem(seed=7)
    X = inputs(config, logits)
    model = fit(config, X, labels, num_classes=3)
    assert_allclose(softmax(model(X), axis=1), model.predict_proba(X), rtol=0, atol=1e-12)
    assert_array_equal(model.predict(X), np.argmax(model(X), axis=1))
    if CONFIGS[config][1]:
        # Dirichlet calibration returns log-probabilities (log_softmax output).
        assert_allclose(np.exp(model(X)).sum(axis=1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_identity_data_gives_near_identity_map(config):
    # Labels drawn from softmax(logits): the identity map is the true calibration map.
    rng = np.random.default_rng(8)
    logits = rng.normal(0, 2, size=(20000, 3))
    cumulative = np.cumsum(softmax(logits, axis=1), axis=1)
    labels = (rng.uniform(size=(20000, 1)) > cumulative).sum(axis=1)
    X = inputs(config, logits)
    model = fit(config, X, labels)
    error = np.abs(model.predict_proba(X) - softmax(logits, axis=1))
    assert error.mean() < 0.01 and error.max() < 0.1


def test_stored_map_is_the_canonical_representative():
    logits, labels = make_problem(seed=9)
    vector = VectorScaling().fit(logits, labels)
    assert abs(vector.intercept_.sum()) < 1e-12
    matrix = MatrixScaling().fit(logits, labels)
    assert_allclose(matrix.coef_.sum(axis=0), 0.0, rtol=0, atol=1e-12)
    odir = MatrixScaling(reg_lambda=0.5, reg_mu=0.5).fit(logits, labels)
    off_diagonal = odir.coef_ - np.diag(np.diag(odir.coef_))
    assert_allclose(off_diagonal.sum(axis=0), 0.0, rtol=0, atol=1e-10)
    assert abs(odir.intercept_.sum()) < 1e-10


# -- robustness ------------------------------------------------------------------------
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_huge_logits_give_finite_normalised_probabilities(config, dtype):
    logits, labels = make_problem(seed=10, n=300)
    logits = logits / np.abs(logits).max() * 1e4
    X = inputs(config, logits).astype(dtype)
    model = fit(config, X, labels)
    prob = model.predict_proba(X)
    assert prob.dtype == dtype
    assert np.isfinite(prob).all()
    assert_allclose(prob.sum(axis=1), 1.0, rtol=0, atol=1e-5 if dtype == np.float32 else 1e-12)
    assert np.isfinite(model(X * dtype(1.5) if not CONFIGS[config][1] else X)).all()
    # The fit is scale-free: no worse than the identity map on its training set.
    identity = mean_nll(log_softmax(logits, axis=1), labels)
    assert mean_nll(calibrated_log_prob(model, X), labels) <= identity


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_separable_set_warns_and_stays_bounded(config):
    logits, labels = make_problem(seed=11, n=200)
    labels = np.argmax(logits, axis=1)
    X = inputs(config, logits)
    with pytest.warns(UserWarning, match="separated perfectly"):
        model = fit(config, X, labels)
    assert model.ridge_ == FALLBACK_RIDGE
    assert np.abs(model.coef_).max() < 1e3
    prob = model.predict_proba(X)
    assert np.isfinite(prob).all()
    assert_allclose(prob.sum(axis=1), 1.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_class_that_never_occurs_warns_and_stays_bounded(config):
    logits, labels = make_problem(seed=12, n=200)
    labels[labels == 2] = 0
    X = inputs(config, logits)
    with pytest.warns(UserWarning, match=r"classes \[2\] never occur in `y`"):
        model = fit(config, X, labels)
    assert model.ridge_ == FALLBACK_RIDGE
    prob = model.predict_proba(X)
    assert np.isfinite(prob).all()
    assert (prob[:, 2] > 0).all() and prob[:, 2].mean() < 0.1


def test_class_that_never_occurs_with_full_penalty_is_bounded_by_it():
    logits, labels = make_problem(seed=12, n=200)
    labels[labels == 2] = 0
    with pytest.warns(UserWarning, match="bounded by the penalty alone"):
        model = VectorScaling(reg_lambda=0.1).fit(logits, labels)
    assert model.ridge_ == 0.0
    assert np.isfinite(model.predict_proba(logits)).all()


@pytest.mark.parametrize(
    ("config", "separated"),
    [
        ("vector", False),
        ("matrix", False),
        ("dirichlet-diagonal", False),
        ("dirichlet-full", True),
    ],
)
def test_single_sample_class(config, separated):
    # The lone sample of class 2 is a vertex of the log-probability features' hull, so the
    # full Dirichlet map can separate it from the rest: the likelihood grows along a ray.
    logits, labels = make_problem(seed=13, n=200)
    labels[labels == 2] = 1
    labels[7] = 2
    X = inputs(config, logits)
    if separated:
        with pytest.warns(UserWarning, match="part of the calibration set is separated"):
            model = fit(config, X, labels)
        assert model.ridge_ == FALLBACK_RIDGE
    else:
        model = fit(config, X, labels)
        assert model.ridge_ == 0.0
    prob = model.predict_proba(X)
    assert np.isfinite(prob).all()
    assert_allclose(prob.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    assert np.isfinite(model.coef_).all() and np.abs(model.coef_).max() < 1e3


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_fewer_samples_than_parameters_warns_and_regularises(config):
    # 5 samples, 3 classes: 6 (diagonal) or 12 (full) parameters, none penalised.
    logits, _ = make_problem(seed=14, n=5, k=3)
    labels = np.array([0, 1, 2, 0, 1])
    X = inputs(config, logits)
    with pytest.warns(UserWarning, match="5 calibration samples are fewer than the"):
        model = fit(config, X, labels)
    assert model.ridge_ == FALLBACK_RIDGE
    assert np.isfinite(model.predict_proba(X)).all()


def test_fully_penalised_fit_with_few_samples_needs_no_fallback():
    logits, _ = make_problem(seed=14, n=3, k=3)
    model = VectorScaling(reg_lambda=1.0).fit(logits, [0, 1, 2])
    assert model.ridge_ == 0.0
    assert np.isfinite(model.predict_proba(logits)).all()


def test_iteration_limit_warns():
    logits, labels = make_problem(seed=15)
    with pytest.warns(UserWarning, match="did not converge"):
        model = MatrixScaling(max_iter=2).fit(logits, labels)
    assert model.n_iter_ <= 2
    assert np.isfinite(model.predict_proba(logits)).all()


def test_zero_probabilities_are_clipped_at_eps():
    logits, labels = make_problem(seed=16)
    prob = softmax(logits, axis=1)
    prob[:10, 0] = 0.0
    prob[:10] /= prob[:10].sum(axis=1, keepdims=True)
    model = DirichletCalibration().fit(prob, labels)
    assert np.isfinite(model(prob)).all()
    clipped = np.maximum(prob, 1e-15)
    assert_array_equal(model(prob), model(clipped))


def test_binary_probability_column():
    logits, labels = make_problem(seed=17, k=2)
    p = softmax(logits, axis=1)[:, 1]
    one_column = DirichletCalibration().fit(p, labels)
    two_columns = DirichletCalibration().fit(np.stack([1 - p, p], axis=1), labels)
    assert_allclose(
        one_column.predict_proba(p), two_columns.predict_proba(np.stack([1 - p, p], 1))
    )


# -- persistence -----------------------------------------------------------------------
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_round_trip_gives_identical_predictions(config, tmp_path):
    logits, labels = make_problem(seed=18)
    X = inputs(config, logits)
    model = fit(config, X, labels, **REGULARISED[config])
    rebuilt = Recalibrator.from_dict(json.loads(json.dumps(model.to_dict())))
    assert type(rebuilt) is type(model)
    assert rebuilt.get_params() == model.get_params()
    assert_array_equal(rebuilt(X), model(X))
    path = tmp_path / "map.json"
    model.save(path)
    assert_array_equal(load_recalibrator(path).predict_proba(X), model.predict_proba(X))


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_set_params_after_fit_leaves_predictions_unchanged(config):
    # The fitted state holds everything prediction needs: changing any setting after fit
    # (to another valid value) moves no prediction until the next fit.
    logits, labels = make_problem(seed=19)
    X = inputs(config, logits)
    if CONFIGS[config][1]:
        X[:20, 0] = 1e-9  # probabilities below the new `eps` below
        X /= X.sum(axis=1, keepdims=True)
    model = fit(config, X, labels, **REGULARISED[config])
    before_logits, before_prob = model(X), model.predict_proba(X)
    others = {
        "reg_lambda": 7.0,
        "reg_mu": 7.0,
        "matrix_type": "full" if config == "dirichlet-diagonal" else "diagonal",
        "eps": 1e-3,
        "num_classes": 9,
        "max_iter": 2,
        "tol": 0.5,
        "n_jobs": 1,
    }
    model.set_params(**{name: others[name] for name in model.get_params()})
    assert_array_equal(model(X), before_logits)
    assert_array_equal(model.predict_proba(X), before_prob)


def test_get_and_set_params():
    model = DirichletCalibration(reg_lambda=2.0, matrix_type="diagonal")
    assert model.get_params() == {
        "reg_lambda": 2.0,
        "reg_mu": 0.0,
        "matrix_type": "diagonal",
        "eps": 1e-15,
        "num_classes": None,
        "max_iter": 1000,
        "tol": 1e-8,
        "n_jobs": None,
    }
    assert model.set_params(reg_mu=3.0) is model and model.reg_mu == 3.0
    assert "n_jobs" not in MatrixScaling().get_params()  # a full map: BLAS's threads


# -- errors ----------------------------------------------------------------------------
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_not_fitted(config):
    logits, _ = make_problem()
    with pytest.raises(NotFittedError, match="is not fitted yet"):
        CONFIGS[config][0]()(inputs(config, logits))


@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_predicting_on_other_number_of_classes(config):
    logits, labels = make_problem(k=3)
    model = fit(config, inputs(config, logits), labels)
    other, _ = make_problem(k=4)
    with pytest.raises(ValueError, match=r"`X` has 4 classes but this .* was fitted on 3"):
        model.predict_proba(inputs(config, other))


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"reg_lambda": -1.0}, ValueError, "`reg_lambda` must be a non-negative finite number"),
        ({"reg_lambda": np.inf}, ValueError, "`reg_lambda` must be a non-negative finite"),
        ({"reg_lambda": "big"}, TypeError, "`reg_lambda` must be a non-negative number"),
        ({"reg_mu": -0.5}, ValueError, "`reg_mu` must be a non-negative finite number"),
        ({"tol": 0.0}, ValueError, "`tol` must be a positive finite number"),
        ({"tol": None}, TypeError, "`tol` must be a positive number"),
        ({"max_iter": 0}, ValueError, "`max_iter` must be an integer >= 1"),
        ({"max_iter": 2.5}, TypeError, "`max_iter` must be an integer >= 1"),
        ({"num_classes": 1}, ValueError, "`num_classes` must be None or an integer >= 2"),
        ({"num_classes": 4}, ValueError, "`X` has 3 classes but `num_classes` is 4"),
    ],
)
def test_invalid_settings(params, error, message):
    logits, labels = make_problem()
    with pytest.raises(error, match=message):
        MatrixScaling(**params).fit(logits, labels)


@pytest.mark.parametrize(
    ("params", "error", "message"),
    [
        ({"matrix_type": "lower"}, ValueError, "`matrix_type` must be 'full' or 'diagonal'"),
        ({"eps": 0.0}, ValueError, r"`eps` must be a number in \(0, 1\)"),
        ({"eps": "tiny"}, TypeError, r"`eps` must be a number in \(0, 1\)"),
        ({"n_jobs": 0}, ValueError, "`n_jobs` must be None or an integer >= 1; got 0"),
        # Every wrong type is a TypeError, every wrong value a ValueError.
        ({"n_jobs": 2.0}, TypeError, "`n_jobs` must be None or an integer >= 1; got 2.0"),
        ({"n_jobs": True}, TypeError, "`n_jobs` must be None or an integer >= 1; got True"),
        ({"n_jobs": "2"}, TypeError, "`n_jobs` must be None or an integer >= 1; got '2'"),
        ({"num_classes": "3"}, TypeError, "`num_classes` must be None or an integer >= 2"),
    ],
)
def test_invalid_dirichlet_settings(params, error, message):
    logits, labels = make_problem()
    with pytest.raises(error, match=message):
        DirichletCalibration(**params).fit(softmax(logits, axis=1), labels)
    if "n_jobs" in params:
        with pytest.raises(error, match=message):
            VectorScaling(**params).fit(logits, labels)


def test_invalid_data():
    logits, labels = make_problem()
    with pytest.raises(ValueError, match="`X` must be finite; row 3 holds NaN or inf"):
        bad = logits.copy()
        bad[3, 1] = np.nan
        VectorScaling().fit(bad, labels)
    with pytest.raises(ValueError, match=r"`y` must lie in \[0, 2\] for 3 classes; got 3"):
        VectorScaling().fit(logits, np.where(labels == 0, 3, labels))
    with pytest.raises(ValueError, match="`sample_weight` must be non-negative"):
        VectorScaling().fit(logits, labels, sample_weight=-np.ones(len(labels)))
    with pytest.raises(ValueError, match=r"`X` must hold probabilities in .* pass logits=True"):
        DirichletCalibration().fit(logits, labels)


# -- real predictions ------------------------------------------------------------------
# Held-out NLL before/after on the shared CIFAR predictions (first half of a seeded
# permutation fits, second half tests; log(p) serves as logits for vector/matrix
# scaling).  The full-matrix maps get an ODIR penalty: with 5,000 samples and K = 100
# (10,100 parameters) an unregularised map over-fits, as Kull et al. found.
FULL_MATRIX_FILES = ("lenet-5-cifar-10", "vgg16-cifar-10", "wideresnet-16-4-cifar-10")


def split_real(prob, labels):
    order = np.random.default_rng(20261130).permutation(len(labels))
    half = len(labels) // 2
    return order[:half], order[half:]


def held_out_nll_before_after(model, prob, labels, use_logits):
    fit_rows, test_rows = split_real(prob, labels)
    X = np.log(np.maximum(prob, np.finfo(prob.dtype).tiny)) if use_logits else prob
    model.fit(X[fit_rows], labels[fit_rows])
    before = mean_nll(
        np.log(np.maximum(prob[test_rows].astype(np.float64), 1e-300)), labels[test_rows]
    )
    after = mean_nll(calibrated_log_prob(model, X[test_rows]), labels[test_rows])
    return before, after


@pytest.mark.parametrize(
    ("make", "use_logits"),
    [
        (lambda: VectorScaling(), True),
        (lambda: DirichletCalibration(matrix_type="diagonal"), False),
    ],
    ids=["vector", "dirichlet-diagonal"],
)
def test_real_predictions_lower_held_out_nll_diagonal(real_predictions, make, use_logits):
    _, prob, labels = real_predictions
    before, after = held_out_nll_before_after(make(), prob, labels, use_logits)
    assert after < before - 0.01


def test_real_predictions_lower_held_out_nll_cifar100_dirichlet():
    # K = 100: a strong ODIR penalty (Kull et al. select lambda, mu by cross-validation).
    prob, labels = load_real("wideresnet-16-4-cifar-100")
    model = DirichletCalibration(reg_lambda=1e4, reg_mu=1e4)
    before, after = held_out_nll_before_after(model, prob, labels, use_logits=False)
    assert after < before - 0.01


@pytest.mark.parametrize("name", FULL_MATRIX_FILES)
@pytest.mark.parametrize(
    ("make", "use_logits"),
    [
        (lambda: MatrixScaling(reg_lambda=10.0, reg_mu=10.0), True),
        (lambda: DirichletCalibration(reg_lambda=10.0, reg_mu=10.0), False),
    ],
    ids=["matrix", "dirichlet-full"],
)
def test_real_predictions_lower_held_out_nll_full(name, make, use_logits):
    prob, labels = load_real(name)
    before, after = held_out_nll_before_after(make(), prob, labels, use_logits)
    assert after < before - 0.01


# -- float32 stages --------------------------------------------------------------------
@pytest.mark.parametrize("config", sorted(CONFIGS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float32_stages_reach_the_float64_optimum(monkeypatch, config, dtype):
    # The fit runs its first L-BFGS-B stages on float32 passes; the last stage is float64,
    # so the fitted loss is that of a fit made of float64 passes only, within the 1e-8 the
    # exactness contract allows (measured: up to 2e-9; the parameters of these flat
    # optima are not compared).
    from calibration_toolbox.recalibration import _linear_fit as linear

    logits, labels = make_problem(seed=7, n=3000, k=6, scale=3.0)
    X = inputs(config, logits).astype(dtype)
    staged = fit(config, X, labels)
    all_double = tuple(stage._replace(precision=np.dtype(np.float64)) for stage in linear._STAGES)
    monkeypatch.setattr(linear, "_STAGES", all_double)
    reference = fit(config, X, labels)
    staged_nll = mean_nll(calibrated_log_prob(staged, X), labels)
    reference_nll = mean_nll(calibrated_log_prob(reference, X), labels)
    assert staged_nll <= reference_nll + 1e-8


def test_pass_in_float32_is_close_to_float64():
    logits, labels = make_problem(seed=8, n=500, k=5)
    nll = _SoftmaxNLL(logits, labels, None, False)
    rng = np.random.default_rng(3)
    matrix, intercept = np.eye(5) + rng.normal(0, 0.1, (5, 5)), rng.normal(0, 0.1, 5)
    double = nll(matrix, intercept)
    single = nll(matrix, intercept, precision=SINGLE)
    assert abs(single.loss - double.loss) <= 1e-6 * double.loss
    assert_allclose(single.grad_matrix, double.grad_matrix, rtol=0, atol=1e-6)
    # The loss is exact in float64: against the log-softmax written out.
    expected = -log_softmax(logits @ matrix.T + intercept, axis=1)[np.arange(500), labels]
    assert_allclose(double.loss, expected.mean(), rtol=1e-13)


# -- chunks and threads ----------------------------------------------------------------
def multi_chunk_problem(k, seed=11):
    # Enough values (N * K >= 2 * _CHUNK_ELEMENTS) for a pass to split the rows in chunks.
    n = 2 * _CHUNK_ELEMENTS // k + 123
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % k)  # every class occurs
    logits = 4.0 * (np.eye(k)[labels] + rng.normal(size=(n, k))) + np.linspace(0, 1, k)
    return logits, labels


@pytest.mark.parametrize("diagonal", [True, False])
def test_pass_over_chunks_is_exact_and_independent_of_threads(diagonal):
    k = 1000 if diagonal else 100
    logits, labels = multi_chunk_problem(k)
    rng = np.random.default_rng(4)
    weights = rng.uniform(0.5, 2.0, len(labels))
    nll = _SoftmaxNLL(logits, labels, weights, diagonal)
    assert len(nll.chunks) >= 2
    assert nll.chunks[0].start == 0 and nll.chunks[-1].stop == len(labels)
    assert all(a.stop == b.start for a, b in itertools.pairwise(nll.chunks))
    shape = (k,) if diagonal else (k, k)
    matrix = nll.identity + rng.normal(0, 0.05, shape)
    intercept = rng.normal(0, 0.3, k)
    alone = nll(matrix, intercept, extras=Extras.CURVATURE)
    with ThreadPoolExecutor(3) as pool:
        shared = nll(matrix, intercept, extras=Extras.CURVATURE, pool=pool)
    # Bit for bit, whatever the threads.
    assert alone.loss == shared.loss
    assert_array_equal(alone.grad_matrix, shared.grad_matrix)
    assert_array_equal(alone.grad_intercept, shared.grad_intercept)
    for a, b in zip(alone.curvature, shared.curvature, strict=True):
        assert_array_equal(a, b)
    # And exact: the loss and the intercept's gradient written out with scipy.
    scores = logits * matrix + intercept if diagonal else logits @ matrix.T + intercept
    log_prob = log_softmax(scores, axis=1)
    w = weights / weights.sum()
    assert_allclose(alone.loss, -(w * log_prob[np.arange(len(labels)), labels]).sum(), rtol=1e-12)
    expected = w @ np.exp(log_prob) - np.bincount(labels, weights=w, minlength=k)
    assert_allclose(alone.grad_intercept, expected, rtol=0, atol=1e-14)


def test_vector_scaling_fit_is_the_same_for_any_number_of_threads():
    logits, labels = multi_chunk_problem(1000, seed=12)
    one = VectorScaling(n_jobs=1).fit(logits, labels)
    three = VectorScaling(n_jobs=3).fit(logits, labels)
    default = VectorScaling().fit(logits, labels)
    for model in (three, default):
        assert_array_equal(model.coef_, one.coef_)
        assert_array_equal(model.intercept_, one.intercept_)
        assert model.n_passes_ == one.n_passes_
