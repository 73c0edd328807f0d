"""The start-time refusal of a feature the broker lacks, on ApiVersions answers of each release."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest

from sdk.doctor import _preflight
from sdk.doctor._preflight import CONSUMER_PROTOCOL, SHARE_GROUPS, release_of, require_broker
from sdk.doctor._wire import BrokerVersions
from sdk.errors import ConfigurationError
from sdk.profiles import SecurityProfile

# what each release's new 1-node cluster answered (measured, docs/compatibility.md)
_K39 = BrokerVersions(apis={68: (0, 0)}, finalized={"metadata.version": 21})
_K40 = BrokerVersions(apis={68: (0, 1)}, finalized={"metadata.version": 25, "group.version": 1})
_K41_OFF = BrokerVersions(
    apis={68: (0, 1), 76: (1, 1)}, finalized={"metadata.version": 27, "group.version": 1}
)
_K44 = BrokerVersions(
    apis={68: (0, 1), 76: (1, 1)},
    finalized={"metadata.version": 33, "group.version": 1, "share.version": 2},
)


@pytest.mark.parametrize(
    ("finalized", "said"),
    [
        ({"metadata.version": 21}, "Kafka 3.9 (metadata.version 3.9-IV0, level 21)"),
        ({"metadata.version": 25}, "Kafka 4.0 (metadata.version 4.0-IV3, level 25)"),
        ({"metadata.version": 28}, "Kafka 4.2 (metadata.version 4.2-IV0, level 28)"),
        ({"metadata.version": 33}, "Kafka 4.4 (metadata.version 4.4-IV2, level 33)"),
        ({"metadata.version": 40}, "Kafka newer than 4.4 (metadata.version 40)"),
        ({}, "Kafka older than 3.3 (metadata.version 0)"),
    ],
)
def test_the_release_is_named_from_the_metadata_version(finalized: Any, said: str) -> None:
    assert release_of(finalized) == said


def test_what_each_release_lacks() -> None:
    assert SHARE_GROUPS.missing(_K39) == "the broker does not serve API key 76"
    assert SHARE_GROUPS.missing(_K41_OFF) == "share.version is 0"
    k41_on = BrokerVersions(
        apis=_K41_OFF.apis, finalized={**_K41_OFF.finalized, "share.version": 1}
    )
    assert SHARE_GROUPS.missing(k41_on) == (
        "its share groups are a preview the share consumer gets no records from"
    )
    assert SHARE_GROUPS.missing(_K44) is None
    assert CONSUMER_PROTOCOL.missing(_K39) == "group.version is 0"
    assert CONSUMER_PROTOCOL.missing(_K40) is None


def _answering(monkeypatch: pytest.MonkeyPatch, versions: BrokerVersions) -> list[Any]:
    asked: list[Any] = []

    def fake(host: str, port: int, **kw: Any) -> BrokerVersions:
        asked.append((host, port))
        return versions

    monkeypatch.setattr(_preflight, "read_versions", fake)
    return asked


def test_a_missing_feature_is_refused_with_what_was_found_and_what_is_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked = _answering(monkeypatch, _K39)
    with pytest.raises(ConfigurationError) as info:
        require_broker(CONSUMER_PROTOCOL, "b1:9092,b2:9092", SecurityProfile(), {})
    assert asked == [("b1", 9092)]  # the first broker that answers decides
    assert str(info.value) == (
        'group_protocol="consumer" (KIP-848) needs Apache Kafka 4.0 or later (or '
        "group_protocol: classic); the broker at b1:9092 is Kafka 3.9 (metadata.version 3.9-IV0, "
        "level 21): "
        "group.version is 0. `python -m sdk doctor` reports the same as a FAIL with the fix "
        "(docs/compatibility.md)."
    )


def test_a_broker_with_the_feature_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    _answering(monkeypatch, _K44)
    require_broker(SHARE_GROUPS, "b1:9092", SecurityProfile(), {})


def test_a_broker_that_does_not_answer_is_left_to_the_client() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    require_broker(SHARE_GROUPS, f"127.0.0.1:{port}", SecurityProfile(), {}, timeout_s=1)


def test_a_broker_that_accepts_but_never_answers_costs_the_timeout_not_a_hang() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        held: list[Any] = []
        threading.Thread(target=lambda: held.append(server.accept()), daemon=True).start()
        require_broker(
            SHARE_GROUPS,
            f"127.0.0.1:{server.getsockname()[1]}",
            SecurityProfile(),
            {},
            timeout_s=0.5,
        )
