"""Peak memory while producing: ``python -m benchmarks._memory raw|sdk BOOTSTRAP TOPIC N SIZE``.

Each case runs in its own process (peak RSS is per process) and prints one JSON line with
``maxrss_kb`` (the process's peak resident set, see :func:`peak_rss_kb`) and the seconds taken.
Records are made on the fly from one payload, so the peak is the client's, not a prepared
input list's. raw: a confluent-kafka loop with the SDK's at_least_once settings and a
per-record ``on_delivery``; sdk: ``Producer.send()`` per record (a handle each).
"""

from __future__ import annotations

import json
import resource
import sys
import time
from typing import Any

from confluent_kafka import Producer as RawProducer

from sdk.producer import Producer
from sdk.profiles import ProducerProfile


def peak_rss_kb() -> int:
    """This process's peak resident set in kB: ``VmHWM`` from ``/proc/self/status``.

    Not ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux keeps that across ``execve``, so a process
    started by a large parent (the benchmark runner holds its payloads: 3 GB at 1,000,000
    records) reports the parent's resident set at the fork (measured: 1,511 MB where the
    process itself peaked at 11 MB). ``VmHWM`` is the high-water mark of this process's own
    memory map, which ``execve`` replaced. Elsewhere (no ``/proc``) ``ru_maxrss`` it is.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def main() -> None:
    """Run one case and print its JSON line."""
    mode, bootstrap, name, n, size = sys.argv[1], sys.argv[2], sys.argv[3], *map(int, sys.argv[4:6])
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bootstrap)
    value = b"x" * size
    keys = [str(i).encode() for i in range(1000)]
    delivered = 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal delivered
        if err is None:
            delivered += 1

    start = time.perf_counter()
    if mode == "raw":
        p = RawProducer({**profile.render(), "partitioner": "murmur2_random"})
        produce, poll = p.produce, p.poll
        for i in range(n):
            while True:
                try:
                    produce(name, value, keys[i % 1000], on_delivery=on_delivery)
                    break
                except BufferError:
                    poll(0.01)
            if not i % 1000:
                poll(0)
        p.flush(300)
    else:
        producer = Producer(profile)
        send, ppoll = producer.send, producer.poll
        for i in range(n):
            send(name, value, key=keys[i % 1000])
            if not i % 1000:
                ppoll(0)
        producer.flush(300)
        delivered = producer.delivered
        producer.close()
    seconds = time.perf_counter() - start
    rss = peak_rss_kb()
    print(json.dumps({"mode": mode, "maxrss_kb": rss, "seconds": seconds, "delivered": delivered}))


if __name__ == "__main__":
    main()
