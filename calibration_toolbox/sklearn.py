"""scikit-learn: a calibrated classifier around any estimator, and calibration scorers.

:class:`CalibratedClassifier` wraps any scikit-learn classifier with any recalibrator of
the package, with the behaviour of scikit-learn's ``CalibratedClassifierCV``;
:func:`make_calibration_scorer` and :func:`get_scorer` turn the metrics of the registry
into scorers for ``GridSearchCV`` and ``cross_val_score``.

scikit-learn is imported when one of these objects is fitted or called, never when this
module or the package is imported; it comes with ``pip install scikit-learn`` (an optional
extra: the package's own dependencies are NumPy and SciPy only).  The scorers' names,
settings and signs are read from the metric registry (:mod:`calibration_toolbox._registry`),
so a metric added there is a scorer here.

References
----------
Niculescu-Mizil, A. and Caruana, R. (2005). Predicting good probabilities with supervised
learning.  ICML.  (Calibration on held-out folds, the scheme of ``CalibratedClassifierCV``.)

Pedregosa, F. et al. (2011). Scikit-learn: machine learning in Python.  JMLR 12,
2825-2830.  (The estimator and scorer protocols.)
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from calibration_toolbox import _registry
from calibration_toolbox import _validation as iv
from calibration_toolbox._errors import InputError, InputTypeError
from calibration_toolbox._warnings import warn
from calibration_toolbox.recalibration._base import Recalibrator
from calibration_toolbox.recalibration._methods import METHODS, converted, input_of

__all__ = [
    "CalibratedClassifier",
    "CalibrationScorer",
    "get_scorer",
    "make_calibration_scorer",
    "scorer_names",
]

INSTALL_HINT = "pip install scikit-learn"


def _sklearn():
    """``sklearn``, or an ImportError that says how to install it."""
    try:
        import sklearn
    except ImportError as error:
        raise ImportError(
            "calibration_toolbox.sklearn needs scikit-learn, which is not installed; "
            f"install it with {INSTALL_HINT}."
        ) from error
    return sklearn


# -- scorers -----------------------------------------------------------------------------------
def _scorable() -> dict[str, _registry.MetricSpec]:
    """The registry's rows that give one number of (N, K) probabilities and class labels.

    Every public metric and named setting except those that return no single number
    (``bootstrap`` None: tables, curves, decompositions) and the multi-label ones.
    """
    return {
        row.name: row
        for row in _registry.ROWS.values()
        if row.bootstrap is not None and not row.multilabel and row.function is not None
    }


def _required_options(row: _registry.MetricSpec) -> list[str]:
    """The options ``row``'s function needs beyond its two arrays (ToprCE's ``r``)."""
    parameters = list(inspect.signature(row.function).parameters.values())[2:]
    return [
        p.name
        for p in parameters
        if p.default is p.empty
        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        and p.name not in row.options
    ]


def _scorer_name(row: _registry.MetricSpec) -> str:
    """``neg_<name>`` of a loss, ``<name>`` of a metric whose larger values are better."""
    name = row.name.lower()
    return name if row.higher_is_better else f"neg_{name}"


class CalibrationScorer:
    r"""A scikit-learn scorer of one registry metric of the calibrated probabilities.

    Called as scikit-learn calls a scorer, ``scorer(estimator, X, y)``:

    .. math:: \text{score} = s \cdot m(\hat P, y), \qquad s = -1 \text{ for a loss}, +1
       \text{ otherwise},

    where :math:`\hat P` is ``estimator.predict_proba(X)`` (one column per entry of
    ``estimator.classes_``), :math:`y` the labels as indices of ``classes_`` and :math:`m`
    the metric with the scorer's options.  Larger is better, as ``GridSearchCV`` expects
    (scikit-learn's ``greater_is_better=False`` negates a loss the same way).
    :meth:`score_func` takes scikit-learn's metric order ``(y_true, y_prob)`` and returns
    the metric itself, unsigned.  Build one with :func:`make_calibration_scorer` or
    :func:`get_scorer`.

    Attributes
    ----------
    metric : str
        The registry name of the metric.
    options : dict
        Its keyword arguments.
    greater_is_better : bool
        Whether the metric's larger values are better (the registry's
        ``higher_is_better``).

    References
    ----------
    .. [1] Pedregosa, F. et al. (2011). Scikit-learn: machine learning in Python.  JMLR 12,
       2825-2830.

    Examples
    --------
    >>> from calibration_toolbox.sklearn import make_calibration_scorer
    >>> scorer = make_calibration_scorer("ECE", bins=2)
    >>> scorer.score_func([0, 1, 1], [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    0.1
    """

    def __init__(self, metric: str, options: Mapping[str, Any], greater_is_better: bool):
        self.metric = metric
        self.options = dict(options)
        self.greater_is_better = greater_is_better

    def score_func(
        self, y_true: ArrayLike, y_prob: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> float:
        """The metric of ``y_prob`` (N, K) against ``y_true``, the column indices 0..K-1."""
        function = _registry.ROWS[self.metric].function
        row = _registry.ROWS[self.metric]
        return function(
            y_prob, y_true, sample_weight=sample_weight, **{**row.options, **self.options}
        )

    def __call__(
        self,
        estimator: Any,
        X: ArrayLike,
        y_true: ArrayLike,
        sample_weight: ArrayLike | None = None,
    ) -> float:
        """The signed metric of ``estimator.predict_proba(X)`` against the labels ``y_true``."""
        probabilities = estimator.predict_proba(X)
        indices = _label_indices(y_true, np.asarray(estimator.classes_), "y_true")
        value = self.score_func(indices, probabilities, sample_weight=sample_weight)
        return value if self.greater_is_better else -value

    def __repr__(self) -> str:
        options = "".join(f", {name}={value!r}" for name, value in self.options.items())
        return f"make_calibration_scorer({self.metric!r}{options})"


def make_calibration_scorer(metric: str, **options: Any) -> CalibrationScorer:
    r"""A scorer for ``GridSearchCV`` of any metric of the registry, with its options.

    ``make_calibration_scorer("ECE", bins=15)`` scores an estimator by
    :math:`-\mathrm{ECE}` of its ``predict_proba`` (a loss is negated, as scikit-learn's
    ``make_scorer(..., greater_is_better=False)`` does, so that larger is better); a metric
    whose larger values are better (``confidence_auroc``, ``coverage_at_risk``) keeps its
    sign.

    Parameters
    ----------
    metric : str
        A registry name (``'ECE'``, ``'SCE'``, ``'brier_score'``,
        ``'negative_log_likelihood'``, ...) or its command-line name (``'Brier'``,
        ``'NLL'``); any metric that returns one number of (N, K) probabilities and class
        labels.
    **options
        Keyword arguments of the metric (``bins``, ``r`` of ToprCE, ...).  Their names are
        checked here; their values when the scorer is called, by the metric itself.
        ``sample_weight`` and ``logits`` are no options (the scorer passes the
        probabilities of ``predict_proba`` and scikit-learn's weights).

    Returns
    -------
    CalibrationScorer
        Call it as ``scorer(estimator, X, y)``.

    Raises
    ------
    ValueError
        An unknown metric, an option it does not take, or a required option left out.

    References
    ----------
    .. [1] Pedregosa, F. et al. (2011). Scikit-learn: machine learning in Python.  JMLR 12,
       2825-2830.  (``make_scorer``'s sign convention.)

    Examples
    --------
    >>> from calibration_toolbox.sklearn import make_calibration_scorer
    >>> make_calibration_scorer("ECE", bins=15)
    make_calibration_scorer('ECE', bins=15)
    >>> make_calibration_scorer("NLL").metric
    'negative_log_likelihood'
    """
    row = _row_of(metric)
    parameters = inspect.signature(row.function).parameters
    allowed = [name for name in list(parameters)[2:] if name not in ("sample_weight", "logits")]
    for name in options:
        if name not in allowed or name in row.options:
            raise InputError(
                "{argument}: {metric} takes no option {name!r}; its options are {allowed}.",
                argument="options",
                metric=row.name,
                name=name,
                allowed=", ".join(n for n in allowed if n not in row.options),
            )
    missing = [name for name in _required_options(row) if name not in options]
    if missing:
        raise InputError(
            "{argument}: {metric} needs the option(s) {missing}.",
            argument="options",
            metric=row.name,
            missing=", ".join(missing),
        )
    return CalibrationScorer(row.name, options, row.higher_is_better)


def _row_of(metric: object) -> _registry.MetricSpec:
    if not isinstance(metric, str):
        raise InputTypeError(
            "{argument} must be a metric name (str); got {value}.",
            argument="metric",
            value=type(metric).__name__,
        )
    rows = _scorable()
    if metric in rows:
        return rows[metric]
    by_command_line = {row.command_line: row for row in rows.values() if row.command_line}
    if metric in by_command_line:
        return by_command_line[metric]
    raise InputError(
        "{argument} must be one of {names}; got {value}.",
        argument="metric",
        names=", ".join(rows),
        value=repr(metric),
    )


def scorer_names() -> list[str]:
    """The names :func:`get_scorer` knows, in the registry's order.

    ``neg_<metric name in lower case>`` for a loss (``neg_ece``,
    ``neg_expected_calibration_error``, ``neg_brier_score``,
    ``neg_negative_log_likelihood``), the lower-case name for a metric whose larger values
    are better (``confidence_auroc``); every metric of the registry that returns one number
    and needs no option (ToprCE's ``r``: use :func:`make_calibration_scorer`).

    Examples
    --------
    >>> from calibration_toolbox.sklearn import scorer_names
    >>> "neg_expected_calibration_error" in scorer_names()
    True
    """
    return [_scorer_name(row) for row in _scorable().values() if not _required_options(row)]


def get_scorer(name: str) -> CalibrationScorer:
    """The named scorer ``name`` (see :func:`scorer_names`), with the metric's defaults.

    ``get_scorer("neg_expected_calibration_error")`` is
    ``make_calibration_scorer("expected_calibration_error")``.

    Parameters
    ----------
    name : str
        One of :func:`scorer_names`.

    Returns
    -------
    CalibrationScorer

    Examples
    --------
    >>> from calibration_toolbox.sklearn import get_scorer
    >>> get_scorer("neg_ece")
    make_calibration_scorer('ECE')
    """
    rows = {_scorer_name(row): row for row in _scorable().values() if not _required_options(row)}
    if not isinstance(name, str) or name not in rows:
        raise InputError(
            "{argument} must be one of {names}; got {value}.",
            argument="name",
            names=", ".join(rows),
            value=repr(name),
        )
    return make_calibration_scorer(rows[name].name)


def _label_indices(y: ArrayLike, classes: NDArray, argument: str) -> NDArray:
    """The index in ``classes`` of each label of ``y``; a ValueError names an unknown one."""
    labels = np.asarray(y)
    if labels.ndim != 1:
        raise InputError(
            "{argument} must be a 1-D array of class labels; got shape {shape}.",
            argument=argument,
            shape=labels.shape,
        )
    order = np.argsort(classes, kind="stable")
    position = np.searchsorted(classes, labels, sorter=order)
    position = np.minimum(position, len(classes) - 1)
    indices = order[position]
    unknown = classes[indices] != labels
    if np.any(unknown):
        raise InputError(
            "{argument} holds the label {value}, which is none of the classes {classes}.",
            argument=argument,
            value=repr(labels[np.argmax(unknown)].item()),
            classes=", ".join(map(str, classes.tolist())),
        )
    return indices


# -- the calibrated classifier -----------------------------------------------------------------
_PARAMETERS = ("estimator", "method", "cv", "ensemble")


def _recalibrator(method: object) -> Recalibrator:
    """A fresh, unfitted copy of ``method`` (a recalibrator or a name of :data:`METHODS`)."""
    if isinstance(method, str):
        if method not in METHODS:
            raise InputError(
                "{argument} must be a recalibrator or one of the names {names}; got {value}.",
                argument="method",
                names=", ".join(METHODS),
                value=repr(method),
            )
        return METHODS[method].make()
    input_of(method)  # refuses anything else, naming `method`
    return type(method)(**method.get_params(deep=False))


def _response(estimator: Any, X: ArrayLike, needs: str, binary: bool) -> NDArray:
    """The base estimator's predictions of ``X`` as the recalibrator takes them.

    A method fitted on logits gets ``decision_function`` where the estimator has one (a
    binary estimator's 1-D score is the log-odds), else ``log(predict_proba)`` (binary: the
    log-odds of the second class); a method fitted on probabilities gets ``predict_proba``
    where the estimator has it (binary: the second column), else the softmax (binary: the
    sigmoid) of ``decision_function``.
    """
    has_proba = hasattr(estimator, "predict_proba")
    use_decision = hasattr(estimator, "decision_function") and (needs == "logits" or not has_proba)
    if use_decision:
        values = np.asarray(estimator.decision_function(X), dtype=np.float64)
        if binary and values.ndim == 2:
            values = values[:, 1] - values[:, 0] if values.shape[1] == 2 else values[:, 0]
        return converted(values, needs, logits=True)
    if not has_proba:
        raise InputTypeError(
            "{argument} must have a decision_function or a predict_proba method; "
            "{value} has neither.",
            argument="estimator",
            value=type(estimator).__name__,
        )
    values = np.asarray(estimator.predict_proba(X), dtype=np.float64)
    return converted(values[:, 1] if binary else values, needs, logits=False)


def _fit_arguments(estimator: Any, sample_weight: NDArray | None, rows: Any) -> dict[str, Any]:
    """``sample_weight`` of ``rows`` for ``estimator.fit``, where it takes one."""
    if sample_weight is None or "sample_weight" not in inspect.signature(estimator.fit).parameters:
        return {}
    return {"sample_weight": sample_weight if rows is None else sample_weight[rows]}


def _checked_labels(y: ArrayLike | None) -> NDArray:
    """``y`` as a 1-D array; None and non-finite numbers are refused, naming ``y``."""
    from sklearn.utils import assert_all_finite, column_or_1d

    if y is None:
        raise InputError(
            "{argument} is required: CalibratedClassifier requires y to be passed, but the "
            "target y is None.",
            argument="y",
        )
    labels = column_or_1d(y, warn=True)
    if labels.dtype.kind in "fc":
        assert_all_finite(labels, input_name="y")
    return labels


class CalibratedClassifier:
    r"""Any scikit-learn classifier, recalibrated on held-out folds by any recalibrator.

    The behaviour of scikit-learn's ``CalibratedClassifierCV`` with the package's
    recalibrators (``method=TemperatureScaling()``, ``DirichletCalibration()``, ... or a
    command-line name, ``'temperature'``).  With ``cv`` folds and ``ensemble=True``, fold
    :math:`j` fits a clone :math:`f_j` of the estimator on the other folds and a
    recalibrator :math:`g_j` on fold :math:`j`'s predictions; the probabilities are the
    mean

    .. math:: \hat P(y \mid x) = \frac{1}{J} \sum_{j=1}^{J} g_j(f_j(x)).

    With ``ensemble=False`` the recalibrator is fitted once, on the cross-validated
    (out-of-fold) predictions of all rows, and the estimator is refitted on all rows.  With
    ``cv='prefit'``, or an estimator wrapped in scikit-learn's ``FrozenEstimator``, the
    estimator is used as fitted and the recalibrator is fitted on all of ``X`` (``cv`` and
    ``ensemble`` do not apply; scikit-learn's ``ensemble='auto'`` does the same for a
    ``FrozenEstimator``).

    What the recalibrator is fitted on (see :func:`_response`): a method on logits gets the
    estimator's ``decision_function`` where it has one, else ``log(predict_proba)``; a
    method on probabilities gets ``predict_proba``, else the softmax of
    ``decision_function``.  A binary task gives one column: the 1-D ``decision_function``
    (the log-odds) or ``predict_proba[:, 1]``, as scikit-learn does.

    Labels may be any sortable values (strings too): ``classes_`` is their sorted set, and
    the recalibrators see their indices.  ``sample_weight`` goes to the estimator's ``fit``
    when it takes one (else a ``UserWarning``, as scikit-learn warns) and to the
    recalibrator's fit on its rows.

    Parameters
    ----------
    estimator : scikit-learn classifier, optional
        The classifier (with ``decision_function`` or ``predict_proba``); default
        ``sklearn.svm.LinearSVC()``, as ``CalibratedClassifierCV``.
    method : Recalibrator or str, default 'temperature'
        A recalibrator of the package (its settings are copied; the object passed is not
        fitted) or one of the command-line method names (``temperature``, ``dirichlet``,
        ``isotonic``, ...).
    cv : int, cross-validation splitter, iterable of splits or 'prefit', default 5
        As scikit-learn's ``check_cv`` with ``classifier=True`` (an integer gives stratified
        folds); every class needs at least ``cv`` rows.
    ensemble : bool, default True
        Average one (estimator, recalibrator) pair per fold, or fit one recalibrator on
        the out-of-fold predictions.

    Attributes
    ----------
    classes_ : ndarray, shape (K,)
        The class labels.
    estimators_ : list
        The fitted estimators (one per fold with ``ensemble=True``).
    recalibrators_ : list of Recalibrator
        The fitted recalibrator of each estimator.
    n_features_in_ : int
        The estimator's, where it has one.

    References
    ----------
    .. [1] Niculescu-Mizil, A. and Caruana, R. (2005). Predicting good probabilities with
       supervised learning.  ICML.
    .. [2] Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On calibration of
       modern neural networks.  ICML.  (Temperature scaling, the default method.)

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.ensemble import RandomForestClassifier
    >>> from calibration_toolbox import DirichletCalibration
    >>> from calibration_toolbox.sklearn import CalibratedClassifier
    >>> X, y = make_classification(300, n_classes=3, n_informative=4, random_state=0)
    >>> forest = RandomForestClassifier(n_estimators=20, random_state=0)
    >>> model = CalibratedClassifier(forest, method=DirichletCalibration(), cv=3).fit(X, y)
    >>> model.predict_proba(X[:2]).shape
    (2, 3)
    >>> len(model.recalibrators_)
    3
    """

    def __init__(
        self,
        estimator: Any = None,
        method: Recalibrator | str = "temperature",
        cv: Any = 5,
        ensemble: bool = True,
    ):
        self.estimator = estimator
        self.method = method
        self.cv = cv
        self.ensemble = ensemble

    # -- scikit-learn's parameter protocol ------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The settings by name; with ``deep``, the estimator's and method's as ``name__key``."""
        params = {name: getattr(self, name) for name in _PARAMETERS}
        if deep:
            for name in ("estimator", "method"):
                value = params[name]
                if hasattr(value, "get_params") and not isinstance(value, type):
                    nested = value.get_params(deep=True).items()
                    params.update({f"{name}__{key}": item for key, item in nested})
        return params

    def set_params(self, **params: Any) -> CalibratedClassifier:
        """Change settings (``estimator__C=...`` sets the estimator's); returns ``self``."""
        nested: dict[str, dict[str, Any]] = {}
        for key, value in params.items():
            name, _, inner = key.partition("__")
            if name not in _PARAMETERS:
                raise InputError(
                    "invalid parameter {value} for CalibratedClassifier; valid parameters "
                    "are {valid}.",
                    value=repr(name),
                    valid=", ".join(_PARAMETERS),
                )
            if inner:
                nested.setdefault(name, {})[inner] = value
            else:
                setattr(self, name, value)
        for name, inner_params in nested.items():
            getattr(self, name).set_params(**inner_params)
        return self

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _PARAMETERS)
        return f"CalibratedClassifier({shown})"

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "recalibrators_")

    def __sklearn_tags__(self) -> Any:
        """A classifier's tags; the input tags are the estimator's (scikit-learn asks)."""
        _sklearn()
        from sklearn.utils import ClassifierTags, Tags, TargetTags, get_tags

        tags = Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(),
        )
        estimator = self._estimator()
        tags.input_tags = get_tags(estimator).input_tags
        return tags

    # -- fitting ------------------------------------------------------------------------------
    def _estimator(self) -> Any:
        if self.estimator is not None:
            return self.estimator
        _sklearn()
        from sklearn.svm import LinearSVC

        return LinearSVC()

    def fit(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None
    ) -> CalibratedClassifier:
        """Fit the estimator(s) and the recalibrator(s) (see the class description).

        Parameters
        ----------
        X : array-like
            The estimator's input.
        y : array-like, shape (N,)
            Class labels (any sortable values).
        sample_weight : array-like, shape (N,), optional
            Row weights, for the estimator (when its ``fit`` takes them) and the
            recalibrator.

        Returns
        -------
        CalibratedClassifier
            ``self``.
        """
        _sklearn()
        from sklearn.frozen import FrozenEstimator
        from sklearn.utils import indexable
        from sklearn.utils.multiclass import check_classification_targets
        from sklearn.utils.validation import _check_sample_weight

        estimator = self._estimator()
        template = _recalibrator(self.method)
        ensemble = iv.check_flag(self.ensemble, "ensemble")
        y = _checked_labels(y)
        X, y = indexable(X, y)
        check_classification_targets(y)
        weights = None if sample_weight is None else _check_sample_weight(sample_weight, y)
        if (
            weights is not None
            and "sample_weight" not in inspect.signature(estimator.fit).parameters
        ):
            warn(
                f"{type(estimator).__name__}.fit takes no sample_weight: the weights are "
                "used by the recalibrator only."
            )
        if (isinstance(self.cv, str) and self.cv == "prefit") or isinstance(
            estimator, FrozenEstimator
        ):
            pairs = [self._prefit(estimator, template, X, y, weights)]
        else:
            self.classes_ = np.unique(y)
            cv = self._splitter(y)
            fit = self._per_fold if ensemble else self._out_of_fold
            pairs = fit(estimator, template, cv, X, y, weights)
        self.estimators_ = [pair[0] for pair in pairs]
        self.recalibrators_ = [pair[1] for pair in pairs]
        first = self.estimators_[0]
        for name in ("n_features_in_", "feature_names_in_"):
            if hasattr(first, name):
                setattr(self, name, getattr(first, name))
        return self

    def _splitter(self, y: NDArray) -> Any:
        from sklearn.model_selection import check_cv

        n_folds = self.cv if isinstance(self.cv, int) else getattr(self.cv, "n_splits", None)
        counts = np.unique(y, return_counts=True)[1]
        if isinstance(n_folds, int) and np.any(counts < n_folds):
            raise InputError(
                "{argument}: {n_folds}-fold cross-validation needs at least {n_folds} rows of "
                "every class; the rarest class has {count}.",
                argument="cv",
                n_folds=n_folds,
                count=int(counts.min()),
            )
        return check_cv(self.cv, y, classifier=True)

    def _prefit(self, estimator: Any, template: Recalibrator, X: Any, y: NDArray, weights):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(estimator)
        self.classes_ = np.asarray(estimator.classes_)
        indices = _label_indices(y, self.classes_, "y")
        binary = len(self.classes_) == 2
        inputs = _response(estimator, X, input_of(template), binary)
        return estimator, template.fit(inputs, indices, sample_weight=weights)

    def _per_fold(self, estimator, template, cv, X, y, weights) -> list[tuple[Any, Recalibrator]]:
        from sklearn.base import clone
        from sklearn.utils import _safe_indexing

        binary = len(self.classes_) == 2
        pairs = []
        for train, test in cv.split(X, y):
            fitted = clone(estimator).fit(
                _safe_indexing(X, train), y[train], **_fit_arguments(estimator, weights, train)
            )
            if not np.array_equal(np.asarray(fitted.classes_), self.classes_):
                raise InputError(
                    "{argument}: a training fold lacks a class; use a stratified splitter.",
                    argument="cv",
                )
            inputs = _response(fitted, _safe_indexing(X, test), input_of(template), binary)
            recalibrator = _recalibrator(template).fit(
                inputs,
                np.searchsorted(self.classes_, y[test]),
                sample_weight=None if weights is None else weights[test],
            )
            pairs.append((fitted, recalibrator))
        return pairs

    def _out_of_fold(self, estimator, template, cv, X, y, weights):
        from sklearn.base import clone
        from sklearn.model_selection import cross_val_predict

        binary = len(self.classes_) == 2
        needs = input_of(template)
        has_proba = hasattr(estimator, "predict_proba")
        decision = hasattr(estimator, "decision_function") and (needs == "logits" or not has_proba)
        response = "decision_function" if decision else "predict_proba"
        predictions = cross_val_predict(
            clone(estimator),
            X,
            y,
            cv=cv,
            method=response,
            params=_fit_arguments(estimator, weights, None),
        )
        predictions = np.asarray(predictions, dtype=np.float64)
        if binary and predictions.ndim == 2:
            predictions = predictions[:, 1]
        inputs = converted(predictions, needs, logits=decision)
        fitted = clone(estimator).fit(X, y, **_fit_arguments(estimator, weights, None))
        recalibrator = template.fit(
            inputs, np.searchsorted(self.classes_, y), sample_weight=weights
        )
        return [(fitted, recalibrator)]

    # -- prediction ---------------------------------------------------------------------------
    def predict_proba(self, X: ArrayLike) -> NDArray:
        """The mean calibrated probabilities of the (estimator, recalibrator) pairs, (N, K)."""
        _sklearn()
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        binary = len(self.classes_) == 2
        total = None
        for estimator, recalibrator in zip(self.estimators_, self.recalibrators_, strict=True):
            inputs = _response(estimator, X, input_of(recalibrator), binary)
            probabilities = recalibrator.predict_proba(inputs)
            total = probabilities if total is None else total + probabilities
        return total / len(self.recalibrators_)

    def predict(self, X: ArrayLike) -> NDArray:
        """The class of largest calibrated probability (the first on ties)."""
        probabilities = self.predict_proba(X)  # refuses an unfitted model first
        return self.classes_[np.argmax(probabilities, axis=1)]

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        """The (weighted) accuracy of :meth:`predict`, as scikit-learn's classifiers score."""
        correct = self.predict(X) == np.asarray(y)
        return float(np.average(correct, weights=sample_weight))
