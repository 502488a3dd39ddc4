"""Warnings that point at the user's line, not at a line inside this package.

A hand-counted ``stacklevel`` is right only for the call path it was counted on: a method
reached through a wrapper, a base class or a thread points one or two frames off, inside
the library.  :func:`warn` walks the stack instead and attributes the warning to the first
frame outside ``calibration_toolbox`` (tests of the package itself included, as users).
"""

from __future__ import annotations

import os
import sys
import warnings

from calibration_toolbox._errors import API_WORDS, Text

__all__ = ["ProbabilitiesAsLogitsWarning", "UncalibratedBestWarning", "warn"]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside the package, seen from :func:`warn`."""
    frame = sys._getframe(2)  # the caller of `warn`
    level = 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
        level += 1
    return level


class ProbabilitiesAsLogitsWarning(UserWarning):
    """Arrays taken as logits whose every row is a probability vector (or 1-D in [0, 1]).

    One category for the metrics' ``logits=True`` and the recalibrators' fits, so that a
    caller that has warned of it once (the command line, for a file) can leave out the rest.
    """


class UncalibratedBestWarning(UserWarning):
    """The method chosen by cross-validation does not beat the uncalibrated predictions.

    Issued by :func:`~calibration_toolbox.select_recalibrator` (and so by
    ``report --method auto``) when the best method's mean held-out score is not below the
    uncalibrated one by more than the best method's spread over the folds.
    """


def warn(message: str | Text, category: type[Warning] = UserWarning) -> None:
    """Issue ``message`` attributed to the first caller outside the package.

    A :class:`~calibration_toolbox._errors.Text` is issued in the API's words, the warning
    keeping it as its ``text`` (so that the command line renders it in its own words).

    Examples
    --------
    >>> import warnings
    >>> from calibration_toolbox._warnings import warn
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn("the optimum lies at infinity")
    >>> caught[0].filename.endswith("_warnings.py")
    False
    """
    if isinstance(message, Text):
        warning = category(message.render(API_WORDS))
        warning.text = message  # type: ignore[attr-defined]
        warnings.warn(warning, stacklevel=_user_stacklevel())
    else:
        warnings.warn(message, category, stacklevel=_user_stacklevel())
