"""HandlersAhead's outcomes, as a core walks them: the leading successes, a skipped record,
a failure, a core out of step. The loop runs in a thread of its own; the test is the core's
worker thread (it calls ``run`` and then ``call`` per record, as the Consumer and the
Processor do)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Iterator

import pytest

from sdk.aio._bridge import HandlersAhead, LoopBridge
from sdk.records import ConsumerRecord, view
from sdk.testing.fakes import FakeMessage


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    running = asyncio.new_event_loop()
    thread = threading.Thread(target=running.run_forever, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.call_soon_threadsafe(running.stop)
        thread.join(5)
        running.close()


def _messages(n: int) -> list[FakeMessage]:
    return [FakeMessage("t", 0, i, b"%d" % i, key=b"k%d" % i) for i in range(n)]


def _ahead(
    loop: asyncio.AbstractEventLoop,
    calls: list[int],
    *,
    fail_at: int | None = None,
    finish: bool = False,
    poison_at: int | None = None,
) -> HandlersAhead:
    async def handler(record: ConsumerRecord) -> list[bytes]:
        calls.append(record.offset)
        if record.offset == fail_at:
            raise ValueError(f"record {fail_at} fails")
        return [record.value]

    def prepare(message: FakeMessage) -> ConsumerRecord | None:
        return None if message.offset() == poison_at else view(ConsumerRecord, message)

    bridge = LoopBridge(concurrent.futures.ThreadPoolExecutor(1), lambda: None)
    return HandlersAhead(
        bridge,
        handler,
        loop,
        prepare if poison_at is not None else None,
        lambda: False,
        finish=finish,
    )


def test_the_leading_successes_values_in_order_then_a_failure_then_crossings(
    loop: asyncio.AbstractEventLoop,
) -> None:
    calls: list[int] = []
    ahead = _ahead(loop, calls, fail_at=3)
    messages = _messages(6)
    assert ahead.run(messages) == 4  # 0-2 succeeded, 3 began (and failed)
    assert ahead.finished == 0  # without finish the core takes each value
    assert calls == [0, 1, 2, 3]
    got = [ahead.call(view(ConsumerRecord, m)) for m in messages[:3]]
    assert got == [[b"0"], [b"1"], [b"2"]]
    with pytest.raises(ValueError, match="record 3 fails"):
        ahead.call(view(ConsumerRecord, messages[3]))  # the first attempt's failure
    # the core's retry of 3 and the records after it cross one by one
    with pytest.raises(ValueError):
        ahead.call(view(ConsumerRecord, messages[3]))
    assert ahead.call(view(ConsumerRecord, messages[4])) == [b"4"]
    assert calls == [0, 1, 2, 3, 3, 4]


def test_with_finish_the_leading_successes_are_only_counted_and_a_skipped_record_ends_them(
    loop: asyncio.AbstractEventLoop,
) -> None:
    calls: list[int] = []
    ahead = _ahead(loop, calls, finish=True, poison_at=2)
    messages = _messages(5)
    assert ahead.run(messages) == 5
    assert ahead.finished == 2  # 0 and 1; 2 is the core's (a poison pill)
    assert calls == [0, 1, 3, 4]  # no handler for the skipped record
    # the core walks the rest: 2 is its own, 3 and 4 come from the outcomes, no crossing
    assert ahead.call(view(ConsumerRecord, messages[3])) == [b"3"]
    assert ahead.call(view(ConsumerRecord, messages[4])) == [b"4"]
    assert calls == [0, 1, 3, 4]


def test_a_core_out_of_step_crosses_per_record_from_there(
    loop: asyncio.AbstractEventLoop,
) -> None:
    calls: list[int] = []
    ahead = _ahead(loop, calls)
    messages = _messages(4)
    assert ahead.run(messages) == 4
    assert ahead.call(view(ConsumerRecord, messages[0])) == [b"0"]
    # the core rewound and hands record 0 again: not the outcome of record 1
    assert ahead.call(view(ConsumerRecord, messages[0])) == [b"0"]
    assert calls == [0, 1, 2, 3, 0]
    assert ahead.call(view(ConsumerRecord, messages[1])) == [b"1"]  # crossing, not kept
    assert calls == [0, 1, 2, 3, 0, 1]


def test_bytes_in_each_handler_gets_a_view_of_its_message(
    loop: asyncio.AbstractEventLoop,
) -> None:
    seen: list[tuple[object, object, int]] = []

    async def handler(record: ConsumerRecord) -> None:
        seen.append((record.key, record.value, record.offset))

    bridge = LoopBridge(concurrent.futures.ThreadPoolExecutor(1), lambda: None)
    ahead = HandlersAhead(bridge, handler, loop, None, lambda: False, finish=True)
    assert ahead.run(_messages(3)) == 3
    assert ahead.finished == 3
    assert seen == [(b"k0", b"0", 0), (b"k1", b"1", 1), (b"k2", b"2", 2)]


def test_a_stop_ends_the_crossing_before_the_next_handler(
    loop: asyncio.AbstractEventLoop,
) -> None:
    stop = threading.Event()
    calls: list[int] = []

    async def handler(record: ConsumerRecord) -> None:
        calls.append(record.offset)
        if record.offset == 1:
            stop.set()

    bridge = LoopBridge(concurrent.futures.ThreadPoolExecutor(1), stop.set)
    ahead = HandlersAhead(bridge, handler, loop, None, stop.is_set, finish=True)
    assert ahead.run(_messages(5)) == 2  # 0 and 1 ran; the rest is read again
    assert ahead.finished == 2
    assert calls == [0, 1]


def test_the_core_may_take_the_leading_values_and_call_goes_on_after_them(
    loop: asyncio.AbstractEventLoop,
) -> None:
    calls: list[int] = []
    ahead = _ahead(loop, calls, fail_at=4)
    messages = _messages(6)
    assert ahead.run(messages) == 5
    assert ahead.take_leading() == [[b"0"], [b"1"], [b"2"], [b"3"]]
    with pytest.raises(ValueError, match="record 4 fails"):  # the first attempt's outcome
        ahead.call(view(ConsumerRecord, messages[4]))
    assert calls == [0, 1, 2, 3, 4]  # no handler ran again


def test_with_lists_a_value_that_is_not_a_list_ends_the_lead_and_comes_through_call(
    loop: asyncio.AbstractEventLoop,
) -> None:
    calls: list[int] = []
    returned: dict[int, object] = {0: [b"0"], 1: None, 2: (b"2",), 3: [b"3"]}

    async def handler(record: ConsumerRecord) -> object:
        calls.append(record.offset)
        return returned[record.offset]

    bridge = LoopBridge(concurrent.futures.ThreadPoolExecutor(1), lambda: None)
    ahead = HandlersAhead(bridge, handler, loop, None, lambda: False, lists=True)
    messages = _messages(4)
    assert ahead.run(messages) == 4  # every handler ran, in one crossing
    assert ahead.take_leading() == [[b"0"], None]  # a list or None: emitted by the core as is
    assert ahead.call(view(ConsumerRecord, messages[2])) == (b"2",)  # the core makes it a list
    assert ahead.call(view(ConsumerRecord, messages[3])) == [b"3"]
    assert calls == [0, 1, 2, 3]
