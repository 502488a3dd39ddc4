"""The command line's words for the API's, and the warnings of a report by what they concern.

:func:`in_cli_words` turns a message of the library (``prob_key``, ``logits=True``) into the
command line's (``--prob-key``, ``--logits``), on stderr and in the report alike.
:class:`Warned` records the warnings of a report (``warnings.catch_warnings(record=True)``)
where they arise: around each method's fit and application (the method's), around the
checks of the file (the file's, even inside a method's fit that reads the file), and around
the whole report (the rest: the file's).  Each recorded warning is issued again as it was, so
that stderr shows every one as before, one line each.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator

__all__ = ["Warned", "in_cli_words"]

# The API's words in a message -> the command line's (backticks mark an argument's name).
_CLI_WORDS = (
    ("`logits=True`", "--logits"),
    ("logits=True", "--logits"),
    ("renormalize=True", "--renormalize"),
    ("`prob_key`", "--prob-key"),
    ("`labels_key`", "--labels-key"),
    ("`labels_path`", "--labels"),
    ("Pass `classes` (`--classes` on the command line)", "Pass --classes (or --classes-file)"),
    ("classes=['cat', 'dog']", "--classes cat,dog"),
    ("`classes`", "--classes"),
    ("`prob_column`", "--prob-column"),
    ("`labels_column`", "--labels-column"),
    ("`pred_column`", "--pred-column"),
    ("pass `scores=True` (`--scores` on the command line)", "pass --scores"),
    ("`sep`", "--sep"),
    ("`bins`", "--bins"),
    ("`path`", "the file"),
    ("`prob`", "the predictions array"),
    ("`Scores`", "the scores"),
    ("without Scores", "without --scores"),
    ("with Scores", "with --scores"),
    ("`X`", "the predictions array"),
    ("`labels`", "the labels"),
    ("`y`", "the labels"),
    ("`", ""),
)


def in_cli_words(error: BaseException | str) -> str:
    """One line in the command line's words: ``--prob-key`` for `prob_key`, and so on."""
    if isinstance(error, OSError) and error.strerror and error.filename:
        text = f"cannot read {error.filename}: {error.strerror}."
    else:
        text = str(error)
    for api_word, cli_word in _CLI_WORDS:
        text = text.replace(api_word, cli_word)
    return " ".join(text.split())


class Warned:
    """The warnings of one report: each method's (by name), and the file's (the rest).

    Examples
    --------
    >>> import warnings
    >>> warned = Warned()
    >>> with warnings.catch_warnings(record=True) as shown:
    ...     warnings.simplefilter("always")
    ...     with warned.of_file():
    ...         warnings.warn("`prob` looks like logits")
    ...         with warned.method("vector"):
    ...             warnings.warn("vector scaling did not converge")
    >>> warned.file, warned.methods
    (['the predictions array looks like logits'], {'vector': ['vector scaling did not converge']})
    >>> len(shown)  # each issued again once, for stderr
    2
    """

    def __init__(self) -> None:
        self.file: list[str] = []
        self.methods: dict[str, list[str]] = {}
        # The warnings an inner block recorded and issued again: the enclosing blocks record
        # them too, and leave them to it (they stay alive in its records: their ids hold).
        self._claimed: set[int] = set()
        self._depth = 0

    def of(self, name: str) -> list[str]:
        """The warnings recorded for the method ``name`` (none: an empty list)."""
        return self.methods.get(name, [])

    def method(self, name: str) -> contextlib.AbstractContextManager[None]:
        """Record the warnings of the block as the method ``name``'s."""
        return self._block(self.methods.setdefault(name, []))

    def of_file(self) -> contextlib.AbstractContextManager[None]:
        """Record the warnings of the block as the file's.

        Around the whole report it records what no inner block claimed; inside a method's
        block it claims the file's checks from it.
        """
        return self._block(self.file)

    @contextlib.contextmanager
    def _block(self, messages: list[str]) -> Iterator[None]:
        self._depth += 1
        try:
            with _recorded() as records:
                yield
        finally:
            self._depth -= 1
        for record in records:
            if id(record.message) not in self._claimed:
                _add(messages, record)
                self._claimed.add(id(record.message))
            _issue(record)
        if self._depth == 0:
            self._claimed.clear()


@contextlib.contextmanager
def _recorded() -> Iterator[list[warnings.WarningMessage]]:
    """The warnings of the block, as the filters in force let them through (none shown)."""
    with warnings.catch_warnings(record=True) as records:
        yield records


def _add(messages: list[str], record: warnings.WarningMessage) -> None:
    text = in_cli_words(record.message)
    if text not in messages:
        messages.append(text)


def _issue(record: warnings.WarningMessage) -> None:
    """Issue a recorded warning again, as it was (shown by whatever shows warnings now)."""
    warnings.warn_explicit(
        record.message, record.category, record.filename, record.lineno, source=record.source
    )
