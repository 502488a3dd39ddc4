"""Write isotonic_sklearn_reference.npz: scikit-learn's isotonic fits on a synthetic problem.

Run from the repository root in the peers environment of tests/references/requirements.txt
(scikit-learn is not a dependency of this project)::

    python tests/references/make_isotonic_reference.py [OUTPUT]

OUTPUT defaults to tests/data/isotonic_sklearn_reference.npz, the file that
tests/test_nonparametric.py reads; give another path to compare a fresh run with it.
The stored file was made with scikit-learn 1.9.1, NumPy 2.4.6 and SciPy 1.17.1.
tests/test_nonparametric.py imports ``synthetic_problem`` and ``checksums`` from this file
to regenerate the problem (so it imports nothing outside NumPy and SciPy at module level);
the file keeps checksums of the inputs so the test can tell if NumPy's generator ever
produces other arrays.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from scipy.special import softmax


def synthetic_problem(seed: int = 20261130) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n_fit, n_test, n_classes = 400, 200, 4
    logits = 2.5 * rng.normal(size=(n_fit + n_test, n_classes))
    true_prob = softmax(logits / 2.5, axis=1)  # the model is 2.5x overconfident
    uniform = rng.random(n_fit + n_test)
    labels = np.minimum((uniform[:, None] > np.cumsum(true_prob, axis=1)).sum(axis=1), 3)
    prob = softmax(logits, axis=1)
    # Exact duplicate rows make tied scores in every column.
    fit_prob = np.concatenate([prob[:n_fit], prob[:40]])
    fit_labels = np.concatenate([labels[:n_fit], labels[:40]])
    fit_weights = rng.integers(1, 4, len(fit_prob)).astype(np.float64)
    # Held-out rows, a few calibration rows and rows more extreme than any seen in fit.
    test_prob = np.concatenate([prob[n_fit:], prob[:10], softmax(3 * logits[:10], axis=1)])
    # Binary scores rounded to two decimals: many ties.
    binary_scores = np.round(rng.random(500), 2)
    binary_labels = (rng.random(500) < binary_scores**2).astype(np.int64)
    return {
        "fit_prob": fit_prob,
        "fit_labels": fit_labels,
        "fit_weights": fit_weights,
        "test_prob": test_prob,
        "binary_fit": binary_scores[:300],
        "binary_fit_labels": binary_labels[:300],
        "binary_test": np.concatenate([binary_scores[300:], [0.0, 1.0]]),
    }


def checksums(problem: dict[str, np.ndarray]) -> np.ndarray:
    return np.array([float(np.sum(problem[key])) for key in sorted(problem)])


def main() -> None:
    import sklearn
    from sklearn.isotonic import IsotonicRegression

    problem = synthetic_problem()
    fit_prob, fit_labels = problem["fit_prob"], problem["fit_labels"]
    test_prob = problem["test_prob"]

    def one_vs_rest(sample_weight):
        columns = np.empty(test_prob.shape)
        for k in range(fit_prob.shape[1]):
            model = IsotonicRegression(out_of_bounds="clip")
            model.fit(fit_prob[:, k], fit_labels == k, sample_weight=sample_weight)
            columns[:, k] = model.predict(test_prob[:, k])
        return columns

    binary = IsotonicRegression(out_of_bounds="clip")
    binary.fit(problem["binary_fit"], problem["binary_fit_labels"])

    confidence = fit_prob.max(axis=1)
    correct = fit_prob.argmax(axis=1) == fit_labels
    top_label = IsotonicRegression(out_of_bounds="clip").fit(confidence, correct)

    default = Path(__file__).resolve().parents[1] / "data" / "isotonic_sklearn_reference.npz"
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    np.savez_compressed(
        path,
        input_checksums=checksums(problem),
        ovr_columns=one_vs_rest(None),
        ovr_columns_weighted=one_vs_rest(problem["fit_weights"]),
        binary=binary.predict(problem["binary_test"]),
        top_label_confidence=top_label.predict(test_prob.max(axis=1)),
        versions=np.array([sklearn.__version__, np.__version__, __import__("scipy").__version__]),
    )
    print(f"wrote {path} ({path.stat().st_size} bytes) with scikit-learn {sklearn.__version__}")


if __name__ == "__main__":
    main()
