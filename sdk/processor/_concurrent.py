"""``Processor.run(handler, concurrency=N)``: a polled batch's handlers on N threads.

A transaction must never hold the output of a record whose offset it does not commit. So the
handlers of a whole batch run first (on N threads, one record per ordering key at a time, in
offset order: :class:`~sdk.consumer.engine.KeyScheduler`), each returning its outputs without
producing them; then the batch goes through the transaction in offset order exactly as without
concurrency (:class:`~sdk.processor._handling.TransactionHandling`). The cost: a batch waits for
its slowest key before any of it is produced, so the concurrency within a batch is bounded by
its records (``consumer.batch_size``) and the threads idle while it commits.
"""

from __future__ import annotations

from collections.abc import Callable

from sdk._client import KafkaMessage
from sdk.consumer import Ordering
from sdk.consumer.engine import KeyScheduler

__all__ = ["BatchPool"]


class BatchPool:
    """N worker threads that compute a batch's results, one record per ordering key at a time.

    Args:
        concurrency: Worker threads.
        ordering: Which records never run at the same time.
        compute: A message's result (its outputs, or the error to apply the policy to); an
            exception it raises stops the pool and is raised by :meth:`run`.
        stop: Called when ``compute`` raised (ends the run's polling).
        timeout_s: A record computed for this long is given up: its thread abandoned and
            replaced, its result ``timed_out(message)``; None: no limit.
        timed_out: The result of a record given up.
    """

    def __init__(
        self,
        concurrency: int,
        ordering: Ordering,
        compute: Callable[[KafkaMessage], object],
        stop: Callable[[], None],
        timeout_s: float | None = None,
        timed_out: Callable[[KafkaMessage], object] | None = None,
    ) -> None:
        self._scheduler = KeyScheduler(ordering)
        self._timeout_s, self._timed_out = timeout_s, timed_out
        self._scheduler.start(concurrency, compute, stop, "sdk-processor-handler")

    def run(self, messages: list[KafkaMessage]) -> list[object]:
        """Every message's result, in the order of ``messages``.

        Raises:
            BaseException: What ``compute`` raised for one of them.
        """
        s = self._scheduler
        s.add(messages)
        given_up: dict[int, object] = {}
        while not s.wait(
            lambda: s.error is not None or s.pending + s.running == 0,
            None if self._timeout_s is None else min(self._timeout_s, 0.2),
            "the batch's handlers",
        ):
            assert self._timeout_s is not None and self._timed_out is not None
            for message in s.expire(self._timeout_s):  # abandoned; a new thread instead
                given_up[id(message)] = self._timed_out(message)
        finished = {id(m): result for m, result in s.take_finished()}
        finished.update(given_up)
        if s.error is not None:
            s.drop()
            raise s.error
        return [finished[id(m)] for m in messages]

    def close(self) -> None:
        """Let the workers end after the record each has in hand, and wait for them."""
        self._scheduler.shutdown()
