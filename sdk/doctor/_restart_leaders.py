"""Preferred leaders: which partitions lead elsewhere after restarts, and the election back.

A broker that returns from a restart leads nothing until a preferred leader election gives it
back the partitions whose first replica it is (automatic every
``leader.imbalance.check.interval.seconds`` when ``auto.leader.rebalance.enable`` is on).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition

from sdk._client import timeout_error, translating
from sdk.doctor._restart_read import (
    AdminTarget,
    PartitionState,
    admin_client,
    future_result,
    read_cluster_state,
)
from sdk.errors import from_kafka_error

__all__ = ["ElectionResult", "elect_preferred_leaders", "preferred_leaders"]


def preferred_leaders(target: AdminTarget, *, timeout_s: float = 30.0) -> list[PartitionState]:
    """The partitions not led by their preferred replica (the first of their replica set).

    Args:
        target: An ``AdminClient``, bootstrap servers, or a librdkafka config.
        timeout_s: Seconds for each request to the cluster.

    Returns:
        Those partitions, sorted (an offline one, leader -1, included).

    Raises:
        ConfigurationError: Bad ``target``.
        BrokerUnreachableError: No broker answered.
        KafkaTimeoutError: The cluster did not answer in time.
        KafkaClientError: Another error of the admin API.
    """
    state = read_cluster_state(admin_client(target), timeout_s=timeout_s)
    return [p for p in state.partitions if p.replicas and p.leader != p.replicas[0]]


class ElectionResult(NamedTuple):
    """The outcome of a preferred leader election for one partition (error None: led by it)."""

    topic: str
    partition: int
    error: str | None


def elect_preferred_leaders(
    target: AdminTarget,
    partitions: Sequence[tuple[str, int]] | None = None,
    *,
    timeout_s: float = 60.0,
) -> list[ElectionResult]:
    """Run a preferred leader election; return once the metadata shows the new leaders.

    A partition whose preferred replica is not in its ISR (not running, or still catching up)
    cannot be elected (PREFERRED_LEADER_NOT_AVAILABLE); it is reported, not retried.

    Args:
        target: An ``AdminClient``, bootstrap servers, or a librdkafka config.
        partitions: ``(topic, partition)`` pairs; None for every partition
            :func:`preferred_leaders` lists now.
        timeout_s: The longest wait in seconds.

    Returns:
        One result per partition, sorted.

    Raises:
        ConfigurationError: Bad ``target``.
        AuthorizationError: The principal may not alter the cluster.
        KafkaTimeoutError: No answer, or the new leaders not in the metadata, in time.
        KafkaClientError: Another error of the admin API.
    """
    admin = admin_client(target)
    deadline = time.monotonic() + timeout_s
    if partitions is None:
        partitions = [(p.topic, p.partition) for p in preferred_leaders(admin, timeout_s=timeout_s)]
    wanted = sorted(set(partitions))
    if not wanted:
        return []
    context = f"preferred leader election of {len(wanted)} partition(s)"
    with translating(context):
        # no request_timeout/operation_timeout: confluent-kafka 2.16's elect_leaders fails with
        # SystemError when given any keyword argument
        future = admin.elect_leaders(
            ElectionType.PREFERRED, [TopicPartition(t, p) for t, p in wanted]
        )
    outcome: dict[Any, Any] = future_result(future, context, timeout_s)
    results = sorted(
        ElectionResult(tp.topic, tp.partition, _election_error(err)) for tp, err in outcome.items()
    )
    elected = {(r.topic, r.partition) for r in results if r.error is None}
    while elected:  # the controller has elected them; the brokers' metadata follows
        led = preferred_leaders(admin, timeout_s=max(1.0, deadline - time.monotonic()))
        if not elected & {(p.topic, p.partition) for p in led}:
            break
        if time.monotonic() > deadline:
            raise from_kafka_error(
                timeout_error("the elected leaders are not in the metadata yet"), context=context
            )
        time.sleep(0.2)
    return results


def _election_error(err: KafkaError | KafkaException | None) -> str | None:
    """None when the partition is (now) led by its preferred replica, else why not."""
    if err is None:
        return None
    kafka_error = err.args[0] if isinstance(err, KafkaException) and err.args else err
    code = kafka_error.code() if isinstance(kafka_error, KafkaError) else None
    if code == KafkaError.ELECTION_NOT_NEEDED:
        return None
    if code == KafkaError.PREFERRED_LEADER_NOT_AVAILABLE:
        return "the preferred replica is not in the ISR (not running, or still catching up)"
    return str(kafka_error.str() if isinstance(kafka_error, KafkaError) else kafka_error)
