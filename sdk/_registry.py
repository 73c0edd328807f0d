"""One name registry for pluggable strategies (partitioners, assignors).

Lookup order for a name: the built-ins and :meth:`Registry.register` registrations, then the
strategy's entry-point group. An entry point may name an instance, a class, or any
zero-argument factory; whatever it yields goes through the strategy's own shape ``check``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any, Generic, TypeVar

from sdk.errors import ConfigurationError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Names → zero-argument factories, plus an entry-point group, for one strategy kind.

    Args:
        kind: The profile field and noun in messages, e.g. ``"partitioner"``.
        type_name: The Protocol's name with its article, e.g. ``"a Partitioner"``.
        group: The entry-point group, e.g. ``"kafka_semantics.partitioners"``.
        builtins: Built-in names and factories (never replaced or removed).
        default: The name :meth:`resolve` uses for ``None``.
        method: The strategy's one method; an entry point without it is called as a factory.
        check: ``check(candidate, origin)`` returns the candidate typed, or raises
            :class:`~sdk.errors.ConfigurationError` naming ``origin``.
    """

    def __init__(
        self,
        *,
        kind: str,
        type_name: str,
        group: str,
        builtins: Mapping[str, Callable[[], T]],
        default: str,
        method: str,
        check: Callable[[Any, str], T],
    ) -> None:
        self.kind, self.type_name, self.group = kind, type_name, group
        self.default, self._method, self._check = default, method, check
        self._builtins = dict(builtins)
        self._lock = threading.Lock()
        self._registered: dict[str, Callable[[], T]] = dict(builtins)

    def _error(self, message: str) -> ConfigurationError:
        return ConfigurationError(message, field=self.kind)

    def register(self, name: str, factory: Callable[[], T], *, replace: bool = False) -> None:
        """Register ``factory`` under ``name``.

        Raises:
            ConfigurationError: The name is empty, a built-in, or taken and ``replace`` is False.
        """
        if not name:
            article = "an" if self.kind[0] in "aeiou" else "a"
            raise self._error(f"{article} {self.kind} name must not be empty")
        with self._lock:
            if name in self._builtins:
                raise self._error(f"{name!r} is a built-in {self.kind} and cannot be replaced")
            if name in self._registered and not replace:
                raise self._error(f"{self.kind} {name!r} is already registered (pass replace=True)")
            self._registered[name] = factory

    def unregister(self, name: str) -> None:
        """Remove a registration (missing names are ignored).

        Raises:
            ConfigurationError: ``name`` is a built-in.
        """
        if name in self._builtins:
            raise self._error(f"{name!r} is a built-in {self.kind}")
        with self._lock:
            self._registered.pop(name, None)

    def _entry_points(self) -> dict[str, metadata.EntryPoint]:
        return {ep.name: ep for ep in metadata.entry_points(group=self.group)}

    def available(self) -> list[str]:
        """Every resolvable name, sorted: built-ins, registrations and entry points."""
        with self._lock:
            names = set(self._registered)
        return sorted(names | set(self._entry_points()))

    def _from_entry_point(self, ep: metadata.EntryPoint) -> T:
        origin = f"entry point {ep.name!r} ({ep.value}) of group {self.group!r}"
        try:
            loaded = ep.load()
        except Exception as exc:
            raise self._error(f"could not load {origin}: {exc}") from exc
        if isinstance(loaded, type) or not hasattr(loaded, self._method):
            if not callable(loaded):
                raise self._error(f"{origin} is not {self.type_name}")
            try:
                loaded = loaded()
            except Exception as exc:
                raise self._error(f"{origin} failed: {exc}") from exc
        return self._check(loaded, origin)

    def resolve(self, spec: str | T | None = None) -> T:
        """Turn a profile value (name, instance or None for the default) into a strategy.

        Raises:
            ConfigurationError: Unknown name (the message lists the valid ones), a broken
                entry point or factory, or an object of the wrong shape.
        """
        if spec is None:
            spec = self.default
        if not isinstance(spec, str):
            return self._check(spec, f"the {self.kind}")
        with self._lock:
            factory = self._registered.get(spec)
        if factory is not None:
            try:
                made = factory()
            except ConfigurationError:
                raise
            except Exception as exc:
                raise self._error(f"{self.kind} factory {spec!r} failed: {exc}") from exc
            return self._check(made, f"{self.kind} {spec!r}")
        entry_points = self._entry_points()
        if spec in entry_points:
            return self._from_entry_point(entry_points[spec])
        raise self._error(
            f"unknown {self.kind} {spec!r}; valid names: {', '.join(self.available())}"
        )
