"""Docstring fragments shared by several public functions, filled in once at import."""

from __future__ import annotations

from collections.abc import Callable, Mapping


def with_fragments(fragments: Mapping[str, str]) -> Callable:
    """A decorator replacing each line ``"    {token}"`` of a docstring by ``fragments[token]``.

    The fragments are numpydoc text already indented for their section; a token that a
    docstring does not hold is left alone.
    """

    def fill(function: Callable) -> Callable:
        doc = function.__doc__
        for token, text in fragments.items():
            doc = doc.replace(f"    {token}\n", text)
        function.__doc__ = doc
        return function

    return fill
