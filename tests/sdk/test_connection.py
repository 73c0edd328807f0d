"""BrokerContact (sdk/_connection.py): when a client gives up on the cluster, and its log."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka import KafkaError

from sdk import _connection
from sdk._connection import BrokerContact
from sdk.errors import BrokerUnreachableError

REFUSED = (
    "[thrd:127.0.0.1:9/bootstrap]: 127.0.0.1:9/bootstrap: Connect to ipv4#127.0.0.1:9 failed: "
    "Connection refused (after {ms}ms in state CONNECT)"
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _fresh_log_table() -> None:
    _connection._seen.clear()


def _contact(clock: Clock, **config: Any) -> BrokerContact:
    return BrokerContact({"bootstrap.servers": "127.0.0.1:9", **config}, clock=clock)


def _refused(contact: BrokerContact, ms: int = 0) -> None:
    contact.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#consumer-1", REFUSED.format(ms=ms))


def _failing_probe(timeout_s: float) -> None:
    raise RuntimeError("no metadata")


def test_no_broker_for_the_bound_raises_naming_the_address_and_the_failure() -> None:
    clock = Clock()
    contact = _contact(clock)  # socket.connection.setup.timeout.ms: 30 s by default
    _refused(contact)
    clock.now += 29.9
    contact.check(_failing_probe, "consume from t")  # not yet
    clock.now += 0.2
    with pytest.raises(BrokerUnreachableError) as info:
        contact.check(_failing_probe, "consume from t")
    message = str(info.value)
    assert "'127.0.0.1:9'" in message and "Connection refused" in message
    assert "socket.connection.setup.timeout.ms=30000" in message


def test_the_extra_sets_the_bound() -> None:
    clock = Clock()
    contact = _contact(clock, **{"socket.connection.setup.timeout.ms": 5000})
    clock.now += 5.0
    with pytest.raises(BrokerUnreachableError):
        contact.check(_failing_probe, "x")


def test_a_probe_that_is_answered_means_contact_for_good() -> None:
    clock = Clock()
    contact = _contact(clock)
    clock.now += 31
    contact.check(lambda t: None, "x")
    assert contact.reached
    clock.now += 1000
    contact.check(_failing_probe, "x")  # an outage later is not an unreachable address


def test_a_connection_lost_in_state_up_means_the_broker_was_reached() -> None:
    clock = Clock()
    contact = _contact(clock)
    err = KafkaError(
        KafkaError._TRANSPORT, "127.0.0.1:9/1: Disconnected (after 5003ms in state UP)"
    )
    assert contact.on_error(err)
    clock.now += 60
    contact.check(_failing_probe, "x")


def test_without_a_probe_silence_is_not_a_refusal() -> None:
    clock = Clock()
    contact = _contact(clock)
    clock.now += 60
    contact.check(None, "x")  # nothing said the broker refused: maybe slow
    _refused(contact)
    with pytest.raises(BrokerUnreachableError):
        contact.check(None, "x")


def test_wait_returns_false_on_a_stop_request() -> None:
    clock = Clock()
    contact = _contact(clock)
    calls: list[float] = []

    def probe(timeout_s: float) -> None:
        calls.append(timeout_s)
        clock.now += timeout_s
        raise RuntimeError("no metadata")

    assert contact.wait(probe, lambda: len(calls) >= 3, "x") is False
    with pytest.raises(BrokerUnreachableError):
        contact.wait(probe, lambda: False, "init_transactions")
    assert len(calls) == 30  # one probe a second until the 30 s bound


def test_repeated_lines_are_logged_once_then_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = Clock()
    contact = _contact(clock)
    refused = KafkaError(KafkaError._TRANSPORT, REFUSED.format(ms=0).split("]: ", 1)[1])
    with caplog.at_level(logging.DEBUG, logger="sdk.librdkafka"):
        for i in range(20 * 150):  # 2.5 minutes at librdkafka's pace, port closed
            _refused(contact, ms=i % 3)
            contact.on_error(refused)  # the same failure through error_cb
            clock.now += 0.05
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3, lines  # the first, then one summary per minute
    assert lines[0].startswith("127.0.0.1:9/bootstrap: Connect to")  # no thread tag
    assert "times in the last 60s" in lines[1]
