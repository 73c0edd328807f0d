"""Fault injection for the reliability pipeline: brokers (via ``LocalCluster``) and processors.

Every fault is made deterministic by waiting for a *state* rather than a time:

* ``leader_kill``: SIGKILL the leader of input partition 0 while the source stage is producing,
  wait for the new leader, restart the node, wait for full ISRs.
* ``broker_bounce``: for each node in turn, clean stop (controlled shutdown) + restart; before
  each stop, wait until the node may go (``sdk doctor restart-check --wait``: no partition would
  fall below ``min.insync.replicas=2`` or go offline, every partition it hosts fully in sync:
  otherwise writes would stall), and for full ISRs after the last.
* ``processor_kill``: SIGKILL processor ``a`` and start it again with the same instance id.
* ``zombie``: (exactly_once) processor ``b``'s handler is held while its open transaction already
  holds records (freeze file), then the process is SIGSTOPped for longer than both the
  transaction timeout and the session timeout, then SIGCONTed. (Other guarantees: the SIGSTOP
  happens at once; they have no transaction to hold open.)
* ``coordinator_kill``: (exactly_once) processor ``a`` is held just before commit step 3
  (``commit_transaction``) by a gate file; the transaction coordinator of its transactional id is
  found with the Java Admin API (``TransactionsCommand describe``), frozen (SIGSTOP), the gate is
  opened so the commit request goes to the frozen coordinator, and after 1 s — the commit call is
  then blocked on a coordinator that cannot answer — the coordinator is SIGKILLed and restarted.
  The note gives the seconds from the kill to ``a``'s next committed transaction (its stats,
  dumped every 0.5 s, show one more commit), measured while the node restarts.
* ``fenced_zombie``: (exactly_once, not in the default sequence) ``a`` is SIGSTOPped while its
  open transaction holds a record, a new ``a`` (same instance id, same transactional.id) is
  started and commits, then the old one is SIGCONTed: its next call is refused as fenced
  (counted in ``fenced``), after which it is SIGKILLed.
* ``cluster_stall``: (exactly_once, not in the default sequence) as ``coordinator_kill``, but
  every broker stays frozen for ``CLUSTER_STALL_S`` (so the coordinator cannot move), past the
  commit's whole retry budget: ``a`` sees an AmbiguousTransactionError (with a short
  ``transaction_call_timeout_ms``), recreates its producer and redoes the work.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient

from sdk.doctor._restart import preferred_leaders, wait_until_safe
from sdk.errors import SdkError
from sdk.testing.cluster import LocalCluster
from tests.sdk.processor._support import wait_for

ROOT = Path(__file__).resolve().parents[2]


class ProcessorProcess:
    """One ``python -m tests.reliability.worker`` subprocess (output to ``<name>.log``)."""

    def __init__(self, tmp: Path, name: str, args: dict[str, Any]) -> None:
        self.name = name
        stamp = time.time_ns()
        self.stats_path = tmp / f"{name}-{stamp}.json"
        self.log_path = tmp / f"{name}-{stamp}.log"
        spec = {**args, "stats": str(self.stats_path), "instance": name}
        if os.environ.get("RELIABILITY_TRACE"):  # per-batch trace (tests/reliability/worker.py)
            spec["trace"] = str(tmp / f"{name}-{stamp}.trace")
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.reliability.worker", json.dumps(spec)],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def stats(self) -> dict[str, Any]:
        """The worker's last stats dump ({} before the first)."""
        try:
            loaded: dict[str, Any] = json.loads(self.stats_path.read_text())
        except (OSError, ValueError):
            return {}
        return loaded

    def send(self, sig: signal.Signals) -> None:
        """Send a signal (SIGSTOP/SIGCONT/SIGKILL)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def stacks(self) -> str:
        """The Python stacks of every thread (SIGUSR1 → faulthandler, into the log)."""
        before = self.log_path.stat().st_size
        self.send(signal.SIGUSR1)
        time.sleep(1.0)
        with self.log_path.open("rb") as f:
            f.seek(before)
            lines = f.read().decode(errors="replace").splitlines()
        return "\n".join(line for line in lines if not line.startswith("%"))

    def crash(self) -> None:
        """SIGKILL and reap (no-op if already gone)."""
        self.send(signal.SIGKILL)
        self.proc.wait(15)

    def shutdown(self, timeout: float = 30.0) -> None:
        """SIGCONT + SIGTERM (clean stop), SIGKILL after ``timeout``."""
        self.send(signal.SIGCONT)
        self.send(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.crash()


@dataclass
class FaultContext:
    """What a fault needs: the cluster, the topics, the processors and how to log."""

    cluster: LocalCluster
    src: str
    dst: str
    tmp: Path
    worker_args: dict[str, Any]
    transactional: bool
    stop_seconds: float
    log: Callable[[str], None]
    workers: dict[str, ProcessorProcess] = field(default_factory=dict)
    retired: list[ProcessorProcess] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    """Last error line of each processor that exited on its own (restarted like a pod)."""
    notes: dict[str, str] = field(default_factory=dict)
    more: Callable[[], None] = lambda: None
    """Let the source produce a little more (called while a fault waits for a state)."""

    def wait_fed(self, check: Callable[[], bool], what: str) -> None:
        """Wait for ``check()``, feeding the pipeline meanwhile (500 records a second)."""
        fed = time.monotonic() - 1.0

        def step() -> bool:
            nonlocal fed
            if time.monotonic() - fed >= 1.0:
                self.more()
                fed = time.monotonic()
            return check()

        wait_for(step, 120, what, every=0.2)

    def wait_file(self, path: Path, what: str) -> None:
        """Wait for ``path`` to appear, feeding the pipeline meanwhile."""
        self.wait_fed(path.exists, what)

    def wait_owner(self, name: str) -> None:
        """Wait, without feeding the pipeline, until processor ``name`` owns partitions.

        A fault that waits for ``name`` to handle a record feeds the source meanwhile. Fed
        while ``name`` owns nothing (rejoining after the session it lost in ``cluster_stall``,
        or a new instance waiting for the stopped one's session to expire), the other
        processor takes the rest of the input (the source stops at ``records``) and ``name``
        then waits for records that never come (about one run in four of the accounting test
        failed so before stop 33). Both views must agree: the processor's own (its stats dump,
        stale while its main thread is held in a call) and the group coordinator's (a stable
        group in which the member with ``name`` as its client.id has partitions).
        """
        worker = self.workers[name]
        admin = AdminClient({"bootstrap.servers": self.cluster.bootstrap_servers})
        group = str(self.worker_args["group"])

        def owns() -> bool:
            if not worker.stats().get("assignment"):
                return False
            try:
                described = admin.describe_consumer_groups([group])[group].result(timeout=10)
            except Exception:  # coordinator moving or loading
                return False
            return str(described.state.name) == "STABLE" and any(
                m.client_id == name and m.assignment.topic_partitions for m in described.members
            )

        wait_for(owns, 120, f"{name} to own partitions", every=0.5)

    def hook(self, name: str, kind: str) -> Path:
        """The freeze/gate file of processor ``name`` (``kind``: ``freeze`` or ``gate``)."""
        return self.tmp / f"{name}.{kind}"

    def start(self, name: str, *, keep_old: bool = False) -> ProcessorProcess:
        """Start (or, after a crash, restart) processor ``name`` with its hook files.

        ``keep_old`` leaves a running instance alive (retired, for a zombie with the same id).
        """
        if name in self.workers:
            self.retired.append(self.workers[name])
            if not keep_old:
                self.workers[name].crash()  # never two live instances with one id
        hooks = {"freeze": str(self.hook(name, "freeze")), "gate": str(self.hook(name, "gate"))}
        self.workers[name] = ProcessorProcess(self.tmp, name, {**self.worker_args, **hooks})
        return self.workers[name]


def wait_full_isr(ctx: FaultContext, timeout: float = 90.0) -> None:
    """Wait until every partition of the pipeline and internal topics has all replicas in sync."""
    admin = AdminClient({"bootstrap.servers": ctx.cluster.bootstrap_servers})
    size = ctx.cluster.size

    def full() -> bool:
        try:
            topics = admin.list_topics(timeout=5).topics
        except Exception:
            return False
        names = [ctx.src, ctx.dst, "__consumer_offsets", "__transaction_state"]
        return all(
            len(p.isrs) == size and p.leader >= 0
            for name in names
            if name in topics
            for p in topics[name].partitions.values()
        )

    wait_for(full, timeout, "full ISRs", every=0.5)


def leader_kill(ctx: FaultContext) -> None:
    victim = ctx.cluster.leader_of(ctx.src, 0)
    ctx.cluster.kill(victim)
    new = ctx.cluster.leader_of(ctx.src, 0, timeout_s=60, exclude=victim)
    ctx.log(f"  SIGKILL node {victim} (leader of {ctx.src}[0]); new leader {new}")
    ctx.cluster.restart(victim)
    wait_full_isr(ctx)
    ctx.notes["leader_kill"] = f"node {victim}"


def broker_bounce(ctx: FaultContext) -> None:
    bs = ctx.cluster.bootstrap_servers
    for node in ctx.cluster.node_ids:
        t0 = time.monotonic()
        # the node restarted before this one has caught up on every partition the two share
        verdict = wait_until_safe(bs, node, 120.0)
        waited = time.monotonic() - t0
        ctx.cluster.stop(node)
        ctx.cluster.restart(node)
        ctx.log(
            f"  bounced node {node} in {time.monotonic() - t0:.1f}s (safe to stop after "
            f"{waited:.1f}s; it led {verdict.leads} of {verdict.hosted} partitions)"
        )
    wait_full_isr(ctx)
    try:
        ctx.log(f"  {len(preferred_leaders(bs))} partitions not led by their preferred replica")
    except SdkError as exc:  # a diagnostic must not fail the fault
        ctx.log(f"  preferred leaders not read: {exc}")
    ctx.notes["broker_bounce"] = f"nodes {ctx.cluster.node_ids}"


def processor_kill(ctx: FaultContext) -> None:
    ctx.start("a")  # SIGKILLs the running a first
    ctx.log("  SIGKILL processor a; restarted with the same instance id")
    ctx.notes["processor_kill"] = "a"


def zombie(ctx: FaultContext) -> None:
    victim = ctx.workers["b"]
    held = "-"
    if ctx.transactional:
        ctx.wait_owner("b")
        freeze = ctx.hook("b", "freeze")
        freeze.touch()
        ctx.wait_file(freeze.with_suffix(".held"), "b to hold an open transaction")
        held = freeze.with_suffix(".held").read_text()
        victim.send(signal.SIGSTOP)
        freeze.unlink()
    else:
        victim.send(signal.SIGSTOP)
    ctx.log(f"  SIGSTOP processor b ({held} records in its open transaction)")
    time.sleep(ctx.stop_seconds)
    victim.send(signal.SIGCONT)
    ctx.log(f"  SIGCONT processor b after {ctx.stop_seconds:.0f}s")
    ctx.notes["zombie"] = f"b stopped {ctx.stop_seconds:.0f}s holding {held} records"


def transaction_coordinator(cluster: LocalCluster, transactional_id: str) -> int:
    """Node id of the coordinator of ``transactional_id`` (Java Admin ``describeTransactions``)."""
    text = cluster.java_tool(
        "org.apache.kafka.tools.TransactionsCommand",
        "--bootstrap-server",
        cluster.bootstrap_servers,
        "describe",
        "--transactional-id",
        transactional_id,
        timeout_s=60,
    )
    lines = [line.split() for line in text.splitlines() if line.strip()]
    column = lines[0].index("CoordinatorId")
    return int(lines[1][column])


def _freeze_commit_of_a(ctx: FaultContext) -> int:
    """Hold ``a`` before commit step 3, freeze its transaction coordinator, let the commit go
    to it; return the coordinator's node id."""
    ctx.wait_owner("a")
    gate = ctx.hook("a", "gate")
    gate.touch()
    ctx.wait_file(gate.with_suffix(".at"), "a to reach commit step 3")
    coordinator = transaction_coordinator(ctx.cluster, f"{ctx.worker_args['txn_prefix']}a")
    ctx.cluster.pause(coordinator)
    gate.unlink()
    wait_for(gate.with_suffix(".called").exists, 30, "a to send its commit")
    return coordinator


def coordinator_kill(ctx: FaultContext) -> None:
    if not ctx.transactional:
        ctx.notes["coordinator_kill"] = "n/a (no transactions)"
        return
    coordinator = _freeze_commit_of_a(ctx)
    time.sleep(1.0)  # the EndTxn request is with a coordinator that cannot answer
    worker = ctx.workers["a"]
    before = int(worker.stats().get("commits", 0))
    ctx.cluster.kill(coordinator)
    killed = time.monotonic()
    ctx.log(f"  commit of a in flight; SIGKILL transaction coordinator node {coordinator}")
    committed: list[float] = []

    def watch() -> None:  # a's next commit, while the node restarts (restart() blocks)
        fed = killed
        while time.monotonic() - killed < 300 and not committed:
            if int(worker.stats().get("commits", 0)) > before:
                committed.append(time.monotonic() - killed)
            if time.monotonic() - fed >= 2.0:  # a commits only when it has records to handle:
                ctx.more()  # 500 more records every 2 s keep some coming without a flood
                fed = time.monotonic()
            time.sleep(0.1)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    ctx.cluster.restart(coordinator)
    wait_full_isr(ctx)
    watcher.join(300)
    after = f"{committed[0]:.1f}s" if committed else "not within 300s"
    ctx.log(f"  a committed again {after} after the kill")
    ctx.notes["coordinator_kill"] = f"node {coordinator}; a committed again {after} after the kill"


def fenced_zombie(ctx: FaultContext) -> None:
    if not ctx.transactional:
        ctx.notes["fenced_zombie"] = "n/a (no transactions)"
        return
    old = ctx.workers["a"]
    ctx.wait_owner("a")
    freeze = ctx.hook("a", "freeze")
    freeze.touch()
    try:
        ctx.wait_file(freeze.with_suffix(".held"), "a to hold an open transaction")
    except AssertionError:
        _log_group_state(ctx)
        raise
    old.send(signal.SIGSTOP)
    freeze.unlink()
    freeze.with_suffix(".held").unlink()
    new = ctx.start("a", keep_old=True)  # same instance id: its init_transactions fences old
    before = int(new.stats().get("commits", 0))
    try:
        ctx.wait_owner("a")  # the old one's partitions move once its session expires
        ctx.wait_fed(lambda: int(new.stats().get("commits", 0)) > before, "the new a to commit")
    except AssertionError:
        _log_group_state(ctx)  # CI failed here 2 times in 6 (stop 21): say where it stood
        raise
    old.send(signal.SIGCONT)  # the zombie wakes up inside a transaction of a fenced epoch
    wait_for(lambda: int(old.stats().get("fenced", 0)) >= 1, 60, "the zombie to see the fence")
    old.crash()  # as an orchestrator would once the zombie reports itself
    ctx.log("  a SIGSTOPped in a transaction, replaced by a new a (same id); the old one fenced")
    ctx.notes["fenced_zombie"] = "a replaced while stopped; the old a was fenced"


def _log_group_state(ctx: FaultContext) -> None:
    """Log the group as the coordinator sees it and every live processor's stats and stacks."""
    admin = AdminClient({"bootstrap.servers": ctx.cluster.bootstrap_servers})
    group = str(ctx.worker_args.get("group"))
    try:
        described = admin.describe_consumer_groups([group])[group].result(timeout=10)
        members = [
            f"{m.member_id} ({m.client_id}): "
            + ", ".join(str(tp.partition) for tp in m.assignment.topic_partitions)
            for m in described.members
        ]
        ctx.log(f"  group {group}: state {described.state}, members {members}")
    except Exception as exc:  # a diagnostic must not hide the failure it explains
        ctx.log(f"  group {group}: describe failed: {exc!r}")
    _log_transactions(ctx)
    _log_offsets(ctx, admin, group)
    for name, worker in [*ctx.workers.items(), *(("retired", w) for w in ctx.retired)]:
        if worker.proc.poll() is not None:
            continue
        stats = {k: v for k, v in worker.stats().items() if k != "events"}
        ctx.log(f"  {name} stats: {stats}; last events: {worker.stats().get('events', [])[-8:]}")
        ctx.log(f"  {name} stacks:\n{worker.stacks()}")


def _log_transactions(ctx: FaultContext) -> None:
    """Log the transactions as the brokers see them, hanging ones included (Java admin tool)."""
    for tool_args in (
        ("list",),
        *(("describe", "--transactional-id", f"{ctx.worker_args['txn_prefix']}{n}") for n in "ab"),
        *(("find-hanging", "--broker-id", str(n)) for n in ctx.cluster.node_ids),
    ):
        try:
            text = ctx.cluster.java_tool(
                "org.apache.kafka.tools.TransactionsCommand",
                "--bootstrap-server",
                ctx.cluster.bootstrap_servers,
                *tool_args,
                timeout_s=60,
            )
            ctx.log(f"  transactions {' '.join(tool_args)}:\n{text}")
        except Exception as exc:  # a diagnostic must not hide the failure it explains
            ctx.log(f"  transactions {' '.join(tool_args)} failed: {exc!r}")


def _log_offsets(ctx: FaultContext, admin: AdminClient, group: str) -> None:
    """Log the group's committed offsets, with and without ``require_stable`` (a pending
    transactional offset commit shows as a difference, or as an error in the second)."""
    for stable in (False, True):
        try:
            futures = admin.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], require_stable=stable
            )
            got = futures[group].result(timeout=15).topic_partitions
            listed = [(tp.topic, tp.partition, tp.offset, tp.error) for tp in got]
            ctx.log(f"  offsets (require_stable={stable}): {listed}")
        except Exception as exc:  # a diagnostic must not hide the failure it explains
            ctx.log(f"  offsets (require_stable={stable}) failed: {exc!r}")


CLUSTER_STALL_S = 25.0
"""How long ``cluster_stall`` keeps every broker frozen: longer than a commit's retry budget
with a 2 s ``transaction_call_timeout_ms`` (at least 5 attempts and 15 s)."""


def cluster_stall(ctx: FaultContext) -> None:
    if not ctx.transactional:
        ctx.notes["cluster_stall"] = "n/a (no transactions)"
        return
    coordinator = _freeze_commit_of_a(ctx)
    # every other broker too: with only the coordinator frozen, the controller moves the
    # coordinator after broker.session.timeout.ms (9 s) and the retried commit may then succeed
    others = [n for n in ctx.cluster.node_ids if n != coordinator]
    for node in others:
        ctx.cluster.pause(node)
    ctx.log(f"  commit of a in flight; every broker frozen (coordinator node {coordinator})")
    time.sleep(CLUSTER_STALL_S)  # a's commit call runs out of retries: outcome unknown
    for node in [coordinator, *others]:
        ctx.cluster.resume(node)
    wait_full_isr(ctx)
    ctx.log(f"  every broker frozen {CLUSTER_STALL_S:.0f}s, then resumed")
    ctx.notes["cluster_stall"] = f"every broker frozen {CLUSTER_STALL_S:.0f}s during a's commit"


FAULTS: dict[str, Callable[[FaultContext], None]] = {
    "leader_kill": leader_kill,
    "broker_bounce": broker_bounce,
    "processor_kill": processor_kill,
    "zombie": zombie,
    "coordinator_kill": coordinator_kill,
    "cluster_stall": cluster_stall,
    "fenced_zombie": fenced_zombie,
}
