"""The queue consumer: a share group (KIP-932) consumed with the SDK's guarantees.

Each record a share group hands out is *acquired* by one member under a lock; the guarantee
decides when the SDK acknowledges it (the state machine is drawn in docs/queues.md):

* ``at_most_once``: every record of a poll is acknowledged ACCEPT and the acknowledgements are
  committed (``commit_sync``) before any handler runs; records whose acknowledgement the broker
  refused are not handled. The handler's failures are retried in process (the policy's
  attempts and backoff), then dead-lettered or raised: the record is never delivered again.
* ``at_least_once``: ACCEPT after the handler succeeded; after a retryable failure RELEASE,
  so the broker delivers it again (maybe to another member; ``record.delivery_count`` grows)
  until the policy's ``attempts`` deliveries; then REJECT, after the record was written to the
  dead-letter topic when there is one. A dead-letter write that fails releases the record
  instead of rejecting it, and the run raises. A crash before the acknowledgement leaves the
  record to its lock's expiry: delivered again, never lost.

Acknowledgements are sent with the next poll (and committed synchronously when a run ends).
The queue runs on the SDK's one consume engine (:class:`~sdk.consumer.engine.ConsumeLoop`),
with a share group as its source (:mod:`sdk.queue._source`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

from sdk._client import KafkaMessage, ShareConsumerClient, share_consumer
from sdk._config import ClientConfig, ConfigMapping
from sdk._deprecation import renamed
from sdk.consumer.engine import (
    ConsumeLoop,
    RecordDecoder,
    dead_letter_sink,
)
from sdk.errors import ConfigurationError
from sdk.observability import Telemetry
from sdk.profiles import Guarantee, QueueProfile
from sdk.queue._at_least_once import AtLeastOnce
from sdk.queue._at_most_once import AtMostOnce
from sdk.queue._client_api import AcknowledgeType
from sdk.queue._manual import AckOutcome, ManualAcknowledgement
from sdk.queue._parts import QueueParts
from sdk.queue._records import Outstanding, QueueStats
from sdk.queue._source import COMMIT_TIMEOUT_S, ShareCommits, ShareSource
from sdk.records import ConsumerRecord
from sdk.serialization import Deserializer

__all__ = ["QueueConsumer"]

_AMO = Guarantee.AT_MOST_ONCE
_NO_LIMIT = 2**31 - 1
_ACCEPT, _RELEASE, _REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


class QueueConsumer:
    """Consume a queue (share group) with a handler per record or per poll.

    Several processes (or threads, one consumer each) with the same ``group_id`` share the
    records of the topics, whatever their partition count: each record goes to one of them.

    Args:
        profile: The queue profile (guarantee, group, failure policy, group configs).
        topics: Topics to consume.
        key_deserializer: Name (``bytes``, ``str``, ``json``, ...) or callable.
        value_deserializer: Name or callable.
        dead_letter_producer_config: Extra librdkafka keys for the dead-letter producer.
        telemetry: OpenTelemetry hooks (default: the process-wide one; False: none).
        consumer_factory: Makes the share consumer from a librdkafka dict (tests).
        verify_cluster: Before the first connection, check the cluster against the profile
            (:func:`sdk.doctor.verify`: share groups on, the group's configs, the topics) and
            refuse to start on a FAIL.

    Raises:
        ConfigurationError: No topics, an unknown deserializer or retry_on type, or a DLQ
            producer config without a DLQ topic.
    """

    def __init__(
        self,
        profile: QueueProfile,
        topics: Sequence[str],
        *,
        key_deserializer: str | Deserializer = "bytes",
        value_deserializer: str | Deserializer = "bytes",
        dead_letter_producer_config: ConfigMapping | None = None,
        telemetry: Telemetry | Literal[False] | None = None,
        consumer_factory: Callable[[ClientConfig], ShareConsumerClient] = share_consumer,
        verify_cluster: bool = False,
    ) -> None:
        if isinstance(topics, str) or not topics or not all(topics):
            raise ConfigurationError("topics: give a non-empty list of topic names", field="topics")
        self.profile = profile
        self.topics = list(topics)
        self.guarantee = profile.guarantee
        self.stats = QueueStats()
        tel: Telemetry | None = None if telemetry is False else (telemetry or Telemetry.default())
        self._dlq = dead_letter_sink(profile, dead_letter_producer_config)
        parts = QueueParts(
            profile,
            self.stats,
            RecordDecoder(key_deserializer, value_deserializer),
            self._dlq,
            tel,
        )
        source = ShareSource(
            profile, self.topics, self.stats, consumer_factory, parts.on_ack_commit
        )
        commits = ShareCommits(self.stats)
        self._loop = ConsumeLoop(
            source,
            commits,
            name="QueueConsumer",
            batch_size=_NO_LIMIT,  # the broker decides how many records a poll acquires
            poll_timeout_s=profile.poll_timeout_ms / 1000.0,
            telemetry=tel,
            verify=(profile, self.topics) if verify_cluster else None,
        )
        parts.attach(source, commits.commit, self._loop.stopped)
        self._source = source
        self._parts = parts
        self._at_most_once = AtMostOnce(parts)
        self._at_least_once = AtLeastOnce(parts)
        self._manual = ManualAcknowledgement(
            parts, self._loop, self._at_most_once, self._at_least_once
        )

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> QueueConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stop(self) -> None:
        """Ask a running :meth:`run` to return after the record in hand (thread/signal-safe)."""
        self._loop.stop()

    def close(self) -> None:
        """Commit pending acknowledgements, leave the group and release the consumer."""
        try:
            self._loop.close(_commit_quietly)
        finally:
            if self._dlq is not None:
                self._dlq.close()

    # ------------------------------------------------------------------ running
    def run(
        self,
        handler: Callable[[ConsumerRecord], object],
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool | None = None,
        idle_timeout: float | None = None,
    ) -> QueueStats:
        """Call ``handler(record)`` per record until stopped; acknowledge per the guarantee.

        Args:
            handler: Called once per delivery of a record (its result is ignored).
            max_records: Return after acquiring this many records.
            idle_timeout_s: Return after this many seconds without a record.
            handle_sigterm: SIGTERM calls :meth:`stop` while running. None (default): in the
                main thread, unless the application has its own SIGTERM handler; True: always
                (main thread only); False: never.
            idle_timeout: Deprecated name of ``idle_timeout_s``, removed in 0.3.

        Returns:
            The counters (cumulative over runs).

        Raises:
            ClosedError: The consumer is closed.
            HandlerError: The policy gave up with ``on_failure="stop"`` (the record was
                released at_least_once).
            SerializationError: A record that cannot be deserialized, with ``on_failure="stop"``.
            KafkaClientError: A dead-letter write failed (the record was released), the
                broker has no share groups (the message says what is needed), or a fatal
                client error.
            ConfigurationError: ``handle_sigterm=True`` outside the main thread.
            DoctorError: ``verify_cluster=True`` and a check of the cluster failed.
        """
        idle_s = renamed(
            "QueueConsumer.run", "idle_timeout", idle_timeout, "idle_timeout_s", idle_timeout_s
        )
        return self._run(handler, False, max_records, idle_s, handle_sigterm)

    def run_batch(
        self,
        handler: Callable[[list[ConsumerRecord]], object],
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool | None = None,
        idle_timeout: float | None = None,
    ) -> QueueStats:
        """Like :meth:`run`, but ``handler(records)`` gets each poll's records at once.

        A failing batch is released whole while its records have deliveries left, then
        each record is dead-lettered and rejected (or the run stops).

        Raises:
            ClosedError: See :meth:`run`.
            HandlerError: See :meth:`run`.
            SerializationError: See :meth:`run`.
            KafkaClientError: See :meth:`run`.
            ConfigurationError: See :meth:`run`.
        """
        idle_s = renamed(
            "QueueConsumer.run_batch",
            "idle_timeout",
            idle_timeout,
            "idle_timeout_s",
            idle_timeout_s,
        )
        return self._run(handler, True, max_records, idle_s, handle_sigterm)

    def records(
        self,
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool = False,
        idle_timeout: float | None = None,
    ) -> Iterator[ConsumerRecord]:
        """Yield the queue's records; settle each with :meth:`ack` (see the module docstring).

        Call :meth:`ack` from the thread that iterates (a share consumer is not thread-safe).

        Args:
            max_records: Return after taking this many records from the queue.
            idle_timeout_s: Return after this many seconds without a record.
            handle_sigterm: Turn SIGTERM into :meth:`stop` (main thread only). Off by
                default here, unlike ``run()``: a loop that leaves the iteration early would
                keep SIGTERM turned into :meth:`stop` until the iterator is closed.
            idle_timeout: Deprecated name of ``idle_timeout_s``, removed in 0.3.

        Yields:
            Each record (deserialized); a poison pill is not yielded: the failure policy
            dead-letters and rejects it (or raises, releasing it).

        Raises:
            ClosedError: The consumer is closed.
            SerializationError: A poison pill with ``on_failure="stop"``.
            KafkaClientError: A poll, acknowledgement commit or dead-letter write failed.
        """
        idle_s = renamed(
            "QueueConsumer.records", "idle_timeout", idle_timeout, "idle_timeout_s", idle_timeout_s
        )
        return self._manual.records(max_records, idle_s, handle_sigterm)

    def ack(self, record: ConsumerRecord, outcome: AckOutcome = "accept") -> None:
        """Settle one record of :meth:`records`: accept, release (redeliver) or reject it.

        Args:
            record: A record the iterator yielded, from its latest poll.
            outcome: ``"accept"`` (done), ``"release"`` (delivered again, its delivery count
                one higher) or ``"reject"`` (never delivered again).

        Raises:
            ConfigurationError: ``outcome`` is not one of the three.
            AcknowledgementError: The record was acknowledged already, is from an earlier
                poll (released when the next one began), or, at_most_once, a release or
                reject of a record accepted before it was handed out.
        """
        self._manual.ack(record, outcome)

    def _run(
        self,
        handler: Callable[[Any], object],
        batch: bool,
        max_records: int | None,
        idle_s: float | None,
        handle_sigterm: bool | None,
    ) -> QueueStats:
        loop = self._loop
        with loop.running(handle_sigterm) as client:
            for messages in loop.batches(max_records, idle_s):
                assert client is not None  # batches come from a subscribed client only
                self._handle(client, handler, messages, batch)
                # let go of this poll's records before the next poll allocates thousands more:
                # kept alive through it, they were promoted to the old generations by the
                # collections its allocations set off, and the garbage collector then walked
                # them again and again
                del messages
        return self.stats

    def _handle(
        self,
        client: ShareConsumerClient,
        handler: Callable[[Any], object],
        msgs: list[KafkaMessage],
        batch: bool,
    ) -> None:
        """Handle one poll's records; every one of them leaves acknowledged, even on error."""
        pending = Outstanding(len(msgs))  # not yet acknowledged, by index
        ack = self._parts.acker(client, msgs, pending)
        try:
            if self.guarantee is _AMO:
                self._at_most_once.handle(client, handler, msgs, pending, batch)
            elif batch:
                self._at_least_once.batch(handler, msgs, ack)
            else:
                self._at_least_once.each(client, handler, msgs, pending, ack)
        finally:
            for i in pending.rest():  # stopped or raised mid-poll: give the rest back
                ack(i, _RELEASE)


def _commit_quietly(client: ShareConsumerClient) -> None:
    """On close: the acknowledgements left, committed if the broker takes them."""
    with contextlib.suppress(Exception):
        client.commit_sync(COMMIT_TIMEOUT_S)
