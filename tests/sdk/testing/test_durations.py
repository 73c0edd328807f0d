"""The harness's durations end in _s; the old keywords still work, with a DeprecationWarning."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from sdk._deprecation import renamed_default
from sdk.errors import ConfigurationError
from sdk.testing import admin, spark_cluster
from sdk.testing.cluster import LocalCluster
from sdk.testing.errors import ClusterError
from sdk.testing.spark_cluster import ConnectServer, StandaloneSpark


class _Future:
    def result(self, timeout: float) -> None:
        _FakeAdmin.waits.append(timeout)


class _FakeAdmin:
    """Records the timeouts create_topic/delete_topic pass; every partition has a leader."""

    waits: list[float]

    def __init__(self, config: dict[str, Any]) -> None:
        self.partitions = 1

    def create_topics(self, new: list[Any], operation_timeout: float) -> dict[str, _Future]:
        _FakeAdmin.waits.append(operation_timeout)
        self.partitions = new[0].num_partitions
        return {new[0].topic: _Future()}

    def delete_topics(self, names: list[str], operation_timeout: float) -> dict[str, _Future]:
        _FakeAdmin.waits.append(operation_timeout)
        return {names[0]: _Future()}

    def list_topics(self, topic: str, timeout: float) -> Any:
        leader = type("P", (), {"leader": 1})()
        meta = type("T", (), {"error": None, "partitions": {0: leader}})()
        return type("M", (), {"topics": {topic: meta}})()


@pytest.fixture
def fake_admin(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    import confluent_kafka.admin

    _FakeAdmin.waits = []
    monkeypatch.setattr(confluent_kafka.admin, "AdminClient", _FakeAdmin)
    return _FakeAdmin.waits


def test_renamed_default_prefers_the_old_name_when_given() -> None:
    assert renamed_default("f", "timeout", None, "timeout_s", 3.0) == 3.0
    with pytest.warns(
        DeprecationWarning, match=r"f\(timeout=\) is deprecated and removed in 0\.3: use timeout_s="
    ):
        assert renamed_default("f", "timeout", 7.0, "timeout_s", 3.0) == 7.0


def test_local_cluster_start_timeout_is_renamed(tmp_path: Path) -> None:
    assert LocalCluster(workdir=tmp_path, start_timeout_s=5)._start_timeout_s == 5
    with pytest.warns(DeprecationWarning, match="start_timeout_s"):
        cluster = LocalCluster(workdir=tmp_path, start_timeout=7)
    assert cluster._start_timeout_s == 7


def test_local_cluster_start_seconds_is_start_duration_s(tmp_path: Path) -> None:
    cluster = LocalCluster(workdir=tmp_path)
    assert cluster.start_duration_s is None
    cluster.start_duration_s = 12.5
    with pytest.warns(DeprecationWarning, match="start_duration_s"):
        assert cluster.start_seconds == 12.5


def test_local_cluster_close_and_stop_take_the_old_names(tmp_path: Path) -> None:
    cluster = LocalCluster(workdir=tmp_path)
    with pytest.warns(DeprecationWarning, match="grace_s"):
        cluster.close(grace=1)
    with pytest.warns(DeprecationWarning, match="timeout_s"), pytest.raises(ClusterError):
        cluster.stop(1, timeout=1)  # no node 1: the keyword is taken before the lookup


def test_create_and_delete_topic_take_timeout_s(fake_admin: list[float]) -> None:
    assert admin.create_topic("b:9092", "t", 1, timeout_s=4) == "t"
    admin.delete_topic("b:9092", "t", timeout_s=2)
    assert fake_admin == [4, 4, 2, 2]


def test_create_and_delete_topic_take_the_old_timeout(fake_admin: list[float]) -> None:
    with pytest.warns(DeprecationWarning, match=r"create_topic\(timeout=\)"):
        admin.create_topic("b:9092", "t", 1, timeout=4)
    with pytest.warns(DeprecationWarning, match=r"delete_topic\(timeout=\)"):
        admin.delete_topic("b:9092", "t", timeout=2)
    assert fake_admin == [4, 4, 2, 2]


def test_standalone_spark_start_takes_the_old_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    waits: list[float] = []
    monkeypatch.setattr(spark_cluster, "_wait_for_line", lambda log, text, proc, t: waits.append(t))
    cluster = StandaloneSpark(workers=1)
    try:
        monkeypatch.setattr(cluster, "_spawn", lambda name, args: (None, tmp_path / name))
        cluster.start(timeout_s=3)
        with pytest.warns(DeprecationWarning, match=r"StandaloneSpark.start\(timeout=\)"):
            cluster.start(timeout=5)
    finally:
        shutil.rmtree(cluster._tmp, ignore_errors=True)
    assert waits == [3, 3, 5, 5]


def test_connect_server_start_takes_the_old_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(spark_cluster, "spark_home", lambda: tmp_path)  # no spark-connect jar
    server = ConnectServer()
    try:
        with (
            pytest.warns(DeprecationWarning, match=r"ConnectServer.start\(timeout=\)"),
            pytest.raises(ConfigurationError),
        ):
            server.start(timeout=5)
    finally:
        shutil.rmtree(server._tmp, ignore_errors=True)
