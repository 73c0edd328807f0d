"""A stop in the middle of a polled batch, then another run of the same consumer: the records
taken and not handled are read again (at_least_once), not skipped."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sdk.consumer import Consumer, ConsumerRecord
from tests.sdk.consumer._support import committed, profile

pytestmark = pytest.mark.broker


def test_at_least_once_stop_mid_batch_then_run_again_skips_nothing(seeded: Any) -> None:
    s = seeded(300)
    seen: list[int] = []
    prof = profile(s.bootstrap, "at_least_once", s.group, batch_size=300)
    with Consumer(prof, [s.topic], value_deserializer="str") as consumer:

        def stop_at_50(record: ConsumerRecord) -> None:
            time.sleep(0.002)  # slower than the hot loop's store interval: stop seen at once
            seen.append(int(record.value))
            if len(seen) == 50:
                consumer.stop()

        consumer.run(stop_at_50, idle_timeout_s=20)
        assert len(seen) < 300  # stopped inside the batch
        consumer.run(lambda r: seen.append(int(r.value)), idle_timeout_s=3)
    assert set(seen) == set(range(300))
    assert committed(s.bootstrap, s.group, s.topic) == [300]
