"""Run a rack-aware Python assignor on a real consumer group.

Start several copies, each with its own rack; every copy computes the same plan and consumes
only its share (stop with Ctrl-C):

    .venv/bin/python examples/assignors/rack_aware_group.py BOOTSTRAP TOPIC GROUP --rack a
    .venv/bin/python examples/assignors/rack_aware_group.py BOOTSTRAP TOPIC GROUP --rack b

The partition → replica-rack map is read once from the cluster (``describe_topics``); brokers
without ``broker.rack`` give an empty map, and the plan is then just balanced.
"""

from __future__ import annotations

import argparse
import contextlib

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from sdk.assignors import GroupAssignedConsumer, RackAwareAssignor, TopicPartition


def replica_racks(bootstrap: str, topic: str) -> dict[TopicPartition, list[str]]:
    from confluent_kafka import TopicCollection

    admin = AdminClient({"bootstrap.servers": bootstrap})
    desc = admin.describe_topics(TopicCollection([topic]))[topic].result()
    return {
        TopicPartition(topic, p.id): sorted({r.rack for r in p.replicas if r.rack})
        for p in desc.partitions
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap")
    parser.add_argument("topic")
    parser.add_argument("group")
    parser.add_argument("--rack", required=True)
    args = parser.parse_args()

    assignor = RackAwareAssignor(replica_racks(args.bootstrap, args.topic))
    consumer: GroupAssignedConsumer

    def commit(share: list[TopicPartition]) -> None:
        with contextlib.suppress(KafkaException):  # nothing stored yet
            consumer.consumer.commit(asynchronous=False)

    consumer = GroupAssignedConsumer(
        {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "auto.offset.reset": "earliest",
            "enable.auto.offset.store": False,
        },
        [args.topic],
        assignor,
        metadata={"rack": args.rack},
        on_assign=lambda share: print(f"rack {args.rack}: now own {[str(tp) for tp in share]}"),
        on_revoke=commit,
    )
    with consumer:
        try:
            while True:
                msg = consumer.poll(1.0)
                if msg is None or msg.error():
                    continue
                print(f"{msg.topic()}[{msg.partition()}]@{msg.offset()}: {msg.value()!r}")
                consumer.consumer.store_offsets(message=msg)  # after processing: at-least-once
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
