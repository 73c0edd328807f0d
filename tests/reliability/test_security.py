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

from sdk.errors import AuthorizationError, DeliveryError, SdkError
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


def test_wrong_password_fails_without_showing_it(secure: dict[str, Any], tmp_path: Path) -> None:
    wrong = f"wrong-{uuid.uuid4().hex}"
    profile = _profile(secure, "writer", wrong, tmp_path)
    producer = Producer(profile, metadata_timeout=10)
    with pytest.raises(SdkError) as info:
        producer.send_and_wait(secure["topic"], b"x")
        producer.flush(20)
    print(f"wrong password: {info.value!r}")
    assert wrong not in str(info.value) and wrong not in repr(info.value)
    assert wrong not in repr(profile)
    producer.close(2)
