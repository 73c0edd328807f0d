"""Broker jar resolution through real Maven: cold cache, warm cache, failure."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from sdk.testing.errors import MavenError
from sdk.testing.jars import DEFAULT_KAFKA_VERSION, resolve_broker_jars


@pytest.mark.broker
def test_cold_then_warm_cache(tmp_path: Path) -> None:
    started = time.monotonic()
    cold = resolve_broker_jars(cache_dir=tmp_path, progress=lambda _: None)
    cold_s = time.monotonic() - started
    assert not cold.from_cache
    names = {p.name for p in cold.lib_dir.glob("*.jar")}
    assert f"kafka_2.13-{DEFAULT_KAFKA_VERSION}.jar" in names
    assert f"kafka-tools-{DEFAULT_KAFKA_VERSION}.jar" in names
    assert any(n.startswith("log4j-slf4j2-impl") for n in names)
    assert any(n.startswith("slf4j-api-2.") for n in names), "SLF4J 2 API must win"
    assert cold.log4j_config.exists()

    started = time.monotonic()
    # a warm cache must not need Maven at all: an unusable mvn proves it is never called
    warm = resolve_broker_jars(cache_dir=tmp_path, mvn="/nonexistent/mvn")
    warm_s = time.monotonic() - started
    assert warm.from_cache and warm.lib_dir == cold.lib_dir
    print(f"jar resolution: cold cache {cold_s:.2f}s, warm cache {warm_s * 1000:.1f}ms")


@pytest.mark.broker
def test_unknown_version_fails_with_maven_output(tmp_path: Path) -> None:
    with pytest.raises(MavenError) as info:
        resolve_broker_jars("0.0.0-nope", cache_dir=tmp_path, progress=lambda _: None)
    message = str(info.value)
    assert "could not resolve the Apache Kafka 0.0.0-nope broker jars" in message
    assert "Maven Central" in message and "Last lines of Maven's output" in message
    assert not (tmp_path / "kafka-0.0.0-nope" / "libs").exists(), "no half-filled cache"


def test_missing_maven_is_reported_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(MavenError, match="was not found"):
        resolve_broker_jars(cache_dir=tmp_path, mvn="/nonexistent/mvn")
