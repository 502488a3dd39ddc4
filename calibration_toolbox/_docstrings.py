"""Docstring fragments shared by several public functions, filled in once at import."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping

from calibration_toolbox._typing import Function

# A line that holds only a token, ``{name}``: one pattern for every docstring and token.
_TOKEN = re.compile(r"\{\w+\}")
_TOKEN_LINE = re.compile(r"^([ \t]*)(\{\w+\})[ \t]*\n", re.MULTILINE)


def with_fragments(fragments: Mapping[str, str]) -> Callable[[Function], Function]:
    """A decorator replacing each line that holds only a token by ``fragments[token]``.

    The fragments are numpydoc text indented for their section; each one is re-indented to
    the indentation of the token's line.  So the result does not depend on whether the
    docstring kept its source indentation (Python <= 3.12) or had it stripped at compile
    time (3.13+).  A token that a docstring does not hold is left alone, and the decorated
    function is returned itself, with its signature and type.  A token is written
    ``{name}`` (anything else is a ``ValueError``).
    """
    if not all(_TOKEN.fullmatch(token) for token in fragments):
        raise ValueError(
            f"docstring tokens are {{name}}, e.g. '{{parameters}}'; got {list(fragments)}."
        )
    replacements = [(token, textwrap.dedent(text)) for token, text in fragments.items()]

    def fill(function: Function) -> Function:
        doc = function.__doc__
        if doc is None:  # docstrings removed (python -OO)
            return function
        for token, text in replacements:
            doc = _TOKEN_LINE.sub(_indented(token, text), doc)
        function.__doc__ = doc
        return function

    return fill


def _indented(token: str, text: str) -> Callable[[re.Match[str]], str]:
    """The replacement of ``token``'s line: ``text`` indented as that line is (others kept)."""
    return lambda line: textwrap.indent(text, line[1]) if line[2] == token else line[0]
