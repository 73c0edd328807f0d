"""The producer profile: what a guarantee fixes on the producing side."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from sdk.errors import ConfigurationError
from sdk.profiles._base import ProfileModel
from sdk.profiles._common import (
    ExtraValue,
    Guarantee,
    SecurityProfile,
    check_extras,
    parse_guarantee,
)

__all__ = ["PRODUCER_REASONS", "ProducerProfile"]

PRODUCER_REASONS: dict[str, str] = {
    "acks": "acks=all waits for every in-sync replica, so an acknowledged record survives a "
    "leader crash; acks=0/1 trade that for latency (at-most-once only)",
    "enable.idempotence": "the broker de-duplicates retries by producer id + sequence number, so "
    "a retry after a lost acknowledgement does not write a duplicate, and order is kept",
    "retries": "retries recover from transient errors (leader change, timeouts); at-most-once "
    "disables them because a retry of a write that did land duplicates it",
    "max.in.flight.requests.per.connection": "more than 1 in-flight request plus retries can "
    "reorder records unless idempotence is on (then up to 5 keep order)",
    "transactional.id": "a stable id lets the coordinator fence zombies of this producer and "
    "finish or abort its open transaction after a crash",
    "transaction.timeout.ms": "the coordinator aborts a transaction left open longer than this",
    "partitioner": "murmur2 (librdkafka murmur2_random) places keys exactly as the Java client",
    "message.timeout.ms": "a transactional producer must give up on a record before the "
    "coordinator aborts its transaction",
}


class ProducerProfile(ProfileModel):
    """Producer settings for one guarantee, validated as a whole and frozen.

    ``None`` fields take the guarantee's default. ``extras`` are raw librdkafka keys merged
    *under* the guarantee-critical ones; an extra that contradicts one is an error.
    """

    guarantee: Guarantee
    bootstrap_servers: str = Field(min_length=1)
    client_id: str | None = None
    acks: Literal["0", "1", "all"] | None = None
    retries: int | None = Field(default=None, ge=0)
    enable_idempotence: bool | None = None
    max_in_flight: int | None = Field(default=None, ge=1, le=1_000_000)
    delivery_timeout_ms: int = Field(default=120_000, ge=1)
    linger_ms: float = Field(default=5.0, ge=0)
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "none"
    transactional_id: str | None = None
    transactional_id_prefix: str | None = None
    transaction_timeout_ms: int = Field(default=60_000, ge=1_000)
    transaction_call_timeout_ms: int = Field(default=10_000, ge=100)
    partitioner: str = "murmur2"
    security: SecurityProfile = SecurityProfile()
    extras: dict[str, ExtraValue] = Field(default_factory=dict)

    @field_validator("guarantee", mode="before")
    @classmethod
    def _guarantee(cls, value: object) -> Guarantee:
        return parse_guarantee(value)

    @field_validator("partitioner")
    @classmethod
    def _partitioner(cls, value: str) -> str:
        from sdk.partitioners import resolve_partitioner

        resolve_partitioner(value)  # unknown name: ConfigurationError listing the valid ones
        return value

    @field_validator("acks", mode="before")
    @classmethod
    def _acks(cls, value: Any) -> Any:
        if value is None:
            return None
        text = str(value).strip().lower()
        return "all" if text in ("-1", "all") else text

    @model_validator(mode="after")
    def _consistent(self) -> ProducerProfile:
        g = self.guarantee
        if g is Guarantee.AT_MOST_ONCE:
            self._require(self.acks in (None, "0", "1"), "acks", "at_most_once uses acks 0 or 1")
            self._require(
                not self.retries,
                "retries",
                "at_most_once never retries: a retry of a write that landed is a duplicate",
            )
            self._require(
                not self.enable_idempotence,
                "enable_idempotence",
                "idempotence needs retries, which at_most_once forbids",
            )
            self._require(
                not (self.transactional_id or self.transactional_id_prefix),
                "transactional_id",
                "transactions belong to exactly_once",
            )
        else:
            self._require(
                self.acks in (None, "all"),
                "acks",
                f"{g.value} needs acks=all: with acks={self.acks} an acknowledged record is lost "
                "if the leader dies before followers copy it",
            )
            self._require(
                self.retries != 0,
                "retries",
                f"{g.value} needs retries > 0: a transient error would otherwise drop the record",
            )
            idempotent = self.enable_idempotence is not False
            if idempotent:
                self._require(
                    (self.max_in_flight or 5) <= 5,
                    "max_in_flight",
                    "with idempotence at most 5 requests may be in flight (ordering guarantee)",
                )
            else:
                self._require(
                    g is not Guarantee.EXACTLY_ONCE,
                    "enable_idempotence",
                    "exactly_once needs idempotence (transactions are built on it)",
                )
                self._require(
                    self.max_in_flight == 1,
                    "max_in_flight",
                    "without idempotence, retries with more than 1 request in flight can reorder "
                    "records: set max_in_flight=1 or enable idempotence",
                )
        if g is Guarantee.EXACTLY_ONCE:
            self._require(
                bool(self.transactional_id or self.transactional_id_prefix),
                "transactional_id",
                "exactly_once needs transactional_id (or transactional_id_prefix)",
            )
        if self.transactional_id and self.transactional_id_prefix:
            raise ConfigurationError(
                "transactional_id_prefix: give transactional_id or transactional_id_prefix, "
                "not both",
                field="transactional_id_prefix",
            )
        check_extras(self.extras, self.critical(), g, PRODUCER_REASONS)
        return self

    @staticmethod
    def _require(ok: bool, field: str, why: str) -> None:
        if not ok:
            raise ConfigurationError(f"{field}: {why}", field=field)

    def critical(self, transactional_id: str | None = None) -> dict[str, ExtraValue]:
        """Return the guarantee-critical librdkafka keys with the values the guarantee fixes.

        Args:
            transactional_id: The concrete id (for a prefix profile, the caller's suffixed id).
        """
        g = self.guarantee
        if g is Guarantee.AT_MOST_ONCE:
            return {
                "acks": self.acks or "0",
                "retries": 0,
                "enable.idempotence": False,
            }
        idempotent = self.enable_idempotence is not False
        out: dict[str, ExtraValue] = {
            "acks": "all",
            "enable.idempotence": idempotent,
            "max.in.flight.requests.per.connection": self.max_in_flight or (5 if idempotent else 1),
        }
        if self.retries is not None:
            out["retries"] = self.retries
        if g is Guarantee.EXACTLY_ONCE:
            tid = transactional_id or self.transactional_id
            if tid:
                out["transactional.id"] = tid
            out["transaction.timeout.ms"] = self.transaction_timeout_ms
            # librdkafka refuses message.timeout.ms > transaction.timeout.ms
            out["message.timeout.ms"] = min(self.delivery_timeout_ms, self.transaction_timeout_ms)
        return out

    def render(self, transactional_id: str | None = None) -> dict[str, ExtraValue]:
        """Render the complete librdkafka producer config (extras under critical keys).

        Args:
            transactional_id: Concrete transactional id, required with a prefix profile.

        Raises:
            ConfigurationError: An exactly_once prefix profile was rendered without an id.
        """
        if self.guarantee is Guarantee.EXACTLY_ONCE and not (
            transactional_id or self.transactional_id
        ):
            raise ConfigurationError(
                "transactional_id: this profile has only a prefix; pass the concrete "
                f"transactional_id (e.g. {self.transactional_id_prefix!r} + instance suffix)",
                field="transactional_id",
            )
        config: dict[str, ExtraValue] = {
            "bootstrap.servers": self.bootstrap_servers,
            "linger.ms": self.linger_ms,
            "compression.type": self.compression,
            "message.timeout.ms": self.delivery_timeout_ms,
        }
        if self.client_id:
            config["client.id"] = self.client_id
        config.update(self.security.render())
        config.update(self.extras)
        config.update(self.critical(transactional_id))
        return config
