"""Every network fault kind against the exactly-once Processor and the at-least-once Consumer.

Each case (tests/reliability/_network.py) runs processor ``a`` and an SDK ``Consumer`` through
Toxiproxy on the 3-node cluster while a source on the brokers' direct listener keeps writing,
injects one fault of tests/reliability/_network_cases.py for 15 s (``commit_answer_dropped``:
20 s, processor only), heals it, and counts outside the SDK (kafka-python, SQL). A cut or a
black hole of 15 s is longer than the session timeout (6 s) and the transaction timeout
(10 s), so transactions holding the partitions time out.

Asserted: processor 0 lost, 0 duplicated, 0 out of order; Consumer 0 lost; and every input
partition's committed offset moving again within ``RECOVERY_BOUND_S`` of the heal.
``NETWORK_FAULTS_RESULTS=<file>`` appends each case's result as a JSON line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sdk.testing.cluster import LocalCluster
from tests.reliability._network import NetworkCase, warm_up
from tests.reliability._network_cases import FAULTS

pytestmark = [pytest.mark.cluster]

RECOVERY_BOUND_S = 30.0
"""Heal to every partition committing again. The longest path by design is a transactional call
stalled past its timeout (librdkafka #5456), which the Processor abandons after the 10 s call
timeout plus 10 s, then a new producer: about 22 s (measured: 18.2 s at most, most cases
0.2-10 s: librdkafka's reconnect backoff reaches 10 s). Past 30 s a client counts as wedged."""


@pytest.fixture(scope="module")
def proxied(kafka_cluster3_proxied: LocalCluster) -> LocalCluster:
    network = kafka_cluster3_proxied.network
    assert network is not None
    print(f"toxiproxy server and proxies started in {network.start_duration_s:.3f}s")
    warm_up(kafka_cluster3_proxied)
    return kafka_cluster3_proxied


@pytest.mark.parametrize("fault", list(FAULTS))
def test_network_fault(proxied: LocalCluster, tmp_path: Path, fault: str) -> None:
    kind = FAULTS[fault]
    with_consumer = bool(kind.ci_clients)
    case = NetworkCase(
        proxied,
        tmp_path,
        fault,
        kind.ci_seconds,
        clients=kind.ci_clients,
        worker_extra=kind.worker_extra,
    )
    result = case.run(kind.inject)
    if os.environ.get("NETWORK_FAULTS_RESULTS"):
        with open(os.environ["NETWORK_FAULTS_RESULTS"], "a") as out:
            out.write(json.dumps(result.as_dict()) + "\n")
    front = {f.name: f for f in result.front_ends}
    p = front["processor"]
    assert (p.lost, p.duplicated, p.out_of_order, p.handled) == (0, 0, 0, result.records), p
    if with_consumer:
        assert front["consumer"].lost == 0, front["consumer"]
    for f in result.front_ends:
        assert f.recovery_s is not None and f.recovery_s <= RECOVERY_BOUND_S, f
