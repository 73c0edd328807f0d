"""The queue profile: a share group (KIP-932) consumed with a delivery guarantee.

A share group hands each record to one member under a time-limited *acquisition lock*; the
member acknowledges it as ACCEPT (done), RELEASE (deliver again, maybe to another member) or
REJECT (never again). The guarantee decides when the SDK acknowledges (docs/queues.md):

* ``at_most_once``: ACCEPT, and commit the acknowledgement, before the handler runs;
* ``at_least_once``: ACCEPT after the handler succeeded, RELEASE after a retryable failure,
  REJECT once the failure policy gives up (after the dead-letter write, if there is one);
* ``exactly_once``: refused. A share group has no transactional acknowledgement (KIP-1289
  only proposes one), so an output and the acknowledgement of its input cannot be atomic.

Some settings belong to the *group*, not to the client: the broker reads them from the group's
configuration (``share.auto.offset.reset`` and friends). :meth:`QueueProfile.group_config`
renders them; the queue consumer applies them with the admin API when it starts.
"""

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

__all__ = ["QUEUE_REASONS", "QueueProfile"]

QUEUE_REASONS: dict[str, str] = {
    "share.acknowledgement.mode": "the SDK acknowledges each record itself, when the guarantee "
    "says: implicit mode would ACCEPT a whole poll on the next poll, handled or not",
    "share.auto.offset.reset": "a new share group starts at 'latest' by default and so never "
    "sees the records already in the topic",
    "share.isolation.level": "read_committed hides records of aborted and open transactions, "
    "so a queue can read a Processor's exactly_once output",
}

EXACTLY_ONCE_REFUSED = (
    "guarantee: exactly_once is not available on a queue (share group): a share group has no "
    "transactional acknowledgement (KIP-1289 only proposes one), so an output and the "
    "acknowledgement of its input cannot commit atomically. Use at_least_once with an "
    "idempotent handler, or a consumer group with sdk.processor.Processor for exactly_once"
)


class QueueProfile(ProfileModel):
    """Share-group consumer settings for one guarantee, validated as a whole and frozen.

    Attributes:
        guarantee: ``at_most_once`` or ``at_least_once`` (``exactly_once`` is refused).
        bootstrap_servers: Brokers to bootstrap from.
        group_id: The share group.
        client_id: Optional client id.
        auto_offset_reset: Where a new share group starts (group config
            ``share.auto.offset.reset``).
        isolation_level: Group config ``share.isolation.level``.
        record_lock_duration_ms: Group config ``share.record.lock.duration.ms``: how long a
            member holds an acquired record before the broker delivers it again (None: the
            broker's ``group.share.record.lock.duration.ms``, 30 s by default).
        delivery_count_limit: Group config ``share.delivery.count.limit``: deliveries after
            which the broker archives a record as failed (None: the broker's default, 5).
        apply_group_config: Set the group configs with the admin API at start (turn off when
            the group is managed elsewhere or the client may not alter group configs).
        max_poll_interval_ms: The longest gap between polls before the member is removed.
        poll_timeout_ms: How long one poll waits for records.
        failure: Retries (as redeliveries), then dead-letter or stop.
        security: Connection security.
        extras: Extra librdkafka keys (never ones that weaken the guarantee).
    """

    guarantee: Guarantee
    bootstrap_servers: str = Field(min_length=1)
    group_id: str = Field(min_length=1)
    client_id: str | None = None
    auto_offset_reset: Literal["earliest", "latest"] = "earliest"
    isolation_level: Literal["read_committed", "read_uncommitted"] = "read_committed"
    record_lock_duration_ms: int | None = Field(default=None, ge=1_000, le=3_600_000)
    delivery_count_limit: int | None = Field(default=None, ge=2, le=10)
    apply_group_config: bool = True
    max_poll_interval_ms: int = Field(default=300_000, ge=1_000)
    poll_timeout_ms: int = Field(default=1_000, ge=1, le=60_000)
    failure: FailurePolicy = FailurePolicy()
    security: SecurityProfile = SecurityProfile()
    extras: dict[str, ExtraValue] = Field(default_factory=dict)

    @field_validator("guarantee", mode="before")
    @classmethod
    def _guarantee(cls, value: object) -> Guarantee:
        guarantee = parse_guarantee(value)
        if guarantee is Guarantee.EXACTLY_ONCE:
            raise ConfigurationError(EXACTLY_ONCE_REFUSED, field="guarantee")
        return guarantee

    @model_validator(mode="after")
    def _consistent(self) -> QueueProfile:
        check_extras(self.extras, self.critical(), self.guarantee, QUEUE_REASONS)
        limit = self.delivery_count_limit
        if limit is not None and self.failure.attempts > limit:
            raise ConfigurationError(
                f"failure.attempts: {self.failure.attempts} deliveries would never happen: the "
                f"broker archives a record after delivery_count_limit={limit} deliveries, "
                "before the policy could dead-letter it",
                field="failure.attempts",
            )
        for key in self.extras:
            if key.startswith("share.") and key != "share.acknowledgement.mode":
                raise ConfigurationError(
                    f"extras[{key!r}]: share-group settings are group configs, set by the "
                    "profile fields (auto_offset_reset, isolation_level, "
                    "record_lock_duration_ms, delivery_count_limit)",
                    field=f"extras.{key}",
                )
        return self

    def critical(self) -> dict[str, ExtraValue]:
        """Return the guarantee-critical librdkafka keys with the values the guarantee fixes."""
        return {"share.acknowledgement.mode": "explicit"}

    def render(self) -> dict[str, ExtraValue]:
        """Render the librdkafka config of a ``confluent_kafka.ShareConsumer``."""
        config: dict[str, ExtraValue] = {
            "bootstrap.servers": self.bootstrap_servers,
            "group.id": self.group_id,
            "max.poll.interval.ms": self.max_poll_interval_ms,
        }
        if self.client_id:
            config["client.id"] = self.client_id
        config.update(self.security.render())
        config.update(self.extras)
        config.update(self.critical())
        return config

    def group_config(self) -> dict[str, str]:
        """The share group's broker-side configs this profile sets (admin API, ``GROUP``)."""
        out: dict[str, str] = {
            "share.auto.offset.reset": self.auto_offset_reset,
            "share.isolation.level": self.isolation_level,
        }
        if self.record_lock_duration_ms is not None:
            out["share.record.lock.duration.ms"] = str(self.record_lock_duration_ms)
        if self.delivery_count_limit is not None:
            out["share.delivery.count.limit"] = str(self.delivery_count_limit)
        return out
