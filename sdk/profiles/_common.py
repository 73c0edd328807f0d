"""Pieces shared by every profile: the guarantee, security settings and extras checking."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import SecretStr

from sdk.errors import ConfigurationError
from sdk.profiles._base import ProfileModel

__all__ = ["ExtraValue", "Guarantee", "SecurityProfile", "check_extras", "parse_guarantee"]

ExtraValue = str | int | float | bool


class Guarantee(StrEnum):
    """A delivery guarantee.

    * ``at_most_once``: the offset is committed before the work; the producer never retries.
      A crash can lose a record, never repeat it.
    * ``at_least_once``: the offset is stored only after the work; the producer retries
      idempotently with acks=all. A crash can repeat a record, never lose it.
    * ``exactly_once``: consume, produce and offset commit are one Kafka transaction; readers use
      read_committed.
    """

    AT_MOST_ONCE = "at_most_once"
    AT_LEAST_ONCE = "at_least_once"
    EXACTLY_ONCE = "exactly_once"


def parse_guarantee(value: object) -> Guarantee:
    """Accept ``"exactly_once"``, ``"exactly-once"``, ``"EXACTLY_ONCE"`` or a Guarantee.

    Raises:
        ConfigurationError: The name is not a guarantee (the message lists the valid ones).
    """
    if isinstance(value, Guarantee):
        return value
    valid = [g.value for g in Guarantee]
    if not isinstance(value, str):
        raise ConfigurationError(
            f"guarantee: expected a guarantee name, got {type(value).__name__}; valid: "
            f"{', '.join(valid)}",
            field="guarantee",
        )
    text = value.strip().lower().replace("-", "_").replace(" ", "_")
    try:
        return Guarantee(text)
    except ValueError:
        # The rejected text is not echoed: a mis-indented YAML block can put a password here.
        close = difflib.get_close_matches(text, valid, n=1, cutoff=0.75)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigurationError(
            f"guarantee: unknown guarantee name ({len(value)} characters, not shown); {hint}"
            f"valid: {', '.join(valid)}",
            field="guarantee",
        ) from None


class SecurityProfile(ProfileModel):
    """Connection security. Secrets are ``SecretStr``: never shown in repr, logs or errors."""

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] | None = None
    sasl_username: str | None = None
    sasl_password: SecretStr | None = None
    ssl_ca_location: str | None = None
    ssl_certificate_location: str | None = None
    ssl_key_location: str | None = None
    ssl_key_password: SecretStr | None = None

    def render(self) -> dict[str, ExtraValue]:
        """Return the librdkafka keys (secrets revealed: only for handing to librdkafka)."""
        out: dict[str, ExtraValue] = {"security.protocol": self.protocol}
        pairs: list[tuple[str, Any]] = [
            ("sasl.mechanism", self.sasl_mechanism),
            ("sasl.username", self.sasl_username),
            ("sasl.password", self.sasl_password),
            ("ssl.ca.location", self.ssl_ca_location),
            ("ssl.certificate.location", self.ssl_certificate_location),
            ("ssl.key.location", self.ssl_key_location),
            ("ssl.key.password", self.ssl_key_password),
        ]
        for key, value in pairs:
            if value is not None:
                out[key] = value.get_secret_value() if isinstance(value, SecretStr) else value
        return out


ALIASES = {
    "request.required.acks": "acks",
    "message.send.max.retries": "retries",
    "max.in.flight": "max.in.flight.requests.per.connection",
}
SECRET_KEYS = frozenset({"sasl.password", "ssl.key.password", "ssl.keystore.password"})


def check_extras(
    extras: Mapping[str, ExtraValue],
    critical: Mapping[str, ExtraValue],
    guarantee: Guarantee,
    reasons: Mapping[str, str],
) -> None:
    """Refuse extras that would weaken the guarantee or smuggle a secret in plain text.

    Args:
        extras: The user's librdkafka keys.
        critical: The guarantee-critical keys and the values the guarantee fixes.
        guarantee: The guarantee, for the message.
        reasons: Why each critical key has its value, for the message.

    Raises:
        ConfigurationError: An extra contradicts a critical key or is a secret.
    """
    for key, value in extras.items():
        canonical = ALIASES.get(key, key)
        if key in SECRET_KEYS:
            raise ConfigurationError(
                f"extras[{key!r}]: secrets must go in security.* (a SecretStr), never in extras",
                field=f"extras.{key}",
            )
        if canonical in critical and _norm(value) != _norm(critical[canonical]):
            raise ConfigurationError(
                f"extras[{key!r}]={value!r} would weaken {guarantee.value}, which needs "
                f"{canonical}={critical[canonical]!r}: "
                f"{reasons.get(canonical, 'it is guarantee-critical')}",
                field=f"extras.{key}",
            )


def _norm(value: ExtraValue) -> str:
    return str(value).strip().lower()
