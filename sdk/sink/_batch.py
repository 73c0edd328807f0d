"""The handler's part of a batch transaction: one pass, then record by record on a failure.

The first pass runs the handler over the whole batch. If it fails, the transaction is started
again (``restart``: roll back, begin, advance the positions again) and the batch is retried per
the failure policy (``run_batch``), then handled record by record, each record in its own
savepoint with the policy's retries, so one poison record cannot block its partition: it is
dead-lettered (the DLQ acknowledges it before the batch commits) or the run stops. A transient
database error is never a handler failure: it ends the pass with :class:`Transient` and the
whole batch is rolled back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdk._client import KafkaMessage
from sdk.consumer.engine import FailurePath
from sdk.errors import DatabaseUnavailableError, HandlerError
from sdk.failure import HandlerRunner
from sdk.records import ConsumerRecord, view
from sdk.sink._database import Session

__all__ = ["BatchBody", "Fenced", "Transient"]

SinkHandler = Callable[[Any, Any], Any]


class Transient(BaseException):
    """A transient database error inside the batch: escapes the failure policy's retries.

    A BaseException so that ``retry_on`` (Exception by default) never retries or
    dead-letters a record because the database went away.
    """

    def __init__(self, error: DatabaseUnavailableError) -> None:
        super().__init__(str(error))
        self.error = error


class Fenced(BaseException):
    """A restarted batch transaction found partitions claimed by another member."""

    def __init__(self, partitions: list[tuple[str, int]]) -> None:
        super().__init__(", ".join(f"{t}[{p}]" for t, p in partitions))
        self.partitions = partitions


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
        self,
        session: Session,
        handler: SinkHandler,
        messages: list[KafkaMessage],
        *,
        per_record: bool,
        restart: Callable[[], None],
    ) -> None:
        """Handle ``messages`` in ``session``'s open transaction.

        Args:
            session: The batch's session, its transaction open and the positions advanced.
            handler: ``handler(record, tx)`` (``per_record``) or ``handler(records, tx)``.
            messages: The batch.
            per_record: The handler's shape.
            restart: Rolls the transaction back and opens it again with the positions
                advanced (raises :class:`Fenced` or :class:`Transient`).

        Raises:
            Transient: The database failed transiently (roll the batch back, retry later).
            Fenced: Another member claimed a partition of the batch meanwhile.
            HandlerError: A record failed every attempt and ``on_failure="stop"``.
            SerializationError: A poison pill with ``on_failure="stop"``.
            KafkaClientError: A dead-letter record was not acknowledged.
        """
        stats = self.failure.stats
        records = self._decode_all(messages)
        tx = session.transaction
        if records is not None:
            try:
                if per_record:
                    for record in records:
                        handler(record, tx)
                else:
                    handler(records, tx)
            except Exception as exc:
                self._check_transient(session, exc)
                restart()  # a clean transaction for what follows
                if not per_record and self._retry_batch(session, handler, records, exc, restart):
                    stats.handled += len(messages)
                    return
            else:
                stats.handled += len(messages)
                return
        for message in messages:
            self._one(session, handler, message, per_record=per_record)

    def _decode_all(self, messages: list[KafkaMessage]) -> list[ConsumerRecord] | None:
        """Every record, or None if one of them cannot be deserialized (a poison pill)."""
        decoder = self.failure.decoder
        if decoder.raw:  # bytes in: a view over each message, no deserializer to fail
            return [view(ConsumerRecord, m) for m in messages]
        records = [decoder.try_decode(m) for m in messages]
        return None if None in records else records  # type: ignore[return-value]

    def _retry_batch(
        self,
        session: Session,
        handler: SinkHandler,
        records: list[ConsumerRecord],
        first: Exception,
        restart: Callable[[], None],
    ) -> bool:
        """The whole batch again, per the policy; False when every attempt failed."""
        if not self._runner.retryable(first):
            return False

        def attempt(batch: list[ConsumerRecord]) -> None:
            try:
                handler(batch, session.transaction)
            except Exception as exc:
                self._check_transient(session, exc)
                restart()
                raise

        try:
            self._runner.retry(attempt, records, first)
        except HandlerError:
            return False
        return True

    def _one(
        self, session: Session, handler: SinkHandler, message: KafkaMessage, *, per_record: bool
    ) -> None:
        record = self.failure.decode(message)  # a poison pill is dead-lettered or raised
        if record is None:
            return
        arg: ConsumerRecord | list[ConsumerRecord] = record if per_record else [record]

        def attempt(value: ConsumerRecord | list[ConsumerRecord]) -> None:
            self._guarded(session, lambda: session.savepoint("sdk_record"))
            try:
                handler(value, session.transaction)
            except Exception as exc:
                self._check_transient(session, exc)
                self._guarded(session, lambda: session.rollback_to("sdk_record"))
                raise
            self._guarded(session, lambda: session.release("sdk_record"))

        self.failure.handle(attempt, arg, [message])  # retries, then dead-letters or raises

    def _check_transient(self, session: Session, exc: BaseException) -> None:
        if isinstance(exc, DatabaseUnavailableError):
            raise Transient(exc) from exc
        if session.dialect.is_transient(exc):
            raise Transient(
                DatabaseUnavailableError(f"the handler's database call failed: {exc}")
            ) from exc

    def _guarded(self, session: Session, call: Callable[[], None]) -> None:
        try:
            call()
        except Exception as exc:
            if session.dialect.is_transient(exc):
                raise Transient(DatabaseUnavailableError(f"a savepoint failed: {exc}")) from exc
            raise
