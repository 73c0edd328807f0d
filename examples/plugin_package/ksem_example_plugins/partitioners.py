"""A custom partitioner: each region owns a contiguous slice of the partitions."""

from __future__ import annotations

import confluent_kafka

REGIONS = ("eu", "us", "ap")


class _RegionTopic:
    def partition(self, key: bytes | None, value: bytes | None, partition_count: int) -> int:
        region = (key or b"").split(b"-", 1)[0].decode(errors="replace")
        index = REGIONS.index(region) if region in REGIONS else len(REGIONS) - 1
        slice_size = max(1, partition_count // len(REGIONS))
        start = min(index * slice_size, partition_count - 1)
        width = slice_size if index < len(REGIONS) - 1 else partition_count - start
        # confluent-kafka's own Java-compatible murmur2 spreads keys inside the slice
        return start + confluent_kafka.murmur2(key or b"", max(1, width))


class RegionPartitioner:
    """Keys ``<region>-<id>`` stay in their region's slice of the partitions."""

    name = "region"
    native_name = None  # computed in Python per record
    requires_consistency = True  # the same key always lands on the same partition

    def for_topic(self, topic: str) -> _RegionTopic:
        return _RegionTopic()
