"""Input errors and warnings that know the argument at fault and the row, and say it in words.

An :class:`InputError` (a ``ValueError``) or :class:`InputTypeError` (a ``TypeError``) keeps
its message as a :class:`Text`: a template (``str.format`` syntax) whose names are either its
fields (the values: ``{shape}``, ``{value!r}``), ``{argument}`` and ``{row}`` (the argument at
fault and the 0-based row, kept on the error as :attr:`~InputError.argument` and
:attr:`~InputError.row`), or the names of arguments and options (``{prob}``, ``{logits=True}``),
rendered by a word table.  ``str(error)`` is the text in :data:`API_WORDS` (```prob```, what a
caller of the functions reads); ``error.render(words)`` is the text in another table's words
(the command line's: ``the predictions array``, ``--logits``).  A word agrees with its verb:
``{argument:holds}`` is ```labels` holds`` in the API's words and ``the labels hold`` where the
table makes the labels plural.

No text is ever edited after it is made: a message is re-rendered from its template, and a
context (the file, the rows of a chunk) is a template around the inner one
(:meth:`InputError.within`).

Examples
--------
>>> from calibration_toolbox._errors import InputError, Word, Words
>>> error = InputError(
...     "{argument:holds} {value!r} (row {row}), which is not in {classes}.",
...     argument="labels",
...     row=1,
...     value="emu",
... )
>>> str(error)
"`labels` holds 'emu' (row 1), which is not in `classes`."
>>> error.argument, error.row
('labels', 1)
>>> cli = Words({"labels": Word("the labels", plural=True), "classes": "--classes"}, "{}")
>>> error.within("{file}: ", file="pets.csv").shifted(10).render(cli)
"pets.csv: the labels hold 'emu' (row 11), which is not in --classes."
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

__all__ = [
    "API_WORDS",
    "InputError",
    "InputTypeError",
    "Name",
    "Text",
    "Word",
    "Words",
    "as_value_error",
    "listed",
    "structured_text",
    "within",
]

# A verb's plural form, for a word the table makes plural (``{argument:holds}``).
_PLURAL_VERBS = {
    "holds": "hold",
    "has": "have",
    "is": "are",
    "was": "were",
    "does": "do",
    "sums": "sum",
    "looks": "look",
    "contains": "contain",
}


def listed(names: list[str]) -> str:
    """Names in a sentence: ``'a'``, ``'a and b'``, ``'a, b and c'``."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


@dataclasses.dataclass(frozen=True)
class Word:
    """The words of one argument or option in a message, and whether they are plural."""

    text: str
    plural: bool = False

    def __format__(self, verb: str) -> str:
        """The words; with a verb (``{labels:holds}``), followed by the verb in agreement."""
        if not verb:
            return self.text
        return f"{self.text} {_PLURAL_VERBS[verb] if self.plural else verb}"


class Words:
    """A word table: the name of an argument or option -> its :class:`Word` in the text.

    A name the table does not hold is written as ``default.format(name)``.
    """

    def __init__(self, table: Mapping[str, str | Word], default: str):
        self._table = {
            name: word if isinstance(word, Word) else Word(word) for name, word in table.items()
        }
        self._default = default

    def __getitem__(self, name: str) -> Word:
        """The words of ``name``."""
        return self._table.get(name, Word(self._default.format(name)))


API_WORDS = Words(
    {
        # What the API writes without backticks (a flag in a sentence; a worked example).
        "logits_flag": "logits=True",
        "renormalize_flag": "renormalize=True",
        "with_scores": "with Scores",
        "without_scores": "without Scores",
        "classes_example": "classes=['cat', 'dog']",
        "pass_scores": "pass `scores=True` (`--scores` on the command line)",
        "pass_classes": "Pass `classes` (`--classes` on the command line)",
        "multilabel_reader": "`read_multilabel` (`--multilabel` on the command line)",
        "without_multilabel": "with `load_predictions` (without `--multilabel`)",
    },
    "`{}`",
)
"""The API's words: each argument's name between backticks (```prob```, ```logits=True```)."""


class Name(str):
    """A field's value that is a name (of an argument, an option, a call): rendered by the table.

    ``Text("{what} ...", what=Name("np.log(p)"))`` is ```np.log(p)` ...`` in the API's words
    and ``np.log(p) ...`` in a table that writes unknown names bare.
    """


@dataclasses.dataclass(frozen=True)
class Text:
    """A message as its template and fields, rendered in the words of a :class:`Words`."""

    template: str
    argument: str | None = None
    row: int | None = None
    fields: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def render(self, words: Words) -> str:
        """The message in ``words``."""
        return self.template.format_map(_Names(self, words))

    def shifted(self, first_row: int) -> Text:
        """The text, its row (and those of the texts inside it) counted from ``first_row``."""
        fields = {
            name: value.shifted(first_row) if isinstance(value, Text) else value
            for name, value in self.fields.items()
        }
        row = None if self.row is None else self.row + first_row
        return dataclasses.replace(self, row=row, fields=fields)

    def innermost(self) -> Text:
        """The text this one gives context to (itself when it is no context)."""
        inner = self.fields.get("inner")
        return inner.innermost() if isinstance(inner, Text) else self


class _Names(dict[str, Any]):
    """The names of a template: its fields, ``argument``, ``row``, and the table's words."""

    def __init__(self, text: Text, words: Words):
        super().__init__({name: _rendered(value, words) for name, value in text.fields.items()})
        if text.argument is not None:
            self["argument"] = words[text.argument]
        if text.row is not None:
            self["row"] = text.row
        self._words = words

    def __missing__(self, name: str) -> Word:
        return self._words[name]


def _rendered(value: Any, words: Words) -> Any:
    """A field's value as the template shows it: a text or a name in ``words``."""
    if isinstance(value, Text):
        return value.render(words)
    if isinstance(value, Name):
        return words[value]
    return value


_Error = TypeVar("_Error", bound="_Structured")


class _Structured:
    """What the two input errors share: the :class:`Text`, the argument and the row."""

    text: Text

    def _set_text(self, text: Text) -> None:
        self.text = text
        self.args = (text.render(API_WORDS),)

    @property
    def argument(self) -> str | None:
        """The API's name of the argument at fault (None: no single argument)."""
        return self.text.innermost().argument

    @property
    def row(self) -> int | None:
        """The 0-based row at fault (None: no single row)."""
        return self.text.innermost().row

    @classmethod
    def from_text(cls: type[_Error], text: Text) -> _Error:
        """The error whose message is ``text``."""
        return _remade(cls, text)

    def render(self, words: Words) -> str:
        """The message in ``words`` (``str(error)`` is the message in :data:`API_WORDS`)."""
        return self.text.render(words)

    def shifted(self: _Error, first_row: int) -> _Error:
        """The same error, its row counted from ``first_row`` (a block's row -> the file's)."""
        return _remade(type(self), self.text.shifted(first_row))

    def within(self: _Error, template: str, **fields: Any) -> _Error:
        """The same error in a context: ``template`` (``{file}: ``) before the message."""
        text = Text(template + "{inner}", fields={**fields, "inner": self.text})
        return _remade(type(self), text)

    def __reduce__(self) -> tuple[Any, ...]:
        return _remade, (type(self), self.text)


def _remade(kind: type[_Error], text: Text) -> _Error:
    """An input error of ``kind`` with the text ``text`` (also how one is unpickled)."""
    remade = kind.__new__(kind)
    remade._set_text(text)
    return remade


class InputError(_Structured, ValueError):
    """A bad input value (a ``ValueError``) that names its argument and row.

    Parameters
    ----------
    template : str
        The message, ``str.format`` syntax: ``{argument}``, ``{row}``, the ``fields`` by name,
        any other name an argument's or option's name rendered by a word table.
    argument : str, optional
        The API's name of the argument at fault.
    row : int, optional
        The 0-based row at fault.
    **fields
        The values the template names.
    """

    def __init__(
        self, template: str, *, argument: str | None = None, row: int | None = None, **fields: Any
    ):
        super().__init__()
        self._set_text(Text(template, argument, row, fields))


class InputTypeError(_Structured, TypeError):
    """An input of the wrong type (a ``TypeError``) that names its argument.

    Parameters are those of :class:`InputError`.
    """

    def __init__(
        self, template: str, *, argument: str | None = None, row: int | None = None, **fields: Any
    ):
        super().__init__()
        self._set_text(Text(template, argument, row, fields))


def structured_text(caught: BaseException) -> Text | None:
    """The :class:`Text` of an input error or of a warning issued with one; None otherwise."""
    text = getattr(caught, "text", None)
    return text if isinstance(text, Text) else None


def within(error: Exception, template: str, **fields: Any) -> Exception:
    """``error`` in a context (``template`` before its message), structured either way.

    A plain ``ValueError`` or ``TypeError`` (NumPy's, say) becomes an :class:`InputError` or
    :class:`InputTypeError` whose inner text is its message; an error of another type (a
    subclass that callers catch by name) stays of its type, its message in the API's words.
    """
    if isinstance(error, _Structured):
        return error.within(template, **fields)
    kinds = {ValueError: InputError, TypeError: InputTypeError}
    if type(error) in kinds:
        return kinds[type(error)](template + "{inner}", **fields, inner=str(error))
    text = Text(template + "{inner}", fields={**fields, "inner": str(error)})
    return type(error)(text.render(API_WORDS))


def as_value_error(error: Exception) -> ValueError:
    """``error`` as a ``ValueError``, its text kept (a wrong type read from a file: a bad file)."""
    if isinstance(error, _Structured):
        return _remade(InputError, error.text)
    return ValueError(str(error))
