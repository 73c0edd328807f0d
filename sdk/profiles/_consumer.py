"""The consumer profile: what a guarantee fixes on the consuming side."""

from __future__ import annotations

from typing import Literal

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
from sdk.profiles._failure import FailurePolicy

__all__ = ["CONSUMER_REASONS", "ConsumerProfile"]

CONSUMER_REASONS: dict[str, str] = {
    "enable.auto.commit": "at_most_once commits synchronously before the handler runs, "
    "exactly_once commits inside the transaction: neither may commit on a timer; at_least_once "
    "lets the timer commit only offsets the SDK stored after the handler succeeded",
    "enable.auto.offset.store": "librdkafka's default stores an offset when poll() returns the "
    "record, before the handler ran: a crash then skips it. The SDK stores it after the handler",
    "isolation.level": "read_committed hides aborted and open transactions' records",
    "fetch.queue.backoff.ms": "librdkafka's default (1000) pauses fetching for a second "
    "whenever its local queue is over the prefetch threshold; a handler that drains it faster "
    "then waits idle (docs/performance.md, fetch.queue.backoff.ms). 10 ms keeps the queue fed at "
    "the same memory bound",
}

_LIBRDKAFKA_SPELLINGS = {"roundrobin": "round_robin", "cooperative-sticky": "cooperative_sticky"}
"""librdkafka's strategy names, accepted as aliases of the sdk.assignors registry names."""


def _assignor_keys(assignor: str | None, group_protocol: str) -> dict[str, str]:
    """The librdkafka keys for ``assignor`` (validated by the one assignor registry)."""
    if assignor is None:
        return {}
    from sdk.assignors import assignor_config  # lazy: the assignors build on the profiles

    name = _LIBRDKAFKA_SPELLINGS.get(assignor, assignor)
    return assignor_config(name, "consumer" if group_protocol == "consumer" else "classic")


class ConsumerProfile(ProfileModel):
    """Consumer settings for one guarantee, validated as a whole and frozen."""

    guarantee: Guarantee
    bootstrap_servers: str = Field(min_length=1)
    group_id: str = Field(min_length=1)
    client_id: str | None = None
    auto_offset_reset: Literal["earliest", "latest", "error"] = "earliest"
    isolation_level: Literal["read_committed", "read_uncommitted"] = "read_committed"
    auto_commit_interval_ms: int = Field(default=1_000, ge=10)
    session_timeout_ms: int = Field(default=45_000, ge=1_000)
    max_poll_interval_ms: int = Field(default=300_000, ge=1_000)
    group_protocol: Literal["classic", "consumer"] = "classic"
    assignor: str | None = None
    batch_size: int = Field(default=500, ge=1, le=100_000)
    fetch_queue_backoff_ms: int = Field(default=10, ge=0, le=300_000)
    failure: FailurePolicy = FailurePolicy()
    security: SecurityProfile = SecurityProfile()
    extras: dict[str, ExtraValue] = Field(default_factory=dict)

    @field_validator("guarantee", mode="before")
    @classmethod
    def _guarantee(cls, value: object) -> Guarantee:
        return parse_guarantee(value)

    @model_validator(mode="after")
    def _consistent(self) -> ConsumerProfile:
        if self.guarantee is Guarantee.EXACTLY_ONCE and self.isolation_level != "read_committed":
            raise ConfigurationError(
                "isolation_level: exactly_once readers must use read_committed, or they see "
                "records of aborted transactions",
                field="isolation_level",
            )
        if self.group_protocol == "classic" and self.max_poll_interval_ms < self.session_timeout_ms:
            raise ConfigurationError(
                f"max_poll_interval_ms: {self.max_poll_interval_ms} is below session_timeout_ms "
                f"{self.session_timeout_ms}; librdkafka refuses to create such a consumer",
                field="max_poll_interval_ms",
            )
        _assignor_keys(self.assignor, self.group_protocol)  # raises ConfigurationError
        check_extras(self.extras, self.critical(), self.guarantee, CONSUMER_REASONS)
        return self

    def critical(self) -> dict[str, ExtraValue]:
        """Return the guarantee-critical librdkafka keys with the values the guarantee fixes."""
        if self.guarantee is Guarantee.AT_LEAST_ONCE:
            return {"enable.auto.commit": True, "enable.auto.offset.store": False}
        out: dict[str, ExtraValue] = {
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
        }
        if self.guarantee is Guarantee.EXACTLY_ONCE:
            out["isolation.level"] = "read_committed"
        return out

    def render(self) -> dict[str, ExtraValue]:
        """Render the complete librdkafka consumer config (extras under critical keys)."""
        config: dict[str, ExtraValue] = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "auto.offset.reset": self.auto_offset_reset,
            "isolation.level": self.isolation_level,
            "auto.commit.interval.ms": self.auto_commit_interval_ms,
            "max.poll.interval.ms": self.max_poll_interval_ms,
            "fetch.queue.backoff.ms": self.fetch_queue_backoff_ms,
        }
        if self.group_protocol == "consumer":
            config["group.protocol"] = "consumer"
        else:
            config["session.timeout.ms"] = self.session_timeout_ms
        config.update(_assignor_keys(self.assignor, self.group_protocol))
        if self.client_id:
            config["client.id"] = self.client_id
        config.update(self.security.render())
        config.update(self.extras)
        config.update(self.critical())
        return config
