"""The producer's durations end in _s; the old keywords still work, with a DeprecationWarning.

No broker: the Producer runs on :class:`sdk.testing.fakes.FakeProducerClient`, whose hooks
record the timeout each librdkafka call was given.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from confluent_kafka import TopicPartition

from sdk.errors import ConfigurationError, KafkaTimeoutError
from sdk.partitioners import PartitionRouter
from sdk.producer import DeliveryHandle, Producer, ProducerRecord
from sdk.profiles import ProducerProfile
from sdk.testing.fakes import FakeProducerFactory


def _producer(guarantee: str, seen: list[tuple[str, Any]]) -> Producer:
    """A producer on a fake client that records ``(call, timeout)`` of its timed calls."""

    def record(name: str) -> Callable[..., None]:
        return lambda client, *args: seen.append((name, args[-1]))

    timed = ["poll", "flush", "init_transactions", "send_offsets_to_transaction"]
    timed += ["commit_transaction", "abort_transaction"]
    tid = {"transactional_id": "t-1"} if guarantee == "exactly_once" else {}
    profile = ProducerProfile(guarantee=guarantee, bootstrap_servers="b:1", **tid)
    factory = FakeProducerFactory(hooks={name: record(name) for name in timed})
    return Producer(profile, check_topics=False, telemetry=False, client_factory=factory)


@contextmanager
def _deprecations() -> Iterator[list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield caught
    caught[:] = [w for w in caught if issubclass(w.category, DeprecationWarning)]


def _in_transaction(p: Producer, **kw: Any) -> None:
    with p.transaction(**kw):
        p.send("out", b"v")


CALLS = [
    pytest.param("Producer.poll", "at_least_once", lambda p, **kw: p.poll(**kw), "poll"),
    pytest.param("Producer.flush", "at_least_once", lambda p, **kw: p.flush(**kw), "flush"),
    pytest.param(
        "Producer.close",
        "at_least_once",
        lambda p, **kw: (p.poll(), p.close(**kw)),  # poll: a client to close
        "flush",
    ),
    pytest.param(
        "Producer.init_transactions",
        "exactly_once",
        lambda p, **kw: p.init_transactions(**kw),
        "init_transactions",
    ),
    pytest.param(
        "Producer.send_offsets_to_transaction",
        "exactly_once",
        lambda p, **kw: (
            p.begin_transaction(),
            p.send_offsets_to_transaction([TopicPartition("in", 0, 1)], object(), **kw),
        ),
        "send_offsets_to_transaction",
    ),
    pytest.param(
        "Producer.commit_transaction",
        "exactly_once",
        lambda p, **kw: (p.begin_transaction(), p.commit_transaction(**kw)),
        "commit_transaction",
    ),
    pytest.param(
        "Producer.abort_transaction",
        "exactly_once",
        lambda p, **kw: (p.begin_transaction(), p.abort_transaction(**kw)),
        "abort_transaction",
    ),
    pytest.param("Producer.transaction", "exactly_once", _in_transaction, "commit_transaction"),
]


@pytest.mark.parametrize(("where", "guarantee", "call", "reaches"), CALLS)
@pytest.mark.parametrize("keyword", ["timeout_s", "timeout"])
def test_each_timeout_reaches_librdkafka_under_its_new_and_its_old_name(
    where: str, guarantee: str, call: Any, reaches: str, keyword: str
) -> None:
    seen: list[tuple[str, Any]] = []
    producer = _producer(guarantee, seen)
    with _deprecations() as caught:
        call(producer, **{keyword: 7.5})
    assert [(name, t) for name, t in seen if name == reaches][-1] == (reaches, 7.5)
    if keyword == "timeout_s":
        assert caught == []
    else:
        assert [str(w.message) for w in caught] == [
            f"{where}(timeout=) is deprecated and removed in 0.3: use timeout_s="
        ]
        assert caught[0].filename == __file__  # the warning points at the caller's line


def test_positional_timeouts_are_unchanged() -> None:
    seen: list[tuple[str, Any]] = []
    producer = _producer("exactly_once", seen)
    with _deprecations() as caught:
        producer.init_transactions(3.0)
        producer.begin_transaction()
        producer.commit_transaction(4.0)
        producer.poll(0.5)
        producer.flush(6.0)
        producer.close(7.0)
    assert caught == []
    assert seen == [
        ("init_transactions", 3.0),
        ("commit_transaction", 4.0),
        ("poll", 0.5),
        ("flush", 6.0),
        ("flush", 7.0),
    ]


def test_close_with_the_old_keyword_none_still_waits_unbounded() -> None:
    seen: list[tuple[str, Any]] = []
    producer = _producer("at_least_once", seen)
    producer.poll()
    with pytest.warns(DeprecationWarning, match=r"Producer\.close\(timeout=\)"):
        producer.close(timeout=None)
    assert seen[-1] == ("flush", -1)  # None: as long as the delivery timeout allows


def test_send_and_wait_and_result_take_timeout_s_and_the_old_name() -> None:
    producer = _producer("at_least_once", [])
    # 0 s: no outcome is waited for, the handle is still pending (nothing polled yet)
    with pytest.raises(KafkaTimeoutError, match=r"within 0\.0s"):
        producer.send_and_wait("t", b"v", timeout_s=0.0)
    with (
        pytest.warns(DeprecationWarning, match=r"Producer\.send_and_wait\(timeout=\)"),
        pytest.raises(KafkaTimeoutError, match=r"within 0\.0s"),
    ):
        producer.send_and_wait("t", b"v", timeout=0.0)
    handle = producer.send("t", b"v")
    with (
        pytest.warns(DeprecationWarning, match=r"DeliveryHandle\.result\(timeout=\)"),
        pytest.raises(KafkaTimeoutError, match=r"within 0\.0s"),
    ):
        handle.result(timeout=0.0)
    assert handle.result(5.0).topic == "t"  # positional, as before
    assert producer.send_and_wait("t", b"w", timeout_s=5.0).offset == 3


@pytest.mark.parametrize(
    "call",
    [
        lambda p: p.flush(timeout_s=1.0, timeout=2.0),
        lambda p: p.send_and_wait("t", b"v", timeout_s=1.0, timeout=2.0),
        lambda p: p.send("t", b"v").result(timeout_s=1.0, timeout=2.0),
    ],
    ids=["flush", "send_and_wait", "result"],
)
def test_a_timeout_given_under_both_names_is_refused(call: Any) -> None:
    producer = _producer("at_least_once", [])
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigurationError) as info:
        call(producer)
    assert info.value.field == "timeout_s"


def test_a_handle_waits_its_timeout_s() -> None:
    class _Owner:
        _hot = None

        def _poll(self, timeout_s: float) -> int:
            return 0

    handle = DeliveryHandle(ProducerRecord("t", b"v"), _Owner())  # type: ignore[arg-type]
    with pytest.raises(KafkaTimeoutError, match=r"within 0\.05s"):
        handle.result(timeout_s=0.05)


@pytest.mark.parametrize(
    ("old", "new", "attribute"),
    [
        ("metadata_max_age", "metadata_max_age_s", "_max_age"),
        ("metadata_timeout", "metadata_timeout_s", "_timeout"),
    ],
)
def test_the_router_takes_its_durations_in_s_and_under_the_old_names(
    old: str, new: str, attribute: str
) -> None:
    with _deprecations() as caught:
        assert getattr(PartitionRouter("round_robin", {}, **{new: 5.0}), attribute) == 5.0
    assert caught == []
    with _deprecations() as caught:
        router = PartitionRouter("round_robin", {}, **{old: 6.0})
    assert getattr(router, attribute) == 6.0
    assert [str(w.message) for w in caught] == [
        f"PartitionRouter({old}=) is deprecated and removed in 0.3: use {new}="
    ]
    assert caught[0].filename == __file__
