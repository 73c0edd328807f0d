"""What the doctor checks: a profile of any kind, seen as the sides it has and their topics."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sdk.errors import ConfigurationError
from sdk.profiles import (
    ConsumerProfile,
    Guarantee,
    ProcessingProfile,
    ProducerProfile,
    QueueProfile,
    SecurityProfile,
)

__all__ = ["AnyProfile", "Subject", "subject_of"]

AnyProfile = ProducerProfile | ConsumerProfile | ProcessingProfile | QueueProfile
"""Every kind of profile the doctor takes."""


@dataclass(frozen=True)
class Subject:
    """A profile, reduced to what the checks need.

    Attributes:
        kind: ``producer``, ``consumer``, ``processing`` or ``queue``.
        guarantee: The guarantee.
        bootstrap_servers: Where it connects.
        security: How it connects.
        extras: Its extra librdkafka keys (the producer's, else the consumer's).
        producer: The producing side, if any.
        consumer: The consumer-group side, if any.
        queue: The share-group side, if any.
        inputs: Topics it reads.
        outputs: Topics it writes (the dead-letter topic included).
        dead_letter: The dead-letter topic of its failure policy, if any.
        patterns: Subscriptions by pattern (``^...``), which cannot be checked by name.
    """

    kind: str
    guarantee: Guarantee
    bootstrap_servers: str
    security: SecurityProfile
    extras: dict[str, str | int | float | bool]
    producer: ProducerProfile | None
    consumer: ConsumerProfile | None
    queue: QueueProfile | None
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    dead_letter: str | None
    patterns: tuple[str, ...]

    @property
    def durable(self) -> bool:
        """at_least_once or exactly_once: an acknowledged record must survive."""
        return self.guarantee is not Guarantee.AT_MOST_ONCE

    @property
    def principal(self) -> str | None:
        """The Kafka principal of a SASL/PLAIN or SCRAM user (else unknown to the client)."""
        sec = self.security
        if sec.sasl_username and sec.sasl_mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
            return f"User:{sec.sasl_username}"
        return None

    @property
    def group_id(self) -> str | None:
        """The consumer group or share group."""
        side = self.consumer or self.queue
        return side.group_id if side is not None else None

    def tool(self, script: str, args: str) -> str:
        """A Kafka command-line tool call against this cluster, e.g. ``kafka-configs.sh``."""
        server = self.bootstrap_servers.split(",")[0].strip()
        secured = (
            "" if self.security.protocol == "PLAINTEXT" else " --command-config admin.properties"
        )
        return f"{script} --bootstrap-server {server}{secured} {args}"


def subject_of(
    profile: AnyProfile,
    topics: Sequence[str] = (),
    output_topics: Sequence[str] = (),
) -> Subject:
    """Describe ``profile`` for the checks.

    Args:
        profile: A producer, consumer, processing or queue profile.
        topics: What it writes (a producer profile) or reads (the others).
        output_topics: What a processing profile writes.

    Raises:
        ConfigurationError: ``profile`` is not a profile, a topic name is empty, or
            ``output_topics`` were given for a profile that is not a processing one.
    """
    names = [topics] if isinstance(topics, str) else list(topics)
    outs = [output_topics] if isinstance(output_topics, str) else list(output_topics)
    if not all(isinstance(t, str) and t for t in [*names, *outs]):
        raise ConfigurationError(
            "topics: every topic name must be a non-empty string", field="topics"
        )
    producer = consumer = queue = None
    if isinstance(profile, ProcessingProfile):
        producer, consumer, kind = profile.producer, profile.consumer, "processing"
    elif isinstance(profile, ProducerProfile):
        producer, kind = profile, "producer"
    elif isinstance(profile, ConsumerProfile):
        consumer, kind = profile, "consumer"
    elif isinstance(profile, QueueProfile):
        queue, kind = profile, "queue"
    else:
        raise ConfigurationError(
            f"profile: expected a producer, consumer, processing or queue profile, got "
            f"{type(profile).__name__}",
            field="profile",
        )
    if outs and kind != "processing":
        raise ConfigurationError(
            "output_topics: only a processing profile has outputs besides its topics",
            field="output_topics",
        )
    if kind == "producer":
        names, outs = [], names
    grouped = consumer or queue
    policy = grouped.failure if grouped is not None else None
    dead_letter = policy.dlq_topic if policy is not None and policy.on_failure == "dlq" else None
    if dead_letter:
        outs.append(dead_letter)
    side = producer or grouped
    assert side is not None  # every kind above set one side
    return Subject(
        kind=kind,
        guarantee=side.guarantee,
        bootstrap_servers=side.bootstrap_servers,
        security=side.security,
        extras=dict(side.extras),
        producer=producer,
        consumer=consumer,
        queue=queue,
        inputs=tuple(dict.fromkeys(t for t in names if not t.startswith("^"))),
        outputs=tuple(dict.fromkeys(outs)),
        dead_letter=dead_letter,
        patterns=tuple(t for t in names if t.startswith("^")),
    )
