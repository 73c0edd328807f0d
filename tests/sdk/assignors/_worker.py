"""Consumer processes for the broker tests: ``python -m tests.sdk.assignors._worker MODE JSON``.

Every mode writes its state atomically to ``<out>.json`` about twice a second and exits when
``<out>.stop`` appears (closing its consumers) or after ``deadline`` seconds.

- ``native``: one plain librdkafka consumer per spec (group, topics, strategy); state is each
  group's member id and assignment.
- ``custom``: a GroupAssignedConsumer with the rack-aware example assignor; appends every
  processed record's ``partition offset`` to ``<out>.log`` before storing its offset
  (at-least-once).
- ``static``: a StaticAssignedConsumer; same log.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException

from sdk.assignors import (
    GroupAssignedConsumer,
    RackAwareAssignor,
    StaticAssignedConsumer,
    TopicPartition,
)
from sdk.errors import KafkaTimeoutError


def write_state(out: Path, state: dict[str, Any]) -> None:
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, out.with_suffix(".json"))


def tps(consumer: Any) -> list[list[Any]]:
    return sorted([tp.topic, tp.partition] for tp in consumer.assignment())


def native(args: dict[str, Any], out: Path, deadline: float) -> None:
    consumers = {}
    for spec in args["specs"]:
        config = {
            "bootstrap.servers": args["bootstrap"],
            "group.id": spec["group"],
            "partition.assignment.strategy": spec["strategy"],
            "enable.auto.commit": False,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        }
        if spec.get("instance_id"):
            config["group.instance.id"] = spec["instance_id"]
        c = Consumer(config)
        c.subscribe(spec["topics"])
        consumers[spec["group"]] = c
    last = 0.0
    while time.monotonic() < deadline and not out.with_suffix(".stop").exists():
        for c in consumers.values():
            c.poll(0.05)
        if time.monotonic() - last > 0.5:
            last = time.monotonic()
            write_state(
                out,
                {g: {"member": c.memberid(), "assignment": tps(c)} for g, c in consumers.items()},
            )
    for c in consumers.values():
        c.close()


def run_logged(consumer: Any, out: Path, deadline: float, extra: Any) -> None:
    log = out.with_suffix(".log").open("a", buffering=1)
    last = 0.0
    while time.monotonic() < deadline and not out.with_suffix(".stop").exists():
        try:
            msg = consumer.poll(0.2)
        except KafkaTimeoutError as exc:  # holds nothing until the next rebalance
            print(f"worker {os.getpid()}: {exc}", file=sys.stderr)
            continue
        if msg is not None and not msg.error():
            log.write(f"{msg.partition()} {msg.offset()}\n")
            log.flush()
            os.fsync(log.fileno())
            consumer.consumer.store_offsets(message=msg)
        if time.monotonic() - last > 0.5:
            last = time.monotonic()
            write_state(out, {"pid": os.getpid(), **extra(consumer)})
    consumer.close()
    log.close()


def custom(args: dict[str, Any], out: Path, deadline: float) -> None:
    assignor = RackAwareAssignor(
        {
            TopicPartition(args["topic"], p): [args["racks"][p % len(args["racks"])]]
            for p in range(args["partitions"])
        }
    )

    def commit_on_revoke(share: list[TopicPartition]) -> None:
        with contextlib.suppress(KafkaException):  # nothing stored yet
            gc.consumer.commit(asynchronous=False)

    gc = GroupAssignedConsumer(
        {
            "bootstrap.servers": args["bootstrap"],
            "group.id": args["group"],
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "enable.auto.offset.store": False,
            "auto.commit.interval.ms": 500,
            "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500,
        },
        [args["topic"]],
        assignor,
        metadata={"rack": args["rack"]},
        on_revoke=commit_on_revoke,
    )
    gc.start()
    run_logged(
        gc,
        out,
        deadline,
        lambda c: {
            "member": c.consumer.memberid() if c.consumer else None,
            "rack": args["rack"],
            "plan": {k: [list(tp) for tp in v] for k, v in c.plan.items()},
            "share": [list(tp) for tp in c.share],
            "assignment": [list(tp) for tp in c.assignment()],
            "generations": c.generations,
            "superseded": c.superseded,
        },
    )


def static(args: dict[str, Any], out: Path, deadline: float) -> None:
    sc = StaticAssignedConsumer(
        {
            "bootstrap.servers": args["bootstrap"],
            "group.id": args["group"],
            "auto.offset.reset": "earliest",
            "enable.auto.commit": True,
            "enable.auto.offset.store": False,
        },
        [args["topic"]],
        args["assignor"],
        members=args["members"],
        member_id=args["member_id"],
    )
    sc.start()
    run_logged(
        sc,
        out,
        deadline,
        lambda c: {
            "share": [list(tp) for tp in c.share],
            "assignment": sorted([tp.topic, tp.partition] for tp in c.consumer.assignment()),
        },
    )


def main() -> None:
    mode, raw = sys.argv[1], sys.argv[2]
    args = json.loads(raw)
    out = Path(args["out"])
    deadline = time.monotonic() + float(args.get("deadline", 240))
    {"native": native, "custom": custom, "static": static}[mode](args, out, deadline)


if __name__ == "__main__":
    main()
