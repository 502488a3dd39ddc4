"""The command line's words for the API's, and the warnings of a report by what they concern.

:func:`in_cli_words` renders a message of the library (an input error, a warning issued with
a template) in the command line's words (:data:`CLI_WORDS`: ``--prob-key`` for ``prob_key``,
``--logits`` for ``logits=True``), on stderr and in the report alike.
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

from calibration_toolbox._atomic import OutputError
from calibration_toolbox._errors import Word, Words, structured_text

__all__ = ["CLI_WORDS", "Warned", "in_cli_words"]

CLI_WORDS = Words(
    {
        "logits=True": "--logits",
        "logits_flag": "--logits",
        "renormalize=True": "--renormalize",
        "renormalize_flag": "--renormalize",
        "prob_key": "--prob-key",
        "labels_key": "--labels-key",
        "labels_path": "--labels",
        "pass_classes": "Pass --classes (or --classes-file)",
        "classes_example": "--classes cat,dog",
        "classes": "--classes",
        "prob_column": "--prob-column",
        "labels_column": "--labels-column",
        "pred_column": "--pred-column",
        "pass_scores": "pass --scores",
        "multilabel_reader": "--multilabel",
        "without_multilabel": "without --multilabel",
        "sep": "--sep",
        "bins": "--bins",
        "path": "the file",
        "prob": "the predictions array",
        "Scores": Word("the scores", plural=True),
        "without_scores": "without --scores",
        "with_scores": "with --scores",
        "X": "the predictions array",
        "labels": Word("the labels", plural=True),
        "y": Word("the labels", plural=True),
    },
    "{}",
)
"""The command line's words for the API's: its options, and the file's arrays by what they hold."""


def in_cli_words(caught: BaseException | str) -> str:
    """One line in the command line's words: ``--prob-key`` for `prob_key`, and so on.

    An input error, or a warning issued with a :class:`~calibration_toolbox._errors.Text`,
    is rendered from its template in :data:`CLI_WORDS`; any other text (NumPy's, the
    command line's own) is shown as it is, on one line.
    """
    text = None if isinstance(caught, str) else structured_text(caught)
    if text is not None:
        line = text.render(CLI_WORDS)
    elif isinstance(caught, OutputError):
        line = f"cannot write {caught.filename}: {caught.strerror}."
    elif isinstance(caught, OSError) and caught.strerror and caught.filename:
        line = f"cannot read {caught.filename}: {caught.strerror}."
    else:
        line = str(caught)
    return " ".join(line.split())


class Warned:
    """The warnings of one report: each method's (by name), and the file's (the rest).

    Examples
    --------
    >>> import warnings
    >>> from calibration_toolbox._errors import Text
    >>> from calibration_toolbox._warnings import warn
    >>> warned = Warned()
    >>> with warnings.catch_warnings(record=True) as shown:
    ...     warnings.simplefilter("always")
    ...     with warned.of_file():
    ...         warn(Text("{prob} looks like logits"))
    ...         with warned.method("vector"):
    ...             warn("vector scaling did not converge")
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
