"""Network faults against an exactly-once Processor and an at-least-once Consumer.

One case, on the 3-node ``kafka_cluster3_proxied`` cluster (Toxiproxy before every broker):

* **placement**: one broker is the *coordinator* (the ``__consumer_offsets`` partition of both
  groups and the ``__transaction_state`` partition of the processor's transactional id are led
  by it: the names are chosen by Kafka's ``abs(hashCode) % partitions``, and the group's is
  checked against the broker's answer); the input and output topics (4 partitions, RF 3) are
  led by the two others, so a *leader* cut and a *coordinator* cut are separate faults.
* **source**: an SDK ``Producer`` (at_least_once, :mod:`tests.reliability._source`) on the
  brokers' direct listener, which no fault reaches, writes ``records`` numbered records at
  ``RATE``/s: ``PRE_S`` seconds' worth first, the rest once the fault starts, so input keeps
  arriving through the fault and for ``POST_S`` s after it.
* **clients under test**, through the proxies: processor ``a`` (``tests.reliability.worker``,
  exactly_once, transaction timeout 10 s, session timeout 6 s) copying input → output, and the
  chosen ``clients`` of tests/reliability/_clients.py (the at-least-once and at-most-once SDK
  ``Consumer``, the queue, the database sink), each in its own group, all coordinated by the
  coordinator broker.
* **the fault** (the test's ``inject``), then **recovery**: the seconds from the heal until
  every input partition's position has moved past where it stood at the heal (read every
  0.2 s: the group's committed offsets on the direct listener; the sink's positions table; the
  queue's handlings per partition).
* **counting**, not by the SDK: the input and the output with kafka-python (output
  ``read_committed``), the clients' handlings by SQL.
"""

from __future__ import annotations

import itertools
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from sdk.profiles import Guarantee
from sdk.testing.cluster import LocalCluster
from sdk.testing.cluster._proxy import NetworkFaults
from tests.reliability._clients import ClientProcess, make_client
from tests.reliability._faults import ProcessorProcess
from tests.reliability._pipeline import COUNTERS
from tests.reliability._source import SourceStage
from tests.sdk.processor._support import wait_for

PARTITIONS = 4
RATE = 250.0
"""Source records/s unless a case is given its number of records."""
PRE_S = 5.0
POST_S = 10.0
TRANSACTION_TIMEOUT_MS = 10_000
SESSION_TIMEOUT_MS = 6_000
RECOVERY_LIMIT_S = 120.0
"""Past this without every partition moving after the heal, a client is wedged (a failure)."""


def java_hash(text: str) -> int:
    """Java's ``String.hashCode`` (for ASCII text), as a signed 32-bit int."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator_partition(key: str, partitions: int) -> int:
    """The internal-topic partition of a group or transactional id (Kafka's ``Utils.abs``)."""
    h = java_hash(key)
    return 0 if h == -(1 << 31) else abs(h) % partitions


def network_of(cluster: LocalCluster) -> NetworkFaults:
    """The cluster's network faults (the fixture starts it with ``network_faults=True``)."""
    assert cluster.network is not None, "needs LocalCluster(network_faults=True)"
    return cluster.network


def warm_up(cluster: LocalCluster) -> None:
    """Create ``__consumer_offsets`` and ``__transaction_state`` and wait for their leaders."""
    from confluent_kafka import Producer

    bs = network_of(cluster).direct_bootstrap_servers
    producer = Producer({"bootstrap.servers": bs, "transactional.id": f"warm-{uuid.uuid4()}"})
    producer.init_transactions(60)
    probe = Consumer({"bootstrap.servers": bs, "group.id": f"warm-{uuid.uuid4()}"})
    wait_for(lambda: _committed_or_none(probe, "warm", 1) is not None, 60, "__consumer_offsets")
    probe.close()
    admin = AdminClient({"bootstrap.servers": bs})
    for topic in ("__consumer_offsets", "__transaction_state"):
        wait_for(lambda t=topic: all(_leaders(admin, t).values()), 60, f"{topic} leaders")


def _leaders(admin: AdminClient, topic: str) -> dict[int, int]:
    """Leader of each partition of ``topic`` (0 for none yet: node ids start at 1)."""
    try:
        meta = admin.list_topics(topic=topic, timeout=10).topics[topic]
    except (KafkaException, KeyError):
        return {0: 0}
    if meta.error is not None or not meta.partitions:
        return {0: 0}
    return {p: max(m.leader, 0) for p, m in meta.partitions.items()}


def _committed_or_none(probe: Consumer, topic: str, partitions: int) -> dict[int, int] | None:
    try:
        asked = [TopicPartition(topic, p) for p in range(partitions)]
        return {tp.partition: max(tp.offset, 0) for tp in probe.committed(asked, timeout=5)}
    except KafkaException:  # coordinator loading or moving
        return None


@dataclass
class FrontEnd:
    """What one client under test did in a case."""

    name: str
    guarantee: str
    records: int
    handled: int = 0
    lost: int = 0
    duplicated: int = 0
    out_of_order: int = 0
    during_fault: int = 0
    """How far the positions moved between the fault's start and the heal (records)."""
    first_progress_s: float | None = None
    """Seconds from the heal to the first progress on any partition."""
    recovery_s: float | None = None
    """Seconds from the heal until every partition's position has moved."""
    counters: dict[str, Any] = field(default_factory=dict)


@dataclass
class CaseResult:
    """One case, as reported in docs/reliability.md."""

    fault: str
    records: int
    fault_s: float
    coordinator: int
    leaders: list[int]
    front_ends: list[FrontEnd]
    wall_s: float
    notes: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready copy."""
        return asdict(self)


class NetworkCase:
    """One fault against the processor and the chosen ``clients``; see the module.

    ``records``: how many the source writes, spread over the case at a steady rate (default:
    :data:`RATE` records/s).
    """

    def __init__(
        self,
        cluster: LocalCluster,
        tmp: Path,
        fault: str,
        fault_s: float,
        *,
        clients: Sequence[str] = ("consumer",),
        records: int | None = None,
        worker_extra: dict[str, Any] | None = None,
        log: Callable[[str], None] = print,
    ) -> None:
        self.cluster = cluster
        self.network = network_of(cluster)
        self.direct = self.network.direct_bootstrap_servers
        self.tmp = tmp
        self.fault = fault
        self.fault_s = fault_s
        self.log = log
        span = PRE_S + fault_s + POST_S
        self.records = records or int(RATE * span)
        self.rate = self.records / span
        self.coordinator = cluster.node_ids[-1]
        self.leaders = [n for n in cluster.node_ids if n != self.coordinator]
        self.leader = self.leaders[0]
        tag = f"nf-{fault.replace('_', '')}-{uuid.uuid4().hex[:6]}"
        self.input = self._topic(f"{tag}-in")
        self.output = self._topic(f"{tag}-out")
        self.group = self._coordinated(f"{tag}-p", "__consumer_offsets")
        self.txn_prefix = self._coordinated(f"{tag}-t", "__transaction_state", suffix="-a") + "-"
        self.clients: list[ClientProcess] = [
            make_client(
                name,
                tmp,
                cluster.bootstrap_servers,
                self.input,
                self._coordinated(f"{tag}-{name.replace('_', '')}", "__consumer_offsets"),
                PARTITIONS,
                self.committed,
            )
            for name in clients
        ]
        self.gate = tmp / "a.gate"
        self.processor_args = {
            "bootstrap": cluster.bootstrap_servers,
            "group": self.group,
            "input": self.input,
            "output": self.output,
            "guarantee": "exactly_once",
            "txn_prefix": self.txn_prefix,
            "transaction_timeout_ms": TRANSACTION_TIMEOUT_MS,
            "session_timeout_ms": SESSION_TIMEOUT_MS,
            "commit_interval_ms": 100,
            "batch_size": 500,
            "gate": str(self.gate),
            "freeze": str(tmp / "a.freeze"),
            **(worker_extra or {}),
        }
        self.processor: ProcessorProcess | None = None
        self.probes: dict[str, Consumer] = {}
        self.healed_at = 0.0
        self.notes: dict[str, str] = {}

    # ------------------------------------------------------------------ placement
    def _topic(self, name: str) -> str:
        """Create ``name``: 4 partitions, RF 3, led (preferred) by the non-coordinator brokers."""
        admin = AdminClient({"bootstrap.servers": self.direct})
        first, second = self.leaders
        assignment = [
            [first, second, self.coordinator] if p % 2 == 0 else [second, first, self.coordinator]
            for p in range(PARTITIONS)
        ]
        admin.create_topics([NewTopic(name, PARTITIONS, replica_assignment=assignment)])[
            name
        ].result(60)
        want = {p: a[0] for p, a in enumerate(assignment)}
        wait_for(lambda: _leaders(admin, name) == want, 60, f"{name} leaders {want}")
        return name

    def _coordinated(self, prefix: str, internal: str, suffix: str = "") -> str:
        """A name ``<prefix><n>`` whose ``<name><suffix>`` is coordinated by the coordinator."""
        admin = AdminClient({"bootstrap.servers": self.direct})
        leaders = _leaders(admin, internal)
        for n in itertools.count():
            name = f"{prefix}{n}"
            if leaders[coordinator_partition(name + suffix, len(leaders))] == self.coordinator:
                return name
        raise AssertionError("unreachable")

    def check_group_coordinator(self, group: str) -> None:
        """The broker itself names the predicted coordinator for ``group``."""
        admin = AdminClient({"bootstrap.servers": self.direct})

        def named() -> bool:
            try:
                found = admin.describe_consumer_groups([group])[group].result(timeout=10)
            except KafkaException:
                return False
            return bool(found.coordinator.id == self.coordinator)

        wait_for(named, 60, f"group {group} to be coordinated by {self.coordinator}")

    # ------------------------------------------------------------------ progress
    def committed(self, group: str) -> dict[int, int] | None:
        """The group's committed offset per input partition (direct listener), None if unknown."""
        if group not in self.probes:
            self.probes[group] = Consumer({"bootstrap.servers": self.direct, "group.id": group})
        return _committed_or_none(self.probes[group], self.input, PARTITIONS)

    def positions(self) -> dict[str, Callable[[], dict[int, int] | None]]:
        """Front end name -> how to read its position per input partition."""
        found: dict[str, Callable[[], dict[int, int] | None]] = {
            "processor": lambda: self.committed(self.group)
        }
        for client in self.clients:
            found[client.name] = client.position
        return found

    def check_alive(self) -> None:
        """Fail at once, with its log, if a client under test has exited."""
        if self.processor is not None and self.processor.proc.poll() is not None:
            tail = self.processor.log_path.read_text(errors="replace")[-3000:]
            raise AssertionError(f"processor a exited {self.processor.proc.returncode}:\n{tail}")
        for client in self.clients:
            if (why := client.exited()) is not None:
                raise AssertionError(why)

    def hold(self, seconds: float) -> None:
        """Sleep ``seconds`` while watching that the clients under test stay alive."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.check_alive()
            time.sleep(min(0.5, max(0.0, end - time.monotonic())))

    def heal(self, broker: int | None = None) -> None:
        """Heal the network and note when (recovery is counted from here)."""
        self.network.heal(broker)
        self.healed_at = time.monotonic()

    def diagnostics(self) -> str:
        """Counters and log tails of the clients under test."""
        parts = []
        if self.processor is not None:
            stats = {k: v for k, v in self.processor.stats().items() if k != "events"}
            events = self.processor.stats().get("events", [])[-10:]
            parts.append(f"processor stats {stats}\nlast events {events}")
            parts.append(f"processor stacks:\n{self.processor.stacks()}")
        for client in self.clients:
            parts.append(f"{client.name} log:\n{client.tail()}")
        return "\n".join(parts)

    # ------------------------------------------------------------------ the case
    def run(self, inject: Callable[[NetworkCase], None]) -> CaseResult:
        """Start everything, ``inject`` the fault (it must call :meth:`heal`), count."""
        started = time.monotonic()
        source = SourceStage(
            self.direct,
            self.input,
            Guarantee.AT_LEAST_ONCE,
            self.records,
            rate=self.rate,
            # a steady stream (0.1 s apart), so every partition gets input all along
            chunk=max(25, int(self.rate / 10)),
            log=self.log,
        )
        positions = self.positions()
        front = {name: FrontEnd(name, "exactly_once", self.records) for name in positions}
        for client in self.clients:
            front[client.name].guarantee = client.guarantee
        try:
            self.processor = ProcessorProcess(self.tmp, "a", self.processor_args)
            for client in self.clients:
                client.start()
            source.allow(int(self.rate * PRE_S))
            source.start()
            want = int(self.rate * PRE_S * 0.6)
            for name, position in positions.items():

                def ready(read: Callable[[], dict[int, int] | None] = position) -> bool:
                    self.check_alive()
                    return sum((read() or {}).values()) >= want

                wait_for(ready, 90, f"{name} to commit {want} records")
            for group in [self.group] + [c.group for c in self.clients]:
                self.check_group_coordinator(group)
            at_fault = {n: read() or {} for n, read in positions.items()}
            self.log(f"[{self.fault}] {self.records:,} records; fault at {at_fault}")
            source.allow(self.records)
            t0 = time.monotonic()
            inject(self)
            assert self.healed_at > t0, "the fault never healed"
            self.notes["fault_held_s"] = f"{self.healed_at - t0:.1f}"
            self._recovery(front, at_fault)
            source.join(120)
            assert source.error is None, f"source failed: {source.error!r}"
            self._drain(source)
        except BaseException:
            self.log(f"[{self.fault}] failed; {self.diagnostics()}")
            raise
        finally:
            if self.processor is not None:
                self.processor.shutdown()
                front["processor"].counters = {
                    c: self.processor.stats().get(c, 0) for c in COUNTERS
                }
            for client in self.clients:
                front[client.name].counters = client.stop()
            for probe in self.probes.values():
                probe.close()
        self._count(front)
        result = CaseResult(
            self.fault,
            self.records,
            self.fault_s,
            self.coordinator,
            self.leaders,
            list(front.values()),
            round(time.monotonic() - started, 1),
            self.notes,
        )
        self.log(f"[{self.fault}] {json.dumps(result.as_dict())}")
        return result

    def _recovery(self, front: dict[str, FrontEnd], at_fault: dict[str, dict[int, int]]) -> None:
        positions = self.positions()
        at_heal = {n: read() or at_fault[n] for n, read in positions.items()}
        for name in positions:
            front[name].during_fault = sum(at_heal[name].values()) - sum(at_fault[name].values())
        pending = dict(positions)
        while pending:
            self.check_alive()
            now = time.monotonic()
            for name, read in list(pending.items()):
                offsets = read()
                moved = [p for p in range(PARTITIONS) if offsets and offsets[p] > at_heal[name][p]]
                if moved and front[name].first_progress_s is None:
                    front[name].first_progress_s = round(now - self.healed_at, 1)
                if len(moved) == PARTITIONS:
                    front[name].recovery_s = round(now - self.healed_at, 1)
                    del pending[name]
            if pending and now - self.healed_at > RECOVERY_LIMIT_S:
                raise AssertionError(
                    f"{sorted(pending)} made no progress on every partition within "
                    f"{RECOVERY_LIMIT_S:.0f}s of the heal (wedged); at the heal {at_heal}, now "
                    f"{ {n: read() for n, read in pending.items()} }"
                )
            time.sleep(0.2)

    def _drain(self, source: SourceStage) -> None:
        ends = dict(source.next_offsets)

        def drained() -> bool:
            self.check_alive()
            processor = self.committed(self.group)
            return (
                processor is not None
                and all(processor.get(p, 0) >= o for p, o in ends.items())
                and all(client.drained(ends) for client in self.clients)
            )

        wait_for(drained, 180, "all input committed", every=0.5)

    def _count(self, front: dict[str, FrontEnd]) -> None:
        expected = set(range(self.records))
        inputs = read_values(self.direct, self.input, committed=False)
        values = [v for _, v in inputs]
        assert sorted(values) == sorted(expected), "the source did not write each record once"
        output = read_values(self.direct, self.output, committed=True)
        p = front["processor"]
        p.handled = len(output)
        seen = {v for _, v in output}
        p.lost, p.duplicated = len(expected - seen), len(output) - len(seen)
        per_key: dict[str, list[int]] = {}
        for key, value in output:
            per_key.setdefault(key, []).append(value)
        p.out_of_order = sum(
            1 for vs in per_key.values() for a, b in itertools.pairwise(vs) if b <= a
        )
        for client in self.clients:
            counts = client.counts()
            c = front[client.name]
            c.handled = sum(counts.values())
            c.lost = len(expected - set(counts))
            c.duplicated = sum(n - 1 for n in counts.values())


def read_values(bootstrap: str, topic: str, *, committed: bool) -> list[tuple[str, int]]:
    """Every record of ``topic`` as (key, value), in offset order per partition, read by
    kafka-python (not librdkafka, not the SDK); ``committed``: read_committed."""
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap.split(","),
        isolation_level="read_committed" if committed else "read_uncommitted",
        enable_auto_commit=False,
        group_id=None,
    )
    try:
        tps = [KafkaTopicPartition(topic, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        out: list[tuple[str, int]] = []
        deadline = time.monotonic() + 120
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: not read to {ends} within 120s")
            for records in consumer.poll(timeout_ms=500, max_records=5_000).values():
                out += [(r.key.decode(), int(r.value)) for r in records]
        return out
    finally:
        consumer.close()
