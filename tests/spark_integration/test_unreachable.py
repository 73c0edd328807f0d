"""The Spark driver's planning with no broker at the address: fails fast, names it, quietly."""

from __future__ import annotations

import logging
import socket
import time

import pytest

from sdk.errors import BrokerUnreachableError
from spark_integration import BatchJobConfig, plan_ranges


def test_plan_ranges_names_the_address_within_the_bound(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens
    address = f"127.0.0.1:{port}"
    config = BatchJobConfig.exactly_once(
        job_name="copy",
        input_topics=["src"],
        bootstrap_servers=address,
        group_id="g",
        transactional_id_prefix="g-",
        consumer={"extras": {"socket.connection.setup.timeout.ms": 3000}},
    )
    started = time.monotonic()
    with (
        caplog.at_level(logging.DEBUG, logger="sdk.librdkafka"),
        pytest.raises(BrokerUnreachableError) as info,
    ):
        plan_ranges(
            config.processing.consumer, ["src"], job="copy", transactional_id_prefix=config.prefix
        )
    took = time.monotonic() - started
    assert 3.0 <= took < 3.0 + 6.0, took
    assert address in str(info.value) and "Connection refused" in str(info.value)
    lines = [r for r in caplog.records if r.name == "sdk.librdkafka"]
    assert len(lines) <= 8, [r.getMessage() for r in lines]  # ~20 a second before
