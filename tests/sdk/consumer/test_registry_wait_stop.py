"""A stop while a record waits for the schema registry ends the run at once, normally.

The registry outage itself is tested against a real registry (tests/sdk/schemas); here a
deserializer that always reports an outage and a scripted client show the stop is seen within
the wait (not after ``registry_timeout_s``) and that nothing of the record is stored.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from sdk.consumer import Consumer
from sdk.consumer._registry_wait import RegistryWait, RegistryWaitStopped
from sdk.errors import SchemaRegistryUnavailableError
from sdk.profiles import ConsumerProfile
from sdk.testing.fakes import FakeConsumerClient, FakeMessage


def _down(data: bytes | None, ctx: Any) -> Any:
    raise SchemaRegistryUnavailableError("registry down", url="http://registry:8081")


def test_the_wait_ends_when_the_front_end_is_stopped() -> None:
    now = [0.0]
    stop = threading.Event()

    def sleep(seconds: float) -> None:
        now[0] += seconds
        if now[0] >= 1.0:
            stop.set()

    wait = RegistryWait(60, sleep=sleep, clock=lambda: now[0])
    wait.stopped = stop.is_set
    first = SchemaRegistryUnavailableError("down", url="http://r")
    message = FakeMessage("orders", 0, 7, b"x")
    with pytest.raises(RegistryWaitStopped) as info:
        wait.retry(lambda: _down(None, None), message, first)  # type: ignore[arg-type]
    assert info.value.waited_s == pytest.approx(1.0)
    assert "stopped after waiting 1.0s" in str(info.value)
    assert isinstance(info.value, SchemaRegistryUnavailableError)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_stop_during_the_wait_returns_and_stores_nothing(concurrency: int) -> None:
    client = FakeConsumerClient(
        batches=[[FakeMessage("t", 0, i, b"framed") for i in range(3)]],
        assign_on_subscribe=[("t", 0)],
    )
    profile = ConsumerProfile(guarantee="at_least_once", bootstrap_servers="unused:1", group_id="g")
    with Consumer(
        profile, ["t"], value_deserializer=_down, client_factory=lambda cfg: client
    ) as consumer:
        threading.Timer(0.5, consumer.stop).start()
        started = time.monotonic()
        stats = consumer.run(lambda r: None, concurrency=concurrency, idle_timeout_s=30)
        took = time.monotonic() - started
    assert took < 5  # not the 60 s registry_timeout_s
    assert stats.registry_retries >= 1 and stats.handled == 0
    assert client.stored == []  # nothing of the waiting record (or after it) stored
