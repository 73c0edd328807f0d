"""SASL_SSL (SCRAM-SHA-512) with a generated CA and the StandardAuthorizer, through the SDK.

A module-scoped 1-node cluster gets a second listener, SASL_SSL, whose certificate is signed by
a throw-away CA (sdk.testing.security). A user with WRITE on the topic produces through an SDK
``Producer`` built from a profile; a user without WRITE gets an ``AuthorizationError`` that
still carries the record; no secret shows up in reprs, logs, exceptions or span attributes.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from sdk.consumer import Consumer as SdkConsumer
from sdk.errors import AuthenticationError, AuthorizationError, DeliveryError
from sdk.producer import Producer
from sdk.profiles import ProducerProfile, load_profiles
from sdk.testing.admin import create_topic
from sdk.testing.cluster import LocalCluster
from sdk.testing.security import create_scram_user, grant, make_tls, sasl_ssl_config
from tests.sdk.observability._support import make_otel

pytestmark = [pytest.mark.broker]  # its own 1-node cluster with a SASL_SSL listener

WRITER_PASSWORD = f"writer-{uuid.uuid4().hex}"
READER_PASSWORD = f"reader-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tls = make_tls(tmp_path_factory.mktemp("tls"))
    cluster = LocalCluster(
        1, extra_listeners={"SASL_SSL": "SASL_SSL"}, broker_config=sasl_ssl_config(tls)
    )
    cluster.start()
    try:
        bs = cluster.bootstrap_servers
        topic = create_topic(bs, f"secure-{uuid.uuid4().hex[:8]}", 1)
        create_scram_user(bs, "writer", WRITER_PASSWORD)
        create_scram_user(bs, "reader", READER_PASSWORD)
        grant(bs, "writer", topic, ["WRITE", "DESCRIBE"])
        grant(bs, "reader", topic, ["DESCRIBE", "READ"])  # no WRITE on the topic ...
        grant(bs, "reader", None, ["IDEMPOTENT_WRITE"])  # ... but may get a producer id
        yield {"cluster": cluster, "tls": tls, "topic": topic}
    finally:
        cluster.close()


def _profile(secure: dict[str, Any], user: str, password: str, tmp: Path) -> ProducerProfile:
    path = tmp / "profiles.yaml"
    path.write_text(
        "profiles:\n"
        "  secure:\n"
        "    guarantee: at_least_once\n"
        f"    bootstrap_servers: {secure['cluster'].listener_bootstrap('SASL_SSL')}\n"
        "    delivery_timeout_ms: 15000\n"
        "    security:\n"
        "      protocol: SASL_SSL\n"
        "      sasl_mechanism: SCRAM-SHA-512\n"
        f"      sasl_username: {user}\n"
        f"      sasl_password: {password}\n"
        f"      ssl_ca_location: {secure['tls'].ca}\n"
    )
    return load_profiles(path).producer("secure")


def _read_back(secure: dict[str, Any]) -> list[bytes]:
    c = Consumer(
        {
            "bootstrap.servers": secure["cluster"].bootstrap_servers,  # PLAINTEXT (admin)
            "group.id": f"check-{uuid.uuid4().hex[:6]}",
            "enable.partition.eof": True,
        }
    )
    c.assign([TopicPartition(secure["topic"], 0, 0)])
    out: list[bytes] = []
    try:
        for _ in range(60):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                break
            out.append(m.value())
    finally:
        c.close()
    return out


def test_writer_produces_over_sasl_ssl(secure: dict[str, Any], tmp_path: Path) -> None:
    profile = _profile(secure, "writer", WRITER_PASSWORD, tmp_path)
    assert profile.render()["security.protocol"] == "SASL_SSL"
    with Producer(profile, value_serializer="str") as producer:
        meta = producer.send_and_wait(secure["topic"], "over-sasl-ssl", key=b"k")
    assert meta.topic == secure["topic"]
    assert b"over-sasl-ssl" in _read_back(secure)


def test_no_write_acl_is_an_authorization_error_with_the_record(
    secure: dict[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    otel = make_otel()
    profile = _profile(secure, "reader", READER_PASSWORD, tmp_path)
    producer = Producer(profile, value_serializer="str", telemetry=otel.telemetry)
    handle = producer.send(secure["topic"], "not-allowed", key=b"k")
    with pytest.raises(DeliveryError) as info:
        producer.flush(30)
    failure = info.value.failures[0]
    print(f"flush raised: {info.value!r}; failure: {failure!r}")
    assert isinstance(failure, AuthorizationError)
    assert isinstance(handle.exception(), AuthorizationError)
    assert failure.record is not None and failure.record.value == "not-allowed"
    producer.close(5)
    texts = [
        repr(profile),
        str(profile.model_dump()),
        repr(producer),
        str(info.value),
        repr(info.value),
        repr(failure),
        caplog.text,
    ]
    for span in otel.spans():
        texts += [str(dict(span.attributes or {})), str([e.attributes for e in span.events])]
    assert otel.spans(), "the producer recorded no span"
    for text in texts:
        assert READER_PASSWORD not in text
        assert secure["tls"].password not in text


def test_wrong_password_is_an_authentication_error_without_the_password(
    secure: dict[str, Any], tmp_path: Path
) -> None:
    wrong = f"wrong-{uuid.uuid4().hex}"
    profile = _profile(secure, "writer", wrong, tmp_path)
    producer = Producer(profile, metadata_timeout_s=10)
    with pytest.raises(AuthenticationError) as info:
        producer.send_and_wait(secure["topic"], b"x")
    print(f"wrong password: {info.value!r}")
    assert "invalid credentials" in str(info.value)
    assert info.value.record is not None and info.value.record.value == b"x"
    assert wrong not in str(info.value) and wrong not in repr(info.value)
    assert wrong not in repr(profile)
    producer.close(2)


def test_consumer_with_a_wrong_password_names_the_credentials(
    secure: dict[str, Any], tmp_path: Path
) -> None:
    wrong = f"wrong-{uuid.uuid4().hex}"
    _profile(secure, "reader", wrong, tmp_path)
    prof = load_profiles(tmp_path / "profiles.yaml").consumer("secure", group_id="never-joins")
    with (
        SdkConsumer(prof, [secure["topic"]]) as consumer,
        pytest.raises(AuthenticationError) as info,
    ):
        consumer.run(lambda record: None, idle_timeout_s=10)
    print(f"consumer, wrong password: {info.value!r}")
    assert "invalid credentials" in str(info.value)
    assert wrong not in str(info.value) and wrong not in repr(info.value)


def _read_plain(secure: dict[str, Any], topic: str, count: int) -> list[Any]:
    """Read ``count`` records of ``topic`` over the PLAINTEXT (super user) listener."""
    c = Consumer(
        {
            "bootstrap.servers": secure["cluster"].bootstrap_servers,
            "group.id": f"check-{uuid.uuid4().hex[:6]}",
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    out: list[Any] = []
    try:
        for _ in range(120):
            m = c.poll(0.5)
            if m is not None and not m.error():
                out.append(m)
            if len(out) >= count:
                break
    finally:
        c.close()
    return out


def test_forbidden_write_in_a_handler_dead_letters_the_record(
    secure: dict[str, Any], tmp_path: Path
) -> None:
    """A consumer whose handler may not write its output keeps every record: in the DLQ."""
    bs = secure["cluster"].bootstrap_servers  # PLAINTEXT: the super user sets up
    source = create_topic(bs, f"secure-in-{uuid.uuid4().hex[:8]}", 1)
    dlq = create_topic(bs, f"secure-dlq-{uuid.uuid4().hex[:8]}", 1)
    group = f"secure-g-{uuid.uuid4().hex[:6]}"
    grant(bs, "reader", source, ["DESCRIBE", "READ"])
    grant(bs, "reader", dlq, ["DESCRIBE", "WRITE"])
    grant(bs, "reader", None, ["READ"], group=group)
    with Producer(ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs)) as seeder:
        for i in range(3):
            seeder.send(source, f"order-{i}".encode(), key=f"k{i}".encode())

    path = tmp_path / "profiles.yaml"
    _profile(secure, "reader", READER_PASSWORD, tmp_path)  # writes profiles.yaml
    consumer_profile = load_profiles(path).consumer(
        "secure",
        group_id=group,
        failure={
            "attempts": 2,
            "backoff_initial_ms": 0,
            "backoff_max_ms": 0,
            "on_failure": "dlq",
            "dlq_topic": dlq,
        },
    )
    output = Producer(load_profiles(path).producer("secure"), value_serializer="bytes")

    def forward(record: Any) -> None:  # the reader has no WRITE on secure["topic"]
        output.send_and_wait(secure["topic"], record.value, key=record.key)

    with output, SdkConsumer(consumer_profile, [source]) as consumer:
        stats = consumer.run(forward, max_records=3, idle_timeout_s=60)
    print(f"stats: {stats}")
    assert (stats.handled, stats.dead_lettered) == (0, 3)

    dead = _read_plain(secure, dlq, 3)
    assert [m.value() for m in dead] == [b"order-0", b"order-1", b"order-2"]
    headers = {k: (v or b"").decode() for k, v in dead[0].headers() or []}
    print(f"DLQ headers: {headers}")
    assert headers["dlq.error.type"] == "sdk.errors.AuthorizationError"
    assert "TOPIC_AUTHORIZATION_FAILED" in headers["dlq.error.message"]
    assert headers["dlq.topic"] == source
    for m in dead:
        for _, value in m.headers() or []:
            assert READER_PASSWORD.encode() not in (value or b"")
