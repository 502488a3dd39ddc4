"""Platt and beta calibration references: REFERENCE in tests/test_binary.py.

Run from the repository root in the peers environment of tests/references/requirements.txt::

    python tests/references/binary_platt_beta.py

It prints the dictionary that tests/test_binary.py holds as REFERENCE. The problems are made
by the generators below, which tests/test_binary.py imports from here:
binary_logit_problem(0, 600); multiclass_problem(1, 800, 4) with its weights, scores
softmax(logits) or the logits, predictions on the first 5 rows; beta_problem(2, 700, ...).
"params" are [a, b] of sigmoid(a s + b) (Platt) or [a, b, c] of
sigmoid(a ln s - b ln(1 - s) + c) (beta), per class for the one-vs-rest cases, whose "proba"
are renormalised to sum to 1 per row.

* platt_*: sklearn.calibration._SigmoidCalibration().fit(s, y, w) on the score column
  (a = -a_, b = -b_); probabilities from its predict.
* plain_*: LogisticRegression(C=np.inf, solver="newton-cholesky", tol=1e-12,
  max_iter=1000).fit(s[:, None], y, w) (C=np.inf is 1.9's spelling of penalty=None).
* beta_*: betacal.BetaCalibration(parameters).fit(s, y, w), with the LogisticRegression
  inside betacal.beta_calibration replaced by functools.partial(LogisticRegression,
  solver="newton-cholesky", tol=1e-12, max_iter=1000): betacal's default lbfgs with
  tol=1e-4 leaves a and b 5e-5 to 2e-3 from the optimum on beta_pos. [a, b] from
  calibrator_.map_, c from lr_.intercept_ ((a - b) ln 2 for 'ab', fitted without
  intercept). 'ab' only on beta_pos: betacal does not bound it, and on beta_neg_b its b is
  negative.
"""

from __future__ import annotations

import functools
import pprint
import warnings

import numpy as np
from _common import versions
from scipy.special import softmax


# -- the problems (tests/test_binary.py imports them from here) -----------------------------
def binary_logit_problem(seed, n):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < 0.4).astype(np.int64)
    logit = 3.0 * (2 * labels - 1) + 2.5 * rng.normal(size=n)
    return logit, labels


def multiclass_problem(seed, n, n_classes):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_classes, n)
    logits = 2.5 * (2.0 * np.eye(n_classes)[labels] + rng.normal(size=(n, n_classes)))
    weights = rng.uniform(0.5, 2.0, n)
    return logits, labels, weights


def beta_problem(seed, n, positive=(4.0, 3.0), negative=(1.0, 2.0)):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    score = rng.beta(
        np.where(labels == 1, positive[0], negative[0]),
        np.where(labels == 1, positive[1], negative[1]),
    )
    return score, labels


LOGIT_GRID = np.linspace(-12.0, 12.0, 7)
PROB_GRID = np.array([1e-6, 0.001, 0.05, 0.3, 0.5, 0.7, 0.95, 0.999, 1 - 1e-6])
BETA_PROBLEMS = {
    # Population maps: beta_pos a = 2, b = 1; beta_neg_b a = 3, b = -1 (the bound b >= 0 binds).
    "beta_pos": dict(positive=(4.0, 2.0), negative=(2.0, 3.0)),
    "beta_neg_b": dict(positive=(4.0, 3.0), negative=(1.0, 2.0)),
}


# -- the peers ---------------------------------------------------------------------------------
def platt(score, labels, weights=None):
    """[a, b] and the probability function of scikit-learn's Platt scaling."""
    from sklearn.calibration import _SigmoidCalibration

    model = _SigmoidCalibration().fit(score, labels, weights)
    return [-model.a_, -model.b_], model.predict


def plain(score, labels, weights=None):
    """[a, b] and the probability function of an unpenalised logistic regression."""
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=np.inf, solver="newton-cholesky", tol=1e-12, max_iter=1000)
    model.fit(score[:, None], labels, weights)
    return [model.coef_[0, 0], model.intercept_[0]], lambda s: model.predict_proba(s[:, None])[
        :, 1
    ]


def beta(parameters):
    """A fitter of betacal's BetaCalibration(parameters), driven to the optimum by Newton."""

    def fit(score, labels, weights=None):
        import betacal
        import betacal.beta_calibration
        from sklearn.linear_model import LogisticRegression

        betacal.beta_calibration.LogisticRegression = functools.partial(
            LogisticRegression, solver="newton-cholesky", tol=1e-12, max_iter=1000
        )
        model = betacal.BetaCalibration(parameters).fit(score, labels, weights)
        a, b, _ = model.calibrator_.map_
        lr = model.calibrator_.lr_
        c = (a - b) * np.log(2) if parameters == "ab" else lr.intercept_[0]
        return [float(a), float(b), float(c)], model.predict

    return fit


def binary_case(fit, score, labels, grid):
    params, predict = fit(score, labels)
    return {"params": [float(p) for p in params], "proba": [float(p) for p in predict(grid)]}


def one_vs_rest_case(fit, scores, labels, weights, rows=5):
    params, columns = [], []
    for k in range(scores.shape[1]):
        column_params, predict = fit(scores[:, k], (labels == k).astype(np.int64), weights)
        params.append([float(p) for p in column_params])
        columns.append(predict(scores[:rows, k]))
    proba = np.column_stack(columns)
    proba /= proba.sum(axis=1, keepdims=True)
    return {"params": params, "proba": proba.tolist()}


def references() -> dict:
    logit_scores, logit_labels = binary_logit_problem(0, 600)
    logits, labels, weights = multiclass_problem(1, 800, 4)
    prob = softmax(logits, axis=1)
    reference = {
        "platt_binary": binary_case(platt, logit_scores, logit_labels, LOGIT_GRID),
        "plain_binary": binary_case(plain, logit_scores, logit_labels, LOGIT_GRID),
        "platt_multi_prob": one_vs_rest_case(platt, prob, labels, weights),
        "platt_multi_logits": one_vs_rest_case(platt, logits, labels, weights),
        "plain_multi_logits": one_vs_rest_case(plain, logits, labels, weights),
    }
    for problem, parameters in [
        ("beta_pos", "abm"),
        ("beta_pos", "ab"),
        ("beta_pos", "am"),
        ("beta_neg_b", "abm"),
        ("beta_neg_b", "am"),
    ]:
        score, beta_labels = beta_problem(2, 700, **BETA_PROBLEMS[problem])
        reference[f"{problem}_{parameters}"] = binary_case(
            beta(parameters), score, beta_labels, PROB_GRID
        )
    reference["beta_multi_abm"] = one_vs_rest_case(beta("abm"), prob, labels, weights)
    return reference


def main() -> None:
    print(f"# {versions('numpy', 'scipy', 'sklearn', 'betacal')}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = references()
    print("REFERENCE = " + pprint.pformat(reference, width=96, sort_dicts=False))


if __name__ == "__main__":
    main()
