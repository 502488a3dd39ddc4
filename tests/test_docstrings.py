"""The rendered docstrings of the public API, on every Python version.

Python 3.13 strips the indentation of docstrings at compile time; the shared fragments
(``calibration_toolbox._docstrings.with_fragments``) must be filled in there as well as on
3.10-3.12, and every metric's ``help()`` must show its Parameters section.
"""

import importlib
import inspect
import re

import pytest

import calibration_toolbox
from calibration_toolbox import metrics
from calibration_toolbox._docstrings import with_fragments

PUBLIC_MODULES = [
    "calibration_toolbox",
    "calibration_toolbox.binning",
    "calibration_toolbox.datasets",
    "calibration_toolbox.io",
    "calibration_toolbox.metrics",
    "calibration_toolbox.metrics.cumulative",
    "calibration_toolbox.metrics.decomposition",
    "calibration_toolbox.metrics.gce",
    "calibration_toolbox.metrics.kernel",
    "calibration_toolbox.metrics.scoring",
    "calibration_toolbox.metrics.smooth",
    "calibration_toolbox.plot",
    "calibration_toolbox.recalibration",
    "calibration_toolbox.scores",
    "calibration_toolbox.stats",
    "calibration_toolbox.streaming",
]


def _public_names(module):
    return getattr(module, "__all__", [name for name in vars(module) if not name.startswith("_")])


def _public_callables():
    """Every public function and class of the public modules, and the public methods of the
    classes, each once: ``{qualified name: object}``."""
    found = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in _public_names(module):
            value = getattr(module, name)
            if not callable(value) or not getattr(value, "__module__", "").startswith(
                "calibration_toolbox"
            ):
                continue
            found.setdefault(f"{value.__module__}.{value.__qualname__}", value)
            if inspect.isclass(value):
                for member_name, member in vars(value).items():
                    if callable(member) and not member_name.startswith("_"):
                        found.setdefault(f"{value.__module__}.{member.__qualname__}", member)
    return found


PUBLIC_CALLABLES = _public_callables()
METRICS = [
    value for value in map(metrics.__dict__.get, metrics.__all__) if inspect.isfunction(value)
]
# A line that holds only a token: a fragment of `with_fragments` never filled in.
PLACEHOLDER = re.compile(r"^[ \t]*\{\w+\}[ \t]*$", re.MULTILINE)


def _sections(doc: str) -> dict[str, str]:
    """The numpydoc sections of a docstring: ``{title: body}``, the body without indentation."""
    lines = inspect.cleandoc(doc).splitlines()
    titles = [
        index
        for index in range(len(lines) - 1)
        if lines[index].strip()
        and not lines[index].startswith(" ")
        and re.fullmatch(r"-+", lines[index + 1])
        and len(lines[index + 1]) == len(lines[index])
    ]
    ends = [*titles[1:], len(lines)]
    return {
        lines[start]: "\n".join(lines[start + 2 : end])
        for start, end in zip(titles, ends, strict=True)
    }


def _documented_parameters(section: str) -> set[str]:
    """The names a Parameters section describes (``a, b : int`` describes two)."""
    names = set()
    for line in section.splitlines():
        match = re.fullmatch(r"(\*{0,2}\w+(?:, \*{0,2}\w+)*)(?: : .*)?", line)
        if match:
            names.update(name.lstrip("*") for name in match[1].split(", "))
    return names


def test_the_public_api_is_found():
    # the collection is what the tests below check: it must hold the named metrics
    names = {value.__name__ for value in PUBLIC_CALLABLES.values()}
    assert {"ECE", "GCE", "SCE", "MCE", "KSCE", "bootstrap", "TemperatureScaling"} <= names
    assert len(METRICS) >= 20
    assert set(calibration_toolbox.__all__) - {"__version__"} <= names | {"stats"}


@pytest.mark.parametrize("name", sorted(PUBLIC_CALLABLES))
def test_no_placeholder_is_left(name):
    doc = PUBLIC_CALLABLES[name].__doc__ or ""
    assert not PLACEHOLDER.findall(doc)


@pytest.mark.parametrize("metric", METRICS, ids=lambda metric: metric.__name__)
def test_every_metric_documents_its_parameters_and_return_value(metric):
    sections = _sections(metric.__doc__)
    assert {"Parameters", "Returns", "Examples"} <= set(sections), list(sections)
    documented = _documented_parameters(sections["Parameters"])
    assert set(inspect.signature(metric).parameters) <= documented


@pytest.mark.parametrize("indent", ["", "    ", "        "])
def test_fragments_are_indented_as_the_token_line(indent):
    # as a docstring is written (indented source, <= 3.12) or compiled by 3.13 (stripped)
    fragment = "    prob : array-like\n        The predictions.\n\n        More.\n"
    doc = f"Summary.\n\n{indent}Parameters\n{indent}----------\n{indent}{{prob}}\n{indent}"

    def function():
        pass

    function.__doc__ = doc
    filled = with_fragments({"{prob}": fragment})(function)
    assert filled is function
    assert function.__doc__ == (
        f"Summary.\n\n{indent}Parameters\n{indent}----------\n"
        f"{indent}prob : array-like\n{indent}    The predictions.\n\n{indent}    More.\n{indent}"
    )


def test_a_token_inside_a_line_and_a_missing_docstring_are_left_alone():
    def function():
        """Say {prob} here."""

    with_fragments({"{prob}": "    prob : array-like\n"})(function)
    assert function.__doc__ == "Say {prob} here."
    function.__doc__ = None
    assert with_fragments({"{prob}": "text\n"})(function).__doc__ is None


@pytest.mark.parametrize("indent", ["", "        "])
def test_tokens_are_filled_in_order_and_other_tokens_are_left_alone(indent):
    # the one pattern of every token line: a fragment filled in may hold a later token
    # (indented source as <= 3.12 keeps it, or stripped as 3.13 compiles it)
    def function():
        pass

    function.__doc__ = f"Summary.\n\n{indent}{{first}}\n{indent}{{unknown}}\n{indent}"
    with_fragments({"{first}": "{second}\n", "{second}": "done\n"})(function)
    assert function.__doc__ == f"Summary.\n\n{indent}done\n{indent}{{unknown}}\n{indent}"


@pytest.mark.parametrize("token", ["prob", "{two words}", "{prob"])
def test_a_token_is_a_name_in_braces(token):
    with pytest.raises(ValueError, match="docstring tokens are"):
        with_fragments({token: "text\n"})
