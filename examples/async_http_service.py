"""An asyncio HTTP service that records each request in Kafka, at-least-once, with sdk.aio.

Run: ``.venv/bin/python examples/async_http_service.py [--requests 1000] [--port 0]``. Uses
``KAFKA_BOOTSTRAP_SERVERS`` if set, else starts an embedded 1-node cluster.

``POST /events`` with a body answers ``202`` only after Kafka acknowledged the record
(``await producer.send``: acks=all, idempotent retries), so a client that got 202 knows the
event is stored; a client that got an error or no answer retries, which at_least_once allows
to duplicate, never to lose. The server is plain asyncio (``asyncio.start_server``), no web
framework: the point is the producer, which never blocks the loop. With ``--requests N`` the
script also plays the clients (N concurrent requests, 50 at a time), then counts the topic
with a raw confluent-kafka reader and says OK when every acknowledged event is there.
``--serve`` keeps the server running until Ctrl-C (SIGTERM/SIGINT close the producer cleanly).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import time

from confluent_kafka import Consumer, TopicPartition

from sdk.aio import AsyncProducer
from sdk.errors import SdkError
from sdk.profiles import ProducerProfile
from sdk.testing.admin import create_topic
from sdk.testing.backends import bootstrap_servers

MAX_BODY = 64 * 1024


class EventService:
    """``POST /events`` → one Kafka record, answered once it is acknowledged."""

    def __init__(self, producer: AsyncProducer, topic: str) -> None:
        self.producer = producer
        self.topic = topic
        self.accepted = 0
        self.errors: list[str] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            status, body = await self._request(reader)
        except (asyncio.IncompleteReadError, ValueError) as exc:
            status, body = 400, {"error": f"bad request: {exc}"}
        payload = json.dumps(body).encode()
        writer.write(
            f"HTTP/1.1 {status} {'Accepted' if status == 202 else 'Error'}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
            "Connection: close\r\n\r\n".encode()
            + payload
        )
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    async def _request(self, reader: asyncio.StreamReader) -> tuple[int, dict[str, object]]:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        method, path, _ = head[0].split(" ", 2)
        headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:] if h)}
        if (method, path) != ("POST", "/events"):
            return 404, {"error": f"no route {method} {path}"}
        length = int(headers.get("content-length", "0"))
        if not 0 < length <= MAX_BODY:
            return 400, {"error": f"body must be 1..{MAX_BODY} bytes"}
        body = await reader.readexactly(length)
        try:  # acknowledged by the in-sync replicas before we answer
            meta = await self.producer.send(self.topic, body, key=headers.get("x-event-key"))
        except SdkError as exc:  # the SDK's one error root: the client may retry
            self.errors.append(f"{type(exc).__name__}: {exc}")
            return 503, {"error": str(exc)}
        self.accepted += 1
        return 202, {"partition": meta.partition, "offset": meta.offset}


async def post(port: int, body: bytes, key: str) -> int:
    """A minimal HTTP client: POST /events, return the status code."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(
        f"POST /events HTTP/1.1\r\nHost: localhost\r\nX-Event-Key: {key}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    status = int((await reader.readline()).split()[1])
    await reader.read()
    writer.close()
    return status


def count(bootstrap: str, topic: str, partitions: int) -> set[bytes]:
    """Every value in ``topic``, read to its end by a raw confluent-kafka reader."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"audit-{time.time_ns()}",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: set[bytes] = set()
    eof: set[int] = set()
    deadline = time.monotonic() + 60
    while len(eof) < partitions and time.monotonic() < deadline:
        for m in consumer.consume(1000, 0.5):
            if m.error():
                eof.add(m.partition())
            else:
                eof.discard(m.partition())
                seen.add(m.value())
    consumer.close()
    return seen


async def serve(bootstrap: str, topic: str, port: int, requests: int, forever: bool) -> int:
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bootstrap)
    async with AsyncProducer(profile, key_serializer="str") as producer:
        service = EventService(producer, topic)
        server = await asyncio.start_server(service.handle, "127.0.0.1", port)
        port = server.sockets[0].getsockname()[1]
        print(f"http service: POST http://127.0.0.1:{port}/events -> topic {topic}")
        async with server:
            if forever:
                stop = asyncio.Event()
                loop = asyncio.get_running_loop()
                for sig in (signal.SIGINT, signal.SIGTERM):
                    loop.add_signal_handler(sig, stop.set)
                await stop.wait()
                return 0
            gate = asyncio.Semaphore(50)
            began = time.monotonic()

            async def one(i: int) -> int:
                async with gate:
                    return await post(port, json.dumps({"event": i}).encode(), f"user-{i % 20}")

            statuses = await asyncio.gather(*(one(i) for i in range(requests)))
            took = time.monotonic() - began
        ok = statuses.count(202)
        print(
            f"http service: {requests} requests in {took:.2f}s "
            f"({requests / took:,.0f}/s), {ok} answered 202"
        )
        if service.errors:
            print(f"http service: first error answered: {service.errors[0]}")
    values = count(bootstrap, topic, 3)
    missing = [i for i in range(requests) if json.dumps({"event": i}).encode() not in values]
    print(f"http service: {len(values)} distinct events in Kafka, {len(missing)} missing")
    if ok != requests or missing:
        print("http service: FAILED")
        return 1
    print("http service: OK (every 202 is in Kafka)")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--port", type=int, default=0, help="0: any free port")
    parser.add_argument("--serve", action="store_true", help="serve until Ctrl-C")
    args = parser.parse_args()
    topic = f"http-events-{time.time_ns()}"
    with bootstrap_servers() as bootstrap:
        create_topic(bootstrap, topic, 3)
        return asyncio.run(serve(bootstrap, topic, args.port, args.requests, args.serve))


if __name__ == "__main__":
    raise SystemExit(main())
