"""calibration_toolbox.sklearn: CalibratedClassifier and the calibration scorers.

References: scikit-learn's own ``CalibratedClassifierCV`` where the definitions agree
(isotonic: the same map, to rtol 1e-12; sigmoid: the same objective, solved by another
optimiser, so to its tolerance, with the KKT condition of ours checked to 1e-9), and
otherwise the scheme written out here as a loop over scikit-learn's folds.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy.special import expit

import calibration_toolbox as ct
from calibration_toolbox import _registry

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.ensemble import RandomForestClassifier  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import (  # noqa: E402
    GridSearchCV,
    StratifiedKFold,
    cross_val_predict,
    cross_val_score,
)
from sklearn.neighbors import KNeighborsClassifier  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

from calibration_toolbox.sklearn import (  # noqa: E402
    CalibratedClassifier,
    get_scorer,
    make_calibration_scorer,
    scorer_names,
)

NAMES = np.array(["cat", "dog", "emu"])


def _problem(n=400, n_classes=3, seed=0, names=False):
    X, y = make_classification(
        n, n_features=8, n_informative=5, n_classes=n_classes, random_state=seed
    )
    return X, (NAMES[y] if names else y)


def _forest():
    return RandomForestClassifier(n_estimators=5, max_depth=5, random_state=0)


def _manual_ensemble(estimator, recalibrator, X, y, needs, cv=3, weights=None):
    """The per-fold scheme written out: clone, fit on train, recalibrate on test, average."""
    classes = np.unique(y)
    binary = len(classes) == 2
    total = 0.0
    for train, test in StratifiedKFold(cv).split(X, y):
        kwargs = {} if weights is None else {"sample_weight": weights[train]}
        fitted = clone(estimator).fit(X[train], y[train], **kwargs)
        inputs = _inputs(fitted, X[test], needs, binary)
        model = clone(recalibrator).fit(
            inputs,
            np.searchsorted(classes, y[test]),
            sample_weight=None if weights is None else weights[test],
        )
        total = total + model.predict_proba(_inputs(fitted, X, needs, binary))
    return total / cv


def _inputs(estimator, X, needs, binary):
    if needs == "logits" and hasattr(estimator, "decision_function"):
        return estimator.decision_function(X)
    proba = estimator.predict_proba(X)
    if needs == "logits":
        if binary:
            return np.log(proba[:, 1]) - np.log(proba[:, 0])
        return np.log(np.maximum(proba, 1e-300))
    return proba[:, 1] if binary else proba


# -- the package stays free of scikit-learn ---------------------------------------------------
def test_importing_the_module_does_not_import_sklearn():
    code = "import sys, calibration_toolbox.sklearn; print('sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- CalibratedClassifier ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("recalibrator", "needs"),
    [(ct.TemperatureScaling(), "logits"), (ct.DirichletCalibration(), "probabilities")],
    ids=["temperature", "dirichlet"],
)
def test_a_random_forest_with_our_recalibrators_is_the_fold_scheme(recalibrator, needs):
    X, y = _problem(names=True)
    # scikit-learn's own wrapper refuses these methods (the example).
    with pytest.raises((ValueError, TypeError)):
        CalibratedClassifierCV(_forest(), method=recalibrator, cv=3).fit(X, y)
    model = CalibratedClassifier(_forest(), method=recalibrator, cv=3).fit(X, y)
    expected = _manual_ensemble(_forest(), recalibrator, X, y, needs)
    assert_allclose(model.predict_proba(X), expected, rtol=1e-12, atol=1e-15)
    assert_array_equal(model.classes_, NAMES)
    assert_array_equal(model.predict(X), NAMES[np.argmax(expected, axis=1)])
    assert len(model.estimators_) == len(model.recalibrators_) == 3
    assert not hasattr(recalibrator, "n_classes_")  # the object passed is not fitted


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("ensemble", [True, False])
def test_isotonic_equals_calibrated_classifier_cv(n_classes, ensemble):
    X, y = _problem(n_classes=n_classes, names=True)
    weights = np.random.default_rng(1).uniform(0.5, 2.0, len(y))
    ours = CalibratedClassifier(
        _forest(), method=ct.IsotonicCalibration(), cv=3, ensemble=ensemble
    ).fit(X, y, sample_weight=weights)
    theirs = CalibratedClassifierCV(_forest(), method="isotonic", cv=3, ensemble=ensemble)
    theirs.fit(X, y, sample_weight=weights)
    assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=1e-12, atol=1e-15)
    assert_array_equal(ours.classes_, theirs.classes_)
    assert_array_equal(ours.predict(X), theirs.predict(X))


def _smoothed_platt_gradient(model, score, positive, weights=None):
    """The gradient in (a, b) of Platt's smoothed-target cross-entropy at the fitted map."""
    w = np.ones(len(score)) if weights is None else weights
    n_pos, n_neg = w[positive].sum(), w[~positive].sum()
    target = np.where(positive, (n_pos + 1) / (n_pos + 2), 1 / (n_neg + 2))
    p = expit(model.coef_[0, 0] * score + model.intercept_[0])
    residual = w * (p - target)
    return np.array([residual @ score, residual.sum()]) / w.sum()


@pytest.mark.parametrize("n_classes", [2, 3])
def test_platt_is_sklearn_sigmoid_up_to_its_optimiser(n_classes):
    # Both minimise Platt's smoothed-target cross-entropy of sigmoid(a f + b) on the
    # decision_function, one-vs-rest and renormalised with K > 2: the same definition.
    # scikit-learn stops L-BFGS-B at gtol=1e-6, we solve to the Newton optimum, so the
    # probabilities agree to about 1e-8 and our KKT condition holds to 1e-9.
    X, y = _problem(n_classes=n_classes, seed=2)
    logistic = LogisticRegression(max_iter=2000)
    ours = CalibratedClassifier(logistic, method=ct.PlattScaling(), cv=3).fit(X, y)
    theirs = CalibratedClassifierCV(logistic, method="sigmoid", cv=3).fit(X, y)
    assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), rtol=0, atol=1e-7)
    folds = list(StratifiedKFold(3).split(X, y))
    for (_, test), estimator, model in zip(
        folds, ours.estimators_, ours.recalibrators_, strict=True
    ):
        score = estimator.decision_function(X[test])
        score = score if score.ndim == 1 else score[:, 0]
        gradient = _smoothed_platt_gradient(model, score, y[test] == (1 if n_classes == 2 else 0))
        assert np.abs(gradient).max() < 1e-9


def test_ensemble_false_is_one_recalibrator_on_out_of_fold_predictions():
    X, y = _problem(seed=3)
    model = CalibratedClassifier(
        _forest(), method=ct.TemperatureScaling(), cv=3, ensemble=False
    ).fit(X, y)
    out_of_fold = cross_val_predict(_forest(), X, y, cv=StratifiedKFold(3), method="predict_proba")
    recalibrator = ct.TemperatureScaling().fit(np.log(np.maximum(out_of_fold, 1e-300)), y)
    refitted = _forest().fit(X, y)
    expected = recalibrator.predict_proba(np.log(np.maximum(refitted.predict_proba(X), 1e-300)))
    assert_allclose(model.predict_proba(X), expected, rtol=1e-12, atol=1e-15)
    assert len(model.recalibrators_) == 1
    assert model.recalibrators_[0].temperature_ == recalibrator.temperature_


def test_prefit_and_frozen_fit_the_recalibrator_on_all_rows():
    X, y = _problem(seed=4, names=True)
    X_fit, y_fit, X_cal, y_cal = X[:300], y[:300], X[300:], y[300:]
    forest = _forest().fit(X_fit, y_fit)
    expected = (
        ct.IsotonicCalibration()
        .fit(forest.predict_proba(X_cal), np.searchsorted(NAMES, y_cal))
        .predict_proba(forest.predict_proba(X_fit))
    )
    prefit = CalibratedClassifier(forest, method="isotonic", cv="prefit").fit(X_cal, y_cal)
    frozen = CalibratedClassifier(FrozenEstimator(forest), method="isotonic").fit(X_cal, y_cal)
    theirs = CalibratedClassifierCV(FrozenEstimator(forest), method="isotonic").fit(X_cal, y_cal)
    for model in (prefit, frozen):
        assert_allclose(model.predict_proba(X_fit), expected, rtol=1e-12, atol=1e-15)
        assert model.estimators_[0] is not None and len(model.recalibrators_) == 1
    assert_allclose(frozen.predict_proba(X_fit), theirs.predict_proba(X_fit), rtol=1e-12)
    assert prefit.estimators_[0] is forest  # used as fitted, never refitted


def test_a_binary_decision_function_is_the_logit_of_the_logit_methods():
    X, y = _problem(n_classes=2, seed=5)
    model = CalibratedClassifier(LogisticRegression(), method="temperature", cv=3).fit(X, y)
    expected = _manual_ensemble(LogisticRegression(), ct.TemperatureScaling(), X, y, "logits")
    assert_allclose(model.predict_proba(X), expected, rtol=1e-12, atol=1e-15)
    assert model.predict_proba(X).shape == (len(y), 2)
    assert model.estimators_[0].decision_function(X).ndim == 1


def test_sample_weights_reach_the_estimator_and_the_recalibrator():
    X, y = _problem(seed=6)
    weights = np.arange(len(y)) % 3 + 1.0
    model = CalibratedClassifier(_forest(), method=ct.TemperatureScaling(), cv=3)
    model.fit(X, y, sample_weight=weights)
    expected = _manual_ensemble(
        _forest(), ct.TemperatureScaling(), X, y, "logits", weights=weights
    )
    assert_allclose(model.predict_proba(X), expected, rtol=1e-12, atol=1e-15)
    unweighted = CalibratedClassifier(_forest(), method=ct.TemperatureScaling(), cv=3).fit(X, y)
    assert np.abs(unweighted.predict_proba(X) - model.predict_proba(X)).max() > 1e-6


def test_weights_an_estimator_cannot_take_go_to_the_recalibrator_with_a_warning():
    X, y = _problem(seed=7)
    weights = np.arange(len(y)) % 2 + 1.0
    model = CalibratedClassifier(KNeighborsClassifier(), method="temperature", cv="prefit")
    model.estimator.fit(X, y)
    with pytest.warns(UserWarning, match="takes no sample_weight"):
        model.fit(X, y, sample_weight=weights)
    inputs = np.log(np.maximum(model.estimator.predict_proba(X), 1e-300))
    expected = ct.TemperatureScaling().fit(inputs, y, sample_weight=weights)
    assert model.recalibrators_[0].temperature_ == expected.temperature_


def test_inputs_are_not_mutated_and_params_clone():
    X, y = _problem(seed=8, names=True)
    weights = np.ones(len(y))
    copies = X.copy(), y.copy(), weights.copy()
    model = CalibratedClassifier(LogisticRegression(C=0.5), method=ct.MatrixScaling(), cv=3)
    model.fit(X, y, sample_weight=weights)
    for array, copy in zip((X, y, weights), copies, strict=True):
        assert_array_equal(array, copy)
    params = model.get_params()
    assert params["estimator__C"] == 0.5 and "method__reg_lambda" in params
    twin = clone(model).set_params(estimator__C=2.0)
    assert twin.estimator.C == 2.0 and model.estimator.C == 0.5
    search = GridSearchCV(model, {"estimator__C": [0.1, 1.0]}, cv=2).fit(X, y)
    assert search.best_params_["estimator__C"] in (0.1, 1.0)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"method": "bayesian-binning"}, ValueError, "`method` must be a recalibrator or one of"),
        ({"method": LogisticRegression()}, TypeError, "`method` must be a recalibrator"),
        ({"ensemble": "yes"}, TypeError, "`ensemble` must be True or False"),
        ({"cv": 400}, ValueError, "`cv`: 400-fold cross-validation needs at least 400 rows"),
    ],
)
def test_bad_settings_are_refused_by_name(kwargs, error, match):
    X, y = _problem(seed=9)
    with pytest.raises(error, match=match):
        CalibratedClassifier(_forest(), **kwargs).fit(X, y)


def test_prefit_labels_outside_the_estimator_classes_are_refused():
    X, y = _problem(seed=10)
    forest = _forest().fit(X, y)
    with pytest.raises(ValueError, match="`y` holds the label 7"):
        CalibratedClassifier(forest, cv="prefit").fit(X, np.where(y == 0, 7, y))


def test_not_fitted_is_sklearns_error():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        CalibratedClassifier(_forest()).predict_proba(np.zeros((2, 8)))


# scikit-learn's checks on one wrapper (logistic regression + temperature scaling).
_CHECK_FAILURES = {
    "check_fit2d_1sample": (
        "one row is refused by the fold check, whose message names `cv` and the rows per "
        "class, not scikit-learn's wording"
    ),
}

with warnings.catch_warnings():
    warnings.filterwarnings("ignore", "Estimator .* does not inherit from", UserWarning)
    _checks = parametrize_with_checks(
        [CalibratedClassifier(LogisticRegression(), method=ct.TemperatureScaling(), cv=3)],
        expected_failed_checks=lambda estimator: _CHECK_FAILURES,
    )


@_checks
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


# -- scorers -----------------------------------------------------------------------------------
def test_a_scorer_is_the_negated_metric_of_predict_proba_with_named_labels():
    X, y = _problem(seed=11, names=True)
    model = CalibratedClassifier(_forest(), method="temperature", cv=3).fit(X, y)
    probabilities = model.predict_proba(X)
    indices = np.searchsorted(NAMES, y)
    scorer = make_calibration_scorer("ECE", bins=15)
    assert scorer(model, X, y) == -ct.ECE(probabilities, indices, bins=15)
    assert scorer.score_func(indices, probabilities) == ct.ECE(probabilities, indices, bins=15)
    weights = np.arange(len(y)) % 4 + 1.0
    assert scorer(model, X, y, sample_weight=weights) == -ct.ECE(
        probabilities, indices, bins=15, sample_weight=weights
    )
    assert make_calibration_scorer("Brier")(model, X, y) == -ct.brier_score(probabilities, indices)
    auroc = make_calibration_scorer("confidence_auroc")
    assert auroc(model, X, y) == ct.confidence_auroc(probabilities, indices) > 0


def test_the_scorer_docstring_value_by_hand():
    # confidences 0.9, 0.8, 0.6 (correct, correct, wrong), all in the bin [0.5, 1]:
    # |mean confidence - accuracy| = |2.3 / 3 - 2 / 3| = 0.1.
    scorer = make_calibration_scorer("ECE", bins=2)
    value = scorer.score_func([0, 1, 1], [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    assert_allclose(value, 0.1, rtol=1e-12)


def test_named_scorers_are_the_registry_rows():
    names = scorer_names()
    assert "neg_expected_calibration_error" in names and "neg_ece" in names
    assert "neg_brier_score" in names and "neg_negative_log_likelihood" in names
    assert "confidence_auroc" in names and "neg_sce" in names and "neg_ace" in names
    scalar_rows = [
        row
        for row in _registry.ROWS.values()
        if row.bootstrap is not None
        and not row.multilabel
        and row.name not in ("ToprCE",)
        and row.name not in ("coverage_at_risk", "risk_at_coverage")
    ]
    assert len(names) == len(scalar_rows)
    for row in scalar_rows:
        scorer = get_scorer(("" if row.higher_is_better else "neg_") + row.name.lower())
        assert scorer.metric == row.name and scorer.greater_is_better == row.higher_is_better
    X, y = _problem(seed=12)
    model = _forest().fit(X, y)
    probabilities = model.predict_proba(X)
    assert get_scorer("neg_negative_log_likelihood")(model, X, y) == -ct.negative_log_likelihood(
        probabilities, y
    )
    assert get_scorer("neg_debiased_l2")(model, X, y) == -ct.GCE(
        probabilities, y, class_conditional=False, norm=2, debias=True
    )


def test_scorers_in_grid_search_and_cross_val_score():
    X, y = _problem(seed=13)
    scorer = make_calibration_scorer("ECE", bins=10)
    model = CalibratedClassifier(LogisticRegression(), method="temperature", cv=2)
    scores = cross_val_score(model, X, y, cv=3, scoring=scorer)
    expected = []
    for train, test in StratifiedKFold(3).split(X, y):
        fitted = clone(model).fit(X[train], y[train])
        expected.append(-ct.ECE(fitted.predict_proba(X[test]), y[test], bins=10))
    assert_allclose(scores, expected, rtol=1e-12)
    grid = {"estimator__C": [0.01, 1.0]}
    search = GridSearchCV(model, grid, cv=3, scoring=get_scorer("neg_brier_score")).fit(X, y)
    for index, C in enumerate(search.cv_results_["param_estimator__C"]):
        folds = [
            -ct.brier_score(
                clone(model).set_params(estimator__C=C).fit(X[tr], y[tr]).predict_proba(X[te]),
                y[te],
            )
            for tr, te in StratifiedKFold(3).split(X, y)
        ]
        assert_allclose(search.cv_results_["mean_test_score"][index], np.mean(folds), rtol=1e-12)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: make_calibration_scorer("ECF"), ValueError, "`metric` must be one of ECE"),
        (lambda: make_calibration_scorer(3), TypeError, "`metric` must be a metric name"),
        (lambda: make_calibration_scorer("ECE", bin=3), ValueError, "ECE takes no option 'bin'"),
        (lambda: make_calibration_scorer("ECE", logits=True), ValueError, "no option 'logits'"),
        (lambda: make_calibration_scorer("ToprCE"), ValueError, "ToprCE needs the option"),
        (lambda: get_scorer("neg_log_loss"), ValueError, "`name` must be one of neg_ece"),
    ],
)
def test_bad_scorers_are_refused_by_name(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_a_scorer_refuses_labels_the_estimator_does_not_know():
    X, y = _problem(seed=14)
    model = _forest().fit(X, y)
    with pytest.raises(ValueError, match="`y_true` holds the label 5"):
        make_calibration_scorer("ECE")(model, X, np.where(y == 0, 5, y))
