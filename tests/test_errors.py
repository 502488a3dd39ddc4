"""Structured input errors: the argument and the row they carry, and their text in two tables.

The library's text (``str(error)``) is the API's words; the command line renders the same
error in its own (:data:`calibration_toolbox.cli._warned.CLI_WORDS`).  No module edits the
text of an exception or a warning after it is made: the last test walks the package.
"""

from __future__ import annotations

import ast
import pathlib
import pickle
import string
import warnings

import numpy as np
import pytest

import calibration_toolbox
from calibration_toolbox import ECE, TemperatureScaling, negative_log_likelihood
from calibration_toolbox._errors import (
    API_WORDS,
    InputError,
    InputTypeError,
    Name,
    Text,
    Word,
    Words,
    within,
)
from calibration_toolbox._validation import check_bins, check_predictions, labels_from_file
from calibration_toolbox._warnings import ProbabilitiesAsLogitsWarning
from calibration_toolbox.cli._warned import CLI_WORDS, in_cli_words
from calibration_toolbox.io import iter_predictions, read_predictions

PACKAGE = pathlib.Path(calibration_toolbox.__file__).parent


def _raised(call, *args, **kwargs) -> Exception:
    with pytest.raises((ValueError, TypeError)) as caught:
        call(*args, **kwargs)
    return caught.value


def test_the_text_is_the_template_in_the_words_of_a_table():
    error = InputError(
        "{argument:holds} {value!r} (row {row}); pass {logits=True}.",
        argument="labels",
        row=3,
        value="emu",
    )
    assert isinstance(error, ValueError)
    assert (error.argument, error.row) == ("labels", 3)
    assert str(error) == "`labels` holds 'emu' (row 3); pass `logits=True`."
    words = Words({"labels": Word("the labels", plural=True), "logits=True": "--logits"}, "{}")
    assert error.render(words) == "the labels hold 'emu' (row 3); pass --logits."


def test_a_value_is_never_read_as_part_of_the_template():
    error = InputTypeError("{argument} got {value}.", argument="bins", value="{prob} `x` {}")
    assert isinstance(error, TypeError)
    assert str(error) == "`bins` got {prob} `x` {}."
    assert error.render(CLI_WORDS) == "--bins got {prob} `x` {}."


def test_a_name_given_as_a_value_is_rendered_by_the_table():
    text = Text("pass {call}", fields={"call": Name("np.log(p)")})
    assert text.render(API_WORDS) == "pass `np.log(p)`"
    assert text.render(CLI_WORDS) == "pass np.log(p)"


def test_a_context_and_a_shift_keep_the_argument_and_the_row():
    error = InputError("{argument} must be finite; row {row} holds NaN.", argument="prob", row=2)
    placed = error.within("{file}: ", file="p.npz").shifted(1000)
    assert type(placed) is InputError
    assert (placed.argument, placed.row) == ("prob", 1002)
    assert str(placed) == "p.npz: `prob` must be finite; row 1002 holds NaN."
    expected = "p.npz: the predictions array must be finite; row 1002 holds NaN."
    assert in_cli_words(placed) == expected
    assert str(error) == "`prob` must be finite; row 2 holds NaN."  # the original unchanged


def test_a_plain_error_in_a_context_keeps_its_text():
    placed = within(TypeError("`x` is odd"), "{file}: ", file="p.npz")
    assert type(placed) is InputTypeError and placed.argument is None
    assert in_cli_words(placed) == "p.npz: `x` is odd"


def test_an_input_error_survives_pickling():
    error = InputError("{argument} must be 1-D; got {shape}.", argument="labels", shape=(2, 3))
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is InputError and str(again) == str(error)
    assert again.render(CLI_WORDS) == "the labels must be 1-D; got (2, 3)."


@pytest.mark.parametrize(
    ("call", "argument", "row", "cli_text"),
    [
        (
            lambda: check_predictions(np.array([[0.5, 0.5], [np.nan, 1.0]]), [0, 1]),
            "prob",
            1,
            "the predictions array must not contain NaN; row 1 does.",
        ),
        (
            lambda: check_predictions(np.array([[0.5, 0.5], [0.2, 0.7]]), [0, 1]),
            "prob",
            1,
            "rows of the predictions array must sum to 1",
        ),
        (
            lambda: check_predictions(np.array([[0.5, 0.5], [0.2, 0.8]]), [0, 2]),
            "labels",
            None,
            "the labels must lie in [0, 1] for 2 classes; got 2.",
        ),
        (
            lambda: labels_from_file(np.array(["cat", "emu"]), ["cat", "dog"], 2, "pets.csv"),
            "labels",
            1,
            "pets.csv: the labels hold 'emu' (row 1), which is not in --classes ('cat', 'dog').",
        ),
        (
            lambda: labels_from_file(np.array(["cat", "dog"]), None, 2, "pets.csv"),
            "labels",
            None,
            "Pass --classes (or --classes-file): the class names",
        ),
        (lambda: check_bins(0), "bins", None, "--bins must be an integer >= 1"),
    ],
)
def test_the_label_and_probability_checks_name_argument_and_row(call, argument, row, cli_text):
    error = _raised(call)
    assert (error.argument, error.row) == (argument, row)
    assert cli_text in error.render(CLI_WORDS)


def _write(folder: pathlib.Path, name: str, text: str) -> pathlib.Path:
    path = folder / name
    path.write_text(text)
    return path


def test_each_reader_names_the_argument_at_fault(tmp_path):
    npz = tmp_path / "p.npz"
    np.savez(npz, probs=np.full((2, 2), 0.5), labels=[0, 1])
    csv = _write(tmp_path, "p.csv", "p0,p1,label\n0.5,0.5,0\n")
    jsonl = _write(tmp_path, "p.jsonl", '{"a": 0.5, "b": 0.5, "label": 0}\n')
    cases = [
        (read_predictions, (npz,), {"prob_key": "logits"}, "prob_key", "--prob-key 'logits'"),
        (read_predictions, (csv,), {"sep": ";;"}, "sep", "--sep must be one character"),
        (read_predictions, (csv,), {"prob_column": "q"}, "prob_column", "--prob-column 'q'"),
        (read_predictions, (npz,), {"sep": ","}, "sep", "--sep is only for"),
        (read_predictions, (jsonl,), {"prob_column": "c"}, "prob_column", "--prob-column 'c'"),
        (read_predictions, (tmp_path / "p.json",), {}, "path", "the file must end in .npz"),
    ]
    for reader, args, options, argument, cli_text in cases:
        error = _raised(reader, *args, **options)
        assert error.argument == argument, (options, str(error))
        assert cli_text in error.render(CLI_WORDS), error.render(CLI_WORDS)


def _pets(folder: pathlib.Path, suffix: str) -> pathlib.Path:
    """Three rows whose labels are names, the last one ('emu', row 2) not a class."""
    names = ["cat", "dog", "emu"]
    path = folder / f"pets{suffix}"
    if suffix == ".npz":
        np.savez(path, probs=np.full((3, 2), 0.5), labels=np.array(names))
    elif suffix == ".csv":
        path.write_text("p_cat,p_dog,label\n" + "".join(f"0.5,0.5,{n}\n" for n in names))
    elif suffix == ".jsonl":
        rows = "".join(f'{{"probs": [0.5, 0.5], "label": "{n}"}}\n' for n in names)
        path.write_text(rows)
    else:
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"p_cat": [0.5] * 3, "p_dog": [0.5] * 3, "label": names}), path)
    return path


@pytest.mark.parametrize("suffix", [".npz", ".csv", ".jsonl", ".parquet"])
def test_each_reader_names_the_labels_and_the_row_of_a_name_not_in_classes(tmp_path, suffix):
    path = _pets(tmp_path, suffix)
    columns = {"prob_column": ["p_cat", "p_dog"]} if suffix == ".parquet" else {}
    error = _raised(read_predictions, path, classes=["cat", "dog"], **columns)
    assert (error.argument, error.row) == ("labels", 2)
    assert "`labels` holds 'emu' (row 2), which is not in `classes`" in str(error)
    assert "the labels hold 'emu' (row 2), which is not in --classes" in in_cli_words(error)
    # Read in blocks of two rows, the row is still the file's.
    with pytest.raises(ValueError) as caught:
        list(iter_predictions(path, classes=["cat", "dog"], block_rows=2, **columns))
    assert (caught.value.argument, caught.value.row) == ("labels", 2)


def test_the_parquet_reader_names_the_argument_at_fault(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"p0": [0.5], "p1": [0.5], "label": [0]}), path)
    error = _raised(read_predictions, path, prob_column="q")
    assert error.argument == "prob_column"
    assert "--prob-column 'q' is not a column of" in error.render(CLI_WORDS)


def test_a_warning_issued_with_a_template_renders_in_both_tables():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        negative_log_likelihood(np.array([[0.3, 0.7], [0.6, 0.4]]), [1, 0], logits=True)
    (record,) = caught
    assert issubclass(record.category, ProbabilitiesAsLogitsWarning)
    assert str(record.message).startswith("`prob` was passed with logits=True, but every row")
    assert in_cli_words(record.message).startswith(
        "the predictions array was passed with --logits, but every row"
    )


def test_a_fit_warning_names_the_code_to_run_in_each_words():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        TemperatureScaling().fit(np.array([[0.3, 0.7], [0.6, 0.4]]), [1, 0])
    (record,) = [r for r in caught if issubclass(r.category, ProbabilitiesAsLogitsWarning)]
    assert "pass the log-probabilities `np.log(p)`" in str(record.message)
    assert "the predictions array is taken as logits" in in_cli_words(record.message)
    assert "pass the log-probabilities np.log(p) (logits" in in_cli_words(record.message)


def test_a_metric_error_is_the_same_text_as_before():
    error = _raised(ECE, np.array([[0.5, 0.5]]), [0], bins=0)
    assert str(error).startswith("`bins` must be an integer >= 1")
    assert error.argument == "bins"


# -- no module edits the text of an exception or a warning ---------------------------------

_TEXT_NAMES = {"message", "error", "exc", "warning", "caught"}


def _edits_a_message(call: ast.Call, caught_names: set[str]) -> bool:
    """Whether ``call`` is ``<text>.replace(...)`` or ``re.sub``/``pattern.sub`` on a text
    that comes from an exception or a warning (a name bound by ``except ... as``, ``str()``
    of anything, ``.message``/``.args``, or a name such as ``message``)."""
    function = call.func
    if not isinstance(function, ast.Attribute):
        return False
    if function.attr == "replace":
        subjects = [function.value]
    elif function.attr == "sub":
        is_re = isinstance(function.value, ast.Name) and function.value.id == "re"
        subjects = call.args[2:3] if is_re else call.args[1:2]
    else:
        return False
    for subject in subjects:
        for node in ast.walk(subject):
            if isinstance(node, ast.Name) and node.id in caught_names | _TEXT_NAMES:
                return True
            if isinstance(node, ast.Attribute) and node.attr in ("message", "args", "strerror"):
                return True
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "str":
                return True
    return False


def _message_edits(tree: ast.AST) -> list[int]:
    caught_names = {
        node.name for node in ast.walk(tree) if isinstance(node, ast.ExceptHandler) and node.name
    }
    return sorted(
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and _edits_a_message(node, caught_names)
    )


def test_the_check_finds_an_edit_of_a_message():
    source = (
        "try:\n    f()\nexcept ValueError as problem:\n"
        "    raise ValueError(str(problem).replace('`', ''))\n"
        "text = _ROW.sub(lambda m: m[0], message)\n"
    )
    assert _message_edits(ast.parse(source)) == [4, 5]


def test_no_module_edits_the_text_of_an_exception_or_a_warning():
    edits = {
        str(path.relative_to(PACKAGE)): lines
        for path in sorted(PACKAGE.rglob("*.py"))
        if (lines := _message_edits(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert edits == {}


def _templates() -> list[tuple[str, int, str]]:
    """``(module, line, template)`` of every literal template of an input error or a Text."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) in ("InputError", "InputTypeError", "Text")
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                found.append((str(path.relative_to(PACKAGE)), node.lineno, node.args[0].value))
    return found


def test_every_template_names_its_words_through_the_table():
    templates = _templates()
    assert len(templates) > 100
    # A backtick in a template would reach the command line as it is.
    assert [(module, line) for module, line, text in templates if "`" in text] == []
    for module, line, text in templates:
        names = [name for _, name, _, _ in string.Formatter().parse(text) if name is not None]
        # An attribute or an index ("{report['results']}") is not a name a table can hold.
        assert all(name and not set(name) & set(".[") for name in names), (module, line)
