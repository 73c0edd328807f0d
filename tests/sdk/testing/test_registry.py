"""The schema registry in the harness: finding Java 21+, and a real Apicurio started and used."""

from __future__ import annotations

import json
import os
import stat
import urllib.request
from pathlib import Path

import pytest

from sdk.testing.errors import JavaNotFoundError
from sdk.testing.registry import MIN_REGISTRY_JAVA, SchemaRegistryServer, find_registry_java


def _fake_java(tmp_path: Path, major: int) -> str:
    path = tmp_path / f"java{major}"
    path.write_text(f"#!/bin/sh\necho 'openjdk version \"{major}.0.1\" 2025-01-01' >&2\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_an_explicit_old_java_is_refused_and_named(tmp_path: Path) -> None:
    old = _fake_java(tmp_path, 17)
    with pytest.raises(JavaNotFoundError) as caught:
        find_registry_java(old)
    message = str(caught.value)
    assert f"{old} (the java argument): Java 17" in message
    assert f"Java {MIN_REGISTRY_JAVA}+" in message
    assert "KSEM_REGISTRY_JAVA" in message


def test_the_environment_variable_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    new = _fake_java(tmp_path, 25)
    monkeypatch.setenv("KSEM_REGISTRY_JAVA", new)
    assert find_registry_java() == new


def test_an_old_java_on_path_is_skipped_for_a_jdk_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    old = _fake_java(bin_dir, 17)
    os.rename(old, bin_dir / "java")
    monkeypatch.delenv("KSEM_REGISTRY_JAVA", raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(bin_dir))
    found = find_registry_java()  # this machine has a JDK 21+ under /usr/lib/jvm
    assert found != str(bin_dir / "java")


def _post(url: str, body: dict[str, object]) -> dict[str, object]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        return json.loads(resp.read())  # type: ignore[no-any-return]


def _get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.mark.registry
def test_a_registered_schema_is_read_back_and_survives_a_restart(
    schema_registry_server: SchemaRegistryServer,
) -> None:
    schema_registry_server.start()
    url = schema_registry_server.url
    schema = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "long"}]}
    registered = _post(f"{url}/subjects/orders-value/versions", {"schema": json.dumps(schema)})
    schema_id = registered["id"]
    assert json.loads(_get(f"{url}/schemas/ids/{schema_id}")["schema"]) == schema  # type: ignore[index]

    schema_registry_server.stop()  # an outage: same port, same storage when it is back
    assert not schema_registry_server.answers()
    schema_registry_server.start()
    assert "orders-value" in _get(f"{url}/subjects")  # type: ignore[operator]
    assert json.loads(_get(f"{url}/schemas/ids/{schema_id}")["schema"]) == schema  # type: ignore[index]
