"""What both fake clients share: the call log, the hooks, the scripted failures, the metadata."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin._metadata import ClusterMetadata, PartitionMetadata, TopicMetadata

__all__ = ["Scripted"]


class Scripted:
    """Call log, hooks and scripted failures, shared by both fake clients."""

    def __init__(
        self,
        failures: Mapping[str, list[Any]] | None,
        hooks: Mapping[str, Callable[..., object]] | None,
        partitions: Mapping[str, int] | None,
    ) -> None:
        self.failures: Mapping[str, list[Any]] = failures if failures is not None else {}
        """Scripted failures (see :mod:`sdk.testing.fakes`); popped in place."""
        self.hooks: dict[str, Callable[..., object]] = dict(hooks or {})
        """``{call name: fn(client, *args, **kwargs)}``, run before the call."""
        self.partitions: dict[str, int] = dict(partitions or {})
        """Partition count per topic, for ``list_topics()``."""
        self.calls: list[str] = []
        """The name of every call, in order."""

    def _call(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append(name)
        hook = self.hooks.get(name)
        if hook is not None:
            hook(self, *args, **kwargs)
        queue = self.failures.get(name)
        if queue:
            error = queue.pop(0)
            raise KafkaException(error if isinstance(error, KafkaError) else KafkaError(error))

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """A ``ClusterMetadata`` of the topics in ``partitions`` (an unknown one has an error)."""
        self._call("list_topics", topic, timeout)
        cluster = ClusterMetadata()
        names = list(self.partitions) if topic is None else [topic]
        for name in names:
            meta = TopicMetadata()
            meta.topic = name
            count = self.partitions.get(name)
            if count is None:
                meta.error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
            else:
                for p in range(count):
                    part = PartitionMetadata()
                    part.id = p
                    meta.partitions[p] = part
            cluster.topics[name] = meta
        return cluster
