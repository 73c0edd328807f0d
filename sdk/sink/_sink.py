"""The database sink: each polled batch is one database transaction with its positions."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, OFFSET_INVALID

from sdk._client import ConsumerClient, KafkaMessage
from sdk._config import ClientConfig, ConfigMapping
from sdk.consumer.engine import ConsumeLoop, FailurePath, GroupSource
from sdk.errors import (
    ConfigurationError,
    DatabaseUnavailableError,
)
from sdk.lifecycle import Lifecycle
from sdk.observability import Telemetry
from sdk.profiles import ConsumerProfile, Guarantee
from sdk.records import ConsumerRecord
from sdk.serialization import Deserializer
from sdk.sink._batch import BatchBody, Fenced, Transient
from sdk.sink._claims import SinkCommits
from sdk.sink._connection import SinkConnection, application_name
from sdk.sink._database import Database, Position, Session, Transaction
from sdk.sink._positions import Holdings
from sdk.sink._records import SinkStats

__all__ = ["DatabaseSink"]

_log = logging.getLogger("sdk.sink")
Partition = tuple[str, int]


class DatabaseSink:
    """Consume into a database; each polled batch is one database transaction.

    With an ``exactly_once`` profile the batch's writes and the next offset of every partition
    in it are committed **together**, in a positions table of the same database, and the sink
    resumes from the positions found there (never from Kafka's committed offsets):

    1. On assignment, one transaction bumps each partition's *epoch* in the positions table
       and reads its position; the consumer starts there.
    2. For each batch: begin; move each partition's position to the batch's end, **only if its
       epoch is still the one this member claimed** (otherwise the member was replaced — it is
       *fenced*: the transaction is rolled back and the partition paused until the group
       hands it out again); run the handler in the same transaction; commit.
    3. After the database commit, the same offsets are committed to Kafka, asynchronously and
       as advice only, so lag tooling keeps working.

    With an ``at_least_once`` profile there is no positions table: the batch's transaction
    commits, then its offsets are committed to Kafka synchronously; a crash between the two
    repeats the batch (duplicates when the writes are plain INSERTs).

    A failing handler rolls its savepoint back and goes through ``profile.failure``: the
    batch is retried, then handled record by record, so a poison record is dead-lettered (its
    offset advances only after the dead-letter topic acknowledged it) or stops the run. A
    transient database error (connection lost or refused, a lock wait timeout, a session the
    server ended) rolls the batch back, waits with backoff, re-reads the positions and goes on;
    after ``retry_timeout_s`` of failures the run raises
    :class:`~sdk.errors.DatabaseUnavailableError`.

    Example::

        database = sdk.sink.postgresql("postgresql://app@db/orders")
        with DatabaseSink(profile, ["orders"], database, value_deserializer="json") as sink:
            sink.run(lambda record, tx: tx.execute(
                "INSERT INTO orders (id, body) VALUES (%s, %s)",
                (record.value["id"], json.dumps(record.value))))

    Args:
        profile: A consumer profile, ``exactly_once`` or ``at_least_once``.
        topics: Topics to subscribe to.
        database: Where the output and the positions live (:func:`sdk.sink.sqlite`,
            :func:`sdk.sink.postgresql`, or a :class:`~sdk.sink.Database`).
        key_deserializer: Name (``bytes``, ``str``, ``json``) or ``(data, topic) -> object``.
        value_deserializer: Same, for values.
        dead_letter_producer_config: Extra librdkafka keys for the dead-letter producer.
        first_start: Where a partition without a row in the positions table starts:
            ``"committed"`` (Kafka's committed offset of the group, else
            ``auto_offset_reset``: the migration path from an at-least-once consumer) or
            ``"reset"`` (``auto_offset_reset`` only).
        poll_timeout_s: Longest wait of one poll; bounds how late :meth:`stop` is noticed.
        retry_timeout_s: How long transient database errors are retried before the run
            raises. At least the database's ``transaction_timeout_s`` (and PostgreSQL's
            ``idle_in_transaction_timeout_s``), so a new owner outwaits a frozen former
            owner's locks.
        client_factory: Builds the Kafka client from the rendered config.
        telemetry: OpenTelemetry hooks, as the Consumer's: a ``process <topic>`` span per
            batch transaction, handler latency, retry, dead-letter and rebalance metrics.
            None uses ``Telemetry.default()`` (records nothing until the application installs
            an OpenTelemetry SDK); False turns them off.
        verify_cluster: Before the first connection, check the cluster against the profile
            (:func:`sdk.doctor.verify`) and refuse to start on a FAIL.

    Raises:
        ConfigurationError: An ``at_most_once`` profile, no topics, an unknown deserializer,
            ``first_start="reset"`` with ``auto_offset_reset="error"``, a bad dead-letter
            producer config, or ``retry_timeout_s`` below the database's
            ``transaction_timeout_s``.
    """

    def __init__(
        self,
        profile: ConsumerProfile,
        topics: Sequence[str],
        database: Database,
        *,
        key_deserializer: str | Deserializer = "bytes",
        value_deserializer: str | Deserializer = "bytes",
        dead_letter_producer_config: ConfigMapping | None = None,
        first_start: Literal["committed", "reset"] = "committed",
        poll_timeout_s: float = 0.2,
        retry_timeout_s: float = 120.0,
        client_factory: Callable[[ClientConfig], ConsumerClient] | None = None,
        telemetry: Telemetry | Literal[False] | None = None,
        verify_cluster: bool = False,
    ) -> None:
        if profile.guarantee is Guarantee.AT_MOST_ONCE:
            raise ConfigurationError(
                "guarantee: a database sink is exactly_once (positions in the database) or "
                "at_least_once; for at_most_once use sdk.Consumer and write in the handler",
                field="guarantee",
            )
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names or not all(isinstance(t, str) and t for t in names):
            raise ConfigurationError(
                "topics: give at least one non-empty topic name", field="topics"
            )
        if first_start not in ("committed", "reset"):
            raise ConfigurationError(
                f"first_start: {first_start!r}; valid: committed, reset", field="first_start"
            )
        if first_start == "reset" and profile.auto_offset_reset == "error":
            raise ConfigurationError(
                "first_start: 'reset' needs auto_offset_reset earliest or latest",
                field="first_start",
            )
        if not isinstance(database, Database):
            raise ConfigurationError(
                "database: expected a sdk.sink.Database (sdk.sink.sqlite(...), "
                f"sdk.sink.postgresql(...)), got {type(database).__name__}",
                field="database",
            )
        bound = database.transaction_timeout_s
        if bound is not None and retry_timeout_s < bound:
            raise ConfigurationError(
                f"retry_timeout_s: {retry_timeout_s:g}s is below the database's "
                f"transaction_timeout_s ({bound:g}s): a member whose claim waits for a frozen "
                "former owner's locks would give up before the server ends that owner's "
                "transaction; raise retry_timeout_s or lower transaction_timeout_s",
                field="retry_timeout_s",
            )
        self.profile = profile
        self.guarantee = profile.guarantee
        self.topics = names
        self.database = database
        self.stats = SinkStats()
        self._eos = profile.guarantee is Guarantee.EXACTLY_ONCE
        self._group = profile.group_id
        self._failure = FailurePath(
            profile, self.stats, key_deserializer, value_deserializer, dead_letter_producer_config
        )
        self._telemetry: Telemetry | None = (
            None if telemetry is False else (telemetry or Telemetry.default())
        )
        self._failure.telemetry = self._telemetry
        self._body = BatchBody(self._failure, self._count_retry)
        if first_start == "committed":
            start_offset = OFFSET_INVALID  # librdkafka: committed, else auto.offset.reset
        else:
            start_offset = (
                OFFSET_BEGINNING if profile.auto_offset_reset == "earliest" else OFFSET_END
            )
        self._db = SinkConnection(
            database, self.stats, retry_timeout_s, application_name(self._group)
        )
        self._held = Holdings(self._eos, self.stats, profile.auto_commit_interval_ms / 1000.0)
        config = profile.render()
        strategy = str(config.get("partition.assignment.strategy", ""))
        commits = SinkCommits(
            self._held,
            eos=self._eos,
            incremental=config.get("group.protocol") == "consumer" or "cooperative" in strategy,
            start_offset=start_offset,
            claim=lambda keys: self._retrying(lambda session: session.claim(self._group, keys)),
            stats=self.stats,
        )
        source = GroupSource(
            profile,
            names,
            self.stats,
            commits,
            client_factory=client_factory,
            telemetry=self._telemetry,
            configure=self._prepare,  # creates or checks the positions table before joining
        )
        self._loop = ConsumeLoop(
            source,
            commits,
            name="DatabaseSink",
            batch_size=profile.batch_size,
            poll_timeout_s=poll_timeout_s,
            telemetry=self._telemetry,
            verify=(profile, names) if verify_cluster else None,
        )
        # a stop ends a wait for the schema registry at once (the batch is read again)
        self._failure.decoder.registry_wait.stopped = self._loop.stopped

    # ------------------------------------------------------------------ lifecycle
    @property
    def state(self) -> Lifecycle:
        """Where the sink is in its lifecycle (NEW, OPEN, CLOSED)."""
        return self._loop.state

    @property
    def assignment(self) -> list[Partition]:
        """The partitions this member owns now (exactly_once: holds the claim for), sorted."""
        held = self._held
        return sorted(held.epochs) if self._eos else sorted(held.positions)

    def __enter__(self) -> DatabaseSink:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def stop(self) -> None:
        """Make the current run return after the batch in hand; thread- and signal-safe."""
        self._loop.stop()

    def close(self) -> None:
        """Leave the group and release the Kafka client, the connection and the DLQ producer.

        Idempotent. Nothing is left to commit: every batch was committed or rolled back.
        """
        if self._loop.state is Lifecycle.CLOSED:
            return
        try:
            self._loop.close(self._held.flush_advice)
        finally:
            self._db.close()
            self._failure.close()

    # ------------------------------------------------------------------ public loops
    def run(
        self,
        handler: Callable[[ConsumerRecord, Transaction], object],
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool | None = None,
    ) -> SinkStats:
        """Call ``handler(record, tx)`` for each record; commit each polled batch at once.

        Args:
            handler: Writes one record through ``tx`` (a :class:`~sdk.sink.Transaction`).
            max_records: Return after taking this many records from Kafka.
            idle_timeout_s: Return after this many seconds without a record (counted from the
                latest assignment).
            handle_sigterm: SIGTERM calls :meth:`stop` (None: in the main thread, unless the
                application has its own handler).

        Returns:
            The counters (cumulative over runs).

        Raises:
            ClosedError: The sink is closed.
            HandlerError: A record failed every attempt and ``on_failure="stop"`` (its batch
                was rolled back; nothing of it is committed).
            SerializationError: A poison pill with ``on_failure="stop"``.
            DatabaseUnavailableError: Transient database errors for longer than
                ``retry_timeout_s``.
            DatabaseError: The positions table is not the sink's, or another database error.
            KafkaClientError: A fatal client error, or a dead-letter record not acknowledged.
        """
        self._consume(handler, True, max_records, idle_timeout_s, handle_sigterm)
        return self.stats

    def run_batch(
        self,
        handler: Callable[[list[ConsumerRecord], Transaction], object],
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool | None = None,
    ) -> SinkStats:
        """Like :meth:`run`, but ``handler(records, tx)`` gets each polled batch at once.

        A failing batch is retried as a whole per ``profile.failure``, then record by record
        (``handler([record], tx)``), so one poison record is isolated.

        Raises:
            ClosedError: See :meth:`run`.
            HandlerError: See :meth:`run`.
            SerializationError: See :meth:`run`.
            DatabaseUnavailableError: See :meth:`run`.
            DatabaseError: See :meth:`run`.
            KafkaClientError: See :meth:`run`.
        """
        self._consume(handler, False, max_records, idle_timeout_s, handle_sigterm)
        return self.stats

    # ------------------------------------------------------------------ the loop
    def _consume(
        self,
        handler: Callable[[Any, Any], Any],
        per_record: bool,
        max_records: int | None,
        idle_s: float | None,
        handle_sigterm: bool | None,
    ) -> None:
        loop = self._loop
        with loop.running(handle_sigterm) as client:
            for messages in loop.batches(max_records, idle_s, before_poll=self._before_poll):
                assert client is not None  # batches come from a subscribed client only
                batch, ends = self._held.split(messages)
                if not batch:
                    continue
                tel = loop.observed()
                if tel is None:
                    self._write(client, handler, batch, ends, per_record)
                else:
                    with tel.batch_process_span(batch, self._group):
                        self._write(client, handler, batch, ends, per_record)

    def _prepare(self, config: ClientConfig) -> None:
        self._db.session()  # creates or checks the positions table before joining

    def _before_poll(self, client: ConsumerClient) -> None:
        if self._db.stale:  # a transaction failed: find what committed before going on
            self._resync(client)

    def _write(
        self,
        client: ConsumerClient,
        handler: Callable[[Any, Any], Any],
        messages: list[KafkaMessage],
        ends: dict[Partition, int],
        per_record: bool,
    ) -> None:
        """One batch, one transaction: positions (fenced), the handler's writes, commit."""
        session: Session | None = None
        try:
            session = opened = self._db.begin()

            def restart() -> None:
                opened.rollback()
                try:
                    opened.begin()
                    self._advance(opened, ends)
                except DatabaseUnavailableError as exc:
                    raise Transient(exc) from exc

            self._advance(session, ends)
            self._body.write(session, handler, messages, per_record=per_record, restart=restart)
            session.commit()
        except Fenced as exc:
            if session is not None:
                session.rollback()
            self._held.fence(client, exc.partitions)
            self._held.rewind(client, [tp for tp in ends if tp not in exc.partitions])
            return
        except Transient as exc:
            self._db.failed(exc.error)
            return
        except DatabaseUnavailableError as exc:
            self._db.failed(exc)
            return
        except BaseException:
            if session is not None:
                session.rollback()
            self._held.rewind(client, list(ends))
            raise
        self._db.committed()
        self.stats.transactions += 1
        self._held.positions.update(ends)
        self._held.advise(client, ends)

    def _advance(self, session: Session, ends: dict[Partition, int]) -> None:
        """exactly_once: move the positions, if this member's claims still stand.

        Raises:
            Fenced: Another member claimed some of the partitions.
            DatabaseUnavailableError: Transient.
        """
        if self._eos:
            fenced = session.advance(self._group, ends, self._held.epochs)
            if fenced:
                raise Fenced(fenced)

    # ------------------------------------------------------------------ database failures
    def _resync(self, client: ConsumerClient) -> None:
        """After a failed transaction: find what committed, drop lost claims, seek back."""
        self._db.stale = False
        if not self._eos:
            self._held.rewind(client, list(self._held.positions) + list(self._held.first_seen))
            return

        def read(session: Session) -> dict[Partition, Position]:
            try:
                return session.read(self._group)
            finally:
                session.rollback()

        rows = self._retrying(read)
        self._held.reread(client, rows)

    def _retrying(self, call: Callable[[Session], Any]) -> Any:
        return self._db.retrying(call, self._closed)

    def _closed(self) -> bool:
        return self._loop.stopped() and self._loop.state is Lifecycle.CLOSED

    def _count_retry(self) -> None:
        self.stats.retries += 1
        if self._telemetry is not None:
            self._telemetry.retry("handler")
