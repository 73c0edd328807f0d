"""What a sink member holds: its claims (epochs), committed positions, and the rewinds."""

from __future__ import annotations

import logging
import time
from contextlib import suppress
from typing import Any

from confluent_kafka import TopicPartition

from sdk._assignment import reassign
from sdk._client import ConsumerClient, KafkaMessage, call_kafka, translating
from sdk.errors import KafkaClientError
from sdk.sink._database import Position
from sdk.sink._records import SinkStats

__all__ = ["Holdings", "Partition"]

_log = logging.getLogger("sdk.sink")
Partition = tuple[str, int]


class Holdings:
    """The partitions a sink member holds, where each stands, and the seeks that follow.

    Args:
        eos: exactly_once (claims and epochs) rather than at_least_once.
        stats: The sink's counters.
        advice_every_s: exactly_once: how often the committed positions are told to Kafka.
    """

    def __init__(self, eos: bool, stats: SinkStats, advice_every_s: float) -> None:
        self.eos = eos
        self.stats = stats
        self.advice_every_s = advice_every_s
        self._advice: dict[Partition, int] = {}  # exactly_once: offsets not yet told to Kafka
        self._advised_at = time.monotonic()
        self.epochs: dict[Partition, int] = {}  # exactly_once: the claims this member holds
        self.positions: dict[Partition, int] = {}  # committed next offsets, as last known
        self.first_seen: dict[Partition, int] = {}  # where a partition without position began

    def split(
        self, messages: list[KafkaMessage]
    ) -> tuple[list[KafkaMessage], dict[Partition, int]]:
        """The records to handle (held partitions, at or above the position) and their ends.

        Records of one partition come in offset order, so each partition's first record
        decides whether any of its records is below the position: the common batch is kept
        whole after two dictionary passes.
        """
        firsts = {(m.topic(), m.partition()): m for m in reversed(messages)}
        keep_all = True
        for key, first in firsts.items():
            position = self.positions.get(key)
            if (self.eos and key not in self.epochs) or (
                position is not None and first.offset() < position
            ):
                keep_all = False
            elif position is None:
                self.first_seen.setdefault(key, first.offset())
        if not keep_all:
            messages = self._filtered(messages)
        ends = {(m.topic(), m.partition()): m.offset() + 1 for m in messages}
        return messages, ends

    def _filtered(self, messages: list[KafkaMessage]) -> list[KafkaMessage]:
        out = []
        for message in messages:
            key = (message.topic(), message.partition())
            if self.eos and key not in self.epochs:
                continue  # fenced or revoked: its records belong to the new owner
            position = self.positions.get(key)
            if position is not None and message.offset() < position:
                self.stats.redelivered += 1
                continue
            out.append(message)
        return out

    def claimed(
        self, claims: dict[Partition, Position], partitions: list[TopicPartition], start: int
    ) -> None:
        """Record new claims; set each assigned partition's start offset on ``partitions``."""
        for part in partitions:
            key = (part.topic, part.partition)
            position = claims.get(key)
            if position is None:
                continue
            self.epochs[key] = position.epoch
            self.first_seen.pop(key, None)
            if position.next_offset is None:
                self.positions.pop(key, None)
                part.offset = start
            else:
                self.positions[key] = position.next_offset
                part.offset = position.next_offset

    def released(self, keys: list[Partition], *, lost: bool = False) -> None:
        """The partitions are no longer this member's (revoked, lost or fenced)."""
        for key in keys:
            if lost:
                self._advice.pop(key, None)  # the new owner may be ahead already
            self.epochs.pop(key, None)
            self.positions.pop(key, None)
            self.first_seen.pop(key, None)

    def advise(self, client: ConsumerClient, ends: dict[Partition, int]) -> None:
        """Tell Kafka the committed positions (after the database commit)."""
        if not self.eos:
            self._commit_to_kafka(client, ends)
            return
        # advice for lag tooling only: the database holds the positions. Committing it after
        # every batch costs the broker as much as a tenth of the sink's rate, so it goes at
        # most once per auto_commit_interval_ms (and on revoke, at the end of a run, on close)
        self._advice.update(ends)
        if time.monotonic() - self._advised_at >= self.advice_every_s:
            self.flush_advice(client)

    def flush_advice(self, client: ConsumerClient, keys: list[Partition] | None = None) -> None:
        advice = self._advice
        chosen = list(advice) if keys is None else [k for k in keys if k in advice]
        if not chosen:
            return
        offsets = [TopicPartition(t, p, advice.pop((t, p))) for t, p in chosen]
        self._advised_at = time.monotonic()
        untyped: Any = client  # the Protocol declares only the synchronous commit
        with suppress(Exception):
            untyped.commit(offsets=offsets, asynchronous=True)
        self.stats.commits += 1

    def _commit_to_kafka(self, client: ConsumerClient, ends: dict[Partition, int]) -> None:
        """at_least_once: after the database commit; a crash before it repeats the batch."""
        offsets = [TopicPartition(t, p, o) for (t, p), o in ends.items()]
        try:
            call_kafka(
                lambda: client.commit(offsets=offsets, asynchronous=False),
                context="commit after the database commit",
                commit=True,
            )
        except KafkaClientError as exc:  # revoked meanwhile: the new owner repeats the batch
            self.stats.note(str(exc))
            return
        self.stats.commits += 1

    def fence(self, client: ConsumerClient, partitions: list[Partition]) -> None:
        """Another member claimed these partitions: stop handling them until reassigned."""
        self.stats.fenced += 1
        _log.warning(
            "fenced: %s were claimed by another member; the batch was rolled back",
            ", ".join(f"{t}[{p}]" for t, p in sorted(partitions)),
        )
        self.released(partitions, lost=True)
        with suppress(Exception):
            client.pause([TopicPartition(t, p) for t, p in partitions])

    def reread(self, client: ConsumerClient, rows: dict[Partition, Position]) -> None:
        """After a failed transaction: keep the claims the database still shows, seek back."""
        lost = [
            tp for tp, epoch in self.epochs.items() if tp not in rows or rows[tp].epoch != epoch
        ]
        if lost:
            self.fence(client, lost)
        for tp in self.epochs:
            offset = rows[tp].next_offset
            if offset is not None:
                self.positions[tp] = offset
        self.rewind(client, list(self.epochs))

    def rewind(self, client: ConsumerClient, partitions: list[Partition]) -> None:
        """Seek partitions back to their committed position (their batch was not committed).

        Raises:
            KafkaClientError: at_least_once: reading Kafka's committed offsets failed.
        """
        targets: dict[Partition, int] = {}
        missing: list[Partition] = []
        for tp in dict.fromkeys(partitions):
            offset = self.positions.get(tp, self.first_seen.get(tp))
            if offset is None:
                missing.append(tp)
            else:
                targets[tp] = offset
        if missing and not self.eos:  # at_least_once: Kafka's committed offsets
            committed = call_kafka(
                lambda: client.committed([TopicPartition(t, p) for t, p in missing], 10.0),
                context="committed",
            )
            for found in committed:
                if found.offset >= 0:
                    targets[(found.topic, found.partition)] = found.offset
        refused: list[TopicPartition] = []
        for (topic, partition), offset in targets.items():
            target = TopicPartition(topic, partition, offset)
            try:
                with translating(f"seek {topic}[{partition}]"):
                    client.seek(target)
            except KafkaClientError:  # not fetching yet: assigning again sets the position
                refused.append(target)
            self.stats.rewinds += 1
        if refused:
            # in one call: under the eager protocol each call replaces the whole assignment,
            # and a partition just assigned has no position yet for the next call to keep
            try:
                reassign(client, refused, at_offsets=True)
            except KafkaClientError as exc:  # no longer held: the next owner starts there
                self.stats.note(str(exc))
                _log.warning("rewind by assigning again: %s", exc)
