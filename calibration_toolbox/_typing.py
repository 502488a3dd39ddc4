"""Type variables of the package's decorators (a leaf: it imports nothing of the package)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

#: A decorated function: a decorator typed ``(Function) -> Function`` keeps its signature.
Function = TypeVar("Function", bound=Callable[..., Any])
