"""The Producer's one client and its lifecycle: created on first use, served, replaced, closed.

:class:`ClientSlot` holds the ``confluent_kafka.Producer`` (none before the first call that
needs it: no network I/O in the Producer's ``__init__``) with what its callbacks report to (its
``error_cb``'s :class:`ClientErrors`, its delivery callbacks' :class:`DeliveryLedger`), serves
those callbacks (``poll``, ``flush``), drops the client for a new transactional epoch and
releases it at ``close``. It also keeps the gate of ``send()``'s fast path, re-checked whenever
telemetry may have changed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sdk._client import ProducerClient, positional_produce, translating
from sdk._config import ClientConfig
from sdk.errors import ClosedError, KafkaTimeoutError
from sdk.lifecycle import Lifecycle
from sdk.observability import Telemetry
from sdk.partitioners import PartitionRouter
from sdk.producer._client_errors import ClientErrors
from sdk.producer._delivery import DeliveryLedger
from sdk.producer._handle import HotPath

__all__ = ["ClientSlot"]


class ClientSlot:
    """One producer's client, from its lazy creation to its release.

    Args:
        factory: Builds the client from ``config`` (None: ``confluent_kafka.Producer``).
        config: The rendered librdkafka configuration.
        errors: The client's ``error_cb`` and what it reported.
        router: The partition router, attached to each client (its metadata refresh).
        hot: The per-record state: ``hot.produce`` is set while the fast path is open.
        known_topics: The topics looked up so far (a Python partitioner hears of each flush).
        telemetry: Whose recording closes the fast path, and the delivery metrics (None:
            instrumentation off).
        transactional: Whether the producer is exactly_once (decides the translated types).
        fast: Records may skip the general path at all (bytes in, librdkafka places them,
            plain handles).

    Attributes:
        ledger: What the client's delivery callbacks report to (:meth:`flush` raises its
            failures).
        client: The client; None before the first use, after :meth:`drop` and after close.
        state: Where the producer is in its lifecycle (NEW, OPEN, CLOSED).
        observed: An OpenTelemetry SDK records (checked at creation, poll and flush).
    """

    def __init__(
        self,
        factory: Callable[[ClientConfig], ProducerClient] | None,
        config: ClientConfig,
        *,
        errors: ClientErrors,
        router: PartitionRouter,
        hot: HotPath,
        known_topics: set[str],
        telemetry: Telemetry | None,
        transactional: bool,
        fast: bool,
    ) -> None:
        self._factory = factory
        self._config = config
        self._errors = errors
        self.errors = errors
        """What the client's ``error_cb`` reported, and its contact with the cluster."""
        self._router = router
        self._hot = hot
        self._known_topics = known_topics
        self._telemetry = telemetry
        self._fast = fast
        self._lock = threading.Lock()
        """Guards the client's creation and the ledger's failures (callbacks run on any thread)."""
        self.ledger = DeliveryLedger(
            hot, router=router, telemetry=telemetry, transactional=transactional, lock=self._lock
        )
        self.client: ProducerClient | None = None
        self.state = Lifecycle.NEW
        self.observed = False

    def gate(self) -> None:
        """Re-check telemetry, and with it whether ``send()``'s fast path may be taken.

        One field (``hot.produce``: the client's ``produce``, or None) answers "open, bytes
        in, librdkafka places, plain handles, nothing observed" for each record instead of four
        tests.
        """
        # an SDK installed after the Producer was made starts recording at the next check
        tel = self._telemetry
        self.observed = tel is not None and (tel.tracing_enabled() or tel.metrics_enabled())
        client = self.client
        fast = self.state is Lifecycle.OPEN and self._fast and not self.observed
        self._hot.produce = positional_produce(client) if fast and client is not None else None

    def ensure(self) -> ProducerClient:
        """The client, created on first use.

        Raises:
            ClosedError: The producer is closed.
            ConfigurationError: librdkafka refused the configuration.
        """
        client = self.client
        if client is not None and self.state is Lifecycle.OPEN:
            return client
        if self.state is Lifecycle.CLOSED:
            raise ClosedError("this Producer is closed; create a new one")
        with self._lock:
            client = self.client
            if client is None:
                client = self.client = self._errors.create_client(self._factory, self._config)
                self._router.attach(client)
                self.state = Lifecycle.OPEN
                self.gate()
        return client

    def drop(self) -> ProducerClient | None:
        """Forget the client without flushing (its transactional side makes a new epoch).

        Returns:
            The dropped client (the caller purges or abandons it), or None.
        """
        with self._lock:
            client, self.client = self.client, None
            self._hot.produce = None  # send()'s fast path must not reach the dropped client
            self.ledger.failures = []
        self._router.attach(None)  # re-attached to the next client when it is made
        self._errors.clear()
        if self.state is Lifecycle.OPEN:
            self.state = Lifecycle.NEW
        return client

    def serve(self, timeout_s: float) -> int:
        """Serve callbacks while a handle waits (``DeliveryHandle.result``); errors translated."""
        client = self.client
        if client is None:
            return 0
        with translating("poll"):
            return client.poll(timeout_s)

    def poll(self, timeout_s: float) -> int:
        """``Producer.poll``: serve callbacks (the client is created if need be).

        Raises:
            KafkaClientError: A fatal client error.
        """
        self.gate()
        client = self.ensure()
        with translating("poll"):  # a fatal error raises from poll() (sdk._client)
            served = int(client.poll(timeout_s))
        self._errors.raise_fatal()
        return served

    def flush(self, timeout_s: float | None) -> None:
        """``Producer.flush``: wait for every queued record's outcome.

        Raises:
            KafkaTimeoutError: Records were still queued after ``timeout_s``.
            DeliveryError: Records failed since the last flush.
            KafkaClientError: A fatal client error (when no record failed).
        """
        client = self.ensure()
        self.gate()
        with translating("flush"):
            remaining = int(client.flush(-1 if timeout_s is None else timeout_s))
        if self._errors.fatal is not None and not self.ledger.failures:
            raise self._errors.fatal  # a delivery failure, if any, tells more than the fatal
        if not self._router.native:
            for topic in list(self._known_topics):
                self._router.on_batch_sent(topic)
        if remaining:
            raise KafkaTimeoutError(
                f"flush: {remaining} record(s) still queued after {timeout_s}s; they stay queued "
                "and may yet be delivered"
            )
        self.ledger.raise_failures()

    def close(self, timeout_s: float | None) -> None:
        """``Producer.close``: flush (if a client exists), then release the client. Idempotent.

        Raises:
            KafkaTimeoutError: Records were still undelivered after ``timeout_s``.
            DeliveryError: Records failed since the last flush.
        """
        if self.state is Lifecycle.CLOSED:
            return
        try:
            if self.client is not None:
                self.flush(timeout_s)
        finally:
            self.state = Lifecycle.CLOSED
            self._hot.produce = None
            self._hot.spare.clear()
            self.client = None
            self._router.attach(None)  # the router held the client too: free it now
