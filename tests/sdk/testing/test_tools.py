"""Unit tests of tool discovery: every error names the fix."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from sdk.testing.errors import ClusterError, JavaNotFoundError, MavenError
from sdk.testing.tools import cache_root, find_java, find_mvn, java_major_version


def _fake_java(tmp_path: Path, version_line: str) -> str:
    script = tmp_path / "java"
    script.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_java_11_is_rejected_with_the_fix(tmp_path: Path) -> None:
    java = _fake_java(tmp_path, 'openjdk version "11.0.2" 2019-01-15')
    with pytest.raises(JavaNotFoundError) as info:
        find_java(java)
    message = str(info.value)
    assert "Java 11" in message and "17+" in message and "KAFKA_SEMANTICS_JAVA" in message
    assert isinstance(info.value, ClusterError)


def test_java_8_old_style_version_is_parsed(tmp_path: Path) -> None:
    assert java_major_version(_fake_java(tmp_path, 'java version "1.8.0_392"')) == 8


def test_java_17_is_accepted(tmp_path: Path) -> None:
    java = _fake_java(tmp_path, 'openjdk version "17.0.15" 2025-04-15')
    assert find_java(java) == java


def test_missing_java_names_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_SEMANTICS_JAVA", raising=False)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(JavaNotFoundError, match=r"No .java. found.*apt-get install openjdk-17"):
        find_java()


def test_unrunnable_java_path(tmp_path: Path) -> None:
    with pytest.raises(JavaNotFoundError, match="Could not run"):
        find_java(str(tmp_path / "no-such-java"))


def test_missing_mvn_names_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KAFKA_SEMANTICS_MVN", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(MavenError, match=r"was not found.*apt-get install maven"):
        find_mvn()


def test_cache_root_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KAFKA_SEMANTICS_CACHE_DIR", str(tmp_path))
    assert cache_root() == tmp_path
    monkeypatch.delenv("KAFKA_SEMANTICS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "kafka-semantics"
