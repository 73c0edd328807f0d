"""In-memory fakes of confluent-kafka's clients, for unit tests without a broker.

Like httpx's ``MockTransport``, they replace the one layer below the SDK and nothing above it:
every front end takes factories for its clients (``Processor(producer_factory=,
consumer_factory=)``, ``Consumer(client_factory=)``, ``run_range``, ``write_slice``), so a test
passes factories that return these fakes and the SDK's own code (the session, the recovery
decision, the error seam, the commit ordering) runs unchanged. They implement
:class:`sdk._client.ProducerClient` and :class:`sdk._client.ConsumerClient`.

Example (an ambiguous commit recreates the producer and rewinds the input)::

    from confluent_kafka import KafkaError
    from sdk.testing.fakes import FakeConsumerClient, FakeMessage, FakeProducerFactory

    consumer = FakeConsumerClient(
        [FakeMessage("in", 0, i, str(i).encode()) for i in range(10)],
        assignment=[("in", 0)],
        group_offsets={("in", 0): 0},
    )
    producers = FakeProducerFactory(
        failures={"commit_transaction": [KafkaError(KafkaError._TIMED_OUT, "timed out")]}
    )
    processor = Processor(
        profile, ["in"], handler, instance_id="i1",
        producer_factory=producers, consumer_factory=lambda config: consumer,
    )
    ...
    assert len(producers.instances) == 2  # a new client: init_transactions bumps the epoch
    assert consumer.seeks == [("in", 0, 0)]  # the input was rewound to the committed offset

Both clients are scripted the same way:

* ``failures``: ``{call name: [KafkaError or error code, ...]}``. Each error is raised once, as
  ``KafkaException``, by the next call of that name. The lists are popped in place, so one dict
  given to several clients (e.g. every client a factory makes) fails the first calls overall.
* ``hooks``: ``{call name: fn(client, *args, **kwargs)}`` runs before the call (and before its
  scripted failure): block in it for a call that never returns (librdkafka #5456), raise for
  any other exception, or just record something.
* ``calls``: the name of every call, in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sdk.testing.fakes._consumer import FakeConsumerClient
from sdk.testing.fakes._messages import DEFAULT_TIMESTAMP_MS as DEFAULT_TIMESTAMP_MS
from sdk.testing.fakes._messages import FakeGroupMetadata, FakeMessage
from sdk.testing.fakes._messages import Key as Key
from sdk.testing.fakes._messages import PartitionLike as PartitionLike
from sdk.testing.fakes._producer import FakeProducerClient, FakeProducerFactory

if TYPE_CHECKING:
    from sdk._client import ConsumerClient, ProducerClient

__all__ = [
    "FakeConsumerClient",
    "FakeGroupMetadata",
    "FakeMessage",
    "FakeProducerClient",
    "FakeProducerFactory",
]


if TYPE_CHECKING:  # mypy checks here that the fakes implement the SDK's client protocols
    _IMPLEMENTS: tuple[type[ProducerClient], type[ConsumerClient]] = (
        FakeProducerClient,
        FakeConsumerClient,
    )
