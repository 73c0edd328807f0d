"""``python -m sdk profile explain``: the effective librdkafka settings of a profile, and why."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sdk.errors import ConfigurationError
from sdk.profiles._common import SECRET_KEYS, ExtraValue, Guarantee, parse_guarantee
from sdk.profiles._consumer import CONSUMER_REASONS, ConsumerProfile
from sdk.profiles._loading import ProfileSet
from sdk.profiles._processing import PROCESSING_REASONS, ProcessingProfile
from sdk.profiles._producer import PRODUCER_REASONS, ProducerProfile
from sdk.profiles._queue import EXACTLY_ONCE_REFUSED, QUEUE_REASONS, QueueProfile

__all__ = ["UNSAFE_DEFAULTS", "explain"]

#: librdkafka defaults that surprise users, with the side they belong to and why they matter.
UNSAFE_DEFAULTS: dict[str, tuple[str, ExtraValue, str]] = {
    "partitioner": (
        "producer",
        "consistent_random",
        "librdkafka hashes keys with CRC32, the Java client with murmur2: the same key lands on "
        "different partitions when Java and Python produce to one topic",
    ),
    "enable.idempotence": (
        "producer",
        False,
        "without idempotence a retry after a lost acknowledgement writes a duplicate, and "
        "retries with several requests in flight can reorder records",
    ),
    "enable.auto.offset.store": (
        "consumer",
        True,
        "librdkafka stores an offset as soon as poll() returns the record, before your code "
        "handled it: a crash then skips the record (at-least-once silently becomes at-most-once)",
    ),
}

_PLACEHOLDER_ID = "<transactional.id>"
_EXPLAINED = ("partitioner", "fetch.queue.backoff.ms")
"""Non-critical keys whose value the profile chose for a reason worth printing."""


def _mask(key: str, value: ExtraValue) -> str:
    if key in SECRET_KEYS:
        return "********"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _lines(
    title: str,
    config: Mapping[str, ExtraValue],
    critical: Mapping[str, ExtraValue],
    extras: Mapping[str, ExtraValue],
    reasons: Mapping[str, str],
) -> list[str]:
    out = [f"{title}:"]
    width = max(len(k) for k in config) + 2
    for key in sorted(config):
        value = _mask(key, config[key])
        if key in critical:
            origin = "guarantee"
        elif key in extras:
            origin = "extras"
        else:
            origin = "profile"
        out.append(f"  {key:<{width}}= {value:<22} [{origin}]")
        if key in reasons and (key in critical or key in _EXPLAINED):
            out.append(f"  {'':<{width}}  why: {reasons[key]}")
    return out


def _warnings(producer: dict[str, ExtraValue], consumer: dict[str, ExtraValue]) -> list[str]:
    out = ["librdkafka defaults this SDK checks:"]
    for key, (side, default, why) in UNSAFE_DEFAULTS.items():
        effective = (producer if side == "producer" else consumer).get(key, default)
        unsafe = _mask(key, effective) == _mask(key, default)
        verdict = "WARNING, in effect" if unsafe else "overridden"
        out.append(
            f"  - {side} {key} (librdkafka default {_mask(key, default)}): {verdict} "
            f"-> {_mask(key, effective)}"
        )
        out.append(f"      {why}")
    return out


def _profiles_for(
    target: str, profiles: ProfileSet | None, bootstrap_servers: str
) -> tuple[str, ProducerProfile, ConsumerProfile]:
    if profiles is not None and target in profiles.names:
        producer = profiles.producer(target)
        if producer.guarantee is Guarantee.EXACTLY_ONCE and not producer.transactional_id:
            prefix = producer.transactional_id_prefix or ""
            producer = profiles.producer(
                target,
                transactional_id=f"{prefix}<instance>",
                transactional_id_prefix=None,
            )
        return f"profile {target!r}", producer, profiles.consumer(target)
    try:
        guarantee = parse_guarantee(target)
    except ConfigurationError:
        names = ", ".join(profiles.names) if profiles is not None and profiles.names else ""
        names = names or "none loaded"
        raise ConfigurationError(
            f"{target!r} is neither a profile name ({names}) nor a guarantee "
            f"({', '.join(g.value for g in Guarantee)})",
            field="profile",
        ) from None
    extra: dict[str, Any] = {}
    if guarantee is Guarantee.EXACTLY_ONCE:
        extra["transactional_id"] = _PLACEHOLDER_ID
    producer = ProducerProfile(guarantee=guarantee, bootstrap_servers=bootstrap_servers, **extra)
    consumer = ConsumerProfile(
        guarantee=guarantee, bootstrap_servers=bootstrap_servers, group_id="<group.id>"
    )
    return "SDK defaults", producer, consumer


def explain(
    target: str,
    profiles: ProfileSet | None = None,
    *,
    bootstrap_servers: str = "localhost:9092",
) -> str:
    """Describe the effective librdkafka settings of a profile or a bare guarantee.

    Args:
        target: A profile name in ``profiles`` or a guarantee name.
        profiles: Loaded profiles, if any.
        bootstrap_servers: Used for a bare guarantee.

    Returns:
        A multi-line report: producer and consumer settings with their origin (guarantee,
        extras, profile), why each guarantee-critical setting is needed, and librdkafka's
        unsafe defaults with whether this profile overrides them. Secrets are masked.

    Raises:
        ConfigurationError: ``target`` is neither a profile nor a guarantee, or the profile is
            invalid (the field is named).
    """
    from sdk.partitioners import PartitionRouter

    label, producer, consumer = _profiles_for(target, profiles, bootstrap_servers)
    router = PartitionRouter(producer.partitioner, {"bootstrap.servers": bootstrap_servers})
    pconf = {**producer.render(), **router.producer_config()}
    if not router.native:
        pconf["partitioner"] = f"python:{producer.partitioner}"
    cconf = consumer.render()
    lines = [f"{label}: guarantee {producer.guarantee.value}", ""]
    lines += _lines("producer", pconf, producer.critical(), producer.extras, PRODUCER_REASONS)
    lines.append("")
    lines += _lines("consumer", cconf, consumer.critical(), consumer.extras, CONSUMER_REASONS)
    lines.append("")
    lines += _warnings(pconf, cconf)
    if producer.guarantee is Guarantee.AT_MOST_ONCE:
        lines.append(
            "  note: at_most_once disables idempotence and retries on purpose (a retry could "
            "duplicate); records can be lost, never repeated."
        )
    if producer.guarantee is Guarantee.EXACTLY_ONCE:
        lines.append(
            "  note: exactly_once consumers commit offsets inside the producer's transaction: "
            "use sdk.processor.Processor, not Consumer.run()."
        )
    lines.append("")
    lines += _processing_lines(target, profiles, producer, consumer)
    lines.append("")
    lines += _queue_lines(target, profiles, consumer)
    return "\n".join(lines)


def _processing_lines(
    target: str,
    profiles: ProfileSet | None,
    producer: ProducerProfile,
    consumer: ConsumerProfile,
) -> list[str]:
    """The Processor's own settings (sdk.Processor), with what they cost."""
    title = "processing (sdk.Processor):"
    try:
        if profiles is not None and target in profiles.names:
            processing = profiles.processing(target, producer=producer)
        else:
            processing = ProcessingProfile(
                guarantee=producer.guarantee, consumer=consumer, producer=producer
            )
    except ConfigurationError as exc:
        return [f"{title} not usable with this profile: {exc}"]
    values = {
        "commit_interval_ms": processing.commit_interval_ms,
        "max_records_per_transaction": processing.max_records_per_transaction,
        "consumer max_poll_interval_ms": processing.consumer.max_poll_interval_ms,
    }
    width = max(len(k) for k in values) + 2
    out = [title]
    for key, value in values.items():
        out.append(f"  {key:<{width}}= {value}")
        reason = PROCESSING_REASONS[processing.guarantee].get(key)
        if reason:
            out.append(f"  {'':<{width}}  why: {reason}")
    return out


def _queue_lines(target: str, profiles: ProfileSet | None, consumer: ConsumerProfile) -> list[str]:
    """The queue (share group, sdk.queue) side: client keys and the group's broker configs."""
    if consumer.guarantee is Guarantee.EXACTLY_ONCE:
        return ["queue (share group, sdk.queue): refused.", f"  {EXACTLY_ONCE_REFUSED}"]
    if profiles is not None and target in profiles.names:
        try:
            queue = profiles.queue(target)
        except ConfigurationError as exc:  # a consumer-group profile need not fit a queue
            return [f"queue (share group, sdk.queue): not usable with this profile: {exc}"]
    else:
        queue = QueueProfile(
            guarantee=consumer.guarantee,
            bootstrap_servers=consumer.bootstrap_servers,
            group_id=consumer.group_id,
        )
    out = _lines(
        "queue (share group, sdk.queue)",
        queue.render(),
        queue.critical(),
        queue.extras,
        QUEUE_REASONS,
    )
    out.append("  group configs (set with the admin API at start, apply_group_config):")
    for key, value in sorted(queue.group_config().items()):
        out.append(f"    {key} = {value}")
        if key in QUEUE_REASONS:
            out.append(f"      why: {QUEUE_REASONS[key]}")
    if queue.record_lock_duration_ms is None:
        out.append("    share.record.lock.duration.ms: the broker's (30000 by default)")
    return out
