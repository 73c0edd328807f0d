"""KeyScheduler: one record per ordering key at a time, in offset order; drop on revoke."""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from typing import Any

import pytest

from sdk.consumer._concurrent import check_concurrency
from sdk.consumer._scheduler import KeyScheduler, Ordering
from sdk.errors import ConfigurationError


class Msg:
    def __init__(self, topic: str, partition: int, offset: int, key: bytes | None) -> None:
        self._t, self._p, self._o, self._k = topic, partition, offset, key

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def key(self) -> bytes | None:
        return self._k


def _batch(n: int, keys: int, partitions: int = 3, start: int = 0) -> list[Any]:
    out = []
    for i in range(start, start + n):
        p = i % partitions
        out.append(Msg("t", p, i, None if i % 17 == 0 else f"k{i % keys}".encode()))
    return out


def _run(ordering: Ordering, workers: int, batches: list[list[Any]]) -> dict[str, Any]:
    s = KeyScheduler(ordering)
    lock = threading.Lock()
    active: dict[Any, int] = defaultdict(int)
    seen: dict[Any, list[int]] = defaultdict(list)
    overlap: list[Any] = []
    peak = [0, 0]
    rng = random.Random(7)

    def group(m: Any) -> Any:
        if ordering == "key":
            return (m.partition(), m.key())
        if ordering == "partition":
            return m.partition()
        return m.offset()

    def call(m: Any) -> bool:
        g = group(m)
        with lock:
            active[g] += 1
            if active[g] > 1:
                overlap.append(g)
            peak[1] += 1
            peak[0] = max(peak[0], peak[1])
            seen[g].append(m.offset())
        time.sleep(rng.random() * 0.002)
        with lock:
            active[g] -= 1
            peak[1] -= 1
        return True

    threads = [threading.Thread(target=s.work, args=(call, lambda: None)) for _ in range(workers)]
    for t in threads:
        t.start()
    total = 0
    for b in batches:
        s.add(b)
        total += len(b)
    done: list[Any] = []
    deadline = time.monotonic() + 30
    while len(done) < total and time.monotonic() < deadline:
        done += s.take_finished()
        time.sleep(0.005)
    s.close()
    for t in threads:
        t.join(5)
    return {"seen": seen, "overlap": overlap, "peak": peak[0], "done": done, "sched": s}


@pytest.mark.parametrize("ordering", ["key", "partition", "unordered"])
def test_each_group_in_offset_order_never_two_at_once(ordering: Ordering) -> None:
    batches = [_batch(200, 40, start=i * 200) for i in range(5)]
    r = _run(ordering, 8, batches)
    assert len(r["done"]) == 1000
    assert sorted(m.offset() for m, _ in r["done"]) == list(range(1000))
    assert r["overlap"] == []
    for offsets in r["seen"].values():
        assert offsets == sorted(offsets)
    if ordering == "partition":
        assert r["peak"] <= 3  # three partitions
    else:
        assert r["peak"] > 3  # more than one per partition ran at once
    assert r["sched"].pending == 0 and r["sched"].running == 0


def test_drop_takes_out_waiting_records_and_a_key_is_never_doubled() -> None:
    s = KeyScheduler("key")
    gate = threading.Event()
    started: list[Any] = []

    def call(m: Any) -> bool:
        started.append(m)
        gate.wait(5)
        return True

    s.add([Msg("t", 0, 0, b"a"), Msg("t", 0, 1, b"a"), Msg("t", 1, 2, b"b"), Msg("t", 1, 3, b"c")])
    w = threading.Thread(target=s.work, args=(call, lambda: None))
    w.start()
    deadline = time.monotonic() + 5
    while not started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [m.offset() for m in started] == [0]  # one worker: key a's first record runs
    dropped = s.drop({("t", 1)})
    assert sorted(m.offset() for m in dropped) == [2, 3]
    assert s.pending == 1  # a@1 still waits behind a@0
    # a dropped key added again is queued once: the lone worker runs b@4 after a's records
    s.add([Msg("t", 1, 4, b"b")])
    gate.set()
    deadline = time.monotonic() + 5
    while len(started) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    s.close()
    w.join(5)
    assert sorted(m.offset() for m in started) == [0, 1, 4]
    assert s.pending == 0 and s.running == 0


def test_an_error_halts_and_keeps_the_key_blocked() -> None:
    s = KeyScheduler("key")
    stops: list[int] = []

    def call(m: Any) -> bool:
        if m.offset() == 1:
            raise ValueError("boom")
        return True

    s.add([Msg("t", 0, i, b"a" if i < 3 else b"z") for i in range(6)])
    w = threading.Thread(target=s.work, args=(call, lambda: stops.append(1)))
    w.start()
    deadline = time.monotonic() + 5
    while s.error is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)
    s.close()
    w.join(5)
    assert isinstance(s.error, ValueError) and s.failed is not None and s.failed.offset() == 1
    assert stops == [1]
    done = [m.offset() for m, _ in s.take_finished()]
    assert 1 not in done and 2 not in done  # nothing after the failed record of its key
    assert sorted(m.offset() for m in s.drop()) == [o for o in range(2, 6) if o not in done]


@pytest.mark.parametrize(
    ("concurrency", "ordering", "bound", "field"),
    [
        (0, "key", None, "concurrency"),
        (True, "key", None, "concurrency"),
        (4, "keys", None, "ordering"),
        (4, "key", 2, "max_buffered"),
    ],
)
def test_bad_arguments_are_refused(concurrency: Any, ordering: Any, bound: Any, field: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        check_concurrency(concurrency, ordering, bound)
    assert info.value.field == field


def test_default_buffer_bound() -> None:
    assert check_concurrency(1, "key", None) == ("key", 1000)
    assert check_concurrency(64, "unordered", None) == ("unordered", 6400)


def test_done_offsets_round_trip_and_fit_the_broker_limit() -> None:
    from sdk.consumer._done_offsets import MAX_CHARS, PREFIX, decode, encode

    assert encode(10, []) == "" and decode(10, "") == set()
    text = encode(10, {12, 15, 400, 9, 10})  # at or below the committed offset: left out
    assert text.startswith(PREFIX) and decode(10, text) == {12, 15, 400}
    assert decode(11, "someone else's metadata") == set()
    assert decode(11, PREFIX + "not base64!") == set()
    rng = random.Random(3)
    many = set(rng.sample(range(1, 100_000), 20_000))  # incompressible: cut from the top
    text = encode(0, many)
    kept = decode(0, text)
    assert len(text) <= MAX_CHARS and kept and kept <= many
    assert max(kept) < max(many) and min(kept) == min(many)
