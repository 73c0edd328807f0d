"""Structured logging helpers: logger names under ``sdk.``, secrets never rendered."""

from __future__ import annotations

import logging
from collections.abc import Mapping

from pydantic import SecretStr

__all__ = ["REDACTED", "get_logger", "is_secret_key", "redact"]

REDACTED = "***"
_SECRET_PARTS = ("password", "secret", "token", "oauthbearer.config", "sasl.jaas", ".pem")

# A library must not print through logging's last-resort handler when the app configured none.
logging.getLogger("sdk.observability").addHandler(logging.NullHandler())


def get_logger(name: str) -> logging.Logger:
    """Return the logger ``name``, which must live under ``sdk.`` (e.g. ``sdk.processor``).

    Raises:
        ValueError: The name is outside the ``sdk`` hierarchy.
    """
    if name != "sdk" and not name.startswith("sdk."):
        raise ValueError(f"logger {name!r}: SDK loggers live under 'sdk.'")
    return logging.getLogger(name)


def is_secret_key(key: str) -> bool:
    """Whether a librdkafka configuration key holds a secret (password, token, key PEM...)."""
    lowered = key.lower()
    return any(part in lowered for part in _SECRET_PARTS)


def redact(config: Mapping[str, object]) -> dict[str, object]:
    """Copy a librdkafka configuration for logging, with every secret replaced by ``***``.

    Secret keys (:func:`is_secret_key`) and any ``SecretStr`` value are redacted; callables
    (``stats_cb``, ``on_delivery``...) are shown by name only.
    """
    out: dict[str, object] = {}
    for key, value in config.items():
        if isinstance(value, SecretStr) or is_secret_key(str(key)):
            out[key] = REDACTED
        elif callable(value):
            out[key] = f"<{getattr(value, '__qualname__', type(value).__name__)}>"
        else:
            out[key] = value
    return out
