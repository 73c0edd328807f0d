"""Validation rules of the delivery profiles: each error names its field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.errors import ConfigurationError
from sdk.profiles import (
    ConsumerProfile,
    FailurePolicy,
    Guarantee,
    ProcessingProfile,
    ProducerProfile,
    load_profiles,
)

B = "127.0.0.1:9092"


def _producer(guarantee: str, **kw: Any) -> ProducerProfile:
    return ProducerProfile(guarantee=guarantee, bootstrap_servers=B, **kw)


@pytest.mark.parametrize(
    ("guarantee", "kwargs", "field"),
    [
        ("at_most_once", {"retries": 3}, "retries"),
        ("at_most_once", {"enable_idempotence": True}, "enable_idempotence"),
        ("at_most_once", {"acks": "all"}, "acks"),
        ("at_most_once", {"transactional_id": "t"}, "transactional_id"),
        ("at_least_once", {"acks": "1"}, "acks"),
        ("at_least_once", {"retries": 0}, "retries"),
        ("at_least_once", {"max_in_flight": 6}, "max_in_flight"),
        (
            "at_least_once",
            {"enable_idempotence": False, "retries": 5, "max_in_flight": 5},
            "max_in_flight",
        ),
        ("exactly_once", {}, "transactional_id"),
        (
            "exactly_once",
            {"transactional_id": "t", "enable_idempotence": False},
            "enable_idempotence",
        ),
        (
            "exactly_once",
            {"transactional_id": "t", "transactional_id_prefix": "p"},
            "transactional_id_prefix",
        ),
        ("at_least_once", {"extras": {"acks": "0"}}, "extras.acks"),
        (
            "at_least_once",
            {"extras": {"request.required.acks": "1"}},
            "extras.request.required.acks",
        ),
        ("at_least_once", {"extras": {"sasl.password": "x"}}, "extras.sasl.password"),
        ("at_least_once", {"bootstrap_servers": ""}, "bootstrap_servers"),
    ],
)
def test_producer_contradictions_name_the_field(
    guarantee: str, kwargs: dict[str, Any], field: str
) -> None:
    data = {"guarantee": guarantee, "bootstrap_servers": B, **kwargs}
    with pytest.raises(ConfigurationError) as info:
        ProducerProfile(**data)
    assert info.value.field == field
    assert field.split(".")[0] in str(info.value)


def test_renders_per_guarantee() -> None:
    amo = _producer("at-most-once").render()
    assert (amo["acks"], amo["retries"], amo["enable.idempotence"]) == ("0", 0, False)
    alo = _producer("AT_LEAST_ONCE").render()
    assert alo["acks"] == "all" and alo["enable.idempotence"] is True
    assert alo["max.in.flight.requests.per.connection"] == 5
    no_idem = _producer("at_least_once", enable_idempotence=False, max_in_flight=1).render()
    assert no_idem["max.in.flight.requests.per.connection"] == 1
    eo = _producer("exactly_once", transactional_id="orders-1").render()
    assert eo["transactional.id"] == "orders-1" and eo["acks"] == "all"
    assert eo["message.timeout.ms"] <= eo["transaction.timeout.ms"]


def test_extras_merge_under_critical_keys() -> None:
    config = _producer("at_least_once", extras={"linger.ms": 50, "acks": "all"}).render()
    assert config["linger.ms"] == 50 and config["acks"] == "all"


def test_prefix_profile_needs_a_concrete_id() -> None:
    profile = _producer("exactly_once", transactional_id_prefix="orders-")
    with pytest.raises(ConfigurationError) as info:
        profile.render()
    assert info.value.field == "transactional_id"
    assert profile.render("orders-7")["transactional.id"] == "orders-7"


def test_consumer_commit_ordering_keys() -> None:
    def render(g: str, **kw: Any) -> dict[str, Any]:
        return dict(ConsumerProfile(guarantee=g, bootstrap_servers=B, group_id="g", **kw).render())

    amo, alo, eo = render("at_most_once"), render("at_least_once"), render("exactly_once")
    assert amo["enable.auto.commit"] is False and amo["enable.auto.offset.store"] is False
    assert alo["enable.auto.commit"] is True and alo["enable.auto.offset.store"] is False
    assert eo["isolation.level"] == "read_committed" and eo["enable.auto.commit"] is False
    with pytest.raises(ConfigurationError) as info:
        render("exactly_once", isolation_level="read_uncommitted")
    assert info.value.field == "isolation_level"
    with pytest.raises(ConfigurationError) as info:
        render("at_least_once", extras={"enable.auto.offset.store": True})
    assert info.value.field == "extras.enable.auto.offset.store"


def test_failure_policy_dlq_needs_topic() -> None:
    with pytest.raises(ConfigurationError) as info:
        FailurePolicy(on_failure="dlq")
    assert info.value.field == "failure.dlq_topic"


def test_secrets_never_in_repr_or_errors() -> None:
    profile = _producer(
        "at_least_once",
        security={
            "protocol": "SASL_SSL",
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_username": "u",
            "sasl_password": "hunter2-secret",
        },
    )
    assert "hunter2-secret" not in repr(profile)
    assert profile.render()["sasl.password"] == "hunter2-secret"
    with pytest.raises(ConfigurationError) as info:
        _producer(
            "at_least_once",
            acks="1",
            security={"sasl_password": "hunter2-secret", "protocol": "bogus"},
        )
    assert "hunter2-secret" not in str(info.value)


def test_unknown_guarantee_lists_valid_ones() -> None:
    with pytest.raises(ConfigurationError, match="valid: at_most_once, at_least_once"):
        _producer("twice")


def test_named_profiles_from_yaml(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text(
        "defaults:\n  bootstrap_servers: 127.0.0.1:9092\n"
        "profiles:\n"
        "  orders:\n    guarantee: exactly_once\n    group_id: orders\n"
        "    transactional_id_prefix: orders-\n    producer: {linger_ms: 10}\n"
        "  metrics: at_most_once\n"
    )
    profiles = load_profiles(path)
    assert profiles.names == ["metrics", "orders"]
    processing = profiles.processing("orders")
    assert processing.guarantee is Guarantee.EXACTLY_ONCE
    assert processing.producer.linger_ms == 10
    assert profiles.producer("metrics").render()["acks"] == "0"
    with pytest.raises(ConfigurationError, match="not defined; defined: metrics, orders"):
        profiles.producer("nope")


def test_bad_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="cannot read profile file"):
        load_profiles(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles: [unclosed\n")
    with pytest.raises(ConfigurationError, match="not valid YAML"):
        load_profiles(bad)
    with pytest.raises(ConfigurationError) as info:
        load_profiles({"profiles": {"x": {"guarantee": "at_least_once", "bogus_key": 1}}})
    assert info.value.field == "profiles.x.bogus_key"


def test_profiles_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSEM_BOOTSTRAP_SERVERS", "10.0.0.1:9092")
    monkeypatch.setenv("KSEM_PROFILES__LOGS__GUARANTEE", "at_least_once")
    monkeypatch.setenv("KSEM_PROFILES__LOGS__GROUP_ID", "logs")
    profiles = load_profiles()
    consumer = profiles.consumer("logs")
    assert consumer.bootstrap_servers == "10.0.0.1:9092" and consumer.group_id == "logs"


@pytest.mark.parametrize(
    ("assignor", "protocol", "expected"),
    [
        ("range", "classic", {"partition.assignment.strategy": "range"}),
        ("round_robin", "classic", {"partition.assignment.strategy": "roundrobin"}),
        ("roundrobin", "classic", {"partition.assignment.strategy": "roundrobin"}),
        ("cooperative-sticky", "classic", {"partition.assignment.strategy": "cooperative-sticky"}),
        ("sticky", "consumer", {"group.protocol": "consumer", "group.remote.assignor": "uniform"}),
        ("range", "consumer", {"group.protocol": "consumer", "group.remote.assignor": "range"}),
    ],
)
def test_consumer_assignor_comes_from_the_assignor_registry(
    assignor: str, protocol: str, expected: dict[str, str]
) -> None:
    config = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers="x:1",
        group_id="g",
        assignor=assignor,
        group_protocol=protocol,
    ).render()
    assert {k: v for k, v in config.items() if k in expected} == expected
    assert ("session.timeout.ms" in config) == (protocol == "classic")


@pytest.mark.parametrize(
    ("assignor", "protocol", "says"),
    [
        ("nope", "classic", "unknown assignor 'nope'"),
        ("sticky", "classic", "Python-only"),  # no native strategy: GroupAssignedConsumer
        ("round_robin", "consumer", "no server-side equivalent"),
    ],
)
def test_consumer_assignor_errors_name_the_field(assignor: str, protocol: str, says: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        ConsumerProfile(
            guarantee="at_least_once",
            bootstrap_servers="x:1",
            group_id="g",
            assignor=assignor,
            group_protocol=protocol,
        )
    assert info.value.field == "assignor" and says in str(info.value)


def test_processing_profile_takes_the_guarantee_once() -> None:
    p = ProcessingProfile(
        guarantee="exactly_once",
        consumer={"bootstrap_servers": "x:1", "group_id": "g"},
        producer={"bootstrap_servers": "x:1", "transactional_id_prefix": "p-"},
    )
    assert p.consumer.guarantee is p.producer.guarantee is p.guarantee
    assert p.consumer.isolation_level == "read_committed"  # the exactly_once consumer defaults
    with pytest.raises(ConfigurationError) as info:
        ProcessingProfile(
            guarantee="exactly_once",
            consumer={"guarantee": "at_least_once", "bootstrap_servers": "x:1", "group_id": "g"},
            producer={"bootstrap_servers": "x:1", "transactional_id_prefix": "p-"},
        )
    assert info.value.field == "consumer.guarantee"


def test_processing_profile_takes_the_shared_connection_once() -> None:
    security = {"protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "sasl_username": "u"}
    p = ProcessingProfile(
        guarantee="exactly_once",
        bootstrap_servers="x:1",
        security={**security, "sasl_password": "secret"},
        consumer={"group_id": "g"},
        producer={"transactional_id_prefix": "p-"},
    )
    assert p.consumer.bootstrap_servers == p.producer.bootstrap_servers == "x:1"
    assert p.consumer.render()["sasl.password"] == "secret"
    assert p.producer.render(transactional_id="p-0")["sasl.password"] == "secret"
    built = ConsumerProfile(guarantee="exactly_once", group_id="g", bootstrap_servers="x:1")
    same = ProcessingProfile(
        guarantee="exactly_once",
        bootstrap_servers="x:1",  # a side may repeat it, if it says the same
        security={**security, "sasl_password": "secret"},
        consumer=built,  # an unset field of a built side takes the shared value too
        producer={"transactional_id_prefix": "p-", "bootstrap_servers": "x:1"},
    )
    assert same.consumer.security.protocol == "SASL_SSL"
    assert same.consumer.group_id == "g"


@pytest.mark.parametrize(
    ("top", "side", "field"),
    [
        ({"bootstrap_servers": "x:1"}, {"bootstrap_servers": "y:2"}, "producer.bootstrap_servers"),
        (
            {"security": {"protocol": "SSL"}},
            {"security": {"protocol": "SASL_SSL"}},
            "producer.security",
        ),
    ],
)
def test_a_side_contradicting_the_shared_connection_is_refused(
    top: dict[str, Any], side: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        ProcessingProfile(
            guarantee="at_least_once",
            consumer={"bootstrap_servers": "x:1", "group_id": "g"},
            producer={"bootstrap_servers": "x:1", **side},
            **top,
        )
    assert info.value.field == field


def test_a_contradicting_secret_is_not_shown() -> None:
    with pytest.raises(ConfigurationError) as info:
        ProcessingProfile(
            guarantee="at_least_once",
            bootstrap_servers="x:1",
            security={"sasl_password": "top-secret"},
            consumer={"group_id": "g", "security": {"sasl_password": "other-secret"}},
            producer={},
        )
    assert info.value.field == "consumer.security"
    assert "secret" not in str(info.value).replace("secrets", "")


def test_exactly_once_processing_polls_within_the_transaction_timeout() -> None:
    def processing(guarantee: str, consumer: Any, **producer: Any) -> ProcessingProfile:
        return ProcessingProfile(
            guarantee=guarantee,
            bootstrap_servers=B,
            consumer=consumer,
            producer={"transactional_id_prefix": "p-", **producer},
        )

    assert processing("exactly_once", {"group_id": "g"}).consumer.max_poll_interval_ms == 60_000
    short = processing("exactly_once", {"group_id": "g"}, transaction_timeout_ms=50_000)
    assert short.consumer.max_poll_interval_ms == 50_000
    built = ConsumerProfile(guarantee="exactly_once", bootstrap_servers=B, group_id="g")
    from_model = processing("exactly_once", built)
    assert from_model.consumer.max_poll_interval_ms == 60_000
    assert from_model.consumer.group_id == "g"
    # a poll interval the consumer sets itself is kept (the doctor then WARNs)
    own = processing("exactly_once", {"group_id": "g", "max_poll_interval_ms": 300_000})
    assert own.consumer.max_poll_interval_ms == 300_000
    alo = ProcessingProfile(
        guarantee="at_least_once", bootstrap_servers=B, consumer={"group_id": "g"}, producer={}
    )
    assert alo.consumer.max_poll_interval_ms == 300_000
    # never below the session timeout, which librdkafka refuses
    tiny = processing("exactly_once", {"group_id": "g"}, transaction_timeout_ms=2_000)
    assert tiny.consumer.max_poll_interval_ms == 45_000
    short_session = processing(
        "exactly_once", {"group_id": "g", "session_timeout_ms": 6_000}, transaction_timeout_ms=2_000
    )
    assert short_session.consumer.max_poll_interval_ms == 6_000
    built_short = processing(
        "exactly_once",
        ConsumerProfile(
            guarantee="exactly_once", bootstrap_servers=B, group_id="g", session_timeout_ms=6_000
        ),
        transaction_timeout_ms=2_000,
    )
    assert built_short.consumer.max_poll_interval_ms == 6_000


def test_a_poll_interval_below_the_session_timeout_is_refused() -> None:
    with pytest.raises(ConfigurationError) as info:
        ConsumerProfile(
            guarantee="at_least_once",
            bootstrap_servers=B,
            group_id="g",
            session_timeout_ms=45_000,
            max_poll_interval_ms=10_000,
        )
    assert info.value.field == "max_poll_interval_ms"


def test_a_misspelt_key_is_named_with_the_closest_known_key() -> None:
    from sdk import ConsumerProfile

    with pytest.raises(ConfigurationError) as err:
        ConsumerProfile(guarentee="at_least_once", bootstrap_servers="x:1", group_id="g")  # type: ignore[call-arg]
    assert str(err.value) == "guarentee: unknown key (did you mean 'guarantee'?)"
    assert err.value.field == "guarentee"
    with pytest.raises(ConfigurationError) as err:
        ConsumerProfile(
            guarantee="at_least_once",
            bootstrap_servers="x:1",
            group_id="g",
            failure={"attemps": 3},  # type: ignore[arg-type]
        )
    assert str(err.value) == "failure.attemps: unknown key (did you mean 'attempts'?)"


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"profiles": {"o": {"guarentee": "at_least_once", "group_id": "g"}}},
            "profiles.o.guarentee: unknown key (did you mean 'guarantee'?)",
        ),
        (
            {
                "profiles": {
                    "o": {"guarantee": "at_least_once", "consumer": {"failure": {"attemps": 3}}}
                }
            },
            "profiles.o.consumer.failure.attemps: unknown key (did you mean 'attempts'?)",
        ),
        (
            {"profiles": {"o": {"guarantee": "at_least_once", "failure": {"attemps": 3}}}},
            "profiles.o.failure.attemps: unknown key (did you mean 'attempts'?)",
        ),
    ],
)
def test_yaml_unknown_keys_fail_at_load_at_any_depth(document: Any, message: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        load_profiles(document)  # at load, not at .consumer()
    assert str(err.value) == message


def test_bootstrap_servers_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from sdk import ConsumerProfile, ProcessingProfile, ProducerProfile

    monkeypatch.delenv("KSEM_BOOTSTRAP_SERVERS", raising=False)
    with pytest.raises(ConfigurationError) as err:
        ConsumerProfile(guarantee="at_least_once", group_id="g")
    assert err.value.field == "bootstrap_servers"
    assert "export KSEM_BOOTSTRAP_SERVERS=host:port" in str(err.value)
    monkeypatch.setenv("KSEM_BOOTSTRAP_SERVERS", "broker-a:9092")
    assert ConsumerProfile(guarantee="at_least_once", group_id="g").bootstrap_servers == (
        "broker-a:9092"
    )
    assert ProducerProfile(guarantee="at_most_once").bootstrap_servers == "broker-a:9092"
    given = ProducerProfile(guarantee="at_most_once", bootstrap_servers="b:1")
    assert given.bootstrap_servers == "b:1"  # what the code says wins
    processing = ProcessingProfile(
        guarantee="exactly_once",
        consumer={"group_id": "g"},
        producer={"transactional_id_prefix": "t-"},
    )
    assert processing.consumer.bootstrap_servers == processing.producer.bootstrap_servers
    assert load_profiles({"profiles": {"o": "at_least_once"}}).producer("o").bootstrap_servers == (
        "broker-a:9092"
    )
