"""The estimator contract shared by every recalibrator.

Both styles work on one object:

* scikit-learn: ``__init__`` stores settings only, ``fit(X, y, sample_weight=None)``
  returns ``self``, fitted attributes end in ``_``, ``predict_proba``, ``predict``,
  ``get_params``/``set_params`` (so ``sklearn.base.clone`` works), ``NotFittedError``
  before ``fit``;
* callable: ``scaler(X)`` returns calibrated logits (log-probabilities for methods whose
  output is a probability), so ``scipy.special.softmax(scaler(X), axis=1)`` equals
  ``scaler.predict_proba(X)``.

Each estimator declares, once, its parameters (``_parameters``: a checker from
:mod:`calibration_toolbox._validation` per ``__init__`` parameter, run at the start of
``fit``) and its fitted state (``_fitted_schema``: a :class:`Field` per fitted attribute).
Prediction reads the fitted state only, so ``set_params`` after ``fit`` changes the next fit,
never the current predictions.

Fitted state is plain numbers and arrays: ``to_dict``/``from_dict`` are JSON-safe and
``save``/``load`` write and read a JSON file, with no pickle anywhere.  ``save`` writes a
temporary file beside the target and renames it over the target, so the target is either
the old file or the complete new one; ``from_dict`` and ``load`` check every description
against the class's parameter declarations and fitted schema and refuse a bad one with one
``ValueError`` that names the problem (and the file).
"""

from __future__ import annotations

import contextlib
import inspect
import json
import math
import os
import re
from typing import Any, Callable, ClassVar, NamedTuple, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _scipy
from calibration_toolbox import _validation as iv
from calibration_toolbox._atomic import write_atomically
from calibration_toolbox._errors import InputError, Name, Text, as_value_error, within
from calibration_toolbox._limits import MAX_CLASSES
from calibration_toolbox._rows import row_blocks
from calibration_toolbox._validation import NotFittedError, check_labels
from calibration_toolbox.metrics.scoring import negative_log_likelihood

__all__ = [
    "COEFFICIENT_LIMIT",
    "FORMAT_VERSION",
    "LOG_FLOOR",
    "N_CLASSES_FIELD",
    "Field",
    "Recalibrator",
    "RecalibratorT",
    "array_field",
    "choice_field",
    "flag_field",
    "integer_field",
    "load_recalibrator",
    "log_in_place",
    "log_odds",
    "normalised_probs",
    "number_field",
    "short_list",
]

# The built-in recalibrators by class name: a file names its class, and only these (or the
# class whose `load` is called) are ever instantiated from a file.
_REGISTRY: dict[str, type[Recalibrator]] = {}
_FORMAT = "calibration-toolbox/recalibrator"
#: Version of the description written by ``to_dict``/``save``; ``load`` reads only this one.
FORMAT_VERSION = 1
_DESCRIPTION_KEYS = ("format", "format_version", "class", "params", "fitted")
#: Largest |entry| of a fitted coefficient array (``array_field(..., high=COEFFICIENT_LIMIT)``).
#: No fit comes near it (Platt and beta bound each slope by 100 per standard deviation of
#: the score); an edited file with 1e308 would overflow ``a s + b`` to ``inf - inf = NaN``.
COEFFICIENT_LIMIT = 1e100

Checker = Callable[[object, str], object]
#: The type of ``self`` (or ``cls``) of a recalibrator, for the methods that return it
#: (``fit``, ``set_params``, ``load``): ``TemperatureScaling().fit(...)`` is a
#: ``TemperatureScaling`` to a type checker.
RecalibratorT = TypeVar("RecalibratorT", bound="Recalibrator")


# -- the fitted schema -----------------------------------------------------------------------
class Field(NamedTuple):
    """How one fitted attribute is stored, and the values it may take.

    Build fields with :func:`integer_field`, :func:`number_field`, :func:`flag_field`,
    :func:`choice_field` and :func:`array_field`.

    Attributes
    ----------
    kind : {'integer', 'number', 'flag', 'choice', 'array', 'any'}
        A Python int, a finite float, a bool, one of ``options``, or an array.  ``'any'``
        (the default for a class without a schema) accepts a finite number or a finite
        numeric array of any shape.
    requirement : str
        What the value must be, as it completes "`name` must be ...".
    low, high : float
        Bounds of a number or of every entry of a float array; ``low`` is excluded when
        ``strict_low``.  Numbers and float arrays are always finite.
    shape : tuple of int or str, or a tuple of such tuples
        Array shape; a dimension is a length, a name (``'K'``: ``n_classes_``; names a class
        defines in ``_fitted_dimensions``; otherwise bound by the first array that uses it)
        or a name plus an offset (``'B+1'``).  Several shapes of different lengths are
        alternatives, told apart by the stored array's number of dimensions (a diagonal
        map's ``(K,)`` or a full map's ``(K, K)``).
    dtype : {'float', 'integer'}
        Arrays are rebuilt as float64 or ``intp``.
    options : tuple of str
        The values of a choice.
    rule : callable, optional
        ``rule(name, state)`` with every attribute decoded and shaped: ``None`` if the value
        is consistent, else the error message as a :class:`~calibration_toolbox._errors.Text`
        (for example weights off the simplex).
    default : object, optional
        The stored value of a field added after files were written: a file without it
        reads as if it held ``default`` (the behaviour the class had before the field).
        ``None``: the field is required.
    """

    kind: str
    requirement: str
    low: float = -math.inf
    high: float = math.inf
    strict_low: bool = False
    shape: tuple[int | str, ...] = ()
    dtype: str = "float"
    options: tuple[str, ...] = ()
    rule: Callable[[str, dict[str, Any]], Text | None] | None = None
    default: Any = None


def _range_text(low: float, high: float, strict_low: bool) -> str:
    if low > -math.inf and high < math.inf:
        return f" in {'(' if strict_low else '['}{low:g}, {high:g}]"
    if low > -math.inf:
        return f" {'>' if strict_low else '>='} {low:g}"
    return f" <= {high:g}" if high < math.inf else ""


def integer_field(at_least: int = 0, at_most: float = math.inf) -> Field:
    """A Python int in ``[at_least, at_most]`` (a count, a number of classes)."""
    text = f"an integer >= {at_least}" + (f" and <= {at_most:,}" if at_most < math.inf else "")
    return Field("integer", text, low=at_least, high=at_most)


#: ``n_classes_`` of every recalibrator: from 2 to the limit a file may claim (``classes_``
#: is ``np.arange(n_classes_)``).
N_CLASSES_FIELD = integer_field(2, at_most=MAX_CLASSES)


def number_field(low: float = -math.inf, high: float = math.inf, strict_low: bool = False):
    """A finite float in ``[low, high]`` (``(low, high]`` when ``strict_low``)."""
    text = f"a finite number{_range_text(low, high, strict_low)}"
    return Field("number", text, low=low, high=high, strict_low=strict_low)


def flag_field() -> Field:
    """``True`` or ``False``."""
    return Field("flag", "True or False")


def choice_field(*options: str, default: str | None = None) -> Field:
    """One of the strings ``options`` (a mode stored at fit, for instance).

    ``default``: the value of a file written before the field existed.
    """
    requirement = " or ".join(repr(option) for option in options)
    return Field("choice", requirement, options=options, default=default)


def array_field(
    shape: tuple[int | str, ...],
    *,
    dtype: str = "float",
    low: float = -math.inf,
    high: float = math.inf,
    strict_low: bool = False,
    rule: Callable[[str, dict[str, Any]], Text | None] | None = None,
) -> Field:
    """An array of ``shape`` (see :class:`Field`); float entries finite and in range."""
    entries = "integers" if dtype == "integer" else "finite numbers"
    text = f"an array of {entries}{_range_text(low, high, strict_low)}"
    return Field("array", text, low, high, strict_low, tuple(shape), dtype, (), rule)


_ANY = Field("any", "a finite number or an array of finite numbers")


def _got(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _decode_scalar(name: str, field: Field, stored: object) -> object:
    """The Python value of a stored scalar, checked against ``field``."""
    ok = False
    if field.kind == "flag":
        ok = isinstance(stored, bool)
    elif field.kind == "choice":
        ok = isinstance(stored, str) and stored in field.options
    elif not isinstance(stored, bool) and isinstance(stored, (int, float)):
        try:
            value = float(stored)
        except OverflowError:  # an integer beyond float64
            value = math.inf
        in_range = field.low < value if field.strict_low else field.low <= value
        ok = math.isfinite(value) and in_range and value <= field.high
        if field.kind == "integer":
            ok = ok and isinstance(stored, int)
        elif ok and field.kind == "number":
            stored = value
    if not ok:
        raise InputError(
            "{argument} must be {requirement}; got {value}.",
            argument=name,
            requirement=field.requirement,
            value=_got(stored),
        )
    return stored


def _decode_array(name: str, field: Field, stored: object) -> NDArray:
    """The array of a stored ``{"dtype", "shape", "data"}`` mapping, checked against ``field``."""
    expected = "an array stored as {'dtype': ..., 'shape': [...], 'data': [...]}"
    if not isinstance(stored, dict) or sorted(stored) != ["data", "dtype", "shape"]:
        raise InputError(
            "{argument} must be {expected}; got {value}.",
            argument=name,
            expected=expected,
            value=_got(stored),
        )
    try:
        stored_dtype = np.dtype(stored["dtype"])
    except (TypeError, ValueError):
        stored_dtype = np.dtype(object)
    shape, data = stored["shape"], np.array(None)
    if isinstance(stored["data"], list):
        with contextlib.suppress(TypeError, ValueError):  # a ragged list is no array
            data = np.array(stored["data"])
    integer = field.dtype == "integer" or (field.kind == "any" and stored_dtype.kind in "iu")
    kinds = "iu" if integer else "fiu"  # float arrays may be written with integral entries
    dtype_ok = stored_dtype.kind in "iu" if integer else stored_dtype.kind == "f"
    if not dtype_ok:
        raise InputError(
            "{argument} must be stored with dtype {dtype}; got {given}.",
            argument=name,
            dtype="an integer" if integer else "float64",
            given=_got(stored["dtype"]),
        )
    if not (
        isinstance(shape, list)
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape)
    ):
        raise InputError(
            "{argument} must have a shape of non-negative integers; got {value}.",
            argument=name,
            value=_got(shape),
        )
    if not (data.ndim == 1 and data.dtype.kind in kinds and data.size == math.prod(shape)):
        raise InputError(
            "{argument} must hold a flat list of {size} {kind} for its shape {shape}.",
            argument=name,
            size=math.prod(shape),
            kind="integers" if integer else "numbers",
            shape=tuple(shape),
        )
    array = data.astype(np.intp if integer else np.float64).reshape(shape)
    if not integer:
        low = array > field.low if field.strict_low else array >= field.low
        bad = ~(np.isfinite(array) & low & (array <= field.high))
        if bad.any():
            requirement = _ANY.requirement if field.kind == "any" else field.requirement
            raise InputError(
                "{argument} must be {requirement}; got {value!r}.",
                argument=name,
                requirement=requirement,
                value=float(array[bad].flat[0]),
            )
    return array


def _check_shapes(schema: dict[str, Field], state: dict[str, Any], dims: dict[str, int]):
    """Check each array's shape; a dimension name seen first is bound to its length."""
    for name, field in schema.items():
        if field.kind != "array":
            continue
        actual = state[name].shape
        expected = []
        for axis, dimension in enumerate(_shape_for(field.shape, len(actual))):
            if isinstance(dimension, str):
                symbol, offset = re.fullmatch(r"(\w+)([+-]\d+)?", dimension).groups()
                offset = int(offset or 0)
                if symbol not in dims and axis < len(actual):
                    dims[symbol] = actual[axis] - offset
                dimension = dims.get(symbol, 0) + offset
            expected.append(dimension)
        if tuple(expected) != actual:
            raise InputError(
                "{argument} must have shape {value} to agree with the other fitted "
                "attributes; got {actual}.",
                argument=name,
                value=tuple(expected),
                actual=actual,
            )


def _shape_for(shape: tuple, ndim: int) -> tuple:
    """The declared shape of ``ndim`` dimensions among alternatives (else the first one)."""
    if not shape or not isinstance(shape[0], tuple):
        return shape
    return next((option for option in shape if len(option) == ndim), shape[0])


def _check_keys(mapping: object, expected, what: str, *, allow_missing: bool = False):
    """``mapping`` must be a dict whose keys are ``expected`` (or a subset of them).

    ``what`` is a :class:`~calibration_toolbox._errors.Name` (``Name("fitted")``) or words.
    """
    if not isinstance(mapping, dict):
        raise InputError(
            "{what} must be a JSON object (dict); got {kind}.",
            what=what,
            kind=type(mapping).__name__,
        )
    unknown = sorted(str(key) for key in mapping if key not in expected)
    if unknown:
        raise InputError(
            "{what} has unknown key(s) {unknown}; expected {expected}.",
            what=what,
            unknown=unknown,
            expected=list(expected),
        )
    missing = [key for key in expected if key not in mapping]
    if missing and not allow_missing:
        raise InputError("{what} lacks the key(s) {missing}.", what=what, missing=missing)


class Recalibrator:
    """Base class: settings in ``__init__``, fitted attributes ending in ``_``.

    A subclass implements ``fit`` and ``_calibrated_logits`` (or sets
    ``_outputs_probabilities`` and implements ``_calibrated_probs``), and declares:

    * ``_parameters``: for each ``__init__`` parameter, a checker ``check(value, name)``
      from :mod:`calibration_toolbox._validation` (``positive_number``,
      ``integer_at_least(1)``, ``choice('a', 'b')``, ...).  ``fit`` starts with
      ``params = self._checked_params()`` and uses the checked values; ``from_dict``
      re-checks a file's parameters the same way.
    * ``_fitted_schema``: for each fitted attribute, a :class:`Field` (its order gives
      ``_fitted_attributes``; the first one marks the estimator as fitted).  Array shapes
      may use ``'K'`` (``n_classes_``) and the names that ``_fitted_dimensions`` derives
      from the scalar attributes.  A class without a schema lists ``_fitted_attributes``
      and gets the generic check (finite numbers and arrays, any shape).
    """

    _parameters: ClassVar[dict[str, Checker]] = {}
    _fitted_schema: ClassVar[dict[str, Field]] = {}
    _fitted_attributes: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "_fitted_schema" in cls.__dict__:
            cls._fitted_attributes = tuple(cls._fitted_schema)
        # `classes` (class names, see `_fit_labels`) is checked the same way in every class
        # (object's own __init__ takes none: its signature, parsed from text, is not read).
        init = cls.__init__
        if init is not object.__init__ and "classes" in inspect.signature(init).parameters:
            cls._parameters = {**cls._parameters, "classes": iv.optional_class_names}
        # Only the package's own public classes are loadable by name: a user's class of the
        # same name must not replace one of them in `load_recalibrator`.
        if cls.__module__.startswith("calibration_toolbox.") and not cls.__name__.startswith("_"):
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

    def set_params(self: RecalibratorT, **params: Any) -> RecalibratorT:
        """Change settings for the next ``fit``; returns ``self``.

        The fitted state, and so every prediction, stays as it was fitted.
        """
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(
                    f"invalid parameter {name!r} for {type(self).__name__}; "
                    f"valid parameters are {valid}."
                )
            setattr(self, name, value)
        return self

    @property
    def classes_(self) -> NDArray:
        """The class labels of the columns: the ``classes`` names fitted with, else indices.

        Without ``classes``, the indices ``0, 1, ..., K - 1`` (``np.arange(n_classes_)``);
        with them, the names as ``fit`` saw them (a ``set_params`` after ``fit`` changes
        the next fit only).  Reading it before ``fit`` raises ``NotFittedError``.
        """
        self._check_fitted()
        names = getattr(self, "_class_names", None)
        return np.arange(self.n_classes_) if names is None else names.copy()

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        r"""Mean log-likelihood of ``y`` under the calibrated probabilities (higher is better).

        .. math:: \frac{\sum_i w_i \log \hat p_{i, y_i}}{\sum_i w_i}

        the negative of :func:`calibration_toolbox.negative_log_likelihood` of the
        calibrated predictions: computed exactly from the calibrated logits, or, for a
        method whose output is a probability, from the probabilities clipped below at
        ``1e-15``.  It is the ``score`` that scikit-learn's ``GridSearchCV`` and
        ``cross_val_score`` maximise by default, so they choose, for instance,
        ``reg_lambda`` and ``reg_mu`` by the held-out log-likelihood.
        """
        self._check_fitted()
        if self._outputs_probabilities:
            calibrated, logits = self._calibrated_probs(X), False
        else:
            calibrated, logits = self._calibrated_logits(X), True
        labels = self._labels(y, len(calibrated), calibrated.shape[1], self._fitted_names())
        return -negative_log_likelihood(
            calibrated, labels, logits=logits, sample_weight=sample_weight
        )

    # -- scikit-learn's estimator protocol (called by scikit-learn only) --------------------
    def __sklearn_is_fitted__(self) -> bool:
        return bool(self._fitted_attributes) and hasattr(self, self._fitted_attributes[0])

    def __sklearn_tags__(self) -> Any:
        """scikit-learn's tags (1.6+): a classifier of (N, K) predictions and integer labels.

        scikit-learn is imported here, when scikit-learn itself asks, so that it is no
        dependency of this package.
        """
        from sklearn.utils import ClassifierTags, Tags, TargetTags

        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(),
        )

    def _checked_params(self) -> dict[str, Any]:
        """Every declared parameter, checked by its checker: name -> checked value.

        Raises ``TypeError`` (wrong type) or ``ValueError`` (wrong value) naming the
        parameter.
        """
        return {name: check(getattr(self, name), name) for name, check in self._parameters.items()}

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
            raise InputError(
                "{X:has} {n_classes} classes but this {value} was fitted on {n_classes_}.",
                argument="X",
                n_classes=n_classes,
                value=type(self).__name__,
                n_classes_=self.n_classes_,
            )

    # -- labels: class indices, or names with `classes` -----------------------------------
    def _fit_labels(self, y: ArrayLike, n_samples: int, n_classes: int) -> NDArray:
        """``y`` as column indices for ``fit``; names are looked up in ``classes``.

        The names are kept for ``classes_``, ``predict`` and ``save`` (as fitted).
        """
        classes = getattr(self, "classes", None)
        labels = self._labels(y, n_samples, n_classes, classes)
        self._class_names = None if classes is None else _names_array(classes)
        return labels

    def _fitted_names(self) -> NDArray | None:
        return getattr(self, "_class_names", None)

    def _labels(self, y: ArrayLike, n_samples: int, n_classes: int, classes) -> NDArray:
        hint = f" when constructing the recalibrator, {type(self).__name__}(classes=...)"
        return check_labels(
            y,
            n_samples,
            n_classes,
            name="y",
            classes=classes,
            hint=hint,
            multilabel_hint=self._multilabel_hint(),
        )

    @classmethod
    def _multilabel_hint(cls) -> str:
        """What fits an (N, K) 0/1 label matrix instead: this class's ``multilabel=True``.

        A class without that parameter names the two that have it.
        """
        if "multilabel" in cls._parameters:
            return f"{cls.__name__}(multilabel=True), one map per label"
        return (
            f"TemperatureScaling(multilabel=True) or PlattScaling(multilabel=True), one map "
            f"per label ({cls.__name__} has no multi-label form)"
        )

    # -- logits at fit ---------------------------------------------------------------------
    def _fit_logits(self, X: ArrayLike, name: str = "X") -> NDArray:
        """``X`` checked as logits (``check_logits``) for ``fit``; a warning for probabilities.

        Logits are never guessed, but a 1-D P(y = 1) taken as log-odds, or softmax
        probabilities taken as logits, fit a worse map without any error; as the metrics
        do for ``logits=True``, a ``UserWarning`` is issued when every value of a 1-D ``X``
        lies in [0, 1], or every row of a 2-D one is a probability vector, and it says what
        to pass instead.
        """
        logits = iv.check_predicted_logits(X, name, advice=self._probability_advice)
        return iv.check_fit_magnitude(logits, name)

    @staticmethod
    def _probability_advice(ndim: int) -> Text:
        """The end of :meth:`_fit_logits`'s warning for an ``X`` of ``ndim`` dimensions."""
        if ndim == 1:
            return Text(
                "if it holds P(y = 1), pass the log-odds {logit} (or the "
                "log-probabilities of both classes, {log_both}), "
                "or fit BetaCalibration or IsotonicCalibration, which take probabilities.",
                fields={
                    "logit": Name("scipy.special.logit(p)"),
                    "log_both": Name("np.log(np.stack([1 - p, p], axis=1))"),
                },
            )
        return Text(
            "if it holds probabilities, pass the log-probabilities {log} (logits whose "
            "softmax is p itself), or fit DirichletCalibration or IsotonicCalibration, which "
            "take probabilities.",
            fields={"log": Name("np.log(p)")},
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
            probs[rows] = _scipy.special.softmax(probs[rows], axis=1)
        return probs

    def predict(self, X: ArrayLike) -> NDArray:
        """Class with the largest calibrated probability (first index on ties).

        A column index, or its name in ``classes_`` when fitted with ``classes``.
        """
        best = np.argmax(self(X), axis=1)
        names = self._fitted_names()
        return best if names is None else names[best]

    # -- persistence without pickle ------------------------------------------------------
    @classmethod
    def _fitted_dimensions(cls, state: dict[str, Any]) -> dict[str, int]:
        """Array dimensions implied by the scalar fitted attributes (``'K'``: classes)."""
        return {"K": state["n_classes_"]} if "n_classes_" in state else {}

    @classmethod
    def _schema(cls) -> dict[str, Field]:
        return cls._fitted_schema or dict.fromkeys(cls._fitted_attributes, _ANY)

    @classmethod
    def _decoded_state(cls, fitted: object) -> dict[str, Any]:
        """The fitted attributes of a description, checked against the class's schema."""
        schema = cls._schema()
        if isinstance(fitted, dict):  # a file written before a field with a default existed
            added = {name: field.default for name, field in schema.items() if field.default}
            fitted = {**added, **fitted}
        _check_keys(fitted, schema, Name("fitted"))
        state = {}
        # Scalars first: the array shapes are given in terms of them.
        for name, field in sorted(schema.items(), key=lambda item: item[1].kind == "array"):
            if field.kind == "array" or (field.kind == "any" and isinstance(fitted[name], dict)):
                state[name] = _decode_array(name, field, fitted[name])
            else:
                state[name] = _decode_scalar(name, field, fitted[name])
        _check_shapes(schema, state, cls._fitted_dimensions(state))
        for name, field in schema.items():
            problem = field.rule(name, state) if field.rule else None
            if problem:
                raise InputError.from_text(problem)
        return state

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe description: format, class name, settings and fitted state."""
        self._check_fitted()
        fitted = {}
        for name in self._fitted_attributes:
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                fitted[name] = {
                    "dtype": value.dtype.str,
                    "shape": list(value.shape),
                    "data": value.reshape(-1).tolist(),
                }
            else:
                fitted[name] = value.item() if isinstance(value, np.generic) else value
        names = self._fitted_names()
        if names is not None:  # the names fitted with, as `classes_` gives them
            fitted["classes_"] = names.tolist()
        params = {name: _json_safe(value) for name, value in self.get_params().items()}
        return {
            "format": _FORMAT,
            "format_version": FORMAT_VERSION,
            "class": _class_id(type(self)),
            "params": params,
            "fitted": fitted,
        }

    @classmethod
    def from_dict(cls: type[RecalibratorT], data: dict[str, Any]) -> RecalibratorT:
        """Rebuild a fitted recalibrator from :meth:`to_dict` output.

        ``data`` is checked first: its format and version, its class (a built-in
        recalibrator, or ``cls`` itself), its parameters (through the class's parameter
        declarations) and its fitted state (through the class's fitted schema: keys,
        dtypes, shapes, finiteness, ranges).  Any problem raises one ``ValueError``.
        """
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise InputError(
                "not a recalibrator description written by {to_dict} or {save} (its "
                "{format} must be {_FORMAT!r}).",
                _FORMAT=_FORMAT,
            )
        _check_keys(data, _DESCRIPTION_KEYS, "the description")
        version = data["format_version"]
        if version != FORMAT_VERSION or isinstance(version, bool):
            raise InputError(
                "{format_version} must be {FORMAT_VERSION}, the version this release reads; "
                "got {value}. Fit and save the recalibrator again.",
                argument="format_version",
                FORMAT_VERSION=FORMAT_VERSION,
                value=_got(version),
            )
        target = _resolve_class(cls, data["class"])
        instance = target(**_init_arguments(target, data["params"]))
        try:
            instance._checked_params()
        except (TypeError, ValueError) as exc:  # a wrong type in a file is a bad file
            raise as_value_error(exc) from None
        fitted = data["fitted"]
        names = fitted.get("classes_") if isinstance(fitted, dict) else None
        if names is not None:
            fitted = {key: value for key, value in fitted.items() if key != "classes_"}
        for name, value in target._decoded_state(fitted).items():
            setattr(instance, name, value)
        if names is not None:
            _check_stored_classes(names, instance.n_classes_)
            instance._class_names = _names_array(names)
        return instance

    def save(self, path: Union[str, os.PathLike]) -> None:
        """Write the fitted state to a JSON file, atomically.

        The description is built and checked as :meth:`load` would check it before
        anything is written, then written to a temporary file in the target's folder,
        flushed to disk and renamed over the target (``os.replace``).  An unfitted
        estimator, a state ``load`` would refuse or a failed write (a full disk) leaves an
        existing file as it was, and no temporary file behind.
        """
        write_atomically(path, self._saved_text())

    def _saved_text(self) -> str:
        """The JSON text :meth:`save` writes, checked as :meth:`load` would check it."""
        description = self.to_dict()
        type(self).from_dict(description)  # never write a file that `load` refuses
        return json.dumps(description, allow_nan=False)

    @classmethod
    def load(cls: type[RecalibratorT], path: Union[str, os.PathLike]) -> RecalibratorT:
        """Read a recalibrator written by :meth:`save`.

        Raises one ``ValueError`` naming the file and the problem if the file is not JSON
        or does not describe a valid fitted recalibrator (see :meth:`from_dict`).
        """
        name = os.fspath(path)
        try:
            with open(path, encoding="utf-8") as handle:
                data = json.load(handle)
        except ValueError as exc:  # truncated or corrupt JSON, or not UTF-8 text
            raise InputError(
                "{name}: not a JSON file written by {save} ({exc}).", name=name, exc=exc
            ) from None
        except RecursionError:  # nested deeper than Python's parser recurses
            raise InputError(
                "{name}: not a JSON file written by {save} (nested deeper than any "
                "description is).",
                name=name,
            ) from None
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise within(exc, "{name}: ", name=name) from None


def _class_id(cls: type) -> str:
    """How a file names ``cls``: a built-in by its name, any other class by its full path."""
    if _REGISTRY.get(cls.__name__) is cls:
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


def _resolve_class(cls: type[Recalibrator], name: object) -> type[Recalibrator]:
    """The class a description names: a built-in one, or ``cls`` itself."""
    target = (
        cls if name == _class_id(cls) else _REGISTRY.get(name) if isinstance(name, str) else None
    )
    if target is None:
        raise InputError(
            "{class} must name a built-in recalibrator ({built_in}) or "
            "{subclass}, whose {load:was} called; got {given}.",
            argument="class",
            built_in=", ".join(sorted(_REGISTRY)),
            subclass=_class_id(cls),
            given=_got(name),
        )
    if not issubclass(target, cls):
        raise ValueError(f"the description is of a {name}, not of a {cls.__name__}.")
    return target


def _init_arguments(target: type[Recalibrator], params: object) -> dict[str, Any]:
    """``__init__`` arguments from stored parameters (lists back to tuples where due)."""
    signature = inspect.signature(target.__init__).parameters
    _check_keys(params, target._param_names(), Name("params"), allow_missing=True)
    return {
        name: tuple(value)
        if isinstance(signature[name].default, tuple) and isinstance(value, list)
        else value
        for name, value in params.items()
    }


def short_list(items: list[int]) -> str:
    """Class or label indices for a message: the first ten, and how many more."""
    return str(items) if len(items) <= 10 else f"{items[:10]} and {len(items) - 10} more"


#: A probability of exactly 0 becomes log(1e-300) = -690.8: finite logits whose softmax
#: differs from the probabilities by at most 1e-300 per entry.
LOG_FLOOR = 1e-300


def log_odds(prob: NDArray) -> NDArray:
    """``log(p) - log(1 - p)`` of float64 probabilities, both floored at :data:`LOG_FLOOR`.

    Finite everywhere (``+-690.8`` at 1 and 0); ``1 - p`` is exact for ``p >= 1/2``, so
    confidences as close to 1 as ``1 - 2**-53`` keep distinct log-odds.
    """
    return np.log(np.maximum(prob, LOG_FLOOR)) - np.log(np.maximum(1 - prob, LOG_FLOOR))


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
    """Read a built-in recalibrator written by ``save`` (the class is stored in the file).

    A file written by a subclass of one's own is read by that subclass's ``load``.
    """
    return Recalibrator.load(path)


def _names_array(classes: ArrayLike) -> NDArray:
    """Checked ``classes`` as an array (text as ``str``), the form ``classes_`` returns."""
    names = np.asarray(classes)
    return names.astype(str) if names.dtype.kind in "OSU" else names


def _check_stored_classes(classes: object, n_classes: int) -> None:
    """``classes_`` of a file: one distinct name (str or number) per class."""
    names = np.asarray(classes) if isinstance(classes, list) else np.array(None)
    if not (
        names.ndim == 1
        and names.dtype.kind in "Uiuf"
        and len(names) == n_classes
        and len(np.unique(names)) == n_classes
    ):
        raise InputError(
            "{classes_} must be a list of {n_classes} distinct class names (str or "
            "numbers), one per column; got {value}.",
            argument="classes_",
            n_classes=n_classes,
            value=_got(classes),
        )


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
