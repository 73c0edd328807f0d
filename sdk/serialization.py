"""Key/value serializers and deserializers: a one-method Protocol and a name registry.

Built-ins: ``bytes`` (pass-through), ``str`` (UTF-8), ``json`` (UTF-8 JSON). Anything callable as
``fn(obj, topic) -> bytes | None`` (or ``fn(data, topic) -> obj`` for deserializers) works too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from sdk.errors import ConfigurationError

__all__ = [
    "Deserializer",
    "Serializer",
    "available_serializers",
    "resolve_deserializer",
    "resolve_serializer",
]


class Serializer(Protocol):
    """Turns a key or value into bytes for ``topic``."""

    def __call__(self, obj: Any, topic: str, /) -> bytes | None:
        """Serialize ``obj`` (None stays None)."""
        ...


class Deserializer(Protocol):
    """Turns bytes read from ``topic`` back into an object."""

    def __call__(self, data: bytes | None, topic: str, /) -> Any:
        """Deserialize ``data`` (None stays None)."""
        ...


def _bytes_out(obj: Any, topic: str, /) -> bytes | None:
    if obj is None or isinstance(obj, bytes):
        return obj
    if isinstance(obj, bytearray | memoryview):
        return bytes(obj)
    raise TypeError(f"the 'bytes' serializer takes bytes, got {type(obj).__name__}")


def _str_out(obj: Any, topic: str, /) -> bytes | None:
    if obj is None:
        return None
    if not isinstance(obj, str):
        raise TypeError(f"the 'str' serializer takes str, got {type(obj).__name__}")
    return obj.encode()


def _json_out(obj: Any, topic: str, /) -> bytes | None:
    return None if obj is None else json.dumps(obj, separators=(",", ":")).encode()


def _bytes_in(data: bytes | None, topic: str, /) -> Any:
    return data


def _str_in(data: bytes | None, topic: str, /) -> Any:
    return None if data is None else data.decode()


def _json_in(data: bytes | None, topic: str, /) -> Any:
    return None if data is None else json.loads(data)


_SERIALIZERS: dict[str, Serializer] = {"bytes": _bytes_out, "str": _str_out, "json": _json_out}
_DESERIALIZERS: dict[str, Deserializer] = {"bytes": _bytes_in, "str": _str_in, "json": _json_in}


def available_serializers() -> list[str]:
    """Names of the built-in (de)serializers."""
    return sorted(_SERIALIZERS)


def _resolve(spec: Any, table: dict[str, Any], field: str) -> Callable[..., Any]:
    if callable(spec):
        return spec  # type: ignore[no-any-return]
    if isinstance(spec, str) and spec in table:
        return table[spec]  # type: ignore[no-any-return]
    raise ConfigurationError(
        f"{field}: unknown serializer {spec!r}; valid names: {', '.join(sorted(table))}, "
        "or a callable",
        field=field,
    )


def resolve_serializer(spec: str | Serializer, field: str = "serializer") -> Serializer:
    """Return the serializer named ``spec`` (or ``spec`` itself if callable).

    Raises:
        ConfigurationError: Unknown name (the message lists the valid ones).
    """
    return _resolve(spec, _SERIALIZERS, field)


def resolve_deserializer(spec: str | Deserializer, field: str = "deserializer") -> Deserializer:
    """Return the deserializer named ``spec`` (or ``spec`` itself if callable).

    Raises:
        ConfigurationError: Unknown name (the message lists the valid ones).
    """
    return _resolve(spec, _DESERIALIZERS, field)
