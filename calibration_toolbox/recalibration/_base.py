"""The estimator contract shared by every recalibrator.

Both styles work on one object:

* scikit-learn: ``__init__`` stores settings only, ``fit(X, y, sample_weight=None)``
  returns ``self``, fitted attributes end in ``_``, ``predict_proba``, ``predict``,
  ``get_params``/``set_params`` (so ``sklearn.base.clone`` works), ``NotFittedError``
  before ``fit``;
* callable: ``scaler(X)`` returns calibrated logits (log-probabilities for methods whose
  output is a probability), so ``scipy.special.softmax(scaler(X), axis=1)`` equals
  ``scaler.predict_proba(X)``.

Fitted state is plain numbers and arrays: ``to_dict``/``from_dict`` are JSON-safe and
``save``/``load`` write and read a JSON file, with no pickle anywhere.
"""

from __future__ import annotations

import inspect
import json
import os
from typing import Any, ClassVar, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import softmax

from calibration_toolbox._validation import NotFittedError, row_blocks

__all__ = ["Recalibrator", "load_recalibrator", "log_in_place", "normalised_probs"]

_REGISTRY: dict[str, type[Recalibrator]] = {}
_FORMAT = "calibration-toolbox/recalibrator"


class Recalibrator:
    """Base class: settings in ``__init__``, fitted attributes ending in ``_``.

    Subclasses implement ``fit`` and ``_calibrated_logits`` and list their fitted
    attributes in ``_fitted_attributes`` (the first one marks the estimator as fitted).
    """

    _fitted_attributes: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not cls.__name__.startswith("_"):  # private bases are not loadable
            _REGISTRY[cls.__name__] = cls

    # -- scikit-learn contract -------------------------------------------------------
    @classmethod
    def _param_names(cls) -> list[str]:
        signature = inspect.signature(cls.__init__)
        return [
            name
            for name, parameter in signature.parameters.items()
            if name != "self" and parameter.kind != parameter.VAR_KEYWORD
        ]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Settings passed to ``__init__``, by name."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> Recalibrator:
        """Change settings; returns ``self``."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(
                    f"invalid parameter {name!r} for {type(self).__name__}; "
                    f"valid parameters are {valid}."
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {
            name: parameter.default
            for name, parameter in inspect.signature(type(self).__init__).parameters.items()
        }
        changed = [
            f"{name}={value!r}"
            for name, value in self.get_params().items()
            if not _same(value, defaults.get(name))
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    def _check_fitted(self) -> None:
        if not self._fitted_attributes or not hasattr(self, self._fitted_attributes[0]):
            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet; call `fit` with "
                "calibration data first."
            )

    def _check_n_classes(self, n_classes: int) -> None:
        if n_classes != self.n_classes_:
            raise ValueError(
                f"`X` has {n_classes} classes but this {type(self).__name__} was fitted on "
                f"{self.n_classes_}."
            )

    # -- prediction --------------------------------------------------------------------
    # Methods whose output is a probability set this and implement `_calibrated_probs`;
    # `predict_proba` then returns those probabilities as they are, not the softmax of
    # their logarithms (one log and one exp per entry saved, and no rounding added), and
    # the calibrated logits are their logarithms.
    _outputs_probabilities: ClassVar[bool] = False

    def _calibrated_probs(self, X: ArrayLike) -> NDArray:
        raise NotImplementedError

    def _calibrated_logits(self, X: ArrayLike) -> NDArray:
        if self._outputs_probabilities:
            return log_in_place(self._calibrated_probs(X))
        raise NotImplementedError

    def __call__(self, X: ArrayLike) -> NDArray:
        """Calibrated logits (log-probabilities for probability-valued methods) of ``X``."""
        self._check_fitted()
        return self._calibrated_logits(X)

    def predict_proba(self, X: ArrayLike) -> NDArray:
        """Calibrated probabilities, shape ``(N, K)``."""
        if self._outputs_probabilities:
            self._check_fitted()
            return self._calibrated_probs(X)
        probs = self(X)
        if isinstance(X, np.ndarray) and np.shares_memory(probs, X):
            probs = probs.copy()  # the softmax below works in place: never on the input
        # In row blocks, so that the softmax's temporaries stay a few MiB at any N x K.
        for rows in row_blocks(*probs.shape):
            probs[rows] = softmax(probs[rows], axis=1)
        return probs

    def predict(self, X: ArrayLike) -> NDArray:
        """Class with the largest calibrated probability (first index on ties)."""
        return np.argmax(self(X), axis=1)

    # -- persistence without pickle ------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description: class name, settings and fitted state."""
        self._check_fitted()
        fitted = {}
        for name in self._fitted_attributes:
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                fitted[name] = {
                    "dtype": value.dtype.str,
                    "shape": value.shape,
                    "data": value.reshape(-1).tolist(),
                }
            else:
                fitted[name] = value.item() if isinstance(value, np.generic) else value
        params = {name: _json_safe(value) for name, value in self.get_params().items()}
        return {
            "format": _FORMAT,
            "class": type(self).__name__,
            "params": params,
            "fitted": fitted,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Recalibrator:
        """Rebuild a fitted recalibrator from :meth:`to_dict` output."""
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError("`data` is not a recalibrator description written by `to_dict`.")
        target = _REGISTRY.get(data.get("class"))
        if target is None or not issubclass(target, cls):
            raise ValueError(f"`data` describes a {data.get('class')!r}, not a {cls.__name__}.")
        defaults = inspect.signature(target.__init__).parameters
        params = {
            name: (tuple(value) if isinstance(defaults[name].default, tuple) else value)
            for name, value in data["params"].items()
        }
        instance = target(**params)
        for name in target._fitted_attributes:
            value = data["fitted"][name]
            if isinstance(value, dict):
                value = np.asarray(value["data"], dtype=np.dtype(value["dtype"])).reshape(
                    value["shape"]
                )
            setattr(instance, name, value)
        return instance

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Write the fitted state to a JSON file."""
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(self.to_dict(), handle)

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> Recalibrator:
        """Read a recalibrator written by :meth:`save`."""
        with open(path, encoding="utf-8") as handle:
            return cls.from_dict(json.load(handle))


def normalised_probs(columns: NDArray) -> NDArray:
    """One-vs-rest probabilities renormalised to sum to 1 per row.

    ``columns[i, k]`` is a calibrated P(y = k) from the k-th binary problem.  A row whose
    columns are all 0 becomes uniform (1 / K each) instead of 0 / 0.
    """
    columns = np.asarray(columns, dtype=np.float64)
    totals = columns.sum(axis=1, keepdims=True)
    probs = np.full_like(columns, 1.0 / columns.shape[1])
    np.divide(columns, totals, out=probs, where=totals > 0)
    return probs


def log_in_place(probs: NDArray) -> NDArray:
    """``log(probs)`` written over ``probs`` (log 0 is -inf, which softmax maps back to 0)."""
    with np.errstate(divide="ignore"):
        return np.log(probs, out=probs)


def load_recalibrator(path: Union[str, os.PathLike]) -> Recalibrator:
    """Read any recalibrator written by ``save`` (the class is stored in the file)."""
    return Recalibrator.load(path)


def _json_safe(value: Any) -> Any:
    """Settings as JSON values: arrays and tuples become lists, NumPy scalars Python ones."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return [_json_safe(item) for item in value]
    return value


def _same(a: object, b: object) -> bool:
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return False
