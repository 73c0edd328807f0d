"""Rolling restarts: may this broker be stopped now, and which partitions lead elsewhere.

Stopping a broker removes it from the ISR of every partition it replicates. A partition whose
ISR would then hold fewer than ``min.insync.replicas`` refuses ``acks=all`` writes
(NOT_ENOUGH_REPLICAS: every at_least_once and exactly_once producer stalls); one whose ISR
would be empty goes offline (no leader: nothing can be read or written, and with unclean
election off it stays so until a replica that was in sync returns). :func:`restart_check`
names those partitions; :func:`wait_until_safe` waits until there are none and the broker's
partitions are fully replicated again (the restarted broker before it caught up).

After restarts, leadership is skewed: a broker that returns leads nothing until a preferred
leader election (automatic every ``leader.imbalance.check.interval.seconds`` when
``auto.leader.rebalance.enable`` is on) gives it back the partitions whose first replica it is.
:func:`preferred_leaders` lists the partitions not led by their preferred replica and
:func:`elect_preferred_leaders` runs the election (both from :mod:`sdk.doctor._restart_leaders`).

The command line (``python -m sdk doctor restart-check|preferred-leaders``) is :func:`main`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sdk._client import timeout_error
from sdk.doctor._restart_leaders import (
    ElectionResult,
    elect_preferred_leaders,
    preferred_leaders,
)
from sdk.doctor._restart_read import (
    AdminTarget,
    ClusterState,
    PartitionState,
    admin_client,
    read_cluster_state,
)
from sdk.errors import (
    BrokerUnreachableError,
    ConfigurationError,
    KafkaClientError,
    KafkaTimeoutError,
    from_kafka_error,
    is_transient,
)

__all__ = [
    "ClusterState",
    "ElectionResult",
    "PartitionRisk",
    "PartitionState",
    "RestartVerdict",
    "WaitProgress",
    "elect_preferred_leaders",
    "judge",
    "main",
    "preferred_leaders",
    "restart_check",
    "wait_until_safe",
]

OFFLINE = "would go offline"


def below_min_isr(left: int, min_isr: int) -> str:
    """The reason given for a partition whose ISR would fall below its min ISR."""
    return f"ISR would fall below min.insync.replicas ({left} < {min_isr})"


class PartitionRisk(NamedTuple):
    """A partition that stopping the broker would make unavailable, and why."""

    topic: str
    partition: int
    why: str


@dataclass(frozen=True)
class RestartVerdict:
    """Whether a broker may be stopped now, and what the answer rests on.

    Attributes:
        broker_id: The broker judged.
        safe: No partition would go offline or below its min ISR, and the KRaft controller
            quorum would keep its majority.
        at_risk: The partitions that would, sorted.
        quorum_risk: Why the controller quorum would lose its majority, or None.
        caught_up: Every partition with a replica on the broker has all its replicas in sync.
        lagging: The partitions with a replica on the broker that are under-replicated now.
        broker_running: The broker is in the metadata (a stopped one is not).
        hosted: Partitions with a replica on the broker.
        leads: Partitions the broker leads (a controlled shutdown moves them first).
        state: The snapshot judged.
    """

    broker_id: int
    safe: bool
    at_risk: list[PartitionRisk]
    quorum_risk: str | None
    caught_up: bool
    lagging: list[PartitionState]
    broker_running: bool
    hosted: int
    leads: int
    state: ClusterState

    @property
    def ready(self) -> bool:
        """Safe and caught up: what :func:`wait_until_safe` waits for by default."""
        return self.safe and self.caught_up

    @property
    def unfixable(self) -> list[PartitionState]:
        """The partitions at risk however long one waits: fewer replicas than min ISR + 1."""
        at_risk = {(r.topic, r.partition) for r in self.at_risk}
        return [
            p
            for p in self.state.partitions
            if (p.topic, p.partition) in at_risk and len(p.replicas) - 1 < max(p.min_isr, 1)
        ]

    def summary(self) -> str:
        """One line: the answer and the counts it rests on."""
        if self.safe:
            head = f"broker {self.broker_id} may be stopped now"
        else:
            head = f"broker {self.broker_id} may NOT be stopped now"
        parts = [f"{len(self.at_risk)} partition(s) at risk"] if self.at_risk else []
        if self.quorum_risk:
            parts.append(self.quorum_risk)
        lag = f"{len(self.lagging)} of its {self.hosted} partitions under-replicated"
        parts.append(lag if self.lagging else f"all {self.hosted} of its partitions in sync")
        if not self.broker_running:
            parts.append("it is not running")
        return f"{head}: {'; '.join(parts)}"

    def to_dict(self) -> dict[str, Any]:
        """The verdict and what was read, for ``--json``."""
        return {
            "broker": self.broker_id,
            "safe": self.safe,
            "caught_up": self.caught_up,
            "at_risk": [r._asdict() for r in self.at_risk],
            "quorum_risk": self.quorum_risk,
            "lagging": [_partition_dict(p) for p in self.lagging],
            "broker_running": self.broker_running,
            "hosted": self.hosted,
            "leads": self.leads,
            "read": {
                "brokers": list(self.state.brokers),
                "controller": self.state.controller_id,
                "quorum_voters": list(self.state.quorum_voters),
                "topics": len(self.state.min_isr),
                "partitions": len(self.state.partitions),
                "min_isr": self.state.min_isr,
                "min_isr_source": self.state.min_isr_source,
            },
        }


def _partition_dict(p: PartitionState) -> dict[str, object]:
    return {
        "topic": p.topic,
        "partition": p.partition,
        "leader": p.leader,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
        "min_isr": p.min_isr,
    }


def judge(state: ClusterState, broker_id: int) -> RestartVerdict:
    """Judge a snapshot: what stopping ``broker_id`` would do (pure; no I/O).

    A partition is at risk when the broker is in its ISR and the ISR without it would be
    empty (offline) or smaller than the topic's ``min.insync.replicas``. A partition the broker
    is not in sync for loses nothing when it stops. The quorum is at risk when the broker is
    a KRaft voter (a combined broker+controller node) and fewer than a majority of the voters
    would be left running; a voter that is no broker and holds no replica is a dedicated
    controller, which the admin API cannot see, and is taken to be running.

    Args:
        state: The snapshot.
        broker_id: The broker to stop.

    Returns:
        The verdict.

    Raises:
        ConfigurationError: No broker, replica or voter has that id.
    """
    running = broker_id in state.brokers
    known = running or broker_id in state.replica_brokers or broker_id in state.quorum_voters
    if not known:
        raise ConfigurationError(
            f"broker {broker_id} is not in the cluster (running brokers: "
            f"{', '.join(map(str, state.brokers)) or 'none'})",
            field="broker",
        )
    at_risk: list[PartitionRisk] = []
    lagging: list[PartitionState] = []
    hosted = leads = 0
    for p in state.partitions:
        if broker_id in p.replicas:
            hosted += 1
            if not p.fully_in_sync:
                lagging.append(p)
        leads += p.leader == broker_id
        if broker_id not in p.isr:
            continue
        left = len(p.isr) - 1
        if left == 0:
            at_risk.append(PartitionRisk(p.topic, p.partition, OFFLINE))
        elif left < p.min_isr:
            at_risk.append(PartitionRisk(p.topic, p.partition, below_min_isr(left, p.min_isr)))
    quorum_risk = _quorum_risk(state, broker_id) if running else None
    return RestartVerdict(
        broker_id=broker_id,
        safe=not at_risk and quorum_risk is None,
        at_risk=at_risk,
        quorum_risk=quorum_risk,
        caught_up=not lagging,
        lagging=lagging,
        broker_running=running,
        hosted=hosted,
        leads=leads,
        state=state,
    )


def _quorum_risk(state: ClusterState, broker_id: int) -> str | None:
    voters = state.quorum_voters
    if broker_id not in voters or not state.controller_roles:
        return None
    seen = set(state.brokers) | state.replica_brokers
    running = {v for v in voters if v in state.brokers or v not in seen}
    left = len(running - {broker_id})
    majority = len(voters) // 2 + 1
    if left >= majority:
        return None
    return (
        f"the KRaft controller quorum would lose its majority ({left} of {len(voters)} "
        f"voters left, {majority} needed)"
    )


def restart_check(
    target: AdminTarget, broker_id: int, *, timeout_s: float = 30.0
) -> RestartVerdict:
    """May ``broker_id`` be stopped now without any partition going offline or below min ISR?

    Args:
        target: An ``AdminClient``, bootstrap servers, or a librdkafka config.
        broker_id: The broker (its ``node.id``).
        timeout_s: Seconds for each request to the cluster.

    Returns:
        The verdict (``.safe``, ``.at_risk``, and the snapshot it judged).

    Raises:
        ConfigurationError: Bad ``broker_id`` or ``target``, or no such broker.
        BrokerUnreachableError: No broker answered.
        KafkaTimeoutError: The cluster did not answer in time.
        AuthorizationError: The principal may not describe the cluster or the topics' configs.
        KafkaClientError: Another error of the admin API.
    """
    if isinstance(broker_id, bool) or not isinstance(broker_id, int) or broker_id < 0:
        raise ConfigurationError(
            f"broker id must be an int >= 0, got {broker_id!r}", field="broker"
        )
    state = read_cluster_state(admin_client(target), timeout_s=timeout_s, config_broker=broker_id)
    return judge(state, broker_id)


class WaitProgress(NamedTuple):
    """One poll of :func:`wait_until_safe`: the verdict, or the error that prevented one."""

    elapsed_s: float
    verdict: RestartVerdict | None
    error: KafkaClientError | None

    @property
    def line(self) -> str:
        """A progress line: what is still in the way."""
        head = f"{self.elapsed_s:6.1f}s"
        if self.verdict is None:
            return f"{head} cluster not readable: {self.error}"
        v = self.verdict
        waiting = []
        if v.at_risk:
            names = ", ".join(f"{r.topic}[{r.partition}]" for r in v.at_risk[:3])
            more = ", ..." if len(v.at_risk) > 3 else ""
            waiting.append(f"{len(v.at_risk)} partition(s) at risk ({names}{more})")
        if v.quorum_risk:
            waiting.append(v.quorum_risk)
        if v.lagging and not v.at_risk:  # else mostly the same partitions again
            names = ", ".join(
                f"{p.name} ISR {_ids(p.isr)} of {_ids(p.replicas)}" for p in v.lagging[:3]
            )
            more = ", ..." if len(v.lagging) > 3 else ""
            waiting.append(f"{len(v.lagging)} under-replicated ({names}{more})")
        elif v.lagging:
            waiting.append(f"{len(v.lagging)} under-replicated")
        if not waiting:
            return f"{head} broker {v.broker_id}: safe, all its partitions in sync"
        return f"{head} broker {v.broker_id}: waiting for {'; '.join(waiting)}"


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids)) or "-"


def wait_until_safe(
    target: AdminTarget,
    broker_id: int,
    timeout_s: float = 600.0,
    *,
    full_isr: bool = True,
    poll_s: float = 1.0,
    progress: Callable[[WaitProgress], None] | None = None,
) -> RestartVerdict:
    """Block until ``broker_id`` may be stopped: safe, and (``full_isr``) caught up.

    Caught up means every partition with a replica on ``broker_id`` has its whole replica set
    in sync: the broker restarted before this one has caught up on everything the two share.
    Only those partitions can lose availability when ``broker_id`` stops; one that is fully
    replicated keeps ``RF - 1`` in-sync replicas. With ``full_isr=False`` it waits only until
    nothing is at risk (for a cluster with a replica that will not come back soon).

    Args:
        target: An ``AdminClient``, bootstrap servers, or a librdkafka config.
        broker_id: The broker to stop next.
        timeout_s: The longest wait in seconds.
        full_isr: Wait for the broker's partitions to be fully in sync, not only safe.
        poll_s: Seconds between reads.
        progress: Called after every read (its ``.line`` is a progress line).

    Returns:
        The verdict that ended the wait.

    Raises:
        KafkaTimeoutError: Not safe (or not caught up) within ``timeout_s``; the message names
            what is still in the way.
        ConfigurationError: Bad ``broker_id`` or ``target``, or no such broker; or a partition
            at risk has too few replicas for waiting to help (one replica, or no more than its
            min ISR): raised at once, naming them.
        AuthorizationError: The principal may not describe the cluster or the topics' configs.
        KafkaClientError: A non-transient error of the admin API (a transient one, such as a
            broker that does not answer while it restarts, is retried until the deadline).
    """
    admin = admin_client(target)
    started = time.monotonic()
    deadline = started + timeout_s
    last: WaitProgress | None = None
    while True:
        request_s = max(1.0, min(30.0, deadline - time.monotonic()))
        try:
            verdict = restart_check(admin, broker_id, timeout_s=request_s)
            last = WaitProgress(time.monotonic() - started, verdict, None)
        except (BrokerUnreachableError, KafkaTimeoutError) as exc:
            last = WaitProgress(time.monotonic() - started, None, exc)
        except KafkaClientError as exc:
            if not is_transient(exc.kafka_error):
                raise
            last = WaitProgress(time.monotonic() - started, None, exc)
        if progress is not None:
            progress(last)
        got = last.verdict
        if got is not None and got.safe and (got.caught_up or not full_isr):
            return got
        if got is not None and got.unfixable:
            raise _unfixable(got)
        if time.monotonic() + poll_s > deadline:
            reason = last.line.split(": ", 1)[-1]
            raise from_kafka_error(
                timeout_error(f"broker {broker_id} not ready after {timeout_s:g}s: {reason}"),
                context=f"waiting until broker {broker_id} may be stopped",
            )
        time.sleep(poll_s)


def _unfixable(verdict: RestartVerdict) -> ConfigurationError:
    shown = verdict.unfixable[:5]
    names = ", ".join(
        f"{p.name} ({len(p.replicas)} replica(s), min.insync.replicas {p.min_isr})" for p in shown
    )
    more = f" and {len(verdict.unfixable) - len(shown)} more" if len(verdict.unfixable) > 5 else ""
    return ConfigurationError(
        f"stopping broker {verdict.broker_id} makes {names}{more} unavailable however long one "
        "waits: add replicas (kafka-reassign-partitions) or accept the outage",
        field="replication.factor",
    )


def main(argv: list[str]) -> int:
    """Run ``restart-check`` or ``preferred-leaders`` (``argv`` is what follows ``doctor``).

    Returns:
        The exit status: 0 safe / all preferred, 1 unsafe / some not preferred, 2 could not
        tell (bad arguments, cluster unreachable, no permission).
    """
    from sdk.doctor._restart_cli import run

    return run(argv)


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
