"""Slow handlers: an enrichment service that calls an HTTP API for each record, 32 at a time.

Run: ``.venv/bin/python examples/slow_handlers.py [--orders 2000] [--concurrency 32]``. Uses
``KAFKA_BOOTSTRAP_SERVERS`` if set, else starts an embedded 1-node cluster.

Each order is enriched by an HTTP call to a local "pricing API" that answers after 20 ms (a
process of its own, standing in for a remote service). One record at a time that is
50 orders/s; ``Consumer.run(enrich, concurrency=32, ordering="key")`` runs 32 calls at once
while the orders of one customer stay in order (docs/concurrency.md). The pricing API checks
the order itself: it answers 409 if an order of a customer arrives before that customer's
previous one, or while another call for the same customer is still open.
"""

from __future__ import annotations

import argparse
import http.server
import json
import multiprocessing
import multiprocessing.queues
import sys
import threading
import time
import urllib.request
from typing import Any

from sdk import Consumer, ConsumerProfile, ConsumerRecord, Producer, ProducerProfile
from sdk.testing.admin import create_topic
from sdk.testing.backends import bootstrap_servers

CUSTOMERS = 200
DELAY_S = 0.02


class PricingApi(http.server.ThreadingHTTPServer):
    """Answers ``GET /price?customer=C&seq=N`` after 20 ms; 409 on an out-of-order call."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.lock = threading.Lock()
        self.last: dict[str, int] = {}
        self.open: set[str] = set()
        self.violations = 0
        self.calls = 0


class _Handler(http.server.BaseHTTPRequestHandler):
    server: PricingApi

    def do_GET(self) -> None:
        api = self.server
        if self.path == "/violations":
            self._answer(200, {"violations": api.violations, "calls": api.calls})
            return
        query = dict(p.split("=") for p in self.path.split("?", 1)[1].split("&"))
        customer, seq = query["customer"], int(query["seq"])
        with api.lock:
            ok = customer not in api.open and api.last.get(customer, -1) < seq
            api.open.add(customer)
            api.calls += 1
        time.sleep(DELAY_S)
        with api.lock:
            api.open.discard(customer)
            api.last[customer] = max(seq, api.last.get(customer, -1))
            if not ok:
                api.violations += 1
        self._answer(200 if ok else 409, {"price": seq % 97})

    def _answer(self, status: int, payload: dict[str, int]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def serve(port: multiprocessing.queues.Queue[int]) -> None:
    """The pricing API's own process (a remote service's CPU is not the consumer's)."""
    api = PricingApi()
    port.put(api.server_address[1])
    api.serve_forever()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orders", type=int, default=2_000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    ports: multiprocessing.queues.Queue[int] = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(ports,), daemon=True)
    server.start()
    base = f"http://127.0.0.1:{ports.get(timeout=30)}"
    url = f"{base}/price"
    with bootstrap_servers() as bootstrap:
        topic = f"orders-{time.time_ns()}"
        create_topic(bootstrap, topic, 4)
        with Producer(
            ProducerProfile(guarantee="at_least_once", bootstrap_servers=bootstrap),
            key_serializer="str",
            value_serializer="json",
        ) as producer:
            for i in range(args.orders):
                order = {"customer": f"c{i % CUSTOMERS}", "seq": i}
                producer.send(topic, order, key=order["customer"])

        priced: list[int] = []
        times: list[float] = []

        def enrich(record: ConsumerRecord) -> None:
            order = record.value
            query = f"{url}?customer={order['customer']}&seq={order['seq']}"
            started = time.monotonic()
            with urllib.request.urlopen(query, timeout=10) as answer:  # 409 raises HTTPError
                order["price"] = json.load(answer)["price"]
            priced.append(order["seq"])
            times.extend((started, time.monotonic()))

        profile = ConsumerProfile(
            guarantee="at_least_once",
            bootstrap_servers=bootstrap,
            group_id="enricher",
            auto_offset_reset="earliest",
        )
        print(
            f"slow handlers: {args.orders} orders, {DELAY_S * 1000:.0f} ms per call, "
            f"concurrency {args.concurrency}"
        )
        with Consumer(profile, [topic], key_deserializer="str", value_deserializer="json") as c:
            stats = c.run(
                enrich,
                concurrency=args.concurrency,
                ordering="key",
                max_records=args.orders,
                idle_timeout_s=30,
            )
    with urllib.request.urlopen(f"{base}/violations", timeout=10) as answer:
        violations = json.load(answer)["violations"]
    server.terminate()
    elapsed = max(times) - min(times)  # from the first call to the last answer
    rate = stats.handled / elapsed
    print(
        f"slow handlers: {stats.handled} orders priced in {elapsed:.1f} s ({rate:.0f}/s; one "
        f"at a time would be at most {1 / DELAY_S:.0f}/s), paused {stats.paused} times"
    )
    print(f"slow handlers: {violations} calls out of order per customer")
    ok = sorted(priced) == list(range(args.orders)) and violations == 0
    print("slow handlers: OK" if ok else "slow handlers: MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
