"""Construction-time checks: no network, refused guarantees and options, lifecycle."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

import pytest

from sdk.consumer import Consumer
from sdk.errors import ClosedError, ConfigurationError
from sdk.lifecycle import Lifecycle
from sdk.profiles import ConsumerProfile

UNREACHABLE = "127.0.0.1:1"


def _profile(guarantee: str = "at_least_once", **kw: Any) -> ConsumerProfile:
    return ConsumerProfile(guarantee=guarantee, bootstrap_servers=UNREACHABLE, group_id="g", **kw)


def test_exactly_once_is_refused_with_the_field_named() -> None:
    with pytest.raises(ConfigurationError) as info:
        Consumer(_profile("exactly_once"), ["t"])
    assert info.value.field == "guarantee"
    assert "sdk.processor.Processor" in str(info.value)


def test_no_client_is_created_in_init() -> None:
    made: list[Any] = []
    c = Consumer(_profile(), ["t"], client_factory=lambda cfg: made.append(cfg))
    assert c.state is Lifecycle.NEW and made == []
    c.close()
    assert c.state is Lifecycle.CLOSED and made == []


@pytest.mark.parametrize("guarantee", ["at_most_once", "at_least_once"])
def test_rendered_config_is_the_profiles(guarantee: str) -> None:
    cfg = Consumer(_profile(guarantee), ["t"]).config
    assert cfg["enable.auto.offset.store"] is False
    assert cfg["enable.auto.commit"] is (guarantee == "at_least_once")


def test_topics_must_be_given() -> None:
    with pytest.raises(ConfigurationError) as info:
        Consumer(_profile(), [])
    assert info.value.field == "topics"


def test_unknown_deserializer_lists_the_valid_names() -> None:
    with pytest.raises(ConfigurationError) as info:
        Consumer(_profile(), ["t"], value_deserializer="avro")
    assert info.value.field == "value_deserializer"
    assert "bytes, json, str" in str(info.value)


def test_dead_letter_producer_cannot_be_weakened() -> None:
    prof = _profile(failure={"on_failure": "dlq", "dlq_topic": "dead"})
    with pytest.raises(ConfigurationError) as info:
        Consumer(prof, ["t"], dead_letter_producer_config={"acks": "1"})
    assert info.value.field == "dead_letter_producer_config.extras.acks"
    Consumer(prof, ["t"], dead_letter_producer_config={"linger.ms": 0})  # tuning is fine


def test_dead_letter_config_without_a_dlq_topic_is_refused() -> None:
    with pytest.raises(ConfigurationError) as info:
        Consumer(_profile(), ["t"], dead_letter_producer_config={"linger.ms": 0})
    assert info.value.field == "dead_letter_producer_config"


def test_bad_retry_on_type_is_refused() -> None:
    with pytest.raises(ConfigurationError) as info:
        Consumer(_profile(failure={"retry_on": ["no.such.Error"]}), ["t"])
    assert info.value.field == "failure.retry_on"


def test_dead_letter_without_topic_is_refused() -> None:
    c = Consumer(_profile(), ["t"])
    with pytest.raises(ConfigurationError) as info:
        c.dead_letter(None, ValueError("x"))  # type: ignore[arg-type]
    assert info.value.field == "failure.dlq_topic"


def test_use_after_close_raises_closed_error() -> None:
    c = Consumer(_profile(), ["t"])
    with c:
        pass
    with pytest.raises(ClosedError):
        c.run(lambda r: None)
    with pytest.raises(ClosedError):
        next(iter(c))
    with pytest.raises(ClosedError):
        c.ack(None)  # type: ignore[arg-type]
    c.close()  # idempotent


def test_sigterm_handling_needs_the_main_thread() -> None:
    errors: list[BaseException] = []
    c = Consumer(_profile(), ["t"])

    def run() -> None:
        try:
            c.run(lambda r: None, idle_timeout_s=0.1, handle_sigterm=True)
        except BaseException as exc:
            errors.append(exc)

    th = threading.Thread(target=run)
    th.start()
    th.join(30)
    c.close()
    assert isinstance(errors[0], ConfigurationError)
    assert errors[0].field == "handle_sigterm"


def test_sigterm_handler_is_installed_only_during_the_run_and_restored() -> None:
    def mine(signum: int, frame: Any) -> None:
        pass

    previous = signal.signal(signal.SIGTERM, mine)
    during: list[Any] = []
    try:
        with Consumer(_profile(), ["t"]) as c:
            real_poll = c._source.poll

            # observe from inside the loop
            def spy(client: Any, limit: int, timeout_s: float) -> list[Any]:
                during.append(signal.getsignal(signal.SIGTERM))
                os.kill(os.getpid(), signal.SIGTERM)  # the consumer's handler stops the run
                return real_poll(client, limit, timeout_s)

            c._source.poll = spy  # type: ignore[method-assign]
            c.run(lambda r: None, handle_sigterm=True)
        assert len(during) == 1 and during[0] is not mine
        assert signal.getsignal(signal.SIGTERM) is mine  # restored afterwards
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stopping_spy(c: Consumer, during: list[Any], *, sigterm: bool) -> None:
    """Observe the SIGTERM handler from inside the loop, then end the run (by SIGTERM or stop)."""
    real_poll = c._source.poll

    def spy(client: Any, limit: int, timeout_s: float) -> list[Any]:
        during.append(signal.getsignal(signal.SIGTERM))
        if sigterm:
            os.kill(os.getpid(), signal.SIGTERM)  # only the consumer's handler keeps us alive
        else:
            c.stop()
        return real_poll(client, limit, timeout_s)

    c._source.poll = spy  # type: ignore[method-assign]


def test_sigterm_stops_a_run_by_default_in_the_main_thread() -> None:
    previous = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    during: list[Any] = []
    try:
        with Consumer(_profile(), ["t"]) as c:
            _stopping_spy(c, during, sigterm=True)
            c.run(lambda r: None)  # handle_sigterm left at its default
        assert len(during) == 1 and during[0] is not signal.SIG_DFL
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_the_default_leaves_an_application_sigterm_handler_alone() -> None:
    def mine(signum: int, frame: Any) -> None:
        pass

    previous = signal.signal(signal.SIGTERM, mine)
    during: list[Any] = []
    try:
        with Consumer(_profile(), ["t"]) as c:
            _stopping_spy(c, during, sigterm=False)
            c.run(lambda r: None)
        assert during == [mine]
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_the_default_runs_outside_the_main_thread_without_a_handler() -> None:
    errors: list[BaseException] = []
    during: list[Any] = []
    c = Consumer(_profile(), ["t"])
    _stopping_spy(c, during, sigterm=False)
    before = signal.getsignal(signal.SIGTERM)

    def run() -> None:
        try:
            c.run(lambda r: None)
        except BaseException as exc:
            errors.append(exc)

    th = threading.Thread(target=run)
    th.start()
    th.join(30)
    c.close()
    assert errors == [] and during == [before]
