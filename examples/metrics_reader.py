"""At-most-once metrics reader: a live dashboard's view of host gauges, never a sample twice.

Run: ``.venv/bin/python examples/metrics_reader.py [--samples 3000]``. Uses
``KAFKA_BOOTSTRAP_SERVERS`` if set, else starts an embedded 1-node cluster.

A dashboard that sums request counters must not count a sample twice; losing one during a
crash only leaves a gap until the next sample. So the reader is at-most-once: each polled batch
is committed *before* any record of it is handed out (the iterator API; ``ack`` is a no-op
here). A real emitter would send with an at-most-once producer (``metrics_emitter.py``); this
demo writes its samples with acks=all instead, so that the reader's count can be checked
exactly (acks=0 can silently drop the first records sent to a just-created topic).
"""

from __future__ import annotations

import argparse
import random
import sys
import time

from sdk.consumer import Consumer
from sdk.producer import Producer
from sdk.profiles import ConsumerProfile, ProducerProfile
from sdk.testing.admin import create_topic
from sdk.testing.backends import bootstrap_servers

HOSTS = [f"web-{i}" for i in range(6)]


def emit(bootstrap: str, topic: str, samples: int) -> None:
    """Send ``samples`` gauge samples, round-robin over the hosts (key = host), acks=all."""
    rng = random.Random(1)
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bootstrap)
    with Producer(profile, key_serializer="str", value_serializer="json") as producer:
        for i in range(samples):
            host = HOSTS[i % len(HOSTS)]
            producer.send(topic, {"host": host, "seq": i, "requests": rng.randrange(100)}, key=host)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=3_000)
    args = parser.parse_args()
    started = time.monotonic()
    with bootstrap_servers() as bootstrap:
        topic = f"metrics-{time.time_ns()}"
        create_topic(bootstrap, topic, 3)
        emit(bootstrap, topic, args.samples)

        profile = ConsumerProfile(
            guarantee="at_most_once",
            bootstrap_servers=bootstrap,
            group_id="dashboard",
            batch_size=200,  # the most a crash can lose
        )
        totals: dict[str, int] = {}
        seen: set[int] = set()
        repeated = 0
        with Consumer(profile, [topic], value_deserializer="json") as consumer:
            for record in consumer.records(idle_timeout_s=3.0, handle_sigterm=True):
                sample = record.value
                repeated += sample["seq"] in seen
                seen.add(sample["seq"])
                totals[sample["host"]] = totals.get(sample["host"], 0) + sample["requests"]
            stats = consumer.stats
    print(f"metrics reader: {len(seen)} samples from {len(totals)} hosts; requests per host:")
    for host, total in sorted(totals.items()):
        print(f"  {host}: {total}")
    print(
        f"metrics reader: {stats.commits} batches committed before hand-out, "
        f"{args.samples - len(seen)} samples lost, {repeated} seen twice; "
        f"{time.monotonic() - started:.1f}s"
    )
    # every sample was acknowledged and nothing crashed: all must arrive, none twice
    ok = repeated == 0 and len(seen) == args.samples
    print("metrics reader: OK" if ok else "metrics reader: MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
