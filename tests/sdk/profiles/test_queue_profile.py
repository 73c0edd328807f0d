"""The queue (share group) profile: guarantees, group configs, refusals, loading from YAML."""

from __future__ import annotations

import pytest

from sdk.errors import ConfigurationError
from sdk.profiles import QueueProfile, load_profiles

BS = "127.0.0.1:9092"


def test_exactly_once_is_refused_with_the_reason_and_the_alternative() -> None:
    with pytest.raises(ConfigurationError) as info:
        QueueProfile(guarantee="exactly_once", bootstrap_servers=BS, group_id="g")
    message = str(info.value)
    assert "no transactional acknowledgement" in message
    assert "KIP-1289" in message
    assert "sdk.processor.Processor" in message
    assert info.value.field == "guarantee"


@pytest.mark.parametrize("guarantee", ["at_most_once", "at_least_once"])
def test_the_sdk_acknowledges_explicitly_and_sets_the_group_configs(guarantee: str) -> None:
    p = QueueProfile(
        guarantee=guarantee,
        bootstrap_servers=BS,
        group_id="jobs",
        record_lock_duration_ms=20_000,
        delivery_count_limit=4,
    )
    config = p.render()
    assert config["share.acknowledgement.mode"] == "explicit"
    assert config["group.id"] == "jobs"
    assert p.group_config() == {
        "share.auto.offset.reset": "earliest",
        "share.isolation.level": "read_committed",
        "share.record.lock.duration.ms": "20000",
        "share.delivery.count.limit": "4",
    }


def test_implicit_acknowledgement_cannot_be_smuggled_in() -> None:
    with pytest.raises(ConfigurationError, match="would weaken at_least_once"):
        QueueProfile(
            guarantee="at_least_once",
            bootstrap_servers=BS,
            group_id="g",
            extras={"share.acknowledgement.mode": "implicit"},
        )


def test_group_settings_go_through_fields_not_extras() -> None:
    with pytest.raises(ConfigurationError, match="group configs") as info:
        QueueProfile(
            guarantee="at_least_once",
            bootstrap_servers=BS,
            group_id="g",
            extras={"share.auto.offset.reset": "latest"},
        )
    assert info.value.field == "extras.share.auto.offset.reset"


def test_attempts_beyond_the_delivery_count_limit_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="delivery_count_limit") as info:
        QueueProfile(
            guarantee="at_least_once",
            bootstrap_servers=BS,
            group_id="g",
            delivery_count_limit=3,
            failure={"attempts": 5, "on_failure": "dlq", "dlq_topic": "dead"},
        )
    assert info.value.field == "failure.attempts"


def test_a_profile_file_drives_a_queue_and_refuses_exactly_once_there() -> None:
    profiles = load_profiles(
        {
            "defaults": {"bootstrap_servers": BS},
            "profiles": {
                "jobs": {
                    "guarantee": "at_least_once",
                    "group_id": "workers",
                    "failure": {"attempts": 2, "on_failure": "dlq", "dlq_topic": "jobs-dlq"},
                    "queue": {"record_lock_duration_ms": 45_000},
                },
                "orders": {"guarantee": "exactly_once", "group_id": "orders"},
            },
        }
    )
    q = profiles.queue("jobs")
    assert (q.group_id, q.record_lock_duration_ms, q.failure.dlq_topic) == (
        "workers",
        45_000,
        "jobs-dlq",
    )
    assert profiles.consumer("jobs").group_id == "workers"  # the same entry, a consumer group too
    with pytest.raises(ConfigurationError, match=r"profile 'orders' \(queue\).*KIP-1289"):
        profiles.queue("orders")
