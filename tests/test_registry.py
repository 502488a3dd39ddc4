"""The metric registry: every public metric has a row, and each row's declarations are true.

The lists here come from ``calibration_toolbox.__all__`` and the registry itself, so a new
public metric without a row, or a row whose declared capability does not hold, fails.
"""

from __future__ import annotations

import functools
import inspect
import re
from unittest import mock

import numpy as np
import pytest
from numpy.testing import assert_allclose

import calibration_toolbox as ct
from calibration_toolbox import _arrays, _registry, stats, streaming
from calibration_toolbox import _validation as iv
from calibration_toolbox.cli import _metrics as cli_metrics
from tests.registry_calls import with_groups

# Every function of (prob, labels, ...): multicalibration_error, a statistic over groups of
# rows, too (its row declares `groups`, which the calls here pass: tests/registry_calls.py).
PUBLIC_FUNCTIONS = [
    getattr(ct, name)
    for name in ct.__all__
    if inspect.isfunction(getattr(ct, name))
    and list(inspect.signature(getattr(ct, name)).parameters)[:2] == ["prob", "labels"]
]
ROWS = list(_registry.ROWS.values())
BY_NAME = {row.name: row for row in ROWS}
ids = {"ids": lambda row: row.name}
# The options a metric cannot be called without (ToprCE's r, the working point).
REQUIRED = {
    "ToprCE": {"r": 2},
    "coverage_at_risk": {"risk": 0.3},
    "risk_at_coverage": {"coverage": 0.5},
}


def _problem(n=300, k=4, seed=3):
    rng = np.random.default_rng(seed)
    prob = rng.dirichlet(np.full(k, 0.6), size=n)
    labels = rng.integers(0, k, size=n)
    return prob, labels


def _multilabel_problem(n, k, seed=3):
    """Independent per-label probabilities and a 0/1 label matrix of the same size."""
    rng = np.random.default_rng(seed)
    prob = rng.uniform(size=(n, k))
    return prob, (rng.uniform(size=(n, k)) < prob).astype(int)


def _call(row, prob, labels, **options):
    if row.multilabel and np.ndim(labels) == 1 and not isinstance(prob, ct.Scores):
        # a multi-label row reads an (N, K) 0/1 matrix: the same problem's size, as such
        prob, labels = _multilabel_problem(*np.shape(prob))
    options = with_groups(row, prob, {**row.options, **REQUIRED.get(row.name, {}), **options})
    return row.function(prob, labels, **options)


def test_the_public_metrics_are_found_by_their_signature():
    # the test's own definition of "public metric" (a function of (prob, labels, ...)) sees
    # the metrics of every module of calibration_toolbox.metrics
    names = {function.__name__ for function in PUBLIC_FUNCTIONS}
    assert {"ECE", "GCE", "KSCE", "MMCE", "SmoothECE", "brier_score", "ECESweep"} <= names
    assert "load_recalibrator" not in names


@pytest.mark.parametrize("function", PUBLIC_FUNCTIONS, ids=lambda f: f.__name__)
def test_every_public_metric_has_its_row(function):
    row = _registry.spec_of(function)
    assert row is not None, f"{function.__name__} has no registry row: add it to _registry"
    assert row.name == function.__name__ and row.public and row.function is function


def test_every_row_is_bound_to_a_public_function_and_named_once():
    public = {function.__name__ for function in PUBLIC_FUNCTIONS}
    assert {row.name for row in _registry.public()} == public
    for row in ROWS:
        assert row.function is (getattr(ct, row.of) if row.of else getattr(ct, row.name))
        if row.of is not None:  # a named setting calls its metric with fixed options
            assert row.options and row.stream is not None
    with pytest.raises(KeyError, match="no public metric 'debiased_L2'"):
        _registry.metric("debiased_L2")


def test_spec_of_unwraps_partials_and_knows_nothing_else():
    assert _registry.spec_of(ct.ECE) is BY_NAME["ECE"]
    partial = functools.partial(functools.partial(ct.ECE, bins=5), bins=10, logits=False)
    assert _registry.spec_of(partial).options == {"bins": 10, "logits": False}
    assert _registry.spec_of(partial).name == "ECE"
    assert _registry.spec_of(functools.partial(ct.ECE, np.eye(2))) is None  # binds prob
    assert _registry.spec_of(lambda prob, labels: 0.0) is None
    assert _registry.spec_of(stats.bootstrap) is None
    assert _registry.spec_of(ct.TemperatureScaling()) is None


@pytest.mark.parametrize("row", [row for row in ROWS if row.binned], **ids)
def test_binned_rows_take_bins_and_the_others_do_not(row):
    assert "bins" in inspect.signature(row.function).parameters
    assert _call(row, *_problem(), bins=3) is not None


@pytest.mark.parametrize("row", [row for row in _registry.public() if not row.binned], **ids)
def test_rows_without_bins_take_none(row):
    assert "bins" not in inspect.signature(row.function).parameters


@pytest.mark.parametrize("row", [row for row in ROWS if row.settings], **ids)
def test_a_named_binned_metric_is_the_gce_call_of_its_settings(row):
    prob, labels = _problem()
    reduction = {"norm": 1, "debias": False, "part": "both", "average": "macro"}
    reduction = {key: row.settings.get(key, default) for key, default in reduction.items()}
    settings = {key: value for key, value in row.settings.items() if key not in reduction}
    own = {"TACE": {"thresholding": 0.01}, "ToprCE": {"top_k_classes": 2}}.get(row.name, {})
    table = ct.calibration_table(prob, labels, bins=6, **settings, **own)
    assert _call(row, prob, labels, bins=6) == table.calibration_error(**reduction)


# -- input forms --------------------------------------------------------------------------
def _scores_call(row, scores, targets):
    top_label = {"class_conditional": False} if row.settings is None else {}
    return _call(row, scores, targets, **top_label)


@pytest.mark.parametrize("row", _registry.accepting_scores(), **ids)
def test_rows_that_accept_scores_take_them_as_the_two_column_top_label(row):
    rng = np.random.default_rng(5)
    scores = rng.uniform(0.5, 1.0, size=200)
    targets = (rng.uniform(size=200) < scores).astype(int)
    assert _scores_call(row, ct.Scores(scores), targets) is not None


@pytest.mark.parametrize("row", [row for row in _registry.public() if not row.scores], **ids)
def test_rows_that_do_not_accept_scores_refuse_them(row):
    with pytest.raises((TypeError, ValueError), match="Scores"):
        _scores_call(row, ct.Scores([0.2, 0.7, 0.9]), [0, 1, 1])


@pytest.mark.parametrize("row", [row for row in ROWS if row.class_wise], **ids)
def test_class_wise_rows_refuse_scores(row):
    assert not row.scores
    with pytest.raises(ValueError, match=r"need a \(N, K\)|class"):
        _call(row, ct.Scores([0.2, 0.7, 0.9]), [0, 1, 1])


# -- streaming --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def accumulated():
    prob, labels = _problem(n=2000, k=5, seed=11)
    weights = np.random.default_rng(12).uniform(0.2, 2.0, size=len(labels))
    accumulator = ct.CalibrationAccumulator(bins=7)
    for rows in np.array_split(np.arange(len(labels)), 6):
        accumulator.update(prob[rows], labels[rows], sample_weight=weights[rows])
    return accumulator, prob, labels, weights


@pytest.mark.parametrize("row", [row for row in ROWS if row.stream is not None], **ids)
def test_streamed_rows_equal_the_in_memory_call(row, accumulated):
    accumulator, prob, labels, weights = accumulated
    bins = {"bins": 7} if row.binned else {}
    expected = _call(row, prob, labels, sample_weight=weights, **bins)
    assert accumulator.metric(row.stream.name) == expected
    assert accumulator.results()[row.stream.name] == expected


@pytest.mark.parametrize("name", sorted(_registry.not_streamed()))
def test_rows_that_do_not_stream_are_refused_with_their_reason(name, accumulated):
    reason = re.escape(_registry.not_streamed()[name])
    with pytest.raises(
        ValueError, match=f"{name} cannot be computed from streamed sums: {reason}"
    ):
        accumulated[0].metric(name)


def test_the_accumulator_gives_the_streamed_rows_and_only_those(accumulated):
    tables = {stream.name for stream in _registry.streamed().values() if stream.table}
    assert set(streaming._METRICS) == tables
    given = set(accumulated[0].results()) - {"n_samples", "total_weight", "accuracy"}
    assert given == set(_registry.streamed())


@pytest.mark.parametrize("row", _registry.public(), **ids)
def test_every_public_row_says_whether_it_streams(row):
    # either the accumulator gives it, or it says why not; GCE and calibration_table are
    # the tables themselves (accumulator.table), and brier_decomposition is read from one
    tables_themselves = row.settings is None or row.name == "brier_decomposition"
    assert (row.stream is not None) + (row.not_streamed is not None) == 1 or tables_themselves
    assert (row.stream is None) or (row.not_streamed is None)


# -- bootstrap ------------------------------------------------------------------------------
def _not_in_the_registry(function):
    """The same metric as a callable the registry does not know: one call per weighting."""
    return lambda prob, labels, **options: function(prob, labels, **options)


@pytest.mark.parametrize("row", [row for row in ROWS if row.bootstrap == "table"], **ids)
def test_bootstrap_table_rows_give_the_draws_of_the_calls(row):
    prob, labels = _problem(n=400, k=3, seed=21)
    weights = np.random.default_rng(22).uniform(0.5, 1.5, size=len(labels))
    options = {"bins": 6, **row.options, **REQUIRED.get(row.name, {})}
    tabulated = stats.bootstrap(
        row.function, prob, labels, sample_weight=weights, n_resamples=20, random_state=4,
        method="BCa", **options,
    )  # fmt: skip
    called = stats.bootstrap(
        _not_in_the_registry(row.function), prob, labels, sample_weight=weights,
        n_resamples=20, random_state=4, method="BCa", **options,
    )  # fmt: skip
    assert tabulated.estimate == called.estimate
    assert_allclose(tabulated.bootstrap_distribution, called.bootstrap_distribution, rtol=1e-12)
    assert_allclose(tabulated.confidence_interval, called.confidence_interval, rtol=1e-12)


@pytest.mark.parametrize("row", [row for row in ROWS if row.bootstrap == "table"], **ids)
def test_bootstrap_takes_the_table_path_of_the_table_rows(row):
    prob, labels = _problem(n=50, k=3)
    options = {**row.options, **REQUIRED.get(row.name, {})}
    with mock.patch.object(stats, "_MetricCalls", side_effect=AssertionError("called")):
        stats.bootstrap(row.function, prob, labels, n_resamples=3, random_state=0, **options)


def test_a_partial_takes_the_fast_path_of_its_metric_bit_for_bit():
    # a softmax of wide logits: the weighted calls and the tables differ in the last bit
    # here (before, a partial was called once per weighting, and its draws were not these)
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(400, 3)) * 2.5
    prob = np.exp(logits - logits.max(axis=1, keepdims=True))
    prob /= prob.sum(axis=1, keepdims=True)
    labels = rng.integers(0, 3, size=400)
    by_keyword = stats.bootstrap(ct.ECE, prob, labels, n_resamples=30, random_state=0, bins=10)
    partial = functools.partial(ct.ECE, bins=10)
    by_partial = stats.bootstrap(partial, prob, labels, n_resamples=30, random_state=0)
    assert by_partial.estimate == by_keyword.estimate
    assert np.array_equal(by_partial.bootstrap_distribution, by_keyword.bootstrap_distribution)
    assert by_partial.confidence_interval == by_keyword.confidence_interval
    assert by_partial.standard_error == by_keyword.standard_error


def test_bootstrap_validates_the_data_once():
    prob, labels = _problem()
    for metric, options in ((ct.ECE, {"bins": 5}), (functools.partial(ct.SCE, bins=4), {})):
        with mock.patch.object(iv, "check_predictions", wraps=iv.check_predictions) as checks:
            stats.bootstrap(metric, prob, labels, n_resamples=5, random_state=0, **options)
        assert checks.call_count == 1


@pytest.mark.parametrize(
    ("metric", "options", "error", "message"),
    [
        (ct.ToprCE, {"r": 0}, ValueError, r"`r` must be an integer >= 1"),
        (ct.ToprCE, {}, TypeError, r"missing 1 required keyword-only argument: 'r'"),
        (ct.ECE, {"norm": 2}, TypeError, r"unexpected keyword argument 'norm'"),
        (ct.GCE, {"bins": 5, "bin": 7}, TypeError, r"not both"),
        (functools.partial(ct.ECE, bins=0), {}, ValueError, r"`bins` must be"),
    ],
)
def test_bootstrap_errors_are_the_metrics_own(metric, options, error, message):
    prob, labels = _problem(n=30)
    with pytest.raises(error, match=message):
        metric(prob, labels, **options)
    with pytest.raises(error, match=message):
        stats.bootstrap(metric, prob, labels, n_resamples=3, **options)


# -- what the messages and the command line derive -------------------------------------
def test_the_scores_refusal_names_every_acceptor():
    with pytest.raises(TypeError, match=r"`X` does not take Scores") as refusal:
        ct.TemperatureScaling().fit(ct.Scores([0.2, 0.7]), [0, 1])
    named = set(re.findall(r"\w+", str(refusal.value)))
    assert {row.name for row in _registry.accepting_scores()} <= named
    assert len(_registry.accepting_scores()) == 33


def test_the_scores_docstring_names_every_acceptor_and_every_class_wise_metric():
    doc = ct.Scores.__doc__
    for row in _registry.accepting_scores():
        assert f":func:`~calibration_toolbox.{row.name}`" in doc, row.name
    for row in _registry.class_wise():
        assert f"``{row.name}``" in doc, row.name


def test_the_class_wise_scores_refusal_names_the_registry_metrics():
    with pytest.raises(ValueError, match=r"need a \(N, K\)") as refusal:
        ct.GCE(ct.Scores([0.2, 0.7]), [0, 1], class_conditional=True)
    named = set(re.findall(r"\w+", str(refusal.value)))
    assert {row.name for row in _registry.class_wise() if row.binned} <= named
    assert {row.name for row in _registry.accepting_scores() if row.settings} <= named


def test_the_dask_text_names_every_metric_that_runs_on_dask():
    named = set(re.findall(r"\w+", _arrays.STREAMING))
    assert {row.name for row in _registry.on_dask()} <= named
    assert not {row.name for row in _registry.public() if not row.dask} & named


def test_the_command_line_names_every_row_with_a_command_line_name():
    names = {row.command_line for row in _registry.command_line()} - {"Top<r>CE"}
    assert set(cli_metrics.METRICS) == names
    for row in _registry.command_line():
        name = row.command_line.replace("<r>", "3")
        metrics = cli_metrics.parse_metrics(name.lower())
        terms = cli_metrics.TERM_METRICS.get(row.command_line)
        if terms is not None:  # a multi-valued metric is reported as one name per term
            assert metrics == terms
            metric = cli_metrics.METRICS[row.command_line]
        else:
            (metric,) = metrics
        assert metric.function is row.function and metric.binned == row.binned
        assert metric.class_wise == row.class_wise and metric.groups == row.groups
        assert metric.streamed == (row.stream.name if row.stream else None)
