"""The sink's counters and handler shapes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sdk.consumer import ConsumerStats
from sdk.records import ConsumerRecord
from sdk.sink._database import Transaction

__all__ = ["BatchSinkHandler", "SinkHandler", "SinkStats"]


class SinkHandler(Protocol):
    """Write one record in the batch's transaction; raising counts as a failure."""

    def __call__(self, record: ConsumerRecord, tx: Transaction, /) -> object:
        """Write ``record`` through ``tx``; the return value is ignored."""
        ...


class BatchSinkHandler(Protocol):
    """Write a polled batch in its transaction (up to ``profile.batch_size`` records)."""

    def __call__(self, records: list[ConsumerRecord], tx: Transaction, /) -> object:
        """Write ``records`` through ``tx``; the return value is ignored."""
        ...


@dataclass
class SinkStats(ConsumerStats):
    """What the sink did: the Consumer's counters plus the database's.

    Attributes:
        transactions: Batch transactions committed (output and positions together).
        fenced: Batch commits refused because another member claimed a partition since this
            member read its position (a zombie's commit); rolled back, nothing written.
        claims: Assignments claimed in the positions table (epochs bumped).
        database_retries: Transient database errors retried (connection lost or refused, a
            lock wait timed out, a session ended by the server).
        lock_waits: Claims whose wait for another session's row locks on the positions table
            ran out (``lock_timeout``; retried at once).
        blocked_by: After such a wait: the sessions that held those locks, oldest transaction
            first (pid, ``application_name``, state, seconds in the transaction); "" when
            none was found.
        holders_ended: Sessions of frozen members of the group this member ended
            (``end_frozen_holders``).
        rewinds: Partitions sought back to their committed position after a batch was rolled
            back.
        redelivered: Records dropped because they were below the partition's committed
            position.
        commits: Advisory offset commits sent to Kafka after a database commit.
    """

    transactions: int = 0
    fenced: int = 0
    claims: int = 0
    database_retries: int = 0
    lock_waits: int = 0
    blocked_by: str = ""
    holders_ended: int = 0
    rewinds: int = 0
