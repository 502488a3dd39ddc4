"""The recalibrators inside scikit-learn: its estimator checks, GridSearchCV, Pipeline.

scikit-learn is a test dependency only: the package never imports it (checked in a fresh
interpreter below); ``__sklearn_tags__`` imports it when scikit-learn itself asks.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import logsumexp, softmax

import calibration_toolbox as ct
from calibration_toolbox.datasets import make_overconfident

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone, is_classifier  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

ON_LOGITS = [
    ct.TemperatureScaling,
    ct.EnsembleTemperatureScaling,
    ct.VectorScaling,
    ct.MatrixScaling,
    ct.PlattScaling,
]
ON_PROBABILITIES = [
    ct.DirichletCalibration,
    ct.BetaCalibration,
    ct.IsotonicCalibration,
    ct.HistogramBinning,
    ct.VennAbersCalibration,
    ct.SplineCalibration,
    ct.ScalingBinning,
]

# scikit-learn's own checks run on two classes, one for each kind of input: logits
# (temperature scaling) and probabilities (Dirichlet calibration, a linear map).  The others
# share the estimator contract of _base.py that these checks exercise, and every test below
# runs on all nine.  scikit-learn's harness costs about 70 ms a check here: on all nine
# classes the checks took 58 s of a suite that must stay under 90 s, on these two about 14 s.
CHECKED = [ct.TemperatureScaling, ct.DirichletCalibration]

# -- scikit-learn's checks that do not apply, and why ------------------------------------------
# Every recalibrator takes X of shape (N, K), the logits or probabilities of K classes, and
# integer labels 0..K-1 (K is the number of columns of X).  scikit-learn's checks feed
# arbitrary features instead: 2 to 10 columns against 2 or 3 classes, negative and unnormalised
# values, string labels.
_CONVENTIONS = {
    "check_n_features_in": "no `n_features_in_`: the columns of X are the classes (`n_classes_`)",
    "check_n_features_in_after_fitting": "no `n_features_in_`; `n_classes_` plays its part",
    "check_estimators_unfitted": (
        "raises the package's NotFittedError (a ValueError and AttributeError), not "
        "sklearn.exceptions.NotFittedError, which it cannot subclass without importing sklearn"
    ),
    "check_estimators_empty_data_messages": "the message names `X`, not scikit-learn's wording",
    "check_fit2d_1feature": "one column is refused in the package's words (K >= 2 classes)",
    "check_fit2d_predict1d": "a 1-D X is the binary score column, not an error",
    "check_estimator_sparse_tag": "sparse X is refused with a TypeError in the package's words",
    "check_estimator_sparse_array": "sparse X is refused with a TypeError in the package's words",
    "check_estimator_sparse_matrix": "sparse X is refused with a TypeError in the package's words",
    "check_complex_data": "complex X is refused with a TypeError (a wrong type), not ValueError",
    "check_dtype_object": "object X is refused with a TypeError: predictions are real numbers",
    "check_classifiers_regression_target": "labels are class indices; the message is our own",
    "check_requires_y_none": "y is required; the message names `y` in the package's words",
    "check_supervised_y_2d": "a (N, 1) y is accepted silently (no DataConversionWarning)",
    "check_classifiers_classes": "labels are the class indices 0..K-1, not strings",
}
_FEATURES_NOT_LOGITS = "arbitrary features: labels beyond the columns of X, which are the classes"
_FEATURES_NOT_PROBABILITIES = "arbitrary features: X is not probabilities (negative, rows != 1)"
_ARBITRARY_X = [
    # check_sample_weights_pandas_series fits a pandas DataFrame of 2 columns valued 1..4
    # against labels 1 and 2: refused as numpy arrays are (label 2 of 2 classes; values that
    # are no probabilities), not for being pandas (pandas inputs: test_pandas_inputs_...).
    # Without pandas scikit-learn skips the check.
    "check_sample_weights_pandas_series",
    "check_estimators_overwrite_params",
    "check_estimators_fit_returns_self",
    "check_readonly_memmap_input",
    "check_sample_weights_not_an_array",
    "check_sample_weights_shape",
    "check_sample_weights_not_overwritten",
    "check_classifier_data_not_an_array",
    "check_classifiers_train",
]
_ARBITRARY_PROBABILITIES = [
    "check_all_zero_sample_weights_error",
    "check_classifiers_one_label_sample_weights",
    "check_dict_unchanged",
    "check_dont_overwrite_parameters",
    "check_estimators_dtypes",
    "check_estimators_nan_inf",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_fit2d_1sample",
    "check_fit_check_is_fitted",
    "check_fit_idempotent",
    "check_fit_score_takes_y",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_pipeline_consistency",
    "check_positive_only_tag_during_fit",
    "check_sample_weight_equivalence_on_dense_data",
    "check_sample_weights_list",
    "check_classifiers_one_label",
]
_ONE_LABEL = (
    "K is the number of columns of X, not of labels seen: with one label the map is fitted "
    "and predicts the argmax of its calibrated logits"
)


def expected_failed_checks(estimator) -> dict[str, str]:
    """The checks that do not apply to ``estimator``, with the reason."""
    failing = dict(_CONVENTIONS)
    if type(estimator) in ON_PROBABILITIES:
        failing.update(dict.fromkeys(_ARBITRARY_X + _ARBITRARY_PROBABILITIES, ""))
        failing = {name: reason or _FEATURES_NOT_PROBABILITIES for name, reason in failing.items()}
        if isinstance(estimator, ct.DirichletCalibration):
            failing["check_non_transformer_estimators_n_iter"] = _FEATURES_NOT_PROBABILITIES
        return failing
    failing.update(dict.fromkeys(_ARBITRARY_X, _FEATURES_NOT_LOGITS))
    failing["check_classifiers_one_label"] = _ONE_LABEL
    return failing


with warnings.catch_warnings():
    # scikit-learn warns, once per class, that it does not inherit from its BaseEstimator:
    # on purpose, scikit-learn is no dependency of the package.
    warnings.filterwarnings("ignore", "Estimator .* does not inherit from", UserWarning)
    # A check listed as failing that passes is an error where scikit-learn can say so
    # (xfail_strict, in its releases for Python >= 3.11); the oldest supported releases
    # (1.6 and 1.7, the last for Python 3.10) run the same list non-strictly.
    _strict = (
        {"xfail_strict": True}
        if "xfail_strict" in inspect.signature(parametrize_with_checks).parameters
        else {}
    )
    _sklearn_checks = parametrize_with_checks(
        [cls() for cls in CHECKED], expected_failed_checks=expected_failed_checks, **_strict
    )


@_sklearn_checks
def test_sklearn_estimator_checks(estimator, check):
    # The checks' random data trip the package's own warnings (a map not unique on a
    # separable set, a fit stopped at max_iter); scikit-learn's runner ignores warnings too.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


@pytest.mark.parametrize("cls", ON_LOGITS + ON_PROBABILITIES, ids=lambda cls: cls.__name__)
def test_pandas_inputs_fit_and_predict_as_arrays_do(cls):
    pd = pytest.importorskip("pandas", reason="pandas inputs need pandas (optional)")
    logits, labels = make_overconfident(300, 3, seed=4)
    X = logits if cls in ON_LOGITS else softmax(logits, axis=1)
    weights = np.arange(300) % 3 + 1.0
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    expected = cls().fit(X, labels, sample_weight=weights).predict_proba(X)
    fitted = cls().fit(frame, pd.Series(labels), sample_weight=pd.Series(weights))
    # a DataFrame converts to a column-major array: BLAS rounds its products differently
    assert_allclose(fitted.predict_proba(frame), expected, rtol=0, atol=1e-6)


# -- the protocol ---------------------------------------------------------------------------
def test_the_package_does_not_import_sklearn():
    code = "import sys, calibration_toolbox; print('sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("cls", ON_LOGITS + ON_PROBABILITIES, ids=lambda cls: cls.__name__)
def test_classes_are_the_indices_seen_at_fit_and_not_saved(cls, tmp_path):
    logits, labels = make_overconfident(300, 4, seed=1)
    X = logits if cls in ON_LOGITS else softmax(logits, axis=1)
    estimator = cls()
    assert not hasattr(estimator, "classes_")
    with pytest.raises(ct.NotFittedError, match="not fitted"):
        estimator.classes_  # noqa: B018
    estimator.fit(X, labels)
    assert is_classifier(estimator)
    assert_array_equal(estimator.classes_, np.arange(4))
    assert "classes_" not in estimator.to_dict()["fitted"]
    estimator.save(tmp_path / "model.json")
    assert_array_equal(cls.load(tmp_path / "model.json").classes_, np.arange(4))


def _independent_mean_log_likelihood(estimator, X, y, weights=None):
    """sum w log p[y] / sum w from the fitted coef_ and intercept_, written out."""
    features = np.log(np.maximum(X, estimator.eps_)) if hasattr(estimator, "eps_") else X
    matrix = estimator.coef_ if estimator.coef_.ndim == 2 else np.diag(estimator.coef_)
    scores = features @ matrix.T + estimator.intercept_
    log_p = scores[np.arange(len(y)), y] - logsumexp(scores, axis=1)
    return float(np.average(log_p, weights=weights))


@pytest.mark.parametrize("cls", ON_LOGITS + ON_PROBABILITIES, ids=lambda cls: cls.__name__)
def test_score_is_the_mean_log_likelihood(cls):
    logits, labels = make_overconfident(400, 3, seed=2)
    X = logits if cls in ON_LOGITS else softmax(logits, axis=1)
    weights = np.random.default_rng(0).uniform(0.5, 2.0, size=len(labels))
    estimator = cls().fit(X, labels)
    log_p = np.log(np.maximum(estimator.predict_proba(X), 1e-15))[np.arange(400), labels]
    assert_allclose(estimator.score(X, labels), log_p.mean(), rtol=1e-9, atol=1e-12)
    assert_allclose(
        estimator.score(X, labels, sample_weight=weights),
        np.average(log_p, weights=weights),
        rtol=1e-9,
        atol=1e-12,
    )
    assert_allclose(
        estimator.score(X, labels),
        -ct.negative_log_likelihood(estimator.predict_proba(X), labels),
        rtol=1e-9,
    )


def test_score_refuses_bad_labels_naming_y():
    logits, labels = make_overconfident(100, 3, seed=3)
    estimator = ct.TemperatureScaling().fit(logits, labels)
    with pytest.raises(ValueError, match="`y`"):
        estimator.score(logits, labels + 1)
    with pytest.raises(ValueError, match="`y`"):
        estimator.score(logits, labels[:-1])
    with pytest.raises(ct.NotFittedError, match="not fitted"):
        ct.TemperatureScaling().score(logits, labels)


# -- model selection ----------------------------------------------------------------------
def _split_problem(n_fit, n_test, n_classes, seed):
    logits, labels = make_overconfident(n_fit + n_test, n_classes, temperature=3.0, seed=seed)
    probs = softmax(logits, axis=1)
    return probs[:n_fit], labels[:n_fit], probs[n_fit:], labels[n_fit:]


def test_grid_search_chooses_the_dirichlet_regularisation():
    # 10 classes and 200 rows: 110 free parameters, so the unregularised full map overfits
    # and cross-validation must prefer a penalty.
    X, y, X_test, y_test = _split_problem(200, 4000, 10, seed=4)
    grid = {"reg_lambda": [1e-2, 1.0, 1e2], "reg_mu": [1e-2, 1.0, 1e2]}
    search = GridSearchCV(ct.DirichletCalibration(), grid, cv=3).fit(X, y)
    mean_scores = search.cv_results_["mean_test_score"]
    assert search.best_score_ == mean_scores.max()
    best = search.best_estimator_
    assert best.get_params()["reg_lambda"] == search.best_params_["reg_lambda"]
    assert search.best_params_["reg_lambda"] > 1e-2  # the least penalty overfits
    # The score is the mean log-likelihood, computed here from coef_ and intercept_.
    assert_allclose(
        best.score(X_test, y_test),
        _independent_mean_log_likelihood(best, X_test, y_test),
        rtol=1e-10,
    )
    # And the choice is sensible on held-out data: better than the least penalty and than
    # leaving the predictions alone.
    least = ct.DirichletCalibration(reg_lambda=1e-2, reg_mu=1e-2).fit(X, y)
    assert best.score(X_test, y_test) > least.score(X_test, y_test)
    uncalibrated = -ct.negative_log_likelihood(X_test, y_test)
    assert best.score(X_test, y_test) > uncalibrated


def test_cross_val_score_is_the_held_out_log_likelihood():
    X, y, _, _ = _split_problem(600, 0, 4, seed=5)
    scores = cross_val_score(ct.MatrixScaling(reg_lambda=1.0), np.log(X), y, cv=3)
    assert scores.shape == (3,)
    assert np.all(np.isfinite(scores)) and np.all(scores < 0)
    # cross_val_score uses a stratified 3-fold split for a classifier: the same folds again.
    from sklearn.model_selection import StratifiedKFold

    expected = [
        ct.MatrixScaling(reg_lambda=1.0)
        .fit(np.log(X[train]), y[train])
        .score(np.log(X[test]), y[test])
        for train, test in StratifiedKFold(3).split(X, y)
    ]
    assert_allclose(scores, expected, rtol=1e-12)


@pytest.mark.parametrize("cls", [ct.DirichletCalibration, ct.MatrixScaling])
def test_pipeline_with_a_log_transformer(cls):
    X, y, X_test, y_test = _split_problem(600, 300, 4, seed=6)
    pipeline = make_pipeline(FunctionTransformer(np.log), cls(reg_lambda=1e-2, reg_mu=1e-2))
    if cls is ct.DirichletCalibration:  # takes probabilities: the log goes before a softmax
        pipeline = make_pipeline(
            FunctionTransformer(np.log),
            FunctionTransformer(lambda z: softmax(z, axis=1)),
            cls(reg_lambda=1e-2, reg_mu=1e-2),
        )
    pipeline.fit(X, y)
    direct = cls(reg_lambda=1e-2, reg_mu=1e-2).fit(
        np.log(X) if cls is ct.MatrixScaling else softmax(np.log(X), axis=1), y
    )
    test_input = np.log(X_test) if cls is ct.MatrixScaling else softmax(np.log(X_test), axis=1)
    assert_allclose(pipeline.predict_proba(X_test), direct.predict_proba(test_input), rtol=1e-9)
    assert_allclose(pipeline.score(X_test, y_test), direct.score(test_input, y_test), rtol=1e-12)
    assert_array_equal(pipeline.classes_, np.arange(4))
    grid = GridSearchCV(pipeline, {f"{cls.__name__.lower()}__reg_lambda": [1e-2, 1.0]}, cv=3)
    assert grid.fit(X, y).best_estimator_[-1].n_classes_ == 4
    assert clone(pipeline).get_params()[f"{cls.__name__.lower()}__reg_mu"] == 1e-2
