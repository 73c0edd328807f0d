"""A principal with no ACL at all: the idempotent producer's PID request is refused (fatal).

Before the SDK registered an ``error_cb``, librdkafka's fatal CLUSTER_AUTHORIZATION_FAILED
escaped ``flush()`` as a raw ``KafkaError`` (not even a BaseException) and aborted pytest.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path
from typing import Any

import pytest

from sdk.errors import AuthorizationError, SdkError
from sdk.producer import Producer
from sdk.testing.security import create_scram_user
from tests.reliability.test_security import _profile, secure  # noqa: F401  (module fixture)

pytestmark = [pytest.mark.broker]


def test_principal_without_any_acl_gets_an_sdk_error(
    secure: dict[str, Any],  # noqa: F811
    tmp_path: Path,
) -> None:
    password = f"nobody-{uuid.uuid4().hex}"
    create_scram_user(secure["cluster"].bootstrap_servers, "nobody", password)
    profile = _profile(secure, "nobody", password, tmp_path)
    with Producer(profile, value_serializer="str") as checked:
        with pytest.raises(AuthorizationError) as at_send:
            checked.send(secure["topic"], "refused", key=b"k")  # the topic check is refused
        assert at_send.value.record.value == "refused"
    # without the topic check the fatal PID refusal comes from librdkafka at flush
    producer = Producer(profile, value_serializer="str", check_topics=False)
    handle = producer.send(secure["topic"], "refused", key=b"k")
    with pytest.raises(SdkError) as info:
        producer.flush(30)
    text = f"{info.value!r} {handle.exception()!r}"
    assert "AUTHORIZATION" in text.upper(), text
    assert password not in text
    with contextlib.suppress(SdkError):  # a fatal error may be raised again here
        producer.close(5)
