"""dirichletcal references: DIRICHLETCAL_REFERENCE and IDENTITY_NLL in tests/test_linear.py.

dirichletcal 0.5.3 needs its own environment (Python 3.12, jax; see requirements.txt). Run
from the repository root::

    python tests/references/dirichletcal_nll.py

Kull et al.'s package is fitted on the problem of test_linear.py's ``reference_problem()``
(copied below) with

* vector:   dirichletcal.calib.vectorscaling.VectorScaling(logit_input=True) on the logits;
* matrix:   dirichletcal.calib.matrixscaling.MatrixScaling(logit_input=True) on the logits;
* dirichlet-full:     dirichletcal.calib.fulldirichlet.FullDirichletCalibrator() on softmax;
* dirichlet-diagonal: dirichletcal.calib.diagdirichlet.DiagonalDirichletCalibrator();
* dirichlet-full-odir: FullDirichletCalibrator(reg_lambda=0.5, reg_mu=0.2, reg_norm=True,
  ref_row=False) (reg_norm divides by K(K-1) and K: the paper's ODIR, as ours);

(its Newton method with exact Hessians by jax, since K <= 36). Each value is the mean NLL
(plus the ODIR penalty for odir) of the package's fitted coef_/intercept_ evaluated exactly
with scipy.special.log_softmax on the logits or on log(softmax): the package clips
probabilities at float64's tiny, which changes nothing here (the smallest is 6e-7).
"""

from __future__ import annotations

import warnings

import numpy as np
from _common import versions
from scipy.special import log_softmax, softmax


def reference_problem():
    """The problem of tests/test_linear.py's ``reference_problem()``."""
    rng = np.random.default_rng(2019)
    labels = rng.integers(0, 4, 600)
    logits = 2.0 * (1.5 * np.eye(4)[labels] + rng.normal(size=(600, 4)))
    logits += np.array([0.0, 0.5, -0.5, 1.0])
    return logits, labels


def mean_nll(log_prob: np.ndarray, labels: np.ndarray) -> float:
    return float(-log_prob[np.arange(len(labels)), labels].mean())


def fitted_nll(model, features: np.ndarray, labels: np.ndarray) -> float:
    """Mean NLL of softmax(features @ coef_.T + intercept_), in float64."""
    coef = np.asarray(model.coef_, dtype=np.float64)
    intercept = np.asarray(model.intercept_, dtype=np.float64)
    # einsum rather than the BLAS product: with it four of the five stored values come out
    # bit for bit (a BLAS product moves three of them by one unit in the last place).
    scores = np.einsum("nj,ij->ni", features, coef) + intercept
    return mean_nll(log_softmax(scores, axis=1), labels)


def references() -> dict[str, float]:
    from dirichletcal.calib.diagdirichlet import DiagonalDirichletCalibrator
    from dirichletcal.calib.fulldirichlet import FullDirichletCalibrator
    from dirichletcal.calib.matrixscaling import MatrixScaling
    from dirichletcal.calib.vectorscaling import VectorScaling

    logits, labels = reference_problem()
    prob = softmax(logits, axis=1)
    log_prob = np.log(prob)
    k = logits.shape[1]
    values = {
        "vector": fitted_nll(VectorScaling(logit_input=True).fit(logits, labels), logits, labels),
        "matrix": fitted_nll(MatrixScaling(logit_input=True).fit(logits, labels), logits, labels),
        "dirichlet-full": fitted_nll(
            FullDirichletCalibrator().fit(prob, labels), log_prob, labels
        ),
        "dirichlet-diagonal": fitted_nll(
            DiagonalDirichletCalibrator().fit(prob, labels), log_prob, labels
        ),
    }
    odir = FullDirichletCalibrator(reg_lambda=0.5, reg_mu=0.2, reg_norm=True, ref_row=False)
    odir.fit(prob, labels)
    coef = np.asarray(odir.coef_, dtype=np.float64)
    off_diagonal = coef - np.diag(np.diag(coef))
    penalty = 0.5 / (k * (k - 1)) * np.sum(off_diagonal**2) + 0.2 / k * np.sum(
        np.asarray(odir.intercept_, dtype=np.float64) ** 2
    )
    values["dirichlet-full-odir"] = fitted_nll(odir, log_prob, labels) + float(penalty)
    return values


def main() -> None:
    print(f"# {versions('numpy', 'scipy', 'jax', 'dirichletcal')}")
    logits, labels = reference_problem()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        values = references()
    print("DIRICHLETCAL_REFERENCE = {")
    for case, value in values.items():
        print(f'    "{case}": {value!r},')
    print("}")
    print(f"IDENTITY_NLL = {mean_nll(log_softmax(logits, axis=1), labels)!r}")


if __name__ == "__main__":
    main()
