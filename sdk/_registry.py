"""One name registry for pluggable strategies (partitioners, assignors).

Lookup order for a name: the built-ins and :meth:`Registry.register` registrations, then the
strategy's entry-point group. An entry point may name an instance, a class, or any
zero-argument factory; whatever it yields goes through the one shape check,
:meth:`Registry.check`. A strategy's package publishes the registry's bound methods as its
``register_*``, ``unregister_*``, ``available_*`` and ``resolve_*`` functions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from importlib import metadata
from typing import Any, Generic, TypeVar, cast

from sdk.errors import ConfigurationError

__all__ = ["Registry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Names → zero-argument factories, plus an entry-point group, for one strategy kind.

    Every strategy has a ``name``, a ``native_name`` (librdkafka's name for the same strategy,
    or None) and its one ``method``.

    Args:
        kind: The profile field and noun in messages, e.g. ``"partitioner"``.
        type_name: The Protocol's name with its article, e.g. ``"a Partitioner"``.
        group: The entry-point group, e.g. ``"kafka_semantics.partitioners"``.
        builtins: Built-in names and factories (never replaced or removed).
        default: The name :meth:`resolve` uses for ``None``.
        method: The strategy's one method; an entry point without it is called as a factory.
        attributes: What a strategy has besides ``name``, ``native_name`` and ``method``.
        instances_only: Refuse a class given where an instance belongs.
        check: A further check of the strategy's own, run after the attributes are found;
            raises :class:`~sdk.errors.ConfigurationError` naming ``origin``.
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
        attributes: tuple[str, ...] = (),
        instances_only: bool = False,
        check: Callable[[Any, str], None] | None = None,
    ) -> None:
        self.kind, self.type_name, self.group = kind, type_name, group
        self.default, self._method, self._check = default, method, check
        self._needed = ("name", "native_name", *attributes, method)
        self._instances_only = instances_only
        self._builtins = dict(builtins)
        self._lock = threading.Lock()
        self._registered: dict[str, Callable[[], T]] = dict(builtins)

    def _error(self, message: str) -> ConfigurationError:
        return ConfigurationError(message, field=self.kind)

    def check(self, candidate: Any, origin: str) -> T:
        """Return ``candidate`` typed as the strategy once its shape is right.

        Raises:
            ConfigurationError: ``candidate`` (named by ``origin`` in the message) lacks an
                attribute, its method is not callable, its ``native_name`` is not a str or
                None, or the strategy's own check refused it.
        """
        if self._instances_only and isinstance(candidate, type):
            raise self._error(
                f"{origin} is a class, not {self.type_name} instance: pass {candidate.__name__}()"
            )
        missing = [attr for attr in self._needed if not hasattr(candidate, attr)]
        if missing or not callable(getattr(candidate, self._method)):
            raise self._error(
                f"{origin} is not {self.type_name} (missing "
                f"{', '.join(missing) or self._method + '()'}): {candidate!r}"
            )
        if self._check is not None:
            self._check(candidate, origin)
        native = candidate.native_name
        if native is not None and not isinstance(native, str):
            raise self._error(f"{origin}: native_name must be a str or None, got {native!r}")
        return cast(T, candidate)

    def register(self, name: str, factory: Callable[[], T], *, replace: bool = False) -> None:
        """Register a factory under ``name``.

        Args:
            name: The name profiles use.
            factory: Zero-argument callable (a class, or ``lambda: instance``).
            replace: Allow replacing an existing registration (never a built-in).

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
        """Remove a registration made with :meth:`register` (missing names are ignored).

        Args:
            name: The registered name.

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
        """Return every resolvable name, sorted: built-ins, registrations and entry points.

        Returns:
            The sorted names.
        """
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
        return self.check(loaded, origin)

    def resolve(self, spec: str | T | None = None) -> T:
        """Turn a profile value into a strategy.

        Args:
            spec: A name (built-in, registered, or an entry point of the strategy's group), an
                instance (returned as is after the shape check), or None for the default.

        Returns:
            The strategy.

        Raises:
            ConfigurationError: Unknown name (the message lists the valid ones), a broken
                entry point or factory, or an object of the wrong shape.
        """
        if spec is None:
            spec = self.default
        if not isinstance(spec, str):
            return self.check(spec, f"the {self.kind}")
        with self._lock:
            factory = self._registered.get(spec)
        if factory is not None:
            try:
                made = factory()
            except ConfigurationError:
                raise
            except Exception as exc:
                raise self._error(f"{self.kind} factory {spec!r} failed: {exc}") from exc
            return self.check(made, f"{self.kind} {spec!r}")
        entry_points = self._entry_points()
        if spec in entry_points:
            return self._from_entry_point(entry_points[spec])
        raise self._error(
            f"unknown {self.kind} {spec!r}; valid names: {', '.join(self.available())}"
        )
