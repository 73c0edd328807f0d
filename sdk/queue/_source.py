"""A share group as the consume engine's source: the share consumer, its polls, its commits.

The queue runs on the same engine as the consumer-group front ends
(:class:`~sdk.consumer.engine.ConsumeLoop`: stop and SIGTERM, ``max_records``,
``idle_timeout_s``, closing). What differs is here: a share consumer has no partitions to
seek and no rebalance callbacks; the broker hands out acquired records, and the run's
acknowledgements are committed at its end instead of offsets.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from operator import countOf
from typing import TypeVar, cast

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from sdk._client import KafkaMessage, ShareConsumerClient, share_consumer, translating
from sdk._config import ClientConfig
from sdk._connection import BrokerContact
from sdk.errors import ConfigurationError, KafkaClientError, SdkError, from_kafka_error
from sdk.profiles import QueueProfile
from sdk.queue._client_api import delivery_count
from sdk.queue._group import NO_SUPPORT_CODES, apply_group_config, with_hint
from sdk.queue._records import QueueStats

__all__ = ["COMMIT_TIMEOUT_S", "ShareCommits", "ShareSource", "seam"]

T = TypeVar("T")

# confluent-kafka's C methods, mapped over a poll with no Python frame per record; the messages
# are confluent_kafka.Message, typed by what the SDK reads of them (delivery_count: a stand-in
# on a client older than the queue's floor, which cannot run a queue anyway)
_delivery_count = cast("Callable[[KafkaMessage], int | None]", delivery_count)
_error = cast("Callable[[KafkaMessage], KafkaError | None]", Message.error)
COMMIT_TIMEOUT_S = 30.0


class ShareSource:
    """The records a share group hands this member, and the share consumer that gets them.

    Args:
        profile: The queue profile.
        topics: Topics to consume.
        stats: The queue's counters (``redelivered``, notes).
        factory: Makes the share consumer from a librdkafka dict.
        on_ack_commit: The share consumer's acknowledgement commit callback.
    """

    def __init__(
        self,
        profile: QueueProfile,
        topics: list[str],
        stats: QueueStats,
        factory: Callable[[ClientConfig], ShareConsumerClient],
        on_ack_commit: Callable[[Mapping[TopicPartition, set[int]], KafkaException | None], None],
    ) -> None:
        self.profile = profile
        self.topics = topics
        self.stats = stats
        self._factory = factory
        self._on_ack_commit = on_ack_commit
        self._contact: BrokerContact | None = None
        self.polled_at = 0.0
        """When the latest poll returned: its records were acquired (their locks began) then."""

    def connect(self, stopped: Callable[[], bool]) -> ShareConsumerClient | None:
        """Share groups on the broker, the group's configs set, the consumer subscribed.

        Returns None if ``stopped()`` (Ctrl-C) came before a broker answered.

        Raises:
            ConfigurationError: The broker has no share groups (the versions named), a group
                config was refused, or librdkafka refused the configuration.
            BrokerUnreachableError: No broker answered.
        """
        profile = self.profile
        if self._factory is share_consumer:  # a broker without share groups: say so now
            from sdk.doctor import SHARE_GROUPS, require_broker

            require_broker(
                SHARE_GROUPS, profile.bootstrap_servers, profile.security, profile.extras
            )
        if profile.apply_group_config:
            applied = apply_group_config(profile, stopped=stopped)
            if applied is None:
                return None  # stopped (Ctrl-C) before a broker answered
            self.stats.note(f"group {profile.group_id!r} configs set: {applied}")
        config: ClientConfig = dict(profile.render())
        self._contact = BrokerContact(config)
        config["logger"] = self._contact  # librdkafka's log, repeats collapsed
        config["error_cb"] = self._contact.on_error
        if profile.apply_group_config:
            self._contact.note_reached()  # the admin client reached the cluster
        try:
            client = self._factory(config)
        except Exception as exc:  # KafkaException for a bad librdkafka key/value
            raise ConfigurationError(
                f"librdkafka refused the share consumer configuration: {exc}"
            ) from exc
        client.set_acknowledgement_commit_callback(self._on_ack_commit)
        client.subscribe(self.topics)
        return client

    def poll(self, client: ShareConsumerClient, limit: int, timeout_s: float) -> list[KafkaMessage]:
        """One poll of acquired records (the broker decides how many: ``limit`` is not used).

        Raises:
            BrokerUnreachableError: No broker answered since the consumer started.
            KafkaClientError: A fatal error, or a broker without share groups (named).
        """
        polled = seam(lambda: client.poll(timeout_s), "poll")
        contact = self._contact
        if contact is not None and not contact.reached:  # until the first contact
            if polled:
                contact.note_reached()
            else:  # no metadata call on a share consumer: its connection errors decide
                contact.check(None, f"share-group poll of {', '.join(self.topics)}")
        # confluent-kafka 2.16 returns Messages, a read-only sequence over a list, whose
        # records() copies that list. What follows wants a list (handle_run indexes it)
        messages = polled if type(polled) is list else _as_list(polled)
        # each message's error from C (map, no list): a poll without errors is kept as it is,
        # with no Python bytecode per record (a list comprehension would run some per record);
        # any(), not a count of None: KafkaError's == raises when compared with None
        if not any(map(_error, messages)):
            out: list[KafkaMessage] = messages
        else:
            out = []
            for m in messages:
                err = m.error()
                if err is None:
                    out.append(m)
                    continue
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                error = from_kafka_error(err, context=f"share-group poll of {m.topic()}")
                if err.code() in NO_SUPPORT_CODES:
                    raise with_hint(error)
                if err.fatal():
                    raise error
                self.stats.note(str(error), logging.WARNING)
        self.polled_at = time.monotonic()  # the poll's records were acquired about now
        self.stats.polled += len(out)
        # C-level, no list: no Python frame per record
        redelivered = len(out) - countOf(map(_delivery_count, out), 1)
        if redelivered:  # a first delivery may also read None or 0 (no count known)
            counts = list(map(_delivery_count, out))
            redelivered -= counts.count(None) + counts.count(0)
        self.stats.redelivered += redelivered
        return out

    def idle_for(self, last_record: float) -> float:
        """Seconds since the last record (or the start of the run)."""
        return time.monotonic() - last_record

    def raise_if_never_joined(self) -> None:
        """Nothing to add: a poll raised ``BrokerUnreachableError`` if no broker answered."""


class ShareCommits:
    """The queue's commits, as the engine sees them: acknowledgements, committed per run.

    Each poll's records are acknowledged as they are handled (the guarantee decides when:
    :mod:`sdk.queue._consumer`); the engine admits every record it polled, and at the end of a
    run the acknowledgements are committed and confirmed.
    """

    def __init__(self, stats: QueueStats) -> None:
        self._stats = stats

    def admit(
        self, client: ShareConsumerClient, messages: list[KafkaMessage]
    ) -> list[KafkaMessage]:
        """Every acquired record is handled (at_most_once accepts them first, when handled)."""
        return messages

    def end_run(self, client: ShareConsumerClient, failed: bool, in_flight: int) -> None:
        """The last poll's acknowledgements, confirmed before the run returns (a failure noted)."""
        try:
            self.commit(client, "commit of the acknowledgements at the end of the run")
        except SdkError as exc:
            self._stats.note(f"{exc}", logging.WARNING)

    def commit(self, client: ShareConsumerClient, context: str) -> set[tuple[str, int]]:
        """Commit the acknowledgements; return the partitions whose commit was refused."""
        result = seam(lambda: client.commit_sync(COMMIT_TIMEOUT_S), context)
        refused: set[tuple[str, int]] = set()
        for tp, err in (result or {}).items():
            if err:
                refused.add((tp.topic, tp.partition))
                self._stats.note(
                    f"{context}: {tp.topic}[{tp.partition}] refused: {err}", logging.WARNING
                )
        return refused


def _as_list(polled: Iterable[KafkaMessage]) -> list[KafkaMessage]:
    """A poll's messages as a list: ``Messages.records()`` (a copy of its list), else ``list()``."""
    records = getattr(polled, "records", None)
    out = records() if callable(records) else None
    return out if type(out) is list else list(polled)


def seam(call: Callable[[], T], context: str) -> T:
    """One share-consumer call through the error seam (a broker without share groups named)."""
    try:
        with translating(context):
            return call()
    except KafkaClientError as exc:
        if exc.code in NO_SUPPORT_CODES:
            raise with_hint(exc) from exc
        raise
