"""Ctrl-C and SIGTERM as a request to stop (sdk/_signals.py), in process, no broker."""

from __future__ import annotations

import asyncio
import logging
import signal
from typing import Any

import pytest

from sdk._signals import loop_sigterm_stops, sigterm_stops


@pytest.fixture(autouse=True)
def _default_handlers() -> Any:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGINT, before[0])
    signal.signal(signal.SIGTERM, before[1])


def test_the_first_ctrl_c_stops_and_says_so_the_second_interrupts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stops: list[int] = []
    with (
        caplog.at_level(logging.WARNING, logger="sdk"),
        pytest.raises(KeyboardInterrupt),
        sigterm_stops(lambda: stops.append(1), None),
    ):
        signal.raise_signal(signal.SIGINT)
        assert stops == [1]  # a request to stop, not an exception
        signal.raise_signal(signal.SIGINT)
        pytest.fail("the second Ctrl-C did not interrupt")
    assert stops == [1]
    assert "Ctrl-C again to stop at once" in caplog.text
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


def test_sigterm_stops_every_time() -> None:
    stops: list[int] = []
    with sigterm_stops(lambda: stops.append(1), None):
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGTERM)
    assert stops == [1, 1]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_an_application_sigint_handler_is_left_alone_by_default() -> None:
    seen: list[int] = []

    def mine(signum: int, frame: Any) -> None:
        seen.append(signum)

    signal.signal(signal.SIGINT, mine)
    stops: list[int] = []
    with sigterm_stops(lambda: stops.append(1), None):
        signal.raise_signal(signal.SIGINT)
    assert seen == [signal.SIGINT] and stops == []
    assert signal.getsignal(signal.SIGINT) is mine


def test_handle_sigterm_true_takes_sigint_too_and_false_neither() -> None:
    def mine(signum: int, frame: Any) -> None:
        pass

    signal.signal(signal.SIGINT, mine)
    stops: list[int] = []
    with sigterm_stops(lambda: stops.append(1), True):
        signal.raise_signal(signal.SIGINT)
    assert stops == [1]
    assert signal.getsignal(signal.SIGINT) is mine
    signal.signal(signal.SIGINT, signal.default_int_handler)
    with pytest.raises(KeyboardInterrupt), sigterm_stops(lambda: stops.append(2), False):
        signal.raise_signal(signal.SIGINT)
    assert stops == [1]


def test_a_second_ctrl_c_that_confluent_kafka_lost_is_a_keyboard_interrupt() -> None:
    """confluent-kafka 2.16 turns a KeyboardInterrupt in its callbacks into a SystemError."""
    lost = SystemError(
        "<method 'consume' of 'cimpl.Consumer' objects> returned NULL without setting an exception"
    )
    with pytest.raises(KeyboardInterrupt), sigterm_stops(lambda: None, None):
        signal.raise_signal(signal.SIGINT)
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            raise lost from None
    with pytest.raises(SystemError), sigterm_stops(lambda: None, None):
        raise lost  # no second Ctrl-C: not ours to rename


def test_asyncio_run_ctrl_c_stops_once_then_interrupts() -> None:
    stops: list[int] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        with loop_sigterm_stops(loop, lambda: stops.append(1), None):
            signal.raise_signal(signal.SIGINT)
            await asyncio.sleep(0.05)
            assert stops == [1]
            signal.raise_signal(signal.SIGINT)  # asyncio.run's: cancels this task
            await asyncio.sleep(1)
            pytest.fail("the second Ctrl-C did not interrupt")

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(main())
    assert stops == [1]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # asyncio.run's undone
