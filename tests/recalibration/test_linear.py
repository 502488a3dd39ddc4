"""Vector scaling, matrix scaling and Dirichlet calibration (recalibration/linear.py)."""

from __future__ import annotations

import itertools
import json
from typing import NamedTuple

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax

from calibration_toolbox._validation import NotFittedError
from calibration_toolbox.recalibration._base import Recalibrator, load_recalibrator
from calibration_toolbox.recalibration.linear import (
    FALLBACK_RIDGE,
    DirichletCalibration,
    MatrixScaling,
    VectorScaling,
)
from tests.conftest import load_real

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


# -- the documented objective, written out independently ---------------------------------
# Each class documents its loss: the weighted mean NLL of softmax(W x + b) with x the
# logits (vector, matrix) or log(max(p, eps)) (Dirichlet), plus a quadratic penalty.  The
# tests below evaluate it with scipy.special.log_softmax and fit it with scipy.optimize
# on the raw parameters (no preconditioning, no float32, no chunks), then check the
# library's fits against it: the gradient at the fitted map vanishes (KKT) and the
# fitted loss is the reference optimum.
def features_of(config, X):
    """The map's features as each class documents them (the log in the input's dtype)."""
    if CONFIGS[config][1]:
        X = np.log(np.maximum(X, X.dtype.type(1e-15)))
    return np.asarray(X, dtype=np.float64)


def penalty_weights(config, k, params):
    """Per-entry weights (on W - I, on b) of the penalty in each class's docstring."""
    reg_lambda, reg_mu = params.get("reg_lambda", 0.0), params.get("reg_mu", 0.0)
    if config == "vector":  # lambda (mean (a - 1)**2 + mean b**2)
        return np.full(k, reg_lambda / k), np.full(k, reg_lambda / k)
    if config == "dirichlet-diagonal":  # no off-diagonal entries: mu mean b**2
        return np.zeros(k), np.full(k, reg_mu / k)
    off_diagonal = np.full((k, k), reg_lambda / (k * (k - 1)))  # ODIR
    np.fill_diagonal(off_diagonal, 0.0)
    return off_diagonal, np.full(k, reg_mu / k)


def penalised_loss(config, params, features, labels, weights, matrix, intercept):
    """Value and gradient in (W, b) of the documented objective (W = diag(a) if 1-D)."""
    n, k = features.shape
    w = np.full(n, 1.0 / n) if weights is None else weights / weights.sum()
    diagonal = matrix.ndim == 1
    # einsum rather than BLAS: small BLAS products wake threads, slow on shared machines.
    if diagonal:
        scores = features * matrix + intercept
    else:
        scores = np.einsum("ij,kj->ik", features, matrix) + intercept
    log_prob = log_softmax(scores, axis=1)
    value = -np.sum(w * log_prob[np.arange(n), labels])
    residual = w[:, None] * (np.exp(log_prob) - np.eye(k)[labels])  # d loss / d scores
    if diagonal:
        grad_matrix = (residual * features).sum(axis=0)
    else:
        grad_matrix = np.einsum("ik,ij->kj", residual, features)
    grad_intercept = residual.sum(axis=0)
    penalty_matrix, penalty_intercept = penalty_weights(config, k, params)
    deviation = matrix - (np.ones(k) if diagonal else np.eye(k))
    value += np.sum(penalty_matrix * deviation**2) + np.sum(penalty_intercept * intercept**2)
    grad_matrix = grad_matrix + 2 * penalty_matrix * deviation
    grad_intercept = grad_intercept + 2 * penalty_intercept * intercept
    return value, grad_matrix, grad_intercept


def reference_fit(config, params, features, labels, weights):
    """The documented objective minimised by scipy's L-BFGS-B from the identity map."""
    k = features.shape[1]
    identity = np.ones(k) if config in ("vector", "dirichlet-diagonal") else np.eye(k)

    def fun(theta):
        matrix = theta[: identity.size].reshape(identity.shape)
        value, grad_matrix, grad_intercept = penalised_loss(
            config, params, features, labels, weights, matrix, theta[identity.size :]
        )
        return value, np.concatenate([grad_matrix.ravel(), grad_intercept])

    start = np.concatenate([identity.ravel(), np.zeros(k)])
    options = {"maxiter": 50_000, "gtol": 1e-13, "ftol": 1e-16, "maxcor": 30}
    return minimize(fun, start, jac=True, method="L-BFGS-B", options=options).fun


class FittedCase(NamedTuple):
    config: str
    params: dict
    model: object
    X: np.ndarray
    features: np.ndarray
    labels: np.ndarray
    weights: np.ndarray | None

    def loss_at_fit(self):
        return penalised_loss(
            self.config,
            self.params,
            self.features,
            self.labels,
            self.weights,
            self.model.coef_,
            self.model.intercept_,
        )


# (config, regularised, weighted, dtype, K): every objective (diagonal / full map, logits /
# log-probabilities, plain / penalised, unweighted / weighted) and float32 input at K = 5,
# and full maps at K = 12 (a larger quotient by the flat directions).
CASES = [
    *itertools.product(sorted(CONFIGS), [False, True], [False, True], ["float64"], [5]),
    *itertools.product(sorted(CONFIGS), [False], [False], ["float32"], [5]),
]
LARGER_CASES = [
    *itertools.product(["matrix", "dirichlet-full"], [False, True], [True], ["float64"], [12]),
]


def case_id(case):
    config, regularised, weighted, dtype, k = case
    plain = "plain" if not (regularised or weighted) else ""
    parts = [config, "penalised" if regularised else "", "weighted" if weighted else "", plain]
    return "-".join(part for part in [*parts, dtype, f"k{k}"] if part)


@pytest.fixture(scope="module")
def fitted_cases():
    """Each case fitted once, shared by the tests below."""
    cache = {}

    def get(case):
        if case not in cache:
            config, regularised, weighted, dtype, k = case
            logits, labels = make_problem(seed=2, n=400 if k > 5 else 800, k=k, scale=3.0)
            X = inputs(config, logits).astype(dtype)
            weights = np.random.default_rng(1).uniform(0.1, 3.0, len(labels)) if weighted else None
            params = REGULARISED[config] if regularised else {}
            model = fit(config, X, labels, sample_weight=weights, **params)
            features = features_of(config, X)
            cache[case] = FittedCase(config, params, model, X, features, labels, weights)
        return cache[case]

    return get


@pytest.mark.parametrize("case", CASES + LARGER_CASES, ids=case_id)
def test_gradient_vanishes_at_the_fitted_map(fitted_cases, case):
    # KKT: the documented objective's gradient, computed independently, is ~0 at the
    # stored map, in every direction, flat ones included (the stored map is the
    # representative with the smallest penalty).  A wrong gradient in the library (in
    # (W, b) or in its preconditioned coordinates), a row counted twice or a direction
    # the optimiser cannot move along would leave it far from 0.  (Measured: <= 2.4e-7.)
    _, grad_matrix, grad_intercept = fitted_cases(case).loss_at_fit()
    assert_allclose(grad_matrix, 0.0, rtol=0, atol=1e-6)
    assert_allclose(grad_intercept, 0.0, rtol=0, atol=1e-6)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_fitted_loss_is_the_float64_reference_optimum(fitted_cases, case):
    # The fit runs its first L-BFGS-B stages on float32 passes and finishes in float64:
    # its penalised loss is that of an independent float64 fit to 1e-9 relative
    # (measured: 3e-14), and no worse beyond rounding.
    fitted = fitted_cases(case)
    reference = reference_fit(
        fitted.config, fitted.params, fitted.features, fitted.labels, fitted.weights
    )
    value = fitted.loss_at_fit()[0]
    assert_allclose(value, reference, rtol=1e-9)
    assert value <= reference * (1 + 1e-12)


@pytest.mark.parametrize("case", CASES + LARGER_CASES, ids=case_id)
def test_stored_map_is_the_canonical_representative(fitted_cases, case):
    # Adding a constant to every score changes no probability, so b and (for a full W)
    # the columns of W are determined up to shifts: the stored map is the equivalent one
    # with the smallest penalty, and where the penalty does not decide, b (and each
    # column of a full W) sums to zero.  ODIR penalises the off-diagonal entries alike,
    # so with lambda > 0 each column's off-diagonal entries sum to zero; every penalty
    # on b is uniform, so b sums to zero.  The saved map predicts the same.
    fitted = fitted_cases(case)
    model = fitted.model
    assert abs(model.intercept_.sum()) < 1e-10
    if model.coef_.ndim == 2:
        columns = model.coef_
        if fitted.params.get("reg_lambda", 0.0) > 0:
            columns = columns - np.diag(np.diag(columns))
        assert_allclose(columns.sum(axis=0), 0.0, rtol=0, atol=1e-10)
    rebuilt = Recalibrator.from_dict(json.loads(json.dumps(model.to_dict())))
    assert_array_equal(rebuilt.predict_proba(fitted.X), model.predict_proba(fitted.X))


# -- exactness against an independent implementation -----------------------------------
# Reference: dirichletcal 0.5.3 (Kull et al.'s package; Python 3.12.1, numpy 2.5.5, jax
# 0.12.0.1, scipy 1.18.1), made by tests/references/dirichletcal_nll.py (its environment:
#   tests/references/requirements.txt; how to rerun it: tests/references/README.md),
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
    logits = rng.normal(0, 2, size=(8000, 3))  # mean error <= 0.0054, max <= 0.036
    cumulative = np.cumsum(softmax(logits, axis=1), axis=1)
    labels = (rng.uniform(size=(8000, 1)) > cumulative).sum(axis=1)
    X = inputs(config, logits)
    model = fit(config, X, labels)
    error = np.abs(model.predict_proba(X) - softmax(logits, axis=1))
    assert error.mean() < 0.01 and error.max() < 0.1


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


def test_separable_set_stops_the_first_fit_at_the_proof():
    # The first (unpenalised) fit stops at the first float64 pass whose NLL proves the
    # set separable, instead of running on along the ray before the refit with the
    # fallback ridge, which VectorScaling(reg_lambda=FALLBACK_RIDGE) fits directly.
    logits, labels = make_problem(seed=11, n=200)
    labels = np.argmax(logits, axis=1)
    with pytest.warns(UserWarning, match="separated perfectly"):
        model = VectorScaling().fit(logits, labels)
    ridge = VectorScaling(reg_lambda=FALLBACK_RIDGE).fit(logits, labels)
    assert_allclose(model.coef_, ridge.coef_, rtol=0, atol=1e-12)
    assert_allclose(model.intercept_, ridge.intercept_, rtol=0, atol=1e-12)
    # 64 passes before the refit without the stop, 40 with it.
    assert model.n_passes_ - ridge.n_passes_ <= 45


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
        "structured": True,
        "classes": ["a", "b", "c"],
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
        "classes": None,
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


# -- chunks and threads ----------------------------------------------------------------
@pytest.fixture(scope="module")
def multi_chunk_problem():
    # N x K >= 2 * 2**21 values: a pass splits the rows into chunks (sets of fewer than
    # 2**22 values are one chunk, as the `n_jobs` docstrings say), shared by the threads.
    k = 100
    n = (1 << 22) // k + 123
    rng = np.random.default_rng(11)
    labels = rng.permutation(np.arange(n) % k)  # every class occurs
    logits = 4.0 * (np.eye(k)[labels] + rng.normal(size=(n, k))) + np.linspace(0, 1, k)
    return logits, labels, rng.uniform(0.5, 2.0, n)


@pytest.mark.parametrize("config", ["vector", "dirichlet-diagonal"])
def test_fit_over_chunks_is_exact_and_the_same_for_any_number_of_threads(
    multi_chunk_problem, config
):
    logits, labels, weights = multi_chunk_problem
    X = inputs(config, logits)
    one = fit(config, X, labels, sample_weight=weights, n_jobs=1)
    for n_jobs in (3, None):  # None: every core
        other = fit(config, X, labels, sample_weight=weights, n_jobs=n_jobs)
        # Bit for bit, whatever the threads.
        assert_array_equal(other.coef_, one.coef_)
        assert_array_equal(other.intercept_, one.intercept_)
        assert other.n_passes_ == one.n_passes_
    # And exact: every row counted once, with its weight (KKT, written out with scipy).
    _, grad_matrix, grad_intercept = penalised_loss(
        config, {}, features_of(config, X), labels, weights, one.coef_, one.intercept_
    )
    assert_allclose(grad_matrix, 0.0, rtol=0, atol=1e-6)
    assert_allclose(grad_intercept, 0.0, rtol=0, atol=1e-6)


def test_full_map_fit_over_stacked_products_is_the_optimum():
    # At K = 32 a full map's products go as a stack of 256-row products plus a remainder
    # (no product large enough to wake BLAS threads): the fitted map is still the optimum.
    logits, labels = make_problem(seed=3, n=300, k=32, scale=3.0)
    params = {"reg_lambda": 30.0, "reg_mu": 30.0}
    weights = np.random.default_rng(1).uniform(0.1, 3.0, len(labels))
    model = fit("matrix", logits, labels, sample_weight=weights, **params)
    case = FittedCase("matrix", params, model, logits, logits, labels, weights)
    _, grad_matrix, grad_intercept = case.loss_at_fit()
    assert_allclose(grad_matrix, 0.0, rtol=0, atol=1e-6)
    assert_allclose(grad_intercept, 0.0, rtol=0, atol=1e-6)


@pytest.mark.parametrize("regularised", [False, True])
@pytest.mark.parametrize("k", [4, 40])  # the dense Newton polish (K <= 32), Newton-CG above
@pytest.mark.parametrize("config", ["vector", "dirichlet-diagonal"])
def test_diagonal_fit_of_shuffled_rows_is_the_same_to_1e_10(config, k, regularised):
    # L-BFGS-B alone stops where float64 rounding of the loss hides its progress: the fit
    # of the same rows in another order differed by up to 4.4e-8 here (measured without
    # the Newton polish).  With it: <= 1.4e-13, and the gradient <= 2.5e-14.
    logits, labels = make_problem(seed=5, n=1500, k=k, scale=3.0)
    rng = np.random.default_rng(6)
    weights = rng.uniform(0.5, 2.0, len(labels))
    X = inputs(config, logits)
    params = REGULARISED[config] if regularised else {}
    one = fit(config, X, labels, weights, **params)
    order = rng.permutation(len(labels))
    other = fit(config, X[order], labels[order], weights[order], **params)
    assert_allclose(other.coef_, one.coef_, rtol=0, atol=1e-10)
    assert_allclose(other.intercept_, one.intercept_, rtol=0, atol=1e-10)
    # The documented objective's gradient, computed independently, vanishes to rounding.
    _, grad_matrix, grad_intercept = penalised_loss(
        config, params, features_of(config, X), labels, weights, one.coef_, one.intercept_
    )
    assert_allclose(grad_matrix, 0.0, rtol=0, atol=1e-12)
    assert_allclose(grad_intercept, 0.0, rtol=0, atol=1e-12)


def test_full_map_fit_with_more_than_181_classes():
    # From K = 182 a full map's cross products are too large for one-thread stacks (see
    # ONE_THREAD_PRODUCT) and go as one product per block; the fit raised "range() arg 3
    # must not be zero" there.  Two iterations suffice to show it runs.
    k = 182
    rng = np.random.default_rng(7)
    labels = rng.permutation(np.arange(k))
    logits = rng.normal(size=(k, k)) + 3.0 * np.eye(k)[labels]
    with pytest.warns(UserWarning, match="MatrixScaling did not converge"):
        model = MatrixScaling(reg_lambda=1e4, reg_mu=1e4, max_iter=2).fit(logits, labels)
    assert model.coef_.shape == (k, k)
    prob = model.predict_proba(logits)
    assert np.all(np.isfinite(prob))
    assert_allclose(prob.sum(axis=1), 1.0, rtol=1e-12)
    assert mean_nll(np.log(prob), labels) <= mean_nll(log_softmax(logits, axis=1), labels)
