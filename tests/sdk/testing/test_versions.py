"""The broker matrix without a broker: per-release config, the session's release."""

from __future__ import annotations

from pathlib import Path

import pytest

from sdk.testing.cluster import LocalCluster
from sdk.testing.cluster._config import has_share_groups, render_config
from sdk.testing.cluster._node import Node
from sdk.testing.jars import (
    DEFAULT_KAFKA_VERSION,
    KAFKA_VERSION_ENV,
    session_kafka_version,
)


def _config(tmp_path: Path, version: str) -> dict[str, str]:
    text = render_config(
        Node(1, 9092, 9093, tmp_path),
        "1@127.0.0.1:9093",
        size=1,
        extra_listeners={},
        broker_config={},
        kafka_version=version,
    )
    return dict(line.split("=", 1) for line in text.splitlines())


@pytest.mark.parametrize(
    ("version", "share"),
    [("3.9.2", False), ("4.0.2", False), ("4.1.2", False), ("4.2.2", True), ("4.4.0", True)],
)
def test_share_group_settings_only_where_the_harness_turns_share_groups_on(
    tmp_path: Path, version: str, share: bool
) -> None:
    config = _config(tmp_path, version)
    assert has_share_groups(version) is share
    assert ("group.share.min.record.lock.duration.ms" in config) is share
    assert ("share.coordinator.state.topic.replication.factor" in config) is share
    assert config["process.roles"] == "broker,controller"


def test_the_environment_picks_the_release_of_every_cluster(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(KAFKA_VERSION_ENV, raising=False)
    assert session_kafka_version() == DEFAULT_KAFKA_VERSION
    assert LocalCluster().kafka_version == DEFAULT_KAFKA_VERSION
    monkeypatch.setenv(KAFKA_VERSION_ENV, "3.9.2")
    assert LocalCluster().kafka_version == "3.9.2"
    assert LocalCluster(kafka_version="4.4.0").kafka_version == "4.4.0"
