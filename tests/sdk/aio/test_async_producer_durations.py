"""AsyncProducer's durations end in _s; the old keywords still work, with a DeprecationWarning.

No broker: the sync Producer underneath runs on :class:`sdk.testing.fakes.FakeProducerClient`,
whose hooks record the timeout each transactional call was given.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

from sdk.aio import AsyncProducer
from sdk.errors import ConfigurationError, KafkaTimeoutError
from sdk.profiles import ProducerProfile
from sdk.testing.fakes import FakeProducerFactory


def _producer(guarantee: str, seen: list[tuple[str, Any]]) -> AsyncProducer:
    def record(name: str) -> Any:
        return lambda client, *args: seen.append((name, args[-1]))

    tid = {"transactional_id": "t-1"} if guarantee == "exactly_once" else {}
    profile = ProducerProfile(guarantee=guarantee, bootstrap_servers="b:1", **tid)
    hooks = {name: record(name) for name in ("commit_transaction", "abort_transaction")}
    return AsyncProducer(
        profile,
        check_topics=False,
        telemetry=False,
        client_factory=FakeProducerFactory(hooks=hooks),
    )


async def _commit(p: AsyncProducer, **kw: Any) -> None:
    p.begin_transaction()
    await p.commit_transaction(**kw)


async def _abort(p: AsyncProducer, **kw: Any) -> None:
    p.begin_transaction()
    await p.abort_transaction(**kw)


async def _block(p: AsyncProducer, **kw: Any) -> None:
    async with p.transaction(**kw):
        p.send_nowait("out", b"v")


@pytest.mark.parametrize(
    ("where", "call", "reaches"),
    [
        ("AsyncProducer.commit_transaction", _commit, "commit_transaction"),
        ("AsyncProducer.abort_transaction", _abort, "abort_transaction"),
        ("AsyncProducer.transaction", _block, "commit_transaction"),
    ],
)
@pytest.mark.parametrize("keyword", ["timeout_s", "timeout"])
def test_each_transaction_timeout_reaches_librdkafka_under_both_names(
    where: str, call: Any, reaches: str, keyword: str
) -> None:
    seen: list[tuple[str, Any]] = []

    async def main() -> None:
        p = _producer("exactly_once", seen)
        await p.start()
        await call(p, **{keyword: 7.5})
        await p.close()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
    deprecations = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert seen == [(reaches, 7.5)]
    expected = (
        []
        if keyword == "timeout_s"
        else [f"{where}(timeout=) is deprecated and removed in 0.3: use timeout_s="]
    )
    assert deprecations == expected


@pytest.mark.parametrize("method", ["flush", "close"])
@pytest.mark.parametrize("keyword", ["timeout_s", "timeout"])
def test_flush_and_close_wait_their_timeout_under_both_names(method: str, keyword: str) -> None:
    async def main() -> None:
        p = _producer("at_least_once", [])
        p.send_nowait("t", b"v")  # its report is served by the next poll: still queued now
        try:
            # 0 s: the record is still queued when the wait ends
            with pytest.raises(KafkaTimeoutError, match=r"after 0\.0s"):
                await getattr(p, method)(**{keyword: 0.0})
        finally:
            await p.close()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(main())
    deprecations = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    old = [f"AsyncProducer.{method}(timeout=) is deprecated and removed in 0.3: use timeout_s="]
    assert deprecations == ([] if keyword == "timeout_s" else old)


def test_flush_refuses_a_timeout_under_both_names() -> None:
    async def main() -> None:
        p = _producer("at_least_once", [])
        try:
            with pytest.warns(DeprecationWarning), pytest.raises(ConfigurationError):
                await p.flush(timeout_s=1.0, timeout=2.0)
        finally:
            await p.close()

    asyncio.run(main())
