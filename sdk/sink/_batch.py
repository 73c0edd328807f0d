"""The handler's part of a batch transaction: one pass, then record by record on a failure.

The first pass runs the handler over the whole batch inside a savepoint. If it fails, the
savepoint is rolled back and the batch is retried per the failure policy (``run_batch``),
then handled record by record, each record in its own savepoint with the policy's retries, so
one poison record cannot block its partition: it is dead-lettered (the DLQ acknowledges it
before the batch commits) or the run stops. A transient database error is never a handler
failure: it ends the pass with :class:`Transient` and the whole batch is rolled back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdk.consumer._failure import FailurePath
from sdk.core.failure import HandlerRunner
from sdk.errors import DatabaseUnavailableError, HandlerError
from sdk.records import ConsumerRecord
from sdk.sink._database import Session

__all__ = ["BatchBody", "Transient"]

SinkHandler = Callable[[Any, Any], Any]


class Transient(BaseException):
    """A transient database error inside the handler: escapes the failure policy's retries.

    A BaseException so that ``retry_on`` (Exception by default) never retries or
    dead-letters a record because the database went away.
    """

    def __init__(self, error: DatabaseUnavailableError) -> None:
        super().__init__(str(error))
        self.error = error


class BatchBody:
    """Runs the handler on a batch inside the batch's transaction.

    Args:
        failure: Decoding, the failure policy and the dead-letter topic (the Consumer's).
        on_retry: Counts a retried attempt.
    """

    def __init__(self, failure: FailurePath, on_retry: Callable[[], None]) -> None:
        self.failure = failure
        self._runner = HandlerRunner(failure.policy, on_retry=on_retry)

    def write(
        self, session: Session, handler: SinkHandler, messages: list[Any], *, per_record: bool
    ) -> None:
        """Handle ``messages`` in ``session``'s open transaction.

        Raises:
            Transient: The database failed transiently (roll the batch back, retry later).
            HandlerError: A record failed every attempt and ``on_failure="stop"``.
            SerializationError: A poison pill with ``on_failure="stop"``.
            KafkaClientError: A dead-letter record was not acknowledged.
        """
        stats = self.failure.stats
        decoder = self.failure.decoder
        records = [decoder.try_decode(m) for m in messages]
        tx = session.transaction
        if None not in records:
            self._point(session, "sdk_batch")
            try:
                if per_record:
                    for record in records:
                        handler(record, tx)
                else:
                    handler(records, tx)
            except Exception as exc:
                self._check_transient(session, exc)
                self._undo(session, "sdk_batch")
                if not per_record and self._retry_batch(session, handler, records, exc):
                    stats.handled += len(messages)
                    return
            else:
                stats.handled += len(messages)
                return
        for message in messages:
            self._one(session, handler, message, per_record=per_record)

    def _retry_batch(
        self, session: Session, handler: SinkHandler, records: list[Any], first: Exception
    ) -> bool:
        """The whole batch again, per the policy; False when every attempt failed."""
        if not self._runner.retryable(first):
            return False

        def attempt(batch: list[ConsumerRecord]) -> None:
            self._attempt(session, handler, batch)

        try:
            self._runner.retry(attempt, records, first)
        except HandlerError:
            return False
        return True

    def _one(
        self, session: Session, handler: SinkHandler, message: Any, *, per_record: bool
    ) -> None:
        record = self.failure.decode(message)  # a poison pill is dead-lettered or raised
        if record is None:
            return
        arg: Any = record if per_record else [record]

        def attempt(value: Any) -> None:
            self._attempt(session, handler, value)

        self.failure.handle(attempt, arg, [message])  # retries, then dead-letters or raises

    def _attempt(self, session: Session, handler: SinkHandler, arg: Any) -> None:
        self._point(session, "sdk_record")
        try:
            handler(arg, session.transaction)
        except Exception as exc:
            self._check_transient(session, exc)
            self._undo(session, "sdk_record")
            raise
        self._release(session, "sdk_record")

    def _check_transient(self, session: Session, exc: BaseException) -> None:
        if session.dialect.is_transient(exc):
            raise Transient(
                DatabaseUnavailableError(f"the handler's database call failed: {exc}")
            ) from exc
        if isinstance(exc, DatabaseUnavailableError):
            raise Transient(exc) from exc

    def _point(self, session: Session, name: str) -> None:
        self._guarded(session, lambda: session.savepoint(name))

    def _undo(self, session: Session, name: str) -> None:
        self._guarded(session, lambda: session.rollback_to(name))

    def _release(self, session: Session, name: str) -> None:
        self._guarded(session, lambda: session.release(name))

    def _guarded(self, session: Session, call: Callable[[], None]) -> None:
        try:
            call()
        except Exception as exc:
            if session.dialect.is_transient(exc):
                raise Transient(DatabaseUnavailableError(f"a savepoint failed: {exc}")) from exc
            raise
