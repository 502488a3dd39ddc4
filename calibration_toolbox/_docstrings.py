"""Docstring fragments shared by several public functions, filled in once at import."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping

from calibration_toolbox._typing import Function


def with_fragments(fragments: Mapping[str, str]) -> Callable[[Function], Function]:
    """A decorator replacing each line that holds only a token by ``fragments[token]``.

    The fragments are numpydoc text indented for their section; each one is re-indented to
    the indentation of the token's line.  So the result does not depend on whether the
    docstring kept its source indentation (Python <= 3.12) or had it stripped at compile
    time (3.13+).  A token that a docstring does not hold is left alone, and the decorated
    function is returned itself, with its signature and type.
    """
    replacements = [
        (re.compile(rf"^([ \t]*){re.escape(token)}[ \t]*\n", re.MULTILINE), textwrap.dedent(text))
        for token, text in fragments.items()
    ]

    def fill(function: Function) -> Function:
        doc = function.__doc__
        if doc is None:  # docstrings removed (python -OO)
            return function
        for line, text in replacements:
            doc = line.sub(_indented(text), doc)
        function.__doc__ = doc
        return function

    return fill


def _indented(text: str) -> Callable[[re.Match[str]], str]:
    """The replacement of a token's line: ``text`` indented as that line is."""
    return lambda line: textwrap.indent(text, line[1])
