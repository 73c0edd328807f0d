"""A poll's records are let go of before the next poll (no broker: a stand-in share consumer).

A share consumer's poll allocates thousands of garbage-collected messages at once; a poll whose
predecessor is still referenced pushes those older records into the collector's old
generations, which cost the queue consumer ~100 ns a record (docs/queues.md).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from confluent_kafka import Message

from sdk.profiles import QueueProfile
from sdk.queue import QueueConsumer


class _CountingShareConsumer:
    """Hands out ``polls`` polls of real messages; at each poll, notes how many references
    other than its own the previous poll's list still has (0: the consumer let go of it)."""

    def __init__(self, polls: int, size: int = 5) -> None:
        self.left, self.size, self.offset = polls, size, 0
        self.previous: list[Any] | None = None
        self.probe: list[Any] = []
        self.held_at_next_poll: list[int] = []
        self.acknowledged = 0

    def set_acknowledgement_commit_callback(self, callback: Any) -> None:
        pass

    def subscribe(self, topics: list[str]) -> None:
        pass

    def poll(self, timeout: float) -> list[Any]:
        if self.previous is not None:
            # a list only this object holds, read the same way, is the baseline: anything
            # more on the previous poll's list is the consumer's
            baseline = sys.getrefcount(self.probe)
            self.held_at_next_poll.append(sys.getrefcount(self.previous) - baseline)
            self.previous = None
        if not self.left:
            return []
        self.left -= 1
        batch = [
            Message(topic="t", partition=0, offset=self.offset + i, value=b"v")
            for i in range(self.size)
        ]
        self.offset += self.size
        self.previous = batch
        return batch

    def acknowledge(self, message: Any, kind: Any = None) -> None:
        self.acknowledged += 1

    def commit_sync(self, timeout: float) -> dict[Any, Any]:
        return {}

    def close(self) -> None:
        pass


def _queue(guarantee: str, client: _CountingShareConsumer) -> QueueConsumer:
    profile = QueueProfile(
        guarantee=guarantee,
        bootstrap_servers="127.0.0.1:1",
        group_id="g",
        apply_group_config=False,
    )
    return QueueConsumer(profile, ["t"], consumer_factory=lambda config: client, telemetry=False)


@pytest.mark.parametrize("guarantee", ["at_least_once", "at_most_once"])
@pytest.mark.parametrize("batch", [False, True], ids=["run", "run_batch"])
def test_run_holds_no_poll_through_the_next_one(guarantee: str, batch: bool) -> None:
    client = _CountingShareConsumer(polls=4)
    with _queue(guarantee, client) as queue:
        if batch:
            queue.run_batch(lambda records: None, max_records=20)
        else:
            queue.run(lambda record: None, max_records=20)
    assert client.acknowledged == 20
    assert client.held_at_next_poll == [0, 0, 0]  # polls 2-4 each found the last one let go


def test_records_holds_no_poll_through_the_next_one() -> None:
    client = _CountingShareConsumer(polls=3)
    with _queue("at_least_once", client) as queue:
        for record in queue.records(max_records=15):
            queue.ack(record)
    assert client.acknowledged == 15
    assert client.held_at_next_poll == [0, 0]
