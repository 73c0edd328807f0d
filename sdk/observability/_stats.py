"""librdkafka statistics (``statistics.interval.ms``) → per-partition consumer lag."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["LagTable", "PartitionLag", "consumer_lag"]


@dataclass(frozen=True)
class PartitionLag:
    """The lag of one partition as librdkafka reported it.

    Attributes:
        topic: Topic name.
        partition: Partition id.
        lag: Records between the consumer's position and the end of the partition.
        group: The consumer group, if the caller named it.
    """

    topic: str
    partition: int
    lag: int
    group: str | None = None


def _lag(p: Mapping[str, Any]) -> int | None:
    end = int(p.get("ls_offset", -1))
    if end < 0:
        end = int(p.get("hi_offset", -1))
    position = max(int(p.get("committed_offset", -1)), int(p.get("app_offset", -1)))
    if end >= 0 and position >= 0:
        return max(0, end - position)
    lag = int(p.get("consumer_lag", -1))
    return lag if lag >= 0 else None


def consumer_lag(stats: Mapping[str, Any], group: str | None = None) -> list[PartitionLag]:
    """Extract the lag of each partition from a librdkafka statistics object.

    The lag is the end offset (``ls_offset``, the last stable offset, which equals
    ``hi_offset`` without open transactions; ``hi_offset`` if unknown) minus the consumer's
    position, the larger of ``committed_offset`` and ``app_offset`` (the next offset the
    application will see). librdkafka's own ``consumer_lag`` counts from ``committed_offset``
    only, which a transactional processor never moves: its offsets are committed by the
    producer (``send_offsets_to_transaction``), so ``consumer_lag`` stays ``-1`` there.
    ``consumer_lag`` is the fallback when the offsets are unknown. Partitions without any
    known lag (not assigned, nothing fetched) and the internal unassigned partition (id
    ``-1``) are left out.

    Args:
        stats: The decoded statistics JSON.
        group: Consumer group to attach (the JSON does not carry ``group.id``).

    Returns:
        One entry per partition with a known lag, sorted by topic and partition.
    """
    out: list[PartitionLag] = []
    topics = stats.get("topics")
    if not isinstance(topics, Mapping):
        return out
    for topic, tstats in topics.items():
        partitions = tstats.get("partitions") if isinstance(tstats, Mapping) else None
        if not isinstance(partitions, Mapping):
            continue
        for pid, pstats in partitions.items():
            if not isinstance(pstats, Mapping):
                continue
            try:
                partition = int(pstats.get("partition", pid))
                lag = _lag(pstats)
            except (TypeError, ValueError):
                continue
            if partition >= 0 and lag is not None:
                out.append(PartitionLag(str(topic), partition, lag, group))
    out.sort(key=lambda p: (p.topic, p.partition))
    return out


class LagTable:
    """Latest lag per client, read by the observable gauge; entries expire after ``ttl_s``.

    librdkafka calls ``stats_cb`` on the client's poll thread while the metric reader observes
    on its own thread, hence the lock. Keyed by the client's ``name`` so that several consumers
    sharing one :class:`~sdk.observability.Telemetry` do not overwrite each other.
    """

    def __init__(self, ttl_s: float = 60.0) -> None:
        self._ttl = ttl_s
        self._lock = threading.Lock()
        self._by_client: dict[str, tuple[float, list[PartitionLag]]] = {}

    def update(self, stats_json: str | bytes, group: str | None = None) -> list[PartitionLag]:
        """Parse one statistics JSON document and remember its lags.

        Returns:
            The lags it contained.

        Raises:
            ValueError: The text is not a JSON object.
        """
        stats = json.loads(stats_json)
        if not isinstance(stats, dict):
            raise ValueError("librdkafka statistics: expected a JSON object")
        lags = consumer_lag(stats, group)
        client = str(stats.get("name", ""))
        with self._lock:
            self._by_client[client] = (time.monotonic(), lags)
        return lags

    def current(self) -> Iterator[PartitionLag]:
        """Yield the live lags (one per group/topic/partition, the largest if reported twice)."""
        now = time.monotonic()
        best: dict[tuple[str | None, str, int], PartitionLag] = {}
        with self._lock:
            for client, (at, lags) in list(self._by_client.items()):
                if now - at > self._ttl:
                    del self._by_client[client]
                    continue
                for lag in lags:
                    k = (lag.group, lag.topic, lag.partition)
                    if k not in best or best[k].lag < lag.lag:
                        best[k] = lag
        yield from (best[k] for k in sorted(best, key=lambda k: (k[0] or "", k[1], k[2])))
