"""Real-broker tests of the Processor in this process: basic copy, abortable, fenced, DLQ."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Producer

from sdk.errors import HandlerError, ProducerFencedError
from sdk.processor import OutputRecord, Processor
from sdk.profiles import ProcessingProfile
from tests.sdk.processor._support import committed_total, seed, verify

pytestmark = pytest.mark.broker


def eos_profile(bootstrap: str, group: str, **extra: Any) -> ProcessingProfile:
    failure = extra.pop("failure", {})
    return ProcessingProfile(
        guarantee="exactly_once",
        consumer={
            "guarantee": "exactly_once",
            "bootstrap_servers": bootstrap,
            "group_id": group,
            "session_timeout_ms": 6000,
            "failure": failure,
        },
        producer={
            "guarantee": "exactly_once",
            "bootstrap_servers": bootstrap,
            "transactional_id_prefix": f"{group}-",
        },
        **extra,
    )


def copy(output: str) -> Callable[[Any], list[OutputRecord]]:
    return lambda r: [OutputRecord(topic=output, key=r.key, value=r.value)]


def run_until(proc: Processor, handler: Any, done: Callable[[], bool], timeout: float = 60) -> Any:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["stats"] = proc.run(handler)
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and t.is_alive() and not done():
            time.sleep(0.2)
    finally:
        proc.stop()
        t.join(60)
    return box


def test_copy_exactly_once(kafka_cluster: Any, make_topic: Any, make_group: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(4), make_topic(4), make_group()
    n = 5000
    seed(bs, src, n)
    proc = Processor(eos_profile(bs, group), [src], instance_id="one")
    box = run_until(proc, copy(dst), lambda: committed_total(bs, group, src, 4) >= n)
    assert "error" not in box, box
    v = verify(bs, dst, 4, n)
    print(
        f"copy: count={v.count} dup={v.duplicates} missing={v.missing} commits={proc.stats.commits}"
    )
    assert (v.count, v.duplicates, v.missing, v.order_violations) == (n, 0, 0, 0)
    assert proc.stats.commits >= 2


def test_copy_exactly_once_with_plain_tuple_outputs(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """A handler may return plain tuples: ``(topic, value, key)`` takes the fast path, a tuple
    with headers the general one; both in the same transactions, each record once."""
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(4), make_topic(4), make_group()
    n = 2000
    seed(bs, src, n)

    def as_tuples(r: Any) -> list[tuple[Any, ...]]:
        if int(r.value) % 10 == 0:
            return [(dst, r.value, r.key, [("every", b"10th")])]
        return [(dst, r.value, r.key)]

    proc = Processor(eos_profile(bs, group), [src], instance_id="tuples")
    box = run_until(proc, as_tuples, lambda: committed_total(bs, group, src, 4) >= n)
    assert "error" not in box, box
    v = verify(bs, dst, 4, n)
    assert (v.count, v.duplicates, v.missing, v.order_violations) == (n, 0, 0, 0)
    assert proc.stats.records_out == n


def test_abortable_error_aborts_rewinds_and_continues(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """A record the broker rejects (over max.message.bytes) makes the transaction abortable."""
    bs = kafka_cluster.bootstrap_servers
    src, group = make_topic(4), make_group()
    dst = make_topic(4, config={"max.message.bytes": "200000"})
    n = 3000
    seed(bs, src, n)
    poisoned = {"done": False}

    def handler(r: Any) -> list[OutputRecord]:
        value = r.value
        if value == b"1234" and not poisoned["done"]:
            poisoned["done"] = True
            value = b"x" * 300_000  # the broker refuses it: MSG_SIZE_TOO_LARGE, abortable
        return [OutputRecord(topic=dst, key=r.key, value=value)]

    proc = Processor(eos_profile(bs, group), [src], instance_id="one")
    box = run_until(proc, handler, lambda: committed_total(bs, group, src, 4) >= n)
    assert "error" not in box, box
    s = proc.stats
    print(
        f"abortable: recoveries={s.abortable_recoveries} aborts={s.aborts} rewinds={s.rewinds} "
        f"recreations={s.producer_recreations}"
    )
    print("\n".join(s.events[:8]))
    assert poisoned["done"]
    # The sequence gap librdkafka keeps after the refused record either makes the next commit
    # fail too (a second abortable recovery) or is cleared by a producer recreation: a race.
    assert s.abortable_recoveries >= 1 and s.rewinds >= 1
    assert s.producer_recreations == 1 or s.abortable_recoveries == 2, s.events
    v = verify(bs, dst, 4, n)
    assert (v.count, v.duplicates, v.missing, v.order_violations) == (n, 0, 0, 0)


def _fence(bs: str, tid: str) -> None:
    intruder = Producer({"bootstrap.servers": bs, "transactional.id": tid})
    intruder.init_transactions(30)  # bumps the epoch: the processor's producer is fenced


@pytest.mark.parametrize("policy", ["recreate", "raise"])
def test_fenced_producer(kafka_cluster: Any, make_topic: Any, make_group: Any, policy: str) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(4), make_topic(4), make_group()
    n = 4000
    seed(bs, src, n)
    fenced = {"done": False}

    def handler(r: Any) -> list[OutputRecord]:
        if int(r.value) % 500 == 0:
            time.sleep(0.05)
        if not fenced["done"] and proc.stats.records_in >= 1000:
            fenced["done"] = True
            _fence(bs, str(proc.transactional_id))
        return [OutputRecord(topic=dst, key=r.key, value=r.value)]

    proc = Processor(
        eos_profile(bs, group),
        [src],
        instance_id="f",
        on_fenced=policy,  # type: ignore[arg-type]
    )
    box = run_until(proc, handler, lambda: committed_total(bs, group, src, 4) >= n)
    s = proc.stats
    print(f"fenced[{policy}]: fenced={s.fenced} recreations={s.producer_recreations} {box}")
    assert fenced["done"] and s.fenced >= 1
    if policy == "raise":
        assert isinstance(box.get("error"), ProducerFencedError)
        assert committed_total(bs, group, src, 4) < n
        return
    assert "error" not in box, box
    assert s.producer_recreations >= 1 and s.rewinds >= 1
    v = verify(bs, dst, 4, n)
    assert (v.count, v.duplicates, v.missing, v.order_violations) == (n, 0, 0, 0)


def test_handler_failure_dead_letters_inside_the_transaction(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, dlq, group = make_topic(2), make_topic(2), make_topic(1), make_group()
    n = 1000
    seed(bs, src, n)
    calls: dict[int, int] = {}

    def handler(r: Any) -> list[OutputRecord]:
        i = int(r.value)
        if i % 100 == 7:
            calls[i] = calls.get(i, 0) + 1
            raise ValueError(f"poison {i}")
        return [OutputRecord(topic=dst, key=r.key, value=r.value)]

    failure = {"attempts": 2, "backoff_initial_ms": 1, "on_failure": "dlq", "dlq_topic": dlq}
    proc = Processor(eos_profile(bs, group, failure=failure), [src], instance_id="d")
    box = run_until(proc, handler, lambda: committed_total(bs, group, src, 2) >= n)
    assert "error" not in box, box
    assert set(calls.values()) == {2} and len(calls) == 10  # retried once, then dead-lettered
    out = verify(bs, dst, 2, n)
    dead = verify(bs, dlq, 1, n)
    assert out.count == n - 10 and out.duplicates == 0
    assert dead.count == 10 and dead.duplicates == 0
    assert proc.stats.dead_lettered == 10


def test_handler_failure_stop_aborts_and_raises(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(1), make_topic(1), make_group()
    seed(bs, src, 100)

    def handler(r: Any) -> list[OutputRecord]:
        if r.value == b"50":
            raise RuntimeError("boom")
        return [OutputRecord(topic=dst, key=r.key, value=r.value)]

    failure = {"attempts": 1, "on_failure": "stop"}
    profile = eos_profile(bs, group, failure=failure, commit_interval_ms=30_000)
    proc = Processor(profile, [src], instance_id="s")
    box = run_until(proc, handler, lambda: False, timeout=30)
    assert isinstance(box.get("error"), HandlerError)
    assert proc.stats.aborts == 1
    # Nothing of the aborted transaction is visible; the input offset was not committed.
    assert verify(bs, dst, 1, 100).count == 0
    assert committed_total(bs, group, src, 1) == 0


def test_leaving_on_an_exception_aborts_the_open_transaction_at_once(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """A BaseException out of the handler (KeyboardInterrupt here; a cancelled AsyncProcessor
    alike) ends run() with a transaction open: it is aborted before close, so a record written
    afterwards is read_committed at once (not after transaction.timeout.ms)."""
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(1), make_topic(1), make_group()
    seed(bs, src, 100)

    def handler(r: Any) -> list[OutputRecord]:
        if r.value == b"50":
            raise KeyboardInterrupt  # records 0-49 are in the open transaction
        return [OutputRecord(topic=dst, key=r.key, value=r.value)]

    profile = eos_profile(bs, group, commit_interval_ms=30_000)
    proc = Processor(profile, [src], instance_id="k")
    with pytest.raises(KeyboardInterrupt):
        proc.run(handler)
    assert proc.stats.aborts == 1
    marker = Producer({"bootstrap.servers": bs})
    marker.produce(dst, b"999", key=b"marker")
    assert marker.flush(10) == 0
    # read_committed stops at the last stable offset: an open transaction would hide the marker
    v = verify(bs, dst, 1, 0)
    assert v.values == {"marker": [999]}  # the marker only: the aborted 50 are not visible
    assert committed_total(bs, group, src, 1) == 0


@pytest.mark.parametrize("guarantee", ["at_least_once", "at_most_once"])
def test_other_guarantees_same_api(
    kafka_cluster: Any, make_topic: Any, make_group: Any, guarantee: str
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(2), make_topic(2), make_group()
    n = 2000
    seed(bs, src, n)
    profile = ProcessingProfile(
        guarantee=guarantee,
        consumer={"guarantee": guarantee, "bootstrap_servers": bs, "group_id": group},
        producer={"guarantee": guarantee, "bootstrap_servers": bs},
    )
    with Processor(profile, [src]) as proc:
        box = run_until(proc, copy(dst), lambda: committed_total(bs, group, src, 2) >= n)
    assert "error" not in box, box
    v = verify(bs, dst, 2, n)
    print(f"{guarantee}: count={v.count} duplicates={v.duplicates} commits={proc.stats.commits}")
    assert (v.count, v.duplicates, v.missing) == (n, 0, 0)  # no crash: nothing lost or repeated
    assert proc.transactional_id is None


@pytest.mark.slow
def test_transaction_timeout_on_the_broker(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """A handler stalls past transaction.timeout.ms: the coordinator aborts, the loop recovers."""
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(2), make_topic(2), make_group()
    n = 2000
    seed(bs, src, n)
    stalled = {"done": False}

    def handler(r: Any) -> list[OutputRecord]:
        if r.value == b"700" and not stalled["done"]:
            stalled["done"] = True
            time.sleep(14)  # > 2 s timeout + the broker's 10 s abort-check interval
        return [OutputRecord(topic=dst, key=r.key, value=r.value)]

    profile = ProcessingProfile(
        guarantee="exactly_once",
        consumer={"guarantee": "exactly_once", "bootstrap_servers": bs, "group_id": group},
        producer={
            "guarantee": "exactly_once",
            "bootstrap_servers": bs,
            "transactional_id_prefix": f"{group}-",
            "transaction_timeout_ms": 2000,
        },
    )
    proc = Processor(profile, [src], instance_id="t")
    box = run_until(proc, handler, lambda: committed_total(bs, group, src, 2) >= n, timeout=90)
    s = proc.stats
    print(f"txn-timeout: timeouts={s.transaction_timeouts} recreations={s.producer_recreations}")
    print("\n".join(s.events[:6]))
    assert "error" not in box, box
    assert stalled["done"] and s.transaction_timeouts == 1 and s.producer_recreations >= 1
    v = verify(bs, dst, 2, n)
    assert (v.count, v.duplicates, v.missing, v.order_violations) == (n, 0, 0, 0)
