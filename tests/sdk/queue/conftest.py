"""Queue tests that need a broker skip where the broker or the client has no share groups.

The compatibility suite (``./dev.sh compat``) runs them on every broker of the matrix: on
Kafka 3.9 to 4.1 (no share groups a ``ShareConsumer`` can use) and on a confluent-kafka
older than 2.15.0 (no ``ShareConsumer``) they are skipped, and the refusal itself is tested by
``tests/compat/test_gaps.py``.
"""

from __future__ import annotations

import os

import confluent_kafka
import pytest

from sdk.testing.cluster._config import has_share_groups
from sdk.testing.jars import session_kafka_version


def _why_not() -> str | None:
    if not hasattr(confluent_kafka, "ShareConsumer"):
        return f"confluent-kafka {confluent_kafka.__version__} has no ShareConsumer (2.15.0+)"
    version = session_kafka_version()
    if not os.environ.get("KAFKA_BOOTSTRAP_SERVERS") and not has_share_groups(version):
        return f"Kafka {version} has no share groups the share consumer can use (4.2+)"
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip this directory's broker tests where share groups are missing."""
    reason = _why_not()
    if reason is None:
        return
    here = os.path.dirname(__file__)
    for item in items:
        if str(item.path).startswith(here) and item.get_closest_marker("broker"):
            item.add_marker(pytest.mark.skip(reason=reason))
