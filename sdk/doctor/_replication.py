"""The replication rules every topic is judged by: replication factor and min.insync.replicas.

Pure functions of plain values. For at_least_once and exactly_once (``durable``) an
acknowledged record must survive a broker: ``acks=all`` waits for the in-sync replicas, and
``min.insync.replicas`` is how many of them must hold it. The recommendation is replication
factor 3 with min.insync.replicas 2: a record is on two disks before it is acknowledged, and one
broker can be down (a rolling restart) without stopping writes.
"""

from __future__ import annotations

from sdk.doctor._report import Check, Status

__all__ = ["judge_min_isr", "judge_replication", "reassign_hint"]


def reassign_hint(brokers: int | None) -> str:
    """How to raise a topic's replication factor (more brokers first if there are too few)."""
    more = (
        f"add brokers first (the cluster has {brokers}, replication factor 3 needs 3); then "
        if brokers is not None and brokers < 3
        else ""
    )
    return (
        f"{more}raise it with kafka-reassign-partitions.sh --execute and a reassignment JSON "
        "that lists 3 replicas per partition"
    )


def judge_replication(
    name: str, rf: int, *, durable: bool, brokers: int | None, what: str, fix: str = ""
) -> Check:
    """Judge a replication factor.

    Args:
        name: The check's name.
        rf: The replication factor read.
        durable: The guarantee is at_least_once or exactly_once (or the topic is internal
            state every guarantee relies on).
        brokers: How many brokers the cluster has (None: unknown).
        what: What the records are, for the message ("acknowledged records", "offsets").
        fix: The fix (default: :func:`reassign_hint`).
    """
    found = f"replication factor {rf}"
    fix = fix or reassign_hint(brokers)
    if rf >= 3:
        return Check(name, Status.PASS, found)
    if not durable:
        return Check(
            name,
            Status.PASS,
            f"{found} (at_most_once accepts losing records; a partition is offline while its "
            "only replica's broker is down)",
        )
    if rf == 1:
        return Check(
            name,
            Status.WARN,
            found,
            f"every one of the {what} is on one broker's disk: losing that disk loses them, "
            "and while that broker is down the partition is offline (acks=all has no other "
            "replica to wait for)",
            fix,
        )
    return Check(
        name,
        Status.WARN,
        found,
        f"the {what} survive one broker failure, but while one replica is down (a restart) a "
        "second failure takes the partition offline or loses them; replication factor 3 is "
        "recommended",
        fix,
    )


def judge_min_isr(
    name: str,
    rf: int,
    min_isr: int,
    *,
    durable: bool,
    what: str,
    fix: str,
    writes: bool = True,
) -> Check:
    """Judge ``min.insync.replicas`` against the replication factor.

    Args:
        name: The check's name.
        rf: The replication factor read.
        min_isr: The effective ``min.insync.replicas`` read.
        durable: Writes use acks=all (at_least_once, exactly_once, internal state).
        what: What the records are, for the message.
        fix: The command that sets it to 2.
        writes: Someone writes with acks=all (False for an input topic of this profile:
            its producers are upstream).
    """
    found = f"min.insync.replicas {min_isr} with replication factor {rf}"
    if not durable:
        return Check(
            name, Status.PASS, f"{found} (not used: at_most_once produces with acks 0 or 1)"
        )
    if min_isr > rf:
        return Check(
            name,
            Status.FAIL,
            found,
            "acks=all needs more in-sync replicas than the partition has: every write is "
            "refused with NOT_ENOUGH_REPLICAS"
            + ("" if writes else " (for the producers of this topic)"),
            fix,
        )
    if rf == 1:
        return Check(name, Status.PASS, f"{found} (the replication check covers RF 1)")
    if min_isr == 1:
        return Check(
            name,
            Status.WARN,
            found,
            "once the followers fall out of the ISR, acks=all waits for the leader alone: "
            f"{what} held by one disk are lost with it; 2 keeps every acknowledged one on two",
            fix,
        )
    if min_isr == rf:
        return Check(
            name,
            Status.WARN,
            found,
            "any one replica out of sync (a broker restart) stops every acks=all write with "
            "NOT_ENOUGH_REPLICAS; keep min.insync.replicas below the replication factor",
            fix,
        )
    return Check(name, Status.PASS, found)
