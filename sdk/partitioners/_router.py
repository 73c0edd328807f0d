"""The producer-side bridge: native ``partitioner`` config or a cached Python route per record.

For a strategy librdkafka has (``native_name`` set), :meth:`PartitionRouter.producer_config`
returns ``{"partitioner": ...}`` and :meth:`PartitionRouter.route` returns None: librdkafka
places the record and no Python runs. For a Python strategy, ``route`` returns the partition
the producer passes to ``produce(partition=...)``, computed against a per-topic cached
partition count that is refreshed every ``metadata_max_age_s`` seconds and after
:meth:`PartitionRouter.invalidate` - so partitions added at runtime are used without a restart.

Attach the producer (:meth:`PartitionRouter.attach`) so the refresh goes through *its*
``list_topics()``: that also refreshes librdkafka's own metadata cache, and librdkafka rejects
``produce(partition=p)`` with ``_UNKNOWN_PARTITION`` while its cache does not know ``p`` yet.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from sdk._client import admin_client, translating
from sdk._config import ConfigMapping
from sdk._deprecation import renamed_default
from sdk.errors import ConfigurationError, SdkError, UnknownTopicError, from_kafka_error
from sdk.partitioners._protocol import BatchAware, Partitioner, TopicPartitioner
from sdk.partitioners._registry import resolve_partitioner

if TYPE_CHECKING:
    from confluent_kafka.admin._metadata import ClusterMetadata

__all__ = ["PartitionRouter"]


class MetadataClient(Protocol):
    """A client that reads cluster metadata: the producer's own, or an admin client."""

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """Cluster metadata (of one topic, or of all)."""
        ...


_RETRY_AFTER_FAILED_REFRESH = 1.0


class _TopicState:
    __slots__ = ("count", "expires", "partitioner")

    def __init__(self, partitioner: TopicPartitioner) -> None:
        self.partitioner = partitioner
        self.count = 0
        self.expires = 0.0


class PartitionRouter:
    """Decides, per record, whether librdkafka or a Python partitioner places it.

    Args:
        partitioner: The strategy (or its name, resolved with ``resolve_partitioner``).
        config: librdkafka config with at least ``bootstrap.servers`` (security settings too);
            used for an own ``AdminClient``, created lazily, until a client is attached.
        metadata_client: Anything with confluent-kafka's ``list_topics(topic=, timeout=)``,
            preferably the producer itself (see :meth:`attach`).
        metadata_max_age_s: Seconds a cached partition count is trusted (librdkafka's
            ``topic.metadata.refresh.interval.ms`` is 300 s; the default here is 30 s).
        metadata_timeout_s: Seconds one metadata request may take.
        metadata_max_age: Deprecated name of ``metadata_max_age_s``, removed in 0.3.
        metadata_timeout: Deprecated name of ``metadata_timeout_s``, removed in 0.3.

    Raises:
        ConfigurationError: Unknown partitioner name or non-positive intervals.
    """

    def __init__(
        self,
        partitioner: str | Partitioner,
        config: ConfigMapping,
        *,
        metadata_client: MetadataClient | None = None,
        metadata_max_age_s: float = 30.0,
        metadata_timeout_s: float = 10.0,
        metadata_max_age: float | None = None,
        metadata_timeout: float | None = None,
    ) -> None:
        max_age_s = renamed_default(
            "PartitionRouter",
            "metadata_max_age",
            metadata_max_age,
            "metadata_max_age_s",
            metadata_max_age_s,
        )
        timeout_s = renamed_default(
            "PartitionRouter",
            "metadata_timeout",
            metadata_timeout,
            "metadata_timeout_s",
            metadata_timeout_s,
        )
        if max_age_s <= 0 or timeout_s <= 0:
            raise ConfigurationError(
                "metadata_max_age_s and metadata_timeout_s must be > 0", field="metadata_max_age_s"
            )
        self.partitioner: Partitioner = resolve_partitioner(partitioner)
        self.native: bool = self.partitioner.native_name is not None
        """True when librdkafka places records itself (``route`` returns None)."""
        self._config = dict(config)
        self._client: MetadataClient | None = metadata_client
        self._max_age = max_age_s
        self._timeout = timeout_s
        self._topics: dict[str, _TopicState] = {}
        self.refreshes = 0
        """Metadata requests made so far (for metrics and tests)."""

    def producer_config(self) -> dict[str, str]:
        """Return the librdkafka keys to merge into the producer config.

        Returns:
            ``{"partitioner": native_name}`` for a native strategy, else ``{}``.
        """
        native = self.partitioner.native_name
        return {"partitioner": native} if native is not None else {}

    def attach(self, client: MetadataClient | None) -> None:
        """Refresh partition counts through ``client`` (the producer) from now on.

        Args:
            client: An object with ``list_topics(topic=..., timeout=...)``; None detaches the
                old one (a producer that closes its client must not leave it referenced here:
                the client would outlive the producer until a full garbage collection).
        """
        self._client = client

    def route(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        partition: int | None = None,
    ) -> int | None:
        """Return the partition for a record, or None to let librdkafka choose natively.

        Args:
            topic: Topic name.
            key: Serialized key or None.
            value: Serialized value or None.
            partition: A partition the caller chose explicitly; it always wins.

        Returns:
            ``partition`` if given; None for a native strategy; else the Python choice.

        Raises:
            ConfigurationError: The partitioner returned a partition out of range, or the
                ``explicit`` partitioner got no partition.
            UnknownTopicError: The topic does not exist (first lookup).
            KafkaClientError: The first metadata lookup of the topic failed otherwise.
        """
        if partition is not None:
            return partition
        if self.native:
            return None
        state = self._topics.get(topic)
        if state is None or time.monotonic() >= state.expires:
            state = self._refresh(topic)
        count = state.count
        chosen = state.partitioner.partition(key, value, count)
        if not 0 <= chosen < count:
            raise ConfigurationError(
                f"partitioner {self.partitioner.name!r} returned partition {chosen} for topic "
                f"{topic!r} with {count} partitions",
                field="partitioner",
            )
        return chosen

    def partition_count(self, topic: str) -> int:
        """Return the cached partition count of ``topic``, refreshing it if stale.

        Args:
            topic: Topic name.

        Returns:
            The number of partitions.

        Raises:
            UnknownTopicError: The topic does not exist.
            KafkaClientError: The metadata lookup failed and nothing is cached.
        """
        state = self._topics.get(topic)
        if state is None or time.monotonic() >= state.expires:
            state = self._refresh(topic)
        return state.count

    def invalidate(self, topic: str | None = None) -> None:
        """Make the next record of ``topic`` (or of every topic) refresh the partition count.

        Call it when a delivery failed with ``_UNKNOWN_PARTITION``/``UNKNOWN_TOPIC_OR_PART``.

        Args:
            topic: The topic, or None for all.
        """
        states = self._topics.values() if topic is None else [self._topics.get(topic)]
        for state in states:
            if state is not None:
                state.expires = 0.0

    def on_batch_sent(self, topic: str) -> None:
        """Forward "a batch of ``topic`` was sent" to a batch-aware partitioner (e.g. sticky).

        Args:
            topic: Topic name.
        """
        state = self._topics.get(topic)
        if state is not None and isinstance(state.partitioner, BatchAware):
            state.partitioner.on_batch_sent()

    def topic_partitioner(self, topic: str) -> TopicPartitioner:
        """Return the per-topic partitioner the router uses for ``topic`` (created if needed).

        Args:
            topic: Topic name.

        Returns:
            The :class:`~sdk.partitioners.TopicPartitioner`.
        """
        state = self._topics.get(topic)
        if state is None:
            state = self._topics[topic] = _TopicState(self.partitioner.for_topic(topic))
        return state.partitioner

    def _refresh(self, topic: str) -> _TopicState:
        self.topic_partitioner(topic)
        state = self._topics[topic]
        try:
            state.count = self._fetch_count(topic)
        except SdkError:
            if state.count == 0:
                raise
            # keep routing with the last known count; try again shortly
            state.expires = time.monotonic() + _RETRY_AFTER_FAILED_REFRESH
            return state
        state.expires = time.monotonic() + self._max_age
        return state

    def _fetch_count(self, topic: str) -> int:
        if self._client is None:
            self._client = admin_client(self._config)
        self.refreshes += 1
        context = f"partition count of topic {topic!r}"
        with translating(context):
            cluster = self._client.list_topics(topic=topic, timeout=self._timeout)
        meta = cluster.topics.get(topic)
        if meta is None:
            raise UnknownTopicError(f"{context}: not in the metadata response")
        if meta.error is not None:
            raise from_kafka_error(meta.error, context=context)
        if not meta.partitions:
            raise UnknownTopicError(f"{context}: the topic has no partitions")
        return len(meta.partitions)
