"""TransactionSession with a real librdkafka client and no broker (what needs none)."""

from __future__ import annotations

import pytest

from sdk.core.session import TransactionSession, transactional_id_for
from sdk.errors import ConfigurationError
from sdk.producer import Producer
from sdk.profiles import ProcessingProfile, ProducerProfile
from sdk.records import OutputRecord


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


def test_transactional_id_for_gives_the_ids_users_keep() -> None:
    """One function for the Processor's and Spark's ids; the ids themselves never change."""
    prefixed = ProducerProfile(
        guarantee="exactly_once", bootstrap_servers="b:1", transactional_id_prefix="p-"
    )
    processing = ProcessingProfile(
        guarantee="exactly_once",
        bootstrap_servers="b:1",
        consumer={"group_id": "g"},
        producer={"transactional_id_prefix": "p-"},
    )
    assert transactional_id_for(prefixed, None, "i1") == "p-i1"
    assert transactional_id_for(processing, None, "i1") == "p-i1"
    assert transactional_id_for(processing, "explicit", "i1") == "explicit"
    assert transactional_id_for("p-", instance_id="job.g.in.3") == "p-job.g.in.3"
    fixed = ProducerProfile(guarantee="exactly_once", bootstrap_servers="b:1", transactional_id="t")
    assert transactional_id_for(fixed, None, None) == "t"
    plain = ProducerProfile(guarantee="at_least_once", bootstrap_servers="b:1")
    assert transactional_id_for(plain, "explicit", "i1") is None
    with pytest.raises(ConfigurationError) as info:
        transactional_id_for(prefixed, None, None)
    assert info.value.field == "instance_id"
