"""The processing profile: a consume → transform → produce loop under one guarantee."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from sdk.errors import ConfigurationError
from sdk.profiles._base import ProfileModel
from sdk.profiles._common import Guarantee, SecurityProfile, parse_guarantee
from sdk.profiles._consumer import ConsumerProfile
from sdk.profiles._producer import ProducerProfile

__all__ = ["PROCESSING_REASONS", "ProcessingProfile"]


class ProcessingProfile(ProfileModel):
    """Consumer and producer of a read-process-write loop, bound to one guarantee.

    What both sides share is written once: ``consumer`` and ``producer`` without a
    ``guarantee`` take the processing guarantee, and without ``bootstrap_servers`` or
    ``security`` take the top-level ones. A side that sets one of them to a different value
    is an error naming that field.

    Example::

        ProcessingProfile(
            guarantee="exactly_once",
            bootstrap_servers="kafka:9092",
            consumer={"group_id": "orders"},
            producer={"transactional_id_prefix": "orders-"},
        )

    Attributes:
        bootstrap_servers: The cluster of both sides (None: each side sets its own).
        security: The connection security of both sides (None: each side sets its own).
        commit_interval_ms: How often the loop commits (exactly_once: ends the transaction).
        max_records_per_transaction: Commit early once this many input records were handled.
    """

    guarantee: Guarantee
    bootstrap_servers: str | None = Field(default=None, min_length=1)
    security: SecurityProfile | None = None
    consumer: ConsumerProfile
    producer: ProducerProfile
    commit_interval_ms: int = Field(default=100, ge=1)
    max_records_per_transaction: int = Field(default=100_000, ge=1)

    @field_validator("guarantee", mode="before")
    @classmethod
    def _guarantee(cls, value: object) -> Guarantee:
        return parse_guarantee(value)

    @model_validator(mode="before")
    @classmethod
    def _pass_down_shared(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for side in ("consumer", "producer"):
            child = out.get(side)
            if isinstance(child, dict) and "guarantee" not in child and "guarantee" in data:
                out[side] = child = {**child, "guarantee": data["guarantee"]}
            for key in _SHARED:
                if data.get(key) is not None:
                    out[side] = child = _pass_down(side, child, key, data[key])
        if _is_exactly_once(data.get("guarantee")):
            out["consumer"] = _poll_within_transaction(out.get("consumer"), out.get("producer"))
        return out

    @model_validator(mode="after")
    def _same_guarantee(self) -> ProcessingProfile:
        for side in ("consumer", "producer"):
            child: Guarantee = getattr(self, side).guarantee
            if child is not self.guarantee:
                raise ConfigurationError(
                    f"{side}.guarantee: {child.value} contradicts the processing guarantee "
                    f"{self.guarantee.value}",
                    field=f"{side}.guarantee",
                )
        if (
            self.guarantee is Guarantee.EXACTLY_ONCE
            and self.commit_interval_ms >= self.producer.transaction_timeout_ms
        ):
            raise ConfigurationError(
                "commit_interval_ms: must be well below producer.transaction_timeout_ms, or the "
                "coordinator aborts transactions before the loop commits them",
                field="commit_interval_ms",
            )
        return self


_CAP = (
    "bounds the work redone after an abort (at most one transaction's input); at the default "
    "100 ms interval it ends a transaction early only above 1,000,000 records/s"
)
PROCESSING_REASONS: dict[Guarantee, dict[str, str]] = {
    Guarantee.EXACTLY_ONCE: {
        "commit_interval_ms": (
            "a read_committed reader sees the output only at the commit, so the interval is "
            "the latency floor: measured end-to-end p99 at 1,000 records/s (100 B) was 46 / 58 "
            "/ 108 / 504 / 1,000 ms at 10 / 50 / 100 / 500 / 1000 ms (Kafka Streams 72 / 85 / "
            "115 / 510 / 1,005). Each commit is 2-4 round trips during which nothing is "
            "handled: at 10 ms the Processor fell behind at 70 % of its saturation rate "
            "(94,000 of 116,000 records/s); from 50 ms up it kept up (docs/performance.md)"
        ),
        "max_records_per_transaction": _CAP,
        "consumer max_poll_interval_ms": (
            "at most the transaction timeout: a batch slower than the timeout makes the member "
            "leave the group, instead of being aborted and handled again, as slowly, while it "
            "stays (left at the default, it is lowered to transaction_timeout_ms, not below "
            "session_timeout_ms)"
        ),
    },
    Guarantee.AT_LEAST_ONCE: {
        "commit_interval_ms": (
            "how often the outputs are flushed and then the input offsets stored; the output is "
            "visible as soon as it is produced, so the interval bounds what a crash handles "
            "again, not the latency"
        ),
    },
    Guarantee.AT_MOST_ONCE: {},
}
"""Why each processing setting matters, per guarantee (``python -m sdk profile explain``)."""

_SHARED = ("bootstrap_servers", "security")
"""The fields both sides must agree on, which the processing profile can give once."""


def _pass_down(side: str, child: Any, key: str, value: Any) -> Any:
    """``child`` (a mapping or a built profile) with the shared ``key`` set to ``value``.

    Raises:
        ConfigurationError: ``child`` sets ``key`` to something else (the field is named;
            security values are not shown, they may hold secrets).
    """
    if isinstance(child, ProfileModel):
        if key not in child.model_fields_set:  # a default, not a choice: take the shared one
            return type(child)(
                **{k: getattr(child, k) for k in child.model_fields_set}, **{key: value}
            )
        own = getattr(child, key)
    elif isinstance(child, dict):
        if child.get(key) is None:
            return {**child, key: value}
        own = child[key]
    else:
        return child  # missing or malformed: the field's own validation reports it
    if key == "security":
        try:
            same = SecurityProfile.model_validate(_plain(own)) == SecurityProfile.model_validate(
                _plain(value)
            )
        except ConfigurationError:
            return child  # invalid: the side's (or the top level's) validation names the field
        shown = " (values not shown: they may hold secrets)"
    else:
        same = own == value
        shown = f" {own!r} (the top level has {value!r})"
    if not same:
        raise ConfigurationError(
            f"{side}.{key}: contradicts the processing profile's {key}{shown}; give it once at "
            "the top level, or on each side",
            field=f"{side}.{key}",
        )
    return child


def _is_exactly_once(value: object) -> bool:
    try:
        return parse_guarantee(value) is Guarantee.EXACTLY_ONCE
    except ConfigurationError:
        return False  # the guarantee's own validation reports it


def _poll_within_transaction(consumer: Any, producer: Any) -> Any:
    """exactly_once: the consumer's default poll interval lowered to the transaction timeout.

    The Processor keeps a polled batch in one transaction. With a poll interval above the
    transaction timeout, a batch slower than the timeout is aborted by the coordinator while
    the member stays in the group, and is handled again from the same offset, as slowly; at
    or below it the member leaves the group first (the doctor's "poll interval vs transaction
    timeout" check). Never below the session timeout, which librdkafka refuses. A poll
    interval the consumer sets itself is kept.
    """
    if isinstance(producer, ProfileModel):
        timeout = getattr(producer, "transaction_timeout_ms", None)
    elif isinstance(producer, dict):
        timeout = producer.get(
            "transaction_timeout_ms", _default(ProducerProfile, "transaction_timeout_ms")
        )
    else:
        timeout = _default(ProducerProfile, "transaction_timeout_ms")
    if type(timeout) is not int or timeout < 1_000:
        return consumer  # invalid: the producer's validation names it
    if isinstance(consumer, ProfileModel):
        if "max_poll_interval_ms" in consumer.model_fields_set:
            return consumer
        poll = max(timeout, getattr(consumer, "session_timeout_ms", 0))
        if getattr(consumer, "max_poll_interval_ms", 0) <= poll:
            return consumer
        kept = {k: getattr(consumer, k) for k in consumer.model_fields_set}
        return type(consumer)(**kept, max_poll_interval_ms=poll)
    if isinstance(consumer, dict) and consumer.get("max_poll_interval_ms") is None:
        session = consumer.get(
            "session_timeout_ms", _default(ConsumerProfile, "session_timeout_ms")
        )
        if type(session) is not int:
            return consumer  # invalid: the consumer's validation names it
        poll = min(_default(ConsumerProfile, "max_poll_interval_ms"), max(timeout, session))
        return {**consumer, "max_poll_interval_ms": poll}
    return consumer


def _default(model: type[ProfileModel], field: str) -> Any:
    return model.model_fields[field].default


def _plain(value: Any) -> Any:
    """A SecurityProfile as its set fields, so it validates like the mapping it came from."""
    if isinstance(value, SecurityProfile):
        return {k: getattr(value, k) for k in value.model_fields_set}
    return value
