"""Spellings that were renamed or moved: the old spelling works for one more release.

Keywords (:func:`renamed`, :func:`renamed_default`, :func:`moved`), attributes
(:class:`RenamedAttribute`) and exported names (:func:`deprecated_name`, for a module's
``__getattr__``). Every warning names the new spelling and the release that removes the old
one, :data:`REMOVED_IN`.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Mapping
from typing import Any, Generic, TypeVar, overload

from sdk.errors import ConfigurationError

__all__ = [
    "REMOVED_IN",
    "RenamedAttribute",
    "deprecated_name",
    "moved",
    "renamed",
    "renamed_default",
    "warn_renamed",
]

T = TypeVar("T")

REMOVED_IN = "0.3"
"""The release that removes every spelling deprecated in 0.2 (the release after 0.1)."""


def warn_renamed(where: str, old_name: str, new_name: str, *, stacklevel: int = 3) -> None:
    """Warn that keyword ``old_name`` of ``where`` is now ``new_name`` (DeprecationWarning).

    The message names the release that removes ``old_name`` (:data:`REMOVED_IN`). The default
    ``stacklevel`` points at the line that called ``where``.
    """
    warnings.warn(
        f"{where}({old_name}=) is deprecated and removed in {REMOVED_IN}: use {new_name}=",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def renamed(where: str, old_name: str, old: T | None, new_name: str, new: T | None) -> T | None:
    """The value of keyword ``new_name``, also given under its old name ``old_name``.

    Args:
        where: The call, for the message (``"Consumer.run"``).
        old_name: The old keyword.
        old: Its value (None: not given).
        new_name: The keyword that replaced it.
        new: Its value (None: not given).

    Raises:
        ConfigurationError: Both names were given.
    """
    if old is None:
        return new
    warn_renamed(where, old_name, new_name, stacklevel=4)
    if new is not None:
        raise ConfigurationError(
            f"{new_name}: given twice (also as the deprecated {old_name})", field=new_name
        )
    return old


def renamed_default(where: str, old_name: str, old: T | None, new_name: str, new: T) -> T:
    """The value of keyword ``new_name``, which has a default, also given as ``old_name``.

    A default cannot be told from a value given, so the old name wins when it is given.

    Args:
        where: The call, for the message (``"LocalCluster.stop"``).
        old_name: The old keyword.
        old: Its value (None: not given).
        new_name: The keyword that replaced it.
        new: Its value (its default when not given).
    """
    if old is None:
        return new
    warn_renamed(where, old_name, new_name, stacklevel=4)
    return old


def moved(what: str, where: str, to: str) -> None:
    """Warn that ``what`` given to ``where`` now belongs to ``to`` (DeprecationWarning).

    The message names the release that removes the old place (:data:`REMOVED_IN`).
    """
    warnings.warn(
        f"{where}: the {what} is given to {to} now (one place on every front end); passing it "
        f"to {where} is deprecated and removed in {REMOVED_IN}",
        DeprecationWarning,
        stacklevel=3,
    )


class RenamedAttribute(Generic[T]):
    """A read-only attribute under its old name: reading it warns and reads ``new_name``.

    The warning names the release that removes the old name (:data:`REMOVED_IN`).

    Example::

        class Result:
            duration_s: float = 0.0
            seconds = RenamedAttribute[float]("duration_s")
    """

    def __init__(self, new_name: str) -> None:
        self._new = new_name
        self._old = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._old = name
        self._owner = owner.__name__

    @overload
    def __get__(self, instance: None, owner: type) -> RenamedAttribute[T]: ...

    @overload
    def __get__(self, instance: object, owner: type) -> T: ...

    def __get__(self, instance: object | None, owner: type) -> Any:
        if instance is None:
            return self
        warnings.warn(
            f"{self._owner}.{self._old} is deprecated and removed in {REMOVED_IN}: use {self._new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(instance, self._new)


def deprecated_name(module: str, name: str, aliases: Mapping[str, tuple[str, object]]) -> Any:
    """The object a module's deprecated name stands for, with a DeprecationWarning.

    For a module's ``__getattr__``, so that ``from module import old_name`` still works::

        def __getattr__(name: str) -> Any:
            return deprecated_name(__name__, name, {"Old": ("use sdk.x.New", New)})

    Args:
        module: The module's ``__name__``.
        name: The attribute asked for.
        aliases: Each old name -> (what to do instead, ending the message: ``"use
            sdk.x.New"``; the object).

    Raises:
        AttributeError: ``name`` is not one of ``aliases`` (as for any missing attribute).
    """
    try:
        advice, obj = aliases[name]
    except KeyError:
        raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
    # ``from package import name`` asks twice, first through importlib's hasattr(): warn once,
    # at the user's line
    if not sys._getframe(2).f_code.co_filename.startswith("<frozen importlib"):
        warnings.warn(
            f"{module}.{name} is deprecated and removed in {REMOVED_IN}: {advice}",
            DeprecationWarning,
            stacklevel=3,
        )
    return obj
