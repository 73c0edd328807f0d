"""TransactionSession with a real librdkafka client and no broker (what needs none)."""

from __future__ import annotations

from sdk.core.records import OutputRecord
from sdk.core.session import TransactionSession
from sdk.producer import Producer
from sdk.profiles import ProducerProfile


def test_purged_records_of_a_dropped_client_do_not_fail_the_next_transaction() -> None:
    """close() purges the queue; the purge reports (_PURGE_QUEUE) belong to the old client."""
    # nothing listens on port 1: the records stay queued until the purge
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers="127.0.0.1:1")
    producer = Producer(profile, check_topics=False)
    session = TransactionSession(producer)
    for i in range(3):
        session.produce(OutputRecord("t", f"{i}".encode()))
    client = producer._client
    session.close()
    client.poll(0)  # whatever the dropped client still has to report
    assert producer._ledger.take_failures() == []
    assert producer._client is None and not session.open
