"""Code a user writes against the public API, as the README shows it, type-checked.

``tests/test_typing.py`` runs ``mypy --strict`` on this file (it must pass) and also runs
``main()`` in a temporary folder, so that what the annotations claim holds at run time.
Nothing runs at import.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from calibration_toolbox import (
    ACE,
    CWCE,
    ECE,
    GCE,
    KSCE,
    MCE,
    MMCE,
    OCE,
    RMSCE,
    SCE,
    SKCE,
    TACE,
    TCE,
    UCE,
    BetaCalibration,
    BrierDecomposition,
    CalibrationAccumulator,
    CalibrationTable,
    DirichletCalibration,
    ECESweep,
    ECESweepResult,
    EnsembleTemperatureScaling,
    HistogramBinning,
    IsotonicCalibration,
    KuiperCE,
    MatrixScaling,
    PlattScaling,
    Recalibrator,
    Scores,
    SmoothECE,
    TemperatureScaling,
    TopLabelECE,
    ToprCE,
    VectorScaling,
    brier_decomposition,
    brier_score,
    calibration_table,
    expected_calibration_error,
    load_recalibrator,
    negative_log_likelihood,
    stats,
)
from calibration_toolbox.datasets import make_overconfident
from calibration_toolbox.io import iter_predictions, load_predictions
from calibration_toolbox.scores import PredictionsLike
from calibration_toolbox.stats import BootstrapResult, bootstrap, consistency_test


def softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    """Row-wise softmax in NumPy (SciPy ships no type hints for mypy)."""
    exps = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities: NDArray[np.float64] = exps / exps.sum(axis=1, keepdims=True)
    return probabilities


def predictions() -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    rng = np.random.default_rng(0)
    prob = rng.dirichlet(np.ones(3), 300)
    labels = (prob.cumsum(axis=1) < rng.uniform(size=(300, 1))).sum(axis=1)
    return prob, labels


def metrics_on_arrays(prob: NDArray[np.float64], labels: NDArray[np.int64]) -> list[float]:
    logits = np.log(prob) + 1.0
    p = prob[:, 1]
    table: CalibrationTable = calibration_table(prob, labels, bins=5, class_conditional=False)
    low, high = table.intervals("wilson")
    band_low, band_high = table.consistency_bands()
    assert low.shape == high.shape == band_low.shape == band_high.shape
    sweep: ECESweepResult = ECESweep(prob, labels)
    parts: BrierDecomposition = brier_decomposition(prob, labels)
    return [
        ECE(prob, labels),
        ECE(prob, labels, bins=10),
        ECE(prob.tolist(), labels.tolist(), bins=np.linspace(0, 1, 6)),
        ECE(logits, labels, logits=True),
        ECE(np.column_stack([1 - p, p]), labels == 1),
        ECE(prob, labels, sample_weight=np.ones(len(labels))),
        ECE(np.round(prob * 0.999, 3), labels, renormalize=True),
        ECE(prob, np.array(["a", "b", "c"])[labels], classes=["a", "b", "c"]),
        RMSCE(prob, labels),
        MCE(prob, labels),
        SCE(prob, labels),
        SCE(p, labels == 1),
        ACE(prob, labels),
        TACE(prob, labels, thresholding=0.01),
        ToprCE(prob, labels, r=2),
        GCE(
            prob,
            labels,
            bins=15,
            class_conditional=True,
            adaptive_bins=False,
            top_k_classes=1,
            norm=1,
            thresholding=0.0,
        ),
        GCE(prob, labels, bin=15),
        GCE(prob, labels, class_conditional=False, norm=2, debias=True),
        GCE(prob, labels, norm="inf"),
        TCE(prob, labels),
        CWCE(prob, labels),
        OCE(prob, labels) + UCE(prob, labels),
        TopLabelECE(prob, labels),
        KSCE(prob, labels),
        KSCE(prob, labels, variant="class-wise"),
        KuiperCE(prob, labels),
        MMCE(prob, labels),
        SKCE(prob, labels, estimator="linear"),
        SmoothECE(prob, labels),
        expected_calibration_error(prob, labels),
        brier_score(prob, labels),
        negative_log_likelihood(prob, labels),
        negative_log_likelihood(logits, labels, logits=True),
        table.calibration_error(norm=2),
        sweep.value,
        parts.reliability - parts.resolution + parts.uncertainty,
    ]


def metrics_on_scores() -> list[float]:
    confidence = np.array([0.95, 0.9, 0.8, 0.75, 0.6, 0.3])
    correct = np.array([True, True, False, True, False, False])
    p_click = np.array([0.02, 0.05, 0.04, 0.3, 0.25, 0.6])
    clicked = [0, 0, 1, 0, 1, 1]
    scores = Scores(p_click)
    table = calibration_table(scores, clicked, bins=5, class_conditional=False)
    assert table.mean_score.shape == table.mean_target.shape
    return [
        ECE(Scores(confidence), correct),
        RMSCE(Scores(confidence), correct, bins=5, sample_weight=[1, 2, 1, 1, 1, 1]),
        MCE(Scores(confidence.tolist()), correct),
        GCE(Scores(confidence), correct, class_conditional=False, adaptive_bins=True),
        ECE(scores, clicked, bins=10),
        ECE(Scores(np.log(p_click / (1 - p_click))), clicked, logits=True),
        brier_score(scores, clicked),
        negative_log_likelihood(scores, clicked),
        MMCE(Scores(confidence), correct),
        KSCE(scores, clicked),
        SmoothECE(scores, clicked),
        ECESweep(scores, clicked).value,
    ]


def mean_of(
    metric: Callable[..., float], prob: PredictionsLike, labels: NDArray[np.int64]
) -> float:
    """A user's helper typed with the package's alias: any metric, arrays or Scores."""
    return metric(prob, labels)


def statistics(prob: NDArray[np.float64], labels: NDArray[np.int64]) -> list[float]:
    result: BootstrapResult = bootstrap(
        ECE, prob, labels, n_resamples=50, method="BCa", random_state=0
    )
    low, high = result.confidence_interval
    scores_result = stats.bootstrap(
        ECE, Scores(prob.max(axis=1)), prob.argmax(axis=1) == labels, n_resamples=20, bins=5
    )
    test = consistency_test(ECE, prob, labels, n_resamples=50, random_state=0)
    return [
        result.estimate,
        result.standard_error,
        float(low),
        float(high),
        scores_result.estimate,
        test.pvalue,
        test.statistic,
        mean_of(ECE, prob, labels),
        mean_of(ECE, Scores(prob.max(axis=1)), (prob.argmax(axis=1) == labels).astype(np.int64)),
    ]


def accumulator(prob: NDArray[np.float64], labels: NDArray[np.int64]) -> dict[str, float]:
    total = CalibrationAccumulator(bins=15)
    for rows in np.array_split(np.arange(len(labels)), 3):
        total = total.update(prob[rows], labels[rows])
    other = CalibrationAccumulator(bins=15).update(
        prob, labels, sample_weight=np.ones(len(labels))
    )
    merged: CalibrationAccumulator = total + other
    merged.merge(total)
    table: CalibrationTable = total.table("top_label")
    assert table.counts.sum() == len(labels)
    results: dict[str, float] = total.results()
    results["ECE again"] = total.metric("ECE")
    scored = CalibrationAccumulator(bins=10, scores=True).update(Scores(prob[:, 0]), labels == 0)
    results["scores ECE"] = scored.metric("ECE")
    return results


def recalibrators(folder: Path) -> list[NDArray[np.float64]]:
    logits, labels = make_overconfident(600, 4, temperature=2.0, seed=0)
    val, test = slice(0, 300), slice(300, 600)
    prob = softmax(logits)

    scaler: TemperatureScaling = TemperatureScaling().fit(logits[val], labels[val])
    temperature: float = scaler.temperature_
    assert temperature > 0
    calibrated: NDArray[np.float64] = scaler.predict_proba(logits[test])
    calibrated_logits: NDArray[np.float64] = scaler(logits[test])
    predicted = scaler.predict(logits[test])
    assert predicted.shape == (300,)
    vector: VectorScaling = VectorScaling(num_classes=4).fit(logits[val], labels[val])
    matrix: MatrixScaling = MatrixScaling(reg_lambda=1.0, reg_mu=1.0).fit(logits[val], labels[val])
    dirichlet: DirichletCalibration = DirichletCalibration(reg_lambda=1.0, reg_mu=1.0).fit(
        prob[val], labels[val]
    )
    on_logits: list[Recalibrator] = [
        scaler,
        vector,
        matrix,
        EnsembleTemperatureScaling().fit(logits[val], labels[val]),
        PlattScaling().fit(logits[val], labels[val]),
    ]
    on_probabilities: list[Recalibrator] = [
        dirichlet,
        BetaCalibration().fit(prob[val], labels[val]),
        IsotonicCalibration().fit(prob[val], labels[val]),
        HistogramBinning(bins=15, adaptive_bins=True).fit(prob[val], labels[val]),
    ]
    log_likelihood: float = matrix.score(logits[test], labels[test])
    assert log_likelihood < 0
    same: TemperatureScaling = scaler.set_params(temperature_bounds=(1e-3, 1e3))

    path = folder / "scaler.json"
    same.save(path)
    scaler.save(str(path))
    loaded: Recalibrator = load_recalibrator(path)
    reloaded: TemperatureScaling = TemperatureScaling.load(path)
    assert reloaded.temperature_ == temperature
    as_dict = scaler.to_dict()
    again: TemperatureScaling = TemperatureScaling.from_dict(as_dict)

    blocks = [(logits[val], labels[val])]
    from_blocks: TemperatureScaling = TemperatureScaling().fit_blocks(blocks)
    return [
        calibrated,
        softmax(calibrated_logits),
        vector.predict_proba(logits[test]),
        dirichlet.predict_proba(prob[test]),
        loaded.predict_proba(logits[test]),
        softmax(again(logits[test])),
        from_blocks.predict_proba(logits[test]),
        *(recalibrator.predict_proba(logits[test]) for recalibrator in on_logits),
        *(recalibrator.predict_proba(prob[test]) for recalibrator in on_probabilities),
    ]


def files(folder: Path) -> float:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(100, 3)).astype(np.float32)
    labels = rng.integers(0, 3, 100)
    np.savez(folder / "val.npz", logits=logits, labels=labels)
    np.save(folder / "logits.npy", logits)
    np.save(folder / "y.npy", labels)
    z, y = load_predictions(folder / "val.npz")
    z2, y2 = load_predictions(str(folder / "logits.npy"), labels_path=folder / "y.npy")
    total = 0.0
    for block, block_labels in iter_predictions(
        folder / "logits.npy", labels_path=folder / "y.npy", block_rows=16
    ):
        total += float(np.take_along_axis(block, block_labels[:, None], axis=1).sum())
    return ECE(z, y, logits=True) + ECE(z2, y2, logits=True) + total


def main(folder: Path) -> None:
    prob, labels = predictions()
    values = [
        *metrics_on_arrays(prob, labels),
        *metrics_on_scores(),
        *statistics(prob, labels),
        files(folder),
    ]
    assert all(type(value) is float for value in values), [type(v) for v in values]
    # n_samples is an int: a float to a type checker too (PEP 484's numeric tower)
    assert all(isinstance(value, (int, float)) for value in accumulator(prob, labels).values())
    for calibrated in recalibrators(folder):
        assert calibrated.dtype == np.float64
        np.testing.assert_allclose(calibrated.sum(axis=1), 1.0, rtol=1e-9)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        main(Path(folder))
