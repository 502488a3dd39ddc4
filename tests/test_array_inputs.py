"""Arrays users bring from other libraries, and the argument order they bring from them.

PyTorch is not installed for the tests: ``FakeTensor`` behaves as ``torch.Tensor`` does
where it matters (its ``__array__`` raises for bfloat16 and for a tensor that requires
grad, as torch 2.13 does; checked with the real torch by hand).  JAX's bfloat16 arrays are
NumPy arrays of an ``ml_dtypes`` type, which the test extra installs.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from numpy.testing import assert_allclose

from calibration_toolbox import (
    ECE,
    SCE,
    Scores,
    TemperatureScaling,
    brier_score,
    negative_log_likelihood,
)

RNG = np.random.default_rng(7)
LOGITS = (RNG.normal(size=(300, 4)) * 3).astype(np.float32)
LABELS = RNG.integers(0, 4, size=300)
PROB = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)


class _DType:
    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return f"torch.{self.name}"


class FakeTensor:
    """The parts of ``torch.Tensor`` that NumPy conversion meets."""

    __module__ = "torch"

    def __init__(self, values, dtype="float32", requires_grad=False):
        self._values = np.asarray(values)
        self.dtype = _DType(dtype)
        self.requires_grad = requires_grad

    def __array__(self, dtype=None, copy=None):
        if self.requires_grad:
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy()."
            )
        if self.dtype.name == "bfloat16":
            raise TypeError("Got unsupported ScalarType BFloat16")
        return self._values if dtype is None else self._values.astype(dtype)

    def __len__(self) -> int:
        return len(self._values)

    def detach(self) -> FakeTensor:
        return FakeTensor(self._values, self.dtype.name)

    def cpu(self) -> FakeTensor:
        return self

    def float(self) -> FakeTensor:
        return FakeTensor(self._values.astype(np.float32), "float32")

    def numpy(self) -> np.ndarray:
        return np.asarray(self)


def bfloat16(values: np.ndarray) -> np.ndarray:
    return np.asarray(values).astype(ml_dtypes.bfloat16)


def test_bfloat16_tensor_logits_are_read_as_their_float32_values():
    rounded = bfloat16(LOGITS).astype(np.float32)
    tensor = FakeTensor(rounded, dtype="bfloat16")
    assert ECE(tensor, LABELS, logits=True) == ECE(rounded, LABELS, logits=True)
    assert negative_log_likelihood(tensor, FakeTensor(LABELS, "int64"), logits=True) == (
        negative_log_likelihood(rounded, LABELS, logits=True)
    )


def test_tensor_that_requires_grad_is_detached_not_refused():
    tensor = FakeTensor(LOGITS, requires_grad=True)
    assert ECE(tensor, LABELS, logits=True) == ECE(LOGITS, LABELS, logits=True)
    weights = FakeTensor(np.ones(len(LABELS)), requires_grad=True)
    assert ECE(LOGITS, LABELS, logits=True, sample_weight=weights) == pytest.approx(
        ECE(LOGITS, LABELS, logits=True), rel=1e-12
    )


def test_recalibrators_take_tensors_too():
    tensor = FakeTensor(bfloat16(LOGITS).astype(np.float32), dtype="bfloat16", requires_grad=True)
    fitted = TemperatureScaling().fit(tensor, LABELS)
    expected = TemperatureScaling().fit(bfloat16(LOGITS).astype(np.float32), LABELS)
    assert_allclose(fitted.temperature_, expected.temperature_, rtol=1e-12)


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e5m2])
def test_extension_float_arrays_of_jax_are_widened(dtype):
    array = LOGITS.astype(dtype)
    assert ECE(array, LABELS, logits=True) == ECE(array.astype(np.float32), LABELS, logits=True)


def test_structured_arrays_are_still_refused():
    records = np.zeros(4, dtype=[("a", "f8"), ("b", "f8")])
    with pytest.raises(TypeError, match=r"`prob` must hold real numbers; got an array of dtype"):
        SCE(records, [0, 1, 0, 1])


SWAPPED = r"`prob` and `labels` look swapped: `prob` holds whole numbers of shape \(300,\)"


@pytest.mark.parametrize("metric", [ECE, SCE, brier_score, negative_log_likelihood])
def test_scikit_learn_argument_order_is_named_as_such(metric):
    matrix = r".*`labels` holds probabilities of shape \(300, 4\)"
    with pytest.raises(ValueError, match=SWAPPED + matrix):
        metric(LABELS, PROB)


@pytest.mark.parametrize("metric", [ECE, SCE, brier_score])
def test_binary_scikit_learn_order_is_named_as_such(metric):
    positive = PROB[:, 0]
    targets = (LABELS == 0).astype(int)
    with pytest.raises(ValueError, match=SWAPPED + r".*shape \(300,\)\. The metrics take"):
        metric(targets, positive)
    with pytest.raises(ValueError, match=SWAPPED):
        metric(list(targets), list(positive))


def test_right_order_with_hard_binary_probabilities_is_not_called_swapped():
    hard = (LABELS == 0).astype(float)
    assert SCE(hard, (LABELS == 0).astype(int)) == 0.0
    with pytest.raises(ValueError, match=r"`labels` must lie in \[0, 1\] for 2 classes; got 2"):
        SCE(hard, np.full(300, 2.0))


def test_scores_order_is_not_called_swapped():
    with pytest.raises(ValueError, match=r"`labels` must be 0/1 targets with Scores"):
        ECE(Scores(PROB[:, 0]), LABELS + 1)


def test_one_hot_labels_get_the_argmax_advice():
    one_hot = np.eye(4, dtype=int)[LABELS]
    advice = r"One-hot labels of a multiclass task: pass labels\.argmax\(axis=1\)"
    with pytest.raises(ValueError, match=advice):
        ECE(PROB, one_hot)
    with pytest.raises(ValueError, match=r"got shape \(300, 4\)\.$"):
        ECE(PROB, one_hot * 2)


def test_bfloat16_saved_without_its_type_gets_the_float32_advice(tmp_path):
    np.save(tmp_path / "logits.npy", LOGITS.astype(ml_dtypes.bfloat16))
    raw = np.load(tmp_path / "logits.npy")  # a reader without ml_dtypes: dtype V2
    assert raw.dtype.kind == "V"
    with pytest.raises(TypeError, match=r"dtype \|V2\. NumPy saves bfloat16 .* float32"):
        ECE(raw, LABELS, logits=True)
