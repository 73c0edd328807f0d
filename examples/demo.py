"""Main demo: start an embedded 1-node Kafka broker, produce and consume a few records.

Run it with ``./dev.sh demo`` (sets up .venv first) or ``python examples/demo.py``.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, Producer

from sdk.testing.admin import create_topic
from sdk.testing.cluster import LocalCluster


def main() -> int:
    with LocalCluster(nodes=1) as cluster:
        topic = create_topic(cluster.bootstrap_servers, "demo-greetings", partitions=1)
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
            }
        )
        sent = [f"hello #{i}" for i in range(5)]
        for i, text in enumerate(sent):
            producer.produce(topic, key=str(i).encode(), value=text.encode())
        if producer.flush(30) != 0:
            print("demo: some records were not delivered", file=sys.stderr)
            return 1
        del producer  # destroy it while the broker is still up (no shutdown noise)
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "group.id": "demo",
                "auto.offset.reset": "earliest",
                "isolation.level": "read_committed",
            }
        )
        consumer.subscribe([topic])
        received: list[str] = []
        deadline = time.monotonic() + 60
        while len(received) < len(sent) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None or msg.error():
                continue
            received.append(msg.value().decode())
            print(
                f"consumed {topic}[{msg.partition()}]@{msg.offset()} "
                f"key={msg.key().decode()} value={received[-1]!r}"
            )
        consumer.close()
    ok = received == sent
    print(f"demo: produced {len(sent)}, consumed {len(received)} -> {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
