"""Facts about one array-like value, below every other module of the package.

:func:`as_real_array` is ``np.asarray`` with a clear error for what is no real array
(ragged lists, complex, strings, objects, masked arrays, Scores where an array is asked
for, a Dask array where nothing streams); :func:`as_numpy` reads the tensors of array
libraries (PyTorch, JAX's bfloat16) as NumPy arrays; :func:`is_dask_array` tells a Dask
array by its duck type (never importing dask).  Nothing here imports another module of
the package but :mod:`calibration_toolbox.scores` and the metric registry (the leaf that
its messages name the metrics from).
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry as registry
from calibration_toolbox._errors import InputError, InputTypeError, listed
from calibration_toolbox.scores import Scores

__all__ = [
    "STREAMING",
    "as_numpy",
    "as_real_array",
    "dask_refusal",
    "is_dask_array",
    "is_dask_input",
    "masked_refusal",
]


#: What streams over a Dask array, for the error messages: the metrics whose registry rows
#: say so (the binned ones with fixed edges only), and the two fits.
STREAMING = (
    listed([row.name for row in registry.on_dask() if row.binned])
    + " with fixed edges (adaptive_bins=False), "
    + listed([row.name for row in registry.on_dask() if not row.binned])
    + "; TemperatureScaling.fit and VectorScaling.fit, and the predictions of those two"
)


def is_dask_array(value: object) -> bool:
    """Whether ``value`` is a Dask array (duck type: a task graph and chunks; no dask import)."""
    return hasattr(value, "__dask_graph__") and hasattr(value, "chunks") and hasattr(value, "ndim")


def is_dask_input(prob: object) -> bool:
    """Whether ``prob`` (or the values of ``Scores``) is a Dask array."""
    return is_dask_array(prob.values if isinstance(prob, Scores) else prob)


def dask_refusal(name: str) -> TypeError:
    """The error of a function that does not stream, given a Dask array as ``name``."""
    return InputTypeError(
        "{argument:is} a Dask array, and this call does not stream over row chunks (it needs "
        "all rows at once: equal-mass edges, sorting, kernels, most fits). Call .compute() "
        "first if the array fits in memory, or use what streams over Dask arrays: {streaming}.",
        argument=name,
        streaming=STREAMING,
    )


def masked_refusal(name: str) -> TypeError:
    """The error of every entry point given a masked array (``numpy.ma``) as ``name``."""
    return InputTypeError(
        "{argument:is} a masked array (numpy.ma), whose mask would be ignored: masked values "
        "would be read as numbers. Pass only the rows to keep, or the values filled in "
        "(x.filled(value)).",
        argument=name,
    )


# np.exceptions (NumPy >= 1.25) is its home; NumPy 2 no longer has it at the top level
_VisibleDeprecationWarning = getattr(np, "exceptions", np).VisibleDeprecationWarning
# NumPy < 1.24 only warns of a ragged list (and makes an object array of it); later ones raise.
_RAGGED_ONLY_WARNS = np.lib.NumpyVersion(np.__version__) < "1.24.0"


def _from_tensor(value: object) -> object:
    """A PyTorch tensor as NumPy reads it: detached, on the CPU, bfloat16 widened to float32.

    ``np.asarray`` goes through ``Tensor.__array__``, which raises for a tensor that requires
    grad (``RuntimeError``) and for bfloat16, the usual dtype of an LLM's logits (NumPy has
    no such type); bfloat16 values are exactly float32 values.  Anything else is returned as
    it is (torch is never imported here).
    """
    if not type(value).__module__.startswith("torch") or not hasattr(value, "detach"):
        return value
    tensor = value.detach().cpu()
    if str(tensor.dtype) == "torch.bfloat16":
        tensor = tensor.float()
    return tensor.numpy()


def _widened_extension_type(array: NDArray) -> NDArray:
    """An array of an extension float type (JAX's bfloat16, float8) as float32.

    Such dtypes (``ml_dtypes``) are no NumPy number, but cast safely to float32; a
    structured or plain void array does not, and is refused by the caller.
    """
    if array.dtype.fields is None and np.can_cast(array.dtype, np.float32):
        return array.astype(np.float32)
    return array


def as_numpy(value: object) -> NDArray:
    """``np.asarray`` of a value, tensors of array libraries included (no checks)."""
    value = _from_tensor(value)
    if not _RAGGED_ONLY_WARNS:
        array = np.asarray(value)
    else:  # the warnings filters are left alone where NumPy raises itself (>= 1.24)
        with warnings.catch_warnings():
            warnings.simplefilter("error", _VisibleDeprecationWarning)
            try:
                array = np.asarray(value)
            except _VisibleDeprecationWarning as exc:
                raise ValueError(exc) from None
    if array.dtype.kind in "Vf" and not np.issubdtype(array.dtype, np.number):
        array = _widened_extension_type(array)
    return array


def _raw_records_hint(array: NDArray) -> str:
    """Advice for raw 1- or 2-byte records: bfloat16 or float8 saved without their type."""
    if array.dtype.kind != "V" or array.dtype.fields is not None or array.itemsize > 2:
        return ""
    return (
        " NumPy saves bfloat16 and float8 arrays (JAX, ml_dtypes) as raw records like these,"
        " which nothing can read back as numbers: cast them to float32 before saving."
    )


def as_real_array(value: ArrayLike, name: str) -> NDArray:
    """``np.asarray`` with a clear error for ragged, complex, string, object or masked input.

    Every array that enters the package passes here: a masked array (``numpy.ma``) is
    refused rather than read with its mask dropped.
    """
    if isinstance(value, Scores):
        rows = registry.accepting_scores()
        either = [row.name for row in rows if row.settings is None]  # GCE, calibration_table
        raise InputTypeError(
            "{argument:does} not take Scores, which marks one score per row against a 0/1 "
            "target for the measures that accept it ({named}, and {either} with "
            "class_conditional=False); pass an array here.",
            argument=name,
            named=", ".join(row.name for row in rows if row.settings is not None),
            either=listed(either),
        )
    if is_dask_array(value):  # np.asarray would compute it all on the client
        raise dask_refusal(name)
    if isinstance(value, np.ma.MaskedArray):  # np.asarray drops the mask: every row would count
        raise masked_refusal(name)
    try:
        array = as_numpy(value)
    except (ValueError, TypeError) as exc:  # ragged nested lists
        raise InputError(
            "{argument} must be a rectangular numeric array; {exc}", argument=name, exc=exc
        ) from None
    if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
        raise InputTypeError(
            "{argument} must hold real numbers; got an array of dtype {dtype}.{hint}",
            argument=name,
            dtype=array.dtype,
            hint=_raw_records_hint(array),
        )
    if np.issubdtype(array.dtype, np.complexfloating):
        raise InputTypeError(
            "{argument} must hold real numbers; got an array of dtype {dtype}.",
            argument=name,
            dtype=array.dtype,
        )
    return array
