"""A librdkafka configuration as the SDK builds it and hands it to confluent-kafka.

A profile renders plain values (:data:`sdk.profiles.ExtraValue`: ``str | int | float | bool``);
the front ends then add the callbacks librdkafka takes (``error_cb``, ``stats_cb``,
``on_delivery``...) and the ``logger`` (a :class:`LogSink`). :data:`ConfigValue` is that union,
:data:`ClientConfig` the dict a client is built from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol, TypeAlias

__all__ = ["ClientConfig", "ConfigMapping", "ConfigValue", "LogSink", "config_int"]


class LogSink(Protocol):
    """Where librdkafka's log lines go: a ``logging.Logger``, or a ``BrokerContact``."""

    def log(self, level: int, msg: str, /, *args: object) -> None:
        """One line: ``log(level, "%s [%s] %s", facility, client name, text)``."""
        ...


ConfigValue: TypeAlias = "str | int | float | bool | Callable[..., object] | LogSink"
"""One value of a librdkafka config: a plain setting, a callback, or the ``logger``."""

ClientConfig: TypeAlias = "dict[str, ConfigValue]"
"""The config a confluent-kafka client is built from (secrets revealed: for librdkafka only)."""

ConfigMapping: TypeAlias = "Mapping[str, ConfigValue]"
"""A config that is only read (a profile's rendered dict is one too)."""


def config_int(config: ConfigMapping, key: str, default: int) -> int:
    """The number set for ``key`` (``"5000"`` or ``5000``: librdkafka takes both), else ``default``.

    Raises:
        TypeError: ``key`` is set to a callback or a logger, not a number.
    """
    value = config.get(key, default)
    if not isinstance(value, str | int | float):  # int() raises this for a callable too
        raise TypeError(f"{key} is not a number: {value!r}")
    return int(value)
