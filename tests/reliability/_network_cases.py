"""The network faults, each an ``inject(case)`` that holds the fault ``case.fault_s`` seconds.

Used by the CI test (tests/reliability/test_network_faults.py, short faults, the Processor and
the at-least-once Consumer) and by the matrix (``./dev.sh reliability --network``: the
durations of :data:`MATRIX_SECONDS`, every client, ≥ 50,000 records per cell).

* ``leader_cut``: clients cut from a broker leading half of the input and output partitions
  (not a coordinator): connections closed, new ones refused;
* ``leader_black_hole``: the same broker's connections stay open and carry nothing (a dropped
  route: no RST, no FIN), so every request to it, fetches, produces and the queue's share
  acknowledgements alike, waits out its own timeout;
* ``coordinator_cut``: clients cut from the broker coordinating every group and the
  processor's transactions (leading no data partition);
* ``latency``: 300 ± 100 ms on every answer of every broker;
* ``resets``: every connection to every broker reset (TCP RST) every 3 s;
* ``commit_answer_dropped``: the processor is held just before ``commit_transaction``, the
  coordinator's answers are dropped (timeout toxic, downstream only: the EndTxn reaches the
  broker and is applied, its answer never arrives; the connection stays open and silent), the
  commit goes, and the network heals ``fault_s`` later: longer than the commit's retry budget
  with 2 s calls (``transaction_call_timeout_ms=2000``, about 17 s), so the outcome is
  unknown. The at-most-once Consumer's commits, sent before its work, lose their answers too.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

from tests.reliability._network import NetworkCase
from tests.sdk.processor._support import wait_for

RESET_EVERY_S = 3.0


def leader_cut(case: NetworkCase) -> None:
    case.network.cut(case.leader)
    case.hold(case.fault_s)
    case.heal(case.leader)


def leader_black_hole(case: NetworkCase) -> None:
    case.network.timeout(case.leader, 0, stream="both")
    case.hold(case.fault_s)
    case.heal(case.leader)


def coordinator_cut(case: NetworkCase) -> None:
    case.network.cut(case.coordinator)
    case.hold(case.fault_s)
    case.heal(case.coordinator)


def latency(case: NetworkCase) -> None:
    case.network.latency(None, 300, 100)
    case.hold(case.fault_s)
    case.heal()


def resets(case: NetworkCase) -> None:
    end = time.monotonic() + case.fault_s
    count = 0
    while time.monotonic() < end:
        # while the toxic is on, every connection is reset as soon as data flows on it
        case.network.reset_peer(None, 0)
        case.hold(0.3)
        case.network.heal()
        count += 1
        case.hold(RESET_EVERY_S - 0.3)
    case.heal()
    case.notes["resets"] = str(count)


def commit_answer_dropped(case: NetworkCase) -> None:
    assert case.processor is not None
    before = case.processor.stats()
    case.gate.touch()
    wait_for(case.gate.with_suffix(".at").exists, 60, "a to reach commit_transaction")
    case.network.timeout(case.coordinator, 0, stream="downstream")
    case.gate.unlink()
    wait_for(case.gate.with_suffix(".called").exists, 30, "a to send its commit")
    case.hold(case.fault_s)
    case.heal(case.coordinator)
    after = case.processor.stats()
    case.notes["during_drop"] = ", ".join(
        f"{k} +{int(after.get(k, 0)) - int(before.get(k, 0))}"
        for k in ("commits", "aborts", "ambiguous", "stalled_calls", "producer_recreations")
    )


class Fault(NamedTuple):
    """One fault kind: how to inject it, and with which clients beside the processor."""

    inject: Callable[[NetworkCase], None]
    ci_seconds: float
    matrix_seconds: float
    ci_clients: tuple[str, ...]
    matrix_clients: tuple[str, ...]
    worker_extra: dict[str, Any]


EVERY = ("consumer", "consumer_amo", "queue", "sink")
FAULTS: dict[str, Fault] = {
    "leader_cut": Fault(leader_cut, 15.0, 30.0, ("consumer",), EVERY, {}),
    "leader_black_hole": Fault(
        leader_black_hole, 15.0, 30.0, ("consumer",), (*EVERY, "queue_tuned"), {}
    ),
    "coordinator_cut": Fault(coordinator_cut, 15.0, 30.0, ("consumer",), EVERY, {}),
    "latency": Fault(latency, 15.0, 60.0, ("consumer",), EVERY, {}),
    "resets": Fault(resets, 15.0, 60.0, ("consumer",), EVERY, {}),
    "commit_answer_dropped": Fault(
        commit_answer_dropped,
        20.0,
        20.0,
        (),
        ("consumer_amo",),
        {"transaction_call_timeout_ms": 2_000},
    ),
}
